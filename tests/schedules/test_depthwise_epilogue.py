"""The elementwise nest after a depthwise convolution (MobileNet's bias and ReLU6, a residual
and a scale, a cast into another array), as an affine nest or a ``linalg.generic``, fused into
both layouts' vector templates before their stores: numpy's result within the rounding bound
on planes and channel counts with masked tails, strides, several images, two threads; the IR
is upstream's and no vector leaves its memref; nests that may not be fused stay nests, with
the same answer."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.printer import print_module
from polyopt.passes import run_pipeline
from polyopt.pipeline import PipelineOptions, load, run_passes
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
FUSED = "fused into linalg.depthwise_conv_2d_{layout}"
OPS = {"nchw": "depthwise_conv_2d_nchw_chw", "nhwc": "depthwise_conv_2d_nhwc_hwc"}


def shapes(layout, n, c, oh, ow, k, stride):
    ih, iw = (oh - 1) * stride + k, (ow - 1) * stride + k
    if layout == "nchw":
        return (n, c, ih, iw), (c, k, k), (n, c, oh, ow), 1
    return (n, ih, iw, c), (k, k, c), (n, oh, ow, c), 3


def memref(shape, t="f32"):
    return f"memref<{'x'.join(map(str, shape))}x{t}>"


def source(layout, n, c, oh, ow, k, stride, epilogue, extra_args="", t="f32"):
    """``@dw(%I, %F, %O, %B{extra_args})``: the convolution, then ``epilogue`` (text, or a
    function of the output's shape giving it, in which ``{to}``, ``{tb}``, ``{t}`` stand for
    the output's, the bias's and the element type, ``{ch}`` for the channel's induction
    variable in a nest over %a, %b, %c, %d, ``{chmap}`` for the channel's dimension)."""
    si, sf, so, channel = shapes(layout, n, c, oh, ow, k, stride)
    ti, tf, to, tb = memref(si, t), memref(sf, t), memref(so, t), memref((c,), t)
    if callable(epilogue):
        epilogue = epilogue(so)
    body = epilogue
    for key, value in (("{to}", to), ("{tb}", tb), ("{t}", t),
                       ("{ch}", ["%a", "%b", "%c", "%d"][channel]),
                       ("{chmap}", "(d1)" if channel == 1 else "(d3)")):
        body = body.replace(key, value)
    return (f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}, %B: {tb}{extra_args}) {{\n"
            f"  linalg.{OPS[layout]} {{strides = dense<{stride}> : tensor<2xi64>}} "
            f"ins(%I, %F : {ti}, {tf}) outs(%O : {to})\n{body}  return\n}}\n")


def nest(so, lines):
    loops = "".join(f"  affine.for {iv} = 0 to {e} {{\n"
                    for iv, e in zip(("%a", "%b", "%c", "%d"), so))
    return loops + "".join(f"    {line}\n" for line in lines) + "  }" * 4 + "\n"


def BIAS_RELU6_NEST(so):
    return ("  %zero = arith.constant 0.0 : {t}\n  %six = arith.constant 6.0 : {t}\n" +
            nest(so, ["%x = affine.load %O[%a, %b, %c, %d] : {to}",
                      "%y = affine.load %B[{ch}] : {tb}",
                      "%s = arith.addf %x, %y : {t}",
                      "%r = arith.maximumf %s, %zero : {t}",
                      "%q = arith.minimumf %r, %six : {t}",
                      "affine.store %q, %O[%a, %b, %c, %d] : {to}"]))


BIAS_RELU6_GENERIC = """\
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> {chmap}>,
      affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%B : {tb}) outs(%O : {to}) {
  ^bb0(%y: {t}, %x: {t}):
    %zero = arith.constant 0.0 : {t}
    %six = arith.constant 6.0 : {t}
    %s = arith.addf %x, %y : {t}
    %r = arith.maximumf %s, %zero : {t}
    %q = arith.minimumf %r, %six : {t}
    linalg.yield %q : {t}
  }
"""


def conv_reference(layout, i, f, o, stride):
    """O + the convolution in f64, and the sum of the magnitudes of its terms."""
    k = f.shape[1] if layout == "nchw" else f.shape[0]
    oh, ow = (o.shape[2], o.shape[3]) if layout == "nchw" else (o.shape[1], o.shape[2])
    exact, size = o.astype(np.float64), np.abs(o.astype(np.float64))
    for a in range(k):
        for b in range(k):
            rows = slice(a, a + (oh - 1) * stride + 1, stride)
            cols = slice(b, b + (ow - 1) * stride + 1, stride)
            if layout == "nchw":
                term = i[:, :, rows, cols].astype(np.float64) * \
                    f[None, :, a, b, None, None].astype(np.float64)
            else:
                term = i[:, rows, cols, :].astype(np.float64) * f[a, b].astype(np.float64)
            exact += term
            size += np.abs(term)
    return exact, size


def compile_and_arrays(src, layout, n, c, oh, ow, k, stride, dtype, threads=1):
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["dw"]
    si, sf, so, channel = shapes(layout, n, c, oh, ow, k, stride)
    rng = np.random.default_rng(n * 1000 + c * 10 + oh + ow)
    i, f, o = (rng.standard_normal(s).astype(dtype) for s in (si, sf, so))
    bias = (3 * rng.standard_normal(c)).astype(dtype)
    bias_b = bias[:, None, None] if layout == "nchw" else bias
    return fn, remarks, (i, f, o, bias, bias_b)


def assert_in_bounds(src):
    run_pipeline(run_passes(load(src), PipelineOptions(**ALL)), "memref-bound-check")


CASES = [
    # (n, c, oh, ow, k, stride)
    (1, 3, 7, 7, 3, 1),         # MobileNet's last planes: one masked vector per row
    (2, 17, 13, 19, 3, 2),      # stride 2, masked channels and width tails, two images
    (1, 32, 14, 16, 3, 1),      # whole vectors in both layouts
    (1, 5, 6, 37, 5, 1),        # 5x5 filters, a row past the blocks of rows
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("form", ["nest", "generic"])
@pytest.mark.parametrize("n, c, oh, ow, k, stride", CASES)
def test_bias_and_relu6_fused_match_numpy(layout, form, n, c, oh, ow, k, stride):
    src = source(layout, n, c, oh, ow, k, stride,
                 BIAS_RELU6_NEST if form == "nest" else BIAS_RELU6_GENERIC)
    fn, remarks, (i, f, o, bias, bias_b) = compile_and_arrays(
        src, layout, n, c, oh, ow, k, stride, np.float32)
    assert any(FUSED.format(layout=layout) in r and "addf, maximumf, minimumf" in r
               for r in remarks), remarks
    assert_in_bounds(src)
    exact, size = conv_reference(layout, i, f, o, stride)
    want = np.clip(exact + bias_b, 0, 6)
    # the sum's (taps + 1) roundings, the bias's one; the clamp is exact and 1-Lipschitz
    bound = (k * k + 2) * float(np.finfo(np.float32).eps) / 2 * (size + np.abs(bias_b))
    fn(i, f, o, bias)
    assert (np.abs(o - want) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_f64_on_two_threads(layout):
    n, c, oh, ow, k, stride = 2, 64, 28, 28, 3, 1
    src = source(layout, n, c, oh, ow, k, stride, BIAS_RELU6_NEST, t="f64")
    fn, remarks, (i, f, o, bias, bias_b) = compile_and_arrays(
        src, layout, n, c, oh, ow, k, stride, np.float64, threads=2)
    assert any("on 2 threads" in r for r in remarks), remarks
    assert any(FUSED.format(layout=layout) in r for r in remarks), remarks
    exact, size = conv_reference(layout, i, f, o, stride)
    bound = (k * k + 2) * float(np.finfo(np.float64).eps) / 2 * (size + np.abs(bias_b))
    fn(i, f, o, bias)
    assert (np.abs(o - np.clip(exact + bias_b, 0, 6)) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_a_residual_and_a_scale_from_outside(layout):
    n, c, oh, ow, k, stride = 1, 19, 9, 21, 3, 1
    so = shapes(layout, n, c, oh, ow, k, stride)[2]
    epilogue = nest(so, ["%x = affine.load %O[%a, %b, %c, %d] : {to}",
                         "%y = affine.load %R[%a, %b, %c, %d] : {to}",
                         "%s = arith.addf %x, %y : {t}",
                         "%m = arith.mulf %s, %alpha : {t}",
                         "affine.store %m, %O[%a, %b, %c, %d] : {to}"])
    src = source(layout, n, c, oh, ow, k, stride, epilogue,
                 extra_args=f", %R: {memref(so)}, %alpha: f32")
    fn, remarks, (i, f, o, bias, _) = compile_and_arrays(
        src, layout, n, c, oh, ow, k, stride, np.float32)
    assert any(FUSED.format(layout=layout) in r and "addf, mulf" in r for r in remarks)
    residual = np.random.default_rng(5).standard_normal(so).astype(np.float32)
    exact, size = conv_reference(layout, i, f, o, stride)
    want = (exact + residual) * 0.5
    bound = (k * k + 3) * float(np.finfo(np.float32).eps) / 2 * (size + np.abs(residual))
    fn(i, f, o, bias, residual, np.float32(0.5))
    assert (np.abs(o - want) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_a_cast_into_another_array_keeps_the_output_too(layout):
    """``linalg.generic ins(%O, %B) outs(%D)``: D gets the epilogue's f64 values, O the
    convolution's."""
    n, c, oh, ow, k, stride = 1, 21, 6, 11, 3, 1
    so = shapes(layout, n, c, oh, ow, k, stride)[2]
    chmap = "(d1)" if layout == "nchw" else "(d3)"
    td = memref(so, "f64")
    epilogue = f"""\
  linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
      affine_map<(d0, d1, d2, d3) -> {chmap}>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%O, %B : {{to}}, {{tb}}) outs(%D : {td}) {{
  ^bb0(%x: f32, %y: f32, %unused: f64):
    %s = arith.addf %x, %y : f32
    %e = arith.extf %s : f32 to f64
    linalg.yield %e : f64
  }}
"""
    src = source(layout, n, c, oh, ow, k, stride, epilogue, extra_args=f", %D: {td}")
    fn, remarks, (i, f, o, bias, bias_b) = compile_and_arrays(
        src, layout, n, c, oh, ow, k, stride, np.float32)
    assert any(FUSED.format(layout=layout) in r and "addf, extf" in r for r in remarks)
    assert_in_bounds(src)
    d = np.zeros(so, np.float64)
    exact, size = conv_reference(layout, i, f, o, stride)
    bound = (k * k + 2) * float(np.finfo(np.float32).eps) / 2 * (size + np.abs(bias_b))
    fn(i, f, o, bias, d)
    assert (np.abs(o - exact) <= bound).all()
    assert (np.abs(d - (exact + bias_b)) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("what", ["stores twice", "reads an array transposed"])
def test_nests_that_may_not_be_fused_stay_and_give_the_same_answer(layout, what):
    n, c, oh, ow, k, stride = 1, 6, 5, 6, 3, 1
    so = shapes(layout, n, c, oh, ow, k, stride)[2]
    rs = so if what == "stores twice" else (so[0], so[1], so[3], so[2])
    read = "%y = affine.load %B[{ch}] : {tb}" if what == "stores twice" else \
        f"%y = affine.load %R[%a, %b, %d, %c] : {memref(rs)}"
    body = ["%x = affine.load %O[%a, %b, %c, %d] : {to}", read, "%s = arith.addf %x, %y : {t}",
            "affine.store %s, %O[%a, %b, %c, %d] : {to}"]
    if what == "stores twice":
        body.append(f"affine.store %s, %R[%a, %b, %c, %d] : {memref(rs)}")
    src = source(layout, n, c, oh, ow, k, stride, nest(so, body),
                 extra_args=f", %R: {memref(rs)}")
    fn, remarks, (i, f, o, bias, bias_b) = compile_and_arrays(
        src, layout, n, c, oh, ow, k, stride, np.float32)
    assert not any("fused into" in r for r in remarks), remarks
    r = np.random.default_rng(7).standard_normal(rs).astype(np.float32)
    added = bias_b if what == "stores twice" else r.transpose(0, 1, 3, 2)
    exact, size = conv_reference(layout, i, f, o, stride)
    bound = (k * k + 2) * float(np.finfo(np.float32).eps) / 2 * (size + np.abs(added))
    want = exact + added
    fn(i, f, o, bias, r)
    assert (np.abs(o - want) <= bound).all()
    if what == "stores twice":
        assert (np.abs(r - want) <= bound).all()


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_the_fused_ir_is_upstreams(layout):
    src = source(layout, 1, 20, 9, 19, 3, 1, BIAS_RELU6_NEST)
    out = print_module(run_passes(load(src), PipelineOptions(**ALL)))
    assert "arith.minimumf" in out and out.count("affine.for") < 12
    assert mlir_opt(out) == out
