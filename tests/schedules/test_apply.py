"""Applying schedules (polyopt.schedules.apply) and ISL AST -> affine conversion
(polyopt.schedules.ast_to_affine): golden IR for the paper's section 2.5 nest and friends,
execution against numpy on sizes that are not multiples of any tile (f32/f64, a hypothesis sweep
of the BLIS schedule), 2mm with one schedule per statement, refusals that leave the IR untouched,
the loop utilities on their own, and acceptance of every printed nest by mlir-opt-22.

Golden files live in tests/schedules/golden/; regenerate them with POLYOPT_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import islpy as isl
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.affine_expr import AffineMap, constant, dim
from polyopt.affine.builder import Builder
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import AffineForOp, AffineIfOp
from polyopt.affine.verifier import verify
from polyopt.schedules.apply import (apply_schedule, build_schedule, parse_schedule_map,
                                     parse_schedule_option, schedule_map_to_isl)
from polyopt.schedules.ast_to_affine import (AffineGenerator, canonicalize_expr,
                                             constant_trip_count, drop_redundant_bounds,
                                             generate_affine, normalize_loop,
                                             promote_if_single_iteration, remove_empty_loops)
from polyopt.schedules.expand import expand_high_level_ops
from polyopt.schedules.model import extract

from matmul_check import check_matmul  # noqa: E402  (tests/schedules on sys.path)
from upstream_mlir import assert_mlir_opt_prints_back, mlir_opt

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("POLYOPT_UPDATE_GOLDEN") == "1"

PAPER_2_5 = "(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)"
PAPER_BLIS = ("(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1 floordiv 8, d0 floordiv 4, "
              "d2, d1, d0)")


def blis(kc: int, mc: int, nr: int, mr: int, order: str = "ji") -> str:
    tail = "d1, d0" if order == "ji" else "d0, d1"
    return (f"(d0, d1, d2) -> (d2 floordiv {kc}, d0 floordiv {mc}, d1 floordiv {nr}, "
            f"d0 floordiv {mr}, d2, {tail})")


# ---------------------------------------------------------------------------------------------
# helpers


def matmul_text(m: int, n: int, k: int, t: str = "f64") -> str:
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C : ({ta}, {tb}, {tc})\n  return\n}}\n")


def naive_matmul(m: int, n: int, k: int, t: str = "f64"):
    """The module and function of the expanded (i, j, k) nest of ``hop.matmul``."""
    module = polyopt.parse(matmul_text(m, n, k, t), "mm.mlir")
    expand_high_level_ops(module)
    return module, func_of(module)


def func_of(module):
    return next(op for op in module.regions[0].blocks[0].ops if op.name == "func.func")


def parse_func(text: str):
    module = polyopt.parse(textwrap.dedent(text), "t.mlir")
    return module, func_of(module)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with POLYOPT_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def run_matmul(module, m, n, k, t="f64", seed=0):
    check_matmul(polyopt.compile(module)["matmul"], m, n, k, t, seed, f32_tol=2e-6)


def loops_of(op) -> list[AffineForOp]:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def run_both(text: str, fn: str, args, transform) -> str:
    """Run ``fn`` of ``text`` before and after ``transform(func)``; the outputs must agree.
    Returns the transformed module's text."""
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    new_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    polyopt.compile(textwrap.dedent(text))[fn](*ref_args)
    module, func = parse_func(text)
    transform(func)
    verify(module)
    polyopt.compile(module)[fn](*new_args)
    for x, y in zip(ref_args, new_args):
        if isinstance(x, np.ndarray):
            np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)
    return str(module)


# ---------------------------------------------------------------------------------------------
# the paper's section 2.5 example


