"""The attributes of the arith dialect: the flag enums (``#arith.fastmath<...>``,
``#arith.overflow<...>``, ``truncf``'s rounding modes), printed canonically, and the value
attributes of constants (vector constants are ``DenseElementsAttr`` of kind ``vector``).

The flags' default ``none`` is never stored: an op without the attribute has no flags.
"""

from __future__ import annotations

import re
from typing import Optional

from .. import float_format
from ..attributes import (Attribute, DenseElementsAttr, FloatAttr, IntegerAttr, OpaqueAttr,
                          wrap_signed as _wrap_signed)
from ..ir import Operation
from ..types import (FloatType, IndexType, IntegerType, Type, VectorType, element_type_of)


def wrap_signed(value: int, t: Type) -> int:
    """``value`` as the signed integer of ``t``'s element width (i1: 0 or 1), as MLIR's APInt
    holds it; ``t`` may be a vector type."""
    return _wrap_signed(value, element_type_of(t))


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
        return DenseElementsAttr(tuple(t.shape), et, vals, "vector")
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
