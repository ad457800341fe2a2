"""Issue 13, syntax as upstream accepts it, run: dense constants of every element type and
upstream-style modules and functions (nested modules, ``llvm.emit_c_interface``, argument and
result attributes, ``func.func private`` declarations) compile and run, printing what
mlir-runner-22 prints for the upstream lowering of the same program."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run, mlir_opt

UPSTREAM_PASSES = ["--convert-vector-to-scf", "--convert-scf-to-cf", "--lower-affine",
                   "--convert-vector-to-llvm", "--finalize-memref-to-llvm",
                   "--convert-arith-to-llvm", "--convert-cf-to-llvm", "--convert-func-to-llvm",
                   "--reconcile-unrealized-casts"]

DENSE_PROGRAM = """\
func.func @main() {
  %0 = arith.constant dense<[true, false, true, true]> : vector<4xi1>
  vector.print %0 : vector<4xi1>
  %1 = arith.constant dense<[1, -2, 3, 255]> : vector<4xi8>
  vector.print %1 : vector<4xi8>
  %2 = arith.constant dense<-7> : vector<3xi16>
  vector.print %2 : vector<3xi16>
  %3 = arith.constant dense<[[1, 2], [3, 4]]> : vector<2x2xi32>
  vector.print %3 : vector<2x2xi32>
  %4 = arith.constant dense<[9223372036854775807, -9223372036854775808]> : vector<2xi64>
  vector.print %4 : vector<2xi64>
  %5 = arith.constant dense<[0, 5, -1]> : vector<3xindex>
  vector.print %5 : vector<3xindex>
  %6 = arith.constant dense<[[1.5, -2.25, 0.1]]> : vector<1x3xf32>
  vector.print %6 : vector<1x3xf32>
  %7 = arith.constant dense<[0x7FF0000000000000, 0xFFF0000000000000, 1.0e-300]> : vector<3xf64>
  vector.print %7 : vector<3xf64>
  %8 = arith.constant dense<"0x0000803F00000040"> : vector<2xf32>
  vector.print %8 : vector<2xf32>
  %9 = arith.constant dense<"0x05"> : vector<4xi1>
  vector.print %9 : vector<4xi1>
  %10 = arith.constant dense<"0x0100FFFF"> : vector<2xi16>
  vector.print %10 : vector<2xi16>
  %11 = arith.constant 255 : i8
  vector.print %11 : i8
  %12 = arith.constant 0x7FC00000 : f32
  vector.print %12 : f32
  %13 = arith.constant -1 : i1
  vector.print %13 : i1
  %14 = arith.constant 18446744073709551615 : i64
  vector.print %14 : i64
  %15 = arith.constant dense<[[1.0e+10, -0.0, 3.0]]> : vector<1x3xf64>
  vector.print %15 : vector<1x3xf64>
  return
}
"""


def test_dense_constants_of_every_element_type_run_as_upstream(tmp_path, capfd):
    expected = lower_and_run(DENSE_PROGRAM, UPSTREAM_PASSES)
    assert "( ( 1, 2 ), ( 3, 4 ) )" in expected
    assert polyopt_run(tmp_path, capfd, DENSE_PROGRAM) == expected


NESTED = """\
module @outer attributes {test.flag} {
  module @inner {
    func.func @main() attributes {llvm.emit_c_interface} {
      %c = arith.constant dense<[3, 4, 5]> : vector<3xi32>
      vector.print %c : vector<3xi32>
      %r = func.call @helper(%c) : (vector<3xi32>) -> i32
      vector.print %r : i32
      return
    }
    func.func private @helper(%v: vector<3xi32> {llvm.noundef}) -> (i32 {llvm.noundef}) {
      %s = vector.reduction <add>, %v : vector<3xi32> into i32
      return %s : i32
    }
  }
}
"""


def test_polyopt_run_finds_main_in_a_nested_module(tmp_path, capfd):
    # mlir-runner-22 looks for @main in the top module only: compare with the flat program
    flat = "\n".join(NESTED.splitlines()[2:-2]) + "\n"
    expected = lower_and_run(flat, UPSTREAM_PASSES)
    assert expected == "( 3, 4, 5 )\n12\n"
    assert polyopt_run(tmp_path, capfd, NESTED) == expected


def test_functions_with_the_same_name_in_two_modules_are_a_codegen_error():
    text = ("module @a {\n  func.func @f() {\n    return\n  }\n}\n"
            "module @b {\n  func.func @f() {\n    return\n  }\n}\n")
    polyopt.parse(text)          # each module is its own symbol table: valid IR
    with pytest.raises(CodegenError) as info:
        polyopt.compile(text)
    assert str(info.value).startswith("<input>:7:3: error: function @f is defined in two modules")


def test_upstream_function_attributes_are_ignored_by_the_lowering():
    text = """\
