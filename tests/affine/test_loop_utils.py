"""Loop utilities (polyopt.affine.loop_utils) and the unroll-and-jam legality check
(polyopt.schedules.loop_legality): golden IR for unroll / unroll-and-jam / promotion, execution
of every transformation against the untransformed code on trip counts that are not multiples of
the factors (1, 5, 17 with factors 2, 3, 4, 8; constant and symbolic bounds, iter_args),
refusals that name the loop and leave the IR untouched, the legality check against execution,
and acceptance of the printed IR by mlir-opt-22.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.affine_expr import dim, symbol
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.affine.loop_utils import (constant_trip_count, get_perfectly_nested_loops,
                                       loop_runs_at_least_once, peel_last_iterations,
                                       promote_if_single_iteration, simplify_affine_expr,
                                       split_sum_chains, trip_count_divisor, unroll,
                                       unroll_full, unroll_jam)
from polyopt.affine.verifier import verify
from polyopt.schedules.loop_legality import unroll_jam_is_legal
from run_helpers import assert_same_run, random_args
from upstream_mlir import assert_mlir_opt_prints_back

# ---------------------------------------------------------------------------------------------
# helpers


def func_of(module):
    return next(op for op in module.regions[0].blocks[0].ops if op.name == "func.func")


def parse_func(text: str):
    module = polyopt.parse(textwrap.dedent(text), "t.mlir")
    return module, func_of(module)


def loops_of(op) -> list[AffineForOp]:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def transformed(text: str, transform) -> str:
    module, func = parse_func(text)
    transform(func)
    verify(module)
    return str(module)


# ---------------------------------------------------------------------------------------------
# trip counts, linear forms, intervals


def test_trip_counts_and_divisors():
    _, func = parse_func("""
        func.func @f(%n: index) {
          affine.for %i = 0 to 10 {
            affine.for %j = affine_map<(d0) -> (d0 * 4)>(%i) to affine_map<(d0) -> (d0 * 4 + 6)>(%i) step 2 {
              affine.for %k = 0 to affine_map<()[s0] -> (s0 * 8)>()[%n] step 2 {
                affine.for %l = 0 to min affine_map<(d0) -> (12, d0 * 4 + 8)>(%i) {
                }
              }
            }
          }
          return
        }""")
    i, j, k, l = loops_of(func)
    assert [constant_trip_count(x) for x in (i, j, k, l)] == [10, 3, None, None]
    assert [trip_count_divisor(x) for x in (i, j, k, l)] == [10, 3, 4, 4]
    # 0 to min(12, 4 * %i + 8) with %i in [0, 9]: at least 8 iterations
    assert loop_runs_at_least_once(l) and loop_runs_at_least_once(j)
    assert not loop_runs_at_least_once(k)          # %n may be 0


def test_simplify_affine_expr_is_linear_canonical_form():
    d0, d1, s0 = dim(0), dim(1), symbol(0)
    assert str(simplify_affine_expr((d0 + 1) * 4 + d1 - 3)) == "d0 * 4 + d1 + 1"
    assert str(simplify_affine_expr((d0 * 8 + d1 + 9).floordiv(4))) == \
        "d0 * 2 + (d1 + 1) floordiv 4 + 2"
    assert str(simplify_affine_expr((d0 * 4 + s0 - d0 * 4) % 3)) == "s0 mod 3"
    for e in ((d0 + 1) * 4 + d1 - 3, (d0 * 8 + d1 + 9).floordiv(4), (d0 - d1 * 5) % 4,
              (d0 * 3 - 7).ceildiv(2)):
        s = simplify_affine_expr(e)
        for x in range(-9, 10):
            for y in range(-4, 5):
                assert s.evaluate([x, y], [0]) == e.evaluate([x, y], [0])


_exprs = st.recursive(
    st.one_of(st.builds(dim, st.integers(0, 1)), st.builds(symbol, st.just(0)),
              st.integers(-9, 9)),
    lambda kids: st.one_of(
        st.builds(lambda a, b: a + b, kids, kids),
        st.builds(lambda a, b: a - b, kids, kids),
        st.builds(lambda a, k: a * k, kids, st.integers(-5, 5)),
        st.builds(lambda a, k: a.floordiv(k) if not isinstance(a, int) else a // k, kids,
                  st.integers(1, 6)),
        st.builds(lambda a, k: a.ceildiv(k) if not isinstance(a, int) else -(-a // k), kids,
                  st.integers(1, 6)),
        st.builds(lambda a, k: a % k, kids, st.integers(1, 6))),
    max_leaves=10).filter(lambda e: not isinstance(e, int))


@settings(max_examples=300, deadline=None)
@given(_exprs, st.lists(st.integers(-30, 30), min_size=3, max_size=3))
def test_simplify_affine_expr_never_changes_a_value(e, point):
    s = simplify_affine_expr(e)
    assert s.evaluate(point[:2], point[2:]) == e.evaluate(point[:2], point[2:])
    assert simplify_affine_expr(s) == s           # a canonical form


# ---------------------------------------------------------------------------------------------
# unroll


COPY_10 = """
func.func @f(%A: memref<10xf64>, %B: memref<10xf64>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf64>
    affine.store %a, %B[%i] : memref<10xf64>
  }
  return
}
"""

# 10 = 2 * 4 + 2: the main loop runs 0 to 8 step 4, the cleanup loop the last two iterations
UNROLL_10_BY_4 = """\
module {
  func.func @f(%arg0: memref<10xf64>, %arg1: memref<10xf64>) {
    affine.for %arg2 = 0 to 8 step 4 {
      %0 = affine.load %arg0[%arg2] : memref<10xf64>
      affine.store %0, %arg1[%arg2] : memref<10xf64>
      %1 = affine.load %arg0[%arg2 + 1] : memref<10xf64>
      affine.store %1, %arg1[%arg2 + 1] : memref<10xf64>
      %2 = affine.load %arg0[%arg2 + 2] : memref<10xf64>
      affine.store %2, %arg1[%arg2 + 2] : memref<10xf64>
      %3 = affine.load %arg0[%arg2 + 3] : memref<10xf64>
      affine.store %3, %arg1[%arg2 + 3] : memref<10xf64>
    }
    affine.for %arg2 = 8 to 10 {
      %0 = affine.load %arg0[%arg2] : memref<10xf64>
      affine.store %0, %arg1[%arg2] : memref<10xf64>
    }
    return
  }
}
"""


def test_unroll_with_cleanup_golden():
    module, func = parse_func(COPY_10)
    main, rest = unroll(loops_of(func)[0], 4)
    verify(module)
    assert str(module) == UNROLL_10_BY_4
    assert (main.step, rest.step) == (4, 1)
    assert_mlir_opt_prints_back(str(module))


# symbolic upper bound: the split point is a map of %n; the cleanup starts at max(0, split)
# because nothing says %n >= 0 (for %n < 0 the split would fall below the lower bound)
UNROLL_SYMBOLIC = """\
#map = affine_map<()[s0] -> ((s0 floordiv 2) * 2)>
#map1 = affine_map<(d0) -> (d0 + 1)>
#map2 = affine_map<()[s0] -> (0, (s0 floordiv 2) * 2)>
module {
  func.func @f(%arg0: memref<?xf64>, %arg1: index) {
    affine.for %arg2 = 0 to #map()[%arg1] step 2 {
      %0 = arith.index_cast %arg2 : index to i64
      %1 = arith.sitofp %0 : i64 to f64
      affine.store %1, %arg0[%arg2] : memref<?xf64>
      %2 = affine.apply #map1(%arg2)
      %3 = arith.index_cast %2 : index to i64
      %4 = arith.sitofp %3 : i64 to f64
      affine.store %4, %arg0[%arg2 + 1] : memref<?xf64>
    }
    affine.for %arg2 = max #map2()[%arg1] to %arg1 {
      %0 = arith.index_cast %arg2 : index to i64
      %1 = arith.sitofp %0 : i64 to f64
      affine.store %1, %arg0[%arg2] : memref<?xf64>
    }
    return
  }
}
"""


def test_unroll_symbolic_bound_golden():
    """Non-affine users of the IV read an ``affine.apply``; affine ones fold it."""
    text = """
        func.func @f(%A: memref<?xf64>, %n: index) {
          affine.for %i = 0 to %n {
            %x = arith.index_cast %i : index to i64
            %f = arith.sitofp %x : i64 to f64
            affine.store %f, %A[%i] : memref<?xf64>
          }
          return
        }"""
    out = transformed(text, lambda f: unroll(loops_of(f)[0], 2))
    assert out == UNROLL_SYMBOLIC
    assert_mlir_opt_prints_back(out)


REDUCE_CONST = """
func.func @f(%A: memref<17xf64>, %B: memref<17xf64>, %S: memref<1xf64>) {
  %z = arith.constant 0.0 : f64
  %s = affine.for %i = 0 to {N} iter_args(%acc = %z) -> (f64) {
    %a = affine.load %A[%i] : memref<17xf64>
    %t = arith.addf %acc, %a : f64
    affine.store %t, %B[%i] : memref<17xf64>
    affine.yield %t : f64
  }
  affine.store %s, %S[0] : memref<1xf64>
  return
}
"""

REDUCE_SYM = """
func.func @f(%A: memref<17xf64>, %B: memref<17xf64>, %S: memref<1xf64>, %lo: index, %n: index) {
  %z = arith.constant 0.0 : f64
  %s = affine.for %i = %lo to %n step 2 iter_args(%acc = %z) -> (f64) {
    %a = affine.load %A[%i] : memref<17xf64>
    %t = arith.addf %acc, %a : f64
    affine.store %t, %B[%i] : memref<17xf64>
    affine.yield %t : f64
  }
  affine.store %s, %S[0] : memref<1xf64>
  return
}
"""


@pytest.mark.parametrize("factor", [2, 3, 4, 8])
@pytest.mark.parametrize("trip", [1, 5, 17])
def test_unroll_constant_trip_counts_execute_like_the_original(trip, factor):
    text = REDUCE_CONST.replace("{N}", str(trip))
    module, func = parse_func(text)
    main, rest = unroll(loops_of(func)[0], factor)
    verify(module)
    # the loop-carried sum goes through the main loop, then the cleanup loop; loops left with
    # one iteration are promoted, a trip count below the factor unrolls fully
    if trip >= factor:
        assert (main is None) == (trip // factor == 1)
        assert (rest is None) == (trip % factor <= 1)
    else:
        assert main is None and rest is None and not loops_of(func)
    assert_same_run(text, str(module), "f", random_args([(17,), (17,), (1,)]))


@pytest.mark.parametrize("factor", [2, 3, 4, 8])
def test_unroll_symbolic_bounds_and_step_execute_like_the_original(factor):
    module, func = parse_func(REDUCE_SYM)
    main, rest = unroll(loops_of(func)[0], factor)
    verify(module)
    assert main.step == 2 * factor and rest is not None
    assert_mlir_opt_prints_back(str(module))
    assert_same_run(REDUCE_SYM, str(module), "f", random_args([(17,), (17,), (1,)]),
                    [(lo, n) for lo in (0, 3) for n in (0, 1, 5, 6, 17)] + [(5, 2)])


# peeling the last iterations: a reduction with an offset lower bound and a step, the sum
# carried from the first part into the peeled one
PEEL = """
func.func @f(%A: memref<64xf64>, %S: memref<1xf64>, %lo: index) {
  %z = arith.constant 0.0 : f64
  %r = affine.for %i = affine_map<(d0) -> (d0)>(%lo) to affine_map<(d0) -> (d0 + 40)>(%lo)
      step 2 iter_args(%s = %z) -> (f64) {
    %a = affine.load %A[%i] : memref<64xf64>
    %t = arith.addf %s, %a : f64
    affine.yield %t : f64
  }
  affine.store %r, %S[0] : memref<1xf64>
  return
}
"""

PEELED_6 = """\
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> (d0 + 28)>
#map2 = affine_map<(d0) -> (d0 + 40)>
module {
  func.func @f(%arg0: memref<64xf64>, %arg1: memref<1xf64>, %arg2: index) {
    %cst = arith.constant 0.000000e+00 : f64
    %0 = affine.for %arg3 = #map(%arg2) to #map1(%arg2) step 2 iter_args(%arg4 = %cst) -> (f64) {
      %2 = affine.load %arg0[%arg3] : memref<64xf64>
      %3 = arith.addf %arg4, %2 : f64
      affine.yield %3 : f64
    }
    %1 = affine.for %arg3 = #map1(%arg2) to #map2(%arg2) step 2 iter_args(%arg4 = %0) -> (f64) {
      %2 = affine.load %arg0[%arg3] : memref<64xf64>
      %3 = arith.addf %arg4, %2 : f64
      affine.yield %3 : f64
    }
    affine.store %1, %arg1[0] : memref<1xf64>
    return
  }
}
"""


def test_peel_last_iterations_golden_and_execution():
    module, func = parse_func(PEEL)
    loop = loops_of(func)[0]
    tail = peel_last_iterations(loop, 6)
    verify(module)
    assert str(module) == PEELED_6
    assert (constant_trip_count(loop), constant_trip_count(tail)) == (14, 6)
    assert_mlir_opt_prints_back(str(module))
    assert_same_run(PEEL, str(module), "f", random_args([(64,), (1,)]), [(0,), (3,), (24,)])


def test_peel_last_iterations_refusals_leave_the_ir_untouched():
    module, func = parse_func(PEEL)
    before = str(module)
    loop = loops_of(func)[0]
    assert peel_last_iterations(loop, 20) is None        # all of its 20 iterations
    assert peel_last_iterations(loop, 0) is None
    module2, func2 = parse_func(REDUCE_SYM)
    before2 = str(module2)
    assert peel_last_iterations(loops_of(func2)[0], 1) is None     # no constant trip count
    assert str(module) == before and str(module2) == before2


def test_unroll_full_and_its_refusal():
    out = transformed(REDUCE_CONST.replace("{N}", "3"), lambda f: unroll_full(loops_of(f)[0]))
    assert "affine.for" not in out
    assert "affine.load %arg0[2]" in out and "affine.store %3, %arg1[1]" in out
    # a loop that never runs disappears, its result is its init
    out = transformed(REDUCE_CONST.replace("{N}", "0"), lambda f: unroll_full(loops_of(f)[0]))
    assert "affine.for" not in out and "affine.store %cst, %arg2[0]" in out
    module, func = parse_func(REDUCE_SYM)
    before = str(module)
    with pytest.raises(ScheduleError, match=r"t.mlir:4:\d+: error: cannot fully unroll "
                                            r"'affine.for' %arg5: its trip count is not constant"):
        unroll_full(loops_of(func)[0])
    assert str(module) == before


def test_unroll_refusals_leave_the_ir_untouched():
    module, func = parse_func(COPY_10)
    before = str(module)
    with pytest.raises(ScheduleError, match=r"cannot unroll 'affine.for' %arg2 by 4: the factor "
                                            r"does not divide the trip count \(cleanup=False\)"):
        unroll(loops_of(func)[0], 4, cleanup=False)
    assert str(module) == before
    main, rest = unroll(loops_of(func)[0], 5, cleanup=False)    # 5 divides 10
    assert rest is None and main.step == 5
    with pytest.raises(ValueError, match="positive integer"):
        unroll(main, 0)
    # a min upper bound: the cleanup's lower bound would not be affine
    text = """
        func.func @f(%A: memref<100xf64>) {
          affine.for %t = 0 to 7 {
            affine.for %i = affine_map<(d0) -> (d0 * 16)>(%t) to min affine_map<(d0) -> (100, d0 * 16 + 16)>(%t) {
              %a = affine.load %A[%i] : memref<100xf64>
              %b = arith.mulf %a, %a : f64
              affine.store %b, %A[%i] : memref<100xf64>
            }
          }
          return
        }"""
    module, func = parse_func(text)
    before = str(module)
    with pytest.raises(ScheduleError, match=r"t.mlir:4:\d+: error: cannot unroll 'affine.for' "
                                            r"%arg2 by 3: its upper bound is a min"):
        unroll(loops_of(func)[1], 3)
    assert str(module) == before
    main, rest = unroll(loops_of(func)[1], 4)  # 4 divides both trip counts, 16 and 100 - 16 * t
    verify(module)
    assert main.step == 4 and rest is None
    assert_same_run(text, str(module), "f", random_args([(100,)]))


def test_promote_if_single_iteration_golden():
    module, func = parse_func("""
        func.func @f(%A: memref<8xf64>) {
          affine.for %t = 0 to 2 {
            %z = arith.constant 1.0 : f64
            %r = affine.for %i = affine_map<(d0) -> (d0 * 4 + 1)>(%t) to affine_map<(d0) -> (d0 * 4 + 2)>(%t) iter_args(%a = %z) -> (f64) {
              %v = affine.load %A[%i + 2] : memref<8xf64>
              %s = arith.addf %a, %v : f64
              affine.yield %s : f64
            }
            affine.store %r, %A[%t] : memref<8xf64>
          }
          return
        }""")
    t, i = loops_of(func)
    assert not promote_if_single_iteration(t)
    assert promote_if_single_iteration(i)
    verify(module)
    assert str(module) == textwrap.dedent("""\
        module {
          func.func @f(%arg0: memref<8xf64>) {
            affine.for %arg1 = 0 to 2 {
              %cst = arith.constant 1.000000e+00 : f64
              %0 = affine.load %arg0[%arg1 * 4 + 3] : memref<8xf64>
              %1 = arith.addf %cst, %0 : f64
              affine.store %1, %arg0[%arg1] : memref<8xf64>
            }
            return
          }
        }
        """)


def test_get_perfectly_nested_loops():
    _, func = parse_func("""
        func.func @f(%A: memref<4x4x4xf64>) {
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 4 {
              affine.for %k = 0 to 4 {
                %a = affine.load %A[%i, %j, %k] : memref<4x4x4xf64>
                affine.for %l = 0 to 4 {
                }
              }
            }
            affine.for %m = 0 to 4 {
            }
          }
          return
        }""")
    i, j, k, l, m = loops_of(func)
    assert get_perfectly_nested_loops(i) == [i]
    assert get_perfectly_nested_loops(j) == [j, k]
    assert get_perfectly_nested_loops(l) == [l]


# ---------------------------------------------------------------------------------------------
# unroll-and-jam


ROWS = """
func.func @f(%A: memref<{M}x9xf64>, %B: memref<{M}x9xf64>) {
  affine.for %i = 0 to {M} {
    %x = affine.load %B[%i, 0] : memref<{M}x9xf64>
    affine.for %j = 1 to 9 {
      %a = affine.load %A[%i, %j - 1] : memref<{M}x9xf64>
      %b = arith.addf %a, %x : f64
      affine.store %b, %A[%i, %j] : memref<{M}x9xf64>
    }
  }
  return
}
"""

# i jammed by 2 over 5 rows: the run before the j loop and the body of j get copies for
# %i + 1 (each copy of %x feeds its own copy of the body); the fifth row is the cleanup loop,
# promoted to straight code (one iteration)
JAM_ROWS = """\
module {
  func.func @f(%arg0: memref<5x9xf64>, %arg1: memref<5x9xf64>) {
    affine.for %arg2 = 0 to 4 step 2 {
      %1 = affine.load %arg1[%arg2, 0] : memref<5x9xf64>
      %2 = affine.load %arg1[%arg2 + 1, 0] : memref<5x9xf64>
      affine.for %arg3 = 1 to 9 {
        %3 = affine.load %arg0[%arg2, %arg3 - 1] : memref<5x9xf64>
        %4 = arith.addf %3, %1 : f64
        affine.store %4, %arg0[%arg2, %arg3] : memref<5x9xf64>
        %5 = affine.load %arg0[%arg2 + 1, %arg3 - 1] : memref<5x9xf64>
        %6 = arith.addf %5, %2 : f64
        affine.store %6, %arg0[%arg2 + 1, %arg3] : memref<5x9xf64>
      }
    }
    %0 = affine.load %arg1[4, 0] : memref<5x9xf64>
    affine.for %arg2 = 1 to 9 {
      %1 = affine.load %arg0[4, %arg2 - 1] : memref<5x9xf64>
      %2 = arith.addf %1, %0 : f64
      affine.store %2, %arg0[4, %arg2] : memref<5x9xf64>
    }
    return
  }
}
"""


def test_unroll_jam_golden():
    text = ROWS.replace("{M}", "5")
    module, func = parse_func(text)
    main, rest = unroll_jam(loops_of(func)[0], 2, check=unroll_jam_is_legal)
    verify(module)
    assert str(module) == JAM_ROWS
    assert main.step == 2 and rest is None
    assert_mlir_opt_prints_back(JAM_ROWS)
    assert_same_run(text, JAM_ROWS, "f", random_args([(5, 9), (5, 9)]))


NEST3 = """
func.func @f(%A: memref<17x6x5xf64>, %B: memref<17x5xf64>, %n: index) {
  affine.for %i = 0 to {UB} {
    affine.for %j = 0 to 6 {
      %z = arith.constant 0.5 : f64
      affine.for %k = 0 to 5 {
        %a = affine.load %A[%i, %j, %k] : memref<17x6x5xf64>
        %b = affine.load %B[%i, %k] : memref<17x5xf64>
        %c = arith.mulf %a, %z : f64
        %d = arith.addf %b, %c : f64
        affine.store %d, %B[%i, %k] : memref<17x5xf64>
      }
      affine.store %z, %A[%i, %j, 0] : memref<17x6x5xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("factor", [2, 3, 4, 8])
@pytest.mark.parametrize("trip", [1, 5, 17])
def test_unroll_jam_constant_trip_counts_execute_like_the_original(trip, factor):
    text = NEST3.replace("{UB}", str(trip))
    module, func = parse_func(text)
    main, rest = unroll_jam(loops_of(func)[0], factor, check=unroll_jam_is_legal)
    verify(module)
    if trip < factor:
        assert main is None and str(module) == str(parse_func(text)[0])   # nothing to jam
    else:
        assert main is None or main.step == factor
        assert_same_run(text, str(module), "f", random_args([(17, 6, 5), (17, 5)]), [(0,)])


@pytest.mark.parametrize("factor", [2, 3])
def test_unroll_jam_symbolic_bound_executes_like_the_original(factor):
    text = NEST3.replace("{UB}", "%n")
    module, func = parse_func(text)
    main, rest = unroll_jam(loops_of(func)[0], factor, check=unroll_jam_is_legal)
    verify(module)
    assert_mlir_opt_prints_back(str(module))
    assert main.step == factor and rest is not None
    assert_same_run(text, str(module), "f", random_args([(17, 6, 5), (17, 5)]),
                    [(n,) for n in (0, 1, 5, 17)])


INNER_ITER_ARGS = """
func.func @f(%A: memref<7x17xf64>, %B: memref<7xf64>, %n: index) {
  affine.for %i = 0 to 7 {
    %z = arith.constant 0.0 : f64
    %s = affine.for %k = 0 to %n iter_args(%acc = %z) -> (f64) {
      %a = affine.load %A[%i, %k] : memref<7x17xf64>
      %t = arith.addf %acc, %a : f64
      affine.yield %t : f64
    }
    affine.store %s, %B[%i] : memref<7xf64>
  }
  return
}
"""


def test_unroll_jam_gives_each_copy_its_own_inner_iter_args():
    module, func = parse_func(INNER_ITER_ARGS)
    unroll_jam(loops_of(func)[0], 3)
    verify(module)
    out = str(module)
    assert "%1:3 = affine.for %arg4 = 0 to %arg2 iter_args(%arg5 = %cst_0, %arg6 = %cst_1, " \
           "%arg7 = %cst_2) -> (f64, f64, f64)" in out
    assert "affine.store %1#2, %arg1[%arg3 + 2]" in out
    assert_mlir_opt_prints_back(out)
    assert_same_run(INNER_ITER_ARGS, out, "f", random_args([(7, 17), (7,)]),
                    [(n,) for n in (0, 1, 5, 17)])
    # the dependence check cannot model loop-carried values yet: it refuses cleanly
    module, func = parse_func(INNER_ITER_ARGS)
    with pytest.raises(ScheduleError, match="its dependences cannot be analysed: 'affine.for' "
                                            "op with iter_args"):
        unroll_jam(loops_of(func)[0], 3, check=unroll_jam_is_legal)
    assert str(module) == str(parse_func(INNER_ITER_ARGS)[0])


TRIANGLE = """
func.func @f(%A: memref<9x9xf64>) {
  affine.for %i = 0 to 9 {
    affine.for %j = 0 to 9 {
      affine.for %k = 0 to affine_map<(d0) -> (d0 + 1)>(%j) {
        %a = affine.load %A[%i, %k] : memref<9x9xf64>
        %b = arith.addf %a, %a : f64
        affine.store %b, %A[%i, %k] : memref<9x9xf64>
      }
    }
  }
  return
}
"""


def test_unroll_jam_inner_bounds_may_depend_on_inner_ivs_only():
    module, func = parse_func(TRIANGLE)
    unroll_jam(loops_of(func)[0], 4, check=unroll_jam_is_legal)    # %k's bound uses %j: fine
    verify(module)
    assert_same_run(TRIANGLE, str(module), "f", random_args([(9, 9)]))
    module, func = parse_func(TRIANGLE)
    before = str(module)
    with pytest.raises(ScheduleError, match=r"t.mlir:4:\d+: error: cannot unroll-and-jam "
                                            r"'affine.for' %arg2 by 2: the bounds of the nested "
                                            r"'affine.for' %arg3 \(t.mlir:5:\d+\) depend on the "
                                            r"induction variable"):
        unroll_jam(loops_of(func)[1], 2)
    assert str(module) == before


def test_unroll_jam_of_a_loop_with_iter_args():
    # with a nested loop: refused (the copies would need separate partial sums)
    text = """
        func.func @f(%A: memref<8x4xf64>, %S: memref<1xf64>) {
          %z = arith.constant 0.0 : f64
          %s = affine.for %i = 0 to 8 iter_args(%acc = %z) -> (f64) {
            %t = affine.for %j = 0 to 4 iter_args(%b = %acc) -> (f64) {
              %a = affine.load %A[%i, %j] : memref<8x4xf64>
              %u = arith.addf %b, %a : f64
              affine.yield %u : f64
            }
            affine.yield %t : f64
          }
          affine.store %s, %S[0] : memref<1xf64>
          return
        }"""
    module, func = parse_func(text)
    before = str(module)
    with pytest.raises(ScheduleError, match="it has iter_args and loops nested in it"):
        unroll_jam(loops_of(func)[0], 2)
    assert str(module) == before
    # without nested loops the jam is an unroll: the carried value is chained through copies
    text = REDUCE_CONST.replace("{N}", "17")
    module, func = parse_func(text)
    main, rest = unroll_jam(loops_of(func)[0], 4, check=unroll_jam_is_legal)
    verify(module)
    assert main.step == 4
    assert_same_run(text, str(module), "f", random_args([(17,), (17,), (1,)]))


# ---------------------------------------------------------------------------------------------
# legality


SKEW = """
func.func @f(%A: memref<12x12xf64>) {
  affine.for %i = 2 to 11 {
    affine.for %j = 1 to 11 {
      %a = affine.load %A[%i - {DI}, %j + {DJ}] : memref<12x12xf64>
      %b = arith.addf %a, %a : f64
      affine.store %b, %A[%i, %j] : memref<12x12xf64>
    }
  }
  return
}
"""


def test_unroll_jam_refuses_a_reversed_dependence_and_names_it():
    module, func = parse_func(SKEW.replace("{DI}", "1").replace("{DJ}", "1"))
    before = str(module)
    with pytest.raises(ScheduleError) as err:
        unroll_jam(loops_of(func)[0], 2, check=unroll_jam_is_legal)
    assert str(err.value) == (
        "t.mlir:3:3: error: cannot unroll-and-jam 'affine.for' %arg1 by 2: the jam would "
        "reverse a RAW dependence on %arg0 from S0 at (%arg1, %arg2) = (2, 2) to S0 at "
        "(%arg1, %arg2) = (3, 1)")
    assert err.value.violation.kind == "RAW"
    assert str(module) == before            # refused before any change
    # and the refusal is right: jamming anyway computes something else
    jammed = transformed(SKEW.replace("{DI}", "1").replace("{DJ}", "1"),
                         lambda f: unroll_jam(loops_of(f)[0], 2))
    ref = random_args([(12, 12)])[0]
    new = ref.copy()
    polyopt.compile(textwrap.dedent(SKEW.replace("{DI}", "1").replace("{DJ}", "1")))["f"](ref)
    polyopt.compile(jammed)["f"](new)
    assert not np.allclose(ref, new)


@pytest.mark.parametrize("di, dj, factor, legal", [
    (1, 0, 4, True),      # distance (1, 0): the jam keeps j order
    (1, -1, 2, True),     # (1, -1) is a forward dependence in j: A[i-1][j-1] -> A[i][j]
    (2, 1, 2, True),      # distance 2 >= factor: never in one group of 2 ...
    (2, 1, 3, False),     # ... but in one group of 3
    (0, 1, 4, True),      # carried by j only
])
def test_unroll_jam_check_agrees_with_execution(di, dj, factor, legal):
    text = SKEW.replace("{DI}", str(di)).replace("{DJ}", str(dj))
    module, func = parse_func(text)
    if legal:
        unroll_jam(loops_of(func)[0], factor, check=unroll_jam_is_legal)
        assert_same_run(text, str(module), "f", random_args([(12, 12)]))
    else:
        with pytest.raises(ScheduleError, match="the jam would reverse a RAW dependence"):
            unroll_jam_is_legal(loops_of(func)[0], factor)
        jammed = transformed(text, lambda f: unroll_jam(loops_of(f)[0], factor))
        ref = random_args([(12, 12)])[0]
        new = ref.copy()
        polyopt.compile(textwrap.dedent(text))["f"](ref)
        polyopt.compile(jammed)["f"](new)
        assert not np.allclose(ref, new)


def test_unroll_jam_check_only_counts_pairs_in_the_jammed_groups():
    """Trip count 5 jammed by 4: the last row runs un-jammed in the cleanup loop, so a
    dependence reaching only that row is not reversed (the check models the cleanup)."""
    text = """
        func.func @f(%A: memref<6x9xf64>) {
          affine.for %i = 0 to 5 {
            affine.for %j = 0 to 7 {
              %a = affine.load %A[%i, %j + 1] : memref<6x9xf64>
              affine.if affine_set<(d0) : (d0 - 4 == 0)>(%i) {
                affine.store %a, %A[%i - 1, %j + 2] : memref<6x9xf64>
              }
            }
          }
          return
        }"""
    module, func = parse_func(text)
    unroll_jam(loops_of(func)[0], 4, check=unroll_jam_is_legal)
    verify(module)
    assert_same_run(text, str(module), "f", random_args([(6, 9)]))
    module, func = parse_func(text.replace("d0 - 4 == 0", "d0 - 3 == 0"))
    with pytest.raises(ScheduleError, match=r"WAR dependence on %arg0 from S0 at \(%arg1, "
                                            r"%arg2\) = \(2, 1\) to S1 at \(%arg1, %arg2\) = "
                                            r"\(3, 0\)$"):
        unroll_jam(loops_of(func)[0], 4, check=unroll_jam_is_legal)


def test_unroll_jam_check_refuses_what_it_cannot_analyse():
    module, func = parse_func("""
        func.func @f(%A: memref<4x4xf64>) {
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 4 {
              func.call @g(%A) : (memref<4x4xf64>) -> ()
            }
          }
          return
        }
        func.func private @g(memref<4x4xf64>)""")
    with pytest.raises(ScheduleError, match=r"t.mlir:5:\d+: error: cannot unroll-and-jam "
                                            r"'affine.for' %arg1 by 2: its dependences cannot be "
                                            r"analysed: 'func.call' op inside the scop"):
        unroll_jam(loops_of(func)[0], 2, check=unroll_jam_is_legal)


def test_unroll_jam_symbolic_lower_bound_and_outer_parameters():
    """The group origin is the (symbolic) lower bound; outer IVs are parameters."""
    text = """
        func.func @f(%A: memref<20x9xf64>, %lo: index) {
          affine.for %t = 0 to 2 {
            affine.for %i = affine_map<(d0)[s0] -> (d0 * 9 + s0)>(%t)[%lo] to affine_map<(d0)[s0] -> (d0 * 9 + s0 + 7)>(%t)[%lo] {
              affine.for %j = 0 to 8 {
                %a = affine.load %A[%i, %j + 1] : memref<20x9xf64>
                affine.store %a, %A[%i + 1, %j] : memref<20x9xf64>
              }
            }
          }
          return
        }"""
    module, func = parse_func(text)
    with pytest.raises(ScheduleError, match="RAW dependence on %arg0"):
        unroll_jam(loops_of(func)[1], 2, check=unroll_jam_is_legal)
    module, func = parse_func(text.replace("%A[%i + 1, %j]", "%A[%i + 1, %j + 1]")
                              .replace("%A[%i, %j + 1]", "%A[%i, %j]"))
    unroll_jam(loops_of(func)[1], 3, check=unroll_jam_is_legal)
    verify(module)
    assert_mlir_opt_prints_back(str(module))
    assert_same_run(text.replace("%A[%i + 1, %j]", "%A[%i + 1, %j + 1]")
                    .replace("%A[%i, %j + 1]", "%A[%i, %j]"), str(module), "f",
                    random_args([(20, 9)]), [(0,), (2,)])


# ---------------------------------------------------------------------------------------------
# partial sums


SUM_CHAIN = """
    func.func @f(%a: memref<37xf64>, %out: memref<1xf64>) {
      %c = affine.load %out[0] : memref<1xf64>
      %r = affine.for %k = 0 to 36 step 4 iter_args(%acc = %c) -> (f64) {
        %x0 = affine.load %a[%k] : memref<37xf64>
        %s0 = arith.addf %acc, %x0 : f64
        %x1 = affine.load %a[%k + 1] : memref<37xf64>
        %s1 = arith.addf %s0, %x1 : f64
        %x2 = affine.load %a[%k + 2] : memref<37xf64>
        %s2 = arith.addf %x2, %s1 : f64
        %x3 = affine.load %a[%k + 3] : memref<37xf64>
        %s3 = arith.addf %s2, %x3 : f64
        affine.yield %s3 : f64
      }
      %x = affine.load %a[36] : memref<37xf64>
      %t = arith.addf %r, %x : f64
      affine.store %t, %out[0] : memref<1xf64>
      return
    }"""


@pytest.mark.parametrize("parts", [2, 4])
def test_split_sum_chains_carries_partial_sums_and_adds_them_after(parts):
    module, func = parse_func(SUM_CHAIN)
    (loop,) = loops_of(func)
    assert split_sum_chains(loop, parts) == 1
    verify(module)
    assert len(loop.inits) == parts
    # each partial sum is one chain of 4 / parts adds per iteration, on its own iter_arg
    for arg in loop.region_iter_args:
        assert len(arg.uses) == 1
    text = str(module)
    assert_same_run(SUM_CHAIN, text, "f", random_args([(37,), (1,)], seed=5))
    assert_mlir_opt_prints_back(text)


def test_split_sum_chains_leaves_what_it_cannot_split():
    module, func = parse_func(SUM_CHAIN)
    (loop,) = loops_of(func)
    assert split_sum_chains(loop, 3) == 0           # 4 adds do not split 3 ways
    assert len(loop.inits) == 1
    module, func = parse_func(SUM_CHAIN.replace("%s2 = arith.addf %x2, %s1 : f64",
                                                "%s2 = arith.mulf %x2, %s1 : f64"))
    (loop,) = loops_of(func)
    assert split_sum_chains(loop, 2) == 0           # not a sum
