"""Lowering of the memref dialect (MLIR's finalize-memref-to-llvm): alloc, alloca, dealloc,
load, store and the views (cast, collapse_shape)."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.affine.types import MemRefType, UnrankedMemRefType
from polyopt.codegen.llvm_helpers import Unsupported, attr_int, is_pow2, opaque_alloca
from polyopt.codegen.lowering import DEFAULT_ALLOC_ALIGNMENT, FunctionLowering, handles
from polyopt.codegen.memref_access import Mem
from polyopt.memref_layout.layout import DYNAMIC_DIMS_MESSAGE, linearize, physical_size


def _alloc_info(L: FunctionLowering, op: Operation, default_align: int):
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise Unsupported(f"result type '{t}' is not a ranked memref")
    if not t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    if op.operands:
        raise CodegenError(f"'{op.name}': layout symbol operands are not supported", op.loc)
    elem_ty = L.ml.mem_type(t.element_type)
    n = physical_size(t, op.loc)
    align = attr_int(op.attributes.get("alignment")) or default_align
    align = max(align, L.ml.abi_align(elem_ty))
    if not is_pow2(align):
        raise CodegenError(f"'{op.name}': alignment must be a power of two, got {align}", op.loc)
    if n * L.ml.abi_size(elem_ty) >= 1 << 63:     # the size would wrap around in i64
        raise CodegenError(f"'{op.name}': {t} has {n * L.ml.abi_size(elem_ty)} bytes, more than "
                           "an address space holds", op.loc)
    return t, elem_ty, n, align


@handles("memref.alloc")
def _lower_alloc(L: FunctionLowering, op: Operation) -> None:
    t, elem_ty, n, align = _alloc_info(L, op, DEFAULT_ALLOC_ALIGNMENT)
    ptr = L.heap_alloc(L.b, n * L.ml.abi_size(elem_ty), align)
    L.bind(op.results[0], Mem(ptr, t, align))


@handles("memref.alloca")
def _lower_alloca(L: FunctionLowering, op: Operation) -> None:
    t, elem_ty, n, align = _alloc_info(L, op, 64)
    nbytes = n * L.ml.abi_size(elem_ty)
    if nbytes > L.ml.max_stack_bytes:
        ptr = L.heap_alloc(L.entry_builder, nbytes, align)
        L.heap_buffers.append(ptr)
    else:
        ptr = opaque_alloca(L.entry_builder, ir.ArrayType(elem_ty, max(1, n)))
        ptr.align = align
    L.bind(op.results[0], Mem(ptr, t, align))


@handles("memref.dealloc")
def _lower_dealloc(L: FunctionLowering, op: Operation) -> None:
    L.b.call(L.ml.runtime("free"), [L.mem(op.operands[0]).ptr])


@handles("memref.load")
def _lower_memref_load(L: FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.operands[0])
    L.bind(op.results[0], L.load_elem(mem, [L.form_of(v) for v in op.operands[1:]]))


@handles("memref.store")
def _lower_memref_store(L: FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.operands[1])
    L.store_elem(L.get(op.operands[0]), mem, [L.form_of(v) for v in op.operands[2:]])


@handles("memref.cast")
def _lower_memref_cast(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.operands[0])
    dst_t = op.results[0].type
    if isinstance(dst_t, UnrankedMemRefType):
        L.bind(op.results[0], Mem(src.ptr, src.type, src.align))  # remember the static type
        return
    if not isinstance(dst_t, MemRefType) or not dst_t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    if linearize(dst_t, op.loc) != L.ml.linearize(src.type, op.loc) or \
            dst_t.element_type != src.type.element_type:
        raise CodegenError(f"'memref.cast' from '{src.type}' to '{dst_t}' changes the data "
                           "layout, which is not supported", op.loc)
    L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))


@handles("memref.collapse_shape")
def _lower_memref_collapse_shape(L: FunctionLowering, op: Operation) -> None:
    """A view: the same pointer with the collapsed type.  The verifier proved that the
    collapsed dims are contiguous, so the result's layout gives every element the flat offset
    it has in the source (row-major within each group; a strided source keeps its offset)."""
    src = L.mem(op.operands[0])
    dst_t = op.results[0].type
    if not isinstance(dst_t, MemRefType) or not dst_t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))
