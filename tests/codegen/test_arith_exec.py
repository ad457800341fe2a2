"""Execution of every arith op on scalars and vectors of every element type: what polyopt
computes is what mlir-runner-22 computes for the same program (inputs opaque to both compilers,
floats compared bit for bit), and float arithmetic is also checked against numpy.

Edge values: division by negatives, ``INT_MIN`` and ``-1`` (``INT_MIN / -1`` itself is
undefined in MLIR and not run), shifts by the width minus one, NaN and signed zeros through
maximumf/maxnumf, casts of out-of-range values.  Where MLIR 22's pipeline does not compute what
the op is defined to compute (bf16 subnormals, int -> bf16 rounding, truncf rounding modes),
the results are checked against exact rounding in :mod:`test_arith_exact`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from arith_oracle import (FLOATS, WIDTH, Program, assert_same_output, element, run_polyopt,
                          with_element)
from polyopt.affine import float_format as ff

INT_TYPES = ("i8", "i16", "i32", "i64", "index")


def int_values(t: str) -> list[int]:
    w = WIDTH[t]
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return [lo, hi, -1, 7, -7, 2, -2, 13, lo + 1]


def shift_amounts(t: str) -> list[int]:
    return [0, 1, 3, WIDTH[t] - 1]


def _pairs(values, skip=lambda a, b: False):
    return [(a, b) for a in values for b in values if not skip(a, b)]


def parse_vector(line: str) -> list[int]:
    """``( 1, -2, 3 )`` -> ``[1, -2, 3]``."""
    return [int(x) for x in line.strip("() ").split(",")]


def bulk(p: Program, op: str, t: str, pairs, label: str, result: str = "") -> None:
    """``op`` on every pair at once, as one ``vector<Nxt>`` op, and on the first two pairs as
    scalars (the scalar and the vector lowerings are both exercised)."""
    result = result or t
    vt, rt = f"vector<{len(pairs)}x{t}>", with_element(f"vector<{len(pairs)}x{t}>",
                                                         element(result))
    a = p.value(vt, [x for x, _ in pairs])
    b = p.value(vt, [y for _, y in pairs])
    p.print(p.op(op.format(a=a, b=b, t=vt)), rt, f"{label} on {pairs}")
    for x, y in pairs[:2]:
        p.print(p.op(op.format(a=p.value(t, x), b=p.value(t, y), t=t)), result,
                f"{label}({x}, {y})")


# ---------------------------------------------------------------------------------------------
# integers

_DIVISIONS = ("divui", "divsi", "ceildivui", "ceildivsi", "floordivsi", "remui", "remsi")
_INT_OPS = ("addi", "subi", "muli", "andi", "ori", "xori", "maxsi", "maxui", "minsi",
            "minui") + _DIVISIONS


def _int_skip(op: str, t: str):
    lo = -(1 << (WIDTH[t] - 1))

    def skip(a, b):
        if op in _DIVISIONS and b == 0:
            return True
        return op in ("divsi", "ceildivsi", "floordivsi", "remsi") and a == lo and b == -1
    return skip


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_binary_ops_match_mlir_runner(t):
    p = Program()
    vals = int_values(t)
    for op in _INT_OPS:
        bulk(p, f"arith.{op} {{a}}, {{b}} : {{t}}", t, _pairs(vals, _int_skip(op, t)), op)
    out = assert_same_output(p, ["--arith-expand"])
    # and against Python's definitions
    w = WIDTH[t]
    mask = (1 << w) - 1

    def signed(x):
        x &= mask
        return x - (1 << w) if x >> (w - 1) else x

    def trunc_div(a, b):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    ref = {
        "addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
        "andi": lambda a, b: a & b, "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b,
        "maxsi": max, "minsi": min,
        "maxui": lambda a, b: a if a & mask >= b & mask else b,
        "minui": lambda a, b: a if a & mask <= b & mask else b,
        "divui": lambda a, b: (a & mask) // (b & mask),
        "ceildivui": lambda a, b: -(-(a & mask) // (b & mask)),
        "remui": lambda a, b: (a & mask) % (b & mask),
        "divsi": trunc_div, "ceildivsi": lambda a, b: -(-a // b),
        "floordivsi": lambda a, b: a // b, "remsi": lambda a, b: a - b * trunc_div(a, b),
    }
    for k, op in enumerate(_INT_OPS):
        pairs = _pairs(vals, _int_skip(op, t))
        got = parse_vector(out[3 * k])       # (index prints unsigned)
        assert [signed(g) for g in got] == [signed(ref[op](a, b)) for a, b in pairs], op


@pytest.mark.parametrize("t", INT_TYPES)
def test_shifts_by_up_to_width_minus_one(t):
    p = Program()
    for op in ("shli", "shrui", "shrsi"):
        for a in int_values(t):
            for s in shift_amounts(t):
                r = p.op(f"arith.{op} {p.value(t, a)}, {p.value(t, s)} : {t}")
                p.print(r, t, f"{op}({a}, {s})")
        vt = f"vector<4x{t}>"
        r = p.op(f"arith.{op} {p.value(vt, int_values(t)[:4])}, "
                 f"{p.value(vt, shift_amounts(t))} : {vt}")
        p.print(r, vt, f"{op} vector")
    assert_same_output(p)


@pytest.mark.parametrize("t", INT_TYPES)
def test_extended_ops(t):
    """addui_extended, mulsi_extended, mului_extended against Python's arbitrary-precision
    integers, and against mlir-runner-22 (which cannot lower them on index: 'llvm.extractvalue'
    op result #0 must be LLVM dialect-compatible type, but got 'index')."""
    p = Program()
    w = WIDTH[t]
    mask = (1 << w) - 1
    pairs = _pairs(int_values(t))
    vt = f"vector<{len(pairs)}x{t}>"
    a = p.value(vt, [x for x, _ in pairs])
    b = p.value(vt, [y for _, y in pairs])
    s = p.op(f"arith.addui_extended {a}, {b} : {vt}, vector<{len(pairs)}xi1>", 2)
    p.print(s + "#0", vt, "sum")
    p.print(s + "#1", f"vector<{len(pairs)}xi1>", "overflow")
    for kind in ("mulsi", "mului"):
        m = p.op(f"arith.{kind}_extended {a}, {b} : {vt}", 2)
        p.print(m + "#0", vt, f"{kind}_extended low")
        p.print(m + "#1", vt, f"{kind}_extended high")
    for x, y in pairs[:3]:
        s = p.op(f"arith.addui_extended {p.value(t, x)}, {p.value(t, y)} : {t}, i1", 2)
        p.print(s + "#1", "i1", f"overflow({x}, {y})")
        m = p.op(f"arith.mulsi_extended {p.value(t, x)}, {p.value(t, y)} : {t}", 2)
        p.print(m + "#1", t, f"high({x}, {y})")
    out = run_polyopt(p.text()).splitlines() if t == "index" else assert_same_output(p)
    got = [[g & mask for g in parse_vector(line)] for line in out[:6]]
    assert got[0] == [(x + y) & mask for x, y in pairs]
    assert got[1] == [int((x & mask) + (y & mask) > mask) for x, y in pairs]
    assert got[2] == [(x * y) & mask for x, y in pairs]
    assert got[3] == [((x * y) >> w) & mask for x, y in pairs]
    assert got[4] == [((x & mask) * (y & mask)) & mask for x, y in pairs]
    assert got[5] == [(((x & mask) * (y & mask)) >> w) & mask for x, y in pairs]
    x, y = pairs[0]
    assert int(out[6]) == int((x & mask) + (y & mask) > mask)
    assert int(out[7]) & mask == ((x * y) >> w) & mask


def test_i1_arithmetic_and_overflow_flags():
    """i1 is an integer too; nsw/nuw/exact flags on operations that do not overflow or lose
    bits give the plain results."""
    p = Program()
    for op in ("addi", "subi", "muli", "andi", "ori", "xori", "maxsi", "minui"):
        for a in (0, 1):
            for b in (0, 1):
                r = p.op(f"arith.{op} {p.value('i1', a)}, {p.value('i1', b)} : i1")
                p.print(r, "i1", f"{op}({a}, {b}) : i1")
    r = p.op(f"arith.addi {p.value('i32', 5)}, {p.value('i32', 7)} overflow<nsw, nuw> : i32")
    p.print(r, "i32", "addi nsw nuw")
    r = p.op(f"arith.shli {p.value('i32', 5)}, {p.value('i32', 3)} overflow<nsw> : i32")
    p.print(r, "i32", "shli nsw")
    r = p.op(f"arith.divsi {p.value('i32', -12)}, {p.value('i32', 4)} exact : i32")
    p.print(r, "i32", "divsi exact")
    r = p.op(f"arith.shrui {p.value('i32', 160)}, {p.value('i32', 3)} exact : i32")
    p.print(r, "i32", "shrui exact")
    r = p.op(f"arith.trunci {p.value('i32', 100)} overflow<nsw, nuw> : i32 to i8")
    p.print(r, "i8", "trunci nsw nuw")
    out = assert_same_output(p)
    assert out[-5:] == ["12", "40", "-3", "20", "100"]


def test_integer_ops_on_2d_vectors():
    p = Program()
    t = "vector<2x3xi16>"
    a = p.value(t, "dense<[[1, -2, 300], [-32768, 7, 9]]>")
    b = p.value(t, "dense<[[5, 3, -7], [-3, 2, 4]]>")   # no INT_MIN / -1 (undefined)
    n = p.value(t, "dense<[[1, 0, 3], [15, 2, 4]]>")     # shift amounts below the width
    for op in ("addi", "muli", "remsi", "floordivsi", "maxui"):
        p.print(p.op(f"arith.{op} {a}, {b} : {t}"), t, op)
    for op in ("shli", "shrsi", "shrui"):
        p.print(p.op(f"arith.{op} {a}, {n} : {t}"), t, op)
    assert_same_output(p, ["--arith-expand"])


def test_extended_ops_on_2d_vectors():
    """(mlir-opt-22 cannot lower these on 2-D vectors: checked against Python)"""
    p = Program()
    t = "vector<2x2xi8>"
    a = p.value(t, "dense<[[-128, 127], [100, -1]]>")
    b = p.value(t, "dense<[[-1, 2], [100, -1]]>")
    ov = p.op(f"arith.addui_extended {a}, {b} : {t}, vector<2x2xi1>", 2)
    p.print(ov + "#0", t, "sum")
    p.print(ov + "#1", "vector<2x2xi1>", "overflow")
    hi = p.op(f"arith.mulsi_extended {a}, {b} : {t}", 2)
    p.print(hi + "#1", t, "high")
    hu = p.op(f"arith.mului_extended {a}, {b} : {t}", 2)
    p.print(hu + "#1", t, "high unsigned")
    A, B = [[-128, 127], [100, -1]], [[-1, 2], [100, -1]]

    def i8(x):
        return (x & 255) - 256 if x & 128 else x & 255

    def show(f):
        return "( " + ", ".join("( " + ", ".join(str(f(x, y)) for x, y in zip(ra, rb)) + " )"
                                for ra, rb in zip(A, B)) + " )"
    assert run_polyopt(p.text()).splitlines() == [
        show(lambda x, y: i8(x + y)), show(lambda x, y: int((x & 255) + (y & 255) > 255)),
        show(lambda x, y: i8((x * y) >> 8)), show(lambda x, y: i8(((x & 255) * (y & 255)) >> 8))]


# ---------------------------------------------------------------------------------------------
# floats

FLOAT_VALUES = {
    "f16": ["0x7E00", "-0.0", "0.0", "0x7C00", "0xFC00", "1.5", "-2.25", "6.0e4", "1.0e-3",
            "3.0"],
    "bf16": ["0x7FC0", "-0.0", "0.0", "0x7F80", "0xFF80", "1.5", "-2.25", "3.0e3", "1.0e-3",
             "3.0"],
    "f32": ["0x7FC00000", "-0.0", "0.0", "0x7F800000", "0xFF800000", "1.5", "-2.25", "3.0e38",
            "1.0e-40", "0.1"],
    "f64": ["0x7FF8000000000000", "-0.0", "0.0", "0x7FF0000000000000", "0xFFF0000000000000",
            "1.5", "-2.25", "1.0e300", "5.0e-324", "0.1"],
}
_FLOAT_OPS = ("addf", "subf", "mulf", "divf", "remf", "maximumf", "maxnumf", "minimumf",
              "minnumf")
_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _float_literal_value(lit: str, t: str) -> float:
    fmt = ff.format_of(_type(t))
    if lit.startswith("0x"):
        return ff.from_bits(int(lit, 16), fmt)
    return ff.round_to(float(lit), fmt)


def _type(t: str):
    from polyopt.affine.types import FloatType
    return FloatType(16, brain=True) if t == "bf16" else FloatType(int(t[1:]))


def _unspecified(op: str):
    """maxnumf/minnumf of +0 and -0 may return either (LLVM's maxnum/minnum)."""
    def skip(a, b):
        return op in ("maxnumf", "minnumf") and {a, b} == {"0.0", "-0.0"}
    return skip


@pytest.mark.parametrize("t", FLOATS)
def test_float_binary_ops_match_mlir_runner_and_numpy(t):
    p = Program()
    vals = FLOAT_VALUES[t]
    for op in _FLOAT_OPS:
        bulk(p, f"arith.{op} {{a}}, {{b}} : {{t}}", t, _pairs(vals, _unspecified(op)), op)
    bulk(p, "arith.negf {a} : {t}", t, [(v, v) for v in vals], "negf")
    out = assert_same_output(p)
    if t not in _NP:
        return
    # numpy: IEEE arithmetic (float16 too: computed in float32, rounded once); fmod for remf;
    # maximum/minimum propagate NaN, fmax/fmin ignore it
    npt = _NP[t]
    fmt = ff.format_of(_type(t))
    np_ops = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
              "remf": np.fmod, "maximumf": np.maximum, "minimumf": np.minimum,
              "maxnumf": np.fmax, "minnumf": np.fmin}
    with np.errstate(all="ignore"):
        for k, op in enumerate(_FLOAT_OPS):
            pairs = _pairs(vals, _unspecified(op))
            got = [ff.from_bits(g, fmt) for g in parse_vector(out[3 * k])]
            for (a, b), g in zip(pairs, got):
                x, y = npt(_float_literal_value(a, t)), npt(_float_literal_value(b, t))
                want = float(np_ops[op](x, y))
                if math.isnan(want):
                    assert math.isnan(g), (op, a, b, g)
                elif x == y == 0 and op in ("maximumf", "minimumf"):
                    # numpy returns either zero; MLIR orders -0 < +0
                    neg = (math.copysign(1, x) < 0) + (math.copysign(1, y) < 0)
                    assert g == 0 and (math.copysign(1, g) < 0) == \
                        (neg == 2 if op == "maximumf" else neg >= 1), (op, a, b)
                else:
                    assert g == want and math.copysign(1, g) == math.copysign(1, want), \
                        (op, a, b, g, want)


