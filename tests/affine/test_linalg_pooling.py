"""linalg's poolings (``linalg.pooling_nhwc_sum/max/min[_unsigned]``,
``linalg.pooling_nchw_sum/max``), the convolutions ``linalg.conv_2d_nchw_fchw`` and
``linalg.conv_2d_nhwc_fhwc``, and ``linalg.batch_matvec`` on memrefs: printed, generalized,
lowered and refused as mlir-opt-22 does; run against numpy with strides 2, dilations and odd
sizes."""

from __future__ import annotations

import itertools
import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.dialects.linalg import STRUCTURED_OPS
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%I: memref<1x3x9x9xf32>, %K: memref<8x3x3x3xf32>, %O: memref<1x8x4x4xf32>, "
        "%In: memref<1x9x9x3xf32>, %Kn: memref<8x3x3x3xf32>, %On: memref<1x4x4x8xf32>, "
        "%W: memref<3x3xf32>, %Op: memref<1x4x4x3xf32>, %Oc: memref<1x3x4x4xf32>, "
        "%Ii: memref<1x9x9x3xi8>, %Oi: memref<1x4x4x3xi32>, "
        "%A: memref<2x3x4xf32>, %x: memref<2x4xf32>, %y: memref<2x3xf32>")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


S2 = "strides = dense<2> : tensor<2xi64>"
ALL_OPS = func(f"""
  linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, {S2}}} ins(%I, %K : memref<1x3x9x9xf32>, memref<8x3x3x3xf32>) outs(%O : memref<1x8x4x4xf32>)
  linalg.conv_2d_nhwc_fhwc {{{S2}}} ins(%In, %Kn : memref<1x9x9x3xf32>, memref<8x3x3x3xf32>) outs(%On : memref<1x4x4x8xf32>)
  linalg.pooling_nhwc_sum {{{S2}, foo = 1}} ins(%In, %W : memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>)
  linalg.pooling_nhwc_max ins(%In, %W : memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>) {{{S2}}}
  linalg.pooling_nhwc_min {{strides = dense<[2, 2]> : tensor<2xi64>}} ins(%In, %W : memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>)
  linalg.pooling_nhwc_max {{{S2}}} ins(%Ii, %W : memref<1x9x9x3xi8>, memref<3x3xf32>) outs(%Oi : memref<1x4x4x3xi32>)
  linalg.pooling_nhwc_max_unsigned {{{S2}}} ins(%Ii, %W : memref<1x9x9x3xi8>, memref<3x3xf32>) outs(%Oi : memref<1x4x4x3xi32>)
  linalg.pooling_nhwc_min_unsigned {{{S2}}} ins(%Ii, %W : memref<1x9x9x3xi8>, memref<3x3xf32>) outs(%Oi : memref<1x4x4x3xi32>)
  linalg.pooling_nhwc_sum {{{S2}}} ins(%Ii, %W : memref<1x9x9x3xi8>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>)
  linalg.pooling_nchw_sum {{{S2}}} ins(%I, %W : memref<1x3x9x9xf32>, memref<3x3xf32>) outs(%Oc : memref<1x3x4x4xf32>)
  linalg.pooling_nchw_max {{dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}} ins(%I, %W : memref<1x3x9x9xf32>, memref<3x3xf32>) outs(%Oc : memref<1x3x4x4xf32>)
  linalg.batch_matvec ins(%A, %x : memref<2x3x4xf32>, memref<2x4xf32>) outs(%y : memref<2x3xf32>)
""")


def test_ops_are_structured_ops():
    for name in ("linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_fhwc",
                 "linalg.pooling_nhwc_sum", "linalg.pooling_nchw_max", "linalg.batch_matvec"):
        assert name in STRUCTURED_OPS


def test_printed_as_mlir_opt_prints():
    assert print_module(parse(ALL_OPS, "t.mlir")) == mlir_opt(ALL_OPS)


