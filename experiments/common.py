"""What the experiment scripts share.

* :class:`Step`: one configuration of ``hop.matmul`` (a :class:`polyopt.bench.Variant`) at one
  size and element type, with the paper's number for it (:class:`PaperRef`);
* :func:`run_steps`: times steps one at a time with :func:`polyopt.bench.bench_matmul`, each
  against numpy in its own run, exactly as ``polyopt bench matmul`` does for one
  configuration, so the numbers agree with the CLI's; progress goes to stderr;
* :func:`steps_table`: the markdown table of a list of results, ours beside the paper's.

A result is a plain dict (it goes to ``results.json`` as it is): the step's configuration,
``status`` (``ok``, ``unavailable`` or ``error``, with ``reason``), the tile sizes polyopt
chose (``model``), the harness's JSON (``bench``) and the figures read from it.
"""

from __future__ import annotations

import re
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import polyopt  # noqa: E402
from polyopt.bench import Variant, bench_matmul, matmul_source  # noqa: E402

# The paper (U. Bondhugula, "High Performance Code Generation in MLIR: An Early Case Study
# with GEMM", 2020) measured on one core of an i7-8700K: 2 FMA units x 4 f64 lanes x 2 flops
# x 4.7 GHz = 75.2 GFLOPS (section 1.1); f32 has twice the lanes.
PAPER_MACHINE = "Intel Core i7-8700K (Coffee Lake = Skylake core, AVX2, 16 ymm registers)"
PAPER_PEAK_GFLOPS = {"f64": 75.2, "f32": 150.4}

# Everything polyopt does to a matmul, as polyopt.compile switches.
ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}


@dataclass(frozen=True)
class PaperRef:
    """The paper's GFLOPS for a step (``None`` when it gives none) and where it says so."""

    gflops: Optional[float]
    section: str
    note: str = ""
    approximate: bool = False   # derived from the text ("about 5% slower"), not printed

    def to_json(self, dtype: str) -> dict:
        peak = PAPER_PEAK_GFLOPS[dtype]
        return {"gflops": self.gflops, "section": self.section, "note": self.note,
                "approximate": self.approximate, "peak_gflops": peak,
                "fraction_of_peak": self.gflops / peak if self.gflops else None}


