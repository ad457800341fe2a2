"""MLIR's ``amx`` dialect: Intel AMX tiles (``!amx.tile<16x32xbf16>``) and the five ops on them.

AMX (Advanced Matrix Extensions, Sapphire Rapids and later) has eight tile registers of up to
16 rows of 64 bytes; ``amx.tile_zero`` is ``tilezero``, ``amx.tile_load``/``tile_store`` are
``tileloadd``/``tilestored`` (rows at a byte stride), ``amx.tile_mulf`` is ``tdpbf16ps`` or
``tdpfp16ps`` and ``amx.tile_muli`` one of ``tdpb{s,u}{s,u}d``::

    %z = amx.tile_zero : !amx.tile<16x16xf32>
    %a = amx.tile_load %A[%i, %c0] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
    %b = amx.tile_load %B[%c0, %c0], %stride : memref<?x?xbf16> into !amx.tile<16x32xbf16>
    %c = amx.tile_mulf %a, %b, %z
           : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    %d = amx.tile_muli %p zext, %q, %zi
           : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
    amx.tile_store %C[%i, %j], %c : memref<64x64xf32>, !amx.tile<16x16xf32>

``tile_mulf``: ``C[m][n] += A[m][2p] * B[p][2n] + A[m][2p+1] * B[p][2n+1]`` for every ``p``
(bf16 or f16 operands, f32 accumulator); ``tile_muli``: the same with groups of four i8
(``zext`` after an operand: its bytes are unsigned), i32 accumulator.  B is in the "VNNI"
layout: row ``p`` holds the 2 (or 4) consecutive k values of every column side by side.

Syntax, verifier messages and operand order are upstream's (``mlir-opt-22``): the optional
stride operand (in elements of the memref) comes after the indices, and after the stored tile
in ``tile_store``; ``zext`` is the unit attribute ``isZextLhs``/``isZextRhs``.  ``tile_zero``,
``tile_mulf`` and ``tile_muli`` are pure; ``tile_load`` reads and ``tile_store`` writes its
memref (the effect lists of :mod:`polyopt.affine.greedy_cleanup` and
:mod:`polyopt.affine.scalrep` name them).  The lowering is :mod:`polyopt.codegen.lower_amx`.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import DenseArrayAttr, UnitAttr
from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..types import (AMXTileType, IndexType, IntegerType, MemRefType, Type, bf16, f16, f32, i8,
                     i32)
from .memref import check_index_operands, parse_indices, parse_memref_type, print_indexed

MAX_ROWS = 16
MAX_ROW_BYTES = 64

_ANY = ((f32, f16, bf16, i32, i8), "32-bit float or 16-bit float or bfloat16 type or 32-bit "
        "signless integer or 8-bit signless integer")
_FLOAT_OPERAND = ((f16, bf16), "16-bit float or bfloat16 type")
_F32 = ((f32,), "32-bit float")
_I8 = ((i8,), "8-bit signless integer")
_I32 = ((i32,), "32-bit signless integer")


def _check_tile(op: Operation, t: Type, what: str, allowed) -> None:
    """ODS's type constraint: ``t`` is a tile of one of ``allowed``'s element types."""
    types, text = allowed
    if not (isinstance(t, AMXTileType) and t.element_type in types):
        raise op.error(f"{what} must be tile of {text} values, but got '{t}'")


def verify_tile_size(op: Operation, t: AMXTileType) -> None:
    """What one tile register holds: 1 to 16 rows of 4 to 64 bytes, a multiple of 4 (upstream
    accepts 0 rows or columns; LLVM's tile configuration does not)."""
    if not 1 <= t.rows <= MAX_ROWS:
        raise op.error(f"bad row height: {t.rows}")
    bits = t.cols * t.element_type.width
    if t.cols < 1 or bits > MAX_ROW_BYTES * 8 or bits & 0x1F:
        raise op.error(f"bad column width: {bits >> 3}")


def memref_strides(t: MemRefType) -> Optional[tuple[Optional[int], ...]]:
    """The element stride of each dimension of ``t`` (``None`` where only the descriptor knows
    it), or ``None`` when the layout is not strided (a tiled map); MLIR's
    ``getStridesAndOffset``.  A layout map counts when it is linear: ``(d0, d1) -> (d0 * 32 +
    d1)`` has strides ``(32, 1)``, ``(d0, d1) -> (d1, d0)`` on 16 x 16 has ``(1, 16)``."""
    from ...memref_layout.layout import linearize, strided_form
    form = strided_form(t)
    if form is not None:
        return form[0]
    if not t.has_static_shape or t.layout.num_symbols:
        return None
    offset = linearize(t).results[0]
    if not offset.is_pure_affine():
        return None
    zero = offset.evaluate([0] * t.rank)
    return tuple(offset.evaluate([int(j == k) for j in range(t.rank)]) - zero
                 for k in range(t.rank))


# ---------------------------------------------------------------------------------------------
# tile_zero

@register_op
class TileZeroOp(Operation):
    """``%z = amx.tile_zero : !amx.tile<16x16xf32>``: a tile of zeros (``tilezero``)."""

    OP_NAME = "amx.tile_zero"
    PURE = True

    @classmethod
    def build(cls, tile_type: AMXTileType, loc=None) -> "TileZeroOp":
        return cls(result_types=[tile_type], loc=loc)

    @property
    def tile_type(self) -> Type:
        return self.results[0].type

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = p.parse_type()
        return cls(result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("amx.tile_zero")
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.tile_type)}")

    def verify_op(self) -> None:
        if self.operands or len(self.results) != 1:
            raise self.error("expects no operands and one result")
        _check_tile(self, self.tile_type, "result #0", _ANY)
        verify_tile_size(self, self.tile_type)


