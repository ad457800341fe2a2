"""``memref.collapse_shape``: syntax and messages as mlir-opt-22's, the builder, the result type."""

from __future__ import annotations

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.dialects.memref import CollapseShapeOp, collapsed_type
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FunctionType, MemRefType, StridedLayout, f32, f64
from upstream_mlir import mlir_opt, run_mlir_opt


def collapse(src: str, reassociation: str, dst: str, attrs: str = "") -> str:
    return (f"func.func @f(%O: {src}) {{\n"
            f"  %c = memref.collapse_shape %O {reassociation}{attrs} : {src} into {dst}\n"
            f"  return\n}}\n")


CANONICAL = """\
module {
  func.func @f(%arg0: memref<1x56x56x64xf32>) -> memref<3136x64xf32> {
    %collapse_shape = memref.collapse_shape %arg0 [[0, 1, 2], [3]] : memref<1x56x56x64xf32> into memref<3136x64xf32>
    %collapse_shape_0 = memref.collapse_shape %arg0 [[0, 1, 2, 3]] {foo = 2 : i32} : memref<1x56x56x64xf32> into memref<200704xf32>
    return %collapse_shape : memref<3136x64xf32>
  }
}
"""

SOURCE = """\
func.func @f(%O: memref<1x56x56x64xf32>) -> memref<3136x64xf32> {
  %c = memref.collapse_shape %O [[0, 1, 2], [3]] : memref<1x56x56x64xf32> into memref<3136x64xf32>
  %d = memref.collapse_shape %O [[0, 1, 2, 3]] {foo = 2 : i32}
       : memref<1x56x56x64xf32> into memref<200704xf32>
  return %c : memref<3136x64xf32>
}
"""


def test_print_is_exactly_mlir_opts():
    printed = print_module(parse(SOURCE, "t.mlir"))
    assert printed == CANONICAL
    assert mlir_opt(SOURCE) == CANONICAL
    assert mlir_opt(printed) == printed


def test_generic_form_round_trips():
    generic = mlir_opt(SOURCE, "--mlir-print-op-generic")
    assert ('"memref.collapse_shape"(%arg0) <{reassociation = [[0, 1, 2], [3]]}> : '
            '(memref<1x56x56x64xf32>) -> memref<3136x64xf32>') in generic
    assert print_module(parse(generic, "g.mlir")) == CANONICAL
    ours_generic = print_module(parse(SOURCE), generic=True)
    assert mlir_opt(ours_generic) == CANONICAL


@pytest.mark.parametrize("src,reassociation,dst", [
    ("memref<4x5x6xf32, strided<[30, 6, 1], offset: 3>>", "[[0, 1], [2]]",
     "memref<20x6xf32, strided<[6, 1], offset: 3>>"),
    ("memref<4x5x6xf32, strided<[60, 6, 1]>>", "[[0], [1, 2]]",
     "memref<4x30xf32, strided<[60, 1]>>"),
    ("memref<4x1x6xf32, strided<[6, 100, 1]>>", "[[0, 1], [2]]",
     "memref<4x6xf32, strided<[6, 1]>>"),
    ("memref<4x5x6xf32, affine_map<(d0, d1, d2) -> (d0 * 60 + d1 * 6 + d2)>>", "[[0], [1, 2]]",
     "memref<4x30xf32, strided<[60, 1]>>"),
    ("memref<4x5x6xf32, 1>", "[[0], [1, 2]]", "memref<4x30xf32, 1>"),
    ("memref<5xf32, strided<[1]>>", "[[0]]", "memref<5xf32>"),
    ("memref<1x1xf64>", "[]", "memref<f64>"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2], [], [3]]", "memref<3136x1x64xf32>"),
    ("memref<4x?x6xf32>", "[[0, 1], [2]]", "memref<?x6xf32>"),
])
def test_valid_collapses_match_mlir_opt(src, reassociation, dst):
    text = collapse(src, reassociation, dst)
    assert print_module(parse(text, "t.mlir")) == mlir_opt(text)


