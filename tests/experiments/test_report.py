"""python3 -m experiments.report: one run on tiny matrices (1 repetition) writes a complete
report folder.  Speed is never asserted here; what the report says about it is checked for
presence and consistency only."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXPERIMENTS = ("dgemm_ladder", "ablations", "sgemm_ladder", "size_sweep", "conv_layers",
               "polybench", "shape_sweep", "low_precision", "tuning", "threads")
PLOTS = ("dgemm_ladder.png", "sgemm_ladder.png", "size_sweep.png", "conv_layers.png",
         "polybench.png", "shape_sweep.png", "low_precision.png", "tuning.png")
def _torch_importable() -> bool:
    """As the harness decides (it imports torch; a broken install counts as absent)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


TORCH = _torch_importable()
# experiments.conv_layers.TEST_LAYERS: label -> (shape text, implicit GEMM MxNxK)
TINY_CONVS = {
    "tiny 3x3": ("1x10x9x16 * 3x3x16x12 -> 1x8x7x12", "56x12x144"),
    "tiny 3x3 stride 2 dilation 2": ("1x11x12x8 * 3x3x8x13 -> 1x4x4x13, stride 2, dilation 2",
                                     "16x13x72"),
    "tiny 1x1": ("1x7x6x24 * 1x1x24x8 -> 1x7x6x8", "42x8x24"),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "tiny"
    proc = subprocess.run([sys.executable, "-m", "experiments.report", "--sizes-for-tests",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, proc


def test_writes_every_file(report):
    out, proc = report
    assert proc.stdout.strip() == str(out)
    for name in ("report.md", "results.json", "machine.json", *PLOTS):
        assert (out / name).is_file(), name


def test_plots_are_png(report):
    out, _ = report
    for name in PLOTS:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000, name


def test_results_hold_every_experiment(report):
    out, _ = report
    results = json.loads((out / "results.json").read_text())
    assert results["mode"] == "tests" and results["reps"] == 1 and results["errors"] == []
    assert set(results["experiments"]) == set(EXPERIMENTS)
    for key in EXPERIMENTS[:4]:
        steps = results["experiments"][key]["steps"]
        assert steps, key
        for r in steps:
            # BLIS mode may be unavailable (no blis package or CPU): then it says why
            if r["status"] == "unavailable":
                assert r["label"].startswith("BLIS mode") and r["reason"]
                continue
            assert r["status"] == "ok", (key, r["label"], r.get("reason"))
            assert r["gflops_min"] <= r["gflops"] <= r["gflops_max"]
            assert r["gflops"] > 0 and r["numpy_gflops"] > 0 and r["compile_time"] > 0
            assert 0 < r["fraction_of_peak"] and r["ratio_vs_numpy"] > 0
            (raw,) = r["bench"]["variants"]   # the harness's own JSON, unchanged
            assert raw["label"] == r["label"] and raw["timing"]["reps"] == 1
            assert raw["gflops"] == r["gflops"] and raw["switches"] == r["switches"]


def test_conv_layers(report):
    out, _ = report
    results = json.loads((out / "results.json").read_text())
    conv = results["experiments"]["conv_layers"]
    assert conv["dtype"] == "f32" and conv["reps"] == 1
    steps = conv["steps"]
    assert [r["label"] for r in steps] == list(TINY_CONVS)
    for r in steps:
        assert r["status"] == "ok", (r["label"], r.get("reason"))
        assert (r["shape_text"], "{m}x{n}x{k}".format(**r["gemm"])) == TINY_CONVS[r["label"]]
        assert r["switches"] == {"hopt": True, "copy": True, "unroll": True, "scalrep": True,
                                 "vect": True}
        assert r["gflops_min"] <= r["gflops"] <= r["gflops_max"]
        assert r["numpy_gflops_min"] <= r["numpy_gflops"] <= r["numpy_gflops_max"]
        assert r["gflops"] > 0 and r["numpy_gflops"] > 0 and r["compile_time"] > 0
        assert 0 < r["fraction_of_peak"] and r["ratio_vs_numpy"] > 0
        assert r["torch"] is TORCH
        if not TORCH:
            assert r["torch_note"] == "torch not installed" and r["ratio_vs_torch"] is None
        raw = r["bench"]   # the harness's own JSON, unchanged
        assert raw["polyopt"]["reps"] == 1 and raw["shape"] == r["shape"]
        assert raw["polyopt_gflops"] == r["gflops"]
        assert raw["ratio_vs_numpy"] == r["ratio_vs_numpy"]
        assert r["flops"] / (raw["polyopt"]["median"] * 1e9) == pytest.approx(r["gflops"])


def test_conv_layers_alone(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.conv_layers", "--sizes-for-tests",
                           "--reps", "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith("## Convolution layers (issue 7)\n")
    for label, (shape, gemm) in TINY_CONVS.items():
        assert f"| {label} | {shape} | {gemm} | **" in proc.stdout
    assert proc.stderr.count("conv layers: tiny") == len(TINY_CONVS)


def test_ladders_cover_the_paper_steps(report):
    out, _ = report
    results = json.loads((out / "results.json").read_text())
    for key, dtype, tiles in (("dgemm_ladder", "f64", ("4x8 tile", "6x8 tile", "3x16 tile")),
                              ("sgemm_ladder", "f32", ("4x16 tile", "3x32 tile (2.13)"))):
        steps = results["experiments"][key]["steps"]
        assert {r["dtype"] for r in steps} == {dtype}
        on = [r["label"] for r in steps if r["llvm_vectorize"]]
        off = [r["label"] for r in steps if not r["llvm_vectorize"]]
        for label in ("naive", "tiling (2.5)", "BLIS tiling", "+packing", "+unroll-and-jam",
                      "+scalar replacement", "+vectorization", *tiles,
                      "tuned (model's tiles)", "BLIS mode (2.12)"):
            assert label in on, (key, label)
        # the second series (the paper's setting) from +packing on
        assert off[0] == "+packing" and "tuned (model's tiles)" in off
        assert "naive" not in off and not any(label.startswith("BLIS") for label in off)
        # section 2.12: one tile polyopt runs in the permuted register order
        permuted = [r for r in steps if "permuted" in r["label"]]
        assert permuted and all(r["model"]["order"] == "ij" for r in permuted)
    dgemm = results["experiments"]["dgemm_ladder"]["steps"]
    naive = next(r for r in dgemm if r["label"] == "naive")
    assert naive["paper"]["gflops"] == pytest.approx(0.558) and naive["paper"]["section"] == "2.3"
    assert naive["paper"]["fraction_of_peak"] == pytest.approx(0.558 / 75.2)
    tuned = next(r for r in dgemm if r["label"] == "tuned (model's tiles)")
    assert {"M_C", "K_C", "M_R", "N_R", "K_U", "order"} <= set(tuned["model"])


def test_sweep_covers_both_types(report):
    out, _ = report
    results = json.loads((out / "results.json").read_text())
    steps = results["experiments"]["size_sweep"]["steps"]
    assert {(r["dtype"], r["m"]) for r in steps} == {(d, s) for d in ("f64", "f32")
                                                      for s in (8, 13)}
    assert all(r["m"] == r["n"] == r["k"] for r in steps)


def test_markdown_has_the_tables_and_the_facts(report):
    out, _ = report
    text = (out / "report.md").read_text()
    for heading in ("DGEMM ladder (paper Figure 5)", "Ablations", "SGEMM ladder (paper Figure 6)",
                    "GFLOPS vs size", "## 5. Convolution layers (issue 7)", "## Machine",
                    "## Reproduce"):
        assert heading in text, heading
    assert "not available" not in text
    assert ("| layer | shape (NHWC * HWCF -> NHWF) | as GEMM (MxNxK) | polyopt GFLOPS | "
            "min..max | of peak | numpy im2col+matmul GFLOPS | polyopt vs numpy | compile | "
            "polyopt vs torch | torch |") in text
    for label, (shape, gemm) in TINY_CONVS.items():
        assert f"| {label} | {shape} | {gemm} | **" in text
    if not TORCH:
        assert text.count("| — | torch not installed |") == len(TINY_CONVS)
    assert "- f32 convolution layers (3 of 3), all passes: **" in text
    assert "| step | LLVM vect. | size | tiles | GFLOPS | min..max | of peak | vs numpy" in text
    assert "| naive | on | 9x7x5 | naive nest |" in text
    assert "| 0.56 | 0.7% | 2.3 |" in text            # the paper's naive step, beside ours
    assert "| **off** |" in text and "numpy (OpenBLAS, 1 thread)" in text
    for image in PLOTS:
        assert f"]({image})" in text
    machine = json.loads((out / "machine.json").read_text())
    for fact in (machine["cpu"]["model"], machine["software"]["numpy"],
                 machine["software"]["llvm"], machine["software"]["islpy"],
                 machine["git"]["commit"], "measured FMA peak"):
        assert fact and fact in text, fact
    assert f"python3 -m experiments.report --sizes-for-tests --out {out}" in text


def test_shape_sweep_section(report):
    """Every shape (issue 16) on experiments.shape_sweep.TEST_SHAPES: both types, static and
    the one ?x? function, checked and timed; the table, the summary and the chart."""
    out, _ = report
    sweep = json.loads((out / "results.json").read_text())["experiments"]["shape_sweep"]
    points = sweep["points"]
    assert sweep["samples"] == 1
    assert [(p["m"], p["n"], p["k"], p["dtype"]) for p in points] == [
        (m, n, k, d) for d in ("f64", "f32") for m, n, k in ((5, 7, 3), (1, 33, 17), (19, 1, 23))]
    for p in points:
        assert p["ratio"] > 0 and p["dynamic_ratio"] > 0 and p["dynamic_vs_static"] > 0
        assert p["max_error"] < 1e-3
    text = (out / "report.md").read_text()
    assert "## 8. Every shape: one ratio to numpy per shape, static and ?x? (one thread)" in text
    assert "| shape (M x N x K) | kind | f64 vs numpy | f64 GFLOPS (numpy) | f64 ?x? vs numpy |" \
        in text
    assert "| 1x33x17 | matrix-vector |" in text
    assert "f32 ?x? (one compilation): " in text
    assert "![Every shape](shape_sweep.png)" in text


def test_polybench_section(report):
    """The suite at MINI on experiments.polybench.TEST_KERNELS: every build checked and timed,
    the table, the summary and the chart."""
    out, _ = report
    suite = json.loads((out / "results.json").read_text())["experiments"]["polybench"]
    assert suite["dataset"] == "MINI" and suite["errors"] == []
    assert [k["kernel"] for k in suite["kernels"]] == ["gemm", "atax", "jacobi-1d"]
    for k in suite["kernels"]:
        for label, b in k["builds"].items():
            assert b["error"] == "" and b["timing"]["reps"] == 1, (k["kernel"], label)
            assert b["max_rel_error"] <= k["tolerance"]
    text = (out / "report.md").read_text()
    assert "## 6. PolyBench/C 4.2 (issue 14)" in text
    assert "| kernel | sizes | polyopt ms | --hopt ms | clang -O3 ms | Polly ms |" in text
    assert "| gemm | NI=20 NJ=25 NK=30 |" in text and "| **geomean** |" in text
    assert "- PolyBench/C 4.2 (MINI, 3 kernels, one thread): polyopt --hopt geomean **" in text


def test_by_cpu_section(report, monkeypatch):
    """Section 7: this run's rows filed under this CPU's signature in the report folder's
    by_cpu.json (tests mode leaves the kept table alone), and the table in report.md."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")   # experiments.* check numpy's pin
    from experiments import by_cpu
    out, _ = report
    store = json.loads((out / "by_cpu.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert results["by_cpu"] == store
    signature = by_cpu.cpu_identity()["signature"]
    rows = store["cpus"][signature]["rows"]
    assert {"DGEMM 23x19x17", "SGEMM 21x18x13"} <= set(rows)
    for label in ("DGEMM 23x19x17", "SGEMM 21x18x13"):
        r = rows[label]
        assert r["gflops"] > 0 and 0 < r["fraction_of_peak"] and r["ratio_vs_openblas"] > 0
        assert r["choice"].startswith("M_C=") and r["date"][:4].isdigit()
        assert (r["ratio_vs_torch"] is not None) == TORCH
    if by_cpu.BY_CPU_FILE.exists():
        assert "DGEMM 23x19x17" not in by_cpu.BY_CPU_FILE.read_text()
    text = (out / "report.md").read_text()
    assert f"## 7. {by_cpu.TITLE}" in text
    assert "| CPU | signature | workload | the model's choice |" in text
    assert f"| `{signature}` |" in text     # on the CPU's first row (kept rows sort first)
    assert "| DGEMM 23x19x17 |" in text and "| SGEMM 21x18x13 |" in text


def test_machine_json(report):
    out, _ = report
    machine = json.loads((out / "machine.json").read_text())
    assert machine["cpu"]["flags"] and machine["caches"]
    assert machine["peak"]["f64"]["gflops"] > 0 and machine["peak"]["f32"]["gflops"] > 0
    assert "openblas" in machine["software"]["blas"].lower()
    assert len(machine["git"]["commit"]) == 40 and isinstance(machine["git"]["dirty"], bool)
    assert machine["target"]["vector_bits"] in (128, 256, 512)


def test_rejects_nonsense_reps(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.report", "--reps", "0",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "--reps must be at least 1, got 0" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_ab_tiles_times_each_variant_against_numpy():
    proc = subprocess.run([sys.executable, "-m", "experiments.ab_tiles", "17", "31", "5", "f64",
                           "", "M_R = 2 : i32, N_R = 8 : i32", "--reps", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("17x31x5 f64, medians of 1 alternating runs")
    assert lines[1].split()[0] == "numpy"
    assert lines[2].startswith("  (the model's tiles)") and lines[2].endswith("x numpy")
    assert lines[3].startswith("  M_R = 2 : i32, N_R = 8 : i32") and len(lines) == 4


def test_ab_tiles_reports_a_bad_variant_without_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "experiments.ab_tiles", "17", "31", "5", "f64",
                           "M_R = x", "--reps", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("<variant>:2:") and ": error: " in proc.stderr.splitlines()[0]


def test_low_precision_section(report):
    """Low precision (issue 21) at experiments.low_precision.TEST_SIZES: every type checked and
    timed beside polyopt's SGEMM and numpy's f32 matmul (and torch's when installed); the
    table names the engine; the chart."""
    out, _ = report
    exp = json.loads((out / "results.json").read_text())["experiments"]["low_precision"]
    records = exp["records"]
    assert [(r["m"], r["n"], r["k"], r["kind"]) for r in records] == [
        (24, 20, 16, kind) for kind in ("bf16", "i8", "u8", "f16")]
    for r in records:
        assert r["polyopt"] > 0 and r["sgemm"] > 0 and r["numpy_f32"] > 0 and r["engine"]
        assert (r["torch"] is not None) == _torch_importable()
    text = (out / "report.md").read_text()
    assert "## 9. Low precision: bf16, int8 and f16 on the CPU's dot engine (one thread)" in text
    assert "| size | type | engine | polyopt |" in text
    assert "![Low precision](low_precision.png)" in text


def test_tuning_section(report):
    """Autotuning (issue 18) at experiments.tuning.TEST_SIZE: trial 1 is the model's choice,
    every trial timed or failed with its reason; the table, the best pipeline, the chart."""
    out, _ = report
    exp = json.loads((out / "results.json").read_text())["experiments"]["tuning"]
    assert (exp["m"], exp["n"], exp["k"], exp["dtype"]) == (24, 20, 16, "f64")
    trials = exp["trials"]
    assert len(trials) == 2 and trials[0]["params"] == {} and trials[0]["gflops"] > 0
    assert all(t["gflops"] or t["error"] for t in trials)
    assert exp["best_pipeline"].startswith("builtin.module(")
    text = (out / "report.md").read_text()
    assert "## 10. Autotuning: the BLIS parameters searched by timing (one thread)" in text
    assert "| model's choice (trial 1) |" in text and "![Autotuning](tuning.png)" in text


def test_threads_section(report):
    """Every core (issue 15): polyopt on one and two threads and numpy on two, in a process of
    its own (the report's numpy is pinned to one thread), both types, checked results; the
    section's table and the summary's line."""
    out, _ = report
    team = json.loads((out / "results.json").read_text())["experiments"]["threads"]
    assert team["threads"] == 2 and team["reps"] == 1
    records = team["records"]
    assert [(r["m"], r["n"], r["k"], r["dtype"]) for r in records] == [
        (24, 20, 16, "f64"), (24, 20, 16, "f32")]
    for r in records:
        assert min(r["polyopt_1"], r["polyopt"], r["numpy"], r["numpy_1"]) > 0
        assert r["max_abs_error"] < 1e-3 and "2 thread" in r["blas"]
    text = (out / "report.md").read_text()
    assert "## 11. Every core: polyopt on one and two threads, numpy on two (issue 15)" in text
    assert ("| size | type | polyopt, 1 thread (GFLOPS) | polyopt, 2 threads | scaling | "
            "numpy, 1 thread | numpy, 2 threads | polyopt vs numpy on 2 |") in text
    assert "- 2 threads: f64 24x20x16 " in text
