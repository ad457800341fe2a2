"""A zero fill of C taken into the mixed-precision product after it
(:mod:`polyopt.schedules.zero_init`): the fill goes, the first K block adds to zeros, and C's
old contents (NaN here) are never read; a fill that is not +0 over all of C right before the
product stays.  On the dot engines and on AMX tiles (run where the CPU has them, else
emulated: see test_amx_gemm.py), edges, several K_C blocks and two threads, against numpy."""

import ml_dtypes
import numpy as np
import pytest

import polyopt
from host_targets import vector_engines_only

from test_amx_gemm import emulated, scheduled_for_amx
from test_lowp_gemm import ALL, KINDS

TAKEN = "the zero fill of C taken into"


def fill_source(kind, m, n, k, zero=None, between=""):
    """``C = 0`` (``linalg.fill``), ``between``, then ``hop.matmul`` (C += A B)."""
    a, b, c, attrs = KINDS[kind]
    zero = zero or ("0.0" if c == "f32" else "0")
    ta, tb, tc = f"memref<{m}x{k}x{a}>", f"memref<{k}x{n}x{b}>", f"memref<{m}x{n}x{c}>"
    return (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  %z = arith.constant {zero} : {c}\n"
            f"  linalg.fill ins(%z : {c}) outs(%C : {tc})\n{between}"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")


def operands(kind, m, n, k):
    """A and B, and C holding what the product must not read: NaN, or (integers) a large
    value."""
    rng = np.random.default_rng(m + n + k)
    if kind in ("bf16", "f16"):
        t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
        a, b = rng.standard_normal((m, k)).astype(t), rng.standard_normal((k, n)).astype(t)
        return a, b, np.full((m, n), np.nan, np.float32)
    a = (rng.integers(0, 256, (m, k)).astype(np.uint8) if kind == "u8"
         else rng.integers(-128, 128, (m, k)).astype(np.int8))
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    return a, b, np.full((m, n), 123456789, np.int32)


def check_product(fn, kind, m, n, k, c_before=0.0):
    """``fn`` leaves C = ``c_before`` + A B whatever C held."""
    a, b, c = operands(kind, m, n, k)
    fn(a, b, c)
    if kind in ("s8", "u8"):
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = c_before + a64 @ b64
    bound = (k + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + abs(c_before))
    err = np.abs(c - want)
    assert (err <= bound).all(), f"max error {err.max()}"


#: (M, N, K, threads): edges, whole tiles only, several K_C blocks, teams
SHAPES = [(7, 65, 33, 1), (97, 101, 103, 1), (97, 101, 103, 2), (33, 17, 4200, 1),
          (33, 17, 4200, 2), (64, 64, 64, 1)]


@pytest.mark.parametrize("kind", ["bf16", "s8", "u8"])
@pytest.mark.parametrize("m, n, k, threads", SHAPES)
def test_the_fill_is_taken_on_the_dot_engines(kind, m, n, k, threads):
    remarks = []
    with vector_engines_only():
        compiled = polyopt.compile(fill_source(kind, m, n, k), threads=threads,
                                   remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any(TAKEN in r for r in remarks), remarks
    assert "linalg.fill" not in str(compiled.module)
    check_product(compiled["mm"], kind, m, n, k)


@pytest.mark.parametrize("kind", ["bf16", "f16", "s8", "u8"])
@pytest.mark.parametrize("m, n, k, threads", SHAPES)
def test_the_fill_is_taken_on_amx_tiles(kind, m, n, k, threads):
    """The register tiles inside C start from ``amx.tile_zero`` in the first K block (from
    C's tiles in the later ones); the tiles on C's edge add to zeros there."""
    remarks = []
    src = fill_source(kind, m, n, k)
    text = str(scheduled_for_amx(src, threads, remark=lambda loc, msg: remarks.append(msg)))
    assert any(TAKEN in r for r in remarks), remarks
    assert "linalg.fill" not in text and "amx.tile_zero" in text
    check_product(emulated(src, threads)["mm"], kind, m, n, k)


@pytest.mark.parametrize("zero, between, c_before, why", [
    ("-0.0", "", 0.0, "a fill of -0.0: -0 + -0 sums keep their sign"),
    ("0.0", "  %one = arith.constant 1.0 : f32\n  %c0 = arith.constant 0 : index\n"
            "  memref.store %one, %C[%c0, %c0] : memref<40x70xf32>\n", None,
     "C written between the fill and the product"),
    ("1.5", "", 1.5, "not zeros"),
])
def test_other_fills_stay(zero, between, c_before, why):
    remarks = []
    with vector_engines_only():
        compiled = polyopt.compile(fill_source("bf16", 40, 70, 90, zero, between),
                                   remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert not any(TAKEN in r for r in remarks), why
    fn = compiled["mm"]
    if c_before is not None:
        check_product(fn, "bf16", 40, 70, 90, c_before)
        return
    a, b, c = operands("bf16", 40, 70, 90)
    fn(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    want[0, 0] += 1.0
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


STEM = """func.func @conv(%I: memref<1x35x37x3xbf16>, %K: memref<7x7x3x19xbf16>, %O: memref<1x15x16x19xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%O : memref<1x15x16x19xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%I, %K : memref<1x35x37x3xbf16>, memref<7x7x3x19xbf16>) outs(%O : memref<1x15x16x19xf32>)
  return
}
"""


@pytest.mark.parametrize("engine", ["dot", "amx"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_fill_of_a_convolutions_output_is_taken(engine, threads):
    """A 7x7 stride-2 convolution of 3 channels (ResNet-50's stem, smaller) after the zero
    fill of its output: the fill is found in front of the im2col stand-in's allocation;
    the output's NaN are never read."""
    remarks = []
    remark = lambda loc, msg: remarks.append(msg)      # noqa: E731
    if engine == "amx":
        scheduled_for_amx(STEM, threads, remark=remark)
        fn = emulated(STEM, threads)["conv"]
    else:
        with vector_engines_only():
            fn = polyopt.compile(STEM, threads=threads, remark=remark, **ALL)["conv"]
    assert any(TAKEN in r for r in remarks), remarks
    rng = np.random.default_rng(7)
    inp = rng.standard_normal((1, 35, 37, 3)).astype(ml_dtypes.bfloat16)
    flt = rng.standard_normal((7, 7, 3, 19)).astype(ml_dtypes.bfloat16)
    out = np.full((1, 15, 16, 19), np.nan, np.float32)
    fn(inp, flt, out)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    want, mags = np.zeros(out.shape), np.zeros(out.shape)
    for y in range(7):
        for x in range(7):
            window = i64[:, y:y + 29:2, x:x + 31:2, :]
            want += np.einsum("nhwc,cf->nhwf", window, f64[y, x])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[y, x]))
    assert (np.abs(out - want) <= 148 * 2.0 ** -24 * mags).all()


def float_source(t, m, n, k):
    """``C = 0`` then ``linalg.matmul`` in f32 or f64."""
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  %z = arith.constant 0.0 : {t}\n"
            f"  linalg.fill ins(%z : {t}) outs(%C : {tc})\n"
            f"  linalg.matmul ins(%A, %B : {ta}, {tb}) outs(%C : {tc})\n  return\n}}\n")


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k, threads", [(7, 65, 33, 1), (97, 101, 103, 1),
                                              (130, 70, 1500, 1), (130, 70, 1500, 2)])
def test_the_fill_is_taken_into_the_blis_nest(t, m, n, k, threads):
    """f32/f64: the register tile's and the edge tiles' reads of C in the first K block are
    zeros (several K blocks at K = 1500); C's NaN are never read."""
    remarks = []
    compiled = polyopt.compile(float_source(t, m, n, k), threads=threads,
                               remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any(TAKEN in r for r in remarks), remarks
    assert "linalg.fill" not in str(compiled.module)
    dt = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(k)
    a, b = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)
    c = np.full((m, n), np.nan, dt)
    compiled["mm"](a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    eps = np.finfo(dt).eps
    assert (np.abs(c - want) <= k * eps * (np.abs(a) @ np.abs(b))).all()


def test_the_fill_stays_before_the_blis_micro_kernel():
    """``--hopt-blis`` hands C to BLIS's micro-kernel, which reads it: the fill stays."""
    remarks = []
    compiled = polyopt.compile(float_source("f64", 97, 101, 103), threads=1,
                               remark=lambda loc, msg: remarks.append(msg), blis=True, **ALL)
    assert not any(TAKEN in r for r in remarks), remarks
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((97, 103)), rng.standard_normal((103, 101))
    c = np.full((97, 101), np.nan)
    compiled["mm"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["amx", "f32"])
def test_upstream_mlir_accepts_the_ir(engine):
    """What ``polyopt opt`` prints once the fill is taken (``amx.tile_zero`` in the first K
    block, the first block's reads of C as ``affine.if`` yielding zeros) is valid upstream
    MLIR."""
    from upstream_mlir import mlir_opt
    if engine == "amx":
        text = str(scheduled_for_amx(fill_source("bf16", 97, 101, 4200)))
        assert "amx.tile_zero" in text
    else:
        text = str(polyopt.compile(float_source("f32", 130, 70, 1500), **ALL).module)
        assert "affine.if" in text
    assert "linalg.fill" not in text
    mlir_opt(text)


@pytest.mark.parametrize("special", [None, np.inf])
def test_the_fill_is_taken_into_both_f16_paths(special):
    """f16 on a CPU with AMX-BF16 but no AMX-FP16: the bf16 halves' product and the f32 path
    it falls back to (an infinity in A) both start from zeros in their first K block."""
    from test_amx_gemm import _halves
    m, n, k = 40, 37, 4200
    remarks = []
    fn = _halves(fill_source("f16", m, n, k), remark=lambda loc, msg: remarks.append(msg))["mm"]
    assert any(TAKEN in r for r in remarks), remarks
    a, b, c = operands("f16", m, n, k)
    if special is not None:
        a[3, 4] = special
    fn(a, b, c)
    want = a.astype(np.float32) @ b.astype(np.float32)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isinf(c), np.isinf(want))
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    assert (np.abs(c[finite] - want[finite]) <= 1e-3 * (1 + np.abs(want[finite]))).all()


TENSOR = """func.func @mm(%A: tensor<97x103x{t}>, %B: tensor<103x101x{t}>) -> tensor<97x101x{o}> {{
  %e = tensor.empty() : tensor<97x101x{o}>
  %z = arith.constant {zero} : {o}
  %f = linalg.fill ins(%z : {o}) outs(%e : tensor<97x101x{o}>) -> tensor<97x101x{o}>
  %r = linalg.matmul ins(%A, %B : tensor<97x103x{t}>, tensor<103x101x{t}>) outs(%f : tensor<97x101x{o}>) -> tensor<97x101x{o}>
  return %r : tensor<97x101x{o}>
}}
"""


@pytest.mark.parametrize("t, o, zero", [("f32", "f32", "0.0"), ("bf16", "f32", "0.0")])
def test_the_fill_of_a_tensor_init_is_taken(t, o, zero):
    """Upstream's tensor form (``tensor.empty``, ``linalg.fill``, ``linalg.matmul`` into the
    fill), bufferized first: the fill of the new buffer is taken; the result buffer the
    caller passes (NaN here) is never read."""
    remarks = []
    src = TENSOR.format(t=t, o=o, zero=zero)
    with vector_engines_only():
        fn = polyopt.compile(src, bufferize=True, remark=lambda loc, msg: remarks.append(msg),
                             **ALL)["mm"]
    assert any(TAKEN in r for r in remarks), remarks
    rng = np.random.default_rng(3)
    dt = ml_dtypes.bfloat16 if t == "bf16" else np.float32
    a, b = rng.standard_normal((97, 103)).astype(dt), rng.standard_normal((103, 101)).astype(dt)
    out = np.full((97, 101), np.nan, np.float32)
    fn(a, b, out)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert (np.abs(out - a64 @ b64) <= 104 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))).all()
