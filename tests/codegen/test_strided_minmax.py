"""maxnumf/minnumf reductions over strided elements (linalg.softmax along the rows decomposes
into one) used to abort the process inside LLVM's loop vectorizer; they are lowered with
maximumnum/minimumnum there and run, with numpy's answer (NaNs ignored, as maxnum does),
while a contiguous reduction keeps maxnum (its faster vector code)."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.codegen.to_llvm import lower_module
from polyopt.pipeline import load

AFFINE = """\
func.func @f(%X: memref<{r}x{c}x{t}>, %S: memref<{n}x{t}>) {{
  %init = arith.constant {init} : {t}
  affine.for %j = 0 to {n} {{
    %m = affine.for %k = 0 to {trip} iter_args(%a = %init) -> ({t}) {{
      %x = affine.load %X[{subs}] : memref<{r}x{c}x{t}>
      %y = arith.{op} %a, %x : {t}
      affine.yield %y : {t}
    }}
    affine.store %m, %S[%j] : memref<{n}x{t}>
  }}
  return
}}
"""

SCF = """\
func.func @f(%X: memref<{r}x{c}x{t}>, %S: memref<{n}x{t}>) {{
  %init = arith.constant {init} : {t}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  %trip = arith.constant {trip} : index
  scf.for %j = %c0 to %n step %c1 {{
    %m = scf.for %k = %c0 to %trip step %c1 iter_args(%a = %init) -> ({t}) {{
      %x = memref.load %X[{subs}] : memref<{r}x{c}x{t}>
      %y = arith.{op} %a, %x : {t}
      scf.yield %y : {t}
    }}
    memref.store %m, %S[%j] : memref<{n}x{t}>
  }}
  return
}}
"""


def source(form, op, t, strided, r=67, c=45):
    n, trip = (c, r) if strided else (r, c)
    init = "-3.0e38" if op == "maxnumf" else "3.0e38"
    subs = "%k, %j" if strided else "%j, %k"
    return (AFFINE if form == "affine" else SCF).format(r=r, c=c, t=t, n=n, trip=trip,
                                                        init=init, op=op, subs=subs)


@pytest.mark.parametrize("form", ["affine", "scf"])
@pytest.mark.parametrize("op", ["maxnumf", "minnumf"])
@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("strided", [True, False], ids=["strided", "contiguous"])
def test_reductions_run_with_numpys_answer_nans_ignored(form, op, t, strided):
    dtype = np.float32 if t == "f32" else np.float64
    x = np.random.default_rng(3).standard_normal((67, 45)).astype(dtype)
    x[5, 7] = x[60, 3] = x[2, 40] = np.nan
    src = source(form, op, t, strided)
    fn = polyopt.compile(src)["f"]
    s = np.zeros(45 if strided else 67, dtype)
    fn(x, s)
    reduce = np.fmax if op == "maxnumf" else np.fmin
    want = reduce.reduce(x, axis=0 if strided else 1)
    assert np.array_equal(s, want)
    text = lower_module(load(src)).llvm_ir
    kind = op[:3]
    assert (f"llvm.{kind}imumnum" in text) == strided
    assert (f"llvm.{kind}num" in text) == (not strided)


@pytest.mark.parametrize("hopt", [False, True])
def test_softmax_along_the_rows_runs(hopt):
    src = """\
func.func @f(%X: memref<64x48xf32>, %Y: memref<64x48xf32>) {
  linalg.softmax dimension(0) ins(%X : memref<64x48xf32>) outs(%Y : memref<64x48xf32>)
  return
}
"""
    x = np.random.default_rng(4).standard_normal((64, 48)).astype(np.float32) * 4
    y = np.zeros_like(x)
    polyopt.compile(src, hopt=hopt, vect=hopt)["f"](x, y)
    e = np.exp(x.astype(np.float64) - x.max(axis=0))
    want = e / e.sum(axis=0)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)
