"""polyopt bench polybench: the harness builds, checks and times the four builds, reports
ratios and a geometric mean, and turns a failing or wrong build into a row with its reason
(speed itself is never asserted here)."""

import json
import math
import subprocess
import sys

import pytest

from polyopt.polybench import harness
from polyopt.polybench.harness import BUILDS, CLANG, HOPT, POLLY, POLYOPT, bench_kernel
from polyopt.polybench.suite import kernel


def _run(*args):
    return subprocess.run([sys.executable, "-m", "polyopt", "bench", "polybench", *args],
                          capture_output=True, text=True, timeout=300)


def test_json_has_every_build_checked_and_timed():
    proc = _run("--kernels", "gemm,jacobi-1d", "--dataset", "MINI", "--reps", "2", "--json",
                "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["dataset"] == "MINI" and result["reps"] == 2
    assert [k["kernel"] for k in result["kernels"]] == ["gemm", "jacobi-1d"]
    assert result["compilers"][POLLY].endswith("-mllvm -polly -mllvm -polly-vectorizer=stripmine")
    for k in result["kernels"]:
        assert set(k["builds"]) == set(BUILDS)
        for b in k["builds"].values():
            assert b["error"] == "", b
            t = b["timing"]
            assert t["reps"] == 2 and 0 < t["minimum"] <= t["median"] <= t["maximum"]
            assert b["max_rel_error"] <= k["tolerance"] and b["compile_time"] > 0
        r = k["ratios"][HOPT]
        assert math.isclose(r["vs_clang"], k["builds"][CLANG]["timing"]["median"]
                            / k["builds"][HOPT]["timing"]["median"])
        assert r["vs_best"] == min(r["vs_clang"], r["vs_polly"])
        assert math.isfinite(k["checksum"])
    g = result["geomean"][HOPT]["vs_clang"]
    ratios = [k["ratios"][HOPT]["vs_clang"] for k in result["kernels"]]
    assert math.isclose(g, math.sqrt(ratios[0] * ratios[1]))


def test_table_rows_and_geomean():
    proc = _run("--kernels", "atax,seidel-2d", "--dataset", "MINI", "--reps", "1")
    assert proc.returncode == 0, proc.stderr
    machine, *lines = proc.stdout.splitlines()   # every bench starts with the machine summary
    assert machine.startswith("machine: ") and "vector registers" in machine
    assert lines[0].startswith("PolyBench/C 4.2, MINI dataset, one thread")
    for name in ("atax", "seidel-2d", "geomean"):
        assert any(line.split()[0] == name for line in lines[2:]), name
    assert "clang -O3: clang-22 -O3 -march=native" in proc.stdout
    assert "polyopt: seidel-2d: timing" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (("--kernels", "gemm,nope"), "--kernels: unknown PolyBench kernel 'nope'"),
    (("--reps", "0"), "--reps must be at least 1, got 0"),
    (("--kernels", ","), "--kernels: no kernel named"),
])
def test_usage_errors(args, message):
    proc = _run(*args)
    assert proc.returncode == 1 and proc.stderr.startswith(f"polyopt: error: {message}")


def test_a_kernel_polyopt_cannot_compile_is_a_row(monkeypatch):
    real = harness.mlir_source
    monkeypatch.setattr(harness, "mlir_source",
                        lambda k, p: real(k, p).replace("arith.mulf", "arith.mulff", 1))
    r = bench_kernel(kernel("gemm"), "MINI", reps=1)
    for label in (POLYOPT, HOPT):
        assert r.builds[label].timing is None
        assert "gemm.mlir:" in r.builds[label].error and "arith.mulff" in r.builds[label].error
    assert r.builds[CLANG].ok and r.builds[POLLY].ok
    assert r.ratio(HOPT, CLANG) is None and r.ratio_vs_best(HOPT) is None
    text = harness.PolybenchResult("MINI", 1, [r]).report()
    assert "failed: polyopt, polyopt --hopt" in text and "errors:" in text


def test_a_wrong_build_is_not_timed(monkeypatch):
    """polyopt computing something else (beta added instead of multiplied) is caught by the
    check against clang and never timed."""
    real = harness.mlir_source
    monkeypatch.setattr(harness, "mlir_source",
                        lambda k, p: real(k, p).replace("%r = arith.mulf %c, %beta",
                                                        "%r = arith.addf %c, %beta"))
    r = bench_kernel(kernel("gemm"), "MINI", reps=1, builds=(CLANG, HOPT))
    assert r.builds[CLANG].ok
    assert r.builds[HOPT].timing is None and r.builds[HOPT].max_rel_error > 1e-3
    assert "arrays differ from clang -O3's" in r.builds[HOPT].error


def test_two_thread_columns_with_polly_parallel_as_peer():
    from polyopt.polybench.harness import HOPT_PAR, POLLY_PAR
    proc = _run("--kernels", "gemm,seidel-2d", "--dataset", "MINI", "--reps", "1", "--json",
                "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["threads"] == 2
    assert result["compilers"][POLLY_PAR].endswith("-mllvm -polly-parallel -fopenmp")
    by_name = {k["kernel"]: k for k in result["kernels"]}
    for k in by_name.values():
        assert set(k["builds"]) == set(BUILDS) | {HOPT_PAR, POLLY_PAR}
        for b in k["builds"].values():
            assert b["error"] == "", b
            assert b["max_rel_error"] <= k["tolerance"]
    # gemm's BLIS nest has a parallel loop; every loop of seidel-2d carries a dependence
    assert by_name["gemm"]["builds"][HOPT_PAR]["parallel"] is True
    assert by_name["seidel-2d"]["builds"][HOPT_PAR]["parallel"] is False
    assert result["geomean"][HOPT_PAR]["kernels"] == ["gemm"]
    proc = _run("--kernels", "gemm", "--dataset", "MINI", "--reps", "1", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert "on 2 threads (OpenMP, libomp)" in proc.stdout


def test_every_build_gets_page_aligned_copies_of_the_initial_values():
    # as PolyBench/C's polybench_alloc_data: numpy alone guarantees 16 bytes, and a vector
    # loop's speed depends on the offset within 32 bytes
    from polyopt.polybench import harness
    import numpy as np
    rng = np.random.default_rng(0)
    values = {"A": rng.uniform(size=(7, 13)), "x": rng.uniform(size=5)[1:], "alpha": 1.5}
    for _ in range(5):
        work = harness._copy(values)
        for name in ("A", "x"):
            assert work[name].ctypes.data % harness.ALIGNMENT == 0
            assert np.array_equal(work[name], values[name]) and work[name].flags.c_contiguous
            assert work[name] is not values[name]
        assert work["alpha"] == 1.5
