"""Lowering of ``vector.transfer_read`` / ``vector.transfer_write`` and the mask ops (what MLIR's
``--convert-vector-to-scf --convert-vector-to-llvm`` make of them, without the loops).

A transfer is lowered one 1-D row (the last vector dim) at a time:

* the row's lanes are enabled by the mask operand, and, along each dim that is not
  ``in_bounds``, by ``index + position < size`` of the memref dim it walks (a range analysis of
  the index proves many of them and drops the check);
* a row along the memref's contiguous most minor dim is one ``load``/``store`` when every lane
  is enabled, else ``llvm.masked.load``/``llvm.masked.store`` (the padding value in the disabled
  lanes of a read), which touch no memory in the disabled lanes;
* any other row (a transposing ``permutation_map``, a broadcast dim, a non-unit stride) is a
  ``llvm.masked.gather``/``llvm.masked.scatter`` over the addresses of its lanes.

Out-of-bounds lanes are never dereferenced: their addresses are computed without ``inbounds``
and masked off.
"""

from __future__ import annotations

from typing import Optional

from llvmlite import ir

from polyopt.affine.affine_expr import AffineDimExpr
from polyopt.affine.ir import Operation
from polyopt.affine.types import IntegerType, VectorType
from polyopt.codegen.index_forms import Lin
from polyopt.codegen.llvm_helpers import I1, I32, I64, PTR, Unsupported, index_space, int_const
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem, _contiguous_run


