"""The x86vector dialect ops polyopt's low-precision register tiles emit (MLIR's ``x86vector``).

``x86vector.avx512.dot %acc, %a, %b : vector<32xbf16> -> vector<16xf32>`` is AVX512-BF16's
``vdpbf16ps``: each f32 lane ``i`` of ``acc`` gains ``a[2i] * b[2i] + a[2i+1] * b[2i+1]`` (the
products exact in f32, the lane's sum rounded as the instruction does); also on 256-bit
vectors (``vector<16xbf16> -> vector<8xf32>``).  ``mlir-opt-22`` parses and prints it this way.
"""

from __future__ import annotations

from ..ir import Operation, Value, register_op
from ..types import FloatType, VectorType


def _bf16_vector(t) -> bool:
    return isinstance(t, VectorType) and len(t.shape) == 1 and \
        isinstance(t.element_type, FloatType) and t.element_type.brain


@register_op
class AVX512DotOp(Operation):
    """``%r = x86vector.avx512.dot %acc, %a, %b : vector<32xbf16> -> vector<16xf32>``."""

    OP_NAME = "x86vector.avx512.dot"

    @classmethod
    def build(cls, acc: Value, a: Value, b: Value, loc=None) -> "AVX512DotOp":
        return cls(operands=[acc, a, b], result_types=[acc.type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        if len(ops) != 3:
            raise p.error(f"'{name}' expects 3 operands, got {len(ops)}", start)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = p.parse_type()
        p.expect("->")
        dst = p.parse_type()
        p.check_type(ops[0], dst, start)
        p.check_type(ops[1], src, start)
        p.check_type(ops[2], src, start)
        return cls(operands=ops, result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("x86vector.avx512.dot ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.operands[1].type)} -> {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("expects three operands and one result")
        acc, a, b = (v.type for v in self.operands)
        if not (_bf16_vector(a) and a == b and a.shape[0] in (16, 32)):
            raise self.error(f"operands #1 and #2 must be vector<16xbf16> or vector<32xbf16>, "
                             f"got '{a}' and '{b}'")
        want = VectorType((a.shape[0] // 2,), FloatType(32))
        if acc != want or self.results[0].type != want:
            raise self.error(f"the accumulator and the result must be '{want}', got '{acc}'")
