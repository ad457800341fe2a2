"""``linalg.depthwise_conv_2d_nchw_chw`` under --hopt --hopt-vect: each channel's output plane
as vector rows (several rows sharing their input rows, masked tails, the taps broadcast once
per channel, channels on the threads); numpy's result on planes wider and narrower than a
vector, with dilations, a stride along the height, several images; a stride along the width
keeps the auto-scheduled nest and says so."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
VECTOR_ROWS = "linalg.depthwise_conv_2d_nchw_chw: each channel's {oh}x{ow} output as vector rows"


def source(n, c, oh, ow, kh, kw, strides=(1, 1), dilations=(1, 1), t="f32"):
    ih = (oh - 1) * strides[0] + (kh - 1) * dilations[0] + 1
    iw = (ow - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    ti, tf, to = (f"memref<{n}x{c}x{ih}x{iw}x{t}>", f"memref<{c}x{kh}x{kw}x{t}>",
                  f"memref<{n}x{c}x{oh}x{ow}x{t}>")
    attrs = (f"{{dilations = dense<[{dilations[0]}, {dilations[1]}]> : tensor<2xi64>, "
             f"strides = dense<[{strides[0]}, {strides[1]}]> : tensor<2xi64>}}")
    return (f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}) {{\n"
            f"  linalg.depthwise_conv_2d_nchw_chw {attrs} ins(%I, %F : {ti}, {tf}) "
            f"outs(%O : {to})\n  return\n}}\n"), (n, c, ih, iw), (c, kh, kw), (n, c, oh, ow)


def reference(i, f, o, strides, dilations):
    """O + the convolution, in f64, and the bound of its rounding: (taps + 1) units of
    roundoff times the sum of the magnitudes."""
    n, c, oh, ow = o.shape
    _, kh, kw = f.shape
    exact = o.astype(np.float64)
    size = o.astype(np.float64) * 0 + np.abs(o)
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dilations[0], a * dilations[0] + (oh - 1) * strides[0] + 1,
                         strides[0])
            cols = slice(b * dilations[1], b * dilations[1] + (ow - 1) * strides[1] + 1,
                         strides[1])
            term = i[:, :, rows, cols].astype(np.float64) * \
                f[None, :, a, b, None, None].astype(np.float64)
            exact += term
            size += np.abs(term)
    u = float(np.finfo(o.dtype).eps) / 2
    return exact, (kh * kw + 1) * u * size


def assert_in_bounds(src):
    """No vector of the generated nest reads or writes past its memref (the check proves
    each access's range over the loops)."""
    from polyopt.passes import run_pipeline
    from polyopt.pipeline import PipelineOptions, load, run_passes
    module = run_passes(load(src), PipelineOptions(**ALL))
    run_pipeline(module, "memref-bound-check")


def run(src, shapes, dtype, threads=1, **switches):
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **(switches or ALL))["dw"]
    rng = np.random.default_rng(sum(map(sum, shapes)))
    i, f, o = (rng.standard_normal(s).astype(dtype) for s in shapes)
    return fn, (i, f, o), remarks


@pytest.mark.parametrize("n, c, oh, ow, kh, kw, strides, dilations", [
    (1, 3, 7, 7, 3, 3, (1, 1), (1, 1)),        # MobileNet's last planes: one masked vector
    (2, 2, 16, 16, 3, 3, (1, 1), (1, 1)),      # whole vectors, whole blocks of rows
    (1, 2, 5, 37, 3, 3, (1, 1), (1, 1)),       # vectors and a tail, a row past the blocks
    (1, 3, 6, 21, 5, 3, (2, 1), (1, 2)),       # a stride along the height, dilations
    (1, 2, 1, 3, 1, 4, (1, 1), (1, 1)),        # one row, narrower than 4 lanes
    (1, 2, 9, 40, 3, 3, (3, 1), (2, 3)),
    # a stride of 2 along the width: even and odd lanes of 2W inputs
    (1, 3, 7, 7, 3, 3, (2, 2), (1, 1)),
    (1, 2, 5, 16, 3, 3, (2, 2), (1, 1)),       # the last whole vector's load would overrun
    (2, 2, 6, 37, 4, 5, (1, 2), (2, 1)),
    (1, 2, 3, 33, 3, 2, (2, 2), (1, 3)),
])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_matches_numpy(n, c, oh, ow, kh, kw, strides, dilations, t):
    src, *shapes = source(n, c, oh, ow, kh, kw, strides, dilations, t)
    dtype = np.float32 if t == "f32" else np.float64
    fn, (i, f, o), remarks = run(src, shapes, dtype)
    assert any(VECTOR_ROWS.format(oh=oh, ow=ow) in r for r in remarks), remarks
    assert_in_bounds(src)
    exact, bound = reference(i, f, o, strides, dilations)
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()


def test_channels_on_two_threads():
    src, *shapes = source(2, 64, 28, 28, 3, 3)
    fn, (i, f, o), remarks = run(src, shapes, np.float32, threads=2)
    assert any("the channels on 2 threads" in r for r in remarks), remarks
    exact, bound = reference(i, f, o, (1, 1), (1, 1))
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()


def test_a_stride_of_3_along_the_width_keeps_the_nest_and_says_why():
    src, *shapes = source(1, 4, 5, 6, 3, 3, (2, 3))
    fn, (i, f, o), remarks = run(src, shapes, np.float32)
    assert any("its loop nest, auto-scheduled, not vector rows: its stride along the width "
               "is 3" in r for r in remarks), remarks
    exact, bound = reference(i, f, o, (2, 3), (1, 1))
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()


def test_without_hopt_vect_the_nest_and_the_pipelines_ir_is_upstreams():
    src, *shapes = source(1, 2, 5, 37, 3, 3)
    fn, (i, f, o), remarks = run(src, shapes, np.float32, hopt=True, copy=True)
    assert not any("vector rows" in r for r in remarks)
    exact, bound = reference(i, f, o, (1, 1), (1, 1))
    fn(i, f, o)
    assert (np.abs(o - exact) <= bound).all()
    from polyopt.affine.printer import print_module
    from polyopt.pipeline import PipelineOptions, load, run_passes
    text = print_module(run_passes(load(src), PipelineOptions(**ALL)))
    assert "vector.maskedload" in text and "affine.vector_load" in text
    assert mlir_opt(text) == text
