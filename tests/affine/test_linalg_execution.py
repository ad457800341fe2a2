"""Every linalg op compiled by polyopt (lowered to affine loops by
convert_linalg_to_affine_loops, then to LLVM) and run on shapes that are multiples of nothing,
checked against numpy; and with the --hopt flags, where the BLIS pipeline takes the plain
linalg.matmul and the rest stays naive."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import polyopt

M, N, K, B = 7, 13, 5, 3          # multiples of nothing the passes tile by
RNG = np.random.default_rng(2026)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def run(text: str, name: str, *args, **switches):
    polyopt.compile(text, **switches)[name](*args)


GENERIC = f"""
func.func @transposed_broadcast(%T: memref<{N}x{M}xf64>, %x: memref<{N}xf64>, %A: memref<{M}x{N}xf64>) {{
  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}}
      ins(%T, %x : memref<{N}x{M}xf64>, memref<{N}xf64>) outs(%A : memref<{M}x{N}xf64>) {{
  ^bb0(%a: f64, %b: f64, %c: f64):
    %0 = arith.mulf %a, %b : f64
    %1 = arith.subf %0, %c : f64
    linalg.yield %1 : f64
  }}
  return
}}
func.func @row_sums(%A: memref<{M}x{N}xf64>, %y: memref<{M}xf64>) {{
  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}}
      ins(%A : memref<{M}x{N}xf64>) outs(%y : memref<{M}xf64>) {{
  ^bb0(%a: f64, %acc: f64):
    %0 = arith.addf %a, %acc : f64
    linalg.yield %0 : f64
  }}
  return
}}
func.func @column_max_and_index(%A: memref<{M}x{N}xf32>, %s: f32, %mx: memref<{N}xf32>, %I: memref<{M}x{N}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> ()>,
                                   affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1, d0)>],
                  iterator_types = ["parallel", "reduction"]}}
      ins(%A, %s : memref<{M}x{N}xf32>, f32) outs(%mx, %I : memref<{N}xf32>, memref<{M}x{N}xf32>) {{
  ^bb0(%a: f32, %scale: f32, %m: f32, %o: f32):
    %0 = arith.maximumf %a, %m : f32
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c13 = arith.constant {N} : index
    %k = arith.muli %j, %c13 : index
    %l = arith.addi %k, %i : index
    %w = arith.index_cast %l : index to i32
    %f = arith.sitofp %w : i32 to f32
    %g = arith.mulf %f, %scale : f32
    linalg.yield %0, %g : f32, f32
  }}
  return
}}
"""


def test_generic_transposed_and_broadcast_maps():
    T, x, A = rand(N, M), rand(N), rand(M, N)
    expect = T.T * x[None, :] - A
    run(GENERIC, "transposed_broadcast", T, x, A)
    np.testing.assert_allclose(A, expect, rtol=1e-13)


def test_generic_reduction():
    A, y = rand(M, N), rand(M)
    expect = y + A.sum(axis=1)
    run(GENERIC, "row_sums", A, y)
    np.testing.assert_allclose(y, expect, rtol=1e-13)


def test_generic_index_scalar_and_two_outputs():
    A = rand(M, N, dtype=np.float32)
    mx, out = np.full(N, -np.inf, np.float32), np.zeros((M, N), np.float32)
    # loops (d0, d1) run over A's columns and rows; out[r, c] = (r * N + c) * scale
    run(GENERIC, "column_max_and_index", A, np.float32(0.5), mx, out)
    np.testing.assert_array_equal(mx, A.max(axis=0))
    r, c = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    np.testing.assert_array_equal(out, ((r * N + c) * 0.5).astype(np.float32))


def test_generic_constant_and_compound_subscripts():
    S = 5
    text = f"""
