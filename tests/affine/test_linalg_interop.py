"""The acceptance program of issue 13: linalg.matmul and linalg.generic lowered by mlir-opt-22
--convert-linalg-to-affine-loops parse in polyopt, and `polyopt run` prints exactly what
mlir-runner-22 prints for the upstream lowering; so does `polyopt run` on the linalg program
itself (polyopt's own lowering), with and without --hopt."""

from __future__ import annotations

import pytest

import polyopt
from linalg_oracle import mlir_opt
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run

PROGRAM = """\
#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main() {
  %A = memref.alloc() : memref<7x5xf64>
  %B = memref.alloc() : memref<5x13xf64>
  %C = memref.alloc() : memref<7x13xf64>
  %b = memref.alloc() : memref<13xf64>
  %r = memref.alloc() : memref<7xf64>
  affine.for %i = 0 to 7 {
    affine.for %k = 0 to 5 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 7 + d1 * 3) mod 11)>(%i, %k)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %A[%i, %k] : memref<7x5xf64>
    }
  }
  affine.for %k = 0 to 5 {
    affine.for %j = 0 to 13 {
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * 5 + d1) mod 7)>(%k, %j)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %B[%k, %j] : memref<5x13xf64>
    }
  }
  affine.for %j = 0 to 13 {
    %x = arith.index_cast %j : index to i64
    %f = arith.sitofp %x : i64 to f64
    affine.store %f, %b[%j] : memref<13xf64>
  }
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  linalg.fill ins(%one : f64) outs(%C : memref<7x13xf64>)
  linalg.fill ins(%zero : f64) outs(%r : memref<7xf64>)
  linalg.matmul ins(%A, %B : memref<7x5xf64>, memref<5x13xf64>) outs(%C : memref<7x13xf64>)
  // C = C * 0.5 + bias (broadcast along the rows), r = the rows' sums of the new C
  linalg.generic {indexing_maps = [#bias, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%b : memref<13xf64>) outs(%C, %r : memref<7x13xf64>, memref<7xf64>) {
  ^bb0(%bj: f64, %c: f64, %acc: f64):
    %half = arith.constant 0.5 : f64
    %0 = arith.mulf %c, %half : f64
    %1 = arith.addf %0, %bj : f64
    %2 = arith.addf %acc, %1 : f64
    linalg.yield %1, %2 : f64, f64
  }
  %U = memref.cast %C : memref<7x13xf64> to memref<*xf64>
  call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  %V = memref.cast %r : memref<7xf64> to memref<*xf64>
  call @printMemrefF64(%V) : (memref<*xf64>) -> ()
  memref.dealloc %A : memref<7x5xf64>
  memref.dealloc %B : memref<5x13xf64>
  memref.dealloc %C : memref<7x13xf64>
  memref.dealloc %b : memref<13xf64>
  memref.dealloc %r : memref<7xf64>
  return
}
func.func private @printMemrefF64(memref<*xf64>)
"""

UPSTREAM_TO_LLVM = ["--lower-affine", "--convert-scf-to-cf", "--finalize-memref-to-llvm",
                    "--convert-math-to-llvm", "--convert-arith-to-llvm", "--convert-func-to-llvm",
                    "--convert-cf-to-llvm", "--reconcile-unrealized-casts"]


@pytest.fixture(scope="module")
def upstream_output() -> str:
    out = lower_and_run(PROGRAM, ["--convert-linalg-to-affine-loops", *UPSTREAM_TO_LLVM])
    assert out.count("Unranked Memref") == 2
    return mask_addresses(out)


def test_upstream_lowered_program_runs_identically(tmp_path, capfd, upstream_output):
    lowered = mlir_opt(PROGRAM, "--convert-linalg-to-affine-loops")
    assert "linalg." not in lowered and "affine.for" in lowered
    module = polyopt.parse(lowered, "lowered.mlir")
    assert str(module) == str(polyopt.parse(str(module)))
    assert mask_addresses(polyopt_run(tmp_path, capfd, lowered, name="lowered.mlir")) == \
        upstream_output


@pytest.mark.parametrize("flags", [(), ("--hopt",),
                                   ("--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep",
                                    "--hopt-vect")],
                         ids=["naive", "hopt", "hopt-all"])
def test_linalg_program_runs_identically(tmp_path, capfd, upstream_output, flags):
    assert mask_addresses(polyopt_run(tmp_path, capfd, PROGRAM, *flags, name="linalg.mlir")) == \
        upstream_output


def test_polyopt_lowering_runs_upstream_identically(upstream_output):
    """polyopt's --convert-linalg-to-affine-loops output, lowered and run by upstream MLIR."""
    module = polyopt.parse(PROGRAM)
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    convert_linalg_to_affine_loops(module)
    assert mask_addresses(lower_and_run(str(module), UPSTREAM_TO_LLVM)) == upstream_output
