"""The attributes of the arith dialect: the flag enums (``#arith.fastmath<...>``,
``#arith.overflow<...>``, ``truncf``'s rounding modes), printed canonically, and the ``dense``
constants of vectors of every element type, with MLIR's literal rules.

The flags' default ``none`` is never stored: an op without the attribute has no flags.
"""

from __future__ import annotations

import re
from typing import Optional

from .. import float_format
from ..attributes import Attribute, FloatAttr, IntegerAttr, OpaqueAttr, format_float
from ..ir import Operation
from ..types import (FloatType, IndexType, IntegerType, Type, VectorType, element_type_of, i1)


def _int_width(t: Type) -> int:
    e = element_type_of(t)
    return 64 if isinstance(e, IndexType) else e.width


def wrap_signed(value: int, t: Type) -> int:
    """``value`` as the signed integer of ``t``'s width (i1: 0 or 1), as MLIR's APInt holds it."""
    width = _int_width(t)
    value &= (1 << width) - 1
    if width > 1 and value >> (width - 1):
        value -= 1 << width
    return value


# ---------------------------------------------------------------------------------------------
# Flag attributes

FASTMATH_FLAGS = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")
OVERFLOW_FLAGS = ("nsw", "nuw")
ROUNDING_MODES = ("to_nearest_even", "downward", "upward", "toward_zero", "to_nearest_away")


class _FlagsAttr(Attribute):
    """A bit-enum attribute (``#arith.fastmath<nnan,ninf>``), flags in MLIR's order."""

    PREFIX = ""
    FLAGS: tuple = ()
    ALL: Optional[str] = None      # keyword for every flag set (``fast``)
    SEPARATOR = ","
    ENUM = ""

    __slots__ = ("flags",)

    def __init__(self, flags=()):
        self.flags = frozenset(flags)

    def __eq__(self, other):
        return type(other) is type(self) and other.flags == self.flags

    def __hash__(self):
        return hash((type(self), self.flags))

    @property
    def is_none(self) -> bool:
        return not self.flags

    def keyword(self) -> str:
        if not self.flags:
            return "none"
        if self.ALL is not None and self.flags >= set(self.FLAGS):
            return self.ALL
        return self.SEPARATOR.join(f for f in self.FLAGS if f in self.flags)

    def __str__(self) -> str:
        return f"#{self.PREFIX}<{self.keyword()}>"

    @classmethod
    def from_keywords(cls, words) -> "_FlagsAttr":
        flags = set()
        for w in words:
            if w == cls.ALL:
                flags.update(cls.FLAGS)
            elif w in cls.FLAGS:
                flags.add(w)
            elif w != "none":
                raise ValueError(w)
        return cls(flags)

    @classmethod
    def choices(cls) -> str:
        return ", ".join(("none",) + cls.FLAGS + ((cls.ALL,) if cls.ALL else ()))

    @classmethod
    def parse_body(cls, p, op_name: str) -> "_FlagsAttr":
        """``<flag, ...>`` after the keyword (custom form)."""
        p.expect("<")
        words = []
        while True:
            p.skip_ws()
            at = p.pos
            word = p.optional_bare_id()
            if word is None or word not in cls.FLAGS + ("none", cls.ALL):
                raise p.error(f"custom op '{op_name}' expected {cls.ENUM} to be one of: "
                              f"{cls.choices()}", at)
            words.append(word)
            if not p.optional(","):
                break
        p.expect(">")
        return cls.from_keywords(words)

    @classmethod
    def from_attr(cls, attr) -> Optional["_FlagsAttr"]:
        """The attribute as parsed in generic form (``#arith.fastmath<...>`` kept as text)."""
        if isinstance(attr, cls):
            return attr
        text = str(attr) if isinstance(attr, OpaqueAttr) else ""
        m = re.fullmatch(r"#" + re.escape(cls.PREFIX) + r"\s*<(.*)>", text.strip(), re.S)
        if not m:
            return None
        try:
            return cls.from_keywords(w.strip() for w in m.group(1).split(","))
        except ValueError:
            return None


class FastMathAttr(_FlagsAttr):
    """``#arith.fastmath<...>`` (printed ``fastmath<nnan,ninf>`` after the operands)."""

    PREFIX = "arith.fastmath"
    FLAGS = FASTMATH_FLAGS
    ALL = "fast"
    ENUM = "::mlir::arith::FastMathFlags"
    __slots__ = ()


