"""Static bounds checking of affine accesses (MLIR's -memref-bound-check) with ISL: exact
messages (op, memref, dimension, index, iteration, symbol values) and locations; no false alarms
on the tiled nests with min bounds, guarded accesses and vector accesses that fit."""

from __future__ import annotations

import textwrap

import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from polyopt.schedules.bounds_check import check_bounds, find_out_of_bounds
from polyopt.schedules.model import extract


def parse(text: str, filename: str = "b.mlir"):
    return polyopt.parse(textwrap.dedent(text), filename)


def func_of(module, index: int = 0):
    return [op for op in module.regions[0].blocks[0].ops if op.name == "func.func"][index]


def bounds_error(root) -> str:
    with pytest.raises(VerifyError) as err:
        check_bounds(root)
    return str(err.value)


def test_off_by_one_is_refused():
    module = parse("""
        func.func @f(%A: memref<16x16xf64>, %B: memref<16x16xf64>, %C: memref<16x16xf64>) {
          affine.for %i = 0 to 16 {
            affine.for %j = 0 to 16 {
              %v = affine.load %A[%i, %j + 1] : memref<16x16xf64>
              affine.store %v, %B[%i, %j] : memref<16x16xf64>
            }
          }
          return
        }""")
    expected = ("b.mlir:5:12: error: 'affine.load' op out-of-bounds access to memref<16x16xf64> "
                "(%arg0) in dimension 1: index 16 at iteration (%arg3 = 0, %arg4 = 15)")
    assert bounds_error(func_of(module)) == expected
    assert bounds_error(module) == expected
    assert bounds_error(extract(func_of(module))) == expected   # the same through the model


def test_loop_one_iteration_too_long_and_negative_index():
    module = parse("""
        func.func @f(%A: memref<10xf64>, %B: memref<10xf64>) {
          affine.for %i = 0 to 11 {
            %v = affine.load %B[%i - 1] : memref<10xf64>
            affine.store %v, %A[%i] : memref<10xf64>
          }
          return
        }""")
    errors = [str(e) for e in find_out_of_bounds(module)]
    assert errors == [
        "b.mlir:4:10: error: 'affine.load' op out-of-bounds access to memref<10xf64> (%arg1) in "
        "dimension 0: index -1 at iteration (%arg2 = 0)",
        "b.mlir:5:5: error: 'affine.store' op out-of-bounds access to memref<10xf64> (%arg0) in "
        "dimension 0: index 10 at iteration (%arg2 = 10)"]


# the paper's section 2.5 nest: 33 tiles of 64 rows over 2088 rows, the last one cut by a min
TILED = """
#lb = affine_map<(d0) -> (d0 * 64)>
#ub = affine_map<(d0) -> (UB, d0 * 64 + 64)>
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  affine.for %arg3 = 0 to 8 {
    affine.for %arg4 = 0 to 33 {
      affine.for %arg5 = 0 to 2048 {
        affine.for %arg6 = #lb(%arg4) to min #ub(%arg4) {
          affine.for %arg7 = 0 to 256 {
            %3 = affine.load %A[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
            %4 = affine.load %B[%arg3 * 256 + %arg7, %arg5] : memref<2048x2048xf64>
            %5 = affine.load %C[%arg6, %arg5] : memref<2088x2048xf64>
            %6 = arith.mulf %3, %4 : f64
            %7 = arith.addf %5, %6 : f64
            affine.store %7, %C[%arg6, %arg5] : memref<2088x2048xf64>
          }
        }
      }
    }
  }
  return
}
"""


def test_tiled_nest_with_min_bounds_is_in_bounds():
    module = parse(TILED.replace("UB", "2088"))
    check_bounds(module)
    check_bounds(extract(func_of(module)))
    assert find_out_of_bounds(module) == []


def test_tiled_nest_with_a_wrong_min_bound_is_refused():
    module = parse(TILED.replace("UB", "2089"), "tiled.mlir")
    assert bounds_error(module) == (
        "tiled.mlir:10:18: error: 'affine.load' op out-of-bounds access to memref<2088x2048xf64> "
        "(%arg0) in dimension 0: index 2088 at iteration (%arg3 = 0, %arg4 = 32, %arg5 = 0, "
        "%arg6 = 2088, %arg7 = 0)")


