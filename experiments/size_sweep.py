"""GFLOPS against size: square f64 and f32 matmuls from 256 to 3000, polyopt with all passes
and the machine model's tiles against numpy timed in the same run.

    python3 -m experiments.size_sweep [--sizes N ...] [--dtypes f64 f32] [--reps N]

The sizes include awkward ones (257, 1023: one past or short of a power of two; 500, 1500,
2500: no large power-of-two factor; 2088: the paper's M), where partial tiles, zero-padded
packing and cache-set conflicts show.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
from typing import Sequence  # noqa: E402

from polyopt.bench import Variant  # noqa: E402

from experiments.common import (ALL_PASSES, Step, gflops_text, markdown_table,  # noqa: E402
                                percent_text)

TITLE = "GFLOPS vs size (square, all passes, against numpy)"
SIZES = (256, 257, 500, 512, 768, 1000, 1023, 1024, 1500, 2000, 2048, 2088, 2500, 3000)
DTYPES = ("f64", "f32")


def steps(sizes: Sequence[int] = SIZES, dtypes: Sequence[str] = DTYPES) -> list[Step]:
    return [Step(Variant("polyopt (all passes)", ALL_PASSES), s, s, s, dtype)
            for dtype in dtypes for s in sizes]


def sweep_table(records: Sequence[dict]) -> str:
    header = ["dtype", "size", "polyopt GFLOPS", "min..max", "of peak", "numpy GFLOPS",
              "min..max", "of peak", "polyopt vs numpy", "compile"]
    rows = []
    for r in records:
        if r["status"] != "ok":
            rows.append([r["dtype"], r["m"], r["status"]] + [""] * 7)
            continue
        rows.append([r["dtype"], r["m"], f"**{gflops_text(r['gflops'])}**",
                     f"{gflops_text(r['gflops_min'])}..{gflops_text(r['gflops_max'])}",
                     percent_text(r["fraction_of_peak"]), gflops_text(r["numpy_gflops"]),
                     f"{gflops_text(r['numpy_gflops_min'])}.."
                     f"{gflops_text(r['numpy_gflops_max'])}",
                     percent_text(r["numpy_fraction_of_peak"]),
                     f"{r['ratio_vs_numpy']:.3f}x", f"{r['compile_time']:.2f} s"])
    return markdown_table(header, rows)


def main(argv=None) -> int:
    from polyopt.codegen.peak import measure_peak

    from experiments.common import run_steps, steps_notes
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=DTYPES)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    peaks = {dtype: measure_peak(dtype).gflops for dtype in args.dtypes}
    records = run_steps(steps(args.sizes, args.dtypes), reps=args.reps, peaks=peaks,
                        name="size sweep")
    print(f"## {TITLE}\n\n{sweep_table(records)}")
    notes = steps_notes(records)
    if notes:
        print("\n" + notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
