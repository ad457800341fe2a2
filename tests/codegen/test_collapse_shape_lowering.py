"""Execution of ``memref.collapse_shape`` (a view: the same pointer, the collapsed type) through
``polyopt.compile``, on numpy arrays."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt

STORE_THROUGH_VIEW = """\
func.func @fill(%O: memref<2x3x5x7x{T}>) {{
  %c = memref.collapse_shape %O [[0, 1, 2], [3]] : memref<2x3x5x7x{T}> into memref<30x7x{T}>
  affine.for %i = 0 to 30 {{
    affine.for %j = 0 to 7 {{
      %v = affine.apply affine_map<(d0, d1) -> (d0 * 10 + d1)>(%i, %j)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to {T}
      affine.store %f, %c[%i, %j] : memref<30x7x{T}>
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("elem,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_store_through_a_collapsed_argument(elem, dtype):
    fill = polyopt.compile(STORE_THROUGH_VIEW.format(T=elem))["fill"]
    out = np.full((2, 3, 5, 7), -1, dtype=dtype)
    fill(out)
    expected = (np.arange(30)[:, None] * 10 + np.arange(7)[None, :]).astype(dtype)
    np.testing.assert_array_equal(out, expected.reshape(2, 3, 5, 7))


READ_AND_WRITE = """\
func.func @rowsum(%A: memref<4x3x5xf64>, %S: memref<4x3xf64>) {
  %a = memref.collapse_shape %A [[0, 1], [2]] : memref<4x3x5xf64> into memref<12x5xf64>
  %s = memref.collapse_shape %S [[0, 1]] : memref<4x3xf64> into memref<12xf64>
  affine.for %i = 0 to 12 {
    affine.for %k = 0 to 5 {
      %x = affine.load %a[%i, %k] : memref<12x5xf64>
      %acc = affine.load %s[%i] : memref<12xf64>
      %r = arith.addf %acc, %x : f64
      affine.store %r, %s[%i] : memref<12xf64>
    }
  }
  // a read through the original memref sees what was written through the view
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %first = memref.load %S[%c0, %c2] : memref<4x3xf64>
  %two = arith.constant 2.0 : f64
  %d = arith.mulf %first, %two : f64
  memref.store %d, %S[%c0, %c2] : memref<4x3xf64>
  return
}
"""


def test_views_read_and_write_the_same_memory():
    rowsum = polyopt.compile(READ_AND_WRITE)["rowsum"]
    a = np.random.default_rng(0).standard_normal((4, 3, 5))
    s = np.ones((4, 3))
    rowsum(a, s)
    expected = 1 + a.sum(axis=2)
    expected[0, 2] *= 2
    np.testing.assert_allclose(s, expected)


STRIDED = """\
func.func @f(%B: memref<4x5x6xf64, strided<[30, 6, 1], offset: 3>>) {
  %c = memref.collapse_shape %B [[0, 1], [2]] : memref<4x5x6xf64, strided<[30, 6, 1], offset: 3>> into memref<20x6xf64, strided<[6, 1], offset: 3>>
  affine.for %i = 0 to 20 {
    affine.for %j = 0 to 6 {
      %v = affine.apply affine_map<(d0, d1) -> (d0 * 6 + d1 + 1)>(%i, %j)
      %x = arith.index_cast %v : index to i64
      %f = arith.sitofp %x : i64 to f64
      affine.store %f, %c[%i, %j] : memref<20x6xf64, strided<[6, 1], offset: 3>>
    }
  }
  return
}
"""


def test_collapse_of_a_strided_memref_keeps_its_offset():
    f = polyopt.compile(STRIDED)["f"]
    # the argument is the physical buffer: offset 3, then 4 x 30 elements (the last row needs
    # only 5 x 6 of its 30)
    buf = np.zeros(3 + 3 * 30 + 4 * 6 + 5 + 1)
    f(buf)
    expected = np.zeros_like(buf)
    for i in range(4):
        for j in range(5):
            for k in range(6):
                expected[3 + 30 * i + 6 * j + k] = (5 * i + j) * 6 + k + 1
    np.testing.assert_array_equal(buf, expected)


RANK0 = """\
func.func @f(%A: memref<1x1xf32>, %x: f32) {
  %c = memref.collapse_shape %A [] : memref<1x1xf32> into memref<f32>
  %old = memref.load %c[] : memref<f32>
  %s = arith.addf %old, %x : f32
  memref.store %s, %c[] : memref<f32>
  return
}
"""


def test_collapse_to_rank_0():
    f = polyopt.compile(RANK0)["f"]
    a = np.full((1, 1), 2.5, dtype=np.float32)
    f(a, 1.25)
    assert a[0, 0] == np.float32(3.75)
