"""The tuner's acceptance runs (issue 18): ``polyopt tune`` with all passes, one thread, two
compiling workers, no cache and a 120 s budget, on the paper's DGEMM and SGEMM
(2088x2048x2048), three shapes of the size sweep (f32: an odd square, a skinny panel, a
BERT-base FFN matmul) and three PolyBench kernels (LARGE dataset: gemm, 2mm, 3mm, where
hopt-raise-contractions raises one, two and three contractions).  Each tune is one
``polyopt tune`` process, timed from the outside; the table gives the model's choice (trial
1), the search's fastest, the two re-timed alternately and what was kept.

    python3 -m experiments.tune_acceptance [--budget 120s] [--cases dgemm,gemm,...]
                                           [--json FILE]

The inputs are in ``experiments/inputs/`` (``--write-inputs`` regenerates them), so that each
row is replayed by the command the table prints.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "inputs"
FLAGS = ["--hopt", "--hopt-copy", "--hopt-vect", "--hopt-unroll", "--hopt-scalrep",
         "--threads", "1", "--workers", "2", "--no-cache"]
BUDGET = "120s"

#: name -> (what it is, file in experiments/inputs, its source: ("matmul", m, n, k, dtype) or
#: ("polybench", kernel, dataset), flops per call)
CASES = {
    "dgemm": ("DGEMM 2088x2048x2048", "dgemm_2088x2048x2048.mlir",
              ("matmul", 2088, 2048, 2048, "f64")),
    "sgemm": ("SGEMM 2088x2048x2048", "sgemm_2088x2048x2048.mlir",
              ("matmul", 2088, 2048, 2048, "f32")),
    "odd": ("sweep, odd: SGEMM 255x257x253", "sgemm_255x257x253.mlir",
            ("matmul", 255, 257, 253, "f32")),
    "skinny": ("sweep, skinny: SGEMM 2048x32x2048", "sgemm_2048x32x2048.mlir",
               ("matmul", 2048, 32, 2048, "f32")),
    "bert": ("sweep, transformer: SGEMM 128x3072x768", "sgemm_128x3072x768.mlir",
             ("matmul", 128, 3072, 768, "f32")),
    "gemm": ("PolyBench gemm LARGE (f64)", "polybench_gemm_large.mlir",
             ("polybench", "gemm", "LARGE")),
    "2mm": ("PolyBench 2mm LARGE (f64)", "polybench_2mm_large.mlir",
            ("polybench", "2mm", "LARGE")),
    "3mm": ("PolyBench 3mm LARGE (f64)", "polybench_3mm_large.mlir",
            ("polybench", "3mm", "LARGE")),
}


def source(spec) -> str:
    if spec[0] == "matmul":
        from polyopt.bench import matmul_source
        _, m, n, k, dtype = spec
        return matmul_source(m, n, k, dtype)
    from polyopt.polybench.suite import kernel
    return kernel(spec[1]).mlir(spec[2])


def write_inputs(names=None) -> None:
    INPUTS.mkdir(exist_ok=True)
    for name in names or CASES:
        _, file, spec = CASES[name]
        (INPUTS / file).write_text(source(spec))


def command(name: str, budget: str = BUDGET) -> list:
    return ["polyopt", "tune", str((INPUTS / CASES[name][1]).relative_to(HERE.parent)),
            *FLAGS, "--budget", budget]


def run_case(name: str, budget: str = BUDGET) -> dict:
    """One ``polyopt tune`` process (``--json``): its trials and the re-timing, and its wall
    time."""
    if not (INPUTS / CASES[name][1]).exists():
        write_inputs([name])
    cmd = command(name, budget)
    start = time.perf_counter()
    done = subprocess.run([*cmd, "--json", "--no-progress"], cwd=HERE.parent,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"name": name, "case": CASES[name][0], "command": " ".join(cmd), "wall": wall,
                "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                f"exit status {done.returncode}"}
    record = json.loads(done.stdout)
    trials = record["trials"]
    model, best = trials[0], trials[record["best"] - 1]
    fastest = trials[record["fastest"] - 1]
    out = {"name": name, "case": CASES[name][0], "command": " ".join(cmd), "wall": wall,
           "trials": len(trials), "failed": sum(t["seconds"] is None for t in trials),
           "model_ms": model["seconds"] * 1e3, "fastest_ms": fastest["seconds"] * 1e3,
           "fastest": fastest["number"], "best": best["number"],
           "best_params": {k: v for k, v in best["params"].items()
                           if model["params"].get(k) != v},
           "best_pipeline": best["pipeline"], "confirmed_ms": None, "ratio": 1.0}
    if record["confirmed"]:
        a, b = record["confirmed"]
        out["confirmed_ms"] = [a * 1e3, b * 1e3]
        # kept only if it wins: the ratio of what is kept is >= 1 by construction
        out["ratio"] = a / b if best["number"] != 1 else 1.0
        out["fastest_ratio"] = a / b
    out["best_ms"] = out["confirmed_ms"][1] if out["confirmed_ms"] and best["number"] != 1 \
        else out["confirmed_ms"][0] if out["confirmed_ms"] else out["model_ms"]
    return out


def table(rows: list) -> str:
    from experiments.common import markdown_table
    cells = []
    for r in rows:
        if "error" in r:
            cells.append([r["case"], "failed: " + r["error"], "", "", "", "", f"{r['wall']:.0f}",
                          ""])
            continue
        if r["confirmed_ms"]:
            a, b = r["confirmed_ms"]
            retimed = f"{a:.2f} vs {b:.2f} (trial {r['fastest']}: {a / b:.3f}x)"
        else:
            retimed = "the model's choice was the fastest"
        cells.append([r["case"], f"{r['trials']} ({r['failed']} failed)",
                      f"{r['model_ms']:.2f}", f"{r['fastest_ms']:.2f} (trial {r['fastest']})",
                      retimed, f"{r['ratio']:.3f}x (trial {r['best']})",
                      f"{r['wall']:.0f}",
                      ", ".join(f"{k}={v}" for k, v in r["best_params"].items())
                      or "the model's"])
    return markdown_table(["shape", "trials", "model's choice ms (trial 1)",
                           "search's fastest ms", "re-timed alternately: model vs fastest, ms",
                           "kept (confirmed ratio)", "wall s", "kept parameters"], cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m experiments.tune_acceptance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", default=BUDGET)
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the rows there")
    parser.add_argument("--write-inputs", action="store_true",
                        help="(re)write experiments/inputs/ and stop")
    args = parser.parse_args(argv)
    if args.write_inputs:
        write_inputs()
        return 0
    rows = []
    for name in args.cases.split(","):
        row = run_case(name.strip(), args.budget)
        rows.append(row)
        print(f"{row['case']}: " + (row["error"] if "error" in row else
              f"{row['trials']} trials, model {row['model_ms']:.2f} ms, kept "
              f"{row['best_ms']:.2f} ms ({row['ratio']:.3f}x), {row['wall']:.0f} s"),
              file=sys.stderr, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    print(table(rows))
    for r in rows:
        print(f"- {r['case']}: `{r['command']}`")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
