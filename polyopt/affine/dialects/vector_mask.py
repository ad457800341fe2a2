"""``vector.mask``: one op under a mask, and its region's terminator ``vector.yield``.
Syntax as mlir-opt-22 reads and prints it (the masked op without its results, the yield
implicit)::

    %0 = vector.mask %m { vector.contract {...} %a, %b, %c : vector<2x3xf32>,
        vector<3x2xf32> into vector<2x2xf32> } : vector<2x2x3xi1> -> vector<2x2xf32>

The code generator lowers a masked ``vector.contract``
(:mod:`polyopt.codegen.lower_vector_contract`)."""

from __future__ import annotations

from typing import Optional

from ..ir import Operation, Value, register_op

__all__ = ["MaskOp", "VectorYieldOp"]


@register_op
class MaskOp(Operation):
    """``%r = vector.mask %mask[, %passthru] { OP } : MASK_TYPE [-> RESULT_TYPES]``."""

    OP_NAME = "vector.mask"

    @property
    def mask(self) -> Value:
        return self.operands[0]

    @property
    def passthru(self) -> Optional[Value]:
        return self.operands[1] if len(self.operands) > 1 else None

    @property
    def masked_op(self) -> Optional[Operation]:
        """The op under the mask (None in a region holding the yield alone)."""
        ops = self.regions[0].blocks[0].ops
        return ops[0] if len(ops) > 1 else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        at = p.pos
        operands = [p.parse_operand()]
        p.skip_ws()
        pass_at = p.pos
        if p.optional(","):
            p.skip_ws()
            pass_at = p.pos
            operands.append(p.parse_operand())
        region = p.parse_region()
        block = region.blocks[0]
        if not block.ops or block.ops[-1].name != "vector.yield":
            inner = block.ops[-1] if block.ops else None
            block.append(VectorYieldOp(operands=list(inner.results) if inner else [], loc=loc))
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        mask_type = p.parse_type()
        results = p.parse_result_types() if p.optional("->") else []
        p.check_type(operands[0], mask_type, at)
        if len(operands) > 1 and results:
            p.check_type(operands[1], results[0], pass_at)
        return cls(operands=operands, result_types=results, attributes=attrs, regions=[region],
                   loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.mask ")
        p.print_operands(self.operands)
        # the masked op on one line, without its results (or the yield, when it is alone)
        inner = self.regions[0].blocks[0].ops[0]
        p.print(" { ")
        if getattr(inner, "print_custom", None) is not None:
            inner.print_custom(p)
        else:
            p.print_generic(inner)
        p.print(" }")
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.mask.type)}")
        if len(self.results) == 1:
            p.print(f" -> {p.type_str(self.results[0].type)}")
        elif self.results:
            p.print(" -> (" + ", ".join(p.type_str(r.type) for r in self.results) + ")")

    def verify_op(self) -> None:
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects one region with one block")
        ops = self.regions[0].blocks[0].ops
        if len(ops) > 2:
            raise self.error("expects only one operation to mask")
        term = ops[-1] if ops else None
        if term is None or term.name != "vector.yield":
            raise self.error("expects a terminator within the mask region")
        if [v.type for v in term.operands] != [r.type for r in self.results]:
            raise self.error("expects result type to match maskable operation result type")


@register_op
class VectorYieldOp(Operation):
    """``vector.yield %v : vector<4xf32>``, the terminator of ``vector.mask``'s region."""

    OP_NAME = "vector.yield"

    @classmethod
    def parse_custom(cls, p, loc, name):
        from .scf import _parse_typed_operands
        attrs = p.parse_optional_attr_dict()
        return cls(operands=_parse_typed_operands(p, cls.OP_NAME), attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        from .scf import _print_typed_operands
        p.print("vector.yield")
        p.print_attr_dict(self.attributes)
        _print_typed_operands(p, self.operands)
