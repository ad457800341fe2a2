"""``affine.parallel`` (run sequentially for now), ``affine.delinearize_index`` and
``affine.linearize_index`` lowered to LLVM and run: against numpy on shapes that are not
multiples of anything, against ``mlir-runner-22`` running MLIR's own lowering of the same
program, and the acceptance program: nests that ``mlir-opt-22 --affine-parallelize`` turned into
``affine.parallel`` (a matmul, an elementwise nest, reductions) print exactly what
mlir-runner-22 prints."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.diagnostics import CodegenError, VerifyError
from polyopt.cli import main
from polyopt.codegen.to_llvm import lower_module
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run, mlir_opt

UPSTREAM_PASSES = ["--lower-affine", "--convert-scf-to-cf", "--finalize-memref-to-llvm",
                   "--convert-math-to-llvm", "--convert-arith-to-llvm",
                   "--convert-func-to-llvm", "--convert-cf-to-llvm",
                   "--reconcile-unrealized-casts"]


# ---------------------------------------------------------------------------------------------
# reductions: every kind MLIR accepts and lowers, on float and integer types

FLOAT_KINDS = ["addf", "mulf", "maximumf", "minimumf"]
INT_KINDS = ["addi", "muli", "ori", "andi"]
FLOAT_TYPES = ["f32", "f64"]
INT_TYPES = ["i1", "i8", "i16", "i32", "i64"]
CASES = [(k, t) for k in FLOAT_KINDS for t in FLOAT_TYPES] + \
    [(k, t) for k in INT_KINDS for t in INT_TYPES]

# the kernel: a 2-D parallel with max/min bounds and steps that divide nothing; ``%a``, ``%n``
# move the bounds: i in [max(a, 1), min(n, 61)) step 2, j in [0, n floordiv 2 + 1) step 3
BOUNDS = ("(%i, %j) = (max(%a, 1), 0) to (min(%n, 61), %n floordiv 2 + 1) step (2, 3)")


def _elem(t: str) -> str:
    """The memref element type holding the values of a reduction over ``t`` (``i1`` values
    are ``i8`` values != 0)."""
    return "i8" if t == "i1" else t


def _kernel(kind: str, t: str) -> str:
    e = _elem(t)
    load = f"%v = affine.load %A[%i, %j] : memref<64x64x{e}>"
    if t == "i1":
        load += "\n    %z = arith.constant 0 : i8\n    %b = arith.cmpi ne, %v, %z : i8"
        value = "%b"
    else:
        value = "%v"
    return f"""\
