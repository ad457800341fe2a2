"""Execution of every math op on scalars and vectors: bit-identical to mlir-runner-22 running
the same program lowered by upstream's passes (``--convert-math-to-llvm``; libm functions with
``--convert-math-to-libm``; ipowi and fpowi with a 64-bit exponent with
``--convert-math-to-funcs``), and checked against numpy (exactly for the correctly rounded
ops, to an ulp or two for the transcendental ones, whose libm and numpy implementations
differ).  isinf, isnormal and clampf have no upstream lowering to LLVM (and
``--math-expand-ops`` expands clampf to ``maximumf(minimumf(x, min), max)``, not the documented
``maxf(minf(x, max), min)``): numpy is their oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from arith_oracle import Program, assert_same_output, run_polyopt
from polyopt.affine import float_format as ff

LLVM_UNARY = ("absf", "acos", "asin", "atan", "ceil", "cos", "cosh", "exp", "exp2", "floor",
              "log", "log10", "log2", "round", "roundeven", "rsqrt", "sin", "sinh", "sqrt", "tan",
              "tanh", "trunc")
LIBM_UNARY = ("acosh", "asinh", "atanh", "cbrt", "erf", "erfc", "expm1", "log1p")
FMT = {"f16": ff.F16, "bf16": ff.BF16, "f32": ff.F32, "f64": ff.F64}
# arguments in every function's domain, some outside (NaN results), signed zeros, infinities
ARGS = ["0.5", "-0.75", "2.5", "-3.25", "0.0", "-0.0", "1.0e-3", "10.0", "0x7FC00000",
        "0x7F800000", "0xFF800000", "1.5", "-1.5", "100.5"]
LIMITS = {"f16": ["0.5", "-0.75", "2.5", "-3.25", "0.0", "-0.0", "1.0e-3", "10.0", "0x7E00",
                  "0x7C00", "0xFC00", "1.5", "-1.5", "100.5"],
          "bf16": ["0.5", "-0.75", "2.5", "-3.25", "0.0", "-0.0", "1.0e-2", "10.0", "0x7FC0",
                   "0x7F80", "0xFF80", "1.5", "-1.5", "100.5"],
          "f64": ["0.5", "-0.75", "2.5", "-3.25", "0.0", "-0.0", "1.0e-3", "10.0",
                  "0x7FF8000000000000", "0x7FF0000000000000", "0xFFF0000000000000", "1.5",
                  "-1.5", "100.5"]}


def args(t: str) -> list[str]:
    return LIMITS.get(t, ARGS)


def value_of(lit: str, t: str) -> float:
    fmt = FMT[t]
    return ff.from_bits(int(lit, 16), fmt) if lit.startswith("0x") else ff.round_to(float(lit),
                                                                                   fmt)


def parse_vector(line: str) -> list[int]:
    return [int(x) for x in line.strip("() ").split(",")]


def unary_program(ops, t: str) -> Program:
    """Each op on a vector of all the arguments and on two of them as scalars."""
    p = Program()
    vals = args(t)
    vt = f"vector<{len(vals)}x{t}>"
    v = p.value(vt, vals)
    for op in ops:
        p.print(p.op(f"math.{op} {v} : {vt}"), vt, f"{op} {vt}")
        for lit in vals[:2]:
            p.print(p.op(f"math.{op} {p.value(t, lit)} : {t}"), t, f"{op}({lit}) : {t}")
    return p


def bits_to_floats(line: str, t: str) -> list[float]:
    return [ff.from_bits(b, FMT[t]) for b in parse_vector(line)]


def ulps(a: float, b: float, t: str) -> float:
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0
    if math.isinf(a) or math.isinf(b):
        return math.inf
    fmt = FMT[t]
    spacing = math.ldexp(1.0, max(math.frexp(max(abs(a), abs(b)))[1] - 1 - fmt.mant_bits,
                                  2 - (1 << (fmt.exp_bits - 1)) - fmt.mant_bits))
    return abs(a - b) / spacing


_NUMPY = {"absf": np.abs, "acos": np.arccos, "asin": np.arcsin, "atan": np.arctan,
          "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh, "exp": np.exp, "exp2": np.exp2,
          "floor": np.floor, "log": np.log, "log10": np.log10, "log2": np.log2,
          "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "roundeven": np.rint,
          "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
          "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc, "acosh": np.arccosh,
          "asinh": np.arcsinh, "atanh": np.arctanh, "cbrt": np.cbrt, "expm1": np.expm1,
          "log1p": np.log1p}
_EXACT = {"absf", "ceil", "floor", "round", "roundeven", "sqrt", "trunc"}


def check_numpy(out: list[str], ops, t: str) -> None:
    """The vector results against numpy (f32/f64): exact for the correctly rounded ops, within
    two ulps for the others (numpy's exp/log/sin... are not libm's)."""
    if t not in ("f32", "f64"):
        return
    npt = np.float32 if t == "f32" else np.float64
    xs = np.array([value_of(v, t) for v in args(t)], dtype=npt)
    with np.errstate(all="ignore"):
        for k, op in enumerate(ops):
            if op not in _NUMPY:
                continue
            want = [float(w) for w in _NUMPY[op](xs).astype(npt)]
            got = bits_to_floats(out[3 * k], t)
            for x, g, w in zip(xs.tolist(), got, want):
                tol = 0 if op in _EXACT else 2
                assert ulps(g, w, t) <= tol, (op, x, g, w)


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_llvm_intrinsic_ops_match_mlir_runner_and_numpy(t):
    p = unary_program(LLVM_UNARY, t)
    out = assert_same_output(p)
    check_numpy(out, LLVM_UNARY, t)


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_libm_ops_match_mlir_runner_and_numpy(t):
    p = unary_program(LIBM_UNARY, t)
    out = assert_same_output(p, ["--convert-math-to-libm"])
    check_numpy(out, LIBM_UNARY, t)


def test_erf_and_erfc_against_math_module():
    """numpy has no erf: Python's math.erf (libm's, double) rounded to f32 is within an ulp of
    erff."""
    p = unary_program(("erf", "erfc"), "f32")
    out = run_polyopt(p.text()).splitlines()
    xs = [value_of(v, "f32") for v in args("f32")]
    for k, fn in enumerate((math.erf, math.erfc)):
        for x, g in zip(xs, bits_to_floats(out[3 * k], "f32")):
            w = float(np.float32(fn(x))) if x == x else math.nan
            assert ulps(g, w, "f32") <= 1, (fn, x, g, w)


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_binary_ops_fma_sincos_and_fpowi_match_mlir_runner(t):
    p = Program()
    vals = args(t)
    n = len(vals)
    vt = f"vector<{n}x{t}>"
    a = p.value(vt, vals)
    b = p.value(vt, vals[::-1])
    c = p.value(vt, vals[3:] + vals[:3])
    for op in ("atan2", "copysign", "powf"):
        p.print(p.op(f"math.{op} {a}, {b} : {vt}"), vt, op)
        p.print(p.op(f"math.{op} {p.value(t, vals[0])}, {p.value(t, vals[3])} : {t}"), t, op)
    p.print(p.op(f"math.fma {a}, {b}, {c} : {vt}"), vt, "fma")
    p.print(p.op(f"math.fma {p.value(t, '1.5')}, {p.value(t, '-3.25')}, {p.value(t, '0.5')} : "
                 f"{t}"), t, "fma scalar")
    s = p.op(f"math.sincos {a} : {vt}", 2)
    p.print(s + "#0", vt, "sin")
    p.print(s + "#1", vt, "cos")
    p.print(p.op(f"math.fpowi {p.value(t, '2.5')}, {p.value('i32', -3)} : {t}, i32"), t, "fpowi")
    p.print(p.op(f"math.fpowi {p.value(t, '0.5')} , {p.value('i32', 9)} fastmath<fast> : {t}, "
                 "i32"), t, "fpowi fast")
    for cls in ("isnan", "isfinite"):
        p.print(p.op(f"math.{cls} {a} : {vt}"), f"vector<{n}xi1>", cls)
    assert_same_output(p)


def powi_reference(x: float, n: int, npt):
    """compiler-rt's __powisf2/__powidf2 (what llvm.powi calls), each product rounded to
    ``npt``."""
    a, r = npt(x), npt(1.0)
    recip = n < 0
    while True:
        if n & 1:
            r = npt(r * a)
        n = int(n / 2)
        if n == 0:
            break
        a = npt(a * a)
    return float(npt(1) / r if recip else r)


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
def test_fpowi_on_vectors_with_i32_exponents(t):
    """(mlir-opt-22 lowers a vector fpowi to an invalid llvm.intr.powi with a vector exponent:
    compared with compiler-rt's algorithm; f16 is computed in f32, as LLVM does.)"""
    p = Program()
    xs = ["1.5", "-2.0", "0.5", "3.0", "-0.75", "10.0"]
    ns = [7, -3, 10, 0, 5, -2]
    vt = f"vector<6x{t}>"
    p.print(p.op(f"math.fpowi {p.value(vt, xs)}, {p.value('vector<6xi32>', ns)} : {vt}, "
                 "vector<6xi32>"), vt, "fpowi")
    out = run_polyopt(p.text()).splitlines()
    npt = {"f16": np.float32, "f32": np.float32, "f64": np.float64}[t]
    want = [ff.to_bits(powi_reference(value_of(x, t), n, npt), FMT[t]) for x, n in zip(xs, ns)]
    mask = (1 << FMT[t].width) - 1
    assert [g & mask for g in parse_vector(out[0])] == want


def test_fma_on_16_bit_types_rounds_once():
    """math.fma/vector.fma on f16 and bf16 against the exactly rounded a*b+c (Python rationals),
    including a product on a midpoint with a tiny addend (a double rounding would miss)."""
    from fractions import Fraction
    cases = {"bf16": [("17.0", "17.0", "1.0e-30"), ("17.0", "17.0", "-1.0e-30"),
                      ("1.5", "-3.25", "0.5"), ("3.0e38", "2.0", "-3.0e38")],
             "f16": [("3.0", "0.33325", "-1.0"), ("100.0", "655.0", "-0.5"),
                     ("0.1", "0.1", "6.0e-8"), ("-2.0", "3.0", "6.0")]}
    p = Program()
    expected = []
    for t, rows in cases.items():
        fmt = FMT[t]
        for a, b, c in rows:
            p.print(p.op(f"math.fma {p.value(t, a)}, {p.value(t, b)}, {p.value(t, c)} : {t}"), t,
                    f"fma {t}")
            x, y, z = (Fraction(value_of(v, t)) for v in (a, b, c))
            exact = x * y + z
            expected.append(ff.round_fraction(exact, exact < 0, fmt))
        n = len(rows)
        vt = f"vector<{n}x{t}>"
        p.print(p.op(f"vector.fma {p.value(vt, [r[0] for r in rows])}, "
                     f"{p.value(vt, [r[1] for r in rows])}, {p.value(vt, [r[2] for r in rows])} "
                     f": {vt}"), vt, f"vector.fma {t}")
    out = run_polyopt(p.text()).splitlines()
    got = [int(out[i]) & 0xFFFF for i in range(4)] + [int(out[i]) & 0xFFFF for i in range(5, 9)]
    assert got == expected
    assert [g & 0xFFFF for g in parse_vector(out[4])] == expected[:4]
    assert [g & 0xFFFF for g in parse_vector(out[9])] == expected[4:]


@pytest.mark.parametrize("t", ["i8", "i16", "i32", "i64", "index"])
def test_integer_ops_match_mlir_runner(t):
    p = Program()
    w = 64 if t == "index" else int(t[1:])
    vals = [0, 1, -1, 5, -6, 1 << (w - 2), -(1 << (w - 1)), (1 << (w - 1)) - 1]
    vt = f"vector<{len(vals)}x{t}>"
    v = p.value(vt, vals)
    for op in ("absi", "ctlz", "cttz", "ctpop"):
        p.print(p.op(f"math.{op} {v} : {vt}"), vt, op)
        p.print(p.op(f"math.{op} {p.value(t, -6)} : {t}"), t, op)
    out = assert_same_output(p)
    mask = (1 << w) - 1
    ref = {"absi": lambda x: abs(x) & mask, "ctpop": lambda x: bin(x & mask).count("1"),
           "ctlz": lambda x: w - (x & mask).bit_length(),
           "cttz": lambda x: w if x & mask == 0 else ((x & mask) & -(x & mask)).bit_length() - 1}
    for k, op in enumerate(("absi", "ctlz", "cttz", "ctpop")):
        assert [g & mask for g in parse_vector(out[2 * k])] == [ref[op](x) for x in vals], op


def test_ipowi_and_fpowi_with_wide_exponents_match_convert_math_to_funcs():
    p = Program()
    for t in ("i8", "i32", "i64"):
        bases = [2, -3, 1, -1, 0, 7]
        exps = [10, 5, -4, -7, 3, 0]
        vt = f"vector<6x{t}>"
        p.print(p.op(f"math.ipowi {p.value(vt, bases)}, {p.value(vt, exps)} : {vt}"), vt, "ipowi")
        p.print(p.op(f"math.ipowi {p.value(t, 3)}, {p.value(t, 4)} : {t}"), t, "ipowi")
    for ft in ("f32", "f64", "f16"):
        for it in ("i64", "i16"):
            xs, ns = ["1.5", "-2.0", "0.5", "3.0"], [7, -3, 10, 0]
            p.print(p.op(f"math.fpowi {p.value(f'vector<4x{ft}>', xs)}, "
                         f"{p.value(f'vector<4x{it}>', ns)} : vector<4x{ft}>, vector<4x{it}>"),
                    f"vector<4x{ft}>", f"fpowi {ft} {it}")
    i64min = p.value("i64", -(1 << 63))
    p.print(p.op(f"math.fpowi {p.value('f64', '1.0000001')}, {i64min} : f64, i64"), "f64", "min")
    out = assert_same_output(p, ["--convert-math-to-funcs"])

    def ipow(b, e, w):
        if e < 0:      # (0 to a negative power divides by zero in MLIR: not run)
            return 1 if b == 1 else (-1) ** (-e) if b == -1 else 0
        r = (b ** e) & ((1 << w) - 1)
        return r - (1 << w) if r >> (w - 1) else r
    for k, w in enumerate((8, 32, 64)):
        assert parse_vector(out[2 * k]) == [ipow(b, e, w) for b, e in
                                            zip([2, -3, 1, -1, 0, 7], [10, 5, -4, -7, 3, 0])]
        assert int(out[2 * k + 1]) == 81


def test_isinf_isnormal_and_clampf_against_numpy():
    p = Program()
    lits = ["1.5", "-0.0", "1.0e-40", "0x7F800000", "0xFF800000", "0x7FC00000", "3.0e38",
            "1.17549435e-38"]
    n = len(lits)
    vt = f"vector<{n}xf32>"
    x = p.value(vt, lits)
    for cls in ("isinf", "isnormal", "isnan", "isfinite"):
        p.print(p.op(f"math.{cls} {x} : {vt}"), f"vector<{n}xi1>", cls)
        p.print(p.op(f"math.{cls} {p.value('f32', '1.0e-40')} : f32"), "i1", cls)
    lo = p.value(vt, ["-1.0"] * n)
    hi = p.value(vt, ["2.0"] * n)
    p.print(p.op(f"math.clampf {x} to [{lo}, {hi}] : {vt}"), vt, "clampf")
    h = p.value("vector<3xbf16>", ["-5.0", "0.5", "9.0"])
    hl, hh = p.value("vector<3xbf16>", ["-1.0"] * 3), p.value("vector<3xbf16>", ["2.0"] * 3)
    p.print(p.op(f"math.clampf {h} to [{hl}, {hh}] fastmath<nnan> : vector<3xbf16>"),
            "vector<3xbf16>", "clampf bf16")
    out = run_polyopt(p.text()).splitlines()
    xs = np.array([value_of(v, "f32") for v in lits], dtype=np.float32)
    tiny = np.finfo(np.float32).tiny
    with np.errstate(invalid="ignore"):
        want = {"isinf": np.isinf(xs), "isnan": np.isnan(xs), "isfinite": np.isfinite(xs),
                "isnormal": np.isfinite(xs) & (np.abs(xs) >= tiny)}
    for k, cls in enumerate(("isinf", "isnormal", "isnan", "isfinite")):
        assert parse_vector(out[2 * k]) == [int(b) for b in want[cls]], cls
    assert out[1] == "0" and out[3] == "0" and out[5] == "0" and out[7] == "1"  # 1e-40
    got = np.array(bits_to_floats(out[8], "f32"), dtype=np.float32)
    np.testing.assert_array_equal(got, np.clip(xs, -1.0, 2.0))
    assert bits_to_floats(out[9], "bf16") == [-1.0, 0.5, 2.0]


def test_math_on_2d_vectors():
    p = Program()
    vt = "vector<2x3xf32>"
    x = p.value(vt, "dense<[[0.5, 1.5, 2.5], [-0.5, 4.0, 9.0]]>")
    for op in ("exp", "sqrt", "erf", "floor"):
        p.print(p.op(f"math.{op} {x} fastmath<nsz> : {vt}"), vt, op)
    p.print(p.op(f"math.isfinite {x} : {vt}"), "vector<2x3xi1>", "isfinite")
    out = run_polyopt(p.text()).splitlines()
    rows = [[0.5, 1.5, 2.5], [-0.5, 4.0, 9.0]]
    for k, fn in enumerate((np.exp, np.sqrt, None, np.floor)):  # (erf: see above)
        got = [[ff.from_bits(int(b), ff.F32) for b in r.strip("( )").split(", ")]
               for r in out[k].strip("( )").split(" ), ( ")]
        if fn is not None:
            with np.errstate(invalid="ignore"):
                want = fn(np.array(rows, dtype=np.float32))
            assert np.allclose(np.array(got, dtype=np.float32), want, rtol=3e-7, equal_nan=True)
    assert out[4] == "( ( 1, 1, 1 ), ( 1, 1, 1 ) )"
