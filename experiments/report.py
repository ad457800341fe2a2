"""Run every experiment and write a report folder.

    python3 -m experiments.report [--quick] [--out DIR] [--reps N]

Writes to DIR (default ``experiments/results/<date>-<short git hash>/``, with ``-quick``
appended in quick mode):

* ``report.md``: one table per experiment (ours beside the paper's; the last, polyopt and
  numpy on two threads), the plots, the machine and the command that reproduces it;
* ``dgemm_ladder.png``, ``sgemm_ladder.png``, ``size_sweep.png``, ``conv_layers.png``,
  ``polybench.png``, ``shape_sweep.png``, ``low_precision.png``, ``tuning.png``;
* ``results.json``: every step's configuration and the harness's raw results;
* ``machine.json``: CPU, caches, measured FMA peaks, versions, git commit.

The full mode uses the paper's sizes (2088x2048x2048) and 5 repetitions: 20-30 minutes on a
2-core machine, most of it in the naive and section 2.5 steps, then the PolyBench suite at its
LARGE sizes (3 repetitions: about as long again).  ``--quick`` runs the ladders at 1024^3 (the
two slow first steps at 768^3), fewer sweep sizes, 3 repetitions and PolyBench at MEDIUM, in a
few minutes.  Both time the ResNet-50 convolution layers (f32, batch 1), with 5 and 2
repetitions.  Progress goes to stderr, the report's path to stdout; the exit status is 1 when a
step failed (it is in the report), 0 otherwise.
"""

from __future__ import annotations

from polyopt.bench import RESNET50_LAYERS, single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

from experiments import (ablations, by_cpu, conv_layers, dgemm_ladder,  # noqa: E402
                         low_precision, polybench, sgemm_ladder, shape_sweep, size_sweep,
                         threads, tuning)
from experiments.common import (PAPER_MACHINE, PAPER_PEAK_GFLOPS, Progress,  # noqa: E402
                                gflops_text, markdown_table, percent_text, run_steps,
                                steps_notes, steps_table)
from experiments.machine import REPO, RESULTS_DIR, machine_facts  # noqa: E402

COMMAND = "python3 -m experiments.report"


@dataclass(frozen=True)
class Mode:
    """Sizes and repetitions of one kind of run."""

    name: str
    ladder: tuple[int, int, int]
    slow: tuple[int, int, int]       # the naive and section 2.5 steps
    sweep: tuple[int, ...]
    reps: int
    conv_layers: dict         # label -> polyopt.bench.ConvShape
    conv_reps: int
    peak_reps: int = 5
    peak_seconds: float = 0.2
    polybench_dataset: str = "LARGE"
    polybench_kernels: Optional[str] = None      # comma-separated; None: all of them
    polybench_reps: int = 3
    by_cpu_workloads: tuple = by_cpu.WORKLOADS
    shapes: tuple = shape_sweep.SHAPES
    shape_samples: int = 7
    low_precision_sizes: tuple = low_precision.SIZES
    tuning_size: tuple = tuning.SIZE
    tuning_trials: int = tuning.TRIALS
    threads_sizes: tuple = threads.SIZES


FULL = Mode("full", dgemm_ladder.PAPER_SIZE, dgemm_ladder.PAPER_SIZE, size_sweep.SIZES, 5,
            RESNET50_LAYERS, 5)
QUICK = Mode("quick", (1024, 1024, 1024), (768, 768, 768),
             (256, 257, 500, 1000, 1023, 1500, 2088), 3, RESNET50_LAYERS, 2,
             polybench_dataset="MEDIUM", shapes=shape_sweep.QUICK_SHAPES, shape_samples=5,
             low_precision_sizes=low_precision.QUICK_SIZES, tuning_size=tuning.QUICK_SIZE,
             tuning_trials=tuning.QUICK_TRIALS, threads_sizes=threads.QUICK_SIZES)
