"""hopt-collapse-loops: innermost loops whose every access walks contiguous elements become one
loop over collapsed views; numpy's answer before and after, on elementwise nests, sums and
bands that stop short of a memref's rows; bands that may not be collapsed stay as written;
the IR is upstream's."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.printer import print_module
from polyopt.passes import run_pipeline
from polyopt.pipeline import load
from upstream_mlir import mlir_opt

BIAS_RELU6 = """\
func.func @f(%O: memref<2x5x7x9xf32>, %B: memref<5xf32>) {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  affine.for %n = 0 to 2 {
    affine.for %c = 0 to 5 {
      affine.for %h = 0 to 7 {
        affine.for %w = 0 to 9 {
          %x = affine.load %O[%n, %c, %h, %w] : memref<2x5x7x9xf32>
          %y = affine.load %B[%c] : memref<5xf32>
          %s = arith.addf %x, %y : f32
          %r = arith.maximumf %s, %zero : f32
          %q = arith.minimumf %r, %six : f32
          affine.store %q, %O[%n, %c, %h, %w] : memref<2x5x7x9xf32>
        }
      }
    }
  }
  return
}
"""


def collapsed(src):
    remarks = []
    module = load(src)
    run_pipeline(module, "hopt-collapse-loops", remark=lambda loc, m: remarks.append(m))
    return print_module(module), remarks


def run(src, *arrays, **flags):
    fn = polyopt.compile(src, **flags)["f"]
    fn(*arrays)
    return arrays


def test_an_nchw_bias_and_relu6_nest_becomes_one_loop_per_plane():
    text, remarks = collapsed(BIAS_RELU6)
    assert "func.func @f(%arg0: memref<2x5x7x9xf32>, %arg1: memref<5xf32>) {" in text
    # the view at the top of the function, the loads and the store through it
    assert "%collapse_shape = memref.collapse_shape %arg0 [[0], [1], [2, 3]] : " \
        "memref<2x5x7x9xf32> into memref<2x5x63xf32>\n    affine.for %arg2 = 0 to 2" in text
    assert "affine.for %arg4 = 0 to 63 {\n          %0 = affine.load " \
        "%collapse_shape[%arg2, %arg3, %arg4]" in text, text
    assert "affine.store %4, %collapse_shape[%arg2, %arg3, %arg4]" in text
    assert text.count("affine.for") == 3
    assert any("the 2 innermost loops (7x9) run as one loop of 63" in r for r in remarks)
    assert mlir_opt(text) == text
    rng = np.random.default_rng(0)
    o = (4 * rng.standard_normal((2, 5, 7, 9))).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    want = np.clip(o + b[None, :, None, None], 0, 6)
    (got, _) = run(text, o.copy(), b)
    assert np.array_equal(got, want)
    (got, _) = run(BIAS_RELU6, o.copy(), b, hopt=True, copy=True, unroll=True, scalrep=True,
                   vect=True)
    assert np.array_equal(got, want)


def test_a_band_over_part_of_the_rows_and_a_sum_over_the_collapsed_dimensions():
    src = """\
func.func @f(%X: memref<4x6x5xf64>, %S: memref<4xf64>, %Y: memref<4x6x5xf64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 3 {
      affine.for %k = 0 to 5 {
        %x = affine.load %X[%i, %j + 0, %k] : memref<4x6x5xf64>
        %s = affine.load %S[%i] : memref<4xf64>
        %t = arith.addf %s, %x : f64
        affine.store %t, %S[%i] : memref<4xf64>
        affine.store %t, %Y[%i, %j, %k] : memref<4x6x5xf64>
      }
    }
  }
  return
}
"""
    text, remarks = collapsed(src)
    assert "0 to 15" in text and "memref<4x30xf64>" in text, text
    assert mlir_opt(text) == text
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 5))
    s0 = rng.standard_normal(4)
    ref_s, ref_y = s0.copy(), np.zeros((4, 6, 5))
    for i in range(4):
        for j in range(3):
            for k in range(5):
                ref_s[i] += x[i, j, k]
                ref_y[i, j, k] = ref_s[i]
    _, s, y = run(text, x, s0.copy(), np.zeros((4, 6, 5)))
    assert np.array_equal(s, ref_s) and np.array_equal(y, ref_y)


@pytest.mark.parametrize("why, access", [
    ("the inner loop stops short of the row", "%O[%i, %j, %k] : memref<3x4x6xf32> // k < 5"),
    ("transposed", "%T[%i, %k, %j] : memref<3x5x4xf32>"),
    ("an offset", "%O[%i, %j, %k + 1] : memref<3x4x6xf32>"),
    ("a strided layout", "%L[%i, %j, %k] : memref<3x4x5xf32, strided<[40, 10, 1]>>"),
])
def test_bands_that_may_not_be_collapsed_stay(why, access):
    upper = 5
    read = access.split(" // ")[0]
    src = f"""\
func.func @f(%O: memref<3x4x6xf32>, %T: memref<3x5x4xf32>,
             %L: memref<3x4x5xf32, strided<[40, 10, 1]>>, %D: memref<3x4x5xf32>) {{
  affine.for %i = 0 to 3 {{
    affine.for %j = 0 to 4 {{
      affine.for %k = 0 to {upper} {{
        %x = affine.load {read}
        affine.store %x, %D[%i, %j, %k] : memref<3x4x5xf32>
      }}
    }}
  }}
  return
}}
"""
    text, remarks = collapsed(src)
    assert text.count("affine.for") == 3 and "collapse_shape" not in text, why
    assert not remarks


def test_an_induction_variable_used_as_a_value_stays():
    src = """\
