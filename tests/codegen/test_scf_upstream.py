"""scf programs run by `polyopt run` print what mlir-runner-22 prints for the same program
lowered by upstream (--convert-scf-to-cf and the LLVM conversions), with and without
--raise-scf-to-affine."""

from __future__ import annotations

import pytest

from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run

UPSTREAM_PASSES = ["--lower-affine", "--convert-scf-to-cf", "--convert-vector-to-llvm",
                   "--finalize-memref-to-llvm", "--convert-math-to-llvm",
                   "--convert-arith-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
                   "--reconcile-unrealized-casts"]

PRINT = "func.func private @printMemrefF64(memref<*xf64>)\n"

PROGRAMS = {
    # scf.parallel filling a matrix, a triangular scf.for nest with iter_args and scf.if
    "parallel_for_if": """\
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %A = memref.alloc() : memref<7x11xf64>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c11) step (%c1, %c1) {
    %ii = arith.index_cast %i : index to i64
    %jj = arith.index_cast %j : index to i64
    %c3 = arith.constant 3 : i64
    %p = arith.muli %ii, %c3 : i64
    %q = arith.addi %p, %jj : i64
    %c5 = arith.constant 5 : i64
    %r = arith.remsi %q, %c5 : i64
    %c2_i64 = arith.constant 2 : i64
    %s = arith.subi %r, %c2_i64 : i64
    %f = arith.sitofp %s : i64 to f64
    memref.store %f, %A[%i, %j] : memref<7x11xf64>
  }
  %z = arith.constant 0.0 : f64
  %sum = scf.for %i = %c0 to %c7 step %c2 iter_args(%acc = %z) -> (f64) {
    %t = scf.for %j = %i to %c11 step %c1 iter_args(%a2 = %acc) -> (f64) {
      %v = memref.load %A[%i, %j] : memref<7x11xf64>
      %big = arith.cmpf ogt, %v, %z : f64
      %n = scf.if %big -> (f64) {
        %w = arith.addf %a2, %v : f64
        scf.yield %w : f64
      } else {
        memref.store %z, %A[%i, %j] : memref<7x11xf64>
        scf.yield %a2 : f64
      }
      scf.yield %n : f64
    }
    scf.yield %t : f64
  }
  vector.print %sum : f64
  %U = memref.cast %A : memref<7x11xf64> to memref<*xf64>
  call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  return
}
""" + PRINT,
    # scf.while with two carried values, scf.parallel reductions, index_switch, i32 loops
    "while_reduce_switch": """\
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %one = arith.constant 1.0 : f64
  %half = arith.constant 0.5 : f64
  %w:2 = scf.while (%x = %c13, %acc = %one) : (index, f64) -> (index, f64) {
    %go = arith.cmpi sgt, %x, %c1 : index
    scf.condition(%go) %x, %acc : index, f64
  } do {
  ^bb0(%y: index, %a: f64):
    %c2 = arith.constant 2 : index
    %r = arith.remui %y, %c2 : index
    %n = scf.index_switch %r -> index
    case 0 {
      %h = arith.divui %y, %c2 : index
      scf.yield %h : index
    }
    default {
      %c3 = arith.constant 3 : index
      %t = arith.muli %y, %c3 : index
      %u = arith.addi %t, %c1 : index
      scf.yield %u : index
    }
    %na = arith.addf %a, %half : f64
    scf.yield %n, %na : index, f64
  }
  vector.print %w#1 : f64
  %z = arith.constant 0.0 : f64
  %c9 = arith.constant 9 : index
  %s, %m = scf.parallel (%i, %j) = (%c0, %c1) to (%c9, %c9) step (%c1, %c1) init (%z, %z) -> (f64, f64) {
    %k = arith.muli %i, %j : index
    %kk = arith.index_cast %k : index to i64
    %f = arith.sitofp %kk : i64 to f64
    scf.reduce(%f, %f : f64, f64) {
    ^bb0(%a: f64, %b: f64):
      %r = arith.addf %a, %b : f64
      scf.reduce.return %r : f64
    }, {
    ^bb0(%a: f64, %b: f64):
      %r = arith.maximumf %a, %b : f64
      scf.reduce.return %r : f64
    }
  }
  vector.print %s : f64
  vector.print %m : f64
  %lo = arith.constant -7 : i32
  %hi = arith.constant 20 : i32
  %st = arith.constant 3 : i32
  %cnt = scf.for %i = %lo to %hi step %st iter_args(%acc = %z) -> (f64) : i32 {
    %fi = arith.sitofp %i : i32 to f64
    %t = arith.addf %acc, %fi : f64
    scf.yield %t : f64
  }
  vector.print %cnt : f64
  %e = scf.execute_region -> f64 {
    %t = arith.mulf %cnt, %half : f64
    scf.yield %t : f64
  }
  vector.print %e : f64
  return
}
""",
}


@pytest.mark.parametrize("flags", [(), ("--raise-scf-to-affine",)])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_as_mlir_runner_runs_it(tmp_path, capsys, name, flags):
    text = PROGRAMS[name]
    ours = polyopt_run(tmp_path, capsys, text, *flags, name=f"{name}.mlir")
    upstream = lower_and_run(text, UPSTREAM_PASSES)
    assert mask_addresses(ours) == mask_addresses(upstream)
    assert ours.strip()
