"""MLIR attributes: integers, floats, strings, arrays, affine maps and sets, types, symbols.

Attributes are frozen values.  ``to_str(map_name)`` prints them; ``map_name`` substitutes the
module's ``#map``/``#set`` aliases and defaults to inline ``affine_map<...>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from . import float_format
from .affine_expr import AffineMap, IntegerSet
from .types import FloatType, IndexType, IntegerType, TensorType, Type, VectorType, f64, i64


class Attribute:
    def to_str(self, map_name=None) -> str:
        return str(self)


@dataclass(frozen=True)
class IntegerAttr(Attribute):
    value: int
    type: Type = i64

    def __str__(self) -> str:
        if isinstance(self.type, IntegerType) and self.type.width == 1:
            return "true" if self.value else "false"
        return f"{self.value} : {self.type}"


def format_float(value: float, type_: Type = f64) -> str:
    """MLIR's float spelling (``printFloatValue``): ``1.000000e+00`` when that round-trips,
    else APFloat's shortest decimal, else the bits in hex (see :mod:`.float_format`)."""
    fmt = float_format.format_of(type_) if isinstance(type_, FloatType) else float_format.F64
    return float_format.format_float(value, fmt)


@dataclass(frozen=True)
class FloatAttr(Attribute):
    value: float
    type: Type = f64

    def __str__(self) -> str:
        return f"{format_float(self.value, self.type)} : {self.type}"


