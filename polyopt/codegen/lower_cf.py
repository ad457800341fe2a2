"""Lowering of ``cf.assert`` (MLIR's convert-cf-to-llvm aborts the process; polyopt records the
message with the runtime's ``polyopt_assert_fail`` and the Python call raises it when the
function returns).  A failed assert returns from the function at once (from the thread's part
of a parallel loop, in one): what follows it is what the assert guards, e.g. a store at an index
it found out of bounds, which crashed the process when it ran on.  A caller of that function
goes on with its zero results until it returns (the call then raises the message)."""

from __future__ import annotations

from llvmlite import ir

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
    result = L.fn.function_type.return_type
    if isinstance(result, ir.VoidType):
        b.ret_void()
    else:
        b.ret(ir.Constant(result, None))
    b.position_at_end(cont)
