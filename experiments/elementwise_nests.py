"""The elementwise nests around a CNN's convolutions, written as plain affine loops over the
activations (a per-channel bias and ReLU6, a folded batch norm, a residual add and ReLU) in
NCHW and NHWC, at MobileNet-v2's and ResNet-50's shapes: polyopt with all passes, polyopt
without passes (LLVM -O3 on the loops as written) and numpy's broadcasting, one thread, in the
harness of ``polyopt bench`` (checked first, a warm-up, alternating repetitions, medians).

    python3 -m experiments.elementwise_nests [--dtype f32|f64] [--reps 9]

A plane of 28x28 or 7x7 makes the innermost loop short: LLVM then vectorizes the loop around
it with gathers and scatters.  Under ``--hopt`` such loops run as one loop over a collapsed
view (``hopt-collapse-loops``), and the scheduler leaves bands that stream their arrays
untiled (``band_streams``).
"""

from __future__ import annotations

import argparse

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import numpy as np  # noqa: E402

import polyopt  # noqa: E402
from polyopt.bench import time_alternating  # noqa: E402

ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}

#: (label, layout, N, C, H, W)
SHAPES = (("MobileNet 144x56x56", "nchw", 1, 144, 56, 56),
          ("MobileNet 192x28x28", "nchw", 1, 192, 28, 28),
          ("MobileNet 960x7x7", "nchw", 1, 960, 7, 7),
          ("ResNet 8x256x56x56", "nchw", 8, 256, 56, 56),
          ("ResNet 8x512x28x28", "nchw", 8, 512, 28, 28),
          ("MobileNet 192x28x28", "nhwc", 1, 192, 28, 28),
          ("ResNet 8x256x56x56", "nhwc", 8, 256, 56, 56))

#: name -> (the body over %x = O[...], the channel's parameters %p0, %p1 and %r = R[...];
#: numpy's version on (o, p0, p1, r))
NESTS = {
    "bias+relu6": (["%s = arith.addf %x, %p0 : T", "%m = arith.maximumf %s, %zero : T",
                    "%y = arith.minimumf %m, %six : T"],
                   lambda o, p0, p1, r: np.clip(np.add(o, p0, out=o), 0, 6, out=o)),
    # (from R into O: repeated in place, the scaling would drift into denormals)
    "batchnorm": (["%s = arith.subf %r, %p0 : T", "%y = arith.mulf %s, %p1 : T"],
                  lambda o, p0, p1, r: np.multiply(np.subtract(r, p0, out=o), p1, out=o)),
    "residual+relu": (["%s = arith.addf %x, %r : T", "%y = arith.maximumf %s, %zero : T"],
                      lambda o, p0, p1, r: np.maximum(np.add(o, r, out=o), 0, out=o)),
}


def nest_source(body: list[str], layout: str, shape: tuple, t: str) -> str:
    """``@f(%O, %P0, %P1, %R)``: the nest over O applying ``body`` in place."""
    n, c, h, w = shape
    dims = (n, c, h, w) if layout == "nchw" else (n, h, w, c)
    channel = "%i1" if layout == "nchw" else "%i3"
    to = f"memref<{'x'.join(map(str, dims))}x{t}>"
    tp = f"memref<{c}x{t}>"
    ivs = ", ".join(f"%i{k}" for k in range(4))
    lines = [f"%x = affine.load %O[{ivs}] : {to}",
             f"%p0 = affine.load %P0[{channel}] : {tp}",
             f"%p1 = affine.load %P1[{channel}] : {tp}",
             f"%r = affine.load %R[{ivs}] : {to}",
             *(b.replace(": T", f": {t}") for b in body),
             f"affine.store %y, %O[{ivs}] : {to}"]
    loops = "".join(f"  affine.for %i{k} = 0 to {e} {{\n" for k, e in enumerate(dims))
    return (f"func.func @f(%O: {to}, %P0: {tp}, %P1: {tp}, %R: {to}) {{\n"
            f"  %zero = arith.constant 0.0 : {t}\n  %six = arith.constant 6.0 : {t}\n{loops}"
            + "".join(f"    {line}\n" for line in lines) + "  }\n" * 4 + "  return\n}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", choices=("f32", "f64"), default="f32")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args(argv)
    dtype = np.float32 if args.dtype == "f32" else np.float64
    print(f"elementwise nests over activations, {args.dtype}, in place, one thread, medians of "
          f"{args.reps} alternating runs")
    print(f"  {'nest':<14} {'shape':<21} {'layout':<6} {'hopt us':>9} {'vs no passes':>12} "
          f"{'vs numpy':>9}")
    rng = np.random.default_rng(0)
    for name, (body, numpy_version) in NESTS.items():
        for label, layout, *shape in SHAPES:
            n, c, h, w = shape
            dims = (n, c, h, w) if layout == "nchw" else (n, h, w, c)
            src = nest_source(body, layout, tuple(shape), args.dtype)
            hopt = polyopt.compile(src, threads=1, **ALL_PASSES)["f"]
            plain = polyopt.compile(src, threads=1)["f"]
            o = rng.uniform(-8, 8, dims).astype(dtype)
            p0, p1 = (rng.uniform(-2, 2, c).astype(dtype) for _ in range(2))
            r = rng.uniform(-8, 8, dims).astype(dtype)
            bp0, bp1 = ((p[:, None, None] if layout == "nchw" else p) for p in (p0, p1))
            got, want = o.copy(), o.copy()
            hopt(got, p0, p1, r)
            numpy_version(want, bp0, bp1, r)
            if not np.array_equal(got, want):
                raise AssertionError(f"{name} {label} {layout}: polyopt differs from numpy")
            outs = [o.copy() for _ in range(3)]
            t = time_alternating([lambda: hopt(outs[0], p0, p1, r),
                                  lambda: plain(outs[1], p0, p1, r),
                                  lambda: numpy_version(outs[2], bp0, bp1, r)], args.reps)
            print(f"  {name:<14} {label:<21} {layout:<6} {t[0].median * 1e6:9.1f} "
                  f"{t[1].median / t[0].median:11.2f}x {t[2].median / t[0].median:8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
