"""Loops carrying only sums into arrays run in parallel on a private copy per thread
(polyopt/schedules/privatize.py): which loops qualify (ISL on the model), the rewritten IR
(accepted by mlir-opt-22), and results against numpy at 2 and 3 threads and on sizes that
are no multiple of the thread count or of the unroll-and-jam factor."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.codegen import openmp
from polyopt.schedules.dependences import compute_dependences
from polyopt.schedules.privatize import reduction_arrays
from polyopt.schedules.scops import function_scops
from upstream_mlir import mlir_opt


@pytest.fixture(autouse=True)
def every_region_forks(monkeypatch):
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)


# atax's second half: y = A^T tmp, A read row by row; the loop over rows carries the sums
# into y (and y's initialization, a separate loop, is fused into its first iteration by
# the scheduler in bicg's case: BICG below)
ATAX = """\
func.func @atax(%A: memref<{m}x{n}xf64>, %x: memref<{n}xf64>, %y: memref<{n}xf64>,
                %tmp: memref<{m}xf64>) {{
  %zero = arith.constant 0.0 : f64
  affine.for %j = 0 to {n} {{
    affine.store %zero, %y[%j] : memref<{n}xf64>
  }}
  affine.for %i = 0 to {m} {{
    affine.store %zero, %tmp[%i] : memref<{m}xf64>
    affine.for %j = 0 to {n} {{
      %t = affine.load %tmp[%i] : memref<{m}xf64>
      %a = affine.load %A[%i, %j] : memref<{m}x{n}xf64>
      %xj = affine.load %x[%j] : memref<{n}xf64>
      %p = arith.mulf %a, %xj : f64
      %s = arith.addf %t, %p : f64
      affine.store %s, %tmp[%i] : memref<{m}xf64>
    }}
    affine.for %j = 0 to {n} {{
      %yj = affine.load %y[%j] : memref<{n}xf64>
      %a = affine.load %A[%i, %j] : memref<{m}x{n}xf64>
      %t = affine.load %tmp[%i] : memref<{m}xf64>
      %p = arith.mulf %a, %t : f64
      %s = arith.addf %yj, %p : f64
      affine.store %s, %y[%j] : memref<{n}xf64>
    }}
  }}
  return
}}
"""

BICG = """\
func.func @bicg(%A: memref<{m}x{n}xf64>, %s: memref<{n}xf64>, %q: memref<{m}xf64>,
                %p: memref<{n}xf64>, %r: memref<{m}xf64>) {{
  %zero = arith.constant 0.0 : f64
  affine.for %j = 0 to {n} {{
    affine.store %zero, %s[%j] : memref<{n}xf64>
  }}
  affine.for %i = 0 to {m} {{
    affine.store %zero, %q[%i] : memref<{m}xf64>
    affine.for %j = 0 to {n} {{
      %sj = affine.load %s[%j] : memref<{n}xf64>
      %ri = affine.load %r[%i] : memref<{m}xf64>
      %a = affine.load %A[%i, %j] : memref<{m}x{n}xf64>
      %0 = arith.mulf %ri, %a : f64
      %1 = arith.addf %sj, %0 : f64
      affine.store %1, %s[%j] : memref<{n}xf64>
      %qi = affine.load %q[%i] : memref<{m}xf64>
      %pj = affine.load %p[%j] : memref<{n}xf64>
      %2 = arith.mulf %a, %pj : f64
      %3 = arith.addf %qi, %2 : f64
      affine.store %3, %q[%i] : memref<{m}xf64>
    }}
  }}
  return
}}
"""

FLAGS = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True, parallel=True)


def _compiled(template: str, m: int, n: int, threads: int):
    return polyopt.compile(template.format(m=m, n=n), threads=threads, **FLAGS)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("m, n, private", [(389, 29, True), (37, 48, None), (13, 48, False),
                                           (5, 7, False)])
def test_atax_rows_in_parallel_against_numpy(threads, m, n, private):
    # rows are unrolled and jammed (by 4 here): 13 rows are too few to copy y for
    # (MIN_ITERATIONS_PER_THREAD per thread)
    c = _compiled(ATAX, m, n, threads)
    if private is not None:
        assert (f"memref<{threads}x{n}xf64>" in str(c.module)) == private
    rng = np.random.default_rng(m * n)
    A, x = rng.uniform(-1, 1, (m, n)), rng.uniform(-1, 1, n)
    y, tmp = np.full(n, 7.0), np.zeros(m)
    c["atax"](A, x, y, tmp)
    assert np.allclose(tmp, A @ x, rtol=1e-12, atol=1e-12)
    assert np.allclose(y, A.T @ (A @ x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("m, n", [(131, 33), (96, 40)])
def test_bicg_with_its_fused_initialization_against_numpy(threads, m, n):
    c = _compiled(BICG, m, n, threads)
    text = str(c.module)
    assert f"memref<{threads}x{n}xf64>" in text     # s's private copies
    rng = np.random.default_rng(m + n)
    A, p, r = rng.uniform(-1, 1, (m, n)), rng.uniform(-1, 1, n), rng.uniform(-1, 1, m)
    s, q = np.full(n, 5.0), np.full(m, 5.0)
    c["bicg"](A, s, q, p, r)
    assert np.allclose(s, A.T @ r, rtol=1e-12, atol=1e-12)
    assert np.allclose(q, A @ p, rtol=1e-12, atol=1e-12)


def test_the_rewritten_ir_is_what_mlir_opt_reads():
    c = _compiled(ATAX, 300, 48, 2)
    text = str(c.module)
    assert "memref<2x48xf64>" in text and "affine.parallel (%arg4) = (0) to (2)" in text
    # the jammed rows dealt round-robin: thread t starts at row t x (the jam factor)
    assert re.search(r"affine.for %arg5 = #map\d*\(%arg4\) to \d+ step \d+", text)
    assert mlir_opt(text) == text


def test_one_thread_changes_nothing():
    seq = str(polyopt.compile(ATAX.format(m=300, n=48), threads=1,
                              **dict(FLAGS, parallel=False)).module)
    one = str(_compiled(ATAX, 300, 48, 1).module)
    assert "memref<1x48xf64>" not in one and "memref.alloc" not in seq


def _arrays(src: str, outer: int = 1) -> list[str]:
    """reduction_arrays of the ``outer``-th top-level loop of the only function."""
    module = polyopt.parse(src)
    func = next(op for op in module.walk() if op.name == "func.func")
    (model,), _ = function_scops(func)
    deps = compute_dependences(model)
    top = [op for op in model.scop_ops if op.name == "affine.for"][outer]
    names = [s.name for s in model.statements if s.loops and s.loops[0] is top]
    return [model.describe_memref(model.memref_names[v]) for v in
            reduction_arrays(model, deps, 1, names)]


def test_which_loops_carry_only_sums():
    assert _arrays(ATAX.format(m=8, n=8)) == ["%arg2"]      # y; tmp[i] is the row's own
    assert _arrays(BICG.format(m=8, n=8)) == ["%arg1"]      # s; q[i] is the row's own


@pytest.mark.parametrize("body, why", [
    ("%v = arith.mulf %yj, %a : f64", "a product, not a sum"),
    ("%v = arith.addf %a, %a : f64", "an overwrite: the old value is not added to"),
])
def test_loops_carrying_other_dependences_do_not_qualify(body, why):
    src = f"""\
