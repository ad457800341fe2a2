"""Lowering of ``cf.assert`` (MLIR's convert-cf-to-llvm aborts the process; polyopt records the
message with the runtime's ``polyopt_assert_fail`` and the Python call raises it when the
function returns)."""

from __future__ import annotations

from polyopt.affine.ir import Operation
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("cf.assert")
def _lower_assert(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    fail = L.fn.append_basic_block("assert.fail")
    cont = L.fn.append_basic_block("assert.ok")
    b.cbranch(L.get(op.operands[0]), cont, fail)
    b.position_at_end(fail)
    where = f"{op.loc}: " if op.loc is not None else ""
    b.call(L.ml.runtime("polyopt_assert_fail"), [L.ml.c_string(f"{where}error: {op.message}")])
    b.branch(cont)
    b.position_at_end(cont)
