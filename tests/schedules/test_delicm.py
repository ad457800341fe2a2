"""hopt-delicm: a 0-d scalar whose every live range ends by storing into an array element that
nothing else touches meanwhile lives in that element.  Each rewrite is executed against the
program without passes (and numpy), on sizes that are multiples of nothing; every case where
the element is read, the scalar outlives its range, or a view may alias, stays as written."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.printer import print_module
from polyopt.passes import run_pipeline
from polyopt.pipeline import load
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)

# C's `s = 0; for k: s += A[i][k] * B[k][j]; C[i][j] = s;` as a frontend writes it
MATMUL_WITH_A_SCALAR = """\
func.func @f(%A: memref<37x41xf64>, %B: memref<41x43xf64>, %C: memref<37x43xf64>) {
  %s = memref.alloca() : memref<f64>
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 43 {
      affine.store %zero, %s[] : memref<f64>
      affine.for %k = 0 to 41 {
        %a = affine.load %A[%i, %k] : memref<37x41xf64>
        %b = affine.load %B[%k, %j] : memref<41x43xf64>
        %p = arith.mulf %a, %b : f64
        %v = affine.load %s[] : memref<f64>
        %q = arith.addf %v, %p : f64
        affine.store %q, %s[] : memref<f64>
      }
      %r = affine.load %s[] : memref<f64>
      affine.store %r, %C[%i, %j] : memref<37x43xf64>
    }
  }
  return
}
"""

# PolyBench's ludcmp factorization: lu with its partial sums in the scalar w
LU_WITH_A_SCALAR = """\
func.func @f(%A: memref<29x29xf64>) {
  %w = memref.alloca() : memref<f64>
  affine.for %i = 0 to 29 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %aij = affine.load %A[%i, %j] : memref<29x29xf64>
      affine.store %aij, %w[] : memref<f64>
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) {
        %wv = affine.load %w[] : memref<f64>
        %aik = affine.load %A[%i, %k] : memref<29x29xf64>
        %akj = affine.load %A[%k, %j] : memref<29x29xf64>
        %0 = arith.mulf %aik, %akj : f64
        %1 = arith.subf %wv, %0 : f64
        affine.store %1, %w[] : memref<f64>
      }
      %wv = affine.load %w[] : memref<f64>
      %ajj = affine.load %A[%j, %j] : memref<29x29xf64>
      %0 = arith.divf %wv, %ajj : f64
      affine.store %0, %A[%i, %j] : memref<29x29xf64>
    }
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 29 {
      %aij = affine.load %A[%i, %j] : memref<29x29xf64>
      affine.store %aij, %w[] : memref<f64>
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {
        %wv = affine.load %w[] : memref<f64>
        %aik = affine.load %A[%i, %k] : memref<29x29xf64>
        %akj = affine.load %A[%k, %j] : memref<29x29xf64>
        %0 = arith.mulf %aik, %akj : f64
        %1 = arith.subf %wv, %0 : f64
        affine.store %1, %w[] : memref<f64>
      }
      %wv = affine.load %w[] : memref<f64>
      affine.store %wv, %A[%i, %j] : memref<29x29xf64>
    }
  }
  return
}
"""


def delicm(src):
    remarks = []
    module = load(src)
    run_pipeline(module, "hopt-delicm", remark=lambda loc, m: remarks.append(m))
    return print_module(module), remarks


def run(src, *arrays, **flags):
    out = [a.copy() for a in arrays]
    polyopt.compile(src, **flags)["f"](*out)
    return out


def test_a_matmul_with_a_scalar_sum_becomes_a_blis_contraction():
    text, remarks = delicm(MATMUL_WITH_A_SCALAR)
    assert "memref<f64>" not in text
    assert "affine.store %cst, %arg2[%arg3, %arg4]" in text
    assert "affine.store %4, %arg2[%arg3, %arg4]" in text     # the sum, in C's element
    assert len(remarks) == 1 and "1 live range(s), memref<37x43xf64>" in remarks[0]
    assert mlir_opt(text) == text
    rng = np.random.default_rng(1)
    a, b = rng.random((37, 41)), rng.random((41, 43))
    c = np.full((37, 43), np.nan)
    (_, _, plain) = run(MATMUL_WITH_A_SCALAR, a, b, c)
    np.testing.assert_allclose(plain, a @ b, rtol=1e-13)
    notes = []
    (_, _, got) = run(MATMUL_WITH_A_SCALAR, a, b, c, remark=lambda loc, m: notes.append(m),
                      **ALL)
    np.testing.assert_allclose(got, a @ b, rtol=1e-13)
    assert any(m.startswith("raised to a contraction: C[i, j] = A[i, k] * B[k, j]")
               for m in notes), notes


def test_ludcmps_scalar_lives_in_a_and_the_nest_is_lus():
    text, remarks = delicm(LU_WITH_A_SCALAR)
    assert "memref<f64>" not in text and len(remarks) == 1
    assert "2 live range(s)" in remarks[0]
    # `w = A[i][j]` then `A[i][j] = w` were copies of the element onto itself: gone
    assert text.count("affine.store") == 3
    assert mlir_opt(text) == text
    rng = np.random.default_rng(2)
    a = rng.random((29, 29)) + 29 * np.eye(29)
    (want,) = run(LU_WITH_A_SCALAR, a)
    (got,) = run(text, a)
    assert np.array_equal(got, want)
    notes = []
    (got,) = run(LU_WITH_A_SCALAR, a, remark=lambda loc, m: notes.append(m), **ALL)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    scheduled = [m for m in notes if m.startswith("auto-schedule: nest of")]
    # with w, every loop carried w's dependences: "ISL's schedule is the original order"
    assert scheduled and not any("original order" in m for m in scheduled), notes


def _unchanged(src):
    text, remarks = delicm(src)
    assert text == print_module(load(src)) and remarks == []


SUM_THEN = """\
func.func @f(%X: memref<7x9xf64>, %C: memref<7xf64>, %T: memref<7xf64>) {
  %s = memref.alloca() : memref<f64>
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 7 {
    affine.store %zero, %s[] : memref<f64>
    affine.for %k = 0 to 9 {
      %x = affine.load %X[%i, %k] : memref<7x9xf64>
      %v = affine.load %s[] : memref<f64>
      %q = arith.addf %v, %x : f64
      affine.store %q, %s[] : memref<f64>
    }
    %r = affine.load %s[] : memref<f64>
    BODY
  }
  TAIL
  return
}
"""


@pytest.mark.parametrize("body,tail,why", [
    # symm's temp2: the final statement reads the element's old value
    ("%c = affine.load %C[%i] : memref<7xf64>\n    %t = arith.addf %c, %r : f64\n"
     "    affine.store %t, %C[%i] : memref<7xf64>", "", "the element is read in the range"),
    # the last value of s is read after the loop
    ("affine.store %r, %C[%i] : memref<7xf64>",
     "%l = affine.load %s[] : memref<f64>\n  affine.store %l, %T[0] : memref<7xf64>",
     "the scalar outlives its ranges"),
    # the element stored to depends on a value computed in the loop
    ("%m = arith.constant 6 : index\n    affine.store %r, %C[symbol(%m)] : memref<7xf64>", "",
     "the element's subscript is defined in the range's loop"),
    # no store after the last use: nothing to live in
    ("%t = arith.addf %r, %r : f64", "", "no store ends the range"),
])
def test_ranges_that_cannot_live_in_an_element_stay(body, tail, why):
    _unchanged(SUM_THEN.replace("BODY", body).replace("TAIL", tail))


def test_a_range_that_touches_the_element_elsewhere_stays():
    """Here the inner loop reads C[i] itself at k = i (C is 7 long, k < 7): not the element's
    own value any more once s lives there."""
    _unchanged("""\
