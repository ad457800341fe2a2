"""MLIR's ``amx`` dialect (:mod:`polyopt.affine.dialects.amx`, :mod:`polyopt.codegen.lower_amx`).

* the type and the five ops print as ``mlir-opt-22`` prints them, and it accepts our print;
* the verifier refuses what upstream refuses, with upstream's message at upstream's location;
* compiled for Sapphire Rapids, the ops become AMX instructions (no tile spills), run where
  this CPU has them;
* everywhere else the emulation runs, and matches a numpy model of the instructions bit for
  bit: one f32 rounding per product added (bf16/f16 products are exact in f32), i32 wrapping.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import polyopt
from polyopt.affine.affine_rules import is_pure
from polyopt.affine.diagnostics import CodegenError, ParseError, VerifyError
from polyopt.affine.greedy_cleanup import erase_trivially_dead
from polyopt.affine.types import AMXTileType, bf16, f32
from polyopt.codegen import jit
from polyopt.codegen.amx_permission import AMXPermissionError, request_amx_permission
from polyopt.codegen.cpu_facts import host_facts
from polyopt.codegen.target import Target, compiling_for
from host_targets import without_amx
from upstream_mlir import assert_mlir_opt_prints_back, mlir_opt, mlir_opt_error

ml_dtypes = pytest.importorskip("ml_dtypes")

TRIPLE = "x86_64-unknown-linux-gnu"
AVX512 = "+avx,+avx2,+fma,+f16c,+avx512f,+avx512dq,+avx512bw,+avx512vl,+avx512cd,+avx512bf16"
CACHES = (48 * 1024, 2 << 20, 105 << 20)
SPR = Target.from_features(TRIPLE, "sapphirerapids",
                           AVX512 + ",+amx-tile,+amx-bf16,+amx-int8,+amx-fp16", CACHES)
SPR_NO_FP16 = Target.from_features(TRIPLE, "sapphirerapids",
                                   AVX512 + ",+amx-tile,+amx-bf16,+amx-int8", CACHES)

EVERY_OP = """\
module {
  func.func @f(%arg0: memref<4x16x32xbf16>, %arg1: memref<?x?xbf16>, %arg2: memref<64x64xf32>, %arg3: index, %arg4: index, %arg5: index, %arg6: memref<16x64xi8>, %arg7: memref<16x16xi32>) {
    %c0 = arith.constant 0 : index
    %0 = amx.tile_zero : !amx.tile<16x16xf32>
    %1 = amx.tile_load %arg0[%arg3, %c0, %c0] : memref<4x16x32xbf16> into !amx.tile<16x32xbf16>
    %2 = amx.tile_load %arg1[%c0, %c0], %arg5 {polyopt.tag} : memref<?x?xbf16> into !amx.tile<16x32xbf16>
    %3 = amx.tile_mulf %1, %2, %0 : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    %4 = amx.tile_load %arg6[%c0, %c0] : memref<16x64xi8> into !amx.tile<16x64xi8>
    %5 = amx.tile_zero : !amx.tile<16x16xi32>
    %6 = amx.tile_muli %4 zext, %4, %5 : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    %7 = amx.tile_muli %4, %4 zext, %6 : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    %8 = amx.tile_muli %4 zext, %4 zext, %7 : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    %9 = amx.tile_muli %4, %4, %8 : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    amx.tile_store %arg7[%c0, %c0], %9 : memref<16x16xi32>, !amx.tile<16x16xi32>
    amx.tile_store %arg2[%arg3, %arg4], %3, %arg5 : memref<64x64xf32>, !amx.tile<16x16xf32>
    return
  }
}
"""


# ---------------------------------------------------------------------------------------------
# syntax


def test_every_op_prints_as_upstream_does():
    module = polyopt.parse(EVERY_OP)
    assert str(module) == EVERY_OP
    assert mlir_opt(EVERY_OP) == EVERY_OP
    assert_mlir_opt_prints_back(EVERY_OP)


def test_generic_form_round_trips_through_upstream():
    generic = polyopt.print_module(polyopt.parse(EVERY_OP), generic=True)
    assert "operandSegmentSizes = array<i32: 1, 2, 1, 1>" in generic     # the last store
    assert '"amx.tile_muli"(%5, %5, %6) <{isZextLhs}>' in generic    # a property
    assert str(polyopt.parse(generic)) == EVERY_OP
    assert mlir_opt(generic) == EVERY_OP
    upstream_generic = mlir_opt(EVERY_OP, "--mlir-print-op-generic")
    assert generic == upstream_generic
    assert str(polyopt.parse(upstream_generic)) == EVERY_OP


def test_build_every_op():
    """The ``build`` classmethods make the ops the parser makes (the first lines of EVERY_OP,
    and the last store with its stride)."""
    from polyopt.affine.builder import Builder
    from polyopt.affine.dialects.amx import (TileLoadOp, TileMulFOp, TileMulIOp, TileStoreOp,
                                             TileZeroOp)
    from polyopt.affine.types import i8, i32
    from polyopt.affine.verifier import verify
    module = polyopt.parse(EVERY_OP)
    func = module.regions[0].blocks[0].ops[0]
    block = func.regions[0].blocks[0]
    args, c0 = block.args, block.ops[0].result
    for op in reversed(block.ops[1:-1]):       # all but the constant and the return
        op.erase()
    b = Builder.before_terminator(block)
    acc = b.create(TileZeroOp, AMXTileType(16, 16, f32)).result
    a = b.create(TileLoadOp, args[0], [args[3], c0, c0], AMXTileType(16, 32, bf16)).result
    t = b.create(TileLoadOp, args[1], [c0, c0], AMXTileType(16, 32, bf16), stride=args[5])
    r = b.create(TileMulFOp, a, t.result, acc).result
    x = b.create(TileLoadOp, args[6], [c0, c0], AMXTileType(16, 64, i8)).result
    zi = b.create(TileZeroOp, AMXTileType(16, 16, i32)).result
    m = b.create(TileMulIOp, x, x, zi, zext_lhs=True).result
    b.create(TileStoreOp, args[7], [c0, c0], m)
    b.create(TileStoreOp, args[2], [args[3], args[4]], r, stride=args[5])
    verify(module)
    text = str(module)
    assert "%2 = amx.tile_load %arg1[%c0, %c0], %arg5 : memref<?x?xbf16> into " in text
    assert "%6 = amx.tile_muli %4 zext, %4, %5 : " in text
    assert "amx.tile_store %arg2[%arg3, %arg4], %3, %arg5 : memref<64x64xf32>, " in text
    assert mlir_opt(text) == text


def test_the_tile_type():
    t = AMXTileType(16, 32, bf16)
    assert str(t) == "!amx.tile<16x32xbf16>" and t.row_bytes == 64
    text = "func.func @f(%arg0: !amx.tile< 8 x 4 x f32 >) {\n  return\n}\n"
    assert "(%arg0: !amx.tile<8x4xf32>)" in str(polyopt.parse(text))
    alias = "!t = !amx.tile<8x4xf32>\n" + text.replace("!amx.tile< 8 x 4 x f32 >", "!t")
    assert polyopt.parse(alias).regions[0].blocks[0].ops[0].function_type.inputs == \
        (AMXTileType(8, 4, f32),)


@pytest.mark.parametrize("tile, message", [
    ("16x16xf64", "1:18: error: failed to verify 'elementType': 32-bit float or 16-bit float or "
                  "bfloat16 type or 32-bit signless integer or 8-bit signless integer"),
    ("16x?xf32", "1:31: error: expected static shape"),
    ("16xf32", "1:18: error: '!amx.tile' types of rank 1 are not supported by polyopt"),
])
def test_bad_tile_types(tile, message):
    with pytest.raises(ParseError, match=re.escape(f"t.mlir:{message}")):
        polyopt.parse(f"func.func @f(%a: !amx.tile<{tile}>) {{\n  return\n}}\n", "t.mlir")


def test_other_dialect_types_are_still_refused():
    with pytest.raises(ParseError, match=r"dialect type '!foo\.tile' is not supported"):
        polyopt.parse("func.func @f(%a: !foo.tile<16x16xf32>) {\n  return\n}\n")


# ---------------------------------------------------------------------------------------------
# verifier: upstream's messages at upstream's locations

ARGS = ("%m1: memref<64xbf16>, %m2: memref<64x64xbf16>, %ms: memref<64x64xbf16, strided<[128, 2]>>, "
        "%s: index")

UPSTREAM_ERRORS = [
    "%z = amx.tile_zero : !amx.tile<17x16xf32>",
    "%z = amx.tile_zero : !amx.tile<16x17xf32>",
    "%z = amx.tile_zero : !amx.tile<16x3xbf16>",
    "%z = amx.tile_zero : vector<16x16xf32>",
    "%t = amx.tile_load %m1[%c0] : memref<64xbf16> into !amx.tile<16x32xbf16>",
    "%t = amx.tile_load %m2[%c0] : memref<64x64xbf16> into !amx.tile<16x32xbf16>",
    "%t = amx.tile_load %m2[%c0, %c0] : memref<64x64xbf16> into !amx.tile<16x64xbf16>",
    "%t = amx.tile_load %ms[%c0, %c0] : memref<64x64xbf16, strided<[128, 2]>> into "
    "!amx.tile<16x32xbf16>",
    "%t = amx.tile_load %m2[%c0, %c0] : memref<64x64xbf16> into vector<16x32xbf16>",
    "%t = amx.tile_zero : !amx.tile<16x32xbf16>\n"
    "  amx.tile_store %m2[%c0], %t : memref<64x64xbf16>, !amx.tile<16x32xbf16>",
    "%t = amx.tile_zero : !amx.tile<16x32xbf16>\n"
    "  amx.tile_store %m1[%c0], %t : memref<64xbf16>, !amx.tile<16x32xbf16>",
    "%t = amx.tile_zero : !amx.tile<16x32xbf16>\n"
    "  amx.tile_store %ms[%c0, %c0], %t : memref<64x64xbf16, strided<[128, 2]>>, "
    "!amx.tile<16x32xbf16>",
    "%z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = amx.tile_mulf %z, %z, %z : !amx.tile<16x16xf32>, !amx.tile<16x16xf32>, "
    "!amx.tile<16x16xf32>",
    "%a = amx.tile_zero : !amx.tile<16x32xbf16>\n  %b = amx.tile_zero : !amx.tile<16x32xf16>\n"
    "  %z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = amx.tile_mulf %a, %b, %z : !amx.tile<16x32xbf16>, !amx.tile<16x32xf16>, "
    "!amx.tile<16x16xf32>",
    "%a = amx.tile_zero : !amx.tile<16x32xbf16>\n  %z = amx.tile_zero : !amx.tile<16x16xbf16>\n"
    "  %x = amx.tile_mulf %a, %a, %z : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, "
    "!amx.tile<16x16xbf16>",
    "%a = amx.tile_zero : !amx.tile<16x32xbf16>\n  %b = amx.tile_zero : !amx.tile<8x32xbf16>\n"
    "  %z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = amx.tile_mulf %a, %b, %z : !amx.tile<16x32xbf16>, !amx.tile<8x32xbf16>, "
    "!amx.tile<16x16xf32>",
    "%a = amx.tile_zero : !amx.tile<8x32xbf16>\n  %b = amx.tile_zero : !amx.tile<16x32xbf16>\n"
    "  %z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = amx.tile_mulf %a, %b, %z : !amx.tile<8x32xbf16>, !amx.tile<16x32xbf16>, "
    "!amx.tile<16x16xf32>",
    "%a = amx.tile_zero : !amx.tile<16x32xbf16>\n  %z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = \"amx.tile_mulf\"(%a, %a, %z) : (!amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, "
    "!amx.tile<16x16xf32>) -> !amx.tile<8x16xf32>",
    "%a = amx.tile_zero : !amx.tile<16x64xi8>\n  %z = amx.tile_zero : !amx.tile<16x16xf32>\n"
    "  %x = amx.tile_muli %a, %a, %z : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, "
    "!amx.tile<16x16xf32>",
    "%a = amx.tile_zero : !amx.tile<16x64xi8>\n  %b = amx.tile_zero : !amx.tile<8x64xi8>\n"
    "  %z = amx.tile_zero : !amx.tile<16x16xi32>\n"
    "  %x = amx.tile_muli %a zext, %b, %z : !amx.tile<16x64xi8>, !amx.tile<8x64xi8>, "
    "!amx.tile<16x16xi32>",
    "%a = amx.tile_zero : !amx.tile<16x16xi32>\n"
    "  %x = amx.tile_muli %a, %a, %a : !amx.tile<16x16xi32>, !amx.tile<16x16xi32>, "
    "!amx.tile<16x16xi32>",
    "%t = \"amx.tile_load\"(%m2, %c0, %c0) {operandSegmentSizes = array<i32: 1, 2, 1>} : "
    "(memref<64x64xbf16>, index, index) -> !amx.tile<16x32xbf16>",
]


@pytest.mark.parametrize("body", UPSTREAM_ERRORS)
def test_verifier_errors_are_upstreams(body):
    source = (f"func.func @f({ARGS}) {{\n  %c0 = arith.constant 0 : index\n  {body}\n"
              f"  return\n}}\n")
    expected = mlir_opt_error(source, filename="bad.mlir")
    with pytest.raises((VerifyError, ParseError)) as info:
        polyopt.parse(source, "bad.mlir")
    assert str(info.value).splitlines()[0] == expected


def test_what_upstream_accepts_and_polyopt_refuses():
    """Upstream lets 0 rows or columns through; LLVM's tile configuration does not."""
    for tile, message in [("0x16xf32", "bad row height: 0"), ("16x0xf32", "bad column width: 0")]:
        with pytest.raises(VerifyError, match=re.escape(f"2:8: error: 'amx.tile_zero' op "
                                                        f"{message}")):
            polyopt.parse(f"func.func @f() {{\n  %z = amx.tile_zero : !amx.tile<{tile}>\n"
                          f"  return\n}}\n", "z.mlir")


