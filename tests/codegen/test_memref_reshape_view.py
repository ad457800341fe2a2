"""``memref.reshape``, ``memref.view``, ``memref.extract_strided_metadata`` and
``memref.atomic_rmw``: printed and refused as mlir-opt-22 does, and run against numpy."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%a: memref<4x5xf32>, %s: memref<2xindex>, %s3: memref<3xindex>, %sd: memref<?xindex>, "
        "%sf: memref<2xf32>, %s32: memref<1xi32>, %b: memref<2048xi8>, %b2: memref<16x16xi8>, "
        "%i: index, %v: f32, %vi: i32, %ai: memref<8xi32>, "
        "%st: memref<4x5xf32, strided<[10, 1]>>, %ax: memref<8xindex>, %x: index, "
        "%d: memref<?xf32, strided<[?], offset: ?>>")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


ALL_OPS = func("""
  %r = memref.reshape %a(%s) : (memref<4x5xf32>, memref<2xindex>) -> memref<2x10xf32>
  %r2 = memref.reshape %a(%s) {foo} : (memref<4x5xf32>, memref<2xindex>) -> memref<?x?xf32>
  %r3 = memref.reshape %a(%s32) : (memref<4x5xf32>, memref<1xi32>) -> memref<?xf32>
  %r4 = memref.reshape %a(%sd) : (memref<4x5xf32>, memref<?xindex>) -> memref<*xf32>
  %c0 = arith.constant 0 : index
  %w = memref.view %b[%c0][] : memref<2048xi8> to memref<64x4xf32>
  %w2 = memref.view %b[%i][%i] {bar = 1} : memref<2048xi8> to memref<?x4xf32>
  %0 = memref.atomic_rmw addf %v, %a[%i, %i] : (f32, memref<4x5xf32>) -> f32
  %1 = memref.atomic_rmw maximumf %v, %a[%i, %c0] {foo = 1} : (f32, memref<4x5xf32>) -> f32
  %2 = memref.atomic_rmw xori %vi, %ai[%i] : (i32, memref<8xi32>) -> i32
  %3 = memref.atomic_rmw assign %v, %a[%i, %i] : (f32, memref<4x5xf32>) -> f32
  %base, %off, %size, %stride = memref.extract_strided_metadata %d : memref<?xf32, strided<[?], offset: ?>> -> memref<f32>, index, index, index
  %b0, %o0 = memref.extract_strided_metadata %w : memref<64x4xf32> -> memref<f32>, index, index, index, index, index
