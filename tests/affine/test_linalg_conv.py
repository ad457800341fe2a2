"""linalg's convolutions on memrefs (``linalg.conv_2d_nhwc_hwcf``, ``linalg.conv_1d_nwc_wcf``,
``linalg.depthwise_conv_2d_nhwc_hwc``) and the ``dense<..> : tensor<..>`` attributes they carry:
syntax as mlir-opt-22 prints it (custom and generic forms), accessors, builders, verification."""

from __future__ import annotations

import textwrap

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.attributes import DenseElementsAttr
from polyopt.affine.diagnostics import ParseError, PolyoptError, VerifyError
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.dialects.hop import HopConv2DOp
from polyopt.affine.dialects.linalg import (LINALG_CONV_OPS, LinalgConv1DNwcWcfOp,
                                            LinalgConv2DNhwcHwcfOp,
                                            LinalgDepthwiseConv2DNhwcHwcOp, conv_indexing_maps)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FunctionType, MemRefType, f32, f64, i32, i64
from upstream_mlir import mlir_opt, run_mlir_opt


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render()


def func(body: str, args: str) -> str:
    return f"func.func @f({args}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


def ops_of(module, cls):
    return [op for op in module.walk() if isinstance(op, cls)]


# What mlir-opt-22 prints for the three ops (checked live below): the attribute dictionary,
# sorted, before ins(...); a dense attribute whose elements are equal as a splat.
CANONICAL = """\
module {
  func.func @f(%arg0: memref<1x9x9x3xf32>, %arg1: memref<3x3x3x8xf32>, %arg2: memref<1x4x4x8xf32>, %arg3: memref<2x9x3xf64>, %arg4: memref<3x3x5xf64>, %arg5: memref<2x7x5xf64>, %arg6: memref<1x9x9x3xf32>, %arg7: memref<3x3x3xf32>, %arg8: memref<1x7x7x3xf32>, %arg9: memref<1x9x9x3xf32>, %arg10: memref<1x5x3x3xf32>) {
    linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%arg0, %arg1 : memref<1x9x9x3xf32>, memref<3x3x3x8xf32>) outs(%arg2 : memref<1x4x4x8xf32>)
    linalg.conv_1d_nwc_wcf ins(%arg3, %arg4 : memref<2x9x3xf64>, memref<3x3x5xf64>) outs(%arg5 : memref<2x7x5xf64>)
    linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<1> : tensor<2xi64>} ins(%arg6, %arg7 : memref<1x9x9x3xf32>, memref<3x3x3xf32>) outs(%arg8 : memref<1x7x7x3xf32>)
    linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<[2, 1]> : tensor<2xi64>, foo = 1 : i32, strides = dense<[1, 3]> : tensor<2xi64>} ins(%arg9, %arg7 : memref<1x9x9x3xf32>, memref<3x3x3xf32>) outs(%arg10 : memref<1x5x3x3xf32>)
    return
  }
}
"""

SOURCE = """\
func.func @f(%I: memref<1x9x9x3xf32>, %K: memref<3x3x3x8xf32>, %O: memref<1x4x4x8xf32>,
             %I1: memref<2x9x3xf64>, %K1: memref<3x3x5xf64>, %O1: memref<2x7x5xf64>,
             %Id: memref<1x9x9x3xf32>, %Kd: memref<3x3x3xf32>, %Od: memref<1x7x7x3xf32>,
             %Ie: memref<1x9x9x3xf32>, %Oe: memref<1x5x3x3xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%I, %K : memref<1x9x9x3xf32>, memref<3x3x3x8xf32>) outs(%O : memref<1x4x4x8xf32>)
  linalg.conv_1d_nwc_wcf ins(%I1, %K1 : memref<2x9x3xf64>, memref<3x3x5xf64>)
    outs(%O1 : memref<2x7x5xf64>)
  linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<[1, 1]> : tensor<2xi64>}
    ins(%Id, %Kd : memref<1x9x9x3xf32>, memref<3x3x3xf32>) outs(%Od : memref<1x7x7x3xf32>)
  // attributes after outs(...) move before ins(...), sorted
  linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<[1, 3]> : tensor<2xi64>, foo = 1 : i32}
    ins(%Ie, %Kd : memref<1x9x9x3xf32>, memref<3x3x3xf32>) outs(%Oe : memref<1x5x3x3xf32>)
    {dilations = dense<[2, 1]> : tensor<2xi64>}
  return
}
"""