# ---------------------------------------------------------------------------------------------
# tile_load / tile_store

class _TileTransfer(Operation):
    """Operands in MLIR's order: the memref, its indices, (the stored tile,) then the optional
    stride; ``_num_indices`` says where the indices end (the stride is an ``index`` too)."""

    HAS_VALUE = False

    def _init_indices(self, n: int) -> None:
        self._num_indices = n

    @property
    def num_indices(self) -> int:
        n = self.__dict__.get("_num_indices")
        if n is None:        # built by name (Operation.create): as many indices as dimensions
            base = self.operands[0].type if self.operands else None
            n = base.rank if isinstance(base, MemRefType) else max(0, self.num_operands - 1)
            n = min(n, self.num_operands - 1 - self.HAS_VALUE)
        return n

    @property
    def base(self) -> Value:
        return self.operands[0]

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def indices(self) -> tuple[Value, ...]:
        return self.operands[1:1 + self.num_indices]

    @property
    def stride(self) -> Optional[Value]:
        rest = self.operands[1 + self.num_indices + self.HAS_VALUE:]
        return rest[0] if rest else None

    def _segments(self) -> tuple[int, ...]:
        tail = (1,) if self.HAS_VALUE else ()
        return (1, self.num_indices, *tail, 0 if self.stride is None else 1)

    def generic_attributes(self) -> dict:
        attrs = dict(self.attributes)
        attrs["operandSegmentSizes"] = DenseArrayAttr(IntegerType(32), self._segments())
        return dict(sorted(attrs.items()))

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        op = cls(operands=operands, result_types=result_types, attributes=attrs, regions=regions,
                 loc=loc)
        if isinstance(seg, DenseArrayAttr):
            want = 4 if cls.HAS_VALUE else 3
            if len(seg.values) != want or sum(seg.values) != len(operands):
                raise ParseError(f"'{cls.OP_NAME}' op operand count ({len(operands)}) does not "
                                 f"match with the total size ({sum(seg.values)}) specified in "
                                 f"attribute 'operandSegmentSizes'", loc)
            op._init_indices(seg.values[1])
        return op

    @staticmethod
    def _parse_stride(p) -> list[Value]:
        if p.optional(","):
            return [p.parse_operand()]
        return []

    def _verify_transfer(self, tile: Type, tile_what: str) -> None:
        mt = self.base.type
        if not isinstance(mt, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got '{mt}'")
        _check_tile(self, tile, tile_what, _ANY)
        if len(self.indices) != mt.rank:
            raise self.error(f"requires {mt.rank} indices")
        check_index_operands(self, self.indices, 1)
        if self.stride is not None and not isinstance(self.stride.type, IndexType):
            raise self.error(f"operand #{self.num_operands - 1} must be index, but got "
                             f"'{self.stride.type}'")
        verify_tile_size(self, tile)
        if self.stride is None:
            if mt.rank < 2:
                raise self.error("requires at least 2D memref")
            strides = memref_strides(mt)
            if strides is None or strides[-1] != 1:
                raise self.error("requires memref with unit innermost stride")


@register_op
class TileLoadOp(_TileTransfer):
    """``%t = amx.tile_load %m[%i, %j] (, %stride)? : memref<...> into !amx.tile<...>``: row
    ``r`` of the tile is the row's bytes at ``&m[i, j] + r * stride`` (``tileloadd``); the
    stride is in elements of the memref, by default the stride of its next-to-last dimension."""

    OP_NAME = "amx.tile_load"

    @classmethod
    def build(cls, base: Value, indices: Sequence[Value], tile_type: AMXTileType,
              stride: Optional[Value] = None, loc=None) -> "TileLoadOp":
        op = cls(operands=[base, *indices, *([] if stride is None else [stride])],
                 result_types=[tile_type], loc=loc)
        op._init_indices(len(indices))
        return op

    @property
    def tile_type(self) -> Type:
        return self.results[0].type

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        m = p.parse_operand()
        idx = parse_indices(p)
        stride = cls._parse_stride(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        mt = parse_memref_type(p)
        p.expect_keyword("into")
        t = p.parse_type()
        p.check_type(m, mt, start)
        op = cls(operands=[m, *idx, *stride], result_types=[t], attributes=attrs, loc=loc)
        op._init_indices(len(idx))
        return op

    def print_custom(self, p) -> None:
        p.print("amx.tile_load ")
        print_indexed(p, self.base, self.indices)
        if self.stride is not None:
            p.print(", ")
            p.print_operand(self.stride)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.base.type)} into {p.type_str(self.tile_type)}")

    def verify_op(self) -> None:
        if not self.operands or len(self.results) != 1:
            raise self.error("expects a memref operand and one result")
        self._verify_transfer(self.tile_type, "result #0")


