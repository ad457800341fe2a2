"""memref ops that reinterpret or update a buffer: ``memref.reshape`` (the shape read from a
memref operand), ``memref.view`` (a typed view at a byte shift into an ``i8`` buffer),
``memref.extract_strided_metadata`` (base buffer, offset, sizes, strides) and
``memref.atomic_rmw``.  Syntax and messages are mlir-opt-22's::

    %reshape = memref.reshape %A(%shape) : (memref<4x5xf32>, memref<2xindex>) -> memref<?x?xf32>
    %view = memref.view %buf[%shift][%n] : memref<2048xi8> to memref<?x4xf32>
    %base_buffer, %offset, %sizes, %strides = memref.extract_strided_metadata %v
        : memref<?xf32, strided<[?], offset: ?>> -> memref<f32>, index, index, index
    %old = memref.atomic_rmw addf %x, %A[%i, %j] : (f32, memref<4x5xf32>) -> f32

(mlir-opt prints the sizes and strides of a rank-2 or higher extract_strided_metadata as
groups, ``%sizes:2, %strides:2``; polyopt's printer names them one by one, which reads back
the same.)  :mod:`polyopt.codegen.lower_memref_buffers` lowers them."""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..affine_expr import AffineMap
from ..attributes import IntegerAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Operation, Value, register_op
from ..types import (FloatType, IndexType, IntegerType, MemRefType, Type, UnrankedMemRefType,
                     i64, index)
from .memref import parse_memref_type, strides_and_offset

__all__ = ["ReshapeOp", "ViewOp", "ExtractStridedMetadataOp", "AtomicRMWOp", "ATOMIC_KINDS"]


def _identity_layout(t: MemRefType) -> bool:
    """MLIR's ``getLayout().isIdentity()``: no layout or an identity map (a ``strided<...>``
    layout is not one, even with row-major strides)."""
    layout = t.layout
    return layout is None or isinstance(layout, AffineMap) and layout.is_identity()


def _parse_type(p) -> Type:
    p.skip_ws()
    return p.parse_type()


# ---------------------------------------------------------------------------------------------
# memref.reshape