func.func @f(%X: memref<7x7xf64>, %C: memref<7xf64>) {
  %s = memref.alloca() : memref<f64>
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 7 {
    affine.store %zero, %s[] : memref<f64>
    affine.for %k = 0 to 7 {
      %c = affine.load %C[%k] : memref<7xf64>
      %v = affine.load %s[] : memref<f64>
      %q = arith.addf %v, %c : f64
      affine.store %q, %s[] : memref<f64>
    }
    %r = affine.load %s[] : memref<f64>
    affine.store %r, %C[%i] : memref<7xf64>
  }
  return
}
""")


def test_a_scalar_carried_from_one_iteration_to_the_next_stays():
    """deriche's ym1: read before it is set in each iteration."""
    _unchanged("""\
func.func @f(%X: memref<9xf32>, %Y: memref<9xf32>) {
  %s = memref.alloca() : memref<f32>
  %zero = arith.constant 0.0 : f32
  affine.store %zero, %s[] : memref<f32>
  affine.for %i = 0 to 9 {
    %v = affine.load %s[] : memref<f32>
    %x = affine.load %X[%i] : memref<9xf32>
    %q = arith.addf %v, %x : f32
    affine.store %q, %Y[%i] : memref<9xf32>
    affine.store %x, %s[] : memref<f32>
  }
  return
}
""")


