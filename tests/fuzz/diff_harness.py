"""Running a generated case (:mod:`diff_programs`) through polyopt under flag combinations and
schedules, and through upstream MLIR (mlir-opt-22 lowering, mlir-runner-22), and comparing
every result with the expected outputs.

Outcomes of one run:

* ``ok``: the outputs match (exactly for integers; for floats within a tolerance that grows
  with the length of the sums: contraction into FMAs and vectorization change rounding);
* ``refused``: a :class:`polyopt.PolyoptError` with a location -- legitimate where the input
  asks for something polyopt may refuse (an illegal ``--schedule``, tile or ``schedule``
  attributes, ``--hopt-blis`` on operands it cannot pack or an element type without a
  kernel), a failure anywhere else (a valid program must compile);
* ``wrong`` (a wrong answer), ``internal`` (any other exception, or an error without a
  location), ``printer`` (the printed IR is not a fixed point of parse and print, or
  mlir-opt-22 rejects it), ``upstream`` (upstream MLIR computes something else): failures.
"""

from __future__ import annotations

import itertools
import random
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

import polyopt
from polyopt.affine.diagnostics import PolyoptError, ScheduleError, VerifyError
from polyopt.affine.printer import print_module
from polyopt.pipeline import (CompiledModule, PipelineOptions, load, prepare_for_lowering,
                              run_passes)

from diff_programs import Case

STEPS = ("copy", "unroll", "scalrep", "vect")

# affine is lowered first: the greedy rewrites of the later passes fold affine.for bounds, and
# MLIR 22's folding breaks a loop nested in an empty one (see check_upstream)
UPSTREAM_PASSES = [
    "--convert-linalg-to-affine-loops", "--lower-affine", "--expand-strided-metadata",
    "--lower-affine",
    "--convert-vector-to-llvm", "--convert-scf-to-cf", "--finalize-memref-to-llvm",
    "--convert-math-to-llvm", "--convert-arith-to-llvm", "--convert-func-to-llvm",
    "--convert-cf-to-llvm", "--reconcile-unrealized-casts"]


def flag_label(flags: dict) -> str:
    if not flags:
        return "(no flags)"
    out = []
    for k, v in flags.items():
        if v is True:
            out.append("--" + {"copy": "hopt-copy", "unroll": "hopt-unroll",
                               "scalrep": "hopt-scalrep", "vect": "hopt-vect",
                               "blis": "hopt-blis", "hopt": "hopt",
                               "memref_bound_check": "memref-bound-check"}[k])
        elif k == "blis_kernel":
            out.append(f"--hopt-blis-kernel {v}")
    return " ".join(out)


def runnable_kernels(elem: str) -> list:
    from polyopt.codegen import microkernels
    from polyopt.codegen.target import host_target
    return [k.symbol for k in microkernels.REGISTRY
            if k.dtype == elem and not microkernels.missing_features(k, host_target())]


