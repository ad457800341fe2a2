"""``linalg.softmax`` on memrefs: printed, generalized and refused as mlir-opt-22 does, left by
--convert-linalg-to-affine-loops as mlir-opt-22 leaves it, and (compiling, or --hopt)
decomposed into loops that compute numpy's softmax, in place too."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

HEAD = ("func.func @f(%A: memref<4x5xf32>, %E: memref<4x5xf32>, %F: memref<5x4xf32>, "
        "%G: memref<4x5xf64>) {\n  ")


def func(body: str) -> str:
    return HEAD + body + "\n  return\n}\n"


VALID = func("linalg.softmax dimension(1) ins(%A : memref<4x5xf32>) outs(%E : memref<4x5xf32>)"
             "\n  linalg.softmax {foo} dimension(0) ins(%A : memref<4x5xf32>) outs(%A : "
             "memref<4x5xf32>)")


def test_printed_generalized_and_left_by_the_loop_lowering_as_mlir_opt_does():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(VALID, "t.mlir")) == mlir_opt(VALID)
    generic = mlir_opt(VALID, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(VALID)
    module = parse(VALID, "t.mlir")
    convert_linalg_to_affine_loops(module)
    assert print_module(module) == mlir_opt(VALID, "--convert-linalg-to-affine-loops")


@pytest.mark.parametrize("body", [
    "linalg.softmax dimension(2) ins(%A : memref<4x5xf32>) outs(%E : memref<4x5xf32>)",
    "linalg.softmax dimension(1) ins(%A : memref<4x5xf32>) outs(%F : memref<5x4xf32>)",
    "linalg.softmax dimension(0) ins(%A : memref<4x5xf32>) outs(%G : memref<4x5xf64>)",
])
def test_errors_are_mlir_opts(body):
    with pytest.raises(PolyoptError) as info:
        parse(func(body), "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(func(body), filename="t.mlir")


def softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("switches", [{}, dict(hopt=True, copy=True, unroll=True,
                                                    scalrep=True, vect=True)])
@pytest.mark.parametrize("t, dtype", [("f32", np.float32), ("f64", np.float64)])
def test_runs_as_numpy(switches, t, dtype):
    src = f"""
func.func @mid(%x: memref<3x7x5x{t}>, %y: memref<3x7x5x{t}>) {{
  linalg.softmax dimension(1) ins(%x : memref<3x7x5x{t}>) outs(%y : memref<3x7x5x{t}>)
  return
}}
func.func @rows_in_place(%x: memref<6x129x{t}>) {{
  linalg.softmax dimension(1) ins(%x : memref<6x129x{t}>) outs(%x : memref<6x129x{t}>)
  return
}}
"""
    mod = polyopt.compile(src, **switches)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 7, 5)) * 30).astype(dtype)     # exp would overflow unshifted
    y = np.zeros_like(x)
    mod["mid"](x, y)
    rtol = 1e-5 if t == "f32" else 1e-12
    np.testing.assert_allclose(y, softmax(x.astype(np.float64), 1), rtol=rtol, atol=1e-30)
    z = rng.standard_normal((6, 129)).astype(dtype)
    want = softmax(z.astype(np.float64), 1)
    mod["rows_in_place"](z)
    np.testing.assert_allclose(z, want, rtol=rtol, atol=1e-30)


def test_integer_softmax_is_a_located_error():
    src = ("func.func @f(%x: memref<4xi32>) {\n  linalg.softmax dimension(0) ins(%x : "
           "memref<4xi32>) outs(%x : memref<4xi32>)\n  return\n}\n")
    assert "linalg.softmax" in mlir_opt(src)          # mlir-opt-22 takes it, and runs it nowhere
    with pytest.raises(PolyoptError, match=r"s.mlir:2:3: .*exp has no integer form"):
        polyopt.compile(src, filename="s.mlir")
