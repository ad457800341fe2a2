"""Lowering of ``llvm.call_intrinsic`` (MLIR's LLVM dialect, translated as
``mlir-translate --mlir-to-llvmir`` does): the intrinsic declared with the LLVM types of its
operands and result, then called."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("llvm.call_intrinsic")
def _lower_call_intrinsic(L: FunctionLowering, op: Operation) -> None:
    ret = L.ml.type(op.results[0].type) if op.results else ir.VoidType()
    fn = L.ml.intrinsic(op.intrinsic, ret, [L.ml.type(v.type) for v in op.operands])
    call = L.b.call(fn, [L.get(v) for v in op.operands])
    if op.results:
        L.bind(op.results[0], call)
