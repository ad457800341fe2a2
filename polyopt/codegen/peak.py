"""The machine's measured FMA peak (``polyopt peak``): a JIT-compiled loop of independent vector
FMA chains at the target's widest vector width, enough of them to cover the FMA latency, with
no memory traffic.  The figure benchmarks quote "fraction of peak" against."""

from __future__ import annotations

import ctypes
import statistics
import time
from dataclasses import dataclass

from .jit import JITEngine
from .target import Target, host_target

_CHAINS = 12  # independent accumulators: more than latency x throughput (4 x 2) of the FMA units


@dataclass(frozen=True)
class Peak:
    dtype: str
    lanes: int
    gflops: float
    reps: int


def _peak_ir(elem: str, lanes: int, chains: int) -> str:
    vt = f"<{lanes} x {elem}>"
    acc_phis, fmas = [], []
    for c in range(chains):
        acc_phis.append(f"  %a{c} = phi {vt} [ %init, %entry ], [ %n{c}, %loop ]")
        fmas.append(f"  %n{c} = call {vt} @llvm.fma.v{lanes}{'f64' if elem == 'double' else 'f32'}"
                    f"({vt} %a{c}, {vt} %x, {vt} %y)")
    total = "\n".join(f"  %s{c} = fadd {vt} %s{c - 1}, %n{c}" if c else f"  %s0 = fadd {vt} "
                      f"zeroinitializer, %n0" for c in range(chains))
    sfx = "f64" if elem == "double" else "f32"
    return f"""
declare {vt} @llvm.fma.v{lanes}{sfx}({vt}, {vt}, {vt})
define {elem} @peak(i64 %iters, {elem} %seed) {{
entry:
  %i0 = insertelement {vt} poison, {elem} %seed, i64 0
  %init = shufflevector {vt} %i0, {vt} poison, <{lanes} x i32> zeroinitializer
  %x = fadd {vt} %init, %init
  %y = fmul {vt} %init, %init
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inext, %loop ]
{chr(10).join(acc_phis)}
{chr(10).join(fmas)}
  %inext = add i64 %i, 1
  %done = icmp eq i64 %inext, %iters
  br i1 %done, label %exit, label %loop
exit:
{total}
  %r = extractelement {vt} %s{chains - 1}, i64 0
  ret {elem} %r
}}
"""


class PeakLoop:
    """The FMA loop JIT-compiled for ``dtype``, callable with an iteration count; its engine
    lives as long as it does."""

    def __init__(self, dtype: str = "f64", target: Target | None = None):
        target = target or host_target()
        elem, bits = {"f64": ("double", 64), "f32": ("float", 32)}[dtype]
        self.dtype = dtype
        self.lanes = target.vector_width(bits)
        self._engine = JITEngine(_peak_ir(elem, self.lanes, _CHAINS), target)
        ctype = ctypes.c_double if bits == 64 else ctypes.c_float
        self._fn = ctypes.CFUNCTYPE(ctype, ctypes.c_int64, ctype)(
            self._engine.function_address("peak"))
        self.flops_per_iter = 2 * self.lanes * _CHAINS

    def __call__(self, iters: int) -> None:
        self._fn(iters, 1e-9)

    def iters_for(self, seconds: float) -> int:
        """About as many iterations as take ``seconds``."""
        iters = 1_000_000
        start = time.perf_counter()
        self(iters)
        elapsed = time.perf_counter() - start
        return max(1000, int(iters * seconds / max(elapsed, 1e-6)))


def peak_contender(dtype: str, seconds: float = 0.005) -> tuple:
    """The FMA loop as one more contender of a benchmark's alternating runs, so that the peak
    a result is quoted against was measured under the same load as the result (on a shared
    host the loop read 71 to 83 GFLOPS f64 within one minute): a call of about ``seconds``
    and the flops it does."""
    loop = PeakLoop(dtype)
    iters = loop.iters_for(seconds)
    return (lambda: loop(iters)), float(loop.flops_per_iter * iters)


def measure_peak(dtype: str = "f64", target: Target | None = None, reps: int = 5,
                 seconds: float = 0.2) -> Peak:
    """Median GFLOPS of ``reps`` runs of the FMA loop, each about ``seconds`` long."""
    loop = PeakLoop(dtype, target)
    iters = loop.iters_for(seconds)
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        loop(iters)
        samples.append(loop.flops_per_iter * iters / (time.perf_counter() - start) / 1e9)
    return Peak(dtype, loop.lanes, statistics.median(samples), reps)
