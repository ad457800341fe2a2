"""Fused epilogues (:mod:`polyopt.schedules.epilogue`): the elementwise nest over C after a
mixed-precision contraction is applied to C's register tile after the last K block (a bias
along rows or columns, a residual, a scale, ReLU, a clamp, GELU's tanh form, a cast into a
bf16 or i8 matrix with saturation, int8 requantization), checked against numpy on shapes that
are no multiples of the tile (6 x 64), with one K block and with two."""

import numpy as np
import pytest
from conv_epilogue_text import conv_bias_residual_relu

import polyopt

ml_dtypes = pytest.importorskip("ml_dtypes")

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def source(m, n, k, a, c, body, extra_args="", out=None):
    """hop.matmul of A (M x K) and B (K x N) of type ``a`` into C of type ``c``, then a nest
    over (i, j) whose body is ``body`` (it reads %c = C[i, j], may use %bias_j, %bias_i, %res,
    %scale, %out) and stores."""
    ta, tb, tc = f"memref<{m}x{k}x{a}>", f"memref<{k}x{n}x{a}>", f"memref<{m}x{n}x{c}>"
    args = f"%A: {ta}, %B: {tb}, %C: {tc}{extra_args}"
    return f"""func.func @f({args}) {{
  hop.matmul %A, %B, %C : ({ta}, {tb}, {tc})
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      %c = affine.load %C[%i, %j] : {tc}
{body}
    }}
  }}
  return
}}
"""


def run(src, arrays, threads=1):
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["f"]
    assert any("fused into hop.matmul's register tile" in r for r in remarks), remarks
    fn(*arrays)


def bf16_operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal((m, n)).astype(np.float32)
    exact = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    bound = (k + 1) * 2.0 ** -24 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
                                    + np.abs(c))
    return a, b, c, exact, bound


SHAPES = [(97, 101, 103), (13, 70, 2601), (130, 64, 40)]