def test_paper_section_2_5_golden():
    module, func = naive_matmul(2088, 2048, 2048)
    new = apply_schedule(func, {"S0": PAPER_2_5})
    verify(module)
    check_golden("apply_paper_2_5.mlir", str(module))
    # 8 x 33 x 2048 x (min-bounded i: 64 per tile, 40 in the last) x 256
    assert len(new) == 1 and new[0] is func.body.ops[0]
    loops = loops_of(new[0])
    assert [constant_trip_count(l) for l in loops] == [8, 33, 2048, None, 256]
    i_loop = loops[3]
    assert str(i_loop.upper_map) == "(d0) -> (2088, d0 * 64 + 64)"
    tile = [min(i_loop.upper_map.evaluate([t])) - i_loop.lower_map.evaluate([t])[0]
            for t in range(33)]
    assert tile[:32] == [64] * 32 and tile[32] == 2088 - 32 * 64 == 40
    # subscripts read like the paper's listing
    assert "affine.load %arg0[%arg6, %arg3 * 256 + %arg7]" in str(module)


def test_paper_blis_schedule_golden():
    module, func = naive_matmul(2088, 2048, 2048)
    apply_schedule(func, {"S0": PAPER_BLIS})
    check_golden("apply_paper_blis.mlir", str(module))
    loops = loops_of(func)
    assert [constant_trip_count(l) for l in loops] == [8, 33, 256, None, 256, 8, 4]


def test_2020_and_modern_map_forms_give_the_same_nest():
    outs = []
    for text in (PAPER_2_5, f"affine_map<{PAPER_2_5}>"):
        module, func = naive_matmul(70, 45, 37)
        apply_schedule(func, {"S0": text})
        outs.append(str(module))
    module, func = naive_matmul(70, 45, 37)
    apply_schedule(func, {"S0": parse_schedule_map(PAPER_2_5)})
    assert outs[0] == outs[1] == str(module)


# ---------------------------------------------------------------------------------------------
# execution on sizes that are not multiples of any tile


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_tiled_schedule_small_sizes_match_numpy(t):
    module, func = naive_matmul(70, 45, 37, t)
    apply_schedule(func, {"S0": "(d0, d1, d2) -> (d2 floordiv 16, d0 floordiv 8, d1, d0, d2)"})
    verify(module)
    run_matmul(module, 70, 45, 37, t)


@pytest.mark.parametrize("order", ["ji", "ij"])
@pytest.mark.parametrize("tiles", [(16, 12, 7, 3), (8, 10, 4, 4), (64, 64, 8, 6)])
def test_blis_schedule_matches_numpy(order, tiles):
    module, func = naive_matmul(70, 45, 37)
    apply_schedule(func, {"S0": blis(*tiles, order)})
    verify(module)
    run_matmul(module, 70, 45, 37, seed=sum(tiles))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40),
       kc=st.integers(1, 17), mc=st.integers(1, 17), nr=st.integers(1, 17),
       mr=st.integers(1, 17), order=st.sampled_from(["ji", "ij"]))
def test_blis_schedule_sweep_matches_numpy(m, n, k, kc, mc, nr, mr, order):
    module, func = naive_matmul(m, n, k)
    apply_schedule(func, {"S0": blis(kc, mc, nr, mr, order)})
    verify(module)
    run_matmul(module, m, n, k, seed=m * 10000 + n * 100 + k)


# ---------------------------------------------------------------------------------------------
# single-iteration loops, normalization, redundant bounds, empty loops


def test_single_row_matmul_has_no_single_iteration_loops_golden():
    # M = 1: the i tile loops and the i point loop run once: promoted, subscripts become 0
    module, func = naive_matmul(1, 45, 37)
    apply_schedule(func, {"S0": blis(16, 12, 5, 3, "ij")})
    check_golden("apply_single_row.mlir", str(module))
    assert all(constant_trip_count(l) != 1 for l in loops_of(func))
    run_matmul(module, 1, 45, 37)


PROMOTE = """\
func.func @p(%A: memref<64xf64>, %B: memref<64xi64>) {
  affine.for %i = 0 to 64 step 8 {
    affine.for %j = affine_map<(d0) -> (d0 + 1)>(%i) to affine_map<(d0) -> (d0 + 2)>(%i) {
      %v = affine.load %A[%j * 2 - 2] : memref<64xf64>
      affine.store %v, %A[%j - 1] : memref<64xf64>
      %c = arith.index_cast %j : index to i64
      affine.store %c, %B[%i] : memref<64xi64>
    }
  }
  return
}
"""