# ---------------------------------------------------------------------------------------------
# syntax


def test_print_is_exactly_mlir_opts():
    printed = print_module(parse(SOURCE, "t.mlir"))
    assert printed == CANONICAL
    assert mlir_opt(SOURCE) == CANONICAL
    assert mlir_opt(printed) == printed          # and mlir-opt-22 accepts what we print


def test_generic_form_from_mlir_opt_parses_to_the_same_ops():
    generic = mlir_opt(SOURCE, "--mlir-print-op-generic")
    # payload regions, operandSegmentSizes and the memoized indexing maps are implied by the op
    assert "linalg.memoized_indexing_maps" in generic and "operandSegmentSizes" in generic
    assert print_module(parse(generic, "generic.mlir")) == CANONICAL


def test_indexing_maps_are_mlirs():
    generic = mlir_opt(SOURCE, "--mlir-print-op-generic")
    module = parse(SOURCE, "t.mlir")
    # mlir-opt prints the memoized maps as #map aliases in op order: three per op
    aliases = [line.split(" = ", 1)[1] for line in generic.splitlines()
               if line.startswith("#map")]
    ours = [f"affine_map<{m}>" for op in module.walk() if hasattr(op, "CONV_KIND")
            for m in op.indexing_maps]
    assert all(m in aliases for m in ours)
    assert len(set(ours)) == len(aliases)


def test_generic_form_with_other_memoized_maps_is_refused():
    generic = mlir_opt(SOURCE, "--mlir-print-op-generic")
    tampered = generic.replace("d1 * 2 + d4", "d1 * 3 + d4", 1)
    assert tampered != generic
    with pytest.raises(ParseError, match="'linalg.conv_2d_nhwc_hwcf' with non-default "
                                         "indexing_maps"):
        parse(tampered, "generic.mlir")


def test_accessors_and_defaults():
    module = parse(SOURCE, "t.mlir")
    c2 = ops_of(module, LinalgConv2DNhwcHwcfOp)[0]
    c1 = ops_of(module, LinalgConv1DNwcWcfOp)[0]
    dw, dw2 = ops_of(module, LinalgDepthwiseConv2DNhwcHwcOp)
    f = ops_of(module, FuncOp)[0]
    args = f.body.args
    assert (c2.input, c2.filter, c2.output) == (args[0], args[1], args[2])
    assert c2.strides == (2, 2) and c2.dilations == (1, 1) and c2.CONV_KIND == "conv2d"
    assert c1.strides == (1,) and c1.dilations == (1,) and c1.CONV_KIND == "conv1d"
    assert dw.strides == (1, 1) and dw.dilations == (1, 1) and dw.CONV_KIND == "depthwise2d"
    assert dw2.strides == (1, 3) and dw2.dilations == (2, 1)
    assert HopConv2DOp.CONV_KIND == "conv2d"
    assert set(LINALG_CONV_OPS) == {"linalg.conv_2d_nhwc_hwcf", "linalg.conv_1d_nwc_wcf",
                                    "linalg.depthwise_conv_2d_nhwc_hwc"}
    assert str(conv_indexing_maps("conv1d", (2,), (3,))[0]) == \
        "(d0, d1, d2, d3, d4) -> (d0, d1 * 2 + d3 * 3, d4)"


