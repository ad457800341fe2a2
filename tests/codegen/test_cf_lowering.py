"""Functions of several blocks run: branches become LLVM branches, block arguments phis
(MLIR's --convert-cf-to-llvm), checked against numpy and Python."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from upstream_mlir import mlir_opt

SUM = """func.func @sum(%A: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^bb1(%c0, %z : index, f64)
^bb1(%i: index, %acc: f64):
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^bb2, ^bb3
^bb2:
  %v = memref.load %A[%i] : memref<?xf64>
  %acc2 = arith.addf %acc, %v : f64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^bb1(%i2, %acc2 : index, f64)
^bb3:
  return %acc : f64
}
"""


@pytest.mark.parametrize("hopt", [False, True])
def test_a_loop_of_branches_sums(hopt):
    f = polyopt.compile(SUM, hopt=hopt)["sum"]
    a = np.random.default_rng(0).standard_normal(37)
    for n in (0, 1, 5, 37):
        assert f(a, n) == pytest.approx(a[:n].sum())


SWITCH = """func.func @f(%c: i1, %x: i32, %b: i8) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2(%x : i32)
^bb1:
  %r = scf.execute_region -> i32 {
    cf.br ^bb1
  ^bb1:
    %y = arith.addi %x, %x : i32
    scf.yield %y : i32
  }
  cf.br ^bb2(%r : i32)
^bb2(%a: i32):
  cf.switch %x : i32, [
    default: ^bb3(%a : i32),
    42: ^bb4,
    -7: ^bb3(%x : i32),
    42: ^bb5(%x : i32)
  ]
^bb3(%v: i32):
  cf.switch %b : i8, [
    default: ^bb4,
    -1: ^bb5(%v : i32)
  ]
^bb4:
  %m = arith.constant -1 : i32
  return %m : i32
^bb5(%w: i32):
  return %w : i32
^bb6:
  return %x : i32
}
"""


def _switch_reference(c, x, b):
    a = 2 * x if c else x
    if x == 42:         # the first of two equal cases is taken
        return -1
    v = x if x == -7 else a
    return v if b == -1 else -1


def test_switch_execute_region_and_unreachable_block():
    f = polyopt.compile(SWITCH)["f"]
    for c in (0, 1):
        for x in (5, 42, -7, 0):
            for b in (-1, 3):
                assert f(c, x, b) == _switch_reference(c, x, b), (c, x, b)


def test_one_cond_br_passing_different_values_to_the_same_block():
    """Both edges of the cond_br reach ^bb1 with their own value: the phi tells them apart by
    an edge block each."""
    text = """func.func @g(%c: i1, %x: f32, %y: f32) -> f32 {
  cf.cond_br %c, ^bb1(%x : f32), ^bb1(%y : f32)
^bb1(%v: f32):
  return %v : f32
}
"""
    g = polyopt.compile(text)["g"]
    assert g(1, 2.0, 3.0) == 2.0 and g(0, 2.0, 3.0) == 3.0


def test_block_arguments_of_memref_type_with_dynamic_sizes():
    text = """func.func @pick(%c: i1, %a: memref<?xf32>, %b: memref<?xf32>) -> f32 {
  cf.cond_br %c, ^bb1(%a : memref<?xf32>), ^bb1(%b : memref<?xf32>)
^bb1(%m: memref<?xf32>):
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c1 : memref<?xf32>
  %i = arith.subi %n, %c1 : index
  %v = memref.load %m[%i] : memref<?xf32>
  return %v : f32
}
"""
    text = text.replace("%n = memref.dim %m, %c1", "%c0 = arith.constant 0 : index\n"
                        "  %n = memref.dim %m, %c0")
    f = polyopt.compile(text)["pick"]
    a = np.arange(5, dtype=np.float32)
    b = np.arange(9, dtype=np.float32) * 10
    assert f(1, a, b) == 4.0 and f(0, a, b) == 80.0


WHILE = """func.func @collatz(%n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c0 = arith.constant 0 : i64
  %r:2 = scf.while (%x = %n, %steps = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi sgt, %x, %c1 : i64
    scf.condition(%more) %x, %steps : i64, i64
  } do {
  ^bb0(%x: i64, %steps: i64):
    %rem = arith.remsi %x, %c2 : i64
    %odd = arith.cmpi ne, %rem, %c0 : i64
    %next = scf.if %odd -> i64 {
      %t = arith.muli %x, %c3 : i64
      %t1 = arith.addi %t, %c1 : i64
      scf.yield %t1 : i64
    } else {
      %h = arith.divsi %x, %c2 : i64
      scf.yield %h : i64
    }
    %s1 = arith.addi %steps, %c1 : i64
    scf.yield %next, %s1 : i64, i64
  }
  return %r#1 : i64
}
"""


def _collatz(n):
    steps = 0
    while n > 1:
        n = 3 * n + 1 if n % 2 else n // 2
        steps += 1
    return steps


@pytest.mark.parametrize("hopt", [False, True])
def test_upstream_lowering_of_a_while_loop_runs(hopt):
    """mlir-opt's --convert-scf-to-cf of an scf.while (a loop whose header is not a counted
    loop's) runs through the branches as written, under every pipeline."""
    cf = mlir_opt(WHILE, "--convert-scf-to-cf")
    assert "cf.cond_br" in cf
    f = polyopt.compile(cf, hopt=hopt)["collatz"]
    for n in (1, 2, 3, 7, 27, 97):
        assert f(n) == _collatz(n)
