"""The PolyBench kernels as MLIR: each template, at PolyBench's MINI and SMALL sizes and at odd
ones, parses and verifies in polyopt, prints exactly what mlir-opt-22 prints for it, and
declares the memref arguments the suite's table gives."""

import subprocess

import pytest

import polyopt
from polyopt.affine.printer import print_module
from polyopt.polybench.suite import DATASETS, KERNELS, kernel, mlir_source, select

from conftest import odd_sizes

NAMES = list(KERNELS)
# PolyBench/C 4.2's 30 kernels
POLYBENCH = ["gemm", "2mm", "3mm", "syrk", "syr2k", "gemver", "gesummv", "atax", "bicg", "mvt",
             "doitgen", "covariance", "correlation", "trmm", "jacobi-1d", "jacobi-2d",
             "seidel-2d", "heat-3d", "fdtd-2d", "lu", "cholesky", "trisolv", "ludcmp", "durbin",
             "gramschmidt", "symm", "adi", "deriche", "floyd-warshall", "nussinov"]


def _mlir_opt(text: str) -> str:
    import shutil
    path = shutil.which("mlir-opt-22")
    if path is None:
        pytest.fail("mlir-opt-22 not found: install Debian's mlir-22-tools (scripts/setup.sh)")
    done = subprocess.run([path, "-"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_polybench_kernel_is_there():
    assert sorted(NAMES) == sorted(POLYBENCH)
    for k in KERNELS.values():
        assert set(k.sizes) == set(DATASETS)
        assert all(len(v) == len(k.params) for v in k.sizes.values())


@pytest.mark.parametrize("name", NAMES)
def test_prints_what_mlir_opt_prints(name):
    k = kernel(name)
    for params in (k.params_of("MINI"), k.params_of("SMALL"), odd_sizes(k)):
        text = mlir_source(k, params)
        module = polyopt.parse(text, f"{name}.mlir")
        assert print_module(module).rstrip() == _mlir_opt(text).rstrip()


@pytest.mark.parametrize("name", NAMES)
def test_signature_follows_the_table(name):
    """@kernel_<name>'s arguments are the kernel's, in order: scalars and memrefs of the
    dataset's shapes, in the kernel's element types (f64 but for deriche's f32, the i32
    tables of floyd-warshall and nussinov and nussinov's i8 sequence)."""
    k = kernel(name)
    params = odd_sizes(k)
    module = polyopt.parse(mlir_source(k, params))
    (func,) = [f for f in module.functions if not f.is_declaration]
    assert func.sym_name == k.symbol
    types = [str(t) for t in func.function_type.inputs]
    expected = [k.element_type(a) if a.is_scalar else
                "memref<" + "x".join(str(params[d]) for d in a.dims) + f"x{k.element_type(a)}>"
                for a in k.args]
    assert types == expected
    assert {k.element_type(a) for a in k.args} == {
        "deriche": {"f32"}, "floyd-warshall": {"i32"}, "nussinov": {"i8", "i32"}}.get(
            name, {"f64"})


def test_large_sizes_are_polybench_headers():
    """A few of PolyBench 4.2's LARGE sizes, read off its headers."""
    assert kernel("gemm").params_of("LARGE") == {"NI": 1000, "NJ": 1100, "NK": 1200}
    assert kernel("doitgen").params_of("LARGE") == {"NQ": 140, "NR": 150, "NP": 160}
    assert kernel("heat-3d").params_of("LARGE") == {"TSTEPS": 500, "N": 120}
    assert kernel("fdtd-2d").params_of("MINI") == {"TMAX": 20, "NX": 20, "NY": 30}
    assert "NI = 1000" not in kernel("gemm").mlir("LARGE")
    assert "memref<1000x1100xf64>" in kernel("gemm").mlir("LARGE")


def test_bad_requests_are_refused():
    with pytest.raises(ValueError, match="unknown PolyBench kernel 'gemmm'"):
        kernel("gemmm")
    with pytest.raises(ValueError, match="unknown PolyBench kernel 'nope'"):
        select("gemm,nope")
    assert [k.name for k in select("lu, 2mm")] == ["lu", "2mm"]
    assert len(select(None)) == len(select("all")) == len(NAMES)
    with pytest.raises(ValueError, match="unknown dataset 'HUGE'"):
        kernel("gemm").params_of("HUGE")
    with pytest.raises(ValueError, match="sizes must be integers >= 2"):
        mlir_source(kernel("lu"), {"N": 1})
    with pytest.raises(ValueError, match="no value for NK"):
        mlir_source(kernel("gemm"), {"NI": 4, "NJ": 5})