@pytest.mark.parametrize("layout, ok", [("(d0, d1) -> (d0 * 32 + d1)", True),
                                        ("(d0, d1) -> (d1, d0)", False),
                                        ("(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)", False)])
def test_strides_of_layout_maps(layout, ok):
    """As MLIR's getStridesAndOffset: a linear layout map has strides, a tiled one none."""
    mt = f"memref<16x16xf32, affine_map<{layout}>>"
    source = (f"func.func @f(%m: {mt}) {{\n  %c0 = arith.constant 0 : index\n"
              f"  %t = amx.tile_load %m[%c0, %c0] : {mt} into !amx.tile<16x16xf32>\n"
              f"  amx.tile_store %m[%c0, %c0], %t : {mt}, !amx.tile<16x16xf32>\n"
              f"  return\n}}\n")
    if not ok:
        expected = mlir_opt_error(source, filename="t.mlir")
        assert "requires memref with unit innermost stride" in expected
        with pytest.raises(VerifyError) as info:
            polyopt.parse(source, "t.mlir")
        assert str(info.value).splitlines()[0] == expected
        return
    mlir_opt(source)
    copy = source.replace("(%m: ", "(%o: memref<16x16xf32>, %m: ").replace(
        f"amx.tile_store %m[%c0, %c0], %t : {mt}", "amx.tile_store %o[%c0, %c0], %t : "
        "memref<16x16xf32>")
    m = np.arange(15 * 32 + 16, dtype=np.float32)        # the layout's physical buffer
    o = np.zeros((16, 16), np.float32)
    polyopt.compile(copy)["f"](o, m)
    np.testing.assert_array_equal(o, np.arange(16 * 32).reshape(16, 32)[:, :16])


