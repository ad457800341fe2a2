"""PolyBench's kernels as upstream lowers them to branches (mlir-opt-22 --lower-affine
--convert-scf-to-cf): lift-cf-to-scf and raise-scf-to-affine bring each back, and the whole
--hopt pipeline then makes of it the IR it makes of the affine kernel, line for line."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.pipeline import PipelineOptions, run_passes
from polyopt.polybench.suite import mlir_source, select
from upstream_mlir import mlir_opt

FULL = PipelineOptions(hopt=True, copy=True, unroll=True, scalrep=True, vect=True, threads=1)


@pytest.mark.parametrize("kernel", select(None), ids=lambda k: k.name)
def test_the_branches_leave_the_pipeline_as_the_loops_they_were(kernel):
    affine = mlir_source(kernel, kernel.params_of("MINI"))
    branches = mlir_opt(affine, "--lower-affine", "--convert-scf-to-cf")
    assert "cf.cond_br" in branches
    remarks = []
    from_loops, from_branches = polyopt.parse(affine), polyopt.parse(branches)
    run_passes(from_loops, FULL)
    run_passes(from_branches, FULL, remark=lambda loc, m: remarks.append(m))
    assert "lift-cf-to-scf: branches lifted to scf.for/scf.while/scf.if" in remarks
    assert str(from_branches) == str(from_loops)


VECTORIZED = [k for k in select(None) if k.name not in ("gesummv", "seidel-2d")]


@pytest.mark.parametrize("kernel", VECTORIZED, ids=lambda k: k.name)
def test_the_output_of_the_affine_super_vectorizer_runs_the_same_under_every_pipeline(kernel):
    """mlir-opt-22 --affine-super-vectorize on each kernel (vector.transfer_read/write with
    padding, at sizes that are multiples of no vector) computes the same arrays as is and
    under the whole pipeline.  (Not clang's: where a loop's trip count is no multiple of 8,
    upstream's vectorizer writes past the loop's end inside the memref, e.g. jacobi-1d's
    B[N - 1]; polyopt runs the IR it is given.)"""
    from conftest import copy_values, odd_sizes, reference
    from polyopt.polybench.harness import TOLERANCE, max_rel_error
    params = odd_sizes(kernel)
    initial, _ = reference(kernel, params)
    vectorized = mlir_opt(mlir_source(kernel, params),
                          "--affine-super-vectorize=virtual-vector-size=8")
    assert "vector.transfer_" in vectorized
    results = []
    for switches in ({}, dict(FULL.__dict__)):
        got = copy_values(initial)
        fn = polyopt.compile(vectorized, **switches)[kernel.symbol]
        fn(*[got[a.name] for a in kernel.args])
        results.append(got)
    assert max_rel_error(kernel, results[1], results[0]) <= TOLERANCE
