"""A triangular nest whose innermost loops stay chains of latencies under ISL's default search
(trisolv's and cholesky's dot products: unroll-and-jam cannot split them, their bounds move
with the loop around) takes ISL's schedule with outer coincidence, whose innermost loops carry
nothing (the column, right-looking form).  Each is executed against numpy on sizes that are
multiples of nothing; a reduction that unroll-and-jam does split keeps ISL's own schedule."""

from __future__ import annotations

import islpy as isl
import numpy as np

import polyopt
from polyopt.schedules.innermost_chains import _bounds_move

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
SWITCHED = "ISL's schedule with outer coincidence: the innermost loops of its own"

TRISOLV = """\
func.func @f(%L: memref<37x37xf64>, %x: memref<37xf64>, %b: memref<37xf64>) {
  affine.for %i = 0 to 37 {
    %bi = affine.load %b[%i] : memref<37xf64>
    affine.store %bi, %x[%i] : memref<37xf64>
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %xi = affine.load %x[%i] : memref<37xf64>
      %lij = affine.load %L[%i, %j] : memref<37x37xf64>
      %xj = affine.load %x[%j] : memref<37xf64>
      %0 = arith.mulf %lij, %xj : f64
      %1 = arith.subf %xi, %0 : f64
      affine.store %1, %x[%i] : memref<37xf64>
    }
    %xi = affine.load %x[%i] : memref<37xf64>
    %lii = affine.load %L[%i, %i] : memref<37x37xf64>
    %0 = arith.divf %xi, %lii : f64
    affine.store %0, %x[%i] : memref<37xf64>
  }
  return
}
"""

CHOLESKY = """\
func.func @f(%A: memref<29x29xf64>) {
  affine.for %i = 0 to 29 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) {
        %aij = affine.load %A[%i, %j] : memref<29x29xf64>
        %aik = affine.load %A[%i, %k] : memref<29x29xf64>
        %ajk = affine.load %A[%j, %k] : memref<29x29xf64>
        %0 = arith.mulf %aik, %ajk : f64
        %1 = arith.subf %aij, %0 : f64
        affine.store %1, %A[%i, %j] : memref<29x29xf64>
      }
      %aij = affine.load %A[%i, %j] : memref<29x29xf64>
      %ajj = affine.load %A[%j, %j] : memref<29x29xf64>
      %0 = arith.divf %aij, %ajj : f64
      affine.store %0, %A[%i, %j] : memref<29x29xf64>
    }
    affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {
      %aii = affine.load %A[%i, %i] : memref<29x29xf64>
      %aik = affine.load %A[%i, %k] : memref<29x29xf64>
      %0 = arith.mulf %aik, %aik : f64
      %1 = arith.subf %aii, %0 : f64
      affine.store %1, %A[%i, %i] : memref<29x29xf64>
    }
    %aii = affine.load %A[%i, %i] : memref<29x29xf64>
    %0 = math.sqrt %aii : f64
    affine.store %0, %A[%i, %i] : memref<29x29xf64>
  }
  return
}
"""

# C := C + A * A^T on the lower triangle (syrk): the k loop is a chain too, but its bounds do
# not move with j, so unroll-and-jam of j splits it
SYRK_LOWER = """\
func.func @f(%A: memref<33x19xf64>, %C: memref<33x33xf64>) {
  affine.for %i = 0 to 33 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      affine.for %k = 0 to 19 {
        %c = affine.load %C[%i, %j] : memref<33x33xf64>
        %a = affine.load %A[%i, %k] : memref<33x19xf64>
        %b = affine.load %A[%j, %k] : memref<33x19xf64>
        %0 = arith.mulf %a, %b : f64
        %1 = arith.addf %c, %0 : f64
        affine.store %1, %C[%i, %j] : memref<33x33xf64>
      }
    }
  }
  return
}
"""


def run(src, *arrays, **flags):
    out = [a.copy() for a in arrays]
    notes = []
    polyopt.compile(src, remark=lambda loc, m: notes.append(m), **flags)["f"](*out)
    return out, [m for m in notes if m.startswith("auto-schedule: nest of")]


def test_trisolv_takes_the_column_form_and_solves():
    rng = np.random.default_rng(3)
    n = 37
    low = np.tril(rng.random((n, n))) + n * np.eye(n)
    b = rng.random(n)
    want = np.linalg.solve(low, b)
    for flags in ({"hopt": True}, ALL):
        (_, x, _), notes = run(TRISOLV, low, np.full(n, np.nan), b, **flags)
        np.testing.assert_allclose(x, want, rtol=1e-12)
        assert len(notes) == 1 and SWITCHED in notes[0], notes
        # x[j] /= L[j][j] alone at the outer level, the updates of the rows below in a loop
        # of their own that carries nothing
        assert "S2[i0] -> [1, i0, 0, 0]" in notes[0] and "S1[i0, i1] -> [1, i1, 1, i0]" \
            in notes[0], notes


def test_cholesky_takes_the_right_looking_form_and_factors():
    rng = np.random.default_rng(4)
    n = 29
    m = rng.random((n, n))
    spd = m @ m.T + n * np.eye(n)
    want = np.linalg.cholesky(spd)
    for flags in ({"hopt": True}, ALL):
        (got,), notes = run(CHOLESKY, spd, **flags)
        np.testing.assert_allclose(np.tril(got), want, rtol=1e-12)
        assert np.array_equal(np.triu(got, 1), np.triu(spd, 1))     # left as it was
        assert len(notes) == 1 and SWITCHED in notes[0], notes
        assert "2 of 2 innermost loops parallel" in notes[0], notes


def test_a_chain_that_unroll_and_jam_splits_keeps_isls_schedule():
    rng = np.random.default_rng(5)
    a, c = rng.random((33, 19)), rng.random((33, 33))
    want = c + np.tril(a @ a.T)
    (_, got), notes = run(SYRK_LOWER, a, c, **ALL)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert len(notes) == 1 and SWITCHED not in notes[0], notes
    assert "unroll-and-jam around innermost reductions" in notes[0], notes


def test_bounds_move_tells_a_triangle_from_a_rectangle():
    tri = isl.Set("{ [t, i, j] : t = 1 and 0 <= i < 40 and 0 <= j < i }")
    rect = isl.Set("{ [t, i, j] : t = 1 and 0 <= i < 40 and 0 <= j < 7 }")
    # j a point loop of a tile o, with a constant dimension between j and k: k's bounds
    # follow the tile, not j
    tiled = isl.Set("{ [o, j, c, k] : 0 <= o < 4 and 8o <= j < 8o + 8 and c = 2 and "
                    "0 <= k < 19 }")
    assert _bounds_move(tri, 1, 2)
    assert not _bounds_move(rect, 1, 2)
    assert not _bounds_move(tiled, 1, 3)
    assert _bounds_move(tiled.intersect(isl.Set("{ [o, j, c, k] : k < j }")), 1, 3)
