"""Parallel loops that carry only sums into arrays: one private copy of each array per thread,
added up after the loop (OpenMP's ``reduction(+: y[0:n])`` on a ``parallel for``; what PPCG
and Pluto leave sequential, and what ``mlir-opt``'s ``-affine-parallelize`` refuses).

A loop whose every carried dependence is on arrays that its statements only *update*
(``R[f] = R[f] + e``, the load and the store at the same element, ``e`` not reading ``R``),
or *set before the first update* (``R[f] = v`` in the loop's first iteration only: an
initialization the scheduler fused into the loop), runs in parallel when each thread sums
into its own copy of ``R``.  atax's ``y = A^T tmp`` and bicg's ``s = A^T r`` stream A once,
row by row; their loop over rows carries the sums into ``y`` and ``s``:

    affine.for %i = 0 to 1900 {                  %p = memref.alloc() : memref<2x2100xf64>
      ... tmp[i] = sum_j A[i][j] x[j]            affine.parallel (%t) = (0) to (2) {
      affine.for %j = 0 to 2100 {                  p[t] = t == 0 ? y : 0
        y[j] = y[j] + A[i][j] * tmp[i]    -->      affine.for %i = %t to 1900 step 2 {
      }                                              ... p[t][j] = p[t][j] + A[i][j] * tmp[i]
    }                                            }}
                                                 y[j] = p[0][j] + p[1][j]      (for every j)

Thread 0 takes the first iteration and starts from ``R``'s contents, the others from zero, so
that a fused initialization lands in thread 0's copy and the sum is right either way.  The
iterations are dealt round-robin (``%i = %t to N step T``), and the copies are added in thread
order: the result depends on the thread count only, not on timing; like every reduction
across threads, it reassociates the sum (it differs from the sequential order in the last
bits).

:func:`reduction_arrays` decides it with ISL on the polyhedral model (the automatic scheduler
calls it on the loops it generates and keeps the answer on the loop, like its
``polyopt.parallel`` marks); :func:`privatize_reductions` rewrites the loop after unroll-and-
jam and scalar replacement, for ``--hopt-parallel`` with ``--threads`` above one.
"""

from __future__ import annotations

from typing import Optional, Sequence

import islpy as isl

from ..affine.affine_expr import AffineMap, IntegerSet, constant, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import (AffineForOp, AffineIfOp, AffineLoadOp, AffineParallelOp,
                                      AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp)
from ..affine.dialects.arith import ConstantOp
from ..affine.dialects.memref import AllocOp, DeallocOp
from ..affine.ir import OP_REGISTRY, Operation, Value
from ..affine.types import FloatType, MemRefType
from .dependences import carried_at, normalize_schedule
from .model import PolyhedralModel

__all__ = ["reduction_arrays", "update_statements", "privatize_reductions", "privatizable_accesses",
           "mark_reductions", "reductions_of", "MAX_PRIVATE_BYTES"]

#: The private copies of one thread may take at most this much (a quarter of a 1 MiB L2):
#: more, and initializing and adding them up costs more than the loop gains.
MAX_PRIVATE_BYTES = 256 * 1024

#: Fewer iterations per thread than this, and the loop stays sequential.
MIN_ITERATIONS_PER_THREAD = 4

#: A Python attribute (not IR) on loops: the memrefs whose sums the loop carries, proved by
#: :func:`reduction_arrays` when the scheduler generated the loop.
_REDUCTIONS = "_polyopt_reduction_arrays"

_ADDS = ("arith.addf", "arith.addi")


def mark_reductions(loop: Operation, memrefs: Sequence[Value]) -> None:
    setattr(loop, _REDUCTIONS, tuple(memrefs))


def reductions_of(loop: Operation) -> tuple:
    """The memrefs :func:`mark_reductions` recorded on ``loop`` (empty: none)."""
    return getattr(loop, _REDUCTIONS, ())


# -- the analysis ------------------------------------------------------------------------------

def update_statements(model: PolyhedralModel) -> set[tuple[str, str]]:
    """``(statement, memref)`` pairs where the statement updates the memref (one load and one
    store of the same element, the loaded value only added to, the sum only stored).  Read
    from the ops, so before a schedule's code replaces them."""
    out = set()
    for stmt in model.statements:
        for memref in {a.memref for a in stmt.accesses}:
            accesses = [a for a in stmt.accesses if a.memref == memref]
            reads = [a for a in accesses if not a.is_write]
            writes = [a for a in accesses if a.is_write]
            if len(reads) == 1 and len(writes) == 1 and _is_update(reads[0], writes[0]):
                out.add((stmt.name, memref))
    return out


