"""``linalg.contract`` (MLIR 22's general contraction of two operands by their indexing maps):
printed, generalized, lowered and refused as mlir-opt-22 does; run against numpy's einsum, and
under --hopt raised to the BLIS pipeline where it is a matrix product."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = ("%A: memref<20x30xf32>, %B: memref<20x10xf32>, %C: memref<30x10xf32>, "
        "%X: memref<4x20x30xf32>, %Y: memref<4x20x10xf32>, %Ai: memref<20x30xi8>, "
        "%Bi: memref<20x10xi8>, %Ci: memref<30x10xi32>, %s: memref<f32>, %v: memref<20xf32>")
MKN = ("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
       "affine_map<(m, n, k) -> (m, n)>")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n  {body}\n  return\n}}\n"


VALID = func("\n  ".join([
    f"linalg.contract indexing_maps = [{MKN}] ins(%A, %B : memref<20x30xf32>, "
    "memref<20x10xf32>) outs(%C : memref<30x10xf32>)",
    f"linalg.contract indexing_maps = [{MKN}] ins(%Ai, %Bi : memref<20x30xi8>, "
    "memref<20x10xi8>) outs(%Ci : memref<30x10xi32>) {cast = #linalg.type_fn<cast_unsigned>}",
    "linalg.contract indexing_maps = [affine_map<(b, m, n, k) -> (b, k, m)>, "
    "affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (m, n)>] "
    "ins(%X, %Y : memref<4x20x30xf32>, memref<4x20x10xf32>) outs(%C : memref<30x10xf32>)",
    "linalg.contract indexing_maps = [affine_map<(k) -> (k)>, affine_map<(k) -> (k)>, "
    "affine_map<(k) -> ()>] ins(%v, %v : memref<20xf32>, memref<20xf32>) "
    "outs(%s : memref<f32>) {foo = 1}",
]))


def test_printed_generalized_and_lowered_as_mlir_opt_does():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    assert print_module(parse(VALID, "t.mlir")) == mlir_opt(VALID)
    generic = mlir_opt(VALID, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(VALID)
    module = parse(VALID, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == 4
    assert print_module(module) == mlir_opt(VALID, "--convert-linalg-to-affine-loops")


def contract(maps: str, ins: str, outs: str) -> str:
    return f"linalg.contract indexing_maps = [{maps}] ins({ins}) outs({outs})"


AB = "%A, %B : memref<20x30xf32>, memref<20x10xf32>"
C = "%C : memref<30x10xf32>"
ERRORS = [
    contract("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>", AB, C),
    contract("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
             "affine_map<(m, n, k) -> (m, k)>", AB, C),
    contract("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, "
             "affine_map<(m, n, k) -> (m + n, n)>", AB, C),
    contract("affine_map<(m, n, k) -> (m)>, affine_map<(m, n, k) -> (n)>, "
             "affine_map<(m, n, k) -> (m, n)>", "%v, %v : memref<20xf32>, memref<20xf32>", C),
    contract("affine_map<(m, n) -> (m)>, affine_map<(m, n) -> (m)>, "
             "affine_map<(m, n) -> (m, n)>", "%v, %v : memref<20xf32>, memref<20xf32>",
             "%A : memref<20x30xf32>"),
    contract(MKN + ", affine_map<(m, n, k) -> (m, n)>", AB, C),
    contract("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k)>, "
             "affine_map<(m, n, k) -> (m, n)>", AB, C),
    contract("affine_map<(m, n, k) -> (k, m)>, affine_map<(m, k) -> (k, m)>, "
             "affine_map<(m, n, k) -> (m, n)>", AB, C),
    contract(MKN, "%A, %A : memref<20x30xf32>, memref<20x30xf32>", C),
    f"linalg.contract ins({AB}) outs({C})",
]


@pytest.mark.parametrize("body", ERRORS)
def test_errors_are_mlir_opts(body):
    text = func(body)
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(text, filename="t.mlir")


RNG = np.random.default_rng(23)
SWITCHES = [{}, dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)]


def run(maps, shapes, spec, t="f64", cast="", switches=None, expect_raised=None):
    names = ("A", "B", "C")
    types = [f"memref<{'x'.join(map(str, s))}{'x' if s else ''}{e}>"
             for s, e in zip(shapes, t if isinstance(t, tuple) else (t,) * 3)]
    text = (f"func.func @f(%A: {types[0]}, %B: {types[1]}, %C: {types[2]}) {{\n"
            f"  linalg.contract indexing_maps = [{maps}]{cast} ins(%A, %B : {types[0]}, "
            f"{types[1]}) outs(%C : {types[2]})\n  return\n}}\n")
    remarks = []
    fn = polyopt.compile(text, remark=lambda loc, msg: remarks.append(msg),
                         **(switches or {}))["f"]
    if expect_raised is not None:
        assert any("raised to a contraction" in r for r in remarks) == expect_raised, remarks
    if isinstance(t, tuple):
        a = RNG.integers(-128, 128, shapes[0]).astype(np.int8)
        b = RNG.integers(-128, 128, shapes[1]).astype(np.int8)
        c = RNG.integers(-1000, 1000, shapes[2]).astype(np.int32)
        view = np.uint8 if cast else np.int8
        want = c + np.einsum(spec, a.view(view).astype(np.int64),
                             b.view(view).astype(np.int64)).astype(np.int32)
    else:
        a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
        c = RNG.standard_normal(shapes[2])
        want = c + np.einsum(spec, a, b)
    fn(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-12)


@pytest.mark.parametrize("switches", SWITCHES)
def test_a_transposed_matrix_product(switches):
    run(MKN, ((41, 37), (41, 29), (37, 29)), "km,kn->mn", switches=switches,
        expect_raised=bool(switches))


@pytest.mark.parametrize("switches", SWITCHES)
def test_a_batch_summed_into_c_and_a_batch_of_products(switches):
    run("affine_map<(b, m, n, k) -> (b, k, m)>, affine_map<(b, m, n, k) -> (b, k, n)>, "
        "affine_map<(b, m, n, k) -> (m, n)>", ((3, 17, 13), (3, 17, 11), (13, 11)),
        "bkm,bkn->mn", switches=switches, expect_raised=bool(switches))
    run("affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, "
        "affine_map<(b, m, n, k) -> (b, m, n)>", ((3, 13, 17), (17, 11), (3, 13, 11)),
        "bmk,kn->bmn", switches=switches, expect_raised=bool(switches))


@pytest.mark.parametrize("switches", SWITCHES)
def test_a_dot_product_and_an_outer_batch(switches):
    run("affine_map<(k) -> (k)>, affine_map<(k) -> (k)>, affine_map<(k) -> ()>",
        ((1001,), (1001,), ()), "k,k->", switches=switches)
    run("affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, "
        "affine_map<(i, j, k) -> (i, j)>", ((9, 7), (5, 7), (9, 5)), "ik,jk->ij",
        switches=switches)


@pytest.mark.parametrize("cast", ["", " {cast = #linalg.type_fn<cast_unsigned>}"])
@pytest.mark.parametrize("switches", SWITCHES)
def test_bytes_cast_as_the_attribute_says(cast, switches):
    run(MKN, ((45, 37), (45, 29), (37, 29)), "km,kn->mn", t=("i8", "i8", "i32"), cast=cast,
        switches=switches)
