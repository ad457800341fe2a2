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