def test_guarded_and_unguarded_accesses():
    module = parse("""
        func.func @f(%v: memref<18xf64>) {
          affine.for %i = 0 to 16 {
            affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
              %a = affine.load %v[%i - 1] : memref<18xf64>
            } else {
              %b = affine.load %v[%i - 1] : memref<18xf64>
            }
          }
          return
        }""")
    assert [str(e) for e in find_out_of_bounds(module)] == [
        "b.mlir:7:12: error: 'affine.load' op out-of-bounds access to memref<18xf64> (%arg0) in "
        "dimension 0: index -1 at iteration (%arg1 = 0)"]


def test_vector_accesses_check_every_lane():
    ok = """
        func.func @f(%v: memref<4x16xf32>) {
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 16 step 8 {
              %x = affine.vector_load %v[%i, %j] : memref<4x16xf32>, vector<8xf32>
              affine.vector_store %x, %v[%i, %j] : memref<4x16xf32>, vector<8xf32>
            }
          }
          return
        }"""
    check_bounds(parse(ok))
    # 14 columns: the lanes 14 and 15 of the second vector are outside
    bad = parse(ok.replace("4x16xf32", "4x14xf32").replace("0 to 16", "0 to 14"))
    assert bounds_error(bad) == (
        "b.mlir:5:12: error: 'affine.vector_load' op out-of-bounds access to memref<4x14xf32> "
        "(%arg0) in dimension 1: index 14 at iteration (%arg1 = 0, %arg2 = 8)")


def test_symbolic_bounds():
    module = parse("""
        func.func @f(%A: memref<16xf64>, %N: index, %D: memref<?xf64>) {
          affine.for %i = 0 to %N {
            %a = affine.load %A[%i] : memref<16xf64>
            %d = affine.load %D[%i + 100] : memref<?xf64>
          }
          affine.for %i = 0 to min affine_map<()[s0] -> (s0, 16)>()[%N] {
            %b = affine.load %A[%i] : memref<16xf64>
          }
          affine.for %i = %N to affine_map<()[s0] -> (s0 + 17)>()[%N] {
            %c = affine.load %A[%i - symbol(%N)] : memref<16xf64>
          }
          return
        }""")
    assert [str(e) for e in find_out_of_bounds(module)] == [
        # only when %N > 16: said so, with the smallest such value
        "b.mlir:4:10: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg3 = 16) for some values of the symbols "
        "(%arg1 = 17)",
        # for every %N (the iteration depends on it: one example is given)
        "b.mlir:11:10: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg3 = 16) (for example with %arg1 = 0)"]
    # (%D has a dynamic size: not checked; the min-bounded loop is fine for every %N)


def test_context_of_an_inner_nest():
    text = """
        func.func @f(%A: memref<16xf64>) {
          affine.for %ii = 0 to TILES {
            affine.for %j = 0 to 4 {
              %a = affine.load %A[%ii * 4 + %j] : memref<16xf64>
            }
          }
          return
        }"""
    good = parse(text.replace("TILES", "4"))
    inner = func_of(good).body.ops[0].body.ops[0]
    model = extract(inner)                 # %ii is a parameter with 0 <= %ii < 4 as context
    assert str(model.context()) == "[p0] -> {  : 0 <= p0 <= 3 }"
    check_bounds(model)
    check_bounds(good)
    bad = parse(text.replace("TILES", "5"))
    inner = func_of(bad).body.ops[0].body.ops[0]
    assert bounds_error(extract(inner)) == (
        "b.mlir:5:12: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg2 = 0) for some values of the symbols "
        "(%arg1 = 4)")


def test_names_restart_in_each_function():
    module = parse("""
        func.func @g(%X: memref<4xf64>) {
          affine.for %i = 0 to 4 {
            %a = affine.load %X[%i] : memref<4xf64>
          }
          return
        }
        func.func @f(%A: memref<4xf64>, %B: memref<4xf64>) {
          affine.for %i = 0 to 5 {
            %a = affine.load %B[%i] : memref<4xf64>
          }
          return
        }""")
    assert bounds_error(module) == (
        "b.mlir:10:10: error: 'affine.load' op out-of-bounds access to memref<4xf64> (%arg1) in "
        "dimension 0: index 4 at iteration (%arg2 = 4)")
