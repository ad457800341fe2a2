"""Register-level steps after the automatic scheduler (``point_loops``): unroll-and-jam of the
loops around innermost reductions, with scalar replacement; the stride-versus-parallelism
choice of the innermost band member; untiled bands whose data fit in cache; ISL's bounded
coefficients.  Every result is checked against the original order on odd sizes."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.pipeline import machine_model
from polyopt.schedules.auto_schedule import AutoScheduleOptions, schedule_remaining_nests
from polyopt.schedules.point_loops import jam_reductions, version_full_tile

from cache_targets import machine_with_caches
from polybench_small import KERNELS  # noqa: E402  (tests/schedules is on sys.path)

MACHINE = machine_model()
#: the sizes of the tests that say what fits in L2 are chosen against a 1 MiB L2 (Zen 4 and 5;
#: Emerald Rapids has 2 MiB)
L2_1MIB = machine_with_caches()


def _run(module_or_text, fn, inputs):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    polyopt.compile(module_or_text)[fn](*args)
    return [a for a in args if isinstance(a, np.ndarray)]


def _schedule(text, options=AutoScheduleOptions(), machine=MACHINE):
    module = polyopt.parse(text, "kernel.mlir")
    messages = []
    results = schedule_remaining_nests(module, machine, lambda loc, m: messages.append(m),
                                       options)
    return module, results, messages


def _loops(module):
    return [op for op in module.walk() if isinstance(op, AffineForOp)]


def _same(text, fn, make, module, seed=3):
    inputs = make(np.random.default_rng(seed))
    for w, g in zip(_run(text, fn, inputs), _run(module, fn, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_atax_keeps_the_stride_one_reduction_innermost_and_jams_its_rows():
    # tmp[i] += A[i][j] * x[j]: i is parallel but walks A across rows; j stays innermost
    # and unroll-and-jam of i gives it 8 independent chains kept in registers
    text, fn, make = KERNELS["atax"](m_=75, n=67)
    # (A fits in L2 at this size: ISL's split of the two products is taken)
    module, results, messages = _schedule(text)
    assert "unroll-and-jam" in messages[0] and "by 8" in messages[0]
    carried = [op for op in _loops(module) if len(op.inits) == 8]
    assert carried, str(module)
    for loop in carried:
        a_loads = [op for op in loop.body.ops if op.name == "affine.load"
                   and len(op.map.results) == 2]
        assert len(a_loads) == 8
        for load in a_loads:   # A[i + u, j]: the loop's IV in the last subscript only
            uses = [{id(load.map_operands[d]) for d in r.used_dims()} for r in load.map.results]
            assert uses[1] == {id(loop.induction_var)}
            assert id(loop.induction_var) not in uses[0]
    _same(text, fn, make, module)


@pytest.mark.parametrize("name,sizes", [("atax", dict(m_=75, n=67)), ("bicg", dict(m_=71, n=37)),
                                        ("gesummv", dict(n=43)), ("mvt", dict(n=29)),
                                        ("syrk", dict(n=45, m_=19)), ("lu", dict(n=27)),
                                        ("covariance", dict(m_=21, n=26)),
                                        ("atax", dict(m_=3, n=2))])
def test_jammed_kernels_compute_what_the_original_order_computes(name, sizes):
    text, fn, make = KERNELS[name](**sizes)
    module, results, messages = _schedule(text)
    assert all(r.status in ("scheduled", "kept") for r in results), messages
    _same(text, fn, make, module)


def test_a_jam_that_would_reverse_a_dependence_is_not_done():
    # A[i][j] = A[i - 1][j + 1] + ...: the j loop carries nothing it could break, but jamming
    # i reverses the dependence of distance (1, -1); the reduction over k is jammed by nothing
    text = """