def test_memory_effects():
    """tile_zero/mulf/muli are pure; an unused tile_load is dead (it only reads); a tile_store is
    never dead."""
    module = polyopt.parse(EVERY_OP)
    ops = {op.name: op for op in module.walk()}
    assert is_pure(ops["amx.tile_zero"]) and is_pure(ops["amx.tile_mulf"])
    assert is_pure(ops["amx.tile_muli"])
    assert not is_pure(ops["amx.tile_load"]) and not is_pure(ops["amx.tile_store"])
    erase_trivially_dead(module)
    assert [op.name for op in module.walk() if op.name.startswith("amx.")].count(
        "amx.tile_store") == 2
    source = ("func.func @f(%m: memref<16x16xf32>) {\n  %c0 = arith.constant 0 : index\n"
              "  %t = amx.tile_load %m[%c0, %c0] : memref<16x16xf32> into !amx.tile<16x16xf32>\n"
              "  return\n}\n")
    module = polyopt.parse(source)
    erase_trivially_dead(module)
    assert not any(op.name.startswith("amx.") for op in module.walk())


# ---------------------------------------------------------------------------------------------
# numpy models of the instructions


def vnni(b: np.ndarray, group: int) -> np.ndarray:
    """B (K x N) in AMX's layout: row p holds B[group*p + g][n] at column group*n + g."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // group, group, n).transpose(0, 2, 1)
                                .reshape(k // group, n * group))


def model_mulf(a: np.ndarray, bt: np.ndarray, c: np.ndarray) -> np.ndarray:
    """tdpbf16ps/tdpfp16ps: per pair p, C += A[:, 2p] * B[p, 0::2], then C += A[:, 2p+1] *
    B[p, 1::2], each product exact in f32 and each sum rounded to f32."""
    a32, b32, c = a.astype(np.float32), bt.astype(np.float32), c.astype(np.float32).copy()
    for p in range(bt.shape[0]):
        for g in range(2):
            c = c + a32[:, 2 * p + g, None] * b32[None, p, g::2]
    assert c.dtype == np.float32
    return c


def model_muli(a: np.ndarray, bt: np.ndarray, c: np.ndarray, zext_a: bool,
               zext_b: bool) -> np.ndarray:
    """tdpb{s,u}{s,u}d: C += sum of the four byte products, modulo 2**32."""
    a64 = (a.view(np.uint8) if zext_a else a).astype(np.int64)
    b64 = (bt.view(np.uint8) if zext_b else bt).astype(np.int64)
    acc = c.astype(np.int64)
    for p in range(bt.shape[0]):
        for g in range(4):
            acc = acc + a64[:, 4 * p + g, None] * b64[None, p, g::4]
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


FLOATS = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def float_data(kind, shape, rng):
    return rng.standard_normal(shape).astype(FLOATS[kind])


# ---------------------------------------------------------------------------------------------
# the emulation, run here (this host has no AMX, or is told it has none)


def compile_emulated(source: str):
    with compiling_for(without_amx()):
        return polyopt.compile(source)


GEMM_F = """\
func.func @mm(%A: memref<4x20x40x{t}>, %B: memref<?x?x{t}>, %C: memref<32x48xf32>, %i: index,
              %s: index) {{
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %z = amx.tile_load %C[%c16, %c16] : memref<32x48xf32> into !amx.tile<16x16xf32>
  %r = affine.for %k = 0 to 3 iter_args(%acc = %z) -> (!amx.tile<16x16xf32>) {{
    %a = amx.tile_load %A[%k, %c2, %c4] : memref<4x20x40x{t}> into !amx.tile<16x32x{t}>
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%k)
    %b = amx.tile_load %B[%row, %c4], %s : memref<?x?x{t}> into !amx.tile<16x32x{t}>
    %n = amx.tile_mulf %a, %b, %acc : !amx.tile<16x32x{t}>, !amx.tile<16x32x{t}>, !amx.tile<16x16xf32>
    affine.yield %n : !amx.tile<16x16xf32>
  }}
  amx.tile_store %C[%c16, %c16], %r : memref<32x48xf32>, !amx.tile<16x16xf32>
  return
}}
"""


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_emulated_mulf_loop_carried_from_a_3d_memref(kind):
    """C[16:32, 16:32] += sum over k of A[k, 2:18, 4:36] x B[16k:16k+16, 4:36] (the loaded B
    rows at the stride operand, 38 elements, inside a 48 x 38 buffer)."""
    compiled = compile_emulated(GEMM_F.format(t=kind))
    assert not compiled.engine.uses_amx
    assert "x86_amx" not in compiled.llvm_ir
    rng = np.random.default_rng(1)
    a = float_data(kind, (4, 20, 40), rng)
    b = float_data(kind, (48, 38), rng)
    c = rng.standard_normal((32, 48)).astype(np.float32)
    c0 = c.copy()
    compiled["mm"](a, b, c, 0, 38)
    want = c0[16:, 16:32]
    for k in range(3):
        want = model_mulf(a[k, 2:18, 4:36], b[16 * k:16 * k + 16, 4:36], want)
    np.testing.assert_array_equal(c[16:, 16:32], want)
    untouched = np.ones_like(c, bool)
    untouched[16:, 16:32] = False
    np.testing.assert_array_equal(c[untouched], c0[untouched])
    # and it is the matrix product, to f32's rounding
    a64 = np.concatenate([a[k, 2:18, 4:36] for k in range(3)], axis=1).astype(np.float64)
    b_rows = np.concatenate([b[16 * k:16 * k + 16, 4:36] for k in range(3)], axis=0)
    b64 = np.concatenate([b_rows[:, g::2][:, None, :] for g in range(2)], axis=1) \
        .reshape(96, 16).astype(np.float64)
    exact = c0[16:, 16:32].astype(np.float64) + a64 @ b64
    bound = 97 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + np.abs(c0[16:, 16:32]))
    assert (np.abs(c[16:, 16:32] - exact) <= bound).all()


GEMM_I = """\
func.func @mm(%A: memref<2x16x64xi8>, %B: memref<32x64xi8>, %C: memref<16x16xi32>) {{
  %c0 = arith.constant 0 : index
  %z = amx.tile_load %C[%c0, %c0] : memref<16x16xi32> into !amx.tile<16x16xi32>
  %r = affine.for %k = 0 to 2 iter_args(%acc = %z) -> (!amx.tile<16x16xi32>) {{
    %a = amx.tile_load %A[%k, %c0, %c0] : memref<2x16x64xi8> into !amx.tile<16x64xi8>
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%k)
    %b = amx.tile_load %B[%row, %c0] : memref<32x64xi8> into !amx.tile<16x64xi8>
    %n = amx.tile_muli %a{za}, %b{zb}, %acc : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    affine.yield %n : !amx.tile<16x16xi32>
  }}
  amx.tile_store %C[%c0, %c0], %r : memref<16x16xi32>, !amx.tile<16x16xi32>
  return
}}
"""


@pytest.mark.parametrize("zext_a", [False, True])
@pytest.mark.parametrize("zext_b", [False, True])
def test_emulated_muli(zext_a, zext_b):
    source = GEMM_I.format(za=" zext" if zext_a else "", zb=" zext" if zext_b else "")
    fn = compile_emulated(source)["mm"]
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (2, 16, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 64)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (16, 16)).astype(np.int32)
    c[0, :] = 2**31 - 1 - np.arange(16)       # wraps around on the first positive sums
    want = c.copy()
    for k in range(2):
        want = model_muli(a[k], b[16 * k:16 * k + 16], want, zext_a, zext_b)
    fn(a, b, c)
    np.testing.assert_array_equal(c, want)


def test_emulated_odd_shapes_and_dynamic_strides():
    """Tiles smaller than a register (3 rows, 12 bytes of i8 columns), a memref with '?' whose
    row stride comes from its descriptor, tile_zero and a tile_store with a stride operand."""
    source = """\