def test_maximumf_and_maxnumf_on_nan_and_signed_zeros():
    """Against the ops' definitions: maximumf/minimumf give NaN if either operand is NaN and
    order -0 < +0; maxnumf/minnumf give the other operand when one is NaN, and either zero."""
    p = Program()
    cases = [("0x7FC00000", "1.0"), ("1.0", "0x7FC00000"), ("-0.0", "0.0"), ("0.0", "-0.0")]
    for op in ("maximumf", "minimumf", "maxnumf", "minnumf"):
        for a, b in cases:
            p.print(p.op(f"arith.{op} {p.value('f32', a)}, {p.value('f32', b)} : f32"), "f32",
                    f"{op}({a}, {b})")
    text = p.text()
    out = [ff.from_bits(int(x), ff.F32) for x in run_polyopt(text).splitlines()]
    mx, mn, mxn, mnn = out[0:4], out[4:8], out[8:12], out[12:16]
    assert math.isnan(mx[0]) and math.isnan(mx[1]) and math.isnan(mn[0]) and math.isnan(mn[1])
    assert [math.copysign(1, v) for v in mx[2:]] == [1, 1]
    assert [math.copysign(1, v) for v in mn[2:]] == [-1, -1]
    assert mxn[:2] == [1.0, 1.0] and mnn[:2] == [1.0, 1.0]
    assert all(v == 0.0 for v in mxn[2:] + mnn[2:])


