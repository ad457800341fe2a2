"""IEEE binary formats (f16, bf16, f32, f64): bit patterns, exact rounding, and MLIR's spelling.

A float attribute keeps its value as a Python float.  Every finite value of these formats is
exactly a double, so nothing is lost; a NaN of a narrow format keeps its payload in the top bits
of the double's payload (the double of ``0x7C01 : f16`` is ``0x7FF0_0400_0000_0000``), which is
how :func:`to_bits` finds it again.

:func:`format_float` prints a value as MLIR's ``printFloatValue`` does: APFloat's
``toString(6, 0, false)`` (``1.000000e+00``) when that text parses back to the same value,
else APFloat's default ``toString()`` when it contains a ``.`` (``0.1234567``,
``3.40282347E+38``), else the bits in hex (``0x7FC00000``, and NaN and infinity always).
"""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction
from typing import NamedTuple, Union


class Format(NamedTuple):
    exp_bits: int
    mant_bits: int      # stored (trailing) significand bits

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.mant_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def precision(self) -> int:
        return self.mant_bits + 1


F16 = Format(5, 10)
BF16 = Format(8, 7)
F32 = Format(8, 23)
F64 = Format(11, 52)


def format_of(t) -> Format:
    """The binary format of an MLIR float type (``FloatType``)."""
    if t.width == 16:
        return BF16 if getattr(t, "brain", False) else F16
    return F32 if t.width == 32 else F64


def _double_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _double_from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b & (1 << 64) - 1))[0]


def round_fraction(value: Fraction, negative: bool, fmt: Format) -> int:
    """The bits of ``(-1)**negative * |value|`` rounded to nearest, ties to even, in ``fmt``
    (beyond the largest finite value: infinity)."""
    sign = (1 << (fmt.width - 1)) if negative else 0
    value = abs(value)
    if value == 0:
        return sign
    n, d = value.numerator, value.denominator
    # unbiased exponent of the leading bit, clamped to the subnormal range
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    emin = 1 - fmt.bias
    e = max(e, emin)
    shift = fmt.mant_bits - e             # significand = value * 2**shift
    num, den = (n << shift, d) if shift >= 0 else (n, d << -shift)
    q, r = divmod(num, den)
    if 2 * r > den or 2 * r == den and q & 1:
        q += 1
    if q >> fmt.precision:                # rounding carried into the next binade
        q >>= 1
        e += 1
    if e > fmt.bias:
        return sign | (((1 << fmt.exp_bits) - 1) << fmt.mant_bits)
    if q >> fmt.mant_bits == 0:           # subnormal (or zero)
        return sign | q
    return sign | ((e + fmt.bias) << fmt.mant_bits) | (q & ((1 << fmt.mant_bits) - 1))


def to_bits(value: float, fmt: Format) -> int:
    """The bits of ``value`` in ``fmt``, rounded to nearest even if it is not exact; a NaN keeps
    its sign and the top bits of its payload (a payload that would be empty becomes quiet)."""
    if fmt == F64:
        return _double_bits(value)
    db = _double_bits(value)
    sign = (db >> 63) << (fmt.width - 1)
    inf = ((1 << fmt.exp_bits) - 1) << fmt.mant_bits
    if math.isnan(value):
        payload = (db & ((1 << 52) - 1)) >> (52 - fmt.mant_bits)
        return sign | inf | (payload or 1 << (fmt.mant_bits - 1))
    if math.isinf(value):
        return sign | inf
    return round_fraction(Fraction(abs(value)), value < 0 or sign != 0, fmt)


def from_bits(bits: int, fmt: Format) -> float:
    """The value of ``bits`` in ``fmt`` (NaN payloads carried as described above)."""
    if fmt == F64:
        return _double_from_bits(bits)
    bits &= (1 << fmt.width) - 1
    negative = bits >> (fmt.width - 1)
    e = (bits >> fmt.mant_bits) & ((1 << fmt.exp_bits) - 1)
    m = bits & ((1 << fmt.mant_bits) - 1)
    if e == (1 << fmt.exp_bits) - 1:
        payload = m << (52 - fmt.mant_bits)
        return _double_from_bits((negative << 63) | (0x7FF << 52) | payload)
    if e == 0:
        v = math.ldexp(m, 1 - fmt.bias - fmt.mant_bits)
    else:
        v = math.ldexp(m | (1 << fmt.mant_bits), e - fmt.bias - fmt.mant_bits)
    return -v if negative else v


def round_to(value: float, fmt: Format) -> float:
    """``value`` rounded to ``fmt`` (a double that the format represents exactly)."""
    return value if fmt == F64 else from_bits(to_bits(value, fmt), fmt)


_DECIMAL = re.compile(r"([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?")