func.func @f(%A: memref<?x?xi8>, %B: memref<?x?xi8>, %C: memref<?x?xi32>, %s: index) {
  %c1 = arith.constant 1 : index
  %z = amx.tile_zero : !amx.tile<3x3xi32>
  %a = amx.tile_load %A[%c1, %c1] : memref<?x?xi8> into !amx.tile<3x8xi8>
  %b = amx.tile_load %B[%c1, %c1] : memref<?x?xi8> into !amx.tile<2x12xi8>
  %r = amx.tile_muli %a, %b zext, %z : !amx.tile<3x8xi8>, !amx.tile<2x12xi8>, !amx.tile<3x3xi32>
  amx.tile_store %C[%c1, %c1], %r, %s : memref<?x?xi32>, !amx.tile<3x3xi32>
  return
}
"""
    fn = compile_emulated(source)["f"]
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (5, 11)).astype(np.int8)
    b = rng.integers(-128, 128, (4, 17)).astype(np.int8)
    c = np.full((8, 6), 7, np.int32)
    fn(a, b, c, 12)       # rows of C 12 elements apart: C as a flat buffer
    flat = c.reshape(-1)
    want = model_muli(a[1:4, 1:9], b[1:3, 1:13], np.zeros((3, 3), np.int32), False, True)
    for r in range(3):
        np.testing.assert_array_equal(flat[6 + 1 + 12 * r:6 + 1 + 12 * r + 3], want[r])
    assert (np.delete(flat, [7 + 12 * r + j for r in range(3) for j in range(3)]) == 7).all()


def test_emulated_code_stays_small():
    """Eight 16x16x32 bf16 products in a row compile in well under a second or two."""
    tile = "!amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>"
    lines = ["func.func @f(%A: memref<16x32xbf16>, %C: memref<16x16xf32>) {",
             "  %c0 = arith.constant 0 : index",
             "  %a = amx.tile_load %A[%c0, %c0] : memref<16x32xbf16> into !amx.tile<16x32xbf16>",
             "  %r0 = amx.tile_zero : !amx.tile<16x16xf32>"]
    lines += [f"  %r{i + 1} = amx.tile_mulf %a, %a, %r{i} : {tile}" for i in range(8)]
    lines += ["  amx.tile_store %C[%c0, %c0], %r8 : memref<16x16xf32>, !amx.tile<16x16xf32>",
              "  return", "}"]
    compiled = compile_emulated("\n".join(lines) + "\n")
    assert not compiled.engine.uses_amx
    assert compiled.compile_time < 2.0, compiled.compile_time
    assert len(compiled.optimized_llvm_ir().splitlines()) < 8000
    rng = np.random.default_rng(4)
    a = float_data("bf16", (16, 32), rng)
    c = np.zeros((16, 16), np.float32)
    compiled["f"](a, c)
    want = np.zeros((16, 16), np.float32)
    for _ in range(8):
        want = model_mulf(a, a, want)
    np.testing.assert_array_equal(c, want)


# ---------------------------------------------------------------------------------------------
# real AMX: the assembly for Sapphire Rapids, run where the CPU has AMX

KINDS = {   # name -> (A/B element type, zext A, zext B, instruction, cpuinfo flag it needs)
    "bf16": ("bf16", False, False, "tdpbf16ps", "amx_bf16"),
    "f16": ("f16", False, False, "tdpfp16ps", "amx_fp16"),
    "ss": ("i8", False, False, "tdpbssd", "amx_int8"),
    "us": ("i8", True, False, "tdpbusd", "amx_int8"),
    "su": ("i8", False, True, "tdpbsud", "amx_int8"),
    "uu": ("i8", True, True, "tdpbuud", "amx_int8"),
}


def kernel(kind: str) -> str:
    """C (16 x 16) += A (16 x 4*K) x B, four k steps accumulating in a loop-carried tile."""
    t, zext_a, zext_b, _, _ = KINDS[kind]
    acc, cols = ("i32", 64) if t == "i8" else ("f32", 32)
    if t == "i8":
        mul = f"amx.tile_muli %a{' zext' if zext_a else ''}, %b{' zext' if zext_b else ''}"
    else:
        mul = "amx.tile_mulf %a, %b"
    ta, tc = f"!amx.tile<16x{cols}x{t}>", f"!amx.tile<16x16x{acc}>"
    return f"""\