def test_float_ops_on_2d_vectors_and_fastmath_flags():
    p = Program()
    for t in ("f16", "bf16", "f32"):
        vt = f"vector<2x2x{t}>"
        a = p.value(vt, "dense<[[1.5, -2.0], [0.25, 3.0]]>")
        b = p.value(vt, "dense<[[0.5, 4.0], [-8.0, 3.0]]>")
        for op in ("addf", "mulf", "divf", "maximumf"):
            p.print(p.op(f"arith.{op} {a}, {b} fastmath<nnan> : {vt}"), vt, f"{op} {vt}")
        p.print(p.op(f"arith.negf {a} fastmath<fast> : {vt}"), vt, f"negf {vt}")
    assert_same_output(p)


# ---------------------------------------------------------------------------------------------
# comparisons and select


def test_cmpf_all_predicates_and_cmpi_all_predicates():
    from polyopt.affine.dialects.arith import CMPF_PREDICATES, CMPI_PREDICATES
    p = Program()
    fvals = {"f16": ["0x7E00", "-0.0", "0.0", "1.5", "-2.25", "0x7C00"],
             "bf16": ["0x7FC0", "-0.0", "0.0", "1.5", "-2.25", "0x7F80"],
             "f32": ["0x7FC00000", "-0.0", "0.0", "1.5", "-2.25", "0x7F800000"],
             "f64": ["0x7FF8000000000000", "-0.0", "0.0", "1.5", "-2.25",
                     "0x7FF0000000000000"]}
    for t, vals in fvals.items():
        for pred in CMPF_PREDICATES:
            bulk(p, f"arith.cmpf {pred}, {{a}}, {{b}} : {{t}}", t, _pairs(vals), f"cmpf {pred}",
                 "i1")
    for t in INT_TYPES:
        for pred in CMPI_PREDICATES:
            bulk(p, f"arith.cmpi {pred}, {{a}}, {{b}} : {{t}}", t,
                 _pairs([-1, 0, 5, -(1 << (WIDTH[t] - 1))]), f"cmpi {pred}", "i1")
    out = assert_same_output(p)
    # against IEEE: o* false on NaN, u* true; eq/lt on the f32 values
    ieee = {"oeq": lambda x, y: x == y, "olt": lambda x, y: x < y,
            "ueq": lambda x, y: x == y or math.isnan(x) or math.isnan(y),
            "une": lambda x, y: not x == y, "ord": lambda x, y: not (math.isnan(x) or
                                                                      math.isnan(y)),
            "false": lambda x, y: False, "true": lambda x, y: True}
    pairs = _pairs([_float_literal_value(v, "f32") for v in fvals["f32"]])
    base = 3 * len(CMPF_PREDICATES) * 2      # after f16 and bf16
    for k, pred in enumerate(CMPF_PREDICATES):
        if pred in ieee:
            assert parse_vector(out[base + 3 * k]) == [int(ieee[pred](x, y)) for x, y in pairs]


