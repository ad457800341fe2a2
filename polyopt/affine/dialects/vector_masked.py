"""Vector memory ops under a mask: ``vector.maskedload`` and ``vector.maskedstore`` (a run of
elements, each lane on or off) and ``vector.gather`` and ``vector.scatter`` (one element per
lane, at the base indices plus the lane's offset along the innermost dimension).  Syntax,
generic form and messages are mlir-opt-22's::

    %v = vector.maskedload %A[%i, %j], %mask, %pass : memref<?x?xf32>, vector<16xi1>,
        vector<16xf32> into vector<16xf32>
    vector.maskedstore %A[%i, %j], %mask, %v : memref<?x?xf32>, vector<16xi1>, vector<16xf32>
    %g = vector.gather %A[%i, %j] [%offsets], %mask, %pass : memref<?x?xf32>, vector<16xi32>,
        vector<16xi1>, vector<16xf32> into vector<16xf32>
    vector.scatter %A[%i, %j] [%offsets], %mask, %g : memref<?x?xf32>, vector<16xi32>,
        vector<16xi1>, vector<16xf32>

They are lowered to LLVM by :mod:`polyopt.codegen.lower_vector_masked`."""

from __future__ import annotations

from typing import Sequence

from ..ir import Operation, Value, register_op
from ..types import IndexType, IntegerType, MemRefType, VectorType, index
from .memref import parse_indices, parse_memref_type, verify_alignment
from .vector import parse_vector_type

__all__ = ["MaskedLoadOp", "MaskedStoreOp", "GatherOp", "ScatterOp"]


def _parse_operand(p) -> tuple[Value, int]:
    p.skip_ws()
    at = p.pos
    return p.parse_operand(), at