class OverflowAttr(_FlagsAttr):
    """``#arith.overflow<nsw, nuw>``."""

    PREFIX = "arith.overflow"
    FLAGS = OVERFLOW_FLAGS
    SEPARATOR = ", "
    ENUM = "::mlir::arith::IntegerOverflowFlags"
    __slots__ = ()


def parse_fastmath(p, attrs: dict, op_name: str) -> None:
    """``fastmath<...>`` after the operands (arith, math and vector ops share it); ``none`` is
    not stored (it is the default)."""
    if p.optional_keyword("fastmath"):
        fm = FastMathAttr.parse_body(p, op_name)
        if not fm.is_none:
            attrs["fastmath"] = fm


def print_fastmath(p, attrs: dict) -> None:
    fm = attrs.get("fastmath")
    if fm is None:
        return
    fm = FastMathAttr.from_attr(fm) or fm
    if isinstance(fm, FastMathAttr):
        if not fm.is_none:
            p.print(f" fastmath<{fm.keyword()}>")
    else:
        p.print(" " + str(fm)[len("#arith."):])


def normalize_flags(attrs: dict, key: str, cls, keep_none: bool = False) -> dict:
    """Generic form: turn ``key``'s textual ``#arith.<enum><...>`` into ``cls`` and drop the
    default ``none`` (unless ``keep_none``: an optional attribute given as ``none``)."""
    a = attrs.get(key)
    if a is None:
        return attrs
    flags = cls.from_attr(a)
    attrs = dict(attrs)
    if flags is None:
        return attrs        # left as is: verify_op reports it
    if flags.is_none and not keep_none:
        del attrs[key]
    else:
        attrs[key] = flags
    return attrs


def verify_flags(op: Operation, key: str, cls, what: str) -> None:
    a = op.attributes.get(key)
    if a is not None and not isinstance(a, cls):
        raise op.error(f"attribute '{key}' failed to satisfy constraint: {what}")


class DenseAttr(Attribute):
    """``dense<v> : vector<...>`` (a splat) or ``dense<[...]>``: the elements of a vector
    constant in row-major order (one value for a splat), ints for integer and index elements
    (as signed values of their width), floats for float ones."""

    __slots__ = ("type", "values")

    def __init__(self, type_: VectorType, values: tuple):
        self.type = type_
        values = tuple(values)
        if type_.element_type == IntegerType(0):
            # (MLIR never makes a splat of i0 elements: it prints dense<[0, 0]>)
            values = values * type_.num_elements if len(values) == 1 else values
        elif len(values) > 1 and all(_same_element(v, values[0], type_.element_type)
                                     for v in values[1:]):
            values = values[:1]
        self.values = values

    def __eq__(self, other):
        return isinstance(other, DenseAttr) and other.type == self.type and \
            len(other.values) == len(self.values) and \
            all(_same_element(a, b, self.type.element_type)
                for a, b in zip(self.values, other.values))

    def __hash__(self):
        return hash((self.type, len(self.values)))

    @property
    def is_splat(self) -> bool:
        return len(self.values) == 1

    def elements(self) -> tuple:
        """Every element, row-major (a splat expanded)."""
        if self.is_splat:
            return self.values * self.type.num_elements
        return self.values

    def _fmt(self, v) -> str:
        et = self.type.element_type
        if isinstance(et, FloatType):
            return format_float(v, et)
        if et == i1:
            return "true" if v else "false"
        return str(v)

    def _nested(self, values: tuple, shape: tuple) -> str:
        if not shape:
            return self._fmt(values[0])
        step = len(values) // shape[0]
        return "[" + ", ".join(self._nested(values[k * step:(k + 1) * step], shape[1:])
                               for k in range(shape[0])) + "]"

    def __str__(self) -> str:
        if self.is_splat:
            body = self._fmt(self.values[0])
        else:
            body = self._nested(self.values, tuple(self.type.shape))
        return f"dense<{body}> : {self.type}"


def _same_element(a, b, et: Type) -> bool:
    if isinstance(et, FloatType):
        fmt = float_format.format_of(et)
        return float_format.to_bits(a, fmt) == float_format.to_bits(b, fmt)
    return a == b


