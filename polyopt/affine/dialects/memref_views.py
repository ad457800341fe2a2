"""Memref views: ``memref.subview``, ``memref.reinterpret_cast``, ``memref.expand_shape`` and
``memref.transpose`` (``memref.collapse_shape`` and ``memref.cast`` are in :mod:`memref`).

A view is a new (sizes, strides, offset) over the same buffer; its result type states as much of
that as is static, in a strided layout (``memref<3x5xf32, strided<[16, 2], offset: 36>>``).
The verifiers infer that layout from the source's as MLIR does (``SubViewOp::inferResultType``,
``computeExpandedLayoutMap``, ``inferTransposeResultType``) and require the written result type
to have exactly those strides and offset (``?`` where the inferred value is dynamic), so that the
lowering can trust the type.

Offsets, sizes and strides are written mixed static/dynamic (``[%o, 4]``); they are stored as
MLIR's properties ``static_offsets``, ``static_sizes``, ``static_strides`` (``array<i64: ...>``,
``-9223372036854775808`` for a dynamic entry, whose value is the next SSA operand in order).
"""

from __future__ import annotations

from itertools import combinations
from typing import Optional, Sequence

from ..affine_expr import AffineMap
from ..attributes import AffineMapAttr, DenseArrayAttr
from ..diagnostics import VerifyError
from ..ir import Operation, Value, register_op
from ..types import IndexType, IntegerType, MemRefType, StridedLayout, i64, index
from .memref import (Reassociation, _reassociation_of, _reassociation_str,
                     parse_memref_type, strides_and_offset)

#: MLIR's ``ShapedType::kDynamic`` in ``static_*`` arrays.
DYNAMIC = -(1 << 63)

__all__ = ["SubViewOp", "ReinterpretCastOp", "ExpandShapeOp", "TransposeOp", "DYNAMIC"]


# ---------------------------------------------------------------------------------------------
# mixed static/dynamic lists: [%o, 4]


def parse_mixed_list(p) -> tuple[list[Optional[int]], list[Value]]:
    """``[%o, 4, %s]`` -> ([None, 4, None], [%o, %s]); the values are ``index``."""
    static: list[Optional[int]] = []
    values: list[Value] = []

    def entry():
        if p.peek("%"):
            values.append(p.parse_operand(index))
            static.append(None)
            return
        value = p.optional_integer(p.op_stack[-1] if p.op_stack else None)
        if value is None:       # MLIR's parseDynamicIndexList
            raise p.error(f"{p.custom_op_prefix()}expected integer value")
        static.append(value)
    p.parse_comma_separated("[", "]", entry)
    return static, values


def print_mixed_list(p, static: Sequence[Optional[int]], values: Sequence[Value]) -> str:
    it = iter(values)
    return "[" + ", ".join(p.value_name(next(it)) if s is None else str(s) for s in static) + "]"


def static_array(static: Sequence[Optional[int]]) -> DenseArrayAttr:
    return DenseArrayAttr(i64, tuple(DYNAMIC if s is None else int(s) for s in static))


def static_list(op: Operation, name: str) -> list[Optional[int]]:
    attr = op.attributes.get(name)
    if not isinstance(attr, DenseArrayAttr):
        raise op.error(f"requires attribute '{name}'")
    return [None if v == DYNAMIC else v for v in attr.values]


def _segments(op: Operation, counts: Sequence[int]) -> DenseArrayAttr:
    return DenseArrayAttr(IntegerType(32), tuple(counts))


def _drop_segments(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k != "operandSegmentSizes"}


def _fmt(v: Optional[int]) -> str:
    """An expected offset, size or stride as ReinterpretCastOp::verify words it."""
    return "dynamic" if v is None else str(v)


