"""``polyopt bench matmul --sweep``: polyopt against numpy on the shapes people bring, not only
the paper's: tiny squares, middle sizes, odd sizes, matrix-vector products, skinny panels,
and the matmuls of transformer and CNN layers.

Each point compiles ``hop.matmul`` for its static shape (all passes, the model's parameters),
checks the result against numpy, then takes ``samples`` ratios: polyopt and numpy alternate,
each timed over back-to-back calls for at least ``sample_seconds``, and the point's ratio is
the median of the per-sample ratios (numpy's time over polyopt's; above 1 polyopt is faster).
A ratio taken this way is robust to the slow drifts of a shared machine, which move both
sides of one sample alike.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Optional, Sequence


#: The whole pipeline, as ``polyopt opt --hopt --hopt-copy --hopt-unroll --hopt-scalrep
#: --hopt-vect`` runs it.
ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}


@dataclass(frozen=True)
class Shape:
    """C (m x n) += A (m x k) * B (k x n); ``group`` says what kind of shape it is."""

    m: int
    n: int
    k: int
    group: str

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def text(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def _shapes(group: str, triples: Iterable[tuple[int, int, int]]) -> list[Shape]:
    return [Shape(m, n, k, group) for m, n, k in triples]


#: The default sweep: issue 16's table and the layers around it.
SHAPES: tuple[Shape, ...] = tuple(
    _shapes("small", [(s, s, s) for s in (8, 16, 24, 32, 48, 64, 96)])
    + _shapes("middle", [(s, s, s) for s in (128, 192, 256, 384, 512)])
    + _shapes("odd", [(97, 101, 103), (255, 257, 253), (129, 65, 257), (300, 200, 100)])
    + _shapes("large", [(1000, 1000, 1000), (2088, 2048, 2048)])
    + _shapes("matrix-vector", [(1, 2048, 2048), (2048, 1, 2048), (1, 1000, 1000),
                                (1000, 1, 1000), (1, 256, 256), (256, 1, 256)])
    + _shapes("skinny", [(2048, 32, 2048), (32, 2048, 2048), (2048, 2048, 32)])
    # BERT-base at sequence length 128: QKV/output projections and the two FFN matmuls
    + _shapes("transformer", [(128, 768, 768), (128, 3072, 768), (128, 768, 3072),
                              (128, 128, 64)])
    # ResNet-50's 3x3 convolutions as implicit GEMMs (output pixels x filters x C*3*3)
    + _shapes("CNN", [(3136, 64, 576), (784, 128, 1152), (196, 256, 2304), (49, 512, 4608)]))

#: The points the tests run: one of each kind, seconds in all.
TEST_SHAPES: tuple[Shape, ...] = (Shape(5, 7, 3, "small"), Shape(1, 33, 17, "matrix-vector"),
                                  Shape(19, 1, 23, "matrix-vector"))


def parse_shapes(text: str) -> list[Shape]:
    """``"MxNxK,MxNxK,..."`` -> shapes (group "given"); raises ValueError on bad text."""
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            m, n, k = (int(p) for p in parts)
        except ValueError:
            raise ValueError(f"expected MxNxK, got {item.strip()!r}") from None
        if min(m, n, k) < 1:
            raise ValueError(f"matrix sizes must be positive, got {item.strip()!r}")
        shapes.append(Shape(m, n, k, "given"))
    return shapes


def ratio_samples(ours: Callable[[], object], theirs: Callable[[], object], *,
                  samples: int, sample_seconds: float,
                  threads: int = 1) -> tuple[list[float], list[float]]:
    """Seconds per call of ``ours`` and of ``theirs``, ``samples`` of each, alternating;
    each sample is the mean over back-to-back calls lasting at least ``sample_seconds``
    (with several threads, after :func:`polyopt.bench._settle`: the other side's idle
    threads stop spinning, this side's wake up)."""
    from .bench import _settle, time_sample

    def one(fn: Callable[[], object]) -> float:
        _settle(threads, fn)
        return time_sample(fn, sample_seconds)

    mine, other = [], []
    for _ in range(samples):
        mine.append(one(ours))
        other.append(one(theirs))
    return mine, other


@dataclass
class SweepPoint:
    """One shape and type: the median ratio numpy/polyopt of the alternating samples, its
    range, both sides' median GFLOPS, the compile time, the largest error against numpy."""

    m: int
    n: int
    k: int
    group: str
    dtype: str
    ratio: float
    ratio_min: float
    ratio_max: float
    gflops: float
    numpy_gflops: float
    compile_seconds: float
    max_error: float
    # with a dynamic-shape function (``--dynamic``): its ratio to numpy and to the static one
    dynamic_ratio: Optional[float] = None
    dynamic_vs_static: Optional[float] = None

    def to_json(self) -> dict:
        return asdict(self)


def dynamic_source(dtype: str) -> str:
    """``@matmul`` on ``memref<?x?xT>`` operands: one function for every size."""
    t = f"memref<?x?x{dtype}>"
    return (f"func.func @matmul(%A: {t}, %B: {t}, %C: {t}) {{\n"
            f"  hop.matmul %A, %B, %C : ({t}, {t}, {t})\n  return\n}}\n")


def compile_dynamic(dtype: str, threads: int = 1, switches: Optional[dict] = None):
    """The dynamic-shape function of :func:`dynamic_source`, all passes."""
    from .pipeline import compile as compile_module
    return compile_module(dynamic_source(dtype), filename=f"<sweep ?x? {dtype}>",
                          **{**ALL_PASSES, "threads": threads, **(switches or {})})["matmul"]


def measure_point(shape: Shape, dtype: str, *, samples: int = 7, sample_seconds: float = 0.002,
                  threads: int = 1, switches: Optional[dict] = None,
                  seed: int = 0, dynamic: Optional[Callable] = None) -> SweepPoint:
    """Compile, check and time one point (see the module docstring); with ``dynamic`` (a
    function of ``?`` operands), check and time it too, against numpy and the static one."""
    import numpy as np

    from .bench import matmul_source
    from .pipeline import compile as compile_module
    np_dtype = {"f64": np.float64, "f32": np.float32}[dtype]
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (shape.m, shape.k)).astype(np_dtype)
    b = rng.uniform(-1, 1, (shape.k, shape.n)).astype(np_dtype)
    c0 = rng.uniform(-1, 1, (shape.m, shape.n)).astype(np_dtype)
    expected = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    start = time.perf_counter()
    fn = compile_module(matmul_source(shape.m, shape.n, shape.k, dtype),
                        filename=f"<sweep {shape.text()} {dtype}>",
                        **{**ALL_PASSES, "threads": threads, **(switches or {})})["matmul"]
    compile_seconds = time.perf_counter() - start
    c = c0.copy()
    fn(a, b, c)
    err = float(np.max(np.abs(c - expected)))
    tol = (1e-9 if dtype == "f64" else 2e-4) * shape.k
    if not err <= tol:
        raise AssertionError(f"{shape.text()} {dtype}: result differs from numpy's by {err:.3g} "
                             f"(tolerance {tol:.3g}); refusing to time wrong code")
    if threads > 1:
        # right after the pause that lets the other side's threads stop spinning, the second
        # core wakes slowly: samples of 2 ms read 0.7-1.5 ms for a 0.55 ms call (bench.py)
        from .bench import MIN_SAMPLE_SECONDS
        sample_seconds = max(sample_seconds, MIN_SAMPLE_SECONDS)
    out = np.empty_like(c)
    # numpy's side does what C += A*B does: the product into a buffer, then the add
    mine, other = ratio_samples(lambda: fn(a, b, c),
                                lambda: np.add(c, np.matmul(a, b, out=out), out=c),
                                samples=samples, sample_seconds=sample_seconds,
                                threads=threads)
    ratios = [o / m for m, o in zip(mine, other)]
    point = SweepPoint(shape.m, shape.n, shape.k, shape.group, dtype, statistics.median(ratios),
                       min(ratios), max(ratios), shape.flops / statistics.median(mine) / 1e9,
                       shape.flops / statistics.median(other) / 1e9, compile_seconds, err)
    if dynamic is not None:
        c = c0.copy()
        dynamic(a, b, c)
        derr = float(np.max(np.abs(c - expected)))
        if not derr <= tol:
            raise AssertionError(f"{shape.text()} {dtype}: the dynamic-shape function differs "
                                 f"from numpy by {derr:.3g}; refusing to time wrong code")
        d_mine, d_numpy = ratio_samples(
            lambda: dynamic(a, b, c), lambda: np.add(c, np.matmul(a, b, out=out), out=c),
            samples=samples, sample_seconds=sample_seconds, threads=threads)
        d_dyn, d_static = ratio_samples(lambda: dynamic(a, b, c), lambda: fn(a, b, c),
                                        samples=samples, sample_seconds=sample_seconds,
                                        threads=threads)
        point.dynamic_ratio = statistics.median(o / m for m, o in zip(d_mine, d_numpy))
        point.dynamic_vs_static = statistics.median(o / m for m, o in zip(d_dyn, d_static))
    return point


