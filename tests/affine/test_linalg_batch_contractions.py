"""``linalg.batch_vecmat``, ``linalg.batch_reduce_matmul`` (with its ``indexing_maps``) and
``linalg.mmt4d`` on memrefs: printed, generalized, lowered and refused as mlir-opt-22 does; run
against numpy on odd sizes, in f64 and in bytes with the unsigned cast."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.dialects.linalg import STRUCTURED_OPS
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%x: memref<2x4xf32>, %A: memref<2x4x3xf32>, %y: memref<2x3xf32>, "
        "%P: memref<2x5x4xf32>, %Q: memref<2x4x3xf32>, %C: memref<5x3xf32>, "
        "%Pt: memref<2x4x5xf32>, %Pb: memref<5x4xf32>, "
        "%L: memref<3x5x4x2xi8>, %R: memref<6x5x8x2xi8>, %O: memref<3x6x4x8xi32>")

TRANSPOSED_A = ("indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>, "
                "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
                "affine_map<(d0, d1, d2, d3) -> (d1, d2)>]")
BROADCAST_A = ("indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, "
               "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
               "affine_map<(d0, d1, d2, d3) -> (d1, d2)>]")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


ALL_OPS = func(f"""
  linalg.batch_vecmat ins(%x, %A : memref<2x4xf32>, memref<2x4x3xf32>) outs(%y : memref<2x3xf32>)
  linalg.batch_reduce_matmul ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)
  linalg.batch_reduce_matmul {TRANSPOSED_A} ins(%Pt, %Q : memref<2x4x5xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)
  linalg.batch_reduce_matmul {BROADCAST_A} ins(%Pb, %Q : memref<5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)
  linalg.mmt4d ins(%L, %R : memref<3x5x4x2xi8>, memref<6x5x8x2xi8>) outs(%O : memref<3x6x4x8xi32>)
  linalg.mmt4d {{cast = #linalg.type_fn<cast_unsigned>}} ins(%L, %R : memref<3x5x4x2xi8>, memref<6x5x8x2xi8>) outs(%O : memref<3x6x4x8xi32>)
  linalg.batch_reduce_matmul {{cast = #linalg.type_fn<cast_unsigned>}} ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)
""")


def test_ops_are_structured_ops():
    for name in ("linalg.batch_vecmat", "linalg.batch_reduce_matmul", "linalg.mmt4d"):
        assert name in STRUCTURED_OPS


def test_printed_as_mlir_opt_prints():
    assert print_module(parse(ALL_OPS, "t.mlir")) == mlir_opt(ALL_OPS)


def test_generic_form_reads_back_and_prints_as_mlir_opt_does():
    generic = mlir_opt(ALL_OPS, "--mlir-print-op-generic")
    module = parse(generic, "g.mlir")
    assert print_module(module) == mlir_opt(ALL_OPS)
    # polyopt's generic print means to mlir-opt-22 what the input does
    assert mlir_opt(print_module(module, generic=True), "--mlir-print-op-generic") == generic


def test_lowered_to_the_loops_mlir_opt_makes():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    module = parse(ALL_OPS, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 7
    assert print_module(module) == mlir_opt(ALL_OPS, "--convert-linalg-to-affine-loops")


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render().splitlines()[0]


ERRORS = [
    # k of 3 where x has 4
    "linalg.batch_vecmat ins(%x, %Q : memref<2x4xf32>, memref<2x4x3xf32>) outs(%x : "
    "memref<2x4xf32>)",
    "linalg.batch_vecmat ins(%y, %A : memref<2x3xf32>, memref<2x4x3xf32>) outs(%y : "
    "memref<2x3xf32>)",
    # C of 5x3 from A's 5 rows and B's 3 columns: C given 2x3
    "linalg.batch_reduce_matmul ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%y : "
    "memref<2x3xf32>)",
    # the maps: an output map of the batch, a dim outside the defaults, two maps, a bad broadcast
    "linalg.batch_reduce_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, "
    "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d2)>] "
    "ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)",
    "linalg.batch_reduce_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, "
    "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>] "
    "ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)",
    "linalg.batch_reduce_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, "
    "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>] "
    "ins(%P, %Q : memref<2x5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)",
    "linalg.batch_reduce_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1)>, "
    "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>] "
    "ins(%Pb, %Q : memref<5x4xf32>, memref<2x4x3xf32>) outs(%C : memref<5x3xf32>)",
    # mmt4d: the inner k0 of 2 against R's 8, and an f32 output from i8 through a missing op
    "linalg.mmt4d ins(%L, %L : memref<3x5x4x2xi8>, memref<3x5x4x2xi8>) outs(%O : "
    "memref<3x6x4x8xi32>)",
    "linalg.mmt4d ins(%L, %R : memref<3x5x4x2xi8>, memref<6x5x8x2xi8>) outs(%L : "
    "memref<3x5x4x2xi8>)",
]


@pytest.mark.parametrize("body", ERRORS)
def test_error_is_mlir_opts(body):
    text = func(body)
    assert error_of(text) == mlir_opt_error(text, filename="t.mlir")


# ---------------------------------------------------------------------------------------------
# execution against numpy: odd sizes

RNG = np.random.default_rng(5)
B, M, N, K = 3, 7, 11, 13


def run(src: str, name: str, *arrays):
    polyopt.compile(src)[name](*arrays)


def test_batch_vecmat_runs_as_numpy():
    x, a = RNG.standard_normal((B, K)), RNG.standard_normal((B, K, N))
    y = RNG.standard_normal((B, N))
    expect = y + np.einsum("bk,bkn->bn", x, a)
    run(f"""
func.func @bvm(%x: memref<{B}x{K}xf64>, %A: memref<{B}x{K}x{N}xf64>, %y: memref<{B}x{N}xf64>) {{
  linalg.batch_vecmat ins(%x, %A : memref<{B}x{K}xf64>, memref<{B}x{K}x{N}xf64>) outs(%y : memref<{B}x{N}xf64>)
  return
}}""", "bvm", x, a, y)
    np.testing.assert_allclose(y, expect, rtol=1e-12)


@pytest.mark.parametrize("maps,a_shape,spec", [
    ("", (B, M, K), "bmk"),
    (TRANSPOSED_A, (B, K, M), "bkm"),
    (BROADCAST_A, (M, K), "mk"),
])
def test_batch_reduce_matmul_runs_as_numpy(maps, a_shape, spec):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal((B, K, N))
    c = RNG.standard_normal((M, N))
    expect = c + np.einsum(f"{spec},bkn->mn", a, b)     # "mk": A broadcast over the batch
    ta = "x".join(map(str, a_shape)) + "xf64"
    run(f"""
func.func @brm(%A: memref<{ta}>, %B: memref<{B}x{K}x{N}xf64>, %C: memref<{M}x{N}xf64>) {{
  linalg.batch_reduce_matmul {maps} ins(%A, %B : memref<{ta}>, memref<{B}x{K}x{N}xf64>) outs(%C : memref<{M}x{N}xf64>)
  return
}}""", "brm", a, b, c)
    np.testing.assert_allclose(c, expect, rtol=1e-12)


@pytest.mark.parametrize("cast", ["", " {cast = #linalg.type_fn<cast_unsigned>}"])
def test_mmt4d_runs_as_numpy_in_bytes(cast):
    """mmt4d declares no ``cast``: MLIR neither checks nor reads one, its bytes are signed."""
    m, n, k, m0, n0, k0 = 3, 5, 7, 4, 6, 3
    lhs = RNG.integers(-128, 128, (m, k, m0, k0)).astype(np.int8)
    rhs = RNG.integers(-128, 128, (n, k, n0, k0)).astype(np.int8)
    out = RNG.integers(-1000, 1000, (m, n, m0, n0)).astype(np.int32)
    expect = out + np.einsum("mkxz,nkyz->mnxy", lhs.astype(np.int64),
                             rhs.astype(np.int64)).astype(np.int32)
    tl, tr, to = (f"memref<{m}x{k}x{m0}x{k0}xi8>", f"memref<{n}x{k}x{n0}x{k0}xi8>",
                  f"memref<{m}x{n}x{m0}x{n0}xi32>")
    run(f"""
func.func @mmt4d(%L: {tl}, %R: {tr}, %O: {to}) {{
  linalg.mmt4d{cast} ins(%L, %R : {tl}, {tr}) outs(%O : {to})
  return
}}""", "mmt4d", lhs, rhs, out)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("unsigned", [False, True])
def test_batch_reduce_matmul_casts_bytes_as_its_cast_says(unsigned):
    a = RNG.integers(-128, 128, (B, M, K)).astype(np.int8)
    b = RNG.integers(-128, 128, (B, K, N)).astype(np.int8)
    c = RNG.integers(-1000, 1000, (M, N)).astype(np.int32)
    view = np.uint8 if unsigned else np.int8
    expect = c + np.einsum("bmk,bkn->mn", a.view(view).astype(np.int64),
                           b.view(view).astype(np.int64)).astype(np.int32)
    cast = " {cast = #linalg.type_fn<cast_unsigned>}" if unsigned else ""
    ta, tb, tc = f"memref<{B}x{M}x{K}xi8>", f"memref<{B}x{K}x{N}xi8>", f"memref<{M}x{N}xi32>"
    run(f"""
func.func @brm(%A: {ta}, %B: {tb}, %C: {tc}) {{
  linalg.batch_reduce_matmul{cast} ins(%A, %B : {ta}, {tb}) outs(%C : {tc})
  return
}}""", "brm", a, b, c)
    np.testing.assert_array_equal(c, expect)


@pytest.mark.parametrize("op,ins", [
    ("linalg.matvec", "ins(%A, %x : memref<5x7xi8>, memref<7xi8>) outs(%y : memref<5xi32>)"),
    ("linalg.conv_2d_nhwc_hwcf", "ins(%I, %K : memref<1x5x5x3xi8>, memref<3x3x3x4xi8>) "
                                 "outs(%O : memref<1x3x3x4xi32>)"),
])
def test_a_cast_on_an_op_that_declares_none_is_read_as_mlir_reads_it(op, ins):
    """matvec, vecmat, dot, the batched vector forms, mmt4d and the convolutions cast signed
    whatever a ``cast`` attribute says (MLIR keeps it as a discardable attribute): lowered to
    the same loops as mlir-opt-22's, and a value MLIR does not check is kept."""
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    args = ("%A: memref<5x7xi8>, %x: memref<7xi8>, %y: memref<5xi32>, %I: memref<1x5x5x3xi8>, "
            "%K: memref<3x3x3x4xi8>, %O: memref<1x3x3x4xi32>")
    for cast in ("#linalg.type_fn<cast_unsigned>", "5 : i64"):
        text = f"func.func @f({args}) {{\n  {op} {{cast = {cast}}} {ins}\n  return\n}}\n"
        assert print_module(parse(text, "t.mlir")) == mlir_opt(text)
        module = parse(text, "t.mlir")
        convert_linalg_to_affine_loops(module)
        lowered = print_module(module)
        assert "arith.extsi" in lowered and "arith.extui" not in lowered
        assert lowered == mlir_opt(text, "--convert-linalg-to-affine-loops")
