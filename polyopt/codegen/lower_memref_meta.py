"""Lowering of the memref ops about a buffer rather than its elements
(:mod:`polyopt.affine.dialects.memref_meta`), as MLIR's finalize-memref-to-llvm does:

* ``memref.rank``: the rank, a constant;
* ``memref.memory_space_cast``: the same buffer (polyopt runs every memory space in LLVM's
  address space 0, as MLIR's lowering does for the host);
* ``memref.extract_aligned_pointer_as_index``: ``ptrtoint`` of the aligned base pointer;
* ``memref.assume_alignment``: the same buffer as its result, whose accesses may assume the
  alignment (a wrong one is undefined behaviour, as MLIR's ``llvm.assume`` makes it);
* ``memref.prefetch``: ``llvm.prefetch`` of the element's address;
* ``memref.realloc``: a fresh buffer of the new size holding the leading
  ``min(old, new)`` elements of the old one, which is freed when a ``memref.alloc`` or
  ``memref.realloc`` of this function made it (MLIR frees it whatever made it; a buffer that
  Python passed in is left to Python).
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.attributes import IntegerAttr
from polyopt.affine.ir import Operation
from polyopt.affine.types import MemRefType
from polyopt.codegen.llvm_helpers import I1, I32, I64, PTR, VOID, i64
from polyopt.codegen.lowering import DEFAULT_ALLOC_ALIGNMENT, FunctionLowering, handles
from polyopt.codegen.memref_access import Mem


def _index(L: FunctionLowering, res, value: int) -> None:
    L.bind(res, i64(value))
    L.forms[res] = L.index_form(value)


@handles("memref.rank")
def _lower_rank(L: FunctionLowering, op: Operation) -> None:
    _index(L, op.results[0], L.mem(op.source).type.rank)


@handles("memref.memory_space_cast")
def _lower_memory_space_cast(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.source)
    L.bind(op.results[0], Mem(src.ptr, op.results[0].type, src.align, src.sizes, src.strides,
                              src.offset))


@handles("memref.extract_aligned_pointer_as_index")
def _lower_extract_aligned_pointer(L: FunctionLowering, op: Operation) -> None:
    L.bind(op.results[0], L.b.ptrtoint(L.mem(op.source).ptr, I64))


@handles("memref.assume_alignment")
def _lower_assume_alignment(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.memref)
    align = max(src.align, op.alignment or 1)
    # only the result carries it: the operand's other uses need not be dominated by this op
    L.bind(op.results[0], Mem(src.ptr, src.type, align, src.sizes, src.strides, src.offset))


@handles("memref.prefetch")
def _lower_prefetch(L: FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.memref)
    elem_ty = L.ml.mem_type(mem.type.element_type)
    ptr, _ = L.address(mem, [L.form_of(v) for v in op.operands[1:]], elem_ty, inbounds=False)
    flag = op.attributes
    fn = L.ml.intrinsic("llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    L.b.call(fn, [ptr, ir.Constant(I32, flag["isWrite"].value),
                  ir.Constant(I32, flag["localityHint"].value),
                  ir.Constant(I32, flag["isDataCache"].value)])


@handles("memref.realloc")
def _lower_realloc(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    src = L.mem(op.source)
    t: MemRefType = op.results[0].type
    elem_ty = L.ml.mem_type(t.element_type)
    esize = L.ml.abi_size(elem_ty)
    a = op.attributes.get("alignment")
    align = a.value if isinstance(a, IntegerAttr) else DEFAULT_ALLOC_ALIGNMENT
    align = max(align, L.ml.abi_align(elem_ty))
    old_n = src.size(0)
    new_n = t.shape[0] if t.shape[0] is not None else L.get(op.operands[1])
    as_value = (lambda n: n if isinstance(n, ir.Value) else i64(n))
    new_bytes = b.mul(as_value(new_n), i64(esize))
    # a size as a value: a plain aligned_alloc that any memref.dealloc can free
    ptr = L.heap_alloc(b, new_bytes, align)
    if isinstance(old_n, int) and isinstance(new_n, int):
        keep = i64(min(old_n, new_n) * esize)
    else:
        small = b.select(b.icmp_signed("<", as_value(old_n), as_value(new_n)),
                         as_value(old_n), as_value(new_n))
        keep = b.mul(small, i64(esize))
    memcpy = L.ml.intrinsic("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    b.call(memcpy, [ptr, src.ptr, keep, ir.Constant(I1, 0)])
    owner = op.source.defining_op
    if owner is not None and owner.name in ("memref.alloc", "memref.realloc"):
        L.heap_free(b, src.ptr)
    if t.shape[0] is None:
        L.bind(op.results[0], L.descriptor_mem(ptr, t, [new_n], [1], 0, align))
    else:
        L.bind(op.results[0], Mem(ptr, t, align))
