"""polyopt.memref_layout.data_copy (MLIR's affineDataCopyGenerate): golden IR for small cases,
differential execution against the untransformed nest (stencil with a halo, transposes, a written
memref that needs copy-out, padding, layouts, depths), legality refusals, and the buffers'
lifetime (allocated once, outside the nest)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.affine_expr import parse_affine_map
from polyopt.affine.builder import Builder
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from polyopt.affine.dialects.memref import AllocOp
from polyopt.affine.types import MemRefType, f64
from polyopt.affine.verifier import verify
from polyopt.memref_layout.data_copy import generate_copy
from upstream_mlir import assert_mlir_opt_prints_back


def parse(text: str):
    """(module, func, its arguments, its first op)."""
    module = polyopt.parse(textwrap.dedent(text), "t.mlir")
    func = module.regions[0].blocks[0].ops[0]
    body = func.regions[0].blocks[0]
    return module, func, list(body.args), body.ops[0]


def run_both(original: str, transformed, name: str, arrays: list[np.ndarray]) -> list:
    """Run the untransformed text and the transformed module on copies of ``arrays``; the
    results must be bitwise equal (copying does not change the arithmetic)."""
    verify(transformed)
    ref = [a.copy() for a in arrays]
    got = [a.copy() for a in arrays]
    polyopt.compile(original)[name](*ref)
    polyopt.compile(transformed)[name](*got)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g, r)
    return got


def rand(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# golden: a tile of a matrix, copied under two tiling loops (the paper's section 2.6 shape)

TILED_READ = """\
#ub = affine_map<(d0) -> (50, d0 * 16 + 16)>
#lb = affine_map<(d0) -> (d0 * 16)>
func.func @rowsum(%A: memref<50x40xf64>, %S: memref<50xf64>) {
  affine.for %ii = 0 to 4 {
    affine.for %kk = 0 to 5 {
      affine.for %i = #lb(%ii) to min #ub(%ii) {
        affine.for %k = 0 to 8 {
          %a = affine.load %A[%i, %kk * 8 + %k] : memref<50x40xf64>
          %s = affine.load %S[%i] : memref<50xf64>
          %t = arith.addf %s, %a : f64
          affine.store %t, %S[%i] : memref<50xf64>
        }
      }
    }
  }
  return
}
"""

# A's 16x8 tile is copied under %kk (depth 2): the copy loops run over the tile clipped to A
# (min at the last row tile), the nest reads the buffer relative to the tile's corner
# (%arg2 * -16 + %arg4), and the buffer is allocated once, before the nest.
TILED_READ_GOLDEN = """\
#map = affine_map<(d0) -> (d0 * 16)>
#map1 = affine_map<(d0) -> (50, d0 * 16 + 16)>
#map2 = affine_map<(d0) -> (d0 * 8)>
#map3 = affine_map<(d0) -> (d0 * 8 + 8)>
module {
  func.func @rowsum(%arg0: memref<50x40xf64>, %arg1: memref<50xf64>) {
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x8xf64>
    affine.for %arg2 = 0 to 4 {
      affine.for %arg3 = 0 to 5 {
        affine.for %arg4 = #map(%arg2) to min #map1(%arg2) {
          affine.for %arg5 = #map2(%arg3) to #map3(%arg3) {
            %0 = affine.load %arg0[%arg4, %arg5] : memref<50x40xf64>
            affine.store %0, %alloc[%arg2 * -16 + %arg4, %arg3 * -8 + %arg5] : memref<16x8xf64>
          }
        }
        affine.for %arg4 = #map(%arg2) to min #map1(%arg2) {
          affine.for %arg5 = 0 to 8 {
            %0 = affine.load %alloc[%arg2 * -16 + %arg4, %arg5] : memref<16x8xf64>
            %1 = affine.load %arg1[%arg4] : memref<50xf64>
            %2 = arith.addf %1, %0 : f64
            affine.store %2, %arg1[%arg4] : memref<50xf64>
          }
        }
      }
    }
    memref.dealloc %alloc : memref<16x8xf64>
    return
  }
}
"""


def test_tile_copy_golden_and_execution():
    module, func, (a, s), top = parse(TILED_READ)
    info = generate_copy(top, a, depth=2)
    assert str(module) == TILED_READ_GOLDEN
    assert info.region_shape == (16, 8) and info.buffer_type.shape == (16, 8)
    assert str(info.lower_bounds) == "(d0, d1) -> (d0 * 16, d1 * 8)"
    assert info.lower_bound_operands == [top.induction_var, top.body.ops[0].induction_var]
    assert not info.copy_out and not info.zero_fill and info.num_rewritten == 1
    # allocated once: the alloc and dealloc are in the function body, around the nest
    assert info.alloc.parent is top.parent and info.deallocs[0].parent is top.parent
    assert top.parent.index_of(info.alloc) < top.parent.index_of(top) \
        < top.parent.index_of(info.deallocs[0])
    run_both(TILED_READ, module, "rowsum", [rand(50, 40), rand(50, seed=1)])


# A written memref: %S is read and written in the region: copied in and out, 16 elements.
TILED_READ_S_GOLDEN_PART = """\
        affine.for %arg4 = #map(%arg2) to min #map1(%arg2) {
          %0 = affine.load %arg1[%arg4] : memref<50xf64>
          affine.store %0, %alloc[%arg2 * -16 + %arg4] : memref<16xf64>
        }
        affine.for %arg4 = #map(%arg2) to min #map1(%arg2) {
          affine.for %arg5 = 0 to 8 {
            %0 = affine.load %arg0[%arg4, %arg3 * 8 + %arg5] : memref<50x40xf64>
            %1 = affine.load %alloc[%arg2 * -16 + %arg4] : memref<16xf64>
            %2 = arith.addf %1, %0 : f64
            affine.store %2, %alloc[%arg2 * -16 + %arg4] : memref<16xf64>
          }
        }
        affine.for %arg4 = #map(%arg2) to min #map1(%arg2) {
          %0 = affine.load %alloc[%arg2 * -16 + %arg4] : memref<16xf64>
          affine.store %0, %arg1[%arg4] : memref<50xf64>
        }
