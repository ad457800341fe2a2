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
from .types import FloatType, IndexType, IntegerType, Type, f64, i64


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


@dataclass(frozen=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'


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
        return f"array<{self.element_type}: " + ", ".join(str(v) for v in self.values) + ">"


@dataclass(frozen=True)
class DenseElementsAttr(Attribute):
    """``dense<2> : tensor<2xi64>``, ``dense<[1, 2]> : tensor<2xi64>``: the elements of a
    statically shaped tensor, as the attributes of linalg's convolutions (``strides``,
    ``dilations``) carry them.  Only the attribute exists: tensor-typed values stay unsupported.

    ``values`` holds every element in row-major order (ints for integer element types, floats
    for float ones); MLIR prints a tensor whose elements are all equal as a splat
    (``dense<[1, 1]>`` is printed ``dense<1>``), and so does ``str``.
    """

    shape: tuple[int, ...]
    element_type: Type
    values: tuple

    @classmethod
    def from_ints(cls, values, element_type: Type = i64) -> "DenseElementsAttr":
        """A 1-D ``tensor<N x element_type>`` of ``values``."""
        vals = tuple(int(v) for v in values)
        return cls((len(vals),), element_type, vals)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def is_splat(self) -> bool:
        return len(self.values) > 0 and all(v == self.values[0] for v in self.values)

    def _fmt(self, v) -> str:
        et = self.element_type
        if isinstance(et, FloatType):
            return format_float(v, et)
        if isinstance(et, IntegerType) and et.width == 1:
            return "true" if v else "false"
        return str(v)

    def _nested(self, values: tuple, shape: tuple[int, ...]) -> str:
        if not shape:
            return self._fmt(values[0])
        step = len(values) // shape[0] if shape[0] else 0
        return "[" + ", ".join(self._nested(values[k * step:(k + 1) * step], shape[1:])
                               for k in range(shape[0])) + "]"

    @property
    def type_str(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + f"{self.element_type}>"

    def __str__(self) -> str:
        if self.is_splat:
            body = self._fmt(self.values[0])
        elif not self.values:
            body = ""
        else:
            body = self._nested(self.values, self.shape)
        return f"dense<{body}> : {self.type_str}"


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
        return "@" + str(StringAttr(self.name))


@dataclass(frozen=True)
class OpaqueAttr(Attribute):
    """An attribute we keep as text (e.g. ``#arith.fastmath<none>``): printed back verbatim."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class DictAttr(Attribute):
    entries: tuple[tuple[str, Attribute], ...]

    def to_str(self, map_name=None) -> str:
        return "{" + ", ".join(format_named_attr(k, v, map_name) for k, v in self.entries) + "}"

    def __str__(self) -> str:
        return self.to_str()


def format_named_attr(name: str, attr: Attribute, map_name=None) -> str:
    import re
    key = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name) else str(StringAttr(name))
    if isinstance(attr, UnitAttr):
        return key
    return f"{key} = {attr.to_str(map_name)}"


def int_attr(value: int, type_: Optional[Type] = None) -> IntegerAttr:
    return IntegerAttr(value, type_ if type_ is not None else IndexType())
