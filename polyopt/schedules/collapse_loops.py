"""Innermost perfectly nested loops whose every access walks contiguous memory become one loop
over views of the memrefs with those dimensions collapsed (``hopt-collapse-loops``).

An elementwise nest over an NCHW activation with 28x28 planes has an innermost loop of 28:
LLVM unrolls it, then vectorizes the loop around it with gathers and scatters (14x slower
than one loop of 784 on Zen 5).  When every access using the band's induction variables
reads ``M[lead..., i_p, ..., i_q]`` (in that order, the last subscripts) of a row-major memref
whose dimensions after ``i_p``'s span exactly the loops' trip counts, the iterations visit the
same elements in the same order as one loop of ``N_p x ... x N_q`` over ``M`` collapsed to
``M'[lead..., i]`` (``memref.collapse_shape``), so the rewrite needs no dependence test::

    affine.for %h = 0 to 28 {                      %V = memref.collapse_shape %O [[0], [1, 2]]
      affine.for %w = 0 to 28 {            -->     affine.for %hw = 0 to 784 {
        %x = affine.load %O[%c, %h, %w]              %x = affine.load %V[%c, %hw]
        %b = affine.load %B[%c]                      %b = affine.load %B[%c]

MLIR counterparts: ``affine-loop-coalescing`` (``mlir::coalesceLoops``) makes one loop but
keeps the accesses' subscripts as ``floordiv``/``mod`` of it; ``linalg::collapseOpIterationDims``
collapses a linalg op's contiguous dimensions with ``memref.collapse_shape`` as here.
"""

from __future__ import annotations

import math
from typing import Optional

from ..affine.affine_expr import AffineDimExpr, AffineMap, constant, dim, symbol
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.dialects.memref import CollapseShapeOp
from ..affine.ir import Operation, Value
from ..affine.types import MemRefType
from ..codegen.loop_metadata import PARALLEL_ACCESSES


#: The scheduler's mark of a loop that carries no dependence (auto_schedule.PARALLEL).
PARALLEL_MARK = "polyopt.parallel"


def _plain(loop: AffineForOp) -> bool:
    """``affine.for %i = 0 to N`` (N a constant), step 1, nothing carried, no marks but the
    scheduler's parallel ones."""
    return (loop.step == 1 and loop.has_constant_bounds and loop.constant_lower_bound == 0
            and not loop.inits and not loop.results
            and set(loop.attributes) <= {"lowerBoundMap", "upperBoundMap", "step",
                                         PARALLEL_MARK, PARALLEL_ACCESSES})


def _trailing_positions(access, ivs: list[Value]) -> Optional[list[int]]:
    """The map positions of ``ivs`` when ``access`` (an affine load or store) subscripts its
    memref's last dimensions with exactly them, in order, and no other subscript uses them;
    [] when it uses none of them; None otherwise."""
    amap, operands = access.map, list(access.map_operands)
    band = {id(v) for v in ivs}
    if any(id(v) in band for v in operands[amap.num_dims:]):
        return None
    band_dims = {k for k, v in enumerate(operands[:amap.num_dims]) if id(v) in band}
    if not band_dims:
        return []
    nb, results = len(ivs), amap.results
    if len(results) < nb or any(r.used_dims() & band_dims for r in results[:-nb]):
        return None
    positions = []
    for r, iv in zip(results[-nb:], ivs):
        if not isinstance(r, AffineDimExpr) or operands[r.position] is not iv:
            return None
        positions.append(r.position)
    return positions


def _contiguous(memref: Value, extents: list[int]) -> bool:
    """Are ``memref``'s last dimensions, but the first of them, exactly ``extents[1:]`` in a
    row-major layout (so that the band's iterations walk one contiguous run per lead)?"""
    t = memref.type
    if not isinstance(t, MemRefType) or t.layout is not None or len(t.shape) < len(extents):
        return False
    tail = t.shape[len(t.shape) - len(extents):]
    return all(isinstance(s, int) and s >= 0 for s in tail) and list(tail[1:]) == extents[1:]


