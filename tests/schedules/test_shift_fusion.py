"""Fusion with shifts of the sweeps of a time step (``shift_fusion``): Jacobi-style stencils
whose arrays do not fit in L2 get one pass over them per step, with no guard left in the
loops; the result computes what the original order computes."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp, AffineIfOp
from polyopt.pipeline import machine_model
from polyopt.schedules.auto_schedule import AutoScheduleOptions, schedule_remaining_nests

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
                                        ("fdtd_2d", dict(nx=367, ny=411, tmax=3))])
def test_sweeps_are_fused_and_compute_what_the_original_computes(name, sizes):
    text, fn, make = KERNELS[name](**sizes)
    module, (result,), messages = _schedule(text)
    assert result.status == "scheduled" and "sweeps of each step fused" in messages[0]
    time_loop = next(op for op in module.walk() if isinstance(op, AffineForOp))
    # one loop over rows inside the time loop (and the rows peeled at its ends)
    rows = [op for op in time_loop.body.ops if isinstance(op, AffineForOp)
            and len([o for o in op.body.ops if isinstance(o, AffineForOp)]) >= 2]
    assert len(rows) == 1, str(module)
    for loop in (op for op in module.walk() if isinstance(op, AffineForOp)):
        if not any(isinstance(o, AffineForOp) for o in loop.body.ops):
            assert not any(isinstance(o, AffineIfOp) for o in loop.body.ops)
    inputs = make(np.random.default_rng(4))
    for w, g in zip(_run(text, fn, inputs), _run(module, fn, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_small_arrays_and_the_switch_leave_the_sweeps_apart():
    text, _, _ = KERNELS["jacobi_2d"](n=40, tsteps=3)       # 12.5 KiB arrays: in cache
    _, _, messages = _schedule(text)
    assert "fused" not in messages[0]
    text, _, _ = KERNELS["heat_3d"](n=61, tsteps=3)
    _, _, messages = _schedule(text, AutoScheduleOptions(fuse_sweeps=False))
    assert "fused" not in messages[0]
