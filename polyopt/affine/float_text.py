"""Float literals as MLIR reads and prints them, for f16, bf16, f32 and f64 (LLVM's APFloat).

A float attribute holds a Python float whose value is exactly representable in the attribute's
type (f16, bf16 and f32 values are exact in a double); a NaN keeps its payload in the top bits
of the double's significand, so that ``0x7FC00001 : f32`` prints back unchanged.

* :func:`round_decimal` reads a decimal literal into a type, correctly rounded (ties to even,
  overflow to infinity), as ``APFloat(semantics, text)`` does;
* :func:`from_bits` / :func:`to_bits` convert between a type's bit pattern (``0x7E00 : f16``)
  and that Python float;
* :func:`format_float` is MLIR's ``printFloatValue``: ``1.000000e+00`` when six decimals read
  back to the same value, else APFloat's shortest-round-trip text (``0.123456789``,
  ``9.999999984816838E-316``), else the bit pattern in hex (``0x7FC00000``, and integral
  values such as ``0x4996B438 : f32`` whose text would have no ``.``).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format: ``exponent_bits`` and ``mantissa_bits`` (stored fraction)."""

    exponent_bits: int
    mantissa_bits: int

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def precision(self) -> int:
        return self.mantissa_bits + 1

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def min_exponent(self) -> int:
        return 1 - self.bias


F16 = FloatFormat(5, 10)
BF16 = FloatFormat(8, 7)
F32 = FloatFormat(8, 23)
F64 = FloatFormat(11, 52)


def format_of(t) -> FloatFormat:
    """The binary format of a :class:`~polyopt.affine.types.FloatType` (f64 for anything else)."""
    width = getattr(t, "width", 64)
    if width == 16:
        return BF16 if getattr(t, "brain", False) else F16
    return F32 if width == 32 else F64


