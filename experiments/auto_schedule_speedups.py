"""Speed of the automatic scheduler (``--hopt``, which reschedules every affine nest) against the
same program compiled without passes (about clang -O3), on the PolyBench-like kernels of
``tests/schedules/polybench_small.py`` at PolyBench's MEDIUM or LARGE sizes, one thread.

    nice -n 5 python3 experiments/auto_schedule_speedups.py --dataset MEDIUM [--kernels lu,mvt]

For each kernel: compile both ways (the --hopt compile time is printed), check that the outputs
are identical, then time alternating runs on fresh copies of the inputs (one warm-up each) and
print the medians and their ratio, with the geometric mean at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "schedules"))

import polyopt  # noqa: E402
from polybench_small import KERNELS  # noqa: E402

#: PolyBench/C 4.2's dataset sizes (``*.h``), in the keyword names of polybench_small.
SIZES = {
    "MEDIUM": {
        "jacobi_1d": dict(n=400, tsteps=100), "jacobi_2d": dict(n=250, tsteps=100),
        "seidel_2d": dict(n=400, tsteps=100), "heat_3d": dict(n=40, tsteps=100),
        "fdtd_2d": dict(nx=200, ny=240, tmax=100), "lu": dict(n=400),
        "trmm": dict(m_=200, n=240), "syrk": dict(n=240, m_=200), "syr2k": dict(n=240, m_=200),
        "atax": dict(m_=390, n=410), "bicg": dict(m_=390, n=410), "mvt": dict(n=400),
        "gemver": dict(n=400), "gesummv": dict(n=250), "covariance": dict(m_=240, n=260),
        "correlation": dict(m_=240, n=260)},
    "LARGE": {
        "jacobi_1d": dict(n=2000, tsteps=500), "jacobi_2d": dict(n=1300, tsteps=500),
        "seidel_2d": dict(n=2000, tsteps=500), "heat_3d": dict(n=120, tsteps=500),
        "fdtd_2d": dict(nx=1000, ny=1200, tmax=500), "lu": dict(n=2000),
        "trmm": dict(m_=1000, n=1200), "syrk": dict(n=1200, m_=1000),
        "syr2k": dict(n=1200, m_=1000), "atax": dict(m_=1900, n=2100),
        "bicg": dict(m_=1900, n=2100), "mvt": dict(n=2000), "gemver": dict(n=2000),
        "gesummv": dict(n=1300), "covariance": dict(m_=1200, n=1400),
        "correlation": dict(m_=1200, n=1400)},
}


def _time(fn, args) -> float:
    fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    start = time.perf_counter()
    fn(*fresh)
    return time.perf_counter() - start


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=sorted(SIZES), default="MEDIUM")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    ratios = []
    print(f"{'kernel':12s} {'compile':>8s} {'base s':>9s} {'hopt s':>9s} {'speedup':>8s}")
    for name in args.kernels.split(","):
        text, fn, make = KERNELS[name](**SIZES[args.dataset][name])
        base = polyopt.compile(text)[fn]
        start = time.perf_counter()
        hopt = polyopt.compile(text, hopt=True)[fn]
        compile_s = time.perf_counter() - start
        inputs = make(np.random.default_rng(0))
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        b = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        base(*a)
        hopt(*b)
        same = all(np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True) for x, y in zip(a, b)
                   if isinstance(x, np.ndarray))
        tb, th = [], []
        for _ in range(args.reps):
            tb.append(_time(base, inputs))
            th.append(_time(hopt, inputs))
        mb, mh = statistics.median(tb), statistics.median(th)
        ratios.append(mb / mh)
        print(f"{name:12s} {compile_s:7.2f}s {mb:9.4f} {mh:9.4f} {mb / mh:7.2f}x"
              f"{'' if same else '  OUTPUTS DIFFER'}", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean speedup: {geo:.2f}x over {len(ratios)} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