def _collapsible(band: list[AffineForOp]) -> bool:
    """Do all accesses in the innermost body use the band's ivs as :func:`_trailing_positions`
    and :func:`_contiguous` allow, and nothing else uses them?"""
    ivs = [lp.induction_var for lp in band]
    extents = [lp.constant_upper_bound for lp in band]
    body = band[-1].body.ops
    for op in body:
        if op.regions:
            return False
        for v in op.operands:
            if not any(v is iv for iv in ivs):
                continue
            if not isinstance(op, (AffineLoadOp, AffineStoreOp)) or \
                    (isinstance(op, AffineStoreOp) and op.value is v):
                return False
    uses = False
    for op in body:
        if isinstance(op, (AffineLoadOp, AffineStoreOp)):
            positions = _trailing_positions(op, ivs)
            if positions is None:
                return False
            if positions:
                d = op.memref.defining_op
                if not _contiguous(op.memref, extents) or \
                        (d is not None and band[0].is_proper_ancestor_of(d)):
                    return False
                uses = True
    return uses


def collapsible_band(inner: AffineForOp) -> list[AffineForOp]:
    """The longest band of perfectly nested loops ending at ``inner`` (an innermost loop)
    that :func:`collapse_band` may collapse (outermost first); fewer than two: nothing."""
    if not _plain(inner) or any(isinstance(op, AffineForOp) for op in inner.body.ops):
        return []
    band = [inner]
    while True:
        parent = band[0].parent_op
        if not isinstance(parent, AffineForOp) or not _plain(parent):
            break
        if [op for op in parent.body.ops if op.name != "affine.yield"] != [band[0]]:
            break
        if not _collapsible([parent, *band]):
            break
        band.insert(0, parent)
    return band if len(band) >= 2 and _collapsible(band) else []


def _rewritten_access(access, view: Value, ivs: list[Value], positions: list[int]):
    """``access`` on ``view``: its last ``len(ivs)`` subscripts become the innermost iv."""
    amap, operands = access.map, list(access.map_operands)
    nd, ns = amap.num_dims, amap.num_symbols
    results = [*amap.results[:-len(ivs)], dim(positions[-1])]
    drop = set(positions[:-1])
    keep = [k for k in range(nd) if k not in drop]
    where = {k: i for i, k in enumerate(keep)}
    new_map = AffineMap(nd, ns, results).replace_dims_and_symbols(
        [dim(where[k]) if k in where else constant(0) for k in range(nd)],
        [symbol(j) for j in range(ns)], len(keep), ns)
    new_operands = [operands[k] for k in keep] + operands[nd:]
    b = Builder.before(access)
    if isinstance(access, AffineStoreOp):
        b.create(AffineStoreOp.build, access.value, view, new_operands, new_map, loc=access.loc)
    else:
        new = b.create(AffineLoadOp.build, view, new_operands, new_map, loc=access.loc)
        access.results[0].replace_all_uses_with(new.results[0])
    access.erase()


def _view_point(outer: AffineForOp, memref: Value) -> Operation:
    """The op before which ``memref``'s view goes: ``outer``'s ancestor in the block that
    defines ``memref`` (a function's argument's view at the top of the function)."""
    block, op = memref.owner_block, outer
    while op.parent is not block and op.parent_op is not None:
        op = op.parent_op
    return op if op.parent is block else outer


def collapse_band(band: list[AffineForOp]) -> AffineForOp:
    """Collapse ``band`` (from :func:`collapsible_band`) into its innermost loop, which runs
    over the product of the trip counts and takes the outermost's place; returns it."""
    ivs = [lp.induction_var for lp in band]
    extents = [lp.constant_upper_bound for lp in band]
    inner, outer = band[-1], band[0]
    views: dict[int, Value] = {}
    for op in list(inner.body.ops):
        if not isinstance(op, (AffineLoadOp, AffineStoreOp)):
            continue
        positions = _trailing_positions(op, ivs)
        if not positions:
            continue
        memref = op.memref
        if id(memref) not in views:
            rank = memref.type.rank
            lead = rank - len(ivs)
            groups = [[k] for k in range(lead)] + [list(range(lead, rank))]
            views[id(memref)] = Builder.before(_view_point(outer, memref)).create(
                CollapseShapeOp.build, memref, groups, loc=outer.loc).results[0]
        _rewritten_access(op, views[id(memref)], ivs, positions)
    from ..affine.attributes import AffineMapAttr
    inner.attributes["upperBoundMap"] = AffineMapAttr(AffineMap.constant_map(math.prod(extents)))
    for mark in (PARALLEL_MARK, PARALLEL_ACCESSES):
        if not all(mark in lp.attributes for lp in band):
            # one loop over all the band's iterations: parallel only if each of its loops was
            inner.attributes.pop(mark, None)
    inner.move_before(outer)
    outer.erase()
    return inner


#: A collapsed loop storing at least this many bytes per run gets its first iterations
#: peeled up to a line boundary (:func:`peel_to_line`).
PEEL_MIN_BYTES = 2048
LINE_BYTES = 64


