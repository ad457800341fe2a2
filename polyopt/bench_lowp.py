"""``polyopt bench matmul --dtype bf16|f16|i8|u8``: a mixed-precision ``hop.matmul`` timed against
torch's own low-precision matmul on the same CPU, polyopt's SGEMM of the same shape and numpy's
f32 matmul, in one run (the harness rules of :mod:`polyopt.bench`: checked first, one warm-up,
alternating repetitions, medians).

The contracts differ and the report says so: polyopt computes ``C(f32) += A(bf16) * B(bf16)``
(``C(i32) += A(i8 or u8) * B(i8)``); torch's ``mm`` on bf16 or f16 returns bf16 or f16 (its
accumulation is f32 inside), ``torch._int_mm`` returns int32 for int8 x int8 (``u8`` has no
torch peer: it is timed against ``_int_mm`` on the same shape).  numpy has no bf16 or int8
matmul: its f32 matmul on the converted operands is timed without the conversion, which is
stated with its cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from .bench import (Timing, blas_description, machine_summary, time_alternating,
                    torch_description)

#: --dtype -> (A, B, C) element types and hop.matmul's attributes
KINDS = {"bf16": ("bf16", "bf16", "f32", ""), "f16": ("f16", "f16", "f32", ""),
         "i8": ("i8", "i8", "i32", ""), "u8": ("i8", "i8", "i32", " {a_unsigned}")}


def lowp_matmul_source(m: int, n: int, k: int, kind: str) -> str:
    a, b, c, attrs = KINDS[kind]
    ta, tb, tc = f"memref<{m}x{k}x{a}>", f"memref<{k}x{n}x{b}>", f"memref<{m}x{n}x{c}>"
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")


@dataclass
class LowpBenchResult:
    m: int
    n: int
    k: int
    kind: str
    engine: str
    compile_time: float
    polyopt: Timing
    sgemm: Timing
    numpy_f32: Timing
    conversion: float
    torch: Optional[Timing]
    torch_label: str
    torch_note: str
    blas: str
    machine: str
    threads: int = 1

    @property
    def ops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def rate(self, t: Timing) -> float:
        return self.ops / t.median / 1e9

    def report(self) -> str:
        unit = "GOP/s" if self.kind in ("i8", "u8") else "GFLOPS"
        a, b, c, _ = KINDS[self.kind]
        sign = "u8" if self.kind == "u8" else a
        lines = [f"matmul {self.m}x{self.n}x{self.k} {sign} x {b} -> {c}: C += A*B, medians of "
                 f"{self.polyopt.reps} alternating runs, {self.threads} thread(s)",
                 f"  engine: {self.engine}",
                 f"  {'':<34}  {unit:>8}  {'polyopt is':>10}"]

        def row(label: str, t: Timing) -> str:
            return (f"  {label:<34}  {self.rate(t):8.1f}  "
                    f"{t.median / self.polyopt.median:9.3f}x")
        lines.append(f"  {'polyopt hop.matmul (all passes)':<34}  {self.rate(self.polyopt):8.1f}"
                     f"  {'':>10}  compile {self.compile_time:.2f}s")
        if self.torch is not None:
            lines.append(row(self.torch_label, self.torch))
        lines.append(row("polyopt SGEMM (f32, same shape)", self.sgemm))
        lines.append(row("numpy f32 matmul (converted)", self.numpy_f32))
        lines.append(f"  (\"polyopt is\": the peer's time / polyopt's; numpy's conversion of A "
                     f"and B to f32, not timed above: {self.conversion * 1e3:.2f} ms)")
        lines.append(f"  torch: {self.torch_note}")
        lines.append(f"  numpy's BLAS: {self.blas}")
        return "\n".join(lines)


def _torch_peer(kind: str, a, b, threads: int):
    """``(run, label, note)`` for torch's matmul of this kind, or ``(None, "", why)``."""
    try:
        import torch
    except ImportError:
        return None, "", "not installed (optional): no torch row"
    import numpy as np
    torch.set_num_threads(threads)
    if kind in ("i8", "u8"):
        ta = torch.from_numpy(a.view(np.int8) if kind == "i8" else
                              (a.astype(np.int16) - 128).astype(np.int8))
        tb = torch.from_numpy(b)

        def run():
            return torch._int_mm(ta, tb)
        label = "torch._int_mm (s8 x s8 -> s32)"
    else:
        dt = torch.bfloat16 if kind == "bf16" else torch.float16
        ta, tb = (torch.from_numpy(x.view(np.int16)).view(dt) if kind == "bf16"
                  else torch.from_numpy(x) for x in (a, b))
        out = torch.empty((a.shape[0], b.shape[1]), dtype=dt)

        def run():
            return torch.mm(ta, tb, out=out)
        label = f"torch.mm ({kind} -> {kind})"
    try:
        run()
    except RuntimeError as e:   # _int_mm's shape rules, a CPU build without the kernel
        return None, "", f"{label} refused this shape: {str(e).splitlines()[0]}"
    return run, label, torch_description()


