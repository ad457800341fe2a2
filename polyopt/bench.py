"""The measurement harness shared by ``polyopt bench`` and ``experiments/``.

Rules (DESIGN.md, "How fast, and how we know"): the result is checked against numpy before it
is timed; one warm-up run each; repetitions alternate polyopt and numpy so that both see the
same machine state (with several threads, after a pause that lets the other side's idle
threads stop spinning and an untimed call that wakes the contender's own); a sample lasts at
least :data:`MIN_SAMPLE_SECONDS` (short calls are repeated back to back); medians are reported
with the spread; the ratio to numpy (OpenBLAS, on as many threads as polyopt's parallel code)
comes from the same run.  ``OPENBLAS_NUM_THREADS``
must be set before numpy loads: the CLI does it (``--threads``), scripts call
:func:`single_threaded_numpy` or :func:`pin_numpy_threads` first.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Optional

TILE_NAMES = ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U")


# Some machines of this workplace pin OpenBLAS to an older kernel (OPENBLAS_CORETYPE, with
# OPENBLAS_L2_SIZE) because old OpenBLAS builds misbehave on new CPUs; a current numpy runs its
# native kernel correctly and much faster (on an AVX-512 Zen 5: SkylakeX ~90 GFLOPS f64 vs
# Haswell ~52), so the peer we measure against is the native one.
_PINNING_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _numpy_dtype(dtype: str, reps: int):
    """numpy's type for ``dtype`` ("f64" or "f32"), after checking ``reps`` too."""
    import numpy as np
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    np_dtype = {"f64": np.float64, "f32": np.float32}.get(dtype)
    if np_dtype is None:
        raise ValueError(f"dtype must be f64 or f32, got {dtype!r}")
    return np_dtype


def single_threaded_numpy(native_openblas_kernel: bool = True) -> None:
    """Pin OpenBLAS (and friends) to one thread and, by default, let OpenBLAS pick its native
    kernel; must run before numpy is imported."""
    pin_numpy_threads(1, native_openblas_kernel)


def pin_numpy_threads(threads: int, native_openblas_kernel: bool = True) -> None:
    """Run OpenBLAS (and friends) on ``threads`` threads, the number polyopt's parallel code
    uses (``OMP_NUM_THREADS`` too, so that polyopt's default agrees) and, by default, let
    OpenBLAS pick its native kernel; must run before numpy is imported."""
    if "numpy" in sys.modules:
        if os.environ.get("OPENBLAS_NUM_THREADS") != str(threads):
            raise RuntimeError(f"numpy was imported before pin_numpy_threads({threads}): set "
                               f"OPENBLAS_NUM_THREADS={threads} in the environment instead")
        return
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if native_openblas_kernel:
        for var in _PINNING_VARS:
            os.environ.pop(var, None)


def machine_summary() -> str:
    """One line on the machine a benchmark ran on: CPU, vector ISA, caches, measured peak
    (:meth:`polyopt.codegen.description.TargetDescription.summary_line`)."""
    from .codegen.description import host_description
    return host_description().summary_line()


def numpy_blas_threads() -> Optional[int]:
    """The threads numpy's BLAS runs on (threadpoolctl's view), or None when unknown."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            return info.get("num_threads")
    return None


def blas_description() -> str:
    """Which BLAS numpy runs and how (library, version, kernel, threads)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "numpy BLAS (install threadpoolctl to see which kernel)"
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            pinned = [v for v in _PINNING_VARS if os.environ.get(v)]
            note = f", pinned by {'/'.join(pinned)}" if pinned else ""
            return (f"{info.get('internal_api')} {info.get('version')}, kernel "
                    f"{info.get('architecture', '?')}{note}, {info.get('num_threads')} thread(s)")
    return "numpy BLAS (unknown)"


@dataclass
class Timing:
    """Seconds per run: median, min, max over the repetitions."""

    median: float
    minimum: float
    maximum: float
    reps: int

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


@dataclass(frozen=True)
class Variant:
    """One configuration of ``hop.matmul`` to time: pass switches, tile attributes, or a
    ``schedule`` attribute (map text over (d0, d1, d2) = (i, j, k))."""

    label: str
    switches: dict = field(default_factory=dict)
    tiles: dict = field(default_factory=dict)
    schedule: Optional[str] = None

    def attributes(self) -> dict:
        attrs = {name: f'"{v}"' if isinstance(v, str) else f"{v} : i32"
                 for name, v in self.tiles.items() if v is not None}
        if self.schedule is not None:
            attrs["schedule"] = self.schedule
        return attrs


