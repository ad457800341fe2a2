"""Memref values in the lowering and the addressing of their elements and vector rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.affine_expr import AffineMap
from polyopt.affine.dialects.memref import strides_and_offset
from polyopt.affine.dialects.vector import last_dim_unit_stride
from polyopt.affine.types import IntegerType, MemRefType, VectorType
from polyopt.codegen.index_forms import Lin
from polyopt.codegen.llvm_helpers import I1, I8, Unsupported, index_space, lowbit


def _contiguous_run(vt: VectorType, mt: MemRefType, subs: Sequence[Lin]) -> bool:
    """Are the elements a vector access of ``vt`` at ``subs`` touches consecutive in memory?
    Strided layouts: when the most minor stride is 1.  A tiled layout map (``floordiv`` /
    ``mod``, e.g. a packed panel's ``(d0, d1) -> (d1 floordiv 16, d0, d1 mod 16)``): when the
    run stays inside one tile, which polyopt's vectorizer proves for the accesses it makes;
    at constant subscripts it is checked here (the map's last result steps by one along the
    run), elsewhere taken as given."""
    if last_dim_unit_stride(vt, mt):
        return True
    layout = mt.layout
    if strides_and_offset(mt) is not None or not isinstance(layout, AffineMap):
        return False
    if layout.num_symbols or not all(s.is_const for s in subs):
        return True
    base = [s.const for s in subs]
    points = [layout.evaluate(base[:-1] + [base[-1] + t]) for t in range(vt.shape[-1])]
    return all(q[:-1] == points[0][:-1] and q[-1] == points[0][-1] + t
               for t, q in enumerate(points))


@dataclass
class Mem:
    """A memref SSA value: base pointer, ranked type and the proven base alignment.

    A memref whose type has a ``?`` (:func:`~polyopt.memref_layout.layout.needs_descriptor`)
    also carries MLIR's descriptor: ``sizes`` and ``strides`` (one per dimension) and ``offset``,
    each an ``int`` or an ``i64`` LLVM value; element ``[i0, ...]`` is at
    ``ptr + offset + sum(ik * strides[k])``.  Other memrefs are their pointer alone: the type's
    layout gives every offset (:func:`~polyopt.memref_layout.layout.linearize`).
    """

    ptr: ir.Value
    type: MemRefType
    align: int
    sizes: Optional[tuple] = None
    strides: Optional[tuple] = None
    offset: Any = None

    @property
    def has_descriptor(self) -> bool:
        return self.strides is not None

    def size(self, k: int):
        """The extent of dimension ``k``: an ``int`` when static, else an ``i64`` value."""
        if self.sizes is not None:
            return self.sizes[k]
        return self.type.shape[k]

    def descriptor_values(self) -> tuple:
        """(offset, sizes..., strides...) as ``i64`` LLVM values, in the ABI's order."""
        if not self.has_descriptor:
            raise ValueError("a memref without descriptor")
        return tuple(v if isinstance(v, ir.Value) else ir.Constant(ir.IntType(64), int(v))
                     for v in (self.offset, *self.sizes, *self.strides))


class MemRefAccessLowering:
    """The part of :class:`~polyopt.codegen.lowering.FunctionLowering` that addresses memref
    elements (scalars, 1-D vectors, rows of n-D vectors)."""

    # -- memory addressing ------------------------------------------------------------------

    def address(self, mem: Mem, subscripts: Sequence[Lin], access_ty: ir.Type,
                inbounds: bool = True) -> tuple[ir.Value, int]:
        """Pointer to the element at logical ``subscripts`` and the alignment it is known to
        have for an access of type ``access_ty``."""
        if len(subscripts) != mem.type.rank:
            raise CodegenError(f"'{self.op.name}': {len(subscripts)} subscripts for a memref of "
                               f"rank {mem.type.rank}", self.op.loc)
        if mem.has_descriptor:
            off = self.index_form(mem.offset)
            for sub, stride in zip(subscripts, mem.strides):
                off = off.add(self.lin_mul(sub, self.index_form(stride)))
        else:
            lin = self.ml.linearize(mem.type, self.op.loc)
            off = self.flatten(lin.results[0], list(subscripts), [])
        elem_ty = self.ml.mem_type(mem.type.element_type)
        esize = self.ml.abi_size(elem_ty)
        g = off.divisor() * esize
        align = mem.align if g == 0 else min(mem.align, lowbit(g))
        align = max(1, min(align, self.ml.abi_align(access_ty)))
        if off.is_const and off.const == 0:
            return mem.ptr, align
        offset = self.emit_lin(off)
        return self.b.gep(mem.ptr, [offset], inbounds=inbounds, source_etype=elem_ty), align

    def load_elem(self, mem: Mem, subs: Sequence[Lin]) -> ir.Value:
        et = mem.type.element_type
        mty = self.ml.mem_type(et)
        ptr, align = self.address(mem, subs, mty)
        v = self.b.load(ptr, typ=mty, align=align)
        if isinstance(et, IntegerType) and et.width == 1:
            v = self.b.trunc(v, I1)
        return v

    def store_elem(self, value: ir.Value, mem: Mem, subs: Sequence[Lin]) -> None:
        et = mem.type.element_type
        mty = self.ml.mem_type(et)
        ptr, align = self.address(mem, subs, mty)
        if isinstance(et, IntegerType) and et.width == 1:
            value = self.b.zext(value, I8)
        self.b.store(value, ptr, align=align)

    def vector_rows(self, mem: Mem, subs: Sequence[Lin], vt: VectorType):
        """(row position, pointer, alignment, row type) for a vector access of type ``vt``."""
        mt = mem.type
        if isinstance(mt.element_type, VectorType):
            if mt.element_type != vt:
                raise Unsupported(f"vector type '{vt}' does not match the memref element type "
                                   f"'{mt.element_type}'")
            ty = self.ml.mem_type(vt)
            ptr, align = self.address(mem, subs, ty)
            return [((), ptr, align, ty)]
        if vt.element_type != mt.element_type:
            raise Unsupported(f"vector element type '{vt.element_type}' does not match the "
                               f"memref element type '{mt.element_type}'")
        if isinstance(vt.element_type, IntegerType) and vt.element_type.width == 1:
            raise Unsupported("vector loads/stores of i1 memrefs are not supported")
        if not _contiguous_run(vt, mt, subs):
            # (vector.load's verifier says the same; affine.vector_load meets it here)
            raise Unsupported(f"a vector access reads a contiguous run, but the most minor "
                              f"dimension of '{mt}' does not have unit stride")
        m = len(vt.shape)
        if m > mt.rank:
            raise Unsupported(f"a {m}-D vector access needs a memref of rank >= {m}")
        row_ty = ir.VectorType(self.ml.scalar_type(vt.element_type), vt.shape[-1])
        rows = []
        n = mt.rank
        for pos in index_space(vt.shape[:-1]):
            s = list(subs)
            for i, r in enumerate(pos):
                if r:
                    s[n - m + i] = s[n - m + i].add(Lin.constant(r))
            ptr, align = self.address(mem, s, row_ty)
            rows.append((pos, ptr, align, row_ty))
        return rows

    def load_vector(self, mem: Mem, subs: Sequence[Lin], vt: VectorType) -> ir.Value:
        rows = self.vector_rows(mem, subs, vt)
        if len(rows) == 1 and not rows[0][0]:
            _, ptr, align, ty = rows[0]
            return self.b.load(ptr, typ=ty, align=align)
        agg = ir.Constant(self.ml.type(vt), ir.Undefined)
        for pos, ptr, align, ty in rows:
            row = self.b.load(ptr, typ=ty, align=align)
            agg = self.b.insert_value(agg, row, list(pos))
        return agg

    def store_vector(self, value: ir.Value, mem: Mem, subs: Sequence[Lin],
                     vt: VectorType) -> None:
        rows = self.vector_rows(mem, subs, vt)
        if len(rows) == 1 and not rows[0][0]:
            _, ptr, align, _ = rows[0]
            self.b.store(value, ptr, align=align)
            return
        for pos, ptr, align, _ in rows:
            self.b.store(self.b.extract_value(value, list(pos)), ptr, align=align)