func.func @f(%A: memref<8x8xf64>, %y: memref<8xf64>) {{
  affine.for %i = 0 to 8 {{
    affine.for %j = 0 to 8 {{
      %yj = affine.load %y[%j] : memref<8xf64>
      %a = affine.load %A[%i, %j] : memref<8x8xf64>
      {body}
      affine.store %v, %y[%j] : memref<8xf64>
    }}
  }}
  return
}}
"""
    assert _arrays(src, outer=0) == [], why


def test_a_set_after_the_first_iteration_does_not_qualify():
    # y[j] = 0 when i == 3 discards the sums of rows 0..2: no private copy can do that
    src = """\
func.func @f(%A: memref<8x8xf64>, %y: memref<8xf64>) {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.if affine_set<(d0) : (d0 - 3 == 0)>(%i) {
        affine.store %zero, %y[%j] : memref<8xf64>
      }
      %yj = affine.load %y[%j] : memref<8xf64>
      %a = affine.load %A[%i, %j] : memref<8x8xf64>
      %v = arith.addf %yj, %a : f64
      affine.store %v, %y[%j] : memref<8xf64>
    }
  }
  return
}
"""
    assert _arrays(src, outer=0) == []
    first = src.replace("d0 - 3 == 0", "d0 == 0")
    assert _arrays(first, outer=0) == ["%arg1"]
    # and the first-iteration form runs right on three threads
    c = polyopt.compile(first, threads=3, **FLAGS)
    A = np.arange(64.0).reshape(8, 8)
    y = np.full(8, 100.0)
    c["f"](A, y)
    assert np.array_equal(y, A.sum(axis=0))
