"""Issue 13, float constants of every float type (f16, bf16, f32, f64): polyopt reads decimal
literals correctly rounded into the type, and prints them exactly as mlir-opt-22 does
(APFloat's spellings: ``1.000000e+00``, ``0.123456789``, ``9.999999984816838E-316``,
``0x7FC00000``)."""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine import float_format as ff
from polyopt.affine.float_format import BF16, F16, F32, F64
from upstream_mlir import mlir_opt

FORMATS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}


def _nearest_bits(x: Fraction, fmt) -> int:
    """The oracle: the representable value nearest ``x`` (ties to even), by exact arithmetic
    over the neighbours of a first guess."""
    try:
        approx = float(x)
    except OverflowError:
        approx = math.inf if x > 0 else -math.inf
    guess = ff.to_bits(approx, fmt)          # within an ulp or two
    sign = guess >> (fmt.width - 1)
    mag = guess & ((1 << (fmt.width - 1)) - 1)
    inf = ((1 << fmt.exp_bits) - 1) << fmt.mant_bits
    best = None
    for m in range(max(mag - 2, 0), min(mag + 3, inf + 1)):
        v = ff.from_bits(m | (sign << (fmt.width - 1)), fmt)
        if math.isinf(v):
            # overflow: what rounds past the largest finite value by half an ulp or more
            top = ff.from_bits(inf - 1, fmt)
            half_ulp = Fraction(top) - Fraction(ff.from_bits(inf - 2, fmt))
            dist = abs(x) - (Fraction(top) + half_ulp / 2)
            key = (0 if dist >= 0 else math.inf, 0)
        else:
            key = (abs(Fraction(v) - x), m & 1)
        if best is None or key < best[0]:
            best = (key, m)
    return best[1] | (sign << (fmt.width - 1)) if x != 0 else guess


def _bits(text: str, type_name: str) -> int:
    """Read ``text : type`` through polyopt's parser; the constant's bit pattern."""
    module = polyopt.parse(f"func.func @f() {{\n  %c = arith.constant {text} : {type_name}\n"
                           "  return\n}\n")
    value = module.body.ops[0].body.ops[0].attributes["value"].value
    return ff.to_bits(value, FORMATS[type_name])


decimals = st.builds(
    lambda sign, digits, frac, exp: f"{sign}{digits}.{frac}e{exp}",
    st.sampled_from(["", "-"]), st.integers(0, 10**9).map(str),
    st.integers(0, 10**12).map(str), st.integers(-330, 310))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(text=decimals, type_name=st.sampled_from(sorted(FORMATS)))
def test_decimal_literals_are_correctly_rounded(text, type_name):
    fmt = FORMATS[type_name]
    expected = _nearest_bits(Fraction(text), fmt)
    got = _bits(text, type_name)
    if Fraction(text) == 0:
        assert got & ((1 << (fmt.width - 1)) - 1) == 0
    else:
        assert got == expected, (text, hex(got), hex(expected))


@settings(max_examples=400, derandomize=True, deadline=None)
@given(data=st.data(), type_name=st.sampled_from(sorted(FORMATS)))
def test_printed_floats_read_back_to_the_same_bits(data, type_name):
    fmt = FORMATS[type_name]
    bits = data.draw(st.integers(0, (1 << fmt.width) - 1))
    text = ff.format_float(ff.from_bits(bits, fmt), fmt)
    assert _bits(text, type_name) == bits, text


def test_prints_what_mlir_opt_prints_for_random_values():
    """600 random bit patterns and 400 random decimals in each type, printed by mlir-opt-22
    and by polyopt."""
    rng = random.Random(13)
    lines = []
    for type_name, fmt in FORMATS.items():
        for _ in range(150):
            bits = rng.getrandbits(fmt.width)
            lines.append(f"0x{bits:X} : {type_name}")
        for _ in range(100):
            digits = str(rng.randint(0, 10 ** rng.randint(1, 17)))
            exp = rng.randint(-45, 40) if fmt is not F64 else rng.randint(-320, 300)
            lines.append(f"{rng.choice(['', '-'])}{digits}.0e{exp} : {type_name}")
    # mlir-opt wants hex float literals without a sign: negative patterns are given as is
    body = "\n".join(f"  %c{k} = arith.constant {v}" for k, v in enumerate(lines))
    text = f"func.func @f() {{\n{body}\n  return\n}}\n"
    theirs = mlir_opt(text, timeout=120)
    ours = str(polyopt.parse(text))
    strip = lambda s: re.findall(r"arith.constant (\S+) : ", s)  # noqa: E731
    assert len(strip(ours)) == len(lines)
    assert strip(ours) == strip(theirs)


@pytest.mark.parametrize("value,fmt,text", [
    (0.1, F64, "1.000000e-01"), (0.123456789, F64, "0.123456789"),
    (1e-315, F64, "9.999999984816838E-316"), (123456789.0, F64, "0x419D6F3454000000"),
    (2 ** -11, F16, "4.882810e-04"), (2 ** -11, F64, "4.8828125E-4"),
    (math.inf, F16, "0x7C00"), (-0.0, F32, "-0.000000e+00"), (65504.0, F16, "6.550400e+04"),
])
def test_spellings(value, fmt, text):
    assert ff.format_float(value, fmt) == text


def test_nan_payloads_survive():
    for bits, fmt in ((0x7FC00001, F32), (0x7F800001, F32), (0xFFF8, F16), (0x7FC1, BF16),
                      (0x7FF0000000000001, F64)):
        value = ff.from_bits(bits, fmt)
        assert math.isnan(value) and ff.to_bits(value, fmt) == bits
        assert ff.format_float(value, fmt) == f"0x{bits:X}"


def test_huge_exponents_need_no_big_numbers():
    assert ff.parse_decimal("1.0e99999999999", F32) == math.inf
    assert ff.parse_decimal("-1.0e-99999999999", F16) == 0.0
    assert math.copysign(1, ff.parse_decimal("-1.0e-99999999999", F16)) == -1
    assert ff.parse_decimal("0." + "0" * 5000 + "1", F64) == 0.0


def test_thousands_of_significant_digits_round_correctly():
    """Found by the text fuzzer: 5001 digits passed Python's limit on int-from-text conversion.
    Past 800 digits only whether the rest is zero matters: 1 + 2^-53 is a tie (to even: 1.0),
    anything above it rounds up."""
    tie = "1.00000000000000011102230246251565404236316680908203125"
    assert ff.parse_decimal(tie, F64) == 1.0
    assert ff.parse_decimal(tie + "0" * 5000, F64) == 1.0
    assert ff.parse_decimal(tie + "0" * 5000 + "1", F64) == 1 + 2.0 ** -52
    assert ff.parse_decimal("1" + "0" * 5000 + "e-5000", F32) == 1.0
