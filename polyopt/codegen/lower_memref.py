"""Lowering of the memref dialect (MLIR's finalize-memref-to-llvm): alloc, alloca, dealloc,
load, store and the views (cast, collapse_shape)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.affine.types import MemRefType, UnrankedMemRefType
from polyopt.codegen.llvm_helpers import (I1, I64, NSW, PTR, VOID, Unsupported, attr_int, i64,
                                          is_pow2, opaque_alloca)
from polyopt.codegen.lowering import (DEFAULT_ALLOC_ALIGNMENT, FunctionLowering, handles,
                                      handles_module_op)
from polyopt.codegen.memref_access import Mem
from polyopt.memref_layout.layout import linearize, needs_descriptor, physical_size, strided_form


def _alloc_info(L: FunctionLowering, op: Operation, default_align: int):
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise Unsupported(f"result type '{t}' is not a ranked memref")
    dynamic = [k for k, d in enumerate(t.shape) if d is None]
    if len(op.operands) != len(dynamic):
        raise CodegenError(f"'{op.name}': layout symbol operands are not supported", op.loc)
    elem_ty = L.ml.mem_type(t.element_type)
    align = attr_int(op.attributes.get("alignment")) or default_align
    align = max(align, L.ml.abi_align(elem_ty))
    if not is_pow2(align):
        raise CodegenError(f"'{op.name}': alignment must be a power of two, got {align}", op.loc)
    if not needs_descriptor(t):
        nbytes = physical_size(t, op.loc) * L.ml.abi_size(elem_ty)
        if nbytes >= 1 << 63:     # the size would wrap around in i64
            raise CodegenError(f"'{op.name}': {t} has {nbytes} bytes, more than an address "
                               "space holds", op.loc)
    return t, elem_ty, align


def _dynamic_layout(L: FunctionLowering, op: Operation, t: MemRefType):
    """Sizes and row-major strides of an allocation with ``?`` dims, and its element count:
    ``int`` or ``i64`` values (the sizes are the op's operands, in order)."""
    if t.layout is not None:
        raise CodegenError(f"'{op.name}': allocating '{t}' with '?' sizes under a layout is not "
                           "supported (allocate the identity layout and take a view)", op.loc)
    operands = iter(op.operands)
    sizes = [d if d is not None else L.get(next(operands)) for d in t.shape]
    strides = []
    acc = 1
    for s in reversed(sizes):
        strides.append(acc)
        acc = _mul(L, acc, s)
    strides.reverse()
    return sizes, strides, acc


def _mul(L: FunctionLowering, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return L.b.mul(a if isinstance(a, ir.Value) else i64(a),
                   b if isinstance(b, ir.Value) else i64(b), flags=NSW)


@handles("memref.alloc")
def _lower_alloc(L: FunctionLowering, op: Operation) -> None:
    t, elem_ty, align = _alloc_info(L, op, DEFAULT_ALLOC_ALIGNMENT)
    esize = L.ml.abi_size(elem_ty)
    if needs_descriptor(t):
        sizes, strides, count = _dynamic_layout(L, op, t)
        ptr = L.heap_alloc(L.b, _mul(L, count, esize), align)
        L.bind(op.results[0], L.descriptor_mem(ptr, t, sizes, strides, 0, align))
        return
    ptr = L.heap_alloc(L.b, physical_size(t, op.loc) * esize, align)
    L.bind(op.results[0], Mem(ptr, t, align))


@handles("memref.alloca")
def _lower_alloca(L: FunctionLowering, op: Operation) -> None:
    t, elem_ty, align = _alloc_info(L, op, 64)
    if needs_descriptor(t):
        # as MLIR: a stack allocation where the op is (in a loop, the stack grows each
        # iteration unless a memref.alloca_scope around it gives it back)
        sizes, strides, count = _dynamic_layout(L, op, t)
        n = count if isinstance(count, ir.Value) else i64(count)
        ptr = L.b.alloca(elem_ty, size=n)
        ptr.align = align
        ptr.type = PTR
        L.bind(op.results[0], L.descriptor_mem(ptr, t, sizes, strides, 0, align))
        return
    n = physical_size(t, op.loc)
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
    L.heap_free(L.b, L.mem(op.operands[0]).ptr)


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
        L.bind(op.results[0], src)  # printMemref* reads the ranked value behind it
        return
    if not isinstance(dst_t, MemRefType) or dst_t.element_type != src.type.element_type:
        raise CodegenError(f"'memref.cast' from '{src.type}' to '{dst_t}' is not supported",
                           op.loc)
    if needs_descriptor(dst_t) or src.has_descriptor:
        sizes, strides, offset = _descriptor_of(L, op, src)
        if needs_descriptor(dst_t):
            L.bind(op.results[0], L.descriptor_mem(src.ptr, dst_t, sizes, strides, offset,
                                                   src.align))
        else:  # the static type is a promise about the run-time values (MLIR's semantics)
            L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))
        return
    if linearize(dst_t, op.loc) != L.ml.linearize(src.type, op.loc):
        raise CodegenError(f"'memref.cast' from '{src.type}' to '{dst_t}' changes the data "
                           "layout, which is not supported", op.loc)
    L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))