@dataclass
class VariantResult:
    variant: Variant
    compile_time: float
    timing: Timing
    max_abs_error: float


@dataclass
class MatmulBenchResult:
    """Every variant and numpy, timed in the same run on the same arrays."""

    m: int
    n: int
    k: int
    dtype: str
    variants: list[VariantResult]
    numpy: Timing
    blas: str = ""
    peak_gflops: Optional[float] = None
    machine: str = ""
    torch: Optional[Timing] = None
    torch_note: str = ""
    threads: int = 1

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def gflops(self, t: Timing) -> float:
        return self.flops / t.median / 1e9

    def ratio(self, r: VariantResult) -> float:
        """numpy time / polyopt time: above 1 means polyopt is faster."""
        return self.numpy.median / r.timing.median

    def ratio_vs_torch(self, r: VariantResult) -> Optional[float]:
        """torch.mm time / polyopt time, or None when torch was not timed."""
        return self.torch.median / r.timing.median if self.torch is not None else None

    def to_json(self) -> dict:
        out = {
            "m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype, "blas": self.blas,
            "threads": self.threads,
            "peak_gflops": self.peak_gflops, "machine": self.machine,
            "numpy": asdict(self.numpy), "numpy_gflops": self.gflops(self.numpy),
            "torch_note": self.torch_note,
            "variants": [{
                "label": r.variant.label, "switches": r.variant.switches,
                "tiles": r.variant.tiles, "schedule": r.variant.schedule,
                "compile_time": r.compile_time, "timing": asdict(r.timing),
                "gflops": self.gflops(r.timing), "ratio_vs_numpy": self.ratio(r),
                "ratio_vs_torch": self.ratio_vs_torch(r),
                "max_abs_error": r.max_abs_error} for r in self.variants],
        }
        if self.torch is not None:
            out["torch"] = asdict(self.torch)
            out["torch_gflops"] = self.gflops(self.torch)
        return out

    def report(self) -> str:
        def spread(t: Timing) -> str:
            return f"{self.flops / t.maximum / 1e9:7.2f} .. {self.flops / t.minimum / 1e9:7.2f}"
        width = max([len(r.variant.label) for r in self.variants] + [16])
        def of_peak(t: Timing) -> str:
            return f"{100 * self.gflops(t) / self.peak_gflops:6.1f}%" if self.peak_gflops else ""
        lines = [f"matmul {self.m}x{self.n}x{self.k} {self.dtype}: C += A*B, medians of "
                 f"{self.numpy.reps} alternating runs, {_threads_note(self.threads)}"
                 + (f"; FMA peak {self.peak_gflops:.1f} GFLOPS"
                    + (f" on {min(self.threads, os.cpu_count() or 1)} cores"
                       if self.threads > 1 else "") + " (its loop timed among them)"
                    if self.peak_gflops else ""),
                 f"  {'variant':<{width}}  {'GFLOPS':>8}  {'range':>18}  {'vs numpy':>8}  "
                 + (f"{'vs torch':>8}  " if self.torch is not None else "")
                 + f"{'compile':>8}  {'max|err|':>8}  {'of peak':>7}"]
        def vs_torch(t: Timing) -> str:
            return f"{self.torch.median / t.median:7.3f}x  " if self.torch is not None else ""
        for r in self.variants:
            lines.append(f"  {r.variant.label:<{width}}  {self.gflops(r.timing):8.2f}  "
                         f"{spread(r.timing):>18}  {self.ratio(r):7.3f}x  "
                         f"{vs_torch(r.timing)}"
                         f"{r.compile_time:7.3f}s  {r.max_abs_error:8.1e}  {of_peak(r.timing)}")
        peers = [("numpy (OpenBLAS)", self.numpy)]
        if self.torch is not None:
            peers.append(("torch.mm", self.torch))
        for label, t in peers:
            lines.append(f"  {label:<{width}}  {self.gflops(t):8.2f}  {spread(t):>18}  "
                         f"{self.numpy.median / t.median:7.3f}x  {vs_torch(t)}{'':>8}  "
                         f"{'':>8}  {of_peak(t)}")
        if self.blas:
            lines.append(f"  numpy's BLAS: {self.blas}")
        if self.torch_note:
            lines.append(f"  torch: {self.torch_note}")
        off = [r.variant.label for r in self.variants
               if r.variant.switches.get("llvm_vectorize") is False]
        if off:
            lines.append("  LLVM's loop/SLP vectorizers off for: " + ", ".join(off))
        return "\n".join(lines)


