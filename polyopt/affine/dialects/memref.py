"""The memref dialect: ``alloc``/``alloca``/``dealloc``, ``load``/``store``, ``cast`` and
``collapse_shape``.

The paper's 2020 spellings (``alloc()``, ``alloca()``, ``dealloc``, ``load``, ``store``,
``memref_cast``) parse to the same ops (see ``parser.LEGACY_OP_NAMES``); the 2020 listings write
``alloc() {alignment = 32 : i32}``, which MLIR 22 rejects (it wants ``i64``): we accept any
integer type and store the alignment as ``i64``.

``operandSegmentSizes`` found in MLIR's generic form is dropped on the way in (the split of
``memref.alloc`` operands into dynamic sizes and layout symbols follows from the result type).
A ``nontemporal = false`` written out is kept: the custom form elides it, the generic form
prints it, as mlir-opt-22 does.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Sequence

from ..affine_expr import AffineExprKind, AffineMap
from ..attributes import ArrayAttr, DenseArrayAttr, IntegerAttr, SymbolRefAttr
from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..ods_counts import check_counts
from ..types import (IndexType, MemRefType, StridedLayout, Type, UnrankedMemRefType, i1, i32, i64,
                     index)


# ---------------------------------------------------------------------------------------------
# helpers shared with the vector dialect

def parse_indices(p) -> list[Value]:
    """``[%i, %j]``: subscripts, each checked to be an ``index`` where it is written."""
    return p.parse_comma_separated("[", "]", lambda: p.parse_operand(index))


def print_indexed(p, memref: Value, indices: Sequence[Value]) -> None:
    """``%m[%i, %j]``."""
    p.print_operand(memref)
    p.print("[")
    p.print_operands(indices)
    p.print("]")


def parse_memref_type(p, what: str = "memref") -> MemRefType:
    """A ranked memref type, with MLIR's message when another kind of type is written."""
    p.skip_ws()
    start = p.pos
    t = p.parse_type()
    if not isinstance(t, MemRefType):
        raise p.error(f"{p.custom_op_prefix()}invalid kind of type specified: "
                      f"expected builtin.memref, but found '{t}'", start)
    return t


def check_index_operands(op: Operation, values: Sequence[Value], first: int) -> None:
    """Every value must be an ``index`` (operand numbers counted from ``first``)."""
    for k, v in enumerate(values):
        if not isinstance(v.type, IndexType):
            raise op.error(f"operand #{first + k} must be index, but got '{v.type}'")


def layout_symbol_count(t) -> int:
    """The symbols an allocation of memref type ``t`` takes (``[%s, ...]``): an affine-map
    layout's, or one per ``?`` of a strided layout (its strides, then its offset), as MLIR
    counts them through the layout's affine map."""
    layout = getattr(t, "layout", None)
    if isinstance(layout, AffineMap):
        return layout.num_symbols
    if isinstance(layout, StridedLayout):
        return sum(s is None for s in layout.strides) + (layout.offset is None)
    return 0


def verify_alignment(op: Operation) -> None:
    """``alignment``, where an op has one, is a power of two (MLIR's
    ``ConfinedAttr<I64Attr, [IntPositive, IntPowerOf2]>``): LLVM refuses any other."""
    a = op.attributes.get("alignment")
    if a is not None and not (isinstance(a, IntegerAttr) and a.type == i64 and a.value > 0
                              and a.value & (a.value - 1) == 0):
        raise op.error("attribute 'alignment' failed to satisfy constraint: 64-bit signless "
                       "integer attribute whose value is positive and whose value is a power "
                       f"of two > 0 (got {a})")


def verify_access_attributes(op: Operation) -> None:
    """A load's or store's ``alignment`` (:func:`verify_alignment`) and ``nontemporal`` (a
    bool), as MLIR's verifiers check them."""
    verify_alignment(op)
    nt = op.attributes.get("nontemporal")
    if nt is not None and not (isinstance(nt, IntegerAttr) and nt.type == i1):
        raise op.error("attribute 'nontemporal' failed to satisfy constraint: bool attribute")



class IndexedLoadAccessors:
    """``<op> %m[%i, %j]``: operand 0 is the memref, the others its indices."""

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def indices(self) -> tuple[Value, ...]:
        return self.operands[1:]


class IndexedStoreAccessors:
    """``<op> %v, %m[%i, %j]``: the stored value, the memref, then its indices."""

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def memref(self) -> Value:
        return self.operands[1]

    @property
    def indices(self) -> tuple[Value, ...]:
        return self.operands[2:]


def parse_load_prefix(p):
    """``%m[%i, ...] {attrs} :`` -> (memref, its offset, indices, attrs)."""
    p.skip_ws()
    start = p.pos
    m = p.parse_operand()
    idx = parse_indices(p)
    attrs = p.parse_optional_attr_dict()
    p.expect(":")
    return m, start, idx, attrs


def parse_store_prefix(p):
    """``%v, %m[%i, ...] {attrs} :`` -> (value, its offset, memref, its offset, indices, attrs)."""
    p.skip_ws()
    vstart = p.pos
    v = p.parse_operand()
    p.expect(",")
    m, mstart, idx, attrs = parse_load_prefix(p)
    return v, vstart, m, mstart, idx, attrs


def parse_cast_like(p, parse_source=None, parse_result=None, check_before_to: bool = False):
    """The operand and types of a cast-like op, ``%x {attrs} : T to U`` (``memref.cast``,
    ``vector.shape_cast``, ``vector.bitcast``...) -> (operand, attrs, U).  ``parse_source`` and
    ``parse_result`` read T and U (default: any type, U as T); the operand is checked against T
    once U is read, or before ``to`` when ``check_before_to`` (the op's mismatch is then
    reported first, as mlir-opt-22 does for ``memref.cast``)."""
    parse_source = parse_source or (lambda q: q.parse_type())
    parse_result = parse_result or parse_source
    p.skip_ws()
    start = p.pos
    v = p.parse_operand()
    attrs = p.parse_optional_attr_dict()
    p.expect(":")
    src = parse_source(p)
    if check_before_to:
        p.check_type(v, src, start)
    p.expect_keyword("to")
    dst = parse_result(p)
    if not check_before_to:
        p.check_type(v, src, start)
    return v, attrs, dst


