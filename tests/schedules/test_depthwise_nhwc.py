"""``linalg.depthwise_conv_2d_nhwc_hwc`` under --hopt --hopt-vect: channels as vectors (masked
past the last whole vector, narrower vectors for few channels), the filter vectors held per
output row and channel group, several output pixels at a time, rows on the threads; numpy's
result and no access past any memref on odd channel counts, strides, dilations, filters with
more taps than registers, several images."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.passes import run_pipeline
from polyopt.pipeline import PipelineOptions, load, run_passes
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
BLOCKED = "linalg.depthwise_conv_2d_nhwc_hwc: channels as vectors of"


def source(n, oh, ow, c, kh, kw, strides=(1, 1), dilations=(1, 1), t="f32"):
    ih = (oh - 1) * strides[0] + (kh - 1) * dilations[0] + 1
    iw = (ow - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    ti, tf, to = (f"memref<{n}x{ih}x{iw}x{c}x{t}>", f"memref<{kh}x{kw}x{c}x{t}>",
                  f"memref<{n}x{oh}x{ow}x{c}x{t}>")
    attrs = (f"{{dilations = dense<[{dilations[0]}, {dilations[1]}]> : tensor<2xi64>, "
             f"strides = dense<[{strides[0]}, {strides[1]}]> : tensor<2xi64>}}")
    return (f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}) {{\n"
            f"  linalg.depthwise_conv_2d_nhwc_hwc {attrs} ins(%I, %F : {ti}, {tf}) "
            f"outs(%O : {to})\n  return\n}}\n"), [(n, ih, iw, c), (kh, kw, c), (n, oh, ow, c)]


def reference(i, f, o, strides, dilations):
    """O + the convolution in f64, and its rounding bound ((taps + 1) u sum of magnitudes)."""
    _, oh, ow, _ = o.shape
    kh, kw, _ = f.shape
    exact, size = o.astype(np.float64), np.abs(o.astype(np.float64))
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dilations[0], a * dilations[0] + (oh - 1) * strides[0] + 1,
                         strides[0])
            cols = slice(b * dilations[1], b * dilations[1] + (ow - 1) * strides[1] + 1,
                         strides[1])
            term = i[:, rows, cols, :].astype(np.float64) * f[a, b].astype(np.float64)
            exact += term
            size += np.abs(term)
    return exact, (kh * kw + 1) * float(np.finfo(o.dtype).eps) / 2 * size


@pytest.mark.parametrize("n, oh, ow, c, kh, kw, strides, dilations", [
    (1, 5, 7, 16, 3, 3, (1, 1), (1, 1)),       # one whole vector of channels
    (2, 4, 19, 20, 3, 3, (1, 1), (1, 1)),      # a vector and 4 masked channels, pixel tails
    (1, 3, 5, 3, 3, 3, (1, 1), (1, 1)),        # fewer channels than 4 lanes
    (1, 6, 9, 37, 3, 3, (2, 3), (2, 1)),       # strides and dilations
    (1, 4, 6, 24, 5, 5, (1, 1), (1, 1)),       # 25 taps: loaded at each use
    (1, 1, 1, 1, 1, 1, (1, 1), (1, 1)),
])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_matches_numpy_within_bounds(n, oh, ow, c, kh, kw, strides, dilations, t):
    src, shapes = source(n, oh, ow, c, kh, kw, strides, dilations, t)
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, m: remarks.append(m), **ALL)["dw"]
    assert any(BLOCKED in r for r in remarks), remarks
    run_pipeline(run_passes(load(src), PipelineOptions(**ALL)), "memref-bound-check")
    dtype = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(c + ow)
    i, f, o = (rng.standard_normal(s).astype(dtype) for s in shapes)
    exact, bound = reference(i, f, o, strides, dilations)
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()


def test_rows_on_two_threads():
    src, shapes = source(1, 28, 28, 48, 3, 3)
    remarks = []
    fn = polyopt.compile(src, threads=2, remark=lambda loc, m: remarks.append(m), **ALL)["dw"]
    assert any("the output rows on 2 threads" in r for r in remarks), remarks
    rng = np.random.default_rng(3)
    i, f, o = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    exact, bound = reference(i, f, o, (1, 1), (1, 1))
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()


def test_the_pipelines_ir_is_upstreams_and_without_hopt_vect_the_nest_stays():
    src, shapes = source(1, 4, 19, 20, 3, 3)
    text = mlir_opt(src)
    from polyopt.affine.printer import print_module
    out = print_module(run_passes(load(text), PipelineOptions(**ALL)))
    assert "vector.maskedload" in out and mlir_opt(out) == out
    remarks = []
    polyopt.compile(src, remark=lambda loc, m: remarks.append(m), hopt=True, copy=True)
    assert not any(BLOCKED in r for r in remarks)
