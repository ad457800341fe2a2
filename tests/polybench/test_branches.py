"""PolyBench's kernels as upstream lowers them to branches (mlir-opt-22 --lower-affine
--convert-scf-to-cf): lift-cf-to-scf and raise-scf-to-affine bring each back, and the whole
--hopt pipeline then makes of it the IR it makes of the affine kernel, line for line."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.pipeline import PipelineOptions, run_passes
from polyopt.polybench.suite import kernel as kernel_named, mlir_source, select
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


# kernels in which the vectorizer finds no loop to vectorize: seidel-2d's carry a dependence;
# gesummv's, cholesky's, trisolv's, ludcmp's, symm's and nussinov's innermost loops each
# accumulate into one element in memory (ludcmp's into its 0-d w, symm's into temp2), a
# dependence carried by the loop; floyd-warshall's j loop stores path[i][j] and loads
# path[k][j], the same element where i = k
NOT_VECTORIZED = ("gesummv", "seidel-2d", "cholesky", "trisolv", "ludcmp", "symm", "nussinov",
                  "floyd-warshall")
VECTORIZED = [k for k in select(None) if k.name not in NOT_VECTORIZED]


@pytest.mark.parametrize("kernel", VECTORIZED, ids=lambda k: k.name)
def test_the_output_of_the_affine_super_vectorizer_runs_the_same_under_every_pipeline(kernel):
    """mlir-opt-22 --affine-super-vectorize on each kernel (vector.transfer_read/write with
    padding, at sizes that are multiples of no vector) computes the same arrays as is and
    under the whole pipeline.  (Not clang's: where a loop's trip count is no multiple of 8,
    upstream's vectorizer writes past the loop's end inside the memref, e.g. jacobi-1d's
    B[N - 1]; polyopt runs the IR it is given.)"""
    from conftest import copy_values, odd_sizes, reference
    from polyopt.polybench.harness import max_rel_error
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
    assert max_rel_error(kernel, results[1], results[0]) <= kernel.tolerance


def test_the_vectorized_jacobi_1d_computes_what_mlir_runner_computes():
    """The claim above, checked: the vectorizer's jacobi-1d (which writes B[N-1]) gives
    polyopt the arrays upstream's own lowering gives mlir-runner-22."""
    import re

    import numpy as np
    from upstream_mlir import lower_and_run
    text = mlir_source(kernel_named("jacobi-1d"), {"TSTEPS": 2, "N": 13})
    vectorized = mlir_opt(text, "--affine-super-vectorize=virtual-vector-size=8",
                          "--mlir-print-local-scope")
    body = vectorized[vectorized.index("func.func"):vectorized.rindex("}")]
    main = "module {\n" + body + """
  func.func private @printMemrefF64(memref<*xf64>)
  func.func @main() {
    %A = memref.alloc() : memref<13xf64>
    %B = memref.alloc() : memref<13xf64>
    affine.for %i = 0 to 13 {
      %ii = arith.index_cast %i : index to i64
      %f = arith.sitofp %ii : i64 to f64
      affine.store %f, %A[%i] : memref<13xf64>
      %g = arith.mulf %f, %f : f64
      affine.store %g, %B[%i] : memref<13xf64>
    }
    func.call @kernel_jacobi_1d(%A, %B) : (memref<13xf64>, memref<13xf64>) -> ()
    %a = memref.cast %A : memref<13xf64> to memref<*xf64>
    %b = memref.cast %B : memref<13xf64> to memref<*xf64>
    func.call @printMemrefF64(%a) : (memref<*xf64>) -> ()
    func.call @printMemrefF64(%b) : (memref<*xf64>) -> ()
    return
  }
}
"""
    printed = lower_and_run(main, ["--lower-affine", "--convert-vector-to-scf",
                                   "--convert-scf-to-cf", "--convert-vector-to-llvm",
                                   "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
                                   "--convert-func-to-llvm", "--convert-cf-to-llvm",
                                   "--convert-ub-to-llvm", "--reconcile-unrealized-casts"])
    upstream = [np.array([float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?",
                                                       line)])
                for line in printed.splitlines() if line.startswith("[")]
    a = np.arange(13.0)
    b = a * a
    polyopt.compile(vectorized)["kernel_jacobi_1d"](a, b)
    np.testing.assert_allclose(a, upstream[0], rtol=1e-5)
    np.testing.assert_allclose(b, upstream[1], rtol=1e-5)
    assert b[12] != 144.0       # written past the loop's end, as upstream's lowering does