def encode_string(text: str) -> bytes:
    """The bytes of a string attribute: UTF-8, with the bytes the parser read from ``\\XX``
    escapes that are not UTF-8 kept as they were (surrogate escapes)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:        # a lone surrogate given through the Python API
        return text.encode("utf-8", "surrogatepass")


def escape_string(text: str) -> str:
    """``text`` as MLIR prints a string literal, quotes included (LLVM's printEscapedString:
    ``\\\\`` for a backslash, ``\\XX`` for a quote, a control character or any byte of a
    non-ASCII character: ``"caf\\C3\\A9"``)."""
    out = []
    for byte in encode_string(text):
        if byte == 0x5C:
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F and byte != 0x22:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        return escape_string(self.value)


@dataclass(frozen=True)
class UnitAttr(Attribute):
    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...]

    def to_str(self, map_name=None) -> str:
        return "[" + ", ".join(_array_element_str(e, map_name) for e in self.elements) + "]"

    def __str__(self) -> str:
        return self.to_str()


def _array_element_str(e: Attribute, map_name=None) -> str:
    """Inside ``[...]`` MLIR elides the default types: ``[1, 2.0]`` is ``[1 : i64, 2.0 : f64]``."""
    if isinstance(e, IntegerAttr) and e.type == i64:
        return str(e.value)
    if isinstance(e, FloatAttr) and e.type == f64:
        return format_float(e.value, f64)
    return e.to_str(map_name)


@dataclass(frozen=True)
class DenseArrayAttr(Attribute):
    """``array<i64: 1, 2>``."""

    element_type: Type
    values: tuple

    def __str__(self) -> str:
        if not self.values:
            return f"array<{self.element_type}>"
        return f"array<{self.element_type}: " + \
            ", ".join(_element_str(v, self.element_type) for v in self.values) + ">"


@dataclass(frozen=True)
class DenseElementsAttr(Attribute):
    """``dense<...>`` of a statically shaped tensor or vector type: ``dense<2> :
    tensor<2xi64>`` (linalg's ``strides``, ``memref.global`` initial values), ``dense<[1.0,
    2.0]> : vector<2xf32>`` (``arith.constant``).  Only the attribute is a tensor: tensor-typed
    values stay unsupported.

    ``data`` holds one value when every element is equal (a splat, as MLIR prints and stores
    it: ``dense<[1, 1]>`` is ``dense<1>``), else every element in row-major order: ints for
    integer and index elements (MLIR's signed view: ``255 : i8`` is ``-1``; ``i1`` as 0/1),
    floats for float elements (exact in the element type, see :mod:`.float_format`).
    ``values`` expands a splat; big splats (``dense<0.0> : tensor<1000000000xf32>``) should be
    read through ``is_splat`` and ``data``.
    """

    shape: tuple[int, ...]
    element_type: Type
    data: tuple
    kind: str = "tensor"        # "tensor" or "vector": the attribute's shaped type

    def __post_init__(self):
        data = tuple(self.data)
        if len(data) > 1 and _width(self.element_type) != 0 and \
                all(_same_bits(v, data[0]) for v in data[1:]):
            data = data[:1]
        object.__setattr__(self, "data", data)

    @classmethod
    def from_ints(cls, values, element_type: Type = i64) -> "DenseElementsAttr":
        """A 1-D ``tensor<N x element_type>`` of ``values``."""
        vals = tuple(int(v) for v in values)
        return cls((len(vals),), element_type, vals)

    @property
    def type(self) -> Type:
        if self.kind == "vector":
            return VectorType(tuple(self.shape), self.element_type)
        return TensorType(tuple(self.shape), self.element_type)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def is_splat(self) -> bool:
        return len(self.data) == 1

    @property
    def values(self) -> tuple:
        """Every element, in row-major order."""
        return self.data * self.num_elements if self.is_splat else self.data

    def _fmt(self, v) -> str:
        return _element_str(v, self.element_type)

    def _nested(self, values: tuple, shape: tuple[int, ...]) -> str:
        if not shape:
            return self._fmt(values[0])
        step = len(values) // shape[0] if shape[0] else 0
        return "[" + ", ".join(self._nested(values[k * step:(k + 1) * step], shape[1:])
                               for k in range(shape[0])) + "]"

    def to_str(self, map_name=None) -> str:
        if not self.data:
            body = ""
        elif self.is_splat and _width(self.element_type) == 0 and \
                1 < self.num_elements <= _MAX_EXPANDED_I0:
            # mlir-opt prints i0 splats element by element (but not billions of them)
            body = "0"
            for d in reversed(self.shape):
                body = "[" + ", ".join([body] * d) + "]"
        elif self.is_splat:
            body = self._fmt(self.data[0])
        else:
            body = self._nested(self.data, tuple(self.shape))
        return f"dense<{body}> : {self.type.to_str(map_name)}"

    def __str__(self) -> str:
        return self.to_str()


_MAX_EXPANDED_I0 = 1 << 16


def _element_str(v, et: Type) -> str:
    """An element of a dense or array attribute: ``1.500000e+00``, ``true``, ``-3``."""
    if isinstance(et, FloatType):
        return format_float(v, et)
    if isinstance(et, IntegerType) and et.width == 1:
        return "true" if v else "false"
    return str(v)


def _width(t: Type) -> int:
    return t.width if isinstance(t, (IntegerType, FloatType)) else 64


def _same_bits(a, b) -> bool:
    """Equal as MLIR compares elements (bit patterns: ``-0.0`` is not ``0.0``, a NaN is
    itself)."""
    if isinstance(a, float) or isinstance(b, float):
        return float_format.to_bits(float(a), float_format.F64) == \
            float_format.to_bits(float(b), float_format.F64)
    return a == b


@dataclass(frozen=True)
class AffineMapAttr(Attribute):
    value: AffineMap

    def to_str(self, map_name=None) -> str:
        return map_name(self.value) if map_name else f"affine_map<{self.value}>"

    def __str__(self) -> str:
        return self.to_str()


@dataclass(frozen=True)
class IntegerSetAttr(Attribute):
    value: IntegerSet

    def to_str(self, map_name=None) -> str:
        return map_name(self.value) if map_name else f"affine_set<{self.value}>"

    def __str__(self) -> str:
        return self.to_str()


@dataclass(frozen=True)
class TypeAttr(Attribute):
    value: Type

    def to_str(self, map_name=None) -> str:
        return self.value.to_str(map_name)

    def __str__(self) -> str:
        return self.to_str()


@dataclass(frozen=True)
class SymbolRefAttr(Attribute):
    name: str

    def __str__(self) -> str:
        import re
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", self.name):
            return f"@{self.name}"
        return "@" + escape_string(self.name)


@dataclass(frozen=True)
class OpaqueAttr(Attribute):
    """An attribute we keep as text (e.g. ``#arith.fastmath<none>``): printed back verbatim."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class LocationAttr(Attribute):
    """A location (``loc("a.mlir":3:7)``, ``loc(fused[...])``, ...) kept as the text between
    the parentheses: the value of a ``#loc = loc(...)`` alias, or an attribute of that kind.
    Locations of ops and arguments are dropped by the parser (as mlir-opt prints without
    ``--mlir-print-debuginfo``)."""

    text: str

    def __str__(self) -> str:
        return f"loc({self.text})"


@dataclass(frozen=True)
class DictAttr(Attribute):
    entries: tuple[tuple[str, Attribute], ...]

    def to_str(self, map_name=None) -> str:
        return "{" + ", ".join(format_named_attr(k, v, map_name) for k, v in self.entries) + "}"

    def __str__(self) -> str:
        return self.to_str()


def format_named_attr(name: str, attr: Attribute, map_name=None) -> str:
    import re
    key = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name) else escape_string(name)
    if isinstance(attr, UnitAttr):
        return key
    return f"{key} = {attr.to_str(map_name)}"


def wrap_signed(value: int, type_: Type) -> int:
    """An integer as MLIR keeps it in a value of ``type_`` (two's complement, shown signed):
    ``255`` in ``i8`` is -1; ``i1`` holds 0 or 1 (``-1 : i1`` is ``true``); index is 64-bit."""
    width = 64 if isinstance(type_, IndexType) else getattr(type_, "width", 64)
    if width == 0:
        return 0
    if width == 1:
        return value & 1
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def int_attr(value: int, type_: Optional[Type] = None) -> IntegerAttr:
    return IntegerAttr(value, type_ if type_ is not None else IndexType())