def parse_decimal(text: str, fmt: Format) -> float:
    """A decimal literal rounded once, to nearest even, to ``fmt`` (as APFloat reads it).

    Exponents beyond any format's range (``1e99999999999``) give infinity or zero without
    building the exact rational, which would exhaust memory.
    """
    text = text.strip()
    negative = text.startswith("-")
    body = text.lstrip("+-")
    m = _DECIMAL.fullmatch(body)
    if m is None or not (m.group(1) or m.group(2)):
        raise ValueError(f"not a decimal float literal: {text!r}")
    digits = ((m.group(1) or "") + (m.group(2) or "")).lstrip("0")
    sign = -1.0 if negative else 1.0
    if not digits:
        return math.copysign(0.0, sign)
    exp_text = m.group(3) or "0"
    if len(exp_text.lstrip("+-0")) > 6:            # |exponent| >= 10**6: far out of range
        return math.copysign(0.0 if exp_text.startswith("-") else math.inf, sign)
    magnitude = len(digits) - len(m.group(2) or "") + int(exp_text)   # value < 10**magnitude
    if magnitude > 400:
        return sign * math.inf
    if magnitude < -400 - len(digits):
        return math.copysign(0.0, sign)
    exp10 = int(exp_text) - len(m.group(2) or "")
    if len(digits) > _MAX_DIGITS:
        # Beyond this many significant digits no format can tell two decimals apart except by
        # whether the rest is zero: keep a sticky digit for it (and stay under Python's limit
        # on int-from-text conversions)
        rest = digits[_MAX_DIGITS:]
        exp10 += len(rest) - 1
        digits = digits[:_MAX_DIGITS] + ("1" if rest.strip("0") else "0")
    mantissa = Fraction(int(digits))
    value = mantissa * 10 ** exp10 if exp10 >= 0 else mantissa / 10 ** -exp10
    return from_bits(round_fraction(value, negative, fmt), fmt)


_MAX_DIGITS = 800


# ---------------------------------------------------------------------------------------------
# APFloat::toString


def _adjust_digits(digits: list, exp: int, precision: int) -> int:
    """APFloat's ``AdjustToPrecision`` on a digit buffer (least significant first)."""
    n = len(digits)
    if n <= precision:
        return exp
    first = n - precision
    if digits[first - 1] < 5:
        while first < n and digits[first] == 0:
            first += 1
        del digits[:first]
        return exp + first
    for i in range(first, n):
        if digits[i] == 9:
            first += 1
        else:
            digits[i] += 1
            break
    if first == n:
        digits[:] = [1]
        return exp + first
    del digits[:first]
    return exp + first


def _to_string(negative: bool, exp: int, significand: int, sem_precision: int,
               precision: int, max_padding: int, truncate_zero: bool) -> str:
    out = "-" if negative else ""
    if not precision:
        precision = 2 + sem_precision * 59 // 196
    tz = (significand & -significand).bit_length() - 1
    exp += tz
    significand >>= tz
    if exp > 0:
        significand <<= exp
        exp = 0
    elif exp < 0:
        significand *= 5 ** (-exp)
    # AdjustToPrecision on the integer: drop decimal digits we cannot need
    bits = significand.bit_length()
    required = (precision * 196 + 58) // 59
    if bits > required:
        removable = (bits - required) * 59 // 196
        if removable:
            exp += removable
            significand //= 10 ** removable
    digits = []
    in_trail = True
    while significand:
        significand, d = divmod(significand, 10)
        if in_trail and not d:
            exp += 1
        else:
            digits.append(d)
            in_trail = False
    exp = _adjust_digits(digits, exp, precision)
    nd = len(digits)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or nd + exp > precision
    else:
        msd = exp + nd - 1
        scientific = False if msd >= 0 else -msd > max_padding
    text = "".join(str(d) for d in reversed(digits))
    if scientific:
        exp += nd - 1
        out += text[0] + "."
        if nd == 1 and truncate_zero:
            out += "0"
        else:
            out += text[1:]
        if not truncate_zero and precision > nd - 1:
            out += "0" * (precision - nd + 1)
        out += "E" if truncate_zero else "e"
        out += "+" if exp >= 0 else "-"
        e = str(abs(exp))
        if not truncate_zero and len(e) < 2:
            e = "0" + e
        return out + e
    if exp >= 0:
        return out + text + "0" * exp
    whole = exp + nd
    if whole > 0:
        return out + text[:whole] + "." + text[whole:]
    return out + "0." + "0" * (-whole) + text


def apfloat_to_string(value: float, fmt: Format, precision: int = 0, max_padding: int = 3,
                      truncate_zero: bool = True) -> str:
    """APFloat's ``toString(precision, max_padding, truncate_zero)`` of a finite value."""
    bits = to_bits(value, fmt)
    negative = bool(bits >> (fmt.width - 1))
    e = (bits >> fmt.mant_bits) & ((1 << fmt.exp_bits) - 1)
    m = bits & ((1 << fmt.mant_bits) - 1)
    if e == 0 and m == 0:
        out = "-" if negative else ""
        if not max_padding:
            if truncate_zero:
                return out + "0.0E+0"
            return out + "0.0" + "0" * max(0, precision - 1) + "e+00"
        return out + "0"
    if e == 0:
        exponent = 1 - fmt.bias
    else:
        exponent = e - fmt.bias
        m |= 1 << fmt.mant_bits
    return _to_string(negative, exponent - fmt.mant_bits, m, fmt.precision, precision,
                      max_padding, truncate_zero)


def format_float(value: float, fmt: Format) -> str:
    """MLIR's spelling of a float attribute's value (``printFloatValue``)."""
    bits = to_bits(value, fmt)
    if not (math.isnan(value) or math.isinf(value)):
        exact = from_bits(bits, fmt)
        text = apfloat_to_string(exact, fmt, 6, 0, False)
        if to_bits(parse_decimal(text, fmt), fmt) == bits:
            return text
        text = apfloat_to_string(exact, fmt)
        if "." in text:
            return text
    return "0x%X" % bits


def hex_float(text_bits: Union[int, str], fmt: Format) -> float:
    """The value of a hexadecimal float literal (``0x7FC00000 : f32``): its bits."""
    bits = int(text_bits, 16) if isinstance(text_bits, str) else text_bits
    return from_bits(bits, fmt)
