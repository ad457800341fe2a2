"""``polyopt bench depthwise``: ``linalg.depthwise_conv_2d_nchw_chw`` (``--layout nchw``, the
default) or ``linalg.depthwise_conv_2d_nhwc_hwc`` (``nhwc``), all passes, timed against
``torch.nn.functional.conv2d(groups=C)`` on the same arrays (NCHW, or channels_last views of
the NHWC ones) and numpy's sum over the taps in the same run, under the harness rules of
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


#: The epilogues ``--epilogue`` combines, in this order: a per-channel bias (a folded batch
#: norm), then ReLU or ReLU6 (MobileNet's activation).
EPILOGUES = ("bias", "relu", "relu6")


def parse_epilogue(text: str) -> tuple:
    """``"bias,relu6"`` -> ``("bias", "relu6")``; ValueError for unknown or repeated names."""
    names = tuple(e.strip() for e in text.split(",") if e.strip())
    if not names:
        raise ValueError("--epilogue: no op given (bias, relu, relu6, e.g. bias,relu6)")
    unknown = [e for e in names if e not in EPILOGUES]
    if unknown:
        raise ValueError(f"--epilogue: unknown {unknown[0]!r} (bias, relu or relu6)")
    if len(set(names)) != len(names) or {"relu", "relu6"} <= set(names):
        raise ValueError(f"--epilogue: each op at most once and one activation, got {text!r}")
    return names


def _epilogue_nest(shape: tuple, to: str, tb: str, dtype: str, channel: int,
                   epilogue: tuple) -> str:
    """The affine nest over the output applying ``epilogue`` in place (the channel is
    dimension ``channel``)."""
    ivs = ["%a", "%b", "%c", "%d"]
    body = [f"%x = affine.load %O[{', '.join(ivs)}] : {to}"]
    value = "%x"
    if "bias" in epilogue:
        body += [f"%y = affine.load %bias[{ivs[channel]}] : {tb}",
                 f"%s = arith.addf {value}, %y : {dtype}"]
        value = "%s"
    if "relu" in epilogue or "relu6" in epilogue:
        body += [f"%r = arith.maximumf {value}, %zero : {dtype}"]
        value = "%r"
    if "relu6" in epilogue:
        body += [f"%q = arith.minimumf {value}, %six : {dtype}"]
        value = "%q"
    body.append(f"affine.store {value}, %O[{', '.join(ivs)}] : {to}")
    loops = "".join(f"  affine.for {iv} = 0 to {e} {{\n" for iv, e in zip(ivs, shape))
    return (f"  %zero = arith.constant 0.0 : {dtype}\n  %six = arith.constant 6.0 : {dtype}\n"
            + loops
            + "".join(f"    {line}\n" for line in body) + "  }" * 4 + "\n")


def depthwise_source(n: int, c: int, oh: int, ow: int, k: int, stride: int, dtype: str,
                     layout: str = "nchw", epilogue: tuple = (), fused: bool = True) -> str:
    """``@dw(%I, %F, %O)``, with an ``epilogue`` ``@dw(%I, %F, %O, %bias)``: the
    convolution, then the epilogue's nest over the output (inline with ``fused``, else in a
    function it calls, which the pipeline never fuses)."""
    ih, iw = (oh - 1) * stride + k, (ow - 1) * stride + k
    if layout == "nchw":
        op = "linalg.depthwise_conv_2d_nchw_chw"
        ti, tf, to = (f"memref<{n}x{c}x{ih}x{iw}x{dtype}>", f"memref<{c}x{k}x{k}x{dtype}>",
                      f"memref<{n}x{c}x{oh}x{ow}x{dtype}>")
        shape, channel = (n, c, oh, ow), 1
    else:
        op = "linalg.depthwise_conv_2d_nhwc_hwc"
        ti, tf, to = (f"memref<{n}x{ih}x{iw}x{c}x{dtype}>", f"memref<{k}x{k}x{c}x{dtype}>",
                      f"memref<{n}x{oh}x{ow}x{c}x{dtype}>")
        shape, channel = (n, oh, ow, c), 3
    conv = (f"  {op} {{strides = dense<{stride}> : tensor<2xi64>}} ins(%I, %F : {ti}, {tf}) "
            f"outs(%O : {to})\n")
    if not epilogue:
        return f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}) {{\n{conv}  return\n}}\n"
    tb = f"memref<{c}x{dtype}>"
    nest = _epilogue_nest(shape, to, tb, dtype, channel, epilogue)
    args = f"%I: {ti}, %F: {tf}, %O: {to}, %bias: {tb}"
    if fused:
        return f"func.func @dw({args}) {{\n{conv}{nest}  return\n}}\n"
    return (f"func.func private @epilogue(%O: {to}, %bias: {tb}) {{\n{nest}  return\n}}\n"
            f"func.func @dw({args}) {{\n{conv}"
            f"  func.call @epilogue(%O, %bias) : ({to}, {tb}) -> ()\n  return\n}}\n")


@dataclass
class DepthwiseBenchResult:
    n: int
    c: int
    oh: int
    ow: int
    k: int
    stride: int
    dtype: str
    layout: str
    threads: int
    form: str
    polyopt: Timing
    numpy: Timing
    torch: Optional[Timing]
    epilogue: tuple = ()
    unfused: Optional[Timing] = None      # the epilogue in a called function

    def rate(self, t: Timing) -> float:
        return 2.0 * self.n * self.c * self.oh * self.ow * self.k * self.k / t.median / 1e9

    def row(self) -> str:
        peers = f"{self.numpy.median / self.polyopt.median:7.2f}x"
        peers += (f"  {self.torch.median / self.polyopt.median:7.2f}x" if self.torch else
                  "        -")
        if self.epilogue:
            peers = f"{self.unfused.median / self.polyopt.median:9.2f}x  " + peers
        return (f"  {self.c:>5} x {self.oh:>3}x{self.ow:<3} /{self.stride}  "
                f"{self.polyopt.median * 1e6:9.1f}  {self.rate(self.polyopt):7.1f}  {peers}  "
                f"{self.form}")


HEADER = (f"  {'C x OHxOW /s':<18}  {'us':>9}  {'GFLOPS':>7}  {'vs numpy':>8}  "
          f"{'vs torch':>8}  polyopt's form")
HEADER_EPILOGUE = (f"  {'C x OHxOW /s':<18}  {'us':>9}  {'GFLOPS':>7}  {'vs unfused':>10}  "
                   f"{'vs numpy':>8}  {'vs torch':>8}  polyopt's form")


def bench_depthwise(n: int, c: int, oh: int, ow: int, k: int = 3, stride: int = 1,
                    dtype: str = "f32", layout: str = "nchw", *, reps: int = 7, seed: int = 0,
                    threads: int = 1, epilogue: tuple = ()) -> DepthwiseBenchResult:
    """One layer timed (see the module docstring); with an ``epilogue`` (names of
    :data:`EPILOGUES`), every contender applies it: polyopt with the nest after the op and
    in a called function, numpy after its sum, torch as ``conv2d(bias=...)`` then ``relu`` /
    ``relu6``."""
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
    if layout not in ("nchw", "nhwc"):
        raise ValueError(f"layout must be nchw or nhwc, got {layout!r}")
    ih, iw = (oh - 1) * stride + k, (ow - 1) * stride + k
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((n, c, ih, iw)).astype(np_dtype)     # NCHW
    filt = rng.standard_normal((c, k, k)).astype(np_dtype)
    bias = rng.standard_normal(c).astype(np_dtype)
    out = np.zeros((n, c, oh, ow), np_dtype)
    if layout == "nhwc":        # the same values; polyopt's arrays NHWC, torch's views of them
        image, out = (np.ascontiguousarray(a.transpose(0, 2, 3, 1)) for a in (image, out))
        filt_ours = np.ascontiguousarray(filt.transpose(1, 2, 0))
        as_nchw = (lambda a: a.transpose(0, 3, 1, 2))
        bias_b = bias
    else:
        filt_ours = filt
        as_nchw = (lambda a: a)
        bias_b = bias[:, None, None]
    remarks: list[str] = []

    def build(fused: bool):
        text = depthwise_source(n, c, oh, ow, k, stride, dtype, layout, epilogue, fused)
        return polyopt.compile(text, threads=threads, remark=lambda loc, m: remarks.append(m),
                               hopt=True, copy=True, unroll=True, scalrep=True, vect=True)["dw"]
    fn = build(True)
    forms = {"as vector rows": "vector rows", "filter vectors held": "blocked channels"}
    form = next((v for key, v in forms.items() if any(key in m for m in remarks)), "loop nest")
    if epilogue:
        fused = any("fused into" in m for m in remarks)
        form += f", {'+'.join(epilogue)} {'fused' if fused else 'not fused'}"
    nchw_image = as_nchw(image)
    args = (image, filt_ours) + ((bias,) if epilogue else ())

    def numpy_taps(o):
        """The op's sum over the taps on ``o`` (zeroed), in polyopt's layout, then the
        epilogue."""
        o[...] = 0
        for a in range(k):
            for b in range(k):
                rows = slice(a, a + (oh - 1) * stride + 1, stride)
                cols = slice(b, b + (ow - 1) * stride + 1, stride)
                if layout == "nchw":
                    o += image[:, :, rows, cols] * filt[None, :, a, b, None, None]
                else:
                    o += image[:, rows, cols, :] * filt_ours[a, b]
        if "bias" in epilogue:
            o += bias_b
        if "relu" in epilogue or "relu6" in epilogue:
            np.maximum(o, 0, out=o)
        if "relu6" in epilogue:
            np.minimum(o, 6, out=o)
        return o
    want = numpy_taps(np.zeros_like(out))
    fn(image, filt_ours, out, *args[2:])
    if not np.allclose(out, want, rtol=1e-4, atol=1e-4 * k):
        raise AssertionError("polyopt's depthwise convolution differs from numpy's; not "
                             "timing it")
    scratch = np.zeros_like(out)
    contenders = [lambda: fn(image, filt_ours, out, *args[2:]), lambda: numpy_taps(scratch)]
    if epilogue:
        unfused_fn, out2 = build(False), np.zeros_like(out)
        unfused_fn(image, filt_ours, out2, bias)
        if not np.allclose(out2, want, rtol=1e-4, atol=1e-4 * k):
            raise AssertionError("polyopt's unfused depthwise convolution and epilogue differ "
                                 "from numpy's; not timing it")
        contenders.append(lambda: unfused_fn(image, filt_ours, out2, bias))
    try:
        import torch
        torch.set_num_threads(threads)
        ti = torch.from_numpy(nchw_image) if layout == "nchw" else \
            torch.from_numpy(image).permute(0, 3, 1, 2)
        tf = torch.from_numpy(filt).reshape(c, 1, k, k)
        if layout == "nhwc":
            tf = tf.contiguous(memory_format=torch.channels_last)
        tb = torch.from_numpy(bias) if "bias" in epilogue else None
        act = {"relu": torch.nn.functional.relu, "relu6": torch.nn.functional.relu6}
        activation = next((act[e] for e in epilogue if e in act), None)

        def torch_layer():
            y = torch.nn.functional.conv2d(ti, tf, tb, stride=stride, groups=c)
            return activation(y, inplace=True) if activation else y
        got = torch_layer()
        if not np.allclose(as_nchw(want), got.numpy(), rtol=1e-4, atol=1e-4 * k):
            raise AssertionError("torch's layer differs from numpy's; not timing it")
        contenders.append(torch_layer)
    except ImportError:
        pass
    t = time_alternating(contenders, reps, threads)
    t_torch = t[-1] if len(t) > 2 + bool(epilogue) else None
    return DepthwiseBenchResult(n, c, oh, ow, k, stride, dtype, layout, threads, form, t[0],
                                t[1], t_torch, epilogue, t[2] if epilogue else None)


def report(results: list[DepthwiseBenchResult]) -> str:
    first = results[0]
    try:
        torch_note = torch_description()
    except ImportError:
        torch_note = "not installed (optional): no torch column"
    op = "depthwise_conv_2d_nchw_chw" if first.layout == "nchw" else "depthwise_conv_2d_nhwc_hwc"
    torch_layout = "" if first.layout == "nchw" else " in channels_last"
    then = ""
    if first.epilogue:
        then = (f" then {'+'.join(first.epilogue)} (polyopt: the nest after the op; 'unfused': "
                f"the same nest in a called function)")
    lines = [f"depthwise convolution {first.layout.upper()}, {first.k}x{first.k}, {first.dtype}, "
             f"batch {first.n}{then}: linalg.{op} against numpy's sum over the taps and torch "
             f"conv2d(groups=C){torch_layout}, medians of {first.polyopt.reps} alternating "
             f"runs, {_threads_note(first.threads)}",
             HEADER_EPILOGUE if first.epilogue else HEADER]
    lines += [r.row() for r in results]
    lines.append(f"  torch: {torch_note}")
    return "\n".join(lines)
