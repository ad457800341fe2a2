"""Rules of upstream's parser and verifiers that a run of MLIR 22's own test files through
``polyopt opt`` found missing or wrong (2026-11-28, about 1000 parts of Affine, SCF, MemRef,
Arith, Math, Func, Linalg, Vector and IR tests): each case is checked against mlir-opt-22."""

import re
import subprocess
import sys

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from upstream_mlir import mlir_opt, run_mlir_opt

POW2 = ("attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute "
        "whose value is positive and whose value is a power of two > 0")


@pytest.mark.parametrize("text, message", [
    ("""memref.global "private" @g : memref<4xf32> = dense<1.0> {alignment = 63}""",
     "'memref.global' op " + POW2),
    ("""memref.global "priate" constant @g : memref<2xf32> = uninitialized""",
     """'memref.global' op visibility expected to be one of ["public", "private", "nested"], """
     """but got "priate\""""),
    ("""func.func @f(%m: memref<4xf32>, %i: index) {
  %v = memref.load %m[%i] {alignment = 3 : i64} : memref<4xf32>
  return
}""", "'memref.load' op " + POW2),
    ("""func.func @f(%m: memref<4xf32>, %i: index, %x: f32) {
  memref.store %x, %m[%i] {alignment = 48 : i64} : memref<4xf32>
  return
}""", "'memref.store' op " + POW2),
    ("""func.func @f(%m: memref<8xf32>, %i: index) {
  %v = vector.load %m[%i] {alignment = 12 : i64} : memref<8xf32>, vector<4xf32>
  return
}""", "'vector.load' op " + POW2),
    ("""func.func @f(%m: memref<4xf32>, %i: index) {
  %v = memref.load %m[%i] {nontemporal = 1 : i32} : memref<4xf32>
  return
}""", "'memref.load' op attribute 'nontemporal' failed to satisfy constraint: bool attribute"),
    ("""func.func @f() {
  affine.for %n0#0 = 0 to 7 {
  }
  return
}""", "2:17: error: result number not allowed in argument list"),
    ("""func.func @f() {
  affine.parallel (%i#1) = (0) to (4) {
  }
  return
}""", "2:22: error: result number not allowed in argument list"),
    ("""func.func @f(%a#1: i32) {
  return
}""", "1:16: error: result number not allowed in argument list"),
])
def test_what_upstream_refuses_is_refused(text, message):
    """Each was accepted; an alignment LLVM cannot take then failed as an internal error in
    translate and run."""
    upstream = run_mlir_opt(text)
    assert upstream.returncode == 1
    with pytest.raises(PolyoptError) as e:
        polyopt.parse(text)
    assert message in e.value.render("-")
    # upstream says the same, give or take its 'custom op' prefix and polyopt's "(got ...)"
    core = message.split(" error: ")[-1].split("' op ")[-1].split(" (got")[0]
    assert core in upstream.stderr


