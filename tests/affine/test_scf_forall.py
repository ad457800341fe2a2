"""``scf.forall`` on memrefs (what tiling with ``transform.structured.tile_using_forall``
leaves): printed and generalized as mlir-opt-22 does, turned into ``scf.parallel`` as its
``--scf-forall-to-parallel`` does, refused where it refuses (and for tensor ``shared_outs`` and
steps that are not positive), and run against numpy with and without --hopt, on 1 and 2
threads."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.passes import run_pipeline
from upstream_mlir import mlir_opt, mlir_opt_error

FORMS = """\
func.func @f(%A: memref<16x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 1.0 : f32
  scf.forall (%i, %j) in (16, %n) {
    memref.store %z, %A[%i, %j] : memref<16x8xf32>
  }
  scf.forall (%i) = (1) to (%n) step (%c2) {
    memref.store %z, %A[%i, %i] : memref<16x8xf32>
  } {mapping = [#gpu.thread<x>]}
  scf.forall (%i, %j) = (0, 1) to (16, 8) step (4, 2) {
    memref.store %z, %A[%i, %j] : memref<16x8xf32>
    scf.forall.in_parallel {
    }
  }
  scf.forall (%i) = (%c0) to (16) step (1) {
    memref.store %z, %A[%i, %i] : memref<16x8xf32>
  }
  return
}
"""
NO_DIMS = """\
func.func @f(%A: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %z = arith.constant 2.5 : f32
  scf.forall () in () {
    memref.store %z, %A[%c1] : memref<4xf32>
  }
  return
}
"""


def test_printed_and_generalized_as_mlir_opt_does():
    assert print_module(parse(FORMS, "t.mlir")) == mlir_opt(FORMS)
    generic = mlir_opt(FORMS, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(FORMS)
    ours = print_module(parse(FORMS, "t.mlir"), generic=True)
    assert mlir_opt(ours, "--mlir-print-op-generic") == generic


def test_a_forall_of_no_dimensions_runs_its_body_once():
    # (mlir-opt-22 --scf-forall-to-parallel makes an scf.parallel its verifier refuses)
    assert print_module(parse(NO_DIMS, "t.mlir")) == mlir_opt(NO_DIMS)
    a = np.zeros(4, np.float32)
    polyopt.compile(NO_DIMS)["f"](a)
    np.testing.assert_array_equal(a, [0, 2.5, 0, 0])


def test_forall_to_parallel_is_mlir_opts():
    module = parse(FORMS, "t.mlir")
    run_pipeline(module, "builtin.module(scf-forall-to-parallel)")
    assert print_module(module) == mlir_opt(FORMS, "--scf-forall-to-parallel")


def body(text: str) -> str:
    return ("func.func @f(%A: memref<16x8xf32>, %n: index) {\n"
            "  %z = arith.constant 1.0 : f32\n"
            f"  {text}\n  return\n}}\n")


STORE = "memref.store %z, %A[%i, %i] : memref<16x8xf32>"


@pytest.mark.parametrize("text", [
    f"scf.forall (%i, %j) in (16) {{ {STORE} }}",
    f"scf.forall (%i) in (16, 4) {{ {STORE} }}",
    f"scf.forall (%i) in (16) {{ {STORE} }} {{mapping = [#gpu.thread<x>, #gpu.thread<y>]}}",
    f"scf.forall (%i) in (%z) {{ {STORE} }}",
])
def test_errors_are_mlir_opts(text):
    with pytest.raises(PolyoptError) as info:
        parse(body(text), "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(body(text), filename="t.mlir")


def test_tensor_shared_outs_and_steps_that_are_not_positive_are_errors():
    text = ("func.func @f(%A: memref<4xf32>) {\n"
            "  scf.forall (%i) in (4) shared_outs(%o = %A) -> (memref<4xf32>) {\n"
            "  }\n  return\n}\n")
    with pytest.raises(PolyoptError, match="shared_outs: tensors are not supported"):
        parse(text, "t.mlir")
    zero = body(f"scf.forall (%i) = (0) to (16) step (0) {{ {STORE} }}")
    assert "scf.forall" in mlir_opt(zero)              # MLIR accepts it ...
    with pytest.raises(PolyoptError, match=r"t.mlir:3:3: .*has a step of 0"):
        polyopt.compile(zero, filename="t.mlir")    # ... and has nothing to run


INDICES = """\
func.func @f(%A: memref<37x23xf64>, %n: index, %s: index) {
  scf.forall (%i, %j) = (1, 0) to (%n, 23) step (%s, 3) {
    %a = arith.index_cast %i : index to i64
    %b = arith.index_cast %j : index to i64
    %c100 = arith.constant 100 : i64
    %t = arith.muli %a, %c100 : i64
    %v = arith.addi %t, %b : i64
    %f = arith.sitofp %v : i64 to f64
    memref.store %f, %A[%i, %j] : memref<37x23xf64>
  }
  return
}
"""

TILED_MATMUL = """\
func.func @mm(%A: memref<97x53xf32>, %B: memref<53x61xf32>, %C: memref<97x61xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c53 = arith.constant 53 : index
  scf.forall (%ti, %tj) in (7, 4) {
    %i0 = affine.apply affine_map<(d0) -> (d0 * 16)>(%ti)
    %j0 = affine.apply affine_map<(d0) -> (d0 * 16)>(%tj)
    %ie = affine.min affine_map<(d0) -> (d0 * 16 + 16, 97)>(%ti)
    %je = affine.min affine_map<(d0) -> (d0 * 16 + 16, 61)>(%tj)
    scf.for %i = %i0 to %ie step %c1 {
      scf.for %j = %j0 to %je step %c1 {
        scf.for %k = %c0 to %c53 step %c1 {
          %a = memref.load %A[%i, %k] : memref<97x53xf32>
          %b = memref.load %B[%k, %j] : memref<53x61xf32>
          %c = memref.load %C[%i, %j] : memref<97x61xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %c, %p : f32
          memref.store %s, %C[%i, %j] : memref<97x61xf32>
        }
      }
    }
  }
  return
}
"""

SWITCHES = [{}, dict(hopt=True), dict(hopt=True, copy=True, unroll=True, scalrep=True,
                                      vect=True)]


@pytest.mark.parametrize("switches", SWITCHES)
@pytest.mark.parametrize("threads", [1, 2])
def test_runs_as_numpy(switches, threads):
    f = polyopt.compile(INDICES, threads=threads, **switches)["f"]
    for n, s in ((37, 2), (20, 5), (1, 1)):
        a = np.full((37, 23), -1.0)
        f(a, n, s)
        want = np.full((37, 23), -1.0)
        for i in range(1, n, s):
            for j in range(0, 23, 3):
                want[i, j] = 100 * i + j
        np.testing.assert_array_equal(a, want)
    mm = polyopt.compile(TILED_MATMUL, threads=threads, **switches)["mm"]
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((97, 53), np.float32), rng.standard_normal((53, 61), np.float32)
    c = rng.standard_normal((97, 61), np.float32)
    want = c + a @ b
    mm(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


TENSOR_FORALL = """\
func.func @f(%t: tensor<16xf32>) -> tensor<16xf32> {
  %z = arith.constant 2.0 : f32
  %r = scf.forall (%i) in (8) shared_outs(%o = %t) -> (tensor<16xf32>) {
    %j = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %s = tensor.extract_slice %o[%j] [1] [1] : tensor<16xf32> to tensor<1xf32>
    %f = linalg.fill ins(%z : f32) outs(%s : tensor<1xf32>) -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%j] [1] [1] : tensor<1xf32> into tensor<16xf32>
    }
  }
  return %r : tensor<16xf32>
}
"""


def test_a_tensor_forall_runs_after_upstream_bufferization():
    """shared_outs on tensors: --one-shot-bufferize (upstream's) leaves a memref scf.forall."""
    f = polyopt.compile(TENSOR_FORALL, bufferize=True)["f"]
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    f(x.copy(), out)
    want = x.copy()
    want[::2] = 2.0
    np.testing.assert_array_equal(out, want)