func.func @scale(%A: memref<5xf32> {llvm.noalias}, %s: f32 {llvm.noundef}) -> (f32 {llvm.noundef})
    attributes {llvm.emit_c_interface} {
  affine.for %i = 0 to 5 {
    %v = affine.load %A[%i] : memref<5xf32>
    %w = arith.mulf %v, %s : f32
    affine.store %w, %A[%i] : memref<5xf32>
  }
  return %s : f32
}
func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
"""
    A = np.arange(5, dtype=np.float32)
    assert polyopt.compile(text)["scale"](A, 2.5) == 2.5
    assert A.tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]


@pytest.mark.parametrize("text,message", [
    ("func.func @main() {\n  %c = arith.constant 0 : i0\n  %d = arith.addi %c, %c : i0\n"
     "  return\n}\n", "type 'i0' is not supported by the LLVM lowering"),
    ("func.func @main() {\n  %c = arith.constant 5 : i16777215\n"
     "  %d = arith.addi %c, %c : i16777215\n  return\n}\n",
     "type 'i16777215' is not supported by the LLVM lowering"),
])
def test_integer_widths_llvm_lacks_are_located_codegen_errors(text, message):
    polyopt.parse(text)          # MLIR allows them
    with pytest.raises(CodegenError) as info:
        polyopt.compile(text)
    assert info.value.loc is not None and (info.value.loc.line, info.value.loc.col) == (2, 8)
    assert message in info.value.message


@pytest.mark.parametrize("op", ["alloc", "alloca"])
def test_allocations_whose_size_wraps_around_are_located_codegen_errors(op):
    """memref<99999999999x99999999999xf32> is valid MLIR; its byte size wrapped around in i64
    and the lowering allocated a small buffer (``aligned_alloc(64, 7458847397692096576)``)."""
    text = (f"func.func @main() {{\n  %a = memref.{op}() : memref<99999999999x99999999999xf32>\n"
            "  return\n}\n")
    with pytest.raises(CodegenError) as info:
        polyopt.compile(text)
    assert (info.value.loc.line, info.value.loc.col) == (2, 8)
    assert "39999999999200000000004 bytes, more than an address space holds" in \
        info.value.message


WHILE_WITHOUT_OPERANDS = """\
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %m = memref.alloca() : memref<1xindex>
  affine.for %k = 0 to 2 {
    memref.store %c0, %m[%c0] : memref<1xindex>
    %r = scf.while : () -> index {
      %i = memref.load %m[%c0] : memref<1xindex>
      %c = arith.cmpi slt, %i, %c3 : index
      scf.condition(%c) %i : index
    } do {
    ^bb0(%v: index):
      %n = arith.addi %v, %c1 : index
      memref.store %n, %m[%c0] : memref<1xindex>
      scf.yield
    }
    vector.print %r : index
    scf.while : () -> () {
      %i = memref.load %m[%c0] : memref<1xindex>
      %c = arith.cmpi sgt, %i, %c0 : index
      scf.condition(%c)
    } do {
      %i = memref.load %m[%c0] : memref<1xindex>
      vector.print %i : index
      %n = arith.subi %i, %c1 : index
      memref.store %n, %m[%c0] : memref<1xindex>
      scf.yield
    }
  }
  return
}
"""


def test_scf_while_without_operands_runs_as_upstream(tmp_path, capfd):
    """``scf.while : () -> () {... scf.condition(%c)} do {... scf.yield}``: no loop-carried
    values, the state in memory; printed as mlir-opt-22 prints it and run as mlir-runner-22
    runs it."""
    assert str(polyopt.parse(WHILE_WITHOUT_OPERANDS)) == mlir_opt(WHILE_WITHOUT_OPERANDS)
    expected = lower_and_run(WHILE_WITHOUT_OPERANDS, ["--lower-affine", *UPSTREAM_PASSES])
    assert expected == "3\n3\n2\n1\n" * 2
    assert polyopt_run(tmp_path, capfd, WHILE_WITHOUT_OPERANDS) == expected