def test_select_scalars_vectors_and_masks():
    p = Program()
    for t in ("i1", "i8", "index", "f16", "bf16", "f64"):
        a = p.value(t, "1" if t in ("i1",) else "3" if t[0] != "f" and t != "bf16" else "1.5")
        b = p.value(t, "0" if t in ("i1",) else "-4" if t[0] != "f" and t != "bf16" else "-0.0")
        for c in ("true", "false"):
            p.print(p.op(f"arith.select {p.value('i1', c)}, {a}, {b} : {t}"), t, f"select {t}")
        vt = f"vector<4x{t}>"
        va, vb = p.op(f"vector.broadcast {a} : {t} to {vt}"), p.op(f"vector.broadcast {b} : {t} "
                                                                     f"to {vt}")
        mask = p.value("vector<4xi1>", "dense<[true, false, false, true]>")
        p.print(p.op(f"arith.select {mask}, {va}, {vb} : vector<4xi1>, {vt}"), vt, "mask")
        p.print(p.op(f"arith.select {p.value('i1', 'false')}, {va}, {vb} : {vt}"), vt, "whole")
    assert_same_output(p)


# ---------------------------------------------------------------------------------------------
# casts

_CAST_INTS = {"i8": [-128, 127, -1, 5], "i16": [-32768, 32767, -3, 300],
              "i32": [-2147483648, 2147483647, -7, 65536],
              "i64": [-(1 << 63), (1 << 63) - 1, -9, 1 << 40]}


