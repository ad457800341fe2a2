"""Acceptance of issue 14 (raising): the paper's section 2.1 listing and the nest mlir-opt-22
--convert-linalg-to-affine-loops prints for a linalg.matmul, under --hopt with the other pass
flags, against hop.matmul with the same flags, in the same run (f32 and f64).

    nice -n 5 python3 -m experiments.raised_vs_hop [--m 2088 --n 2048 --k 2048 --reps 5]

Prints, per element type and program, the compile time, the median time of --reps runs after a
warm-up, GFLOPS and the ratio to hop.matmul; every result is checked against hop.matmul's."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

import numpy as np

import polyopt

FLAGS = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def hop_text(m, n, k, t):
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return (f"func.func @f(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C : ({ta}, {tb}, {tc})\n  return\n}}\n")


def listing_text(m, n, k, t):
    """The paper's section 2.1 listing (modern syntax), at m x n x k."""
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return f"""func.func @f(%A: {ta}, %B: {tb}, %C: {tc}) {{
  affine.for %arg3 = 0 to {m} {{
    affine.for %arg4 = 0 to {n} {{
      affine.for %arg5 = 0 to {k} {{
        %a = affine.load %A[%arg3, %arg5] : {ta}
        %b = affine.load %B[%arg5, %arg4] : {tb}
        %ci = affine.load %C[%arg3, %arg4] : {tc}
        %p = arith.mulf %a, %b : {t}
        %co = arith.addf %ci, %p : {t}
        affine.store %co, %C[%arg3, %arg4] : {tc}
      }}
    }}
  }}
  return
}}
"""


def linalg_nest_text(m, n, k, t):
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    src = (f"func.func @f(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
           f"  linalg.matmul ins(%A, %B : {ta}, {tb}) outs(%C : {tc})\n  return\n}}\n")
    out = subprocess.run(["mlir-opt-22", "--convert-linalg-to-affine-loops"], input=src,
                         capture_output=True, text=True, check=True)
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=2088)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtypes", default="f64,f32")
    args = ap.parse_args()
    m, n, k = args.m, args.n, args.k
    from threadpoolctl import threadpool_limits
    for t in args.dtypes.split(","):
        dtype = {"f64": np.float64, "f32": np.float32}[t]
        rng = np.random.default_rng(0)
        a, b = rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype)
        progs = {}
        for name, text in (("hop.matmul", hop_text(m, n, k, t)),
                           ("paper 2.1 listing", listing_text(m, n, k, t)),
                           ("linalg->affine nest", linalg_nest_text(m, n, k, t))):
            start = time.perf_counter()
            remarks = []
            fn = polyopt.compile(text, remark=lambda loc, msg: remarks.append(msg), **FLAGS)["f"]
            progs[name] = (fn, time.perf_counter() - start,
                           any(r.startswith("raised to a contraction") for r in remarks))
        times = {name: [] for name in progs}
        results = {}
        for name, (fn, _, _) in progs.items():     # warm-up, and the results
            c = np.zeros((m, n), dtype)
            fn(a, b, c)
            results[name] = c
        for _ in range(args.reps):                 # alternating repetitions
            for name, (fn, _, _) in progs.items():
                c = np.zeros((m, n), dtype)
                s = time.perf_counter()
                fn(a, b, c)
                times[name].append(time.perf_counter() - s)
        ref = results["hop.matmul"]
        base = statistics.median(times["hop.matmul"])
        print(f"{t} {m}x{n}x{k}, flags --hopt --hopt-copy --hopt-unroll --hopt-scalrep "
              f"--hopt-vect, {args.reps} reps (median)")
        for name, (fn, ct, raised) in progs.items():
            med = statistics.median(times[name])
            ok = np.allclose(results[name], ref, rtol=1e-4 if t == "f32" else 1e-10)
            print(f"  {name:22s} compile {ct:5.2f} s  run {med * 1e3:8.1f} ms  "
                  f"{2 * m * n * k / med / 1e9:6.1f} GFLOPS  {base / med:5.3f}x hop.matmul  "
                  f"{'raised' if raised else '':6s} {'ok' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
