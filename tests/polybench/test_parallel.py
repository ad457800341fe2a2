"""PolyBench under ``--hopt --hopt-parallel`` (all passes) at 2 and 3 threads (3 oversubscribes
this 2-core machine) computes what the C twin (clang-22 -O3) computes, at odd sizes; the
BLIS and stencil kernels get an ``affine.parallel``, seidel-2d none."""

import pytest

from polyopt.codegen import openmp


@pytest.fixture(autouse=True)
def every_region_forks(monkeypatch):
    """Small test sizes: let every parallel region fork the team (below MIN_PARALLEL_WORK a
    region runs on the calling thread)."""
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)

from polyopt.affine.printer import print_module
from polyopt.pipeline import CompiledModule, PipelineOptions, load, prepare_for_lowering, \
    run_passes
from polyopt.polybench.harness import HOPT_SWITCHES, max_rel_error
from polyopt.polybench.suite import KERNELS, kernel, mlir_source

from conftest import copy_values, odd_sizes, reference

# seidel-2d: every loop carries a dependence; gemm: the BLIS nest; jacobi-2d, heat-3d: the
# sweeps under the time loop.  (Others depend on the scheduler's nest: a parallel loop more than
# one loop deep stays sequential.)
SEQUENTIAL = {"seidel-2d"}
PARALLEL = {"gemm", "2mm", "jacobi-2d", "heat-3d"}


@pytest.mark.parametrize("name", list(KERNELS))
def test_parallel_build_matches_clang(name):
    k = kernel(name)
    params = odd_sizes(k)
    initial, expected = reference(k, params)
    module = load(mlir_source(k, params), f"{name}.mlir")
    options = PipelineOptions(**HOPT_SWITCHES, parallel=True)
    run_passes(module, options)
    text = print_module(module)
    if name in SEQUENTIAL | PARALLEL:
        assert ("affine.parallel" in text) == (name in PARALLEL), name
    prepare_for_lowering(module)
    for threads in (2, 3):
        got = copy_values(initial)
        fn = CompiledModule(module, PipelineOptions(**HOPT_SWITCHES, parallel=True,
                                                    threads=threads))[k.symbol]
        fn(*[got[a.name] for a in k.args])
        err = max_rel_error(k, got, expected)
        assert err <= k.tolerance, f"{name} at {threads} threads: differs from clang by {err:.3g}"
