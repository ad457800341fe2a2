"""Lowering of the buffer-reinterpreting memref ops and ``memref.atomic_rmw``
(:mod:`polyopt.affine.dialects.memref_buffers`), as MLIR's finalize-memref-to-llvm does:

* ``memref.reshape``: the source's pointer with the result's sizes (read from the shape
  memref for each ``?``, sign-extended from its integer type) and row-major strides;
* ``memref.view``: ``i8`` pointer plus the byte shift, row-major with the given sizes;
* ``memref.extract_strided_metadata``: the base pointer as a rank-0 memref, the offset,
  sizes and strides from the descriptor (constants when the type says them);
* ``memref.atomic_rmw``: one LLVM ``atomicrmw`` (``acq_rel``), or for ``mulf``/``muli``,
  which LLVM has no ``atomicrmw`` for, a ``cmpxchg`` loop (MLIR's generic_atomic_rmw).
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.affine.types import IndexType, IntegerType, MemRefType
from polyopt.codegen.llvm_helpers import I64, NSW, Unsupported, i64, lowbit
from polyopt.codegen.lower_memref import _descriptor_of
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem
from polyopt.memref_layout.layout import needs_descriptor

_RMW = {"addf": "fadd", "addi": "add", "andi": "and", "assign": "xchg",
        "maximumf": "fmaximum", "maxnumf": "fmax", "maxs": "max", "maxu": "umax",
        "minimumf": "fminimum", "minnumf": "fmin", "mins": "min", "minu": "umin",
        "ori": "or", "xori": "xor"}


def _row_major(L: FunctionLowering, sizes: list) -> list:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        if isinstance(acc, int) and isinstance(s, int):
            acc = acc * s
        else:
            acc = L.b.mul(acc if isinstance(acc, ir.Value) else i64(acc),
                          s if isinstance(s, ir.Value) else i64(s), flags=NSW)
    strides.reverse()
    return strides


def _bind_row_major(L: FunctionLowering, op: Operation, ptr: ir.Value, sizes: list,
                    align: int) -> None:
    t = op.results[0].type
    if needs_descriptor(t):
        L.bind(op.results[0], L.descriptor_mem(ptr, t, sizes, _row_major(L, sizes), 0, align))
    else:
        L.bind(op.results[0], Mem(ptr, t, align))


@handles("memref.reshape")
def _lower_reshape(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise Unsupported(f"reshaping to '{t}' (an unranked memref) is not supported")
    src = L.mem(op.operands[0])
    shape = L.mem(op.operands[1])
    et = shape.type.element_type
    sizes = []
    for k, d in enumerate(t.shape):
        if d is not None:
            sizes.append(d)
            continue
        v = L.load_elem(shape, [L.index_form(k)])
        if isinstance(et, IntegerType) and et.width < 64:
            v = L.b.sext(v, I64)
        elif isinstance(et, IntegerType) and et.width > 64:
            v = L.b.trunc(v, I64)
        sizes.append(v)
    _bind_row_major(L, op, src.ptr, sizes, src.align)


@handles("memref.view")
def _lower_view(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.operands[0])
    t = op.results[0].type
    shift = L.get(op.operands[1])
    ptr = L.b.gep(src.ptr, [shift], inbounds=True, source_etype=ir.IntType(8))
    const = L.form_of(op.operands[1])
    elem_align = L.ml.abi_align(L.ml.mem_type(t.element_type))
    if const.is_const:
        align = src.align if const.const == 0 else min(src.align, lowbit(const.const))
    else:   # as in MLIR, a view is expected at an address aligned for its elements
        align = elem_align
    dyn = iter(op.operands[2:])
    sizes = [d if d is not None else L.get(next(dyn)) for d in t.shape]
    _bind_row_major(L, op, ptr, sizes, max(1, align))


@handles("memref.extract_strided_metadata")
def _lower_extract_strided_metadata(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.operands[0])
    sizes, strides, offset = _descriptor_of(L, op, src)
    if any(s is None for s in (*sizes, *strides)) or offset is None:
        raise CodegenError(f"'{op.name}': the sizes, strides and offset of '{src.type}' are "
                           "not known", op.loc)
    L.bind(op.results[0], Mem(src.ptr, op.results[0].type, src.align))
    for res, x in zip(op.results[1:], (offset, *sizes, *strides)):
        L.bind(res, x if isinstance(x, ir.Value) else i64(x))
        L.forms[res] = L.index_form(x)


@handles("memref.atomic_rmw")
def _lower_atomic_rmw(L: FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.memref)
    et = mem.type.element_type
    if isinstance(et, IndexType) or isinstance(et, IntegerType) and et.width == 1:
        raise Unsupported(f"atomic_rmw on '{et}' elements is not supported")
    ty = L.ml.mem_type(et)
    ptr, _ = L.address(mem, [L.form_of(v) for v in op.indices], ty)
    value = L.get(op.value)
    kind = op.kind
    if kind in _RMW:
        old = L.b.atomic_rmw(_RMW[kind], ptr, value, "acq_rel")
        L.bind(op.results[0], old)
        return
    # mulf / muli: compare-and-swap until no other thread changed the element in between
    b = L.b
    init = b.load(ptr, typ=ty)
    pre = b.block
    loop = L.fn.append_basic_block("atomic.loop")
    done = L.fn.append_basic_block("atomic.done")
    b.branch(loop)
    b.position_at_end(loop)
    cur = b.phi(ty)
    new = b.fmul(cur, value) if kind == "mulf" else b.mul(cur, value)
    int_ty = ir.IntType(L.ml.abi_size(ty) * 8)
    as_int = (lambda v: b.bitcast(v, int_ty)) if kind == "mulf" else (lambda v: v)
    pair = b.cmpxchg(ptr, as_int(cur), as_int(new), "acq_rel", "monotonic")
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    seen_v = b.bitcast(seen, ty) if kind == "mulf" else seen
    cur.add_incoming(init, pre)
    cur.add_incoming(seen_v, b.block)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    L.bind(op.results[0], seen_v)
