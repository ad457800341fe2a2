"""Issue 5: what `polyopt opt` prints after any flag combination is upstream MLIR (mlir-opt-22
accepts it), and the fully optimized module, lowered by mlir-opt-22 and run by mlir-runner-22,
prints what `polyopt run` prints."""

import itertools

import pytest

import polyopt
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run, mlir_opt

FLAGS = ("copy", "unroll", "scalrep", "vect")

PROGRAM = """\
func.func @matmul(%A: memref<23x19xf64>, %B: memref<19x37xf64>, %C: memref<23x37xf64>) {
  hop.matmul %A, %B, %C {M_C = 8 : i32, K_C = 8 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 2 : i32}
    : (memref<23x19xf64>, memref<19x37xf64>, memref<23x37xf64>)
  return
}
func.func @main() {
  %A = memref.alloc() : memref<23x19xf64>
  %B = memref.alloc() : memref<19x37xf64>
  %C = memref.alloc() : memref<23x37xf64>
  affine.for %i = 0 to 23 {
    affine.for %k = 0 to 19 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 7 + d1 * 3) mod 11)>(%i, %k)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %A[%i, %k] : memref<23x19xf64>
    }
  }
  affine.for %k = 0 to 19 {
    affine.for %j = 0 to 37 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 5 + d1) mod 7)>(%k, %j)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %B[%k, %j] : memref<19x37xf64>
    }
  }
  %one = arith.constant 1.0 : f64
  linalg.fill ins(%one : f64) outs(%C : memref<23x37xf64>)
  call @matmul(%A, %B, %C) : (memref<23x19xf64>, memref<19x37xf64>, memref<23x37xf64>) -> ()
  %U = memref.cast %C : memref<23x37xf64> to memref<*xf64>
  call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  return
}
func.func private @printMemrefF64(memref<*xf64>)
"""


def _optimized(**switches) -> str:
    module = polyopt.parse(PROGRAM, "interop.mlir")
    from polyopt.pipeline import PipelineOptions, run_passes
    run_passes(module, PipelineOptions(hopt=True, **switches))
    return str(module)


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "-".join(f for f, on in zip(FLAGS, c) if on) or "tiling")
def test_every_flag_combination_prints_upstream_mlir(combo):
    text = _optimized(**dict(zip(FLAGS, combo)))
    assert polyopt.parse(mlir_opt(text)) is not None  # and mlir-opt's print parses back


def test_upstream_lowering_of_the_optimized_module_runs_identically(tmp_path, capfd):
    text = _optimized(copy=True, unroll=True, scalrep=True, vect=True)
    # (--expand-strided-metadata: the views hopt-collapse-loops makes, as upstream's own
    # lowering pipelines do before finalize-memref-to-llvm)
    upstream = lower_and_run(text, [
        "--convert-linalg-to-loops", "--expand-strided-metadata", "--lower-affine",
        "--convert-vector-to-llvm",
        "--convert-scf-to-cf", "--finalize-memref-to-llvm", "--convert-math-to-llvm",
        "--convert-arith-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
        "--reconcile-unrealized-casts"])
    ours = polyopt_run(tmp_path, capfd, text, name="optimized.mlir")
    assert mask_addresses(ours) == mask_addresses(upstream)
    assert "affine.vector_load" in text and "iter_args" in text   # it was optimized
    assert "memref.collapse_shape" in text          # (C's fill, one loop over a view)
