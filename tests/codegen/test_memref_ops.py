"""memref.copy and memref.alloca_scope (issue 13): mlir-opt-22's syntax, and runs that print
what mlir-runner-22 prints."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run, mlir_opt, mlir_opt_error

SYNTAX = """\
func.func @f(%A: memref<8x16xf32>, %B: memref<?x?xf32>) -> f32 {
  memref.alloca_scope {
    %t = memref.alloca() : memref<4xf32>
  }
  %r = memref.alloca_scope -> (f32) {
    %c = arith.constant 1.0 : f32
    memref.alloca_scope.return %c : f32
  }
  memref.copy %A, %B : memref<8x16xf32> to memref<?x?xf32>
  memref.copy %A, %A {foo} : memref<8x16xf32> to memref<8x16xf32>
  return %r : f32
}
"""


def test_round_trip_with_mlir_opt():
    upstream = mlir_opt(SYNTAX)
    assert str(polyopt.parse(SYNTAX)).strip() == upstream.strip()
    assert str(polyopt.parse(mlir_opt(SYNTAX, "--mlir-print-op-generic"))).strip() == \
        upstream.strip()
    mlir_opt(str(polyopt.parse(SYNTAX)))


@pytest.mark.parametrize("types, message", [
    ("memref<8x16xf32> to memref<8x16xf64>",
     "'memref.copy' op requires the same element type for all operands"),
    ("memref<8x16xf32> to memref<8x15xf32>",
     "'memref.copy' op requires the same shape for all operands"),
])
def test_copy_verifier(types, message):
    src, dst = types.split(" to ")
    text = f"func.func @f(%A: {src}, %B: {dst}) {{\n  memref.copy %A, %B : {types}\n  return\n}}\n"
    with pytest.raises(PolyoptError, match=re.escape(message)):
        polyopt.parse(text)


PROGRAM = """
func.func @main() {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %A = memref.alloc(%c3, %c4) : memref<?x?xf64>
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %ii = arith.index_cast %i : index to i64
      %jj = arith.index_cast %j : index to i64
      %c10 = arith.constant 10 : i64
      %x = arith.muli %ii, %c10 : i64
      %y = arith.addi %x, %jj : i64
      %f = arith.sitofp %y : i64 to f64
      affine.store %f, %A[%i, %j] : memref<?x?xf64>
    }
  }
  %B = memref.alloc() : memref<3x4xf64>
  memref.copy %A, %B : memref<?x?xf64> to memref<3x4xf64>
  %T = memref.alloc() : memref<4x3xf64>
  %TT = memref.transpose %T (i, j) -> (j, i) : memref<4x3xf64> to memref<3x4xf64, strided<[1, 3]>>
  memref.copy %B, %TT : memref<3x4xf64> to memref<3x4xf64, strided<[1, 3]>>
  %U = memref.cast %T : memref<4x3xf64> to memref<*xf64>
  call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  affine.for %k = 0 to 100000 {
    %s = memref.alloca_scope -> (f64) {
      %n = arith.addi %c3, %k : index
      %tmp = memref.alloca(%n) : memref<?xf64>
      %z = arith.constant 2.5 : f64
      memref.store %z, %tmp[%k] : memref<?xf64>
      %w = memref.load %tmp[%k] : memref<?xf64>
      memref.alloca_scope.return %w : f64
    }
    affine.store %s, %B[0, 0] : memref<3x4xf64>
  }
  %v = affine.load %B[0, 0] : memref<3x4xf64>
  vector.print %v : f64
  return
}
func.func private @printMemrefF64(memref<*xf64>)
"""


def test_copy_and_alloca_scope_run_as_mlir_runner_runs_them(tmp_path, capfd):
    # 100000 iterations of a growing alloca: without the scope's stackrestore this overflows
    # the stack (about 40 GB)
    expected = lower_and_run(PROGRAM, [
        "--expand-strided-metadata", "--lower-affine", "--convert-scf-to-cf",
        "--finalize-memref-to-llvm", "--convert-arith-to-llvm", "--convert-vector-to-llvm",
        "--convert-func-to-llvm", "--convert-cf-to-llvm", "--reconcile-unrealized-casts"])
    ours = polyopt_run(tmp_path, capfd, PROGRAM, name="copy.mlir")
    assert mask_addresses(ours) == mask_addresses(expected)


def test_copy_between_numpy_views():
    text = """