class _OffsetsSizesStrides:
    """Accessors of ops with ``static_offsets``/``static_sizes``/``static_strides`` and the
    source followed by the dynamic offsets, sizes and strides as operands."""

    @property
    def source(self) -> Value:
        return self.operands[0]

    def _mixed(self):
        offsets = static_list(self, "static_offsets")
        sizes = static_list(self, "static_sizes")
        strides = static_list(self, "static_strides")
        values = list(self.operands[1:])
        counts = [sum(v is None for v in lst) for lst in (offsets, sizes, strides)]
        if sum(counts) != len(values):
            raise self.error(f"expected {sum(counts)} dynamic offset/size/stride operands, got "
                             f"{len(values)}")
        dyn_off = values[:counts[0]]
        dyn_size = values[counts[0]:counts[0] + counts[1]]
        dyn_stride = values[counts[0] + counts[1]:]
        return (offsets, dyn_off), (sizes, dyn_size), (strides, dyn_stride)

    def _verify_interface(self, max_ranks: tuple[int, int, int]):
        """MLIR's ``verifyOffsetSizeAndStrideOp``, which runs before the op's own verifier:
        as many operands in each segment as dynamic entries in its static list (only the
        generic form can say otherwise, see :meth:`from_generic`), the three lists' lengths
        (``max_ranks``: how many of each the op takes) and no negative static offset or size.
        -> the three ``(static list, dynamic values)``."""
        mismatch = getattr(self, "segment_mismatch", None)
        if mismatch is not None:
            raise VerifyError(mismatch, self.loc)
        mixed = self._mixed()
        (offsets, _), (sizes, _), (strides, _) = mixed
        if not (len(offsets) == 1 and max_ranks[0] == 1) and len(offsets) != len(sizes):
            raise VerifyError(f"expected mixed offsets rank to match mixed sizes rank "
                              f"({len(offsets)} vs {len(sizes)}) so the rank of the result type "
                              f"is well-formed.", self.loc)
        if len(sizes) != len(strides):
            raise VerifyError(f"expected mixed sizes rank to match mixed strides rank "
                              f"({len(sizes)} vs {len(strides)}) so the rank of the result type "
                              f"is well-formed.", self.loc)
        for what, lst, rank in zip(("offset", "size", "stride"), (offsets, sizes, strides),
                                   max_ranks):
            if len(lst) != rank:
                raise VerifyError(f"expected {rank} {what} values, got {len(lst)}", self.loc)
        for what, lst in (("offsets", offsets), ("sizes", sizes)):
            for v in lst:
                if v is not None and v < 0:
                    raise VerifyError(f"expected {what} to be non-negative, but got {v}",
                                      self.loc)
        return mixed

    def mixed_offsets(self) -> list:
        """Each offset as an ``int`` or the ``Value`` giving it."""
        return _merge(*self._mixed()[0])

    def mixed_sizes(self) -> list:
        return _merge(*self._mixed()[1])

    def mixed_strides(self) -> list:
        return _merge(*self._mixed()[2])

    def generic_attributes(self) -> dict:
        attrs = dict(self.attributes)
        try:
            (o, do), (s, ds), (t, dt) = self._mixed()
        except VerifyError:
            return attrs
        attrs["operandSegmentSizes"] = _segments(self, (1, len(do), len(ds), len(dt)))
        return dict(sorted(attrs.items()))

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        """The operands are split by the dynamic entries of the static lists; an
        ``operandSegmentSizes`` that splits them otherwise is remembered for the verifier,
        which reports it where MLIR does."""
        op = cls(operands=operands, result_types=result_types, attributes=_drop_segments(attrs),
                 regions=regions, loc=loc)
        segments = attrs.get("operandSegmentSizes")
        if isinstance(segments, DenseArrayAttr) and len(segments.values) == 4:
            op.segment_mismatch = _segment_mismatch(attrs, segments.values[1:])
        return op


