"""A scalar temporary that lives in an array element between being set and being stored there
becomes that element (``hopt-delicm``).

C code and the MLIR that frontends make of it (Polygeist, or a hand translation of PolyBench)
keep partial results in a local scalar, a 0-d ``memref.alloca``.  The polyhedral model sees one
memory cell that every iteration writes: each loop carries a write-after-read and a
write-after-write dependence on it, and the scheduler can reorder nothing (PolyBench's ludcmp
is lu with such a scalar ``w``; with it, ``--hopt`` left ludcmp in its original order).  When
every live range of the scalar ends by storing into one array element that nothing else
touches while the range lasts, the scalar can live in that element instead::

    affine.for %j = 0 to %i {                     affine.for %j = 0 to %i {
      %a = affine.load %A[%i, %j]                   affine.for %k = 0 to %j {
      affine.store %a, %w[]                           %v = affine.load %A[%i, %j]
      affine.for %k = 0 to %j {             -->       ... A[i][k] * A[k][j] ...
        %v = affine.load %w[]                         affine.store %d, %A[%i, %j]
        ... A[i][k] * A[k][j] ...                   }
        affine.store %d, %w[]                       %v = affine.load %A[%i, %j]
      }                                             %q = arith.divf %v, %ajj
      %v = affine.load %w[]                         affine.store %q, %A[%i, %j]
      %q = arith.divf %v, %ajj                    }
      affine.store %q, %A[%i, %j]
    }

which is lu's nest, with only the true dependences left.  Polly's DeLICM (``-polly-delicm``,
"de-LICM": undoing the loop-invariant code motion that promoted the element to a scalar) does
this on its model; MLIR's ``affine-scalrep`` does the opposite, promoting an element to a
register after scheduling, which ``--hopt-scalrep`` does here too.

A *live range* is one iteration of an ``affine.for`` ``L`` whose body's first op that uses the
scalar ``s`` is a store to ``s``: the range runs from that store to the first store ``T`` into
another memref ``Y`` after the body's last use of ``s``.  ``s`` may live in ``Y[h]`` (``T``'s
element) when

- ``Y`` has ``s``'s element type and ``h``'s operands are defined outside ``L``'s body;
- no other access in the range can touch ``Y[h]`` of the same iteration (ISL: the accesses to
  ``Y`` of the range's ops, over their loops, meet ``T``'s element only in other iterations of
  ``L`` or its enclosing loops), and every op of the range is an affine loop, ``affine.if``, an
  affine load or store, or free of memory effects;
- every use of ``s`` is in such a range: the last value of ``s`` is never read after ``L``.

Then every load and store of ``s`` in the range accesses ``Y[h]`` and ``T`` overwrites it with
the same value as before.  A store of ``Y[h]``'s own value just loaded (``w = A[i][j]``, which
becomes ``A[i][j] = A[i][j]``) is dropped, and ``s``'s allocation when nothing uses it.
Distinct memrefs are taken not to alias, as everywhere in the scheduler.
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from ..affine.affine_expr import AffineConstantExpr
from ..affine.dialects.affine import (AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp,
                                      AffineYieldOp)
from ..affine.dialects.func import FuncOp
from ..affine.dialects.memref import AllocaOp, AllocOp, DeallocOp
from ..affine.ir import Operation, Value, walk_ops
from ..affine.types import MemRefType
from .model import access_relation

__all__ = ["forward_scalars"]


def _is_scalar_cell(op: Operation) -> bool:
    """A ``memref.alloc``/``alloca`` of one element with the identity layout: 0-d, or of
    shape ``1`` (Polygeist's scalars, ``memref<1xf64>`` read at ``[0]``)."""
    if not isinstance(op, (AllocaOp, AllocOp)) or op.operands:
        return False
    t = op.results[0].type
    return isinstance(t, MemRefType) and t.layout is None and tuple(t.shape) in ((), (1,))


def _accesses(cell: Value) -> Optional[list[Operation]]:
    """The affine loads and stores of ``cell`` (a dealloc aside), or None when it has any other
    use (passed to a call, stored as a value, viewed...)."""
    out = []
    for use in cell.uses:
        op = use.op
        if isinstance(op, AffineLoadOp) and use.index == 0:
            out.append(op)
        elif isinstance(op, AffineStoreOp) and use.index == 1:
            out.append(op)
        elif not isinstance(op, DeallocOp):
            return None
    # (the one element: every subscript is the constant 0)
    if any(not all(isinstance(r, AffineConstantExpr) and r.value == 0 for r in op.map.results)
           for op in out):
        return None
    return out


def _uses_cell(op: Operation, cell: Value) -> bool:
    return any(o.operands and any(v is cell for v in o.operands) for o in op.walk())


_FREE_OPS = ("arith.", "math.")


def _plain_op(op: Operation) -> bool:
    """Ops a live range may hold: affine control flow, affine scalar loads and stores, and
    arith/math ops (no memory effects)."""
    for o in op.walk():
        if isinstance(o, (AffineForOp, AffineIfOp, AffineYieldOp, AffineLoadOp,
                          AffineStoreOp)):
            continue
        if o.name.startswith(_FREE_OPS) and not o.regions:
            continue
        return False
    return True


def _defined_outside(v: Value, loop: AffineForOp) -> bool:
    if v is loop.induction_var:
        return True
    block = v.owner_block
    owner = block.parent_op if block is not None else None
    return owner is None or not (owner is loop or loop.is_proper_ancestor_of(owner))


class _Range:
    """One live range: ``loop``'s body ops ``start`` (the store to the cell) to ``end`` (the
    store ``T`` into the element that takes the cell's place), inclusive."""

    def __init__(self, loop: AffineForOp, start: int, end: int):
        self.loop, self.start, self.end = loop, start, end

    @property
    def ops(self) -> list[Operation]:
        return self.loop.body.ops[self.start:self.end + 1]

    @property
    def target(self) -> AffineStoreOp:
        return self.loop.body.ops[self.end]


def _live_range(loop: AffineForOp, cell: Value) -> Optional[_Range]:
    body = loop.body.ops
    touching = [k for k, op in enumerate(body) if _uses_cell(op, cell)]
    if not touching:
        return None
    first = body[touching[0]]
    if not (isinstance(first, AffineStoreOp) and first.memref is cell):
        return None
    end = next((k for k in range(touching[-1] + 1, len(body))
                if isinstance(body[k], AffineStoreOp) and body[k].memref is not cell), None)
    if end is None:
        return None
    return _Range(loop, touching[0], end)


def _meets(op: Operation, target: AffineStoreOp) -> bool:
    """Can ``op`` (an affine access to ``target``'s memref inside ``target``'s loop) touch
    ``target``'s element in the same iteration of the loops around ``target``?  True when ISL
    cannot tell."""
    try:
        a, t = access_relation(op), access_relation(target)
    except Exception:     # not affine over its loops: assume the worst
        return True
    m = len(t.ivs)
    if len(a.ivs) < m or any(x is not y for x, y in zip(a.ivs[:m], t.ivs)):
        return True
    if a.params or t.params:
        if len(a.params) != len(t.params) or any(x is not y for x, y in zip(a.params, t.params)):
            return True
    n = len(a.ivs)
    names = [f"i{d}" for d in range(n)]
    params = f"[{', '.join(a.param_names[p] for p in a.params)}] -> " if a.params else ""
    prefix = isl.Map(f"{params}{{ S[{', '.join(names)}] -> S[{', '.join(names[:m])}] }}")
    same_element = a.relation.apply_range(t.relation.reverse())
    return not same_element.intersect(prefix).is_empty()


def _whole_buffer(memref: Value) -> bool:
    """A function argument or an allocation: not a view that may alias another memref."""
    op = memref.defining_op
    return op is None or isinstance(op, (AllocaOp, AllocOp))


def _safe(rng: _Range, cell: Value) -> bool:
    target = rng.target
    memref = target.memref
    if memref.type.element_type != cell.type.element_type or not _whole_buffer(memref):
        return False
    if not all(_defined_outside(v, rng.loop) for v in target.map_operands):
        return False
    for op in rng.ops:
        if not _plain_op(op):
            return False
        for o in op.walk():
            if o is target or not isinstance(o, (AffineLoadOp, AffineStoreOp)):
                continue
            if not _whole_buffer(o.memref):
                return False
            if o.memref is memref and _meets(o, target):
                return False
    return True


def _find_ranges(ops, cell: Value, out: list) -> None:
    """The live ranges of ``cell`` among ``ops`` and the loops nested in them, outermost
    first (a loop that is a live range is not searched further)."""
    for op in ops:
        if not _uses_cell(op, cell):
            continue
        if isinstance(op, AffineForOp):
            rng = _live_range(op, cell)
            if rng is not None and _safe(rng, cell):
                out.append(rng)
                continue
        for region in op.regions:
            for block in region.blocks:
                _find_ranges(block.ops, cell, out)


def _is_copy_back(store: AffineStoreOp, memref: Value, target: AffineStoreOp) -> bool:
    """Is ``store`` (now into ``target``'s element) storing the value of a load of that same
    element in its block, with no store to it in between?"""
    load = store.value.defining_op
    if not (isinstance(load, AffineLoadOp) and load.memref is memref
            and load.parent is store.parent and load.map == target.map
            and all(x is y for x, y in zip(load.map_operands, target.map_operands))):
        return False
    block = store.parent
    between = block.ops[block.index_of(load) + 1:block.index_of(store)]
    return not any(isinstance(o, AffineStoreOp) and o.memref is memref
                   for op in between for o in op.walk())


def _rewrite(rng: _Range, cell: Value) -> None:
    target = rng.target
    memref, amap, operands = target.memref, target.map, list(target.map_operands)
    stores = []
    for op in rng.ops[:-1]:
        for o in list(op.walk()):
            if isinstance(o, AffineLoadOp) and o.memref is cell:
                new = AffineLoadOp.build(memref, operands, amap, loc=o.loc)
                o.parent.insert_before(o, new)
                o.results[0].replace_all_uses_with(new.results[0])
                o.erase()
            elif isinstance(o, AffineStoreOp) and o.memref is cell:
                new = AffineStoreOp.build(o.value, memref, operands, amap, loc=o.loc)
                o.parent.insert_before(o, new)
                o.erase()
                stores.append(new)
    for store in stores + [target]:
        if _is_copy_back(store, memref, target):
            load = store.value.defining_op
            store.erase()
            if not load.results[0].has_uses():
                load.erase()


def forward_scalars(module: Operation, remark=None) -> int:
    """Rewrite every 0-d scalar cell all of whose live ranges can live in array elements (see
    the module's docstring); the number of cells rewritten."""
    count = 0
    for func in [op for op in walk_ops(module) if isinstance(op, FuncOp)]:
        for alloc in [op for op in walk_ops(func) if _is_scalar_cell(op)]:
            cell = alloc.results[0]
            accesses = _accesses(cell)
            if not accesses:
                continue
            ranges: list[_Range] = []
            _find_ranges(func.regions[0].blocks[0].ops, cell, ranges)
            covered = {id(o) for r in ranges for op in r.ops for o in op.walk()}
            if any(id(a) not in covered for a in accesses):
                continue
            where = sorted({str(r.target.memref.type) for r in ranges})
            for rng in ranges:
                _rewrite(rng, cell)
            for use in list(cell.uses):
                use.op.erase()
            alloc.erase()
            count += 1
            if remark is not None:
                remark(alloc.loc, f"hopt-delicm: the scalar {cell.type} lives in the element "
                                  f"its value is stored to ({len(ranges)} live range(s), "
                                  f"{', '.join(where)}): its loops carry only the element's "
                                  f"dependences")
    return count
