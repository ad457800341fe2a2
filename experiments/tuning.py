"""Autotuning (issue 18): ``polyopt tune`` on a matmul with all passes, one thread: every
trial's time, the best so far, the model's choice (trial 1) against the best found.

    python3 -m experiments.tuning [--size 2088x2048x2048] [--dtype f64] [--trials 24]
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

from experiments.common import markdown_table  # noqa: E402

TITLE = "Autotuning: the BLIS parameters searched by timing (one thread)"
SIZE, TRIALS = (2088, 2048, 2048), 24
QUICK_SIZE, QUICK_TRIALS = (1024, 1024, 1024), 12
TEST_SIZE, TEST_TRIALS = (24, 20, 16), 2
__all__ = ["TITLE", "SIZE", "TRIALS", "QUICK_SIZE", "QUICK_TRIALS", "TEST_SIZE",
           "TEST_TRIALS", "run", "table"]


def run(size: Sequence[int], trials: int, *, dtype: str = "f64", samples: int = 3,
        progress=None) -> dict:
    """One search, measured now (no cache): its trials, in order."""
    from polyopt.bench import matmul_source
    from polyopt.pipeline import PipelineOptions
    from polyopt.tune import tune
    m, n, k = size
    options = PipelineOptions(hopt=True, copy=True, unroll=True, scalrep=True, vect=True,
                              threads=1)
    result = tune(matmul_source(m, n, k, dtype), "<tuning>", options, trials=trials,
                  samples=samples)
    flops = 2.0 * m * n * k
    rows = [{"number": t.number, "params": t.changed(result.default),
             "seconds": t.seconds, "gflops": flops / t.seconds / 1e9 if t.seconds else None,
             "error": t.error} for t in result.trials]
    out = {"m": m, "n": n, "k": k, "dtype": dtype, "samples": samples, "trials": rows,
           "best": result.best.number, "best_pipeline": result.best.pipeline,
           "fastest": result.fastest.number,
           "confirmed_gflops": [flops / x / 1e9 for x in result.confirmed]
           if result.confirmed else None}
    if progress is not None:
        best, first = rows[result.best.number - 1], rows[0]
        progress(f"tuning {dtype} {m}x{n}x{k}: model {first['gflops']:.1f} GFLOPS, best "
                 f"{best['gflops']:.1f} (trial {best['number']} of {len(rows)})")
    return out


def table(record: dict) -> str:
    rows = record["trials"]
    first, best = rows[0], rows[record["best"] - 1]
    failed = sum(r["seconds"] is None for r in rows)
    cells = [["model's choice (trial 1)", f"{first['gflops']:.1f}", "1.00x", "the model's"],
             [f"kept (trial {best['number']} of {len(rows)}, {failed} failed)",
              f"{best['gflops']:.1f}", f"{best['gflops'] / first['gflops']:.2f}x",
              ", ".join(f"{k}={v}" for k, v in best["params"].items()) or "the model's"]]
    if record.get("confirmed_gflops"):
        a, b = record["confirmed_gflops"]
        fastest = rows[record["fastest"] - 1]
        cells.insert(1, [f"fastest in the search (trial {fastest['number']}), re-timed "
                         f"against trial 1 alternately", f"{b:.1f} (trial 1: {a:.1f})",
                         f"{b / a:.2f}x", ", ".join(f"{k}={v}" for k, v in
                                                    fastest["params"].items())])
    return markdown_table(["", "GFLOPS", "vs the model", "parameters"], cells)


#: the acceptance runs (not re-run by the report: about 16 minutes)
ACCEPTANCE = (
    "The tuner's acceptance table, 120 s tunes with all passes on eight shapes (DGEMM and "
    "SGEMM 2088x2048x2048, f32 255x257x253, 2048x32x2048 and 128x3072x768, PolyBench gemm, "
    "2mm and 3mm LARGE; `python3 -m experiments.tune_acceptance`), is in "
    "`experiments/results/2026-11-27-tune-acceptance.md` (Zen 4, 2 vCPUs, 2026-11-27): each "
    "ended in under 2 minutes, the model's choice kept on three, confirmed wins of 1.00x-1.28x "
    "on the others; with it, two exhaustive grids (`python3 -m experiments.tune_grid`) where "
    "the tuner's best, with half the grid's points as trials, is within 2% of the grid's "
    "best (0.996x and 1.000x).")


def describe_method(record: Optional[dict] = None) -> str:
    size = f" ({record['dtype']} {record['m']}x{record['n']}x{record['k']})" if record else ""
    return ("`polyopt tune` on `hop.matmul` with all passes" + size + ", one thread, no "
            "cache: optuna's TPE over M_C, K_C, N_C, M_R, N_R, K_U, the register tile's form, "
            "the block in L2 and packing on/off, trial 1 the model's choice; each trial the median of its "
            "samples; every candidate's result checked against trial 1's; the search's "
            "fastest re-timed against trial 1, alternating, and kept only if it still wins "
            "(one measurement per trial is noisy on a shared machine). " + ACCEPTANCE)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m experiments.tuning",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="x".join(map(str, SIZE)), metavar="MxNxK")
    parser.add_argument("--dtype", choices=("f64", "f32"), default="f64")
    parser.add_argument("--trials", type=int, default=TRIALS)
    args = parser.parse_args(argv)
    size = tuple(int(x) for x in args.size.split("x"))
    print(table(run(size, args.trials, dtype=args.dtype, progress=print)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
