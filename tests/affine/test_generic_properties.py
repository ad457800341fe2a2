"""The generic form as mlir-opt-22 prints it: an op's inherent attributes inside ``<{...}>``
(with the default-valued ones MLIR fills in, ``fastmath = #arith.fastmath<none>``), discardable
ones in the dictionary after the regions, unique SSA ids numbered region by region from a
stack, and ``#map`` aliases numbered in the order MLIR's alias initializer meets them (regions
first, then types, attributes, properties).  Each case is compared with
``mlir-opt-22 --mlir-print-op-generic`` and read back both ways."""

from __future__ import annotations

import subprocess
import sys

import pytest

import polyopt
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt

CASES = {
    "arith": """
func.func @f(%a: i32, %x: f32, %v: vector<4xf32>) -> i1 {
  %c = arith.constant 1 : i32
  %s = arith.addi %a, %c overflow<nsw> : i32
  %t = arith.subi %s, %a : i32
  %m = arith.muli %t, %t {tag} : i32
  %sh = arith.shli %m, %c : i32
  %d = arith.divsi %sh, %c : i32
  %tr = arith.trunci %d : i32 to i16
  %f = arith.addf %x, %x fastmath<fast> : f32
  %g = arith.mulf %f, %x : f32
  %n = arith.negf %g : f32
  %e = arith.extf %n : f32 to f64
  %h = arith.truncf %e : f64 to f32
  %cf = arith.cmpf olt, %h, %x : f32
  %ci = arith.cmpi slt, %a, %c : i32
  %sel = arith.select %ci, %x, %h : f32
  %mx = arith.maximumf %sel, %x : f32
  %r = arith.andi %cf, %ci : i1
  return %r : i1
}
""",
    "affine_and_memref": """
func.func @f(%m: memref<10x10xf32>, %n: index) {
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  %s = memref.alloca() : memref<4xf32>
  affine.for %i = 0 to %n step 2 {
    affine.for %j = max affine_map<(d0) -> (d0, 2)>(%i) to 10 {
      %x = affine.load %m[%i, %j + 1] : memref<10x10xf32>
      affine.store %x, %m[%j, %i] : memref<10x10xf32>
      %y = affine.apply affine_map<(d0, d1) -> (d0 + d1)>(%i, %j)
      affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%y) {
        affine.store %x, %a[%y] : memref<?xf32>
      }
    } {outer}
  }
  affine.parallel (%i, %j) = (0, 0) to (4, 4) {
    %z = affine.load %m[%i, %j] : memref<10x10xf32>
    affine.yield
  }
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0, %c0] {nontemporal = true} : memref<10x10xf32>
  memref.store %v, %s[%c0] : memref<4xf32>
  %sub = memref.subview %m[1, 2] [3, 4] [1, 1] : memref<10x10xf32> to memref<3x4xf32, strided<[10, 1], offset: 12>>
  %col = memref.collapse_shape %m [[0, 1]] : memref<10x10xf32> into memref<100xf32>
  %d = memref.dim %a, %c0 : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return
}
""",
    "func_scf_cf": """
func.func private @ext(i32) -> i32
func.func @f(%a: i32, %lb: index, %ub: index, %b: i1) -> i32 {
  %r = func.call @ext(%a) : (i32) -> i32
  %s = scf.for %i = %lb to %ub step %lb iter_args(%acc = %r) -> i32 {
    %t = scf.if %b -> i32 {
      scf.yield %acc : i32
    } else {
      scf.yield %a : i32
    }
    scf.yield %t : i32
  }
  %w = scf.while (%x = %s) : (i32) -> i32 {
    scf.condition(%b) %x : i32
  } do {
  ^bb0(%y: i32):
    scf.yield %y : i32
  }
  scf.parallel (%i) = (%lb) to (%ub) step (%lb) {
    scf.reduce
  }
  cf.assert %b, "ok"
  cf.cond_br %b, ^bb1(%w : i32), ^bb2
^bb1(%z: i32):
  return %z : i32
^bb2:
  return %a : i32
}
""",
    "vector_and_math": """
func.func @f(%m: memref<8xf32>, %v: vector<4xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %r = vector.transfer_read %m[%c0], %x : memref<8xf32>, vector<4xf32>
  %l = vector.load %m[%c0] : memref<8xf32>, vector<4xf32>
  %b = vector.broadcast %x : f32 to vector<4xf32>
  %f = vector.fma %r, %l, %b : vector<4xf32>
  %e = vector.extract %f[1] : f32 from vector<4xf32>
  %s = vector.reduction <add>, %f : vector<4xf32> into f32
  %o = vector.outerproduct %v, %x : vector<4xf32>, f32
  vector.store %o, %m[%c0] : memref<8xf32>, vector<4xf32>
  vector.print %s : f32
  %q = math.sqrt %s : f32
  %p = math.powf %q, %e fastmath<fast> : f32
  %t = math.fma %p, %q, %e : f32
  return %t : f32
}
""",
    "discardable_attributes_and_sibling_regions": """
module attributes {test.flag} {
  func.func @g(%a: index) attributes {llvm.emit_c_interface} {
    affine.for %i = 0 to 4 {
    } {foo = affine_map<(d0) -> (d0 + 5)>}
    affine.for %j = 0 to %a {
      %x = arith.addi %j, %j : index
    }
    return
  }
  func.func @h(%b: f32) -> f32 {
    return %b : f32
  }
}
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generic_form_is_mlir_opts(name):
    text = CASES[name]
    assert print_module(polyopt.parse(text), generic=True) == \
        mlir_opt(text, "--mlir-print-op-generic")


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlir_opts_generic_form_reads_back(name):
    """What mlir-opt-22 prints in generic form parses here to the same IR: the same generic
    text, and the same custom text as mlir-opt-22 prints."""
    text = CASES[name]
    generic = mlir_opt(text, "--mlir-print-op-generic")
    module = polyopt.parse(generic)
    assert print_module(module, generic=True) == generic
    assert str(module) == mlir_opt(text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlir_opt_reads_our_generic_form(name):
    ours = print_module(polyopt.parse(CASES[name]), generic=True)
    assert mlir_opt(ours, "--mlir-print-op-generic") == ours


def test_an_explicit_default_property_is_printed():
    """``nontemporal = false`` written out is kept, as mlir-opt keeps it."""
    text = """
func.func @f(%m: memref<4xf32>, %i: index) -> f32 {
  %v = memref.load %m[%i] {nontemporal = false} : memref<4xf32>
  return %v : f32
}
"""
    ours = print_module(polyopt.parse(text), generic=True)
    assert '"memref.load"(%arg0, %arg1) <{nontemporal = false}>' in ours
    assert ours == mlir_opt(text, "--mlir-print-op-generic")


def test_unregistered_op_keeps_its_properties():
    """An op of an unknown dialect prints back the ``<{...}>`` it was read with (its maps
    spelt out, as mlir-opt prints an opaque property) and its dictionary apart."""
    text = """
func.func @f(%a: index) {
  "test.op"(%a) <{p = affine_map<(d0) -> (d0 + 1)>, q = 2 : i32}> {d = 3 : i32} : (index) -> ()
  return
}
"""
    ours = print_module(polyopt.parse(text), generic=True)
    assert ours == mlir_opt(text, "--mlir-print-op-generic", "--allow-unregistered-dialect")
    assert '<{p = affine_map<(d0) -> (d0 + 1)>, q = 2 : i32}> {d = 3 : i32}' in ours


def test_cli_prints_properties(tmp_path):
    path = tmp_path / "t.mlir"
    path.write_text(CASES["arith"])
    proc = subprocess.run([sys.executable, "-m", "polyopt", "opt", "--mlir-print-op-generic",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"arith.constant"() <{value = 1 : i32}> : () -> i32' in proc.stdout
    assert proc.stdout.rstrip("\n") + "\n" == mlir_opt(CASES["arith"], "--mlir-print-op-generic")
