"""``polyopt bench conv2d --dtype bf16 [--epilogue bias,relu]`` (and ``--epilogue`` in f32): a
convolution followed by its bias and ReLU, the ResNet pattern, timed three ways in one run
under the harness rules of :mod:`polyopt.bench`: polyopt with the epilogue nest right after
``linalg.conv_2d_nhwc_hwcf`` (fused into the register tile where the pipeline fuses it),
polyopt with the same nest in a function it calls (never fused), and torch's ``conv2d`` with
its bias, then ``relu``, in channels_last (torch's fastest layout here); polyopt and torch
on the same number of threads (``--threads``).  In f32 the FMA loop of
:mod:`polyopt.codegen.peak` runs among them, so that "of peak" is against the peak measured
under the same load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .bench import ConvShape, Timing, peak_contender, time_alternating, torch_description

EPILOGUES = ("bias", "relu")


def conv_epilogue_source(s: ConvShape, dtype: str, epilogue: tuple, fused: bool) -> str:
    """``@conv(%I, %K, %O, %bias)``: the convolution into an f32 output filled with zeros
    (``linalg.fill``, then ``linalg.conv_2d_nhwc_hwcf``), then the epilogue nest over the
    output (inline with ``fused``, else in ``@epilogue``, called)."""
    oh, ow = s.out_hw
    ti = f"memref<{s.n}x{s.h}x{s.w}x{s.c}x{dtype}>"
    tk = f"memref<{s.kh}x{s.kw}x{s.c}x{s.f}x{dtype}>"
    to = f"memref<{s.n}x{oh}x{ow}x{s.f}xf32>"
    tb = f"memref<{s.f}xf32>"
    body = ["%x = affine.load %O[%a, %b, %c, %d] : " + to]
    value = "%x"
    if "bias" in epilogue:
        body += [f"%y = affine.load %bias[%d] : {tb}", "%s = arith.addf %x, %y : f32"]
        value = "%s"
    if "relu" in epilogue:
        body += ["%zero = arith.constant 0.0 : f32", f"%r = arith.maximumf {value}, %zero : f32"]
        value = "%r"
    body.append(f"affine.store {value}, %O[%a, %b, %c, %d] : {to}")
    nest = (f"  affine.for %a = 0 to {s.n} {{\n  affine.for %b = 0 to {oh} {{\n"
            f"  affine.for %c = 0 to {ow} {{\n  affine.for %d = 0 to {s.f} {{\n"
            + "".join(f"    {line}\n" for line in body) + "  }\n  }\n  }\n  }\n")
    # the output written, not accumulated into, as torch's conv2d writes it (and as a
    # model's IR has it: the zero fill of the convolution's init)
    conv = (f"  %fill = arith.constant 0.0 : f32\n"
            f"  linalg.fill ins(%fill : f32) outs(%O : {to})\n"
            f"  linalg.conv_2d_nhwc_hwcf {{dilations = dense<{s.dilation}> : tensor<2xi64>, "
            f"strides = dense<{s.stride}> : tensor<2xi64>}} ins(%I, %K : {ti}, {tk}) "
            f"outs(%O : {to})\n")
    args = f"%I: {ti}, %K: {tk}, %O: {to}, %bias: {tb}"
    if fused:
        return f"func.func @conv({args}) {{\n{conv}{nest}  return\n}}\n"
    return (f"func.func private @epilogue(%O: {to}, %bias: {tb}) {{\n{nest}  return\n}}\n"
            f"func.func @conv({args}) {{\n{conv}"
            f"  func.call @epilogue(%O, %bias) : ({to}, {tb}) -> ()\n  return\n}}\n")


@dataclass
class ConvEpilogueResult:
    shape: ConvShape
    dtype: str
    epilogue: tuple
    fused_remark: bool
    fused: Timing
    unfused: Timing
    torch: Optional[Timing]
    torch_note: str
    threads: int = 1
    #: the FMA loop's GFLOPS timed among the contenders (f32 only: bf16 runs on other units)
    peak_gflops: Optional[float] = None

    def gflops(self, t: Timing) -> float:
        oh, ow = self.shape.out_hw
        s = self.shape
        return 2.0 * s.n * oh * ow * s.f * s.kh * s.kw * s.c / t.median / 1e9

    def report(self) -> str:
        ep = "+".join(self.epilogue) or "nothing"
        def of_peak(t: Timing) -> str:
            return f"  {100 * self.gflops(t) / self.peak_gflops:6.1f}%" if self.peak_gflops \
                else ""
        peak = (f"; FMA peak {self.peak_gflops:.1f} GFLOPS (its loop timed among them)"
                if self.peak_gflops else "")
        lines = [f"conv2d {self.shape.describe()} {self.dtype} (f32 output) + {ep}, medians of "
                 f"{self.fused.reps} alternating runs, "
                 + ("one thread" if self.threads == 1 else f"{self.threads} threads") + peak,
                 f"  {'':<40}  {'GFLOPS':>8}  {'fused is':>9}"
                 + (f"  {'of peak':>7}" if self.peak_gflops else ""),
                 f"  {'polyopt, epilogue after the conv':<40}  {self.gflops(self.fused):8.1f}  "
                 f"{'':>9}{of_peak(self.fused)}  "
                 f"({'fused' if self.fused_remark else 'not fused'})"]
        peers = [("polyopt, epilogue in a called function", self.unfused)]
        if self.torch is not None:
            peers.append((f"torch conv2d(bias) + relu, {self.dtype}", self.torch))
        for label, t in peers:
            lines.append(f"  {label:<40}  {self.gflops(t):8.1f}  "
                         f"{t.median / self.fused.median:8.3f}x{of_peak(t)}")
        lines.append(f"  torch: {self.torch_note}")
        return "\n".join(lines)


def bench_conv_epilogue(s: ConvShape, dtype: str, epilogue: tuple, *, reps: int = 5,
                        seed: int = 0, threads: int = 1) -> ConvEpilogueResult:
    import numpy as np

    import polyopt
    if dtype not in ("f32", "bf16"):
        raise ValueError(f"--epilogue takes --dtype f32 or bf16, got {dtype}")
    bad = [e for e in epilogue if e not in EPILOGUES]
    if bad:
        raise ValueError(f"unknown epilogue {bad[0]!r}; known: {', '.join(EPILOGUES)}")
    oh, ow = s.out_hw
    if min(oh, ow) < 1:
        raise ValueError(f"the (dilated) window is larger than the input: {s.describe()}")
    rng = np.random.default_rng(seed)
    if dtype == "bf16":
        import ml_dtypes
        t = ml_dtypes.bfloat16
    else:
        t = np.float32
    i = rng.uniform(-1, 1, (s.n, s.h, s.w, s.c)).astype(t)
    k = rng.uniform(-1, 1, (s.kh, s.kw, s.c, s.f)).astype(t)
    bias = rng.uniform(-1, 1, s.f).astype(np.float32)
    o = np.zeros((s.n, oh, ow, s.f), np.float32)
    fns, remarks = [], []
    for fused in (True, False):
        fns.append(polyopt.compile(conv_epilogue_source(s, dtype, epilogue, fused),
                                   threads=threads,
                                   remark=lambda loc, m: remarks.append(m), hopt=True,
                                   copy=True, unroll=True, scalrep=True, vect=True)["conv"])
    i64, k64 = i.astype(np.float64), k.astype(np.float64)
    want = np.zeros(o.shape)
    for kh in range(s.kh):
        for kw in range(s.kw):
            hs, ws = kh * s.dilation, kw * s.dilation
            window = i64[:, hs:hs + s.stride * (oh - 1) + 1:s.stride,
                         ws:ws + s.stride * (ow - 1) + 1:s.stride, :]
            want += np.einsum("nhwc,cf->nhwf", window, k64[kh, kw])
    if "bias" in epilogue:
        want += bias
    if "relu" in epilogue:
        want = np.maximum(want, 0)
    tol = 2e-4 * s.kh * s.kw * s.c
    for fn in fns:
        o[...] = 0
        fn(i, k, o, bias)
        if not np.max(np.abs(o - want)) <= tol:
            raise AssertionError("polyopt's conv + epilogue differs from numpy's; not timing it")
    contenders = [lambda: fns[0](i, k, o, bias), lambda: fns[1](i, k, o, bias)]
    note = "not installed (optional): no torch row"
    try:
        import torch
        torch.set_num_threads(threads)
        tt = torch.bfloat16 if dtype == "bf16" else torch.float32
        ti = torch.from_numpy(i.astype(np.float32).transpose(0, 3, 1, 2).copy()).to(tt) \
            .contiguous(memory_format=torch.channels_last)
        tk = torch.from_numpy(k.astype(np.float32).transpose(3, 2, 0, 1).copy()).to(tt) \
            .contiguous(memory_format=torch.channels_last)
        tbias = torch.from_numpy(bias).to(tt) if "bias" in epilogue else None

        def torch_run():
            with torch.no_grad():
                y = torch.nn.functional.conv2d(ti, tk, tbias, stride=s.stride,
                                               dilation=s.dilation)
                return torch.relu(y) if "relu" in epilogue else y
        contenders.append(torch_run)
        note = torch_description() + ", input and weights in channels_last"
    except ImportError:
        pass
    peers = len(contenders)
    peak = peak_contender(dtype, threads) if dtype == "f32" else None
    ts = time_alternating(contenders + ([peak[0]] if peak else []), reps, threads)
    return ConvEpilogueResult(s, dtype, tuple(epilogue),
                              any("fused into" in r for r in remarks), ts[0], ts[1],
                              ts[2] if peers > 2 else None, note, threads,
                              peak[1] / ts[-1].median / 1e9 if peak else None)
