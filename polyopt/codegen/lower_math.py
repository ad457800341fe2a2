"""Lowering of the math dialect (MLIR's convert-math-to-llvm): ``math.fma``, and
``vector.fma`` with it."""

from __future__ import annotations

from polyopt.affine.ir import Operation
from polyopt.codegen.llvm_helpers import call_intrinsic, check_float, fastmath_flags
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("math.fma", "vector.fma")
def _lower_fma(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    x, y, z = (L.get(v) for v in op.operands)
    flags = tuple(f for f in fastmath_flags(op) if f != "contract")
    L.bind(op.results[0], L.map_nd(t, lambda a, b_, c: call_intrinsic(L, "fma", [a, b_, c],
                                                                       flags), x, y, z))
