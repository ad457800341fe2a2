"""Vector rows of math ops with ``fastmath<afn>`` call glibc's libmvec (the variant for the
target's widest vectors, in pieces, the last padded), within libmvec's documented 4 ulp of an
f64 reference; without ``afn``, on scalars, the exact lowering is unchanged."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import polyopt
from polyopt.affine.parser import parse
from polyopt.codegen.target import Target
from polyopt.codegen.to_llvm import lower_module
from polyopt.codegen.vector_math import libmvec_loaded

pytestmark = pytest.mark.skipif(not libmvec_loaded(), reason="no libmvec in this C library")

TRIPLE = "x86_64-unknown-linux-gnu"
CACHES = (48 * 1024, 2 << 20, 32 << 20)
SKX = Target.from_features(TRIPLE, "skylake-avx512",
                           "+avx,+avx2,+fma,+f16c,+avx512f,+avx512dq,+avx512bw,+avx512vl", CACHES)
HASWELL = Target.from_features(TRIPLE, "haswell", "+avx,+avx2,+fma,+f16c", CACHES)
GENERIC = Target.from_features(TRIPLE, "x86-64", "+sse2", CACHES)


def unary(op: str, n: int, t: str, flags: str = " fastmath<afn>") -> str:
    return f"""func.func @f(%x: memref<{n}x{t}>, %y: memref<{n}x{t}>) {{
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<{n}x{t}>, vector<{n}x{t}>
  %e = {op} %v{flags} : vector<{n}x{t}>
  vector.store %e, %y[%c0] : memref<{n}x{t}>, vector<{n}x{t}>
  return
}}
"""


def calls(src: str, target: Target) -> list[str]:
    llvm_ir = lower_module(parse(src), target).llvm_ir
    return re.findall(r"call \w* ?<\d+ x \w+> @\"?(_ZGV\w+)", llvm_ir)


@pytest.mark.parametrize("target, n, t, want", [
    (SKX, 37, "f32", ["_ZGVeN16v_expf", "_ZGVeN16v_expf", "_ZGVdN8v_expf"]),
    (SKX, 16, "f32", ["_ZGVeN16v_expf"]),
    (SKX, 3, "f64", ["_ZGVdN4v_exp"]),
    (HASWELL, 37, "f32", ["_ZGVdN8v_expf"] * 5),
    (HASWELL, 9, "f64", ["_ZGVdN4v_exp", "_ZGVdN4v_exp", "_ZGVbN2v_exp"]),
    (GENERIC, 6, "f32", ["_ZGVbN4v_expf"] * 2),
])
def test_the_variant_of_the_targets_widest_vectors_in_pieces(target, n, t, want):
    assert calls(unary("math.exp", n, t), target) == want


@pytest.mark.parametrize("flags", ["", " fastmath<nnan,ninf>", " fastmath<reassoc>"])
def test_without_afn_the_exact_lowering_stays(flags):
    ir_ = lower_module(parse(unary("math.exp", 16, "f32", flags)), SKX).llvm_ir
    assert "_ZGV" not in ir_ and "llvm.exp.v16f32" in ir_


def test_fast_counts_as_afn_and_scalars_keep_libm():
    assert calls(unary("math.tanh", 8, "f32", " fastmath<fast>"), SKX) == ["_ZGVdN8v_tanhf"]
    src = """func.func @f(%x: f32) -> f32 {
  %e = math.exp %x fastmath<afn> : f32
  return %e : f32
}
"""
    assert "_ZGV" not in lower_module(parse(src), SKX).llvm_ir


REFERENCE = {"math.exp": (np.exp, -80, 80), "math.tanh": (np.tanh, -9, 9),
             "math.log": (np.log, 1e-3, 1e4), "math.sin": (np.sin, -50, 50),
             "math.erf": (np.vectorize(math.erf), -4, 4), "math.log1p": (np.log1p, -0.9, 10),
             "math.cbrt": (np.cbrt, -1e3, 1e3), "math.atan": (np.arctan, -1e3, 1e3)}


@pytest.mark.parametrize("op", sorted(REFERENCE))
@pytest.mark.parametrize("t, n", [("f32", 37), ("f64", 13), ("f32", 1)])
def test_within_four_ulp_of_f64(op, t, n):
    fn, lo, hi = REFERENCE[op]
    dtype = np.float32 if t == "f32" else np.float64
    compiled = polyopt.compile(unary(op, n, t))
    assert "_ZGV" in compiled.llvm_ir
    x = np.random.default_rng(n).uniform(lo, hi, n).astype(dtype)
    y = np.zeros_like(x)
    compiled["f"](x, y)
    exact = fn(x.astype(np.float64)) if t == "f32" else \
        np.array([float(np.float64(fn(np.longdouble(v)))) for v in x])
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    assert (np.abs(y - exact) <= 4 * ulp).all(), (x, y, exact)


def test_binary_functions_and_rows_of_2d_vectors():
    src = """func.func @f(%x: memref<2x5xf32>, %z: memref<2x5xf32>, %y: memref<2x5xf32>) {
  %c0 = arith.constant 0 : index
  %v = vector.transfer_read %x[%c0, %c0], %c0f : memref<2x5xf32>, vector<2x5xf32>
  %w = vector.transfer_read %z[%c0, %c0], %c0f : memref<2x5xf32>, vector<2x5xf32>
  %p = math.powf %v, %w fastmath<afn> : vector<2x5xf32>
  %a = math.atan2 %p, %w fastmath<afn> : vector<2x5xf32>
  vector.transfer_write %a, %y[%c0, %c0] : vector<2x5xf32>, memref<2x5xf32>
  return
}
""".replace("%c0 = arith.constant 0 : index", "%c0 = arith.constant 0 : index\n  "
            "%c0f = arith.constant 0.0 : f32")
    compiled = polyopt.compile(src)
    assert "_ZGVdN8vv_powf" in compiled.llvm_ir and "_ZGVdN8vv_atan2f" in compiled.llvm_ir
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 3, (2, 5)).astype(np.float32)
    z = rng.uniform(-2, 2, (2, 5)).astype(np.float32)
    y = np.zeros_like(x)
    compiled["f"](x, z, y)
    want = np.arctan2(np.power(x.astype(np.float64), z), z)
    np.testing.assert_allclose(y, want, rtol=3e-6)


def test_f16_rows_are_computed_in_f32_by_libmvec():
    compiled = polyopt.compile(unary("math.exp", 20, "f16"))
    assert "_ZGV" in compiled.llvm_ir
    x = np.linspace(-8, 8, 20).astype(np.float16)
    y = np.zeros_like(x)
    compiled["f"](x, y)
    np.testing.assert_array_equal(y, np.exp(x.astype(np.float64)).astype(np.float16))


def scalar_loop(op: str, n: int, t: str, flags: str) -> str:
    return f"""func.func @f(%x: memref<{n}x{t}>, %y: memref<{n}x{t}>) {{
  affine.for %i = 0 to {n} {{
    %v = affine.load %x[%i] : memref<{n}x{t}>
    %e = {op} %v{flags} : {t}
    affine.store %e, %y[%i] : memref<{n}x{t}>
  }}
  return
}}
"""


@pytest.mark.parametrize("op", ["math.exp", "math.tanh", "math.log", "math.sin"])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_loops_llvm_vectorizes_call_libmvec_where_afn_allows(op, t):
    """A scalar loop of ``math.exp fastmath<afn>``: LLVM's loop vectorizer widens it to
    ``llvm.exp.v16f32``, which becomes libmvec's ``_ZGVeN16v_expf`` (it was sixteen calls of
    libm's ``expf``); without afn, libm's."""
    fn, lo, hi = REFERENCE[op]
    n = 1003
    dtype = np.float32 if t == "f32" else np.float64
    x = np.random.default_rng(7).uniform(lo, hi, n).astype(dtype)
    exact = fn(x.astype(np.float64)) if t == "f32" else \
        np.array([float(np.float64(fn(np.longdouble(v)))) for v in x])
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    for flags, vector in ((" fastmath<afn>", True), (" fastmath<fast>", True), ("", False)):
        compiled = polyopt.compile(scalar_loop(op, n, t, flags))
        assert ("_ZGV" in compiled.asm()) == vector, flags
        y = np.zeros_like(x)
        compiled["f"](x, y)
        assert (np.abs(y - exact) <= 4 * ulp).all(), flags
    no_lv = polyopt.compile(scalar_loop(op, n, t, " fastmath<afn>"), llvm_vectorize=False)
    assert "_ZGV" not in no_lv.asm()


def test_pow_in_a_loop_is_the_binary_variant():
    n = 67
    src = f"""func.func @f(%x: memref<{n}xf32>, %z: memref<{n}xf32>, %y: memref<{n}xf32>) {{
  affine.for %i = 0 to {n} {{
    %a = affine.load %x[%i] : memref<{n}xf32>
    %b = affine.load %z[%i] : memref<{n}xf32>
    %p = math.powf %a, %b fastmath<afn> : f32
    affine.store %p, %y[%i] : memref<{n}xf32>
  }}
  return
}}
"""
    compiled = polyopt.compile(src)
    assert re.search(r"_ZGV[bde]N\d+vv_powf", compiled.asm())
    rng = np.random.default_rng(8)
    x, z = rng.uniform(0.1, 4, n).astype(np.float32), rng.uniform(-3, 3, n).astype(np.float32)
    y = np.zeros_like(x)
    compiled["f"](x, z, y)
    np.testing.assert_allclose(y, np.power(x.astype(np.float64), z), rtol=4e-7)
