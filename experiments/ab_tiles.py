"""Same-process A/B of matmul tile attributes against numpy: every variant is compiled first,
then the runs alternate (numpy, each variant, numpy, ...) so that the shared machine's drift
hits all of them alike; prints medians and each variant's ratio to numpy.

    python3 -m experiments.ab_tiles 2088 2048 2048 f32 "" "M_R = 8 : i32, N_R = 32 : i32"

An empty string is the model's choice.  The first variant timed tends to lose ~3% (warm-up of
the alternation), so list the baseline twice when differences are small.  This is how the
register tiles in ``polyopt/schedules/blis_schedule.py`` (``_MEASURED_AVX512``) were chosen.
"""

from __future__ import annotations

import argparse
import sys
import time

from polyopt.bench import blas_description, single_threaded_numpy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("dtype", choices=("f64", "f32"))
    parser.add_argument("variants", nargs="+", help="hop.matmul attributes, e.g. 'K_C = 128 : i32'")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args(argv)
    single_threaded_numpy()
    import numpy as np

    import polyopt
    m, n, k, t = args.m, args.n, args.k, args.dtype
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    fns = []
    for attrs in args.variants:
        body = f" {{{attrs}}}" if attrs.strip() else ""
        text = (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
                f"  hop.matmul %A, %B, %C{body} : ({ta}, {tb}, {tc})\n  return\n}}\n")
        try:
            fns.append(polyopt.compile(text, hopt=True, copy=True, unroll=True, scalrep=True,
                                       vect=True, filename="<variant>")["matmul"])
        except polyopt.PolyoptError as e:
            print(e.render("<variant>"), file=sys.stderr)
            return 1
    dtype = np.float64 if t == "f64" else np.float32
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype)
    c = np.zeros((m, n), dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    for f in fns:
        c[:] = 0
        f(a, b, c)
        np.testing.assert_allclose(c, expected, rtol=1e-3 if t == "f32" else 1e-10)

    def timed(run) -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    numpy_times, times = [], [[] for _ in fns]
    timed(lambda: np.matmul(a, b, out=c))
    for _ in range(args.reps):
        numpy_times.append(timed(lambda: np.matmul(a, b, out=c)))
        for f, out in zip(fns, times):
            out.append(timed(lambda: f(a, b, c)))

    def median(xs):
        return sorted(xs)[len(xs) // 2]

    flops = 2 * m * n * k
    print(f"{m}x{n}x{k} {t}, medians of {args.reps} alternating runs; {blas_description()}")
    print(f"  {'numpy':60s} {flops / median(numpy_times) / 1e9:8.1f} GFLOPS")
    for attrs, out in zip(args.variants, times):
        label = attrs.strip() or "(the model's tiles)"
        print(f"  {label:60s} {flops / median(out) / 1e9:8.1f} GFLOPS  "
              f"{median(numpy_times) / median(out):.3f}x numpy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
