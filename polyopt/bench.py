"""The measurement harness shared by ``polyopt bench`` and ``experiments/``.

Rules (DESIGN.md, "How fast, and how we know"): the result is checked against numpy before it
is timed; one warm-up run each; repetitions alternate polyopt and numpy so that both see the
same machine state; medians are reported with the spread; the ratio to numpy (OpenBLAS, one
thread) comes from the same run.  ``OPENBLAS_NUM_THREADS=1`` must be set before numpy loads:
the CLI does it, scripts call :func:`single_threaded_numpy` first.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

TILE_NAMES = ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U")


def single_threaded_numpy() -> None:
    """Pin OpenBLAS (and friends) to one thread; must run before numpy is imported."""
    if "numpy" in sys.modules and os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        raise RuntimeError("numpy was imported before single_threaded_numpy(): set "
                           "OPENBLAS_NUM_THREADS=1 in the environment instead")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


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


@dataclass
class MatmulBenchResult:
    m: int
    n: int
    k: int
    dtype: str
    options: dict
    tiles: dict
    compile_time: float
    polyopt: Timing
    numpy: Timing
    max_abs_error: float
    extra: dict = field(default_factory=dict)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def gflops(self, t: Timing) -> float:
        return self.flops / t.median / 1e9

    @property
    def ratio(self) -> float:
        """numpy time / polyopt time: above 1 means polyopt is faster."""
        return self.numpy.median / self.polyopt.median

    def to_json(self) -> dict:
        d = asdict(self)
        d["polyopt_gflops"] = self.gflops(self.polyopt)
        d["numpy_gflops"] = self.gflops(self.numpy)
        d["ratio_vs_numpy"] = self.ratio
        return d

    def report(self) -> str:
        opts = " ".join(f"--{k.replace('_', '-')}" for k, v in self.options.items() if v) or "(none)"
        tiles = ", ".join(f"{k}={v}" for k, v in self.tiles.items()) or "defaults"
        spread = lambda t: f"[{self.flops / t.maximum / 1e9:.2f} .. {self.flops / t.minimum / 1e9:.2f}]"  # noqa: E731
        return "\n".join([
            f"matmul {self.m}x{self.n}x{self.k} {self.dtype}  passes: {opts}  tiles: {tiles}",
            f"  compile time     {self.compile_time:.3f} s",
            f"  polyopt          {self.gflops(self.polyopt):8.2f} GFLOPS  median of "
            f"{self.polyopt.reps}  {spread(self.polyopt)}",
            f"  numpy (OpenBLAS) {self.gflops(self.numpy):8.2f} GFLOPS  median of "
            f"{self.numpy.reps}  {spread(self.numpy)}",
            f"  ratio polyopt/numpy  {self.ratio:.3f}x   (max |error| {self.max_abs_error:.2e})",
        ])


def matmul_source(m: int, n: int, k: int, dtype: str = "f64",
                  tiles: Optional[dict] = None) -> str:
    """A module with ``@matmul`` holding one ``hop.matmul`` with the given tile attributes."""
    attrs = ""
    if tiles:
        attrs = " {" + ", ".join(f"{name} = {v} : i32" for name, v in tiles.items()) + "}"
    ta, tb, tc = (f"memref<{m}x{k}x{dtype}>", f"memref<{k}x{n}x{dtype}>",
                  f"memref<{m}x{n}x{dtype}>")
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n"
            f"  return\n}}\n")


def _time_once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_matmul(m: int, n: int, k: int, dtype: str = "f64", *, reps: int = 5,
                 tiles: Optional[dict] = None, seed: int = 0,
                 **switches) -> MatmulBenchResult:
    """Compile ``hop.matmul`` (C += A*B) with the given pass switches and time it against
    numpy's matmul on the same arrays, alternating the two."""
    import numpy as np

    from .pipeline import compile as compile_module
    if min(m, n, k) < 1:
        raise ValueError(f"matrix sizes must be positive, got {m}x{n}x{k}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    np_dtype = {"f64": np.float64, "f32": np.float32}.get(dtype)
    if np_dtype is None:
        raise ValueError(f"dtype must be f64 or f32, got {dtype!r}")
    tiles = {t: v for t, v in (tiles or {}).items() if v is not None}
    switches.setdefault("hopt", True)
    start = time.perf_counter()
    compiled = compile_module(matmul_source(m, n, k, dtype, tiles), filename="<bench>", **switches)
    compile_time = time.perf_counter() - start
    fn = compiled["matmul"]

    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np_dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(np_dtype)
    c = rng.uniform(-1, 1, (m, n)).astype(np_dtype)
    expected = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    fn(a, b, c)  # also the warm-up
    err = float(np.max(np.abs(c - expected)))
    tol = (1e-9 if dtype == "f64" else 2e-4) * k
    if not err <= tol:
        raise AssertionError(f"polyopt's result differs from numpy's by {err:.3g} "
                             f"(tolerance {tol:.3g}); refusing to time wrong code")
    out = np.empty((m, n), np_dtype)
    np.matmul(a, b, out=out)  # warm-up
    ours, theirs = [], []
    for _ in range(reps):
        ours.append(_time_once(lambda: fn(a, b, c)))
        theirs.append(_time_once(lambda: np.matmul(a, b, out=out)))
    options = {name: bool(v) for name, v in switches.items()}
    return MatmulBenchResult(m, n, k, dtype, options, tiles, compile_time, Timing.of(ours),
                             Timing.of(theirs), err)


def dump_json(results: list, stream=None) -> None:
    json.dump([r.to_json() for r in results], stream or sys.stdout, indent=2)
    (stream or sys.stdout).write("\n")
