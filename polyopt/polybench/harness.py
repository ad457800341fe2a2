"""``polyopt bench polybench``: the PolyBench kernels timed four ways in one run.

For each kernel, at one dataset and on one thread: polyopt without passes, polyopt ``--hopt``
with the pass flags of the matmul benchmark's main job (``--hopt-copy --hopt-unroll
--hopt-scalrep --hopt-vect``), the C twin built by ``clang-22 -O3 -march=native`` and the one
built with Polly.  The rules of :mod:`polyopt.bench`: every build runs once on PolyBench's
initial values (the warm-up) and its arrays are checked against clang's before anything is
timed (all arguments, not only the printed ones, with a tolerance that allows reassociation,
:data:`~polyopt.polybench.suite.TOLERANCES`);
then the repetitions alternate the builds, each on arrays restored to the initial values
outside the timed region; medians are reported with the spread and the ratios of the same
run.  A call shorter than :data:`~polyopt.bench.MIN_SAMPLE_SECONDS` is repeated, each time on
restored arrays, until the sample lasts that long, and the sample is the median of the calls
after the first: a lone 0.35 ms jacobi-1d call on two threads right after another build read
0.26-0.37 ms (the team waking up, or the other OpenMP runtime's threads still spinning on the
second core).  Every build's arrays start at a page boundary, as PolyBench/C's
``polybench_alloc_data`` allocates them (:data:`ALIGNMENT`).  A build that fails (polyopt
cannot compile the kernel, clang-22 is missing) or computes
something else is a row with the reason, not the end of the run.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from ..bench import Timing, _time_once
from . import ctwin
from .init import init_values
from .suite import Kernel, mlir_source

# the pass flags of the matmul benchmark's main job (README, experiments/)
HOPT_SWITCHES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}
HOPT_FLAGS = "--hopt --hopt-copy --hopt-unroll --hopt-scalrep --hopt-vect"

POLYOPT, HOPT, CLANG, POLLY = "polyopt", "polyopt --hopt", "clang -O3", "Polly"
BUILDS = (POLYOPT, HOPT, CLANG, POLLY)
# with threads > 1: polyopt --hopt --hopt-parallel and Polly -polly-parallel -fopenmp on the team
HOPT_PAR, POLLY_PAR = "polyopt --hopt --hopt-parallel", "Polly parallel"
PARALLEL_BUILDS = (HOPT_PAR, POLLY_PAR)
REFERENCE = CLANG



@dataclass
class BuildResult:
    """One build of one kernel: its time, or why it has none."""

    label: str
    compile_time: Optional[float] = None
    timing: Optional[Timing] = None
    max_rel_error: Optional[float] = None
    error: str = ""
    parallel: Optional[bool] = None     # polyopt's parallel build: has it a parallel loop?

    @property
    def ok(self) -> bool:
        return self.timing is not None and not self.error


@dataclass
class KernelResult:
    kernel: str
    dataset: str
    params: dict
    builds: dict = field(default_factory=dict)   # label -> BuildResult
    checksum: Optional[float] = None
    tolerance: float = 0.0                       # the kernel's (suite.TOLERANCES)

    def ratio(self, label: str, versus: str) -> Optional[float]:
        """``versus``'s time / ``label``'s time: above 1 means ``label`` is faster."""
        a, b = self.builds.get(label), self.builds.get(versus)
        if a is None or b is None or not (a.ok and b.ok):
            return None
        return b.timing.median / a.timing.median

    def ratio_vs_best(self, label: str) -> Optional[float]:
        """``label`` against the faster of clang and Polly."""
        ratios = [r for r in (self.ratio(label, CLANG), self.ratio(label, POLLY))
                  if r is not None]
        return min(ratios) if ratios else None

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "dataset": self.dataset, "params": self.params,
                "tolerance": self.tolerance,
                "checksum": self.checksum,
                "builds": {k: {**asdict(v), "timing": asdict(v.timing) if v.timing else None}
                           for k, v in self.builds.items()},
                "ratios": {label: {"vs_clang": self.ratio(label, CLANG),
                                   "vs_polly": self.ratio(label, POLLY),
                                   "vs_best": self.ratio_vs_best(label)}
                           for label in (POLYOPT, HOPT)},
                "parallel": {"vs_own_one_thread": self.ratio(HOPT_PAR, HOPT),
                             "vs_polly_parallel": self.ratio(HOPT_PAR, POLLY_PAR)}}


def _parallel_lines(result) -> list:
    """The 2-thread table: polyopt --hopt --hopt-parallel and Polly -polly-parallel on the
    team, against polyopt's single thread and Polly's parallel build."""
    def ms(b) -> str:
        return f"{1e3 * b.timing.median:9.4g}" if b is not None and b.ok else f"{'--':>9}"

    def x(r) -> str:
        return f"{r:7.2f}x" if r is not None else f"{'--':>8}"
    n = result.threads
    lines = [f"on {n} threads (OpenMP, libomp): polyopt --hopt --hopt-parallel --threads {n}, "
             f"Polly -polly-parallel -fopenmp with {n} threads",
             f"  {'kernel':<12} {'--hopt':>9} {'par':>9} {'Polly par':>9}   "
             f"{'par/1 thread':>12} {'par/Polly par':>13}  parallel loop"]
    for k in result.kernels:
        b = k.builds
        par = b.get(HOPT_PAR)
        lines.append(f"  {k.kernel:<12} {ms(b.get(HOPT))} {ms(par)} {ms(b.get(POLLY_PAR))}   "
                     f"{x(k.ratio(HOPT_PAR, HOPT)):>12} {x(k.ratio(HOPT_PAR, POLLY_PAR)):>13}  "
                     f"{'yes' if par is not None and par.parallel else 'no'}")
    g = result.geomeans().get(HOPT_PAR, {})
    lines.append(f"  {'geomean':<12} {'':>9} {'':>9} {'':>9}   "
                 f"{x(g.get('vs_own_one_thread')):>12} {x(g.get('vs_polly_parallel')):>13}  "
                 f"over the {len(g.get('kernels', []))} kernels with a parallel loop")
    return lines


def geomean(values: list) -> Optional[float]:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class PolybenchResult:
    dataset: str
    reps: int
    kernels: list
    machine: str = ""
    compilers: dict = field(default_factory=dict)
    threads: int = 1

    def parallelizable(self) -> list:
        """The kernels whose parallel build has a parallel loop."""
        return [k for k in self.kernels
                if k.builds.get(HOPT_PAR) is not None and k.builds[HOPT_PAR].parallel]

    def geomeans(self) -> dict:
        out = {}
        if self.threads > 1:
            par = self.parallelizable()
            out[HOPT_PAR] = {
                "vs_own_one_thread": geomean([k.ratio(HOPT_PAR, HOPT) for k in par]),
                "vs_polly_parallel": geomean([k.ratio(HOPT_PAR, POLLY_PAR) for k in par]),
                "kernels": [k.kernel for k in par]}
        for label in (POLYOPT, HOPT):
            out[label] = {
                "vs_clang": geomean([k.ratio(label, CLANG) for k in self.kernels]),
                "vs_polly": geomean([k.ratio(label, POLLY) for k in self.kernels]),
                "vs_best": geomean([k.ratio_vs_best(label) for k in self.kernels])}
        return out

    def to_json(self) -> dict:
        return {"suite": "PolyBench/C 4.2", "dataset": self.dataset, "reps": self.reps,
                "threads": self.threads,
                "machine": self.machine, "compilers": self.compilers,
                "polyopt_hopt_flags": HOPT_FLAGS,
                "kernels": [k.to_json() for k in self.kernels], "geomean": self.geomeans()}

    def _parallel_report(self) -> list:
        return _parallel_lines(self)

    def report(self) -> str:
        def ms(b: Optional[BuildResult]) -> str:
            if b is None or not b.ok:
                return f"{'--':>9}"
            return f"{1e3 * b.timing.median:9.4g}"

        def x(r: Optional[float]) -> str:
            return f"{r:7.2f}x" if r is not None else f"{'--':>8}"
        lines = [f"PolyBench/C 4.2, {self.dataset} dataset, one thread: median ms of "
                 f"{self.reps} alternating runs; ratios are the other's time / polyopt's "
                 f"(above 1: polyopt faster)",
                 f"  {'kernel':<12} {'polyopt':>9} {'--hopt':>9} {'clang -O3':>9} "
                 f"{'Polly':>9}   {'hopt/clang':>10} {'hopt/Polly':>10} {'hopt/best':>9} "
                 f"{'plain/clang':>11} {'compile':>8}  check"]
        errors = []
        for k in self.kernels:
            b = k.builds
            hopt = b.get(HOPT)
            errs = [e for e in (v.max_rel_error for v in b.values()) if e is not None]
            check = f"max rel err {max(errs):.1e}" if errs else ""
            bad = [v for v in b.values() if v.error]
            if bad:
                check = (check + "; " if check else "") + "failed: " + ", ".join(
                    v.label for v in bad)
                errors += [f"  {k.kernel} [{v.label}]: {v.error}" for v in bad]
            compile_ = (f"{hopt.compile_time:7.2f}s" if hopt and hopt.compile_time is not None
                        else f"{'--':>8}")
            lines.append(f"  {k.kernel:<12} {ms(b.get(POLYOPT))} {ms(hopt)} {ms(b.get(CLANG))} "
                         f"{ms(b.get(POLLY))}   {x(k.ratio(HOPT, CLANG)):>10} "
                         f"{x(k.ratio(HOPT, POLLY)):>10} {x(k.ratio_vs_best(HOPT)):>9} "
                         f"{x(k.ratio(POLYOPT, CLANG)):>11} {compile_}  {check}")
        g = self.geomeans()
        lines.append(f"  {'geomean':<12} {'':>9} {'':>9} {'':>9} {'':>9}   "
                     f"{x(g[HOPT]['vs_clang']):>10} {x(g[HOPT]['vs_polly']):>10} "
                     f"{x(g[HOPT]['vs_best']):>9} {x(g[POLYOPT]['vs_clang']):>11}")
        lines.append(f"  polyopt --hopt is {HOPT_FLAGS}; compile is its compile time")
        if self.threads > 1:
            lines += self._parallel_report()
        for label, flags in self.compilers.items():
            lines.append(f"  {label}: {flags}")
        if self.machine:
            lines.append(f"  machine: {self.machine}")
        if errors:
            lines.append("errors:")
            lines += errors
        return "\n".join(lines)


#: PolyBench/C's ``polybench_alloc_data`` allocates every array with ``posix_memalign`` at a
#: page boundary; numpy only guarantees 16 bytes.  On Zen 4 a vector loop over an array 16
#: bytes past a 32-byte boundary splits half of its 32-byte accesses across cache lines: trmm
#: LARGE runs 53 ms with B 32-byte aligned and 91 ms without, whichever build it is
ALIGNMENT = 4096


def aligned_copy(a):
    """A copy of the numpy array ``a`` whose data starts at an :data:`ALIGNMENT` boundary."""
    import numpy as np
    buf = np.empty(a.nbytes + ALIGNMENT, np.uint8)
    start = -buf.ctypes.data % ALIGNMENT
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _copy(values: dict) -> dict:
    import numpy as np
    return {k: (aligned_copy(v) if isinstance(v, np.ndarray) else v) for k, v in values.items()}


def _restore(work: dict, initial: dict) -> None:
    import numpy as np
    for name, v in initial.items():
        if isinstance(v, np.ndarray):
            np.copyto(work[name], v)


def _gramschmidt_determined(ref: dict) -> dict:
    """The parts of gramschmidt's outputs that its input determines: PolyBench's A has
    numerical rank r below N (about 13 of MINI's 30 columns), so from column r on, R[k][k] is
    rounding residue (or exactly 0) and Q[:, k] = A[:, k] / R[k][k] is residue over residue,
    which any difference in rounding changes completely (clang against clang
    ``-ffp-contract=off``: 1.45 at MINI; NaN at 23x31).  Modified Gram-Schmidt touches only
    R[k, :], Q[:, k] and A[:, k+1:] at step k, so A[:, :r], R[:r, :] and Q[:, :r] are settled
    before the residue appears."""
    import numpy as np
    diag = np.abs(np.diagonal(ref["R"]))
    r = 0
    while r < diag.size and np.isfinite(diag[r]) and diag[r] > 1e-8 * diag[:r + 1].max():
        r += 1
    return {"A": np.s_[:, :r], "R": np.s_[:r, :], "Q": np.s_[:, :r]}


#: kernel -> the parts of its arrays that PolyBench's data determines, from the reference's
#: arrays (the other kernels' arrays are compared whole)
DETERMINED = {"gramschmidt": _gramschmidt_determined}


def max_rel_error(kernel: Kernel, got: dict, ref: dict) -> float:
    """The largest ``|got - ref|`` over the kernel's arrays, each relative to the array's
    largest magnitude (``inf`` for NaNs or infinities where ``ref`` has none); for a kernel
    in :data:`DETERMINED`, over the parts its data determines."""
    import numpy as np
    worst = 0.0
    parts = DETERMINED[kernel.name](ref) if kernel.name in DETERMINED else {}
    for a in kernel.arrays:
        part = parts.get(a.name, np.s_[...])
        g, r = got[a.name][part], ref[a.name][part]
        if not np.array_equal(np.isfinite(g), np.isfinite(r)):
            return math.inf
        scale = float(np.max(np.abs(r[np.isfinite(r)]), initial=0.0)) or 1.0
        diff = np.abs(np.where(np.isfinite(r), g - r, 0.0))
        worst = max(worst, float(np.max(diff, initial=0.0)) / scale)
    return worst


def _describe(e: BaseException) -> str:
    from ..affine.diagnostics import PolyoptError
    if isinstance(e, PolyoptError):
        return e.render("<polybench>").splitlines()[0]
    if isinstance(e, ctwin.ToolchainError):
        return str(e)
    return f"internal error: {type(e).__name__}: {e}"


def _polyopt_build(kernel: Kernel, params: dict, switches: dict, row=None):
    from ..pipeline import compile as compile_module
    compiled = compile_module(mlir_source(kernel, params), filename=f"{kernel.name}.mlir",
                              **{"threads": 1, **switches})
    if row is not None:
        row.parallel = "affine.parallel" in str(compiled.module)
    fn = compiled[kernel.symbol]
    names = [a.name for a in kernel.args]
    return lambda values: (lambda: fn(*[values[n] for n in names]))


def _twin_build(kernel: Kernel, params: dict, compiler: str, threads: int = 1):
    twin = ctwin.load(kernel, params, compiler, threads)
    return twin.bind


def _timed_sample(run, work: dict, initial: dict) -> float:
    """Seconds of one call of ``run`` on arrays restored to ``initial``: the median of the
    calls after the first when one call is shorter than ``MIN_SAMPLE_SECONDS`` (see the
    module's docstring), each on restored arrays, the restoring not timed."""
    from ..bench import MIN_SAMPLE_SECONDS
    times: list[float] = []
    while sum(times) < MIN_SAMPLE_SECONDS:
        _restore(work, initial)
        times.append(_time_once(run))
    return times[0] if len(times) == 1 else statistics.median(times[1:])


def bench_kernel(kernel: Kernel, dataset: str = "LARGE", *, reps: int = 3,
                 params: Optional[dict] = None, builds=BUILDS,
                 progress: Optional[Callable[[str], None]] = None,
                 threads: int = 1) -> KernelResult:
    """Build, check and time ``kernel`` at ``dataset`` (or at explicit ``params``) as
    :data:`BUILDS` says (with ``threads > 1``, also :data:`PARALLEL_BUILDS` on that many
    threads; the other builds run on one); see the module's docstring for the method."""
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    params = dict(params) if params is not None else kernel.params_of(dataset)
    say = progress or (lambda _: None)
    result = KernelResult(kernel.name, dataset, params, tolerance=kernel.tolerance)
    if threads > 1 and builds == BUILDS:
        builds = BUILDS + PARALLEL_BUILDS
    makers = {POLYOPT: lambda: _polyopt_build(kernel, params, {}),
              HOPT: lambda: _polyopt_build(kernel, params, HOPT_SWITCHES),
              CLANG: lambda: _twin_build(kernel, params, "clang"),
              POLLY: lambda: _twin_build(kernel, params, "polly"),
              HOPT_PAR: lambda: _polyopt_build(kernel, params, dict(HOPT_SWITCHES, parallel=True,
                                                                    threads=threads),
                                               result.builds[HOPT_PAR]),
              POLLY_PAR: lambda: _twin_build(kernel, params, "polly-parallel", threads)}
    initial = init_values(kernel, params)
    runners, outputs = {}, {}
    for label in builds:
        row = result.builds[label] = BuildResult(label)
        say(f"{kernel.name}: building {label}")
        try:
            start = time.perf_counter()
            bind = makers[label]()
            row.compile_time = time.perf_counter() - start
            work = _copy(initial)
            run = bind(work)
            run()                                       # the warm-up, whose output is checked
            outputs[label] = _copy(work)
            runners[label] = (work, run)
        except Exception as e:    # a row with the reason, not the end of the run
            row.error = _describe(e)
    ref_label = REFERENCE if REFERENCE in outputs else next(iter(outputs), None)
    if ref_label is not None:
        ref = outputs[ref_label]
        result.checksum = float(sum(ref[name].sum() for name in kernel.outputs))
        for label in list(runners):
            err = max_rel_error(kernel, outputs[label], ref)
            result.builds[label].max_rel_error = err
            if not err <= kernel.tolerance:
                result.builds[label].error = (
                    f"arrays differ from {ref_label}'s by {err:.3g} (relative; tolerance "
                    f"{kernel.tolerance:g}): not timed")
                del runners[label]
    samples = {label: [] for label in runners}
    say(f"{kernel.name}: timing {', '.join(runners)} x {reps}")
    for _ in range(reps):
        for label, (work, run) in runners.items():
            samples[label].append(_timed_sample(run, work, initial))
    for label, s in samples.items():
        result.builds[label].timing = Timing.of(s)
    return result


def machine_description() -> str:
    try:
        from ..codegen.target import host_target
        t = host_target()
        return f"{t.cpu}, {t.vector_bits}-bit vectors"
    except Exception as e:    # the facts are decoration; the run goes on
        return f"unknown ({type(e).__name__})"


def bench_polybench(kernels: list, dataset: str = "LARGE", *, reps: int = 3,
                    progress: Optional[Callable[[str], None]] = None,
                    on_kernel: Optional[Callable[[KernelResult], None]] = None,
                    threads: int = 1) -> PolybenchResult:
    """:func:`bench_kernel` for each of ``kernels``; ``on_kernel`` sees each result as it
    comes (the CLI prints rows as they are measured)."""
    results = []
    for k in kernels:
        r = bench_kernel(k, dataset, reps=reps, progress=progress, threads=threads)
        results.append(r)
        if on_kernel is not None:
            on_kernel(r)
    compilers = {CLANG: ctwin.command_line("clang"), POLLY: ctwin.command_line("polly")}
    if threads > 1:
        compilers[POLLY_PAR] = ctwin.command_line("polly-parallel")
    return PolybenchResult(dataset, reps, results, machine_description(), compilers, threads)