def test_integer_casts():
    p = Program()
    names = list(_CAST_INTS)
    for s in names:
        for d in names:
            for v in _CAST_INTS[s]:
                if WIDTH[d] > WIDTH[s]:
                    for op in ("extsi", "extui"):
                        p.print(p.op(f"arith.{op} {p.value(s, v)} : {s} to {d}"), d, f"{op}")
                elif WIDTH[d] < WIDTH[s]:
                    p.print(p.op(f"arith.trunci {p.value(s, v)} : {s} to {d}"), d, "trunci")
        for v in _CAST_INTS[s]:
            x = p.value(s, v)
            for op in ("index_cast", "index_castui"):
                n = p.op(f"arith.{op} {x} : {s} to index")
                p.print(n, "index", op)
                p.print(p.op(f"arith.{op} {n} : index to {s}"), s, op + " back")
    for v in (0, 1):
        x = p.value("i1", v)
        p.print(p.op(f"arith.extsi {x} : i1 to i32"), "i32", "extsi i1")
        p.print(p.op(f"arith.extui {x} : i1 to i64"), "i64", "extui i1")
        p.print(p.op(f"arith.index_castui {x} : i1 to index"), "index", "index_castui i1")
    vt = "vector<4xi16>"
    x = p.value(vt, _CAST_INTS["i16"])
    p.print(p.op(f"arith.extsi {x} : {vt} to vector<4xi64>"), "vector<4xi64>", "vector extsi")
    p.print(p.op(f"arith.trunci {x} : {vt} to vector<4xi8>"), "vector<4xi8>", "vector trunci")
    p.print(p.op(f"arith.index_castui {x} : {vt} to vector<4xindex>"), "vector<4xindex>", "vec")
    assert_same_output(p)


_INT_TO_FLOAT = {"i8": [-128, 127, -1, 0], "i16": [-32768, 32767, 2049, -4097],
                 "i32": [-2147483648, 2147483647, 16777217, -65505],
                 "i64": [-(1 << 63), (1 << 63) - 1, (1 << 53) + 1, 12345]}


def test_int_to_float_and_float_to_int():
    """sitofp/uitofp to every float type (to bf16 only from integers that f32 holds exactly:
    see test_arith_exact for the others; out-of-range results are infinities); fptosi/fptoui of
    every float type to every width, on values whose truncation is in range (others are
    poison in LLVM and MLIR: see test_out_of_range_fptosi_runs)."""
    p = Program()
    for s, vals in _INT_TO_FLOAT.items():
        for d in FLOATS:
            for v in vals:
                for op in ("sitofp", "uitofp"):
                    u = v & ((1 << WIDTH[s]) - 1) if op == "uitofp" else v
                    if d == "bf16" and abs(u) > (1 << 24) and u & (u - 1) and -u & (-u - 1):
                        continue
                    p.print(p.op(f"arith.{op} {p.value(s, v)} : {s} to {d}"), d, f"{op} {s}->{d}")
    flt = {"f16": ["1.5", "-2.75", "6.0e4", "-6.0e4", "-0.0", "254.9"],
           "bf16": ["1.5", "-2.75", "3.0e10", "-3.0e10", "-0.0", "254.9"],
           "f32": ["1.5", "-2.75", "3.0e10", "-3.0e10", "2.0e9", "-0.0", "127.99"],
           "f64": ["1.5", "-2.75", "1.0e18", "-9.2e18", "4.0e9", "-0.0", "32767.5"]}
    for s, vals in flt.items():
        for d in ("i8", "i16", "i32", "i64"):
            w = WIDTH[d]
            for v in vals:
                x = math.trunc(_float_literal_value(v, s))
                if -(1 << (w - 1)) <= x < (1 << (w - 1)):
                    p.print(p.op(f"arith.fptosi {p.value(s, v)} : {s} to {d}"), d, f"fptosi {v}")
                if 0 <= x < (1 << w):
                    p.print(p.op(f"arith.fptoui {p.value(s, v)} : {s} to {d}"), d, f"fptoui {v}")
    vt = "vector<4xi32>"
    x = p.value(vt, [-7, 100, 1 << 20, 3])
    for d in FLOATS:
        p.print(p.op(f"arith.sitofp {x} : {vt} to vector<4x{d}>"), f"vector<4x{d}>", "vector")
    y = p.value("vector<4xf32>", ["1.5", "-2.5", "1.0e5", "3.0e8"])
    p.print(p.op(f"arith.fptosi {y} : vector<4xf32> to {vt}"), vt, "vector fptosi")
    assert_same_output(p)


def test_out_of_range_fptosi_runs():
    """fptosi/fptoui of NaN, infinities and out-of-range values are poison (LLVM's fptosi, which
    MLIR lowers to): the program runs and gives some integer, no crash."""
    p = Program()
    for s, lits in (("f32", ["0x7FC00000", "0xFF800000", "3.0e10", "-1.0"]),
                    ("bf16", ["0x7FC0", "1.0e30"]), ("f16", ["0x7C00", "-6.0e4"])):
        for d in ("i8", "i32", "i64"):
            for lit in lits:
                for op in ("fptosi", "fptoui"):
                    p.print(p.op(f"arith.{op} {p.value(s, lit)} : {s} to {d}"), d, op)
    out = run_polyopt(p.text()).splitlines()
    assert len(out) == len(p.labels) and all(line.lstrip("-").isdigit() for line in out)


