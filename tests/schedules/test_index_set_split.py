"""Index-set splitting: an innermost loop whose carried dependences all have an end at one
iteration (floyd-warshall's ``j = k``) runs as the ranges before, at and after it, the two outer
ones parallel and annotated for LLVM (``llvm.loop.parallel_accesses``).  Each split nest is
executed against the unchanged program and numpy on sizes that are multiples of nothing; loops
whose dependences do not meet at one iteration stay as they are."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
import pytest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.affine.printer import print_module
from polyopt.codegen.loop_metadata import PARALLEL_ACCESSES
from polyopt.pipeline import load
from polyopt.schedules.index_set_split import split_at_carrying_iteration, split_innermost_loops
from upstream_mlir import mlir_opt

FLOYD_WARSHALL = """\
func.func @f(%path: memref<37x37xi32>) {
  affine.for %k = 0 to 37 {
    affine.for %i = 0 to 37 {
      affine.for %j = 0 to 37 {
        %pij = affine.load %path[%i, %j] : memref<37x37xi32>
        %pik = affine.load %path[%i, %k] : memref<37x37xi32>
        %pkj = affine.load %path[%k, %j] : memref<37x37xi32>
        %0 = arith.addi %pik, %pkj : i32
        %1 = arith.cmpi slt, %pij, %0 : i32
        %2 = arith.select %1, %pij, %0 : i32
        affine.store %2, %path[%i, %j] : memref<37x37xi32>
      }
    }
  }
  return
}
"""

# the row is scaled by its element one column to the right of the diagonal: the split point
# k + 1 leaves the loop's range at the last row
SCALE_BY_NEXT = """\
func.func @f(%A: memref<23x29xf64>) {
  affine.for %k = 0 to 23 {
    affine.for %j = 0 to 29 {
      %a = affine.load %A[%k, %j] : memref<23x29xf64>
      %p = affine.load %A[%k, %k + 1] : memref<23x29xf64>
      %0 = arith.mulf %a, %p : f64
      affine.store %0, %A[%k, %j] : memref<23x29xf64>
    }
  }
  return
}
"""

RECURRENCE = """\
func.func @f(%A: memref<31xf64>) {
  affine.for %j = 1 to 31 {
    %a = affine.load %A[%j - 1] : memref<31xf64>
    %b = affine.load %A[%j] : memref<31xf64>
    %0 = arith.addf %a, %b : f64
    affine.store %0, %A[%j] : memref<31xf64>
  }
  return
}
"""

# two iterations carry (j = k and j = k + 3): no single split point
TWO_POINTS = """\
func.func @f(%A: memref<17x19xf64>) {
  affine.for %k = 0 to 13 {
    affine.for %j = 0 to 19 {
      %a = affine.load %A[%k, %j] : memref<17x19xf64>
      %p = affine.load %A[%k, %k] : memref<17x19xf64>
      %q = affine.load %A[%k, %k + 3] : memref<17x19xf64>
      %0 = arith.mulf %a, %p : f64
      %1 = arith.addf %0, %q : f64
      affine.store %1, %A[%k, %j] : memref<17x19xf64>
    }
  }
  return
}
"""


def innermost(module):
    return [op for op in module.walk() if isinstance(op, AffineForOp)
            and not any(isinstance(o, AffineForOp) for o in op.walk() if o is not op)]


def run(src, *arrays, **flags):
    out = [a.copy() for a in arrays]
    polyopt.compile(src, **flags)["f"](*out)
    return out


def floyd_warshall(path):
    path = path.copy()
    for k in range(path.shape[0]):
        path = np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :])
    return path


def test_floyd_warshall_splits_at_k_and_matches():
    module = load(FLOYD_WARSHALL)
    (loop,) = innermost(module)
    pieces = split_at_carrying_iteration(loop)
    assert pieces is not None
    before, at, after = pieces
    assert PARALLEL_ACCESSES in before.attributes and PARALLEL_ACCESSES in after.attributes
    assert PARALLEL_ACCESSES not in at.attributes
    text = print_module(module)
    assert "affine.for %arg3 = 0 to #map(%arg1)" in text, text
    assert mlir_opt(text) == text
    rng = np.random.default_rng(6)
    path = rng.integers(1, 100, (37, 37)).astype(np.int32)
    (want,) = run(FLOYD_WARSHALL, path)
    assert np.array_equal(want, floyd_warshall(path))
    (got,) = run(text, path)
    assert np.array_equal(got, want)
    notes = []
    (got,) = run(FLOYD_WARSHALL, path, hopt=True, remark=lambda loc, m: notes.append(m))
    assert np.array_equal(got, want)
    assert any("1 innermost loop(s) split around the iteration" in m for m in notes), notes


def test_the_pieces_reach_llvm_as_parallel_loops_and_are_vectorized():
    compiled = polyopt.compile(FLOYD_WARSHALL, hopt=True)
    ir = compiled.llvm_ir
    # the two ranges beside j = k (the single iteration at it needs nothing)
    assert ir.count("!llvm.loop !") == 2 and "llvm.loop.parallel_accesses" in ir
    mod = llvm.parse_assembly(ir)
    mod.verify()
    optimized = compiled.optimized_llvm_ir()
    # no run-time alias check (LLVM names its blocks vector.memcheck), and vector minima
    assert "vector.body" in optimized and "vector.memcheck" not in optimized
    assert "call <" in optimized and "@llvm.smin.v" in optimized


def test_a_split_point_past_the_range_and_a_float_body():
    rng = np.random.default_rng(7)
    a = rng.random((23, 29)) + 0.5
    (want,) = run(SCALE_BY_NEXT, a)
    # in program order the elements after k + 1 are scaled by the new A[k][k + 1]
    ref = a.copy()
    for k in range(23):
        for j in range(29):
            ref[k, j] = ref[k, j] * ref[k, k + 1]
    np.testing.assert_array_equal(want, ref)
    module = load(SCALE_BY_NEXT)
    assert split_innermost_loops(module) == 1
    (got,) = run(print_module(module), a)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src", [RECURRENCE, TWO_POINTS], ids=["recurrence", "two-points"])
def test_loops_whose_dependences_do_not_meet_at_one_iteration_stay(src):
    module = load(src)
    before = print_module(module)
    assert split_innermost_loops(module) == 0
    assert print_module(module) == before
