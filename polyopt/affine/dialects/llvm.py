"""``llvm.call_intrinsic``, the one LLVM-dialect op polyopt emits: a call of an LLVM intrinsic
that no MLIR dialect names (AVX512-VNNI's ``llvm.x86.avx512.vpdpbusd.512``, for one)::

    %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%acc, %a, %b)
        : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>

``mlir-opt-22`` parses and prints it this way.  The lowering declares the intrinsic with the
LLVM types of the operands and the result and calls it; LLVM rejects a name or signature it
does not know when the module is verified.
"""

from __future__ import annotations

from ..attributes import StringAttr
from ..ir import Operation, register_op


@register_op
class CallIntrinsicOp(Operation):
    """``%r = llvm.call_intrinsic "name"(%x, ...) : (T, ...) -> R``."""

    OP_NAME = "llvm.call_intrinsic"

    @property
    def intrinsic(self) -> str:
        return self.attributes["intrin"].value

    @classmethod
    def build(cls, intrinsic: str, operands, result_type, loc=None) -> "CallIntrinsicOp":
        return cls(operands=list(operands), result_types=[result_type],
                   attributes={"intrin": StringAttr(intrinsic)}, loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        intrinsic = p.parse_string()
        ops = p.parse_operand_list("paren")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        ftype = p.parse_function_type()
        if len(ftype.inputs) != len(ops):
            raise p.error(f"expected {len(ops)} operand types, got {len(ftype.inputs)}", start)
        for v, t in zip(ops, ftype.inputs):
            p.check_type(v, t, start)
        attrs = dict(attrs or {})
        attrs["intrin"] = StringAttr(intrinsic)
        return cls(operands=ops, result_types=list(ftype.results), attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f'llvm.call_intrinsic "{self.intrinsic}"(')
        p.print_operands(self.operands)
        p.print(")")
        p.print_attr_dict({k: v for k, v in self.attributes.items() if k != "intrin"})
        ins = ", ".join(p.type_str(v.type) for v in self.operands)
        outs = ", ".join(p.type_str(r.type) for r in self.results)
        p.print(f" : ({ins}) -> {outs if len(self.results) == 1 else '(' + outs + ')'}")

    def verify_op(self) -> None:
        if "intrin" not in self.attributes or not isinstance(self.attributes["intrin"],
                                                                StringAttr):
            raise self.error("requires a string attribute 'intrin'")
        if not self.intrinsic.startswith("llvm."):
            raise self.error(f"intrinsic name must start with 'llvm.', got '{self.intrinsic}'")
        if len(self.results) > 1:
            raise self.error("returns at most one value")


__all__ = ["CallIntrinsicOp"]
