"""The native entry of a compiled function (:mod:`polyopt.codegen.native_call`): it takes the
common case (static row-major memrefs of numpy's canonical dtypes), gives the same results
as the general path, leaves everything else to the general path (same errors, same
acceptance), and keeps the reference counts of what it returns right."""

import sys
import threading

import numpy as np
import pytest

import polyopt
from polyopt.codegen.native_call import LAYOUT_OK

SRC = """
func.func @axpy(%X: memref<5x7xf64>, %Y: memref<5x7xf64>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 7 {
      %x = affine.load %X[%i, %j] : memref<5x7xf64>
      %y = affine.load %Y[%i, %j] : memref<5x7xf64>
      %s = arith.addf %x, %y : f64
      affine.store %s, %Y[%i, %j] : memref<5x7xf64>
    }
  }
  return
}
func.func @scaled(%X: memref<5x7xf64>, %a: f64) {
  return
}
func.func @dynamic(%X: memref<?x7xf64>, %Y: memref<?x?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %X, %c0 : memref<?x7xf64>
  %m = memref.dim %Y, %c1 : memref<?x?xf64>
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %m {
      %x = affine.load %X[%i, 0] : memref<?x7xf64>
      %y = affine.load %Y[%i, %j] : memref<?x?xf64>
      %s = arith.addf %x, %y : f64
      affine.store %s, %Y[%i, %j] : memref<?x?xf64>
    }
  }
  return
}
func.func @strided(%X: memref<?x7xf64, strided<[?, 1], offset: ?>>) {
  return
}
"""


@pytest.fixture(scope="module")
def module():
    return polyopt.compile(SRC)


def test_the_layout_check_passes_on_this_numpy():
    # the entry is an optimization: without it everything still works, but a numpy whose
    # PyArrayObject moved would silently lose it; this says so
    assert LAYOUT_OK


def test_entry_only_for_row_major_memrefs(module):
    assert module["axpy"]._native is not None
    assert module["dynamic"]._native is not None  # '?' sizes: a descriptor of a row-major array
    assert module["scaled"]._native is None       # a scalar argument: the general path
    assert module["strided"]._native is None      # a strided layout: views, the general path


def test_descriptors_carry_the_arrays_sizes(module):
    f = module["dynamic"]
    for rows, cols in ((1, 1), (5, 3), (9, 12)):
        x = np.arange(rows * 7, dtype=np.float64).reshape(rows, 7)
        y = np.ones((rows, cols))
        assert f._native(x, y) is None
        np.testing.assert_array_equal(y, np.broadcast_to(1 + x[:, :1], (rows, cols)))
    assert f._native(np.zeros((3, 6)), np.zeros((3, 2))) is NotImplemented   # 6 is not 7
    with pytest.raises(ValueError, match=r"expected shape \(\?, 7\)"):
        f(np.zeros((3, 6)), np.zeros((3, 2)))


def test_same_result_as_the_general_path(module):
    f = module["axpy"]
    rng = np.random.default_rng(0)
    x, y = rng.random((5, 7)), rng.random((5, 7))
    y1, y2 = y.copy(), y.copy()
    assert f._native(x, y1) is None
    f._fast(x, y2)
    assert np.array_equal(y1, y2) and np.array_equal(y1, x + y)


@pytest.mark.parametrize("bad,error,message", [
    (lambda: np.zeros((5, 7), np.float32), TypeError, "expected dtype float64, got float32"),
    (lambda: np.zeros((7, 5)), ValueError, "expected shape (5, 7)"),
    (lambda: np.zeros((5, 14))[:, ::2], ValueError, "not C-contiguous"),
    (lambda: [[0.0] * 7] * 5, TypeError, "expected a numpy.ndarray"),
])
def test_what_the_entry_refuses_gets_the_general_paths_errors(module, bad, error, message):
    f = module["axpy"]
    assert f._native(np.zeros((5, 7)), bad()) is NotImplemented
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        f(np.zeros((5, 7)), bad())