def test_builders_print_like_mlir_opt():
    fn = FuncOp.build("g", FunctionType(
        (MemRefType((2, 9, 3), f64), MemRefType((3, 3, 5), f64), MemRefType((2, 4, 5), f64),
         MemRefType((1, 9, 9, 4), f32), MemRefType((3, 3, 4), f32),
         MemRefType((1, 7, 7, 4), f32)), ()))
    a = fn.body.args
    fn.body.append(LinalgConv1DNwcWcfOp.build(a[0], a[1], a[2], strides=[2]))
    fn.body.append(LinalgDepthwiseConv2DNhwcHwcOp.build(a[3], a[4], a[5]))
    fn.body.append(ReturnOp())
    module = ModuleOp.build()
    module.body.append(fn)
    printed = print_module(module)
    assert ("linalg.conv_1d_nwc_wcf {strides = dense<2> : tensor<1xi64>} ins(%arg0, %arg1 : "
            "memref<2x9x3xf64>, memref<3x3x5xf64>) outs(%arg2 : memref<2x4x5xf64>)") in printed
    assert ("linalg.depthwise_conv_2d_nhwc_hwc ins(%arg3, %arg4 : memref<1x9x9x4xf32>, "
            "memref<3x3x4xf32>) outs(%arg5 : memref<1x7x7x4xf32>)") in printed
    assert print_module(parse(printed, "b.mlir")) == printed
    assert mlir_opt(printed) == printed


# ---------------------------------------------------------------------------------------------
# dense<..> : tensor<..> attributes


@pytest.mark.parametrize("written,printed", [
    ("dense<[1, 1]> : tensor<2xi64>", "dense<1> : tensor<2xi64>"),
    ("dense<2> : tensor<2xi64>", "dense<2> : tensor<2xi64>"),
    ("dense<[1, -3]> : tensor<2xi64>", "dense<[1, -3]> : tensor<2xi64>"),
    ("dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>", "dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>"),
    ("dense<[]> : tensor<0xi64>", "dense<> : tensor<0xi64>"),
    ("dense<0x10> : tensor<2xi32>", "dense<16> : tensor<2xi32>"),
    ("dense<[1.0, 2.5]> : tensor<2xf32>", "dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>"),
    ("dense<true> : tensor<3xi1>", "dense<true> : tensor<3xi1>"),
])
def test_dense_tensor_attributes_print_as_mlir_opt(written, printed):
    text = f"func.func @f() attributes {{x = {written}}} {{\n  return\n}}\n"
    ours = print_module(parse(text, "t.mlir"))
    assert f"attributes {{x = {printed}}}" in ours
    assert mlir_opt(text) == ours


def test_dense_tensor_attribute_values():
    a = DenseElementsAttr.from_ints([3, 3])
    assert a == DenseElementsAttr((2,), i64, (3, 3)) and a.is_splat and str(a) == \
        "dense<3> : tensor<2xi64>"
    text = "func.func @f() attributes {x = dense<7> : tensor<2x2xi32>} {\n  return\n}\n"
    x = ops_of(parse(text), FuncOp)[0].attributes["x"]
    assert x == DenseElementsAttr((2, 2), i32, (7, 7, 7, 7))


@pytest.mark.parametrize("attr,message", [
    ("dense<[1, 2, 3]> : tensor<2xi64>",
     "1:32: error: inferred shape of elements literal ([3]) does not match type ([2])"),
    ("dense<1.5> : tensor<2xi64>", "1:38: error: expected integer elements, but parsed "
                                   "floating-point"),
    ("dense<300> : tensor<2xi8>", "1:38: error: integer constant out of range for type"),
    ("dense<[1, 2]> : tensor<?xi64>", "1:32: error: elements literal type must have static "
                                      "shape"),
    ("dense<[[1, 2], [3]]> : tensor<2x2xi64>",
     "error: tensor literal is invalid; ranks are not consistent between elements"),
])
def test_dense_tensor_attribute_errors_as_mlir_opt(attr, message):
    text = f"func.func @f() attributes {{x = {attr}}} {{\n  return\n}}\n"
    assert message in error_of(text)
    r = run_mlir_opt(text)
    assert r.returncode != 0 and message.split("error: ")[1] in r.stderr


def test_tensor_operands_stay_rejected():
    text = func("linalg.conv_1d_nwc_wcf {strides = dense<1> : tensor<1xi64>} "
                "ins(%I, %K : tensor<2x9x3xf64>, memref<3x3x5xf64>) outs(%O : memref<2x7x5xf64>)",
                "%I: memref<2x9x3xf64>, %K: memref<3x3x5xf64>, %O: memref<2x7x5xf64>")
    assert "error: linalg ops on tensors are not supported; use memrefs" in error_of(text)


