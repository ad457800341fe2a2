"""The arith dialect's syntax against mlir-opt-22: every op of MLIR 22 in custom form prints
exactly as mlir-opt-22 prints it (SSA names included), its generic form (mlir-opt's and ours)
round-trips, non-canonical spellings are canonicalized as upstream does, float constants of
every type are spelled as APFloat spells them, and invalid ops get mlir-opt's messages."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from polyopt.affine import float_format as ff
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.attributes import DenseElementsAttr
from polyopt.affine.dialects.arith import (CASTS, FLOAT_BINARY, INT_BINARY, ConstantOp,
                                           FastMathAttr, OverflowAttr)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FloatType, IntegerType, VectorType, f32, i8, i32, index
from upstream_mlir import mlir_opt, mlir_opt_error


def ours(text: str) -> str:
    printed = print_module(parse(text, "t.mlir"))
    assert print_module(parse(printed, "printed.mlir")) == printed    # a fixed point
    return printed


def our_error(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render().splitlines()[0]


ARGS = ("%a: i32, %b: i32, %x: f32, %y: f32, %n: index, %va: vector<4xi32>, "
        "%vx: vector<2x4xf16>, %h: f16, %bb: bf16, %c: i1, %vc: vector<4xi1>, %w: i64")


def func(body: str, args: str = ARGS) -> str:
    return f"func.func @f({args}) {{\n{textwrap.indent(textwrap.dedent(body).strip(), '  ')}\n" \
           f"  return\n}}\n"


EVERY_OP = func("""
%0 = arith.addi %a, %b overflow<nsw, nuw> : i32
%1 = arith.subi %a, %b overflow<nsw> : i32
%2 = arith.muli %va, %va overflow<nuw> : vector<4xi32>
%3 = arith.shli %a, %b : i32
%4 = arith.divui %a, %b exact : i32
%5 = arith.divsi %n, %n : index
%6 = arith.shrui %a, %b exact : i32
%7 = arith.shrsi %va, %va : vector<4xi32>
%s, %o = arith.addui_extended %a, %b : i32, i1
%s2, %o2 = arith.addui_extended %va, %va : vector<4xi32>, vector<4xi1>
%l, %hi = arith.mulsi_extended %a, %b : i32
%l2:2 = arith.mului_extended %va, %va : vector<4xi32>
%8 = arith.ceildivui %a, %b : i32
%9 = arith.ceildivsi %a, %b : i32
%10 = arith.floordivsi %a, %b : i32
%11 = arith.remui %a, %b : i32
%12 = arith.remsi %a, %b : i32
%13 = arith.andi %c, %c : i1
%14 = arith.ori %a, %b : i32
%15 = arith.xori %vc, %vc : vector<4xi1>
%16 = arith.maxsi %a, %b : i32
%17 = arith.maxui %a, %b : i32
%18 = arith.minsi %a, %b : i32
%19 = arith.minui %a, %b : i32
%20 = arith.negf %x fastmath<fast> : f32
%21 = arith.addf %x, %y fastmath<nnan,ninf> : f32
%22 = arith.subf %vx, %vx : vector<2x4xf16>
%23 = arith.mulf %bb, %bb fastmath<contract> : bf16
%24 = arith.divf %h, %h : f16
%25 = arith.remf %x, %y : f32
%26 = arith.maximumf %x, %y : f32
%27 = arith.maxnumf %x, %y fastmath<nsz> : f32
%28 = arith.minimumf %x, %y : f32
%29 = arith.minnumf %x, %y : f32
%30 = arith.extui %a : i32 to i64
%31 = arith.extsi %va : vector<4xi32> to vector<4xi64>
%32 = arith.extf %h fastmath<fast> : f16 to f32
%33 = arith.extf %bb : bf16 to f64
%34 = arith.trunci %a overflow<nsw, nuw> : i32 to i8
%35 = arith.truncf %x to_nearest_even fastmath<fast> : f32 to f16
%36 = arith.truncf %x downward : f32 to bf16
%37 = arith.truncf %x upward : f32 to f16
%38 = arith.truncf %x toward_zero : f32 to f16
%39 = arith.truncf %x to_nearest_away : f32 to f16
%40 = arith.uitofp %a : i32 to f16
%41 = arith.sitofp %va : vector<4xi32> to vector<4xbf16>
%42 = arith.fptoui %x : f32 to i8
%43 = arith.fptosi %h : f16 to i64
%44 = arith.index_cast %a : i32 to index
%45 = arith.index_castui %n : index to i32
%46 = arith.bitcast %x : f32 to i32
%47 = arith.bitcast %h : f16 to bf16
%48 = arith.cmpi ule, %va, %va : vector<4xi32>
%49 = arith.cmpi slt, %n, %n : index
%50 = arith.cmpf oeq, %x, %y fastmath<fast> : f32
%51 = arith.cmpf uno, %vx, %vx : vector<2x4xf16>
%52 = arith.select %c, %x, %y : f32
%53 = arith.select %vc, %va, %va : vector<4xi1>, vector<4xi32>
%54 = arith.select %c, %va, %va : vector<4xi32>
%55 = arith.scaling_extf %h, %h : f16, f16 to f32
%56 = arith.scaling_truncf %x, %y downward : f32, f32 to bf16
%cst = arith.constant 1.500000e+00 : f16
%cst_0 = arith.constant 1.000980e-01 : bf16
%cst_1 = arith.constant 0x7E00 : f16
%cst_2 = arith.constant 0xFF80 : bf16
%cst_3 = arith.constant dense<[1.000000e+00, 2.500000e+00]> : vector<2xbf16>
%cst_4 = arith.constant dense<[true, false]> : vector<2xi1>
%cst_5 = arith.constant dense<[1, 2]> : vector<2xindex>
%cst_6 = arith.constant dense<[[1, 2], [3, 4]]> : vector<2x2xi8>
%cst_7 = arith.constant dense<-1> : vector<2x3xi64>
%cst_8 = arith.constant dense<0x7FC00000> : vector<4xf32>
%c3_i8 = arith.constant 3 : i8
%c-1_i16 = arith.constant -1 : i16
%true = arith.constant true
%false = arith.constant false
%c0 = arith.constant 0 : index
%c-7 = arith.constant -7 : index
%cst_9 = arith.constant 0x7FC00000 : f32
%cst_10 = arith.constant 0.1234567 : f64
%cst_11 = arith.constant 0x4996B438 : f32
%cst_12 = arith.constant 3.40282347E+38 : f32
%cst_13 = arith.constant -0.000000e+00 : f16
""")


def canonical(text: str) -> str:
    return mlir_opt(text)


def test_every_op_prints_as_mlir_opt_prints_it():
    expected = canonical(EVERY_OP)
    assert ours(EVERY_OP) == expected
    assert "%sum, %overflow = arith.addui_extended" in expected   # names from getAsmResultNames
    assert "%low_2, %high_3 = arith.mului_extended" in expected


def test_every_op_in_generic_form_both_ways():
    expected = canonical(EVERY_OP)
    upstream_generic = mlir_opt(EVERY_OP, "--mlir-print-op-generic")
    assert "<{overflowFlags = #arith.overflow<nsw, nuw>}>" in upstream_generic
    assert ours(upstream_generic) == expected
    our_generic = print_module(parse(EVERY_OP, "t.mlir"), generic=True)
    assert '"arith.truncf"' in our_generic and "roundingmode = 1 : i32" in our_generic
    assert mlir_opt(our_generic) == expected


def test_non_canonical_spellings_are_canonicalized_as_upstream_does():
    text = func("""
    %0 = arith.addi %a, %b overflow<nuw, nsw> : i32
    %1 = arith.addi %a, %b overflow<none> : i32
    %2 = arith.addf %x, %y fastmath<ninf, nnan> : f32
    %3 = arith.addf %x, %y fastmath<reassoc,nnan,ninf,nsz,arcp,contract,afn> : f32
    %4 = arith.addf %x, %y fastmath<none> : f32
    %5 = arith.addf %x, %y fastmath<fast, nnan> : f32
    %6 = "arith.addf"(%x, %y) {fastmath = #arith.fastmath<afn,reassoc>} : (f32, f32) -> f32
    %7 = "arith.addi"(%a, %b) {overflowFlags = #arith.overflow<nuw,nsw>, foo = 1}
      : (i32, i32) -> i32
    %8 = arith.divsi %a, %b exact {foo} : i32
    %9 = "arith.divsi"(%a, %b) {isExact, foo} : (i32, i32) -> i32
    %10 = arith.cmpf ugt, %x, %y fastmath<none> : f32
    %11 = arith.negf %x fastmath<none> : f32
    %12 = arith.cmpi "eq", %a, %b : i32
    %13 = arith.cmpi eq, %a, %b {foo} : i32
    %14 = arith.constant 255 : i8
    %15 = arith.constant 0x8000000000000000 : i64
    %16 = arith.constant -1 : i1
    %17 = arith.constant dense<[1, 1, 1]> : vector<3xi32>
    %18 = arith.constant dense<[true, 0]> : vector<2xi1>
    %19 = arith.constant 70000.0 : f16
    %20 = arith.constant 1.0e-8 : f16
    %21 = arith.constant 0x3C00 : bf16
    %22 = arith.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : vector<2x2xf16>
    %23 = "arith.truncf"(%x) {roundingmode = 3 : i32} : (f32) -> f16
    %24 = arith.extf %x fastmath<none> : f32 to f64
    %25 = arith.constant dense<0> : vector<2xi0>
    %26 = arith.constant 0 : i0
    """)
    assert ours(text) == canonical(text)


def _random_constants(fmt: ff.Format, t: str, n: int, seed: int) -> str:
    """``n`` constants of type ``t`` from random bit patterns (every exponent, subnormals, NaN
    payloads, infinities), written as hexadecimal literals."""
    rng = np.random.default_rng(seed)
    bits = [int(b) for b in rng.integers(0, 1 << fmt.width, n, dtype=np.uint64)]
    bits += [0, 1 << (fmt.width - 1), 1, (1 << fmt.mant_bits) - 1]
    lines = [f"%c{k} = arith.constant 0x{b:X} : {t}" for k, b in enumerate(bits)]
    # and decimal literals, rounded to the type by the parser
    vals = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    lines += [f"%d{k} = arith.constant {v!r} : {t}" for k, v in enumerate(vals.tolist())
              if "e" in repr(v) or "." in repr(v)]
    return func("\n".join(lines), "")


@pytest.mark.parametrize("t, fmt", [("f16", ff.F16), ("bf16", ff.BF16), ("f32", ff.F32),
                                    ("f64", ff.F64)])
def test_float_constants_are_spelled_as_apfloat_spells_them(t, fmt):
    text = _random_constants(fmt, t, 400, fmt.width)
    assert ours(text) == canonical(text)


def test_float_spelling_rules():
    """MLIR's printFloatValue: %.6e when it round-trips, APFloat's shortest form when that has
    a '.', else the bits in hex (NaN and infinity always)."""
    assert ff.format_float(1.0, ff.F64) == "1.000000e+00"
    assert ff.format_float(0.1234567, ff.F64) == "0.1234567"
    assert ff.format_float(1234567.0, ff.F32) == "0x4996B438"
    assert ff.format_float(ff.round_to(0.1, ff.BF16), ff.BF16) == "1.000980e-01"
    assert ff.format_float(float("-inf"), ff.F16) == "0xFC00"
    # every f16 value spells a literal that reads back as itself
    for bits in range(0, 1 << 16, 7):
        v = ff.from_bits(bits, ff.F16)
        text = ff.format_float(v, ff.F16)
        back = ff.from_bits(int(text, 16), ff.F16) if text.startswith("0x") else \
            ff.parse_decimal(text, ff.F16)
        assert ff.to_bits(back, ff.F16) == bits or v != v


INVALID = [
    "%0 = arith.addi %x, %x : f32",
    "%0 = arith.addf %a, %a : i32",
    "%0 = arith.addi %a, %w : i32",
    "%0 = arith.extsi %a : i32 to i32",
    "%0 = arith.extui %a : i32 to i8",
    "%0 = arith.trunci %a : i32 to i64",
    "%0 = arith.extf %x : f32 to f16",
    "%0 = arith.truncf %h : f16 to bf16",
    "%0 = arith.extf %bb : bf16 to f16",
    "%0 = arith.bitcast %x : f32 to i64",
    "%0 = arith.index_cast %a : i32 to i64",
    "%0 = arith.index_cast %x : f32 to index",
    "%0 = arith.sitofp %n : index to f32",
    "%0 = arith.fptosi %x : f32 to index",
    "%0 = arith.extsi %va : vector<4xi32> to vector<8xi64>",
    "%0 = arith.extsi %va : vector<4xi32> to i64",
    "%0 = arith.cmpi slt, %x, %x : f32",
    "%0 = arith.cmpf olt, %a, %a : i32",
    "%0 = arith.cmpi foo, %a, %a : i32",
    "%0 = arith.cmpf foo, %x, %x : f32",
    "%0 = arith.select %c, %a, %x : i32",
    "%0 = arith.select %a, %a, %a : i32",
    "%0 = arith.negf %a : i32",
    "%0:2 = arith.addui_extended %a, %a : i32, i32",
    "%0:2 = arith.addui_extended %x, %x : f32, i1",
    "%0:2 = arith.mulsi_extended %x, %x : f32",
    "%0 = arith.addi %a, %a overflow<foo> : i32",
    "%0 = arith.addf %x, %x fastmath<foo> : f32",
    "%0 = arith.divsi %a, %a exact : f32",
    '%0 = "arith.addi"(%a, %a) {overflowFlags = 3 : i32} : (i32, i32) -> i32',
    '%0 = "arith.addf"(%x, %x) : (f32, f32) -> f64',
    '%0 = "arith.constant"() {value = 1.0 : f32} : () -> f64',
    '%0 = "arith.constant"() : () -> f64',
    '%0 = "arith.cmpi"(%a, %a) {predicate = 12 : i64} : (i32, i32) -> i1',
    '%0 = "arith.cmpi"(%a, %a) : (i32, i32) -> i1',
    '%0 = "arith.cmpi"(%a, %a) {predicate = 1 : i64} : (i32, i32) -> i32',
    "%0 = arith.constant dense<1> : vector<4xf32>",
    "%0 = arith.constant dense<[1, 2]> : vector<4xi32>",
    "%0 = arith.constant dense<[1.5, 2.5]> : vector<2xi32>",
    "%0 = arith.constant dense<300> : vector<2xi8>",
    "%0 = arith.constant dense<[[1, 2], [3]]> : vector<2x2xi64>",
    '%0 = arith.constant "foo" : i32',
    "%0 = arith.constant 1 : f16",
    "%0 = arith.constant 0x7E0000 : f16",
    "%0 = arith.constant -0x7E00 : f16",
    '%0 = "arith.truncf"(%x) {roundingmode = 7 : i32} : (f32) -> f16',
    "%0 = arith.cmpi eq, %va, %a : vector<4xi32>",
    "%0 = arith.scaling_extf %h, %x : f16, f32 to f16",
    "%0 = arith.scaling_truncf %x, %x : f32, f32 to f64",
    "%0 = arith.scaling_extf %h, %va : f16, vector<4xi32> to f32",
    "%0 = arith.maxnumf %a, %a : i32",
    "%0 = arith.remf %x, %h : f32",
    "%0, %1 = arith.addui_extended %a, %a : i32, vector<2xi1>",
]


@pytest.mark.parametrize("body", INVALID)
def test_invalid_ops_get_mlir_opts_message(body):
    text = func(body)
    assert our_error(text) == mlir_opt_error(text, filename="t.mlir")


def test_select_of_scalars_by_a_vector_condition_is_an_error():
    """mlir-opt-22 crashes on this one (a segfault in SelectOp::verifyInvariantsImpl)."""
    text = func("%0 = arith.select %vc, %a, %a : vector<4xi1>, i32")
    assert our_error(text) == ("t.mlir:2:8: error: 'arith.select' op failed to verify that "
                               "condition is signless i1 or has matching shape")


def test_builders_and_accessors():
    c = ConstantOp.build(255, i8)
    assert c.value == -1 and c.result_name_hint() == "c-1_i8"
    v = ConstantOp.build(0.1, VectorType((4,), FloatType(16, brain=True)))
    assert isinstance(v.attributes["value"], DenseElementsAttr) and v.attributes["value"].is_splat
    assert str(v.attributes["value"]) == "dense<1.000980e-01> : vector<4xbf16>"
    assert ConstantOp.build(-1, index).result_name_hint() == "c-1"
    add = FLOAT_BINARY["addf"].build(c.result, c.result, fastmath=FastMathAttr({"nnan"}))
    assert str(add.attributes["fastmath"]) == "#arith.fastmath<nnan>"
    assert str(OverflowAttr({"nuw", "nsw"})) == "#arith.overflow<nsw, nuw>"
    assert str(FastMathAttr(set())) == "#arith.fastmath<none>"
    assert set(INT_BINARY) >= {"addi", "ceildivui", "maxui", "shrui"}
    tr = CASTS["truncf"].build(ConstantOp.build(1.0, f32).result, FloatType(16))
    assert tr.rounding_mode is None
    assert CASTS["extsi"].build(ConstantOp.build(1, i8).result, i32).results[0].type == \
        IntegerType(32)


def test_vector_ops_on_every_element_type_print_as_mlir_opt_prints_them():
    lines = ["%c0 = arith.constant 0 : index"]
    for t, lit in (("i1", "true"), ("i8", "-3"), ("i16", "7"), ("i32", "1"), ("i64", "-9"),
                   ("index", "4"), ("f16", "1.5"), ("bf16", "-2.0"), ("f32", "0.1"),
                   ("f64", "1.0e-300")):
        kind = "maxnumf" if t[0] in "fb" else "maxsi"
        lines += [f"%d_{t} = arith.constant dense<{lit}> : vector<2x4x{t}>",
                  f"%m_{t} = memref.alloc() : memref<8x{t}>",
                  f"%l_{t} = vector.load %m_{t}[%c0] : memref<8x{t}>, vector<4x{t}>",
                  f"vector.store %l_{t}, %m_{t}[%c0] : memref<8x{t}>, vector<4x{t}>",
                  f"%r_{t} = vector.reduction <{kind}>, %l_{t} : vector<4x{t}> into {t}",
                  f"%b_{t} = vector.broadcast %r_{t} : {t} to vector<3x{t}>",
                  f"vector.print %b_{t} : vector<3x{t}>",
                  f"vector.print %d_{t} : vector<2x4x{t}> punctuation <comma>"]
        if t[0] in "fb":
            lines.append(f"%f_{t} = vector.fma %l_{t}, %l_{t}, %l_{t} : vector<4x{t}>")
            lines.append(f"%a_{t} = vector.reduction <add>, %l_{t}, %r_{t} fastmath<reassoc> : "
                         f"vector<4x{t}> into {t}")
    text = func("\n".join(lines), "")
    assert ours(text) == canonical(text)
    assert ours(mlir_opt(text, "--mlir-print-op-generic")) == canonical(text)