def bench_lowp_matmul(m: int, n: int, k: int, kind: str, *, reps: int = 5, seed: int = 0,
                      threads: int = 1) -> LowpBenchResult:
    import numpy as np

    import polyopt
    from .bench import matmul_source
    if kind not in KINDS:
        raise ValueError(f"dtype must be one of {', '.join(KINDS)}, got {kind!r}")
    if min(m, n, k) < 1:
        raise ValueError(f"matrix sizes must be positive, got {m}x{n}x{k}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    rng = np.random.default_rng(seed)
    if kind in ("bf16", "f16"):
        import ml_dtypes
        t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
        a = rng.uniform(-1, 1, (m, k)).astype(t)
        b = rng.uniform(-1, 1, (k, n)).astype(t)
        c0 = np.zeros((m, n), np.float32)
    else:
        lo = 0 if kind == "u8" else -128
        a = rng.integers(lo, lo + 256, (m, k)).astype(np.uint8 if kind == "u8" else np.int8)
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        c0 = np.zeros((m, n), np.int32)
    engines = []
    start = time.perf_counter()
    fn = polyopt.compile(lowp_matmul_source(m, n, k, kind), threads=threads,
                         remark=lambda loc, msg: engines.append(msg), hopt=True, copy=True,
                         unroll=True, scalrep=True, vect=True)["matmul"]
    compile_time = time.perf_counter() - start
    engine = next((r.split(": ", 1)[1].split(";")[0] for r in engines if "groups of" in r),
                  "naive nest")
    c = c0.copy()
    fn(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    if kind in ("i8", "u8"):
        if not np.array_equal(c, want.astype(np.int64)):
            raise AssertionError("polyopt's int8 product differs from numpy's; not timing it")
    else:
        bound = (k + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
        if not (np.abs(c - want) <= bound).all():
            raise AssertionError("polyopt's product is outside f32's summation bound; not "
                                 "timing it")
    sg = polyopt.compile(matmul_source(m, n, k, "f32"), threads=threads, hopt=True, copy=True,
                         unroll=True, scalrep=True, vect=True)["matmul"]
    start = time.perf_counter()
    af, bf = a.astype(np.float32), b.astype(np.float32)
    conversion = time.perf_counter() - start
    cf = np.zeros((m, n), np.float32)
    out = np.empty((m, n), np.float32)
    torch_run, torch_label, torch_note = _torch_peer(kind, a, b, threads)
    contenders: list[Callable[[], object]] = [lambda: fn(a, b, c), lambda: sg(af, bf, cf),
                                              lambda: np.matmul(af, bf, out=out)]
    if torch_run is not None:
        contenders.append(torch_run)
    timings = time_alternating(contenders, reps, threads)
    return LowpBenchResult(m, n, k, kind, engine, compile_time, timings[0], timings[1],
                           timings[2], conversion, timings[3] if torch_run else None,
                           torch_label, torch_note, blas_description(), machine_summary(),
                           threads)