@register_op
class TileStoreOp(_TileTransfer):
    """``amx.tile_store %m[%i, %j], %t (, %stride)? : memref<...>, !amx.tile<...>``
    (``tilestored``; the stride as in ``amx.tile_load``)."""

    OP_NAME = "amx.tile_store"
    HAS_VALUE = True

    @classmethod
    def build(cls, base: Value, indices: Sequence[Value], value: Value,
              stride: Optional[Value] = None, loc=None) -> "TileStoreOp":
        op = cls(operands=[base, *indices, value, *([] if stride is None else [stride])],
                 loc=loc)
        op._init_indices(len(indices))
        return op

    @property
    def value(self) -> Value:
        return self.operands[1 + self.num_indices]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        m = p.parse_operand()
        idx = parse_indices(p)
        p.expect(",")
        p.skip_ws()
        vstart = p.pos
        v = p.parse_operand()
        stride = cls._parse_stride(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        mt = parse_memref_type(p)
        p.expect(",")
        t = p.parse_type()
        p.check_type(m, mt, start)
        p.check_type(v, t, vstart)
        op = cls(operands=[m, *idx, v, *stride], attributes=attrs, loc=loc)
        op._init_indices(len(idx))
        return op

    def print_custom(self, p) -> None:
        p.print("amx.tile_store ")
        print_indexed(p, self.base, self.indices)
        p.print(", ")
        p.print_operand(self.value)
        if self.stride is not None:
            p.print(", ")
            p.print_operand(self.stride)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.base.type)}, {p.type_str(self.value.type)}")

    def verify_op(self) -> None:
        if self.num_operands < 2 or self.results:
            raise self.error("expects a memref operand, a tile and no results")
        self._verify_transfer(self.value.type, f"operand #{1 + self.num_indices}")


# ---------------------------------------------------------------------------------------------
# tile_mulf / tile_muli