class _Transfer:
    """One transfer op being lowered: its memref, indices, map and the enabled lanes."""

    def __init__(self, L: FunctionLowering, op: Operation):
        self.L, self.op = L, op
        self.mem: Mem = L.mem(op.source)
        mt = self.mem.type
        self.vt: VectorType = op.vector_type
        if isinstance(mt.element_type, VectorType):
            raise Unsupported(f"transfers on memrefs of vectors ('{mt}') are not supported")
        if self.vt.element_type != mt.element_type:
            raise Unsupported(f"a transfer of '{self.vt}' from/to '{mt}' needs the same element "
                              "type")
        L.ml.type(self.vt)
        self.subs = [L.form_of(v) for v in op.indices]
        self.results = op.permutation_map.results
        self.in_bounds = op.in_bounds
        self.mask = L.get(op.mask) if op.mask is not None else None
        self.mask_dims = sorted(r.position for r in self.results if isinstance(r, AffineDimExpr))
        et = mt.element_type
        self.is_i1 = isinstance(et, IntegerType) and et.width == 1
        self.elem_ty = L.ml.mem_type(et)          # in memory (i8 for i1)
        self.n = self.vt.shape[-1]
        self.row_ty = ir.VectorType(self.elem_ty, self.n)

    # -- positions and conditions ---------------------------------------------------------------

    def subscripts(self, pos) -> list[Lin]:
        """The memref subscripts of vector position ``pos`` (a prefix of the vector dims)."""
        s = list(self.subs)
        for r, p in zip(self.results, pos):
            if isinstance(r, AffineDimExpr) and p:
                s[r.position] = s[r.position].add(Lin.constant(p))
        return s

    def room(self, s: list[Lin], d: int) -> tuple[Lin, Optional[int]]:
        """``size(d) - s[d]`` (the positions left in dim ``d``) and its proven lower bound."""
        L = self.L
        left = L.index_form(self.mem.size(d)).add(s[d].scale(-1))
        lo, _ = L.lin_range(left)
        return left, (left.const if left.is_const else lo)

    def outer_condition(self, pos) -> Optional[ir.Value]:
        """Are the row's outer positions inside the memref (None: proven)?"""
        L, b = self.L, self.L.b
        s = self.subscripts(pos)
        cond = None
        for j, (r, p) in enumerate(zip(self.results, pos)):
            if not isinstance(r, AffineDimExpr) or self.in_bounds[j]:
                continue
            left, lo = self.room(s, r.position)
            if lo is not None and lo >= 1:
                continue
            c = b.icmp_signed(">", L.emit_lin(left), ir.Constant(I64, 0))
            cond = c if cond is None else b.and_(cond, c)
        return cond

    def mask_element(self, pos) -> ir.Value:
        """The mask operand's bit at full vector position ``pos``."""
        b = self.L.b
        by_dim = {r.position: p for r, p in zip(self.results, pos)
                  if isinstance(r, AffineDimExpr)}
        idx = [by_dim[d] for d in self.mask_dims]
        row = self.mask
        if not idx:     # no dim is transferred: the one-element mask (vector<1xi1>) holds all
            return b.extract_element(row, int_const(I32, 0))
        if len(idx) > 1:
            row = b.extract_value(row, idx[:-1])
        return b.extract_element(row, int_const(I32, idx[-1]))

    def lane_mask(self, pos) -> Optional[ir.Value]:
        """The enabled lanes of the row at outer position ``pos`` (None: all of them)."""
        L, b = self.L, self.L.b
        n = self.n
        parts = []
        last = self.results[-1]
        if isinstance(last, AffineDimExpr) and not self.in_bounds[-1]:
            left, lo = self.room(self.subscripts(pos), last.position)
            if lo is None or lo < n:
                iota = ir.Constant(ir.VectorType(I64, n), [ir.Constant(I64, t) for t in range(n)])
                parts.append(b.icmp_signed(">", L.splat(L.emit_lin(left), n), iota))
        cond = self.outer_condition(pos)
        if cond is not None:
            parts.append(L.splat(cond, n))
        if self.mask is not None:
            parts.append(self.mask_row(pos))
        if not parts:
            return None
        m = parts[0]
        for x in parts[1:]:
            m = b.and_(m, x)
        return m

    def mask_row(self, pos) -> ir.Value:
        b = self.L.b
        last = self.results[-1]
        mask_dims = self.mask_dims
        # the mask's last dim walks along the vector's last dim: take its row as it is
        if isinstance(last, AffineDimExpr) and mask_dims and mask_dims[-1] == last.position:
            by_dim = {r.position: p for r, p in zip(self.results, pos)
                      if isinstance(r, AffineDimExpr)}
            idx = [by_dim[d] for d in mask_dims[:-1]]
            return b.extract_value(self.mask, idx) if idx else self.mask
        if not isinstance(last, AffineDimExpr):      # a broadcast row: one bit for all lanes
            return self.L.splat(self.mask_element(tuple(pos) + (0,)), self.n)
        row = ir.Constant(ir.VectorType(I1, self.n), ir.Undefined)
        for t in range(self.n):
            row = b.insert_element(row, self.mask_element(tuple(pos) + (t,)), int_const(I32, t))
        return row

    # -- addresses -------------------------------------------------------------------------------

    def contiguous(self, pos) -> bool:
        """Is the row one run along the memref's most minor, unit-stride dim?"""
        last = self.results[-1]
        mt = self.mem.type
        if not isinstance(last, AffineDimExpr) or last.position != mt.rank - 1:
            return False
        if self.mem.has_descriptor:
            stride = self.mem.strides[-1]
            return isinstance(stride, int) and stride == 1
        return _contiguous_run(VectorType((self.n,), mt.element_type), mt, self.subscripts(pos))

    def row_pointer(self, pos, guarded: bool) -> tuple[ir.Value, int]:
        return self.L.address(self.mem, self.subscripts(pos), self.row_ty, inbounds=not guarded)

    def lane_pointers(self, pos, guarded: bool) -> ir.Value:
        L, b = self.L, self.L.b
        s = self.subscripts(pos)
        last = self.results[-1]
        ptrs = ir.Constant(ir.VectorType(PTR, self.n), ir.Undefined)
        for t in range(self.n):
            st = list(s)
            if isinstance(last, AffineDimExpr) and t:
                st[last.position] = st[last.position].add(Lin.constant(t))
            ptr, _ = L.address(self.mem, st, self.elem_ty, inbounds=not guarded)
            ptrs = b.insert_element(ptrs, ptr, int_const(I32, t))
        return ptrs

    def scalar_align(self) -> int:
        return max(1, min(self.mem.align, self.L.ml.abi_align(self.elem_ty)))

    # -- i1 in memory as bytes -----------------------------------------------------------------

    def to_memory(self, row: ir.Value) -> ir.Value:
        return self.L.b.zext(row, self.row_ty) if self.is_i1 else row

    def from_memory(self, row: ir.Value) -> ir.Value:
        return self.L.b.trunc(row, ir.VectorType(I1, self.n)) if self.is_i1 else row