""".replace("%b0, %o0 =", "%b0, %o0, %z1, %z2, %z3, %z4 ="))


def test_printed_as_mlir_opt_prints():
    """Results in groups too: a rank-2 extract_strided_metadata is `%sizes:2, %strides:2`."""
    ours = print_module(parse(ALL_OPS, "t.mlir"))
    assert ours == mlir_opt(ALL_OPS)
    assert "%sizes_6:2, %strides_7:2 = memref.extract_strided_metadata" in ours


def test_printed_form_is_accepted_upstream_and_reads_back():
    printed = print_module(parse(ALL_OPS, "t.mlir"))
    assert print_module(parse(mlir_opt(printed), "u.mlir")) == printed


def test_generic_form_reads_back():
    generic = mlir_opt(ALL_OPS, "--mlir-print-op-generic")
    assert "kind = 4 : i64" in generic          # maximumf's place in MLIR's enum
    assert print_module(parse(generic, "g.mlir")) == print_module(parse(ALL_OPS, "t.mlir"))


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render().splitlines()[0]


ERRORS = [
    "%r = memref.reshape %a(%s3) : (memref<4x5xf32>, memref<3xindex>) -> memref<2x10xf32>",
    "%r = memref.reshape %a(%s) : (memref<4x5xf32>, memref<2xindex>) -> memref<2x10xf64>",
    "%r = memref.reshape %a(%sd) : (memref<4x5xf32>, memref<?xindex>) -> memref<2x10xf32>",
    "%r = memref.reshape %st(%s) : (memref<4x5xf32, strided<[10, 1]>>, memref<2xindex>) -> "
    "memref<2x10xf32>",
    "%r = memref.reshape %a(%s) : (memref<4x5xf32>, memref<2xindex>) -> "
    "memref<2x10xf32, strided<[20, 1]>>",
    "%r = memref.reshape %a(%sf) : (memref<4x5xf32>, memref<2xf32>) -> memref<2x10xf32>",
    "%r = memref.view %a[%i][] : memref<4x5xf32> to memref<2xf32>",
    "%r = memref.view %b2[%i][] : memref<16x16xi8> to memref<2xf32>",
    "%r = memref.view %b[%i][] : memref<2048xi8> to memref<?x4xf32>",
    "%r = memref.view %b[%i][%i] : memref<2048xi8> to memref<4x4xf32>",
    "%r = memref.view %b[%i][] : memref<2048xi8> to memref<4x4xf32, strided<[8, 1]>>",
    "%r = memref.atomic_rmw addf %v, %a[%i] : (f32, memref<4x5xf32>) -> f32",
    "%r = memref.atomic_rmw addi %v, %a[%i, %i] : (f32, memref<4x5xf32>) -> f32",
    "%r = memref.atomic_rmw addf %vi, %ai[%i] : (i32, memref<8xi32>) -> i32",
    "%r = memref.atomic_rmw addf %v, %ai[%i] : (f32, memref<8xi32>) -> f32",
    "%r = memref.atomic_rmw addi %vi, %ai[%i] : (i32, memref<8xi32>) -> f32",
    "%r = memref.atomic_rmw addi %x, %ax[%i] : (index, memref<8xindex>) -> index",
    "%r = memref.atomic_rmw foo %v, %a[%i, %i] : (f32, memref<4x5xf32>) -> f32",
    "%r = memref.atomic_rmw maxs %v, %a[%i, %i] : (f32, memref<4x5xf32>) -> f32",
    "%b0, %o, %q:2, %t:2 = memref.extract_strided_metadata %a : memref<4x5xf32> -> "
    "memref<f64>, index, index, index, index, index",
    "%b0, %o, %q:2, %t:2 = memref.extract_strided_metadata %a : memref<4x5xf32> -> "
    "memref<1xf32>, index, index, index, index, index",
    "%b0, %o, %q = memref.extract_strided_metadata %a : memref<4x5xf32> -> "
    "memref<f32>, index, index",
]


@pytest.mark.parametrize("body", ERRORS)
def test_error_is_mlir_opts(body):
    text = func(body)
    assert error_of(text) == mlir_opt_error(text, filename="t.mlir")


# ---------------------------------------------------------------------------------------------
# execution


RESHAPE = """
func.func @reshape(%a: memref<5x7xf64>, %s: memref<2xindex>, %s32: memref<3xi32>,
                   %o: memref<7x5xf64>, %o2: memref<5x1x7xf64>) {
  %r = memref.reshape %a(%s) : (memref<5x7xf64>, memref<2xindex>) -> memref<?x?xf64>
  %r3 = memref.reshape %a(%s32) : (memref<5x7xf64>, memref<3xi32>) -> memref<5x?x7xf64>
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 5 {
      %v = memref.load %r[%i, %j] : memref<?x?xf64>
      memref.store %v, %o[%i, %j] : memref<7x5xf64>
    }
  }
  affine.for %i = 0 to 5 {
    affine.for %k = 0 to 7 {
      %c0 = arith.constant 0 : index
      %v = memref.load %r3[%i, %c0, %k] : memref<5x?x7xf64>
      memref.store %v, %o2[%i, %c0, %k] : memref<5x1x7xf64>
    }
  }
  return
}
func.func @static_reshape(%a: memref<5x7xf64>, %s: memref<2xindex>, %o: memref<35xf64>) {
  %r = memref.reshape %a(%s) : (memref<5x7xf64>, memref<2xindex>) -> memref<1x35xf64>
  affine.for %i = 0 to 35 {
    %c0 = arith.constant 0 : index
    %v = memref.load %r[%c0, %i] : memref<1x35xf64>
    memref.store %v, %o[%i] : memref<35xf64>
  }
  return
}
"""


def test_reshape_reads_the_shape_memref():
    mod = polyopt.compile(RESHAPE)
    a = np.arange(35.).reshape(5, 7) * 1.5
    o, o2 = np.zeros((7, 5)), np.zeros((5, 1, 7))
    mod["reshape"](a, np.array([7, 5], np.int64), np.array([5, 1, 7], np.int32), o, o2)
    np.testing.assert_array_equal(o, a.reshape(7, 5))
    np.testing.assert_array_equal(o2, a.reshape(5, 1, 7))
    flat = np.zeros(35)
    mod["static_reshape"](a, np.array([1, 35], np.int64), flat)
    np.testing.assert_array_equal(flat, a.ravel())


VIEW = """
func.func @view(%b: memref<203xi8>, %sh: index, %n: index, %o: memref<7x3xf32>) {
  %v = memref.view %b[%sh][%n] : memref<203xi8> to memref<?x3xf32>
  %c4 = arith.constant 4 : index
  %w = memref.view %b[%c4][] : memref<203xi8> to memref<7x3xf32>
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 3 {
      %x = memref.load %v[%i, %j] : memref<?x3xf32>
      %y = memref.load %w[%i, %j] : memref<7x3xf32>
      %z = arith.subf %x, %y : f32
      memref.store %z, %o[%i, %j] : memref<7x3xf32>
      %t = arith.constant 2.0 : f32
      %u = arith.mulf %y, %t : f32
      memref.store %u, %w[%i, %j] : memref<7x3xf32>
    }
  }
  return
}
"""


@pytest.mark.parametrize("shift", [0, 8, 12])
def test_view_shifts_bytes_into_the_buffer(shift):
    mod = polyopt.compile(VIEW)
    floats = np.arange(50, dtype=np.float32) ** 2
    buf = np.zeros(203, np.int8)
    buf[:200] = floats.view(np.int8)
    o = np.zeros((7, 3), np.float32)
    mod["view"](buf, shift, 7, o)
    mem, expect = floats.copy(), np.zeros((7, 3), np.float32)
    for i in range(7):            # the two views alias: run the loops in order on a copy
        for j in range(3):
            y = mem[1 + 3 * i + j]
            expect[i, j] = mem[shift // 4 + 3 * i + j] - y
            mem[1 + 3 * i + j] = 2 * y
    np.testing.assert_array_equal(o, expect)
    after = buf[:200].view(np.float32)
    np.testing.assert_array_equal(after, mem)                       # the view writes through
    assert not np.array_equal(mem, floats)


ATOMIC = """
func.func @atomic(%a: memref<3x5xf64>, %ai: memref<9xi32>, %x: f64, %xi: i32,
                  %old: memref<16xf64>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %0 = memref.atomic_rmw addf %x, %a[%i, %c0] : (f64, memref<3x5xf64>) -> f64
  %1 = memref.atomic_rmw mulf %x, %a[%i, %c1] : (f64, memref<3x5xf64>) -> f64
  %2 = memref.atomic_rmw maximumf %x, %a[%i, %c2] : (f64, memref<3x5xf64>) -> f64
  %3 = memref.atomic_rmw minimumf %x, %a[%i, %c3] : (f64, memref<3x5xf64>) -> f64
  %4 = memref.atomic_rmw assign %x, %a[%i, %c4] : (f64, memref<3x5xf64>) -> f64
  %5 = memref.atomic_rmw addi %xi, %ai[%c0] : (i32, memref<9xi32>) -> i32
  %6 = memref.atomic_rmw muli %xi, %ai[%c1] : (i32, memref<9xi32>) -> i32
  %7 = memref.atomic_rmw maxs %xi, %ai[%c2] : (i32, memref<9xi32>) -> i32
  %8 = memref.atomic_rmw maxu %xi, %ai[%c3] : (i32, memref<9xi32>) -> i32
  %9 = memref.atomic_rmw mins %xi, %ai[%c4] : (i32, memref<9xi32>) -> i32
  %10 = memref.atomic_rmw minu %xi, %ai[%c5] : (i32, memref<9xi32>) -> i32
  %11 = memref.atomic_rmw andi %xi, %ai[%c6] : (i32, memref<9xi32>) -> i32
  %12 = memref.atomic_rmw ori %xi, %ai[%c7] : (i32, memref<9xi32>) -> i32
  %13 = memref.atomic_rmw xori %xi, %ai[%c8] : (i32, memref<9xi32>) -> i32
  memref.store %0, %old[%c0] : memref<16xf64>
  memref.store %1, %old[%c1] : memref<16xf64>
  memref.store %2, %old[%c2] : memref<16xf64>
  memref.store %3, %old[%c3] : memref<16xf64>
  memref.store %4, %old[%c4] : memref<16xf64>
  %f6 = arith.sitofp %6 : i32 to f64
  memref.store %f6, %old[%c5] : memref<16xf64>
  return
}
"""


def test_atomic_rmw_updates_and_returns_the_old_value():
    mod = polyopt.compile(ATOMIC)
    a = np.arange(15.).reshape(3, 5) + 1.0
    ai = np.array([10, -3, -3, -3, -3, -3, 12, 12, 12], np.int32)
    old = np.zeros(16)
    before, before_i = a.copy(), ai.copy()
    mod["atomic"](a, ai, 2.5, 5, old, 2)
    row = before[2]
    np.testing.assert_array_equal(a[2], [row[0] + 2.5, row[1] * 2.5, max(row[2], 2.5),
                                         min(row[3], 2.5), 2.5])
    np.testing.assert_array_equal(a[:2], before[:2])
    np.testing.assert_array_equal(old[:5], row)
    assert old[5] == before_i[1]
    u = before_i.view(np.uint32)
    expect = [10 + 5, -3 * 5, max(-3, 5), np.int32(max(u[3], 5)).item(), min(-3, 5),
              np.int32(min(u[5], 5)).item(), 12 & 5, 12 | 5, 12 ^ 5]
    np.testing.assert_array_equal(ai, np.array(expect, np.int64).astype(np.int32))


def test_atomic_rmw_is_atomic_under_parallel_loops():
    text = """