@pytest.mark.parametrize("src,reassociation,dst,message", [
    ("memref<1x56x56x64xf32>", "[[0, 1], [2, 3]]", "memref<3136x64xf32>",
     "collapsed dim size (3136) must equal reassociation group size (56)"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2], [3]]", "memref<3137x64xf32>",
     "collapsed dim size (3137) must equal reassociation group size (3136)"),
    ("memref<1x56x56x64xf32>", "[[0, 2, 1], [3]]", "memref<3136x64xf32>",
     "reassociation indices must be contiguous"),
    ("memref<1x56x56x64xf32>", "[[1, 2], [3]]", "memref<3136x64xf32>",
     "reassociation indices must be contiguous"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2]]", "memref<3136x64xf32>",
     "invalid number of reassociation groups: found 1, expected 2"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2], [3]]", "memref<3136xf32>",
     "invalid number of reassociation groups: found 2, expected 1"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2], [3]]", "memref<3136x64xf64>",
     "expected collapsed type to be 'memref<3136x64xf32>' but found 'memref<3136x64xf64>'"),
    ("memref<1x56x56x64xf32>", "[[0, 1, 2], [3]]", "memref<?x64xf32>",
     "collapsed dim (0) must be dynamic if and only if reassociation group is dynamic"),
    ("memref<1x56x56x64xf32>", "[]", "memref<f32>",
     "rank 0 memrefs can only be extended/collapsed with/from ones"),
    ("memref<4x5xf32>", "[[0, 1, 2]]", "memref<20xf32>",
     "reassociation index 2 is out of bounds"),
    ("memref<4x5x6xf32>", "[[0, 1]]", "memref<20xf32>",
     "expanded rank (3) inconsistent with number of reassociation indices (2)"),
    ("memref<4xf32>", "[[0], [1]]", "memref<4x1xf32>",
     "has source rank 1 and result rank 2. This is not a collapse (1 < 2)."),
    ("memref<4x5x6xf32, strided<[60, 6, 1]>>", "[[0, 1], [2]]",
     "memref<20x6xf32, strided<[6, 1]>>",
     "invalid source layout map or collapsing non-contiguous dims"),
    ("memref<4x5x6xf32, strided<[30, 6, 1]>>", "[[0, 1], [2]]", "memref<20x6xf32>",
     "expected collapsed type to be 'memref<20x6xf32, strided<[6, 1]>>' but found "
     "'memref<20x6xf32>'"),
    ("memref<4x5x6xf32, affine_map<(d0, d1, d2) -> (d0, d2, d1)>>", "[[0, 1], [2]]",
     "memref<20x6xf32>",
     "operand #0 must be strided memref of any type values, but got 'memref<4x5x6xf32, "
     "affine_map<(d0, d1, d2) -> (d0, d2, d1)>>'"),
    ("memref<4x5x6xf32>", "[[0], [1, 2]]", "memref<4x30xf32, 1>",
     "expected collapsed type to be 'memref<4x30xf32>' but found 'memref<4x30xf32, 1>'"),
])
def test_errors_as_mlir_opt(src, reassociation, dst, message):
    text = collapse(src, reassociation, dst)
    expected = f"t.mlir:2:8: error: 'memref.collapse_shape' op {message}"
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == expected
    upstream = run_mlir_opt(text)
    assert upstream.returncode != 0
    assert expected.replace("t.mlir", "<stdin>") == upstream.stderr.splitlines()[0]


def test_malformed_reassociation_is_a_parse_error():
    text = collapse("memref<4x5xf32>", "[0, 1]", "memref<20xf32>")
    with pytest.raises(PolyoptError, match="expected a list of lists of integers"):
        parse(text, "t.mlir")


def test_build_computes_the_result_type():
    src_t = MemRefType((1, 56, 56, 64), f32)
    strided = MemRefType((4, 5, 6), f64, StridedLayout((30, 6, 1), 3))
    fn = FuncOp.build("g", FunctionType((src_t, strided), ()))
    a, b = fn.body.args
    op = CollapseShapeOp.build(a, [[0, 1, 2], [3]])
    op2 = CollapseShapeOp.build(b, ((0, 1), (2,)))
    for o in (op, op2):
        fn.body.append(o)
    fn.body.append(ReturnOp())
    module = ModuleOp.build()
    module.body.append(fn)
    assert op.result.type == MemRefType((3136, 64), f32)
    assert op2.result.type == MemRefType((20, 6), f64, StridedLayout((6, 1), 3))
    assert op.reassociation == ((0, 1, 2), (3,)) and op.source is a
    printed = print_module(module)
    assert ("%collapse_shape = memref.collapse_shape %arg0 [[0, 1, 2], [3]] : "
            "memref<1x56x56x64xf32> into memref<3136x64xf32>") in printed
    assert ("%collapse_shape_0 = memref.collapse_shape %arg1 [[0, 1], [2]] : memref<4x5x6xf64, "
            "strided<[30, 6, 1], offset: 3>> into memref<20x6xf64, strided<[6, 1], "
            "offset: 3>>") in printed
    assert mlir_opt(printed) == printed
    assert print_module(parse(printed)) == printed


def test_build_refuses_what_cannot_be_collapsed():
    fn = FuncOp.build("g", FunctionType((MemRefType((4, 5, 6), f32,
                                                    StridedLayout((60, 6, 1), 0)),), ()))
    with pytest.raises(ValueError, match="collapsing non-contiguous dims"):
        CollapseShapeOp.build(fn.body.args[0], [[0, 1], [2]])
    with pytest.raises(ValueError, match="out of bounds"):
        CollapseShapeOp.build(fn.body.args[0], [[0, 1, 2, 3]])
    assert collapsed_type(MemRefType((2, 3), f32), [[0, 1]]) == MemRefType((6,), f32)
