"""Innermost loops ISL finds parallel reach LLVM with ``llvm.loop.parallel_accesses``: marked
where nothing is carried, never on a loop that carries a dependence, and the programs still
match numpy (PolyBench's lu on a size that is a multiple of nothing)."""

from __future__ import annotations

import numpy as np

import polyopt
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.codegen.loop_metadata import PARALLEL_ACCESSES
from polyopt.pipeline import load
from polyopt.schedules.parallel_accesses import annotate_parallel_innermost

# row i takes row k's multiples away: the j loop writes row i and reads row k of one array
LU = """\
func.func @f(%A: memref<29x29xf64>) {
  affine.for %i = 0 to 29 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) {
        %aij = affine.load %A[%i, %j] : memref<29x29xf64>
        %aik = affine.load %A[%i, %k] : memref<29x29xf64>
        %akj = affine.load %A[%k, %j] : memref<29x29xf64>
        %0 = arith.mulf %aik, %akj : f64
        %1 = arith.subf %aij, %0 : f64
        affine.store %1, %A[%i, %j] : memref<29x29xf64>
      }
      %aij = affine.load %A[%i, %j] : memref<29x29xf64>
      %ajj = affine.load %A[%j, %j] : memref<29x29xf64>
      %0 = arith.divf %aij, %ajj : f64
      affine.store %0, %A[%i, %j] : memref<29x29xf64>
    }
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 29 {
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {
        %aij = affine.load %A[%i, %j] : memref<29x29xf64>
        %aik = affine.load %A[%i, %k] : memref<29x29xf64>
        %akj = affine.load %A[%k, %j] : memref<29x29xf64>
        %0 = arith.mulf %aik, %akj : f64
        %1 = arith.subf %aij, %0 : f64
        affine.store %1, %A[%i, %j] : memref<29x29xf64>
      }
    }
  }
  return
}
"""

LOOPS = """\
func.func @f(%A: memref<13x17xf64>, %B: memref<13x17xf64>, %s: memref<13xf64>) {
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 17 {
      %a = affine.load %A[%i, %j] : memref<13x17xf64>
      affine.store %a, %B[%i, %j] : memref<13x17xf64>
    }
    affine.for %j = 1 to 17 {
      %a = affine.load %A[%i, %j - 1] : memref<13x17xf64>
      affine.store %a, %A[%i, %j] : memref<13x17xf64>
    }
    affine.for %j = 0 to 17 {
      %t = affine.load %s[%i] : memref<13xf64>
      %a = affine.load %B[%i, %j] : memref<13x17xf64>
      %0 = arith.addf %t, %a : f64
      affine.store %0, %s[%i] : memref<13xf64>
    }
    %z = arith.constant 0.0 : f64
    %r = affine.for %j = 0 to 17 iter_args(%acc = %z) -> f64 {
      %a = affine.load %B[%i, %j] : memref<13x17xf64>
      %0 = arith.addf %acc, %a : f64
      affine.yield %0 : f64
    }
    affine.store %r, %s[%i] : memref<13xf64>
  }
  return
}
"""


def test_only_loops_that_carry_nothing_are_marked():
    module = load(LOOPS)
    assert annotate_parallel_innermost(module) == 1
    loops = [op for op in module.walk() if isinstance(op, AffineForOp)][1:]
    copy, shift, total, carried = loops
    assert PARALLEL_ACCESSES in copy.attributes
    assert not any(PARALLEL_ACCESSES in lp.attributes for lp in (shift, total, carried))


def test_lu_under_hopt_marks_its_row_updates_and_matches_numpy():
    rng = np.random.default_rng(8)
    a = rng.random((29, 29)) + 29 * np.eye(29)
    compiled = polyopt.compile(LU, hopt=True)
    assert "llvm.loop.parallel_accesses" in compiled.llvm_ir
    got = a.copy()
    compiled["f"](got)
    want = a.copy()
    polyopt.compile(LU)["f"](want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    lower = np.tril(want, -1) + np.eye(29)
    np.testing.assert_allclose(lower @ np.triu(want), a, rtol=1e-12)
