"""``linalg.mmt4d`` under --hopt (:mod:`polyopt.schedules.mmt4d`): the matmul of its unpacked
matrices through the BLIS pipeline (or the dot engine), C packed back; against numpy on tiles
that are multiples of nothing, in f32, f64, bf16 and bytes, on one and two threads."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
C_TYPE = {"f32": "f32", "f64": "f64", "bf16": "f32", "i8": "i32"}


def source(m, n, k, m0, n0, k0, t):
    tl, tr = f"memref<{m}x{k}x{m0}x{k0}x{t}>", f"memref<{n}x{k}x{n0}x{k0}x{t}>"
    to = f"memref<{m}x{n}x{m0}x{n0}x{C_TYPE[t]}>"
    return (f"func.func @f(%A: {tl}, %B: {tr}, %C: {to}) {{\n"
            f"  linalg.mmt4d ins(%A, %B : {tl}, {tr}) outs(%C : {to})\n  return\n}}\n")


@pytest.mark.parametrize("m, n, k, m0, n0, k0", [(3, 5, 7, 4, 6, 3), (8, 4, 16, 16, 16, 1),
                                                 (5, 7, 9, 6, 16, 2)])
@pytest.mark.parametrize("t", ["f32", "f64", "bf16", "i8"])
@pytest.mark.parametrize("threads", [1, 2])
def test_mmt4d_is_the_matmul_of_its_unpacked_matrices(m, n, k, m0, n0, k0, t, threads):
    remarks = []
    fn = polyopt.compile(source(m, n, k, m0, n0, k0, t), threads=threads,
                         remark=lambda loc, msg: remarks.append(msg), **ALL)["f"]
    rows, cols, depth = m * m0, n * n0, k * k0
    assert any(f"linalg.mmt4d: the linalg.matmul of its unpacked matrices ({rows}x{cols}x"
               f"{depth})" in r for r in remarks), remarks
    rng = np.random.default_rng(m * n * k + m0)
    if t == "i8":
        a = rng.integers(-128, 128, (m, k, m0, k0)).astype(np.int8)
        b = rng.integers(-128, 128, (n, k, n0, k0)).astype(np.int8)
        c = rng.integers(-10**6, 10**6, (m, n, m0, n0)).astype(np.int32)
    else:
        dtype = {"f32": np.float32, "f64": np.float64}.get(t)
        if t == "bf16":
            dtype = pytest.importorskip("ml_dtypes").bfloat16
        a = rng.standard_normal((m, k, m0, k0)).astype(dtype)
        b = rng.standard_normal((n, k, n0, k0)).astype(dtype)
        c = rng.standard_normal((m, n, m0, n0)).astype(np.float64 if t == "f64" else
                                                       np.float32)
    want = c.astype(np.float64) + np.einsum("mkxz,nkyz->mnxy", a.astype(np.float64),
                                            b.astype(np.float64))
    fn(a, b, c)
    if t == "i8":
        np.testing.assert_array_equal(c, want.astype(np.int32))
    else:
        np.testing.assert_allclose(c, want, rtol=1e-12 if t == "f64" else 1e-4,
                                   atol=1e-12 if t == "f64" else 1e-4 * depth)
