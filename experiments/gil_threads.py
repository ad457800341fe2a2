"""Two Python threads calling compiled functions at once: the call releases the GIL
(``ctypes.CFUNCTYPE`` drops it around the foreign call), so on a machine with two idle cores
two concurrent calls of a ~100 ms kernel take about the time of one.

    python3 -m experiments.gil_threads [--size 1500] [--reps 5]

Prints the median time of one call, of two calls one after the other, and of two calls from
two Python threads at once (each compiled for one thread: the concurrency is Python's), with
``uptime``'s load average, which decides whether the second core was free.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import numpy as np  # noqa: E402

import polyopt  # noqa: E402
from polyopt.bench import matmul_source  # noqa: E402

ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1500, help="n of the n^3 f64 matmul")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    n = args.size
    fn = polyopt.compile(matmul_source(n, n, n), threads=1, **ALL_PASSES)["matmul"]
    rng = np.random.default_rng(0)
    ops = [[rng.uniform(-1, 1, (n, n)) for _ in range(3)] for _ in range(2)]
    fn(*ops[0]), fn(*ops[1])  # warm-up

    def one():
        fn(*ops[0])

    def sequential():
        fn(*ops[0])
        fn(*ops[1])

    def concurrent():
        ts = [threading.Thread(target=fn, args=ops[k]) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    times = {"one call": [], "two calls, one thread": [], "two calls, two Python threads": []}
    for _ in range(args.reps):
        for label, f in zip(times, (one, sequential, concurrent)):
            start = time.perf_counter()
            f()
            times[label].append(time.perf_counter() - start)
    print(f"load average before/after: {os.getloadavg()}")
    base = statistics.median(times["one call"])
    for label, samples in times.items():
        med = statistics.median(samples)
        print(f"{label:<32} {1e3 * med:8.1f} ms  ({med / base:.2f}x one call)")


if __name__ == "__main__":
    main()
