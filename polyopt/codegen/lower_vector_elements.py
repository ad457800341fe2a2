"""Lowering of the vector ops that move elements between vectors: extract, insert, shuffle,
shape_cast, transpose and the strided slices (MLIR's ``--convert-vector-to-llvm``).

An n-D vector is an LLVM array of 1-D rows (:meth:`ModuleLowering.type`): static positions are
``extractvalue``/``insertvalue`` on the rows and ``extractelement``/``insertelement`` in a row; a
dynamic position in the last dim is a variable ``extractelement`` index, one in an outer dim goes
through a stack copy of the vector.  A poison position (``-1``) gives zero, as ``ub.poison``.
Everything else is 1-D ``shufflevector`` where the rows allow it, else element moves, which
LLVM folds back into shuffles.
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.dialects.vector_elements import POISON
from polyopt.affine.ir import Operation, Value
from polyopt.affine.types import VectorType
from polyopt.codegen.llvm_helpers import I32, I64, Unsupported, index_space, int_const, \
    opaque_alloca
from polyopt.codegen.lowering import FunctionLowering, handles


def _check(L: FunctionLowering, *types: VectorType) -> None:
    for t in types:
        if isinstance(t, VectorType):
            L.ml.type(t)


def _rows_shape(t: VectorType) -> tuple:
    """The shape of ``t``'s LLVM value: a 0-D vector is one row of one element."""
    return tuple(t.shape) or (1,)


def _zero(L: FunctionLowering, t) -> ir.Constant:
    return ir.Constant(L.ml.type(t), None)


def _elements(L: FunctionLowering, v: ir.Value, t: VectorType) -> list[ir.Value]:
    """The scalars of ``v`` in row-major order."""
    b = L.b
    out = []
    shape = _rows_shape(t)
    for pos in index_space(shape[:-1]):
        row = b.extract_value(v, list(pos)) if len(shape) > 1 else v
        out.extend(b.extract_element(row, int_const(I32, k)) for k in range(shape[-1]))
    return out


def _from_elements(L: FunctionLowering, scalars: list, t: VectorType) -> ir.Value:
    b = L.b
    shape = _rows_shape(t)
    n = shape[-1]
    row_ty = ir.VectorType(L.ml.scalar_type(t.element_type), n)
    agg = ir.Constant(L.ml.type(t), ir.Undefined) if len(shape) > 1 else None
    for r, pos in enumerate(index_space(shape[:-1])):
        row = ir.Constant(row_ty, ir.Undefined)
        for k in range(n):
            row = b.insert_element(row, scalars[r * n + k], int_const(I32, k))
        if agg is None:
            return row
        agg = b.insert_value(agg, row, list(pos))
    return agg


def _mixed(op: Operation) -> list:
    return op.mixed_position


def _row_slot(L: FunctionLowering, v: ir.Value, t: VectorType, outer: list):
    """A stack copy of ``v`` and the pointer to its row at the (partly dynamic) ``outer``
    position."""
    b = L.b
    slot = opaque_alloca(L.entry_builder, v.type)
    b.store(v, slot)
    idx = [ir.Constant(I64, 0)] + [L.get(p) if isinstance(p, Value) else ir.Constant(I64, p)
                                   for p in outer]
    return slot, b.gep(slot, idx, source_etype=v.type)


