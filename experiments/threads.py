"""polyopt on one and on two threads against numpy (OpenBLAS) on two, in the same run: DGEMM
and SGEMM at the paper's 2088x2048x2048 and at 1000^3 (issue 15's acceptance figures).

    nice -n 5 python3 -m experiments.threads [--threads 2] [--reps 5] [--sizes 2088x2048x2048 1000x1000x1000] [--json]

Each size: polyopt with all passes compiled for 1 and for N threads and numpy's matmul, timed
alternately after a checked warm-up (:func:`polyopt.bench.bench_matmul`), plus numpy limited
to one thread (threadpoolctl) for its own scaling.  The load average (``os.getloadavg``) is
printed before and after: two-thread figures mean something only on an otherwise idle
machine.  ``--json`` prints the records instead (what the experiment report's section on
threads runs, in a process of its own: the report's numpy is pinned to one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Sequence

from polyopt.bench import pin_numpy_threads


def _threads_arg() -> int:
    for k, a in enumerate(sys.argv):
        if a == "--threads" and k + 1 < len(sys.argv):
            return int(sys.argv[k + 1])
    return 2


if __name__ == "__main__":
    pin_numpy_threads(_threads_arg())   # before anything imports numpy

from polyopt.bench import Timing, Variant, bench_matmul, _time_sample  # noqa: E402

TITLE = "Every core: polyopt on one and two threads, numpy on two (issue 15)"
SIZES = ("2088x2048x2048", "1000x1000x1000")
QUICK_SIZES = ("1024x1024x1024",)
TEST_SIZES = ("24x20x16",)
DTYPES = ("f64", "f32")
ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}
__all__ = ["TITLE", "SIZES", "QUICK_SIZES", "TEST_SIZES", "measure", "run", "table",
           "describe_method", "summary"]


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


def measure(sizes: Sequence[str], dtypes: Sequence[str], threads: int, reps: int) -> list[dict]:
    """One record per (size, dtype): GFLOPS of polyopt on 1 and ``threads`` threads and of
    numpy on ``threads`` and on 1 (numpy's threads as this process pinned them)."""
    out = []
    for size in sizes:
        m, n, k = map(int, size.split("x"))
        for dtype in dtypes:
            variants = [Variant("polyopt, 1 thread", dict(ALL_PASSES, threads=1)),
                        Variant(f"polyopt, {threads} threads", dict(ALL_PASSES, threads=threads))]
            r = bench_matmul(m, n, k, dtype, reps=reps, variants=variants,
                             measure_peak=False, threads=threads)
            one, par = r.variants
            np1 = numpy_one_thread(m, n, k, dtype, reps)
            out.append({"m": m, "n": n, "k": k, "dtype": dtype, "threads": threads,
                        "reps": reps, "polyopt_1": r.gflops(one.timing),
                        "polyopt": r.gflops(par.timing), "numpy": r.gflops(r.numpy),
                        "numpy_1": r.flops / np1.median / 1e9,
                        "scaling": one.timing.median / par.timing.median,
                        "ratio_vs_numpy": r.ratio(par), "blas": r.blas,
                        "max_abs_error": max(one.max_abs_error, par.max_abs_error)})
    return out


def run(sizes: Sequence[str], *, reps: int, threads: int = 2, progress=None) -> dict:
    """:func:`measure` in a process of its own (numpy's BLAS on ``threads`` threads), with the
    load average before and after."""
    cmd = [sys.executable, "-m", "experiments.threads", "--json", "--threads", str(threads),
           "--reps", str(reps), "--sizes", *sizes]
    if progress is not None:
        progress(f"threads: {' '.join(sizes)} on 1 and {threads} threads")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"experiments.threads failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def describe_method(result: dict) -> str:
    return (f"`python3 -m experiments.threads --threads {result['threads']}`: for each size and "
            f"type, polyopt with all passes compiled for one thread and for "
            f"{result['threads']}, and numpy's matmul on {result['threads']} threads, timed "
            f"alternately after a checked warm-up ({result['reps']} repetition(s), median), in "
            f"a process of its own; numpy on one thread (threadpoolctl) is timed after them. "
            f"**scaling** is polyopt's one-thread time over its {result['threads']}-thread "
            f"time, **vs numpy** numpy's time over polyopt's, both on {result['threads']} "
            f"threads. Load average before and after: {result['load_before']}, "
            f"{result['load_after']} (on a shared machine the second core's figures move).")


def summary(result: dict) -> str:
    """The report's summary line: the scaling and the ratio to numpy of each size and type."""
    n = result["threads"]
    parts = [f"{r['dtype']} {r['m']}x{r['n']}x{r['k']} {r['scaling']:.2f}x one thread, "
             f"{r['ratio_vs_numpy']:.2f}x numpy" for r in result["records"]]
    return f"- {n} threads: " + "; ".join(parts)


def table(result: dict) -> str:
    from experiments.common import markdown_table
    n = result["threads"]
    rows = [[f"{r['m']}x{r['n']}x{r['k']}", r["dtype"], f"{r['polyopt_1']:.1f}",
             f"{r['polyopt']:.1f}", f"**{r['scaling']:.2f}x**", f"{r['numpy_1']:.1f}",
             f"{r['numpy']:.1f}", f"**{r['ratio_vs_numpy']:.3f}x**"]
            for r in result["records"]]
    return markdown_table(["size", "type", "polyopt, 1 thread (GFLOPS)",
                           f"polyopt, {n} threads", "scaling", "numpy, 1 thread",
                           f"numpy, {n} threads", f"polyopt vs numpy on {n}"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    ap.add_argument("--sizes", nargs="+", default=list(SIZES))
    ap.add_argument("--json", action="store_true", help="print the records as JSON")
    args = ap.parse_args()
    n_thr = args.threads
    before = os.getloadavg()
    if not args.json:
        print(f"load average before: {before}", flush=True)
    records = []
    for size in args.sizes:
        for rec in measure([size], args.dtypes, n_thr, args.reps):
            records.append(rec)
            if not args.json:
                print(f"{rec['dtype']} {size}: polyopt 1 thread {rec['polyopt_1']:7.1f} GFLOPS, "
                      f"{n_thr} threads {rec['polyopt']:7.1f} ({rec['scaling']:.2f}x own single "
                      f"thread); numpy {n_thr} threads {rec['numpy']:7.1f}, 1 thread "
                      f"{rec['numpy_1']:7.1f}; polyopt/numpy at {n_thr} threads "
                      f"{rec['ratio_vs_numpy']:.3f}x", flush=True)
    after = os.getloadavg()
    if args.json:
        print(json.dumps({"threads": n_thr, "reps": args.reps, "records": records,
                          "load_before": [round(x, 2) for x in before],
                          "load_after": [round(x, 2) for x in after]}, indent=2))
    else:
        print(f"load average after: {after}")


if __name__ == "__main__":
    main()
