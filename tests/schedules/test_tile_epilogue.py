"""The elementwise nest after an f32/f64 product or convolution, fused into the BLIS nest's
register tile (:mod:`polyopt.schedules.tile_epilogue`): applied to C's vectors before their
store in the last K block.  Checked against numpy on shapes that are no multiples of any tile
(edge tiles through their buffer, several K blocks, a short A, one column), on 1, 2 and 3
threads; the ISL proof that a nest stores each element once per K block is checked on nests
where it must fail."""

import numpy as np
import pytest
from conv_epilogue_text import conv_bias_residual_relu
from hypothesis import given, settings, strategies as st

import polyopt
from polyopt.affine.dialects.affine import AffineStoreOp
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.pipeline import PipelineOptions, load, run_passes
from polyopt.schedules.tile_epilogue import stores_once_per_k_block

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
DTYPES = {"f32": np.float32, "f64": np.float64}
FUSED = "fused into {}'s register tile after its last K block"


def matmul_source(m, n, k, t, body, extra_args="", attrs=""):
    """hop.matmul of A (M x K) and B (K x N) into C, then a nest over (i, j) whose ``body``
    reads %c = C[i, j] (and may use %zero) and stores."""
    ta, tb, tc = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}x{t}>"
    return f"""func.func @f(%A: {ta}, %B: {tb}, %C: {tc}{extra_args}) {{
  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})
  %zero = arith.constant 0.0 : {t}
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      %c = affine.load %C[%i, %j] : {tc}
{body}
    }}
  }}
  return
}}
"""


def compile_fused(src, threads=1, op="hop.matmul", fused=True):
    remarks = []
    fn = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                         **ALL)["f"]
    assert any(FUSED.format(op) in r for r in remarks) == fused, remarks
    return fn, remarks


def operands(m, n, k, t, seed=0):
    rng = np.random.default_rng(seed)
    dt = DTYPES[t]
    a = rng.standard_normal((m, k)).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    c = rng.standard_normal((m, n)).astype(dt)
    exact = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    unit = 2.0 ** -24 if t == "f32" else 2.0 ** -53
    bound = (k + 4) * unit * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
                              + np.abs(c) + 1)
    return a, b, c, exact, bound


def bias_relu(m, n, t):
    return f"""      %b = affine.load %bias[%j] : memref<{n}x{t}>
      %s = arith.addf %c, %b : {t}
      %r = arith.maximumf %s, %zero : {t}
      affine.store %r, %C[%i, %j] : memref<{m}x{n}x{t}>"""


# one K block with edge tiles in M and N; several K blocks; a short A; K < the K unroll
SHAPES = [(97, 101, 103), (13, 70, 2601), (130, 64, 40), (49, 512, 1000)]


@pytest.mark.parametrize("m, n, k", SHAPES)
@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_bias_relu(m, n, k, t, threads):
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>")
    fn, _ = compile_fused(src, threads)
    a, b, c, exact, bound = operands(m, n, k, t)
    bias = np.random.default_rng(1).standard_normal(n).astype(DTYPES[t])
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound).all()


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_an_edge_tile_in_a_block_of_two_panels_buffers_one_tile(t):
    """N_C = 128 holds two 64-column panels of N = 101: the tiles cut by an edge (the 37
    columns of panel 1, and the last row of panel 0) buffer their own M_R x N_R of C, which
    starts at column 64 j (the convex hull's minimum; the pieces 0 and 64 bound one panel
    each).  The copy had been all 101 columns of the tile's rows, for every panel: each
    element stored once per panel, so the proof refused the epilogue (Zen 5's model picks
    these tiles for this shape)."""
    m, n, k = 97, 101, 103
    attrs = (" {M_C = 100 : i32, K_C = 104 : i32, N_C = 128 : i32, M_R = 4 : i32, "
             "N_R = 64 : i32}")
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>", attrs)
    remarks = []
    compiled = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any(FUSED.format("hop.matmul") in r for r in remarks), remarks
    fn = compiled["f"]
    allocs = [op.result.type.shape for op in compiled.module.walk()
              if op.name == "memref.alloc"]
    assert (4, 64) in allocs and not any(s[-1] == 128 for s in allocs if len(s) == 2), allocs
    a, b, c, exact, bound = operands(m, n, k, t)
    bias = np.random.default_rng(1).standard_normal(n).astype(DTYPES[t])
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound).all()


@settings(max_examples=16, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 700), st.sampled_from(["f32", "f64"]))
def test_sizes_1_to_300(m, n, k, t):
    """Any shape: fused where the proof holds (not for M = 1), right either way."""
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>")
    remarks = []
    fn = polyopt.compile(src, threads=1, remark=lambda loc, msg: remarks.append(msg), **ALL)["f"]
    assert any("epilogue over C" in r for r in remarks) or m == 1 or n == 1, remarks
    a, b, c, exact, bound = operands(m, n, k, t, seed=m + n + k)
    bias = np.random.default_rng(k).standard_normal(n).astype(DTYPES[t])
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound).all()


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_three_threads_on_two_cores(t):
    m, n, k = 300, 257, 700
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>")
    fn, _ = compile_fused(src, threads=3)
    a, b, c, exact, bound = operands(m, n, k, t, seed=2)
    bias = np.random.default_rng(3).standard_normal(n).astype(DTYPES[t])
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound).all()


