"""Contraction raising merges a column loop into the next one when C and B are contiguous
over the pair (``C[.., o, j]``, ``B[.., o, j]``, ``j`` spanning its dimension): one GEMM of
``O x J`` columns instead of a batch of ``O`` GEMMs of ``J``, as an NCHW 1x1 convolution's
``(oh, ow)`` allows.  Checked against numpy at 1 and 2 threads on shapes no tile divides; the
pairs it must not merge keep the batch and stay exact."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _nest(f: int, c: int, h: int, w: int, w_loop: int, layout: str = "") -> str:
    """``O[f, oh, ow] += K[f, c] * I[c, oh, ow]`` (an NCHW 1x1 convolution of one image)
    with the ``ow`` loop running to ``w_loop`` of the ``w`` columns."""
    ti = f"memref<{c}x{h}x{w}xf32{layout}>"
    to = f"memref<{f}x{h}x{w}xf32{layout}>"
    return f"""func.func @conv(%I: {ti}, %K: memref<{f}x{c}xf32>, %O: {to}) {{
  affine.for %f = 0 to {f} {{
    affine.for %oh = 0 to {h} {{
      affine.for %ow = 0 to {w_loop} {{
        affine.for %c = 0 to {c} {{
          %x = affine.load %I[%c, %oh, %ow] : {ti}
          %k = affine.load %K[%f, %c] : memref<{f}x{c}xf32>
          %o = affine.load %O[%f, %oh, %ow] : {to}
          %p = arith.mulf %k, %x : f32
          %s = arith.addf %o, %p : f32
          affine.store %s, %O[%f, %oh, %ow] : {to}
        }}
      }}
    }}
  }}
  return
}}
"""


def _run(text: str, f: int, c: int, h: int, w: int, w_loop: int, threads: int,
         row: int = 0):
    """Run ``text`` on random operands (rows ``row`` elements apart when given: views of
    wider arrays) against numpy; returns the "raised to a contraction" remarks."""
    remarks = []
    fn = polyopt.compile(text, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["conv"]
    rng = np.random.default_rng(3)
    inp = rng.uniform(-1, 1, (c, h, row or w)).astype(np.float32)[:, :, :w]
    flt = rng.uniform(-1, 1, (f, c)).astype(np.float32)
    out = rng.uniform(-1, 1, (f, h, row or w)).astype(np.float32)[:, :, :w]
    want = out.astype(np.float64)
    want[:, :, :w_loop] += np.einsum("fc,chw->fhw", flt.astype(np.float64),
                                     inp[:, :, :w_loop].astype(np.float64))
    fn(inp, flt, out)
    np.testing.assert_allclose(out, want, rtol=1e-5 * c, atol=1e-5 * c)
    return [m for m in remarks if m.startswith("raised to a contraction")]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("f,c,h,w", [(37, 19, 11, 13), (70, 8, 9, 57), (5, 130, 3, 3)])
def test_contiguous_rows_are_one_gemm(f, c, h, w, threads):
    raised = _run(_nest(f, c, h, w, w), f, c, h, w, w, threads)
    assert len(raised) == 1 and "merged: C's and B's rows are contiguous" in raised[0], raised
    assert f"ixjxk = {f}x{h * w}x{c}" in raised[0], raised


@pytest.mark.parametrize("w_loop,layout,row", [
    (10, "", 0),                                      # ow covers 10 of the 13 columns
    (13, ", strided<[112, 16, 1]>", 16),              # rows 16 apart: C is not contiguous
])
def test_rows_that_are_not_whole_stay_a_batch(w_loop, layout, row):
    raised = _run(_nest(23, 9, 7, 13, w_loop, layout), 23, 9, 7, 13, w_loop, 1, row)
    assert len(raised) == 1 and "merged" not in raised[0] and "b0x" in raised[0], raised


def test_the_nchw_1x1_convolution_op_is_one_gemm():
    """``linalg.conv_2d_nchw_fchw`` 1x1: its loops raise to one GEMM over the plane."""
    text = """func.func @conv(%I: memref<2x6x5x7xf32>, %K: memref<9x6x1x1xf32>, %O: memref<2x9x5x7xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%I, %K : memref<2x6x5x7xf32>, memref<9x6x1x1xf32>) outs(%O : memref<2x9x5x7xf32>)
  return
}
"""
    remarks = []
    fn = polyopt.compile(text, threads=1, remark=lambda loc, m: remarks.append(m), **ALL)["conv"]
    rng = np.random.default_rng(0)
    inp = rng.uniform(-1, 1, (2, 6, 5, 7)).astype(np.float32)
    flt = rng.uniform(-1, 1, (9, 6, 1, 1)).astype(np.float32)
    out = np.zeros((2, 9, 5, 7), np.float32)
    fn(inp, flt, out)
    want = np.einsum("fc,nchw->nfhw", flt[:, :, 0, 0], inp)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert any("merged" in m for m in remarks), remarks
