"""A 1x1 convolution with a stride is a contraction whose output rows cannot be merged into
one column (B's rows are every other input row), so raising it as a contraction made a batch
of one GEMM per output row.  Raising prefers the nest's convolution then: its implicit GEMM
has every pixel of an image as a column.  Checked against numpy at 1 and 2 threads on shapes
no tile divides; products that are no batch over pixels stay contractions."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _nchw_op(n: int, c: int, h: int, w: int, f: int, stride: int) -> tuple[str, tuple]:
    oh, ow = (h - 1) // stride + 1, (w - 1) // stride + 1
    ti, tk, to = (f"memref<{n}x{c}x{h}x{w}xf32>", f"memref<{f}x{c}x1x1xf32>",
                  f"memref<{n}x{f}x{oh}x{ow}xf32>")
    text = f"""func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{
  linalg.conv_2d_nchw_fchw {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
    ins(%I, %K : {ti}, {tk}) outs(%O : {to})
  return
}}
"""
    return text, (oh, ow)


def _compile(text: str, threads: int):
    remarks = []
    fn = polyopt.compile(text, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["conv"]
    return fn, [m for m in remarks if m.startswith("raised to a")]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,c,h,w,f,stride", [
    (1, 19, 13, 11, 37, 2),      # 7x6 output pixels, odd everywhere
    (2, 70, 10, 17, 9, 2),       # two images, more channels than a K_U step
    (1, 8, 14, 14, 130, 3),      # stride 3, filters past two register-tile rows
])
def test_nchw_strided_1x1_is_one_implicit_gemm(n, c, h, w, f, stride, threads):
    text, (oh, ow) = _nchw_op(n, c, h, w, f, stride)
    fn, raised = _compile(text, threads)
    assert len(raised) == 1 and raised[0].startswith("raised to a convolution"), raised
    assert f"strides {stride}x{stride}" in raised[0], raised
    rng = np.random.default_rng(n * 100 + c)
    inp = rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
    flt = rng.uniform(-1, 1, (f, c, 1, 1)).astype(np.float32)
    out = rng.uniform(-1, 1, (n, f, oh, ow)).astype(np.float32)
    want = out.astype(np.float64) + np.einsum(
        "fc,nchw->nfhw", flt[:, :, 0, 0].astype(np.float64),
        inp[:, :, ::stride, ::stride].astype(np.float64))
    fn(inp, flt, out)
    np.testing.assert_allclose(out, want, rtol=1e-5 * c, atol=1e-5 * c)


def test_nhwc_strided_1x1_nest_is_one_implicit_gemm():
    """The same for a user's NHWC nest with the unit window loops written out."""
    text = """func.func @conv(%I: memref<1x9x11x6xf32>, %K: memref<1x1x6x21xf32>, %O: memref<1x5x6x21xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 5 {
      affine.for %ow = 0 to 6 {
        affine.for %f = 0 to 21 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 6 {
                %x = affine.load %I[%n, %oh * 2 + %kh, %ow * 2 + %kw, %c] : memref<1x9x11x6xf32>
                %k = affine.load %K[%kh, %kw, %c, %f] : memref<1x1x6x21xf32>
                %o = affine.load %O[%n, %oh, %ow, %f] : memref<1x5x6x21xf32>
                %p = arith.mulf %x, %k : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %O[%n, %oh, %ow, %f] : memref<1x5x6x21xf32>
              }
            }
          }
        }
      }
    }
  }
  return
}
"""
    fn, raised = _compile(text, 1)
    assert len(raised) == 1 and raised[0].startswith("raised to a convolution"), raised
    rng = np.random.default_rng(5)
    inp = rng.uniform(-1, 1, (1, 9, 11, 6)).astype(np.float32)
    flt = rng.uniform(-1, 1, (1, 1, 6, 21)).astype(np.float32)
    out = np.zeros((1, 5, 6, 21), np.float32)
    fn(inp, flt, out)
    want = np.einsum("nhwc,cf->nhwf", inp[:, ::2, ::2, :], flt[0, 0])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_unit_stride_1x1_of_two_images_stays_a_merged_contraction():
    """One GEMM per image either way: the contraction, whose (oh, ow) merge into one column,
    is kept."""
    text, _ = _nchw_op(2, 6, 5, 7, 9, 1)
    fn, raised = _compile(text, 1)
    assert len(raised) == 1 and raised[0].startswith("raised to a contraction"), raised
    assert "merged" in raised[0], raised
    rng = np.random.default_rng(1)
    inp = rng.uniform(-1, 1, (2, 6, 5, 7)).astype(np.float32)
    flt = rng.uniform(-1, 1, (9, 6, 1, 1)).astype(np.float32)
    out = np.zeros((2, 9, 5, 7), np.float32)
    fn(inp, flt, out)
    np.testing.assert_allclose(out, np.einsum("fc,nchw->nfhw", flt[:, :, 0, 0], inp),
                               rtol=1e-5, atol=1e-5)


def test_strided_1x1_that_is_no_convolution_stays_a_batch():
    """The output rows cover 4 of O's 5 (no convolution op reads O that way): the batch of
    contractions it was, still exact."""
    text = """func.func @conv(%I: memref<3x10x10xf32>, %K: memref<7x3xf32>, %O: memref<7x5x5xf32>) {
  affine.for %f = 0 to 7 {
    affine.for %oh = 0 to 4 {
      affine.for %ow = 0 to 5 {
        affine.for %c = 0 to 3 {
          %x = affine.load %I[%c, %oh * 2, %ow * 2] : memref<3x10x10xf32>
          %k = affine.load %K[%f, %c] : memref<7x3xf32>
          %o = affine.load %O[%f, %oh, %ow] : memref<7x5x5xf32>
          %p = arith.mulf %k, %x : f32
          %s = arith.addf %o, %p : f32
          affine.store %s, %O[%f, %oh, %ow] : memref<7x5x5xf32>
        }
      }
    }
  }
  return
}
"""
    fn, raised = _compile(text, 1)
    assert len(raised) == 1 and raised[0].startswith("raised to a contraction"), raised
    assert "b0x" in raised[0], raised
    rng = np.random.default_rng(2)
    inp = rng.uniform(-1, 1, (3, 10, 10)).astype(np.float32)
    flt = rng.uniform(-1, 1, (7, 3)).astype(np.float32)
    out = np.zeros((7, 5, 5), np.float32)
    fn(inp, flt, out)
    want = np.zeros((7, 5, 5))
    want[:, :4] = np.einsum("fc,chw->fhw", flt, inp[:, 0:8:2, ::2])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
