"""Lowering of MLIR's ``amx`` dialect (``--convert-vector-to-llvm=enable-amx``), on real AMX
or emulated.

**Real AMX**, when the target has ``amx-tile``: ``!amx.tile`` is LLVM's ``x86_amx`` and each op
one of the ``.internal`` intrinsics MLIR 22 emits, with the tile shape as ``i16`` constants
(rows, bytes per row); LLVM's tile-configuration passes add ``ldtilecfg``/``tilerelease``::

    amx.tile_zero   tilezero.internal(rows, row bytes)
    amx.tile_load   tileloadd64.internal(rows, row bytes, ptr, stride in bytes)
    amx.tile_store  tilestored64.internal(rows, row bytes, ptr, stride in bytes, tile)
    amx.tile_mulf   tdpbf16ps / tdpfp16ps.internal(A rows, B row bytes, A row bytes, C, A, B)
    amx.tile_muli   tdpbssd, tdpbusd (zext A), tdpbsud (zext B), tdpbuud (both), same operands

The stride is the stride operand times the memref's element size, else the memref's stride of
its next-to-last dimension in bytes (read from the descriptor when it is ``?``).  ``tile_mulf``
on bf16 needs ``amx-bf16``, on f16 ``amx-fp16``, ``tile_muli`` needs ``amx-int8`` (a
CodegenError names the missing one).  Such a module has ``LoweredModule.uses_amx``: the JIT asks
Linux for the tile state before calling it (:mod:`polyopt.codegen.amx_permission`).

**Emulated**, on every other CPU: an EMULATION for machines without AMX, so that code written
for AMX (or generated for it) runs and can be checked anywhere.  It is slow, and never chosen
by polyopt's own pipeline for speed (its schedules emit ``amx`` ops only for targets with AMX,
which take the real path).  A tile is an LLVM ``[rows x <cols x T>]``;
loads and stores move it row by row (unaligned vector accesses at ``ptr + r * stride``),
``tile_zero`` is ``zeroinitializer``, and the products run as a loop over the rows of C and the
rows ``p`` of B, one vector of C's row at a time::

    tile_mulf:  C[m][n] += A[m][2p] * B[p][2n];  C[m][n] += A[m][2p+1] * B[p][2n+1]
    tile_muli:  C[m][n] += A[m][4p+g] * B[p][4n+g]  for g = 0..3  (i32, wrapping)

in the instructions' order: bf16/f16 products are exact in f32, each addition is rounded to f32
(round to nearest even).  Unlike the hardware, denormal inputs and results are kept (AMX-BF16
treats them as zero).  i8 operands are sign-extended, or zero-extended where ``zext``.
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.dialects.amx import memref_strides
from polyopt.affine.ir import Operation
from polyopt.affine.types import AMXTileType, FloatType, IntegerType
from polyopt.codegen.llvm_helpers import (F32, I8, I16, I32, VOID, X86_AMX, Unsupported, i64,
                                          int_const, opaque_alloca)
from polyopt.codegen.lowering import TYPE_HANDLERS, FunctionLowering, ModuleLowering, handles
from polyopt.codegen.target import Target


def target_has(target: Target, feature: str) -> bool:
    """Is LLVM feature ``feature`` (``amx-tile``) enabled in ``target``'s feature string?"""
    return f"+{feature}" in target.features.split(",")


def uses_real_amx(ml: ModuleLowering) -> bool:
    """Tiles are AMX registers (the target has ``amx-tile``), not emulated."""
    return target_has(ml.target, "amx-tile")


def _tile_llvm_type(ml: ModuleLowering, t: AMXTileType) -> ir.Type:
    if uses_real_amx(ml):
        return X86_AMX
    return ir.ArrayType(ir.VectorType(ml.scalar_type(t.element_type), t.cols), t.rows)


TYPE_HANDLERS[AMXTileType] = _tile_llvm_type


def _shape(t: AMXTileType) -> list[ir.Constant]:
    """The intrinsics' view of a tile: ``i16`` rows and ``i16`` bytes per row."""
    return [int_const(I16, t.rows), int_const(I16, t.row_bytes)]


