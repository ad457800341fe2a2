"""``affine.delinearize_index`` and ``affine.linearize_index`` (the index arithmetic that comes
with ``affine.parallel`` in upstream IR): syntax as mlir-opt-22 prints it, with and without the
outer bound, static and dynamic basis entries, ``disjoint``, the generic form (with
``operandSegmentSizes`` and the ``disjoint`` property), the verifier's messages."""

from __future__ import annotations

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.dialects.affine import (DYNAMIC, AffineDelinearizeIndexOp,
                                            AffineLinearizeIndexOp)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, run_mlir_opt

SOURCE = """\
func.func @f(%x: index, %n: index, %m: index) -> (index, index, index, index, index, index) {
  %a:3 = affine.delinearize_index %x into (%n, 4, 3) : index, index, index
  %b:2 = affine.delinearize_index %x into (4, 3) : index, index
  %c:2 = affine.delinearize_index %x into (%m) : index, index
  %d:4 = affine.delinearize_index %x into (%n, 4, %m) : index, index, index, index
  %e = affine.delinearize_index %x into () : index
  %e2 = affine.delinearize_index %x into(7){foo = 1 : i32}:index
  %l = affine.linearize_index [%a#0, %a#1, %a#2] by (%n, 4, 3) : index
  %l2 = affine.linearize_index disjoint [%a#1, %a#2] by (4, 3) : index
  %l3 = affine.linearize_index [%b#0, %b#1]by(3) {bar} : index
  %l4 = affine.linearize_index [] by () : index
  %l5 = affine.linearize_index disjoint [%x, %n, %m] by (%m, %n) : index
  %l6 = affine.linearize_index [%x] by (0x10) : index
  return %a#0, %b#1, %c#0, %l, %l2, %l3 : index, index, index, index, index, index
}
"""

EXPECTED = """\
module {
  func.func @f(%arg0: index, %arg1: index, %arg2: index) -> (index, index, index, index, index, index) {
    %0:3 = affine.delinearize_index %arg0 into (%arg1, 4, 3) : index, index, index
    %1:2 = affine.delinearize_index %arg0 into (4, 3) : index, index
    %2:2 = affine.delinearize_index %arg0 into (%arg2) : index, index
    %3:4 = affine.delinearize_index %arg0 into (%arg1, 4, %arg2) : index, index, index, index
    %4 = affine.delinearize_index %arg0 into () : index
    %5 = affine.delinearize_index %arg0 into (7) {foo = 1 : i32} : index
    %6 = affine.linearize_index [%0#0, %0#1, %0#2] by (%arg1, 4, 3) : index
    %7 = affine.linearize_index disjoint [%0#1, %0#2] by (4, 3) : index
    %8 = affine.linearize_index [%1#0, %1#1] by (3) {bar} : index
    %9 = affine.linearize_index [] by () : index
    %10 = affine.linearize_index disjoint [%arg0, %arg1, %arg2] by (%arg2, %arg1) : index
    %11 = affine.linearize_index [%arg0] by (16) : index
    return %0#0, %1#1, %2#0, %6, %7, %8 : index, index, index, index, index, index
  }
}
"""


def test_golden():
    printed = print_module(parse(SOURCE, "index_ops.mlir"))
    assert printed == EXPECTED
    assert print_module(parse(printed)) == printed


def test_same_as_mlir_opt():
    assert mlir_opt(SOURCE) == EXPECTED
    assert mlir_opt(EXPECTED) == EXPECTED


def test_parses_mlir_opt_generic_form():
    generic = mlir_opt(SOURCE, "--mlir-print-op-generic")
    assert "static_basis = array<i64: -9223372036854775808, 4, 3>" in generic
    assert "disjoint = false, operandSegmentSizes = array<i32: 3, 1>" in generic
    assert "<{disjoint, operandSegmentSizes" in generic
    assert print_module(parse(generic, "generic.mlir")) == EXPECTED


def test_our_generic_form_is_accepted_by_mlir_opt():
    generic = print_module(parse(SOURCE), generic=True)
    # disjoint is a property: in <{...}>, where mlir-opt-22 reads it as one (not in {...})
    assert ('<{disjoint, operandSegmentSizes = array<i32: 2, 0>, static_basis = array<i64: 4, '
            '3>}>') in generic
    assert mlir_opt(generic) == EXPECTED