def _threads_note(threads: int) -> str:
    """What the header of a report says of the threads of both sides."""
    def n(k):
        return f"{k} thread{'s' if k != 1 else ''}"
    theirs = numpy_blas_threads()
    if theirs is None or theirs == threads:
        return f"polyopt and numpy on {n(threads)}"
    return f"polyopt on {n(threads)}, numpy's BLAS on {n(theirs)} (it uses at most the cores)"


def matmul_source(m: int, n: int, k: int, dtype: str = "f64",
                  attributes: Optional[dict] = None) -> str:
    """A module with ``@matmul`` holding one ``hop.matmul`` with the given attributes
    (name -> attribute text, e.g. ``{"M_C": "64 : i32"}``)."""
    attrs = ""
    if attributes:
        attrs = " {" + ", ".join(f"{name} = {v}" for name, v in attributes.items()) + "}"
    ta, tb, tc = (f"memref<{m}x{k}x{dtype}>", f"memref<{k}x{n}x{dtype}>",
                  f"memref<{m}x{n}x{dtype}>")
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n"
            f"  return\n}}\n")


#: With several threads, the seconds to wait before each timed run: OpenBLAS's idle threads
#: spin for about 0.1 s after a call (libomp's for KMP_BLOCKTIME, 1 ms as polyopt sets it),
#: and would take the other core from the next contender in an alternating run.
SETTLE_SECONDS = 0.25


def _settle(threads: int, fn: Callable[[], object]) -> None:
    """With several threads: let the previous contender's idle threads stop spinning, then
    run ``fn`` once untimed, so that its own threads are awake and its data in cache as in a
    run of back-to-back calls."""
    if threads > 1:
        time.sleep(SETTLE_SECONDS)
        fn()


def _time_once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


#: A timed sample lasts at least this long: calls shorter than that are repeated back to back
#: and the sample is their mean.  A 2 ms convolution on two threads timed alone right after a
#: pause read 100 or 200 GFLOPS from one sample to the next (the second core waking up, or
#: another runtime's threads still spinning on it); samples of 20 ms read 195-210.
MIN_SAMPLE_SECONDS = 0.02