func.func @f(%A: memref<{S}x{S + 2}xf64>, %y: memref<{2 * S - 1}xf64>) {{
  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, 2)>, affine_map<(d0, d1) -> (d1, d0 + 1)>,
                                   affine_map<(d0, d1) -> (d0 + d1)>],
                  iterator_types = ["parallel", "reduction"]}}
      ins(%A, %A : memref<{S}x{S + 2}xf64>, memref<{S}x{S + 2}xf64>) outs(%y : memref<{2 * S - 1}xf64>) {{
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %0 = arith.mulf %a, %b : f64
    %1 = arith.addf %acc, %0 : f64
    linalg.yield %1 : f64
  }}
  return
}}"""
    A = rand(S, S + 2)
    y = rand(2 * S - 1)
    expect = y.copy()
    for d0, d1 in itertools.product(range(S), range(S)):
        expect[d0 + d1] += A[d0, 2] * A[d1, d0 + 1]
    run(text, "f", A, y)
    np.testing.assert_allclose(y, expect, rtol=1e-12)


MAP_REDUCE = f"""
func.func @maps(%A: memref<{M}x{N}xf64>, %B: memref<{M}x{N}xf64>, %C: memref<{M}x{N}xf64>, %D: memref<{M}x{N}xf64>) {{
  linalg.map {{ arith.subf }} ins(%A, %B : memref<{M}x{N}xf64>, memref<{M}x{N}xf64>) outs(%C : memref<{M}x{N}xf64>)
  linalg.map ins(%A, %B : memref<{M}x{N}xf64>, memref<{M}x{N}xf64>) outs(%D : memref<{M}x{N}xf64>)
    (%a: f64, %b: f64, %o: f64) {{
      %0 = math.fma %a, %b, %o : f64
      linalg.yield %0 : f64
    }}
  return
}}
func.func @reductions(%A: memref<{B}x{M}x{N}xf32>, %s: memref<{M}xf32>, %mx: memref<{B}x{N}xf32>,
                      %mn: memref<{B}x{N}xf32>) {{
  linalg.reduce {{ arith.addf }} ins(%A : memref<{B}x{M}x{N}xf32>) outs(%s : memref<{M}xf32>) dimensions = [0, 2]
  linalg.reduce ins(%A, %A : memref<{B}x{M}x{N}xf32>, memref<{B}x{M}x{N}xf32>)
      outs(%mx, %mn : memref<{B}x{N}xf32>, memref<{B}x{N}xf32>) dimensions = [1]
    (%a: f32, %b: f32, %m: f32, %n: f32) {{
      %0 = arith.maximumf %a, %m : f32
      %1 = arith.minimumf %b, %n : f32
      linalg.yield %0, %1 : f32, f32
    }}
  return
}}
"""


def test_map():
    A, Bm, C, D = rand(M, N), rand(M, N), rand(M, N), rand(M, N)
    expect_d = A * Bm + D
    run(MAP_REDUCE, "maps", A, Bm, C, D)
    np.testing.assert_allclose(C, A - Bm, rtol=1e-15)
    np.testing.assert_allclose(D, expect_d, rtol=1e-13)


def test_reduce():
    A = rand(B, M, N, dtype=np.float32)
    s = rand(M, dtype=np.float32)
    mx = np.full((B, N), -np.inf, np.float32)
    mn = np.full((B, N), np.inf, np.float32)
    expect_s = s + A.sum(axis=(0, 2))
    run(MAP_REDUCE, "reductions", A, s, mx, mn)
    np.testing.assert_allclose(s, expect_s, rtol=1e-5)
    np.testing.assert_array_equal(mx, A.max(axis=1))
    np.testing.assert_array_equal(mn, A.min(axis=1))


DATA_MOVEMENT = f"""
func.func @transpose(%X: memref<{B}x{M}x{N}xf64>, %Y: memref<{M}x{N}x{B}xf64>) {{
  linalg.transpose ins(%X : memref<{B}x{M}x{N}xf64>) outs(%Y : memref<{M}x{N}x{B}xf64>) permutation = [1, 2, 0]
  return
}}
func.func @copies(%X: memref<{M}x{N}xf64>, %Y: memref<{M}x{N}xf32>, %I: memref<{M}x{N}xi16>,
                  %Fs: memref<{M}x{N}xf64>, %Fu: memref<{M}x{N}xf64>) {{
  linalg.copy ins(%X : memref<{M}x{N}xf64>) outs(%Y : memref<{M}x{N}xf32>)
  linalg.copy ins(%I : memref<{M}x{N}xi16>) outs(%Fs : memref<{M}x{N}xf64>)
  linalg.copy {{cast = #linalg.type_fn<cast_unsigned>}} ins(%I : memref<{M}x{N}xi16>) outs(%Fu : memref<{M}x{N}xf64>)
  return
}}
func.func @fills(%X: memref<{M}x{N}xf32>, %v: f32, %I: memref<{N}xi32>, %k: i32, %S: memref<f64>, %w: f64) {{
  linalg.fill ins(%v : f32) outs(%X : memref<{M}x{N}xf32>)
  linalg.fill ins(%k : i32) outs(%I : memref<{N}xi32>)
  linalg.fill ins(%w : f64) outs(%S : memref<f64>)
  return
}}
"""


def test_transpose():
    X, Y = rand(B, M, N), np.zeros((M, N, B))
    run(DATA_MOVEMENT, "transpose", X, Y)
    np.testing.assert_array_equal(Y, X.transpose(1, 2, 0))


def test_copy_with_signed_and_unsigned_casts():
    X, Y = rand(M, N), np.zeros((M, N), np.float32)
    I = RNG.integers(-2 ** 15, 2 ** 15, (M, N)).astype(np.int16)
    Fs, Fu = np.zeros((M, N)), np.zeros((M, N))
    run(DATA_MOVEMENT, "copies", X, Y, I, Fs, Fu)
    np.testing.assert_array_equal(Y, X.astype(np.float32))
    np.testing.assert_array_equal(Fs, I.astype(np.float64))
    np.testing.assert_array_equal(Fu, I.view(np.uint16).astype(np.float64))


def test_fill():
    X, I, S = rand(M, N, dtype=np.float32), np.zeros(N, np.int32), np.zeros(())
    run(DATA_MOVEMENT, "fills", X, np.float32(1.25), I, -7, S, 2.5)
    assert (X == np.float32(1.25)).all() and (I == -7).all() and S[()] == 2.5


MATMULS = f"""
#tA = affine_map<(d0, d1, d2) -> (d2, d0)>
#tB = affine_map<(d0, d1, d2) -> (d1, d2)>
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#tC = affine_map<(d0, d1, d2) -> (d1, d0)>
#bB = affine_map<(d0, d1, d2) -> (d2)>
func.func @plain(%A: memref<{M}x{K}xf64>, %B: memref<{K}x{N}xf64>, %C: memref<{M}x{N}xf64>) {{
  linalg.matmul ins(%A, %B : memref<{M}x{K}xf64>, memref<{K}x{N}xf64>) outs(%C : memref<{M}x{N}xf64>)
  return
}}
func.func @transposed(%At: memref<{K}x{M}xf64>, %Bt: memref<{N}x{K}xf64>, %C: memref<{M}x{N}xf64>,
                      %Ct: memref<{N}x{M}xf64>, %A: memref<{M}x{K}xf64>, %x: memref<{K}xf64>) {{
  linalg.matmul indexing_maps = [#tA, #tB, #mC] ins(%At, %Bt : memref<{K}x{M}xf64>, memref<{N}x{K}xf64>)
      outs(%C : memref<{M}x{N}xf64>)
  linalg.matmul indexing_maps = [#mA, #tB, #tC] ins(%A, %Bt : memref<{M}x{K}xf64>, memref<{N}x{K}xf64>)
      outs(%Ct : memref<{N}x{M}xf64>)
  linalg.matmul indexing_maps = [#mA, #bB, #mC] ins(%A, %x : memref<{M}x{K}xf64>, memref<{K}xf64>)
      outs(%C : memref<{M}x{N}xf64>)
  return
}}
func.func @ints(%A: memref<{M}x{K}xi8>, %B: memref<{K}x{N}xi8>, %Cs: memref<{M}x{N}xi32>, %Cu: memref<{M}x{N}xi32>) {{
  linalg.matmul ins(%A, %B : memref<{M}x{K}xi8>, memref<{K}x{N}xi8>) outs(%Cs : memref<{M}x{N}xi32>)
  linalg.matmul {{cast = #linalg.type_fn<cast_unsigned>}} ins(%A, %B : memref<{M}x{K}xi8>, memref<{K}x{N}xi8>)
      outs(%Cu : memref<{M}x{N}xi32>)
  return
}}
func.func @widening(%A: memref<{M}x{K}xf32>, %B: memref<{K}x{N}xi16>, %C: memref<{M}x{N}xf64>) {{
  linalg.matmul ins(%A, %B : memref<{M}x{K}xf32>, memref<{K}x{N}xi16>) outs(%C : memref<{M}x{N}xf64>)
  return
}}
func.func @booleans(%A: memref<{M}x{K}xi1>, %B: memref<{K}x{N}xi1>, %C: memref<{M}x{N}xi1>) {{
  linalg.matmul ins(%A, %B : memref<{M}x{K}xi1>, memref<{K}x{N}xi1>) outs(%C : memref<{M}x{N}xi1>)
  return
}}
func.func @others(%A3: memref<{B}x{M}x{K}xf32>, %B3: memref<{B}x{K}x{N}xf32>, %C3: memref<{B}x{M}x{N}xf32>,
                  %A2: memref<{M}x{K}xf32>, %x: memref<{K}xf32>, %y: memref<{M}xf32>, %z: memref<{K}xf32>,
                  %s: memref<f32>) {{
  linalg.batch_matmul ins(%A3, %B3 : memref<{B}x{M}x{K}xf32>, memref<{B}x{K}x{N}xf32>) outs(%C3 : memref<{B}x{M}x{N}xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%A2, %B3 : memref<{M}x{K}xf32>, memref<{B}x{K}x{N}xf32>) outs(%C3 : memref<{B}x{M}x{N}xf32>)
  linalg.matvec ins(%A2, %x : memref<{M}x{K}xf32>, memref<{K}xf32>) outs(%y : memref<{M}xf32>)
  linalg.vecmat ins(%y, %A2 : memref<{M}xf32>, memref<{M}x{K}xf32>) outs(%z : memref<{K}xf32>)
  linalg.dot ins(%x, %z : memref<{K}xf32>, memref<{K}xf32>) outs(%s : memref<f32>)
  return
}}
"""

FLAGS = [{}, {"hopt": True}, {"hopt": True, "copy": True, "unroll": True, "scalrep": True,
                                "vect": True}]


@pytest.mark.parametrize("flags", FLAGS, ids=["naive", "hopt", "hopt-all"])
def test_matmul_plain_and_transposed(flags):
    compiled = polyopt.compile(MATMULS, **flags)
    A, Bm, C = rand(M, K), rand(K, N), rand(M, N)
    expect = C + A @ Bm
    compiled["plain"](A, Bm, C)
    np.testing.assert_allclose(C, expect, rtol=1e-12)
    At, Bt, C, Ct, x = rand(K, M), rand(N, K), rand(M, N), rand(N, M), rand(K)
    expect_c = C + At.T @ Bt.T + np.outer(A @ x, np.ones(N))
    expect_ct = Ct + (A @ Bt.T).T
    compiled["transposed"](At, Bt, C, Ct, A, x)
    np.testing.assert_allclose(C, expect_c, rtol=1e-12)
    np.testing.assert_allclose(Ct, expect_ct, rtol=1e-12)


@pytest.mark.parametrize("flags", FLAGS[:2], ids=["naive", "hopt"])
def test_matmul_casts(flags):
    compiled = polyopt.compile(MATMULS, **flags)
    A = RNG.integers(-128, 128, (M, K)).astype(np.int8)
    Bm = RNG.integers(-128, 128, (K, N)).astype(np.int8)
    Cs, Cu = RNG.integers(-99, 99, (M, N)).astype(np.int32), np.zeros((M, N), np.int32)
    expect_s = Cs + A.astype(np.int32) @ Bm.astype(np.int32)
    expect_u = A.view(np.uint8).astype(np.int32) @ Bm.view(np.uint8).astype(np.int32)
    compiled["ints"](A, Bm, Cs, Cu)
    np.testing.assert_array_equal(Cs, expect_s)
    np.testing.assert_array_equal(Cu, expect_u)
    Af, Bi, C = rand(M, K, dtype=np.float32), RNG.integers(-9, 9, (K, N)).astype(np.int16), rand(M, N)
    expect = C + Af.astype(np.float64) @ Bi.astype(np.float64)
    compiled["widening"](Af, Bi, C)
    np.testing.assert_allclose(C, expect, rtol=1e-12)
    Ab, Bb = RNG.random((M, K)) < 0.2, RNG.random((K, N)) < 0.2
    Cb = RNG.random((M, N)) < 0.1
    expect_b = Cb | ((Ab.astype(int) @ Bb.astype(int)) > 0)   # i1: andi / ori (or, not xor)
    compiled["booleans"](Ab, Bb, Cb)
    np.testing.assert_array_equal(Cb, expect_b)


@pytest.mark.parametrize("flags", FLAGS[:2], ids=["naive", "hopt"])
def test_batch_matmul_matvec_vecmat_dot(flags):
    A3, B3, C3 = (rand(B, M, K, dtype=np.float32), rand(B, K, N, dtype=np.float32),
                  rand(B, M, N, dtype=np.float32))
    A2, x = rand(M, K, dtype=np.float32), rand(K, dtype=np.float32)
    y, z, s = rand(M, dtype=np.float32), rand(K, dtype=np.float32), rand(dtype=np.float32)
    s = np.array(s, np.float32).reshape(())
    f64 = np.float64
    e_c3 = C3 + A3.astype(f64) @ B3 + A2.astype(f64)[None] @ B3
    e_y = y + A2.astype(f64) @ x
    e_z = z + e_y @ A2
    e_s = s + x.astype(f64) @ e_z
    polyopt.compile(MATMULS, **flags)["others"](A3, B3, C3, A2, x, y, z, s)
    for got, want in ((C3, e_c3), (y, e_y), (z, e_z), (s, e_s)):   # f32 sums of 5 to 10 terms
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


CONVS = """
func.func @f(%I: memref<2x11x10x3xf64>, %K: memref<3x2x3x5xf64>, %O: memref<2x3x5x5xf64>,
             %Kd: memref<3x2x3xf64>, %Od: memref<2x7x7x3xf64>,
             %I1: memref<2x9x3xf64>, %K1: memref<3x3x5xf64>, %O1: memref<2x3x5xf64>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[3, 2]> : tensor<2xi64>}
    ins(%I, %K : memref<2x11x10x3xf64>, memref<3x2x3x5xf64>) outs(%O : memref<2x3x5x5xf64>)
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<[2, 3]> : tensor<2xi64>}
    ins(%I, %Kd : memref<2x11x10x3xf64>, memref<3x2x3xf64>) outs(%Od : memref<2x7x7x3xf64>)
  linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
    ins(%I1, %K1 : memref<2x9x3xf64>, memref<3x3x5xf64>) outs(%O1 : memref<2x3x5xf64>)
  return
}
"""


def test_convolutions_in_mlir_loop_order():
    I, Kf, O = rand(2, 11, 10, 3), rand(3, 2, 3, 5), rand(2, 3, 5, 5)
    Kd, Od = rand(3, 2, 3), rand(2, 7, 7, 3)
    I1, K1, O1 = rand(2, 9, 3), rand(3, 3, 5), rand(2, 3, 5)
    e_o, e_od, e_o1 = O.copy(), Od.copy(), O1.copy()
    for kh, kw in itertools.product(range(3), range(2)):
        win = I[:, kh * 2:kh * 2 + 7:3, kw:kw + 9:2, :]       # strides (3, 2), dilation 2 on h
        e_o += np.einsum("nhwc,cf->nhwf", win, Kf[kh, kw])
        wd = I[:, kh * 2:kh * 2 + 7, kw * 3:kw * 3 + 7, :]    # dilations (2, 3)
        e_od += wd * Kd[kh, kw]
    for kw in range(3):
        e_o1 += np.einsum("nwc,cf->nwf", I1[:, kw * 2:kw * 2 + 5:2, :], K1[kw])
    run(CONVS, "f", I, Kf, O, Kd, Od, I1, K1, O1)
    np.testing.assert_allclose(O, e_o, rtol=1e-12)
    np.testing.assert_allclose(Od, e_od, rtol=1e-12)
    np.testing.assert_allclose(O1, e_o1, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# random contractions: any permutation/broadcast of the loops in each operand's map, the
# loops an output does not index are reductions; checked against numpy.einsum and against
# mlir-opt-22's lowering of the same op

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def contractions(draw):
    n = draw(st.integers(1, 4))
    extents = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    loops = list(range(n))
    out = draw(st.permutations(loops))[:draw(st.integers(0, n))]
    ins = []
    for _ in range(draw(st.integers(1, 2))):
        ins.append(draw(st.permutations(loops))[:draw(st.integers(1, n))])
    # every loop must size some operand: give the first input the loops nobody indexes
    missing = [d for d in loops if d not in out and not any(d in i for i in ins)]
    ins[0] = list(ins[0]) + missing
    return extents, [list(i) for i in ins], list(out)


def _generic_text(extents, ins, out):
    n = len(extents)
    dims = ", ".join(f"d{d}" for d in range(n))

    def mp(ix):
        return f"affine_map<({dims}) -> ({', '.join(f'd{d}' for d in ix)})>"

    def ty(ix):
        return "memref<" + "".join(f"{extents[d]}x" for d in ix) + "f64>"
    args = ", ".join(f"%I{k}: {ty(ix)}" for k, ix in enumerate(ins)) + f", %O: {ty(out)}"
    iters = ", ".join('"parallel"' if d in out else '"reduction"' for d in range(n))
    names = [f"%a{k}" for k in range(len(ins))]
    body = [f"%p0 = arith.mulf {names[0]}, {names[0]} : f64"] if len(ins) == 1 else \
        [f"%p0 = arith.mulf {names[0]}, {names[1]} : f64"]
    body.append("%s = arith.addf %o, %p0 : f64")
    return (f"func.func @f({args}) {{\n"
            f"  linalg.generic {{indexing_maps = [{', '.join(mp(ix) for ix in ins + [out])}], "
            f"iterator_types = [{iters}]}}\n"
            f"      ins({', '.join(f'%I{k}' for k in range(len(ins)))} : "
            f"{', '.join(ty(ix) for ix in ins)}) outs(%O : {ty(out)}) {{\n"
            f"  ^bb0({', '.join(f'{a}: f64' for a in names)}, %o: f64):\n"
            + "".join(f"    {line}\n" for line in body)
            + "    linalg.yield %s : f64\n  }\n  return\n}\n")


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(contractions())
def test_random_contractions(case):
    from linalg_oracle import mlir_opt
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    extents, ins, out = case
    text = _generic_text(extents, ins, out)
    module = polyopt.parse(text)
    convert_linalg_to_affine_loops(module)
    assert str(module) == str(polyopt.parse(mlir_opt(text, "--convert-linalg-to-affine-loops")))
    arrays = [rand(*[extents[d] for d in ix]) for ix in ins]
    o = rand(*[extents[d] for d in out])
    expect = o.copy()
    for it in np.ndindex(*extents):       # the loop nest the op means, in numpy
        vals = [a[tuple(it[d] for d in ix)] for a, ix in zip(arrays, ins)]
        expect[tuple(it[d] for d in out)] += vals[0] * vals[-1]
    run(text, "f", *arrays, o)
    np.testing.assert_allclose(o, expect, rtol=1e-12, atol=1e-12)
