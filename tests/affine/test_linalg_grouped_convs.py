"""The depthwise ``linalg.depthwise_conv_2d_nchw_chw`` (torch-mlir's depthwise layout) and
``linalg.depthwise_conv_2d_nhwc_hwcm`` (a channel multiplier), and the grouped
``linalg.conv_2d_ngchw_fgchw``, on memrefs: printed, generalized, lowered and refused as
mlir-opt-22 does; run against numpy with strides, dilations and odd sizes, also under --hopt."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%I: memref<1x3x9x9xf32>, %K: memref<3x3x3xf32>, %O: memref<1x3x4x4xf32>, "
        "%In: memref<1x9x9x3xf32>, %Km: memref<3x3x3x2xf32>, %Om: memref<1x4x4x3x2xf32>, "
        "%Ig: memref<1x2x3x9x9xf32>, %Kg: memref<4x2x3x3x3xf32>, %Og: memref<1x2x4x4x4xf32>")
S2 = "{strides = dense<2> : tensor<2xi64>}"
OPS = [
    f"linalg.depthwise_conv_2d_nchw_chw {S2} ins(%I, %K : memref<1x3x9x9xf32>, "
    "memref<3x3x3xf32>) outs(%O : memref<1x3x4x4xf32>)",
    f"linalg.depthwise_conv_2d_nhwc_hwcm {S2} ins(%In, %Km : memref<1x9x9x3xf32>, "
    "memref<3x3x3x2xf32>) outs(%Om : memref<1x4x4x3x2xf32>)",
    f"linalg.conv_2d_ngchw_fgchw {S2} ins(%Ig, %Kg : memref<1x2x3x9x9xf32>, "
    "memref<4x2x3x3x3xf32>) outs(%Og : memref<1x2x4x4x4xf32>)",
]


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n  {body}\n  return\n}}\n"


ALL = func("\n  ".join(OPS))


def test_printed_generalized_and_lowered_as_mlir_opt_does():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(ALL, "t.mlir")) == mlir_opt(ALL)
    generic = mlir_opt(ALL, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(ALL)
    module = parse(ALL, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 3
    assert print_module(module) == mlir_opt(ALL, "--convert-linalg-to-affine-loops")


@pytest.mark.parametrize("body", [
    OPS[0].replace("outs(%O : memref<1x3x4x4xf32>)", "outs(%Om : memref<1x4x4x3x2xf32>)"),
    OPS[1].replace("memref<3x3x3x2xf32>)", "memref<3x3x2x2xf32>)").replace("%Km", "%Kg"),
    OPS[2].replace("strides = dense<2>", "strides = dense<3>"),
])
def test_errors_are_mlir_opts(body):
    text = func(body)
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(text, filename="t.mlir")


RNG = np.random.default_rng(17)


def windows(x, kh, kw, s, d):
    """x[..., h, w] -> ([kh*kw, ..., oh, ow] strided, dilated windows, oh, ow)."""
    oh = (x.shape[-2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (x.shape[-1] - d[1] * (kw - 1) - 1) // s[1] + 1
    return np.stack([x[..., i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                     for i, j in itertools.product(range(kh), range(kw))]), oh, ow


def attrs(s, d):
    return (f"{{dilations = dense<[{d[0]}, {d[1]}]> : tensor<2xi64>, "
            f"strides = dense<[{s[0]}, {s[1]}]> : tensor<2xi64>}}")


def t(shape):
    return "memref<" + "x".join(map(str, shape)) + "xf64>"


@pytest.mark.parametrize("switches", [{}, dict(hopt=True, copy=True, unroll=True,
                                                    scalrep=True, vect=True)])
def test_run_as_numpy(switches):
    n, c, h, w, kh, kw, mult, g, f = 2, 5, 11, 10, 3, 2, 3, 2, 4
    s, d = (2, 3), (2, 1)
    x = RNG.standard_normal((n, c, h, w))
    win, oh, ow = windows(x, kh, kw, s, d)                       # [k, n, c, oh, ow]
    kd = RNG.standard_normal((c, kh, kw))
    km = RNG.standard_normal((kh, kw, c, mult))
    xg = RNG.standard_normal((n, g, c, h, w))
    wing, _, _ = windows(xg, kh, kw, s, d)                       # [k, n, g, c, oh, ow]
    kg = RNG.standard_normal((f, g, c, kh, kw))
    xn = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    shapes = {
        "nchw": ((n, c, h, w), (c, kh, kw), (n, c, oh, ow), "depthwise_conv_2d_nchw_chw"),
        "hwcm": ((n, h, w, c), (kh, kw, c, mult), (n, oh, ow, c, mult),
                 "depthwise_conv_2d_nhwc_hwcm"),
        "grouped": ((n, g, c, h, w), (f, g, c, kh, kw), (n, g, f, oh, ow),
                    "conv_2d_ngchw_fgchw"),
    }
    text = "\n".join(
        f"func.func @{name}(%I: {t(i)}, %K: {t(k)}, %O: {t(o)}) {{\n"
        f"  linalg.{op} {attrs(s, d)} ins(%I, %K : {t(i)}, {t(k)}) outs(%O : {t(o)})\n"
        "  return\n}" for name, (i, k, o, op) in shapes.items())
    mod = polyopt.compile(text, **switches)
    out = np.ones((n, c, oh, ow))
    mod["nchw"](x, kd, out)
    np.testing.assert_allclose(out, 1 + np.einsum("knchw,ck->nchw", win,
                                                  kd.reshape(c, kh * kw)), rtol=1e-12)
    out = np.ones((n, oh, ow, c, mult))
    mod["hwcm"](xn, km, out)
    np.testing.assert_allclose(out, 1 + np.einsum("knchw,kcm->nhwcm", win,
                                                  km.reshape(kh * kw, c, mult)), rtol=1e-12)
    out = np.ones((n, g, f, oh, ow))
    mod["grouped"](xg, kg, out)
    np.testing.assert_allclose(out, 1 + np.einsum("kngchw,fgck->ngfhw", wing,
                                                  kg.reshape(f, g, c, kh * kw)), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# the quantized convolutions: C += (I - izp) * (K - kzp), signed casts

QUANTIZED = """\
func.func @f(%I: memref<1x5x5x3xi8>, %W: memref<2x2x3x4xi8>, %z: i32, %O: memref<1x4x4x4xi32>,
             %In: memref<1x3x5x5xi8>, %Wn: memref<4x3x2x2xi8>, %On: memref<1x4x4x4xi32>,
             %Wd: memref<2x2x3xi8>, %Od: memref<1x4x4x3xi32>) {
  linalg.conv_2d_nhwc_hwcf_q ins(%I, %W, %z, %z : memref<1x5x5x3xi8>, memref<2x2x3x4xi8>, i32, i32) outs(%O : memref<1x4x4x4xi32>)
  linalg.conv_2d_nchw_fchw_q {strides = dense<1> : tensor<2xi64>} ins(%In, %Wn, %z, %z : memref<1x3x5x5xi8>, memref<4x3x2x2xi8>, i32, i32) outs(%On : memref<1x4x4x4xi32>)
  linalg.depthwise_conv_2d_nhwc_hwc_q ins(%I, %Wd, %z, %z : memref<1x5x5x3xi8>, memref<2x2x3xi8>, i32, i32) outs(%Od : memref<1x4x4x3xi32>)
  return
}
"""


def test_quantized_convolutions_print_generalize_and_lower_as_mlir_opt_does():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(QUANTIZED, "t.mlir")) == mlir_opt(QUANTIZED)
    generic = mlir_opt(QUANTIZED, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(QUANTIZED)
    module = parse(QUANTIZED, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 3
    assert print_module(module) == mlir_opt(QUANTIZED, "--convert-linalg-to-affine-loops")
    bad = QUANTIZED.replace("ins(%I, %W, %z, %z : memref<1x5x5x3xi8>, memref<2x2x3x4xi8>, "
                            "i32, i32)", "ins(%I, %W : memref<1x5x5x3xi8>, memref<2x2x3x4xi8>)")
    with pytest.raises(PolyoptError) as info:
        parse(bad, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(bad, filename="t.mlir")


@pytest.mark.parametrize("switches", [{}, dict(hopt=True, copy=True, unroll=True,
                                                    scalrep=True, vect=True)])
def test_quantized_convolutions_run_as_numpy(switches):
    n, c, h, w, kh, kw, f = 2, 5, 9, 8, 3, 2, 6
    s, d = (2, 1), (1, 2)
    x = RNG.integers(-128, 128, (n, c, h, w)).astype(np.int8)
    win, oh, ow = windows(x.astype(np.int64), kh, kw, s, d)        # [k, n, c, oh, ow]
    kn = RNG.integers(-128, 128, (f, c, kh, kw)).astype(np.int8)
    kd = RNG.integers(-128, 128, (kh, kw, c)).astype(np.int8)
    xz, kz = 3, -7

    def q(shape):
        return "memref<" + "x".join(map(str, shape)) + "xi8>"

    def o(shape):
        return "memref<" + "x".join(map(str, shape)) + "xi32>"
    ops = {
        "nchw": ("conv_2d_nchw_fchw_q", q((n, c, h, w)), q((f, c, kh, kw)), o((n, f, oh, ow))),
        "nhwc": ("conv_2d_nhwc_hwcf_q", q((n, h, w, c)), q((kh, kw, c, f)), o((n, oh, ow, f))),
        "dw": ("depthwise_conv_2d_nhwc_hwc_q", q((n, h, w, c)), q((kh, kw, c)),
               o((n, oh, ow, c))),
    }
    text = "\n".join(
        f"func.func @{name}(%I: {it}, %K: {kt}, %xz: i32, %kz: i32, %O: {ot}) {{\n"
        f"  linalg.{op} {attrs(s, d)} ins(%I, %K, %xz, %kz : {it}, {kt}, i32, i32) "
        f"outs(%O : {ot})\n  return\n}}" for name, (op, it, kt, ot) in ops.items())
    mod = polyopt.compile(text, **switches)
    xs = win - xz                                                   # [k, n, c, oh, ow]
    nchw = np.einsum("knchw,fck->nfhw", xs, kn.reshape(f, c, kh * kw).astype(np.int64) - kz)
    out = np.ones((n, f, oh, ow), np.int32)
    mod["nchw"](x, kn, xz, kz, out)
    np.testing.assert_array_equal(out, 1 + nchw)
    xn = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out = np.ones((n, oh, ow, f), np.int32)
    mod["nhwc"](xn, np.ascontiguousarray(kn.transpose(2, 3, 1, 0)), xz, kz, out)
    np.testing.assert_array_equal(out, 1 + nchw.transpose(0, 2, 3, 1))
    out = np.ones((n, oh, ow, c), np.int32)
    mod["dw"](xn, kd, xz, kz, out)
    dw = np.einsum("knchw,kc->nhwc", xs, kd.reshape(kh * kw, c).astype(np.int64) - kz)
    np.testing.assert_array_equal(out, 1 + dw)
