"""Vector ops that build or split vectors element-wise, as MLIR's vectorizers and
canonicalizations leave them: ``vector.step`` (``[0, 1, ..., n-1]``), ``vector.from_elements``,
``vector.to_elements`` (scalars in and out, row-major) and ``vector.deinterleave`` (the even
and the odd elements of the last dimension, ``vector.interleave``'s inverse)."""

from __future__ import annotations

from ..diagnostics import ParseError
from ..ir import Operation, register_op
from ..types import IndexType, VectorType
from .vector import parse_vector_type

__all__ = ["StepOp", "FromElementsOp", "ToElementsOp", "DeinterleaveOp"]


def _count(t: VectorType) -> int:
    n = 1
    for s in t.shape:
        n *= s
    return n


@register_op
class StepOp(Operation):
    """``%v = vector.step : vector<4xindex>``: the indices ``[0, 1, 2, 3]``."""

    OP_NAME = "vector.step"

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        return cls(result_types=[p.parse_type()], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.step")
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if self.operands or len(self.results) != 1:
            raise self.error("expects no operands and one result")
        t = self.results[0].type
        if not (isinstance(t, VectorType) and len(t.shape) == 1 and
                isinstance(t.element_type, IndexType)):
            raise self.error(f"result #0 must be vector of index values of ranks 1, but got "
                             f"'{t}'")


@register_op
class FromElementsOp(Operation):
    """``%v = vector.from_elements %a, %b : vector<2xf32>``: a vector of its operands, in
    row-major order."""

    OP_NAME = "vector.from_elements"

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        uses = []
        if p.peek("%"):
            uses.append(p._parse_use())
            while p.optional(","):
                uses.append(p._parse_use())
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = parse_vector_type(p)
        n = _count(t)
        if len(uses) != n:
            raise ParseError(f"custom op 'vector.from_elements' number of operands and types do "
                             f"not match: got {len(uses)} operands and {n} types", p.loc(start))
        operands = []
        for name, offset in uses:
            value = p._lookup(name, offset)
            p.spelled[value] = (name, offset)
            p.check_type(value, t.element_type, offset)
            operands.append(value)
        return cls(operands=operands, result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.from_elements ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if len(self.results) != 1 or not isinstance(self.results[0].type, VectorType):
            raise self.error("expects one vector result")
        t = self.results[0].type
        if len(self.operands) != _count(t):
            raise self.error(f"expects {_count(t)} operands, got {len(self.operands)}")
        for k, v in enumerate(self.operands):
            if v.type != t.element_type:
                raise self.error(f"operand #{k} must be '{t.element_type}', got '{v.type}'")


@register_op
class ToElementsOp(Operation):
    """``%x:2 = vector.to_elements %v : vector<2xf32>``: the elements of ``%v``, row-major."""

    OP_NAME = "vector.to_elements"

    @classmethod
    def parse_custom(cls, p, loc, name):
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = parse_vector_type(p)
        p.check_type(v, t, None)
        return cls(operands=[v], result_types=[t.element_type] * _count(t), attributes=attrs,
                   loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.to_elements ")
        p.print_operand(self.operands[0])
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.operands[0].type)}")

    def verify_op(self) -> None:
        t = self.operands[0].type if len(self.operands) == 1 else None
        if not isinstance(t, VectorType):
            raise self.error("expects one vector operand")
        if len(self.results) != _count(t) or any(r.type != t.element_type
                                                 for r in self.results):
            raise self.error(f"expects {_count(t)} results of type '{t.element_type}'")


@register_op
class DeinterleaveOp(Operation):
    """``%e, %o = vector.deinterleave %v : vector<8xf32> -> vector<4xf32>``: the even and the
    odd elements of ``%v``'s last dimension."""

    OP_NAME = "vector.deinterleave"

    @classmethod
    def parse_custom(cls, p, loc, name):
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_vector_type(p)
        p.expect("->")
        dst = parse_vector_type(p)
        p.check_type(v, src, None)
        return cls(operands=[v], result_types=[dst, dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.deinterleave ")
        p.print_operand(self.operands[0])
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.operands[0].type)} -> "
                f"{p.type_str(self.results[0].type)}")

    def result_name_hint(self):
        return ["res1", "res2"]

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 2:
            raise self.error("expects one operand and two results")
        src, a, b = self.operands[0].type, self.results[0].type, self.results[1].type
        if a != b:
            raise self.error("failed to verify that all of {res1, res2} have same type")
        if src.shape[-1] % 2:
            raise self.error("failed to verify that the trailing dimension of the source "
                             "vector has an even number of elements")
        if a.shape[-1] * 2 != src.shape[-1] or a.shape[:-1] != src.shape[:-1]:
            raise self.error("failed to verify that the trailing dimension of the results is "
                             "half the width of source trailing dimension")