def test_a_view_or_another_element_type_stays():
    _unchanged("""\
func.func @f(%X: memref<7x9xf64>, %C: memref<7xf32>) {
  %s = memref.alloca() : memref<f64>
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 7 {
    affine.store %zero, %s[] : memref<f64>
    affine.for %k = 0 to 9 {
      %x = affine.load %X[%i, %k] : memref<7x9xf64>
      %v = affine.load %s[] : memref<f64>
      %q = arith.addf %v, %x : f64
      affine.store %q, %s[] : memref<f64>
    }
    %r = affine.load %s[] : memref<f64>
    %t = arith.truncf %r : f64 to f32
    affine.store %t, %C[%i] : memref<7xf32>
  }
  return
}
""")
    _unchanged("""\
func.func @f(%X: memref<7x9xf64>, %C: memref<8xf64>) {
  %s = memref.alloca() : memref<f64>
  %zero = arith.constant 0.0 : f64
  %V = memref.subview %C[1] [7] [1] : memref<8xf64> to memref<7xf64, strided<[1], offset: 1>>
  affine.for %i = 0 to 7 {
    affine.store %zero, %s[] : memref<f64>
    affine.for %k = 0 to 9 {
      %x = affine.load %X[%i, %k] : memref<7x9xf64>
      %v = affine.load %s[] : memref<f64>
      %q = arith.addf %v, %x : f64
      affine.store %q, %s[] : memref<f64>
    }
    %r = affine.load %s[] : memref<f64>
    affine.store %r, %V[%i] : memref<7xf64, strided<[1], offset: 1>>
  }
  return
}
""")


def test_row_sums_with_a_scalar_run_as_before():
    """A range per row: s lives in C[i]; numpy's sums."""
    src = SUM_THEN.replace("BODY", "affine.store %r, %C[%i] : memref<7xf64>").replace(
        "TAIL", "")
    text, remarks = delicm(src)
    assert "memref<f64>" not in text and len(remarks) == 1
    x = np.random.default_rng(3).random((7, 9))
    for flags in ({}, ALL):
        (_, c, _) = run(src, x, np.zeros(7), np.zeros(7), **flags)
        np.testing.assert_allclose(c, x.sum(axis=1), rtol=1e-14)


def test_polygeists_one_element_scalars_too():
    """Polygeist allocates a C scalar as memref<1xf64> read and written at [0]."""
    src = MATMUL_WITH_A_SCALAR.replace("memref<f64>", "memref<1xf64>").replace(
        "%s[]", "%s[0]")
    text, remarks = delicm(src)
    assert "memref<1xf64>" not in text and len(remarks) == 1
    rng = np.random.default_rng(8)
    a, b = rng.random((37, 41)), rng.random((41, 43))
    (_, _, got) = run(src, a, b, np.zeros((37, 43)), **ALL)
    np.testing.assert_allclose(got, a @ b, rtol=1e-13)
    # an element other than [0] of a longer array is not a scalar
    _unchanged(MATMUL_WITH_A_SCALAR.replace("memref<f64>", "memref<2xf64>").replace(
        "%s[]", "%s[1]"))