def reduction_arrays(model: PolyhedralModel, deps, dim_: int, names: Sequence[str],
                     schedule: Optional[isl.UnionMap] = None,
                     updates: Optional[set] = None) -> list[Value]:
    """The memrefs whose sums the loop at time dimension ``dim_`` of ``schedule`` (the
    model's own by default) carries, when its statements ``names`` carry nothing else;
    ``[]`` when the loop carries no dependence or one that privatization cannot remove.
    ``updates``: :func:`update_statements`, taken before the model's ops were replaced."""
    if updates is None:
        updates = update_statements(model)
    sched = normalize_schedule(model, model.schedule() if schedule is None else schedule)
    dom = isl.UnionSet(model.param_space() + "{ }")
    for name in names:
        dom = dom.union(isl.UnionSet.from_set(model.statement(name).domain))
    carried = carried_at(model, deps, dim_, schedule).intersect_domain(dom).intersect_range(dom)
    if carried.is_empty():
        return []
    arrays: set[str] = set()
    for _kind, memref, pairs in deps.items():
        if not pairs.intersect(carried).is_empty():
            arrays.add(memref)
    first = _first_time(sched.intersect_domain(dom), dim_)
    for memref in arrays:
        for name in names:
            if not _privatizable(model.statement(name), memref, sched, dim_, first, updates):
                return []
    return [model.memrefs[m] for m in sorted(arrays)]


def _first_time(sched: isl.UnionMap, dim_: int) -> Optional[isl.Set]:
    """The loop's first value: the smallest time at ``dim_`` over the statements (None when
    no instance runs)."""
    times = None
    maps: list[isl.Map] = []
    sched.foreach_map(maps.append)
    for m in maps:
        t = _times_at(m, dim_).reset_tuple_id()
        times = t if times is None else times.union(t)
    return None if times is None else times.lexmin()


def _times_at(m: isl.Map, dim_: int) -> isl.Set:
    """The values a schedule map's instances take at time dimension ``dim_``."""
    n = m.dim(isl.dim_type.out)
    return m.range().project_out(isl.dim_type.set, dim_ + 1, n - dim_ - 1) \
        .project_out(isl.dim_type.set, 0, dim_)


def _privatizable(stmt, memref: str, sched: isl.UnionMap, dim_: int, first: isl.Set,
                  updates: set) -> bool:
    accesses = [a for a in stmt.accesses if a.memref == memref]
    if not accesses:
        return True
    if (stmt.name, memref) in updates:
        return True
    if len(accesses) != 1 or not accesses[0].is_write:
        return False
    # a set: only in the loop's first iteration
    m = sched.intersect_domain(isl.UnionSet.from_set(stmt.domain))
    mine = _first_time(m, dim_)
    if mine is None:            # a statement that never runs sets nothing
        return True
    return first is not None and mine.is_equal(first) and _single_time(m, dim_)


def _single_time(sched: isl.UnionMap, dim_: int) -> bool:
    maps: list[isl.Map] = []
    sched.foreach_map(maps.append)
    return all(_times_at(m, dim_).is_singleton() for m in maps)


def _is_update(read, write) -> bool:
    """``store (add (load R[f]), e), R[f]``: the same element, the loaded value used by the
    add alone, the sum by the store alone."""
    load, store = read.op, write.op
    if not (isinstance(load, AffineLoadOp) and isinstance(store, AffineStoreOp)):
        return False
    if not read.relation.is_equal(write.relation):
        return False
    add = store.value.defining_op
    if add is None or add.name not in _ADDS or load.results[0] not in add.operands:
        return False
    return len(load.results[0].uses) == 1 and len(add.results[0].uses) == 1


# -- the rewrite -------------------------------------------------------------------------------

def privatize_reductions(loop: AffineForOp, memrefs: Sequence[Value],
                         threads: int) -> Optional[AffineParallelOp]:
    """Rewrite ``loop`` (see the module docstring) for ``threads`` threads; returns the
    ``affine.parallel``, or ``None`` (nothing changed) when the arrays are not static, too
    large, accessed other than by affine loads and stores, or not summed by one kind of add."""
    accesses = privatizable_accesses(loop, memrefs, threads)
    if accesses is None:
        return None
    return _rewrite(loop, memrefs, threads, accesses)


def privatizable_accesses(loop: AffineForOp, memrefs: Sequence[Value],
                          threads: int) -> Optional[dict]:
    """The accesses to rewrite (``id(memref) -> ops``), or ``None`` when
    :func:`privatize_reductions` would refuse ``loop``."""
    if threads < 2 or loop.inits or not memrefs:
        return None
    trips = loop.constant_trip_count
    if trips is not None and trips < MIN_ITERATIONS_PER_THREAD * threads:
        return None     # a jammed loop's remainder: copying the arrays costs more
    total = 0
    for r in memrefs:
        t = r.type
        if not (isinstance(t, MemRefType) and t.layout is None and all(
                isinstance(s, int) for s in t.shape)):
            return None
        total += _elements(t) * t.element_type.width // 8
    if total > MAX_PRIVATE_BYTES:
        return None
    accesses = {id(r): [] for r in memrefs}
    adds = set()
    for op in loop.walk():
        for k, v in enumerate(op.operands):
            if id(v) not in accesses:
                continue
            if not (isinstance(op, (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp,
                                    AffineVectorStoreOp)) and k == op.MEMREF_INDEX):
                return None
            accesses[id(v)].append(op)
            if isinstance(op, (AffineStoreOp, AffineVectorStoreOp)):
                owner = op.operands[0].defining_op
                if owner is not None and owner.name in _ADDS:
                    adds.add(owner.name)
    if len(adds) > 1:
        return None
    return accesses


