"""PolyBench/C 4.2 (issue 14): the suite's kernels, polyopt against clang-22 -O3 and Polly.

    python3 -m experiments.polybench [--dataset LARGE] [--reps N] [--kernels gemm,2mm,...]
                                     [--out DIR]

One run of :func:`polyopt.polybench.harness.bench_polybench`, the harness behind ``polyopt
bench polybench``: for each kernel, polyopt without passes, polyopt ``--hopt`` (with
``--hopt-copy --hopt-unroll --hopt-scalrep --hopt-vect``), the C twin (PolyBench's own C)
built by ``clang-22 -O3 -march=native`` and the one built with Polly, on PolyBench's initial
values, one thread; every build's arrays are checked against clang's before it is timed, the
repetitions alternate the builds on re-initialised arrays.  The table gives median times and
the speed-ups; the chart (``polybench.png`` with ``--out``) the speed-up of each build over
clang -O3 per kernel and their geometric means.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable, Optional  # noqa: E402

from polyopt.polybench.harness import (CLANG, HOPT, HOPT_FLAGS, POLLY, POLYOPT,  # noqa: E402
                                       bench_polybench)
from polyopt.polybench.suite import select  # noqa: E402

from experiments.common import markdown_table  # noqa: E402

TITLE = "PolyBench/C 4.2 (issue 14)"
DATASET = "LARGE"
# three kernels of different kinds, at MINI: the report's tests run them in seconds
TEST_KERNELS = ("gemm", "atax", "jacobi-1d")


def run_suite(dataset: str = DATASET, *, reps: int = 3, kernels: Optional[str] = None,
              progress: Optional[Callable[[str], None]] = None) -> dict:
    """The harness's JSON for ``kernels`` (a comma-separated list, all of the suite's by
    default) plus ``title`` and ``errors`` (one entry per failed or wrong build)."""
    result = bench_polybench(select(kernels), dataset, reps=reps, progress=progress)
    record = result.to_json()
    record["title"] = TITLE
    record["errors"] = [{"kernel": k["kernel"], "build": label, "reason": b["error"]}
                        for k in record["kernels"] for label, b in k["builds"].items()
                        if b["error"]]
    return record


def _ms(build: dict) -> str:
    t = build.get("timing")
    return f"{1e3 * t['median']:.3g}" if t and not build["error"] else "—"


def _x(ratio: Optional[float], bold: bool = False) -> str:
    if ratio is None:
        return "—"
    return f"**{ratio:.2f}x**" if bold else f"{ratio:.2f}x"


def suite_table(record: dict) -> str:
    """One row per kernel: its sizes, the four median times, polyopt --hopt's speed-up over
    clang, Polly and the better of the two, plain polyopt's over clang, --hopt's compile time
    and the largest difference from clang's arrays; then the geometric means."""
    header = ["kernel", "sizes", "polyopt ms", "--hopt ms", "clang -O3 ms", "Polly ms",
              "--hopt vs clang", "--hopt vs Polly", "--hopt vs best", "polyopt vs clang",
              "compile (--hopt)", "max rel. error"]
    rows = []
    for k in record["kernels"]:
        b, r = k["builds"], k["ratios"]
        errs = [v["max_rel_error"] for v in b.values() if v["max_rel_error"] is not None]
        hopt = b.get(HOPT, {})
        rows.append([k["kernel"], " ".join(f"{p}={v}" for p, v in k["params"].items()),
                     *(_ms(b[label]) if label in b else "—"
                       for label in (POLYOPT, HOPT, CLANG, POLLY)),
                     _x(r[HOPT]["vs_clang"], True), _x(r[HOPT]["vs_polly"]),
                     _x(r[HOPT]["vs_best"]), _x(r[POLYOPT]["vs_clang"]),
                     f"{hopt['compile_time']:.2f} s" if hopt.get("compile_time") else "—",
                     f"{max(errs):.1e}" if errs else "—"])
    g = record["geomean"]
    rows.append(["**geomean**", "", "", "", "", "", _x(g[HOPT]["vs_clang"], True),
                 _x(g[HOPT]["vs_polly"]), _x(g[HOPT]["vs_best"]), _x(g[POLYOPT]["vs_clang"]),
                 "", ""])
    return markdown_table(header, rows)


def suite_notes(record: dict) -> str:
    return "\n".join(f"- **{e['kernel']}** ({e['build']}): {e['reason']}"
                     for e in record["errors"])


def suite_summary(record: dict) -> str:
    """One line for the report's summary."""
    g = record["geomean"][HOPT]
    worst = [(k["ratios"][HOPT]["vs_best"], k["kernel"]) for k in record["kernels"]
             if k["ratios"][HOPT]["vs_best"] is not None]
    text = (f"- PolyBench/C 4.2 ({record['dataset']}, {len(record['kernels'])} kernels, one "
            f"thread): polyopt --hopt geomean **{_x(g['vs_clang'])}** clang -O3, "
            f"**{_x(g['vs_polly'])}** Polly")
    if worst:
        ratio, name = min(worst)
        text += f"; slowest against the better of the two: {name} at {ratio:.2f}x"
    if record["errors"]:
        text += f"; {len(record['errors'])} build(s) failed"
    return text


def _tolerances(record: dict) -> str:
    """The kernels' tolerances: one number, or each with the kernels it applies to."""
    by_value: dict = {}
    for k in record["kernels"]:
        by_value.setdefault(k["tolerance"], []).append(k["kernel"])
    if len(by_value) == 1:
        return f"{next(iter(by_value)):g}"
    return "; ".join(f"{t:g} for {', '.join(names)}" for t, names in sorted(
        by_value.items(), key=lambda item: -len(item[1])))


def describe_method(record: dict) -> str:
    return (f"Every row is one kernel of `polyopt bench polybench --dataset "
            f"{record['dataset']} --reps {record['reps']}`: polyopt without passes, polyopt "
            f"`{HOPT_FLAGS}`, and PolyBench's own C (`init_array` and the kernel) built by "
            f"`{record['compilers'][CLANG]}` and by `{record['compilers'][POLLY]}`, on "
            "PolyBench's initial values, one thread. Each build runs once first and all its "
            "arrays are compared with clang's (**max rel. error**: the largest difference "
            "relative to each array's largest magnitude, tolerance "
            f"{_tolerances(record)}); then {record['reps']} repetition(s) alternate the "
            "builds, each on arrays restored to the initial values outside the timed region. "
            "Times are medians; **vs** columns are the other build's time over polyopt "
            "--hopt's (above 1: polyopt is faster), **best** the faster of clang and Polly; "
            "**compile** is polyopt --hopt's time from MLIR text to JIT-compiled code.")


def main(argv=None) -> int:
    from experiments import plots
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--dataset", default=DATASET,
                        choices=("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kernels", default=None, metavar="K1,K2,...")
    parser.add_argument("--out", metavar="DIR",
                        help="also write polybench.json and polybench.png there")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    record = run_suite(args.dataset, reps=args.reps, kernels=args.kernels,
                       progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(f"## {TITLE}\n\n{suite_table(record)}")
    notes = suite_notes(record)
    if notes:
        print("\n" + notes)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "polybench.json").write_text(json.dumps(record, indent=2) + "\n")
        plots.polybench_chart(record, out / "polybench.png",
                              title=f"{TITLE}: {record['dataset']}, one thread")
    return 1 if notes else 0


if __name__ == "__main__":
    raise SystemExit(main())