# ---------------------------------------------------------------------------------------------
# verification (the rules and messages of hop.conv2d)


C2_ARGS = "%I: memref<1x9x9x3xf32>, %K: memref<3x3x3x8xf32>, %O: memref<1x4x4x8xf32>"


def c2(attrs="", i="memref<1x9x9x3xf32>", k="memref<3x3x3x8xf32>", o="memref<1x4x4x8xf32>"):
    return func(f"linalg.conv_2d_nhwc_hwcf {attrs} ins(%I, %K : {i}, {k}) outs(%O : {o})",
                f"%I: {i}, %K: {k}, %O: {o}")


@pytest.mark.parametrize("text,message", [
    (c2("{strides = dense<2> : tensor<2xi64>}", o="memref<1x5x4x8xf32>"),
     "'linalg.conv_2d_nhwc_hwcf' op operand #2 (output) has height 5 but expected 4 = "
     "(H - dilation_h * (KH - 1) - 1) floordiv stride_h + 1 with H = 9, KH = 3, stride_h = 2, "
     "dilation_h = 1"),
    (c2(k="memref<3x3x4x8xf32>", o="memref<1x7x7x8xf32>"),
     "'linalg.conv_2d_nhwc_hwcf' op operand #1 (filter) has 4 input channels but input has 3"),
    (c2(o="memref<2x7x7x8xf32>"),
     "'linalg.conv_2d_nhwc_hwcf' op operand #2 (output) has batch size 2 but input has 1"),
    (c2(o="memref<1x7x7x9xf32>"),
     "'linalg.conv_2d_nhwc_hwcf' op operand #2 (output) has 9 channels but filter has 8"),
    (c2("{dilations = dense<5> : tensor<2xi64>}"),
     "'linalg.conv_2d_nhwc_hwcf' op filter height 3 (dilated to 11) exceeds the input height 9"),
    (c2("{strides = dense<[2, 3, 4]> : tensor<3xi64>}"),
     "'linalg.conv_2d_nhwc_hwcf' op attribute 'strides' failed to satisfy constraint: 64-bit "
     "signless int elements attribute of shape [2], got dense<[2, 3, 4]> : tensor<3xi64>"),
    (c2("{strides = dense<2> : tensor<2xi32>}"),
     "attribute 'strides' failed to satisfy constraint: 64-bit signless int elements attribute "
     "of shape [2], got dense<2> : tensor<2xi32>"),
    (c2("{dilations = dense<[1, 0]> : tensor<2xi64>}"),
     "'linalg.conv_2d_nhwc_hwcf' op dilations must be positive, got dense<[1, 0]> : "
     "tensor<2xi64>"),
    (c2(i="memref<9x9x3xf32>"),
     "'linalg.conv_2d_nhwc_hwcf' op operand #0 (input) must have rank 4, got "
     "'memref<9x9x3xf32>'"),
    (c2(k="memref<3x3x3x8xf64>", o="memref<1x7x7x8xf32>"),
     "operands must have one element type, f32 or f64, or the element types (input, filter, "
     "output) of a mixed contraction: (bf16, bf16, f32), (f16, f16, f32), (i8, i8, i32); got "
     "(f32, f64, f32)"),
    (c2(i="memref<1x9x9x3xi32>", k="memref<3x3x3x8xi32>", o="memref<1x7x7x8xi32>"),
     "operand #0 (input) must have element type f32 or f64, got 'i32'"),
    (func("linalg.conv_1d_nwc_wcf {strides = dense<3> : tensor<1xi64>} ins(%I, %K : "
          "memref<2x10x3xf64>, memref<3x3x5xf64>) outs(%O : memref<2x4x5xf64>)",
          "%I: memref<2x10x3xf64>, %K: memref<3x3x5xf64>, %O: memref<2x4x5xf64>"),
     "'linalg.conv_1d_nwc_wcf' op operand #2 (output) has width 4 but expected 3 = "
     "(W - dilation_w * (KW - 1) - 1) floordiv stride_w + 1 with W = 10, KW = 3, stride_w = 3, "
     "dilation_w = 1"),
    (func("linalg.conv_1d_nwc_wcf {dilations = dense<[1, 1]> : tensor<2xi64>} ins(%I, %K : "
          "memref<2x9x3xf64>, memref<3x3x5xf64>) outs(%O : memref<2x7x5xf64>)",
          "%I: memref<2x9x3xf64>, %K: memref<3x3x5xf64>, %O: memref<2x7x5xf64>"),
     "'linalg.conv_1d_nwc_wcf' op attribute 'dilations' failed to satisfy constraint: 64-bit "
     "signless int elements attribute of shape [1]"),
    (func("linalg.depthwise_conv_2d_nhwc_hwc ins(%I, %K : memref<1x9x9x3xf32>, "
          "memref<3x3x4xf32>) outs(%O : memref<1x7x7x3xf32>)",
          "%I: memref<1x9x9x3xf32>, %K: memref<3x3x4xf32>, %O: memref<1x7x7x3xf32>"),
     "'linalg.depthwise_conv_2d_nhwc_hwc' op operand #1 (filter) has 4 channels but input has 3"),
    (func("linalg.depthwise_conv_2d_nhwc_hwc ins(%I, %K : memref<1x9x9x3xf32>, "
          "memref<3x3x3xf32>) outs(%O : memref<1x7x7x6xf32>)",
          "%I: memref<1x9x9x3xf32>, %K: memref<3x3x3xf32>, %O: memref<1x7x7x6xf32>"),
     "'linalg.depthwise_conv_2d_nhwc_hwc' op operand #2 (output) has 6 channels but input has 3"),
])
def test_verifier_errors(text, message):
    rendered = error_of(text)
    assert rendered.startswith("t.mlir:2:1: error: ") and message in rendered, rendered


