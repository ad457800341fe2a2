"""polyopt bench / peak: the harness runs, checks results and reports what it measured
(speed itself is measured by running the benchmark, never asserted here)."""

import json
import re
import subprocess
import sys


def _run(*args):
    return subprocess.run([sys.executable, "-m", "polyopt", *args], capture_output=True,
                          text=True, timeout=300)


def test_bench_matmul_json_reports_both_sides():
    proc = _run("bench", "matmul", "--m", "17", "--n", "31", "--k", "5", "--reps", "2",
                "--hopt-copy", "--hopt-unroll", "--hopt-scalrep", "--hopt-vect", "--json",
                "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert (result["m"], result["n"], result["k"], result["dtype"]) == (17, 31, 5, "f64")
    (variant,) = result["variants"]
    assert variant["switches"] == {"hopt": True, "copy": True, "unroll": True,
                                   "scalrep": True, "vect": True, "blis": False, "parallel": False,
                                   "threads": 1}
    assert result["threads"] == 1
    assert variant["timing"]["reps"] == 2 and variant["max_abs_error"] < 1e-12
    assert variant["gflops"] > 0 and result["numpy_gflops"] > 0 and result["peak_gflops"] > 0
    assert "openblas" in result["blas"].lower() and "1 thread" in result["blas"]


def test_bench_threads_run_numpy_on_as_many(monkeypatch):
    # --threads N: polyopt compiled for N threads, OpenBLAS loaded with N, and the report says so
    proc = _run("bench", "matmul", "--m", "23", "--n", "19", "--k", "11", "--reps", "1",
                "--hopt-copy", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "polyopt and numpy on 2 threads" in proc.stdout
    assert "2 thread(s)" in proc.stdout     # threadpoolctl's view of numpy's OpenBLAS
    # the peak is the team's: one core's FMA loop times the cores the threads run on
    assert "GFLOPS on 2 cores" in proc.stdout
    # OpenBLAS runs at most one thread per core (2 here): the report says so
    proc = _run("bench", "matmul", "--m", "23", "--n", "19", "--k", "11", "--reps", "1",
                "--threads", "3")
    assert proc.returncode == 0, proc.stderr
    import os
    cores = len(os.sched_getaffinity(0))
    if cores < 3:
        assert f"polyopt on 3 threads, numpy's BLAS on {cores} thread" in proc.stdout
    else:
        assert "polyopt and numpy on 3 threads" in proc.stdout
    proc = _run("bench", "conv2d", "--h", "9", "--w", "8", "--c", "5", "--f", "7", "--reps",
                "1", "--threads", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["threads"] == 2 and "2 thread(s)" in result["blas"]
    monkeypatch.setenv("OMP_NUM_THREADS", "2")   # the default follows OMP_NUM_THREADS
    proc = _run("bench", "matmul", "--m", "5", "--n", "6", "--k", "7", "--reps", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["threads"] == 2 and result["variants"][0]["switches"]["threads"] == 2
    # the --steps ladder runs on one thread and gains a row on the team
    proc = _run("bench", "matmul", "--m", "9", "--n", "20", "--k", "7", "--reps", "1",
                "--steps", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert any(line.strip().startswith("+2 threads") for line in proc.stdout.splitlines())
    proc = _run("bench", "matmul", "--threads", "0")
    assert proc.returncode == 1
    assert proc.stderr.startswith("polyopt: error: threads must be a positive integer")


def test_bench_steps_table(tmp_path):
    proc = _run("bench", "matmul", "--m", "9", "--n", "20", "--k", "7", "--reps", "1",
                "--steps", "--dtype", "f32")
    assert proc.returncode == 0, proc.stderr
    labels = ["naive", "tiling (2.5)", "BLIS tiling", "+packing", "+unroll-jam+scalrep",
              "+vectorization", "numpy (OpenBLAS)"]
    lines = proc.stdout.splitlines()
    assert [next(l for l in lines if l.strip().startswith(lab)) for lab in labels]


def test_bench_rejects_nonsense():
    proc = _run("bench", "matmul", "--m", "0")
    assert proc.returncode == 1 and proc.stderr.startswith("polyopt: error: matrix sizes must be")
    proc = _run("bench", "matmul", "--mr", "0", "--m", "4")
    assert proc.returncode == 1 and "--mr must be positive, got 0" in proc.stderr


def test_peak():
    proc = _run("peak", "--dtype", "f64", "--reps", "1")
    assert proc.returncode == 0, proc.stderr
    assert "f64:" in proc.stdout and "GFLOPS" in proc.stdout


def test_no_llvm_vectorize_leaves_vectors_to_polyopt():
    """--no-llvm-vectorize: no vector FMAs unless --hopt-vect made them (the paper's setting)."""
    base = ("translate", "--emit", "asm", "--hopt", "--hopt-copy", "--hopt-unroll",
            "--hopt-scalrep", "examples/hop_matmul.mlir")
    scalar = _run(*base, "--no-llvm-vectorize")
    vector = _run(*base, "--no-llvm-vectorize", "--hopt-vect")
    auto = _run(*base)
    assert scalar.returncode == vector.returncode == auto.returncode == 0
    packed_fma = ("vfmadd231pd\t%ymm", "vfmadd231pd\t%zmm")
    assert not any(f in scalar.stdout for f in packed_fma)
    assert any(f in vector.stdout for f in packed_fma)
    assert any(f in auto.stdout for f in packed_fma)   # LLVM 22's SLP vectorizer, by itself
    proc = _run("bench", "matmul", "--m", "9", "--n", "20", "--k", "7", "--reps", "1",
                "--no-llvm-vectorize")
    assert proc.returncode == 0, proc.stderr
    assert "LLVM's loop/SLP vectorizers off for: polyopt --hopt" in proc.stdout


def test_bench_conv2d_json_and_errors():
    proc = _run("bench", "conv2d", "--h", "9", "--w", "10", "--c", "8", "--f", "12",
                "--stride", "2", "--reps", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["shape"]["stride"] == 2 and result["max_abs_error"] < 1e-3
    assert result["polyopt_gflops"] > 0 and result["numpy_gflops"] > 0
    assert "torch_note" in result
    proc = _run("bench", "conv2d", "--h", "2", "--kh", "3")
    assert proc.returncode == 1
    assert proc.stderr.startswith("polyopt: error: the (dilated) window is larger")
    proc = _run("bench", "conv2d", "--c", "0")
    assert proc.returncode == 1 and "must be positive" in proc.stderr


def test_bench_sweep_table_and_json():
    proc = _run("bench", "matmul", "--sweep", "--shapes", "5x7x3,1x33x17,19x1x23",
                "--samples", "1", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| shape (M x N x K) | kind | f64 vs numpy")
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| 5x7x3", "| 1x33x17", "| 19x1x23"]
    assert "f32: " in proc.stdout and "points at 1.0x numpy or better" in proc.stdout
    proc = _run("bench", "matmul", "--sweep", "--shapes", "1x33x17", "--samples", "2",
                "--dtype", "f32", "--json", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)
    assert (point["m"], point["n"], point["k"], point["dtype"]) == (1, 33, 17, "f32")
    assert point["ratio_min"] <= point["ratio"] <= point["ratio_max"]
    assert point["gflops"] > 0 and point["numpy_gflops"] > 0 and point["max_error"] < 1e-3


def test_bench_sweep_rejects_nonsense():
    for args, message in ((["--shapes", "5x7"], "--shapes: expected MxNxK, got '5x7'"),
                          (["--shapes", "5x0x3"], "matrix sizes must be positive"),
                          (["--samples", "0"], "--samples must be at least 1"),
                          (["--mr", "4"], "--sweep times the model's default")):
        proc = _run("bench", "matmul", "--sweep", *args)
        assert proc.returncode == 1 and proc.stderr.startswith("polyopt: error:"), proc.stderr
        assert message in proc.stderr, proc.stderr
    proc = _run("bench", "matmul", "--shapes", "5x7x3")
    assert proc.returncode == 1 and "--shapes goes with --sweep" in proc.stderr
    proc = _run("bench", "matmul", "--dynamic")
    assert proc.returncode == 1 and "--dynamic goes with --sweep" in proc.stderr


def test_bench_sweep_dynamic_times_one_function_of_any_size():
    proc = _run("bench", "matmul", "--sweep", "--dynamic", "--shapes", "5x7x3,1x33x17",
                "--samples", "1", "--dtype", "f64", "--threads", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)
    assert all(p["dynamic_ratio"] > 0 and p["dynamic_vs_static"] > 0 for p in points)
    proc = _run("bench", "matmul", "--sweep", "--dynamic", "--shapes", "5x7x3",
                "--samples", "1", "--dtype", "f32", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert "f32 ?x? vs numpy | f32 ?x? vs static" in proc.stdout
    assert "f32 ?x? (one compilation): " in proc.stdout


def test_bench_low_precision_rows():
    """--dtype bf16/i8/u8/f16: the engine named, polyopt's own SGEMM and numpy's f32 matmul
    timed beside it (torch's matmul of the type too when torch is installed)."""
    for dtype, engine in (("bf16", "engine: "), ("i8", "engine: "), ("u8", "engine: "),
                          ("f16", "engine: ")):
        proc = _run("bench", "matmul", "--dtype", dtype, "--m", "37", "--n", "40", "--k", "33",
                    "--reps", "1", "--threads", "1")
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert engine in out and "polyopt SGEMM (f32, same shape)" in out
        assert "numpy f32 matmul (converted)" in out and "torch: " in out
    proc = _run("bench", "matmul", "--dtype", "bf16", "--mr", "4", "--m", "8")
    assert proc.returncode == 1 and "drop --steps" in proc.stderr


def test_bench_batch_matmul_rows():
    proc = _run("bench", "batch-matmul", "--batch", "3", "--m", "17", "--n", "20", "--k", "9",
                "--reps", "1", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "batch_matmul 3 x (17x20x9) f32" in proc.stdout
    assert "numpy matmul, loop over batch" in proc.stdout and "torch: " in proc.stdout
    assert "(its loop timed among them)" in proc.stdout and "of peak" in proc.stdout
    proc = _run("bench", "batch-matmul", "--batch", "0")
    assert proc.returncode == 1 and "sizes must be positive" in proc.stderr
    proc = _run("bench", "batch-matmul", "--batch", "3", "--m", "17", "--n", "20", "--k", "9",
                "--reps", "1", "--threads", "1", "--shared-b")
    assert proc.returncode == 0, proc.stderr
    assert "C[b] = A[b] * B (one B)" in proc.stdout and "polyopt hop.matmul" in proc.stdout
    assert "numpy matmul (broadcast B)" in proc.stdout


def test_bench_softmax_rows():
    proc = _run("bench", "softmax", "--rows", "5", "--n", "37", "--reps", "1", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "softmax 5x37 f32 along the rows" in proc.stdout
    assert "5 rows of 37 as vectors of" in proc.stdout
    assert "numpy max, exp, sum, divide" in proc.stdout and "torch: " in proc.stdout
    proc = _run("bench", "softmax", "--rows", "0")
    assert proc.returncode == 1 and "sizes must be positive" in proc.stderr
    proc = _run("bench", "softmax", "--rows", "41", "--n", "37", "--dim", "0", "--reps", "1",
                "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert "softmax 41x37 f32 along the columns (dimension 0)" in proc.stdout
    assert "37 columns of 41 (dimension 0) as vectors of" in proc.stdout
    proc = _run("bench", "softmax", "--dim", "2")
    assert proc.returncode == 1 and "dim must be 0 (the columns) or 1 (the rows)" in proc.stderr


def test_bench_depthwise_rows():
    proc = _run("bench", "depthwise", "--c", "5", "--oh", "9", "--ow", "11", "--stride", "2",
                "--reps", "1", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "depthwise convolution NCHW, 3x3, f32, batch 1" in proc.stdout
    assert re.search(r"5 x   9x11  /2 .* vector rows", proc.stdout), proc.stdout
    proc = _run("bench", "depthwise", "--c", "20", "--oh", "6", "--ow", "7", "--layout", "nhwc",
                "--reps", "1", "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert "depthwise convolution NHWC" in proc.stdout and "channels_last" in proc.stdout
    assert re.search(r"20 x   6x7   /1 .* blocked channels", proc.stdout), proc.stdout
    proc = _run("bench", "depthwise", "--stride", "0")
    assert proc.returncode == 1 and "must be positive" in proc.stderr


def test_bench_depthwise_with_mobilenets_epilogue():
    """--epilogue bias,relu6: every contender applies it (checked before timing); polyopt
    fused and in a called function."""
    for layout, form in (("nchw", "vector rows"), ("nhwc", "blocked channels")):
        proc = _run("bench", "depthwise", "--c", "7", "--oh", "5", "--ow", "9", "--layout",
                    layout, "--epilogue", "bias,relu6", "--reps", "1", "--threads", "1")
        assert proc.returncode == 0, proc.stderr
        assert "then bias+relu6" in proc.stdout and "vs unfused" in proc.stdout
        assert re.search(rf"7 x   5x9   /1 .*x .*x .*x  {form}, bias\+relu6 fused",
                         proc.stdout), proc.stdout
    for bad, why in (("gelu", "unknown 'gelu'"), ("relu,relu6", "one activation"),
                     (",", "no op given")):
        proc = _run("bench", "depthwise", "--c", "4", "--epilogue", bad)
        assert proc.returncode == 1 and why in proc.stderr, proc.stderr


def test_bench_conv2d_bf16_epilogue():
    """--dtype bf16 --epilogue bias,relu: the convolution with its epilogue fused, unfused (in
    a called function) and torch's conv2d(bias) + relu, checked before timing, on the threads
    --threads asks for."""
    proc = _run("bench", "conv2d", "--h", "9", "--w", "10", "--c", "8", "--f", "12", "--reps",
                "1", "--dtype", "bf16", "--epilogue", "bias,relu", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "bf16 (f32 output) + bias+relu" in proc.stdout and "(fused)" in proc.stdout
    assert "alternating runs, 2 threads" in proc.stdout
    assert "polyopt, epilogue in a called function" in proc.stdout
    assert "of peak" not in proc.stdout       # bf16 runs on other units than the FMA loop's
    proc = _run("bench", "conv2d", "--h", "9", "--w", "10", "--c", "8", "--f", "12", "--reps",
                "1", "--epilogue", "gelu")
    assert proc.returncode == 1 and "unknown epilogue 'gelu'" in proc.stderr


def test_bench_conv2d_in_pytorchs_layout():
    """--layout nchw: linalg.conv_2d_nchw_fchw on NCHW arrays (checked against numpy before it
    is timed), torch on its default NCHW tensors."""
    proc = _run("bench", "conv2d", "--h", "9", "--w", "10", "--c", "5", "--f", "7",
                "--stride", "2", "--reps", "1", "--threads", "1", "--layout", "nchw", "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["layout"] == "nchw" and result["max_abs_error"] < 1e-4
    proc = _run("bench", "conv2d", "--h", "9", "--w", "10", "--c", "5", "--f", "7",
                "--reps", "1", "--threads", "1", "--layout", "nchw")
    assert proc.returncode == 0, proc.stderr
    assert "as linalg.conv_2d_nchw_fchw on NCHW arrays" in proc.stdout
