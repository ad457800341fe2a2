"""Data-copy (packing) generation: MLIR's ``affineDataCopyGenerate`` (the utility behind
``-affine-data-copy-generate``, ``mlir/lib/Dialect/Affine/Utils/LoopUtils.cpp``) for one memref
(paper sections 2.6, 2.9).

For the accesses to one memref inside a loop nest, below a chosen depth, :func:`generate_copy`
computes with ISL the region of the memref that one iteration of the enclosing loops touches,
allocates a buffer of the region's (constant) bounding-box shape, copies the region in before
the nest and back out after it when the nest writes it, and rewrites the nest to access the
buffer, relative to the region's lower bound::

    affine.for %arg3 = 0 to 8 {                        // k floordiv 256
      affine.for %arg4 = 0 to 33 {                     // i floordiv 64
        affine.for %arg5 = 0 to 256 { ...              // the rest of the nest
            %0 = affine.load %A[%arg6 * 4 + %arg9, %arg3 * 256 + %arg7] : memref<2088x2048xf64>

  generate_copy(loop3, A, depth=2) ->

    %alloc = memref.alloc() {alignment = 64 : i64} : memref<64x256xf64>   // once per call
    affine.for %arg3 = 0 to 8 {
      affine.for %arg4 = 0 to 33 {
        affine.for %arg5 = #map(%arg4) to min #map1(%arg4) {           // copy-in: the region,
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {           // clipped to A's bounds
            %1 = affine.load %A[%arg5, %arg6] : memref<2088x2048xf64>
            affine.store %1, %alloc[%arg4 * -64 + %arg5, %arg3 * -256 + %arg6] : ...
        affine.for %arg5 = 0 to 256 { ...
            %0 = affine.load %alloc[%arg4 * -64 + %arg6 * 4 + %arg9, %arg7] : memref<64x256xf64>
    }}
    memref.dealloc %alloc : memref<64x256xf64>

The region is the rectangular hull MLIR uses (``MemRefRegion::getConstantBoundingSizeAndShape``):
per memref dimension, a lower bound that is an affine function of the enclosing loops' induction
variables and of symbols (chosen among the pieces of the region's minimum, so that it is a valid
bound everywhere), and a constant extent, the largest ``x - lb + 1`` over all iterations of the
enclosing loops.  Copy loops run over that box clipped to the memref's shape (``max``/``min``
bounds at partial regions), so they never touch memory outside the memref.

Differences from MLIR, on purpose: the buffer is allocated ONCE, before the outermost enclosing
affine loop (or at ``hoist_alloc_to``), and deallocated after it, instead of once per region
instance as in the paper's listings; with ``pad_to`` the buffer extents are rounded up to
multiples and everything of the buffer outside the copied box reads as zero at each copy, so
that later passes can run partial register tiles as full ones (the padding, which neither the
copies nor the nest ever write, is zeroed once after the allocation; the part of the box that
falls outside the memref at a partial region is zeroed at each copy).

The access relations come from :func:`polyopt.schedules.model.access_relation` (the same
extraction the scheduler uses), and the clean-up of the copy loops' bounds from
:mod:`polyopt.schedules.ast_to_affine`; both are imported where they are used.

Legality (checked before the IR is touched; :class:`ScheduleError` names the memref and the
loop): every use of the memref inside the region must be an affine load/store (a call, a
``memref.load``, a view taken inside the region cannot be redirected to the buffer), subscripts
must be affine in the loops and in values defined outside the region, and no other memref that
may alias the copied one (a view of the same allocation: ``memref.cast``, ``subview``,
``reinterpret_cast``, ...) may be written in the region, nor read when the copied memref is
written.  Distinct function arguments and allocations are assumed not to alias, as in MLIR's
affine analyses and in our ``noalias`` lowering.  Overlap between the reads and the writes of
the copied memref itself needs no check: there is one buffer per memref and region, every access
in the region goes through it, the region is copied in before (whenever it is read, or when the
writes may not cover the whole box) and out after the nest, so the nest sees exactly the values
it would have seen in the original memref; copying out the whole box is safe because the
elements of the box that the nest does not write hold what was copied in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import islpy as isl

from ..affine.affine_expr import AffineExpr, AffineMap, constant, dim
from ..affine.builder import Builder
from ..affine.diagnostics import CodegenError, ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp
from ..affine.dialects.arith import ConstantOp
from ..affine.dialects.memref import AllocOp, DeallocOp
from ..affine.ir import Block, BlockArgument, Operation, Value
from ..affine.printer import value_namer
from ..affine.types import MemRefType
from .layout import physical_shape

__all__ = ["CopyInfo", "alias_root", "generate_copy"]

# ops whose result is another view of their first operand's memory
_VIEW_OPS = frozenset({
    "memref.cast", "memref.subview", "memref.reinterpret_cast", "memref.view",
    "memref.expand_shape", "memref.collapse_shape", "memref.transpose",
    "memref.memory_space_cast", "memref.assume_alignment"})

Position = Union[AffineForOp, tuple]


@dataclass(eq=False)
class CopyInfo:
    """What :func:`generate_copy` did.

    ``buffer`` is ``None`` when the region is empty (the accesses never run) and nothing was
    changed.  ``region_shape`` is the bounding box of one region instance, ``buffer_type.shape``
    the same rounded up to ``pad_to``; ``lower_bounds``/``lower_bound_operands`` the region's
    lower bound per memref dimension as a map over the enclosing loops' IVs (dims) and symbols.
    ``copy_in``/``zero_fill``/``copy_out`` are the outermost ops of the generated nests (a
    single-iteration copy loop is promoted, so an entry may be a load/store).
    """

    memref: Value
    buffer: Optional[Value] = None
    buffer_type: Optional[MemRefType] = None
    alloc: Optional[Operation] = None
    deallocs: list[Operation] = field(default_factory=list)
    copy_in: list[Operation] = field(default_factory=list)
    zero_fill: list[Operation] = field(default_factory=list)
    copy_out: list[Operation] = field(default_factory=list)
    region_shape: tuple[int, ...] = ()
    lower_bounds: Optional[AffineMap] = None
    lower_bound_operands: list[Value] = field(default_factory=list)
    num_rewritten: int = 0


# ---------------------------------------------------------------------------------------------
# a table of SSA values standing behind the dims of "global" affine expressions


class _Table:
    """``dim(k)`` in a global expression stands for ``values[k]``; values only used as symbols
    become symbols when exported, the others dims (in table order)."""

    def __init__(self):
        self.values: list[Value] = []
        self.index: dict[Value, int] = {}
        self.symbolic: list[bool] = []

    def add(self, v: Value, symbolic: bool = False) -> AffineExpr:
        k = self.index.get(v)
        if k is None:
            k = len(self.values)
            self.values.append(v)
            self.index[v] = k
            self.symbolic.append(symbolic)
        elif not symbolic:
            self.symbolic[k] = False
        return dim(k)

    def name(self, v: Value) -> str:
        return f"g{self.add(v, True).position}"

    def import_map(self, amap: AffineMap, operands: Sequence[Value]) -> list[AffineExpr]:
        nd = amap.num_dims
        args = [self.add(v, i >= nd) for i, v in enumerate(operands)]
        return [r.replace(args[:nd], args[nd:]) for r in amap.results]

    def translate(self, e: AffineExpr, other: "_Table") -> AffineExpr:
        """``e``, an expression over ``other``'s values, over this table's values."""
        used = e.used_dims()
        repl = [self.add(other.values[k], other.symbolic[k]) if k in used else dim(0)
                for k in range(max(used) + 1 if used else 0)]
        return e.replace_dims(repl)

    def export(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[Value]]:
        from ..affine.value_table import export_map
        from ..schedules.ast_to_affine import canonicalize_expr
        return export_map(exprs, self.values, self.symbolic, canonicalize_expr)


# ---------------------------------------------------------------------------------------------
# ISL helpers (parameters are the table's values, named g<k>)


class _NotExpressible(Exception):
    pass


def _isl_text(e: AffineExpr) -> str:
    """``e`` (dims ``d<k>`` are parameters ``g<k>``) in ISL syntax."""
    from ..affine.affine_expr import AffineExprKind as K
    k = e.kind
    if k is K.CONSTANT:
        return str(e.value)
    if k is K.DIM:
        return f"g{e.position}"
    if k is K.SYMBOL:
        raise _NotExpressible(str(e))
    a, b = _isl_text(e.lhs), _isl_text(e.rhs)
    if k is K.ADD:
        return f"({a} + {b})"
    if k is K.MUL:
        if e.rhs.kind is K.CONSTANT:
            return f"({b} * {a})"
        if e.lhs.kind is K.CONSTANT:
            return f"({a} * {b})"
        raise _NotExpressible(str(e))
    if e.rhs.kind is not K.CONSTANT or e.rhs.value <= 0:
        raise _NotExpressible(str(e))
    if k is K.FLOORDIV:
        return f"floor({a} / {b})"
    if k is K.CEILDIV:
        return f"ceil({a} / {b})"
    return f"({a} mod {b})"


def _aff_to_expr(aff: isl.Aff) -> AffineExpr:
    """An integer-valued ``isl.Aff`` over parameters ``g<k>`` as an affine expression."""
    if aff.dim(isl.dim_type.in_) or aff.get_denominator_val().to_python() != 1:
        raise _NotExpressible(str(aff))
    e: AffineExpr = constant(aff.get_constant_val().to_python())
    for i in range(aff.dim(isl.dim_type.param)):
        c = aff.get_coefficient_val(isl.dim_type.param, i).to_python()
        if c:
            name = aff.get_dim_name(isl.dim_type.param, i)
            if not name.startswith("g"):
                raise _NotExpressible(str(aff))
            e = e + dim(int(name[1:])) * c
    for i in range(aff.dim(isl.dim_type.div)):
        c = aff.get_coefficient_val(isl.dim_type.div, i).to_python()
        if c:
            div = aff.get_div(i)        # the div is floor(div)
            q = div.get_denominator_val()
            num = _aff_to_expr(div.scale_val(q))
            e = e + num.floordiv(q.to_python()) * c
    return e


class _Isl:
    """ISL text over one parameter space (the table's values) and a rank-``rank`` memref."""

    def __init__(self, table: _Table, rank: int):
        self.params = "[" + ", ".join(f"g{k}" for k in range(len(table.values))) + "] -> "
        self.rank = rank
        self.space = isl.Set(self.params + "{ : }").get_space()

    def vars(self, name: str = "x") -> str:
        return ", ".join(f"{name}{d}" for d in range(self.rank))

    def set(self, cons: Sequence[str], name: str = "x") -> isl.Set:
        body = " and ".join(cons)
        return isl.Set(f"{self.params}{{ M[{self.vars(name)}]" + (f" : {body} }}" if body
                                                                    else " }"))

    def aff(self, text: str) -> isl.Aff:
        return isl.Aff(f"{self.params}{{ M[{self.vars()}] -> [({text})] }}")

    def align(self, s: isl.Set) -> isl.Set:
        return s.align_params(self.space)


# ---------------------------------------------------------------------------------------------
# the region


def _affine_chain(block: Block) -> list[Operation]:
    """The ``affine.for``/``affine.if`` ops around ``block``, outermost first (up to the first
    other op), as :func:`polyopt.schedules.model.access_relation` sees them."""
    chain = []
    op = block.parent_op
    while isinstance(op, (AffineForOp, AffineIfOp)):
        chain.append(op)
        op = op.parent_op
    chain.reverse()
    return chain


def _touches(op: Operation, memref: Value) -> bool:
    from ..schedules.model import ACCESS_OPS
    return any(isinstance(x, ACCESS_OPS) and x.memref is memref for x in op.walk())


def _resolve_position(position: Position, memref: Value, depth: int
                      ) -> tuple[list[Operation], Optional[AffineForOp]]:
    """The ops the copy covers and the loop whose body they are (None for a block range)."""
    if isinstance(position, AffineForOp):
        if not isinstance(depth, int) or depth < 0:
            raise ValueError(f"generate_copy: depth must be a non-negative integer, got {depth!r}")
        if depth == 0:
            return [position], None
        cur = position
        for level in range(1, depth):
            inner = [op for op in cur.body.ops if isinstance(op, AffineForOp)
                     and _touches(op, memref)]
            if len(inner) != 1:
                raise ValueError(f"generate_copy: cannot descend to depth {depth}: the loop at "
                                 f"depth {level} holds {len(inner)} loops accessing the memref")
            cur = inner[0]
        return list(cur.body.ops[:-1]), cur
    if isinstance(position, tuple) and len(position) in (2, 3) and isinstance(position[0], Block):
        block, start = position[0], position[1]
        end = position[2] if len(position) == 3 else start + 1
        if depth not in (0, None):
            raise ValueError("generate_copy: with a block position, depth must be 0")
        ops = list(block.ops[start:end])
        if not ops or any(op.name in ("affine.yield", "func.return") for op in ops):
            raise ValueError(f"generate_copy: empty or terminator-holding block range "
                             f"[{start}, {end})")
        return ops, None
    raise TypeError(f"generate_copy: position must be an affine.for or (block, start[, end]), "
                    f"got {type(position).__name__}")


def alias_root(v: Value) -> Value:
    """The memref ``v`` is a view of (through casts, subviews, ...), or ``v`` itself."""
    while v.defining_op is not None and v.defining_op.name in _VIEW_OPS:
        v = v.defining_op.operands[0]
    return v


def _inside(op: Operation, tops: Sequence[Operation]) -> bool:
    return any(op is t or t.is_proper_ancestor_of(op) for t in tops)


def _defined_inside(v: Value, tops: Sequence[Operation]) -> bool:
    if isinstance(v, BlockArgument):
        owner = v.block.parent_op
        return owner is not None and _inside(owner, tops)
    return v.defining_op is not None and _inside(v.defining_op, tops)


def _check_uses(memref: Value, ops: Sequence[Operation], accesses, where: str, name) -> None:
    from ..schedules.model import ACCESS_OPS
    for use in memref.uses:
        if not _inside(use.op, ops):
            continue
        if isinstance(use.op, ACCESS_OPS) and use.index == use.op.MEMREF_INDEX:
            continue
        raise ScheduleError(f"cannot copy {name(memref)} {where}: it is used by '{use.op.name}' "
                            f"inside the region, which cannot be redirected to a buffer",
                            use.op.loc)
    root = alias_root(memref)
    written = any(x.IS_STORE for x in accesses)
    for top in ops:
        for op in top.walk():
            for v in op.operands:
                if v is memref or not isinstance(v.type, MemRefType) or alias_root(v) is not root:
                    continue
                writes = getattr(op, "IS_STORE", None)
                if writes is None or writes or written:
                    raise ScheduleError(
                        f"cannot copy {name(memref)} {where}: {name(v)} may alias it and is "
                        f"{'written' if writes else 'accessed'} by '{op.name}' inside the "
                        f"region", op.loc)


def _access_region(op: Operation, table: _Table, outer_ivs: Sequence[Value],
                   region_ops: Sequence[Operation], where: str, name) -> isl.Set:
    """The elements ``op`` touches per iteration of the outer loops (their IVs are parameters)."""
    from ..schedules.model import access_relation
    oa = access_relation(op)
    n = len(outer_ivs)
    if any(a is not b for a, b in zip(oa.ivs[:n], outer_ivs)):
        raise ValueError("generate_copy: internal error: the access is not nested in the region's "
                         "loops")
    rel = oa.relation
    for j, v in enumerate(oa.params):
        if _defined_inside(v, region_ops):
            raise ScheduleError(f"cannot copy {name(op.memref)} {where}: a subscript of "
                                f"'{op.name}' uses {name(v)}, computed inside the region",
                                op.loc)
        rel = rel.set_dim_name(isl.dim_type.param, j, table.name(v))
    np_ = len(oa.params)
    rel = rel.move_dims(isl.dim_type.param, np_, isl.dim_type.in_, 0, n)
    for k, iv in enumerate(outer_ivs):
        rel = rel.set_dim_name(isl.dim_type.param, np_ + k, table.name(iv))
    return rel.range().set_tuple_name("M")


def _outer_context(first: Operation, memref: Value, table: _Table,
                   outer_ivs: Sequence[Value]) -> isl.Set:
    """The iterations of the loops around the region, as a parameter set."""
    from ..schedules.model import access_relation
    rank = memref.type.rank
    probe = AffineLoadOp.build(memref, [], map=AffineMap.get(0, 0, [constant(0)] * rank))
    first.parent.insert_before(first, probe)
    try:
        oa = access_relation(probe)
    finally:
        probe.erase()
    dom = oa.domain
    for j, v in enumerate(oa.params):
        dom = dom.set_dim_name(isl.dim_type.param, j, table.name(v))
    np_ = len(oa.params)
    n = len(outer_ivs)
    dom = dom.move_dims(isl.dim_type.param, np_, isl.dim_type.set, 0, n)
    for k, iv in enumerate(outer_ivs):
        dom = dom.set_dim_name(isl.dim_type.param, np_ + k, table.name(iv))
    return dom.params()


#: _choose_bound's results by the region's text, the dimension, the parameter space and the
#: table values defined inside the copied ops: the same regions come back (each thread count
#: and flag set of a matmul, the versions of a register tile), and the ISL projections, hulls
#: and emptiness tests took 25 ms a dimension.  Emptied when it reaches the bound.
_BOUNDS: dict = {}
_BOUNDS_BOUND = 4096


def _known_bound(region: isl.Set, d: int, sp: _Isl, inside: frozenset
                 ) -> tuple[AffineExpr, int]:
    """:func:`_choose_bound` with the lower bounds that use no table value in ``inside``
    (positions of values defined inside the copied ops)."""
    key = (str(region), d, sp.params, sp.rank, inside)
    known = _BOUNDS.get(key)
    if known is None:
        known = _choose_bound(region, d, sp, lambda e: not (e.used_dims() & inside))
        if len(_BOUNDS) >= _BOUNDS_BOUND:
            _BOUNDS.clear()
        _BOUNDS[key] = known
    return known


def _choose_bound(region: isl.Set, d: int, sp: _Isl, usable) -> tuple[AffineExpr, int]:
    """(lower bound over the table, constant extent) of the region along dimension ``d``."""
    best: Optional[tuple[AffineExpr, int]] = None
    candidates = []
    for dom, aff in region.dim_min(d).get_pieces():
        candidates += [aff.gist(dom), aff]      # gist: 16 * floor(i / 16) is i for i in 16Z
    # A loop of few iterations splits the minimum into constant pieces: an edge tile's columns
    # start at 0 where only its rows are cut (j block 0) and at 64 where its columns are (j
    # block 1); no piece bounds both, but the convex hull's minimum 64 j does.
    # (The hull of the projection on ``d``, the same minimum: the hull of the whole region, with
    # five parameters, took 5.6 s where this takes 0.4.)
    n = region.dim(isl.dim_type.set)
    line = region.project_out(isl.dim_type.set, d + 1, n - d - 1).project_out(
        isl.dim_type.set, 0, d)
    hull = isl.Set.from_basic_set(line.convex_hull())
    candidates += [aff for _, aff in hull.dim_min(0).get_pieces()]
    for aff in candidates:
        try:
            e = _aff_to_expr(aff)
            text = _isl_text(e)
        except _NotExpressible:
            continue
        if not usable(e):
            continue
        if not region.intersect(sp.align(sp.set([f"x{d} < {text}"]))).is_empty():
            continue        # not a lower bound at every iteration
        top = region.max_val(sp.aff(f"x{d} - {text}"))
        if not top.is_int():
            continue
        ext = top.to_python() + 1
        if best is None or ext < best[1]:
            best = (e, ext)
    if best is None:        # a constant box
        lo, hi = region.min_val(sp.aff(f"x{d}")), region.max_val(sp.aff(f"x{d}"))
        if not (lo.is_int() and hi.is_int()):
            raise _NotExpressible(f"dimension {d}")
        best = (constant(lo.to_python()), hi.to_python() - lo.to_python() + 1)
    return best


# ---------------------------------------------------------------------------------------------
# building loops


def _build_nest(b: Builder, ranges, table: _Table, loc) -> tuple[list[AffineForOp], Builder]:
    """A perfect nest: ``ranges[d] = (lower bounds, upper bounds)`` (global expressions, max of
    the lowers and min of the uppers); returns the loops and a builder in the innermost body."""
    loops = []
    inner = b
    for lbs, ubs in ranges:
        lb_map, lb_ops = table.export(lbs)
        ub_map, ub_ops = table.export(ubs)
        loop = inner.create(AffineForOp.build, lb_map, lb_ops, ub_map, ub_ops, loc=loc)
        loops.append(loop)
        inner = Builder.before_terminator(loop.body)
    return loops, inner


def _copy_table(table: _Table) -> _Table:
    t = _Table()
    for v, s in zip(table.values, table.symbolic):
        t.add(v, s)
    return t


def _zero_nest(b: Builder, ranges, table: _Table, zero: Value, buf: Value, loc) -> Operation:
    """``buf[y] = 0`` for ``y`` in ``ranges`` (see :func:`_build_nest`)."""
    t = _copy_table(table)
    loops, inner = _build_nest(b, ranges, t, loc)
    ys = [t.add(lp.induction_var) for lp in loops]
    inner.insert(_access(AffineStoreOp.build, t, ys, zero, buf, loc=loc))
    return loops[0]


def _access(build, table: _Table, exprs: Sequence[AffineExpr], *args, loc):
    amap, operands = table.export(exprs)
    return build(*args, operands, map=amap, loc=loc)


def _tidy(tops: list[Operation]) -> list[Operation]:
    """Drop redundant min/max bound results and promote single-iteration loops; returns the
    remaining top-level ops of the generated nests."""
    from ..schedules.ast_to_affine import (drop_redundant_bounds, promote_if_single_iteration,
                                           remove_empty_loops)
    out: list[Operation] = []
    for top in tops:
        block = top.parent
        before = block.ops[block.index_of(top) - 1] if block.index_of(top) > 0 else None
        after_idx = block.index_of(top) + 1
        after = block.ops[after_idx] if after_idx < len(block.ops) else None
        for loop in [op for op in top.walk() if isinstance(op, AffineForOp)]:
            drop_redundant_bounds(loop)
        for loop in [op for op in top.walk() if isinstance(op, AffineForOp)]:
            promote_if_single_iteration(loop)
        start = block.index_of(before) + 1 if before is not None else 0
        end = block.index_of(after) if after is not None else len(block.ops)
        new = list(block.ops[start:end])
        remove_empty_loops(new)
        out += [op for op in new if op.parent is block]
    return out


# ---------------------------------------------------------------------------------------------
# the utility


def generate_copy(position: Position, memref: Value, *, depth: int = 0,
                  buffer_layout: Optional[AffineMap] = None,
                  pad_to: Optional[Sequence[int]] = None,
                  hoist_alloc_to: Optional[Operation] = None, alignment: int = 64,
                  copy_out: Optional[bool] = None) -> CopyInfo:
    """Copy the part of ``memref`` a loop nest touches into a buffer and run the nest on it
    (MLIR's ``affineDataCopyGenerate`` for one memref, see the module docstring).

    Arguments:
      position: an ``affine.for`` (the root of the nest) or a block range ``(block, start)`` /
        ``(block, start, end)`` (``end`` exclusive) of ops.
      memref: the memref to copy (a value, e.g. a function argument).
      depth: with a loop, how many loops of the nest enclose the copy: 0 copies before the loop
        (the region is everything the nest touches), ``d >= 1`` in the body of the d-th loop
        (the region is what one iteration of the d outer loops touches; the path descends into
        the one loop of each body that accesses ``memref``).  Must be 0 for a block range.
      buffer_layout: layout map of the buffer type, e.g. ``(d0, d1) -> (d0 floordiv 4, d1, d0
        mod 4)`` for MR-row micro-panels (must be injective on the buffer's shape).
      pad_to: per memref dimension, round the buffer extent up to a multiple; the buffer outside
        the copied box is zero-filled at each copy.
      hoist_alloc_to: where the buffer lives: the alloc goes right before this op and the
        dealloc right after it (a ``func.func``: at its entry and before its returns).  It must
        be the region's op or an ancestor of it.  Default: the outermost ``affine.for`` or
        ``affine.if`` around the region (the region itself when there is none): allocated once
        per execution of the whole nest, not once per region instance.
      alignment: of the ``memref.alloc`` (bytes).
      copy_out: copy the box back after the nest: ``None`` (default) when the nest writes the
        memref; ``False`` with writes is refused (they would be lost).

    Preconditions: ``memref`` has a static shape and the nest accesses it in bounds (checked:
    a :class:`VerifyError` naming the access and an offending iteration, as
    ``--memref-bound-check``); see the module docstring for what else is refused
    (:class:`ScheduleError`, before anything changes).  Returns a :class:`CopyInfo`.
    """
    from ..schedules.model import ACCESS_OPS
    if not isinstance(memref, Value) or not isinstance(memref.type, MemRefType):
        raise TypeError("generate_copy: memref must be a memref-typed value")
    mtype: MemRefType = memref.type
    ops, loop = _resolve_position(position, memref, depth)
    if not ops:
        raise ValueError(f"generate_copy: the body of the loop at depth {depth} is empty")
    name = value_namer(ops[0]).value_name
    if loop is not None:
        where = f"in 'affine.for' {name(loop.induction_var)}"
    elif isinstance(position, AffineForOp):
        where = f"around 'affine.for' {name(position.induction_var)}"
    else:
        where = "around the given ops"
    if not mtype.has_static_shape:
        raise ScheduleError(f"cannot copy {name(memref)} {where}: its shape is dynamic",
                            ops[0].loc)
    rank = mtype.rank
    pads = tuple(pad_to) if pad_to is not None else (1,) * rank
    if len(pads) != rank or any(not isinstance(p, int) or p < 1 for p in pads):
        raise ValueError(f"generate_copy: pad_to must hold {rank} positive integers, got "
                         f"{pad_to!r}")
    if buffer_layout is not None and (not isinstance(buffer_layout, AffineMap)
                                      or buffer_layout.num_dims != rank
                                      or buffer_layout.num_symbols):
        raise ValueError(f"generate_copy: buffer_layout must be an affine map with {rank} dims "
                         f"and no symbols, got {buffer_layout}")
    if alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"generate_copy: alignment must be a power of two, got {alignment}")

    accesses = [x for top in ops for x in top.walk()
                if isinstance(x, ACCESS_OPS) and x.memref is memref]
    if not accesses:
        raise ValueError(f"generate_copy: {name(memref)} is not accessed {where}")
    _check_uses(memref, ops, accesses, where, name)
    written = any(x.IS_STORE for x in accesses)
    read = any(not x.IS_STORE for x in accesses)
    if copy_out is False and written:
        raise ScheduleError(f"cannot copy {name(memref)} {where} without copy-out: the region "
                            f"writes it", accesses[0].loc)
    do_copy_out = written if copy_out is None else bool(copy_out)

    # hoisting target
    chain = _affine_chain(ops[0].parent)
    if hoist_alloc_to is None:
        hoist = chain[0] if chain else None
    else:
        hoist = hoist_alloc_to
        if not (hoist.name == "func.func" and hoist.is_proper_ancestor_of(ops[0])) and not (
                len(ops) == 1 and hoist is ops[0]) and not hoist.is_proper_ancestor_of(ops[0]):
            raise ValueError("generate_copy: hoist_alloc_to must be the region's op or an "
                             "ancestor of it")

    # the region, with ISL
    outer_loops = [op for op in chain if isinstance(op, AffineForOp)]
    outer_ivs = [lp.induction_var for lp in outer_loops]
    table = _Table()
    for iv in outer_ivs:
        table.add(iv)
    regions, writes = [], []
    for x in accesses:
        r = _access_region(x, table, outer_ivs, ops, where, name)
        regions.append(r)
        if x.IS_STORE:
            writes.append(r)
    context = _outer_context(ops[0], memref, table, outer_ivs)
    sp = _Isl(table, rank)
    region = sp.align(regions[0])
    for r in regions[1:]:
        region = region.union(sp.align(r))
    region = region.intersect_params(sp.align(context)).coalesce()
    write_region = None
    for r in writes:
        write_region = sp.align(r) if write_region is None else write_region.union(sp.align(r))

    info = CopyInfo(memref=memref)
    if region.is_empty():
        return info

    inside = frozenset(k for k, v in enumerate(table.values) if _defined_inside(v, ops))
    lbs, extents = [], []
    for d in range(rank):
        try:
            e, ext = _known_bound(region, d, sp, inside)
        except _NotExpressible:
            raise ScheduleError(f"cannot copy {name(memref)} {where}: the region it touches "
                                f"along dimension {d} has no constant-size bounding box",
                                accesses[0].loc) from None
        lbs.append(e)
        extents.append(ext)
    # the nest must access the memref in bounds, for every value of the symbols: a region
    # beyond the memref would be copied clipped, the nest reading zeros where it read past the
    # memref (MLIR's memref bound check, as --memref-bound-check reports it)
    from ..schedules.bounds_check import check_bounds
    check_bounds(ops, memrefs=[memref])
    shape = tuple(-(-ext // p) * p for ext, p in zip(extents, pads))
    buffer_type = MemRefType(shape, mtype.element_type, buffer_layout, mtype.memory_space)
    if buffer_layout is not None:
        try:
            physical_shape(buffer_type)
        except CodegenError as exc:
            raise ValueError(f"generate_copy: invalid buffer layout: {exc.message}") from None

    sizes = mtype.shape
    # the box copied: lb <= x < lb + extent, clipped to the memref
    box_lo = [[constant(0), e] for e in lbs]
    box_hi = [[constant(n), e + ext] for e, ext, n in zip(lbs, extents, sizes)]
    box_cons = []
    for d in range(rank):
        box_cons += [f"x{d} >= {_isl_text(x)}" for x in box_lo[d]]
        box_cons += [f"x{d} < {_isl_text(x)}" for x in box_hi[d]]
    box = sp.align(sp.set(box_cons)).intersect_params(sp.align(context))
    do_copy_in = read or write_region is None or not box.is_subset(write_region)

    # zero-fill (buffer coordinates): the padding [extent, padded extent) is never written by
    # the copies or the nest, so it is zeroed once after the allocation; the part of the box
    # outside the memref (partial regions at the boundary) is zeroed at each copy, as slabs:
    # dims before d in their valid range, dim d outside it, dims after d anything
    slabs, once = [], []
    if pad_to is not None:
        full = [([constant(0)], [constant(p)]) for p in shape]
        for d in range(rank):
            if extents[d] < shape[d]:
                once.append(full[:d] + [([constant(extents[d])], [constant(shape[d])])]
                            + full[d + 1:])
        valid = [([constant(0), -e], [constant(ext), n - e])
                 for e, ext, n in zip(lbs, extents, sizes)]
        upto = [([constant(0)], [constant(ext)]) for ext in extents]
        for d in range(rank):
            outside = [([constant(0)], [-lbs[d]]),
                       ([constant(0), sizes[d] - lbs[d]], [constant(extents[d])])]
            for piece in outside:
                ranges = valid[:d] + [piece] + upto[d + 1:]
                cons = []
                for k, (lo, hi) in enumerate(ranges):
                    cons += [f"x{k} >= {_isl_text(x)}" for x in lo]
                    cons += [f"x{k} < {_isl_text(x)}" for x in hi]
                if not sp.align(sp.set(cons)).intersect_params(sp.align(context)).is_empty():
                    slabs.append(ranges)

    # ---- mutation starts here ---------------------------------------------------------------
    loc = accesses[0].loc
    first, last = ops[0], ops[-1]
    if hoist is None:
        alloc_b, dealloc_at = Builder.before(first), None
    elif hoist.name == "func.func":
        alloc_b, dealloc_at = Builder.at_start(hoist.regions[0].blocks[0]), hoist
    else:
        alloc_b, dealloc_at = Builder.before(hoist), hoist
    alloc = alloc_b.create(AllocOp.build, buffer_type, alignment=alignment, loc=loc)
    buf = alloc.result
    zero = alloc_b.create(ConstantOp.build, 0, mtype.element_type, loc=loc).result \
        if slabs or once else None
    zero_tops = [_zero_nest(alloc_b, ranges, table, zero, buf, loc) for ranges in once]

    b = Builder.before(first)
    copy_in_tops: list[Operation] = []
    if do_copy_in:
        t = _copy_table(table)
        loops, inner = _build_nest(b, [(lo, hi) for lo, hi in zip(box_lo, box_hi)], t, loc)
        xs = [t.add(lp.induction_var) for lp in loops]
        val = _access(AffineLoadOp.build, t, xs, memref, loc=loc)
        inner.insert(val)
        inner.insert(_access(AffineStoreOp.build, t, [x - e for x, e in zip(xs, lbs)],
                             val.result, buf, loc=loc))
        copy_in_tops.append(loops[0])
    zero_tops += [_zero_nest(b, ranges, table, zero, buf, loc) for ranges in slabs]

    for x in accesses:
        t = _Table()
        lb_local = [t.translate(e, table) for e in lbs]
        olds = t.import_map(x.map, x.map_operands)
        amap, operands = t.export([o - e for o, e in zip(olds, lb_local)])
        x.set_operand(x.MEMREF_INDEX, buf)
        x.set_map(amap, operands)

    copy_out_tops: list[Operation] = []
    if do_copy_out:
        t = _copy_table(table)
        b = Builder.after(last)
        loops, inner = _build_nest(b, [(lo, hi) for lo, hi in zip(box_lo, box_hi)], t, loc)
        xs = [t.add(lp.induction_var) for lp in loops]
        val = _access(AffineLoadOp.build, t, [x - e for x, e in zip(xs, lbs)], buf, loc=loc)
        inner.insert(val)
        inner.insert(_access(AffineStoreOp.build, t, xs, val.result, memref, loc=loc))
        copy_out_tops.append(loops[0])

    deallocs: list[Operation] = []
    if dealloc_at is None:
        after = copy_out_tops[-1] if copy_out_tops else last
        deallocs.append(Builder.after(after).create(DeallocOp.build, buf, loc=loc))
    elif dealloc_at.name == "func.func":
        for blk in dealloc_at.regions[0].blocks:
            term = blk.terminator
            if term is not None and term.name in ("func.return", "return"):
                deallocs.append(Builder.before(term).create(DeallocOp.build, buf, loc=loc))
    else:
        deallocs.append(Builder.after(dealloc_at).create(DeallocOp.build, buf, loc=loc))

    info.copy_in = _tidy(copy_in_tops)
    info.zero_fill = _tidy(zero_tops)
    info.copy_out = _tidy(copy_out_tops)
    lb_map, lb_ops = table.export(lbs)
    info.buffer, info.buffer_type, info.alloc, info.deallocs = buf, buffer_type, alloc, deallocs
    info.region_shape = tuple(extents)
    info.lower_bounds, info.lower_bound_operands = lb_map, lb_ops
    info.num_rewritten = len(accesses)
    return info
