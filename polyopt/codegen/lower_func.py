"""Lowering of the func dialect: ``func.call`` (to defined functions, C symbols and the
runtime's printers and clock); ``func.return`` is lowered by the driver (MLIR's
convert-func-to-llvm)."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.affine.types import IntegerType
from polyopt.codegen.llvm_helpers import I1, I8, i64, opaque_alloca
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.memref_layout.layout import strided_form


@handles("func.call")
def _lower_call(L: FunctionLowering, op: Operation) -> None:
    name = op.attributes["callee"].name
    callee = L.ml.callees.get(name)
    if callee is None:
        raise CodegenError(f"call to unknown function '@{name}'", op.loc)
    b = L.b
    if callee.kind == "print_memref":
        src = op.operands[0]
        mem = L.mem(src)
        t = mem.type
        if mem.has_descriptor:
            sizes, strides, offset = mem.sizes, mem.strides, mem.offset
        else:
            form = strided_form(t)
            if form is None:
                raise CodegenError(f"'{op.name}' @{name}: printing a memref with a layout map "
                                   f"that is not strided ('{t}') is not supported", op.loc)
            sizes, (strides, offset) = t.shape, form
        b.call(callee.llfn, [mem.ptr, i64(t.rank), L.i64_array(sizes), L.i64_array(strides),
                             offset if isinstance(offset, ir.Value) else i64(offset)])
        return
    if callee.kind == "rtclock":
        L.bind(op.results[0], b.call(callee.llfn, []))
        return
    if callee.kind == "runtime":
        b.call(callee.llfn, [L.get(v) for v in op.operands])
        return
    ft = callee.func.function_type
    args = L.call_args(op.operands)
    results = op.results
    if len(results) <= 1:
        r = b.call(callee.llfn, args)
        if results:
            L.bind_llvm(results[0], r)
        return
    slots = []
    for t in ft.results:
        ty = I8 if isinstance(t, IntegerType) and t.width == 1 else L.ml.type(t)
        slot = opaque_alloca(L.entry_builder, ty)
        slots.append((slot, ty, t))
    b.call(callee.llfn, args + [s for s, _, _ in slots])
    for res, (slot, ty, t) in zip(results, slots):
        v = b.load(slot, typ=ty)
        if ty is I8 and not (isinstance(t, IntegerType) and t.width == 8):
            v = b.trunc(v, I1)
        L.bind_llvm(res, v)

