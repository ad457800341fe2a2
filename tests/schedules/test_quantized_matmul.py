"""``linalg.quantized_matmul``: printed, generalized, lowered and refused as mlir-opt-22 does;
under --hopt a ``linalg.matmul`` of A and B on the dot engine with the zero points' share fused
into its register tile (:mod:`polyopt.schedules.quantized`), bit for bit the op's result, wrapped
sums included, on odd shapes and on threads."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def source(m, n, k, a="i8", b="i8", z="i32", c="i32", attrs=""):
    ta, tb, tc = f"memref<{m}x{k}x{a}>", f"memref<{k}x{n}x{b}>", f"memref<{m}x{n}x{c}>"
    return (f"func.func @qmm(%A: {ta}, %B: {tb}, %az: {z}, %bz: {z}, %C: {tc}) {{\n"
            f"  linalg.quantized_matmul{attrs} ins(%A, %B, %az, %bz : {ta}, {tb}, {z}, {z}) "
            f"outs(%C : {tc})\n  return\n}}\n")


VALID = [source(3, 5, 7), source(3, 5, 7, z="i8", attrs=" {foo = 1}"),
         source(3, 5, 7, a="i8", b="i8", z="i32", c="f32")]


@pytest.mark.parametrize("text", VALID)
def test_printed_generalized_and_lowered_as_mlir_opt_does(text):
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(text, "t.mlir")) == mlir_opt(text)
    generic = mlir_opt(text, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(text)
    module = parse(text, "t.mlir")
    convert_linalg_to_affine_loops(module)
    assert print_module(module) == mlir_opt(text, "--convert-linalg-to-affine-loops")


@pytest.mark.parametrize("text", [
    source(3, 5, 7).replace("memref<7x5xi8>", "memref<6x5xi8>"),      # K of 6 against A's 7
    source(3, 5, 7).replace("outs(%C : memref<3x5xi32>)", "outs(%A : memref<3x7xi8>)"),
])
def test_errors_are_mlir_opts(text):
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(text, filename="t.mlir")


def expected(a, b, az, bz, c):
    """C + (A - az)(B - bz) in int32's wrapping arithmetic."""
    exact = c.astype(np.int64) + (a.astype(np.int64) - az) @ (b.astype(np.int64) - bz)
    return ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("m, n, k", [(97, 101, 103), (6, 64, 4), (1, 40, 33), (40, 1, 33),
                                     (130, 70, 515)])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_the_ops_definition_bit_for_bit(m, n, k, threads):
    remarks = []
    fast = polyopt.compile(source(m, n, k), threads=threads,
                           remark=lambda loc, msg: remarks.append(msg), **ALL)["qmm"]
    assert any("linalg.quantized_matmul: the linalg.matmul of A and B" in r for r in remarks)
    plain = polyopt.compile(source(m, n, k))["qmm"]
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    for az, bz in ((0, 0), (-7, 12), (127, -128), (2**31 - 1, -2**31)):
        c = rng.integers(-10**6, 10**6, (m, n)).astype(np.int32)
        want = expected(a, b, az, bz, c)
        for fn in (fast, plain):
            got = c.copy()
            fn(a, b, az, bz, got)
            np.testing.assert_array_equal(got, want)


def test_the_zero_points_are_fused_into_the_register_tile():
    remarks = []
    polyopt.compile(source(64, 128, 96), remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any("fused into linalg.matmul's register tile" in r for r in remarks), remarks


def test_other_types_run_as_the_ops_nest():
    """A float C (or any combination the integer GEMM does not take) is the op's own nest."""
    m, n, k = 9, 10, 11
    remarks = []
    fn = polyopt.compile(source(m, n, k, c="f32"), remark=lambda loc, msg: remarks.append(msg),
                         **ALL)["qmm"]
    assert not any("linalg.quantized_matmul: the linalg.matmul" in r for r in remarks)
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.zeros((m, n), np.float32)
    fn(a, b, 3, -4, c)
    np.testing.assert_array_equal(c, ((a.astype(np.int64) - 3) @ (b.astype(np.int64) + 4))
                                  .astype(np.float32))