def test_translate_of_a_global_of_bad_alignment_is_an_error_not_an_internal_one(tmp_path):
    path = tmp_path / "g.mlir"
    path.write_text("""memref.global "private" @gv : memref<4xf32> = dense<1.0> {alignment = 63}
func.func @main() -> f32 {
  %m = memref.get_global @gv : memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}
""")
    proc = subprocess.run([sys.executable, "-m", "polyopt", "translate", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and f"{path}:1:1: error: 'memref.global' op " + POW2 in \
        proc.stderr, proc.stderr


def test_a_property_wins_over_an_attribute_of_the_same_name():
    """In the generic form ``<{map = ...}> {map = ...}``: the inherent attribute (the property)
    is what the op means; the discardable one had overwritten it, so the load read A[i + 1]
    and the comparison was eq instead of slt."""
    text = """func.func @f(%m: memref<8xf32>, %i: index) -> f32 {
  %v = "affine.load"(%m, %i) <{map = affine_map<(d0) -> (d0)>}> {map = affine_map<(d0) -> (d0 + 1)>} : (memref<8xf32>, index) -> f32
  return %v : f32
}
func.func @g(%a: i32, %b: i32) -> i1 {
  %v = "arith.cmpi"(%a, %b) <{predicate = 2 : i64}> {predicate = 0 : i64} : (i32, i32) -> i1
  return %v : i1
}
"""
    assert str(polyopt.parse(text)).strip() == mlir_opt(text).strip()
    m = polyopt.compile(text)
    assert m["f"](np.arange(8, dtype=np.float32), 3) == 3.0
    assert m["g"](-1, 2) == 1


def test_a_reinterpret_cast_into_dynamic_sizes_and_strides_is_valid():
    """Upstream checks the result type's sizes, offset and strides only where they are
    static; its own MemRef test casts to ``memref<10x?xf32, strided<[?, 1], offset: ?>>``."""
    text = """func.func @f(%in: memref<?xf32>, %o: memref<10x10xf32>) -> index {
  %a = memref.reinterpret_cast %in to offset: [1], sizes: [10, 10], strides: [10, 1] : memref<?xf32> to memref<10x?xf32, strided<[?, 1], offset: ?>>
  %c1 = arith.constant 1 : index
  %d = memref.dim %a, %c1 : memref<10x?xf32, strided<[?, 1], offset: ?>>
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %v = memref.load %a[%i, %j] : memref<10x?xf32, strided<[?, 1], offset: ?>>
      memref.store %v, %o[%i, %j] : memref<10x10xf32>
    }
  }
  return %d : index
}
"""
    assert str(polyopt.parse(text)).strip() == mlir_opt(text).strip()
    x = np.arange(101, dtype=np.float32)
    o = np.zeros((10, 10), np.float32)
    assert polyopt.compile(text)["f"](x, o) == 10
    assert np.array_equal(o, x[1:].reshape(10, 10))
    # a static size of the type that is not the op's is still an error
    bad = text.replace("memref<10x?xf32, strided<[?, 1], offset: ?>>",
                       "memref<10x9xf32, strided<[?, 1], offset: ?>>")
    with pytest.raises(PolyoptError, match="expected result type with size = 10 instead of 9 "
                                           "in dim = 1"):
        polyopt.parse(bad)


def test_an_allocation_takes_one_symbol_per_question_mark_of_a_strided_layout():
    """polyopt counted symbols of affine-map layouts only: it accepted (and printed, for
    mlir-opt to refuse) an allocation of ``strided<[1], offset: ?>`` without its symbol, and
    refused the one with it."""
    without = """func.func @f() {
  %A = memref.alloc() : memref<4xf32, strided<[1], offset: ?>>
  return
}
"""
    with_ = """func.func @f(%s: index, %t: index) {
  %A = memref.alloc()[%s] : memref<4xf32, strided<[1], offset: ?>>
  %B = memref.alloca()[%s, %t] : memref<4x4xf32, strided<[?, 1], offset: ?>>
  return
}
"""
    assert run_mlir_opt(without).returncode == 1
    with pytest.raises(PolyoptError, match="symbol operand count does not equal memref symbol "
                                           "count: expected 1, got 0"):
        polyopt.parse(without)
    assert str(polyopt.parse(with_)).strip() == mlir_opt(with_).strip()


def test_a_function_whose_entry_block_names_its_arguments():
    """``func.func @f(f32) { ^bb0(%a: f32): ... }``, as upstream's Arith and parser tests
    write functions: it was "expected named arguments"."""
    text = """func.func @f(f32) -> f32 {
^bb0(%a : f32):
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}
"""
    assert str(polyopt.parse(text)).strip() == mlir_opt(text).strip()
    assert polyopt.compile(text)["f"](1.5) == 3.0
    for bad, message in [
            ("func.func @f(f32) -> i32 {\n^bb0(%a : i32):\n  return %a : i32\n}\n",
             "type of entry block argument #0('i32') must match the type of the corresponding "
             "argument in function signature('f32')"),
            ("func.func @f(f32) {\n  return\n}\n",
             "entry block must have 1 arguments to match function signature")]:
        assert message in run_mlir_opt(bad).stderr
        with pytest.raises(PolyoptError, match=re.escape(message)):
            polyopt.parse(bad)
