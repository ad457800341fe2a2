"""``--hopt --hopt-blis`` (paper section 2.12, issue 6): tiling and packing by polyopt, the
M_R x N_R x K_C nest replaced by a call to BLIS's hand-written micro-kernel.  Golden IR for the
paper's example, accepted by mlir-opt-22; execution against numpy for every registered kernel
this CPU runs, on the paper's size, awkward sizes and a hypothesis sweep; clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.diagnostics import CodegenError, ScheduleError
from polyopt.codegen import microkernels
from polyopt.codegen.target import host_target

from test_hopt_copy import check_golden, matmul_text  # noqa: E402
from matmul_check import check_matmul  # noqa: E402
from upstream_mlir import mlir_opt

ROOT = Path(__file__).resolve().parents[2]
HASWELL = "bli_dgemm_haswell_asm_6x8"

def runnable_kernels():
    """Registered kernels this CPU has the instructions for (at least the AVX2 ones on any
    machine CI runs on: the test fails, not skips, if there are none)."""
    kernels = [k for k in microkernels.REGISTRY
               if not microkernels.missing_features(k, host_target())]
    assert kernels, "no registered BLIS micro-kernel runs on this CPU"
    return kernels


def run_blis(m, n, k, t, kernel=None, attrs="", seed=0):
    compiled = polyopt.compile(matmul_text(m, n, k, t, attrs), hopt=True, blis=True,
                               blis_kernel=kernel)
    check_matmul(compiled["matmul"], m, n, k, t, seed)
    return compiled


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "polyopt", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


# ---------------------------------------------------------------------------------------------
# the IR


def test_paper_section_2_12_golden():
    """The paper's section 2.12 listing: A packed into memref<29x512x6xf64> (M_C = 174,
    K_C = 512, the kernel's M_R = 6), B into memref<512x8xf64>, and the call in place of the
    tile's nest, one per 6x8 tile of C."""
    proc = _cli("opt", "--hopt", "--hopt-blis", "--hopt-blis-kernel", HASWELL,
                "examples/paper_2.12_blis.mlir")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    check_golden("hopt_blis_paper_2_12.mlir", text)
    assert "memref.alloc() {alignment = 64 : i64} : memref<29x512x6xf64>" in text
    assert "memref.alloc() {alignment = 64 : i64} : memref<512x8xf64>" in text
    assert f"call @polyopt_{HASWELL}(%alloc, " in text
    assert f'attributes {{polyopt.blis_kernel = "{HASWELL}"}}' in text
    assert "arith.mulf" not in text and "affine.vector_load" not in text


def test_paper_golden_is_accepted_by_mlir_opt():
    mlir_opt((Path(__file__).parent / "golden" / "hopt_blis_paper_2_12.mlir").read_text())


# ---------------------------------------------------------------------------------------------
# execution


@pytest.mark.parametrize("m, n, k", [(1000, 1000, 1000), (17, 31, 5), (2, 2, 2), (61, 9, 300)])
@pytest.mark.parametrize("t", ["f64", "f32"])
def test_default_kernel_matches_numpy(m, n, k, t):
    run_blis(m, n, k, t)


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_paper_size(t):
    run_blis(2088, 2048, 2048, t)


@pytest.mark.parametrize("kernel", [k.symbol for k in microkernels.REGISTRY])
def test_every_runnable_kernel(kernel):
    spec = microkernels.lookup(kernel)
    if spec not in runnable_kernels():
        with pytest.raises(CodegenError, match="needs a CPU with"):
            run_blis(40, 40, 40, spec.dtype, kernel=kernel)
        return
    for m, n, k in [(40, 40, 40), (spec.m_r, spec.n_r, 1), (spec.m_r + 1, spec.n_r - 1, 33),
                    (300, 257, 129)]:
        run_blis(m, n, k, spec.dtype, kernel=kernel)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(2, 150), n=st.integers(2, 150), k=st.integers(2, 150),
       mc_tiles=st.integers(1, 4), kc=st.sampled_from([8, 16, 64, 100]),
       t=st.sampled_from(["f64", "f32"]), seed=st.integers(0, 2 ** 16))