@pytest.mark.parametrize("m, n, k", [(97, 101, 103), (13, 70, 2601)])
def test_row_bias_residual_scale_and_clamp(m, n, k):
    t = "f32"
    body = f"""      %bi = affine.load %bias[%i] : memref<{m}xf32>
      %x = affine.load %res[%i, %j] : memref<{m}x{n}xf32>
      %s = arith.addf %c, %bi : f32
      %u = arith.addf %s, %x : f32
      %v = arith.mulf %u, %scale : f32
      %six = arith.constant 6.0 : f32
      %big = arith.cmpf ogt, %v, %six : f32
      %w = arith.select %big, %six, %v : f32
      %y = arith.maxnumf %w, %zero : f32
      affine.store %y, %C[%i, %j] : memref<{m}x{n}xf32>"""
    src = matmul_source(m, n, k, t, body, f", %bias: memref<{m}xf32>, "
                                          f"%res: memref<{m}x{n}xf32>, %scale: f32")
    fn, _ = compile_fused(src)
    a, b, c, exact, bound = operands(m, n, k, t, seed=4)
    rng = np.random.default_rng(5)
    bias = rng.standard_normal(m).astype(np.float32)
    res = rng.standard_normal((m, n)).astype(np.float32)
    fn(a, b, c, bias, res, 0.5)
    want = np.clip((exact + bias[:, None] + res) * 0.5, 0, 6)
    assert (np.abs(c - want) <= bound).all()
    assert (want == 6).any() and (want == 0).any()


def test_cast_into_another_matrix_keeps_c():
    """The result cast to f16 into D (rounded to nearest, with values past f16's range
    becoming inf as numpy's cast does); C keeps the product."""
    m, n, k = 37, 70, 300
    body = f"""      %s = arith.mulf %c, %scale : f32
      %h = arith.truncf %s : f32 to f16
      affine.store %h, %D[%i, %j] : memref<{m}x{n}xf16>"""
    src = matmul_source(m, n, k, "f32", body, f", %D: memref<{m}x{n}xf16>, %scale: f32")
    fn, _ = compile_fused(src)
    a, b, c, exact, bound = operands(m, n, k, "f32", seed=6)
    d = np.zeros((m, n), np.float16)
    fn(a, b, c, d, 3000.0)
    assert (np.abs(c - exact) <= bound).all()
    with np.errstate(over="ignore"):
        want = (c * np.float32(3000.0)).astype(np.float16)
    np.testing.assert_array_equal(d, want)
    assert np.isinf(want).any() and np.isfinite(want).any()


def test_beta_and_alpha():
    m, n, k, t = 45, 38, 519, "f64"
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>",
                        attrs=" {alpha = -1.5 : f64, beta = 0.5 : f64}")
    fn, _ = compile_fused(src)
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    c, bias = rng.standard_normal((m, n)), rng.standard_normal(n)
    want = np.maximum(-1.5 * a @ b + 0.5 * c + bias, 0)
    fn(a, b, c, bias)
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-11)


def test_a_row_vector_stays_a_nest_of_its_own():
    """M = 1 runs as a matrix-vector product whose stores of C are inside its k loop: the
    proof fails, the remark says why, the answer is still right."""
    m, n, k, t = 1, 300, 500, "f32"
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>")
    fn, remarks = compile_fused(src, fused=False)
    assert any("stays a nest of its own" in r for r in remarks), remarks
    a, b, c, exact, bound = operands(m, n, k, t, seed=8)
    bias = np.random.default_rng(9).standard_normal(n).astype(np.float32)
    fn(a, b, c, bias)
    assert (np.abs(c - np.maximum(exact + bias, 0)) <= bound).all()


def test_the_fused_ir_is_upstream_mlir():
    from upstream_mlir import mlir_opt
    m, n, k, t = 13, 70, 2601, "f32"
    src = matmul_source(m, n, k, t, bias_relu(m, n, t), f", %bias: memref<{n}x{t}>")
    module = load(src)
    run_passes(module, PipelineOptions(**ALL))
    text = print_module(module)
    assert "affine.if" in text and "arith.maximumf" in text and "vector<16xf32>" in text
    mlir_opt(text)


