"""Every shape (issue 16): polyopt against numpy on tiny, middle, odd, matrix-vector, skinny,
transformer and CNN-layer shapes, one ratio per shape, static shapes and one function of
``?x?`` operands per type (the harness of ``polyopt bench matmul --sweep --dynamic``,
:mod:`polyopt.shape_sweep`).

    python3 -m experiments.shape_sweep [--samples N] [--dtypes f64 f32] [--no-dynamic]
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
from dataclasses import asdict  # noqa: E402
from typing import Sequence  # noqa: E402

from polyopt.shape_sweep import (SHAPES, TEST_SHAPES, Shape, SweepPoint,  # noqa: E402
                                 run_sweep, sweep_summary, sweep_table)

TITLE = "Every shape: one ratio to numpy per shape, static and ?x? (one thread)"
#: the quick report's shapes: a few of each kind
QUICK_SHAPES = tuple(s for s in SHAPES if s.text() in {
    "16x16x16", "32x32x32", "64x64x64", "96x96x96", "256x256x256", "97x101x103",
    "1000x1000x1000", "1x2048x2048", "2048x1x2048", "2048x32x2048", "128x768x768",
    "3136x64x576"})
__all__ = ["TITLE", "SHAPES", "QUICK_SHAPES", "TEST_SHAPES", "run", "table", "describe_method"]


def run(shapes: Sequence[Shape], *, samples: int, dtypes: Sequence[str] = ("f64", "f32"),
        dynamic: bool = True, progress=None) -> list[dict]:
    def note(p: SweepPoint) -> None:
        if progress is not None:
            progress(f"{p.dtype} {p.m}x{p.n}x{p.k}: {p.ratio:.2f}x numpy")
    return [p.to_json() for p in run_sweep(shapes, dtypes, samples=samples, threads=1,
                                           dynamic=dynamic, progress=note)]


def _points(records: Sequence[dict]) -> list[SweepPoint]:
    return [SweepPoint(**r) for r in records]


def table(records: Sequence[dict]) -> str:
    points = _points(records)
    return sweep_table(points) + "\n\n" + sweep_summary(points).replace("\n", "\n\n")


def describe_method(samples: int) -> str:
    return (f"Each shape compiled for its static type (all passes, the model's parameters), "
            f"checked against numpy, then {samples} ratios of alternating samples of about "
            f"2 ms (numpy's `matmul(out=)` plus the add of `C +=`); the median and the range "
            f"are shown (above 1: polyopt is faster). **?x?**: one function of "
            f"`memref<?x?>` operands per type, compiled once, timed the same way at every "
            f"shape, against numpy and against the static function.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--dtypes", nargs="+", choices=("f64", "f32"), default=("f64", "f32"))
    parser.add_argument("--no-dynamic", dest="dynamic", action="store_false")
    args = parser.parse_args(argv)
    records = run(SHAPES, samples=args.samples, dtypes=args.dtypes, dynamic=args.dynamic)
    print(f"## {TITLE}\n\n{table(records)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
