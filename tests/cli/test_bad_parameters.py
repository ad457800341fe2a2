"""Nonsensical parameters, flags and environments get one ``error:`` line and exit status 1
(located where the input has a place): never an internal error, a crash or a hang.  Each case
is one an error-fuzzing pass over the CLI found failing (2026-11-28)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import polyopt
from polyopt.cli import main

MATMUL = """func.func @mm(%A: memref<16x12xf64>, %B: memref<12x8xf64>, %C: memref<16x8xf64>) {
  hop.matmul %A, %B, %C : (memref<16x12xf64>, memref<12x8xf64>, memref<16x8xf64>)
  return
}
"""


@pytest.fixture
def matmul_file(tmp_path):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    return str(path)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@pytest.mark.parametrize("argv, message", [
    (["bench", "matmul", "--dtype", "f128"], "argument --dtype: invalid choice: 'f128'"),
    (["translate", "-O", "7", "x.mlir"], "argument -O: invalid choice: 7"),
    (["opt", "--frobnicate", "x.mlir"], "unrecognized arguments: --frobnicate"),
    (["bench", "matmul", "--threads", "abc"], "argument --threads: invalid int value: 'abc'"),
])
def test_a_bad_flag_is_one_line_and_status_1(capsys, argv, message):
    """argparse's own convention was the whole usage block and status 2."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 1
    assert message in one_error_line(capsys)


def test_a_team_past_the_limit_is_refused_before_torch_sees_it(capsys, matmul_file):
    """--threads 100000 reached torch.set_num_threads in bench, which crashed the process."""
    assert main(["bench", "matmul", "--m", "8", "--n", "8", "--k", "8", "--threads", "100000",
                 "--reps", "1"]) == 1
    assert "threads must be at most 1024, got 100000" in one_error_line(capsys)
    assert main(["translate", "--threads", "5000", matmul_file]) == 1
    assert "threads must be at most 1024" in one_error_line(capsys)


@pytest.mark.parametrize("command", ["run", "translate"])
def test_a_bad_omp_num_threads_is_an_error_where_it_is_read(monkeypatch, capsys, tmp_path,
                                                            command):
    path = tmp_path / "main.mlir"
    path.write_text("func.func @main() {\n  return\n}\n")
    monkeypatch.setenv("OMP_NUM_THREADS", "abc")
    assert main([command, str(path)]) == 1
    assert "OMP_NUM_THREADS must be an integer from 1 to 1024, got 'abc'" in \
        one_error_line(capsys)


@pytest.mark.parametrize("result", ["memref<4xf64>", "vector<4xf64>"])
def test_run_refuses_an_entry_whose_result_numpy_cannot_hold(tmp_path, capsys, result):
    path = tmp_path / "main.mlir"
    value = "%A = memref.alloc() : memref<4xf64>" if result.startswith("memref") else \
        "%A = arith.constant dense<1.0> : vector<4xf64>"
    path.write_text(f"func.func @main() -> {result} {{\n  {value}\n  return %A : {result}\n}}\n")
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:1: error: entry function '@main' cannot be run: result #0")
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["opt", "-p", "hopt{mr=64 nr=64 copy=true unroll=true}"],
     "the register tile M_R x N_R = 64 x 64 must have at most 1024 elements"),
    (["opt", "-p", "hopt{mc=99999999999999999999999}"], "M_C must be at most 1073741824"),
    (["opt", "-p", "hopt{blis-kernel=x}"], "hopt: --hopt-blis-kernel needs --hopt-blis"),
])
def test_pass_options_past_what_can_be_generated(capsys, matmul_file, argv, message):
    """64 x 64 took 52 s to compile a 16x8x12 product, 256 x 256 never finished."""
    assert main(argv + [matmul_file]) == 1
    assert message in one_error_line(capsys)


