"""The ub dialect of MLIR 22: ``ub.poison``, the value ``--affine-super-vectorize`` pads its
``vector.transfer_read`` ops with (``%0 = ub.poison : f32``).

A poison value may be any value: the LLVM lowering (:mod:`polyopt.codegen.lower_ub`) gives it
zero, which keeps the lanes a transfer reads out of bounds deterministic.  The generic form
holds the property ``value = #ub.poison``, as upstream prints it.
"""

from __future__ import annotations

from ..attributes import OpaqueAttr
from ..ir import Operation, register_op
from ..types import Type

POISON_ATTR = "#ub.poison"


@register_op
class PoisonOp(Operation):
    """``%p = ub.poison : f32`` (any type: scalar, vector, index)."""

    OP_NAME = "ub.poison"

    @classmethod
    def build(cls, type_: Type, loc=None) -> "PoisonOp":
        return cls(result_types=[type_], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = p.parse_optional_attr_dict()
        if p.optional("<"):     # ub.poison <#ub.poison> : f32 (the default value, spelled out)
            p.skip_ws()
            start = p.pos
            value = p.parse_attribute()
            if str(value) != POISON_ATTR:
                raise p.error(f"'ub.poison' expects the value '{POISON_ATTR}', got '{value}'",
                              start)
            p.expect(">")
        p.expect(":")
        t = p.parse_type()
        return cls(result_types=[t], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        value = attrs.get("value")
        if value is not None and str(value) == POISON_ATTR:
            attrs = {k: v for k, v in attrs.items() if k != "value"}
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("ub.poison")
        p.print_attr_dict(self.attributes, elide=("value",))
        p.print(" : " + p.type_str(self.results[0].type))

    def generic_properties(self) -> dict:
        return {"value": self.attributes.get("value", OpaqueAttr(POISON_ATTR))}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "value"}

    def verify_op(self) -> None:
        if self.operands or len(self.results) != 1:
            raise self.error("expects no operands and one result")
        value = self.attributes.get("value")
        if value is not None and str(value) != POISON_ATTR:
            raise self.error(f"attribute 'value' failed to satisfy constraint: poison attribute "
                             f"interface instance, got '{value}'")