def test_accessors():
    m = parse(SOURCE)
    delin = [o for o in m.walk() if isinstance(o, AffineDelinearizeIndexOp)]
    lin = [o for o in m.walk() if isinstance(o, AffineLinearizeIndexOp)]
    x, n, mm = m.walk().__next__().regions[0].blocks[0].ops[0].body.args
    assert delin[0].static_basis == (DYNAMIC, 4, 3) and delin[0].basis() == [n, 4, 3]
    assert delin[1].has_outer_bound and not delin[2].has_outer_bound
    assert delin[3].basis() == [n, 4, mm] and delin[0].linear_index is x
    assert lin[4].multi_index == (x, n, mm) and lin[4].dynamic_basis == (mm, n)
    assert lin[4].disjoint and not lin[0].disjoint and lin[3].basis() == []


def test_builders():
    m = parse(SOURCE)
    x, n, _ = m.walk().__next__().regions[0].blocks[0].ops[0].body.args
    d = AffineDelinearizeIndexOp.build(x, [n, 5], num_results=3)
    assert d.static_basis == (DYNAMIC, 5) and len(d.results) == 3 and d.dynamic_basis == (n,)
    d.verify_op()
    li = AffineLinearizeIndexOp.build(list(d.results), [5], disjoint=True)
    assert li.multi_index == tuple(d.results) and li.disjoint
    with pytest.raises(PolyoptError, match="basis element for each index"):
        li.verify_op()


def _func(body: str) -> str:
    return "func.func @f(%x: index, %n: index) {\n  " + body + "\n  return\n}\n"