def _suffix(ty: ir.VectorType) -> str:
    e = ty.element
    if isinstance(e, ir.IntType):
        es = f"i{e.width}"
    elif isinstance(e, ir.PointerType):
        es = "p0"
    else:
        es = {"double": "f64", "float": "f32", "half": "f16", "bfloat": "bf16"}[str(e)]
    return f"v{ty.count}{es}"


def _transfer_0d(L: FunctionLowering, op: Operation, value: Optional[ir.Value]):
    """A 0-D transfer: the one element at the indices, which it moves whatever the memref's
    sizes (no dim is transferred, so there is nothing to check, as in MLIR); under a
    ``vector<i1>`` mask, a masked load/store of one lane.  Returns what a read reads."""
    b = L.b
    mem = L.mem(op.source)
    et = mem.type.element_type
    if isinstance(et, VectorType) or et != op.vector_type.element_type:
        raise Unsupported(f"a transfer of '{op.vector_type}' from/to '{mem.type}' needs the "
                          "same element type")
    vty = L.ml.type(op.vector_type)
    subs = [L.form_of(v) for v in op.indices]
    zero = int_const(I32, 0)
    if op.mask is None:
        if value is not None:
            L.store_elem(b.extract_element(value, zero), mem, subs)
            return None
        return b.insert_element(ir.Constant(vty, ir.Undefined), L.load_elem(mem, subs), zero)
    is_i1 = isinstance(et, IntegerType) and et.width == 1
    row_ty = ir.VectorType(L.ml.mem_type(et), 1)
    ptr, align = L.address(mem, subs, row_ty, inbounds=False)
    mask = L.get(op.mask)
    if value is not None:
        fn = L.ml.intrinsic(f"llvm.masked.store.{_suffix(row_ty)}.p0", ir.VoidType(),
                            [row_ty, PTR, I32, mask.type])
        b.call(fn, [b.zext(value, row_ty) if is_i1 else value, ptr, int_const(I32, align), mask])
        return None
    pad = L.get(op.padding)
    passthru = L.splat(b.zext(pad, row_ty.element) if is_i1 else pad, 1)
    fn = L.ml.intrinsic(f"llvm.masked.load.{_suffix(row_ty)}.p0", row_ty,
                        [PTR, I32, mask.type, row_ty])
    row = b.call(fn, [ptr, int_const(I32, align), mask, passthru])
    return b.trunc(row, vty) if is_i1 else row


@handles("vector.transfer_read")
def _lower_transfer_read(L: FunctionLowering, op: Operation) -> None:
    if not op.vector_type.shape:
        L.bind(op.results[0], _transfer_0d(L, op, None))
        return
    x = _Transfer(L, op)
    b = L.b
    pad = L.get(op.padding)
    if x.is_i1:
        pad = b.zext(pad, x.elem_ty)
    passthru = L.splat(pad, x.n)
    outer = x.vt.shape[:-1]
    agg = ir.Constant(L.ml.type(x.vt), ir.Undefined) if outer else None
    for pos in index_space(outer):
        mask = x.lane_mask(pos)
        if x.contiguous(pos):
            ptr, align = x.row_pointer(pos, mask is not None)
            if mask is None:
                row = b.load(ptr, typ=x.row_ty, align=align)
            else:
                fn = L.ml.intrinsic(f"llvm.masked.load.{_suffix(x.row_ty)}.p0", x.row_ty,
                                    [PTR, I32, mask.type, x.row_ty])
                row = b.call(fn, [ptr, int_const(I32, align), mask, passthru])
        else:
            ptrs = x.lane_pointers(pos, mask is not None)
            if mask is None:
                mask = ir.Constant(ir.VectorType(I1, x.n), [ir.Constant(I1, 1)] * x.n)
            fn = L.ml.intrinsic(f"llvm.masked.gather.{_suffix(x.row_ty)}.{_suffix(ptrs.type)}",
                                x.row_ty, [ptrs.type, I32, mask.type, x.row_ty])
            row = b.call(fn, [ptrs, int_const(I32, x.scalar_align()), mask, passthru])
        row = x.from_memory(row)
        if agg is None:
            L.bind(op.results[0], row)
            return
        agg = b.insert_value(agg, row, list(pos))
    L.bind(op.results[0], agg)