@pytest.mark.parametrize("kh, stride, c, f", [(3, 1, 16, 70), (1, 2, 40, 33), (3, 1, 300, 20)])
@pytest.mark.parametrize("threads", [1, 2])
def test_convolution_bias_residual_relu(kh, stride, c, f, threads):
    """The ResNet pattern in f32: the nest over the output's four dimensions is fused into the
    implicit GEMM's tile (the output and the residual seen as matrices)."""
    n, h, w = 2, 9, 11
    oh, ow = (h - kh) // stride + 1, (w - kh) // stride + 1
    src = conv_bias_residual_relu(n, h, w, c, f, kh, stride)
    fn, _ = compile_fused(src, threads, op="linalg.conv_2d_nhwc_hwcf")
    rng = np.random.default_rng(10)
    inp = rng.standard_normal((n, h, w, c)).astype(np.float32)
    flt = rng.standard_normal((kh, kh, c, f)).astype(np.float32)
    bias = rng.standard_normal(f).astype(np.float32)
    res = rng.standard_normal((n, oh, ow, f)).astype(np.float32)
    out = np.zeros((n, oh, ow, f), np.float32)
    fn(inp, flt, out, bias, res)
    conv = np.zeros((n, oh, ow, f))
    mags = np.zeros((n, oh, ow, f))
    for y in range(kh):
        for x in range(kh):
            window = inp[:, y:y + stride * (oh - 1) + 1:stride,
                         x:x + stride * (ow - 1) + 1:stride, :].astype(np.float64)
            conv += np.einsum("nhwc,cf->nhwf", window, flt[y, x].astype(np.float64))
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(flt[y, x]))
    want = np.maximum(conv + bias + res, 0)
    assert (np.abs(out - want) <= (kh * kh * c + 4) * 2.0 ** -24 * (mags + np.abs(res) + 2)).all()


def stores_of(src):
    module = parse(src)
    return [op for op in module.walk() if isinstance(op, AffineStoreOp)]


def test_the_proof_takes_a_naive_nest_with_its_k_loop():
    """C[i, j] += ... with k innermost: each element once per k iteration, all of them in the
    last one, so the k loop is the K-block loop."""
    src = """func.func @f(%A: memref<4x5xf64>, %B: memref<5x3xf64>, %C: memref<4x3xf64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 3 {
      affine.for %k = 0 to 5 {
        %a = affine.load %A[%i, %k] : memref<4x5xf64>
        %b = affine.load %B[%k, %j] : memref<5x3xf64>
        %c = affine.load %C[%i, %j] : memref<4x3xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<4x3xf64>
      }
    }
  }
  return
}"""
    why, loop = stores_once_per_k_block(stores_of(src), (4, 3))
    assert why is None and loop.constant_upper_bound == 5


@pytest.mark.parametrize("store, why", [
    # with t outermost, element 1 is stored in the last k (t = 0, k = 3) and again later
    # (t = 1, k = 0): the last K block's store is not its last
    ("affine.store %one, %C[0, (%t + %k) mod 2] : memref<1x2xf64>",
     "the loops around the K-block loop store an element twice"),
    # the last k stores nothing
    ("affine.if affine_set<(d0) : (2 - d0 >= 0)>(%k) {\n"
     "        affine.store %one, %C[0, %t] : memref<1x2xf64>\n      }",
     "the last K block does not store every element of C"),
    # every iteration stores the same element: no loop is the K-block loop
    ("affine.store %one, %C[0, 0] : memref<1x2xf64>", "C is stored more than once per K block"),
])
def test_the_proof_refuses(store, why):
    src = f"""func.func @f(%C: memref<1x2xf64>) {{
  affine.for %t = 0 to 2 {{
    affine.for %k = 0 to 4 {{
      %one = arith.constant 1.0 : f64
      {store}
    }}
  }}
  return
}}"""
    assert stores_once_per_k_block(stores_of(src), (1, 2)) == (why, None)


def test_a_nest_writing_the_convolution_image_is_not_fused():
    """A 1x1 convolution whose nest stores relu(O + bias) into the image I (same shape): I is
    read by the convolution (through A's im2col stand-in, which does not name it), so the
    nest is not fused, and the answer is the convolution of the image as it was."""
    n, h, w, c = 1, 6, 7, 40
    t = f"memref<{n}x{h}x{w}x{c}xf32>"
    src = f"""func.func @f(%I: {t}, %K: memref<1x1x{c}x{c}xf32>, %O: {t}, %bias: memref<{c}xf32>) {{
  linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%I, %K : {t}, memref<1x1x{c}x{c}xf32>) outs(%O : {t})
  %zero = arith.constant 0.0 : f32
  affine.for %a = 0 to {n} {{
    affine.for %b = 0 to {h} {{
      affine.for %d = 0 to {w} {{
        affine.for %e = 0 to {c} {{
          %x = affine.load %O[%a, %b, %d, %e] : {t}
          %y = affine.load %bias[%e] : memref<{c}xf32>
          %u = arith.addf %x, %y : f32
          %z = arith.maximumf %u, %zero : f32
          affine.store %z, %I[%a, %b, %d, %e] : {t}
        }}
      }}
    }}
  }}
  return
}}
"""
    fn, _ = compile_fused(src, op="linalg.conv_2d_nhwc_hwcf", fused=False)
    rng = np.random.default_rng(11)
    inp = rng.standard_normal((n, h, w, c)).astype(np.float32)
    flt = rng.standard_normal((1, 1, c, c)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    out = np.zeros((n, h, w, c), np.float32)
    conv = np.einsum("nhwc,cf->nhwf", inp.astype(np.float64), flt[0, 0].astype(np.float64))
    fn(inp, flt, out, bias)
    np.testing.assert_allclose(out, conv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(inp, np.maximum(conv + bias, 0), rtol=1e-4, atol=1e-4)