# tiny matrices and convolutions for the tests: every step and every file, in seconds
TESTS = Mode("tests", (24, 20, 16), (9, 7, 5), (8, 13), 1, conv_layers.TEST_LAYERS, 1,
             peak_reps=1, peak_seconds=0.01, polybench_dataset="MINI",
             polybench_kernels=",".join(polybench.TEST_KERNELS), polybench_reps=1,
             by_cpu_workloads=by_cpu.TEST_WORKLOADS, shapes=shape_sweep.TEST_SHAPES,
             shape_samples=1, low_precision_sizes=low_precision.TEST_SIZES,
             tuning_size=tuning.TEST_SIZE, tuning_trials=tuning.TEST_TRIALS,
             threads_sizes=threads.TEST_SIZES)


def default_out(mode: Mode, git: dict) -> Path:
    date = datetime.date.today().isoformat()
    suffix = "" if mode is FULL else f"-{mode.name}"
    return REPO / RESULTS_DIR / f"{date}-{git.get('short') or 'nogit'}{suffix}"


def plan(mode: Mode) -> list[tuple[str, str, list]]:
    """(key, title, steps) of every experiment, in the order they run."""
    return [
        ("dgemm_ladder", dgemm_ladder.TITLE, dgemm_ladder.steps(mode.ladder, mode.slow)),
        ("ablations", ablations.TITLE, ablations.steps(mode.ladder)),
        ("sgemm_ladder", sgemm_ladder.TITLE, sgemm_ladder.steps(mode.ladder, mode.slow)),
        ("size_sweep", size_sweep.TITLE, size_sweep.steps(mode.sweep)),
    ]


# ---------------------------------------------------------------------------------------------
# report.md

def _machine_section(machine: dict) -> str:
    cpu, target, sw, git = machine["cpu"], machine["target"], machine["software"], machine["git"]
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_bf16",
              "avx512_vnni", "amx_tile")
    simd = " ".join(f for f in wanted if f in cpu["flags"]) or "—"
    cache_text = ", ".join(f"L{c.get('level')} {c.get('type', '').lower()} {c.get('size')} "
                           f"({c.get('ways')}-way)" for c in machine["caches"]) or "—"
    rows = [
        ("CPU", f"{cpu['model']} ({cpu.get('vendor') or '?'}), {cpu['logical_cpus']} logical "
                f"CPUs; LLVM CPU `{target['llvm_cpu']}`"),
        ("SIMD flags (/proc/cpuinfo)", f"{simd} (all {len(cpu['flags'])} flags in machine.json)"),
        ("caches (sysfs, cpu0)", cache_text),
        ("polyopt's target", f"{target['vector_bits']}-bit vectors, {target['vector_registers']} "
                             f"vector registers; L1d {target['l1d_bytes'] // 1024} KiB, L2 "
                             f"{target['l2_bytes'] // 1024} KiB, L3 "
                             f"{target['l3_bytes'] // 2**20} MiB"),
        ("target description (`polyopt target`)",
         machine["description"]["summary"] + "; model: " + ", ".join(
             f"{k}={v}" for k, v in machine["description"]["machine_model"].items()
             if k != "features") if "description" in machine else "—"),
        ("measured FMA peak", ", ".join(f"{d} {p['gflops']:.1f} GFLOPS ({p['lanes']} lanes, "
                                        f"median of {p['reps']})"
                                        for d, p in machine["peak"].items())),
        ("Python", f"{sw['python']} on {sw['platform']}"),
        ("numpy and its BLAS", f"numpy {sw['numpy']}; {sw['blas']}"),
        ("LLVM", f"llvmlite {sw['llvmlite']}, LLVM {sw['llvm']}"),
        ("islpy", sw["islpy"] or "?"),
        ("git", f"{git['commit'] or '?'}"
                + (f" + uncommitted changes ({len(git['changed'])} paths, listed in "
                   f"machine.json)" if git["dirty"] else " (clean tree)")),
        ("date", machine["date"]),
    ]
    return markdown_table(["", ""], rows)