@handles("vector.extract")
def _lower_extract(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    vt = op.vector.type
    rt = op.results[0].type
    _check(L, vt, rt)
    pos = _mixed(op)
    v = L.get(op.vector)
    if any(p == POISON for p in pos if not isinstance(p, Value)):
        L.bind(op.results[0], _zero(L, rt))
        return
    if not pos:
        # vector<f32> to f32: its one element
        L.bind(op.results[0], v if isinstance(rt, VectorType) else
               b.extract_element(v, int_const(I32, 0)))
        return
    full = len(pos) == len(vt.shape)
    outer = pos[:-1] if full else pos
    if any(isinstance(p, Value) for p in outer):
        _, ptr = _row_slot(L, v, vt, outer)
        sub_t = VectorType(vt.shape[len(outer):], vt.element_type)
        v = b.load(ptr, typ=L.ml.type(sub_t))
    elif outer:
        v = b.extract_value(v, list(outer))
    if full:
        last = pos[-1]
        idx = L.get(last) if isinstance(last, Value) else int_const(I32, last)
        v = b.extract_element(v, idx)
    L.bind(op.results[0], v)


@handles("vector.insert")
def _lower_insert(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    dt = op.dest.type
    _check(L, dt, op.value.type)
    if isinstance(op.value.type, VectorType) and \
            tuple(op.value.type.shape) != tuple(dt.shape[len(op.static_position):]):
        raise Unsupported(f"inserting '{op.value.type}' into a row of '{dt}' of another shape")
    pos = _mixed(op)
    d = L.get(op.dest)
    s = L.get(op.value)
    if any(p == POISON for p in pos if not isinstance(p, Value)):
        L.bind(op.results[0], d)        # the insertion is poison: keep the vector as it was
        return
    if not pos:
        # f32 into vector<f32>: its one element
        L.bind(op.results[0], s if isinstance(op.value.type, VectorType) else
               b.insert_element(d, s, int_const(I32, 0)))
        return
    full = len(pos) == len(dt.shape)
    outer = pos[:-1] if full else pos
    if any(isinstance(p, Value) for p in outer):
        slot, ptr = _row_slot(L, d, dt, outer)
        sub_t = L.ml.type(VectorType(dt.shape[len(outer):], dt.element_type))
        if full:
            row = b.load(ptr, typ=sub_t)
            last = pos[-1]
            s = b.insert_element(row, s, L.get(last) if isinstance(last, Value)
                                 else int_const(I32, last))
        b.store(s, ptr)
        L.bind(op.results[0], b.load(slot, typ=d.type))
        return
    if full:
        row = b.extract_value(d, list(outer)) if outer else d
        last = pos[-1]
        s = b.insert_element(row, s, L.get(last) if isinstance(last, Value)
                             else int_const(I32, last))
        if not outer:
            L.bind(op.results[0], s)
            return
    L.bind(op.results[0], b.insert_value(d, s, list(outer)))


@handles("vector.shape_cast")
def _lower_shape_cast(L: FunctionLowering, op: Operation) -> None:
    src_t, dst_t = op.source.type, op.results[0].type
    _check(L, src_t, dst_t)
    v = L.get(op.source)
    if tuple(src_t.shape) == tuple(dst_t.shape):
        L.bind(op.results[0], v)
        return
    if src_t.shape and dst_t.shape and \
            [d for d in src_t.shape if d != 1] == [d for d in dst_t.shape if d != 1] == \
            [src_t.shape[-1]] == [dst_t.shape[-1]]:
        # only unit dims change (vector<1x8xf32> <-> vector<8xf32>): the single row moves
        row = L.b.extract_value(v, [0] * (len(src_t.shape) - 1)) if len(src_t.shape) > 1 else v
        if len(dst_t.shape) == 1:
            L.bind(op.results[0], row)
        else:
            L.bind(op.results[0], L.b.insert_value(ir.Constant(L.ml.type(dst_t), ir.Undefined),
                                                   row, [0] * (len(dst_t.shape) - 1)))
        return
    L.bind(op.results[0], _from_elements(L, _elements(L, v, src_t), dst_t))


@handles("vector.transpose")
def _lower_transpose(L: FunctionLowering, op: Operation) -> None:
    """Result element ``q`` is source element ``p`` with ``p[perm[k]] = q[k]`` (MLIR's
    transpose lowering to element moves, which LLVM folds into shuffles)."""
    src_t, dst_t = op.source.type, op.results[0].type
    _check(L, src_t, dst_t)
    perm = op.permutation
    v = L.get(op.source)
    if list(perm) == sorted(perm):
        L.bind(op.results[0], v)
        return
    scalars = _elements(L, v, src_t)
    strides = [1] * len(src_t.shape)
    for k in range(len(src_t.shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * src_t.shape[k + 1]
    moved = [scalars[sum(q[k] * strides[perm[k]] for k in range(len(q)))]
             for q in index_space(tuple(dst_t.shape))]
    L.bind(op.results[0], _from_elements(L, moved, dst_t))


@handles("vector.shuffle")
def _lower_shuffle(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    a, c = op.operands
    t1, t2, rt = a.type, c.type, op.results[0].type
    _check(L, t1, t2, rt)
    va, vc = L.get(a), L.get(c)
    mask = op.mask
    n1 = t1.shape[0]
    if len(rt.shape) == 1 and t1 == t2:
        idx = ir.Constant(ir.VectorType(I32, len(mask)),
                          [ir.Constant(I32, m if m != POISON else 0) for m in mask])
        L.bind(op.results[0], b.shuffle_vector(va, vc, idx))
        return
    if len(rt.shape) == 1:
        scalars = []
        for m in mask:
            if m == POISON:
                scalars.append(ir.Constant(L.ml.scalar_type(rt.element_type), None))
            else:
                src, k = (va, m) if m < n1 else (vc, m - n1)
                scalars.append(b.extract_element(src, int_const(I32, k)))
        L.bind(op.results[0], _from_elements(L, scalars, rt))
        return
    agg = ir.Constant(L.ml.type(rt), ir.Undefined)
    row_t = VectorType(rt.shape[1:], rt.element_type)
    for i, m in enumerate(mask):
        if m == POISON:
            row = _zero(L, row_t)
        else:
            row = b.extract_value(va, [m]) if m < n1 else b.extract_value(vc, [m - n1])
        agg = b.insert_value(agg, row, [i])
    L.bind(op.results[0], agg)


@handles("vector.extract_strided_slice")
def _lower_extract_strided_slice(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    st, rt = op.operands[0].type, op.results[0].type
    _check(L, st, rt)
    v = L.get(op.operands[0])
    offsets = list(op.offsets) + [0] * (len(st.shape) - len(op.offsets))
    if len(st.shape) == 1:
        o = offsets[0]
        idx = ir.Constant(ir.VectorType(I32, rt.shape[0]),
                          [ir.Constant(I32, o + k) for k in range(rt.shape[0])])
        L.bind(op.results[0], b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), idx))
        return
    flat = _elements(L, v, st)
    strides = _row_major_strides(st.shape)
    scalars = [flat[sum((p + o) * s for p, o, s in zip(pos, offsets, strides))]
               for pos in index_space(rt.shape)]
    L.bind(op.results[0], _from_elements(L, scalars, rt))


@handles("vector.insert_strided_slice")
def _lower_insert_strided_slice(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    s_t, d_t = op.operands[0].type, op.operands[1].type
    _check(L, s_t, d_t)
    s, d = L.get(op.operands[0]), L.get(op.operands[1])
    offsets = list(op.offsets)
    if len(d_t.shape) == 1:
        n, m, o = d_t.shape[0], s_t.shape[0], offsets[0]
        # widen the source to the destination's length, then pick each lane from one of them
        wide = b.shuffle_vector(s, ir.Constant(s.type, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, n),
                                            [ir.Constant(I32, min(k, m - 1)) for k in range(n)]))
        idx = [n + (k - o) if o <= k < o + m else k for k in range(n)]
        L.bind(op.results[0], b.shuffle_vector(d, wide, ir.Constant(
            ir.VectorType(I32, n), [ir.Constant(I32, k) for k in idx])))
        return
    flat = _elements(L, d, d_t)
    strides = _row_major_strides(d_t.shape)
    lead = len(d_t.shape) - len(s_t.shape)
    for k, pos in enumerate(index_space(s_t.shape)):
        full = [0] * lead + list(pos)
        at = sum((p + o) * st for p, o, st in zip(full, offsets, strides))
        flat[at] = _element_at(L, s, s_t, k)
    L.bind(op.results[0], _from_elements(L, flat, d_t))


def _element_at(L: FunctionLowering, v: ir.Value, t: VectorType, k: int) -> ir.Value:
    """Element ``k`` (row-major) of ``v``."""
    n = t.shape[-1]
    row_pos = []
    r = k // n
    for d in reversed(t.shape[:-1]):
        row_pos.append(r % d)
        r //= d
    row = L.b.extract_value(v, list(reversed(row_pos))) if len(t.shape) > 1 else v
    return L.b.extract_element(row, int_const(I32, k % n))


def _row_major_strides(shape) -> list[int]:
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))
