"""The numpy calling convention for every element type (issue 13): f16 is numpy's float16, bf16
an ml_dtypes.bfloat16 array or a uint16 array of its bits (the error says which applies), i1 is
bool, index is int64."""

import numpy as np
import pytest

import polyopt
from polyopt.codegen import jit

import ml_dtypes  # noqa: E402  (the test extra installs it: scripts/setup.sh)

TEXT = """
func.func @h(%A: memref<?xf16>, %B: memref<4xbf16>, %C: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : memref<?xf16>
  affine.for %i = 0 to %n {
    %a = affine.load %A[%i] : memref<?xf16>
    %b = arith.addf %a, %a : f16
    affine.store %b, %A[%i] : memref<?xf16>
  }
  affine.for %i = 0 to 4 {
    %x = affine.load %B[%i] : memref<4xbf16>
    %y = arith.extf %x : bf16 to f32
    affine.store %y, %C[%i] : memref<4xf32>
    %z = arith.mulf %x, %x : bf16
    affine.store %z, %B[%i] : memref<4xbf16>
  }
  return
}
"""


@pytest.fixture(scope="module")
def h():
    return polyopt.compile(TEXT)["h"]


def test_f16_and_bf16_arrays(h):
    A = np.array([1.5, 2.25, -3.0, 65504.0], np.float16)
    B = np.array([1.5, 2.0, 3.0, -0.5], ml_dtypes.bfloat16)
    C = np.zeros(4, np.float32)
    h(A, B, C)
    np.testing.assert_array_equal(A, np.array([3.0, 4.5, -6.0, np.inf], np.float16))
    np.testing.assert_array_equal(C, [1.5, 2.0, 3.0, -0.5])
    np.testing.assert_array_equal(B.astype(np.float32), [2.25, 4.0, 9.0, 0.25])


def test_bf16_as_uint16_bits(h):
    bits = np.array([1.5, 2.0, 3.0, -0.5], ml_dtypes.bfloat16).view(np.uint16).copy()
    h(np.zeros(0, np.float16), bits, np.zeros(4, np.float32))
    np.testing.assert_array_equal(bits.view(ml_dtypes.bfloat16).astype(np.float32),
                                  [2.25, 4.0, 9.0, 0.25])


def test_wrong_dtype_names_what_bf16_takes(h, monkeypatch):
    with pytest.raises(TypeError, match=r"argument 'arg1' \(memref<4xbf16>\): expected dtype "
                                        r"ml_dtypes.bfloat16 or uint16 \(bf16 bits\), got "
                                        r"float32"):
        h(np.zeros(1, np.float16), np.zeros(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"argument 'arg0' \(memref<\?xf16>\): expected dtype "
                                        r"float16, got float32"):
        h(np.zeros(1, np.float32), np.zeros(4, np.uint16), np.zeros(4, np.float32))
    # without ml_dtypes, the message says so and uint16 bits still work
    monkeypatch.setattr(jit, "_bfloat16_dtype", lambda: None)
    h2 = polyopt.compile(TEXT)["h"]
    with pytest.raises(TypeError, match=r"expected dtype uint16 \(bf16 bits; ml_dtypes is not "
                                        r"installed"):
        h2(np.zeros(1, np.float16), np.zeros(4, np.float32), np.zeros(4, np.float32))
    h2(np.zeros(1, np.float16), np.zeros(4, np.uint16), np.zeros(4, np.float32))


def test_half_precision_scalars_are_refused_with_the_alternative():
    compiled = polyopt.compile("func.func @f(%x: f16) -> f16 {\n  return %x : f16\n}\n")
    with pytest.raises(TypeError, match=r"f16 scalars cannot be passed to or returned from "
                                        r"Python .* use a 0-d memref<f16> instead"):
        compiled["f"](1.0)


def test_memref_results_are_not_returned_to_numpy():
    compiled = polyopt.compile("""
func.func @f() -> memref<4xf64> {
  %a = memref.alloc() : memref<4xf64>
  return %a : memref<4xf64>
}""")
    with pytest.raises(TypeError, match=r"result #0 is a memref, which cannot be returned to "
                                        r"numpy"):
        compiled["f"]()
