"""Fusion with shifts of the sweeps of a time step, then time tiles (``shift_fusion``):
Jacobi-style stencils whose arrays do not fit in L2 get one pass over them per step, in tiles
of steps x skewed rows, with no guard left in the innermost loops; the result computes what
the original order computes, also when the steps outnumber a time tile.  On a team of threads
the tiles run in wavefronts (``tile_wavefront``), each wavefront's tiles in parallel, 1-D
sweeps included."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp, AffineIfOp, AffineParallelOp
from polyopt.codegen import openmp
from polyopt.pipeline import machine_model
from polyopt.schedules.auto_schedule import PARALLEL, AutoScheduleOptions, \
    schedule_remaining_nests

from polybench_small import KERNELS  # noqa: E402  (tests/schedules is on sys.path)

MACHINE = machine_model()


def _schedule(text, options=AutoScheduleOptions()):
    module = polyopt.parse(text, "kernel.mlir")
    messages = []
    results = schedule_remaining_nests(module, MACHINE, lambda loc, m: messages.append(m),
                                       options)
    return module, results, messages


def _run(module_or_text, fn, inputs):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    polyopt.compile(module_or_text)[fn](*args)
    return [a for a in args if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("name,sizes", [("heat_3d", dict(n=61, tsteps=3)),
                                        ("jacobi_2d", dict(n=401, tsteps=3)),
                                        ("jacobi_2d", dict(n=389, tsteps=37)),
                                        ("fdtd_2d", dict(nx=367, ny=411, tmax=3)),
                                        ("fdtd_2d", dict(nx=361, ny=397, tmax=21))])
def test_sweeps_are_fused_time_tiled_and_compute_what_the_original_computes(name, sizes):
    text, fn, make = KERNELS[name](**sizes)
    module, (result,), messages = _schedule(text)
    assert result.status == "scheduled" and "sweeps of each step fused" in messages[0]
    assert "time tiles of" in messages[0], messages
    for loop in (op for op in module.walk() if isinstance(op, AffineForOp)):
        if not any(isinstance(o, AffineForOp) for o in loop.body.ops):
            assert not any(isinstance(o, AffineIfOp) for o in loop.body.ops)
            assert PARALLEL in loop.attributes     # the rows' loops stay vectorizable
    inputs = make(np.random.default_rng(4))
    for w, g in zip(_run(text, fn, inputs), _run(module, fn, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_skew_and_tiles_of_the_fused_schedule():
    # jacobi-2d fused: B's row i at step t, A's row i - 1 (shift 1); A's row i at step t
    # reads B's rows i - 1 .. i + 1 of the same step and B's row i at step t + 1 reads A's
    # rows i - 1 .. i + 1 of step t: rows must be skewed by 2 per step for tiles
    from polyopt.schedules.dependences import compute_dependences
    from polyopt.schedules.scops import function_scops
    from polyopt.schedules.shift_fusion import fuse_with_shifts, time_skew
    text, _, _ = KERNELS["jacobi_2d"](n=20, tsteps=4)
    module = polyopt.parse(text)
    func = next(op for op in module.walk() if op.name == "func.func")
    model = function_scops(func, None)[0][0]
    deps = compute_dependences(model)
    import islpy as isl
    plain = isl.UnionMap(model.param_space() + "{ S0[t, i, j] -> [t, 0, i, j]; "
                                               "S1[t, i, j] -> [t, 1, i, j] }")
    plain = plain.intersect_domain(model.domains())
    fused = fuse_with_shifts(model, deps, plain, 1)
    assert fused.is_equal(isl.UnionMap(model.param_space() + "{ S0[t, i, j] -> [t, i, 0, j]; "
                                       "S1[t, i, j] -> [t, i + 1, 1, j] }"
                                       ).intersect_domain(model.domains()))
    assert time_skew(deps, fused) == 2


def test_small_arrays_and_the_switch_leave_the_sweeps_apart():
    text, _, _ = KERNELS["jacobi_2d"](n=40, tsteps=3)       # 12.5 KiB arrays: in cache
    _, _, messages = _schedule(text)
    assert "fused" not in messages[0]
    text, _, _ = KERNELS["heat_3d"](n=61, tsteps=3)
    _, _, messages = _schedule(text, AutoScheduleOptions(fuse_sweeps=False))
    assert "fused" not in messages[0]


@pytest.mark.parametrize("name,sizes", [("jacobi_1d", dict(n=2003, tsteps=70)),
                                        ("jacobi_1d", dict(n=1601, tsteps=45)),
                                        ("jacobi_2d", dict(n=389, tsteps=37)),
                                        ("heat_3d", dict(n=61, tsteps=19)),
                                        ("fdtd_2d", dict(nx=361, ny=397, tmax=21))])
@pytest.mark.parametrize("threads", [2, 3])
def test_on_a_team_the_time_tiles_run_in_parallel_wavefronts(name, sizes, threads,
                                                             monkeypatch):
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)     # small sizes fork all the same
    text, fn, make = KERNELS[name](**sizes)
    messages = []
    compiled = polyopt.compile(text, hopt=True, parallel=True, threads=threads,
                               remark=lambda loc, m: messages.append(m))
    scheduled = next(m for m in messages if m.startswith("auto-schedule"))
    assert "time tiles of" in scheduled and "tiles run in wavefronts" in scheduled, messages
    # the wavefront loop is sequential; inside it, the tiles of one wavefront are parallel
    parallel = [op for op in compiled.module.walk() if isinstance(op, AffineParallelOp)]
    assert len(parallel) == 1
    assert isinstance(parallel[0].parent_op, AffineForOp)
    inputs = make(np.random.default_rng(5))
    want = _run(text, fn, inputs)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    compiled[fn](*args)
    for w, g in zip(want, [a for a in args if isinstance(a, np.ndarray)]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_one_thread_keeps_1d_sweeps_apart_and_a_team_tiles_them_across_the_rows():
    from polyopt.schedules import auto_schedule
    text, _, _ = KERNELS["jacobi_1d"](n=2000, tsteps=500)
    _, _, messages = _schedule(text)
    assert "fused" not in messages[0]          # one thread: each sweep is one vector loop
    _, _, messages = _schedule(text, AutoScheduleOptions(team=2))
    rows = -(-1998 // (auto_schedule.POINT_TILES_PER_THREAD * 2))
    assert (f"time tiles of {auto_schedule.POINT_TIME_TILE} steps x {rows} rows"
            in messages[0]), messages
    # PolyBench's MEDIUM size: 6400 updates per tile, too little to fork the team for
    text, _, _ = KERNELS["jacobi_1d"](n=400, tsteps=100)
    _, _, messages = _schedule(text, AutoScheduleOptions(team=2))
    assert "fused" not in messages[0]