def test_float_extension_and_truncation_between_every_pair():
    p = Program()
    vals = {"f16": ["1.5", "-0.0", "6.55e4", "0x7E00", "0xFC00", "9.0e-8", "0.333"],
            "bf16": ["1.5", "-0.0", "3.0e38", "0x7FC0", "0xFF80", "1.0e-30", "0.333"],
            "f32": ["1.5", "-0.0", "7.0e4", "3.3e38", "0x7FC00000", "1.0e-7", "0.3333333",
                    "65520.0", "65519.99"],
            "f64": ["1.5", "-0.0", "1.0e300", "0x7FF8000000000000", "0xFFF0000000000000",
                    "3.0e-8", "0.333333333333", "1.0e-300", "0.100000001"]}
    order = ("f16", "f32", "f64")
    for s in FLOATS:
        for d in FLOATS:
            if s == d or {s, d} == {"f16", "bf16"}:
                continue
            wider = ("f16" in (s, d) and order.index(d) > order.index(s)) or \
                (s == "bf16" and d != "bf16") or (s == "f32" and d == "f64")
            op = "extf" if wider else "truncf"
            for v in vals[s]:
                p.print(p.op(f"arith.{op} {p.value(s, v)} : {s} to {d}"), d, f"{op} {s}->{d} {v}")
    vt = "vector<2x2xf32>"
    x = p.value(vt, "dense<[[1.5, 1.0e-3], [0.1, 7.0e4]]>")
    for d in ("f16", "bf16"):
        p.print(p.op(f"arith.truncf {x} : {vt} to vector<2x2x{d}>"), f"vector<2x2x{d}>", d)
    h = p.value("vector<3xf16>", ["1.5", "0x7E00", "-0.0"])
    p.print(p.op(f"arith.extf {h} : vector<3xf16> to vector<3xf64>"), "vector<3xf64>",
            "extf vector")
    assert_same_output(p)


def test_bitcasts_of_every_width():
    p = Program()
    for f, i, lit in (("f16", "i16", "-1.5"), ("bf16", "i16", "0x7FC1"), ("f32", "i32", "0.1"),
                      ("f64", "i64", "-0.0")):
        x = p.value(f, lit)
        n = p.op(f"arith.bitcast {x} : {f} to {i}")
        p.print(n, i, f"bitcast {f}")
        p.print(p.op(f"arith.bitcast {n} : {i} to {f}"), f, f"bitcast back {f}")
    x = p.value("f16", "3.0")
    p.print(p.op(f"arith.bitcast {x} : f16 to bf16"), "bf16", "f16 -> bf16")
    v = p.value("vector<2xi32>", [1065353216, -1])
    p.print(p.op(f"arith.bitcast {v} : vector<2xi32> to vector<2xf32>"), "vector<2xf32>", "vec")
    out = assert_same_output(p)
    f16_bits = ff.to_bits(-1.5, ff.F16)
    assert int(out[0]) == f16_bits - (1 << 16) and int(out[4]) == ff.to_bits(0.1, ff.F32)


def test_scaling_casts_match_arith_expand():
    p = Program()
    for x, s in (("1.5", "4.0"), ("-3.0", "0.3"), ("2.0", "1.0e-3"), ("0.1", "100.0")):
        xv, sv = p.value("f16", x), p.value("f16", s)
        p.print(p.op(f"arith.scaling_extf {xv}, {sv} : f16, f16 to f32"), "f32", "extf")
        sd = p.value("f64", s)
        p.print(p.op(f"arith.scaling_extf {p.value('bf16', x)}, {sd} : bf16, f64 to f64"), "f64",
                "extf bf16")
        xf = p.value("f32", x)
        p.print(p.op(f"arith.scaling_truncf {xf}, {p.value('f32', s)} : f32, f32 to f16"), "f16",
                "truncf")
    vx, vs = p.value("vector<2xf16>", ["1.5", "-2.0"]), p.value("vector<2xf32>", ["8.0", "0.5"])
    p.print(p.op(f"arith.scaling_extf {vx}, {vs} : vector<2xf16>, vector<2xf32> to "
                 "vector<2xf64>"), "vector<2xf64>", "vector")
    assert_same_output(p, ["--arith-expand=include-f8e8m0=true"])


# ---------------------------------------------------------------------------------------------
# constants