func.func @f(%A: memref<20x21xf64>, %B: memref<20x21x9xf64>) {
  affine.for %i = 1 to 20 {
    affine.for %j = 0 to 20 {
      affine.for %k = 0 to 9 {
        %a = affine.load %A[%i - 1, %j + 1] : memref<20x21xf64>
        %c = affine.load %A[%i, %j] : memref<20x21xf64>
        %b = affine.load %B[%i, %j, %k] : memref<20x21x9xf64>
        %m = arith.mulf %a, %b : f64
        %s = arith.addf %c, %m : f64
        affine.store %s, %A[%i, %j] : memref<20x21xf64>
      }
    }
  }
  return
}
"""
    module = polyopt.parse(text)
    loops = _loops(module)
    report = jam_reductions([loops[0]])
    assert all("%arg2" not in what for what, _ in report.jams)   # never the i loop
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((20, 21)), rng.standard_normal((20, 21, 9))]
    for w, g in zip(_run(text, "f", inputs), _run(module, "f", inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_full_tiles_get_a_constant_trip_count_and_partial_ones_keep_the_loop():
    text = """
func.func @f(%A: memref<50xf64>) {
  affine.for %t = 0 to 4 {
    affine.for %i = affine_map<(d0) -> (d0 * 16)>(%t) to min affine_map<(d0) -> (d0 * 16 + 16, 50)>(%t) {
      %a = affine.load %A[%i] : memref<50xf64>
      %b = arith.addf %a, %a : f64
      affine.store %b, %A[%i] : memref<50xf64>
    }
  }
  return
}
"""
    module = polyopt.parse(text)
    inner = _loops(module)[1]
    full, partial = version_full_tile(inner)
    assert full.upper_map.num_results == 1 and partial is inner
    assert full.parent_op.name == "affine.if" and partial.parent_op is full.parent_op
    a = np.arange(50.0)
    got = [a.copy()]
    polyopt.compile(module)["f"](*got)
    np.testing.assert_array_equal(got[0], 2 * a)


def test_matrix_vector_bands_whose_data_fit_in_cache_are_not_tiled():
    text, fn, make = KERNELS["mvt"](n=300)
    module, results, messages = _schedule(text, machine=L2_1MIB)
    assert "tiled" not in messages[0]
    # 3-d: for each i, A's 300 x 250 panel (600 KB) does not fit in half of the 1 MiB L2
    text, fn, make = KERNELS["syrk"](n=300, m_=250)
    _, _, messages = _schedule(text, machine=L2_1MIB)
    assert "tiled" in messages[0]


def test_isl_bounds_its_coefficients_on_large_static_sizes():
    # gemver at PolyBench's LARGE size: seconds of ILP search without Polly's bounds
    text, _, _ = KERNELS["gemver"](n=2000)
    module, (result,), messages = _schedule(text)
    assert result.status == "scheduled", messages


def test_triangular_tiles_are_versioned_and_jammed():
    # syrk tiled (A's rows, 75 x 1001 f64 = 600 KB, do not fit in half of the 1 MiB L2): the
    # j point loop is bounded by the tile and by i (j <= i); full tiles get a constant trip
    # count and are jammed by 8, the partial ones along the diagonal keep the loop
    text, fn, make = KERNELS["syrk"](n=75, m_=1001)
    module, (result,), messages = _schedule(text, machine=L2_1MIB)
    assert "tiled" in messages[0] and "unroll-and-jam" in messages[0], messages
    assert any(op.name == "affine.if" and op.else_block is not None for op in module.walk())
    assert any(len(op.inits) == 8 for op in _loops(module))
    _same(text, fn, make, module)


def test_two_streams_per_copy_halve_the_jam():
    # syr2k: A[j][k] and B[j][k] in every copy of j: 4 copies stream 8 rows
    text, fn, make = KERNELS["syr2k"](n=45, m_=31)
    module, _, messages = _schedule(text)
    assert "by 4" in messages[0], messages
    _same(text, fn, make, module)


def test_a_skew_from_the_bounded_search_is_dropped_when_the_unbounded_one_has_none():
    # bicg at PolyBench's LARGE size: with Polly's bounds ISL fuses q[i] = 0 into
    # s[j] += r[i] * A[i][j] with a skew i + j; the unbounded search keeps plain loops
    text, _, _ = KERNELS["bicg"](m_=1900, n=2100)
    module, (result,), messages = _schedule(text)
    assert result.status == "scheduled"
    assert "i0 + i1" not in messages[0] and "i1 + i0" not in messages[0]


def test_a_reduction_loop_around_a_vector_loop_is_jammed():
    # covariance: cov[i][j] += data[k][i] * data[k][j], j innermost (vectorized), k around
    # it: four copies of k update each vector of cov between one load and one store
    text, fn, make = KERNELS["covariance"](m_=37, n=41)
    module, _, messages = _schedule(text)
    assert "unroll-and-jam" in messages[0], messages
    cov_loops = [op for op in _loops(module) if op.step == 4]
    assert cov_loops
    _same(text, fn, make, module)


def test_tile_loops_are_not_jammed():
    # trmm: the k loop (from i + 1) is jammed around the vector loop of j; tiled, k starts
    # at max(tile start, i + 1), so the full tiles are versioned first; the tile loop of j,
    # whose copies would only repeat whole tiles, is never jammed
    from polyopt.affine.dialects.affine import AffineLoadOp
    for sizes in (dict(m_=29, n=71), dict(m_=200, n=1001)):
        text, fn, make = KERNELS["trmm"](**sizes)
        module, _, messages = _schedule(text)
        assert "by 4" in messages[-1], messages
        for loop in _loops(module):
            if loop.step > 1:
                iv = loop.induction_var
                assert any(iv in op.map_operands for op in loop.walk()
                           if isinstance(op, AffineLoadOp)), "a tile loop was jammed"
        _same(text, fn, make, module)


def test_a_split_that_streams_a_large_array_twice_keeps_the_original_order():
    # atax at sizes where A (301 x 467 f64, 1.07 MiB) does not fit in the 1 MiB L2: the
    # original loop over i reads row i of A for tmp[i] and again, from L1, for y; ISL's two
    # nests would stream A twice
    text, fn, make = KERNELS["atax"](m_=301, n=467)
    module, (result,), messages = _schedule(text, machine=L2_1MIB)
    assert result.status == "kept" and "original order is kept" in messages[0], messages
    assert "unroll-and-jam" in messages[0]
    top = [op for op in module.walk() if isinstance(op, AffineForOp)
           and not isinstance(op.parent_op, AffineForOp)]
    # one loop over i holding both loops over j (and the cleanup of the jam)
    assert len([op for op in top if any(isinstance(o, AffineForOp) for o in op.body.ops)]) <= 2
    _same(text, fn, make, module)


def test_a_recurrence_is_not_jammed():
    # seidel: A[i][j] from A[i][j - 1] carries the innermost loop, but over other elements,
    # not through an accumulator: copies of the loops around it would depend on each other,
    # so no jam is tried (its legality check alone takes seconds on a tiled, skewed nest)
    text, fn, make = KERNELS["seidel_2d"](n=29, tsteps=5)
    module = polyopt.parse(text)
    checked = []
    report = jam_reductions(_loops(module)[:1], check=lambda loop, f: checked.append(f))
    assert not report.jams and not checked
    # and the whole nest keeps its original order: a skewed band around a recurrence
    module, (result,), messages = _schedule(text)
    assert result.status == "kept" and "skewed" in messages[0]
    _same(text, fn, make, module)


def test_a_slow_skewed_search_falls_back_to_the_outer_parallel_schedule(monkeypatch):
    # Jacobi-style nests: the outer-parallel schedule is computed first; when ISL's own
    # search then runs out of time, that schedule is taken instead of the original order
    from polyopt.schedules import auto_schedule as auto
    monkeypatch.setattr(auto, "JACOBI_TIME_LIMIT", 1e-6)
    text, fn, make = KERNELS["heat_3d"](n=11, tsteps=3)
    module, (result,), messages = _schedule(text)
    assert result.status in ("kept", "scheduled") and "time-out" not in messages[0], messages
    _same(text, fn, make, module)


def test_a_nest_whose_loops_never_run_is_left_alone():
    # found by the differential fuzzer (seed 53229170): an empty inner loop made the
    # parallelism queries fail on a schedule without dimensions
    text = """
func.func @f(%A: memref<8xf64>, %B: memref<8x8xf64>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 3 to 1 {
      %a = affine.load %A[%i] : memref<8xf64>
      %b = affine.load %B[%i, %j] : memref<8x8xf64>
      %s = arith.addf %a, %b : f64
      affine.store %s, %A[%i] : memref<8xf64>
    }
  }
  return
}
"""
    module, (result,), messages = _schedule(text)
    assert result.status in ("kept", "scheduled"), messages
    a = np.arange(8.0)
    got = [a.copy(), np.ones((8, 8))]
    polyopt.compile(module)["f"](*got)
    np.testing.assert_array_equal(got[0], a)