class _TileMul(Operation):
    """``%r = amx.tile_mul* %lhs, %rhs, %acc : A, B, C`` (``%r`` has ``C``'s type)."""

    PURE = True
    OPERAND = _FLOAT_OPERAND
    ACC = _F32
    GROUP_LOG2 = 1          # 2 (16-bit) or 4 (8-bit) k values per 32-bit lane

    @property
    def lhs(self) -> Value:
        return self.operands[0]

    @property
    def rhs(self) -> Value:
        return self.operands[1]

    @property
    def acc(self) -> Value:
        return self.operands[2]

    def _print_types(self, p) -> None:
        p.print_attr_dict(self.attributes, elide=("isZextLhs", "isZextRhs"))
        p.print(" : " + ", ".join(p.type_str(v.type) for v in self.operands))

    @staticmethod
    def _parse_types(p, ops: list[Value], start: int) -> Type:
        p.expect(":")
        types = [p.parse_type()]
        for _ in range(2):
            p.expect(",")
            types.append(p.parse_type())
        for v, t in zip(ops, types):
            p.check_type(v, t, start)
        return types[2]

    def verify_op(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("expects three operands and one result")
        a, b, c = (v.type for v in self.operands)
        _check_tile(self, a, "operand #0", self.OPERAND)
        _check_tile(self, b, "operand #1", self.OPERAND)
        _check_tile(self, c, "operand #2", self.ACC)
        _check_tile(self, self.results[0].type, "result #0", self.ACC)
        if self.results[0].type != c:
            raise self.error("failed to verify that all of {acc, res} have same type")
        for t in (a, b, c):
            verify_tile_size(self, t)
        g = self.GROUP_LOG2
        if c.rows != a.rows or c.cols != b.cols >> g or a.cols >> g != b.rows:
            raise self.error(f"bad mult shape: {c.rows} x {c.cols} x {a.cols >> g}")
        if a.element_type != b.element_type:
            raise self.error("unsupported type combination")


@register_op
class TileMulFOp(_TileMul):
    """``%r = amx.tile_mulf %a, %b, %c : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>,
    !amx.tile<16x16xf32>`` (``tdpbf16ps``; ``tdpfp16ps`` on f16)."""

    OP_NAME = "amx.tile_mulf"

    @classmethod
    def build(cls, lhs: Value, rhs: Value, acc: Value, loc=None) -> "TileMulFOp":
        return cls(operands=[lhs, rhs, acc], result_types=[acc.type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        if len(ops) != 3:
            raise p.error(f"'{name}' expects 3 operands, got {len(ops)}", start)
        attrs = p.parse_optional_attr_dict()
        acc_t = cls._parse_types(p, ops, start)
        return cls(operands=ops, result_types=[acc_t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("amx.tile_mulf ")
        p.print_operands(self.operands)
        self._print_types(p)


@register_op
class TileMulIOp(_TileMul):
    """``%r = amx.tile_muli %a zext, %b, %c : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>,
    !amx.tile<16x16xi32>``: ``zext`` after an operand reads its bytes as unsigned
    (``tdpbusd`` here; ``tdpbssd``, ``tdpbsud``, ``tdpbuud`` for the other combinations)."""

    OP_NAME = "amx.tile_muli"
    OPERAND = _I8
    ACC = _I32
    GROUP_LOG2 = 2

    @classmethod
    def build(cls, lhs: Value, rhs: Value, acc: Value, zext_lhs: bool = False,
              zext_rhs: bool = False, loc=None) -> "TileMulIOp":
        attrs = {}
        if zext_lhs:
            attrs["isZextLhs"] = UnitAttr()
        if zext_rhs:
            attrs["isZextRhs"] = UnitAttr()
        return cls(operands=[lhs, rhs, acc], result_types=[acc.type], attributes=attrs, loc=loc)

    @property
    def zext_lhs(self) -> bool:
        return "isZextLhs" in self.attributes

    @property
    def zext_rhs(self) -> bool:
        return "isZextRhs" in self.attributes

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        attrs = {}
        ops = []
        for k, flag in enumerate(("isZextLhs", "isZextRhs", None)):
            if k:
                p.expect(",")
            ops.append(p.parse_operand())
            if flag is not None and p.optional_keyword("zext"):
                attrs[flag] = UnitAttr()
        attrs.update(p.parse_optional_attr_dict())
        acc_t = cls._parse_types(p, ops, start)
        return cls(operands=ops, result_types=[acc_t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("amx.tile_muli ")
        p.print_operand(self.lhs)
        p.print(" zext, " if self.zext_lhs else ", ")
        p.print_operand(self.rhs)
        p.print(" zext, " if self.zext_rhs else ", ")
        p.print_operand(self.acc)
        self._print_types(p)

    def verify_op(self) -> None:
        super().verify_op()
        for flag in ("isZextLhs", "isZextRhs"):
            if flag in self.attributes and not isinstance(self.attributes[flag], UnitAttr):
                raise self.error(f"attribute '{flag}' failed to satisfy constraint: unit "
                                 "attribute")