def _element_value(kind: str, text: str, value, et: Type, p, at: int):
    """One literal of a ``dense<...>`` of element type ``et`` (MLIR's checks and messages)."""
    if isinstance(et, FloatType):
        fmt = float_format.format_of(et)
        if kind == "bool":
            raise p.error("expected floating point literal", at)
        if kind == "int":
            if not text.startswith("0x"):
                raise p.error("unexpected decimal integer literal for a floating point value",
                              at)
            if value < 0:
                raise p.error("hexadecimal float literal should not have a leading minus", at)
            if value >> fmt.width:
                raise p.error("hexadecimal float constant out of range for type", at)
            return float_format.from_bits(value, fmt)
        return float_format.round_to(value, fmt)
    if kind == "float":
        raise p.error("expected integer elements, but parsed floating-point", at)
    if kind == "bool":
        value = int(value)
    width = _int_width(et)
    lo, hi = (-1, 1) if width == 1 else (0, 0) if width == 0 else \
        (-(1 << (width - 1)), (1 << width) - 1)
    if not lo <= value <= hi:
        raise p.error("integer constant out of range for type", at)
    return wrap_signed(value, et)


class _Literal(list):
    """A ``[...]`` of a dense literal, with the offset of its closing bracket."""

    end = 0


def parse_dense_vector(p) -> DenseAttr:
    """``dense<...> : vector<...>``: nested literals with MLIR's shape checks,
    ``true``/``false``, hexadecimal float bits."""
    p.skip_ws()
    start = p.pos
    p.expect_keyword("dense")
    p.expect("<")

    def element():
        p.skip_ws()
        if p.peek("["):
            items = _Literal(p.parse_comma_separated("[", "]", element))
            items.end = p.pos - 1      # where MLIR reports an inconsistent list
            return items
        at = p.pos
        if p.optional_keyword("true"):
            return ("bool", "true", True, at)
        if p.optional_keyword("false"):
            return ("bool", "false", False, at)
        m = re.compile(r"(-?)\s*(0x[0-9a-fA-F]+|[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?|[0-9]+)")\
            .match(p.text, p.pos)
        if not m:
            raise p.error(f"expected element literal of primitive type, found "
                          f"{p._describe_next()}")
        p.pos = m.end()
        digits = m.group(2)
        sign = -1 if m.group(1) else 1
        if "." in digits:
            return ("float", digits, sign * float(digits), at)
        return ("int", digits, sign * int(digits, 0), at)

    literal = None if p.peek(">") else element()
    p.expect(">")
    p.expect(":")
    p.skip_ws()
    tstart = p.pos
    t = p.parse_type()
    if not isinstance(t, VectorType):
        raise p.error(f"polyopt supports dense constants of vector type only, got '{t}'", tstart)

    def shape_of(lit) -> list:
        if isinstance(lit, tuple):
            return []
        inner = [shape_of(x) for x in lit]
        if any(i != inner[0] for i in inner[1:]):
            raise p.error("tensor literal is invalid; ranks are not consistent between elements",
                          lit.end)
        return [len(lit)] + (inner[0] if inner else [])

    def flat(lit) -> list:
        return [lit] if isinstance(lit, tuple) else [x for y in lit for x in flat(y)]

    dims = list(t.shape)
    shape = [0] if literal is None else shape_of(literal)
    leaves = [] if literal is None else flat(literal)
    if shape and shape != dims:
        raise p.error(f"inferred shape of elements literal ([{', '.join(map(str, shape))}]) does "
                      f"not match type ([{', '.join(map(str, dims))}])", start)
    values = tuple(_element_value(k, text, v, t.element_type, p, at) for k, text, v, at in leaves)
    return DenseAttr(t, values)


def make_value_attr(value, t: Type) -> Attribute:
    """The ``value`` attribute of a constant of type ``t`` (a splat for vectors)."""
    if isinstance(t, VectorType):
        vals = value if isinstance(value, (tuple, list)) else (value,)
        et = t.element_type
        if isinstance(et, FloatType):
            fmt = float_format.format_of(et)
            vals = tuple(float_format.round_to(float(v), fmt) for v in vals)
        else:
            vals = tuple(wrap_signed(int(v), et) for v in vals)
        return DenseAttr(t, vals)
    if isinstance(t, FloatType):
        return FloatAttr(float_format.round_to(float(value), float_format.format_of(t)), t)
    return IntegerAttr(wrap_signed(int(value), t), t)


def normalize_value_attr(a: Attribute) -> Attribute:
    """An integer as the signed value of its width, a float rounded to its type."""
    if isinstance(a, IntegerAttr) and isinstance(a.type, (IntegerType, IndexType)):
        return IntegerAttr(wrap_signed(a.value, a.type), a.type)
    if isinstance(a, FloatAttr) and isinstance(a.type, FloatType):
        return FloatAttr(float_format.round_to(a.value, float_format.format_of(a.type)), a.type)
    return a