def time_sample(fn: Callable[[], object], seconds: float) -> float:
    """Seconds per call of ``fn``: one call, or as many back-to-back calls as make
    ``seconds``, averaged."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls


def _time_sample(fn: Callable[[], object]) -> float:
    """:func:`time_sample` over :data:`MIN_SAMPLE_SECONDS`."""
    return time_sample(fn, MIN_SAMPLE_SECONDS)


def each_after_each(n: int) -> list[int]:
    """A cyclic order of ``n`` contenders in which each runs right after every other one
    exactly once: an Eulerian circuit of the complete directed graph on ``n`` vertices
    (Hierholzer's algorithm), n(n-1) turns, each contender n-1 of them; repeated, it stays
    balanced across its seams (its last turn precedes its first).  The walk goes on to the
    contender that ran longest ago, so that each one's samples spread over the circuit
    (the machine's speed drifts)."""
    if n < 2:
        return list(range(n))
    unused = {v: [w for w in range(n) if w != v] for v in range(n)}
    ran = {v: -1 for v in range(n)}
    stack, circuit = [0], []
    while stack:
        v = stack[-1]
        if unused[v]:
            w = min(unused[v], key=lambda w: (ran[w], w))
            unused[v].remove(w)
            ran[w] = len(circuit) + len(stack)
            stack.append(w)
        else:
            circuit.append(stack.pop())
    circuit.reverse()
    return circuit[:-1]          # the circuit ends where it began


def time_alternating(contenders: list, reps: int, threads: int = 1) -> list[Timing]:
    """Each of ``contenders`` run once (the warm-up), then timed ``reps`` times in the turns
    of :func:`each_after_each`, repeated (in the last round, a contender that has its
    ``reps`` samples gives its turn up), the others' threads settled before each sample;
    their :class:`Timing` in order.  Each contender runs right after each other one equally
    often: the one after torch's conv5_x (its own 9 MiB of weights and workspace) found its
    filter evicted and read 0.95x-0.97x an identical one when it always ran there, and
    0.99x when it did in two of three rounds (rotating the first turn of each round left
    that imbalance)."""
    for f in contenders:
        f()
    samples: list[list[float]] = [[] for _ in contenders]
    order = each_after_each(len(contenders))
    while any(len(x) < reps for x in samples):
        for q in order:
            if len(samples[q]) < reps:
                _settle(threads, contenders[q])
                samples[q].append(_time_sample(contenders[q]))
    return [Timing.of(x) for x in samples]


def peak_contender(dtype: str, threads: int = 1) -> tuple:
    """:func:`~polyopt.codegen.peak.peak_contender` for ``threads``: the loop runs on one core
    and its flops count for as many cores as the team has (on 2 Zen 5 cores busy at once the
    loop ran at 265-268 GFLOPS f32 on each, 266-269 alone)."""
    from .codegen.peak import peak_contender as loop
    run, flops = loop(dtype)
    return run, flops * max(1, min(threads, os.cpu_count() or 1))


def blis_mode_variant(dtype: str) -> tuple[Optional[Variant], str]:
    """The ``--hopt-blis`` variant with the best micro-kernel this host runs for ``dtype``,
    or ``(None, why not)`` when the blis package or a suitable CPU is missing."""
    from .codegen import microkernels
    kernel = microkernels.default_kernel(dtype)
    if kernel is None:
        return None, microkernels.why_no_kernel(dtype)
    try:
        microkernels.load_microkernel(kernel)
    except microkernels.MicroKernelError as e:
        return None, str(e)
    return Variant(f"BLIS micro-kernel (2.12) {kernel.symbol}",
                   {"hopt": True, "blis": True}), ""


def torch_description() -> str:
    """torch's version and the BLAS it was built with (MKL's version when it names one)."""
    import re

    import torch
    found = re.search(r"Math Kernel Library Version (\d[\d.]*)", torch.__config__.show())
    blas = f"MKL {found.group(1)}" if found else "its built-in BLAS"
    return f"torch {torch.__version__} ({blas}), {torch.get_num_threads()} thread(s)"


def _torch_matmul(a, b, threads: int = 1):
    """``(run, note)``: ``torch.mm`` of ``a`` and ``b`` (sharing their memory) into a
    preallocated result on ``threads`` threads, or ``(None, why not)`` when torch is not
    installed."""
    try:
        import torch
    except ImportError:
        return None, "not installed (optional)"
    torch.set_num_threads(threads)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = torch.empty((a.shape[0], b.shape[1]), dtype=ta.dtype)

    def run():
        torch.mm(ta, tb, out=out)
        return out.numpy()
    return run, torch_description()


def paper_ladder(m: int, n: int, k: int, threads: int = 1) -> list[Variant]:
    """The steps of the paper's Figure 5, one knob at a time: the naive nest, cache tiling
    (section 2.5's schedule), BLIS tiling, + packing (2.6), + unroll-and-jam and scalar
    replacement (2.7), + vectorization (2.8).  From BLIS tiling on, the tile sizes and register
    order are the machine model's (the paper's "tuned" sizes were found by hand for its
    Skylake: its 4x8 tile is 4 accumulators on AVX-512, latency-bound whatever the passes do).
    The steps run on one thread; with ``threads > 1`` a last row runs all of them on the
    team (the BLIS nest's loop over M_C blocks in parallel)."""
    ladder = [
        Variant("naive", {"hopt": False}),
        Variant("tiling (2.5)", {"hopt": True},
                schedule="affine_map<(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, "
                         "d2)>"),
        Variant("BLIS tiling", {"hopt": True}),
        Variant("+packing", {"hopt": True, "copy": True}),
        Variant("+unroll-jam+scalrep", {"hopt": True, "copy": True, "unroll": True,
                                        "scalrep": True}),
        Variant("+vectorization", {"hopt": True, "copy": True, "unroll": True, "scalrep": True,
                                   "vect": True}),
    ]
    ladder = [replace(v, switches=dict(v.switches, threads=1)) for v in ladder]
    if threads > 1:
        ladder.append(Variant(f"+{threads} threads", {"hopt": True, "copy": True, "unroll": True,
                                                      "scalrep": True, "vect": True,
                                                      "threads": threads}))
    return ladder


def bench_matmul(m: int, n: int, k: int, dtype: str = "f64", *, reps: int = 5,
                 variants: Optional[list[Variant]] = None, seed: int = 0,
                 measure_peak: bool = True, torch_peer: bool = True,
                 threads: Optional[int] = None) -> MatmulBenchResult:
    """Compile each variant of ``hop.matmul`` (C += A*B), check it against numpy, then time all
    of them, numpy's matmul and (``torch_peer``, when torch is installed) ``torch.mm`` on the
    same arrays, round-robin, ``reps`` times each.

    ``threads``: polyopt's parallel loops (the variants' ``threads`` switch when they set
    one) and torch's thread count; default ``OMP_NUM_THREADS`` else the cores.  numpy runs on
    what ``OPENBLAS_NUM_THREADS`` said when it loaded (:func:`pin_numpy_threads`; the report's
    BLAS line shows its thread count)."""
    import numpy as np

    from .pipeline import compile as compile_module
    if min(m, n, k) < 1:
        raise ValueError(f"matrix sizes must be positive, got {m}x{n}x{k}")
    np_dtype = _numpy_dtype(dtype, reps)
    variants = variants or [Variant("polyopt --hopt", {"hopt": True})]
    from .codegen.openmp import resolve_threads
    threads = resolve_threads(threads)

    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np_dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(np_dtype)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np_dtype)
    expected = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    tol = (1e-9 if dtype == "f64" else 2e-4) * k

    fns, compile_times, errors = [], [], []
    for v in variants:
        start = time.perf_counter()
        compiled = compile_module(matmul_source(m, n, k, dtype, v.attributes()),
                                  filename=f"<bench {v.label}>",
                                  **{"threads": threads, **v.switches})
        compile_times.append(time.perf_counter() - start)
        fn = compiled["matmul"]
        c = c0.copy()
        fn(a, b, c)  # also the warm-up
        err = float(np.max(np.abs(c - expected)))
        if not err <= tol:
            raise AssertionError(f"{v.label}: result differs from numpy's by {err:.3g} "
                                 f"(tolerance {tol:.3g}); refusing to time wrong code")
        fns.append(fn)
        errors.append(err)
    c = c0.copy()
    out = np.empty((m, n), np_dtype)
    np.matmul(a, b, out=out)  # warm-up
    torch_run, torch_note = _torch_matmul(a, b, threads) if torch_peer else (None, "")
    if torch_run is not None:
        err = float(np.max(np.abs(c0 + torch_run() - expected)))  # also the warm-up
        if not err <= tol:
            raise AssertionError(f"torch.mm differs from numpy by {err:.3g}; not timing it")
    contenders = [lambda fn=fn: fn(a, b, c) for fn in fns]
    contenders.append(lambda: np.matmul(a, b, out=out))
    if torch_run is not None:
        contenders.append(torch_run)
    peak_run = peak_contender(dtype, threads) if measure_peak else None
    timings = time_alternating(contenders + ([peak_run[0]] if peak_run else []), reps, threads)
    results = [VariantResult(v, ct, t, e)
               for v, ct, t, e in zip(variants, compile_times, timings, errors)]
    peak = peak_run[1] / timings[-1].median / 1e9 if peak_run else None
    return MatmulBenchResult(m, n, k, dtype, results, timings[len(fns)], blas_description(),
                             peak, machine_summary(), threads=threads,
                             torch=timings[len(fns) + 1] if torch_run is not None else None,
                             torch_note=torch_note)


def dump_json(results: list, stream=None) -> None:
    json.dump([r.to_json() for r in results], stream or sys.stdout, indent=2)
    (stream or sys.stdout).write("\n")


# -- convolutions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvShape:
    """A 2-D convolution layer: batch, input height/width/channels, filters, window, stride,
    dilation (no padding: the output is (H - d*(KH-1) - 1) // s + 1 high)."""

    n: int
    h: int
    w: int
    c: int
    f: int
    kh: int
    kw: int
    stride: int = 1
    dilation: int = 1

    @property
    def out_hw(self) -> tuple[int, int]:
        return tuple((size - self.dilation * (k - 1) - 1) // self.stride + 1
                     for size, k in ((self.h, self.kh), (self.w, self.kw)))

    @property
    def flops(self) -> float:
        oh, ow = self.out_hw
        return 2.0 * self.n * oh * ow * self.f * self.kh * self.kw * self.c

    def describe(self) -> str:
        oh, ow = self.out_hw
        return (f"{self.n}x{self.h}x{self.w}x{self.c} * {self.kh}x{self.kw}x{self.c}x{self.f} "
                f"-> {self.n}x{oh}x{ow}x{self.f} (stride {self.stride}, dilation "
                f"{self.dilation})")


def conv2d_source(s: ConvShape, dtype: str = "f32", attributes: Optional[dict] = None,
                  layout: str = "nhwc") -> str:
    """A module with ``@conv`` holding one ``hop.conv2d`` (O += conv(I, K), NHWC/HWCF/NHWF),
    or with ``layout="nchw"`` one ``linalg.conv_2d_nchw_fchw`` (NCHW/FCHW/NFHW, PyTorch's)."""
    oh, ow = s.out_hw
    if layout == "nchw":
        if attributes:
            raise ValueError("the NCHW convolution (linalg.conv_2d_nchw_fchw) takes no tile "
                             "attributes")
        ti = f"memref<{s.n}x{s.c}x{s.h}x{s.w}x{dtype}>"
        tk = f"memref<{s.f}x{s.c}x{s.kh}x{s.kw}x{dtype}>"
        to = f"memref<{s.n}x{s.f}x{oh}x{ow}x{dtype}>"
        return (f"func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{\n"
                f"  linalg.conv_2d_nchw_fchw {{dilations = dense<{s.dilation}> : tensor<2xi64>, "
                f"strides = dense<{s.stride}> : tensor<2xi64>}}\n"
                f"    ins(%I, %K : {ti}, {tk}) outs(%O : {to})\n"
                f"  return\n}}\n")
    ti = f"memref<{s.n}x{s.h}x{s.w}x{s.c}x{dtype}>"
    tk = f"memref<{s.kh}x{s.kw}x{s.c}x{s.f}x{dtype}>"
    to = f"memref<{s.n}x{oh}x{ow}x{s.f}x{dtype}>"
    attrs = {"strides": f"[{s.stride}, {s.stride}]",
             "dilations": f"[{s.dilation}, {s.dilation}]", **(attributes or {})}
    body = ", ".join(f"{k} = {v}" for k, v in attrs.items())
    return (f"func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{\n"
            f"  hop.conv2d %I, %K, %O {{{body}}} : ({ti}, {tk}, {to})\n"
            f"  return\n}}\n")


def numpy_im2col_conv(s: ConvShape):
    """``(prepare, run)``: numpy's im2col (a copy of the sliding windows) + OpenBLAS matmul,
    adding into O -- the baseline a Python user writes."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view
    oh, ow = s.out_hw
    ext_h, ext_w = s.dilation * (s.kh - 1) + 1, s.dilation * (s.kw - 1) + 1

    def run(i, k, o, cols, tmp):
        win = sliding_window_view(i, (ext_h, ext_w), axis=(1, 2))
        win = win[:, ::s.stride, ::s.stride, :, ::s.dilation, ::s.dilation][:, :oh, :ow]
        cols[...] = win.transpose(0, 1, 2, 4, 5, 3).reshape(cols.shape)   # im2col
        np.matmul(cols, k.reshape(-1, s.f), out=tmp)
        o += tmp.reshape(o.shape)
    return run


@dataclass
class ConvBenchResult:
    shape: ConvShape
    dtype: str
    polyopt: Timing
    compile_time: float
    max_abs_error: float
    numpy: Timing
    torch: Optional[Timing] = None
    torch_note: str = ""
    blas: str = ""
    threads: int = 1
    layout: str = "nhwc"

    def gflops(self, t: Timing) -> float:
        return self.shape.flops / t.median / 1e9

    def to_json(self) -> dict:
        out = {"shape": asdict(self.shape), "dtype": self.dtype,
               "polyopt_gflops": self.gflops(self.polyopt),
               "numpy_gflops": self.gflops(self.numpy),
               "ratio_vs_numpy": self.numpy.median / self.polyopt.median,
               "polyopt": asdict(self.polyopt), "numpy": asdict(self.numpy),
               "compile_time": self.compile_time, "max_abs_error": self.max_abs_error,
               "blas": self.blas, "torch_note": self.torch_note, "threads": self.threads,
               "layout": self.layout}
        if self.torch is not None:
            out["torch"] = asdict(self.torch)
            out["torch_gflops"] = self.gflops(self.torch)
            out["ratio_vs_torch"] = self.torch.median / self.polyopt.median
        return out

    def report(self) -> str:
        rows = [("polyopt", self.polyopt), ("numpy im2col + matmul", self.numpy)]
        if self.torch is not None:
            rows.append(("torch conv2d", self.torch))
        how = "" if self.layout == "nhwc" else \
            " as linalg.conv_2d_nchw_fchw on NCHW arrays (numpy's im2col in NHWC)"
        lines = [f"conv2d {self.shape.describe()} {self.dtype}{how}: O += conv(I, K), medians "
                 f"of {self.polyopt.reps} alternating runs, {_threads_note(self.threads)}",
                 f"  {'variant':<24} {'GFLOPS':>8}  {'polyopt vs it':>13}"]
        for label, t in rows:
            lines.append(f"  {label:<24} {self.gflops(t):8.2f}  "
                         f"{t.median / self.polyopt.median:12.3f}x")
        lines.append(f"  polyopt compile {self.compile_time:.3f}s, max|err| "
                     f"{self.max_abs_error:.1e}")
        if self.blas:
            lines.append(f"  numpy's BLAS: {self.blas}")
        if self.torch_note:
            lines.append(f"  torch: {self.torch_note}")
        return "\n".join(lines)


def _torch_conv(s: ConvShape, dtype: str, i, k, threads: int = 1, layout: str = "nhwc"):
    """(run, note) for torch.nn.functional.conv2d on ``threads`` threads, or (None, why
    not); ``layout="nchw"``: torch's default contiguous NCHW/FCHW tensors."""
    try:
        import torch
    except ImportError:
        return None, "not installed (optional)"
    import numpy as np
    torch.set_num_threads(threads)
    if layout == "nchw":
        ti = torch.from_numpy(np.ascontiguousarray(i.transpose(0, 3, 1, 2)))
        tk = torch.from_numpy(np.ascontiguousarray(k.transpose(3, 2, 0, 1)))

        def run_nchw():
            with torch.no_grad():
                torch.nn.functional.conv2d(ti, tk, stride=s.stride, dilation=s.dilation)
        return run_nchw, (f"torch {torch.__version__}, {threads} thread(s), contiguous NCHW "
                          f"input and FCHW weights (its default)")
    # torch's conv2d takes NCHW input and FCHW weights; in channels_last memory format both
    # (data NHWC, weights FHWC) it runs its fastest kernels here (measured: FCHW weights with
    # an NHWC input can be 4x slower)
    ti = torch.from_numpy(np.ascontiguousarray(i.transpose(0, 3, 1, 2))).contiguous(
        memory_format=torch.channels_last)
    tk = torch.from_numpy(np.ascontiguousarray(k.transpose(3, 2, 0, 1))).contiguous(
        memory_format=torch.channels_last)

    def run():
        with torch.no_grad():
            torch.nn.functional.conv2d(ti, tk, stride=s.stride, dilation=s.dilation)
    return run, (f"torch {torch.__version__}, {threads} thread(s), input and weights in channels_last "
                 f"memory format (NHWC, FHWC)")


def bench_conv2d(s: ConvShape, dtype: str = "f32", *, reps: int = 5, seed: int = 0,
                 switches: Optional[dict] = None,
                 threads: Optional[int] = None, layout: str = "nhwc") -> ConvBenchResult:
    """polyopt's ``hop.conv2d`` (all passes by default) against numpy im2col + matmul and,
    when installed, torch, on the same arrays, alternating, after a checked warm-up;
    ``threads`` as in :func:`bench_matmul` (torch gets the same number).  ``layout="nchw"``
    times ``linalg.conv_2d_nchw_fchw`` on NCHW arrays and torch on its default NCHW tensors
    (numpy's im2col stays NHWC: the baseline a Python user writes)."""
    if layout not in ("nhwc", "nchw"):
        raise ValueError(f"layout must be nhwc or nchw, got {layout!r}")
    import numpy as np

    from .pipeline import compile as compile_module
    if min(s.n, s.h, s.w, s.c, s.f, s.kh, s.kw, s.stride, s.dilation) < 1:
        raise ValueError(f"conv2d sizes, stride and dilation must be positive: {s}")
    oh, ow = s.out_hw
    if oh < 1 or ow < 1:
        raise ValueError(f"the (dilated) window is larger than the input: {s.describe()}")
    np_dtype = _numpy_dtype(dtype, reps)
    switches = switches or {"hopt": True, "copy": True, "unroll": True, "scalrep": True,
                            "vect": True}
    from .codegen.openmp import resolve_threads
    threads = resolve_threads(threads)
    switches = {"threads": threads, **switches}
    rng = np.random.default_rng(seed)
    i = rng.uniform(-1, 1, (s.n, s.h, s.w, s.c)).astype(np_dtype)
    k = rng.uniform(-1, 1, (s.kh, s.kw, s.c, s.f)).astype(np_dtype)
    o0 = rng.uniform(-1, 1, (s.n, oh, ow, s.f)).astype(np_dtype)

    start = time.perf_counter()
    fn = compile_module(conv2d_source(s, dtype, layout=layout), filename="<bench conv2d>",
                        **switches)["conv"]
    compile_time = time.perf_counter() - start
    if layout == "nchw":    # polyopt runs on NCHW/FCHW/NFHW copies of the same arrays
        i_run = np.ascontiguousarray(i.transpose(0, 3, 1, 2))
        k_run = np.ascontiguousarray(k.transpose(3, 2, 0, 1))

        def to_run(o_nhwc):
            return np.ascontiguousarray(o_nhwc.transpose(0, 3, 1, 2))

        def from_run(o_run):
            return o_run.transpose(0, 2, 3, 1)
    else:
        i_run, k_run = i, k

        def to_run(o_nhwc):
            return o_nhwc.copy()

        def from_run(o_run):
            return o_run
    ref = numpy_im2col_conv(s)
    cols = np.empty((s.n * oh * ow, s.kh * s.kw * s.c), np_dtype)
    tmp = np.empty((s.n * oh * ow, s.f), np_dtype)
    expected = o0.astype(np.float64)
    ref(i.astype(np.float64), k.astype(np.float64), expected, np.empty(cols.shape),
        np.empty(tmp.shape))
    o = to_run(o0)
    fn(i_run, k_run, o)
    err = float(np.max(np.abs(from_run(o) - expected)))
    tol = (1e-9 if dtype == "f64" else 2e-4) * s.kh * s.kw * s.c
    if not err <= tol:
        raise AssertionError(f"polyopt's conv2d differs from numpy's by {err:.3g} (tolerance "
                             f"{tol:.3g}); refusing to time wrong code")
    torch_run, note = _torch_conv(s, dtype, i, k, threads, layout)
    o_ref = o0.copy()
    ref(i, k, o_ref, cols, tmp)
    if torch_run is not None:
        torch_run()
    contenders = [lambda: fn(i_run, k_run, o), lambda: ref(i, k, o_ref, cols, tmp)]
    if torch_run is not None:
        contenders.append(torch_run)
    timings = time_alternating(contenders, reps, threads)
    return ConvBenchResult(s, dtype, timings[0], compile_time, err, timings[1],
                           timings[2] if torch_run is not None else None, note,
                           blas_description(), threads, layout)


RESNET50_LAYERS = {
    "conv1 7x7/2 224x224x3->64": ConvShape(1, 230, 230, 3, 64, 7, 7, stride=2),
    "conv2_x 3x3 56x56x64->64": ConvShape(1, 58, 58, 64, 64, 3, 3),
    "conv3_x 3x3 28x28x128->128": ConvShape(1, 30, 30, 128, 128, 3, 3),
    "conv4_x 3x3 14x14x256->256": ConvShape(1, 16, 16, 256, 256, 3, 3),
    "conv5_x 3x3 7x7x512->512": ConvShape(1, 9, 9, 512, 512, 3, 3),
    "conv2_x 1x1 56x56x256->64": ConvShape(1, 56, 56, 256, 64, 1, 1),
    "conv2_x 1x1 56x56x64->256": ConvShape(1, 56, 56, 64, 256, 1, 1),
    "conv3_1 3x3/2 56x56x128->128": ConvShape(1, 58, 58, 128, 128, 3, 3, stride=2),
    "conv3_1 1x1/2 56x56x256->512": ConvShape(1, 56, 56, 256, 512, 1, 1, stride=2),
}