class _MaskedMemoryOp(Operation):
    """Operands: the memref, its indices, then ``TAIL`` (index vector, mask, value or
    pass-through, in that order); ``INDEXED``: a gather/scatter's index vector is among
    them."""

    INDEXED = False
    LOADS = True

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def _tail_len(self) -> int:
        return 2 + int(self.INDEXED)

    @property
    def indices(self) -> tuple[Value, ...]:
        return tuple(self.operands[1:len(self.operands) - self._tail_len])

    @property
    def index_vec(self) -> Value:
        return self.operands[-3]

    @property
    def mask(self) -> Value:
        return self.operands[-2]

    @property
    def vector(self) -> Value:
        """A load's pass-through value, a store's value to store."""
        return self.operands[-1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, m_at = _parse_operand(p)
        idx = parse_indices(p)
        tail = []
        if cls.INDEXED:
            p.expect("[")
            tail.append(_parse_operand(p))
            p.expect("]")
        p.expect(",")
        tail.append(_parse_operand(p))
        p.expect(",")
        tail.append(_parse_operand(p))
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        mt = parse_memref_type(p)
        types = []
        for _ in tail:
            p.expect(",")
            types.append(parse_vector_type(p))
        result_types = []
        if cls.LOADS:
            p.expect_keyword("into")
            result_types.append(parse_vector_type(p))
        p.check_type(m, mt, m_at)
        for v in idx:
            p.check_type(v, index)
        for (v, at), t in zip(tail, types):
            p.check_type(v, t, at)
        operands = [m, *idx, *(v for v, _ in tail)]
        return cls(operands=operands, result_types=result_types, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operand(self.memref)
        p.print("[")
        p.print_operands(self.indices)
        p.print("]")
        tail = self.operands[len(self.operands) - self._tail_len:]
        if self.INDEXED:
            p.print(" [")
            p.print_operand(tail[0])
            p.print("]")
            tail = tail[1:]
        for v in tail:
            p.print(", ")
            p.print_operand(v)
        p.print_attr_dict(self.attributes)
        types = [self.memref.type] + [v.type for v in self.operands[len(self.operands) -
                                                                    self._tail_len:]]
        p.print(" : " + ", ".join(p.type_str(t) for t in types))
        if self.LOADS:
            p.print(f" into {p.type_str(self.results[0].type)}")

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "alignment"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "alignment"}

    # -- verification -------------------------------------------------------------------------
    def _check_operand_kinds(self) -> None:
        n = len(self.operands)
        if n < 1 + self._tail_len or len(self.results) != int(self.LOADS):
            what = ", an index vector" if self.INDEXED else ""
            raise self.error(f"expects a memref, its indices{what}, a mask and a vector")
        if not isinstance(self.memref.type, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got "
                             f"'{self.memref.type}'")
        for k, v in enumerate(self.indices, start=1):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        first = n - self._tail_len
        if self.INDEXED:
            t = self.index_vec.type
            if not (isinstance(t, VectorType) and (isinstance(t.element_type, IndexType) or
                                                   isinstance(t.element_type, IntegerType))):
                raise self.error(f"operand #{first} must be vector of integer or index values, "
                                 f"but got '{t}'")
        t = self.mask.type
        if not (isinstance(t, VectorType) and t.element_type == IntegerType(1)):
            raise self.error(f"operand #{n - 2} must be vector of 1-bit signless integer values, "
                             f"but got '{t}'")
        for what, t in (("operand #" + str(n - 1), self.vector.type),
                        *((("result #0", self.results[0].type),) if self.LOADS else ())):
            if not isinstance(t, VectorType):
                raise self.error(f"{what} must be vector of any type values, but got '{t}'")
        verify_alignment(self)

    def _check_element_types(self, vector: VectorType, what: str) -> None:
        mt = self.memref.type
        if mt.element_type != vector.element_type:
            raise self.error(f"base and {what} element type should match")
        if len(self.indices) != mt.rank:
            raise self.error(f"requires {mt.rank} indices")

    def _check_shapes(self, vector: VectorType, what: str, against: Sequence[tuple[str, Value]],
                      word: str) -> None:
        for name, v in against:
            if v.type.shape != vector.shape:
                raise self.error(f"expected {what} {word} to match {name} {word}")


@register_op
class MaskedLoadOp(_MaskedMemoryOp):
    """``%v = vector.maskedload %A[%i], %mask, %pass : memref<?xf32>, vector<16xi1>,
    vector<16xf32> into vector<16xf32>``: lane k is ``A[i + k]`` where the mask is on, the
    pass-through's lane k elsewhere."""

    OP_NAME = "vector.maskedload"

    def verify_op(self) -> None:
        self._check_operand_kinds()
        rt = self.results[0].type
        self._check_element_types(rt, "result")
        self._check_shapes(rt, "result", [("mask", self.mask)], "shape")
        if self.vector.type != rt:
            raise self.error("expected pass_thru of same type as result type")


@register_op
class MaskedStoreOp(_MaskedMemoryOp):
    """``vector.maskedstore %A[%i], %mask, %v : memref<?xf32>, vector<16xi1>,
    vector<16xf32>``: ``A[i + k] = v[k]`` where the mask is on."""

    OP_NAME = "vector.maskedstore"
    LOADS = False

    def verify_op(self) -> None:
        self._check_operand_kinds()
        vt = self.vector.type
        self._check_element_types(vt, "valueToStore")
        self._check_shapes(vt, "valueToStore", [("mask", self.mask)], "shape")


@register_op
class GatherOp(_MaskedMemoryOp):
    """``%g = vector.gather %A[%i] [%offsets], %mask, %pass : memref<?xf32>, vector<16xi32>,
    vector<16xi1>, vector<16xf32> into vector<16xf32>``: lane k is ``A[i + offsets[k]]``
    where the mask is on, the pass-through's lane k elsewhere."""

    OP_NAME = "vector.gather"
    INDEXED = True

    def verify_op(self) -> None:
        self._check_operand_kinds()
        rt = self.results[0].type
        self._check_element_types(rt, "result")
        self._check_shapes(rt, "result", [("indices", self.index_vec), ("mask", self.mask)],
                           "dim")
        if self.vector.type != rt:
            raise self.error("expected pass_thru of same type as result type")


@register_op
class ScatterOp(_MaskedMemoryOp):
    """``vector.scatter %A[%i] [%offsets], %mask, %v : memref<?xf32>, vector<16xi32>,
    vector<16xi1>, vector<16xf32>``: ``A[i + offsets[k]] = v[k]`` where the mask is on."""

    OP_NAME = "vector.scatter"
    INDEXED = True
    LOADS = False

    def verify_op(self) -> None:
        self._check_operand_kinds()
        vt = self.vector.type
        self._check_element_types(vt, "valueToStore")
        self._check_shapes(vt, "valueToStore", [("indices", self.index_vec),
                                                ("mask", self.mask)], "dim")