@dataclass(frozen=True)
class Step:
    """One configuration to time.  ``optional`` steps (BLIS mode) may be unavailable on a
    machine: a :class:`polyopt.PolyoptError` or ``ImportError`` while compiling them is
    recorded as ``unavailable`` with the reason, not as an error."""

    variant: Variant
    m: int
    n: int
    k: int
    dtype: str = "f64"
    paper: Optional[PaperRef] = None
    note: str = ""
    optional: bool = False

    @property
    def llvm_vectorize(self) -> bool:
        return self.variant.switches.get("llvm_vectorize", True)

    @property
    def size(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def describe(self) -> str:
        """What a progress line calls the step."""
        vect = "" if self.llvm_vectorize else " [LLVM vectorizers off]"
        return f"{self.variant.label}{vect} {self.size} {self.dtype}"

    def estimate_seconds(self, reps: int) -> float:
        return estimate_seconds(self, reps)

    def to_json(self) -> dict:
        v = self.variant
        return {"label": v.label, "switches": v.switches, "tiles": v.tiles,
                "schedule": v.schedule, "m": self.m, "n": self.n, "k": self.k,
                "dtype": self.dtype, "llvm_vectorize": self.llvm_vectorize, "note": self.note,
                "paper": self.paper.to_json(self.dtype) if self.paper else None}


_PARAMETER = re.compile(r"\b(M_C|K_C|N_C|M_R|N_R|K_U|order)=(\w+)")


def model_parameters(step: Step) -> dict:
    """The BLIS tile sizes and register order polyopt uses for ``step`` (what ``polyopt opt
    --remarks`` prints): compiles the step's matmul with the tiling switches only and reads
    the remark.  Empty for the naive nest and for a ``schedule`` attribute."""
    switches = step.variant.switches
    if not switches.get("hopt") or step.variant.schedule is not None:
        return {}
    remarks: list[str] = []
    source = matmul_source(step.m, step.n, step.k, step.dtype, step.variant.attributes())
    polyopt.compile(source, filename=f"<{step.variant.label}>", hopt=True,
                    blis=bool(switches.get("blis")),
                    remark=lambda loc, message: remarks.append(message))
    for message in remarks:
        if "BLIS schedule" in message:
            described = message.split(" with ", 1)[1]
            params: dict = {key: value if key == "order" else int(value)
                            for key, value in _PARAMETER.findall(described)}
            kernel = re.search(r"micro-kernel (\S+)", described)
            if kernel:
                params["micro_kernel"] = kernel.group(1)
            return params
    return {}


def run_step(step: Step, *, reps: int, peak: Optional[float] = None) -> dict:
    """Time one step with the harness (checked result, warm-up, ``reps`` repetitions
    alternating with numpy, medians) and return its result dict.  A failure is recorded, not
    raised, so that one broken step does not lose a long run."""
    record = step.to_json()
    start = time.perf_counter()
    try:
        record["model"] = model_parameters(step)
        result = bench_matmul(step.m, step.n, step.k, step.dtype, reps=reps,
                              variants=[step.variant], measure_peak=False)
    except Exception as e:  # noqa: BLE001 -- recorded in the report, see the docstring
        unavailable = step.optional and isinstance(e, (polyopt.PolyoptError, ImportError))
        record.update(status="unavailable" if unavailable else "error",
                      reason=f"{type(e).__name__}: {e}")
        if not unavailable:
            record["traceback"] = traceback.format_exc()
        record["seconds"] = time.perf_counter() - start
        return record
    result.peak_gflops = peak
    (timed,) = result.variants
    flops = result.flops
    record.update(
        status="ok", gflops=result.gflops(timed.timing),
        gflops_min=flops / timed.timing.maximum / 1e9,
        gflops_max=flops / timed.timing.minimum / 1e9,
        fraction_of_peak=result.gflops(timed.timing) / peak if peak else None,
        ratio_vs_numpy=result.ratio(timed), compile_time=timed.compile_time,
        max_abs_error=timed.max_abs_error, numpy_gflops=result.gflops(result.numpy),
        numpy_gflops_min=flops / result.numpy.maximum / 1e9,
        numpy_gflops_max=flops / result.numpy.minimum / 1e9,
        numpy_fraction_of_peak=result.gflops(result.numpy) / peak if peak else None,
        blas=result.blas, bench=result.to_json(), seconds=time.perf_counter() - start)
    return record


def estimate_seconds(step: Step, reps: int) -> float:
    """A rough a-priori cost of a step (for the ETA only): compile, then reps + 1 runs of
    polyopt and of numpy at a GFLOPS guessed from the switches."""
    switches = step.variant.switches
    if not switches.get("hopt"):
        guess = 0.5            # the naive nest
    elif step.variant.schedule is not None:
        guess = 1.0            # the section 2.5 schedule without a register tile
    elif not (switches.get("copy") or switches.get("blis")):
        guess = 15.0
    elif not step.llvm_vectorize and not switches.get("vect"):
        guess = 6.0            # scalar code
    else:
        guess = 60.0
    return 0.5 + (reps + 1) * 2e-9 * step.m * step.n * step.k * (1 / guess + 1 / 60.0)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """One line per finished step on stderr: how many, the elapsed time and an ETA (the
    a-priori estimates of the steps left, scaled by how the finished ones compared).  A step
    is a :class:`Step` or anything else with ``describe()`` and ``estimate_seconds(reps)``
    (``experiments.conv_layers.ConvStep``); ``reps`` is the repetitions of every step or,
    when they differ between experiments, a function of the step that gives them."""

    def __init__(self, steps: Sequence, reps, stream=None):
        reps_of = reps if callable(reps) else (lambda step: reps)
        self.estimates = {id(s): s.estimate_seconds(reps_of(s)) for s in steps}
        self.total = len(steps)
        self.left = sum(self.estimates.values())
        self.done = 0
        self.done_estimate = 0.0
        self.start = time.perf_counter()
        self.stream = stream or sys.stderr

    def note(self, message: str) -> None:
        print(f"[{_clock(time.perf_counter() - self.start)}] {message}", file=self.stream,
              flush=True)

    def step_done(self, name: str, step, record: dict) -> None:
        estimate = self.estimates.get(id(step), 1.0)
        self.done += 1
        self.done_estimate += estimate
        self.left -= estimate
        elapsed = time.perf_counter() - self.start
        eta = max(0.0, self.left) * elapsed / max(self.done_estimate, 1e-9)
        if record["status"] == "ok":
            what = (f"{record['gflops']:.2f} GFLOPS, {record['ratio_vs_numpy']:.2f}x numpy, "
                    f"{record['seconds']:.1f} s")
        else:
            what = f"{record['status'].upper()}: {record['reason'].splitlines()[0][:100]}"
        print(f"[{self.done:3d}/{self.total}  {_clock(elapsed)} elapsed, ETA {_clock(eta)}] "
              f"{name}: {step.describe()}: {what}",
              file=self.stream, flush=True)


def run_steps(steps: Sequence, *, reps: int, peaks: dict,
              progress: Optional[Progress] = None, name: str = "",
              run: Optional[Callable[..., dict]] = None) -> list[dict]:
    """Time every step in order with ``run`` (:func:`run_step` unless given, e.g.
    ``conv_layers.run_layer``); ``peaks`` maps dtype to the measured FMA peak (GFLOPS)."""
    progress = progress or Progress(steps, reps)
    run = run or run_step
    records = []
    for step in steps:
        record = run(step, reps=reps, peak=peaks.get(step.dtype))
        progress.step_done(name, step, record)
        records.append(record)
    return records


# ---------------------------------------------------------------------------------------------
# markdown

def gflops_text(x: Optional[float]) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def percent_text(x: Optional[float]) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def tiles_text(record: dict) -> str:
    """How the step tiles the matmul: the naive nest, a schedule, or the BLIS parameters."""
    if not record["switches"].get("hopt"):
        return "naive nest"
    if record["schedule"]:
        return "`schedule` attribute"
    p = record.get("model") or {}
    if not p:
        return "—"
    text = f"{p.get('M_R')}x{p.get('N_R')} {p.get('order')}, M_C={p.get('M_C')} K_C={p.get('K_C')}"
    if p.get("N_C"):
        text += f" N_C={p['N_C']}"
    if p.get("micro_kernel"):
        text += f", {p['micro_kernel']}"
    return text


def _paper_cells(record: dict) -> list[str]:
    paper = record.get("paper")
    if not paper:
        return ["—", "—", ""]
    approx = "≈" if paper["approximate"] else ""
    value = approx + gflops_text(paper["gflops"]) if paper["gflops"] else "—"
    of_peak = approx + percent_text(paper["fraction_of_peak"]) if paper["gflops"] else "—"
    return [value, of_peak, paper["section"]]


def steps_table(records: Sequence[dict], *, numpy_from: Optional[dict] = None,
                numpy_paper: Optional[PaperRef] = None) -> str:
    """One row per step: ours (median GFLOPS, min..max, % of the measured peak, ratio to
    numpy in the same run, compile time) beside the paper's (GFLOPS, % of its peak, section).
    ``numpy_from``: the result whose numpy timing makes the closing numpy row."""
    header = ["step", "LLVM vect.", "size", "tiles", "GFLOPS", "min..max", "of peak",
              "vs numpy", "compile", "paper GFLOPS", "paper of peak", "paper §"]
    rows = []
    for r in records:
        vect = "on" if r["llvm_vectorize"] else "**off**"
        head = [r["label"], vect, f"{r['m']}x{r['n']}x{r['k']}", tiles_text(r)]
        if r["status"] == "ok":
            ours = [f"**{gflops_text(r['gflops'])}**",
                    f"{gflops_text(r['gflops_min'])}..{gflops_text(r['gflops_max'])}",
                    percent_text(r["fraction_of_peak"]), f"{r['ratio_vs_numpy']:.3f}x",
                    f"{r['compile_time']:.2f} s"]
        else:
            ours = [r["status"], "", "", "", ""]
        rows.append(head + ours + _paper_cells(r))
    if numpy_from is not None and numpy_from.get("status") == "ok":
        r = numpy_from
        paper = ["—", "—", ""]
        if numpy_paper is not None:
            paper = _paper_cells({"paper": numpy_paper.to_json(r["dtype"])})
        rows.append(["numpy (OpenBLAS, 1 thread)", "", f"{r['m']}x{r['n']}x{r['k']}",
                     f"timed in the run of '{r['label']}'",
                     f"**{gflops_text(r['numpy_gflops'])}**",
                     f"{gflops_text(r['numpy_gflops_min'])}..{gflops_text(r['numpy_gflops_max'])}",
                     percent_text(r["numpy_fraction_of_peak"]), "1.000x", ""] + paper)
    return markdown_table(header, rows)


def steps_notes(records: Sequence[dict]) -> str:
    """The notes of the steps and of their paper numbers, and why a step did not run."""
    lines = []
    seen = set()
    for r in records:
        texts = []
        if r["note"]:
            texts.append(r["note"])
        if r.get("paper") and r["paper"]["note"]:
            texts.append(f"paper (§{r['paper']['section']}): {r['paper']['note']}")
        if r["status"] != "ok":
            texts.append(f"{r['status']}: {r['reason']}")
        text = "; ".join(texts)
        if text and (r["label"], text) not in seen:
            seen.add((r["label"], text))
            lines.append(f"- **{r['label']}**: {text}")
    return "\n".join(lines)


def print_standalone(title: str, records: Sequence[dict], numpy_from: Optional[dict] = None,
                     numpy_paper: Optional[PaperRef] = None) -> None:
    """What an experiment script run on its own prints: its table and notes."""
    print(f"## {title}\n")
    print(steps_table(records, numpy_from=numpy_from, numpy_paper=numpy_paper))
    notes = steps_notes(records)
    if notes:
        print("\n" + notes)