def print_cast_like(p, op: Operation) -> None:
    """``NAME %x {attrs} : T to U``, what :func:`parse_cast_like` reads."""
    p.print(f"{op.name} ")
    p.print_operand(op.operands[0])
    p.print_attr_dict(op.attributes)
    p.print(f" : {p.type_str(op.operands[0].type)} to {p.type_str(op.results[0].type)}")



def print_attrs_without_default_nontemporal(p, attrs: dict) -> None:
    nt = attrs.get("nontemporal")
    elide = ("nontemporal",) if isinstance(nt, IntegerAttr) and not nt.value else ()
    p.print_attr_dict(attrs, elide=elide)


# ---------------------------------------------------------------------------------------------
# alloc / alloca / dealloc

class _AllocLikeOp(Operation):
    """``%m = memref.alloc(%d0)[%s0] {alignment = 64 : i64} : memref<?x4xf64, #map>``.

    Operands are the sizes of the ``?`` dimensions (in order) followed by the symbols of the
    layout map, if it has any.
    """

    HINT = "alloc"

    @classmethod
    def build(cls, memref_type: MemRefType, dynamic_sizes: Sequence[Value] = (),
              symbol_operands: Sequence[Value] = (), alignment: Optional[int] = None, loc=None):
        attrs = {} if alignment is None else {"alignment": IntegerAttr(alignment, i64)}
        return cls(operands=[*dynamic_sizes, *symbol_operands], result_types=[memref_type],
                   attributes=attrs, loc=loc)

    @property
    def memref_type(self) -> MemRefType:
        return self.results[0].type

    @property
    def _num_symbols(self) -> int:
        return layout_symbol_count(self.results[0].type)

    @property
    def dynamic_sizes(self) -> tuple[Value, ...]:
        ops = self.operands
        return ops[:max(0, len(ops) - self._num_symbols)]

    @property
    def symbol_operands(self) -> tuple[Value, ...]:
        ops = self.operands
        return ops[max(0, len(ops) - self._num_symbols):]

    @property
    def alignment(self) -> Optional[int]:
        a = self.attributes.get("alignment")
        return a.value if isinstance(a, IntegerAttr) else None

    @staticmethod
    def _normalize_alignment(attrs: dict) -> dict:
        # the 2020 listings write `alignment = 32 : i32`; MLIR 22 wants i64
        a = attrs.get("alignment")
        if isinstance(a, IntegerAttr) and a.type != i64:
            attrs = dict(attrs)
            attrs["alignment"] = IntegerAttr(a.value, i64)
        return attrs

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        dstart = p.pos
        dyn = p.parse_comma_separated("(", ")", lambda: p.parse_operand(index))
        syms = p.parse_comma_separated("[", "]", lambda: p.parse_operand(index)) \
            if p.peek("[") else []
        attrs = cls._normalize_alignment(p.parse_optional_attr_dict())
        p.expect(":")
        t = parse_memref_type(p)
        nsym = layout_symbol_count(t)
        if len(syms) != nsym:
            raise p.error(f"symbol operand count does not equal memref symbol count: expected "
                          f"{nsym}, got {len(syms)}", dstart)
        return cls(operands=[*dyn, *syms], result_types=[t], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = cls._normalize_alignment(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        if isinstance(seg, DenseArrayAttr) and sum(seg.values) != len(operands):
            raise ParseError(f"'{cls.OP_NAME}' op operand count ({len(operands)}) does "
                             f"not match with the total size ({sum(seg.values)}) specified in "
                             f"attribute 'operandSegmentSizes'", loc)
        op = cls(operands=operands, result_types=result_types, attributes=attrs, regions=regions,
                 loc=loc)
        if isinstance(seg, DenseArrayAttr) and len(seg.values) == 2 and \
                len(result_types) == 1 and seg.values[1] != op._num_symbols:
            raise ParseError(f"'{cls.OP_NAME}' op symbol operand count does not equal "
                             f"memref symbol count: expected {op._num_symbols}, got "
                             f"{seg.values[1]}", loc)
        return op

    def print_custom(self, p) -> None:
        p.print(f"{self.name}(")
        p.print_operands(self.dynamic_sizes)
        p.print(")")
        if self.symbol_operands:
            p.print("[")
            p.print_operands(self.symbol_operands)
            p.print("]")
        # MLIR prints the `alignment` property before discardable attributes
        attrs = self.attributes
        if "alignment" in attrs:
            attrs = {"alignment": attrs["alignment"],
                     **{k: v for k, v in attrs.items() if k != "alignment"}}
        p.print_attr_dict(attrs)
        p.print(" : " + p.type_str(self.results[0].type))

    def generic_attributes(self) -> dict:
        sizes = (len(self.dynamic_sizes), len(self.symbol_operands))
        return {**self.attributes, "operandSegmentSizes": DenseArrayAttr(i32, sizes)}

    def result_name_hint(self):
        return self.HINT

    def verify_op(self) -> None:
        if len(self.results) != 1:
            raise self.error(f"requires one result, got {len(self.results)}")
        t = self.results[0].type
        if not isinstance(t, MemRefType):
            raise self.error(f"result #0 must be memref of any type values, but got '{t}'")
        ndyn = sum(1 for d in t.shape if d is None)
        if len(self.operands) < self._num_symbols:
            raise self.error(f"symbol operand count does not equal memref symbol count: expected "
                             f"{self._num_symbols}, got {len(self.operands)}")
        if len(self.dynamic_sizes) != ndyn:
            raise self.error(f"incorrect number of dynamic sizes, has {len(self.dynamic_sizes)}, "
                             f"expected {ndyn}")
        check_index_operands(self, self.operands, 0)
        verify_alignment(self)


@register_op
class AllocOp(_AllocLikeOp):
    """Heap allocation: ``%alloc = memref.alloc() {alignment = 64 : i64} : memref<64x256xf64>``."""

    OP_NAME = "memref.alloc"
    HINT = "alloc"


@register_op
class AllocaOp(_AllocLikeOp):
    """Stack allocation (freed at function exit): ``%alloca = memref.alloca() : memref<1xf64>``."""

    OP_NAME = "memref.alloca"
    HINT = "alloca"

    def verify_op(self) -> None:
        super().verify_op()
        parent = self.parent_op
        while parent is not None and parent.name not in AUTOMATIC_ALLOCATION_SCOPES:
            parent = parent.parent_op
        if parent is None:
            raise self.error("requires an ancestor op with AutomaticAllocationScope trait")


#: The ops of MLIR's ``AutomaticAllocationScope`` trait polyopt knows: an ``alloca`` is freed
#: when the innermost of them around it exits.
AUTOMATIC_ALLOCATION_SCOPES = frozenset({
    "func.func", "memref.alloca_scope", "affine.for", "affine.parallel", "scf.for",
    "scf.parallel", "scf.forall", "llvm.func"})


@register_op
class DeallocOp(Operation):
    """``memref.dealloc %m : memref<64x256xf64>``."""

    OP_NAME = "memref.dealloc"

    @classmethod
    def build(cls, memref: Value, loc=None) -> "DeallocOp":
        return cls(operands=[memref], loc=loc)

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        m = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.skip_ws()
        tstart = p.pos
        t = p.parse_type()
        if not isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise p.error("invalid kind of type specified: expected builtin.memref, but found "
                          f"'{t}'", tstart)
        p.check_type(m, t, start)
        return cls(operands=[m], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.dealloc ")
        p.print_operand(self.memref)
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.memref.type))

    def verify_op(self) -> None:
        if len(self.operands) != 1 or self.results:
            raise self.error("expects one operand and no results")
        t = self.memref.type
        if not isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise self.error(f"operand #0 must be memref of any type values, but got '{t}'")


# ---------------------------------------------------------------------------------------------
# load / store

@register_op
class MemRefLoadOp(IndexedLoadAccessors, Operation):
    """``%v = memref.load %m[%i, %j] : memref<4x4xf64>``."""

    OP_NAME = "memref.load"

    @classmethod
    def build(cls, memref: Value, indices: Sequence[Value], loc=None) -> "MemRefLoadOp":
        return cls(operands=[memref, *indices], result_types=[memref.type.element_type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, start, idx, attrs = parse_load_prefix(p)
        t = parse_memref_type(p)
        p.check_type(m, t, start)
        return cls(operands=[m, *idx], result_types=[t.element_type], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.load ")
        print_indexed(p, self.memref, self.indices)
        print_attrs_without_default_nontemporal(p, self.attributes)
        p.print(" : " + p.type_str(self.memref.type))

    def verify_op(self) -> None:
        if not self.operands or len(self.results) != 1:
            raise self.error("expects a memref operand and one result")
        t = self.memref.type
        if not isinstance(t, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got '{t}'")
        if len(self.indices) != t.rank:
            raise self.error(f"incorrect number of indices for load, expected {t.rank} but got "
                             f"{len(self.indices)}")
        verify_access_attributes(self)
        check_index_operands(self, self.indices, 1)
        if self.results[0].type != t.element_type:
            raise self.error("failed to verify that result type matches element type of 'memref' "
                             f"('{self.results[0].type}' vs '{t.element_type}')")


@register_op
class MemRefStoreOp(IndexedStoreAccessors, Operation):
    """``memref.store %v, %m[%i, %j] : memref<4x4xf64>``."""

    OP_NAME = "memref.store"

    @classmethod
    def build(cls, value: Value, memref: Value, indices: Sequence[Value], loc=None):
        return cls(operands=[value, memref, *indices], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, vstart, m, mstart, idx, attrs = parse_store_prefix(p)
        t = parse_memref_type(p)
        # MLIR resolves the stored value against the element type, so a mismatch is reported
        # at the value's use
        p.check_type(v, t.element_type, vstart)
        p.check_type(m, t, mstart)
        return cls(operands=[v, m, *idx], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.store ")
        p.print_operand(self.value)
        p.print(", ")
        print_indexed(p, self.memref, self.indices)
        print_attrs_without_default_nontemporal(p, self.attributes)
        p.print(" : " + p.type_str(self.memref.type))

    def verify_op(self) -> None:
        if len(self.operands) < 2 or self.results:
            raise self.error("expects a value and a memref operand and no results")
        t = self.memref.type
        if not isinstance(t, MemRefType):
            raise self.error(f"operand #1 must be memref of any type values, but got '{t}'")
        if len(self.indices) != t.rank:
            raise self.error(f"store index operand count not equal to memref rank (expected "
                             f"{t.rank}, got {len(self.indices)})")
        verify_access_attributes(self)
        check_index_operands(self, self.indices, 2)
        if self.value.type != t.element_type:
            raise self.error("failed to verify that type of 'value' matches element type of "
                             f"'memref' ('{self.value.type}' vs '{t.element_type}')")


# ---------------------------------------------------------------------------------------------
# cast

def _canonical_strides(shape: Sequence[Optional[int]]) -> list[Optional[int]]:
    strides: list[Optional[int]] = []
    running: Optional[int] = 1
    for d in reversed(shape):
        strides.append(running)
        running = None if running is None or d is None else running * d
    return strides[::-1]


def strides_and_offset(t: MemRefType) -> Optional[tuple[list[Optional[int]], Optional[int]]]:
    """(strides, offset) of a memref type; ``None`` entries are dynamic, ``None`` if not strided.

    The identity layout is row-major; an affine-map layout is strided when it is a single
    linear expression of the dims (no ``floordiv``/``mod``), e.g. ``(d0, d1) -> (d0 * 8 + d1)``.
    """
    layout = t.layout
    if layout is None:
        return _canonical_strides(t.shape), 0
    if isinstance(layout, StridedLayout):
        return list(layout.strides), layout.offset
    if not isinstance(layout, AffineMap):
        return None
    if len(layout.results) != 1 or layout.num_symbols:
        return None
    expr = layout.results[0]
    if any(getattr(e, "kind", None) in (AffineExprKind.FLOORDIV, AffineExprKind.CEILDIV,
                                        AffineExprKind.MOD) for e in expr.walk()):
        return None
    zero = [0] * layout.num_dims
    offset = expr.evaluate(zero)
    strides = []
    for i in range(layout.num_dims):
        unit = list(zero)
        unit[i] = 1
        strides.append(expr.evaluate(unit) - offset)
    return strides, offset


def _compatible(a: Optional[int], b: Optional[int]) -> bool:
    return a is None or b is None or a == b


def _memspace(t) -> int:
    return t.memory_space or 0


def are_cast_compatible(src: Type, dst: Type) -> bool:
    """MLIR's ``memref::CastOp::areCastCompatible``."""
    if isinstance(src, UnrankedMemRefType) and isinstance(dst, UnrankedMemRefType):
        return False
    if isinstance(src, (MemRefType, UnrankedMemRefType)) and \
            isinstance(dst, (MemRefType, UnrankedMemRefType)):
        if src.element_type != dst.element_type or _memspace(src) != _memspace(dst):
            return False
        if isinstance(src, UnrankedMemRefType) or isinstance(dst, UnrankedMemRefType):
            return True
        if src.rank != dst.rank:
            return False
        if src.layout != dst.layout:
            sa, sb = strides_and_offset(src), strides_and_offset(dst)
            if sa is None or sb is None:
                return False
            if not _compatible(sa[1], sb[1]):
                return False
            if not all(_compatible(x, y) for x, y in zip(sa[0], sb[0])):
                return False
        return all(_compatible(x, y) for x, y in zip(src.shape, dst.shape))
    return False


@register_op
class MemRefCastOp(Operation):
    """``%cast = memref.cast %m : memref<4x4xf64> to memref<*xf64>``."""

    OP_NAME = "memref.cast"

    @classmethod
    def build(cls, source: Value, to_type: Type, loc=None) -> "MemRefCastOp":
        return cls(operands=[source], result_types=[to_type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, attrs, dst = parse_cast_like(p, check_before_to=True)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        print_cast_like(p, self)

    def result_name_hint(self):
        return "cast"

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        src, dst = self.source.type, self.results[0].type
        if not are_cast_compatible(src, dst):
            raise self.error(f"operand type '{src}' and result type '{dst}' are cast incompatible")


# ---------------------------------------------------------------------------------------------
# collapse_shape

Reassociation = tuple[tuple[int, ...], ...]


def _mul(a: Optional[int], b: Optional[int]) -> Optional[int]:
    """Product where ``None`` (dynamic) absorbs everything (MLIR's ``SaturatedInteger``)."""
    return None if a is None or b is None else a * b


def _has_identity_layout(t: MemRefType) -> bool:
    """MLIR's ``getLayout().isIdentity()``: no layout, or a strided layout whose map is the
    identity (rank 1, stride 1, offset 0)."""
    layout = t.layout
    if layout is None:
        return True
    if isinstance(layout, StridedLayout):
        return t.rank == 1 and tuple(layout.strides) == (1,) and layout.offset == 0
    return False


def collapsed_layout(source: MemRefType, reassociation: Reassociation
                     ) -> Optional[StridedLayout]:
    """MLIR's ``computeCollapsedLayoutMap``: the strided layout of ``source`` collapsed by
    ``reassociation``, or ``None`` when ``source`` is not strided or a group collapses
    dimensions that are not contiguous in memory (static strides disagree).  A group's stride is
    that of its last dimension of size other than 1 (strides of size-1 dims are meaningless)."""
    so = strides_and_offset(source)
    if so is None:
        return None
    strides, offset = so
    shape = source.shape
    result: list[Optional[int]] = []
    for group in reassociation:
        ref = list(group)
        while len(ref) > 1 and shape[ref[-1]] == 1:
            ref.pop()
        if not ref:
            result.append(1)    # an empty group: a new unit dimension
            continue
        result.append(strides[ref[-1]] if shape[ref[-1]] is not None or len(ref) == 1 else None)
    for k in range(len(reassociation) - 1, -1, -1):
        stride = result[k]
        group = reassociation[k]
        for idx in reversed(group[1:]):
            stride = _mul(stride, shape[idx])
            if shape[idx - 1] == 1:
                continue
            src_stride = strides[idx - 1]
            if stride is not None and src_stride is not None and stride != src_stride:
                return None
    return StridedLayout(tuple(result), offset)


def collapsed_type(source: MemRefType, reassociation: Sequence[Sequence[int]]) -> MemRefType:
    """MLIR's ``CollapseShapeOp::computeCollapsedType``: ``memref<1x56x56x64xf32>`` by
    ``[[0, 1, 2], [3]]`` is ``memref<3136x64xf32>``; a strided source gives a strided result
    (``strided<[30, 6, 1]>`` by ``[[0, 1], [2]]``: ``strided<[6, 1]>``).  Raises ``ValueError``
    when the source layout cannot be collapsed."""
    groups = tuple(tuple(int(i) for i in g) for g in reassociation)
    shape = []
    for g in groups:
        size: Optional[int] = 1
        for d in g:
            size = _mul(size, source.shape[d])
        shape.append(size)
    if _has_identity_layout(source):
        return MemRefType(tuple(shape), source.element_type, None, source.memory_space)
    layout = collapsed_layout(source, groups)
    if layout is None:
        raise ValueError(f"cannot collapse {source} by {_reassociation_str(groups)}: invalid "
                         "source layout map or collapsing non-contiguous dims")
    return MemRefType(tuple(shape), source.element_type, layout, source.memory_space)


def _reassociation_str(groups: Reassociation) -> str:
    return "[" + ", ".join("[" + ", ".join(str(i) for i in g) + "]" for g in groups) + "]"


def _reassociation_attr(groups: Reassociation) -> ArrayAttr:
    return ArrayAttr(tuple(ArrayAttr(tuple(IntegerAttr(i, i64) for i in g)) for g in groups))


def _reassociation_of(attr) -> Optional[Reassociation]:
    """``[[0, 1], [2]]`` as an attribute -> ((0, 1), (2,)); ``None`` if malformed."""
    if not isinstance(attr, ArrayAttr):
        return None
    groups = []
    for g in attr.elements:
        if not isinstance(g, ArrayAttr) or not all(
                isinstance(e, IntegerAttr) and e.type == i64 for e in g.elements):
            return None
        groups.append(tuple(e.value for e in g.elements))
    return tuple(groups)


@register_op
class CollapseShapeOp(Operation):
    """``%collapse_shape = memref.collapse_shape %O [[0, 1, 2], [3]] : memref<1x56x56x64xf32>
    into memref<3136x64xf32>``: a view of the same memory with groups of consecutive
    dimensions merged (row-major within a group).  The result type follows from the source and
    the reassociation (:func:`collapsed_type`)."""

    OP_NAME = "memref.collapse_shape"

    @classmethod
    def build(cls, source: Value, reassociation: Sequence[Sequence[int]],
              loc=None) -> "CollapseShapeOp":
        """The op collapsing ``source`` by ``reassociation``; raises ``ValueError`` when the
        source is not a ranked memref or its layout cannot be collapsed."""
        if not isinstance(source.type, MemRefType):
            raise ValueError(f"memref.collapse_shape needs a ranked memref, got {source.type}")
        groups = tuple(tuple(int(i) for i in g) for g in reassociation)
        if any(not 0 <= d < source.type.rank for g in groups for d in g):
            raise ValueError(f"reassociation {_reassociation_str(groups)} has an index out of "
                             f"bounds for {source.type}")
        return cls(operands=[source], result_types=[collapsed_type(source.type, groups)],
                   attributes={"reassociation": _reassociation_attr(groups)}, loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def reassociation(self) -> Reassociation:
        """The groups of source dimensions, one per result dimension: ((0, 1, 2), (3,))."""
        groups = _reassociation_of(self.attributes.get("reassociation"))
        if groups is None:
            raise ValueError(f"{self.name} without a valid 'reassociation' attribute")
        return groups

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        p.skip_ws()
        rstart = p.pos
        if not p.peek("["):
            raise p.wrong_token("expected '['")
        reassociation = p.parse_attribute()
        if _reassociation_of(reassociation) is None:
            raise p.error("expected a list of lists of integers (the reassociation), e.g. "
                          "[[0, 1], [2]]", rstart)
        attrs = p.parse_optional_attr_dict()
        if "reassociation" in attrs:
            raise p.error("'reassociation' is given by the list after the source, not in the "
                          "attribute dictionary")
        p.expect(":")
        src = parse_memref_type(p)
        p.check_type(v, src, start)
        p.expect_keyword("into")
        dst = parse_memref_type(p)
        return cls(operands=[v], result_types=[dst],
                   attributes={"reassociation": reassociation, **attrs}, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.collapse_shape ")
        p.print_operand(self.source)
        p.print(" " + _reassociation_str(self.reassociation))
        p.print_attr_dict(self.attributes, elide=("reassociation",))
        p.print(f" : {p.type_str(self.source.type)} into {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "collapse_shape"

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        src, dst = self.source.type, self.results[0].type
        if not isinstance(src, MemRefType) or strides_and_offset(src) is None:
            raise self.error(f"operand #0 must be strided memref of any type values, but got "
                             f"'{src}'")
        if not isinstance(dst, MemRefType) or strides_and_offset(dst) is None:
            raise self.error(f"result #0 must be strided memref of any type values, but got "
                             f"'{dst}'")
        groups = _reassociation_of(self.attributes.get("reassociation"))
        if groups is None:
            if "reassociation" not in self.attributes:
                raise self.error("requires attribute 'reassociation'")
            raise self.error("attribute 'reassociation' failed to satisfy constraint: Array of "
                             "64-bit integer array attributes")
        if src.rank < dst.rank:
            raise self.error(f"has source rank {src.rank} and result rank {dst.rank}. This is "
                             f"not a collapse ({src.rank} < {dst.rank}).")
        self._verify_collapsed_shape(dst.shape, src.shape, groups)
        if _has_identity_layout(src):
            expected = MemRefType(tuple(dst.shape), src.element_type, None, src.memory_space)
        else:
            layout = collapsed_layout(src, groups)
            if layout is None:
                raise self.error("invalid source layout map or collapsing non-contiguous dims")
            expected = MemRefType(tuple(dst.shape), src.element_type, layout, src.memory_space)
        if expected != dst:
            raise self.error(f"expected collapsed type to be '{expected}' but found '{dst}'")

    def _verify_collapsed_shape(self, collapsed, expanded, groups: Reassociation) -> None:
        """MLIR's ``verifyCollapsedShape`` (memref flavor, several dynamic dims per group)."""
        if len(collapsed) != len(groups):
            raise self.error(f"invalid number of reassociation groups: found {len(groups)}, "
                             f"expected {len(collapsed)}")
        next_dim = 0
        for k, group in enumerate(groups):
            dynamic = False
            for d in group:
                if d != next_dim:
                    raise self.error("reassociation indices must be contiguous")
                next_dim += 1
                if d >= len(expanded):
                    raise self.error(f"reassociation index {d} is out of bounds")
                if expanded[d] is None:
                    dynamic = True
            if (collapsed[k] is None) != dynamic:
                raise self.error(f"collapsed dim ({k}) must be dynamic if and only if "
                                 "reassociation group is dynamic")
            if not dynamic:
                size = 1
                for d in group:
                    size *= expanded[d]
                if size != collapsed[k]:
                    raise self.error(f"collapsed dim size ({collapsed[k]}) must equal "
                                     f"reassociation group size ({size})")
        if not collapsed:
            if any(d != 1 for d in expanded):
                raise self.error("rank 0 memrefs can only be extended/collapsed with/from ones")
        elif next_dim != len(expanded):
            raise self.error(f"expanded rank ({len(expanded)}) inconsistent with number of "
                             f"reassociation indices ({next_dim})")


# ---------------------------------------------------------------------------------------------
# layout injectivity (decided exactly with ISL; the verifier calls this for every memref type)

LayoutCollision = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _isl_expr(e) -> Optional[str]:
    """``e`` over dims ``i0, i1, ...`` in ISL syntax; ``None`` when not quasi-affine."""
    from ..affine_expr import AffineBinaryExpr, AffineConstantExpr, AffineDimExpr
    if isinstance(e, AffineConstantExpr):
        return str(e.value)  # bare: ISL rejects a parenthesized factor such as `i0 * (3)`
    if isinstance(e, AffineDimExpr):
        return f"i{e.position}"
    if not isinstance(e, AffineBinaryExpr):
        return None  # a symbol
    lhs, rhs = _isl_expr(e.lhs), _isl_expr(e.rhs)
    if lhs is None or rhs is None:
        return None
    if e.kind is AffineExprKind.ADD:
        return f"({lhs} + {rhs})"
    if e.kind is AffineExprKind.MUL:
        if isinstance(e.rhs, AffineConstantExpr):
            return f"({lhs} * {rhs})"
        if isinstance(e.lhs, AffineConstantExpr):
            return f"({lhs} * {rhs})"
        return None
    if not isinstance(e.rhs, AffineConstantExpr) or e.rhs.value == 0:
        return None
    c = e.rhs.value
    if e.kind is AffineExprKind.MOD:
        return f"({lhs} mod {c})" if c > 0 else None
    if c < 0:  # ISL divides by positive constants only: a / -c = (-a) / c
        lhs, c = f"(-1 * {lhs})", -c
    fn = "floor" if e.kind is AffineExprKind.FLOORDIV else "ceil"
    return f"{fn}({lhs} / {c})"


def layout_as_map(memref_type: MemRefType) -> Optional[AffineMap]:
    """The layout of ``memref_type`` as an affine map from logical indices to physical ones:
    the map itself, ``(d0, ..., dn-1) -> (o + d0 * s0 + ...)`` for ``strided<[s0, ...],
    offset: o>``, the identity for the default layout; ``None`` for dynamic strides/offset."""
    from ..affine_expr import constant, dim
    layout = memref_type.layout
    if layout is None:
        return AffineMap.identity(memref_type.rank)
    if isinstance(layout, AffineMap):
        return layout
    if isinstance(layout, StridedLayout):
        if layout.offset is None or any(s is None for s in layout.strides) or \
                len(layout.strides) != memref_type.rank:
            return None
        e = constant(layout.offset)
        for i, s in enumerate(layout.strides):
            e = e + dim(i) * s
        return AffineMap(memref_type.rank, 0, [e])
    return None


def layout_collision(memref_type: MemRefType) -> Optional[LayoutCollision]:
    """``(i, j, p)``: two distinct in-bounds logical indices ``i <lex j`` that the layout of
    ``memref_type`` maps to the same physical location ``p`` (the lexicographically smallest
    such pair), or ``None`` when the layout is injective on the index box.

    Decided exactly with ISL on ``0 <= d_k < shape[k]`` (unbounded above for ``?`` dims).
    Layouts that cannot be decided (symbols, dynamic strides, non-quasi-affine expressions,
    a map whose arity does not match the rank) give ``None``: other checks report those.
    Results are cached per type.
    """
    if not isinstance(memref_type, MemRefType) or memref_type.layout is None or \
            memref_type.rank == 0:
        return None
    return _layout_collision(memref_type)


@lru_cache(maxsize=4096)
def _layout_collision(memref_type: MemRefType) -> Optional[LayoutCollision]:
    import islpy as isl
    amap = layout_as_map(memref_type)
    rank = memref_type.rank
    if amap is None or amap.num_symbols or amap.num_dims != rank or amap.is_identity():
        return None
    results = [_isl_expr(r) for r in amap.results]
    if any(r is None for r in results):
        return None
    dims = [f"i{k}" for k in range(rank)]
    box = [f"0 <= i{k}" if d is None else f"0 <= i{k} < {d}"
           for k, d in enumerate(memref_type.shape)]
    text = f"{{ [{', '.join(dims)}] -> [{', '.join(results)}] : {' and '.join(box)} }}"
    layout = isl.Map(text)
    domain = layout.domain()
    same_place = layout.apply_range(layout.reverse()).intersect(domain.lex_lt_set(domain))
    if same_place.is_empty():
        return None
    point = same_place.wrap().lexmin().sample_point()
    coords = tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python()
                   for k in range(2 * rank))
    first, second = coords[:rank], coords[rank:]
    return first, second, amap.evaluate(first)


def layout_injectivity_error(memref_type: MemRefType) -> Optional[str]:
    """The verifier's message when the layout of ``memref_type`` is not injective, else
    ``None``: ``memref layout (d0, d1) -> (d0 + d1) of memref<4x4xf64, ...> is not injective:
    indices (0, 1) and (1, 0) both map to (1)``."""
    hit = layout_collision(memref_type)
    if hit is None:
        return None
    first, second, place = hit

    def tup(v):
        return "(" + ", ".join(str(x) for x in v) + ")"
    return (f"memref layout {memref_type.layout} of {memref_type} is not injective: indices "
            f"{tup(first)} and {tup(second)} both map to {tup(place)}")


# ---------------------------------------------------------------------------------------------
# dim


@register_op
class DimOp(Operation):
    """``%d = memref.dim %A, %c0 : memref<?x4xf64>``: the size of a dimension (an ``index``);
    a constant for a static dimension, the run-time size for a ``?``."""

    OP_NAME = "memref.dim"

    @classmethod
    def build(cls, memref: Value, dim_index: Value, loc=None) -> "DimOp":
        return cls(operands=[memref, dim_index], result_types=[index], loc=loc)

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def index(self) -> Value:
        return self.operands[1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = p.parse_optional_attr_dict()
        p.skip_ws()
        start = p.pos
        m = p.parse_operand()
        p.expect(",")
        i = p.parse_operand(index)
        p.expect(":")
        p.skip_ws()
        tstart = p.pos
        t = p.parse_type()
        if not isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise p.error(f"invalid kind of type specified: expected builtin.memref, but found "
                          f"'{t}'", tstart)
        p.check_type(m, t, start)
        return cls(operands=[m, i], result_types=[index], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.dim")
        p.print_attr_dict(self.attributes)
        p.print(" ")
        p.print_operands(self.operands)
        p.print(" : " + p.type_str(self.memref.type))

    def result_name_hint(self):
        return "dim"

    def constant_index(self) -> Optional[int]:
        """The dimension asked for, when it is an ``arith.constant``."""
        d = self.index.defining_op
        if d is not None and d.name == "arith.constant" and isinstance(d.attributes.get("value"),
                                                                       IntegerAttr):
            return d.attributes["value"].value
        return None

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1:
            raise self.error("expects two operands and one result")
        t = self.memref.type
        if not isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise self.error(f"operand #0 must be unranked.memref of any type values or "
                             f"non-0-ranked.memref of any type values, but got '{t}'")
        if not isinstance(self.index.type, IndexType):
            raise self.error(f"operand #1 must be index, but got '{self.index.type}'")
        if not isinstance(self.results[0].type, IndexType):
            raise self.error(f"result #0 must be index, but got '{self.results[0].type}'")
        k = self.constant_index()
        if isinstance(t, MemRefType) and k is not None and not 0 <= k < t.rank:
            # stricter than mlir-opt-22, which accepts it (undefined behaviour when it runs)
            raise self.error("index is out of range")


# ---------------------------------------------------------------------------------------------
# copy


def _shapes_compatible(a: Sequence[Optional[int]], b: Sequence[Optional[int]]) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


@register_op
class CopyOp(Operation):
    """``memref.copy %src, %dst : memref<8x16xf32> to memref<?x?xf32>``: every element of
    ``src`` into ``dst`` (same shape at run time; the layouts may differ)."""

    OP_NAME = "memref.copy"

    @classmethod
    def build(cls, source: Value, target: Value, loc=None) -> "CopyOp":
        return cls(operands=[source, target], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def target(self) -> Value:
        return self.operands[1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        dstart = p.pos
        dst = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        st = p.parse_type()
        p.check_type(src, st, start)
        p.expect_keyword("to")
        dt = p.parse_type()
        p.check_type(dst, dt, dstart)
        return cls(operands=[src, dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.copy ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.target.type)}")

    def verify_op(self) -> None:
        if len(self.operands) != 2 or self.results:
            raise self.error("expects two operands and no results")
        for k, v in enumerate(self.operands):
            if not isinstance(v.type, (MemRefType, UnrankedMemRefType)):
                raise self.error(f"operand #{k} must be ranked or unranked memref of any type "
                                 f"values, but got '{v.type}'")
        s, d = self.source.type, self.target.type
        if s.element_type != d.element_type:
            raise self.error("requires the same element type for all operands")
        if isinstance(s, MemRefType) and isinstance(d, MemRefType) and \
                not _shapes_compatible(s.shape, d.shape):
            raise self.error("requires the same shape for all operands")


# ---------------------------------------------------------------------------------------------
# alloca_scope


@register_op
class AllocaScopeOp(Operation):
    """``memref.alloca_scope -> (f32) { ... memref.alloca_scope.return %v : f32 }``: the stack
    allocations made in the region are freed when it ends (a loop body with
    ``memref.alloca`` does not grow the stack)."""

    OP_NAME = "memref.alloca_scope"

    @property
    def body(self):
        return self.regions[0].blocks[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        results = []
        if p.optional("->"):
            results = p.parse_result_types()
        region = p.parse_region()
        block = region.blocks[0]
        if not block.ops or block.ops[-1].name != "memref.alloca_scope.return":
            block.append(AllocaScopeReturnOp(loc=loc))
        attrs = p.parse_optional_attr_dict()
        return cls(result_types=results, attributes=attrs, regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.alloca_scope ")
        if self.results:
            p.print(" -> (" + ", ".join(p.type_str(r.type) for r in self.results) + ")")
        p.print(" ")
        p.print_region(self.regions[0])
        p.print_attr_dict(self.attributes)

    def verify_op(self) -> None:
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects one region with one block")
        term = self.body.ops[-1] if self.body.ops else None
        if term is None or term.name != "memref.alloca_scope.return":
            raise self.error("expects the region to end with 'memref.alloca_scope.return'")
        if [v.type for v in term.operands] != [r.type for r in self.results]:
            raise self.error("expects the types of 'memref.alloca_scope.return' to match its "
                             "results")


@register_op
class AllocaScopeReturnOp(Operation):
    """``memref.alloca_scope.return %v : f32`` (printed only when it has operands)."""

    OP_NAME = "memref.alloca_scope.return"
    IMPLICIT_TERMINATOR = True  # not printed when it has no operands

    @classmethod
    def parse_custom(cls, p, loc, name):
        from .scf import _parse_typed_operands
        attrs = p.parse_optional_attr_dict()
        return cls(operands=_parse_typed_operands(p, cls.OP_NAME), attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        from .scf import _print_typed_operands
        p.print("memref.alloca_scope.return")
        p.print_attr_dict(self.attributes)
        _print_typed_operands(p, self.operands)

    def verify_op(self) -> None:
        if self.parent_op is None or self.parent_op.name != "memref.alloca_scope":
            raise self.error("expects parent op 'memref.alloca_scope'")


# ---------------------------------------------------------------------------------------------
# global / get_global


_NUMBER_LITERAL = re.compile(r"-?\s*[0-9]+(\.[0-9]*(?:[eE][-+]?[0-9]+)?)?")


def _parse_elements_for(p, t: MemRefType, start: int):
    """``dense<...>`` after ``memref.global ... =``: its type is the memref's as a tensor.  The
    literal is read by the attribute parser, given that type."""
    from ..parser import Parser
    literal = p._skip_balanced_attr()
    dims = "".join(f"{d}x" for d in t.shape)
    sub = Parser(f"{literal} : tensor<{dims}{t.element_type}>", p.file.name)
    try:
        attr = sub.parse_attribute()
    except ParseError as exc:
        raise p.error(exc.message, start) from None
    from ..attributes import DenseElementsAttr
    if not isinstance(attr, DenseElementsAttr):
        raise p.error(f"expected a dense elements literal of the memref's type, got "
                      f"'{literal}'", start)
    return attr


@register_op
class GlobalOp(Operation):
    """``memref.global "private" constant @cst : memref<2x3xf32> = dense<...>`` (a buffer
    that lives as long as the program; ``= uninitialized`` or no initializer at all, which
    declares an external one)."""

    OP_NAME = "memref.global"

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"].value

    @property
    def memref_type(self) -> MemRefType:
        return self.attributes["type"].value

    @property
    def initial_value(self):
        """The ``DenseElementsAttr``, ``"uninitialized"``, or ``None`` (an external global)."""
        from ..attributes import UnitAttr
        v = self.attributes.get("initial_value")
        if isinstance(v, UnitAttr):
            return "uninitialized"
        return v

    @property
    def is_constant(self) -> bool:
        return "constant" in self.attributes

    @classmethod
    def parse_custom(cls, p, loc, name):
        from ..attributes import StringAttr, TypeAttr, UnitAttr
        attrs = {}
        if p.peek('"'):
            attrs["sym_visibility"] = StringAttr(p.parse_string())
        if p.optional_keyword("constant"):
            attrs["constant"] = UnitAttr()
        attrs["sym_name"] = StringAttr(p.parse_symbol_name())
        p.expect(":")
        t = p.parse_type()
        if not isinstance(t, MemRefType) or not t.has_static_shape:
            raise ParseError(f"custom op '{name}' type should be static shaped memref, but got "
                             f"'{t}'", loc)
        attrs["type"] = TypeAttr(t)
        if p.optional("="):
            p.skip_ws()
            start = p.pos
            if p.optional_keyword("uninitialized"):
                attrs["initial_value"] = UnitAttr()
            elif p.peek_keyword("dense") or p.peek_keyword("dense_resource") \
                    or p.peek_keyword("sparse"):
                attrs["initial_value"] = _parse_elements_for(p, t, start)
            else:   # mlir-opt reads any attribute of the memref's tensor type there
                number = _NUMBER_LITERAL.match(p.text, start)
                if number and number.group(1):     # mlir-opt points after a float
                    p.pos = number.end()
                    p.skip_ws()
                    raise p.error("floating point value not valid for specified type")
                if number:
                    raise p.error("integer literal not valid for specified type")
                p.parse_attribute()
                raise ParseError(f"custom op '{name}' initial value should be a unit or "
                                 "elements attribute", loc)
        attrs.update(p.parse_optional_attr_dict())
        return cls(attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        vis = self.attributes.get("sym_visibility")
        p.print("memref.global ")
        if vis is not None:
            p.print(f"{vis} ")
        if self.is_constant:
            p.print("constant ")
        p.print(f"@{self.sym_name} : {p.type_str(self.memref_type)}")
        init = self.initial_value
        if init == "uninitialized":
            p.print(" = uninitialized")
        elif init is not None:
            text = str(init)
            p.print(" = " + text[:text.rindex(" : tensor<")] if " : tensor<" in text else
                    " = " + text)
        p.print_attr_dict(self.attributes, elide=("sym_visibility", "constant", "sym_name",
                                                  "type", "initial_value"))

    def verify_op(self) -> None:
        from ..attributes import DenseElementsAttr, StringAttr, TypeAttr
        if self.operands or self.results:
            raise self.error("expects no operands and no results")
        if not isinstance(self.attributes.get("sym_name"), StringAttr):
            raise self.error("requires attribute 'sym_name'")
        vis = self.attributes.get("sym_visibility")
        if vis is not None and (not isinstance(vis, StringAttr)
                                or vis.value not in ("public", "private", "nested")):
            raise self.error(f'visibility expected to be one of ["public", "private", '
                             f'"nested"], but got {vis}')
        verify_alignment(self)
        ta = self.attributes.get("type")
        if not isinstance(ta, TypeAttr) or not isinstance(ta.value, MemRefType):
            raise self.error(f"type should be static shaped memref, but got '{ta}'")
        t = ta.value
        if not t.has_static_shape:
            raise self.error(f"type should be static shaped memref, but got '{t}'")
        init = self.initial_value
        if isinstance(init, DenseElementsAttr):
            if tuple(init.shape) != tuple(t.shape) or init.element_type != t.element_type:
                raise self.error(f"initial value expected to be of type "
                                 f"'tensor<{''.join(f'{d}x' for d in t.shape)}"
                                 f"{t.element_type}>', but was of type "
                                 f"'tensor<{''.join(f'{d}x' for d in init.shape)}"
                                 f"{init.element_type}>'")
        elif init not in (None, "uninitialized"):
            raise self.error("initial value should be a unit or elements attribute")
        if self.is_constant and init in (None, "uninitialized"):
            pass  # MLIR accepts an uninitialized constant


def find_global(op: Operation, name: str) -> Optional[GlobalOp]:
    """The ``memref.global @name`` of the module around ``op`` (MLIR's nearest symbol
    table)."""
    parent = op.parent_op
    while parent is not None and parent.name != "builtin.module":
        parent = parent.parent_op
    if parent is None:
        return None
    for o in parent.regions[0].blocks[0].ops:
        if isinstance(o, GlobalOp) and o.attributes.get("sym_name") is not None and \
                o.sym_name == name:
            return o
    return None


@register_op
class GetGlobalOp(Operation):
    """``%0 = memref.get_global @cst : memref<2x3xf32>``."""

    OP_NAME = "memref.get_global"

    @property
    def global_name(self) -> str:
        return self.attributes["name"].name

    @classmethod
    def parse_custom(cls, p, loc, name):
        sym = p.parse_symbol_name()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = parse_memref_type(p)
        attrs["name"] = SymbolRefAttr(sym)
        return cls(result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"memref.get_global @{self.global_name}")
        p.print_attr_dict(self.attributes, elide=("name",))
        p.print(f" : {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        """The ODS invariants, in the order of the op's traits (counts, then attributes,
        then the result type)."""
        check_counts(self, operands=0, results=1)
        name = self.attributes.get("name")
        if name is None:
            raise self.error("requires attribute 'name'")
        if not isinstance(name, SymbolRefAttr):
            raise self.error("attribute 'name' failed to satisfy constraint: flat symbol "
                             "reference attribute")
        t = self.results[0].type
        if not isinstance(t, MemRefType) or None in t.shape:
            raise self.error(f"result #0 must be statically shaped memref of any type values, "
                             f"but got '{t}'")

    def verify_symbol_uses(self) -> None:
        """MLIR's ``SymbolUserOpInterface``: run by the enclosing module once everything in it
        is verified (so an error further down the function comes first)."""
        g = find_global(self, self.global_name)
        if g is None:
            raise self.error(f"'{self.global_name}' does not reference a valid global memref")
        if g.memref_type != self.results[0].type:
            raise self.error(f"result type '{self.results[0].type}' does not match type "
                             f"'{g.memref_type}' of the global memref @{self.global_name}")