def test_read_only_arrays_are_refused_by_the_general_path(module):
    y = np.zeros((5, 7))
    y.flags.writeable = False
    assert module["axpy"]._native(np.zeros((5, 7)), y) is NotImplemented
    with pytest.raises(ValueError, match="writeable"):
        module["axpy"](np.zeros((5, 7)), y)


def test_what_the_general_path_accepts_still_works(module):
    class Sub(np.ndarray):
        pass
    f = module["axpy"]
    x = np.ones((5, 7)).view(Sub)            # a subclass: not the entry's exact type
    y = np.zeros((5, 7))
    assert f._native(x, y) is NotImplemented
    f(x, y)
    assert np.array_equal(y, np.ones((5, 7)))
    y = np.zeros((5, 7), dtype=np.dtype("<f8").newbyteorder("="))   # an equal dtype object
    f(np.ones((5, 7)), y)
    assert np.array_equal(y, np.ones((5, 7)))
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        f(x, y, y)


BYTES_AND_BF16 = """
func.func @widen(%X: memref<3x4xi8>, %Y: memref<3x4xi32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %x = affine.load %X[%i, %j] : memref<3x4xi8>
      %w = arith.extui %x : i8 to i32
      affine.store %w, %Y[%i, %j] : memref<3x4xi32>
    }
  }
  return
}
func.func @bf16_to_f32(%X: memref<3x4xbf16>, %Y: memref<3x4xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %x = affine.load %X[%i, %j] : memref<3x4xbf16>
      %w = arith.extf %x : bf16 to f32
      affine.store %w, %Y[%i, %j] : memref<3x4xf32>
    }
  }
  return
}
"""


def test_the_entry_takes_every_dtype_the_general_path_takes():
    # an i8 memref takes int8 and uint8 arrays (MLIR's integers are signless), a bf16 one
    # ml_dtypes.bfloat16 and uint16 bits: uint8 through the general path cost 1.1 us more
    # per call (u8 512x1x512 at 2/3 of s8's speed)
    m = polyopt.compile(BYTES_AND_BF16)
    x = np.arange(250, 262, dtype=np.int64).astype(np.uint8).reshape(3, 4)
    for view in (x, x.view(np.int8)):
        y = np.zeros((3, 4), np.int32)
        assert m["widen"]._native(view, y) is None
        np.testing.assert_array_equal(y, x.astype(np.int32))
    y = np.zeros((3, 4), np.int32)
    assert m["widen"]._native(x.astype(np.int16), y) is NotImplemented
    with pytest.raises(TypeError, match="expected dtype int8 or uint8, got int16"):
        m["widen"](x.astype(np.int16), y)
    f = m["bf16_to_f32"]
    values = np.array([[1.5, -2.0, 0.25, 3.0]] * 3, np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    y = np.zeros((3, 4), np.float32)
    assert f._native(bits, y) is None
    np.testing.assert_array_equal(y, values)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    y = np.zeros((3, 4), np.float32)
    assert f._native(values.astype(ml_dtypes.bfloat16), y) is None
    np.testing.assert_array_equal(y, values)
    assert f._native(values, y) is NotImplemented


def test_reference_counts_of_none_and_notimplemented_stay_put(module):
    f = module["axpy"]
    x, y = np.zeros((5, 7)), np.zeros((5, 7))
    bad = np.zeros((7, 5))
    for _ in range(10):                       # warm up whatever caches the calls fill
        f._native(x, y), f._native(x, bad)
    none, notimpl = sys.getrefcount(None), sys.getrefcount(NotImplemented)
    for _ in range(1000):
        f._native(x, y)
        f._native(x, bad)
    # a missing or extra reference per call would move them by a thousand
    assert abs(sys.getrefcount(None) - none) < 50
    assert abs(sys.getrefcount(NotImplemented) - notimpl) < 50


def test_python_threads_call_the_entry_concurrently(module):
    f = module["axpy"]
    ys = [np.zeros((5, 7)) for _ in range(4)]

    def work(y):
        for _ in range(2000):
            f(np.ones((5, 7)), y)
    threads = [threading.Thread(target=work, args=(y,)) for y in ys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for y in ys:
        assert np.array_equal(y, np.full((5, 7), 2000.0))