@pytest.mark.parametrize("m, n, k", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_bias_relu(m, n, k, threads):
    body = f"""      %b = affine.load %bias[%j] : memref<{n}xf32>
      %s = arith.addf %c, %b : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %C[%i, %j] : memref<{m}x{n}xf32>"""
    src = source(m, n, k, "bf16", "f32", body, f", %bias: memref<{n}xf32>")
    a, b, c, exact, bound = bf16_operands(m, n, k)
    bias = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    run(src, (a, b, c, bias), threads)
    want = np.maximum(exact + bias, 0)
    assert (np.abs(c - want) <= bound + 1e-6).all()


@pytest.mark.parametrize("m, n, k", SHAPES[:2])
def test_row_bias_residual_scale_and_clamp(m, n, k):
    body = f"""      %bi = affine.load %bias[%i] : memref<{m}xf32>
      %x = affine.load %res[%i, %j] : memref<{m}x{n}xf32>
      %s = arith.addf %c, %bi : f32
      %t = arith.addf %s, %x : f32
      %u = arith.mulf %t, %scale : f32
      %six = arith.constant 6.0 : f32
      %big = arith.cmpf ogt, %u, %six : f32
      %v = arith.select %big, %six, %u : f32
      %w = arith.maxnumf %v, %zero : f32
      affine.store %w, %C[%i, %j] : memref<{m}x{n}xf32>"""
    src = source(m, n, k, "bf16", "f32", body,
                 f", %bias: memref<{m}xf32>, %res: memref<{m}x{n}xf32>, %scale: f32")
    a, b, c, exact, bound = bf16_operands(m, n, k, seed=3)
    rng = np.random.default_rng(4)
    bias = rng.standard_normal(m).astype(np.float32)
    res = rng.standard_normal((m, n)).astype(np.float32)
    run(src, (a, b, c, bias, res, 0.5))
    want = np.clip((exact + bias[:, None] + res) * 0.5, 0, 6)
    assert (np.abs(c - want) <= bound + 1e-5).all()


def test_gelu_tanh_into_a_bf16_output():
    """GELU's tanh form, the result cast to bf16 into another matrix; C keeps the product."""
    m, n, k = 37, 70, 45
    body = f"""      %half = arith.constant 0.5 : f32
      %one = arith.constant 1.0 : f32
      %k0 = arith.constant 0.797884583 : f32
      %k1 = arith.constant 0.044715 : f32
      %c2 = arith.mulf %c, %c : f32
      %c3 = arith.mulf %c2, %c : f32
      %p = arith.mulf %k1, %c3 : f32
      %q = arith.addf %c, %p : f32
      %z = arith.mulf %k0, %q : f32
      %th = math.tanh %z : f32
      %s = arith.addf %one, %th : f32
      %h = arith.mulf %half, %c : f32
      %g = arith.mulf %h, %s : f32
      %o = arith.truncf %g : f32 to bf16
      affine.store %o, %out[%i, %j] : memref<{m}x{n}xbf16>"""
    src = source(m, n, k, "bf16", "f32", body, f", %out: memref<{m}x{n}xbf16>")
    a, b, c, exact, bound = bf16_operands(m, n, k, seed=5)
    out = np.zeros((m, n), ml_dtypes.bfloat16)
    run(src, (a, b, c, out))
    x = exact
    gelu = 0.5 * x * (1 + np.tanh(0.797884583 * (x + 0.044715 * x ** 3)))
    assert (np.abs(c - exact) <= bound).all()
    got = out.astype(np.float64)
    assert (np.abs(got - gelu) <= 2.0 ** -8 * np.abs(gelu) + 1e-5 + bound * 2).all()


@pytest.mark.parametrize("flags", ["", " fastmath<afn>"])
@pytest.mark.parametrize("t", ["bf16", "f32"])
def test_gelu_with_afn_takes_the_vector_tanh(flags, t):
    """fastmath<afn> on the epilogue's tanh survives the fusion: the tile's vectors call
    libmvec's tanh; without it the remark says the tanh runs lane by lane."""
    m, n, k = 37, 70, 45
    body = f"""      %half = arith.constant 0.5 : f32
      %one = arith.constant 1.0 : f32
      %k0 = arith.constant 0.797884583 : f32
      %k1 = arith.constant 0.044715 : f32
      %c3 = arith.mulf %c, %c : f32
      %c4 = arith.mulf %c3, %c : f32
      %p = arith.mulf %k1, %c4 : f32
      %q = arith.addf %c, %p : f32
      %z = arith.mulf %k0, %q : f32
      %th = math.tanh %z{flags} : f32
      %s = arith.addf %one, %th : f32
      %h = arith.mulf %half, %c : f32
      %g = arith.mulf %h, %s : f32
      affine.store %g, %C[%i, %j] : memref<{m}x{n}xf32>"""
    src = source(m, n, k, t, "f32", body)
    remarks = []
    mod = polyopt.compile(src, threads=1, remark=lambda loc, msg: remarks.append(msg), **ALL)
    fused = [r for r in remarks if "fused into hop.matmul's register tile" in r]
    assert len(fused) == 1, remarks
    note = "tanh computed lane by lane by libm: fastmath<afn> on it lets glibc's vector tanh"
    assert (note in fused[0]) == (flags == ""), fused
    from polyopt.codegen.vector_math import libmvec_loaded
    assert ("_ZGV" in mod.llvm_ir) == (flags != "" and libmvec_loaded())
    if t == "bf16":
        a, b, c, exact, bound = bf16_operands(m, n, k, seed=6)
    else:
        rng = np.random.default_rng(6)
        a, b = rng.standard_normal((m, k)).astype(np.float32), \
            rng.standard_normal((k, n)).astype(np.float32)
        c = rng.standard_normal((m, n)).astype(np.float32)
        exact = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
        bound = (k + 1) * 2.0 ** -24 * (np.abs(a.astype(np.float64)) @
                                        np.abs(b.astype(np.float64)) + np.abs(c))
    mod["f"](a, b, c)
    x = exact
    gelu = 0.5 * x * (1 + np.tanh(0.797884583 * (x + 0.044715 * x ** 3)))
    # the product's bound, moved by GELU's slope (at most 1.13), and a few roundings of GELU
    assert (np.abs(c - gelu) <= 1.2 * bound + 2.0 ** -20 * (np.abs(gelu) + 1)).all()


def test_int8_requantization_saturates():
    """i8 x i8 -> i32, then scale, round, clamp to [-128, 127] and cast to i8: exact against
    numpy, with values past both ends of i8 (saturation tested at the edges)."""
    m, n, k = 41, 67, 130
    body = f"""      %f = arith.sitofp %c : i32 to f32
      %s = arith.mulf %f, %scale : f32
      %lo = arith.constant -128.0 : f32
      %hi = arith.constant 127.0 : f32
      %a1 = arith.maximumf %s, %lo : f32
      %a2 = arith.minimumf %a1, %hi : f32
      %q = arith.fptosi %a2 : f32 to i32
      %t = arith.trunci %q : i32 to i8
      affine.store %t, %out[%i, %j] : memref<{m}x{n}xi8>"""
    src = source(m, n, k, "i8", "i32", body, f", %out: memref<{m}x{n}xi8>, %scale: f32")
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.zeros((m, n), np.int32)
    out = np.zeros((m, n), np.int8)
    scale = 1.0 / 512
    run(src, (a, b, c, out, scale))
    prod = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(c, prod)
    f = (prod.astype(np.float32) * np.float32(scale)).astype(np.float32)
    want = np.trunc(np.clip(f, -128, 127)).astype(np.int8)
    np.testing.assert_array_equal(out, want)
    assert (want == 127).any() and (want == -128).any()


def test_a_nest_using_its_indices_is_not_fused():
    m, n, k = 16, 20, 8
    body = f"""      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %s = arith.addf %c, %f : f32
      affine.store %s, %C[%i, %j] : memref<{m}x{n}xf32>"""
    src = source(m, n, k, "bf16", "f32", body)
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)["f"]
    assert not any("fused into" in r for r in remarks)
    a, b, c, exact, bound = bf16_operands(m, n, k)
    fn(a, b, c)
    want = exact + np.arange(m)[:, None]
    assert (np.abs(c - want) <= bound + 1e-5).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_convolution_bias_residual_relu(threads):
    """The ResNet pattern, conv + bias + residual + ReLU in bf16: the nest over the output's
    four dimensions is fused into the implicit GEMM's tile (the output and the residual seen
    as matrices)."""
    n, h, w, c, f = 2, 9, 11, 16, 70
    oh, ow = h - 2, w - 2
    src = conv_bias_residual_relu(n, h, w, c, f, elem="bf16")
    rng = np.random.default_rng(9)
    inp = rng.standard_normal((n, h, w, c)).astype(ml_dtypes.bfloat16)
    flt = rng.standard_normal((3, 3, c, f)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal(f).astype(np.float32)
    res = rng.standard_normal((n, oh, ow, f)).astype(np.float32)
    out = np.zeros((n, oh, ow, f), np.float32)
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["f"]
    assert any("fused into linalg.conv_2d_nhwc_hwcf's register tile" in r for r in remarks), \
        remarks
    fn(inp, flt, out, bias, res)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    conv = np.zeros((n, oh, ow, f))
    mags = np.zeros((n, oh, ow, f))
    for kh in range(3):
        for kw in range(3):
            window = i64[:, kh:kh + oh, kw:kw + ow, :]
            conv += np.einsum("nhwc,cf->nhwf", window, f64[kh, kw])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[kh, kw]))
    want = np.maximum(conv + bias + res, 0)
    assert (np.abs(out - want) <= (9 * c + 3) * 2.0 ** -24 * (mags + np.abs(res) + 1)).all()