PROMOTE_GOLDEN = """\
#map = affine_map<(d0) -> (d0 + 1)>
module {
  func.func @p(%arg0: memref<64xf64>, %arg1: memref<64xi64>) {
    affine.for %arg2 = 0 to 64 step 8 {
      %0 = affine.apply #map(%arg2)
      %1 = affine.load %arg0[%arg2 * 2] : memref<64xf64>
      affine.store %1, %arg0[%arg2] : memref<64xf64>
      %2 = arith.index_cast %0 : index to i64
      affine.store %2, %arg1[%arg2] : memref<64xi64>
    }
    return
  }
}
"""


def test_promote_if_single_iteration_golden():
    module, func = parse_func(PROMOTE)
    outer, inner = loops_of(func)
    assert constant_trip_count(inner) == 1
    assert not promote_if_single_iteration(outer)
    assert promote_if_single_iteration(inner)
    verify(module)
    assert str(module) == PROMOTE_GOLDEN


NORMALIZE = """\
func.func @n(%A: memref<2048xf64>) {
  affine.for %c = 0 to 8 {
    affine.for %k = affine_map<(d0) -> (d0 * 256)>(%c) to affine_map<(d0) -> (d0 * 256 + 256)>(%c) step 2 {
      %v = affine.load %A[%k] : memref<2048xf64>
      affine.store %v, %A[%k + 1] : memref<2048xf64>
    }
  }
  return
}
"""

NORMALIZE_GOLDEN = """\
module {
  func.func @n(%arg0: memref<2048xf64>) {
    affine.for %arg1 = 0 to 8 {
      affine.for %arg2 = 0 to 128 {
        %0 = affine.load %arg0[%arg1 * 256 + %arg2 * 2] : memref<2048xf64>
        affine.store %0, %arg0[%arg1 * 256 + %arg2 * 2 + 1] : memref<2048xf64>
      }
    }
    return
  }
}
"""


def test_normalize_loop_golden():
    module, func = parse_func(NORMALIZE)
    outer, inner = loops_of(func)
    assert not normalize_loop(outer)          # already 0 to N step 1
    assert normalize_loop(inner)
    verify(module)
    assert str(module) == NORMALIZE_GOLDEN


REDUNDANT = """\
func.func @r(%A: memref<300xf64>) {
  affine.for %i = 0 to 100 {
    affine.for %j = max affine_map<(d0) -> (d0, d0 - 5, 0)>(%i) to min affine_map<(d0) -> (d0 + 8, 200)>(%i) {
      %v = affine.load %A[%j] : memref<300xf64>
      affine.store %v, %A[%j + 1] : memref<300xf64>
    }
  }
  affine.for %t = 0 to 33 {
    affine.for %j = affine_map<(d0) -> (d0 * 64)>(%t) to min affine_map<(d0) -> (2088, d0 * 64 + 64)>(%t) {
    }
  }
  return
}
"""


def test_drop_redundant_bounds():
    module, func = parse_func(REDUNDANT)
    _, inner, _, tiled = loops_of(func)
    assert drop_redundant_bounds(inner)
    assert str(inner.lower_map) == "(d0) -> (d0)" and str(inner.upper_map) == "(d0) -> (d0 + 8)"
    # the constant decides the last tile: both results stay
    assert not drop_redundant_bounds(tiled)
    assert str(tiled.upper_map) == "(d0) -> (2088, d0 * 64 + 64)"
    verify(module)


def test_remove_empty_loops():
    module, func = parse_func("""\
    func.func @e(%A: memref<8xf64>) {
      affine.for %i = 0 to 8 {
        affine.for %j = 0 to 4 {
        }
      }
      affine.for %i = 5 to 3 {
        %v = affine.load %A[%i] : memref<8xf64>
        affine.store %v, %A[%i] : memref<8xf64>
      }
      affine.for %i = 0 to 8 {
        %v = affine.load %A[%i] : memref<8xf64>
        affine.store %v, %A[%i] : memref<8xf64>
      }
      return
    }
    """)
    assert remove_empty_loops(func.body.ops) == 3
    assert len(loops_of(func)) == 1 and constant_trip_count(loops_of(func)[0]) == 8