def _descriptor_of(L: FunctionLowering, op: Operation, m: Mem) -> tuple:
    """(sizes, strides, offset) of a memref value, from its descriptor or its static type."""
    if m.has_descriptor:
        return m.sizes, m.strides, m.offset
    form = strided_form(m.type)
    if form is None:
        raise CodegenError(f"'{op.name}': '{m.type}' has a layout map that is not strided, "
                           "which this op does not support", op.loc)
    return m.type.shape, form[0], form[1]


@handles("memref.dim")
def _lower_dim(L: FunctionLowering, op: Operation) -> None:
    m = L.mem(op.memref)
    res = op.results[0]
    k = op.constant_index()
    if k is not None:
        size = m.size(k)
        L.bind(res, size if isinstance(size, ir.Value) else i64(size))
        L.forms[res] = L.index_form(size)
        return
    # a run-time dimension number: read the sizes as an array
    sizes = [m.size(j) for j in range(m.type.rank)]
    ty = ir.ArrayType(I64, max(1, len(sizes)))
    ptr = L.b.gep(L.i64_array(sizes), [i64(0), L.get(op.index)], source_etype=ty)
    L.bind(res, L.b.load(ptr, typ=I64))


@handles("memref.collapse_shape")
def _lower_memref_collapse_shape(L: FunctionLowering, op: Operation) -> None:
    """A view: the same pointer with the collapsed type.  The verifier proved that the
    collapsed dims are contiguous, so the result's layout gives every element the flat offset
    it has in the source (row-major within each group; a strided source keeps its offset).
    With a descriptor, a group's size is the product of its sizes and its stride the stride
    of its innermost dimension."""
    src = L.mem(op.operands[0])
    dst_t = op.results[0].type
    if not needs_descriptor(dst_t) and not src.has_descriptor:
        L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))
        return
    sizes, strides, offset = _descriptor_of(L, op, src)
    new_sizes, new_strides = [], []
    for group in op.reassociation:
        acc = 1
        for d in group:
            acc = _mul(L, acc, sizes[d])
        new_sizes.append(acc)
        new_strides.append(strides[group[-1]] if group else 1)
    if needs_descriptor(dst_t):
        L.bind(op.results[0], L.descriptor_mem(src.ptr, dst_t, new_sizes, new_strides, offset,
                                               src.align))
    else:
        L.bind(op.results[0], Mem(src.ptr, dst_t, src.align))


# -- views -----------------------------------------------------------------------------------


