"""A function the module defines under the name of a C library function (``@erf``, ``@free``)
is that function, and the C library's stays what the lowering calls: math.erf inside a user's
``@erf`` called itself forever, and LLVM takes a function named like a libcall for it."""

from __future__ import annotations

import math

import numpy as np

import polyopt

TEXT = """func.func @erf(%x: f64) -> f64 {
  %y = math.erf %x : f64
  return %y : f64
}
func.func @tanh(%x: f64) -> f64 {
  %y = math.tanh %x : f64
  %two = arith.constant 2.0 : f64
  %z = arith.mulf %y, %two : f64
  return %z : f64
}
func.func @free(%x: f64) -> f64 {
  %two = arith.constant 2.0 : f64
  %y = arith.mulf %x, %two : f64
  return %y : f64
}
func.func @sqrt(%x: f64) -> f64 {
  %y = arith.negf %x : f64
  return %y : f64
}
func.func @main(%x: f64, %A: memref<512x512xf64>) -> f64 {
  %buf = memref.alloc() : memref<512x512xf64>
  memref.copy %A, %buf : memref<512x512xf64> to memref<512x512xf64>
  %c7 = arith.constant 7 : index
  %v = memref.load %buf[%c7, %c7] : memref<512x512xf64>
  memref.dealloc %buf : memref<512x512xf64>
  %e = func.call @erf(%x) : (f64) -> f64
  %f = func.call @free(%v) : (f64) -> f64
  %four = arith.constant 4.0 : f64
  %s = func.call @sqrt(%four) : (f64) -> f64
  %t = arith.addf %e, %f : f64
  %u = arith.addf %t, %s : f64
  return %u : f64
}
"""


def test_functions_named_like_the_c_library_are_the_modules_own():
    m = polyopt.compile(TEXT)
    assert m["erf"](0.5) == math.erf(0.5)
    assert m["tanh"](0.5) == 2 * math.tanh(0.5)
    assert m["free"](3.0) == 6.0
    assert m["sqrt"](4.0) == -4.0       # not folded to libm's sqrt(4.0) = 2
    a = np.zeros((512, 512))
    a[7, 7] = 5.0
    for _ in range(3):      # the buffer goes back to the C library's free each call
        assert m["main"](0.5, a) == math.erf(0.5) + 10.0 - 4.0