func.func @mm(%A: memref<16x{4 * cols}x{t}>, %B: memref<64x{cols}x{t}>, %C: memref<16x16x{acc}>) {{
  %c0 = arith.constant 0 : index
  %z = amx.tile_zero : {tc}
  %r = affine.for %k = 0 to 4 iter_args(%acc = %z) -> ({tc}) {{
    %col = affine.apply affine_map<(d0) -> (d0 * {cols})>(%k)
    %a = amx.tile_load %A[%c0, %col] : memref<16x{4 * cols}x{t}> into {ta}
    %row = affine.apply affine_map<(d0) -> (d0 * 16)>(%k)
    %b = amx.tile_load %B[%row, %c0] : memref<64x{cols}x{t}> into {ta}
    %n = {mul}, %acc : {ta}, {ta}, {tc}
    affine.yield %n : {tc}
  }}
  amx.tile_store %C[%c0, %c0], %r : memref<16x16x{acc}>, {tc}
  return
}}
"""


def check_kernel(kind: str, fn) -> None:
    t, zext_a, zext_b, _, _ = KINDS[kind]
    rng = np.random.default_rng(5)
    if t != "i8":
        a, b = float_data(t, (16, 128), rng), float_data(t, (64, 32), rng)
        c = np.zeros((16, 16), np.float32)
        fn(a, b, c)
        want = np.zeros((16, 16), np.float32)
        for k in range(4):
            want = model_mulf(a[:, 32 * k:32 * k + 32], b[16 * k:16 * k + 16], want)
        # the hardware flushes denormals to zero: equal to f32 rounding on normal data
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
        return
    a = rng.integers(-128, 128, (16, 256)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 64)).astype(np.int8)
    c = np.zeros((16, 16), np.int32)
    fn(a, b, c)
    want = np.zeros((16, 16), np.int32)
    for k in range(4):
        want = model_muli(a[:, 64 * k:64 * k + 64], b[16 * k:16 * k + 16], want, zext_a, zext_b)
    np.testing.assert_array_equal(c, want)


def _run_where_present(flags, fn):
    have = host_facts().cpuinfo_flags
    missing = [f for f in ("amx_tile", *flags) if f not in have]
    if missing or host_facts().arch != "x86_64":
        pytest.skip(f"compiled for sapphirerapids; this CPU lacks {', '.join(missing)}")
    fn()


@pytest.mark.parametrize("kind", list(KINDS))
def test_amx_assembly(kind):
    _, _, _, instruction, flag = KINDS[kind]
    with compiling_for(SPR):
        compiled = polyopt.compile(kernel(kind))
    assert compiled.engine.uses_amx
    asm = compiled.asm()
    lines = [ln.strip() for ln in asm.splitlines()]
    assert any(ln.startswith("ldtilecfg") for ln in lines)
    assert any(ln.startswith("tilerelease") for ln in lines)
    assert any(ln.startswith("tilezero") for ln in lines)
    assert sum(bool(re.match(rf"{instruction}\s", ln)) for ln in lines) >= 1, asm
    assert not any(re.match(r"tdp\w+\s", ln) and not ln.startswith(instruction) for ln in lines)
    stores = [ln for ln in lines if ln.startswith("tilestored")]
    assert len(stores) == 1, stores                    # the explicit one: no spills
    for ln in lines:
        if ln.startswith(("tilestored", "tileloadd")):
            assert "%rsp" not in ln and "%rbp" not in ln, ln
    _run_where_present([flag], lambda: check_kernel(kind, compiled["mm"]))


SQUARES = """\
func.func @f(%A: memref<16x32xbf16>, %C: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %a = amx.tile_load %A[%c0, %c0] : memref<16x32xbf16> into !amx.tile<16x32xbf16>
  %b = amx.tile_load %A[%c0, %c0] : memref<16x32xbf16> into !amx.tile<16x32xbf16>
  %z = amx.tile_zero : !amx.tile<16x16xf32>
  %r = amx.tile_mulf %a, %a, %z : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
  %s = amx.tile_mulf %a, %b, %r : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
  amx.tile_store %C[%c0, %c0], %s : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}
