"""Integer division by zero and INT_MIN / -1 (undefined in MLIR, a trap on x86 that would kill
the Python process) are an error of the call, on scalars and vectors."""

import numpy as np
import pytest

import polyopt

TEXT = """
func.func @d(%a: i32, %b: i32) -> i32 {
  %q = arith.divsi %a, %b : i32
  return %q : i32
}
func.func @r(%a: i64, %b: i64) -> i64 {
  %q = arith.remui %a, %b : i64
  return %q : i64
}
func.func @v(%A: memref<4xi32>, %B: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %A[%c0] : memref<4xi32>, vector<4xi32>
  %b = vector.load %B[%c0] : memref<4xi32>, vector<4xi32>
  %q = arith.floordivsi %a, %b : vector<4xi32>
  vector.store %q, %A[%c0] : memref<4xi32>, vector<4xi32>
  return
}
"""


@pytest.fixture(scope="module")
def compiled():
    return polyopt.compile(TEXT, filename="d.mlir")


def test_defined_divisions_run(compiled):
    assert compiled["d"](7, 2) == 3 and compiled["d"](-7, 2) == -3
    assert compiled["r"](2**63 - 1, 10) == (2**63 - 1) % 10
    A = np.array([7, -7, 8, 9], np.int32)
    compiled["v"](A, np.array([2, 2, 5, 3], np.int32))
    assert list(A) == [3, -4, 1, 3]


@pytest.mark.parametrize("fn, args, message", [
    ("d", (7, 0), "d.mlir:3:8: error: 'arith.divsi' divides by zero or overflows "
                  "(INT_MIN / -1) at run time"),
    ("d", (-2**31, -1), "d.mlir:3:8: error: 'arith.divsi' divides by zero or overflows "
                        "(INT_MIN / -1) at run time"),
    ("r", (7, 0), "d.mlir:7:8: error: 'arith.remui' divides by zero at run time"),
])
def test_undefined_scalar_divisions_are_errors(compiled, fn, args, message):
    with pytest.raises(RuntimeError) as info:
        compiled[fn](*args)
    assert str(info.value) == message


def test_an_undefined_lane_of_a_vector_division_is_an_error(compiled):
    with pytest.raises(RuntimeError, match=r"^d.mlir:14:8: error: 'arith.floordivsi' divides by "
                                           r"zero"):
        compiled["v"](np.array([7, -7, 8, 9], np.int32), np.array([2, 2, 0, 3], np.int32))


def test_constant_divisors_need_no_check():
    c = polyopt.compile("func.func @k(%a: i32) -> i32 {\n  %c = arith.constant 7 : i32\n"
                        "  %q = arith.divsi %a, %c : i32\n  return %q : i32\n}\n")
    assert "polyopt_assert_fail" not in c.optimized_llvm_ir()


DYNAMIC_BASIS = """\
func.func @split(%x: index, %b: index) -> (index, index) {
  %r:2 = affine.delinearize_index %x into (4, %b) : index, index
  return %r#0, %r#1 : index, index
}
func.func @semi(%x: index, %s: index) -> index {
  %r = affine.apply affine_map<(d0)[s0] -> (d0 mod s0)>(%x)[%s]
  return %r : index
}
"""


def test_dynamic_divisors_of_index_ops_are_checked_at_run_time():
    """A basis entry or a symbol divisor of 0 is an error of the call, not a SIGFPE."""
    c = polyopt.compile(DYNAMIC_BASIS, filename="b.mlir")
    assert c["split"](23, 5) == (4, 3) and c["semi"](-7, 3) == 2
    with pytest.raises(RuntimeError, match=r"^b.mlir:2:10: error: 'affine.delinearize_index' "
                                           r"divides by zero"):
        c["split"](23, 0)
    with pytest.raises(RuntimeError, match=r"^b.mlir:6:8: error: 'affine.apply' divides by zero"):
        c["semi"](5, 0)
