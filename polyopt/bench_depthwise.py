"""``polyopt bench depthwise``: ``linalg.depthwise_conv_2d_nchw_chw`` (all passes) timed against
``torch.nn.functional.conv2d(groups=C)`` on the same NCHW arrays and numpy's sum over the taps
(``O += I[:, :, rows, cols] * F[:, a, b]``) in the same run, under the harness rules of
:mod:`polyopt.bench` (checked first, one warm-up, alternating repetitions, medians).  The
output accumulates over the runs (the op's ``O +=``; the peers write a fresh array)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from .bench import Timing, _threads_note, time_alternating, torch_description

#: MobileNet-v2's 3x3 depthwise layers at 224x224 (channels, output size, stride)
MOBILENET_LAYERS = ((32, 112, 1), (96, 56, 2), (144, 56, 1), (144, 28, 2), (192, 28, 1),
                    (384, 14, 1), (576, 14, 1), (576, 7, 2), (960, 7, 1))


def depthwise_source(n: int, c: int, oh: int, ow: int, k: int, stride: int,
                     dtype: str) -> str:
    ih, iw = (oh - 1) * stride + k, (ow - 1) * stride + k
    ti, tf, to = (f"memref<{n}x{c}x{ih}x{iw}x{dtype}>", f"memref<{c}x{k}x{k}x{dtype}>",
                  f"memref<{n}x{c}x{oh}x{ow}x{dtype}>")
    return (f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}) {{\n"
            f"  linalg.depthwise_conv_2d_nchw_chw {{strides = dense<{stride}> : "
            f"tensor<2xi64>}} ins(%I, %F : {ti}, {tf}) outs(%O : {to})\n  return\n}}\n")


@dataclass
class DepthwiseBenchResult:
    n: int
    c: int
    oh: int
    ow: int
    k: int
    stride: int
    dtype: str
    threads: int
    form: str
    polyopt: Timing
    numpy: Timing
    torch: Optional[Timing]

    def rate(self, t: Timing) -> float:
        return 2.0 * self.n * self.c * self.oh * self.ow * self.k * self.k / t.median / 1e9

    def row(self) -> str:
        peers = f"{self.numpy.median / self.polyopt.median:7.2f}x"
        peers += (f"  {self.torch.median / self.polyopt.median:7.2f}x" if self.torch else
                  "        -")
        return (f"  {self.c:>5} x {self.oh:>3}x{self.ow:<3} /{self.stride}  "
                f"{self.polyopt.median * 1e6:9.1f}  {self.rate(self.polyopt):7.1f}  {peers}  "
                f"{self.form}")


HEADER = (f"  {'C x OHxOW /s':<18}  {'us':>9}  {'GFLOPS':>7}  {'vs numpy':>8}  "
          f"{'vs torch':>8}  polyopt's form")


def bench_depthwise(n: int, c: int, oh: int, ow: int, k: int = 3, stride: int = 1,
                    dtype: str = "f32", *, reps: int = 7, seed: int = 0,
                    threads: int = 1) -> DepthwiseBenchResult:
    import numpy as np

    import polyopt
    if min(n, c, oh, ow, k, stride) < 1:
        raise ValueError(f"sizes and the stride must be positive, got n={n} c={c} "
                         f"{oh}x{ow} k={k} stride={stride}")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    np_dtype = {"f32": np.float32, "f64": np.float64}.get(dtype)
    if np_dtype is None:
        raise ValueError(f"dtype must be f32 or f64, got {dtype!r}")
    ih, iw = (oh - 1) * stride + k, (ow - 1) * stride + k
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((n, c, ih, iw)).astype(np_dtype)
    filt = rng.standard_normal((c, k, k)).astype(np_dtype)
    out = np.zeros((n, c, oh, ow), np_dtype)
    remarks: list[str] = []
    fn = polyopt.compile(depthwise_source(n, c, oh, ow, k, stride, dtype), threads=threads,
                         remark=lambda loc, m: remarks.append(m),
                         hopt=True, copy=True, unroll=True, scalrep=True, vect=True)["dw"]
    form = "vector rows" if any("as vector rows" in m for m in remarks) else "loop nest"

    def numpy_taps(o):
        o[...] = 0
        for a in range(k):
            for b in range(k):
                o += image[:, :, a:a + (oh - 1) * stride + 1:stride,
                           b:b + (ow - 1) * stride + 1:stride] * filt[None, :, a, b, None, None]
        return o
    want = numpy_taps(np.zeros_like(out))
    fn(image, filt, out)
    if not np.allclose(out, want, rtol=1e-4, atol=1e-4 * k):
        raise AssertionError("polyopt's depthwise convolution differs from numpy's; not "
                             "timing it")
    scratch = np.zeros_like(out)
    contenders = [lambda: fn(image, filt, out), lambda: numpy_taps(scratch)]
    try:
        import torch
        torch.set_num_threads(threads)
        ti, tf = torch.from_numpy(image), torch.from_numpy(filt).reshape(c, 1, k, k)
        contenders.append(lambda: torch.nn.functional.conv2d(ti, tf, stride=stride, groups=c))
    except ImportError:
        pass
    t = time_alternating(contenders, reps, threads)
    return DepthwiseBenchResult(n, c, oh, ow, k, stride, dtype, threads, form, t[0], t[1],
                                t[2] if len(t) > 2 else None)


def report(results: list[DepthwiseBenchResult]) -> str:
    first = results[0]
    try:
        torch_note = torch_description()
    except ImportError:
        torch_note = "not installed (optional): no torch column"
    lines = [f"depthwise convolution NCHW, {first.k}x{first.k}, {first.dtype}, batch {first.n}: "
             f"linalg.depthwise_conv_2d_nchw_chw against numpy's sum over the taps and "
             f"torch conv2d(groups=C), medians of {first.polyopt.reps} alternating runs, "
             f"{_threads_note(first.threads)}", HEADER]
    lines += [r.row() for r in results]
    lines.append(f"  torch: {torch_note}")
    return "\n".join(lines)