def test_the_readme_example():
    """examples/matmul_bf16_bias_relu.mlir: fill, linalg.matmul of bf16 into f32, bias, ReLU."""
    from pathlib import Path
    src = (Path(__file__).parents[2] / "examples" / "matmul_bf16_bias_relu.mlir").read_text()
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, m: remarks.append(m), **ALL)["layer"]
    assert any("fused into linalg.matmul's register tile" in r for r in remarks), remarks
    rng = np.random.default_rng(12)
    a = rng.standard_normal((128, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 192)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal(192).astype(np.float32)
    c = np.full((128, 192), np.nan, np.float32)
    fn(a, b, c, bias)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = np.maximum(a64 @ b64 + bias, 0)
    assert (np.abs(c - want) <= 257 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + 1)).all()


LINALG_EPILOGUE = """#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @f(%A: memref<97x103xbf16>, %B: memref<103x101xbf16>, %C: memref<97x101xf32>, %bias: memref<101xf32>) {
  linalg.matmul ins(%A, %B : memref<97x103xbf16>, memref<103x101xbf16>) outs(%C : memref<97x101xf32>)
  linalg.generic {indexing_maps = [#col, #id], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<101xf32>) outs(%C : memref<97x101xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}
"""


def test_linalg_generic_epilogue():
    """Upstream IR's way to write bias + ReLU after linalg.matmul (mlir-opt-22 parses this):
    the elementwise linalg.generic on C is fused like the affine nest it lowers to."""
    from upstream_mlir import mlir_opt
    mlir_opt(LINALG_EPILOGUE)
    a, b, c, exact, bound = bf16_operands(97, 101, 103, seed=8)
    c[:] = 0
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bias = np.random.default_rng(8).standard_normal(101).astype(np.float32)
    remarks = []
    fn = polyopt.compile(LINALG_EPILOGUE, remark=lambda loc, m: remarks.append(m), **ALL)["f"]
    assert any("fused into linalg.matmul's register tile" in r for r in remarks), remarks
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound + 1e-6).all()
