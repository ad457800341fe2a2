"""Lowering of the masked vector memory ops (:mod:`polyopt.affine.dialects.vector_masked`), as
MLIR's ``--convert-vector-to-llvm`` lowers them:

* ``vector.maskedload`` / ``vector.maskedstore``: ``llvm.masked.load`` / ``llvm.masked.store``
  of the run starting at the element the indices name (1-D vectors, as upstream);
* ``vector.gather`` / ``vector.scatter``: ``llvm.masked.gather`` / ``llvm.masked.scatter`` over
  the addresses ``&base[indices] + offsets[k]`` (offsets in elements, sign-extended); an n-D
  vector is done one row at a time, each row with the same base and its row of offsets
  (upstream's unrolling).

Lanes whose mask bit is off touch no memory (their addresses are computed without
``inbounds``) and take the pass-through's lane in a load.  The memref's most minor stride must
be 1, as upstream requires.
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.attributes import IntegerAttr
from polyopt.affine.dialects.vector import last_dim_unit_stride
from polyopt.affine.ir import Operation
from polyopt.affine.types import IntegerType, VectorType
from polyopt.codegen.llvm_helpers import I1, I32, I64, PTR, VOID, Unsupported, index_space, \
    int_const
from polyopt.codegen.lower_vector_transfer import _suffix
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem


class _MaskedAccess:
    """One masked op being lowered: its memref, the base address and the row types."""

    def __init__(self, L: FunctionLowering, op: Operation, vt: VectorType):
        self.L, self.op, self.vt = L, op, vt
        self.mem: Mem = L.mem(op.memref)
        mt = self.mem.type
        if isinstance(mt.element_type, VectorType):
            raise Unsupported(f"a memref of vectors ('{mt}') is not supported")
        if not last_dim_unit_stride(VectorType((2,), mt.element_type), mt):
            raise Unsupported(f"the most minor dimension of '{mt}' must have unit stride")
        L.ml.type(vt)
        et = mt.element_type
        self.is_i1 = isinstance(et, IntegerType) and et.width == 1
        self.elem_ty = L.ml.mem_type(et)          # in memory (i8 for i1)
        self.n = vt.shape[-1]
        self.row_ty = ir.VectorType(self.elem_ty, self.n)
        self.base, align = L.address(self.mem, [L.form_of(v) for v in op.indices], self.row_ty,
                                     inbounds=False)
        a = op.attributes.get("alignment")
        self.align = max(align, a.value) if isinstance(a, IntegerAttr) else align
        self.elem_align = max(1, min(self.mem.align, L.ml.abi_align(self.elem_ty)))

    def rows(self):
        """The outer positions of the vector's 1-D rows (``()`` for a 1-D vector)."""
        return index_space(self.vt.shape[:-1])

    def row(self, v: ir.Value, pos) -> ir.Value:
        return self.L.b.extract_value(v, list(pos)) if pos else v

    def to_memory(self, row: ir.Value) -> ir.Value:
        return self.L.b.zext(row, self.row_ty) if self.is_i1 else row

    def from_memory(self, row: ir.Value) -> ir.Value:
        return self.L.b.trunc(row, ir.VectorType(I1, self.n)) if self.is_i1 else row

    def lane_pointers(self, offsets: ir.Value) -> ir.Value:
        """``base + offsets[k]`` elements for each lane ``k`` of a row of offsets."""
        b = self.L.b
        ptrs = ir.Constant(ir.VectorType(PTR, self.n), ir.Undefined)
        for k in range(self.n):
            off = b.extract_element(offsets, int_const(I32, k))
            if off.type.width < 64:
                off = b.sext(off, I64)
            elif off.type.width > 64:
                off = b.trunc(off, I64)
            ptr = b.gep(self.base, [off], inbounds=False, source_etype=self.elem_ty)
            ptrs = b.insert_element(ptrs, ptr, int_const(I32, k))
        return ptrs

    def combine(self, rows: list) -> ir.Value:
        if not self.vt.shape[:-1]:
            return rows[0]
        agg = ir.Constant(self.L.ml.type(self.vt), ir.Undefined)
        for pos, r in zip(self.rows(), rows):
            agg = self.L.b.insert_value(agg, r, list(pos))
        return agg


def _one_d(op: Operation, vt: VectorType) -> None:
    if len(vt.shape) != 1:
        raise Unsupported(f"an n-D vector ('{vt}') is not supported (MLIR's "
                          "convert-vector-to-llvm lowers 1-D ones only)")


@handles("vector.maskedload")
def _lower_maskedload(L: FunctionLowering, op: Operation) -> None:
    vt = op.results[0].type
    _one_d(op, vt)
    x = _MaskedAccess(L, op, vt)
    mask = L.get(op.mask)
    fn = L.ml.intrinsic(f"llvm.masked.load.{_suffix(x.row_ty)}.p0", x.row_ty,
                        [PTR, I32, mask.type, x.row_ty])
    row = L.b.call(fn, [x.base, int_const(I32, x.align), mask, x.to_memory(L.get(op.vector))])
    L.bind(op.results[0], x.from_memory(row))


@handles("vector.maskedstore")
def _lower_maskedstore(L: FunctionLowering, op: Operation) -> None:
    vt = op.vector.type
    _one_d(op, vt)
    x = _MaskedAccess(L, op, vt)
    mask = L.get(op.mask)
    fn = L.ml.intrinsic(f"llvm.masked.store.{_suffix(x.row_ty)}.p0", VOID,
                        [x.row_ty, PTR, I32, mask.type])
    L.b.call(fn, [x.to_memory(L.get(op.vector)), x.base, int_const(I32, x.align), mask])


@handles("vector.gather")
def _lower_gather(L: FunctionLowering, op: Operation) -> None:
    x = _MaskedAccess(L, op, op.results[0].type)
    offsets, mask, passthru = L.get(op.index_vec), L.get(op.mask), L.get(op.vector)
    rows = []
    for pos in x.rows():
        ptrs = x.lane_pointers(x.row(offsets, pos))
        m = x.row(mask, pos)
        fn = L.ml.intrinsic(f"llvm.masked.gather.{_suffix(x.row_ty)}.{_suffix(ptrs.type)}",
                            x.row_ty, [ptrs.type, I32, m.type, x.row_ty])
        rows.append(x.from_memory(L.b.call(fn, [ptrs, int_const(I32, x.elem_align), m,
                                                x.to_memory(x.row(passthru, pos))])))
    L.bind(op.results[0], x.combine(rows))


@handles("vector.scatter")
def _lower_scatter(L: FunctionLowering, op: Operation) -> None:
    x = _MaskedAccess(L, op, op.vector.type)
    offsets, mask, value = L.get(op.index_vec), L.get(op.mask), L.get(op.vector)
    for pos in x.rows():
        ptrs = x.lane_pointers(x.row(offsets, pos))
        m = x.row(mask, pos)
        fn = L.ml.intrinsic(f"llvm.masked.scatter.{_suffix(x.row_ty)}.{_suffix(ptrs.type)}",
                            VOID, [x.row_ty, ptrs.type, I32, m.type])
        L.b.call(fn, [x.to_memory(x.row(value, pos)), ptrs, int_const(I32, x.elem_align), m])
