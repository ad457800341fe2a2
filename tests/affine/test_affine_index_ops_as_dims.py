"""Results of ``affine.delinearize_index`` and ``affine.linearize_index`` are valid affine
dimensions when their operands are (MLIR's ``isValidDim``: they are special forms of
``affine.apply``), and valid symbols when their operands are symbols (they are ``Pure``):
mlir-opt-22 reads these programs, polyopt prints them as it does and runs them as
mlir-runner-22 does.  Operands that are neither still make them neither."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run, mlir_opt, mlir_opt_error

_UPSTREAM_PASSES = ["--lower-affine", "--convert-scf-to-cf", "--convert-vector-to-llvm",
                    "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
                    "--convert-func-to-llvm", "--convert-cf-to-llvm",
                    "--reconcile-unrealized-casts"]

# A[i][j] = 10 * i + j, B[k] = k; then sums of loads subscripted by the index ops' results
_PROGRAM = """func.func @main() {
  %n = arith.constant 10 : index
  %A = memref.alloc() : memref<10x10xindex>
  %B = memref.alloc() : memref<100xindex>
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %v = affine.apply affine_map<(d0, d1) -> (d0 * 10 + d1)>(%i, %j)
      affine.store %v, %A[%i, %j] : memref<10x10xindex>
      affine.store %v, %B[%v] : memref<100xindex>
    }
  }
  %zero = arith.constant 0 : index
  %s1 = affine.for %i0 = 0 to 100 iter_args(%acc = %zero) -> (index) {
    %q:2 = affine.delinearize_index %i0 into (10, 10) : index, index
    %x = affine.load %A[%q#0, %i0 floordiv 10] : memref<10x10xindex>
    %y = affine.load %A[%i0 mod 10, %q#1] : memref<10x10xindex>
    %w = arith.muli %x, %y : index
    %a = arith.addi %acc, %w : index
    affine.yield %a : index
  }
  vector.print %s1 : index
  %s2 = affine.for %i = 0 to 10 iter_args(%acc = %zero) -> (index) {
    %t = affine.for %j = 0 to 10 iter_args(%acc2 = %acc) -> (index) {
      %l = affine.linearize_index [%j, %i] by (%n, 10) : index
      %x = affine.load %B[%l] : memref<100xindex>
      %next = affine.apply affine_map<(d0) -> ((d0 * 7 + 3) mod 100)>(%l)
      %y = affine.load %B[%next] : memref<100xindex>
      %w = arith.muli %x, %y : index
      %a = arith.addi %acc2, %w : index
      affine.yield %a : index
    }
    affine.yield %t : index
  }
  vector.print %s2 : index
  %s3 = affine.for %i = 0 to 10 iter_args(%acc = %zero) -> (index) {
    %q:2 = affine.delinearize_index %n into (%n, 4) : index, index
    %t = affine.for %j = 0 to %q#1 iter_args(%acc2 = %acc) -> (index) {
      %x = affine.load %A[%i, %j + %q#0] : memref<10x10xindex>
      %a = arith.addi %acc2, %x : index
      affine.yield %a : index
    }
    affine.yield %t : index
  }
  vector.print %s3 : index
  memref.dealloc %A : memref<10x10xindex>
  memref.dealloc %B : memref<100xindex>
  return
}
"""


def test_index_op_results_as_dims_print_as_mlir_opt():
    assert str(polyopt.parse(_PROGRAM)) == mlir_opt(_PROGRAM)


def test_index_op_results_as_dims_run_as_mlir_runner(tmp_path, capfd):
    out = polyopt_run(tmp_path, capfd, _PROGRAM)
    assert out == lower_and_run(_PROGRAM, _UPSTREAM_PASSES)
    A = np.arange(100).reshape(10, 10)
    k = np.arange(100)
    s1 = int(sum(A[i // 10, i // 10] * A[i % 10, i % 10] for i in k))
    s2 = int(sum(l * ((l * 7 + 3) % 100) for l in k))
    s3 = int(sum(A[i, j + 2] for i in range(10) for j in range(2)))   # 10 into (10, 4): (2, 2)
    assert out == f"{s1}\n{s2}\n{s3}\n"


@pytest.mark.parametrize("index_op", [
    "%q:2 = affine.delinearize_index %k into (10, 10) : index, index",
    "%q = affine.linearize_index [%k, %i] by (10, 10) : index",
])
def test_index_op_of_a_non_dim_is_not_a_dim(index_op):
    # %k (an arith.addi of an induction variable) is neither a dimension nor a symbol
    ref = "%q#0" if ":2" in index_op else "%q"
    text = f"""func.func @f(%A: memref<100xf32>, %n: index) {{
  affine.for %i = 0 to 10 {{
    %k = arith.addi %i, %n : index
    {index_op}
    %v = affine.load %A[{ref}] : memref<100xf32>
  }}
  return
}}
"""
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


def test_index_op_of_a_dim_is_not_a_symbol():
    text = """func.func @f(%n: index) {
  affine.for %i = 0 to 100 {
    %q:2 = affine.delinearize_index %i into (10, 10) : index, index
    affine.for %j = 0 to %q#1 {
    }
  }
  return
}
"""
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


def test_index_op_of_a_parallel_iv_in_if_and_for_bounds_prints_as_mlir_opt():
    text = """func.func @f(%A: memref<100xf32>) {
  affine.parallel (%i) = (0) to (100) {
    %q:2 = affine.delinearize_index %i into (10, 10) : index, index
    affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%q#1) {
      %v = affine.load %A[%q#0 * 10] : memref<100xf32>
    }
    affine.for %j = affine_map<(d0) -> (d0)>(%q#0) to 10 {
    }
  }
  return
}
"""
    assert str(polyopt.parse(text)) == mlir_opt(text)


def test_index_op_of_a_dim_in_a_symbol_position_of_affine_apply_is_refused():
    text = """func.func @f() {
  affine.for %i = 0 to 100 {
    %q:2 = affine.delinearize_index %i into (10, 10) : index, index
    %a = affine.apply affine_map<()[s0] -> (s0 + 1)>()[%q#0]
  }
  return
}
"""
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)