def _reproduce_section(command: str, git: dict, tuned: Optional[dict], reps: int) -> str:
    checkout = f"git checkout {git['commit']}" if git["commit"] else "# (not a git checkout)"
    dirty = ("\n# the tree had uncommitted changes (see machine.json: git.changed): the commit "
             "alone may not reproduce it") if git["dirty"] else ""
    text = (f"From the repository root:\n\n```sh\n{checkout}{dirty}\n./scripts/setup.sh\n"
            f"{command}\n```\n")
    if tuned:
        text += ("\nThe tuned DGEMM step alone, through the CLI on the same harness (it agrees "
                 "within noise):\n\n```sh\n"
                 f"python3 -m polyopt bench matmul --m {tuned['m']} --n {tuned['n']} "
                 f"--k {tuned['k']} --reps {reps} --hopt-copy --hopt-unroll --hopt-scalrep "
                 "--hopt-vect\n```\n")
    return text


def _tuned_summary(records: Sequence[dict], paper_gflops: Optional[float], dtype: str) -> str:
    tuned = dgemm_ladder.tuned_result(records)
    if not tuned or tuned["status"] != "ok":
        return f"- {dtype}: the tuned step did not run"
    text = (f"- {dtype} {tuned['m']}x{tuned['n']}x{tuned['k']}, tuned (all passes, the model's "
            f"tiles): **{gflops_text(tuned['gflops'])} GFLOPS**, "
            f"{percent_text(tuned['fraction_of_peak'])} of the measured peak, "
            f"**{tuned['ratio_vs_numpy']:.2f}x** numpy (OpenBLAS "
            f"{gflops_text(tuned['numpy_gflops'])} GFLOPS in the same run)")
    if paper_gflops:
        text += (f"; the paper: {gflops_text(paper_gflops)} GFLOPS, "
                 f"{percent_text(paper_gflops / PAPER_PEAK_GFLOPS[dtype])} of its peak, "
                 f"{paper_gflops / dgemm_ladder.NUMPY_PAPER.gflops:.2f}x OpenBLAS")
    return text


def _conv_summary(records: Sequence[dict], dtype: str) -> str:
    ok = [r for r in records if r["status"] == "ok"]
    if not ok:
        return f"- {dtype} convolution layers: none ran"
    ratios = sorted(r["ratio_vs_numpy"] for r in ok)
    best = max(ok, key=lambda r: r["gflops"])
    return (f"- {dtype} convolution layers ({len(ok)} of {len(records)}), all passes: "
            f"**{ratios[0]:.2f}x to {ratios[-1]:.2f}x** numpy's im2col + matmul; best "
            f"{gflops_text(best['gflops'])} GFLOPS ({best['label']}, "
            f"{percent_text(best['fraction_of_peak'])} of the measured peak)")


def _size_text(record: dict) -> str:
    """A step's size: the matmul's MxNxK or the convolution's shape."""
    if "shape_text" in record:
        return record["shape_text"]
    return f"{record['m']}x{record['n']}x{record['k']}"


