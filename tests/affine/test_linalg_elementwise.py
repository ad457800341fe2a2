"""linalg's elementwise named ops (``linalg.add`` ... ``linalg.select``) and
``linalg.elementwise kind=...`` on memrefs: printed, generalized, lowered and refused as
mlir-opt-22 does, and run against numpy on shapes that are multiples of nothing."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

M, N = 7, 13
UNARY = ("exp", "log", "abs", "ceil", "floor", "negf", "reciprocal", "round", "sqrt", "rsqrt",
         "square", "tanh", "erf")
BINARY = ("add", "sub", "mul", "div", "max", "min", "powf")
T = f"memref<{M}x{N}xf32>"
TI = f"memref<{M}x{N}xi32>"
TB = f"memref<{M}x{N}xi1>"

ARGS = (f"%a: {T}, %b: {T}, %c: {T}, %i: {TI}, %j: {TI}, %k: {TI}, %m: {TB}, "
        f"%v: memref<{N}xf32>, %s: memref<f32>, %x: f32")


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


ALL_OPS = func("\n".join(
    [f"linalg.{o} ins(%a : {T}) outs(%c : {T})" for o in UNARY] +
    [f"linalg.{o} ins(%a, %b : {T}, {T}) outs(%c : {T})" for o in BINARY] +
    [f"linalg.{o} ins(%i, %j : {TI}, {TI}) outs(%k : {TI})"
     for o in ("add", "sub", "mul", "div", "div_unsigned", "max", "min")] +
    [f"linalg.add ins(%m, %m : {TB}, {TB}) outs(%m : {TB})",
     f"linalg.mul ins(%m, %m : {TB}, {TB}) outs(%m : {TB})",
     f"linalg.select ins(%m, %a, %b : {TB}, {T}, {T}) outs(%c : {T})",
     f"linalg.add ins(%a, %s : {T}, memref<f32>) outs(%c : {T})",
     f"linalg.mul ins(%x, %a : f32, {T}) outs(%c : {T})",
     f"linalg.exp ins(%a : {T}) outs(%c : {T}) {{foo = 1}}",
     f"linalg.elementwise kind=#linalg.elementwise_kind<exp> ins(%a : {T}) outs(%c : {T})",
     f"linalg.elementwise kind = #linalg.elementwise_kind<max_unsigned> ins(%i, %j : {TI}, {TI})"
     f" outs(%k : {TI}) {{bar}}",
     "linalg.elementwise kind=#linalg.elementwise_kind<add> indexing_maps = ["
     "affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, "
     "affine_map<(d0, d1) -> (d0, d1)>]"
     f" ins(%v, %b : memref<{N}xf32>, {T}) outs(%c : {T})",
     "linalg.elementwise kind=#linalg.elementwise_kind<sub> indexing_maps = ["
     "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, "
     "affine_map<(d0, d1) -> (d0, d1)>]"
     f" ins(%a, %b : {T}, {T}) outs(%c : {T})",
     f"linalg.elementwise kind=#linalg.elementwise_kind<select> ins(%m, %a, %b : {TB}, {T}, {T})"
     f" outs(%c : {T})"]))


# ---------------------------------------------------------------------------------------------
# syntax and lowering, against mlir-opt-22


def test_printed_as_mlir_opt_prints():
    assert print_module(parse(ALL_OPS, "t.mlir")) == mlir_opt(ALL_OPS)


def test_generic_form_reads_back_to_the_named_ops():
    generic = mlir_opt(ALL_OPS, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(ALL_OPS)


def test_generic_form_with_another_body_is_refused():
    generic = mlir_opt(func(f"linalg.exp ins(%a : {T}) outs(%c : {T})"),
                       "--mlir-print-op-generic")
    assert "math.exp" in generic
    with pytest.raises(PolyoptError, match="region is not the op's payload"):
        parse(generic.replace("math.exp", "math.log"), "g.mlir")


def test_lowered_to_the_loops_mlir_opt_makes():
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    module = parse(ALL_OPS, "t.mlir")
    assert convert_linalg_to_affine_loops(module) == ALL_OPS.count("\nlinalg.")
    assert print_module(module) == mlir_opt(ALL_OPS, "--convert-linalg-to-affine-loops")


# ---------------------------------------------------------------------------------------------
# errors: located, with mlir-opt-22's message


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render().splitlines()[0]


LOCATED_ERRORS = [
    f"linalg.exp ins(%i : {TI}) outs(%k : {TI})",
    f"linalg.negf ins(%i : {TI}) outs(%k : {TI})",
    f"linalg.add ins(%a : {T}) outs(%c : {T})",
    f"linalg.select ins(%a, %b : {T}, {T}) outs(%c : {T})",
    f"linalg.sub ins(%m, %m : {TB}, {TB}) outs(%m : {TB})",
    f"linalg.div ins(%m, %m : {TB}, {TB}) outs(%m : {TB})",
    f"linalg.div_unsigned ins(%a, %b : {T}, {T}) outs(%c : {T})",
    f"linalg.add ins(%a, %v : {T}, memref<{N}xf32>) outs(%c : {T})",
    f"linalg.add ins(%a, %b : {T}, {T}) outs(%v : memref<{N}xf32>)",
    f"linalg.add indexing_maps = [] ins(%a, %b : {T}, {T}) outs(%c : {T})",
    f"linalg.elementwise ins(%a : {T}) outs(%c : {T})",
    f"linalg.elementwise kind=#linalg.elementwise_kind<foo> ins(%a : {T}) outs(%c : {T})",
    f"linalg.elementwise kind=#linalg.elementwise_kind<add> ins(%a : {T}) outs(%c : {T})",
    f"linalg.elementwise kind=#linalg.elementwise_kind<exp> indexing_maps = [1, 2] "
    f"ins(%a : {T}) outs(%c : {T})",
    "linalg.elementwise kind=#linalg.elementwise_kind<exp> indexing_maps = "
    f"[affine_map<(d0, d1) -> (d1)>] ins(%a : {T}) outs(%c : {T})",
    "linalg.elementwise kind=#linalg.elementwise_kind<exp> indexing_maps = "
    "[affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>] "
    f"ins(%a : {T}) outs(%c : {T})",
    f"linalg.elementwise kind=#linalg.elementwise_kind<add> ins(%a, %s : {T}, memref<f32>) "
    f"outs(%c : {T})",
]


@pytest.mark.parametrize("body", LOCATED_ERRORS)
def test_error_is_mlir_opts(body):
    text = func(body)
    assert error_of(text) == mlir_opt_error(text, filename="t.mlir")


# mlir-opt reports these from the payload's ops at <unknown>:0; polyopt points at the op
PAYLOAD_ERRORS = [
    (f"linalg.add ins(%a, %i : {T}, {TI}) outs(%c : {T})",
     "Cannot build binary Linalg operation: expects allComplex, allFloatingPoint, or "
     "allInteger, got 'f32' and 'i32'"),
    (f"linalg.exp ins(%a : {T}) outs(%k : {TI})",
     "'linalg.yield' op type of yield operand 1 ('f32') doesn't match the element type of the "
     "enclosing linalg.generic op ('i32')"),
    (f"linalg.select ins(%i, %a, %b : {TI}, {T}, {T}) outs(%c : {T})",
     "'arith.select' op operand #0 must be bool-like, but got 'i32'"),
    (f"linalg.powf ins(%i, %j : {TI}, {TI}) outs(%k : {TI})",
     "'math.powf' op operand #0 must be floating-point-like, but got 'i32'"),
]


@pytest.mark.parametrize("body, message", PAYLOAD_ERRORS)
def test_payload_errors_are_located(body, message):
    text = func(body)
    got = error_of(text)
    assert got.startswith("t.mlir:2:"), got
    assert got.endswith("error: " + message) or got.endswith(f"custom op '{body.split()[0]}' "
                                                             + message), got
    assert message in mlir_opt_error(text)


def test_cli_error_exits_one_without_traceback(tmp_path):
    import subprocess
    import sys
    f = tmp_path / "bad.mlir"
    f.write_text(func(f"linalg.add ins(%a, %i : {T}, {TI}) outs(%c : {T})"))
    r = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(f)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{f}:2:12: error: custom op 'linalg.add' Cannot build binary" in r.stderr


# ---------------------------------------------------------------------------------------------
# execution against numpy


RNG = np.random.default_rng(7)

REF = {"exp": np.exp, "log": np.log, "abs": np.abs, "ceil": np.ceil, "floor": np.floor,
       "negf": np.negative, "reciprocal": lambda x: 1 / x,
       "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),   # half away from zero
       "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "square": np.square,
       "tanh": np.tanh, "erf": np.vectorize(math.erf)}


def _compile(ops: dict[str, str]):
    return polyopt.compile("\n".join(
        f"func.func @op_{name}({args}) {{\n  {body}\n  return\n}}"   # @erf would be libm's
        for name, (args, body) in ops.items()))


def test_unary_ops_run_as_numpy():
    t = f"memref<{M}x{N}xf64>"
    mod = _compile({o: (f"%a: {t}, %c: {t}", f"linalg.{o} ins(%a : {t}) outs(%c : {t})")
                    for o in UNARY})
    signed = RNG.uniform(-4, 4, (M, N))
    signed[0, :4] = (-2.5, 2.5, 0.5, -0.5)      # round's ties go away from zero
    for o in UNARY:
        a = np.abs(signed) + 0.1 if o in ("log", "sqrt", "rsqrt") else signed.copy()
        c = np.full((M, N), np.nan)
        mod['op_' + o](a, c)
        np.testing.assert_allclose(c, REF[o](a), rtol=1e-13, atol=1e-15, err_msg=o)


def test_unary_f32():
    mod = _compile({"t": (f"%a: {T}, %c: {T}", f"linalg.tanh ins(%a : {T}) outs(%c : {T})")})
    a = RNG.standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(a)
    mod["op_t"](a, c)
    np.testing.assert_allclose(c, np.tanh(a), rtol=1e-5)


BIN_REF = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "max": np.maximum, "min": np.minimum, "powf": np.power}


def test_binary_float_ops_run_as_numpy():
    t = f"memref<{M}x{N}xf64>"
    mod = _compile({o: (f"%a: {t}, %b: {t}, %c: {t}",
                        f"linalg.{o} ins(%a, %b : {t}, {t}) outs(%c : {t})") for o in BINARY})
    a, b = RNG.uniform(0.5, 3, (M, N)), RNG.uniform(-2, 2, (M, N))
    a[1, 1], b[2, 2] = np.nan, np.nan       # maximumf/minimumf propagate NaN
    for o in BINARY:
        c = np.zeros((M, N))
        mod['op_' + o](a, b, c)
        np.testing.assert_allclose(c, BIN_REF[o](a, b), rtol=1e-13, err_msg=o)


def test_integer_ops_run_as_numpy():
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
           "min": np.minimum}
    mod = _compile({o: (f"%a: {TI}, %b: {TI}, %c: {TI}",
                        f"linalg.{o} ins(%a, %b : {TI}, {TI}) outs(%c : {TI})")
                    for o in (*ops, "div", "div_unsigned")})
    a = RNG.integers(-1000, 1000, (M, N)).astype(np.int32)
    b = RNG.integers(1, 50, (M, N)).astype(np.int32) * np.where(RNG.random((M, N)) < .5, -1, 1
                                                               ).astype(np.int32)
    for o, f in ops.items():
        c = np.zeros_like(a)
        mod['op_' + o](a, b, c)
        np.testing.assert_array_equal(c, f(a, b), err_msg=o)
    c = np.zeros_like(a)
    mod["op_div"](a, b, c)
    np.testing.assert_array_equal(c, np.trunc(a / b).astype(np.int32))   # divsi truncates
    c = np.zeros_like(a)
    mod["op_div_unsigned"](a, b, c)
    np.testing.assert_array_equal(c.view(np.uint32), a.view(np.uint32) // b.view(np.uint32))


def test_select_scalar_rank0_and_broadcast():
    t = f"memref<{M}x{N}xf64>"
    mod = _compile({
        "sel": (f"%m: {TB}, %a: {t}, %b: {t}, %c: {t}",
                f"linalg.select ins(%m, %a, %b : {TB}, {t}, {t}) outs(%c : {t})"),
        "scal": (f"%x: f64, %a: {t}, %c: {t}",
                 f"linalg.mul ins(%x, %a : f64, {t}) outs(%c : {t})"),
        "rank0": (f"%a: {t}, %s: memref<f64>, %c: {t}",
                  f"linalg.sub ins(%a, %s : {t}, memref<f64>) outs(%c : {t})"),
        "bcast": (f"%v: memref<{M}xf64>, %a: memref<{N}x{M}xf64>, %c: {t}",
                  "linalg.elementwise kind=#linalg.elementwise_kind<div> indexing_maps = ["
                  "affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1, d0)>, "
                  f"affine_map<(d0, d1) -> (d0, d1)>] ins(%v, %a : memref<{M}xf64>, "
                  f"memref<{N}x{M}xf64>) outs(%c : {t})"),
    })
    a, b = RNG.standard_normal((M, N)), RNG.standard_normal((M, N))
    m = RNG.random((M, N)) < 0.5
    c = np.zeros((M, N))
    mod["op_sel"](m, a, b, c)
    np.testing.assert_array_equal(c, np.where(m, a, b))
    mod["op_scal"](2.5, a, c)
    np.testing.assert_array_equal(c, 2.5 * a)
    s = np.array(1.25)
    mod["op_rank0"](a, s, c)
    np.testing.assert_array_equal(c, a - 1.25)
    v, at = RNG.uniform(1, 2, M), RNG.uniform(1, 2, (N, M))
    mod["op_bcast"](v, at, c)
    np.testing.assert_allclose(c, v[:, None] / at.T, rtol=1e-15)


@pytest.mark.parametrize("kind, ref", [("exp", np.exp), ("square", np.square),
                                       ("max_signed", np.maximum), ("min_signed", np.minimum),
                                       ("powf", np.power)])
def test_elementwise_kinds_run_as_numpy(kind, ref):
    t = f"memref<{M}x{N}xf64>"
    unary = kind in ("exp", "square")
    ins = f"ins(%a : {t})" if unary else f"ins(%a, %b : {t}, {t})"
    mod = _compile({"k": (f"%a: {t}, %b: {t}, %c: {t}",
                          f"linalg.elementwise kind=#linalg.elementwise_kind<{kind}> {ins} "
                          f"outs(%c : {t})")})
    a, b = RNG.uniform(0.5, 2, (M, N)), RNG.uniform(-2, 2, (M, N))
    c = np.zeros((M, N))
    mod["op_k"](a, b, c)
    np.testing.assert_allclose(c, ref(a) if unary else ref(a, b), rtol=1e-13)


def test_unsigned_kinds_on_integers():
    mod = _compile({k: (f"%a: {TI}, %b: {TI}, %c: {TI}",
                        f"linalg.elementwise kind=#linalg.elementwise_kind<{k}> "
                        f"ins(%a, %b : {TI}, {TI}) outs(%c : {TI})")
                    for k in ("max_unsigned", "min_unsigned")})
    a = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    b = RNG.integers(-100, 100, (M, N)).astype(np.int32)
    for k, f in (("max_unsigned", np.maximum), ("min_unsigned", np.minimum)):
        c = np.zeros_like(a)
        mod['op_' + k](a, b, c)
        np.testing.assert_array_equal(c.view(np.uint32), f(a.view(np.uint32),
                                                           b.view(np.uint32)), err_msg=k)