func.func @f(%D: memref<4x5xi64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = arith.index_cast %j : index to i64
      affine.store %v, %D[%i, %j] : memref<4x5xi64>
    }
  }
  return
}
"""
    text, _ = collapsed(src)
    assert text.count("affine.for") == 2 and "collapse_shape" not in text


def test_the_schedulers_parallel_marks_survive_only_where_every_loop_had_one():
    """A scheduled nest's loops carry polyopt.parallel: they collapse as the others do, and
    the one loop is marked parallel when all the loops it replaces were."""
    src = """\
func.func @f(%D: memref<4x5xi64>, %E: memref<4x5xi64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = arith.constant 1 : i64
      affine.store %v, %D[%i, %j] : memref<4x5xi64>
    } {polyopt.parallel}
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = arith.constant 2 : i64
      affine.store %v, %E[%i, %j] : memref<4x5xi64>
    } {polyopt.parallel}
  } {polyopt.parallel}
  return
}
"""
    text, _ = collapsed(src)
    assert text.count("affine.for %arg2 = 0 to 20") == 2 and text.count("memref.collapse_shape") == 2
    assert text.count("{polyopt.parallel}") == 1
    d, e = np.zeros((4, 5), np.int64), np.zeros((4, 5), np.int64)
    run(text, d, e)
    assert (d == 1).all() and (e == 2).all()


def test_the_llvm_parallel_access_mark_survives_only_where_every_loop_had_one():
    """An innermost loop marked for LLVM (polyopt.parallel_accesses) still collapses; the one
    loop keeps the mark only when the loops around it had it too (an outer loop's iterations
    were never checked for it)."""
    src = """\
func.func @f(%D: memref<4x5xi64>, %E: memref<4x5xi64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = arith.constant 1 : i64
      affine.store %v, %D[%i, %j] : memref<4x5xi64>
    } {polyopt.parallel, polyopt.parallel_accesses}
  } {polyopt.parallel}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = arith.constant 2 : i64
      affine.store %v, %E[%i, %j] : memref<4x5xi64>
    } {polyopt.parallel, polyopt.parallel_accesses}
  } {polyopt.parallel, polyopt.parallel_accesses}
  return
}
"""
    text, _ = collapsed(src)
    assert text.count("affine.for %arg2 = 0 to 20") == 2
    assert text.count("{polyopt.parallel}") == 1
    assert text.count("{polyopt.parallel, polyopt.parallel_accesses}") == 1
    d, e = np.zeros((4, 5), np.int64), np.zeros((4, 5), np.int64)
    run(text, d, e)
    assert (d == 1).all() and (e == 2).all()


def test_under_hopt_the_pipeline_collapses_and_says_so():
    remarks = []
    polyopt.compile(BIAS_RELU6, remark=lambda loc, m: remarks.append(m), hopt=True)
    assert any(r.startswith("hopt-collapse-loops: the 2 innermost loops (7x9)")
               for r in remarks), remarks


def _offset_array(shape, dtype, offset_bytes, rng):
    """An array of ``shape`` starting ``offset_bytes`` past a 64-byte boundary."""
    n = int(np.prod(shape))
    item = np.dtype(dtype).itemsize
    raw = np.empty(n * item + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    a = raw[start:start + n * item].view(dtype).reshape(shape)
    a[...] = rng.standard_normal(shape) * 4
    return a


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_a_long_collapsed_loop_is_peeled_to_a_line_boundary_of_its_store(t):
    """Planes of 24x40: the loop of 960 starts with the iterations up to the stored array's
    first 64-byte boundary in that plane (the address known at run time), then the rest;
    numpy's answer wherever the arrays start."""
    src = BIAS_RELU6.replace("2x5x7x9", "2x5x24x40").replace("0 to 7", "0 to 24") \
        .replace("0 to 9", "0 to 40").replace("f32", t)
    text, remarks = collapsed(src)
    assert "memref.extract_aligned_pointer_as_index %collapse_shape" in text
    assert text.count("affine.for") == 4 and " to 960 {" in text and "to min " in text
    assert any("first iterations up to a cache line boundary of the stored array peeled" in r
               for r in remarks), remarks
    assert mlir_opt(text) == text
    dtype = np.float32 if t == "f32" else np.float64
    fn = polyopt.compile(text)["f"]
    rng = np.random.default_rng(2)
    b = rng.standard_normal(5).astype(dtype)
    for offset in range(0, 64, np.dtype(dtype).itemsize):
        o = _offset_array((2, 5, 24, 40), dtype, offset, rng)
        want = np.clip(o + b[None, :, None, None], 0, 6)
        fn(o, b)
        assert np.array_equal(o, want), offset


def test_a_short_collapsed_loop_is_not_peeled():
    text, remarks = collapsed(BIAS_RELU6)          # 7x9 planes: 252 bytes a run
    assert "extract_aligned_pointer" not in text and text.count("affine.for") == 3
    assert not any("peeled" in r for r in remarks)