func.func @f(%A: memref<?x?xf32, strided<[?, ?], offset: ?>>, %B: memref<?x?xf32>) {
  memref.copy %A, %B : memref<?x?xf32, strided<[?, ?], offset: ?>> to memref<?x?xf32>
  return
}"""
    f = polyopt.compile(text)["f"]
    big = np.arange(70, dtype=np.float32).reshape(7, 10)
    out = np.zeros((3, 4), np.float32)
    f(big[1:7:2, 9:1:-2], out)
    np.testing.assert_array_equal(out, big[1:7:2, 9:1:-2])


GLOBALS = """\
memref.global "private" constant @cst : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> {alignment = 64 : i64}
memref.global @var : memref<4xi32> = dense<-7>
memref.global "private" @uninit : memref<2xf64> = uninitialized
memref.global "private" constant @s : memref<f64> = dense<2.5>
memref.global "private" constant @b : memref<3xi1> = dense<[true, false, true]>
memref.global "private" constant @ix : memref<2xindex> = dense<[5, -1]>
func.func @main() {
  %0 = memref.get_global @cst : memref<2x3xf32>
  %U = memref.cast %0 : memref<2x3xf32> to memref<*xf32>
  call @printMemrefF32(%U) : (memref<*xf32>) -> ()
  %1 = memref.get_global @var : memref<4xi32>
  %c9 = arith.constant 9 : i32
  affine.store %c9, %1[2] : memref<4xi32>
  %U1 = memref.cast %1 : memref<4xi32> to memref<*xi32>
  call @printMemrefI32(%U1) : (memref<*xi32>) -> ()
  %2 = memref.get_global @uninit : memref<2xf64>
  %3 = memref.get_global @s : memref<f64>
  %v = affine.load %3[] : memref<f64>
  affine.store %v, %2[1] : memref<2xf64>
  %U2 = memref.cast %2 : memref<2xf64> to memref<*xf64>
  call @printMemrefF64(%U2) : (memref<*xf64>) -> ()
  %4 = memref.get_global @b : memref<3xi1>
  %x = affine.load %4[2] : memref<3xi1>
  vector.print %x : i1
  %5 = memref.get_global @ix : memref<2xindex>
  %y = affine.load %5[1] : memref<2xindex>
  vector.print %y : index
  return
}
func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefF64(memref<*xf64>)
"""


def test_globals_round_trip_with_mlir_opt():
    upstream = mlir_opt(GLOBALS)
    assert str(polyopt.parse(GLOBALS)).strip() == upstream.strip()
    assert str(polyopt.parse(mlir_opt(GLOBALS, "--mlir-print-op-generic"))).strip() == \
        upstream.strip()


@pytest.mark.parametrize("text", [
    "memref.global @v : memref<4xi32> = dense<7>\nfunc.func @f() {\n"
    "  %0 = memref.get_global @v : memref<4xi64>\n  return\n}\n",
    "memref.global @v : memref<4xi32> = dense<[1,2]>\n",
    "func.func @f() {\n  %0 = memref.get_global @nope : memref<4xi64>\n  return\n}\n",
])
def test_global_errors_are_mlir_opt_s(text):
    expected = mlir_opt_error(text, filename="t.mlir")
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "t.mlir")
    assert info.value.render().split("\n")[0] == expected


def test_globals_run_as_mlir_runner_runs_them(tmp_path, capfd):
    expected = lower_and_run(GLOBALS, [
        "--lower-affine", "--finalize-memref-to-llvm", "--convert-vector-to-llvm",
        "--convert-arith-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
        "--reconcile-unrealized-casts"])
    ours = polyopt_run(tmp_path, capfd, GLOBALS, name="globals.mlir")
    assert mask_addresses(ours) == mask_addresses(expected)
