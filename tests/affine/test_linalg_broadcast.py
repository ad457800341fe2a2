"""``linalg.broadcast`` on memrefs: printed, generalized, lowered and refused as mlir-opt-22
does, and run against numpy (static, ``?`` and 0-d inputs, added dimensions in any order)."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%a: memref<8x32xf32>, %b: memref<8x16x32xf32>, %c: memref<8x16x32xf64>, "
        "%v: memref<16xf32>, %s: memref<f32>, %m: memref<4x5xf32>, %d: memref<?x32xf32>, "
        "%e: memref<?x16x32xf32>")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n  {body}\n  return\n}}\n"


VALID = func("\n  ".join([
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [1]",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [1] {foo = 1}",
    "linalg.broadcast ins(%v : memref<16xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [2, 0]",
    "linalg.broadcast ins(%s : memref<f32>) outs(%m : memref<4x5xf32>) dimensions = [0, 1]",
    "linalg.broadcast ins(%d : memref<?x32xf32>) outs(%e : memref<?x16x32xf32>) "
    "dimensions = [1]",
]))


def test_printed_as_mlir_opt_prints():
    assert print_module(parse(VALID, "t.mlir")) == mlir_opt(VALID)


def test_generic_form_reads_back():
    generic = mlir_opt(VALID, "--mlir-print-op-generic")
    module = parse(generic, "g.mlir")
    assert print_module(module) == mlir_opt(VALID)
    assert mlir_opt(print_module(module, generic=True), "--mlir-print-op-generic") == generic


def test_lowered_to_the_loops_mlir_opt_makes():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    module = parse(VALID, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 5
    assert print_module(module) == mlir_opt(VALID, "--convert-linalg-to-affine-loops")


ERRORS = [
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [1, 2]",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = []",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [3]",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [0]",
    "linalg.broadcast ins(%d : memref<?x32xf32>) outs(%b : memref<8x16x32xf32>) "
    "dimensions = [1]",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%c : memref<8x16x32xf64>) "
    "dimensions = [1]",
    "linalg.broadcast ins(%a : memref<8x32xf32>) outs(%b : memref<8x16x32xf32>)",
]


@pytest.mark.parametrize("body", ERRORS)
def test_error_is_mlir_opts(body):
    text = func(body)
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(text, filename="t.mlir")


def test_a_repeated_dimension_is_an_error():
    # (mlir-opt-22 reads past the input's shape here and prints a garbage size)
    text = func("linalg.broadcast ins(%v : memref<16xf32>) outs(%b : memref<8x16x32xf32>) "
                "dimensions = [0, 0]")
    with pytest.raises(PolyoptError, match=r"dimensions \[0, 0\] name an init dimension twice"):
        parse(text, "t.mlir")


def test_runs_as_numpy():
    src = """
func.func @rows(%x: memref<7x13xf64>, %y: memref<7x5x13xf64>) {
  linalg.broadcast ins(%x : memref<7x13xf64>) outs(%y : memref<7x5x13xf64>) dimensions = [1]
  return
}
func.func @vector(%x: memref<5xi32>, %y: memref<3x5x2xi32>) {
  linalg.broadcast ins(%x : memref<5xi32>) outs(%y : memref<3x5x2xi32>) dimensions = [2, 0]
  return
}
func.func @scalar(%x: memref<f32>, %y: memref<3x4xf32>) {
  linalg.broadcast ins(%x : memref<f32>) outs(%y : memref<3x4xf32>) dimensions = [0, 1]
  return
}
func.func @dynamic(%x: memref<?x13xf64>, %y: memref<?x5x13xf64>) {
  linalg.broadcast ins(%x : memref<?x13xf64>) outs(%y : memref<?x5x13xf64>) dimensions = [1]
  return
}
"""
    for switches in ({}, dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)):
        m = polyopt.compile(src, **switches)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((7, 13))
        y = np.zeros((7, 5, 13))
        m["rows"](x, y)
        np.testing.assert_array_equal(y, np.broadcast_to(x[:, None, :], y.shape))
        xi = np.arange(5, dtype=np.int32)
        yi = np.zeros((3, 5, 2), np.int32)
        m["vector"](xi, yi)
        np.testing.assert_array_equal(yi, np.broadcast_to(xi[None, :, None], yi.shape))
        ys = np.zeros((3, 4), np.float32)
        m["scalar"](np.array(2.5, np.float32), ys)
        np.testing.assert_array_equal(ys, np.full((3, 4), 2.5, np.float32))
        xd = rng.standard_normal((9, 13))
        yd = np.zeros((9, 5, 13))
        m["dynamic"](xd, yd)
        np.testing.assert_array_equal(yd, np.broadcast_to(xd[:, None, :], yd.shape))
