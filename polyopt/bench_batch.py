"""``polyopt bench batch-matmul``: ``linalg.batch_matmul`` (all passes) timed against a loop of
numpy matmuls over the batch and ``torch.bmm`` in the same run, under the harness rules of
:mod:`polyopt.bench` (checked first, one warm-up, alternating repetitions with a settle
between contenders on several threads, medians), the FMA loop of :mod:`polyopt.codegen.peak`
among them for "of peak".  With ``--shared-b`` one B serves the batch:
``hop.matmul`` of a rank-3 A and a rank-2 B against numpy's broadcasting ``matmul`` and
``torch.matmul``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from .bench import (Timing, _threads_note, blas_description, machine_summary,
                    peak_contender, time_alternating, torch_description)


def shared_b_source(batch: int, m: int, n: int, k: int, dtype: str) -> str:
    ta, tb, tc = (f"memref<{batch}x{m}x{k}x{dtype}>", f"memref<{k}x{n}x{dtype}>",
                  f"memref<{batch}x{m}x{n}x{dtype}>")
    return (f"func.func @bmm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C : ({ta}, {tb}, {tc})\n  return\n}}\n")


def batch_matmul_source(batch: int, m: int, n: int, k: int, dtype: str) -> str:
    ta, tb, tc = (f"memref<{batch}x{m}x{k}x{dtype}>", f"memref<{batch}x{k}x{n}x{dtype}>",
                  f"memref<{batch}x{m}x{n}x{dtype}>")
    return (f"func.func @bmm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  linalg.batch_matmul ins(%A, %B : {ta}, {tb}) outs(%C : {tc})\n"
            f"  return\n}}\n")


@dataclass
class BatchBenchResult:
    batch: int
    m: int
    n: int
    k: int
    dtype: str
    threads: int
    compile_time: float
    polyopt: Timing
    numpy: Timing
    torch: Optional[Timing]
    torch_note: str
    blas: str
    machine: str
    shared_b: bool = False
    #: the FMA loop's GFLOPS timed among the contenders
    peak_gflops: Optional[float] = None

    def rate(self, t: Timing) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k / t.median / 1e9

    def of_peak(self, t: Timing) -> str:
        return f"  {100 * self.rate(t) / self.peak_gflops:6.1f}%" if self.peak_gflops else ""

    def report(self) -> str:
        what = "C[b] = A[b] * B (one B)" if self.shared_b else "C[b] = A[b] * B[b]"
        ours = "polyopt hop.matmul" if self.shared_b else "polyopt linalg.batch_matmul"
        lines = [f"batch_matmul {self.batch} x ({self.m}x{self.n}x{self.k}) {self.dtype}: "
                 f"{what}, medians of {self.polyopt.reps} alternating runs, "
                 f"{_threads_note(self.threads)}"
                 + (f"; FMA peak {self.peak_gflops:.1f} GFLOPS (its loop timed among them)"
                    if self.peak_gflops else ""),
                 f"  {'':<30}  {'GFLOPS':>8}  {'polyopt is':>10}"
                 + (f"  {'of peak':>7}" if self.peak_gflops else ""),
                 f"  {ours:<30}  {self.rate(self.polyopt):8.1f}  "
                 f"{'':>10}{self.of_peak(self.polyopt)}  compile {self.compile_time:.2f}s"]
        peers = [("numpy matmul (broadcast B)" if self.shared_b else
                  "numpy matmul, loop over batch", self.numpy)]
        if self.torch is not None:
            peers.append(("torch.matmul" if self.shared_b else "torch.bmm", self.torch))
        for label, t in peers:
            lines.append(f"  {label:<30}  {self.rate(t):8.1f}  "
                         f"{t.median / self.polyopt.median:9.3f}x{self.of_peak(t)}")
        lines.append(f"  torch: {self.torch_note}")
        lines.append(f"  numpy's BLAS: {self.blas}")
        return "\n".join(lines)


def bench_batch_matmul(batch: int, m: int, n: int, k: int, dtype: str = "f32", *,
                       reps: int = 5, seed: int = 0, threads: int = 1,
                       shared_b: bool = False) -> BatchBenchResult:
    import numpy as np

    import polyopt
    if min(batch, m, n, k) < 1:
        raise ValueError(f"sizes must be positive, got {batch} x {m}x{n}x{k}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    np_dtype = {"f32": np.float32, "f64": np.float64}.get(dtype)
    if np_dtype is None:
        raise ValueError(f"dtype must be f32 or f64, got {dtype!r}")
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (batch, m, k)).astype(np_dtype)
    b = rng.uniform(-1, 1, (k, n) if shared_b else (batch, k, n)).astype(np_dtype)
    c = np.zeros((batch, m, n), np_dtype)
    start = time.perf_counter()
    source = (shared_b_source if shared_b else batch_matmul_source)(batch, m, n, k, dtype)
    fn = polyopt.compile(source, threads=threads,
                         hopt=True, copy=True, unroll=True, scalrep=True, vect=True)["bmm"]
    compile_time = time.perf_counter() - start
    fn(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = (1e-12 if dtype == "f64" else 2e-6) * k * 4
    if not np.allclose(c, want, rtol=0, atol=tol):
        raise AssertionError("polyopt's batch_matmul differs from numpy's; not timing it")
    out = np.empty_like(c)

    def numpy_loop():
        if shared_b:
            np.matmul(a, b, out=out)
            return
        for q in range(batch):
            np.matmul(a[q], b[q], out=out[q])
    contenders = [lambda: fn(a, b, c), numpy_loop]
    torch_note = "not installed (optional): no torch row"
    try:
        import torch
        torch.set_num_threads(threads)
        ta, tb, to = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
        contenders.append(lambda: (torch.matmul if shared_b else torch.bmm)(ta, tb, out=to))
        torch_note = torch_description()
    except ImportError:
        pass
    peers = len(contenders)
    peak = peak_contender(dtype, threads)
    t = time_alternating(contenders + [peak[0]], reps, threads)
    return BatchBenchResult(batch, m, n, k, dtype, threads, compile_time, t[0], t[1],
                            t[2] if peers > 2 else None, torch_note, blas_description(),
                            machine_summary(), shared_b, peak[1] / t[-1].median / 1e9)
