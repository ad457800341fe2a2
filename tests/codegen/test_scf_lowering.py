"""The scf ops lowered to LLVM and run on numpy arrays: loops with iter_args (scalars and
memrefs), branches, while loops, parallel loops with reductions, switches, integer and unsigned
induction variables, scf values as subscripts and as bounds of affine loops; every result
checked against numpy or Python, on sizes that are multiples of nothing."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError

SUM_AND_MATMUL = """\
func.func @sum(%A: memref<17xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %c17 step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %A[%i] : memref<17xf64>
    %s = arith.addf %acc, %v : f64
    scf.yield %s : f64
  }
  return %r : f64
}
func.func @matmul(%A: memref<23x19xf64>, %B: memref<19x37xf64>, %C: memref<23x37xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c19 = arith.constant 19 : index
  %c23 = arith.constant 23 : index
  %c37 = arith.constant 37 : index
  scf.for %i = %c0 to %c23 step %c1 {
    scf.for %j = %c0 to %c37 step %c1 {
      %c = memref.load %C[%i, %j] : memref<23x37xf64>
      %r = scf.for %k = %c0 to %c19 step %c1 iter_args(%acc = %c) -> (f64) {
        %a = memref.load %A[%i, %k] : memref<23x19xf64>
        %b = memref.load %B[%k, %j] : memref<19x37xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %acc, %p : f64
        scf.yield %s : f64
      }
      memref.store %r, %C[%i, %j] : memref<23x37xf64>
    }
  }
  return
}
"""


def test_for_with_iter_args_and_nested_loops():
    c = polyopt.compile(SUM_AND_MATMUL)
    rng = np.random.default_rng(0)
    A = rng.standard_normal(17)
    assert c["sum"](A) == pytest.approx(A.sum())
    A, B, C = rng.standard_normal((23, 19)), rng.standard_normal((19, 37)), \
        rng.standard_normal((23, 37))
    expected = C + A @ B
    c["matmul"](A, B, C)
    assert np.allclose(C, expected)


BRANCHES = """\
func.func @clip(%A: memref<13xf64>, %t: f64, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  scf.for %i = %c0 to %c13 step %c1 {
    %v = memref.load %A[%i] : memref<13xf64>
    %big = arith.cmpf ogt, %v, %t : f64
    %w = scf.if %big -> (f64) {
      scf.yield %t : f64
    } else {
      %n = arith.negf %v : f64
      scf.yield %n : f64
    }
    memref.store %w, %A[%i] : memref<13xf64>
  }
  scf.if %flag {
    %z = arith.constant 0.0 : f64
    memref.store %z, %A[%c0] : memref<13xf64>
  }
  return
}
"""


@pytest.mark.parametrize("flag", [False, True])
def test_if_with_and_without_results(flag):
    A = np.random.default_rng(1).standard_normal(13)
    expected = np.where(A > 0.25, 0.25, -A)
    if flag:
        expected[0] = 0.0
    polyopt.compile(BRANCHES)["clip"](A, 0.25, int(flag))
    assert np.array_equal(A, expected)


WHILE = """\
func.func @collatz(%n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c0 = arith.constant 0 : i64
  %r:2 = scf.while (%x = %n, %k = %c0) : (i64, i64) -> (i64, i64) {
    %go = arith.cmpi sgt, %x, %c1 : i64
    scf.condition(%go) %x, %k : i64, i64
  } do {
  ^bb0(%y: i64, %j: i64):
    %r = arith.remsi %y, %c2 : i64
    %odd = arith.cmpi eq, %r, %c1 : i64
    %nx = scf.if %odd -> (i64) {
      %t = arith.muli %y, %c3 : i64
      %u = arith.addi %t, %c1 : i64
      scf.yield %u : i64
    } else {
      %h = arith.divsi %y, %c2 : i64
      scf.yield %h : i64
    }
    %nj = arith.addi %j, %c1 : i64
    scf.yield %nx, %nj : i64, i64
  }
  return %r#1 : i64
}
func.func @first_negative(%A: memref<9xf64>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %z = arith.constant 0.0 : f64
  %i = scf.while (%p = %c0) : (index) -> index {
    %in = arith.cmpi slt, %p, %c9 : index
    %more = scf.if %in -> (i1) {
      %v = memref.load %A[%p] : memref<9xf64>
      %nonneg = arith.cmpf oge, %v, %z : f64
      scf.yield %nonneg : i1
    } else {
      %f = arith.constant false
      scf.yield %f : i1
    }
    scf.condition(%more) %p : index
  } do {
  ^bb0(%q: index):
    %n = arith.addi %q, %c1 : index
    scf.yield %n : index
  }
  return %i : index
}
"""


def _collatz(n: int) -> int:
    k = 0
    while n > 1:
        n = 3 * n + 1 if n % 2 else n // 2
        k += 1
    return k


def test_while_loops():
    c = polyopt.compile(WHILE)
    for n in (1, 6, 27, 97):
        assert c["collatz"](n) == _collatz(n)
    for A in (np.array([1, 2, -3, 4, -5, 6, 7, 8, 9.0]), np.arange(9.0), -np.ones(9)):
        neg = np.nonzero(A < 0)[0]
        assert c["first_negative"](A) == (neg[0] if len(neg) else 9)


PARALLEL = """\
func.func @stats(%A: memref<7x9xf64>) -> (f64, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %z = arith.constant 0.0 : f64
  %m = arith.constant -1.0e300 : f64
  %s, %mx = scf.parallel (%i, %j) = (%c0, %c1) to (%c7, %c9) step (%c1, %c2) init (%z, %m) -> (f64, f64) {
    %v = memref.load %A[%i, %j] : memref<7x9xf64>
    scf.reduce(%v, %v : f64, f64) {
    ^bb0(%a: f64, %b: f64):
      %r = arith.addf %a, %b : f64
      scf.reduce.return %r : f64
    }, {
    ^bb0(%a: f64, %b: f64):
      %r = arith.maximumf %a, %b : f64
      scf.reduce.return %r : f64
    }
  }
  return %s, %mx : f64, f64
}
func.func @order(%A: memref<5xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %z = arith.constant 0.0 : f64
  %ten = arith.constant 10.0 : f64
  %r = scf.parallel (%i) = (%c0) to (%c5) step (%c1) init (%z) -> f64 {
    %v = memref.load %A[%i] : memref<5xf64>
    scf.reduce(%v : f64) {
    ^bb0(%acc: f64, %x: f64):
      %t = arith.mulf %acc, %ten : f64
      %r = arith.addf %t, %x : f64
      scf.reduce.return %r : f64
    }
  }
  return %r : f64
}
func.func @fill(%A: memref<6x11xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c11 = arith.constant 11 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c11) step (%c1, %c1) {
    %k = arith.muli %i, %c11 : index
    %l = arith.addi %k, %j : index
    %x = arith.index_cast %l : index to i64
    %f = arith.sitofp %x : i64 to f64
    memref.store %f, %A[%i, %j] : memref<6x11xf64>
  }
  return
}
"""


def test_parallel_loops_run_in_order_with_their_reductions():
    c = polyopt.compile(PARALLEL, threads=1)
    A = np.random.default_rng(2).standard_normal((7, 9))
    s, mx = c["stats"](A)
    assert s == pytest.approx(A[:, 1::2].sum()) and mx == A[:, 1::2].max()
    # the reduction is applied in iteration order: acc = acc * 10 + x
    assert c["order"](np.array([1.0, 2, 3, 4, 5])) == 12345.0
    F = np.zeros((6, 11))
    c["fill"](F)
    assert np.array_equal(F, np.arange(66.0).reshape(6, 11))


SWITCH = """\
func.func @pick(%k: index, %x: f64) -> f64 {
  %r = scf.index_switch %k -> f64
  case 2 {
    %two = arith.constant 2.0 : f64
    %y = arith.mulf %x, %two : f64
    scf.yield %y : f64
  }
  case -5 {
    %y = arith.negf %x : f64
    scf.yield %y : f64
  }
  default {
    %e = scf.execute_region -> f64 {
      %y = arith.addf %x, %x : f64
      %z = arith.addf %y, %x : f64
      scf.yield %z : f64
    }
    scf.yield %e : f64
  }
  return %r : f64
}
"""


def test_index_switch_and_execute_region():
    pick = polyopt.compile(SWITCH)["pick"]
    assert [pick(k, 1.5) for k in (2, -5, 0, 3, 7)] == [3.0, -1.5, 4.5, 4.5, 4.5]


INTEGERS = """\
func.func @count(%lb: i32, %ub: i32, %step: i32) -> i32 {
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = scf.for %i = %lb to %ub step %step iter_args(%n = %z) -> (i32) : i32 {
    %m = arith.addi %n, %one : i32
    scf.yield %m : i32
  }
  return %r : i32
}
func.func @sum_unsigned(%lb: i8, %ub: i8, %step: i8) -> i64 {
  %z = arith.constant 0 : i64
  %r = scf.for unsigned %i = %lb to %ub step %step iter_args(%s = %z) -> (i64) : i8 {
    %w = arith.extui %i : i8 to i64
    %t = arith.addi %s, %w : i64
    scf.yield %t : i64
  }
  return %r : i64
}
func.func @sum_signed(%lb: i8, %ub: i8, %step: i8) -> i64 {
  %z = arith.constant 0 : i64
  %r = scf.for %i = %lb to %ub step %step iter_args(%s = %z) -> (i64) : i8 {
    %w = arith.extsi %i : i8 to i64
    %t = arith.addi %s, %w : i64
    scf.yield %t : i64
  }
  return %r : i64
}
"""


def test_integer_and_unsigned_induction_variables():
    c = polyopt.compile(INTEGERS)
    for lb, ub, step in ((-7, 20, 3), (5, 5, 1), (9, 2, 1), (-100, -1, 7)):
        assert c["count"](lb, ub, step) == len(range(lb, ub, step))
    # -6 is 250 unsigned: 0, 50, ..., 200 run unsigned; nothing runs signed (0 < -6 is false)
    assert c["sum_unsigned"](0, -6, 50) == sum(range(0, 250, 50))
    assert c["sum_signed"](0, -6, 50) == 0
    assert c["sum_signed"](-20, 9, 4) == sum(range(-20, 9, 4))


MIXED = """\
func.func @tri(%A: memref<11x11xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  scf.for %i = %c0 to %n step %c1 {
    %lim = arith.addi %n, %c1 : index
    affine.for %j = 0 to min affine_map<()[s0] -> (s0, 11)>()[%lim] {
      %v = memref.load %A[%i, %j] : memref<11x11xf64>
      %w = arith.addf %v, %one : f64
      memref.store %w, %A[%i, %j] : memref<11x11xf64>
    }
  }
  affine.for %i = 0 to 11 {
    scf.for %j = %c0 to %i step %c1 {
      %v = affine.load %A[%i, symbol(%n)] : memref<11x11xf64>
      %w = arith.addf %v, %one : f64
      memref.store %w, %A[%j, %i] : memref<11x11xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("n", [0, 4, 10])
def test_scf_values_as_subscripts_and_affine_bounds(n):
    A = np.random.default_rng(n).standard_normal((11, 11))
    expected = A.copy()
    for i in range(n):
        expected[i, :min(n + 1, 11)] += 1
    for i in range(11):
        for j in range(i):
            expected[j, i] = expected[i, n] + 1
    polyopt.compile(MIXED)["tri"](A, n)
    assert np.array_equal(A, expected)


PING_PONG = """\
func.func @smooth(%A: memref<19xf64>, %B: memref<19xf64>, %steps: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c18 = arith.constant 18 : index
  %half = arith.constant 0.5 : f64
  %src, %dst = scf.for %t = %c0 to %steps step %c1 iter_args(%x = %A, %y = %B) -> (memref<19xf64>, memref<19xf64>) {
    scf.for %i = %c1 to %c18 step %c1 {
      %l = arith.subi %i, %c1 : index
      %r = arith.addi %i, %c1 : index
      %a = memref.load %x[%l] : memref<19xf64>
      %b = memref.load %x[%r] : memref<19xf64>
      %s = arith.addf %a, %b : f64
      %m = arith.mulf %s, %half : f64
      memref.store %m, %y[%i] : memref<19xf64>
    }
    scf.yield %y, %x : memref<19xf64>, memref<19xf64>
  }
  %v = memref.load %src[%c1] : memref<19xf64>
  return %v : f64
}
"""


@pytest.mark.parametrize("steps", [0, 1, 6])
def test_memref_iter_args(steps):
    rng = np.random.default_rng(steps)
    A, B = rng.standard_normal(19), rng.standard_normal(19)
    x, y = A.copy(), B.copy()
    for _ in range(steps):
        y[1:18] = (x[0:17] + x[2:19]) * 0.5
        x, y = y, x
    got = polyopt.compile(PING_PONG)["smooth"](A, B, steps)
    assert got == x[1]


def test_multi_block_execute_region_runs_its_branches():
    """Blocks joined by branches inside scf.execute_region (the way upstream writes an early
    exit); an unreachable block is not lowered."""
    text = """\
func.func @f(%c: i1, %x: f64) -> f64 {
  %r = scf.execute_region -> f64 {
    cf.cond_br %c, ^bb1, ^bb2(%x : f64)
  ^bb1:
    %y = arith.addf %x, %x : f64
    cf.br ^bb2(%y : f64)
  ^bb2(%v: f64):
    scf.yield %v : f64
  ^bb3:
    scf.yield %x : f64
  }
  %one = arith.constant 1.0 : f64
  %s = arith.addf %r, %one : f64
  return %s : f64
}
"""
    f = polyopt.compile(text)["f"]
    assert f(1, 3.0) == 7.0 and f(0, 3.0) == 4.0


STEP_LOOP = """
func.func @f(%A: memref<8xf64>, %s: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %r = scf.for %i = %c0 to %c8 step %s iter_args(%acc = %z) -> f64 {
    memref.store %one, %A[%i] : memref<8xf64>
    %n = arith.addf %acc, %one : f64
    scf.yield %n : f64
  }
  return %r : f64
}
"""


def test_a_step_that_is_not_positive_is_an_error_not_an_endless_loop():
    """Upstream leaves it undefined (mlir-opt-22 accepts a constant 0); the loop never ended."""
    from polyopt.codegen.jit import AssertionFailure
    fn = polyopt.compile(STEP_LOOP)["f"]
    a = np.zeros(8)
    assert fn(a, 3) == 3.0 and a.tolist() == [1, 0, 0, 1, 0, 0, 1, 0]
    for step in (0, -2):
        with pytest.raises(AssertionFailure, match=r"<input>:7:8: error: 'scf.for' step must "
                                                   r"be positive"):
            fn(np.zeros(8), step)
    constant = STEP_LOOP.replace("step %s", "step %c0")
    with pytest.raises(CodegenError, match="'scf.for' step must be positive, got 0"):
        polyopt.compile(constant)