def _random_scalar_program(rng) -> str:
    """A nest of two or three loops over i64 arrays in which a scalar cell is set, updated in
    an inner loop and stored to an element, in one of the shapes DeLICM takes or must leave:
    the target element read in the range or not, the cell read after the loops or not, the
    target another array's element or the one the cell started from."""
    n, m, k = (int(x) for x in rng.integers(3, 9, 3))
    target = rng.choice(["C", "X"])
    start = rng.choice(["zero", "target", "other"])
    read_target = rng.random() < 0.3
    live_out = rng.random() < 0.2
    op = rng.choice(["addi", "subi", "maxsi"])
    lb = rng.choice(["0", "affine_map<(d0) -> (d0)>(%i)"]) if n <= m else "0"
    lines = [f"func.func @f(%X: memref<{n}x{m}xi64>, %Y: memref<{m}x{k}xi64>, "
             f"%C: memref<{n}x{m}xi64>, %L: memref<1xi64>) {{",
             "  %s = memref.alloca() : memref<i64>",
             "  %zero = arith.constant 0 : i64",
             f"  affine.for %i = 0 to {n} {{",
             f"    affine.for %j = {lb} to {m} {{"]
    init = {"zero": "%zero", "target": f"%t0", "other": "%o0"}[start]
    if start == "target":
        lines.append(f"      %t0 = affine.load %{target}[%i, %j] : memref<{n}x{m}xi64>")
    if start == "other":
        lines.append(f"      %o0 = affine.load %Y[%j, 0] : memref<{m}x{k}xi64>")
    lines += [f"      affine.store {init}, %s[] : memref<i64>",
              f"      affine.for %k = 0 to {k} {{",
              f"        %y = affine.load %Y[%j, %k] : memref<{m}x{k}xi64>",
              f"        %x = affine.load %X[%i, %k mod {m}] : memref<{n}x{m}xi64>",
              "        %p = arith.muli %x, %y : i64",
              "        %v = affine.load %s[] : memref<i64>",
              f"        %q = arith.{op} %v, %p : i64",
              "        affine.store %q, %s[] : memref<i64>",
              "      }",
              "      %r = affine.load %s[] : memref<i64>"]
    if read_target:
        lines += [f"      %c = affine.load %{target}[%i, %j] : memref<{n}x{m}xi64>",
                  "      %r2 = arith.addi %r, %c : i64"]
    else:
        lines.append("      %r2 = arith.addi %r, %r : i64")
    lines += [f"      affine.store %r2, %{target}[%i, %j] : memref<{n}x{m}xi64>",
              "    }", "  }"]
    if live_out:
        lines += ["  %l = affine.load %s[] : memref<i64>",
                  "  affine.store %l, %L[0] : memref<1xi64>"]
    lines += ["  return", "}", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(24))
def test_random_scalar_cells_compute_what_they_computed(seed):
    """Random programs of the shapes above (X read at k mod m: the target X[i][j] is read in
    the range in some iterations): every pass on, and hopt-delicm alone, against no pass,
    exactly (i64)."""
    rng = np.random.default_rng(seed)
    src = _random_scalar_program(rng)
    module = load(src)
    shapes = [a.type.shape for a in module.regions[0].blocks[0].ops[0].regions[0].blocks[0].args]
    inputs = [rng.integers(-9, 10, s).astype(np.int64) for s in shapes]
    want = run(src, *inputs)
    text, _ = delicm(src)
    for candidate, flags in ((text, {}), (src, ALL)):
        got = run(candidate, *inputs, **flags)
        for w, g in zip(want, got):
            assert np.array_equal(w, g), (seed, flags, src)


def test_the_random_programs_take_both_ways():
    """The seeds above draw programs DeLICM rewrites and programs it must leave."""
    rewritten = sum(bool(delicm(_random_scalar_program(np.random.default_rng(s)))[1])
                    for s in range(24))
    assert 5 <= rewritten <= 19, rewritten
