"""MLIR builtin types: index, iN, fN, vector, memref, unranked memref, function, and tensor
(for the types of attributes only); and two dialect types, the ``amx`` dialect's
``!amx.tile<16x32xbf16>`` and the ``transform`` dialect's handles (``!transform.any_op``,
``!transform.op<"affine.for">``).

Types are frozen, hashable values; ``str(t)`` is the MLIR spelling (``memref<64x256xf64, #map>``
is printed by the module printer, which substitutes map aliases; ``str`` inlines the map).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

from .affine_expr import AffineMap


class Type:
    """Base of all types (MLIR's ``Type``)."""

    def to_str(self, map_name=None) -> str:  # map_name: AffineMap -> str, for aliases
        return str(self)

    @property
    def is_index(self) -> bool:
        return isinstance(self, IndexType)

    @property
    def is_integer(self) -> bool:
        return isinstance(self, IntegerType)

    @property
    def is_int_or_index(self) -> bool:
        return isinstance(self, (IntegerType, IndexType))

    @property
    def is_float(self) -> bool:
        return isinstance(self, FloatType)


@dataclass(frozen=True)
class IndexType(Type):
    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True)
class IntegerType(Type):
    width: int

    def __str__(self) -> str:
        return f"i{self.width}"


@dataclass(frozen=True)
class FloatType(Type):
    """``f16``, ``f32``, ``f64``, and ``bf16`` (``FloatType(16, brain=True)``: bfloat16, the
    8-bit-exponent 16-bit format; a different type from ``f16``)."""

    width: int  # 16, 32 or 64
    brain: bool = False

    def __str__(self) -> str:
        return "bf16" if self.brain else f"f{self.width}"


@dataclass(frozen=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True)
class VectorType(Type):
    """``vector<4xf64>``, ``vector<2x8xf32>``, 0-D ``vector<f32>`` (shape ``()``, one element);
    fixed-size only."""

    shape: tuple[int, ...]
    element_type: Type

    def __str__(self) -> str:
        return "vector<" + "".join(f"{d}x" for d in self.shape) + f"{self.element_type}>"

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class AMXTileType(Type):
    """``!amx.tile<16x32xbf16>``: the contents of one AMX tile register (MLIR's
    ``amx::TileType``), ``rows`` x ``cols`` elements of ``f32``, ``f16``, ``bf16``, ``i32`` or
    ``i8``.  The ops check the hardware's limits (16 rows of at most 64 bytes), not the type."""

    rows: int
    cols: int
    element_type: Type

    def __str__(self) -> str:
        return f"!amx.tile<{self.rows}x{self.cols}x{self.element_type}>"

    @property
    def row_bytes(self) -> int:
        return self.cols * bitwidth(self.element_type) // 8


@dataclass(frozen=True)
class TransformHandleType(Type):
    """``!transform.any_op`` (``op_name`` ``None``) or ``!transform.op<"affine.for">``: a
    transform script's handle to payload ops (MLIR's ``transform::AnyOpType`` and
    ``transform::OperationType``)."""

    op_name: Optional[str] = None

    def __str__(self) -> str:
        return "!transform.any_op" if self.op_name is None else f'!transform.op<"{self.op_name}">'


@dataclass(frozen=True)
class TensorType(Type):
    """``tensor<2x3xf32>``, ``tensor<?xi64>``, ``tensor<*xf32>`` (``shape`` ``None``): the type
    of ``dense<...>`` attributes (``memref.global`` initial values, linalg's ``strides``).

    polyopt's IR is memref-based: the parser takes tensor types in attributes only, and a
    tensor-typed value is refused where it is written."""

    shape: Optional[tuple[Optional[int], ...]]
    element_type: Type

    def to_str(self, map_name=None) -> str:
        if self.shape is None:
            return f"tensor<*x{self.element_type.to_str(map_name)}>"
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{self.element_type.to_str(map_name)}>"

    def __str__(self) -> str:
        return self.to_str()

    @property
    def has_static_shape(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class StridedLayout:
    """``strided<[s0, s1], offset: o>``; ``None`` stands for a dynamic (``?``) value."""

    strides: tuple[Optional[int], ...]
    offset: Optional[int] = 0

    def __str__(self) -> str:
        strides = ", ".join("?" if s is None else str(s) for s in self.strides)
        if self.offset == 0:
            return f"strided<[{strides}]>"
        off = "?" if self.offset is None else str(self.offset)
        return f"strided<[{strides}], offset: {off}>"


Layout = Union[AffineMap, StridedLayout, None]


@dataclass(frozen=True)
class MemRefType(Type):
    """``memref<2048x?xf64, layout, memspace>``; ``None`` in ``shape`` is a dynamic ``?`` dim.

    ``layout`` is ``None`` for the identity (row-major) layout; an identity affine map given in
    the source is dropped, as MLIR does, and so is memory space 0 (``memory_space`` ``None``).
    """

    shape: tuple[Optional[int], ...]
    element_type: Type
    layout: Layout = None
    memory_space: Optional[int] = None

    def __post_init__(self):
        if isinstance(self.layout, AffineMap) and self.layout.is_identity() and \
                self.layout.num_dims == len(self.shape):
            object.__setattr__(self, "layout", None)
        if self.memory_space == 0:      # MLIR's default memory space is no memory space
            object.__setattr__(self, "memory_space", None)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def has_static_shape(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    def with_(self, **changes) -> "MemRefType":
        fields = dict(shape=self.shape, element_type=self.element_type, layout=self.layout,
                      memory_space=self.memory_space)
        fields.update(changes)
        return MemRefType(**fields)

    def to_str(self, map_name=None) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        s = f"memref<{dims}{self.element_type.to_str(map_name)}"
        if self.layout is not None:
            if isinstance(self.layout, AffineMap) and map_name is not None:
                s += ", " + map_name(self.layout)
            elif isinstance(self.layout, AffineMap):
                s += f", affine_map<{self.layout}>"
            else:
                s += f", {self.layout}"
        if self.memory_space is not None:
            s += f", {self.memory_space}"
        return s + ">"

    def __str__(self) -> str:
        return self.to_str()


@dataclass(frozen=True)
class UnrankedMemRefType(Type):
    """``memref<*xf64>``: what MLIR's runtime printers (``printMemrefF64``) take."""

    element_type: Type
    memory_space: Optional[int] = None

    def __post_init__(self):
        if self.memory_space == 0:      # as for ranked memrefs
            object.__setattr__(self, "memory_space", None)

    def __str__(self) -> str:
        ms = f", {self.memory_space}" if self.memory_space is not None else ""
        return f"memref<*x{self.element_type}{ms}>"


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def to_str(self, map_name=None) -> str:
        ins = ", ".join(t.to_str(map_name) for t in self.inputs)
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0].to_str(map_name)}"
        outs = ", ".join(t.to_str(map_name) for t in self.results)
        return f"({ins}) -> ({outs})"

    def __str__(self) -> str:
        return self.to_str()


index = IndexType()
i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
f16 = FloatType(16)
bf16 = FloatType(16, brain=True)
f32 = FloatType(32)
f64 = FloatType(64)


def element_type_of(t: Type) -> Type:
    """The scalar element type of a vector, the type itself for scalars."""
    return t.element_type if isinstance(t, VectorType) else t


def bitwidth(t: Type) -> int:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, (IntegerType, FloatType)):
        return t.width
    if isinstance(t, VectorType):
        return t.num_elements * bitwidth(t.element_type)
    raise TypeError(f"type {t} has no bit width")
