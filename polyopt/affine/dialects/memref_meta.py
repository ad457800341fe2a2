"""memref ops about a buffer rather than its elements: ``memref.rank``,
``memref.memory_space_cast``, ``memref.extract_aligned_pointer_as_index``,
``memref.assume_alignment``, ``memref.realloc`` and ``memref.prefetch``.  Syntax, generic
form and messages are mlir-opt-22's::

    %0 = memref.rank %A : memref<4x?xf32>
    %memspacecast = memref.memory_space_cast %A : memref<?xf32> to memref<?xf32, 1>
    %intptr = memref.extract_aligned_pointer_as_index %A : memref<?xf32> -> index
    %assume_align = memref.assume_alignment %A, 16 : memref<4x4xf16>
    %1 = memref.realloc %B(%n) {alignment = 8 : i64} : memref<2xf32> to memref<?xf32>
    memref.prefetch %A[%i, %j], write, locality<1>, data : memref<4x4xf16>

They are lowered to LLVM by :mod:`polyopt.codegen.lower_memref_meta`."""

from __future__ import annotations

from typing import Optional

from ..attributes import IntegerAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Operation, Value, register_op
from ..types import IndexType, MemRefType, Type, UnrankedMemRefType, i1, i32, i64, index

__all__ = ["RankOp", "MemorySpaceCastOp", "ExtractAlignedPointerAsIndexOp", "AssumeAlignmentOp",
           "ReallocOp", "PrefetchOp"]

_ANY_MEMREF = (MemRefType, UnrankedMemRefType)


def _parse_memref_operand(p) -> tuple[Value, int]:
    p.skip_ws()
    at = p.pos
    return p.parse_operand(), at


def _parse_any_memref_type(p) -> Type:
    p.skip_ws()
    at = p.pos
    t = p.parse_type()
    if not isinstance(t, _ANY_MEMREF):
        raise p.error(f"{p.custom_op_prefix()}invalid kind of type specified: expected "
                      f"builtin.memref, but found '{t}'", at)
    return t


def _require_counts(op: Operation, operands: int, results: int) -> None:
    if len(op.results) != results:
        raise op.error("requires zero results" if results == 0 else
                       "requires one result" if results == 1 else f"requires {results} results")
    if len(op.operands) != operands:
        raise op.error(f"requires {operands} operand{'s' if operands != 1 else ''}")