@handles("vector.transfer_write")
def _lower_transfer_write(L: FunctionLowering, op: Operation) -> None:
    if not op.vector_type.shape:
        _transfer_0d(L, op, L.get(op.value))
        return
    x = _Transfer(L, op)
    b = L.b
    value = L.get(op.value)
    outer = x.vt.shape[:-1]
    for pos in index_space(outer):
        row = x.to_memory(b.extract_value(value, list(pos)) if outer else value)
        mask = x.lane_mask(pos)
        if x.contiguous(pos):
            ptr, align = x.row_pointer(pos, mask is not None)
            if mask is None:
                b.store(row, ptr, align=align)
            else:
                fn = L.ml.intrinsic(f"llvm.masked.store.{_suffix(x.row_ty)}.p0", ir.VoidType(),
                                    [x.row_ty, PTR, I32, mask.type])
                b.call(fn, [row, ptr, int_const(I32, align), mask])
        else:
            ptrs = x.lane_pointers(pos, mask is not None)
            if mask is None:
                mask = ir.Constant(ir.VectorType(I1, x.n), [ir.Constant(I1, 1)] * x.n)
            fn = L.ml.intrinsic(f"llvm.masked.scatter.{_suffix(x.row_ty)}.{_suffix(ptrs.type)}",
                                ir.VoidType(), [x.row_ty, ptrs.type, I32, mask.type])
            b.call(fn, [row, ptrs, int_const(I32, x.scalar_align()), mask])


# ---------------------------------------------------------------------------------------------
# masks

def _mask_rows(L: FunctionLowering, t: VectorType, bounds: list) -> ir.Value:
    """A mask of type ``t`` whose bit ``(p0, ..., pk)`` is ``pj < bounds[j]`` for every j
    (``bounds``: ints or i64 values)."""
    b = L.b
    n = t.shape[-1] if t.shape else 1       # a 0-D mask: one bit, ``0 < bounds[0]``
    iota = ir.Constant(ir.VectorType(I64, n), [ir.Constant(I64, k) for k in range(n)])
    last = bounds[-1]
    if isinstance(last, int):
        row = ir.Constant(ir.VectorType(I1, n), [ir.Constant(I1, int(k < last)) for k in range(n)])
    else:
        row = b.icmp_signed(">", L.splat(last, n), iota)
    outer = t.shape[:-1]
    if not outer:
        return row
    zero = ir.Constant(ir.VectorType(I1, n), [ir.Constant(I1, 0)] * n)
    agg = ir.Constant(L.ml.type(t), ir.Undefined)
    for pos in index_space(outer):
        cond = None
        for p, bound in zip(pos, bounds):
            c = ir.Constant(I1, int(p < bound)) if isinstance(bound, int) else \
                b.icmp_signed(">", bound, ir.Constant(I64, p))
            cond = c if cond is None else b.and_(cond, c)
        agg = b.insert_value(agg, b.select(cond, row, zero), list(pos))
    return agg


@handles("vector.create_mask")
def _lower_create_mask(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.bind(op.results[0], _mask_rows(L, t, [L.get(v) for v in op.operands]))


@handles("vector.constant_mask")
def _lower_constant_mask(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.bind(op.results[0], _mask_rows(L, t, list(op.mask_dim_sizes)))