def run_sweep(shapes: Sequence[Shape], dtypes: Sequence[str], *, samples: int = 7,
              sample_seconds: float = 0.002, threads: int = 1,
              switches: Optional[dict] = None, dynamic: bool = False,
              progress: Optional[Callable[[SweepPoint], None]] = None) -> list[SweepPoint]:
    """Every shape in every type; with ``dynamic``, one function of ``?`` operands per type
    (compiled once) is timed at every point too."""
    points = []
    for dtype in dtypes:
        dyn = compile_dynamic(dtype, threads, switches) if dynamic else None
        for shape in shapes:
            point = measure_point(shape, dtype, samples=samples, sample_seconds=sample_seconds,
                                  threads=threads, switches=switches, dynamic=dyn)
            points.append(point)
            if progress is not None:
                progress(point)
    return points


def sweep_table(points: Sequence[SweepPoint]) -> str:
    """Markdown: one row per shape, one ratio column (and GFLOPS) per element type."""
    dtypes = list(dict.fromkeys(p.dtype for p in points))
    by_key = {(p.m, p.n, p.k, p.dtype): p for p in points}
    shapes = list(dict.fromkeys((p.m, p.n, p.k, p.group) for p in points))
    with_dynamic = any(p.dynamic_ratio is not None for p in points)
    header = ["shape (M x N x K)", "kind"]
    for d in dtypes:
        header += [f"{d} vs numpy", f"{d} GFLOPS (numpy)"]
        if with_dynamic:
            header += [f"{d} ?x? vs numpy", f"{d} ?x? vs static"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m, n, k, group in shapes:
        cells = [f"{m}x{n}x{k}", group]
        for d in dtypes:
            p = by_key.get((m, n, k, d))
            if p is None:
                cells += [""] * (4 if with_dynamic else 2)
                continue
            cells += [f"{p.ratio:.2f}x ({p.ratio_min:.2f}..{p.ratio_max:.2f})",
                      f"{p.gflops:.1f} ({p.numpy_gflops:.1f})"]
            if with_dynamic:
                cells += [f"{p.dynamic_ratio:.2f}x", f"{p.dynamic_vs_static:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_summary(points: Sequence[SweepPoint]) -> str:
    """Per type: how many points reach 1.0x, the worst point, the geometric mean."""
    out = []
    for d in dict.fromkeys(p.dtype for p in points):
        mine = [p for p in points if p.dtype == d]
        worst = min(mine, key=lambda p: p.ratio)
        geo = statistics.geometric_mean([p.ratio for p in mine])
        out.append(f"{d}: {sum(p.ratio >= 1.0 for p in mine)}/{len(mine)} points at 1.0x numpy "
                   f"or better; geometric mean {geo:.2f}x; worst {worst.m}x{worst.n}x{worst.k} "
                   f"at {worst.ratio:.2f}x")
        dyn = [p for p in mine if p.dynamic_ratio is not None]
        if dyn:
            worst = min(dyn, key=lambda p: p.dynamic_ratio)
            out.append(f"{d} ?x? (one compilation): {sum(p.dynamic_ratio >= 1.0 for p in dyn)}/"
                       f"{len(dyn)} points at 1.0x numpy or better; geometric mean "
                       f"{statistics.geometric_mean([p.dynamic_ratio for p in dyn]):.2f}x numpy, "
                       f"{statistics.geometric_mean([p.dynamic_vs_static for p in dyn]):.2f}x "
                       f"the static functions; worst {worst.m}x{worst.n}x{worst.k} at "
                       f"{worst.dynamic_ratio:.2f}x")
    return "\n".join(out)