def _amx_call(L: FunctionLowering, name: str, ret: ir.Type, args: list) -> ir.Value:
    L.ml.uses_amx = True
    fn = L.ml.intrinsic(f"llvm.x86.{name}.internal", ret, [a.type for a in args])
    return L.b.call(fn, args)


# ---------------------------------------------------------------------------------------------
# tile_zero

@handles("amx.tile_zero")
def _lower_zero(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    if uses_real_amx(L.ml):
        L.bind(op.results[0], _amx_call(L, "tilezero", X86_AMX, _shape(t)))
    else:
        L.bind(op.results[0], ir.Constant(L.ml.type(t), None))


# ---------------------------------------------------------------------------------------------
# tile_load / tile_store

def _element_bytes(t) -> int:
    if not (isinstance(t, (IntegerType, FloatType)) and t.width in (8, 16, 32, 64)):
        raise Unsupported(f"memref elements must be integers or floats of 8 to 64 bits, got "
                          f"'{t}'")
    return t.width // 8


def _address_and_stride(L: FunctionLowering, op: Operation) -> tuple[ir.Value, ir.Value]:
    """The address of ``base[indices]`` and the row stride in bytes (``i64``)."""
    mem = L.mem(op.base)
    mt = mem.type
    size = _element_bytes(mt.element_type)
    ptr, _ = L.address(mem, [L.form_of(v) for v in op.indices], L.ml.mem_type(mt.element_type))
    if op.stride is not None:
        return ptr, L.b.mul(L.get(op.stride), i64(size))
    k = mt.rank - 2
    stride = mem.strides[k] if mem.has_descriptor else memref_strides(mt)[k]
    if isinstance(stride, int):
        return ptr, i64(stride * size)
    return ptr, L.b.mul(stride, i64(size))


def _row_pointer(L: FunctionLowering, ptr: ir.Value, stride: ir.Value, r: int) -> ir.Value:
    if r == 0:
        return ptr
    if isinstance(stride, ir.Constant):
        offset = i64(stride.constant * r)
    else:
        offset = L.b.mul(stride, i64(r))
    return L.b.gep(ptr, [offset], source_etype=I8)


@handles("amx.tile_load")
def _lower_load(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    ptr, stride = _address_and_stride(L, op)
    if uses_real_amx(L.ml):
        L.bind(op.results[0], _amx_call(L, "tileloadd64", X86_AMX, [*_shape(t), ptr, stride]))
        return
    ty = L.ml.type(t)
    tile = ir.Constant(ty, ir.Undefined)
    for r in range(t.rows):
        row = L.b.load(_row_pointer(L, ptr, stride, r), typ=ty.element, align=1)
        tile = L.b.insert_value(tile, row, r)
    L.bind(op.results[0], tile)


@handles("amx.tile_store")
def _lower_store(L: FunctionLowering, op: Operation) -> None:
    t = op.value.type
    ptr, stride = _address_and_stride(L, op)
    tile = L.get(op.value)
    if uses_real_amx(L.ml):
        _amx_call(L, "tilestored64", VOID, [*_shape(t), ptr, stride, tile])
        return
    for r in range(t.rows):
        L.b.store(L.b.extract_value(tile, r), _row_pointer(L, ptr, stride, r), align=1)


# ---------------------------------------------------------------------------------------------
# tile_mulf / tile_muli

def _dot_instruction(L: FunctionLowering, op: Operation) -> str:
    """The AMX instruction of a product, checked against the target's features."""
    a = op.lhs.type.element_type
    if op.name == "amx.tile_mulf":
        name, feature = ("tdpbf16ps", "amx-bf16") if a.brain else ("tdpfp16ps", "amx-fp16")
    else:
        name = "tdpb" + ("u" if op.zext_lhs else "s") + ("u" if op.zext_rhs else "s") + "d"
        feature = "amx-int8"
    if not target_has(L.ml.target, feature):
        raise Unsupported(f"{name} needs the target feature '{feature}', which the target "
                          f"'{L.ml.target.cpu}' lacks (it has amx-tile)")
    return name


@handles("amx.tile_mulf", "amx.tile_muli")
def _lower_mul(L: FunctionLowering, op: Operation) -> None:
    a_t, b_t = op.lhs.type, op.rhs.type
    if uses_real_amx(L.ml):
        name = _dot_instruction(L, op)
        rhs = L.get(op.rhs)
        if _operands_may_share_a_register(op):
            rhs = _copy_through_memory(L, b_t, rhs)
        args = [int_const(I16, a_t.rows), int_const(I16, b_t.row_bytes),
                int_const(I16, a_t.row_bytes), L.get(op.acc), L.get(op.lhs), rhs]
        L.bind(op.results[0], _amx_call(L, name, X86_AMX, args))
        return
    L.bind(op.results[0], _emulate_mul(L, op))


def _operands_may_share_a_register(op: Operation) -> bool:
    """Could LLVM give A and B one tile register?  It does when they are one value, or two
    equal ops it merges (two ``tile_load`` of one address); the instructions then raise #UD
    (their three tiles must be distinct), and LLVM's register allocator does not know it."""
    if op.lhs is op.rhs:
        return True
    a, b = op.lhs.defining_op, op.rhs.defining_op
    return (a is not None and b is not None and a.name == b.name
            and list(a.operands) == list(b.operands) and a.attributes == b.attributes)


def _copy_through_memory(L: FunctionLowering, t: AMXTileType, tile: ir.Value) -> ir.Value:
    """A second register holding ``tile``: stored to a stack slot and loaded back (AMX has no
    tile-to-tile move)."""
    slot = opaque_alloca(L.entry_builder, ir.ArrayType(I8, t.rows * t.row_bytes))
    shape = _shape(t)
    row_bytes = i64(t.row_bytes)
    _amx_call(L, "tilestored64", VOID, [*shape, slot, row_bytes, tile])
    return _amx_call(L, "tileloadd64", X86_AMX, [*shape, slot, row_bytes])


def _emulate_mul(L: FunctionLowering, op: Operation) -> ir.Value:
    """C's rows updated in memory, a loop over (row m of C, row p of B); per (m, p) one vector
    of C's row gains the G products of A's scalars with the matching lanes of B's row."""
    b_t, c_t = op.rhs.type, op.acc.type
    is_float = op.name == "amx.tile_mulf"
    group = 2 if is_float else 4
    ml, b = L.ml, L.b
    slots = []
    for v in op.operands:
        ty = ml.type(v.type)
        slot = opaque_alloca(L.entry_builder, ty)
        b.store(L.get(v), slot)
        slots.append((slot, ty))
    (sa, ta), (sb, tb), (sc, tc) = slots
    n = c_t.cols
    wide = ir.VectorType(F32 if is_float else I32, n)
    ext_a = b.fpext if is_float else (b.zext if getattr(op, "zext_lhs", False) else b.sext)
    ext_b = b.fpext if is_float else (b.zext if getattr(op, "zext_rhs", False) else b.sext)
    scalar = F32 if is_float else I32

    def body(ivs):
        m, p = (L.emit_lin(iv) for iv in ivs)
        c_ptr = b.gep(sc, [i64(0), m], source_etype=tc)
        a_row = b.gep(sa, [i64(0), m], source_etype=ta)
        b_row = b.load(b.gep(sb, [i64(0), p], source_etype=tb), typ=tb.element)
        c = b.load(c_ptr, typ=tc.element)
        first = b.mul(p, i64(group), flags=("nuw", "nsw"))
        for g in range(group):
            k = b.add(first, i64(g), flags=("nuw", "nsw")) if g else first
            x = ext_a(b.load(b.gep(a_row, [k], source_etype=ta.element.element),
                             typ=ta.element.element), scalar)
            lanes = ir.Constant(ir.VectorType(I32, n), [g + group * j for j in range(n)])
            y = ext_b(b.shuffle_vector(b_row, ir.Constant(tb.element, ir.Undefined), lanes), wide)
            xs = L.splat(x, n)
            c = b.fadd(c, b.fmul(xs, y)) if is_float else b.add(c, b.mul(xs, y))
        b.store(c, c_ptr)

    L.emit_loops([c_t.rows, b_t.rows], body, name="amx.dot")
    return b.load(sc, typ=tc)
