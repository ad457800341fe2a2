"""``vector.mask`` read and printed as mlir-opt-22 does (custom and generic forms, the masked op
on one line, the yield implicit), and refused with its message."""

import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from upstream_mlir import mlir_opt, mlir_opt_error

MASKED = """func.func @f(%A: memref<8xf32>, %m: vector<4xi1>, %pt: vector<4xf32>, %v: vector<4xf32>,
             %a: vector<2x3xf32>, %b: vector<3x2xf32>, %c: vector<2x2xf32>, %cm: vector<2x2x3xi1>)
    -> (vector<4xf32>, vector<2x2xf32>) {
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %r = vector.mask %m, %pt { vector.transfer_read %A[%c0], %p : memref<8xf32>, vector<4xf32> } : vector<4xi1> -> vector<4xf32>
  vector.mask %m { vector.transfer_write %v, %A[%c0] : vector<4xf32>, memref<8xf32> } : vector<4xi1>
  %s = vector.mask %m { vector.yield %v : vector<4xf32> } : vector<4xi1> -> vector<4xf32>
  %t = vector.mask %cm { vector.contract {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<2x3xf32>, vector<3x2xf32> into vector<2x2xf32> } : vector<2x2x3xi1> -> vector<2x2xf32>
  return %r, %t : vector<4xf32>, vector<2x2xf32>
}
"""


def test_printed_as_mlir_opt_prints_it():
    assert str(polyopt.parse(MASKED)) == mlir_opt(MASKED)


def test_generic_form_both_ways():
    from polyopt.affine.printer import print_module
    ours = print_module(polyopt.parse(MASKED), generic=True)
    theirs = mlir_opt(MASKED, "--mlir-print-op-generic")
    assert mlir_opt(ours) == mlir_opt(MASKED)              # ours reads back upstream
    assert str(polyopt.parse(theirs)) == mlir_opt(MASKED)  # and theirs here


def test_two_ops_under_a_mask_are_refused_as_mlir_opt_refuses_them():
    text = """func.func @f(%m: vector<4xi1>, %v: vector<4xf32>) -> vector<4xf32> {
  %s = vector.mask %m { %a = arith.addf %v, %v : vector<4xf32>
    %b = arith.addf %a, %v : vector<4xf32>
    vector.yield %b : vector<4xf32> } : vector<4xi1> -> vector<4xf32>
  return %s : vector<4xf32>
}
"""
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


def test_a_yield_with_more_values_than_types_is_refused():
    """``vector.yield %a, %b : T``: mlir-opt-22 refuses it (2 operands, 1 type); it was read,
    the second value unchecked."""
    from polyopt.affine.diagnostics import ParseError
    text = """func.func @f(%m: vector<4xi1>, %a: vector<4xf32>, %b: vector<4xf32>) -> vector<4xf32> {
  %r = vector.mask %m { vector.yield %a, %b : vector<4xf32> } : vector<4xi1> -> vector<4xf32>
  return %r : vector<4xf32>
}
"""
    assert "error" in mlir_opt_error(text)
    with pytest.raises(ParseError, match="2 operands present, but expected 1"):
        polyopt.parse(text)