@register_op
class ReshapeOp(Operation):
    """``%r = memref.reshape %src(%shape) : (memref<4x5xf32>, memref<2xindex>) ->
    memref<2x10xf32>``: the (row-major) buffer of ``src`` with the sizes held in ``shape``."""

    OP_NAME = "memref.reshape"

    @classmethod
    def build(cls, source: Value, shape: Value, result_type: Type, loc=None) -> "ReshapeOp":
        return cls(operands=[source, shape], result_types=[result_type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def shape(self) -> Value:
        return self.operands[1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        p.expect("(")
        shape = p.parse_operand()
        p.expect(")")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.expect("(")
        t_src = _parse_type(p)
        p.expect(",")
        t_shape = _parse_type(p)
        p.expect(")")
        p.expect("->")
        t_res = _parse_type(p)
        p.check_type(src, t_src, start)
        p.check_type(shape, t_shape, start)
        return cls(operands=[src, shape], result_types=[t_res], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.reshape ")
        p.print_operand(self.source)
        p.print("(")
        p.print_operand(self.shape)
        p.print(")")
        p.print_attr_dict(self.attributes)
        p.print(f" : ({p.type_str(self.source.type)}, {p.type_str(self.shape.type)}) -> "
                f"{p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "reshape"

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1:
            raise self.error("expects a source, a shape and one result")
        src, shape, res = self.source.type, self.shape.type, self.results[0].type
        if not isinstance(src, (MemRefType, UnrankedMemRefType)):
            raise self.error(f"operand #0 must be ranked or unranked memref of any type values, "
                             f"but got '{src}'")
        if not (isinstance(shape, MemRefType) and shape.rank == 1 and isinstance(
                shape.element_type, (IntegerType, IndexType))):
            raise self.error(f"operand #1 must be 1D memref of signless integer or index "
                             f"values, but got '{shape}'")
        if not isinstance(res, (MemRefType, UnrankedMemRefType)):
            raise self.error(f"result #0 must be ranked or unranked memref of any type values, "
                             f"but got '{res}'")
        if src.element_type != res.element_type:
            raise self.error("element types of source and destination memref types should be "
                             "the same")
        if isinstance(src, MemRefType) and not _identity_layout(src):
            raise self.error("source memref type should have identity affine map")
        length = shape.shape[0]
        if isinstance(res, MemRefType):
            if not _identity_layout(res):
                raise self.error("result memref type should have identity affine map")
            if length is None:
                raise self.error("cannot use shape operand with dynamic length to reshape to "
                                 "statically-ranked memref type")
            if length != res.rank:
                raise self.error("length of shape operand differs from the result's memref "
                                 "rank")


# ---------------------------------------------------------------------------------------------
# memref.view


@register_op
class ViewOp(Operation):
    """``%v = memref.view %buf[%shift][%n] : memref<2048xi8> to memref<?x4xf32>``: a row-major
    memref of the result type starting ``shift`` bytes into the ``i8`` buffer; one ``index``
    operand per ``?`` of the result."""

    OP_NAME = "memref.view"

    @classmethod
    def build(cls, source: Value, byte_shift: Value, sizes: Sequence[Value],
              result_type: MemRefType, loc=None) -> "ViewOp":
        return cls(operands=[source, byte_shift, *sizes], result_types=[result_type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def byte_shift(self) -> Value:
        return self.operands[1]

    @property
    def sizes(self) -> tuple[Value, ...]:
        return tuple(self.operands[2:])

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        p.expect("[")       # exactly one byte shift, read as upstream reads it
        p.skip_ws()
        at = p.pos
        shift = [p.parse_operand()]
        p.expect("]")
        p.skip_ws()
        sizes = p.parse_operand_list("square")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t_src = _parse_type(p)
        p.expect_keyword("to")
        t_res = _parse_type(p)
        p.check_type(src, t_src, start)
        for v in (*shift, *sizes):
            p.check_type(v, index, at)
        return cls(operands=[src, *shift, *sizes], result_types=[t_res], attributes=attrs,
                   loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.view ")
        p.print_operand(self.source)
        p.print("[")
        p.print_operand(self.byte_shift)
        p.print("][")
        p.print_operands(self.sizes)
        p.print("]")
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return "view"

    def verify_op(self) -> None:
        if len(self.operands) < 2 or len(self.results) != 1:
            raise self.error("expects a source, a byte shift and one result")
        src, res = self.source.type, self.results[0].type
        if not (isinstance(src, MemRefType) and src.rank == 1 and
                src.element_type == IntegerType(8)):
            raise self.error(f"operand #0 must be 1D memref of 8-bit signless integer values, "
                             f"but got '{src}'")
        for k, v in enumerate(self.operands[1:], start=1):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        if not isinstance(res, MemRefType):
            raise self.error(f"result #0 must be memref of any type values, but got '{res}'")
        if not _identity_layout(src):
            raise VerifyError(f"unsupported map for base memref type '{src}'", self.loc)
        if not _identity_layout(res):
            raise VerifyError(f"unsupported map for result memref type '{res}'", self.loc)
        if src.memory_space != res.memory_space:
            raise VerifyError(f"different memory spaces specified for base memref type '{src}' "
                              f"and view memref type '{res}'", self.loc)
        want = sum(1 for d in res.shape if d is None)
        if len(self.sizes) != want:
            raise self.error(f"incorrect number of dynamic sizes, has {len(self.sizes)}, "
                             f"expected {want}")


# ---------------------------------------------------------------------------------------------
# memref.extract_strided_metadata


@register_op
class ExtractStridedMetadataOp(Operation):
    """``%base_buffer, %offset, %sizes, %strides = memref.extract_strided_metadata %m :
    memref<5xf32, strided<[?], offset: ?>> -> memref<f32>, index, index, index``: the base
    buffer (rank 0), the offset, then the sizes and the strides of ``m``."""

    OP_NAME = "memref.extract_strided_metadata"

    @classmethod
    def build(cls, source: Value, loc=None) -> "ExtractStridedMetadataOp":
        t = source.type
        base = MemRefType((), t.element_type, None, t.memory_space)
        return cls(operands=[source], result_types=[base] + [index] * (1 + 2 * t.rank),
                   loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def base_buffer(self) -> Value:
        return self.results[0]

    @property
    def offset(self) -> Value:
        return self.results[1]

    @property
    def sizes(self) -> tuple[Value, ...]:
        r = (len(self.results) - 2) // 2
        return tuple(self.results[2:2 + r])

    @property
    def strides(self) -> tuple[Value, ...]:
        r = (len(self.results) - 2) // 2
        return tuple(self.results[2 + r:])

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        src = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.skip_ws()
        at = p.pos
        try:
            t = parse_memref_type(p)
        except ParseError as e:
            raise p.error(f"custom op '{name}' {e.message}", at) from None
        p.check_type(src, t, start)
        p.expect("->")
        types = [_parse_type(p)]
        while p.optional(","):
            types.append(_parse_type(p))
        return cls(operands=[src], result_types=types, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.extract_strided_metadata ")
        p.print_operand(self.source)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.source.type)} -> ")
        p.print_types(r.type for r in self.results)

    def result_name_hint(self):
        r = max(0, (len(self.results) - 2) // 2)
        return ["base_buffer", "offset", ("sizes", r), ("strides", r)]

    def verify_op(self) -> None:
        if len(self.operands) != 1:
            raise self.error("expects one source")
        t = self.source.type
        if not isinstance(t, MemRefType) or strides_and_offset(t) is None:
            raise self.error(f"operand #0 must be strided memref of any type values, but got "
                             f"'{t}'")
        got = [r.type for r in self.results]
        base = got[0] if got else None
        if isinstance(base, MemRefType) and (base.rank != 0 or not _identity_layout(base)):
            raise self.error(f"result #0 must be strided memref of any type values of rank 0, "
                             f"but got '{base}'")
        want = [MemRefType((), t.element_type, None, t.memory_space)] + [index] * (1 + 2 * t.rank)
        if got != want:
            def names(ts):
                return ", ".join(f"'{x}'" for x in ts)
            raise self.error(f"inferred type(s) {names(want)} are incompatible with return "
                             f"type(s) of operation {names(got)}")


# ---------------------------------------------------------------------------------------------
# memref.atomic_rmw

#: MLIR's AtomicRMWKind, in its enum order (the value is the generic form's ``kind``)
ATOMIC_KINDS = ("addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu",
                "minimumf", "minnumf", "mins", "minu", "mulf", "muli", "ori", "xori")
FLOAT_KINDS = ("addf", "maximumf", "maxnumf", "minimumf", "minnumf", "mulf")
INT_KINDS = ("addi", "andi", "maxs", "maxu", "mins", "minu", "muli", "ori", "xori")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@register_op
class AtomicRMWOp(Operation):
    """``%old = memref.atomic_rmw addf %x, %A[%i] : (f32, memref<8xf32>) -> f32``: atomically
    ``A[i] = A[i] <kind> x``, returning the value ``A[i]`` had."""

    OP_NAME = "memref.atomic_rmw"

    @classmethod
    def build(cls, kind: str, value: Value, memref: Value, indices: Sequence[Value],
              loc=None) -> "AtomicRMWOp":
        return cls(operands=[value, memref, *indices], result_types=[value.type],
                   attributes={"kind": IntegerAttr(ATOMIC_KINDS.index(kind), i64)}, loc=loc)

    @property
    def kind(self) -> Optional[str]:
        a = self.attributes.get("kind")
        if isinstance(a, IntegerAttr) and 0 <= a.value < len(ATOMIC_KINDS):
            return ATOMIC_KINDS[a.value]
        return None

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def memref(self) -> Value:
        return self.operands[1]

    @property
    def indices(self) -> tuple[Value, ...]:
        return tuple(self.operands[2:])

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        at = p.pos
        m = _WORD.match(p.text, p.pos)
        if not m or m.group(0) not in ATOMIC_KINDS:
            raise p.error(f"custom op '{name}' expected string or keyword containing one of the "
                          f"following enum values for attribute 'kind' ["
                          + ", ".join(ATOMIC_KINDS) + "]", at)
        p.pos = m.end()
        kind = m.group(0)
        p.skip_ws()
        vstart = p.pos
        value = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        mstart = p.pos
        mem = p.parse_operand()
        p.skip_ws()
        istart = p.pos
        idx = p.parse_operand_list("square")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.expect("(")
        t_val = _parse_type(p)
        p.expect(",")
        p.skip_ws()
        tm_at = p.pos
        t_mem = p.parse_type()
        if not isinstance(t_mem, MemRefType):
            raise p.error(f"invalid kind of type specified: expected builtin.memref, but found "
                          f"'{t_mem}'", tm_at)
        p.expect(")")
        p.expect("->")
        t_res = _parse_type(p)
        p.check_type(value, t_val, vstart)
        p.check_type(mem, t_mem, mstart)
        for v in idx:
            p.check_type(v, index, istart)
        attrs["kind"] = IntegerAttr(ATOMIC_KINDS.index(kind), i64)
        return cls(operands=[value, mem, *idx], result_types=[t_res], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"memref.atomic_rmw {self.kind} ")
        p.print_operand(self.value)
        p.print(", ")
        p.print_operand(self.memref)
        p.print("[")
        p.print_operands(self.indices)
        p.print("]")
        p.print_attr_dict(self.attributes, elide=("kind",))
        p.print(f" : ({p.type_str(self.value.type)}, {p.type_str(self.memref.type)}) -> "
                f"{p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if len(self.operands) < 2 or len(self.results) != 1:
            raise self.error("expects a value, a memref and one result")
        kind = self.kind
        if kind is None:
            raise self.error("attribute 'kind' failed to satisfy constraint: allowed 64-bit "
                             "signless integer cases: " + ", ".join(
                                 str(k) for k in range(len(ATOMIC_KINDS))))
        vt, mt, rt = self.value.type, self.memref.type, self.results[0].type
        if not isinstance(vt, (FloatType, IntegerType)):
            raise self.error(f"operand #0 must be signless integer or floating-point, but got "
                             f"'{vt}'")
        if not isinstance(mt, MemRefType):
            raise self.error(f"operand #1 must be memref of signless integer or floating-point "
                             f"values, but got '{mt}'")
        for k, v in enumerate(self.indices, start=2):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        if vt != mt.element_type:
            raise self.error("failed to verify that value type matches element type of memref")
        if vt != rt:
            raise self.error("failed to verify that all of {value, result} have same type")
        if len(self.indices) != mt.rank:
            raise self.error("expects the number of subscripts to be equal to memref rank")
        if kind in FLOAT_KINDS and not isinstance(vt, FloatType):
            raise self.error(f"with kind '{kind}' expects a floating-point type")
        if kind in INT_KINDS and not isinstance(vt, IntegerType):
            raise self.error(f"with kind '{kind}' expects an integer type")
