"""The cf dialect, the part polyopt has: ``cf.assert`` (functions are single-block regions of
structured control flow here; branches between blocks are not supported).

``cf.assert %ok, "message"`` states that ``%ok`` holds when the op runs.  MLIR's lowering aborts
the process when it does not; polyopt's records the message and the Python call that ran the
code raises ``RuntimeError`` with it when it returns (see :mod:`polyopt.codegen.lower_cf`).
"""

from __future__ import annotations

from ..attributes import StringAttr
from ..ir import Operation, Value, register_op
from ..types import IntegerType, i1


@register_op
class AssertOp(Operation):
    """``cf.assert %ok, "message"``."""

    OP_NAME = "cf.assert"

    @classmethod
    def build(cls, condition: Value, message: str, loc=None) -> "AssertOp":
        return cls(operands=[condition], attributes={"msg": StringAttr(message)}, loc=loc)

    @property
    def message(self) -> str:
        return self.attributes["msg"].value

    @classmethod
    def parse_custom(cls, p, loc, name):
        cond = p.parse_operand(i1)
        p.expect(",")
        msg = p.parse_string()
        attrs = p.parse_optional_attr_dict()
        attrs["msg"] = StringAttr(msg)
        return cls(operands=[cond], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("cf.assert ")
        p.print_operand(self.operands[0])
        p.print(", " + str(self.attributes["msg"]))
        p.print_attr_dict(self.attributes, elide=("msg",))

    def verify_op(self) -> None:
        if len(self.operands) != 1 or self.results:
            raise self.error("expects one operand and no results")
        t = self.operands[0].type
        if t != IntegerType(1):
            raise self.error(f"operand #0 must be 1-bit signless integer, but got '{t}'")
        if not isinstance(self.attributes.get("msg"), StringAttr):
            raise self.error("requires attribute 'msg'")
