"""memref.reinterpret_cast (and memref.subview, which shares the offsets/sizes/strides rules)
refused with mlir-opt-22's first error: its ODS constraints (a strided result), the
OffsetSizeAndStrideOpInterface's counts (operand segments against dynamic entries, then the
lists' ranks), then ReinterpretCastOp::verify, whose errors carry no op name (``emitError``) and
say ``dynamic`` for a dynamic expected value.  Each expected line is checked against
mlir-opt-22 too."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from upstream_mlir import mlir_opt_error

SEGMENTS = "operandSegmentSizes = array<i32: {}>"


def _generic(operands: str, types: str, segments: str, offsets: str, sizes: str, strides: str,
             result: str) -> str:
    return (f'%0 = "memref.reinterpret_cast"({operands}) <{{{SEGMENTS.format(segments)}, '
            f'static_offsets = array<i64: {offsets}>, static_sizes = array<i64: {sizes}>, '
            f'static_strides = array<i64: {strides}>}}> : ({types}) -> {result}')


def _custom(offsets: str, sizes: str, strides: str, result: str) -> str:
    return (f"%0 = memref.reinterpret_cast %m to offset: [{offsets}], sizes: [{sizes}], "
            f"strides: [{strides}] : memref<?xf32> to {result}")


STRIDED = "memref<4x4xf32, strided<[4, 1]>>"

CASES = {
    "sizes_and_strides_ranks": (_custom("0", "4, 4", "4", STRIDED),
                                "expected mixed sizes rank to match mixed strides rank (2 vs 1) "
                                "so the rank of the result type is well-formed."),
    "two_offsets": (_custom("0, 1", "4, 4", "4, 1", STRIDED), "expected 1 offset values, got 2"),
    "size_value": (_custom("0", "4, 5", "4, 1", STRIDED),
                   "expected result type with size = 5 instead of 4 in dim = 1"),
    "offset_value": (_custom("2", "4, 4", "4, 1", STRIDED),
                     "expected result type with offset = 2 instead of 0"),
    "stride_value": (_custom("0", "4, 4", "5, 1", STRIDED),
                     "expected result type with stride = 5 instead of 4 in dim = 0"),
    "dynamic_offset_for_a_static_one": (_custom("%i", "4, 4", "4, 1", STRIDED),
                                        "expected result type with offset = dynamic instead "
                                        "of 0"),
    "dynamic_size_for_a_static_one": (_custom("0", "%i, 4", "4, 1", STRIDED),
                                      "expected result type with size = dynamic instead of 4 "
                                      "in dim = 0"),
    "dynamic_stride_for_a_static_one": (_custom("0", "4, 4", "%i, 1", STRIDED),
                                        "expected result type with stride = dynamic instead "
                                        "of 4 in dim = 0"),
    "element_type": (_custom("0", "4, 4", "4, 1", "memref<4x4xi32, strided<[4, 1]>>"),
                     "different element types specified for source type 'memref<?xf32>' and "
                     "result memref type 'memref<4x4xi32, strided<[4, 1]>>'"),
    "memory_space": (_custom("0", "4, 4", "4, 1", "memref<4x4xf32, strided<[4, 1]>, 1>"),
                     "different memory spaces specified for source type 'memref<?xf32>' and "
                     "result memref type 'memref<4x4xf32, strided<[4, 1]>, 1>'"),
    "layout_that_is_not_strided": (
        _custom("0", "4, 4", "4, 1", "memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>"),
        "'memref.reinterpret_cast' op result #0 must be strided memref of any type values, but "
        "got 'memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>'"),
    "question_mark_as_a_size": (_custom("0", "?, 4", "4, 1", STRIDED),
                                "custom op 'memref.reinterpret_cast' expected integer value"),
    "size_operand_no_static_entry_stands_for": (
        _generic("%m, %i", "memref<?xf32>, index", "1, 0, 1, 0", "0", "4, 4", "4, 1", STRIDED),
        "expected the number of 'sizes' to match the number of dynamic entries in "
        "'static_sizes' (1 vs 0)"),
    "dynamic_size_without_its_operand": (
        _generic("%m", "memref<?xf32>", "1, 0, 0, 0", "0", "-9223372036854775808, 4", "4, 1",
                 "memref<?x4xf32, strided<[4, 1]>>"),
        "expected the number of 'sizes' to match the number of dynamic entries in "
        "'static_sizes' (0 vs 1)"),
    # the segment counts come before the lists' ranks, offsets first
    "offset_operand_and_ranks_mismatched": (
        _generic("%m, %i", "memref<?xf32>, index", "1, 1, 0, 0", "0", "4, 4", "4", STRIDED),
        "expected the number of 'offsets' to match the number of dynamic entries in "
        "'static_offsets' (1 vs 0)"),
    # ... and after the result's type constraint
    "segments_mismatched_and_result_not_a_memref": (
        _generic("%m, %i", "memref<?xf32>, index", "1, 0, 1, 0", "0", "4, 4", "4, 1", "f32"),
        "'memref.reinterpret_cast' op result #0 must be strided memref of any type values, but "
        "got 'f32'"),
}


def _program(line: str) -> str:
    return f"func.func @f(%m: memref<?xf32>, %i: index) {{\n  {line}\n  return\n}}\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_error_is_mlir_opts(name):
    line, message = CASES[name]
    text = _program(line)
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "t.mlir")
    col = 59 if name == "question_mark_as_a_size" else 8
    assert info.value.render("t.mlir").splitlines()[0] == f"t.mlir:2:{col}: error: {message}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlir_opt_agrees(name):
    line, message = CASES[name]
    col = 59 if name == "question_mark_as_a_size" else 8
    assert mlir_opt_error(_program(line)) == f"2:{col}: error: {message}"


def test_subview_segments_are_checked_the_same_way():
    text = """func.func @f(%m: memref<8x8xf32>, %i: index) {
  %0 = "memref.subview"(%m, %i) <{operandSegmentSizes = array<i32: 1, 0, 0, 1>, static_offsets = array<i64: 0, 0>, static_sizes = array<i64: 4, 4>, static_strides = array<i64: 1, 1>}> : (memref<8x8xf32>, index) -> memref<4x4xf32, strided<[8, 1]>>
  return
}
"""
    expected = mlir_opt_error(text)
    assert expected == ("2:8: error: expected the number of 'strides' to match the number of "
                        "dynamic entries in 'static_strides' (1 vs 0)")
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text)
    assert info.value.render().splitlines()[0].endswith(expected)