def _segment_mismatch(attrs: dict, counts: Sequence[int]) -> Optional[str]:
    """MLIR's message for the first of offsets, sizes, strides whose operand count (from
    ``operandSegmentSizes``) is not the number of dynamic entries in its static list."""
    for name, count in zip(("offsets", "sizes", "strides"), counts):
        static = attrs.get(f"static_{name}")
        if not isinstance(static, DenseArrayAttr):
            return None
        dynamic = sum(v == DYNAMIC for v in static.values)
        if count != dynamic:
            return (f"expected the number of '{name}' to match the number of dynamic entries "
                    f"in 'static_{name}' ({count} vs {dynamic})")
    return None


def _merge(static: Sequence[Optional[int]], values: Sequence[Value]) -> list:
    it = iter(values)
    return [next(it) if s is None else s for s in static]


def _source_strided(op: Operation, t) -> tuple[list[Optional[int]], Optional[int]]:
    if not isinstance(t, MemRefType):
        raise op.error(f"operand #0 must be memref of any type values, but got '{t}'")
    so = strides_and_offset(t)
    if so is None:
        raise op.error(f"source type '{t}' is not strided")
    return list(so[0]), so[1]


def _check_index_operands(op: Operation) -> None:
    for k, v in enumerate(op.operands[1:], start=1):
        if not isinstance(v.type, IndexType):
            raise op.error(f"operand #{k} must be variadic of index, but got '{v.type}'")


def strided_of(t: MemRefType) -> Optional[tuple[tuple, Optional[int]]]:
    so = strides_and_offset(t)
    return None if so is None else (tuple(so[0]), so[1])


# ---------------------------------------------------------------------------------------------
# memref.subview


def subview_layout(source: MemRefType, offsets, sizes, strides
                   ) -> tuple[list[Optional[int]], Optional[int]]:
    """MLIR's ``SubViewOp::inferResultType``: the result's strides and offset (``None`` when
    dynamic) for static ``offsets``/``sizes``/``strides`` (``None`` entries dynamic)."""
    src_strides, src_offset = strides_and_offset(source)
    offset = src_offset
    result_strides = []
    for off, st, src_st in zip(offsets, strides, src_strides):
        if offset is not None:
            offset = None if off is None or src_st is None else offset + off * src_st
        result_strides.append(None if st is None or src_st is None else st * src_st)
    return result_strides, offset


def rank_reduction_masks(sizes: Sequence[Optional[int]], rank: int):
    """Every way to drop ``len(sizes) - rank`` dimensions of static size 1 (the dropped
    positions, in order of preference: the earliest unit dims first)."""
    units = [k for k, s in enumerate(sizes) if s == 1]
    drop = len(sizes) - rank
    if drop < 0:
        return
    for dropped in combinations(units, drop):
        yield set(dropped)


