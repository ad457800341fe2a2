"""The 1-D and 3-D windows (``linalg.conv_1d_ncw_fcw``, ``conv_3d_ndhwc_dhwcf``,
``conv_3d_ncdhw_fcdhw``, the depthwise ``_1d_nwc_wc``, ``_1d_ncw_cw``, ``_3d_ndhwc_dhwc``, the
poolings ``nwc``, ``ncw``, ``ndhwc``) and the plain ``linalg.conv_1d/2d/3d``: printed,
generalized, lowered and refused as mlir-opt-22 does (strides and dilations of their own rank,
distinct primes so that a swapped coefficient shows), and run against numpy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ALL = """func.func @f(%a1: memref<1x40x3xf32>, %k1: memref<2x3x4xf32>, %o1: memref<1x4x4xf32>,
             %a1n: memref<1x3x40xf32>, %k1n: memref<4x3x2xf32>, %o1n: memref<1x4x4xf32>,
             %kd1: memref<2x3xf32>, %od1: memref<1x4x3xf32>, %kd1n: memref<3x2xf32>, %od1n: memref<1x3x4xf32>,
             %w1: memref<2xf32>,
             %a3: memref<1x40x40x40x3xf32>, %k3: memref<2x2x2x3x4xf32>, %o3: memref<1x4x4x4x4xf32>,
             %a3n: memref<1x3x40x40x40xf32>, %k3n: memref<4x3x2x2x2xf32>, %o3n: memref<1x4x4x4x4xf32>,
             %kd3: memref<2x2x2x3xf32>, %od3: memref<1x4x4x4x3xf32>, %w3: memref<2x2x2xf32>,
             %p1: memref<40xf32>, %q1: memref<4xf32>, %r1: memref<37xf32>,
             %p2: memref<40x40xf32>, %q2: memref<4x4xf32>, %r2: memref<37x37xf32>,
             %p3: memref<10x10x10xf32>, %q3: memref<2x2x2xf32>, %r3: memref<9x9x9xf32>) {
  linalg.conv_1d_ncw_fcw {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%a1n, %k1n : memref<1x3x40xf32>, memref<4x3x2xf32>) outs(%o1n : memref<1x4x4xf32>)
  linalg.depthwise_conv_1d_nwc_wc {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%a1, %kd1 : memref<1x40x3xf32>, memref<2x3xf32>) outs(%od1 : memref<1x4x3xf32>)
  linalg.depthwise_conv_1d_ncw_cw {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%a1n, %kd1n : memref<1x3x40xf32>, memref<3x2xf32>) outs(%od1n : memref<1x3x4xf32>)
  linalg.pooling_nwc_sum {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%a1, %w1 : memref<1x40x3xf32>, memref<2xf32>) outs(%od1 : memref<1x4x3xf32>)
  linalg.pooling_ncw_max {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%a1n, %w1 : memref<1x3x40xf32>, memref<2xf32>) outs(%od1n : memref<1x3x4xf32>)
  linalg.conv_3d_ndhwc_dhwcf {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%a3, %k3 : memref<1x40x40x40x3xf32>, memref<2x2x2x3x4xf32>) outs(%o3 : memref<1x4x4x4x4xf32>)
  linalg.conv_3d_ncdhw_fcdhw {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%a3n, %k3n : memref<1x3x40x40x40xf32>, memref<4x3x2x2x2xf32>) outs(%o3n : memref<1x4x4x4x4xf32>)
  linalg.depthwise_conv_3d_ndhwc_dhwc {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%a3, %kd3 : memref<1x40x40x40x3xf32>, memref<2x2x2x3xf32>) outs(%od3 : memref<1x4x4x4x3xf32>)
  linalg.pooling_ndhwc_sum {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%a3, %w3 : memref<1x40x40x40x3xf32>, memref<2x2x2xf32>) outs(%od3 : memref<1x4x4x4x3xf32>)
  linalg.conv_1d ins(%p1, %q1 : memref<40xf32>, memref<4xf32>) outs(%r1 : memref<37xf32>)
  linalg.conv_2d ins(%p2, %q2 : memref<40x40xf32>, memref<4x4xf32>) outs(%r2 : memref<37x37xf32>)
  linalg.conv_3d ins(%p3, %q3 : memref<10x10x10xf32>, memref<2x2x2xf32>) outs(%r3 : memref<9x9x9xf32>)
  return
}
"""


# the grouped NHWGC/NGCHW ones, the channel multipliers in 1-D and 3-D, the quantized ones
# left, and batch_mmt4d
MORE = """func.func @f(%A: memref<2x3x5x4x2xf32>, %B: memref<2x6x5x8x2xf32>, %C: memref<2x3x6x4x8xf32>,
             %I: memref<1x40x40x3xi8>, %Km: memref<2x2x3x2xi8>, %Om: memref<1x4x4x3x2xi32>, %z: i32,
             %Ig: memref<1x40x40x2x3xf32>, %Kg: memref<2x4x2x2x3xf32>, %Og: memref<1x4x4x2x4xf32>,
             %Ic: memref<1x2x3x40x40xf32>, %Kc: memref<2x4x3x2x2xf32>, %Oc: memref<1x2x4x4x4xf32>,
             %I3: memref<1x40x40x40x3xi8>, %K3: memref<2x2x2x3x4xi8>, %O3: memref<1x4x4x4x4xi32>,
             %I1: memref<1x40x3xf32>, %K1: memref<2x3x2xf32>, %O1: memref<1x4x3x2xf32>,
             %I3d: memref<1x40x40x40x3xf32>, %K3d: memref<2x2x2x3x2xf32>, %O3d: memref<1x4x4x4x3x2xf32>) {
  linalg.batch_mmt4d ins(%A, %B : memref<2x3x5x4x2xf32>, memref<2x6x5x8x2xf32>) outs(%C : memref<2x3x6x4x8xf32>)
  linalg.depthwise_conv_2d_nhwc_hwcm_q {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[7, 11]> : tensor<2xi64>} ins(%I, %Km, %z, %z : memref<1x40x40x3xi8>, memref<2x2x3x2xi8>, i32, i32) outs(%Om : memref<1x4x4x3x2xi32>)
  linalg.conv_2d_nhwgc_gfhwc {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[7, 11]> : tensor<2xi64>} ins(%Ig, %Kg : memref<1x40x40x2x3xf32>, memref<2x4x2x2x3xf32>) outs(%Og : memref<1x4x4x2x4xf32>)
  linalg.conv_2d_ngchw_gfchw {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[7, 11]> : tensor<2xi64>} ins(%Ic, %Kc : memref<1x2x3x40x40xf32>, memref<2x4x3x2x2xf32>) outs(%Oc : memref<1x2x4x4x4xf32>)
  linalg.conv_3d_ndhwc_dhwcf_q {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%I3, %K3, %z, %z : memref<1x40x40x40x3xi8>, memref<2x2x2x3x4xi8>, i32, i32) outs(%O3 : memref<1x4x4x4x4xi32>)
  linalg.depthwise_conv_1d_nwc_wcm {strides = dense<5> : tensor<1xi64>, dilations = dense<7> : tensor<1xi64>} ins(%I1, %K1 : memref<1x40x3xf32>, memref<2x3x2xf32>) outs(%O1 : memref<1x4x3x2xf32>)
  linalg.depthwise_conv_3d_ndhwc_dhwcm {strides = dense<[2, 3, 5]> : tensor<3xi64>, dilations = dense<[7, 11, 13]> : tensor<3xi64>} ins(%I3d, %K3d : memref<1x40x40x40x3xf32>, memref<2x2x2x3x2xf32>) outs(%O3d : memref<1x4x4x4x3x2xf32>)
  return
}
"""


@pytest.mark.parametrize("text, count", [(ALL, 12), (MORE, 7)])
def test_printed_generalized_and_lowered_as_mlir_opt_does(text, count):
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(text, "t.mlir")) == mlir_opt(text)
    generic = mlir_opt(text, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(text)
    module = parse(text, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == count
    assert print_module(module) == mlir_opt(text, "--convert-linalg-to-affine-loops")


def one(op_line: str) -> str:
    head = ALL.split("\n  linalg.")[0]
    return f"{head}\n  {op_line}\n  return\n}}\n"


@pytest.mark.parametrize("op_line", [
    # strides of a 2-D shape on a 1-D convolution
    "linalg.conv_1d_ncw_fcw {strides = dense<5> : tensor<2xi64>} ins(%a1n, %k1n : "
    "memref<1x3x40xf32>, memref<4x3x2xf32>) outs(%o1n : memref<1x4x4xf32>)",
    # a 1-D window shape on a 3-D pooling
    "linalg.pooling_ndhwc_max ins(%a3, %w1 : memref<1x40x40x40x3xf32>, memref<2xf32>) "
    "outs(%od3 : memref<1x4x4x4x3xf32>)",
    "linalg.conv_2d ins(%p2, %q2 : memref<40x40xf32>, memref<4x4xf32>) outs(%r1 : "
    "memref<37xf32>)",
])
def test_errors_are_mlir_opts(op_line):
    text = one(op_line)
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(text, filename="t.mlir")


RNG = np.random.default_rng(29)


def t(shape, e="f64"):
    return "memref<" + "x".join(map(str, shape)) + f"x{e}>"


def windows(x, ks, s, d):
    """x[..., *spatial] -> [k, ..., *out] strided, dilated windows over the last len(ks)
    dims, and the output's extents."""
    r = len(ks)
    outs = [(x.shape[-r + i] - d[i] * (ks[i] - 1) - 1) // s[i] + 1 for i in range(r)]
    slices = []
    for offs in itertools.product(*(range(k) for k in ks)):
        idx = tuple(slice(o * d[i], o * d[i] + s[i] * (outs[i] - 1) + 1, s[i])
                    for i, o in enumerate(offs))
        slices.append(x[(Ellipsis,) + idx])
    return np.stack(slices), outs


@pytest.mark.parametrize("switches", [{}, dict(hopt=True, copy=True, unroll=True,
                                                    scalrep=True, vect=True)])
def test_run_as_numpy(switches):
    n, c, f, w1 = 2, 3, 4, 23
    x1 = RNG.standard_normal((n, c, w1))
    k1 = RNG.standard_normal((f, c, 3))
    win1, (ow,) = windows(x1, (3,), (2,), (3,))                     # [k, n, c, ow]
    x3 = RNG.standard_normal((n, 9, 8, 7, c))
    k3 = RNG.standard_normal((2, 2, 3, c, f))
    win3, (od, oh, ow3) = windows(x3.transpose(0, 4, 1, 2, 3), (2, 2, 3), (2, 1, 2), (1, 2, 1))
    p2, q2 = RNG.standard_normal((11, 9)), RNG.standard_normal((3, 2))
    win2, (ph, pw) = windows(p2, (3, 2), (1, 1), (1, 1))
    a1 = "{strides = dense<2> : tensor<1xi64>, dilations = dense<3> : tensor<1xi64>}"
    a3 = ("{strides = dense<[2, 1, 2]> : tensor<3xi64>, dilations = dense<[1, 2, 1]> : "
          "tensor<3xi64>}")
    text = f"""
func.func @c1(%I: {t((n, c, w1))}, %K: {t((f, c, 3))}, %O: {t((n, f, ow))}) {{
  linalg.conv_1d_ncw_fcw {a1} ins(%I, %K : {t((n, c, w1))}, {t((f, c, 3))}) outs(%O : {t((n, f, ow))})
  return
}}
func.func @p1(%I: {t((n, w1, c))}, %K: {t((3,))}, %O: {t((n, ow, c))}) {{
  linalg.pooling_nwc_max {a1} ins(%I, %K : {t((n, w1, c))}, {t((3,))}) outs(%O : {t((n, ow, c))})
  return
}}
func.func @c3(%I: {t((n, 9, 8, 7, c))}, %K: {t((2, 2, 3, c, f))}, %O: {t((n, od, oh, ow3, f))}) {{
  linalg.conv_3d_ndhwc_dhwcf {a3} ins(%I, %K : {t((n, 9, 8, 7, c))}, {t((2, 2, 3, c, f))}) outs(%O : {t((n, od, oh, ow3, f))})
  return
}}
func.func @c2(%I: {t((11, 9))}, %K: {t((3, 2))}, %O: {t((ph, pw))}) {{
  linalg.conv_2d ins(%I, %K : {t((11, 9))}, {t((3, 2))}) outs(%O : {t((ph, pw))})
  return
}}
"""
    mod = polyopt.compile(text, **switches)
    out = np.ones((n, f, ow))
    mod["c1"](x1, k1, out)
    np.testing.assert_allclose(out, 1 + np.einsum("kncw,fck->nfw", win1, k1), rtol=1e-12)
    out = np.full((n, ow, c), -np.inf)
    mod["p1"](np.ascontiguousarray(x1.transpose(0, 2, 1)), np.zeros(3), out)
    np.testing.assert_allclose(out, win1.max(0).transpose(0, 2, 1), rtol=1e-12)
    out = np.ones((n, od, oh, ow3, f))
    mod["c3"](x3, k3, out)
    want = 1 + np.einsum("kncdhw,kcf->ndhwf", win3, k3.reshape(12, c, f))
    np.testing.assert_allclose(out, want, rtol=1e-12)
    out = np.ones((ph, pw))
    mod["c2"](p2, q2, out)
    np.testing.assert_allclose(out, 1 + np.einsum("khw,k->hw", win2, q2.reshape(6)),
                               rtol=1e-12)


def test_grouped_nhwgc_and_batch_mmt4d_run_as_numpy():
    n, h, w, g, c, f, kh, kw = 2, 7, 6, 2, 3, 4, 3, 2
    x = RNG.standard_normal((n, h, w, g, c))
    k = RNG.standard_normal((g, f, kh, kw, c))
    win, (oh, ow) = windows(x.transpose(0, 3, 4, 1, 2), (kh, kw), (1, 1), (1, 1))
    a = RNG.standard_normal((2, 3, 5, 4, 2))
    b = RNG.standard_normal((2, 6, 5, 8, 2))
    text = f"""
func.func @g(%I: {t((n, h, w, g, c))}, %K: {t((g, f, kh, kw, c))}, %O: {t((n, oh, ow, g, f))}) {{
  linalg.conv_2d_nhwgc_gfhwc ins(%I, %K : {t((n, h, w, g, c))}, {t((g, f, kh, kw, c))}) outs(%O : {t((n, oh, ow, g, f))})
  return
}}
func.func @b(%A: {t((2, 3, 5, 4, 2))}, %B: {t((2, 6, 5, 8, 2))}, %C: {t((2, 3, 6, 4, 8))}) {{
  linalg.batch_mmt4d ins(%A, %B : {t((2, 3, 5, 4, 2))}, {t((2, 6, 5, 8, 2))}) outs(%C : {t((2, 3, 6, 4, 8))})
  return
}}
"""
    mod = polyopt.compile(text)
    out = np.ones((n, oh, ow, g, f))
    mod["g"](x, k, out)
    want = 1 + np.einsum("kngchw,gfkc->nhwgf", win, k.reshape(g, f, kh * kw, c))
    np.testing.assert_allclose(out, want, rtol=1e-12)
    out = np.ones((2, 3, 6, 4, 8))
    mod["b"](a, b, out)
    np.testing.assert_allclose(out, 1 + np.einsum("bmkxz,bnkyz->bmnxy", a, b), rtol=1e-12)
