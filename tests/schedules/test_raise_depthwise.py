"""Depthwise convolutions written as affine loop nests (NCHW, PyTorch's; NHWC) are raised to
their named op, whose vector template ``hopt-expand`` builds and into which the bias + ReLU6
nest after them is fused: numpy's answer in any loop order, with strides, dilations, f32 and
f64; nests that are not one stay nests with a remark naming why, and give the same answer."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
LOOPS = ("n", "c", "oh", "ow", "kh", "kw")


def nest(layout, n, c, oh, ow, k, stride=(1, 1), dilation=(1, 1), t="f32", order=LOOPS,
         swap=False, epilogue=False, init=False):
    ih = (oh - 1) * stride[0] + (k - 1) * dilation[0] + 1
    iw = (ow - 1) * stride[1] + (k - 1) * dilation[1] + 1
    h = f"%oh * {stride[0]} + %kh * {dilation[0]}"
    w = f"%ow * {stride[1]} + %kw * {dilation[1]}"
    if layout == "nchw":
        si, sk, so = (n, c, ih, iw), (c, k, k), (n, c, oh, ow)
        i_sub, k_sub, o_sub = f"%n, %c, {h}, {w}", "%c, %kh, %kw", "%n, %c, %oh, %ow"
    else:
        si, sk, so = (n, ih, iw, c), (k, k, c), (n, oh, ow, c)
        i_sub, k_sub, o_sub = f"%n, {h}, {w}, %c", "%kh, %kw, %c", "%n, %oh, %ow, %c"
    ty = {name: f"memref<{'x'.join(map(str, s))}x{t}>"
          for name, s in (("I", si), ("K", sk), ("O", so))}
    extent = dict(zip(LOOPS, (n, c, oh, ow, k, k)))
    loops = "".join(f"  affine.for %{v} = 0 to {extent[v]} {{\n" for v in order)
    factors = ["%x", "%f"][::-1] if swap else ["%x", "%f"]
    body = [f"%x = affine.load %I[{i_sub}] : {ty['I']}",
            f"%f = affine.load %K[{k_sub}] : {ty['K']}",
            f"%o = affine.load %O[{o_sub}] : {ty['O']}",
            f"%p = arith.mulf {factors[0]}, {factors[1]} : {t}",
            f"%s = arith.addf %o, %p : {t}",
            f"affine.store %s, %O[{o_sub}] : {ty['O']}"]
    text = loops + "".join(f"    {line}\n" for line in body) + "  }" * 6 + "\n"
    if init:
        text = loops.replace("affine.for %kh", f"%z = arith.constant 0.0 : {t}\n  affine.store "
                             f"%z, %O[{o_sub}] : {ty['O']}\n  affine.for %kh") + \
            "".join(f"    {line}\n" for line in body) + "  }" * 6 + "\n"
    after = ""
    if epilogue:
        channel = "%b" if layout == "nchw" else "%d"
        after = (f"  %zero = arith.constant 0.0 : {t}\n  %six = arith.constant 6.0 : {t}\n"
                 + "".join(f"  affine.for %{v} = 0 to {e} {{\n"
                           for v, e in zip("abcd", so))
                 + f"    %e = affine.load %O[%a, %b, %c, %d] : {ty['O']}\n"
                 + f"    %y = affine.load %B[{channel}] : memref<{c}x{t}>\n"
                 + f"    %u = arith.addf %e, %y : {t}\n"
                 + f"    %v = arith.maximumf %u, %zero : {t}\n"
                 + f"    %q = arith.minimumf %v, %six : {t}\n"
                 + f"    affine.store %q, %O[%a, %b, %c, %d] : {ty['O']}\n" + "  }" * 4 + "\n")
    src = (f"func.func @dw(%I: {ty['I']}, %K: {ty['K']}, %O: {ty['O']}, %B: memref<{c}x{t}>) "
           f"{{\n{text}{after}  return\n}}\n")
    return src, (si, sk, so)


def reference(layout, i, f, o, stride, dilation):
    """O + the convolution in f64, and the sum of its terms' magnitudes."""
    i, f, o = (a.astype(np.float64) for a in (i, f, o))
    if layout == "nhwc":
        i, o = i.transpose(0, 3, 1, 2), o.transpose(0, 3, 1, 2)
        f = f.transpose(2, 0, 1)
    k = f.shape[1]
    oh, ow = o.shape[2:]
    exact, size = o.copy(), np.abs(o)
    for a in range(k):
        for b in range(k):
            rows = slice(a * dilation[0], a * dilation[0] + (oh - 1) * stride[0] + 1, stride[0])
            cols = slice(b * dilation[1], b * dilation[1] + (ow - 1) * stride[1] + 1, stride[1])
            term = i[:, :, rows, cols] * f[None, :, a, b, None, None]
            exact += term
            size += np.abs(term)
    if layout == "nhwc":
        exact, size = exact.transpose(0, 2, 3, 1), size.transpose(0, 2, 3, 1)
    return exact, size


