"""The math dialect's syntax against mlir-opt-22: every op of MLIR 22, custom and generic form,
fastmath flags (after the operands, or in the attribute dictionary of isnan...), the result
names of sincos, and mlir-opt's messages for invalid ops."""

from __future__ import annotations

import pytest

from polyopt.affine.dialects.math import (CLASSIFY, FLOAT_BINARY, FLOAT_UNARY, INT_UNARY,
                                          ClampFOp, FPowIOp, IPowIOp, MathFMAOp, SinCosOp)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from test_arith_roundtrip import func, our_error, ours
from upstream_mlir import mlir_opt, mlir_opt_error

ARGS = "%a: f32, %b: f32, %c: f32, %i: i32, %n: index, %v: vector<4xf16>, %vi: vector<4xi8>, " \
       "%w: vector<2x3xbf16>, %l: i64"


def every_op() -> str:
    lines = []
    for k, op in enumerate(FLOAT_UNARY):
        lines.append(f"%u{k} = math.{op} %a fastmath<nnan> : f32")
        lines.append(f"%uv{k} = math.{op} %v : vector<4xf16>")
        lines.append(f"%uw{k} = math.{op} %w fastmath<fast> : vector<2x3xbf16>")
    for k, op in enumerate(FLOAT_BINARY):
        lines.append(f"%b{k} = math.{op} %a, %b : f32")
        lines.append(f"%bv{k} = math.{op} %v, %v fastmath<afn,reassoc> : vector<4xf16>")
    for k, op in enumerate(INT_UNARY):
        lines.append(f"%i{k} = math.{op} %i : i32")
        lines.append(f"%iv{k} = math.{op} %vi : vector<4xi8>")
        lines.append(f"%in{k} = math.{op} %n : index")
    for k, op in enumerate(CLASSIFY):
        lines.append(f"%c{k} = math.{op} %a : f32")
        lines.append(f"%cv{k} = math.{op} %v {{fastmath = #arith.fastmath<fast>}} : vector<4xf16>")
    lines += ["%p0 = math.ipowi %i, %i : i32", "%p1 = math.ipowi %vi, %vi : vector<4xi8>",
              "%p2 = math.fpowi %a, %i fastmath<fast> : f32, i32",
              "%p3 = math.fpowi %a, %l : f32, i64",
              "%cl = math.clampf %a to [%b, %c] fastmath<fast> : f32",
              "%cl2 = math.clampf %v to [%v, %v] : vector<4xf16>",
              "%s:2 = math.sincos %v fastmath<afn> : vector<4xf16>",
              "%s2:2 = math.sincos %a : f32",
              "%f = math.fma %a, %b, %c : f32", "%f2 = math.fma %w, %w, %w fastmath<contract> : "
              "vector<2x3xbf16>"]
    return func("\n".join(lines), ARGS)


def test_every_math_op_prints_as_mlir_opt_prints_it():
    text = every_op()
    expected = mlir_opt(text)
    assert ours(text) == expected
    assert "%sin, %cos = math.sincos %arg5 fastmath<afn> : vector<4xf16>" in expected
    assert "math.isnan %arg5 {fastmath = #arith.fastmath<fast>} : vector<4xf16>" in expected


def test_every_math_op_in_generic_form_both_ways():
    text = every_op()
    expected = mlir_opt(text)
    assert ours(mlir_opt(text, "--mlir-print-op-generic")) == expected
    assert mlir_opt(print_module(parse(text, "t.mlir"), generic=True)) == expected


def test_op_classes():
    m = parse(every_op(), "t.mlir")
    kinds = {type(op) for op in m.walk()}
    assert {ClampFOp, FPowIOp, IPowIOp, MathFMAOp, SinCosOp} <= kinds
    assert set(FLOAT_UNARY.values()) <= kinds and set(CLASSIFY.values()) <= kinds
    assert len(FLOAT_UNARY) + len(FLOAT_BINARY) + len(INT_UNARY) + len(CLASSIFY) + 5 == 46


INVALID = [
    "%0 = math.exp %i : i32",
    "%0 = math.absi %a : f32",
    "%0 = math.fpowi %a, %a : f32, f32",
    "%0 = math.fpowi %a, %v : f32, vector<4xf16>",
    "%0 = math.isnan %i : i32",
    '%0 = "math.isnan"(%a) : (f32) -> i32',
    '%0 = "math.exp"(%a) : (f32) -> f64',
    "%0 = math.powf %a, %i : f32",
    '%0:2 = "math.sincos"(%a) : (f32) -> (f32, f64)',
    "%0 = math.clampf %a to [%a, %i] : f32",
    "%0 = math.fma %a, %a, %a : i32",
    '%0 = "math.fpowi"(%a, %i) : (f32, i32) -> f64',
    '%0 = "math.fpowi"(%v, %i) : (vector<4xf16>, i32) -> vector<4xf16>',
    "%0 = math.exp %a fastmath<bad> : f32",
]


@pytest.mark.parametrize("body", INVALID)
def test_invalid_math_ops_get_mlir_opts_message(body):
    text = func(body, ARGS)
    assert our_error(text) == mlir_opt_error(text, filename="t.mlir")