def test_hypothesis_sizes(m, n, k, mc_tiles, kc, t, seed):
    kernel = microkernels.default_kernel(t, host_target())
    mc = mc_tiles * kernel.m_r
    run_blis(m, n, k, t, attrs=f"M_C = {mc} : i32, K_C = {kc} : i32", seed=seed)


def test_transposed_and_strided_c():
    """C with a leading dimension larger than N (strided layout) and a transposed B."""
    m, n, k = 37, 29, 41
    tc = f"memref<{m}x{n}xf64, strided<[{n + 7}, 1]>>"
    tb = f"memref<{k}x{n}xf64, affine_map<(d0, d1) -> (d1, d0)>>"
    text = matmul_text(m, n, k, types=(f"memref<{m}x{k}xf64>", tb, tc))
    compiled = polyopt.compile(text, hopt=True, blis=True)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (m, k))
    b_phys = rng.uniform(-1, 1, (n, k))          # B's physical storage is B^T
    c_phys = rng.uniform(-1, 1, (m, n + 7))
    expected = c_phys.copy()
    expected[:, :n] += a @ b_phys.T
    compiled["matmul"](a, b_phys, c_phys)
    np.testing.assert_allclose(c_phys, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# errors


def test_conflicting_register_tile_is_an_error():
    with pytest.raises(ScheduleError, match="M_R = 4 conflicts with the micro-kernel"):
        polyopt.compile(matmul_text(64, 64, 64, attrs="M_R = 4 : i32"), hopt=True, blis=True,
                        blis_kernel=HASWELL)


def test_unknown_and_mismatched_kernels():
    with pytest.raises(CodegenError, match="unknown BLIS micro-kernel 'bli_nope'"):
        polyopt.compile(matmul_text(8, 8, 8), hopt=True, blis=True, blis_kernel="bli_nope")
    with pytest.raises(CodegenError, match="computes f64, the matmul is f32"):
        polyopt.compile(matmul_text(8, 8, 8, "f32"), hopt=True, blis=True, blis_kernel=HASWELL)


def test_missing_blis_package_names_what_to_install(monkeypatch):
    monkeypatch.setattr(microkernels, "blis_library_path", lambda: None)
    with pytest.raises(CodegenError) as info:
        polyopt.compile(matmul_text(8, 8, 8), hopt=True, blis=True)
    assert "needs the Python package 'blis'" in str(info.value)
    assert "pip install" in str(info.value) and info.value.loc is not None


def test_cli_errors_point_at_the_op(tmp_path):
    src = tmp_path / "mm.mlir"
    src.write_text(matmul_text(64, 64, 64, attrs="M_R = 4 : i32"))
    proc = _cli("opt", "--hopt", "--hopt-blis", "--hopt-blis-kernel", HASWELL, str(src))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{src}:2:3: error: 'hop.matmul' op: M_R = 4 conflicts")
    assert "Traceback" not in proc.stderr
    proc = _cli("opt", "--hopt-blis-kernel", HASWELL, str(src))
    assert proc.returncode == 1 and "--hopt-blis-kernel needs --hopt-blis" in proc.stderr
    src.write_text(matmul_text(64, 64, 64, attrs="M_C = 7 : i32"))
    proc = _cli("opt", "--hopt", "--hopt-blis", "--hopt-blis-kernel", HASWELL, str(src))
    assert proc.returncode == 1
    assert "M_C = 7 is not a multiple of the micro-kernel " in proc.stderr


@pytest.mark.parametrize("m, n, k", [(1, 20, 30), (20, 1, 30), (20, 30, 1), (1, 1, 1)])
def test_a_dimension_of_one_runs_generated_code(m, n, k):
    seen = []
    polyopt.compile(matmul_text(m, n, k), hopt=True, blis=True,
                    remark=lambda loc, msg: seen.append(msg))
    assert any("generated code instead of the micro-kernel" in s for s in seen)
    run_blis(m, n, k, "f64")