def test_verifier_error_is_a_verify_error_at_the_op():
    with pytest.raises(VerifyError) as info:
        parse(c2(o="memref<1x7x7x9xf32>"), "t.mlir")
    assert (info.value.loc.line, info.value.loc.col) == (2, 1)


@pytest.mark.parametrize("body,message", [
    ("linalg.conv_2d_nhwc_hwcf ins(%I : memref<1x9x9x3xf32>) outs(%O : memref<1x7x7x8xf32>)",
     "'linalg.conv_2d_nhwc_hwcf' expects 2 input(s) and 1 output, got 1 and 1"),
    ("linalg.conv_2d_nhwc_hwcf indexing_maps = [] ins(%I, %K : memref<1x9x9x3xf32>, "
     "memref<3x3x3x8xf32>) outs(%O : memref<1x7x7x8xf32>)",
     "'linalg.conv_2d_nhwc_hwcf' does not take indexing_maps"),
])
def test_parse_errors(body, message):
    text = func(body, "%I: memref<1x9x9x3xf32>, %K: memref<3x3x3x8xf32>, "
                      "%O: memref<1x7x7x8xf32>")
    assert message in error_of(text)


def test_valid_shapes_agree_with_mlir_opt():
    """Every conv our verifier accepts, mlir-opt-22 accepts (odd sizes, strides, dilations)."""
    text = func("""
      linalg.conv_2d_nhwc_hwcf {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[3, 2]> : tensor<2xi64>} ins(%I, %K : memref<2x11x10x3xf32>, memref<3x2x3x5xf32>) outs(%O : memref<2x3x5x5xf32>)
      linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>} ins(%I1, %K1 : memref<1x13x3xf64>, memref<4x3x5xf64>) outs(%O1 : memref<1x4x5xf64>)
    """, "%I: memref<2x11x10x3xf32>, %K: memref<3x2x3x5xf32>, %O: memref<2x3x5x5xf32>, "
         "%I1: memref<1x13x3xf64>, %K1: memref<4x3x5xf64>, %O1: memref<1x4x5xf64>")
    printed = print_module(parse(text, "t.mlir"))
    assert mlir_opt(text) == printed