class _UnaryMemrefOp(Operation):
    """``NAME %m : SOURCE_TYPE <SEP> RESULT_TYPE`` (or ``: TYPE`` alone when the result type
    is fixed)."""

    SEPARATOR: Optional[str] = None    # "to", "->", or None (result type not written)
    HINT: Optional[str] = None

    @property
    def source(self) -> Value:
        return self.operands[0]

    def _result_type_for(self, source: Type) -> Type:
        raise NotImplementedError

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, at = _parse_memref_operand(p)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = _parse_any_memref_type(p)
        if cls.SEPARATOR == "to":
            p.expect_keyword("to")
            res = _parse_any_memref_type(p)
        elif cls.SEPARATOR == "->":
            p.expect("->")
            res = p.parse_type()
        else:
            res = cls.FIXED_RESULT
        p.check_type(m, src, at)
        return cls(operands=[m], result_types=[res], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operand(self.source)
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.source.type))
        if self.SEPARATOR is not None:
            p.print(f" {self.SEPARATOR} {p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return self.HINT

    def verify_op(self) -> None:
        _require_counts(self, 1, 1)
        t = self.source.type
        if not isinstance(t, _ANY_MEMREF):
            raise self.error(f"operand #0 must be ranked or unranked memref of any type values, "
                             f"but got '{t}'")


@register_op
class RankOp(_UnaryMemrefOp):
    """``%0 = memref.rank %A : memref<4x?xf32>``: the rank, an ``index``."""

    OP_NAME = "memref.rank"
    FIXED_RESULT = index

    def verify_op(self) -> None:
        super().verify_op()
        if not isinstance(self.results[0].type, IndexType):
            raise self.error(f"result #0 must be index, but got '{self.results[0].type}'")


@register_op
class ExtractAlignedPointerAsIndexOp(_UnaryMemrefOp):
    """``%intptr = memref.extract_aligned_pointer_as_index %A : memref<?xf32> -> index``."""

    OP_NAME = "memref.extract_aligned_pointer_as_index"
    SEPARATOR = "->"
    HINT = "intptr"

    def verify_op(self) -> None:
        super().verify_op()
        if not isinstance(self.results[0].type, IndexType):
            raise self.error(f"result #0 must be index, but got '{self.results[0].type}'")


@register_op
class MemorySpaceCastOp(_UnaryMemrefOp):
    """``%memspacecast = memref.memory_space_cast %A : memref<?xf32> to memref<?xf32, 1>``:
    the same buffer seen in another memory space."""

    OP_NAME = "memref.memory_space_cast"
    SEPARATOR = "to"
    HINT = "memspacecast"

    def verify_op(self) -> None:
        super().verify_op()
        src, res = self.source.type, self.results[0].type
        if not isinstance(res, _ANY_MEMREF):
            raise self.error(f"result #0 must be ranked or unranked memref of any type values, "
                             f"but got '{res}'")
        same = type(src) is type(res) and src.element_type == res.element_type and (
            isinstance(src, UnrankedMemRefType)
            or (src.shape, src.layout) == (res.shape, res.layout))
        if not same:
            raise self.error(f"operand type '{src}' and result type '{res}' are cast "
                             f"incompatible")


@register_op
class AssumeAlignmentOp(Operation):
    """``%assume_align = memref.assume_alignment %A, 16 : memref<4x4xf16>``: ``%A`` is
    aligned to 16 bytes; the result is ``%A``."""

    OP_NAME = "memref.assume_alignment"

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def alignment(self) -> Optional[int]:
        a = self.attributes.get("alignment")
        return a.value if isinstance(a, IntegerAttr) else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, at = _parse_memref_operand(p)
        p.expect(",")
        alignment = p.parse_integer("integer value", op_name=name)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = _parse_any_memref_type(p)
        p.check_type(m, t, at)
        attrs["alignment"] = IntegerAttr(alignment, i32)
        return cls(operands=[m], result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.assume_alignment ")
        p.print_operand(self.memref)
        p.print(f", {self.alignment}")
        p.print_attr_dict(self.attributes, elide=("alignment",))
        p.print(" : " + p.type_str(self.memref.type))

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "alignment"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "alignment"}

    def result_name_hint(self):
        return "assume_align"

    def verify_op(self) -> None:
        _require_counts(self, 1, 1)
        t = self.memref.type
        if not isinstance(t, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got '{t}'")
        if self.results[0].type != t:
            raise self.error("failed to verify that all of {memref, result} have same type")
        a = self.attributes.get("alignment")
        if not (isinstance(a, IntegerAttr) and a.type == i32 and a.value > 0):
            raise self.error("attribute 'alignment' failed to satisfy constraint: 32-bit "
                             "signless integer attribute whose value is positive")
        if a.value & (a.value - 1):
            raise self.error("alignment must be power of 2")


@register_op
class ReallocOp(Operation):
    """``%new = memref.realloc %old(%n) : memref<2xf32> to memref<?xf32>``: a 1-D buffer
    grown or shrunk, its leading elements kept (the size operand only for a dynamic result)."""

    OP_NAME = "memref.realloc"

    @property
    def source(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, at = _parse_memref_operand(p)
        size = []
        if p.peek("("):
            size = p.parse_operand_list("paren")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = _parse_any_memref_type(p)
        p.expect_keyword("to")
        res = _parse_any_memref_type(p)
        p.check_type(m, src, at)
        for v in size:
            p.check_type(v, index)
        return cls(operands=[m, *size], result_types=[res], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.realloc ")
        p.print_operand(self.source)
        if len(self.operands) > 1:
            p.print("(")
            p.print_operands(self.operands[1:])
            p.print(")")
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "alignment"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "alignment"}

    def verify_op(self) -> None:
        if len(self.results) != 1:
            raise self.error("requires one result")
        if not 1 <= len(self.operands) <= 2:
            raise self.error("expects a source and at most one dynamic size")
        src, res = self.source.type, self.results[0].type
        for what, t in (("operand #0", src), ("result #0", res)):
            if not (isinstance(t, MemRefType) and t.rank == 1 and t.layout is None):
                raise self.error(f"{what} must be 1D memref of any type values, but got '{t}'")
        for v in self.operands[1:]:
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #1 must be index, but got '{v.type}'")
        # upstream reports these without the "'memref.realloc' op" prefix
        if src.memory_space != res.memory_space:
            raise VerifyError(f"different memory spaces specified for source memref type "
                              f"'{src}' and result memref type '{res}'", self.loc)
        if src.element_type != res.element_type:
            raise VerifyError(f"different element types specified for source memref type "
                              f"'{src}' and result memref type '{res}'", self.loc)
        dynamic = res.shape[0] is None
        if dynamic and len(self.operands) == 1:
            raise VerifyError(f"missing dimension operand for result type '{res}'", self.loc)
        if not dynamic and len(self.operands) == 2:
            raise VerifyError(f"unnecessary dimension operand for result type '{res}'",
                              self.loc)
        a = self.attributes.get("alignment")
        if a is not None and not (isinstance(a, IntegerAttr) and a.type == i64 and a.value > 0):
            raise self.error("attribute 'alignment' failed to satisfy constraint: 64-bit "
                             "signless integer attribute whose value is positive")


@register_op
class PrefetchOp(Operation):
    """``memref.prefetch %A[%i], read, locality<3>, data : memref<8xf32>``: a hint that
    ``A[i]`` will be read (written) soon, with a locality from 0 (none) to 3 (keep in
    cache), into the data (instruction) cache."""

    OP_NAME = "memref.prefetch"
    _PROPERTIES = ("isWrite", "localityHint", "isDataCache")

    @property
    def memref(self) -> Value:
        return self.operands[0]

    def _flag(self, name: str) -> bool:
        a = self.attributes.get(name)
        return isinstance(a, IntegerAttr) and bool(a.value)

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, at = _parse_memref_operand(p)
        idx = p.parse_operand_list("square")
        p.expect(",")
        rw = p.optional_bare_id()
        if rw not in ("read", "write"):
            raise ParseError(f"custom op '{name}' rw specifier has to be 'read' or 'write'", loc)
        p.expect(",")
        p.expect_keyword("locality")
        p.expect("<")
        locality = p.parse_integer("integer value", op_name=name)
        p.expect(">")
        p.expect(",")
        cache = p.optional_bare_id()
        if cache not in ("data", "instr"):
            raise ParseError(f"custom op '{name}' cache type has to be 'data' or 'instr'", loc)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = _parse_any_memref_type(p)
        p.check_type(m, t, at)
        for v in idx:
            p.check_type(v, index)
        attrs.update(isWrite=IntegerAttr(int(rw == "write"), i1),
                     localityHint=IntegerAttr(locality, i32),
                     isDataCache=IntegerAttr(int(cache == "data"), i1))
        return cls(operands=[m, *idx], result_types=[], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("memref.prefetch ")
        p.print_operand(self.memref)
        p.print("[")
        p.print_operands(self.operands[1:])
        locality = self.attributes["localityHint"].value
        p.print(f"], {'write' if self._flag('isWrite') else 'read'}, locality<{locality}>, "
                f"{'data' if self._flag('isDataCache') else 'instr'}")
        p.print_attr_dict(self.attributes, elide=self._PROPERTIES)
        p.print(" : " + p.type_str(self.memref.type))

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k in self._PROPERTIES}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k not in self._PROPERTIES}

    def verify_op(self) -> None:
        if self.results:
            raise self.error("requires zero results")
        if not self.operands:
            raise self.error("expects a memref operand")
        for name in ("isWrite", "isDataCache"):
            a = self.attributes.get(name)
            if not (isinstance(a, IntegerAttr) and a.type == i1):
                raise self.error(f"requires attribute '{name}'")
        a = self.attributes.get("localityHint")
        if not (isinstance(a, IntegerAttr) and a.type == i32 and 0 <= a.value <= 3):
            raise self.error("attribute 'localityHint' failed to satisfy constraint: 32-bit "
                             "signless integer attribute whose minimum value is 0 whose maximum "
                             "value is 3")
        t = self.memref.type
        if not isinstance(t, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got '{t}'")
        for k, v in enumerate(self.operands[1:], start=1):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        if len(self.operands) != 1 + t.rank:
            raise self.error("too few indices")
