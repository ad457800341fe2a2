"""Low precision (issue 21): the mixed-precision ``hop.matmul`` (bf16 x bf16 -> f32, s8 x s8 and
u8 x s8 -> s32, f16 x f16 -> f32) on the engine the CPU has, against torch's matmul of the type,
polyopt's own SGEMM and numpy's f32 matmul, one thread, same run (the harness of ``polyopt
bench matmul --dtype ...``, :mod:`polyopt.bench_lowp`).

    python3 -m experiments.low_precision [--sizes 2048x2048x2048 2088x2048x2048] [--reps 5]
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
from typing import Sequence  # noqa: E402

from experiments.common import markdown_table  # noqa: E402

TITLE = "Low precision: bf16, int8 and f16 on the CPU's dot engine (one thread)"
KINDS = ("bf16", "i8", "u8", "f16")
SIZES = ((2048, 2048, 2048), (2088, 2048, 2048))
QUICK_SIZES = ((1024, 1024, 1024),)
TEST_SIZES = ((24, 20, 16),)
__all__ = ["TITLE", "KINDS", "SIZES", "QUICK_SIZES", "TEST_SIZES", "run", "table"]


def run(sizes: Sequence[tuple], *, reps: int, kinds: Sequence[str] = KINDS,
        progress=None) -> list[dict]:
    """One record per (size, kind): rates of polyopt, torch (or None), the SGEMM, numpy."""
    from polyopt.bench_lowp import bench_lowp_matmul
    out = []
    for m, n, k in sizes:
        for kind in kinds:
            r = bench_lowp_matmul(m, n, k, kind, reps=reps, threads=1)
            rec = {"m": m, "n": n, "k": k, "kind": kind, "engine": r.engine,
                   "polyopt": r.rate(r.polyopt), "sgemm": r.rate(r.sgemm),
                   "numpy_f32": r.rate(r.numpy_f32), "conversion_s": r.conversion,
                   "torch": r.rate(r.torch) if r.torch is not None else None,
                   "torch_label": r.torch_label, "torch_note": r.torch_note,
                   "compile_time": r.compile_time, "reps": reps}
            out.append(rec)
            if progress is not None:
                vs = f", {rec['polyopt'] / rec['torch']:.2f}x torch" if rec["torch"] else ""
                progress(f"{kind} {m}x{n}x{k}: {rec['polyopt']:.1f}{vs}, "
                         f"{rec['polyopt'] / rec['sgemm']:.2f}x polyopt's SGEMM")
    return out


def table(records: Sequence[dict]) -> str:
    rows = []
    for r in records:
        unit = "GOP/s" if r["kind"] in ("i8", "u8") else "GFLOPS"
        torch = (f"{r['torch']:.1f} ({r['torch_label']}): {r['polyopt'] / r['torch']:.2f}x"
                 if r["torch"] else "not timed")
        rows.append([f"{r['m']}x{r['n']}x{r['k']}", r["kind"], r["engine"],
                     f"{r['polyopt']:.1f} {unit}", torch,
                     f"{r['sgemm']:.1f}: {r['polyopt'] / r['sgemm']:.2f}x",
                     f"{r['numpy_f32']:.1f}: {r['polyopt'] / r['numpy_f32']:.2f}x"])
    return markdown_table(["size", "type", "engine", "polyopt", "torch (polyopt is)",
                           "polyopt SGEMM (polyopt is)", "numpy f32 (polyopt is)"], rows)


def describe_method() -> str:
    return ("Each row: `hop.matmul` with all passes against torch's matmul of that type (bf16 "
            "and f16 `mm` return their input type; `_int_mm` is s8 x s8, timed for u8 too), "
            "polyopt's SGEMM of the same shape and numpy's f32 matmul on converted operands "
            "(the conversion not timed), alternating repetitions, medians, one thread. The "
            "bar is bf16 at 1.1x torch and 1.8x the SGEMM, int8 at 1.1x torch and 3x the "
            "SGEMM, f16 without an f16 engine at 0.9x the SGEMM.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m experiments.low_precision",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=None, metavar="MxNxK")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes] if args.sizes else SIZES
    print(table(run(sizes, reps=args.reps, progress=print)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