def test_constants_of_every_type_print_as_mlir_runner_prints_them():
    lines = ["func.func @main() {"]
    k = 0
    consts = [("1.5", "f16"), ("0x7E00", "f16"), ("-0.0", "f16"), ("6.1e-5", "f16"),
              ("0.1", "bf16"), ("-3.0e38", "bf16"), ("0xFF80", "bf16"), ("0.1", "f32"),
              ("1234567.0", "f32"), ("0x7FC00001", "f32"), ("0.1", "f64"), ("-1.0e-300", "f64"),
              ("true", "i1"), ("-5", "i8"), ("255", "i8"), ("-1", "index"),
              ("9223372036854775807", "i64"), ("-300", "i16")]
    for lit, t in consts:
        k += 1
        lines.append(f"  %c{k} = arith.constant {lit}" + ("" if t == "i1" else f" : {t}"))
        lines.append(f"  vector.print %c{k} : {t}")
    dense = [("dense<[1.5, -2.25, 0x7E00]>", "vector<3xf16>"),
             ("dense<[[1.0, 2.0], [3.0, 4.0]]>", "vector<2x2xbf16>"),
             ("dense<[true, false, true]>", "vector<3xi1>"), ("dense<-1>", "vector<2x2xindex>"),
             ("dense<[300, -300]>", "vector<2xi16>"), ("dense<0.1>", "vector<4xf32>"),
             ("dense<[[[1.0e-300]], [[2.0]]]>", "vector<2x1x1xf64>")]
    for lit, t in dense:
        k += 1
        lines.append(f"  %c{k} = arith.constant {lit} : {t}")
        lines.append(f"  vector.print %c{k} : {t}")
    text = "\n".join(lines) + "\n  return\n}\n"
    from arith_oracle import run_upstream
    ours = run_polyopt(text)
    assert ours == run_upstream(text)
    assert "( ( 1, 2 ), ( 3, 4 ) )" in ours and "nan" in ours


def test_vector_types_of_every_element_type_in_vector_ops():
    """broadcast, dense constants, reductions, print and load/store of vectors of i1, i8 ...
    i64, index, f16, bf16, f32, f64 (memrefs allocated inside; i1 memrefs are not mixed with
    scalar accesses: MLIR 22 stores vector<Nxi1> as packed bits but loads i1 as a byte)."""
    vals = {"i1": ["true", "false", "true"], "i8": [-128, 127, 5], "i16": [-300, 7, 32767],
            "i32": [-7, 100000, 3], "i64": [-9, 123456789012, 4], "index": [-1, 2, 3],
            "f16": ["1.5", "-2.25", "6.0e4"], "bf16": ["1.5", "-2.25", "3.0e38"],
            "f32": ["1.5", "-2.25", "1.0e-30"], "f64": ["1.5", "-2.25", "1.0e300"]}
    lines = ["func.func @main() {", "  %c0 = arith.constant 0 : index",
             "  %c1 = arith.constant 1 : index"]
    for t, v in vals.items():
        lines += [f"  %d_{t} = arith.constant dense<[{', '.join(map(str, v))}]> : vector<3x{t}>",
                  f"  vector.print %d_{t} : vector<3x{t}>",
                  f"  %m_{t} = memref.alloc() : memref<2x5x{t}>",
                  f"  vector.store %d_{t}, %m_{t}[%c1, %c1] : memref<2x5x{t}>, vector<3x{t}>",
                  f"  %l_{t} = vector.load %m_{t}[%c1, %c1] : memref<2x5x{t}>, vector<2x{t}>",
                  f"  vector.print %l_{t} : vector<2x{t}>"]
        if t != "i1":
            lines += [f"  %x_{t} = memref.load %m_{t}[%c1, %c2] : memref<2x5x{t}>".replace(
                "%c2", "%c1"),
                f"  %b_{t} = vector.broadcast %x_{t} : {t} to vector<2x3x{t}>",
                f"  vector.print %b_{t} : vector<2x3x{t}>"]
        if t in FLOATS:
            kinds = ["add", "mul", "minnumf", "maxnumf", "minimumf", "maximumf"]
        elif t == "i1":
            kinds = ["and", "or", "xor", "add", "mul", "minui", "maxsi"]
        else:
            kinds = ["add", "mul", "minsi", "maxsi", "minui", "maxui", "and", "or", "xor"]
        for kind in kinds:
            lines += [f"  %r_{t}_{kind} = vector.reduction <{kind}>, %d_{t} : vector<3x{t}> into "
                      f"{t}", f"  vector.print %r_{t}_{kind} : {t}"]
        if t != "i1":
            lines += [f"  %ra_{t} = vector.reduction <{kinds[0]}>, %d_{t}, %x_{t} : "
                      f"vector<3x{t}> into {t}", f"  vector.print %ra_{t} : {t}"]
        lines.append(f"  memref.dealloc %m_{t} : memref<2x5x{t}>")
    text = "\n".join(lines) + "\n  return\n}\n"
    from arith_oracle import run_upstream
    assert run_polyopt(text) == run_upstream(text)


def test_i1_vector_loads_and_stores_use_one_byte_per_element():
    import polyopt
    fns = polyopt.compile("""
func.func @f(%A: memref<3x5xi1>, %B: memref<3x5xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = vector.load %A[%c1, %c1] : memref<3x5xi1>, vector<3xi1>
  %w = vector.load %A[%c0, %c0] : memref<3x5xi1>, vector<2x4xi1>
  %n = arith.xori %v, %v : vector<3xi1>
  %t = arith.constant dense<true> : vector<3xi1>
  %x = arith.xori %v, %t : vector<3xi1>
  vector.store %x, %B[%c0, %c1] : memref<3x5xi1>, vector<3xi1>
  vector.store %w, %B[%c1, %c0] : memref<3x5xi1>, vector<2x4xi1>
  return
}
""")
    rng = np.random.default_rng(7)
    A = rng.integers(0, 2, (3, 5)).astype(bool)
    B = np.zeros((3, 5), dtype=bool)
    fns["f"](A, B)
    want = np.zeros((3, 5), dtype=bool)
    want[0, 1:4] = ~A[1, 1:4]
    want[1:3, 0:4] = A[0:2, 0:4]
    np.testing.assert_array_equal(B, want)
    assert B.view(np.uint8).max() <= 1    # one byte, 0 or 1, per element