def write_markdown(path: Path, *, mode: Mode, reps: int, command: str, machine: dict,
                   results: dict) -> None:
    git = machine["git"]
    peaks = {d: p["gflops"] for d, p in machine["peak"].items()}
    exps = results["experiments"]
    dg, ab, sg, sw, cv = (exps[k]["steps"] for k in ("dgemm_ladder", "ablations",
                                                     "sgemm_ladder", "size_sweep",
                                                     "conv_layers"))
    failed = [r for e in exps.values() for r in e.get("steps", []) if r["status"] == "error"]
    pb = exps["polybench"]
    out = [f"# polyopt experiment report ({mode.name} mode)\n",
           f"{machine['date']}, commit `{git['short'] or '?'}`"
           f"{' with uncommitted changes' if git['dirty'] else ''}, on {machine['cpu']['model']} "
           f"(`{machine['target']['llvm_cpu']}`, measured FMA peak "
           f"{peaks['f64']:.1f} GFLOPS f64 / {peaks['f32']:.1f} f32); numpy: "
           f"{machine['software']['blas']}.\n"]
    if mode is not FULL:
        out.append(f"> **{mode.name} mode**: smaller matrices and fewer repetitions than the "
                   f"paper; its numbers are a smoke test, not the paper's experiment. The full "
                   f"run is `{COMMAND}`.\n")
    if failed:
        out.append(f"> **{len(failed)} step(s) failed**: "
                   + "; ".join(f"{r['label']} ({r['dtype']}, {_size_text(r)}): "
                               f"{r['reason']}" for r in failed) + "\n")
    out.append(
        "How to read the tables: every number is `polyopt.bench.bench_matmul`'s, the harness "
        "behind `polyopt bench matmul` (section 5: `bench_conv2d`'s, behind `polyopt bench "
        "conv2d`), one configuration per run: the result is checked "
        f"against numpy, both warm up once, then {reps} repetition(s) alternate polyopt and "
        "numpy. **GFLOPS** is the median (min..max over the repetitions), **of peak** the "
        "fraction of the FMA peak measured on this machine, **vs numpy** numpy's time over "
        "polyopt's in the same run (above 1: polyopt is faster), **compile** the time from MLIR "
        "text to JIT-compiled code. **LLVM vect.** says whether LLVM's own loop and SLP "
        "vectorizers ran (`llvm_vectorize`). **tiles** is what polyopt used (M_R x N_R, "
        "register order `ji` = the paper's (.., d1, d0), `ij` = permuted, M_C, K_C, N_C). "
        f"The paper's numbers are from U. Bondhugula, *High Performance Code Generation in "
        f"MLIR: An Early Case Study with GEMM* (2020), on one core of an {PAPER_MACHINE}; "
        f"**paper of peak** is against its 75.2 GFLOPS f64 peak (section 1.1; 150.4 for f32, "
        f"twice the lanes), **paper §** the section that prints the number.\n")
    out.append("## Summary\n")
    out.append(_tuned_summary(dg, dgemm_ladder.PAPER["tuned"].gflops, "f64"))
    out.append(_tuned_summary(sg, None, "f32"))
    out.append(_conv_summary(cv, exps["conv_layers"]["dtype"]))
    out.append(polybench.suite_summary(pb))
    out.append(threads.summary(exps["threads"]))
    out.append("")

    out.append(f"## 1. {dgemm_ladder.TITLE}\n")
    out.append("From the naive nest to the paper's whole pipeline, one switch at a time "
               "(`polyopt.compile` switches `hopt`, `copy`, `unroll`, `scalrep`, `vect`), then "
               "the register tiles the paper tried (tile attributes `M_R`/`N_R`, the rest from "
               "polyopt's model), the tuned configuration, BLIS mode (`blis=True`) and numpy. "
               "LLVM 22 vectorizes the unrolled tile by itself, so the steps from +packing on "
               "run a second time with LLVM's vectorizers off (**off** rows, orange bars): the "
               "paper's setting, where vector code comes from `vect` only.\n")
    out.append(steps_table(dg, numpy_from=dgemm_ladder.tuned_result(dg),
                           numpy_paper=dgemm_ladder.NUMPY_PAPER))
    out.append("\n" + steps_notes(dg) + "\n")
    out.append("![DGEMM ladder](dgemm_ladder.png)\n")

    out.append(f"## 2. {ablations.TITLE}\n")
    out.append("All passes with the model's tiles (the tuned step above), then without one "
               "pass at a time; the paper's numbers are for its best 3x16 configuration.\n")
    out.append(steps_table(ab, numpy_from=ab[0] if ab else None,
                           numpy_paper=dgemm_ladder.NUMPY_PAPER))
    out.append("\n" + steps_notes(ab) + "\n")

    out.append(f"## 3. {sgemm_ladder.TITLE}\n")
    out.append("The same ladder in f32. Section 2.13 doubles N_R for f32 (twice the lanes): "
               "the tiles are 4x16, 6x16 and the paper's SGEMM tile 3x32. Figure 6 gives no "
               "numbers in the paper's text; section 2.13 says its pure-MLIR SGEMM is within 2% "
               "of MKL and marginally better than OpenBLAS and BLIS, and that BLIS mode is "
               "nearly on par.\n")
    out.append(steps_table(sg, numpy_from=dgemm_ladder.tuned_result(sg),
                           numpy_paper=sgemm_ladder.NUMPY_PAPER))
    out.append("\n" + steps_notes(sg) + "\n")
    out.append("![SGEMM ladder](sgemm_ladder.png)\n")

    out.append(f"## 4. {size_sweep.TITLE}\n")
    out.append("Square matmuls, polyopt with all passes and the model's tiles, numpy in the "
               "same run; the sizes include awkward ones (257, 1023, 500, 1500, 2088, 2500).\n")
    out.append(size_sweep.sweep_table(sw))
    notes = steps_notes(sw)
    out.append(("\n" + notes + "\n") if notes else "")
    out.append("![GFLOPS vs size](size_sweep.png)\n")

    conv = exps["conv_layers"]
    out.append(f"## 5. {conv_layers.TITLE}\n")
    out.append(f"`hop.conv2d` with all passes, {conv['dtype']}, batch 1, NHWC input, HWCF "
               "filter, no padding (ResNet-50's 3x3 layers get their inputs padded: 58x58 in, "
               "56x56 out). polyopt runs it as an implicit GEMM on the matmul pipeline "
               "(**as GEMM**: M = N·OH·OW, N = F, K = KH·KW·C), packing A being im2col, one "
               "M_C x K_C tile at a time. Every row is one run of `polyopt.bench.bench_conv2d`, "
               "the harness behind `polyopt bench conv2d --resnet50`: checked against numpy, "
               f"one warm-up each, then {conv['reps']} repetition(s) alternating polyopt and "
               "**numpy im2col+matmul** (the whole im2col matrix copied, OpenBLAS's matmul on "
               "one thread, added into the output); **polyopt vs numpy** is numpy's time over "
               "polyopt's (above 1: polyopt is faster), **of peak** against the measured "
               f"{conv['dtype']} FMA peak. **polyopt vs torch** and **torch** (its version and "
               "memory layout) when torch is installed.\n")
    out.append(conv_layers.layers_table(cv))
    notes = conv_layers.layers_notes(cv)
    out.append(("\n" + notes + "\n") if notes else "")
    out.append("![Convolution layers](conv_layers.png)\n")

    out.append(f"## 6. {polybench.TITLE}\n")
    out.append("PolyBench/C 4.2's kernels written as affine MLIR (PolyBench's loops and "
               "statement order, `polyopt/polybench/kernels/`), against PolyBench's own C "
               "compiled by clang and by clang with Polly. " + polybench.describe_method(pb)
               + "\n")
    out.append(polybench.suite_table(pb))
    notes = polybench.suite_notes(pb)
    out.append(("\n" + notes + "\n") if notes else "")
    out.append("![PolyBench speed-ups over clang -O3](polybench.png)\n")

    out.append(f"## 7. {by_cpu.TITLE}\n")
    out.append(by_cpu.describe_method() + (
        "" if mode is FULL else f" In {mode.name} mode this run's rows go to the report "
        "folder's `by_cpu.json` (a copy of the kept table with them merged), not to the kept "
        "table.") + "\n")
    out.append(by_cpu.table(results["by_cpu"]) + "\n")

    sweep = exps["shape_sweep"]
    out.append(f"## 8. {shape_sweep.TITLE}\n")
    out.append(shape_sweep.describe_method(sweep["samples"]) + "\n")
    out.append(shape_sweep.table(sweep["points"]) + "\n")
    out.append("![Every shape](shape_sweep.png)\n")

    out.append(f"## 9. {low_precision.TITLE}\n")
    out.append(low_precision.describe_method() + "\n")
    out.append(low_precision.table(exps["low_precision"]["records"]) + "\n")
    out.append("![Low precision](low_precision.png)\n")

    tuned = exps["tuning"]
    out.append(f"## 10. {tuning.TITLE}\n")
    out.append(tuning.describe_method(tuned) + "\n")
    out.append(tuning.table(tuned) + "\n")
    out.append(f"The best as a pipeline: `{tuned['best_pipeline']}`\n")
    out.append("![Autotuning](tuning.png)\n")

    team = exps["threads"]
    out.append(f"## 11. {threads.TITLE}\n")
    out.append(threads.describe_method(team) + "\n")
    out.append(threads.table(team) + "\n")

    out.append("## Machine\n")
    out.append(_machine_section(machine) + "\n")
    out.append("## Reproduce\n")
    out.append(_reproduce_section(command, git, dgemm_ladder.tuned_result(dg), reps))
    path.write_text("\n".join(out))