def _drop_dim(amap: AffineMap, operands: list, position: int):
    """``amap`` and its operands without dimension ``position`` (unused by its results)."""
    nd, ns = amap.num_dims, amap.num_symbols
    keep = [k for k in range(nd) if k != position]
    where = {k: i for i, k in enumerate(keep)}
    new = amap.replace_dims_and_symbols(
        [dim(where[k]) if k in where else constant(0) for k in range(nd)],
        [symbol(j) for j in range(ns)], len(keep), ns)
    return new, [operands[k] for k in keep] + operands[nd:]


def peel_to_line(loop: AffineForOp, remark=None) -> bool:
    """Split the collapsed ``loop`` (``0 to N``) at the first iteration whose store lands on a
    cache line boundary: ``0 to min(head, N)``, then ``head to N``, the same iterations in
    the same order.  numpy's large arrays start 16 bytes past a line (glibc's mmap'd chunks),
    so without it every 512-bit access of the vectorized loop straddles two lines: bias +
    ReLU6 over 8x256x56x56 f32 NCHW ran 1.35x slower than on aligned arrays.  The head
    depends on the store's memref's run-time address
    (``memref.extract_aligned_pointer_as_index``) and on the row the loop runs in."""
    from ..affine.dialects.func import FuncOp
    from ..affine.dialects.memref_meta import ExtractAlignedPointerAsIndexOp
    from ..affine.types import IndexType
    n = loop.constant_upper_bound
    iv = loop.induction_var
    stores = [op for op in loop.body.ops if isinstance(op, AffineStoreOp)
              and any(v is iv for v in op.map_operands)]
    if not stores:
        return False
    store = stores[0]
    view = store.memref
    t = view.type
    elem = getattr(t.element_type, "width", 0) // 8
    if elem not in (4, 8) or n * elem < PEEL_MIN_BYTES or t.layout is not None or \
            not t.has_static_shape:
        return False
    top = loop
    while top.parent_op is not None and not isinstance(top.parent_op, FuncOp):
        top = top.parent_op
    if not isinstance(top.parent_op, FuncOp) or view.owner_block is not top.parent:
        return False
    amap, operands = store.map, list(store.map_operands)
    position = next(k for k, v in enumerate(operands[:amap.num_dims]) if v is iv)
    strides, stride = [], 1
    for size in reversed(t.shape):
        strides.insert(0, stride)
        stride *= size
    offset = sum((r * s for r, s in zip(amap.results[:-1], strides[:-1])), constant(0))
    address = symbol(amap.num_symbols)
    head = ((address + offset * elem) * -1) % LINE_BYTES
    head = head.floordiv(elem)
    head_map, head_operands = _drop_dim(
        AffineMap(amap.num_dims, amap.num_symbols + 1, [head]), operands, position)
    pointer = Builder.before(top).insert(ExtractAlignedPointerAsIndexOp(
        [view], [IndexType()], loc=loop.loc)).results[0]
    head_operands.append(pointer)
    first = loop.clone()
    loop.parent.insert_before(loop, first)
    from ..affine.attributes import AffineMapAttr
    upper = AffineMap(head_map.num_dims, head_map.num_symbols, [*head_map.results, constant(n)])
    first.attributes["upperBoundMap"] = AffineMapAttr(upper)
    first.set_operands(head_operands)
    loop.attributes["lowerBoundMap"] = AffineMapAttr(head_map)
    loop.set_operands(head_operands)
    return True


def collapse_contiguous_loops(root: Operation, remark=None) -> int:
    """Collapse every collapsible band under ``root`` (see the module docstring); returns how
    many bands were collapsed."""
    inner_loops = [op for op in root.walk() if isinstance(op, AffineForOp)
                   and not any(isinstance(o, AffineForOp) for o in op.body.ops)]
    done = 0
    for inner in inner_loops:
        band = collapsible_band(inner)
        if not band:
            continue
        extents = [lp.constant_upper_bound for lp in band]
        loc = band[0].loc
        peeled = peel_to_line(collapse_band(band))
        done += 1
        if remark is not None:
            remark(loc, f"hopt-collapse-loops: the {len(band)} innermost loops "
                        f"({'x'.join(map(str, extents))}) run as one loop of "
                        f"{math.prod(extents)}: every access walks contiguous elements "
                        f"(memref.collapse_shape views)"
                        + ("; its first iterations up to a cache line boundary of the "
                           "stored array peeled" if peeled else ""))
    return done