"""


def test_one_tile_as_both_operands():
    """A tile times itself (one value, or two loads of one address LLVM merges): the
    instructions raise #UD unless their three tiles are distinct registers, so B is a copy."""
    with compiling_for(SPR):
        compiled = polyopt.compile(SQUARES)
    products = re.findall(r"tdpbf16ps\s+%(tmm\d), %(tmm\d), %(tmm\d)", compiled.asm())
    assert len(products) == 2, compiled.asm()
    for registers in products:
        assert len(set(registers)) == 3, products

    def run():
        a = float_data("bf16", (16, 32), np.random.default_rng(6))
        c = np.zeros((16, 16), np.float32)
        compiled["f"](a, c)
        want = model_mulf(a, a, model_mulf(a, a, np.zeros((16, 16), np.float32)))
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    _run_where_present(["amx_bf16"], run)


def test_amx_llvm_ir_is_upstreams():
    """The intrinsic calls and their constant operands are those of mlir-opt-22
    --convert-vector-to-llvm=enable-amx."""
    source = """\
func.func @f(%a: memref<8x16xbf16>, %b: memref<8x8xbf16>, %m: memref<?x?xf32>, %s: index) {
  %c0 = arith.constant 0 : index
  %ta = amx.tile_load %a[%c0, %c0] : memref<8x16xbf16> into !amx.tile<8x16xbf16>
  %tb = amx.tile_load %b[%c0, %c0], %s : memref<8x8xbf16> into !amx.tile<8x8xbf16>
  %z = amx.tile_zero : !amx.tile<8x4xf32>
  %r = amx.tile_mulf %ta, %tb, %z : !amx.tile<8x16xbf16>, !amx.tile<8x8xbf16>, !amx.tile<8x4xf32>
  amx.tile_store %m[%c0, %c0], %r : memref<?x?xf32>, !amx.tile<8x4xf32>
  return
}
"""
    upstream = mlir_opt(source, "--convert-vector-to-llvm=enable-amx")
    calls = re.findall(r'llvm\.call_intrinsic "llvm\.x86\.(\w+)\.internal"', upstream)
    assert calls == ["tileloadd64", "tileloadd64", "tilezero", "tdpbf16ps", "tilestored64"]
    from polyopt.codegen.to_llvm import lower_module
    lowered = lower_module(polyopt.parse(source), SPR)
    assert lowered.uses_amx
    ours = re.findall(r'call \S+ @"llvm\.x86\.(\w+)\.internal"\(([^)]*)\)', lowered.llvm_ir)
    assert [name for name, _ in ours] == calls
    assert ours[0][1] == 'i16 8, i16 32, ptr %"arg0", i64 32'     # stride: 16 bf16
    assert ours[1][1].startswith("i16 8, i16 16, ptr")             # stride: 2 * %s bytes
    assert ours[2][1] == "i16 8, i16 16"
    assert ours[3][1].startswith("i16 8, i16 16, i16 32, x86_amx")   # A rows, B row bytes, A's
    assert ours[4][1].startswith("i16 8, i16 16, ptr")