def _add(L: FunctionLowering, a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return L.b.add(a if isinstance(a, ir.Value) else i64(a),
                   b if isinstance(b, ir.Value) else i64(b), flags=NSW)


def _mixed(L: FunctionLowering, entries) -> list:
    """``int`` entries as they are, ``Value`` entries as their LLVM values."""
    return [e if isinstance(e, int) else L.get(e) for e in entries]


def _bind_view(L: FunctionLowering, op: Operation, src: Mem, sizes, strides, offset) -> None:
    """Bind the op's result: the source's buffer seen with these sizes, strides and offset
    (a descriptor when the result type has a ``?``; else its static type says them all)."""
    t = op.results[0].type
    if needs_descriptor(t):
        L.bind(op.results[0], L.descriptor_mem(src.ptr, t, sizes, strides, offset, src.align))
    else:
        L.bind(op.results[0], Mem(src.ptr, t, src.align))


@handles("memref.subview")
def _lower_subview(L: FunctionLowering, op: Operation) -> None:
    """MLIR's subview lowering: offset += sum(offset_k * stride_k), stride_k *= step_k, the
    dropped unit dimensions of a rank-reduced result left out."""
    src = L.mem(op.source)
    sizes, strides, offset = _descriptor_of(L, op, src)
    offs, steps = _mixed(L, op.mixed_offsets()), _mixed(L, op.mixed_strides())
    new_sizes = _mixed(L, op.mixed_sizes())
    for off, stride in zip(offs, strides):
        offset = _add(L, offset, _mul(L, off, stride))
    new_strides = [_mul(L, s, step) for s, step in zip(strides, steps)]
    dropped = op.dropped_dims()
    keep = [k for k in range(len(new_sizes)) if k not in dropped]
    _bind_view(L, op, src, [new_sizes[k] for k in keep], [new_strides[k] for k in keep], offset)


@handles("memref.reinterpret_cast")
def _lower_reinterpret_cast(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.source)
    (offset,) = _mixed(L, op.mixed_offsets())
    _bind_view(L, op, src, _mixed(L, op.mixed_sizes()), _mixed(L, op.mixed_strides()), offset)


@handles("memref.expand_shape")
def _lower_expand_shape(L: FunctionLowering, op: Operation) -> None:
    """Each source dimension of stride ``s`` becomes dimensions with strides ``s`` times the
    sizes to their right in the group."""
    src = L.mem(op.source)
    _, strides, offset = _descriptor_of(L, op, src)
    sizes = _mixed(L, op.mixed_output_shape())
    new_strides: list = [None] * len(sizes)
    for group, stride in zip(op.reassociation, strides):
        acc = stride
        for d in reversed(group):
            new_strides[d] = acc
            acc = _mul(L, acc, sizes[d])
    _bind_view(L, op, src, sizes, new_strides, offset)


@handles("memref.transpose")
def _lower_transpose(L: FunctionLowering, op: Operation) -> None:
    src = L.mem(op.source)
    sizes, strides, offset = _descriptor_of(L, op, src)
    dims = op.dims()
    _bind_view(L, op, src, [sizes[d] for d in dims], [strides[d] for d in dims], offset)


# -- copy and alloca_scope -------------------------------------------------------------------


@handles("memref.copy")
def _lower_copy(L: FunctionLowering, op: Operation) -> None:
    """One ``llvm.memcpy`` when both sides are row-major (MLIR does the same for contiguous
    memrefs), else a loop nest over the source's sizes."""
    src, dst = L.mem(op.source), L.mem(op.target)
    sizes = [src.size(k) for k in range(src.type.rank)]
    if all(m.type.layout is None for m in (src, dst)):
        count = 1
        for s in sizes:
            count = _mul(L, count, s)
        elem = L.ml.mem_type(src.type.element_type)
        nbytes = _mul(L, count, L.ml.abi_size(elem))
        fn = L.ml.intrinsic("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
        L.b.call(fn, [dst.ptr, src.ptr, nbytes if isinstance(nbytes, ir.Value) else i64(nbytes),
                      ir.Constant(I1, 0)])
        return
    L.emit_loops(list(sizes), lambda ivs: L.store_elem(L.load_elem(src, ivs), dst, ivs),
                 name="copy")


@handles("memref.alloca_scope")
def _lower_alloca_scope(L: FunctionLowering, op: Operation) -> None:
    """``llvm.stacksave`` before the region, ``llvm.stackrestore`` after it (MLIR's
    lowering): the dynamic ``alloca``s made inside are given back."""
    saved = L.b.call(L.ml.intrinsic("llvm.stacksave.p0", PTR, []), [])
    values = L.lower_region_block(op.body)
    L.b.call(L.ml.intrinsic("llvm.stackrestore.p0", VOID, [PTR]), [saved])
    for res, v in zip(op.results, values):
        L.bind_llvm(res, v)


# -- globals ---------------------------------------------------------------------------------


def _element_bytes(t: MemRefType, values) -> bytes:
    """The initializer of a global, as the bytes of its elements in memory."""
    et = t.element_type
    name = str(et)
    if name == "bf16":
        bits = np.asarray(values, np.float32).view(np.uint32)
        # round to nearest even, as a truncf to bf16 does (NaNs stay NaNs)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        nan = np.isnan(np.asarray(values, np.float32))
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
        return rounded.tobytes()
    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "index": np.int64,
             "i1": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
             "i64": np.int64}.get(name)
    if dtype is None:
        raise Unsupported(f"memref.global of element type '{et}' is not supported")
    if np.issubdtype(dtype, np.integer):
        width = 64 if name == "index" else (8 if name == "i1" else et.width)
        values = [int(v) & ((1 << width) - 1) for v in values]
        return np.asarray(values, np.uint64).astype(dtype.__name__.replace("int", "uint")
                                                   if name != "i1" else np.uint8).tobytes()
    return np.asarray(values, dtype).tobytes()


@handles_module_op("memref.global")
def _lower_global(ml, op: Operation) -> None:
    """An LLVM global of the buffer's bytes (zeros for ``uninitialized``), constant when the
    op says so, aligned as asked (default 64)."""
    t = op.memref_type
    init = op.initial_value
    if init is None:
        raise CodegenError(f"memref.global @{op.sym_name} has no initial value: external globals "
                           "are not supported", op.loc)
    elem = ml.mem_type(t.element_type)
    nbytes = physical_size(t, op.loc) * ml.abi_size(elem)
    if init == "uninitialized":
        data = bytes(nbytes)
    else:
        values = list(init.values)
        if len(values) == 1 and init.num_elements != 1:
            values = values * init.num_elements
        data = _element_bytes(t, values)
    ty = ir.ArrayType(ir.IntType(8), max(1, nbytes))
    name = f"__polyopt_global.{op.sym_name}"
    gv = ir.GlobalVariable(ml.llmod, ty, name)
    gv.initializer = ir.Constant(ty, bytearray(data or bytes(1)))
    gv.global_constant = op.is_constant
    gv.linkage = "internal"
    align = attr_int(op.attributes.get("alignment")) or DEFAULT_ALLOC_ALIGNMENT
    gv.align = max(align, ml.abi_align(elem))
    gv.type = PTR  # opaque pointers (llvmlite types the global as a pointer to its array)
    ml.memref_globals[op.sym_name] = gv


@handles("memref.get_global")
def _lower_get_global(L: FunctionLowering, op: Operation) -> None:
    gv = L.ml.memref_globals.get(op.global_name)
    if gv is None:
        raise CodegenError(f"memref.get_global: no memref.global @{op.global_name} was lowered",
                           op.loc)
    L.bind(op.results[0], Mem(gv, op.results[0].type, gv.align))