func.func @count(%h: memref<4xi64>, %s: memref<1xf64>) {
  %one = arith.constant 1 : i64
  %half = arith.constant 0.5 : f64
  affine.parallel (%i) = (0) to (1000) {
    %k = affine.apply affine_map<(d0) -> (d0 mod 4)>(%i)
    %0 = memref.atomic_rmw addi %one, %h[%k] : (i64, memref<4xi64>) -> i64
    %c0 = arith.constant 0 : index
    %1 = memref.atomic_rmw addf %half, %s[%c0] : (f64, memref<1xf64>) -> f64
  }
  return
}
"""
    mod = polyopt.compile(text, threads=2)
    h, s = np.zeros(4, np.int64), np.zeros(1)
    mod["count"](h, s)
    np.testing.assert_array_equal(h, [250] * 4)
    assert s[0] == 500.0


META = """
func.func @meta(%a: memref<6x7xf64>, %out: memref<6xindex>) {
  %s = memref.subview %a[1, 2] [3, 3] [1, 2] : memref<6x7xf64> to memref<3x3xf64, strided<[7, 2], offset: 9>>
  %c = memref.cast %s : memref<3x3xf64, strided<[7, 2], offset: 9>> to memref<?x?xf64, strided<[?, ?], offset: ?>>
  %base, %off, %s0, %s1, %t0, %t1 = memref.extract_strided_metadata %c : memref<?x?xf64, strided<[?, ?], offset: ?>> -> memref<f64>, index, index, index, index, index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  memref.store %off, %out[%c0] : memref<6xindex>
  memref.store %s0, %out[%c1] : memref<6xindex>
  memref.store %s1, %out[%c2] : memref<6xindex>
  memref.store %t0, %out[%c3] : memref<6xindex>
  memref.store %t1, %out[%c4] : memref<6xindex>
  %v = memref.load %base[] : memref<f64>
  %vi = arith.fptosi %v : f64 to i64
  %vx = arith.index_cast %vi : i64 to index
  memref.store %vx, %out[%c5] : memref<6xindex>
  return
}
"""


def test_extract_strided_metadata_of_a_subview():
    mod = polyopt.compile(META)
    out = np.zeros(6, np.int64)
    a = np.arange(42.).reshape(6, 7) + 3
    mod["meta"](a, out)
    np.testing.assert_array_equal(out, [9, 3, 3, 7, 2, 3])   # base[0] is a[0, 0]