# ---------------------------------------------------------------------------------------------

def run_report(mode: Mode, *, reps: Optional[int] = None, out: Optional[Path] = None,
               command: str = COMMAND, stream=None) -> tuple[Path, dict]:
    """Run everything in ``mode`` and write the report folder; returns (folder, results)."""
    from experiments import plots
    stream = stream or sys.stderr
    conv_reps = reps or mode.conv_reps
    polybench_reps = reps or mode.polybench_reps
    reps = reps or mode.reps
    experiments = plan(mode)
    conv_steps = conv_layers.steps(mode.conv_layers)
    progress = Progress([s for _, _, steps in experiments for s in steps] + conv_steps,
                        lambda step: (conv_reps if isinstance(step, conv_layers.ConvStep)
                                      else reps), stream)
    progress.note(f"{mode.name} mode, {reps} repetition(s) ({conv_reps} for the convolution "
                  f"layers), {sum(len(s) for _, _, s in experiments) + len(conv_steps)} steps; "
                  "measuring the FMA peak")
    machine = machine_facts(mode.peak_reps, mode.peak_seconds)
    peaks = {d: p["gflops"] for d, p in machine["peak"].items()}
    progress.note("peak: " + ", ".join(f"{d} {g:.1f} GFLOPS" for d, g in peaks.items()))
    folder = Path(out) if out else default_out(mode, machine["git"])
    folder.mkdir(parents=True, exist_ok=True)

    results: dict = {"mode": mode.name, "reps": reps, "command": command,
                     "date": machine["date"], "git": machine["git"], "peaks": peaks,
                     "paper": {"title": "High Performance Code Generation in MLIR: An Early "
                                        "Case Study with GEMM (U. Bondhugula, 2020)",
                               "machine": PAPER_MACHINE, "peak_gflops": PAPER_PEAK_GFLOPS},
                     "experiments": {}}
    for key, title, steps in experiments:
        records = run_steps(steps, reps=reps, peaks=peaks, progress=progress, name=key)
        results["experiments"][key] = {"title": title, "steps": records}
    results["experiments"]["conv_layers"] = {
        "title": conv_layers.TITLE, "dtype": conv_layers.DTYPE, "reps": conv_reps,
        "steps": conv_layers.run_layers(conv_steps, reps=conv_reps, peaks=peaks,
                                        progress=progress, name="conv_layers")}
    progress.note(f"PolyBench/C 4.2 at {mode.polybench_dataset}")
    suite = polybench.run_suite(mode.polybench_dataset, reps=polybench_reps,
                                kernels=mode.polybench_kernels, progress=progress.note)
    results["experiments"]["polybench"] = suite
    progress.note(f"every shape: {len(mode.shapes)} shapes x f64, f32, static and ?x?")
    results["experiments"]["shape_sweep"] = {
        "title": shape_sweep.TITLE, "samples": mode.shape_samples,
        "points": shape_sweep.run(mode.shapes, samples=mode.shape_samples,
                                  progress=progress.note)}
    progress.note("low precision: " + ", ".join(low_precision.KINDS))
    results["experiments"]["low_precision"] = {
        "title": low_precision.TITLE,
        "records": low_precision.run(mode.low_precision_sizes, reps=reps,
                                     progress=progress.note)}
    progress.note(f"tuning: {mode.tuning_trials} trials")
    results["experiments"]["tuning"] = tuning.run(mode.tuning_size, mode.tuning_trials,
                                                  samples=min(reps, 3), progress=progress.note)
    results["experiments"]["threads"] = dict(
        threads.run(mode.threads_sizes, reps=reps, progress=progress.note), title=threads.TITLE)
    # by CPU: merged into the kept table in full mode; other modes (other sizes) merge into a
    # copy in the report folder
    identity = by_cpu.cpu_identity()
    by_cpu_rows = by_cpu.measure(mode.by_cpu_workloads, reps=reps, progress=progress.note)
    if mode is not FULL:
        by_cpu.save(folder / "by_cpu.json", by_cpu.load(by_cpu.BY_CPU_FILE))
    results["by_cpu"] = by_cpu.record(by_cpu.BY_CPU_FILE if mode is FULL
                                      else folder / "by_cpu.json", identity, by_cpu_rows)
    if mode is FULL:
        by_cpu.save(folder / "by_cpu.json", results["by_cpu"])
    results["errors"] = [{"experiment": key, "label": r["label"], "dtype": r["dtype"],
                          "reason": r["reason"]}
                         for key, e in results["experiments"].items()
                         for r in e.get("steps", []) if r["status"] == "error"]
    results["errors"] += [{"experiment": "polybench", "label": f"{e['kernel']} ({e['build']})",
                           "dtype": "f64", "reason": e["reason"]} for e in suite["errors"]]

    (folder / "machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    (folder / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    progress.note("plotting")
    exps = results["experiments"]
    for key, paper_peak, numpy_paper in (
            ("dgemm_ladder", PAPER_PEAK_GFLOPS["f64"], dgemm_ladder.NUMPY_PAPER.gflops),
            ("sgemm_ladder", PAPER_PEAK_GFLOPS["f32"], sgemm_ladder.NUMPY_PAPER.gflops)):
        records = exps[key]["steps"]
        tuned = dgemm_ladder.tuned_result(records)
        dtype = records[0]["dtype"]
        size = f"{records[-1]['m']}x{records[-1]['n']}x{records[-1]['k']}"
        plots.ladder_chart(records, folder / f"{key}.png",
                           title=f"{exps[key]['title']}: {dtype} {size}, {mode.name} mode",
                           peak=peaks[dtype], paper_peak=paper_peak, numpy_paper=numpy_paper,
                           numpy_gflops=tuned["numpy_gflops"] if tuned and
                           tuned["status"] == "ok" else None)
    plots.sweep_chart(exps["size_sweep"]["steps"], folder / "size_sweep.png", peaks=peaks,
                      title=f"{size_sweep.TITLE}, {mode.name} mode")
    plots.conv_chart(exps["conv_layers"]["steps"], folder / "conv_layers.png",
                     peak=peaks[conv_layers.DTYPE],
                     title=f"{conv_layers.TITLE}: {conv_layers.DTYPE}, batch 1, "
                           f"{mode.name} mode")
    plots.shape_sweep_chart(exps["shape_sweep"]["points"], folder / "shape_sweep.png",
                            title=f"{shape_sweep.TITLE}, {mode.name} mode")
    plots.low_precision_chart(exps["low_precision"]["records"], folder / "low_precision.png",
                              title=f"{low_precision.TITLE}, {mode.name} mode")
    plots.tuning_chart(exps["tuning"], folder / "tuning.png",
                       title=f"{tuning.TITLE}, {mode.name} mode")
    plots.polybench_chart(suite, folder / "polybench.png",
                          title=f"{polybench.TITLE}: {suite['dataset']}, one thread, "
                                f"{mode.name} mode")
    write_markdown(folder / "report.md", mode=mode, reps=reps, command=command,
                   machine=machine, results=results)
    progress.note(f"wrote {folder}")
    return folder, results


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and 3 repetitions: a few minutes instead of 20-30")
    parser.add_argument("--out", metavar="DIR", help="the report folder (default "
                        f"{RESULTS_DIR}/<date>-<short git hash>[-quick])")
    parser.add_argument("--reps", type=int, metavar="N",
                        help="repetitions per configuration (default 5; with --quick 3, "
                             "and 2 for the convolution layers)")
    parser.add_argument("--sizes-for-tests", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    mode = TESTS if args.sizes_for_tests else QUICK if args.quick else FULL
    command = " ".join([COMMAND] + [shlex.quote(a) for a in argv])
    folder, results = run_report(mode, reps=args.reps, out=args.out, command=command)
    print(folder)
    if results["errors"]:
        print(f"{len(results['errors'])} step(s) failed; see {folder / 'report.md'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