def run(src, shapes, t, threads=1, seed=0):
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["dw"]
    dtype = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(seed)
    i, f, o = (rng.standard_normal(s).astype(dtype) for s in shapes)
    return fn, remarks, (i, f, o)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("order, swap, stride, dilation, t", [
    (LOOPS, False, (1, 1), (1, 1), "f32"),
    (("n", "oh", "c", "kh", "ow", "kw"), True, (2, 2), (1, 1), "f32"),
    (("kh", "kw", "n", "c", "oh", "ow"), False, (1, 2), (2, 1), "f64"),
])
def test_raised_in_any_loop_order_and_run_as_the_template(layout, order, swap, stride,
                                                          dilation, t):
    src, shapes = nest(layout, 2, 19, 9, 21, 3, stride, dilation, t, order, swap)
    fn, remarks, (i, f, o) = run(src, shapes, t)
    assert any(r.startswith("raised to a convolution") and f"({layout.upper()} depthwise, "
               f"strides {stride[0]}x{stride[1]}, dilations {dilation[0]}x{dilation[1]}" in r
               for r in remarks), remarks
    form = "as vector rows" if layout == "nchw" else "filter vectors held"
    assert any(form in r for r in remarks), remarks
    exact, size = reference(layout, i, f, o, stride, dilation)
    fn(i, f, o, np.zeros(19, o.dtype))
    bound = 10 * float(np.finfo(o.dtype).eps) / 2 * size
    assert (np.abs(o - exact) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_the_bias_and_relu6_nest_after_it_is_fused(layout):
    src, shapes = nest(layout, 1, 24, 14, 14, 3, epilogue=True)
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, m: remarks.append(m), **ALL)["dw"]
    assert any(r.startswith("fused into linalg.depthwise_conv_2d") for r in remarks), remarks
    rng = np.random.default_rng(1)
    i, f, o = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    b = (3 * rng.standard_normal(24)).astype(np.float32)
    exact, size = reference(layout, i, f, o, (1, 1), (1, 1))
    bb = b[None, :, None, None] if layout == "nchw" else b
    want = np.clip(exact + bb, 0, 6)
    fn(i, f, o, b)
    bound = 11 * float(np.finfo(np.float32).eps) / 2 * (size + np.abs(bb))
    assert (np.abs(o - want) <= bound).all()
    from polyopt.affine.printer import print_module
    from polyopt.pipeline import PipelineOptions, load, run_passes
    text = print_module(run_passes(load(src), PipelineOptions(**ALL)))
    assert mlir_opt(text) == text


@pytest.mark.parametrize("change, why", [
    ("init", "the nest also initializes the output"),
    ("stride3", "stride 3 along the width: the NCHW vector rows take 1 and 2"),
    ("i32", "element type i32"),
])
def test_near_misses_stay_nests_with_a_remark(change, why):
    t = "i32" if change == "i32" else "f32"
    stride = (1, 3) if change == "stride3" else (1, 1)
    src, shapes = nest("nchw", 1, 5, 4, 6, 3, stride, t=t, init=change == "init")
    if t == "i32":
        src = src.replace("arith.mulf", "arith.muli").replace("arith.addf", "arith.addi")
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, m: remarks.append(m), **ALL)["dw"]
    assert any(r.startswith("not raised to a convolution") and why in r for r in remarks), \
        remarks
    rng = np.random.default_rng(2)
    dtype = np.int32 if t == "i32" else np.float32
    i, f, o = (rng.integers(-5, 5, s).astype(dtype) for s in shapes)
    exact, _ = reference("nchw", i, f, np.zeros_like(o) if change == "init" else o, stride,
                         (1, 1))
    fn(i, f, o, np.zeros(5, dtype))
    assert np.array_equal(o, exact.astype(dtype))