def test_a_missing_amx_feature_is_named_at_the_op():
    source = kernel("f16")
    with compiling_for(SPR_NO_FP16), pytest.raises(CodegenError) as info:
        polyopt.compile(source, filename="k.mlir")
    message = str(info.value)
    assert message.startswith("k.mlir:9:10: error: 'amx.tile_mulf': tdpfp16ps needs the "
                              "target feature 'amx-fp16'"), message


def test_tiles_cannot_cross_function_boundaries():
    source = ("func.func @f(%t: !amx.tile<16x16xf32>) {\n  return\n}\n")
    for target in (SPR, None):
        with pytest.raises(CodegenError, match=r"'!amx\.tile' values cannot be function "
                                               r"arguments or results"):
            if target is None:
                polyopt.compile(source)
            else:
                with compiling_for(target):
                    polyopt.compile(source)


# ---------------------------------------------------------------------------------------------
# Linux's permission


def test_the_permission_is_asked_only_for_real_amx(monkeypatch):
    asked = []
    monkeypatch.setattr(jit, "request_amx_permission", lambda: asked.append(1))
    with compiling_for(SPR):
        real = polyopt.compile(kernel("bf16"))
    emulated = compile_emulated(kernel("bf16"))
    emulated["mm"]
    assert asked == []
    real["mm"]                  # made callable, never called here
    assert asked == [1]


def test_the_permission_request():
    if "amx_tile" in host_facts().cpuinfo_flags:
        request_amx_permission()
        request_amx_permission()          # once per process: the second returns at once
    else:
        with pytest.raises(AMXPermissionError, match=r"arch_prctl\(ARCH_REQ_XCOMP_PERM, "
                                                     r"XFEATURE_XTILEDATA\) failed|x86-64"):
            request_amx_permission()