def test_float_arithmetic_against_numpy_on_arrays():
    """f32/f64 ops through memref arguments (numpy arrays), rows not a multiple of the vector
    width; f16 arithmetic with f32 arrays converted inside."""
    import polyopt
    fns = polyopt.compile("""
func.func @f(%A: memref<37xf32>, %B: memref<37xf32>, %C: memref<37xf32>, %D: memref<37xf32>) {
  affine.for %i = 0 to 37 {
    %a = affine.load %A[%i] : memref<37xf32>
    %b = affine.load %B[%i] : memref<37xf32>
    %q = arith.divf %a, %b : f32
    %r = arith.remf %a, %b : f32
    affine.store %q, %C[%i] : memref<37xf32>
    %ah = arith.truncf %a : f32 to f16
    %bh = arith.truncf %b : f32 to f16
    %ph = arith.divf %ah, %bh : f16
    %sh = arith.subf %ph, %bh : f16
    %s = arith.extf %sh : f16 to f32
    %t = arith.addf %s, %r : f32
    affine.store %t, %D[%i] : memref<37xf32>
  }
  return
}
""")
    rng = np.random.default_rng(3)
    A = (rng.standard_normal(37) * 100).astype(np.float32)
    B = (rng.standard_normal(37) * 10).astype(np.float32)
    C, D = np.zeros(37, np.float32), np.zeros(37, np.float32)
    fns["f"](A, B, C, D)
    np.testing.assert_array_equal(C, A / B)
    ah, bh = A.astype(np.float16), B.astype(np.float16)
    want = ((ah / bh) - bh).astype(np.float32) + np.fmod(A, B)
    np.testing.assert_array_equal(D, want)


def test_casts_of_memrefs_reinterpret_the_buffer():
    """index_cast (i64 <-> index) and bitcast of memrefs view the same buffer with the other
    element type; elements of another size cannot be, and that is an error at the op."""
    import polyopt
    from polyopt.affine.diagnostics import CodegenError
    fns = polyopt.compile("""
func.func @f(%A: memref<3xi64>, %B: memref<3xf64>) {
  %c1 = arith.constant 1 : index
  %I = arith.index_cast %A : memref<3xi64> to memref<3xindex>
  %x = memref.load %I[%c1] : memref<3xindex>
  %y = arith.addi %x, %c1 : index
  memref.store %y, %I[%c1] : memref<3xindex>
  %F = arith.bitcast %A : memref<3xi64> to memref<3xf64>
  %f = memref.load %F[%c1] : memref<3xf64>
  memref.store %f, %B[%c1] : memref<3xf64>
  return
}
""")
    A = np.array([5, -7, 9], dtype=np.int64)
    B = np.zeros(3)
    fns["f"](A, B)
    assert A.tolist() == [5, -6, 9] and B.view(np.int64)[1] == -6
    with pytest.raises(CodegenError) as info:
        polyopt.compile("func.func @g(%A: memref<3xi32>) {\n"
                        "  %I = arith.index_cast %A : memref<3xi32> to memref<3xindex>\n"
                        "  return\n}\n")
    assert (info.value.loc.line, info.value.loc.col) == (2, 8)
    assert "store their elements in 4 and 8 bytes" in info.value.message


def test_printF16_and_printBF16_as_mlir_runner_prints_them():
    """CRunnerUtils' printF16/printBF16 take the bits (i16) and print the value as %g."""
    from arith_oracle import run_upstream
    text = """
func.func private @printF16(i16)
func.func private @printBF16(i16)
func.func private @printNewline()
func.func @main() {
  %h = arith.constant 0.1 : f16
  %hb = arith.bitcast %h : f16 to i16
  func.call @printF16(%hb) : (i16) -> ()
  func.call @printNewline() : () -> ()
  %m = arith.constant 0xFC00 : f16
  %mb = arith.bitcast %m : f16 to i16
  func.call @printF16(%mb) : (i16) -> ()
  func.call @printNewline() : () -> ()
  %b = arith.constant -1.5e10 : bf16
  %bb = arith.bitcast %b : bf16 to i16
  func.call @printBF16(%bb) : (i16) -> ()
  func.call @printNewline() : () -> ()
  %n = arith.constant 0xFFC1 : bf16
  %nb = arith.bitcast %n : bf16 to i16
  func.call @printBF16(%nb) : (i16) -> ()
  func.call @printNewline() : () -> ()
  return
}
"""
    out = run_polyopt(text)
    assert out == run_upstream(text)
    assert out.splitlines() == ["%g" % ff.round_to(0.1, ff.F16), "-inf",
                                "%g" % ff.round_to(-1.5e10, ff.BF16), "-nan"]


def test_integer_widths_llvm_lacks_are_errors_at_the_op():
    import polyopt
    from polyopt.affine.diagnostics import CodegenError
    with pytest.raises(CodegenError) as info:
        polyopt.compile("func.func @f() {\n  %0 = arith.constant 0 : i0\n  return\n}\n")
    assert (info.value.loc.line, info.value.loc.col) == (2, 8)
    assert "type 'i0' is not supported by the LLVM lowering" in info.value.message
