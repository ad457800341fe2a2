"""The math dialect: ``math.fma`` (fused multiply-add on floats or float vectors).

The 2020 ``fma`` op parses to ``math.fma``.  The optional ``fastmath<...>`` flags are kept as
``#arith.fastmath<...>`` (as the arith ops keep them); ``fastmath<none>`` is not printed.
"""

from __future__ import annotations

from ..ir import Operation, Value, register_op
from ..types import FloatType, element_type_of
from .vector import _drop_default_fastmath, _parse_fastmath, _print_fastmath


@register_op
class MathFMAOp(Operation):
    """``%r = math.fma %a, %b, %c : f64`` computes ``a * b + c`` with a single rounding."""

    OP_NAME = "math.fma"

    @classmethod
    def build(cls, a: Value, b: Value, c: Value, fastmath: str | None = None, loc=None):
        from ..attributes import OpaqueAttr
        attrs = {} if fastmath is None else {"fastmath": OpaqueAttr(f"#arith.fastmath<{fastmath}>")}
        return cls(operands=[a, b, c], result_types=[c.type], attributes=attrs, loc=loc)

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def c(self) -> Value:
        return self.operands[2]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        if len(ops) != 3:
            raise p.error(f"'math.fma' expects 3 operands, got {len(ops)}", start)
        attrs: dict = {}
        _parse_fastmath(p, attrs)
        attrs.update(p.parse_optional_attr_dict())
        t = p.parse_colon_type()
        for v in ops:
            p.check_type(v, t, start)
        return cls(operands=ops, result_types=[t], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return cls(operands=operands, result_types=result_types,
                   attributes=_drop_default_fastmath(attrs), regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("math.fma ")
        p.print_operands(self.operands)
        _print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("expects three operands and one result")
        t = self.results[0].type
        if any(v.type != t for v in self.operands):
            raise self.error("requires the same type for all operands and results")
        if not isinstance(element_type_of(t), FloatType):
            raise self.error(f"operand #0 must be floating-point-like, but got '{t}'")