"""


def test_written_memref_is_copied_in_and_out():
    module, func, (a, s), top = parse(TILED_READ)
    info = generate_copy(top, s, depth=2)
    assert TILED_READ_S_GOLDEN_PART in str(module)
    assert info.copy_in and info.copy_out and info.buffer_type.shape == (16,)
    run_both(TILED_READ, module, "rowsum", [rand(50, 40), rand(50, seed=1)])


def test_both_memrefs_and_mlir_opt_accepts_the_result():
    module, func, (a, s), top = parse(TILED_READ)
    generate_copy(top, a, depth=2)
    generate_copy(top, s, depth=1)     # %S under %ii only: 16 elements per row tile
    run_both(TILED_READ, module, "rowsum", [rand(50, 40), rand(50, seed=1)])
    assert_mlir_opt_prints_back(str(module))


# ---------------------------------------------------------------------------------------------
# a 2-D stencil: the region has a halo, partial at the borders

STENCIL = """\
#lb = affine_map<(d0) -> (1, d0 * 32)>
#ub = affine_map<(d0) -> (69, d0 * 32 + 32)>
func.func @stencil(%in: memref<70x70xf64>, %out: memref<70x70xf64>) {
  affine.for %ii = 0 to 3 {
    affine.for %jj = 0 to 3 {
      affine.for %i = max #lb(%ii) to min #ub(%ii) {
        affine.for %j = max #lb(%jj) to min #ub(%jj) {
          %n = affine.load %in[%i - 1, %j] : memref<70x70xf64>
          %s = affine.load %in[%i + 1, %j] : memref<70x70xf64>
          %w = affine.load %in[%i, %j - 1] : memref<70x70xf64>
          %e = affine.load %in[%i, %j + 1] : memref<70x70xf64>
          %c = affine.load %in[%i, %j] : memref<70x70xf64>
          %0 = arith.addf %n, %s : f64
          %1 = arith.addf %w, %e : f64
          %2 = arith.addf %0, %1 : f64
          %3 = arith.addf %2, %c : f64
          affine.store %3, %out[%i, %j] : memref<70x70xf64>
        }
      }
    }
  }
  return
}
"""


def test_stencil_with_halo():
    module, func, (inp, out), top = parse(STENCIL)
    halo = generate_copy(top, inp, depth=2)
    res = generate_copy(top, out, depth=2)
    # 32x32 tiles read 34x34 with the halo, starting one row/column before the tile
    assert halo.region_shape == (34, 34)
    assert str(halo.lower_bounds) == "(d0, d1) -> (d0 * 32 - 1, d1 * 32 - 1)"
    assert res.region_shape == (32, 32) and res.copy_out
    # the result tile does not cover the untouched border rows: it is copied in as well
    assert res.copy_in
    text = str(module)
    # the halo copy is clipped to the array at the borders
    assert "affine_map<(d0) -> (0, d0 * 32 - 1)>" in text
    assert "affine_map<(d0) -> (70, d0 * 32 + 33)>" in text
    assert "%alloc[%arg2 * -32 + %arg4 + 2, %arg3 * -32 + %arg5 + 1]" in text
    run_both(STENCIL, module, "stencil", [rand(70, 70), rand(70, 70, seed=1)])
    assert_mlir_opt_prints_back(str(module))


# ---------------------------------------------------------------------------------------------
# transposes: a transposed access, a transposed buffer layout, a write-only region

TRANSPOSE = """\
func.func @transpose(%A: memref<50x70xf32>, %B: memref<70x50xf32>) {
  affine.for %ii = 0 to 50 step 16 {
    affine.for %jj = 0 to 70 step 16 {
      affine.for %i = affine_map<(d0) -> (d0)>(%ii) to min affine_map<(d0) -> (50, d0 + 16)>(%ii) {
        affine.for %j = affine_map<(d0) -> (d0)>(%jj) to min affine_map<(d0) -> (70, d0 + 16)>(%jj) {
          %v = affine.load %A[%i, %j] : memref<50x70xf32>
          affine.store %v, %B[%j, %i] : memref<70x50xf32>
        }
      }
    }
  }
  return
}
"""


def test_transpose_copy_with_strided_tile_loops():
    module, func, (a, b), top = parse(TRANSPOSE)
    ia = generate_copy(top, a, depth=2, buffer_layout=parse_affine_map("(d0, d1) -> (d1, d0)"))
    ib = generate_copy(top, b, depth=2)
    assert ia.region_shape == (16, 16) and ib.region_shape == (16, 16)
    assert str(ia.buffer_type) == "memref<16x16xf32, affine_map<(d0, d1) -> (d1, d0)>>"
    # B's region is written entirely and never read: no copy-in, only copy-out
    assert not ib.copy_in and ib.copy_out
    # the tile loops step by 16: the region starts at their IVs
    assert "%alloc_0[-%arg3 + %arg5, -%arg2 + %arg4]" in str(module)
    run_both(TRANSPOSE, module, "transpose", [rand(50, 70, dtype=np.float32),
                                               rand(70, 50, dtype=np.float32, seed=1)])
    assert_mlir_opt_prints_back(str(module))


# ---------------------------------------------------------------------------------------------
# overlapping reads and writes of the copied memref, depth 0, block positions, hoisting

SMOOTH = """\
func.func @smooth(%A: memref<100xf64>) {
  %c = arith.constant 0.5 : f64
  affine.for %t = 0 to 7 {
    affine.for %i = affine_map<(d0) -> (d0 * 16)>(%t) to min affine_map<(d0) -> (99, d0 * 16 + 16)>(%t) {
      %x = affine.load %A[%i] : memref<100xf64>
      %y = affine.load %A[%i + 1] : memref<100xf64>
      %s = arith.addf %x, %y : f64
      %h = arith.mulf %s, %c : f64
      affine.store %h, %A[%i] : memref<100xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("depth", [0, 1])
def test_in_place_update_reads_ahead(depth):
    # A[i] = (A[i] + A[i+1]) / 2 in place: each tile reads one element past its writes, which
    # the next tile overwrites later; copy-in/copy-out per tile keeps the original order
    module, func, (a,), _ = parse(SMOOTH)
    top = next(o for o in func.regions[0].blocks[0].ops if isinstance(o, AffineForOp))
    info = generate_copy(top, a, depth=depth)
    assert info.region_shape == ((100,) if depth == 0 else (17,))
    assert info.copy_in and info.copy_out
    run_both(SMOOTH, module, "smooth", [rand(100)])


def test_block_position_and_hoisting_to_the_function():
    module, func, (a, s), top = parse(TILED_READ)
    inner = top.body.ops[0]                      # the %kk loop
    info = generate_copy((inner.body, 0, 1), a, hoist_alloc_to=func)
    body = func.regions[0].blocks[0]
    assert body.ops[0] is info.alloc             # at the function entry
    assert info.deallocs[0] is body.ops[-2]      # before the return
    assert info.region_shape == (16, 8)
    run_both(TILED_READ, module, "rowsum", [rand(50, 40), rand(50, seed=1)])


def test_hoisting_to_an_enclosing_loop_allocates_per_iteration_of_it():
    module, func, (a, s), top = parse(TILED_READ)
    info = generate_copy(top, a, depth=2, hoist_alloc_to=top.body.ops[0])
    assert info.alloc.parent is top.body and info.deallocs[0].parent is top.body
    run_both(TILED_READ, module, "rowsum", [rand(50, 40), rand(50, seed=1)])


# ---------------------------------------------------------------------------------------------
# padding: the buffer is rounded up and what lies outside the copied box is zero


PANEL = """\
func.func @panel(%A: memref<23x10xf64>, %D: memref<3x8x12xf64>) {
  affine.for %ii = 0 to 3 {
    affine.for %i = affine_map<(d0) -> (d0 * 8)>(%ii) to min affine_map<(d0) -> (23, d0 * 8 + 8)>(%ii) {
      affine.for %k = 0 to 10 {
        %a = affine.load %A[%i, %k] : memref<23x10xf64>
        affine.store %a, %A[%i, %k] : memref<23x10xf64>
      }
    }
  }
  return
}
"""


def dump_buffer(info, nest, top, dbg, shape):
    """Right before ``nest`` (after the copies of each %ii iteration), copy the whole (padded)
    buffer to ``dbg[%ii]`` so that the test sees the padding."""
    b = Builder.before(nest)
    rows, cols = shape
    lr = b.create(AffineForOp.build_constant, 0, rows)
    lc = Builder.before_terminator(lr.body).create(AffineForOp.build_constant, 0, cols)
    ib = Builder.before_terminator(lc.body)
    v = ib.create(AffineLoadOp.build, info.buffer, [lr.induction_var, lc.induction_var]).result
    ib.create(AffineStoreOp.build, v, dbg, [top.induction_var, lr.induction_var,
                                            lc.induction_var])


@pytest.mark.parametrize("layout", [None, "(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)"])
def test_padding_is_zero_filled(layout):
    module, func, (a, dbg), top = parse(PANEL)
    amap = parse_affine_map(layout) if layout else None
    nest = top.body.ops[0]
    info = generate_copy(top, a, depth=1, pad_to=(4, 3), buffer_layout=amap)
    assert info.region_shape == (8, 10) and info.buffer_type.shape == (8, 12)
    assert info.zero_fill and info.copy_out
    dump_buffer(info, nest, top, dbg, (8, 12))
    src = rand(23, 10)
    d = np.full((3, 8, 12), 7.0)
    verify(module)
    polyopt.compile(module)["panel"](src.copy(), d)
    for t in range(3):
        rows = min(8, 23 - 8 * t)
        np.testing.assert_array_equal(d[t, :rows, :10], src[8 * t:8 * t + rows])
        assert not d[t, rows:, :].any() and not d[t, :, 10:].any()   # zero, not stale


def test_padding_zero_fill_outside_the_array_at_every_copy():
    # the last tile has 7 valid rows: its buffer rows 7.. were written by the previous tile
    # and must be zeroed again at this copy
    module, func, (a, dbg), top = parse(PANEL)
    nest = top.body.ops[0]
    info = generate_copy(top, a, depth=1, pad_to=(8, 1))
    assert info.buffer_type.shape == (8, 10) and info.zero_fill
    dump_buffer(info, nest, top, dbg, (8, 10))
    src = rand(23, 10)
    d = np.full((3, 8, 12), 7.0)
    verify(module)
    polyopt.compile(module)["panel"](src.copy(), d)
    assert not d[2, 7:, :10].any()
    np.testing.assert_array_equal(d[2, :7, :10], src[16:23])


# ---------------------------------------------------------------------------------------------
# refusals (checked before the IR changes)

ALIAS = """\
func.func @f(%A: memref<16x16xf64>) {
  %V = memref.cast %A : memref<16x16xf64> to memref<?x16xf64>
  %c = arith.constant 1.0 : f64
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 16 {
      %a = affine.load %A[%i, %j] : memref<16x16xf64>
      affine.store %c, %V[%j, %i] : memref<?x16xf64>
    }
  }
  return
}
"""


def test_refuses_a_memref_written_through_an_alias():
    module, func, (a,), _ = parse(ALIAS)
    top = next(o for o in func.regions[0].blocks[0].ops if isinstance(o, AffineForOp))
    before = str(module)
    with pytest.raises(ScheduleError, match=r"cannot copy %arg0 in 'affine.for' %arg1: %cast "
                                            r"may alias it and is written by 'affine.store'"):
        generate_copy(top, a, depth=1)
    assert str(module) == before


NON_AFFINE = """\
func.func @f(%A: memref<16xf64>) {
  affine.for %i = 0 to 16 {
    %a = affine.load %A[%i] : memref<16xf64>
    %b = memref.load %A[%i] : memref<16xf64>
    %s = arith.addf %a, %b : f64
    affine.store %s, %A[%i] : memref<16xf64>
  }
  return
}
"""


def test_refuses_non_affine_uses_and_lost_writes():
    module, func, (a,), top = parse(NON_AFFINE)
    with pytest.raises(ScheduleError, match=r"cannot copy %arg0 around 'affine.for' %arg1: it "
                                            r"is used by 'memref.load' inside the region"):
        generate_copy(top, a, depth=0)
    module, func, (a, s), top = parse(TILED_READ)
    with pytest.raises(ScheduleError, match="without copy-out: the region writes it"):
        generate_copy(top, s, depth=2, copy_out=False)


def test_bad_arguments():
    module, func, (a, s), top = parse(TILED_READ)
    body = func.regions[0].blocks[0]
    unused = Builder.at_start(body).create(AllocOp.build, MemRefType((4,), f64)).result
    before = str(module)
    with pytest.raises(ValueError, match="pad_to must hold 2 positive integers"):
        generate_copy(top, a, depth=2, pad_to=(4,))
    with pytest.raises(ValueError, match="%alloc is not accessed around 'affine.for' %arg2"):
        generate_copy(top, unused, depth=0)
    with pytest.raises(ValueError, match="buffer_layout must be an affine map with 2 dims"):
        generate_copy(top, a, depth=2, buffer_layout=parse_affine_map("(d0) -> (d0)"))
    with pytest.raises(ValueError, match="depth must be a non-negative integer"):
        generate_copy(top, a, depth=-1)
    with pytest.raises(ValueError, match="cannot descend to depth 5"):
        generate_copy(top, a, depth=5)
    with pytest.raises(ValueError, match="hoist_alloc_to must be the region's op or an "
                                         "ancestor"):
        generate_copy(top, a, depth=2, hoist_alloc_to=body.ops[-1])
    assert str(module) == before


DYNAMIC = """\
func.func @f(%A: memref<?xf64>, %n: index) {
  affine.for %i = 0 to %n {
    %a = affine.load %A[%i] : memref<?xf64>
    affine.store %a, %A[%i] : memref<?xf64>
  }
  return
}
"""


def test_refuses_dynamic_shapes_and_unbounded_regions():
    module, func, (a, n), top = parse(DYNAMIC)
    with pytest.raises(ScheduleError, match="its shape is dynamic"):
        generate_copy(top, a, depth=0)
    text = DYNAMIC.replace("memref<?xf64>", "memref<64xf64>")
    module, func, (a, n), top = parse(text)
    # the loop runs to %n: no constant bounding box along dimension 0... except the array's
    # own bound, which only holds if the accesses stay in bounds; the region is unbounded
    with pytest.raises(ScheduleError, match="no constant-size bounding box"):
        generate_copy(top, a, depth=0)


# ---------------------------------------------------------------------------------------------
# property: random tiled nests, depths, paddings and layouts run as the original

NEST = """\
func.func @f(%A: memref<{m}x{n}xf64>, %B: memref<{n}x{m}xf64>) {{
  affine.for %ii = 0 to {ti} {{
    affine.for %jj = 0 to {tj} {{
      affine.for %i = affine_map<(d0) -> (d0 * {bi})>(%ii) to min affine_map<(d0) -> ({m}, d0 * {bi} + {bi})>(%ii) {{
        affine.for %j = affine_map<(d0) -> (d0 * {bj})>(%jj) to min affine_map<(d0) -> ({n}, d0 * {bj} + {bj})>(%jj) {{
          %a = affine.load %A[%i, %j] : memref<{m}x{n}xf64>
          %b = affine.load %B[%j, %i] : memref<{n}x{m}xf64>
          %s = arith.addf %a, %b : f64
          affine.store %s, %A[%i, %j] : memref<{m}x{n}xf64>
        }}
      }}
    }}
  }}
  return
}}
"""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), n=st.integers(1, 40), bi=st.integers(1, 12), bj=st.integers(1, 12),
       depth_a=st.integers(0, 2), depth_b=st.integers(0, 2), pad=st.integers(1, 5),
       tiled_layout=st.booleans())
def test_random_tiled_nests(m, n, bi, bj, depth_a, depth_b, pad, tiled_layout):
    text = NEST.format(m=m, n=n, bi=bi, bj=bj, ti=-(-m // bi), tj=-(-n // bj))
    module, func, (a, b), top = parse(text)
    layout = parse_affine_map(f"(d0, d1) -> (d1 floordiv {pad}, d0, d1 mod {pad})") \
        if tiled_layout else None
    generate_copy(top, b, depth=depth_b, pad_to=(1, pad), buffer_layout=layout)
    generate_copy(top, a, depth=depth_a, pad_to=(pad, 1))
    run_both(text, module, "f", [rand(m, n), rand(n, m, seed=1)])