@register_op
class SubViewOp(_OffsetsSizesStrides, Operation):
    """``%s = memref.subview %A[%o, 4] [3, 5] [1, 2] : memref<8x16xf32> to
    memref<3x5xf32, strided<[16, 2], offset: ?>>``: the elements ``A[o + 1*i, 4 + 2*j]``.

    The result may drop dimensions of size 1 (a rank-reduced view: ``[2, 0] [1, 5] [1, 1]``
    into ``memref<5xf32, strided<[1], offset: 32>>``).
    """

    OP_NAME = "memref.subview"

    @classmethod
    def build(cls, source: Value, offsets: Sequence, sizes: Sequence, strides: Sequence,
              result_type: MemRefType, loc=None) -> "SubViewOp":
        """``offsets``/``sizes``/``strides``: ``int`` or ``index`` ``Value`` entries."""
        values = [x for lst in (offsets, sizes, strides) for x in lst if isinstance(x, Value)]
        attrs = {n: static_array([None if isinstance(x, Value) else x for x in lst])
                 for n, lst in (("static_offsets", offsets), ("static_sizes", sizes),
                                ("static_strides", strides))}
        return cls(operands=[source, *values], result_types=[result_type], attributes=attrs,
                   loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        offsets, dyn_off = parse_mixed_list(p)
        sizes, dyn_size = parse_mixed_list(p)
        strides, dyn_stride = parse_mixed_list(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = parse_memref_type(p)
        p.check_type(src, t, start)
        p.expect_keyword("to")
        r = parse_memref_type(p)
        attrs.update(static_offsets=static_array(offsets), static_sizes=static_array(sizes),
                     static_strides=static_array(strides))
        return cls(operands=[src, *dyn_off, *dyn_size, *dyn_stride], result_types=[r],
                   attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        (o, do), (s, ds), (t, dt) = self._mixed()
        p.print("memref.subview ")
        p.print_operand(self.source)
        p.print(print_mixed_list(p, o, do) + " " + print_mixed_list(p, s, ds) + " " +
                print_mixed_list(p, t, dt))
        p.print_attr_dict(self.attributes, elide=("static_offsets", "static_sizes",
                                                  "static_strides", "operandSegmentSizes"))
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "subview"

    def dropped_dims(self) -> set[int]:
        """The source dimensions the (rank-reduced) result leaves out."""
        return self._match_result()[1]

    def _match_result(self) -> tuple[Optional[str], set[int]]:
        """(None, dropped dims) when the result type is the inferred one or a rank-reduced
        version of it, else (MLIR's reason, {})."""
        src, res = self.source.type, self.results[0].type
        (offsets, _), (sizes, _), (strides, _) = self._mixed()
        inferred_strides, inferred_offset = subview_layout(src, offsets, sizes, strides)
        res_form = strided_of(res)
        reason = "mismatch of result sizes"
        for dropped in rank_reduction_masks(sizes, res.rank):
            kept = [k for k in range(len(sizes)) if k not in dropped]
            if [sizes[k] for k in kept] != list(res.shape):
                continue
            if res_form is None or res_form[1] != inferred_offset or \
                    not all(res.shape[j] == 1 or res_form[0][j] == inferred_strides[k]
                            for j, k in enumerate(kept)):
                reason = "mismatch of result layout"
                continue
            return None, dropped
        return reason, set()

    def verify_op(self) -> None:
        src, res = self.source.type, self.results[0].type
        _source_strided(self, src)
        _check_index_operands(self)
        if not isinstance(res, MemRefType):
            raise self.error(f"result #0 must be memref of any type values, but got '{res}'")
        (offsets, _), (sizes, _), (strides, _) = self._verify_interface((src.rank,) * 3)
        if res.rank > src.rank:
            raise VerifyError(f"expected result rank to be smaller or equal to the source rank, "
                              f"but got '{res}'", self.loc)
        if res.element_type != src.element_type:
            raise VerifyError(f"expected result element type to be '{src.element_type}', but got "
                              f"'{res}'", self.loc)
        if res.memory_space != src.memory_space:
            raise VerifyError("expected result and source memory spaces to match", self.loc)
        if any(stride is not None and stride < 0 for stride in strides):
            raise self.error("expected sizes and strides to be non-negative")
        reason, _ = self._match_result()
        if reason is not None:
            inferred_strides, inferred_offset = subview_layout(src, offsets, sizes, strides)
            expected = MemRefType(tuple(sizes), src.element_type,
                                  _strided_layout(inferred_strides, inferred_offset),
                                  src.memory_space)
            raise VerifyError(f"expected result type to be '{expected}' or a rank-reduced "
                              f"version. ({reason}), but got '{res}'", self.loc)
        # the bounds after the result type, as upstream checks them
        for k, (off, size, stride, dim) in enumerate(zip(offsets, sizes, strides, src.shape)):
            if None in (off, size, stride, dim) or size == 0:
                continue
            last = off + (size - 1) * stride
            if off >= dim:
                raise VerifyError(f"offset {off} is out-of-bounds: {off} >= {dim}", self.loc)
            if last >= dim:
                raise VerifyError(f"slice along dimension {k} runs out-of-bounds: {last} >= "
                                  f"{dim}", self.loc)


def _strided_layout(strides, offset):
    from ..types import StridedLayout
    return StridedLayout(tuple(strides), offset)


# ---------------------------------------------------------------------------------------------
# memref.reinterpret_cast


@register_op
class ReinterpretCastOp(_OffsetsSizesStrides, Operation):
    """``%r = memref.reinterpret_cast %A to offset: [0], sizes: [16, 8], strides: [8, 1] :
    memref<8x16xf32> to memref<16x8xf32>``: the buffer of ``A`` seen with the given offset,
    sizes and strides (they are the result's; the source's do not matter)."""

    OP_NAME = "memref.reinterpret_cast"

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        p.expect_keyword("to")
        p.expect_keyword("offset")
        p.expect(":")
        offsets, dyn_off = parse_mixed_list(p)
        p.expect(",")
        p.expect_keyword("sizes")
        p.expect(":")
        sizes, dyn_size = parse_mixed_list(p)
        p.expect(",")
        p.expect_keyword("strides")
        p.expect(":")
        strides, dyn_stride = parse_mixed_list(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.skip_ws()
        t = p.parse_type()
        p.check_type(src, t, start)
        p.expect_keyword("to")
        r = parse_memref_type(p)
        attrs.update(static_offsets=static_array(offsets), static_sizes=static_array(sizes),
                     static_strides=static_array(strides))
        return cls(operands=[src, *dyn_off, *dyn_size, *dyn_stride], result_types=[r],
                   attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        (o, do), (s, ds), (t, dt) = self._mixed()
        p.print("memref.reinterpret_cast ")
        p.print_operand(self.source)
        p.print(f" to offset: {print_mixed_list(p, o, do)}, sizes: {print_mixed_list(p, s, ds)}"
                f", strides: {print_mixed_list(p, t, dt)}")
        p.print_attr_dict(self.attributes, elide=("static_offsets", "static_sizes",
                                                  "static_strides", "operandSegmentSizes"))
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "reinterpret_cast"

    def verify_op(self) -> None:
        from ..types import UnrankedMemRefType
        src, res = self.source.type, self.results[0].type
        if not isinstance(src, (MemRefType, UnrankedMemRefType)):
            raise self.error(f"operand #0 must be ranked or unranked memref of any type values, "
                             f"but got '{src}'")
        _check_index_operands(self)
        if not isinstance(res, MemRefType) or strided_of(res) is None:
            raise self.error(f"result #0 must be strided memref of any type values, but got "
                             f"'{res}'")
        (offsets, _), (sizes, _), (strides, _) = self._verify_interface((1, res.rank, res.rank))
        # ReinterpretCastOp::verify words its errors without the op's name (emitError)
        if src.memory_space != res.memory_space:     # checked first, as upstream does
            raise VerifyError(f"different memory spaces specified for source type '{src}' and "
                              f"result memref type '{res}'", self.loc)
        if src.element_type != res.element_type:
            raise VerifyError(f"different element types specified for source type '{src}' and "
                              f"result memref type '{res}'", self.loc)
        # as upstream's verifier: the result type's static sizes, offset and strides must be
        # the op's; where the type says '?', any value of the op's, static or not, fits
        for k, (size, dim) in enumerate(zip(sizes, res.shape)):
            if dim is not None and size != dim:
                raise VerifyError(f"expected result type with size = {_fmt(size)} instead of "
                                  f"{_fmt(dim)} in dim = {k}", self.loc)
        res_strides, res_offset = strided_of(res)
        if res_offset is not None and offsets[0] != res_offset:
            raise VerifyError(f"expected result type with offset = {_fmt(offsets[0])} instead "
                              f"of {_fmt(res_offset)}", self.loc)
        for k, (st, rs) in enumerate(zip(strides, res_strides)):
            if rs is not None and st != rs:
                raise VerifyError(f"expected result type with stride = {_fmt(st)} instead of "
                                  f"{_fmt(rs)} in dim = {k}", self.loc)


# ---------------------------------------------------------------------------------------------
# memref.expand_shape


def expanded_layout(source: MemRefType, result_shape: Sequence[Optional[int]],
                    groups: Reassociation) -> Optional[tuple[list, Optional[int]]]:
    """MLIR's ``computeExpandedLayoutMap``: each source dimension of stride ``s`` expands into
    dimensions whose strides are ``s`` times the sizes inside it."""
    so = strides_and_offset(source)
    if so is None:
        return None
    src_strides, offset = so
    strides: list[Optional[int]] = [None] * len(result_shape)
    for group, src_stride in zip(groups, src_strides):
        acc = src_stride
        for d in reversed(group):
            strides[d] = acc
            size = result_shape[d]
            acc = None if acc is None or size is None else acc * size
    # a rank-0 source has no groups: its expansion is all unit dimensions, of stride 1
    return [1 if s is None and not groups else s for s in strides], offset


@register_op
class ExpandShapeOp(Operation):
    """``%e = memref.expand_shape %A [[0, 1], [2]] output_shape [2, 4, 16] : memref<8x16xf32>
    into memref<2x4x16xf32>``; ``output_shape`` entries may be ``index`` values (the ``?``
    sizes of the result, in order)."""

    OP_NAME = "memref.expand_shape"

    @classmethod
    def build(cls, source: Value, reassociation: Sequence[Sequence[int]],
              output_shape: Sequence[int], loc=None) -> "ExpandShapeOp":
        """The op expanding ``source`` (a ranked strided memref) by ``reassociation`` into the
        static ``output_shape``, with the layout of :func:`expanded_layout` (none where the
        result is row-major from offset 0)."""
        from .memref import _reassociation_attr
        t: MemRefType = source.type
        groups = tuple(tuple(int(i) for i in g) for g in reassociation)
        shape = tuple(int(n) for n in output_shape)
        strides, offset = expanded_layout(t, shape, groups)
        row_major = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            row_major[d] = row_major[d + 1] * shape[d + 1]
        layout = None if (list(strides) == row_major and offset == 0) else \
            StridedLayout(tuple(strides), offset)
        return cls(operands=[source],
                   result_types=[MemRefType(shape, t.element_type, layout, t.memory_space)],
                   attributes={"reassociation": _reassociation_attr(groups),
                               "static_output_shape": static_array(list(shape))}, loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def reassociation(self) -> Reassociation:
        groups = _reassociation_of(self.attributes.get("reassociation"))
        if groups is None:
            raise ValueError(f"{self.name} without a valid 'reassociation' attribute")
        return groups

    def mixed_output_shape(self) -> list:
        return _merge(static_list(self, "static_output_shape"), self.operands[1:])

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
        p.expect_keyword("output_shape")
        shape, values = parse_mixed_list(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_memref_type(p)
        p.check_type(v, src, start)
        p.expect_keyword("into")
        dst = parse_memref_type(p)
        attrs.update(reassociation=reassociation, static_output_shape=static_array(shape))
        return cls(operands=[v, *values], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.expand_shape ")
        p.print_operand(self.source)
        p.print(" " + _reassociation_str(self.reassociation) + " output_shape " +
                print_mixed_list(p, static_list(self, "static_output_shape"),
                                 self.operands[1:]))
        p.print_attr_dict(self.attributes, elide=("reassociation", "static_output_shape"))
        p.print(f" : {p.type_str(self.source.type)} into {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "expand_shape"

    def verify_op(self) -> None:
        src, dst = self.source.type, self.results[0].type
        if not isinstance(src, MemRefType) or strides_and_offset(src) is None:
            raise self.error(f"operand #0 must be strided memref of any type values, but got "
                             f"'{src}'")
        if not isinstance(dst, MemRefType) or strides_and_offset(dst) is None:
            raise self.error(f"result #0 must be strided memref of any type values, but got "
                             f"'{dst}'")
        _check_index_operands(self)
        groups = _reassociation_of(self.attributes.get("reassociation"))
        if groups is None:
            raise self.error("requires attribute 'reassociation'")
        if src.rank > dst.rank:
            raise self.error(f"has source rank {src.rank} and result rank {dst.rank}. This is "
                             f"not an expansion ({src.rank} > {dst.rank}).")
        shape = static_list(self, "static_output_shape")
        if len(shape) != dst.rank:
            raise self.error(f"expected number of static shape dims to be equal to the output "
                             f"rank ({dst.rank}) but found {len(shape)} inputs instead")
        if sum(s is None for s in shape) != len(self.operands) - 1:
            raise self.error(f"mismatch in dynamic dims in output_shape and static_output_shape: "
                             f"static_output_shape has {sum(s is None for s in shape)} dynamic "
                             f"dims while output_shape has {len(self.operands) - 1} values")
        for k, (s, d) in enumerate(zip(shape, dst.shape)):
            if s is not None and d is not None and s != d or (s is None) != (d is None):
                raise self.error(f"invalid output shape provided at pos {k}")
        from .memref import CollapseShapeOp
        CollapseShapeOp._verify_collapsed_shape(self, src.shape, dst.shape, groups)
        layout = expanded_layout(src, dst.shape, groups)
        if layout is None:
            raise self.error("invalid source layout map")
        form = strided_of(dst)
        if form is None or list(form[0]) != list(layout[0]) or form[1] != layout[1]:
            expected = MemRefType(tuple(dst.shape), src.element_type,
                                  None if src.layout is None else _strided_layout(*layout),
                                  src.memory_space)
            raise self.error(f"expected expanded type to be '{expected}' but found '{dst}'")


# ---------------------------------------------------------------------------------------------
# memref.transpose


@register_op
class TransposeOp(Operation):
    """``%t = memref.transpose %A (d0, d1) -> (d1, d0) : memref<8x16xf32> to
    memref<16x8xf32, strided<[1, 16]>>``: result dimension ``k`` is source dimension
    ``permutation[k]``."""

    OP_NAME = "memref.transpose"

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def permutation(self) -> AffineMap:
        return self.attributes["permutation"].value

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        p.skip_ws()
        perm = p.parse_affine_map_or_set_ref(want="map")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_memref_type(p)
        p.check_type(v, src, start)
        p.expect_keyword("to")
        dst = parse_memref_type(p)
        attrs["permutation"] = AffineMapAttr(perm)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.transpose ")
        p.print_operand(self.source)
        p.print(f" {self.permutation}")
        p.print_attr_dict(self.attributes, elide=("permutation",))
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "transpose"

    def dims(self) -> list[int]:
        """``dims()[k]``: the source dimension that result dimension ``k`` is."""
        return [e.position for e in self.permutation.results]

    def verify_op(self) -> None:
        src, dst = self.source.type, self.results[0].type
        attr = self.attributes.get("permutation")
        if not isinstance(attr, AffineMapAttr):
            raise self.error("requires attribute 'permutation'")
        if not attr.value.is_permutation():
            raise self.error("expected a permutation map")
        if not isinstance(src, MemRefType) or strides_and_offset(src) is None:
            raise self.error(f"operand #0 must be strided memref of any type values, but got "
                             f"'{src}'")
        if attr.value.num_dims != src.rank:
            raise self.error("expected a permutation map of same rank as the input")
        if not isinstance(dst, MemRefType):
            raise self.error(f"result #0 must be strided memref of any type values, but got "
                             f"'{dst}'")
        strides, offset = strides_and_offset(src)
        perm = self.dims()
        shape = tuple(src.shape[d] for d in perm)
        want = ([strides[d] for d in perm], offset)
        form = strided_of(dst)
        if dst.shape != shape or dst.element_type != src.element_type or form is None or \
                list(form[0]) != want[0] or form[1] != want[1]:
            canonical = MemRefType(shape, src.element_type, _strided_layout(*want),
                                   src.memory_space)
            raise self.error(f"result type '{dst}' is not equivalent to the canonical transposed "
                             f"input type '{canonical}'")