@pytest.mark.parametrize("flags, message", [
    (["--mr", "1000", "--nr", "1000"], "M_R x N_R = 1000 x 1000 must have at most 1024"),
    (["--ku", "1000"], "K_U must be at most 64, got 1000"),
])
def test_bench_tile_flags_past_what_can_be_generated(flags, message):
    # (in a process of its own: bench pins numpy's threads before importing it)
    proc = subprocess.run([sys.executable, "-m", "polyopt", "bench", "matmul", "--m", "8",
                           "--n", "8", "--k", "8", "--reps", "1", "--threads", "1", *flags],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


def test_a_register_tile_attribute_past_the_limit_is_located(tmp_path, capsys):
    path = tmp_path / "tile.mlir"
    path.write_text(MATMUL.replace("hop.matmul %A, %B, %C :",
                                   "hop.matmul %A, %B, %C {M_R = 100 : i32, N_R = 100 : i32} :"))
    assert main(["opt", "--hopt", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: 'hop.matmul' op the register tile M_R x N_R "
                          f"= 100 x 100 must have at most 1024 elements")


def test_tune_refuses_a_script(tmp_path, capsys, matmul_file):
    """tune searched as if --script were not there."""
    script = tmp_path / "s.mlir"
    script.write_text("module attributes {transform.with_named_sequence} {}\n")
    assert main(["tune", "--script", str(script), matmul_file]) == 1
    assert "--script does not go with tune" in one_error_line(capsys)


def test_a_dask_address_that_does_not_parse(capsys, matmul_file):
    pytest.importorskip("distributed")
    assert main(["tune", "--no-progress", "--no-cache", "--hopt", "--budget", "1",
                 "--scheduler", "nonsense:::", matmul_file]) == 1
    assert "--scheduler: cannot reach the Dask scheduler at nonsense:::" in \
        one_error_line(capsys)


def test_caches_of_the_wrong_shape_are_measured_again(monkeypatch, tmp_path, capsys,
                                                      matmul_file):
    """Valid JSON that is no cache of ours (a list; measurements edited away) broke every
    command that reads the target cache, and tune's."""
    from polyopt.codegen import microbench
    from polyopt.codegen.cpu_facts import host_facts as host_cpu_facts
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = microbench.cache_path(host_cpu_facts())
    (tmp_path / "polyopt").mkdir()
    for content in ([1, 2], {"version": microbench.MICROBENCH_VERSION,
                             "signature": host_cpu_facts().signature,
                             "measurements": {"measured": True, "clock_ghz": None, "fma": {}}}):
        with open(path, "w") as f:
            json.dump(content, f)
        assert microbench._read_cache(host_cpu_facts()) is None
    tune_cache = tmp_path / "tune.json"
    tune_cache.write_text("[1]")
    assert main(["tune", "--no-progress", "--hopt", "--budget", "1", "--cache",
                 str(tune_cache), matmul_file]) == 0
    assert isinstance(json.loads(tune_cache.read_text()), dict)


def test_an_allocation_that_fails_ends_with_a_message_not_a_crash(tmp_path):
    """aligned_alloc's NULL was written through (a segmentation fault)."""
    path = tmp_path / "huge.mlir"
    n = 125_000_000_000_000                  # 10^15 bytes of f64
    path.write_text(f"""func.func @main() {{
  %A = memref.alloc() : memref<{n}xf64>
  %c = arith.constant 1.0 : f64
  %i = arith.constant 7 : index
  memref.store %c, %A[%i] : memref<{n}xf64>
  memref.dealloc %A : memref<{n}xf64>
  return
}}
""")
    proc = subprocess.run([sys.executable, "-m", "polyopt", "run", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "polyopt: error: out of memory: an allocation of 1000000000000000 bytes failed" \
        in proc.stderr


ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m, n, k", [(0, 5, 3), (4, 0, 3), (4, 5, 0)])
def test_an_empty_dimension_is_no_product_to_tile(threads, m, n, k):
    """The BLIS model divided by K = 0 and took max() of no N_R; beta still scales C."""
    src = (f"func.func @mm(%A: memref<{m}x{k}xf64>, %B: memref<{k}x{n}xf64>, "
           f"%C: memref<{m}x{n}xf64>) {{\n  hop.matmul %A, %B, %C {{beta = 2.0 : f64}} : "
           f"(memref<{m}x{k}xf64>, memref<{k}x{n}xf64>, memref<{m}x{n}xf64>)\n  return\n}}\n")
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                         **ALL)["mm"]
    c = np.full((m, n), 3.0)
    fn(np.ones((m, k)), np.ones((k, n)), c)
    np.testing.assert_array_equal(c, np.full((m, n), 6.0))
    assert any("has an empty dimension" in r for r in remarks), remarks


def test_an_empty_dimension_in_low_precision_and_convolutions():
    import ml_dtypes
    src = """func.func @mm(%A: memref<4x0xbf16>, %B: memref<0x32xbf16>, %C: memref<4x32xf32>) {
  hop.matmul %A, %B, %C : (memref<4x0xbf16>, memref<0x32xbf16>, memref<4x32xf32>)
  return
}"""
    c = np.ones((4, 32), np.float32)
    polyopt.compile(src, **ALL)["mm"](np.ones((4, 0), ml_dtypes.bfloat16),
                                      np.ones((0, 32), ml_dtypes.bfloat16), c)
    assert (c == 1).all()
    conv = """func.func @conv(%I: memref<1x8x8x0xf32>, %K: memref<3x3x0x4xf32>,
                          %O: memref<1x6x6x4xf32>) {
  hop.conv2d %I, %K, %O {strides = [1, 1], dilations = [1, 1]} :
    (memref<1x8x8x0xf32>, memref<3x3x0x4xf32>, memref<1x6x6x4xf32>)
  return
}"""
    o = np.ones((1, 6, 6, 4), np.float32)
    polyopt.compile(conv, **ALL)["conv"](np.ones((1, 8, 8, 0), np.float32),
                                         np.ones((3, 3, 0, 4), np.float32), o)
    assert (o == 1).all()


@pytest.mark.parametrize("argv, message", [
    (["conv2d", "--resnet50", "--h", "5"], "--resnet50 times its own layers: drop --h"),
    (["conv2d", "--epilogue", ","], "--epilogue: no op given"),
    (["conv2d", "--epilogue", "bias,bias"], "--epilogue: an op given twice"),
    (["conv2d", "--layout", "nchw", "--epilogue", "relu"],
     "--epilogue and --dtype bf16 time the NHWC convolution: drop --layout nchw"),
    (["matmul", "--sweep", "--shapes", ""], "--shapes: no shape given"),
    (["polybench", "--kernels", ""], "--kernels: no kernel named"),
    (["matmul", "--no-hopt", "--mc", "4"], "--mc applies to the BLIS nest --hopt generates"),
    (["matmul", "--no-hopt", "--form", "col", "--schedule", "(d0, d1, d2) -> (d0, d1, d2)"],
     "--form, --schedule apply to the BLIS nest --hopt generates"),
])
def test_bench_flags_that_were_ignored(argv, message):
    """Each ran something other than what was asked (the ResNet layers, no epilogue, the
    default sweep, all twenty kernels)."""
    proc = subprocess.run([sys.executable, "-m", "polyopt", "bench", *argv, "--threads", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


def test_func_without_a_schedule_is_refused(capsys, matmul_file):
    """``opt --func`` only says which function ``--schedule`` applies to; alone it was
    ignored and the whole module printed."""
    assert main(["opt", matmul_file, "--func", "mm"]) == 1
    assert "--func names the function --schedule applies to" in one_error_line(capsys)