def flag_sets(case: Case) -> list:
    """Every flag combination worth running on ``case`` (the first is the baseline)."""
    sets = [{}]
    if case.family == "affine":
        sets.append({"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True})
        if not case.has_symbols:
            sets.append({"memref_bound_check": True})
        return sets
    for combo in itertools.product([False, True], repeat=len(STEPS)):
        sets.append({"hopt": True, **{n: True for n, on in zip(STEPS, combo) if on}})
    sets.append({"hopt": True, "blis": True})
    for k in runnable_kernels(case.elem):
        sets.append({"hopt": True, "blis": True, "blis_kernel": k})
    return sets


# ---------------------------------------------------------------------------------------------
# results


@dataclass
class Failure:
    seed: int
    kind: str            # wrong | internal | refused | printer | upstream | bound-check
    what: str            # flags / schedule / oracle
    message: str
    text: str            # the program

    def report(self) -> str:
        return f"seed {self.seed}: {self.kind} with {self.what}: {self.message}"


@dataclass
class Stats:
    programs: int = 0
    runs: int = 0
    upstream_runs: int = 0
    refused: dict = field(default_factory=dict)   # message head -> count
    failures: list = field(default_factory=list)

    def refusal(self, message: str) -> None:
        head = re.sub(r"\d+", "N", message.split("\n")[0])[:120]
        self.refused[head] = self.refused.get(head, 0) + 1


def _tolerance(case: Case) -> tuple:
    eps = 1e-12 if case.elem == "f64" else 2e-5
    tol = eps * max(8, case.reduction) * 4
    return tol, tol * case.magnitude


def compare(case: Case, got: list, expected: list) -> Optional[str]:
    """None when ``got`` matches ``expected``, else a description of the first mismatch."""
    for arg, g, e in zip([a for a in case.args if a.is_memref], got, expected):
        g, e = np.asarray(g).reshape(-1), np.asarray(e).reshape(-1)
        if case.exact:
            bad = np.nonzero(g != e)[0]
        else:
            rtol, atol = _tolerance(case)
            with np.errstate(invalid="ignore"):
                close = np.isclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
            bad = np.nonzero(~close)[0]
        if len(bad):
            k = bad[0]
            return (f"%{arg.name} ({arg.type}): {len(bad)} of {g.size} elements differ; "
                    f"flat element {k}: got {g[k]!r}, expected {e[k]!r}")
    return None


# ---------------------------------------------------------------------------------------------
# polyopt


def random_schedule(rng: random.Random, depth: int) -> str:
    """A schedule for a statement nested in ``depth`` loops: a permutation, with tiles
    (``floordiv``), a skew, a shift or a reversal mixed in."""
    dims = [f"d{k}" for k in range(depth)]
    if depth == 0:
        return "() -> ()"
    points = dims[:]
    rng.shuffle(points)
    x = rng.random()
    if x < 0.25 and depth >= 2:
        a, b = rng.sample(range(depth), 2)
        points = [f"{points[a]} + {points[b]}" if k == a else p for k, p in enumerate(points)]
    elif x < 0.35:
        k = rng.randrange(depth)
        points[k] = f"-{points[k]}"
    elif x < 0.45:
        k = rng.randrange(depth)
        points[k] = f"{points[k]} + {rng.randint(1, 5)}"
    tiles = [f"{d} floordiv {rng.choice([2, 3, 4])}" for d in dims if rng.random() < 0.35]
    rng.shuffle(tiles)
    return f"({', '.join(dims)}) -> ({', '.join(tiles + points)})"


def schedules_for(case: Case, rng: random.Random, count: int) -> list:
    """Up to ``count`` random ``{statement: schedule}`` choices for an affine case."""
    from polyopt.schedules.model import extract
    module = polyopt.parse(case.text)
    func = module.regions[0].blocks[0].ops[0]
    try:
        model = extract(func)
    except ScheduleError:
        return []
    stmts = model.statements
    out = []
    for _ in range(count):
        chosen = rng.sample(stmts, min(len(stmts), rng.choice([1, 1, 2])))
        out.append({s.name: random_schedule(rng, len(s.ivs)) for s in chosen})
    return out


def build(case: Case, flags: dict, schedule: Optional[dict] = None) -> tuple:
    """(the IR polyopt lowers, as text, and the compiled module)."""
    module = load(case.text, f"fuzz-{case.seed}.mlir")
    if schedule:
        from polyopt.schedules.apply import apply_schedule
        apply_schedule(module.regions[0].blocks[0].ops[0], schedule)
    options = PipelineOptions(**flags)
    run_passes(module, options)
    # what polyopt prints parses, and printing is then a fixed point (the first print of IR
    # built by a pass may order a map's operands differently from how the parser does)
    printed = print_module(polyopt.parse(print_module(module), "printed.mlir"))
    again = print_module(polyopt.parse(printed, "printed.mlir"))
    if again != printed:
        raise _PrinterMismatch(printed, again)
    prepare_for_lowering(module)
    return print_module(module), CompiledModule(module, options)


class _PrinterMismatch(Exception):
    def __init__(self, first, second):
        super().__init__("print(parse(print(module))) differs from print(module)")
        self.first, self.second = first, second


def run_polyopt(case: Case, compiled) -> list:
    """Call ``@f`` on fresh copies of the inputs; returns the memref arguments' flat buffers
    (identity memrefs take arrays of their shape, transposed ones of their physical shape:
    views of those buffers)."""
    bufs = case.fresh_inputs()
    args = [b.reshape(a.shape) if a.is_memref and a.layout is None else
            b.reshape(a.shape[::-1]) if a.is_memref and a.strides is None else b
            for a, b in zip(case.args, bufs)]
    compiled["f"](*args)
    return [b for b in bufs if isinstance(b, np.ndarray)]


def refusal_allowed(case: Case, flags: dict, schedule, error: PolyoptError) -> bool:
    """An illegal schedule, tiles or a BLIS mode that do not fit are the user's to fix; the
    program itself is valid, so a VerifyError (of the input or of what a pass built) is not."""
    if isinstance(error, VerifyError):
        return False
    return bool(schedule) or bool(flags.get("blis")) or case.tiles_given


def check_run(case: Case, flags: dict, stats: Stats, schedule: Optional[dict] = None
              ) -> Optional[str]:
    """Run ``case`` under ``flags`` (and ``schedule``); record a failure in ``stats``.
    Returns the IR polyopt lowered when the run was correct."""
    what = flag_label(flags) + (f" --schedule {schedule}" if schedule else "")
    stats.runs += 1

    def fail(kind, message):
        stats.failures.append(Failure(case.seed, kind, what, message, case.text))

    try:
        lowered, compiled = build(case, flags, schedule)
        got = run_polyopt(case, compiled)
    except _PrinterMismatch as e:
        fail("printer", f"{e}\n--- first\n{e.first}\n--- second\n{e.second}")
        return None
    except PolyoptError as e:
        if e.loc is None:
            fail("internal", f"{type(e).__name__} without a location: {e}")
        elif refusal_allowed(case, flags, schedule, e):
            stats.refusal(f"{type(e).__name__}: {e.message}")
        else:
            fail("refused", f"a valid program was refused: {e}")
        return None
    except Exception as e:  # noqa: BLE001 - a bug in polyopt
        fail("internal", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        return None
    bad = compare(case, got, case.expected)
    if bad is not None:
        fail("wrong", bad)
        return None
    return lowered


def check_bound_check(case: Case, stats: Stats) -> None:
    """The program one row too small: ``--memref-bound-check`` must refuse it, naming an
    access to that memref."""
    if case.oob_text is None:
        return
    stats.runs += 1
    try:
        polyopt.compile(case.oob_text, filename="oob.mlir", memref_bound_check=True)
    except VerifyError as e:
        if "out-of-bounds access to " + case.oob_memref not in e.message or e.loc is None:
            stats.failures.append(Failure(case.seed, "bound-check", "--memref-bound-check",
                                          f"wrong report: {e}", case.oob_text))
        return
    except Exception as e:  # noqa: BLE001
        stats.failures.append(Failure(case.seed, "internal", "--memref-bound-check",
                                      f"{type(e).__name__}: {e}", case.oob_text))
        return
    stats.failures.append(Failure(case.seed, "bound-check", "--memref-bound-check",
                                  f"an access past {case.oob_memref} was not reported",
                                  case.oob_text))


# ---------------------------------------------------------------------------------------------
# upstream MLIR


def _dense_values(buf: np.ndarray, elem: str) -> str:
    if elem[0] == "i":
        return ", ".join(str(int(x)) for x in buf)
    return ", ".join(repr(float(x)) for x in buf)


def upstream_program(case: Case, module_text: str) -> str:
    """``module_text`` (a module holding ``@f``) with globals holding the inputs and a
    ``@main`` that calls ``@f`` on copies of them and prints every memref argument's buffer."""
    globals_, body, prints, decls = [], [], [], set()
    call_args, call_types = [], []
    for k, (arg, value) in enumerate(zip(case.args, case.inputs)):
        if not arg.is_memref:
            body.append(f"    %n{k} = arith.constant {value} : index")
            call_args.append(f"%n{k}")
            call_types.append("index")
            continue
        flat = f"memref<{arg.size}x{arg.elem}>"
        globals_.append(f'  memref.global "private" constant @fuzz_in{k} : {flat} = '
                        f"dense<[{_dense_values(value, arg.elem)}]>")
        body.append(f"    %g{k} = memref.get_global @fuzz_in{k} : {flat}")
        body.append(f"    %b{k} = memref.alloc() : {flat}")
        body.append(f"    memref.copy %g{k}, %b{k} : {flat} to {flat}")
        sizes = ", ".join(map(str, arg.shape))
        strides = ", ".join(map(str, arg.strides))
        body.append(f"    %a{k} = memref.reinterpret_cast %b{k} to offset: [{arg.offset}], "
                    f"sizes: [{sizes}], strides: [{strides}] : {flat} to {arg.type}")
        call_args.append(f"%a{k}")
        call_types.append(arg.type)
        printer = {"f64": "printMemrefF64", "f32": "printMemrefF32", "i32": "printMemrefI32",
                   "i64": "printMemrefI64"}[arg.elem]
        decls.add(f"  func.func private @{printer}(memref<*x{arg.elem}>)")
        prints.append(f"    %u{k} = memref.cast %b{k} : {flat} to memref<*x{arg.elem}>")
        prints.append(f"    func.call @{printer}(%u{k}) : (memref<*x{arg.elem}>) -> ()")
    main = (["  func.func @main() {"] + body +
            [f"    func.call @f({', '.join(call_args)}) : ({', '.join(call_types)}) -> ()"] +
            prints + ["    return", "  }"])
    extra = "\n".join(globals_ + main + sorted(decls)) + "\n"
    text = module_text.rstrip()
    if not text.endswith("}") or "module {" not in text:
        text = "module {\n" + text + "\n}"
    return text[:-1] + extra + "}\n"


_NUMBER = re.compile(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:e[+-]?\d+)?)")


def parse_printed(out: str, case: Case) -> list:
    """The buffers ``printMemref*`` printed, in order."""
    chunks = out.split("Unranked Memref")[1:]
    bufs = []
    for chunk, arg in zip(chunks, [a for a in case.args if a.is_memref]):
        data = chunk.split("data =", 1)[1]
        values = [float(x) for x in _NUMBER.findall(data)]
        bufs.append(np.array(values, dtype=np.float64))
    return bufs


def check_upstream(case: Case, module_text: str, what: str, stats: Stats) -> None:
    """Lower ``module_text`` with mlir-opt-22, run it with mlir-runner-22 and compare."""
    from upstream_mlir import lower_and_run
    stats.upstream_runs += 1
    program = upstream_program(case, module_text)

    def fail(kind, message):
        stats.failures.append(Failure(case.seed, kind, what, message, program))

    # MLIR 22's affine.for canonicalization (which greedy passes such as
    # --convert-linalg-to-affine-loops run) breaks a loop nested in an empty one: "'affine.for'
    # op expected upper bound map to have at least one result" for
    #   affine.for %i = 2 to 1 {
    #     affine.for %j = affine_map<(d0) -> (d0)>(%i) to min affine_map<(d0) -> (d0 + 5, 6)>(%i)
    # so that pass only runs where there are linalg ops
    passes = [p for p in UPSTREAM_PASSES
              if p != "--convert-linalg-to-affine-loops" or "linalg." in program]
    try:
        out = lower_and_run(program, passes)
    except AssertionError as e:   # mlir-opt-22 rejected the IR or mlir-runner-22 failed
        fail("upstream", f"upstream MLIR could not lower or run it: {str(e)[:2000]}")
        return
    got = parse_printed(out, case)
    if len(got) != len(case.expected):
        fail("upstream", f"printed {len(got)} memrefs, expected {len(case.expected)}")
        return
    # printMemref prints 6 significant digits
    saved = case.exact
    rtol = 1e-5 if case.elem[0] == "f" else 0
    for arg, g, e in zip([a for a in case.args if a.is_memref], got, case.expected):
        e = e.astype(np.float64)
        if g.shape != e.shape:
            fail("upstream", f"%{arg.name}: printed {g.size} values, expected {e.size}")
            return
        tol_r, tol_a = _tolerance(case) if not saved else (0, 0)
        ok = np.isclose(g, e, rtol=max(rtol, tol_r), atol=max(rtol * case.magnitude, tol_a),
                        equal_nan=True) if not saved else (g == e)
        bad = np.nonzero(~ok)[0]
        if len(bad):
            k = bad[0]
            fail("upstream", f"%{arg.name}: {len(bad)} elements differ from upstream's run; "
                             f"flat element {k}: upstream printed {g[k]!r}, expected {e[k]!r}")
            return


def check_upstream_print(case: Case, text: str, what: str, stats: Stats) -> None:
    """mlir-opt-22 accepts what polyopt printed, and polyopt prints it (parsed) as mlir-opt-22
    does."""
    from upstream_mlir import run_mlir_opt
    printed = print_module(polyopt.parse(text, "printed.mlir"))
    proc = run_mlir_opt(printed, timeout=120)
    if proc.returncode != 0:
        stats.failures.append(Failure(case.seed, "printer", what,
                                      f"mlir-opt-22 rejects polyopt's output: "
                                      f"{proc.stderr[:2000]}", printed))
    elif proc.stdout.rstrip("\n") + "\n" != printed:
        import difflib
        diff = "\n".join(difflib.unified_diff(printed.splitlines(), proc.stdout.splitlines(),
                                               "polyopt", "mlir-opt-22", lineterm="", n=1))
        stats.failures.append(Failure(case.seed, "printer", what,
                                      f"mlir-opt-22 prints it differently:\n{diff[:3000]}",
                                      printed))


# ---------------------------------------------------------------------------------------------
# a whole case


def check_case(case: Case, stats: Stats, rng: random.Random, *, max_flag_sets: Optional[int]
               = None, schedules: int = 2, upstream: bool = False) -> None:
    """Run ``case`` under the baseline and (a sample of ``max_flag_sets`` of) its flag sets,
    ``schedules`` random schedules (affine cases), the bound-check mutant, and with
    ``upstream`` through mlir-runner-22 (the program polyopt lowers without flags, and one
    optimized variant)."""
    stats.programs += 1
    sets = flag_sets(case)
    base, rest = sets[0], sets[1:]
    if max_flag_sets is not None and len(rest) > max_flag_sets:
        rest = rng.sample(rest, max_flag_sets)
    base_ir = check_run(case, base, stats)
    if base_ir is None:
        return
    optimized = []
    for flags in rest:
        ir = check_run(case, flags, stats)
        if ir is not None and not flags.get("blis"):
            optimized.append((flags, ir))
    if case.family == "affine":
        for sched in schedules_for(case, rng, schedules):
            ir = check_run(case, {}, stats, sched)
            if ir is not None:
                optimized.append(({"schedule": sched}, ir))
        check_bound_check(case, stats)
    if upstream:
        check_upstream_print(case, base_ir, "mlir-opt-22 printing the lowered IR", stats)
    if upstream and case.upstream_ok:
        original = not case.has_hop and case.upstream_lowers
        check_upstream(case, _module_of(case.text) if original else base_ir,
                       "upstream (original)" if original else "upstream (naive)", stats)
        if optimized:
            flags, ir = rng.choice(optimized)
            what = (f"upstream of polyopt's {flag_label(flags)} IR" if "schedule" not in flags
                    else f"upstream of --schedule {flags['schedule']}")
            check_upstream_print(case, ir, what + " (printing)", stats)
            check_upstream(case, ir, what, stats)


def _module_of(text: str) -> str:
    return "module {\n" + text + "}\n"


def tests_path() -> None:
    """Put tests/ (upstream_mlir) on sys.path: scripts/fuzz_diff.py imports this module
    outside pytest, where tests/conftest.py does not."""
    here = Path(__file__).resolve().parent
    p = str(here.parent)
    if p not in sys.path:
        sys.path.insert(0, p)


tests_path()