NEGATIVE = [
    ("delin_result_count", _func("%a:2 = affine.delinearize_index %x into (%n, 4, 3) : index, "
                                 "index"),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op should return an index for each "
     "basis element and up to one extra index"),
    ("delin_zero_basis", _func("%a:2 = affine.delinearize_index %x into (0, 3) : index, index"),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op no basis element may be statically "
     "non-positive"),
    ("delin_negative_basis", _func("%a:2 = affine.delinearize_index %x into (-1, 3) : index, "
                                   "index"),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op no basis element may be statically "
     "non-positive"),
    ("delin_result_type", _func("%a:2 = affine.delinearize_index %x into (4, 3) : index, f32"),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op result #1 must be variadic of index, "
     "but got 'f32'"),
    ("delin_no_into", _func("%a = affine.delinearize_index %x : index"),
     "bad.mlir:2:36: error: custom op 'affine.delinearize_index' expected 'into'"),
    ("delin_square_basis", _func("%a:2 = affine.delinearize_index %x into [4] : index, index"),
     "bad.mlir:2:42: error: expected '(' in dynamic index list"),
    ("delin_expression_basis", _func("%a:2 = affine.delinearize_index %x into (4, 2 + 3) : "
                                     "index, index"),
     "bad.mlir:2:48: error: expected ')' in dynamic index list"),
    ("delin_i32_index", _func("%c = arith.constant 1 : i32\n"
                              "  %a = affine.delinearize_index %c into (3) : index"),
     "bad.mlir:3:33: error: use of value '%c' expects different type than prior uses: 'index' "
     "vs 'i32'"),
    ("lin_index_count", _func("%a = affine.linearize_index [%x, %n, %x, %x] by (3) : index"),
     "bad.mlir:2:8: error: 'affine.linearize_index' op should be passed a basis element for "
     "each index except possibly the first"),
    ("lin_no_by", _func("%a = affine.linearize_index [%x] : index"),
     "bad.mlir:2:36: error: custom op 'affine.linearize_index' expected 'by'"),
    ("lin_kdynamic_literal", _func("%a = affine.linearize_index [%x, %n] by "
                                   "(-9223372036854775808) : index"),
     "bad.mlir:2:8: error: 'affine.linearize_index' op mismatch between dynamic and static "
     "basis (kDynamic marker but no corresponding dynamic basis entry) -- this can only happen "
     "due to an incorrect fold/rewrite"),
    ("lin_too_large", _func("%a = affine.linearize_index [%x, %n] by (9223372036854775808) : "
                            "index"),
     "bad.mlir:2:44: error: custom op 'affine.linearize_index' integer value too large"),
    ("lin_result_type", _func("%a = affine.linearize_index [%x, %n] by (3) : f32"),
     "bad.mlir:2:49: error: custom op 'affine.linearize_index' invalid kind of type specified: "
     "expected builtin.index, but found 'f32'"),
    ("lin_i32_basis", _func("%c = arith.constant 1 : i32\n"
                            "  %a = affine.linearize_index [%x, %n] by (%c) : index"),
     "bad.mlir:3:44: error: use of value '%c' expects different type than prior uses: 'index' "
     "vs 'i32'"),
    # generic forms
    ("gen_delin_dynamic_mismatch", _func(
        '%a:2 = "affine.delinearize_index"(%x) <{static_basis = array<i64: '
        '-9223372036854775808, 3>}> : (index) -> (index, index)'),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op mismatch between dynamic and static "
     "basis (kDynamic marker but no corresponding dynamic basis entry) -- this can only happen "
     "due to an incorrect fold/rewrite"),
    ("gen_delin_no_basis", _func('%a:2 = "affine.delinearize_index"(%x) : (index) -> (index, '
                                 'index)'),
     "bad.mlir:2:10: error: 'affine.delinearize_index' op requires attribute 'static_basis'"),
    ("gen_delin_no_operand", _func('%a = "affine.delinearize_index"() <{static_basis = '
                                   'array<i64: 4, 0>}> : () -> (index)'),
     "bad.mlir:2:8: error: 'affine.delinearize_index' op expected 1 or more operands, but found "
     "0"),
    ("gen_delin_i32_basis", _func('%c = arith.constant 1 : i32\n  %a:2 = '
                                  '"affine.delinearize_index"(%x, %c) <{static_basis = '
                                  'array<i64: 4, -9223372036854775808>}> : (index, i32) -> '
                                  '(index, index)'),
     "bad.mlir:3:10: error: 'affine.delinearize_index' op operand #1 must be variadic of index, "
     "but got 'i32'"),
    ("gen_lin_no_segments", _func('%a = "affine.linearize_index"(%x, %n) <{static_basis = '
                                  'array<i64: -9223372036854775808>}> : (index, index) -> index'),
     "bad.mlir:2:8: error: 'affine.linearize_index' op operand count (2) does not match with the "
     "total size (0) specified in attribute 'operandSegmentSizes'"),
    ("gen_lin_segments_vs_basis", _func(
        '%a = "affine.linearize_index"(%x, %n) <{operandSegmentSizes = array<i32: 1, 1>, '
        'static_basis = array<i64: 4>}> : (index, index) -> index'),
     "bad.mlir:2:8: error: 'affine.linearize_index' op mismatch between dynamic and static "
     "basis (kDynamic marker but no corresponding dynamic basis entry) -- this can only happen "
     "due to an incorrect fold/rewrite"),
    ("gen_lin_negative_segment", _func(
        '%a = "affine.linearize_index"(%x, %n) {operandSegmentSizes = array<i32: -1, 3>, '
        'static_basis = array<i64: 4>} : (index, index) -> index'),
     "bad.mlir:2:8: error: 'affine.linearize_index' op 'operandSegmentSizes' attribute cannot "
     "have negative elements"),
    ("gen_lin_result_type", _func(
        '%a = "affine.linearize_index"(%x, %n) <{operandSegmentSizes = array<i32: 2, 0>, '
        'static_basis = array<i64: 4>}> : (index, index) -> i32'),
     "bad.mlir:2:8: error: 'affine.linearize_index' op result #0 must be index, but got 'i32'"),
    ("gen_lin_no_basis", _func(
        '%a = "affine.linearize_index"(%x, %n) {operandSegmentSizes = array<i32: 2, 0>} : '
        '(index, index) -> index'),
     "bad.mlir:2:8: error: 'affine.linearize_index' op requires attribute 'static_basis'"),
]


@pytest.mark.parametrize("name,source,expected", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_errors_as_mlir_opt(name, source, expected):
    with pytest.raises(PolyoptError) as info:
        parse(source, "bad.mlir")
    assert str(info.value) == expected
    r = run_mlir_opt(source)
    assert r.returncode != 0
    assert r.stderr.splitlines()[0].replace("<stdin>", "bad.mlir") == expected