def _f64_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _f64_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def from_bits(bits: int, fmt: FloatFormat) -> float:
    """The value whose bit pattern in ``fmt`` is ``bits`` (``0 <= bits < 2**fmt.width``)."""
    if fmt == F64:
        return _f64_from_bits(bits)
    sign = bits >> (fmt.width - 1)
    exp = (bits >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    man = bits & ((1 << fmt.mantissa_bits) - 1)
    if exp == (1 << fmt.exponent_bits) - 1:
        if man == 0:
            return -math.inf if sign else math.inf
        # a NaN: the payload goes to the top of the double's significand
        return _f64_from_bits((sign << 63) | (0x7FF << 52) | (man << (52 - fmt.mantissa_bits)))
    if exp == 0:
        value = math.ldexp(man, fmt.min_exponent - fmt.mantissa_bits)
    else:
        value = math.ldexp(man | (1 << fmt.mantissa_bits), exp - fmt.bias - fmt.mantissa_bits)
    return -value if sign else value


def to_bits(value: float, fmt: FloatFormat) -> int:
    """``value``'s bit pattern in ``fmt``, rounded to nearest (ties to even) if not exact."""
    if fmt == F64:
        return _f64_bits(value)
    sign = 1 if math.copysign(1.0, value) < 0 else 0
    top = sign << (fmt.width - 1)
    inf = ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    if math.isnan(value):
        payload = (_f64_bits(value) & ((1 << 52) - 1)) >> (52 - fmt.mantissa_bits)
        return top | inf | (payload or 1 << (fmt.mantissa_bits - 1))
    if math.isinf(value):
        return top | inf
    mantissa, exponent = math.frexp(abs(value))       # value = mantissa * 2**exponent
    num = int(math.ldexp(mantissa, 53))               # exact: a double has 53 bits
    return top | _round_binary(num, exponent - 53, fmt)


def _round_binary(num: int, exp2: int, fmt: FloatFormat) -> int:
    """The (unsigned) bits of ``num * 2**exp2`` in ``fmt``, ties to even, overflow to inf;
    ``num >= 0`` is exact."""
    if num == 0:
        return 0
    # the exponent of the leading bit, then of the last bit the format keeps
    lead = num.bit_length() - 1 + exp2
    last = max(lead, fmt.min_exponent) - fmt.mantissa_bits
    shift = last - exp2
    if shift > 0:
        q, r = divmod(num, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or r == half and q & 1:
            q += 1
    else:
        q = num << -shift
    return _pack(q, last, fmt)


def _pack(q: int, last: int, fmt: FloatFormat) -> int:
    """Bits of ``q * 2**last`` where ``q`` fits the precision (or just overflowed it)."""
    if q >> fmt.precision:        # rounding carried into a new bit
        q >>= 1
        last += 1
    inf = ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    if q >> fmt.mantissa_bits == 0:                  # subnormal (last == min exp - mantissa)
        return q
    biased = last + fmt.mantissa_bits + fmt.bias
    if biased >= (1 << fmt.exponent_bits) - 1:
        return inf
    return (biased << fmt.mantissa_bits) | (q & ((1 << fmt.mantissa_bits) - 1))


_DECIMAL = re.compile(r"([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?")


def round_decimal(text: str, fmt: FloatFormat) -> float:
    """The value of the decimal literal ``text`` (``-1.5e3``) in ``fmt``, correctly rounded.

    Exponents beyond any format's range give zero or infinity without big-number arithmetic.
    """
    neg = text.startswith("-")
    body = text.lstrip("+-")
    m = _DECIMAL.fullmatch(body)
    if m is None or not (m.group(1) or m.group(2)):
        raise ValueError(f"not a decimal float literal: {text!r}")
    digits = ((m.group(1) or "") + (m.group(2) or "")).lstrip("0")
    exp_text = m.group(3) or "0"
    sign = -1.0 if neg else 1.0
    if not digits:
        return math.copysign(0.0, sign)
    exp10 = -len(m.group(2) or "")
    if len(exp_text.lstrip("+-0")) > 6:               # |exponent| >= 10**6: far out of range
        return sign * (math.inf if not exp_text.startswith("-") else 0.0)
    exp10 += int(exp_text)
    magnitude = len(digits) + exp10                   # value < 10**magnitude
    if magnitude > 400:
        return sign * math.inf
    if magnitude < -400:
        return math.copysign(0.0, sign)
    if fmt == F64:
        return sign * float(body)     # Python's conversion is correctly rounded
    # exact rational num / den, then rounded to the format
    digits = digits[:800]  # more digits than any format can tell apart (ties are exact below)
    exp10 = magnitude - len(digits)
    num, den = int(digits), 1
    if exp10 >= 0:
        num *= 10 ** exp10
    else:
        den = 10 ** -exp10
    # scale to an integer with enough bits, keeping a sticky bit for the remainder
    e2 = num.bit_length() - den.bit_length() - fmt.precision - 3
    if e2 >= 0:
        q, r = divmod(num, den << e2)
    else:
        q, r = divmod(num << -e2, den)
    q = (q << 1) | (1 if r else 0)   # sticky bit: never a false tie
    bits = _round_binary(q, e2 - 1, fmt)
    return math.copysign(from_bits(bits, fmt), sign)


# ---------------------------------------------------------------------------------------------
# printing: LLVM's APFloat::toString


def _decompose(value: float, fmt: FloatFormat) -> tuple[int, int]:
    """(significand, exponent) of a finite non-zero value: value = significand * 2**exponent."""
    mantissa, exponent = math.frexp(abs(value))
    num = int(math.ldexp(mantissa, 53))
    return num, exponent - 53


def _apfloat_digits(value: float, fmt: FloatFormat, precision: int) -> tuple[list[str], int]:
    """The decimal digits (most significant first) and exponent of ``value`` with at most
    ``precision`` significant digits, rounded half up on the exact expansion (APFloat's
    ``toStringImpl``/``AdjustToPrecision``)."""
    sig, exp = _decompose(value, fmt)
    tz = (sig & -sig).bit_length() - 1
    sig >>= tz
    exp += tz
    if exp >= 0:
        sig <<= exp
        exp = 0
    else:
        sig *= 5 ** -exp          # N * 2**-e == N * 5**e * 10**-e
    # drop decimal digits beyond what the precision needs (the integer's own adjustment)
    bits = sig.bit_length()
    required = (precision * 196 + 58) // 59
    if bits > required:
        removable = (bits - required) * 59 // 196
        if removable:
            exp += removable
            sig //= 10 ** removable
    buffer = str(sig).rstrip("0")
    exp += len(str(sig)) - len(buffer)
    buffer = list(reversed(buffer))      # least significant first, as APFloat keeps it
    n = len(buffer)
    if n > precision:
        first = n - precision
        if buffer[first - 1] < "5":
            while first < n and buffer[first] == "0":
                first += 1
            exp += first
            buffer = buffer[first:]
        else:
            i = first
            while i < n:
                if buffer[i] == "9":
                    first += 1
                    i += 1
                else:
                    buffer[i] = chr(ord(buffer[i]) + 1)
                    break
            if first == n:
                exp += first
                buffer = ["1"]
            else:
                exp += first
                buffer = buffer[first:]
    return list(reversed(buffer)), exp


def apfloat_to_string(value: float, fmt: FloatFormat, format_precision: int = 0,
                      max_padding: int = 3, truncate_zero: bool = True) -> str:
    """LLVM's ``APFloat::toString(Str, FormatPrecision, FormatMaxPadding, TruncateZero)`` for a
    finite value."""
    neg = math.copysign(1.0, value) < 0
    out = "-" if neg else ""
    if value == 0:
        if not max_padding:
            if truncate_zero:
                return out + "0.0E+0"
            return out + "0.0" + "0" * max(format_precision - 1, 0) + "e+00"
        return out + "0"
    if not format_precision:
        format_precision = 2 + fmt.precision * 59 // 196
    digits, exp = _apfloat_digits(value, fmt, format_precision)
    n = len(digits)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > format_precision
    else:
        msd = exp + n - 1
        scientific = msd < 0 and -msd > max_padding
    if scientific:
        exp += n - 1
        text = digits[0] + "."
        if n == 1 and truncate_zero:
            text += "0"
        else:
            text += "".join(digits[1:])
        if not truncate_zero and format_precision > n - 1:
            text += "0" * (format_precision - n + 1)
        text += "E" if truncate_zero else "e"
        text += "+" if exp >= 0 else "-"
        e = str(abs(exp))
        if not truncate_zero and len(e) < 2:
            e = "0" + e
        return out + text + e
    if exp >= 0:
        return out + "".join(digits) + "0" * exp
    whole = exp + n
    if whole > 0:
        return out + "".join(digits[:whole]) + "." + "".join(digits[whole:])
    return out + "0." + "0" * -whole + "".join(digits)


def format_float(value: float, fmt: FloatFormat) -> str:
    """MLIR's spelling of a float attribute's value (``printFloatValue``)."""
    bits = to_bits(value, fmt)
    value = from_bits(bits, fmt)          # the value the type holds
    if math.isfinite(value):
        text = apfloat_to_string(value, fmt, 6, 0, False)
        if to_bits(round_decimal(text, fmt), fmt) == bits:
            return text
        text = apfloat_to_string(value, fmt)
        if "." in text:
            return text
    return "0x%X" % bits