@st.composite
def affine_exprs(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        return draw(st.one_of(st.integers(0, 2).map(dim), st.integers(-9, 9).map(constant)))
    a = draw(affine_exprs(depth - 1))
    op = draw(st.sampled_from(["+", "-", "*", "floordiv", "ceildiv", "mod"]))
    if op in ("+", "-"):
        b = draw(affine_exprs(depth - 1))
        return a + b if op == "+" else a - b
    c = draw(st.integers(-6, 6) if op == "*" else st.integers(1, 7))
    return {"*": lambda: a * c, "floordiv": lambda: a.floordiv(c),
            "ceildiv": lambda: a.ceildiv(c), "mod": lambda: a.mod(c)}[op]()


@settings(max_examples=200, deadline=None)
@given(e=affine_exprs(), point=st.lists(st.integers(-30, 30), min_size=3, max_size=3))
def test_canonicalize_expr_keeps_the_value(e, point):
    assert canonicalize_expr(e).evaluate(point) == e.evaluate(point)


def test_canonicalize_expr_forms():
    d0, d1 = dim(0), dim(1)
    assert str(canonicalize_expr(d1 + (d0 * 64) * 4)) == "d0 * 256 + d1"
    assert str(canonicalize_expr((d0 * 4 + d1 + 9).floordiv(4))) == "d0 + (d1 + 1) floordiv 4 + 2"
    assert str(canonicalize_expr((d0 * 8 + d1 * 3).mod(4))) == "(d1 * 3) mod 4"
    assert canonicalize_expr(d0 * 2 - d0 - d0) == constant(0)


# ---------------------------------------------------------------------------------------------
# several statements: imperfect nests, 2mm, fusion


IMPERFECT = """\
func.func @g(%A: memref<30x20xf64>, %B: memref<20x25xf64>, %C: memref<30x25xf64>) {
  %z = arith.constant 0.0 : f64
  affine.for %i = 0 to 30 {
    affine.for %j = 0 to 25 {
      affine.store %z, %C[%i, %j] : memref<30x25xf64>
      affine.for %k = 0 to 20 {
        %a = affine.load %A[%i, %k] : memref<30x20xf64>
        %b = affine.load %B[%k, %j] : memref<20x25xf64>
        %c = affine.load %C[%i, %j] : memref<30x25xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<30x25xf64>
      }
    }
  }
  return
}
"""


def imperfect_args():
    rng = np.random.default_rng(3)
    return [rng.random((30, 20)), rng.random((20, 25)), rng.random((30, 25))]


def test_imperfect_nest_with_two_statement_schedules():
    scheds = {"S0": "(d0, d1) -> (d0 floordiv 8, d1, d0, 0, 0)",
              "S1": "(d0, d1, d2) -> (d0 floordiv 8, d1, d0, 1, d2)"}
    text = run_both(IMPERFECT, "g", imperfect_args(), lambda f: apply_schedule(f, scheds))
    check_golden("apply_imperfect.mlir", text)


def test_statements_without_schedule_keep_their_original_order():
    text = run_both(IMPERFECT, "g", imperfect_args(), lambda f: apply_schedule(f, {}))
    assert text == str(polyopt.parse(IMPERFECT))


MM2 = """\
func.func @mm2(%A: memref<23x13xf64>, %B: memref<13x19xf64>, %T: memref<23x19xf64>,
               %D: memref<19x17xf64>, %E: memref<23x17xf64>) {
  hop.matmul %A, %B, %T : (memref<23x13xf64>, memref<13x19xf64>, memref<23x19xf64>)
  hop.matmul %T, %D, %E : (memref<23x19xf64>, memref<19x17xf64>, memref<23x17xf64>)
  return
}
"""


def mm2_args():
    rng = np.random.default_rng(7)
    return [rng.random((23, 13)), rng.random((13, 19)), rng.random((23, 19)),
            rng.random((19, 17)), rng.random((23, 17))]


def expanded(transform):
    def run(func):
        expand_high_level_ops(func)
        return transform(func)
    return run


def test_2mm_with_a_schedule_per_statement():
    scheds = {"S0": "(d0, d1, d2) -> (d2 floordiv 4, d0 floordiv 8, d1, d0, d2)",
              "S1": blis(5, 6, 4, 3, "ij")}
    new = []
    text = run_both(MM2, "mm2", mm2_args(),
                    expanded(lambda f: new.extend(apply_schedule(f, scheds))))
    # the nests stay in textual order: the first writes %T, the second reads it
    assert [op.name for op in new] == ["affine.for", "affine.for"]
    first, second = text.index("affine.store %4, %arg2["), text.index("affine.store %4, %arg4[")
    assert first < second


def test_2mm_fusion_when_the_nest_order_is_not_kept():
    scheds = {"S0": "(d0, d1, d2) -> (d0, 0, d1, d2)", "S1": "(d0, d1, d2) -> (d0, 1, d1, d2)"}
    new = []
    run_both(MM2, "mm2", mm2_args(),
             expanded(lambda f: new.extend(apply_schedule(f, scheds, keep_nest_order=False))))
    assert len(new) == 1 and constant_trip_count(new[0]) == 23      # one fused i loop


def test_build_schedule_prepends_the_nest_position_and_pads():
    module = polyopt.parse(MM2)
    expand_high_level_ops(module)
    model = extract(func_of(module))
    sched = build_schedule(model, {"S0": "(d0, d1, d2) -> (d1, d0, d2)"})
    s0 = isl.UnionSet.from_set(model.statement("S0").domain)
    s1 = isl.UnionSet.from_set(model.statement("S1").domain)
    # S0: its 3 times, padded to the 7 of S1's original 2d+1 schedule, after its position 0
    assert sched.intersect_domain(s0).is_equal(isl.UnionMap(
        "{ S0[i, j, k] -> [0, j, i, k, 0, 0, 0, 0] : 0 <= i < 23 and 0 <= j < 19 and "
        "0 <= k < 13 }"))
    # S1 keeps its original schedule, after its position 1
    orig = model.statement("S1").schedule
    assert sched.intersect_domain(s1).is_equal(isl.UnionMap.from_map(
        orig.insert_dims(isl.dim_type.out, 0, 1).fix_val(isl.dim_type.out, 0, 1)))


def test_build_schedule_breaks_ties_in_the_original_order():
    module, func = naive_matmul(4, 3, 2)
    model = extract(func)
    sched = build_schedule(model, {"S0": "(d0, d1, d2) -> (d1)"})     # not injective
    orig = model.statement("S0").schedule
    assert sched.is_injective()
    assert sched.is_equal(isl.UnionMap.from_map(
        isl.Map("{ S0[i, j, k] -> [j] }").intersect_domain(orig.domain()).flat_range_product(orig)))


# ---------------------------------------------------------------------------------------------
# what the generator does with conditions, strides, parameters and non-affine uses


COND = """\
func.func @f(%A: memref<100xf64>, %B: memref<100xf64>, %N: index) {
  affine.for %i = 0 to %N step 3 {
    affine.if affine_set<(d0) : (d0 - 20 >= 0, 70 - d0 >= 0)>(%i) {
      %v = affine.load %A[%i] : memref<100xf64>
      %c = arith.index_cast %i : index to i64
      %f = arith.sitofp %c : i64 to f64
      %s = arith.addf %v, %f : f64
      affine.store %s, %B[%i + 1] : memref<100xf64>
    } else {
      %w = affine.load %A[%i + 2] : memref<100xf64>
      affine.store %w, %B[%i] : memref<100xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("n", [95, 40, 0])
def test_conditions_strides_and_parameters(n):
    scheds = {"S0": "(d0) -> (d0 floordiv 16, d0)", "S1": "(d0) -> (d0 floordiv 16, d0)"}
    rng = np.random.default_rng(n)
    text = run_both(COND, "f", [rng.random(100), np.zeros(100), n],
                    lambda f: apply_schedule(f, scheds))
    assert "step 3" in text and "affine.if" in text


def test_non_affine_use_of_a_new_expression_gets_an_affine_apply():
    text = run_both("""\
    func.func @c(%B: memref<40xi64>) {
      affine.for %i = 0 to 40 {
        %c = arith.index_cast %i : index to i64
        affine.store %c, %B[%i] : memref<40xi64>
      }
      return
    }
    """, "c", [np.zeros(40, dtype=np.int64)],
        lambda f: apply_schedule(f, {"S0": "(d0) -> (d0 floordiv 8, d0)"}))
    assert "affine.apply #map(%arg1, %arg2)" in text
    assert "#map = affine_map<(d0, d1) -> (d0 * 8 + d1)>" in text


def test_vector_accesses_and_a_single_loop_root():
    src = """\
    func.func @v(%A: memref<16x32xf64>, %B: memref<16x32xf64>) {
      affine.for %i = 0 to 16 {
        affine.for %j = 0 to 8 {
          %x = affine.vector_load %A[%i, %j * 4] : memref<16x32xf64>, vector<4xf64>
          affine.vector_store %x, %B[%i, %j * 4] : memref<16x32xf64>, vector<4xf64>
        }
      }
      affine.for %i = 0 to 16 {
        affine.for %j = 0 to 32 {
          %x = affine.load %B[%i, %j] : memref<16x32xf64>
          %y = arith.addf %x, %x : f64
          affine.store %y, %A[%i, %j] : memref<16x32xf64>
        }
      }
      return
    }
    """

    def transform(func):
        first, second = func.body.ops[:2]
        apply_schedule(first, {"S0": "(d0, d1) -> (d1 floordiv 3, d0, d1)"})
        apply_schedule(second, {"S0": "(d0, d1) -> (d1, d0)"})

    rng = np.random.default_rng(1)
    text = run_both(src, "v", [rng.random((16, 32)), rng.random((16, 32))], transform)
    assert "affine.vector_load %arg0[%arg3, %arg4 * 4]" in text


def test_disjunctive_if_condition_becomes_a_chain_of_ifs():
    # ISL avoids disjunctions with our options; build `if (c0 <= 2 || c0 >= 7) S0(c0)` by hand
    src = """\
    func.func @d(%A: memref<10xf64>, %B: memref<10xf64>) {
      affine.for %i = 0 to 10 {
        %v = affine.load %A[%i] : memref<10xf64>
        affine.store %v, %B[%i] : memref<10xf64>
      }
      return
    }
    """
    module, func = parse_func(src)
    model = extract(func)
    old = func.body.ops[0]
    gen = AffineGenerator(model)
    loop = Builder.before(old).create(AffineForOp.build_constant, 0, 10)
    gen.env["c0"] = gen.atoms.add(loop.induction_var)
    ctx = isl.DEFAULT_CONTEXT
    c0 = isl.AstExpr.from_id(isl.Id("c0"))
    num = lambda v: isl.AstExpr.from_val(isl.Val.int_from_si(ctx, v))  # noqa: E731
    cond = c0.le(num(2)).or_(c0.ge(num(7)))
    user = isl.AstNode.user_from_expr(
        isl.AstExpr.from_id(isl.Id("S0")).call(isl.AstExprList.from_ast_expr(c0)))
    gen._if_chain(gen._dnf(cond), user, None, Builder.before_terminator(loop.body))
    old.erase()
    verify(module)
    ifs = [op for op in func.walk() if isinstance(op, AffineIfOp)]
    assert len(ifs) == 2 and ifs[1].parent is ifs[0].else_block
    a, b = np.arange(10.0), np.full(10, -1.0)
    polyopt.compile(module)["d"](a, b)
    assert list(b) == [0, 1, 2, -1, -1, -1, -1, 7, 8, 9]



def test_select_in_the_ast_splits_the_node_with_an_affine_if():
    # the tile index i floordiv 5 of a triangle scanned by i + j is a degenerate loop that ISL
    # writes as `c1 = c0 <= 9 ? 0 : 1`; its loops are generated once for each value
    src = """\
    func.func @s(%A: memref<6x6xi64>, %B: memref<6x6xi64>) {
      affine.for %i = 0 to 6 {
        affine.for %j = affine_map<(d0) -> (d0)>(%i) to 6 {
          %v = affine.load %A[%i, %j] : memref<6x6xi64>
          %w = arith.addi %v, %v : i64
          affine.store %w, %B[%j, %i] : memref<6x6xi64>
        }
      }
      return
    }
    """
    sched = {"S0": "(d0, d1) -> (d0 + d1, d0 floordiv 5, d0)"}
    rng = np.random.default_rng(5)
    text = run_both(src, "s", [rng.integers(-9, 9, (6, 6)), np.zeros((6, 6), np.int64)],
                    lambda f: apply_schedule(f, sched))
    assert "affine.if" in text and "else" in text


def test_generate_affine_keeps_the_original_ops():
    module, func = naive_matmul(20, 10, 5)
    model = extract(func)
    before = str(module)
    ops = generate_affine(model, build_schedule(model, {"S0": "(d0, d1, d2) -> (d1, d0, d2)"}),
                          Builder.before(model.scop_ops[0]))
    assert len(ops) == 1 and len(func.body.ops) == 3          # new nest, old nest, return
    for op in model.scop_ops:
        op.erase()
    verify(module)
    assert str(module) != before
    run_matmul(module, 20, 10, 5)


# ---------------------------------------------------------------------------------------------
# refusals (checked before the IR is touched)


def assert_untouched(module, func, before_text, before_ops):
    assert str(module) == before_text
    assert list(func.body.ops) == before_ops


@pytest.mark.parametrize("sched,message", [
    ("(d0, d1, d2) -> (d0, d1, -d2)",
     "mm.mlir:2:3: error: schedule violates a RAW dependence on %arg2 from S0[0, 0, 0] to "
     "S0[0, 0, 1]: the new schedule runs S0[0, 0, 1] first"),
    ("(d0, d1, d2) -> (-(d2 floordiv 4), d0, d1, d2)",
     "mm.mlir:2:3: error: schedule violates a RAW dependence on %arg2 from S0[0, 0, 3] to "
     "S0[0, 0, 4]: the new schedule runs S0[0, 0, 4] first"),
    ("(d0, d1, d2) -> (d0, d1, d2 mod 2, d2)",
     "mm.mlir:2:3: error: schedule violates a RAW dependence on %arg2 from S0[0, 0, 1] to "
     "S0[0, 0, 2]: the new schedule runs S0[0, 0, 2] first"),
])
def test_illegal_schedule_is_refused_before_touching_the_ir(sched, message):
    module, func = naive_matmul(7, 5, 6)
    before_text, before_ops = str(module), list(func.body.ops)
    with pytest.raises(ScheduleError) as err:
        apply_schedule(func, {"S0": sched})
    assert str(err.value) == message
    assert_untouched(module, func, before_text, before_ops)


def test_instances_with_the_same_time_run_in_the_original_order():
    # (k/4, i, j) does not order k inside a tile: the original order does, which is legal
    module, func = naive_matmul(7, 5, 6)
    apply_schedule(func, {"S0": "(d0, d1, d2) -> (d2 floordiv 4, d0, d1)"})
    assert [constant_trip_count(l) for l in loops_of(func)] == [2, 7, 5, None]
    run_matmul(module, 7, 5, 6)


def test_illegal_2mm_order_is_refused():
    module = polyopt.parse(MM2, "mm2.mlir")
    expand_high_level_ops(module)
    func = func_of(module)
    before_text, before_ops = str(module), list(func.body.ops)
    with pytest.raises(ScheduleError, match="RAW dependence on %arg2 from S0"):
        apply_schedule(func, {"S0": "(d0, d1, d2) -> (1, d0, d1, d2)",
                              "S1": "(d0, d1, d2) -> (0, d0, d1, d2)"}, keep_nest_order=False)
    assert_untouched(module, func, before_text, before_ops)


def test_legal_interchange_and_unchecked_reversal():
    module, func = naive_matmul(7, 5, 6)
    apply_schedule(func, {"S0": "(d0, d1, d2) -> (d0, d2, d1)"})
    run_matmul(module, 7, 5, 6)
    module, func = naive_matmul(7, 5, 6)
    apply_schedule(func, {"S0": "(d0, d1, d2) -> (d0, d1, -d2)"}, check=False)
    assert "%arg0[%arg3, -%arg5]" in str(module)
    run_matmul(module, 7, 5, 6)          # a re-associated sum: equal up to rounding


NAIVE = """\
func.func @m(%A: memref<8x8xf64>, %N: index) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%i, %j] : memref<8x8xf64>
      affine.store %v, %A[%j, %i] : memref<8x8xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("scheds,message", [
    ({"S0": "(d0, d1, d2) -> (d0)"},
     "t.mlir:4:12: error: schedule (d0, d1, d2) -> (d0) for S0 has 3 dims, but S0 is nested in "
     "2 loop(s): expected (d0, d1) -> (...)"),
    ({"S0": "(d0, d1)[s0] -> (d0 + s0, d1)"},
     "t.mlir:4:12: error: schedule (d0, d1)[s0] -> (d0 + s0, d1) for S0 must not use symbols"),
    ({"S0": "(d0, d1) -> (d0 * d1)"},
     "t.mlir:4:12: error: invalid schedule map '(d0, d1) -> (d0 * d1)': non-affine expression: "
     "at least one of the multiply operands has to be either a constant or symbolic (column 17)"),
    ({"S1": "(d0, d1) -> (d0, d1)"},
     "t.mlir:2:3: error: schedule given for unknown statement S1 (the scop has S0)"),
])
def test_malformed_schedules_are_refused_with_locations(scheds, message):
    module, func = parse_func(NAIVE)
    before_text, before_ops = str(module), list(func.body.ops)
    with pytest.raises(ScheduleError) as err:
        apply_schedule(func, scheds)
    assert str(err.value) == message
    assert_untouched(module, func, before_text, before_ops)