def test_generic_form_reads_back():
    generic = mlir_opt(ALL_OPS, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(ALL_OPS)


def test_generic_form_with_other_maps_is_refused():
    generic = mlir_opt(func(f"linalg.pooling_nhwc_sum {{{S2}}} ins(%In, %W : "
                            "memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : "
                            "memref<1x4x4x3xf32>)"), "--mlir-print-op-generic")
    assert "d1 * 2 + d4" in generic
    with pytest.raises(PolyoptError, match="memoized_indexing_maps"):
        parse(generic.replace("d1 * 2 + d4", "d1 * 2 + d5"), "g.mlir")


def test_lowered_to_the_loops_mlir_opt_makes():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    module = parse(ALL_OPS, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 12
    assert print_module(module) == mlir_opt(ALL_OPS, "--convert-linalg-to-affine-loops")


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render().splitlines()[0]


ERRORS = [
    # output channels 4 where the filter has 8
    f"linalg.conv_2d_nchw_fchw {{{S2}}} ins(%I, %K : memref<1x3x9x9xf32>, memref<8x3x3x3xf32>)"
    " outs(%Op : memref<1x4x4x3xf32>)",
    # the window runs past the input
    "linalg.conv_2d_nchw_fchw ins(%In, %K : memref<1x9x9x3xf32>, memref<8x3x3x3xf32>) "
    "outs(%O : memref<1x8x4x4xf32>)",
    "linalg.conv_2d_nhwc_fhwc {strides = dense<3> : tensor<2xi64>} ins(%In, %Kn : "
    "memref<1x9x9x3xf32>, memref<8x3x3x3xf32>) outs(%On : memref<1x4x4x8xf32>)",
    "linalg.pooling_nhwc_max {strides = dense<2> : tensor<3xi64>} ins(%In, %W : "
    "memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>)",
    "linalg.pooling_nhwc_max {strides = dense<0> : tensor<2xi64>} ins(%In, %W : "
    "memref<1x9x9x3xf32>, memref<3x3xf32>) outs(%Op : memref<1x4x4x3xf32>)",
    "linalg.pooling_nhwc_sum ins(%In : memref<1x9x9x3xf32>) outs(%Op : memref<1x4x4x3xf32>)",
    "linalg.pooling_nhwc_sum ins(%In, %In : memref<1x9x9x3xf32>, memref<1x9x9x3xf32>) "
    "outs(%Op : memref<1x4x4x3xf32>)",
    f"linalg.pooling_nchw_sum {{{S2}}} ins(%In, %W : memref<1x9x9x3xf32>, memref<3x3xf32>) "
    "outs(%Op : memref<1x4x4x3xf32>)",
    "linalg.batch_matvec ins(%A, %y : memref<2x3x4xf32>, memref<2x3xf32>) "
    "outs(%y : memref<2x3xf32>)",
    "linalg.batch_matvec ins(%x, %x : memref<2x4xf32>, memref<2x4xf32>) "
    "outs(%y : memref<2x3xf32>)",
]


@pytest.mark.parametrize("body", ERRORS)
def test_error_is_mlir_opts(body):
    text = func(body)
    assert error_of(text) == mlir_opt_error(text, filename="t.mlir")


# ---------------------------------------------------------------------------------------------
# execution against numpy: odd sizes, stride 2, dilations


RNG = np.random.default_rng(11)


def windows(x, kh, kw, s, d):
    """x[n, c, h, w] -> the (KH*KW) strided, dilated windows [k, n, c, oh, ow]."""
    oh = (x.shape[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (x.shape[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    return np.stack([x[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                     for i, j in itertools.product(range(kh), range(kw))]), oh, ow


def attrs(s, d):
    return (f"{{dilations = dense<[{d[0]}, {d[1]}]> : tensor<2xi64>, "
            f"strides = dense<[{s[0]}, {s[1]}]> : tensor<2xi64>}}")


@pytest.mark.parametrize("s, d", [((2, 2), (1, 1)), ((2, 3), (2, 1))])
def test_poolings_run_as_numpy(s, d):
    n, c, h, w, kh, kw = 2, 5, 11, 13, 3, 2
    x = RNG.standard_normal((n, c, h, w))
    win, oh, ow = windows(x, kh, kw, s, d)
    nhwc_in, nchw_in = f"memref<{n}x{h}x{w}x{c}xf64>", f"memref<{n}x{c}x{h}x{w}xf64>"
    nhwc_out, nchw_out = f"memref<{n}x{oh}x{ow}x{c}xf64>", f"memref<{n}x{c}x{oh}x{ow}xf64>"
    wt = f"memref<{kh}x{kw}xf64>"
    text = "\n".join(
        f"func.func @{op}_{lay}(%I: {i_t}, %W: {wt}, %O: {o_t}) {{\n"
        f"  linalg.pooling_{lay}_{op} {attrs(s, d)} ins(%I, %W : {i_t}, {wt}) outs(%O : {o_t})\n"
        "  return\n}"
        for lay, i_t, o_t, ops in (("nhwc", nhwc_in, nhwc_out, ("sum", "max", "min")),
                                   ("nchw", nchw_in, nchw_out, ("sum", "max")))
        for op in ops)
    mod = polyopt.compile(text)
    wbuf = np.zeros((kh, kw))
    for op, ref, init in (("sum", win.sum(0), 0.5), ("max", win.max(0), -np.inf),
                          ("min", win.min(0), np.inf)):
        out = np.full((n, oh, ow, c), init)
        mod[f"{op}_nhwc"](np.ascontiguousarray(x.transpose(0, 2, 3, 1)), wbuf, out)
        expect = ref + 0.5 if op == "sum" else ref
        np.testing.assert_allclose(out, expect.transpose(0, 2, 3, 1), rtol=1e-13, err_msg=op)
        if op == "min":
            continue
        out = np.full((n, c, oh, ow), init)
        mod[f"{op}_nchw"](x, wbuf, out)
        np.testing.assert_allclose(out, expect, rtol=1e-13, err_msg=op)


def test_integer_poolings_cast_signed_and_unsigned():
    n, h, w, c = 1, 9, 7, 3
    x = RNG.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    it, ot, wt = f"memref<{n}x{h}x{w}x{c}xi8>", f"memref<{n}x4x3x{c}xi32>", "memref<2x2xf32>"
    text = "\n".join(
        f"func.func @{op}(%I: {it}, %W: {wt}, %O: {ot}) {{\n"
        f"  linalg.pooling_nhwc_{op} {{{S2}}} ins(%I, %W : {it}, {wt}) outs(%O : {ot})\n"
        "  return\n}" for op in ("max", "max_unsigned", "min_unsigned", "sum"))
    mod = polyopt.compile(text)
    win, _, _ = windows(x.transpose(0, 3, 1, 2).astype(np.int64), 2, 2, (2, 2), (1, 1))
    uwin, _, _ = windows(x.view(np.uint8).transpose(0, 3, 1, 2).astype(np.int64), 2, 2,
                         (2, 2), (1, 1))
    for op, ref, init in (("max", win.max(0), -1000), ("max_unsigned", uwin.max(0), 0),
                          ("min_unsigned", uwin.min(0), 1000), ("sum", win.sum(0), 7)):
        out = np.full((n, 4, 3, c), init, dtype=np.int32)
        mod[op](x, np.zeros((2, 2), np.float32), out)
        expect = ref + 7 if op == "sum" else ref
        np.testing.assert_array_equal(out, expect.transpose(0, 2, 3, 1), err_msg=op)


def test_conv_nchw_fchw_and_nhwc_fhwc_run_as_numpy():
    n, c, f, h, w, kh, kw = 2, 5, 3, 11, 10, 3, 2
    s, d = (2, 3), (2, 1)
    x = RNG.standard_normal((n, c, h, w))
    k = RNG.standard_normal((f, c, kh, kw))
    win, oh, ow = windows(x, kh, kw, s, d)                      # [kh*kw, n, c, oh, ow]
    expect = np.einsum("knchw,fck->nfhw", win, k.reshape(f, c, kh * kw)) + 1.0
    it, kt, ot = (f"memref<{n}x{c}x{h}x{w}xf64>", f"memref<{f}x{c}x{kh}x{kw}xf64>",
                  f"memref<{n}x{f}x{oh}x{ow}xf64>")
    itn, ktn, otn = (f"memref<{n}x{h}x{w}x{c}xf64>", f"memref<{f}x{kh}x{kw}x{c}xf64>",
                     f"memref<{n}x{oh}x{ow}x{f}xf64>")
    mod = polyopt.compile(f"""
func.func @nchw(%I: {it}, %K: {kt}, %O: {ot}) {{
  linalg.conv_2d_nchw_fchw {attrs(s, d)} ins(%I, %K : {it}, {kt}) outs(%O : {ot})
  return
}}
func.func @nhwc(%I: {itn}, %K: {ktn}, %O: {otn}) {{
  linalg.conv_2d_nhwc_fhwc {attrs(s, d)} ins(%I, %K : {itn}, {ktn}) outs(%O : {otn})
  return
}}""")
    out = np.ones((n, f, oh, ow))
    mod["nchw"](x, k, out)
    np.testing.assert_allclose(out, expect, rtol=1e-12)
    out = np.ones((n, oh, ow, f))
    mod["nhwc"](np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
                np.ascontiguousarray(k.transpose(0, 2, 3, 1)), out)
    np.testing.assert_allclose(out, expect.transpose(0, 2, 3, 1), rtol=1e-12)


def test_batch_matvec_runs_as_numpy():
    b, m, k = 3, 7, 13
    a, x = RNG.standard_normal((b, m, k)), RNG.standard_normal((b, k))
    y = RNG.standard_normal((b, m))
    mod = polyopt.compile(f"""
func.func @bmv(%A: memref<{b}x{m}x{k}xf64>, %x: memref<{b}x{k}xf64>, %y: memref<{b}x{m}xf64>) {{
  linalg.batch_matvec ins(%A, %x : memref<{b}x{m}x{k}xf64>, memref<{b}x{k}xf64>) outs(%y : memref<{b}x{m}xf64>)
  return
}}""")
    expect = y + np.einsum("bmk,bk->bm", a, x)
    mod["bmv"](a, x, y)
    np.testing.assert_allclose(y, expect, rtol=1e-12)
