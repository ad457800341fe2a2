"""``polyopt bench softmax``: ``linalg.softmax`` along the rows (or, ``--dim 0``, the
columns; all passes) timed against
numpy's (``max``, ``exp(x - max)``, ``sum``, divide, each into a preallocated array) and
``torch.softmax`` in the same run, under the harness rules of :mod:`polyopt.bench` (checked
first, one warm-up, alternating repetitions, medians)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from .bench import (Timing, _threads_note, machine_summary, time_alternating,
                    torch_description)


def softmax_source(rows: int, n: int, dtype: str, dim: int = 1) -> str:
    t = f"memref<{rows}x{n}x{dtype}>"
    return (f"func.func @softmax(%x: {t}, %y: {t}) {{\n  linalg.softmax dimension({dim}) "
            f"ins(%x : {t}) outs(%y : {t})\n  return\n}}\n")


@dataclass
class SoftmaxBenchResult:
    rows: int
    n: int
    dtype: str
    threads: int
    compile_time: float
    form: str
    polyopt: Timing
    numpy: Timing
    torch: Optional[Timing]
    torch_note: str
    machine: str
    dim: int = 1

    def rate(self, t: Timing) -> float:
        """Millions of elements per second."""
        return self.rows * self.n / t.median / 1e6

    def report(self) -> str:
        along = "the rows" if self.dim == 1 else "the columns (dimension 0)"
        lines = [f"softmax {self.rows}x{self.n} {self.dtype} along {along}: medians of "
                 f"{self.polyopt.reps} alternating runs, {_threads_note(self.threads)}",
                 f"  polyopt: {self.form}",
                 f"  {'':<34}  {'us':>9}  {'Melem/s':>8}  {'polyopt is':>10}",
                 f"  {'polyopt linalg.softmax':<34}  {self.polyopt.median * 1e6:9.1f}  "
                 f"{self.rate(self.polyopt):8.0f}  {'':>10}  compile {self.compile_time:.2f}s"]
        peers = [("numpy max, exp, sum, divide", self.numpy)]
        if self.torch is not None:
            peers.append(("torch.softmax", self.torch))
        for label, t in peers:
            lines.append(f"  {label:<34}  {t.median * 1e6:9.1f}  {self.rate(t):8.0f}  "
                         f"{t.median / self.polyopt.median:9.3f}x")
        lines.append(f"  torch: {self.torch_note}")
        return "\n".join(lines)


def bench_softmax(rows: int, n: int, dtype: str = "f32", *, reps: int = 7, seed: int = 0,
                  threads: int = 1, dim: int = 1) -> SoftmaxBenchResult:
    import numpy as np

    import polyopt
    if min(rows, n) < 1:
        raise ValueError(f"sizes must be positive, got {rows}x{n}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    if dim not in (0, 1):
        raise ValueError(f"dim must be 0 (the columns) or 1 (the rows), got {dim}")
    np_dtype = {"f32": np.float32, "f64": np.float64}.get(dtype)
    if np_dtype is None:
        raise ValueError(f"dtype must be f32 or f64, got {dtype!r}")
    x = np.random.default_rng(seed).standard_normal((rows, n)).astype(np_dtype)
    y = np.zeros_like(x)
    remarks: list[str] = []
    start = time.perf_counter()
    fn = polyopt.compile(softmax_source(rows, n, dtype, dim), threads=threads,
                         remark=lambda loc, m: remarks.append(m),
                         hopt=True, copy=True, unroll=True, scalrep=True, vect=True)["softmax"]
    compile_time = time.perf_counter() - start
    form = next((m.split(": ", 1)[1] for m in remarks if m.startswith("linalg.softmax")),
                "scalar loops")
    fn(x, y)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(dim, keepdims=True))
    if not np.allclose(y, e / e.sum(dim, keepdims=True), rtol=1e-4 if dtype == "f32" else 1e-10,
                       atol=0):
        raise AssertionError("polyopt's softmax differs from numpy's; not timing it")
    tmp = np.empty_like(x)
    s = np.empty((rows, 1) if dim == 1 else (1, n), np_dtype)

    def numpy_softmax():
        np.max(x, axis=dim, keepdims=True, out=s)
        np.subtract(x, s, out=tmp)
        np.exp(tmp, out=tmp)
        np.sum(tmp, axis=dim, keepdims=True, out=s)
        np.divide(tmp, s, out=tmp)
    contenders = [lambda: fn(x, y), numpy_softmax]
    torch_note = "not installed (optional): no torch row"
    try:
        import torch
        torch.set_num_threads(threads)
        tx, ty = torch.from_numpy(x), torch.from_numpy(tmp)
        contenders.append(lambda: torch.softmax(tx, dim, out=ty))
        torch_note = torch_description()
    except ImportError:
        pass
    t = time_alternating(contenders, reps, threads)
    return SoftmaxBenchResult(rows, n, dtype, threads, compile_time, form, t[0], t[1],
                              t[2] if len(t) > 2 else None, torch_note, machine_summary(), dim)