func.func @k(%A: memref<64x64x{e}>, %a: index, %n: index) -> {t} {{
  %r = affine.parallel {BOUNDS} reduce ("{kind}") -> ({t}) {{
    {load}
    affine.yield {value} : {t}
  }}
  return %r : {t}
}}
"""


def _values(t: str, shape=(64, 64)) -> np.ndarray:
    """Deterministic data: floats near 1 (products stay finite), small signed integers."""
    i, j = np.indices(shape)
    q = (i * 7 + j * 3) % 11
    if t in FLOAT_TYPES:
        return (0.75 + q / 16.0).astype(np.float32 if t == "f32" else np.float64)
    if t == "i1":
        return (q % 3 == 0).astype(np.int8)
    return (q - 5).astype({"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}[t])


def _expected(kind: str, t: str, A: np.ndarray, a: int, n: int, threads: int = 1):
    """The reduction in MLIR's order (outer dimension first, acc = acc <op> v); with
    ``threads > 1`` in the order of the OpenMP lowering: the outer dimension's iterations
    split into consecutive blocks (libomp's static schedule: the first ``trips % threads``
    threads one iteration more), each thread reducing its own from the identity, the
    threads' partial values combined in thread order."""
    rows = list(range(max(a, 1), min(n, 61), 2))
    small, extra = divmod(len(rows), threads)
    parts, k = [], 0
    for th in range(threads):
        size = small + (th < extra)
        parts.append(rows[k:k + size])
        k += size
    groups = [[A[i, j] for i in part for j in range(0, n // 2 + 1, 3)] for part in parts]
    vals = [v for g in groups for v in g]
    if t in FLOAT_TYPES:
        ft = np.float32 if t == "f32" else np.float64
        step = {"addf": lambda x, y: ft(x + y), "mulf": lambda x, y: ft(x * y),
                "maximumf": max, "minimumf": min}[kind]
        identity = ft({"addf": 0.0, "mulf": 1.0, "maximumf": -np.inf, "minimumf": np.inf}[kind])
        partials = []
        for g in groups:
            acc = identity
            for v in g:
                acc = step(acc, ft(v))
            partials.append(acc)
        acc = partials[0]
        for p in partials[1:]:
            acc = step(acc, p)
        return float(acc)
    bits = 1 if t == "i1" else int(t[1:])
    acc = {"addi": 0, "muli": 1, "ori": 0, "andi": -1}[kind]
    for v in vals:
        x = int(v != 0) if t == "i1" else int(v)
        acc = {"addi": acc + x, "muli": acc * x, "ori": acc | x, "andi": acc & x}[kind]
    acc &= (1 << bits) - 1
    if t == "i1":
        return bool(acc)
    return acc - (1 << bits) if acc >= 1 << (bits - 1) else acc


# (a, n): a full-ish range, a small one, one where only the lower group's max decides, empty
SIZES = [(0, 64), (3, 9), (5, 30), (7, 7), (0, 0)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("kind,t", CASES, ids=[f"{k}-{t}" for k, t in CASES])
def test_reduction_against_numpy(kind, t, threads, monkeypatch):
    # at 2 and 3 threads the float results are bitwise those of the static schedule's order
    # (every region forks the team, however small)
    from polyopt.codegen import openmp
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)
    f = polyopt.compile(_kernel(kind, t), threads=threads)["k"]
    A = _values(t)
    for a, n in SIZES:
        got = f(A, a, n)
        want = _expected(kind, t, A, a, n, threads)
        assert got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got)), \
            (a, n, got, want)


def _main_printing(kernels: list[tuple[str, str]], sizes) -> str:
    """A module with kernel ``@k_<kind>_<t>`` per case and an ``@main`` that fills the input
    the way :func:`_values` does, calls every kernel for every size and prints each result
    (``printF64``/``printI64``, as both runtimes have them)."""
    out = ["func.func private @printF64(f64)", "func.func private @printI64(i64)",
           "func.func private @printNewline()"]
    calls = []
    fills = {}
    for kind, t in kernels:
        name = f"k_{kind}_{t}"
        out.append(_kernel(kind, t).replace("@k(", f"@{name}("))
        e = _elem(t)
        fills[e] = t
        for a, n in sizes:
            r = f"%r_{name}_{a}_{n}"
            calls.append(f"  {r} = call @{name}(%A_{e}, %c{a}, %c{n}) : "
                         f"(memref<64x64x{e}>, index, index) -> {t}")
            if t in FLOAT_TYPES:
                x = r
                if t == "f32":
                    calls.append(f"  {r}_x = arith.extf {r} : f32 to f64")
                    x = f"{r}_x"
                calls.append(f"  call @printF64({x}) : (f64) -> ()")
            else:
                ext = "arith.extui" if t == "i1" else "arith.extsi"
                x = r if t == "i64" else f"{r}_x"
                if t != "i64":
                    calls.append(f"  {x} = {ext} {r} : {t} to i64")
                calls.append(f"  call @printI64({x}) : (i64) -> ()")
            calls.append("  call @printNewline() : () -> ()")
    consts = sorted({v for a, n in sizes for v in (a, n)})
    body = [f"  %c{v} = arith.constant {v} : index" for v in consts]
    for e, t in sorted(fills.items()):
        body.append(f"  %A_{e} = memref.alloc() : memref<64x64x{e}>")
        body.append("  affine.for %i = 0 to 64 {\n    affine.for %j = 0 to 64 {")
        body.append("      %q = affine.apply affine_map<(d0, d1) -> ((d0 * 7 + d1 * 3) mod 11)>"
                    "(%i, %j)")
        if t in FLOAT_TYPES:
            body += ["      %qi = arith.index_cast %q : index to i64",
                     f"      %qf = arith.sitofp %qi : i64 to {e}",
                     f"      %s = arith.constant 0.0625 : {e}",
                     f"      %o = arith.constant 0.75 : {e}",
                     f"      %m = arith.mulf %qf, %s : {e}",
                     f"      %v = arith.addf %m, %o : {e}"]
        elif t == "i1":
            body += ["      %r3 = affine.apply affine_map<(d0) -> (d0 mod 3)>(%q)",
                     "      %c0i = arith.constant 0 : index",
                     "      %is = arith.cmpi eq, %r3, %c0i : index",
                     "      %v = arith.extui %is : i1 to i8"]
        else:
            body += ["      %q5 = affine.apply affine_map<(d0) -> (d0 - 5)>(%q)",
                     f"      %v = arith.index_cast %q5 : index to {e}"]
        body.append(f"      affine.store %v, %A_{e}[%i, %j] : memref<64x64x{e}>")
        body.append("    }\n  }")
    out.append("func.func @main() {\n" + "\n".join(body + calls) + "\n  return\n}\n")
    return "\n".join(out)


def test_reductions_print_what_mlir_runner_prints(tmp_path, capfd):
    text = _main_printing(CASES, SIZES[:4])
    upstream = lower_and_run(text, UPSTREAM_PASSES)
    assert upstream.count("\n") == len(CASES) * 4
    assert polyopt_run(tmp_path, capfd, text, "--threads", "1") == upstream
    # in parallel every result but the products (reassociated, rounded differently) is the same
    lines = polyopt_run(tmp_path, capfd, text, "--threads", "2").splitlines()
    for k, (got, want) in enumerate(zip(lines, upstream.splitlines())):
        if CASES[k // 4][0] == "mulf":
            assert float(got) == pytest.approx(float(want), rel=1e-5)
        else:
            assert got == want, (CASES[k // 4], got, want)


def test_empty_ranges_give_the_identity():
    # (0, 0): no iteration; -inf/inf/0/1/-1/0 as MLIR's getIdentityValue
    for kind, t, want in [("maximumf", "f64", -math.inf), ("minimumf", "f32", math.inf),
                          ("addf", "f64", 0.0), ("mulf", "f32", 1.0), ("andi", "i32", -1),
                          ("ori", "i1", False), ("muli", "i8", 1)]:
        got = polyopt.compile(_kernel(kind, t))["k"](_values(t), 0, 0)
        scalar = {"f64": np.float64, "f32": np.float32, "i32": np.int32, "i1": np.bool_,
                  "i8": np.int8}[t]  # results are numpy scalars of their type
        assert got == want and type(got) is scalar, (kind, t, got)
    # +0.0, not -0.0, starts an addf: a sum of -0.0s is +0.0, as upstream computes it
    src = _kernel("addf", "f64")
    assert math.copysign(1.0, polyopt.compile(src)["k"](np.full((64, 64), -0.0), 0, 64)) == 1.0


def test_nan_propagates_through_maximumf():
    A = _values("f64")
    A[3, 0] = np.nan
    assert math.isnan(polyopt.compile(_kernel("maximumf", "f64"))["k"](A, 0, 64))


def test_several_reductions_and_nested_parallels():
    src = """\
func.func @k(%A: memref<13x29xf64>, %B: memref<13x29xi32>, %n: index) -> (f64, i32, f64) {
  %r:3 = affine.parallel (%i) = (1) to (min(%n, 13)) step (4) reduce ("addf", "muli", "maximumf") -> (f64, i32, f64) {
    %s, %p = affine.parallel (%j) = (%i) to (29) step (5) reduce ("addf", "addi") -> (f64, i32) {
      %v = affine.load %A[%i, %j] : memref<13x29xf64>
      %w = affine.load %B[%i, %j] : memref<13x29xi32>
      affine.yield %v, %w : f64, i32
    }
    %m = affine.load %A[%i, %i] : memref<13x29xf64>
    affine.yield %s, %p, %m : f64, i32, f64
  }
  return %r#0, %r#1, %r#2 : f64, i32, f64
}
"""
    f = polyopt.compile(src)["k"]
    rng = np.random.default_rng(7)
    A = rng.integers(-8, 9, (13, 29)).astype(np.float64)
    B = rng.integers(-3, 4, (13, 29)).astype(np.int32)
    for n in (0, 1, 2, 6, 13, 40):
        s, p, m = 0.0, 1, -math.inf
        for i in range(1, min(n, 13), 4):
            s += sum(A[i, j] for j in range(i, 29, 5))
            p = (p * int(sum(B[i, j] for j in range(i, 29, 5)))) % (1 << 32)
            m = max(m, A[i, i])
        p = p - (1 << 32) if p >= 1 << 31 else p
        assert f(A, B, n) == (s, p, m)


# ---------------------------------------------------------------------------------------------
# bounds and steps

ELEMENTWISE = """\
func.func @k(%A: memref<37x41xf64>, %B: memref<37x41xf64>, %a: index, %b: index, %n: index, %m: index) {
  affine.parallel (%i, %j) = (max(%a, 1, %n floordiv 3), %b) to (min(%n, 37, %a + 30), %m + 3) step (3, 5) {
    %v = affine.load %A[%i, %j] : memref<37x41xf64>
    %w = affine.load %B[%i, %j] : memref<37x41xf64>
    %s = arith.addf %v, %w : f64
    affine.store %s, %B[%i, %j] : memref<37x41xf64>
  }
  return
}
"""


@pytest.mark.parametrize("a,b,n,m", [(0, 0, 37, 38), (2, 3, 30, 20), (5, 1, 37, 7),
                                     (11, 40, 37, 38), (0, 0, 0, 0), (1, 2, 19, 33)])
def test_minmax_bounds_and_steps_against_numpy(a, b, n, m):
    rng = np.random.default_rng(a * 1000 + n)
    A = rng.random((37, 41))
    B = rng.random((37, 41))
    want = B.copy()
    for i in range(max(a, 1, n // 3), min(n, 37, a + 30), 3):
        for j in range(b, m + 3, 5):
            want[i, j] += A[i, j]
    polyopt.compile(ELEMENTWISE)["k"](A, B, a, b, n, m)
    assert np.array_equal(B, want)


# random bounds: each dimension's lower group is a max and its upper group a min of 1-3
# expressions over the symbols (constants, s + c, s floordiv k + c, c - s), with random steps
_LOWER_EXPRS = st.one_of(
    st.integers(-3, 12).map(lambda c: (str(c), lambda s, c=c: c)),
    st.tuples(st.integers(0, 2), st.integers(-4, 6)).map(
        lambda t: (f"symbol(%s{t[0]}) + {t[1]}", lambda s, t=t: s[t[0]] + t[1])),
    st.tuples(st.integers(0, 2), st.integers(2, 5), st.integers(-2, 3)).map(
        lambda t: (f"symbol(%s{t[0]}) floordiv {t[1]} + {t[2]}",
                   lambda s, t=t: s[t[0]] // t[1] + t[2])))
_UPPER_EXPRS = st.one_of(
    _LOWER_EXPRS,
    st.tuples(st.integers(0, 2), st.integers(10, 30)).map(
        lambda t: (f"{t[1]} - symbol(%s{t[0]})", lambda s, t=t: t[1] - s[t[0]])))


def _group(exprs, keyword: str) -> str:
    texts = [t for t, _ in exprs]
    return texts[0] if len(texts) == 1 else f"{keyword}({', '.join(texts)})"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(lower=st.lists(st.lists(_LOWER_EXPRS, min_size=1, max_size=3), min_size=2, max_size=2),
       upper=st.lists(st.lists(_UPPER_EXPRS, min_size=1, max_size=3), min_size=2, max_size=2),
       steps=st.lists(st.integers(1, 5), min_size=2, max_size=2),
       symbols=st.lists(st.lists(st.integers(0, 25), min_size=3, max_size=3), min_size=1,
                        max_size=3))
def test_random_bounds_and_steps_against_python(lower, upper, steps, symbols):
    """Every point of the iteration space is visited once (a count per element of a padded
    buffer: the bounds keep every index in [-4, 31]), and an ``addi`` reduction sees the same
    points."""
    src = f"""\
func.func @k(%B: memref<40x40xi64>, %s0: index, %s1: index, %s2: index) -> i64 {{
  %one = arith.constant 1 : i64
  %r = affine.parallel (%i, %j) = ({", ".join(_group(g, "max") for g in lower)}) to ({
      ", ".join(_group(g, "min") for g in upper)}) step ({steps[0]}, {steps[1]}) reduce ("addi") -> (i64) {{
    %b = affine.load %B[%i + 8, %j + 8] : memref<40x40xi64>
    %c = arith.addi %b, %one : i64
    affine.store %c, %B[%i + 8, %j + 8] : memref<40x40xi64>
    %x = affine.apply affine_map<(d0, d1) -> (d0 * 64 + d1)>(%i, %j)
    %xi = arith.index_cast %x : index to i64
    affine.yield %xi : i64
  }}
  return %r : i64
}}
"""
    spaces = []
    for s in symbols:
        lo = [max(f(s) for _, f in g) for g in lower]
        hi = [min(f(s) for _, f in g) for g in upper]
        spaces.append((s, lo, hi))
    try:
        k = polyopt.compile(src)["k"]
    except VerifyError as e:
        # memref-bound-check: out of bounds whenever it runs (for symbols that make it run,
        # which these are not)
        assert "out-of-bounds access" in str(e)
        assert all(not range(lo[0], hi[0]) or not range(lo[1], hi[1]) for _, lo, hi in spaces)
        return
    for s, lo, hi in spaces:
        want = np.zeros((40, 40), dtype=np.int64)
        total = 0
        for i in range(lo[0], hi[0], steps[0]):
            for j in range(lo[1], hi[1], steps[1]):
                want[i + 8, j + 8] += 1
                total += i * 64 + j
        B = np.zeros((40, 40), dtype=np.int64)
        assert k(B, *s) == total
        assert np.array_equal(B, want)


def test_no_dimension_runs_the_body_once():
    # mlir-opt-22 --lower-affine cannot lower this one (scf.parallel needs a dimension)
    src = """\
func.func @k(%A: memref<3xi64>) -> i64 {
  %c = arith.constant 7 : i64
  %r = affine.parallel () = () to () reduce ("addi") -> (i64) {
    %v = affine.load %A[1] : memref<3xi64>
    %s = arith.addi %v, %c : i64
    affine.store %s, %A[1] : memref<3xi64>
    affine.yield %v : i64
  }
  return %r : i64
}
"""
    A = np.array([1, 2, 3], dtype=np.int64)
    assert polyopt.compile(src)["k"](A) == 2 and list(A) == [1, 9, 3]


def test_assign_reduction_is_refused_at_the_op(tmp_path, capsys):
    src = """\
func.func @k(%x: f32) -> f32 {
  %r = affine.parallel (%i) = (0) to (10) reduce ("assign") -> (f32) {
    affine.yield %x : f32
  }
  return %r : f32
}
"""
    with pytest.raises(CodegenError) as info:
        polyopt.compile(src, filename="assign.mlir")
    assert str(info.value) == ("assign.mlir:2:8: error: 'affine.parallel' reduction \"assign\" "
                               "has no identity value and cannot be lowered (nor can MLIR's "
                               "lower-affine)")
    path = tmp_path / "assign.mlir"
    path.write_text(src)
    assert main(["run", str(path), "-e", "k"]) == 1
    assert f"{path}:2:8: error: 'affine.parallel' reduction" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# delinearize / linearize

INDEX_OPS = """\
func.func @k(%x: index, %n: index, %m: index) -> (index, index, index, index, index, index, index, index, index) {
  %a:3 = affine.delinearize_index %x into (%n, 4, 3) : index, index, index
  %b:3 = affine.delinearize_index %x into (%n, %m) : index, index, index
  %c = affine.delinearize_index %x into (5) : index
  %l = affine.linearize_index [%a#0, %a#1, %a#2] by (%n, 4, 3) : index
  %l2 = affine.linearize_index disjoint [%b#0, %b#1, %b#2] by (%n, %m) : index
  %l3 = affine.linearize_index [%b#1, %a#2] by (%m, 3) : index
  return %a#0, %a#1, %a#2, %b#0, %b#1, %b#2, %c, %l, %l2, %l3 : index, index, index, index, index, index, index, index, index, index
}
"""


def test_index_ops_against_python():
    f = polyopt.compile(INDEX_OPS.replace(
        "-> (index, index, index, index, index, index, index, index, index)",
        "-> (index, index, index, index, index, index, index, index, index, index)"))["k"]
    for x, n, m in [(0, 5, 7), (37, 5, 7), (100, 3, 7), (-13, 5, 7), (1234567, 11, 13),
                    (-1, 2, 3), (59, 1, 1)]:
        b1, b2 = (x % (n * m)) // m, x % m
        want = (x // 12, (x % 12) // 3, x % 3, x // (n * m), b1, b2, x, x, x, b1 * 3 + x % 3)
        assert f(x, n, m) == want, (x, n, m)


def test_index_ops_print_what_mlir_runner_prints(tmp_path, capfd):
    kernel = INDEX_OPS.replace(
        "-> (index, index, index, index, index, index, index, index, index)",
        "-> (index, index, index, index, index, index, index, index, index, index)")
    calls = []
    for x, n, m in [(0, 5, 7), (37, 5, 7), (100, 3, 7), (-13, 5, 7), (1234567, 11, 13)]:
        tag = f"{x}_{n}_{m}".replace("-", "m")
        calls.append(f"  %x{tag} = arith.constant {x} : index\n"
                     f"  %n{tag} = arith.constant {n} : index\n"
                     f"  %m{tag} = arith.constant {m} : index\n"
                     f"  %r{tag}:10 = call @k(%x{tag}, %n{tag}, %m{tag}) : (index, index, index) "
                     f"-> ({', '.join(['index'] * 10)})")
        for k in range(10):
            calls.append(f"  %i{tag}_{k} = arith.index_cast %r{tag}#{k} : index to i64\n"
                         f"  call @printI64(%i{tag}_{k}) : (i64) -> ()\n"
                         f"  call @printNewline() : () -> ()")
    text = ("func.func private @printI64(i64)\nfunc.func private @printNewline()\n" + kernel
            + "func.func @main() {\n" + "\n".join(calls) + "\n  return\n}\n")
    upstream = lower_and_run(text, UPSTREAM_PASSES)
    assert upstream.count("\n") == 50
    assert polyopt_run(tmp_path, capfd, text) == upstream


def test_index_ops_use_linear_forms():
    """Through the linear forms: linearizing is multiply-adds only, and delinearizing a
    non-negative induction variable by powers of two is shifts and masks (no division)."""
    src = """\
func.func @k(%A: memref<8x4xf64>, %B: memref<32xf64>) {
  affine.for %x = 0 to 32 {
    %q:2 = affine.delinearize_index %x into (8, 4) : index, index
    %v = memref.load %A[%q#0, %q#1] : memref<8x4xf64>
    %l = affine.linearize_index [%q#1, %q#0] by (4, 8) : index
    memref.store %v, %B[%l] : memref<32xf64>
  }
  return
}
"""
    module = polyopt.parse(src)
    llvm_ir = lower_module(module).llvm_ir
    body = llvm_ir[llvm_ir.index("define"):]
    assert not re.search(r"\b[us](div|rem)\b", body)
    assert "lshr" in body and "and i64" in body
    A = np.arange(32.0).reshape(8, 4)
    B = np.zeros(32)
    polyopt.compile(src)["k"](A, B)
    assert np.array_equal(B, A.T.reshape(32))


# ---------------------------------------------------------------------------------------------
# the acceptance program: upstream's --affine-parallelize output, parsed and run

ACCEPTANCE = """\
func.func private @printMemrefF64(memref<*xf64>)
func.func private @printMemrefI64(memref<*xi64>)

func.func @matmul(%A: memref<23x17xf64>, %B: memref<17x31xf64>, %C: memref<23x31xf64>) {
  affine.for %i = 0 to 23 {
    affine.for %j = 0 to 31 {
      affine.for %k = 0 to 17 {
        %a = affine.load %A[%i, %k] : memref<23x17xf64>
        %b = affine.load %B[%k, %j] : memref<17x31xf64>
        %c = affine.load %C[%i, %j] : memref<23x31xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<23x31xf64>
      }
    }
  }
  return
}

func.func @elementwise(%A: memref<23x17xf64>, %B: memref<23x17xf64>, %O: memref<23x17xf64>) {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 23 {
    affine.for %j = 0 to 17 {
      %a = affine.load %A[%i, %j] : memref<23x17xf64>
      %b = affine.load %B[%i, %j] : memref<23x17xf64>
      %d = arith.subf %a, %b : f64
      %r = arith.maximumf %d, %zero : f64
      affine.store %r, %O[%i, %j] : memref<23x17xf64>
    }
  }
  return
}

func.func @reductions(%A: memref<23x17xf64>, %I: memref<23x17xi64>, %R: memref<4x23xf64>, %S: memref<3x23xi64>) {
  affine.for %i = 0 to 23 {
    %z = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f64
    %ninf = arith.constant 0xFFF0000000000000 : f64
    %pinf = arith.constant 0x7FF0000000000000 : f64
    %sum, %max, %min = affine.for %k = 0 to 17 iter_args(%s = %z, %m = %ninf, %n = %pinf) -> (f64, f64, f64) {
      %a = affine.load %A[%i, %k] : memref<23x17xf64>
      %s2 = arith.addf %s, %a : f64
      %m2 = arith.maximumf %m, %a : f64
      %n2 = arith.minimumf %n, %a : f64
      affine.yield %s2, %m2, %n2 : f64, f64, f64
    }
    %prod = affine.for %k = 0 to 5 iter_args(%p = %one) -> (f64) {
      %a = affine.load %A[%i, %k] : memref<23x17xf64>
      %p2 = arith.mulf %p, %a : f64
      affine.yield %p2 : f64
    }
    affine.store %sum, %R[0, %i] : memref<4x23xf64>
    affine.store %max, %R[1, %i] : memref<4x23xf64>
    affine.store %min, %R[2, %i] : memref<4x23xf64>
    affine.store %prod, %R[3, %i] : memref<4x23xf64>
    %zi = arith.constant 0 : i64
    %onei = arith.constant 1 : i64
    %isum, %ior = affine.for %k = 0 to 17 iter_args(%s = %zi, %o = %zi) -> (i64, i64) {
      %a = affine.load %I[%i, %k] : memref<23x17xi64>
      %s2 = arith.addi %s, %a : i64
      %o2 = arith.ori %o, %a : i64
      affine.yield %s2, %o2 : i64, i64
    }
    %iprod = affine.for %k = 0 to 4 iter_args(%p = %onei) -> (i64) {
      %a = affine.load %I[%i, %k] : memref<23x17xi64>
      %p2 = arith.muli %p, %a : i64
      affine.yield %p2 : i64
    }
    affine.store %isum, %S[0, %i] : memref<3x23xi64>
    affine.store %ior, %S[1, %i] : memref<3x23xi64>
    affine.store %iprod, %S[2, %i] : memref<3x23xi64>
  }
  return
}

func.func @main() {
  %A = memref.alloc() : memref<23x17xf64>
  %A2 = memref.alloc() : memref<23x17xf64>
  %I = memref.alloc() : memref<23x17xi64>
  %B = memref.alloc() : memref<17x31xf64>
  %C = memref.alloc() : memref<23x31xf64>
  %O = memref.alloc() : memref<23x17xf64>
  %R = memref.alloc() : memref<4x23xf64>
  %S = memref.alloc() : memref<3x23xi64>
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 23 {
    affine.for %k = 0 to 17 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 7 + d1 * 3) mod 11)>(%i, %k)
      %w = affine.apply affine_map<(d0, d1) -> ((d0 * 5 + d1 * 2) mod 13)>(%i, %k)
      %x = arith.index_cast %v : index to i64
      %y = arith.index_cast %w : index to i64
      %f = arith.sitofp %x : i64 to f64
      %g = arith.sitofp %y : i64 to f64
      %c5 = arith.constant 5.0 : f64
      %h = arith.subf %f, %c5 : f64
      affine.store %h, %A[%i, %k] : memref<23x17xf64>
      affine.store %g, %A2[%i, %k] : memref<23x17xf64>
      affine.store %y, %I[%i, %k] : memref<23x17xi64>
    }
  }
  affine.for %k = 0 to 17 {
    affine.for %j = 0 to 31 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 5 + d1) mod 7)>(%k, %j)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %B[%k, %j] : memref<17x31xf64>
    }
  }
  affine.for %i = 0 to 23 {
    affine.for %j = 0 to 31 {
      affine.store %zero, %C[%i, %j] : memref<23x31xf64>
    }
  }
  call @matmul(%A, %B, %C) : (memref<23x17xf64>, memref<17x31xf64>, memref<23x31xf64>) -> ()
  call @elementwise(%A, %A2, %O) : (memref<23x17xf64>, memref<23x17xf64>, memref<23x17xf64>) -> ()
  call @reductions(%A, %I, %R, %S) : (memref<23x17xf64>, memref<23x17xi64>, memref<4x23xf64>, memref<3x23xi64>) -> ()
  %Cu = memref.cast %C : memref<23x31xf64> to memref<*xf64>
  %Ou = memref.cast %O : memref<23x17xf64> to memref<*xf64>
  %Ru = memref.cast %R : memref<4x23xf64> to memref<*xf64>
  %Su = memref.cast %S : memref<3x23xi64> to memref<*xi64>
  call @printMemrefF64(%Cu) : (memref<*xf64>) -> ()
  call @printMemrefF64(%Ou) : (memref<*xf64>) -> ()
  call @printMemrefF64(%Ru) : (memref<*xf64>) -> ()
  call @printMemrefI64(%Su) : (memref<*xi64>) -> ()
  return
}
"""


@pytest.mark.parametrize("option", ["--affine-parallelize",
                                    "--affine-parallelize=parallel-reductions"])
def test_affine_parallelize_output_runs_as_upstream(option, tmp_path, capfd):
    parallel = mlir_opt(ACCEPTANCE, option, timeout=120)
    # the matmul's i, j loops and every elementwise and initialization loop are parallel
    assert parallel.count("affine.parallel") >= (15 if "reductions" in option else 9)
    if "reductions" in option:
        assert 'reduce ("addf", "maximumf", "minimumf") -> (f64, f64, f64)' in parallel
        assert 'reduce ("mulf")' in parallel and 'reduce ("addi", "ori")' in parallel
        assert 'reduce ("muli")' in parallel
    # polyopt prints what it parsed as mlir-opt-22 does
    assert str(polyopt.parse(parallel)) == parallel.rstrip("\n") + "\n"
    upstream = lower_and_run(parallel, UPSTREAM_PASSES)
    ours = polyopt_run(tmp_path, capfd, parallel)
    assert ours.count("Unranked Memref") == 4
    assert mask_addresses(ours) == mask_addresses(upstream)
    # and the same as the original, unparallelized program
    assert mask_addresses(polyopt_run(tmp_path, capfd, ACCEPTANCE)) == mask_addresses(upstream)
