"""The C twins: PolyBench's init_array, built by clang-22, gives the values of the numpy
formulas the benchmark uses; the Polly build computes what the clang build computes; a
missing compiler is an error naming the Debian package."""

import numpy as np
import pytest

from polyopt.polybench import ctwin
from polyopt.polybench.init import init_values
from polyopt.polybench.suite import KERNELS, kernel

from conftest import copy_values, odd_sizes, reference, twin
from polyopt.polybench.harness import max_rel_error


# the kernels whose init_array makes A positive semi-definite as B = A*A**T, A = B
A_TIMES_A_TRANSPOSED = {"lu", "cholesky", "ludcmp"}


@pytest.mark.parametrize("name", list(KERNELS))
def test_numpy_init_is_polybench_init(name):
    k = kernel(name)
    for params in (k.params_of("MINI"), k.params_of("SMALL"), odd_sizes(k)):
        theirs = twin(k, params).init()
        ours = init_values(k, params)
        assert set(theirs) == set(ours)
        for arg in k.args:
            if name in A_TIMES_A_TRANSPOSED:   # numpy's matmul sums in its own order
                np.testing.assert_allclose(ours[arg.name], theirs[arg.name], rtol=1e-13)
            else:
                np.testing.assert_array_equal(ours[arg.name], theirs[arg.name],
                                              err_msg=f"{name}: {arg.name} at {params}")


@pytest.mark.parametrize("name", ["gemm", "lu", "correlation", "seidel-2d", "fdtd-2d"])
def test_polly_build_agrees_with_clang(name):
    k = kernel(name)
    params = odd_sizes(k)
    _, clang = reference(k, params, "clang")
    _, polly = reference(k, params, "polly")
    assert max_rel_error(k, polly, clang) <= k.tolerance


def test_kernel_changes_its_outputs():
    """The twins really run: gemm's C is not its initial value afterwards."""
    k = kernel("gemm")
    initial, out = reference(k, k.params_of("MINI"))
    assert not np.array_equal(initial["C"], out["C"])
    np.testing.assert_array_equal(initial["A"], out["A"])


def test_missing_clang_names_the_package(monkeypatch):
    monkeypatch.setattr(ctwin.shutil, "which", lambda name: None)
    with pytest.raises(ctwin.ToolchainError, match="install Debian's clang-22"):
        ctwin.build(kernel("gemm"), kernel("gemm").params_of("MINI"))


def test_wrong_arrays_are_refused():
    k = kernel("gemm")
    t = twin(k, k.params_of("MINI"))
    values = copy_values(init_values(k, k.params_of("MINI")))
    values["C"] = values["C"].T       # not C-contiguous
    with pytest.raises(ValueError, match="argument C must be a C-contiguous float64 array"):
        t.run(values)


def test_polly_runs_on_the_twins():
    """``-mllvm -polly`` is not silently ignored: Polly marks the kernel it optimized (Debian's
    clang-22 has Polly built in; no -fplugin needed)."""
    import subprocess
    k = kernel("gemm")
    clang = ctwin.clang_path()
    defines = [f"-D{p}={v}" for p, v in k.params_of("MINI").items()]
    for compiler, marked in (("clang", False), ("polly", True)):
        ir = subprocess.run([clang, *ctwin.COMPILERS[compiler], *defines, "-S", "-emit-llvm",
                             "-Wno-unknown-pragmas", str(k.c_path()), "-o", "-"],
                            capture_output=True, text=True, timeout=120)
        assert ir.returncode == 0, ir.stderr
        assert ('"polly-optimized"' in ir.stdout) == marked, compiler