def _rewrite(loop: AffineForOp, memrefs: Sequence[Value], threads: int,
             accesses: dict) -> AffineParallelOp:
    loc = loop.loc
    b = Builder.before(loop)
    privates = [b.create(AllocOp.build, MemRefType((threads, *r.type.shape),
                                                   r.type.element_type), alignment=64,
                         loc=loc).results[0] for r in memrefs]
    par = b.create(AffineParallelOp.build, [AffineMap.constant_map(0)], [],
                   [AffineMap.constant_map(threads)], [], loc=loc)
    t = par.body.args[0]
    inner = Builder.before(par.body.terminator)
    for r, p in zip(memrefs, privates):
        _start_copy(inner, r, p, t, loc)
    loop.detach()
    inner.insert(loop)
    # round-robin: thread t runs iterations lb + t*step, lb + (t + threads)*step, ...
    lb = loop.lower_map
    nd = lb.num_dims
    shifted = AffineMap.get(nd + 1, lb.num_symbols,
                            [e.shift_dims(nd, 0) + dim(nd) * loop.step for e in lb.results])
    operands = list(loop.lower_operands)
    loop.set_lower_bound(shifted, operands[:nd] + [t] + operands[nd:])
    loop.set_step(loop.step * threads)
    for r, p in zip(memrefs, privates):
        for op in accesses[id(r)]:
            amap, ops = op.map, list(op.map_operands)
            n = amap.num_dims
            new = AffineMap.get(n + 1, amap.num_symbols,
                                [dim(n)] + [e.shift_dims(n, 0) for e in amap.results])
            op.set_operand(op.MEMREF_INDEX, p)
            op.set_map(new, ops[:n] + [t] + ops[n:])
    after = Builder.after(par)
    for r, p in zip(memrefs, privates):
        _add_copies(after, r, p, threads, loc)
    for p in privates:
        after.create(DeallocOp.build, p, loc=loc)
    return par


def _elements(t: MemRefType) -> int:
    n = 1
    for s in t.shape:
        n *= s
    return n


def _nest(b: Builder, shape: tuple, loc) -> tuple[Builder, list[Value]]:
    """Loops over every index of ``shape``; a builder inside the innermost and the ivs."""
    ivs = []
    for size in shape:
        loop = b.create(AffineForOp.build_constant, 0, size, loc=loc)
        ivs.append(loop.induction_var)
        b = Builder.before(loop.body.terminator)
    return b, ivs


def _zero(b: Builder, type_, loc) -> Value:
    value = 0.0 if isinstance(type_, FloatType) else 0
    return b.create(ConstantOp.build, value, type_, loc=loc).results[0]


def _start_copy(b: Builder, r: Value, p: Value, t: Value, loc) -> None:
    """``p[t] = t == 0 ? r : 0``."""
    cond = IntegerSet(1, 0, [dim(0)], [True])
    branch = b.create(AffineIfOp.build, cond, [t], with_else=True, loc=loc)
    then = Builder.before(branch.regions[0].blocks[0].ops[-1])
    inside, ivs = _nest(then, r.type.shape, loc)
    value = inside.create(AffineLoadOp.build, r, ivs, loc=loc).results[0]
    inside.create(AffineStoreOp.build, value, p, [t, *ivs], loc=loc)
    other = Builder.before(branch.regions[1].blocks[0].ops[-1])
    inside, ivs = _nest(other, r.type.shape, loc)
    inside.create(AffineStoreOp.build, _zero(inside, r.type.element_type, loc), p, [t, *ivs],
                  loc=loc)


def _add_copies(b: Builder, r: Value, p: Value, threads: int, loc) -> None:
    """``r = p[0] + p[1] + ...``, in thread order."""
    inside, ivs = _nest(b, r.type.shape, loc)
    add = OP_REGISTRY["arith.addf" if isinstance(r.type.element_type, FloatType)
                      else "arith.addi"]
    n = len(ivs)

    def row(k: int) -> Value:
        amap = AffineMap.get(n, 0, [constant(k)] + [dim(i) for i in range(n)])
        return inside.create(AffineLoadOp.build, p, ivs, amap, loc=loc).results[0]
    acc = row(0)
    for k in range(1, threads):
        acc = inside.create(add.build, acc, row(k), loc=loc).results[0]
    inside.create(AffineStoreOp.build, acc, r, ivs, loc=loc)
