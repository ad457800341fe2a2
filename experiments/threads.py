"""polyopt on one and on two threads against numpy (OpenBLAS) on two, in the same run: DGEMM
and SGEMM at the paper's 2088x2048x2048 and at 1000^3 (issue 15's acceptance figures).

    nice -n 5 python3 -m experiments.threads [--threads 2] [--reps 5] [--sizes 2088x2048x2048 1000x1000x1000]

Each size: polyopt with all passes compiled for 1 and for N threads and numpy's matmul, timed
alternately after a checked warm-up (:func:`polyopt.bench.bench_matmul`), plus numpy limited
to one thread (threadpoolctl) for its own scaling.  The load average (``os.getloadavg``) is
printed before and after: two-thread figures mean something only on an otherwise idle
machine.
"""

from __future__ import annotations

import argparse
import os
import sys

from polyopt.bench import pin_numpy_threads


def _threads_arg() -> int:
    for k, a in enumerate(sys.argv):
        if a == "--threads" and k + 1 < len(sys.argv):
            return int(sys.argv[k + 1])
    return 2


pin_numpy_threads(_threads_arg())   # before anything imports numpy

from polyopt.bench import Timing, Variant, bench_matmul, _time_sample  # noqa: E402

ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}


def numpy_one_thread(m: int, n: int, k: int, dtype: str, reps: int) -> Timing:
    import numpy as np
    from threadpoolctl import threadpool_limits
    t = np.float64 if dtype == "f64" else np.float32
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (m, k)).astype(t), rng.uniform(-1, 1, (k, n)).astype(t)
    out = np.empty((m, n), t)
    with threadpool_limits(1, user_api="blas"):
        np.matmul(a, b, out=out)
        return Timing.of([_time_sample(lambda: np.matmul(a, b, out=out)) for _ in range(reps)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtypes", nargs="+", default=["f64", "f32"])
    ap.add_argument("--sizes", nargs="+", default=["2088x2048x2048", "1000x1000x1000"])
    args = ap.parse_args()
    n_thr = args.threads
    print(f"load average before: {os.getloadavg()}", flush=True)
    for size in args.sizes:
        m, n, k = map(int, size.split("x"))
        for dtype in args.dtypes:
            variants = [Variant("polyopt, 1 thread", dict(ALL_PASSES, threads=1)),
                        Variant(f"polyopt, {n_thr} threads", dict(ALL_PASSES, threads=n_thr))]
            r = bench_matmul(m, n, k, dtype, reps=args.reps, variants=variants,
                             measure_peak=False, threads=n_thr)
            one, par = r.variants
            np1 = numpy_one_thread(m, n, k, dtype, args.reps)
            print(f"{dtype} {m}x{n}x{k}: polyopt 1 thread {r.gflops(one.timing):7.1f} GFLOPS, "
                  f"{n_thr} threads {r.gflops(par.timing):7.1f} "
                  f"({one.timing.median / par.timing.median:.2f}x own single thread); "
                  f"numpy {n_thr} threads {r.gflops(r.numpy):7.1f}, 1 thread "
                  f"{r.flops / np1.median / 1e9:7.1f}; polyopt/numpy at {n_thr} threads "
                  f"{r.ratio(par):.3f}x", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