def test_schedule_map_to_isl():
    module, func = naive_matmul(2088, 2048, 2048)
    stmt = extract(func).statement("S0")
    m = schedule_map_to_isl(stmt, parse_schedule_map(
        "(d0, d1, d2) -> (d2 floordiv 256, d0 mod 64, d1 ceildiv 8, d0 * -2 + 3)"))
    expected = isl.Map("{ S0[i, j, k] -> [floor(k/256), i mod 64, ceil(j/8), 3 - 2i] : "
                       "0 <= i < 2088 and 0 <= j < 2048 and 0 <= k < 2048 }")
    assert m.is_equal(expected)


def test_parse_schedule_option():
    got = parse_schedule_option(["S0=(d0, d1, d2) -> (d2 floordiv 256, d0, d1)",
                                 "S1 = affine_map<(d0) -> (d0)>; S2=(d0, d1) -> (d1, d0)"])
    assert {k: str(v) for k, v in got.items()} == {
        "S0": "(d0, d1, d2) -> (d2 floordiv 256, d0, d1)", "S1": "(d0) -> (d0)",
        "S2": "(d0, d1) -> (d1, d0)"}
    assert isinstance(got["S0"], AffineMap)
    with pytest.raises(ScheduleError, match="expects NAME=MAP"):
        parse_schedule_option("(d0) -> (d0)")
    with pytest.raises(ScheduleError, match="two schedules"):
        parse_schedule_option(["S0=(d0) -> (d0)", "S0=(d0) -> (-d0)"])
    with pytest.raises(ScheduleError, match=r"invalid schedule map '\(d0\) -> \(d0 floordiv\)'"):
        parse_schedule_option("S0=(d0) -> (d0 floordiv)")


# ---------------------------------------------------------------------------------------------
# interop: every nest printed above is valid upstream MLIR


@pytest.mark.parametrize("golden", ["apply_paper_2_5.mlir", "apply_paper_blis.mlir",
                                    "apply_single_row.mlir", "apply_imperfect.mlir"])
def test_mlir_opt_accepts_the_generated_nests(golden):
    assert_mlir_opt_prints_back((GOLDEN / golden).read_text())


def test_mlir_opt_accepts_conditions_and_strides():
    module, func = parse_func(COND)
    apply_schedule(func, {"S0": "(d0) -> (d0 floordiv 16, d0)",
                          "S1": "(d0) -> (d0 floordiv 16, d0)"})
    mlir_opt(str(module), "--allow-unregistered-dialect")
