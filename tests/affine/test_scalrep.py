"""Scalar replacement (polyopt.affine.scalrep): golden IR for a small BLIS-tiled matmul whose
register tile (M_R = 4, N_R = 8, K_U = 4) is unroll-and-jammed, unrolled and scalar-replaced
(the paper's section 2.7-2.8 listing, with iter_args instead of single-element memrefs), golden
IR for each behaviour (forwarding, redundant loads, dead stores, hoisting, loop-carried
elements, vectors), the cases it must leave alone (may-alias accesses, views, calls, loops that
may not run), execution against the untransformed code or numpy on sizes that are not multiples
of the factors, and acceptance of the printed IR by mlir-opt-22.

Golden files live in tests/affine/golden/; regenerate them with POLYOPT_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

import polyopt
from polyopt.affine.dialects.affine import (AffineForOp, AffineLoadOp, AffineStoreOp)
from polyopt.affine.loop_utils import unroll, unroll_jam
from polyopt.affine.scalrep import ScalrepStats, scalar_replace
from polyopt.affine.verifier import verify
from polyopt.schedules.loop_legality import unroll_jam_is_legal
from run_helpers import assert_same_run, random_args
from upstream_mlir import assert_mlir_opt_prints_back

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("POLYOPT_UPDATE_GOLDEN") == "1"
# ---------------------------------------------------------------------------------------------
# helpers


def func_of(module, name=None):
    return next(op for op in module.regions[0].blocks[0].ops if op.name == "func.func"
                and (name is None or op.attributes["sym_name"].value == name))


def parse_func(text: str):
    module = polyopt.parse(textwrap.dedent(text), "t.mlir")
    return module, func_of(module)


def loops_of(op) -> list[AffineForOp]:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with POLYOPT_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def scalrep(text: str, **options) -> tuple[str, ScalrepStats]:
    module, func = parse_func(text)
    stats = scalar_replace(func, **options)
    verify(module)
    return str(module), stats


def accesses_in(loop: AffineForOp, memref) -> list:
    return [op for op in loop.walk() if isinstance(op, (AffineLoadOp, AffineStoreOp))
            and op.memref is memref]


# ---------------------------------------------------------------------------------------------
# the register tile of a BLIS-tiled matmul (paper sections 2.7-2.8)


def matmul_nest(m: int, n: int, k: int, t: str = "f64") -> str:
    """C += A * B as the naive (i, j, k) nest."""
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return f"""
        func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{
          affine.for %i = 0 to {m} {{
            affine.for %j = 0 to {n} {{
              affine.for %k = 0 to {k} {{
                %a = affine.load %A[%i, %k] : {ta}
                %b = affine.load %B[%k, %j] : {tb}
                %c = affine.load %C[%i, %j] : {tc}
                %p = arith.mulf %a, %b : {t}
                %s = arith.addf %c, %p : {t}
                affine.store %s, %C[%i, %j] : {tc}
              }}
            }}
          }}
          return
        }}"""


# C (8x16) += A (8x10) * B (10x16) tiled as BLIS does: panels of N_R = 8 columns (%jc) and
# M_R = 4 rows (%ic), the register tile (%ir, %jr) around the k loop.  K = 10 is not a multiple
# of K_U = 4.
BLIS_TILED = """
func.func @matmul(%A: memref<8x10xf64>, %B: memref<10x16xf64>, %C: memref<8x16xf64>) {
  affine.for %jc = 0 to 2 {
    affine.for %ic = 0 to 2 {
      affine.for %ir = 0 to 4 {
        affine.for %jr = 0 to 8 {
          affine.for %k = 0 to 10 {
            %a = affine.load %A[%ic * 4 + %ir, %k] : memref<8x10xf64>
            %b = affine.load %B[%k, %jc * 8 + %jr] : memref<10x16xf64>
            %c = affine.load %C[%ic * 4 + %ir, %jc * 8 + %jr] : memref<8x16xf64>
            %p = arith.mulf %a, %b : f64
            %s = arith.addf %c, %p : f64
            affine.store %s, %C[%ic * 4 + %ir, %jc * 8 + %jr] : memref<8x16xf64>
          }
        }
      }
    }
  }
  return
}
"""


def register_tile(func, mr: int, nr: int, ku: int, i_loop, j_loop, k_loop) -> None:
    """The ``--hopt-unroll --hopt-scalrep`` recipe on one register tile."""
    unroll_jam(i_loop, mr, check=unroll_jam_is_legal)
    unroll_jam(j_loop, nr, check=unroll_jam_is_legal)
    unroll(k_loop, ku)
    scalar_replace(func)


def test_blis_register_tile_golden():
    """The golden file holds the paper's inner structure: 32 loads of C, the k loop unrolled by
    4 carrying the 32 accumulators in iter_args (per k: 4 loads of A, 8 of B, 32 mulf/addf,
    no access to C), the cleanup k loop (K = 10) continuing from the main loop's results, and
    32 stores of C."""
    module, func = parse_func(BLIS_TILED)
    jc, ic, ir, jr, k = loops_of(func)
    register_tile(func, 4, 8, 4, ir, jr, k)
    verify(module)
    text = str(module)
    check_golden("scalrep_blis_4x8x4.mlir", text)
    c = func.regions[0].blocks[0].args[2]
    jc, ic, k_main, k_rest = loops_of(func)     # the register-tile loops were promoted
    assert (k_main.step, len(k_main.results), len(k_rest.results)) == (4, 32, 32)
    assert list(k_rest.inits) == list(k_main.results)
    for kl in (k_main, k_rest):
        assert accesses_in(kl, c) == []        # C lives in registers inside the k loops
    main_body = k_main.body.ops
    assert sum(isinstance(op, AffineLoadOp) for op in main_body) == 4 * (4 + 8)
    assert sum(op.name == "arith.mulf" for op in main_body) == 4 * 32
    assert len(accesses_in(ic, c)) == 64       # 32 loads before, 32 stores after
    assert_mlir_opt_prints_back(text)
    assert_same_run(BLIS_TILED, text, "matmul", random_args([(8, 10), (10, 16), (8, 16)]))


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (5, 17, 5), (17, 5, 17)])
@pytest.mark.parametrize("mr, nr, ku", [(2, 3, 4), (4, 8, 4), (3, 2, 8)])
def test_register_tile_matches_numpy(m, n, k, mr, nr, ku):
    """The whole recipe on the naive nest, sizes not multiples of the factors (cleanup loops
    for i, j and k, trip counts below the factors), against numpy."""
    module, func = parse_func(matmul_nest(m, n, k))
    i, j, kk = loops_of(func)
    register_tile(func, mr, nr, ku, i, j, kk)
    verify(module)
    rng = np.random.default_rng(m * 100 + n)
    a, b, c = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n)), rng.uniform(-1, 1, (m, n))
    expected = c + a @ b
    polyopt.compile(module)["matmul"](a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-12, atol=1e-12)
    # no access to C that is invariant in its innermost loop is left (C[i][j] across k)
    cm = func.regions[0].blocks[0].args[2]
    for loop in loops_of(func):
        if not any(isinstance(o, AffineForOp) for o in loop.body.ops):
            for acc in accesses_in(loop, cm):
                assert loop.induction_var in acc.map_operands, str(module)


def test_register_tile_f32_with_symbolic_k():
    """A symbolic k bound: scalrep cannot prove the k loop runs, so C stays in memory there,
    but forwarding still removes the repeated C accesses of the unrolled copies."""
    text = matmul_nest(6, 8, 9, "f32").replace("affine.for %k = 0 to 9", "affine.for %k = 0 to %K")
    text = text.replace("%C: memref<6x8xf32>)", "%C: memref<6x8xf32>, %K: index)")
    module, func = parse_func(text)
    i, j, k = loops_of(func)
    unroll_jam(i, 2, check=unroll_jam_is_legal)
    unroll_jam(j, 4, check=unroll_jam_is_legal)
    stats = scalar_replace(func)
    verify(module)
    # 2 x 4 copies: A[i + u][k] loaded once per u (6 reloads gone), B[k][j + v] once per v (4)
    assert (stats.carried, stats.forwarded, stats.loads_removed) == (0, 0, 10)
    assert_same_run(text, str(module), "matmul",
                    [x.astype(np.float32) for x in random_args([(6, 9), (9, 8), (6, 8)])],
                    [(0,), (3,), (9,)])


# ---------------------------------------------------------------------------------------------
# within a block


BLOCK = """
func.func @f(%A: memref<8xf64>, %B: memref<8xf64>, %i: index, %k: index) {
  %a = affine.load %A[%i] : memref<8xf64>
  %b = affine.load %A[%i] : memref<8xf64>
  %c = arith.addf %a, %b : f64
  affine.store %c, %B[%i + 1] : memref<8xf64>
  affine.store %c, %B[%i] : memref<8xf64>
  %d = affine.load %B[%i + 1] : memref<8xf64>
  affine.store %d, %A[%k] : memref<8xf64>
  %e = affine.load %A[%i] : memref<8xf64>
  affine.store %e, %B[%i] : memref<8xf64>
  return
}
"""

# %b is %a (redundant load), %d is %c (forwarded from B[%i + 1], untouched by the store to
# B[%i]), the first store to B[%i] is dead (overwritten, never read); but %e is reloaded: the
# store to A[%k] may have changed A[%i]
BLOCK_GOLDEN = """\
module {
  func.func @f(%arg0: memref<8xf64>, %arg1: memref<8xf64>, %arg2: index, %arg3: index) {
    %0 = affine.load %arg0[%arg2] : memref<8xf64>
    %1 = arith.addf %0, %0 : f64
    affine.store %1, %arg1[%arg2 + 1] : memref<8xf64>
    affine.store %1, %arg0[%arg3] : memref<8xf64>
    %2 = affine.load %arg0[%arg2] : memref<8xf64>
    affine.store %2, %arg1[%arg2] : memref<8xf64>
    return
  }
}
"""


def test_forwarding_redundant_loads_and_dead_stores_golden():
    out, stats = scalrep(BLOCK)
    assert out == BLOCK_GOLDEN
    assert (stats.forwarded, stats.loads_removed, stats.stores_removed) == (1, 1, 1)
    assert_mlir_opt_prints_back(out)
    arrays = random_args([(8,), (8,)])
    assert_same_run(BLOCK, out, "f", arrays, [(i, k) for i in (2, 5) for k in (0, 2, 3, 6)])


def test_forwarding_sees_writes_in_nested_loops_and_through_views():
    text = """
        func.func @f(%A: memref<8xf64>, %B: memref<8xf64>) {
          %a = affine.load %A[3] : memref<8xf64>
          affine.for %t = 0 to 8 {
            %x = affine.load %B[%t] : memref<8xf64>
            affine.store %x, %A[%t] : memref<8xf64>
          }
          %b = affine.load %A[3] : memref<8xf64>
          %c = affine.load %A[4] : memref<8xf64>
          %V = memref.cast %A : memref<8xf64> to memref<?xf64>
          affine.store %a, %V[0] : memref<?xf64>
          %d = affine.load %A[4] : memref<8xf64>
          %s = arith.addf %b, %d : f64
          %s2 = arith.addf %s, %c : f64
          affine.store %s2, %B[0] : memref<8xf64>
          return
        }"""
    out, stats = scalrep(text)
    assert stats == ScalrepStats()                 # every reload is needed
    assert out.count("affine.load %arg0[4]") == 2 and out.count("affine.load %arg0[3]") == 2


def test_vector_widths_decide_disjointness():
    text = """
        func.func @f(%C: memref<4x24xf64>, %x: vector<8xf64>) {
          affine.vector_store %x, %C[0, 0] : memref<4x24xf64>, vector<8xf64>
          affine.vector_store %x, %C[0, 8] : memref<4x24xf64>, vector<8xf64>
          %a = affine.vector_load %C[0, 0] : memref<4x24xf64>, vector<8xf64>
          affine.vector_store %a, %C[1, 4] : memref<4x24xf64>, vector<8xf64>
          affine.vector_store %x, %C[0, 4] : memref<4x24xf64>, vector<8xf64>
          %b = affine.vector_load %C[0, 8] : memref<4x24xf64>, vector<8xf64>
          %c = affine.load %C[0, 0] : memref<4x24xf64>
          affine.vector_store %b, %C[2, 0] : memref<4x24xf64>, vector<8xf64>
          affine.store %c, %C[3, 0] : memref<4x24xf64>
          return
        }"""
    out, stats = scalrep(text)
    # %a is forwarded (C[0, 8:16] does not overlap C[0, 0:8]); C[0, 4:12] overlaps both, so %b
    # and the scalar %c are loaded again; no store is dead (the overlaps may read them)
    assert (stats.forwarded, stats.loads_removed, stats.stores_removed) == (1, 0, 0)
    assert "affine.vector_store %arg1, %arg0[1, 4]" in out
    assert "affine.vector_load %arg0[0, 8]" in out and "affine.load %arg0[0, 0]" in out
    assert_mlir_opt_prints_back(out)


# ---------------------------------------------------------------------------------------------
# around loops


HOIST_CARRY = """
func.func @f(%A: memref<10x7xf64>, %B: memref<10xf64>, %C: memref<10xf64>) {
  affine.for %t = 0 to 2 {
    affine.for %i = affine_map<(d0) -> (d0 * 5)>(%t) to min affine_map<(d0) -> (10, d0 * 5 + 4)>(%t) {
      affine.for %k = 0 to 7 {
        %b = affine.load %B[%i] : memref<10xf64>
        %a = affine.load %A[%i, %k] : memref<10x7xf64>
        %c = affine.load %C[%i] : memref<10xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i] : memref<10xf64>
      }
    }
  }
  return
}
"""

# B[%i] is read-only in the k loop: hoisted; C[%i] is read and written: carried
HOIST_CARRY_GOLDEN = """\
#map = affine_map<(d0) -> (d0 * 5)>
#map1 = affine_map<(d0) -> (10, d0 * 5 + 4)>
module {
  func.func @f(%arg0: memref<10x7xf64>, %arg1: memref<10xf64>, %arg2: memref<10xf64>) {
    affine.for %arg3 = 0 to 2 {
      affine.for %arg4 = #map(%arg3) to min #map1(%arg3) {
        %0 = affine.load %arg1[%arg4] : memref<10xf64>
        %1 = affine.load %arg2[%arg4] : memref<10xf64>
        %2 = affine.for %arg5 = 0 to 7 iter_args(%arg6 = %1) -> (f64) {
          %3 = affine.load %arg0[%arg4, %arg5] : memref<10x7xf64>
          %4 = arith.mulf %3, %0 : f64
          %5 = arith.addf %arg6, %4 : f64
          affine.yield %5 : f64
        }
        affine.store %2, %arg2[%arg4] : memref<10xf64>
      }
    }
    return
  }
}
"""


def test_hoisting_and_loop_carried_element_golden():
    out, stats = scalrep(HOIST_CARRY)
    assert out == HOIST_CARRY_GOLDEN
    assert (stats.hoisted, stats.carried) == (1, 1)
    assert_mlir_opt_prints_back(out)
    assert_same_run(HOIST_CARRY, out, "f", random_args([(10, 7), (10,), (10,)]))
    out, stats = scalrep(HOIST_CARRY, hoist=False, carry=False)
    assert stats == ScalrepStats() and "iter_args" not in out


def test_carry_through_a_min_bounded_loop_and_an_outer_loop():
    """The k loop's upper bound is a min whose values are >= 1 for every tile (interval
    reasoning over the enclosing loop); S[0] is invariant in both loops and carried twice."""
    text = """
        func.func @f(%A: memref<10x9xf64>, %S: memref<1xf64>) {
          affine.for %i = 0 to 10 {
            affine.for %kc = 0 to 3 {
              affine.for %k = affine_map<(d0) -> (d0 * 4)>(%kc) to min affine_map<(d0) -> (9, d0 * 4 + 4)>(%kc) {
                %a = affine.load %A[%i, %k] : memref<10x9xf64>
                %s = affine.load %S[0] : memref<1xf64>
                %t = arith.addf %s, %a : f64
                affine.store %t, %S[0] : memref<1xf64>
              }
            }
          }
          return
        }"""
    out, stats = scalrep(text)
    assert stats.carried == 3
    assert out.count("iter_args") == 3 and out.count("affine.load %arg1[0]") == 1
    assert out.count("affine.store") == 1
    assert_mlir_opt_prints_back(out)
    assert_same_run(text, out, "f", random_args([(10, 9), (1,)]))


MAY_ALIAS = """
func.func @f(%A: memref<6x8xf64>, %C: memref<6x8xf64>, %n: index) {
  affine.for %i = 0 to 6 {
    affine.for %k = 0 to 8 {
      %c = affine.load %C[%i, 0] : memref<6x8xf64>
      %x = affine.load %C[%i, %k] : memref<6x8xf64>
      %s = arith.addf %c, %x : f64
      affine.store %s, %C[%i, 0] : memref<6x8xf64>
    }
    affine.for %k = 0 to %n {
      %c = affine.load %C[%i, 1] : memref<6x8xf64>
      %s = arith.addf %c, %c : f64
      affine.store %s, %C[%i, 1] : memref<6x8xf64>
    }
    %V = memref.cast %C : memref<6x8xf64> to memref<?x8xf64>
    affine.for %k = 0 to 3 {
      %c = affine.load %C[%i, 2] : memref<6x8xf64>
      %v = affine.load %V[%i, 3] : memref<?x8xf64>
      %s = arith.addf %c, %v : f64
      affine.store %s, %C[%i, 2] : memref<6x8xf64>
    }
    affine.for %k = 0 to 3 {
      %c = affine.load %C[%i, 4] : memref<6x8xf64>
      %v = affine.load %A[%i, 1] : memref<6x8xf64>
      %s = arith.addf %c, %v : f64
      affine.store %s, %C[%i, 4] : memref<6x8xf64>
      func.call @g(%A) : (memref<6x8xf64>) -> ()
    }
    affine.for %k = 0 to 3 {
      %c = affine.load %C[%i, 5] : memref<6x8xf64>
      %s = arith.addf %c, %c : f64
      affine.if affine_set<(d0) : (d0 - 1 == 0)>(%k) {
        affine.store %s, %C[%i, 5] : memref<6x8xf64>
      }
    }
  }
  return
}
func.func private @g(memref<6x8xf64>)
"""


def test_loops_it_must_leave_alone():
    """C[%i, 0] vs C[%i, %k] may alias; %n may be 0; a view of C; a call; a conditional store:
    no hoisting or carrying anywhere."""
    out, stats = scalrep(MAY_ALIAS)
    assert stats.hoisted == 0 and stats.carried == 0
    assert "iter_args" not in out
    assert stats == ScalrepStats()
    assert out == str(parse_func(MAY_ALIAS)[0])


def test_differential_on_a_stencil_with_overlapping_accesses():
    """A 1-d recurrence: every load depends on the store of the previous iteration, and the
    forwarding inside the unrolled body must chain them."""
    text = """
        func.func @f(%A: memref<20xf64>) {
          affine.for %i = 1 to 19 {
            %a = affine.load %A[%i - 1] : memref<20xf64>
            %b = affine.load %A[%i] : memref<20xf64>
            %c = affine.load %A[%i + 1] : memref<20xf64>
            %s = arith.addf %a, %b : f64
            %t = arith.addf %s, %c : f64
            affine.store %t, %A[%i] : memref<20xf64>
          }
          return
        }"""
    module, func = parse_func(text)
    unroll(loops_of(func)[0], 4)
    stats = scalar_replace(func)
    verify(module)
    # copy u reads A[i + u - 1] as stored by copy u - 1 and A[i + u] as loaded by it
    assert (stats.forwarded, stats.loads_removed, stats.stores_removed) == (3, 3, 0)
    assert str(module).count("affine.load") == 6 + 3   # main body + cleanup loop
    assert_same_run(text, str(module), "f", random_args([(20,)]))
