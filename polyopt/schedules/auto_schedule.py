"""Automatic scheduling of affine nests: ISL's scheduler, tiling from the target model, code
through ISL's AST (the ``--hopt-schedule`` step of ``--hopt``; what Polly's
``-polly-opt-isl`` and PPCG/Pluto do for any static-control nest).

For every scop of every function (:func:`polyopt.schedules.scops.function_scops`):

1. the dependences (RAW, WAR, WAW) and ISL's schedule tree under them
   (:func:`~polyopt.schedules.isl_scheduler.compute_isl_schedule`: Pluto-style permutable
   bands, fusion where legal, skewing for stencils);
2. each permutable band's innermost member chosen for stride-1 accesses and parallelism
   (:func:`~polyopt.schedules.band_tiling.order_band_members`), and bands of two members or
   more tiled with sizes from the machine model
   (:func:`~polyopt.schedules.band_tiling.choose_tile_sizes`);
3. the flattened schedule checked by the dependence-based legality check that user schedules
   go through (:func:`~polyopt.schedules.dependences.check_legality`);
4. the loops generated through ISL's AST (:class:`~polyopt.schedules.ast_to_affine.
   AffineGenerator`) replace the scop; loops that carry no dependence get the unit attribute
   ``polyopt.parallel`` (for the threads pass; LLVM's vectorizer takes the innermost ones);
5. register-level steps (:func:`~polyopt.schedules.point_loops.jam_reductions`):
   unroll-and-jam of the loops around innermost reductions and of reduction loops around
   vectorized loops, then scalar replacement.

Choices made on the way: a band whose data fit in L2 is not tiled (matrix-vector
products: tiles only cut the streams); a Jacobi-style stencil (innermost loops parallel)
takes ISL's outer-parallel schedule, untiled, with the sweeps of each time step fused with
shifts when their arrays together exceed L2, then cut into time tiles of steps x skewed rows
(:mod:`~polyopt.schedules.shift_fusion`; on a team of threads, whatever the arrays' size, with
the tiles in parallel wavefronts when a tile holds enough work); the original
order is kept (and jammed) when ISL's schedule would stream an array larger than L2 more
often than the stride-1 original (atax), or skews a recurrence that is latency-bound
(seidel).

    affine.for %i = 0 to 1000 {                affine.for %arg5 = 0 to 32 {        (tiles of j)
      affine.for %j = 0 to 1000 {        -->     affine.for %arg6 = 0 to 16 {      (tiles of i)
        x2[i] += A[j][i] * y2[j]                   affine.for %arg7 = ... {        (j)
                                                     affine.for %arg8 = ... {      (i, stride 1)
                                                       x2[i] += A[j][i] * y2[j]
                                                     } {polyopt.parallel}

Nothing is changed, and a remark says why, when: the model cannot represent the nest, the
dependence analysis or the scheduler exceeds its budget, the result fails the legality check
(naming the violated dependence), the generated code blows up (too many loops or ops), or the
schedule is the original order untiled.  Every rescheduled nest gets a remark with the
schedule, the tile sizes, and the innermost loop.

Ops of the function that are not affine nests (``hop.matmul``, linalg ops, calls) split the
scops and are never touched; the pipeline runs this pass before it expands ``hop``/linalg
ops, so their BLIS nests are not rescheduled, and a top-level op carrying the unit attribute
``polyopt.keep_schedule`` (:data:`KEEP_SCHEDULE`) ends a scop as well and is left as it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import islpy as isl

from ..affine.attributes import UnitAttr
from ..affine.builder import Builder
from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from ..affine.ir import Block, Operation
from .ast_to_affine import AffineGenerator
from .band_tiling import BandInfo, band_footprint, band_is_skewed, band_streams, \
    choose_tile_sizes, order_band_members, parallel_member_outermost, tile_band
from .blis_schedule import MachineModel
from .dependences import carried_at, check_legality, compute_dependences, normalize_schedule
from .isl_scheduler import SchedulerOptions, SchedulerTimeout, compute_isl_schedule
from .model import PolyhedralModel
from .point_loops import jam_reductions

__all__ = ["AutoScheduleOptions", "NestResult", "schedule_remaining_nests", "schedule_function",
           "schedule_scop", "KEEP_SCHEDULE", "PARALLEL"]

Remark = Optional[Callable[[object, str], None]]

#: A top-level op with this unit attribute is never rescheduled (nor anything in it).
KEEP_SCHEDULE = "polyopt.keep_schedule"
#: The unit attribute on generated loops that carry no dependence.
PARALLEL = "polyopt.parallel"


@dataclass(frozen=True)
class AutoScheduleOptions:
    """Options of the automatic scheduler.

    ``tile``: tile permutable bands of two members or more; ``tile_sizes``: fixed sizes
    (outermost first; the last one for the innermost member, the first one repeated for the
    others) instead of the machine model's; ``mark_parallel``: put :data:`PARALLEL` on loops
    that carry no dependence; ``scheduler``: ISL's options and budget; ``max_loops`` /
    ``max_ops``: the generated code of one scop may hold at most this many loops / ops, and at
    most ``growth`` times as many ops as the original (a blow-up falls back); ``jam``:
    unroll-and-jam the loops around innermost reductions and keep their accumulators in
    registers (:func:`~polyopt.schedules.point_loops.jam_reductions`); ``fuse_sweeps``: fuse
    the sweeps of a time step with shifts (:mod:`~polyopt.schedules.shift_fusion`);
    ``outer_parallel``: where an outermost band of ISL's schedule starts with a sequential
    member, take ISL's schedule with outer coincidence instead when it has more outermost
    bands that start parallel and no skew (for a team of threads: gemver's ``x = x + z`` fused
    into the first iteration of ``w += A x`` made that loop sequential); ``team``: the threads
    the parallel loops will run on -- with more than one, the time tiles of fused stencil
    sweeps run in wavefronts whose tiles are parallel, where a tile holds enough work (1-D
    sweeps too, which one thread runs untiled)."""

    tile: bool = True
    tile_sizes: Optional[tuple[int, ...]] = None
    mark_parallel: bool = True
    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    max_loops: int = 400
    max_ops: int = 20_000
    growth: int = 40
    jam: bool = True
    fuse_sweeps: bool = True
    outer_parallel: bool = False
    team: int = 1


@dataclass
class NestResult:
    """What happened to one scop: ``status`` is ``"scheduled"``, ``"kept"`` (the original
    order is ISL's too) or ``"fallback"``; ``why`` says why for the last two, and for a
    scheduled one whose schedule came from another of ISL's searches (after a time-out, or
    with outer coincidence for ``outer_parallel``)."""

    statements: list[str]
    status: str
    why: str = ""
    schedule: str = ""
    bands: list[BandInfo] = field(default_factory=list)
    parallel_loops: int = 0
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------------
# the schedule tree


def _element_bytes(model: PolyhedralModel) -> int:
    sizes = []
    for mem in model.memrefs.values():
        elem = getattr(mem.type, "element_type", None)
        width = getattr(elem, "width", None) or getattr(elem, "bitwidth", None)
        if isinstance(width, int) and width > 0:
            sizes.append(max(1, width // 8))
    return max(sizes, default=8)


def _member_texts(node: isl.ScheduleNode) -> tuple[str, ...]:
    mupa = node.band_get_partial_schedule()
    return tuple(str(mupa.get_at(m)) for m in range(node.band_n_member()))


def transform_tree(schedule: isl.Schedule, model: PolyhedralModel, machine: MachineModel,
                   options: AutoScheduleOptions) -> tuple[isl.Schedule, list[BandInfo]]:
    """Order and tile the bands of ``schedule`` (outermost band first in the returned list)."""
    infos: list[BandInfo] = []
    elem = _element_bytes(model)

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if node.get_type() != isl.schedule_node_type.band:
            return node
        node, moved = order_band_members(node, model)
        n = node.band_n_member()
        permutable = bool(node.band_get_permutable())
        coincident = tuple(bool(node.band_member_get_coincident(m)) for m in range(n))
        members = _member_texts(node)
        sizes: tuple[int, ...] = ()
        outer_tile = None
        small = False
        if options.tile and permutable and n >= 2 and not options.tile_sizes:
            footprint = band_footprint(node, model, elem, line_bytes=machine.line_bytes)
            small = footprint is not None and footprint <= machine.l2_bytes // 2 or \
                band_streams(node, model, elem, machine.l1d_bytes // 2)
        if options.tile and permutable and n >= 2 and not small:
            if options.tile_sizes:
                given = list(options.tile_sizes)
                sizes = tuple(given[:-1][:1] * (n - 1) if len(given) > 1 else given[:1] * (n - 1)
                              ) + (given[-1],)
            else:
                sizes = choose_tile_sizes(n, elem, machine, skewed=band_is_skewed(node),
                                          inner_reduction=not coincident[-1])
            node = tile_band(node, sizes)
            node, outer_tile = parallel_member_outermost(node)
        infos.append(BandInfo(members, sizes, moved, coincident, permutable, outer_tile))
        return node

    def walk(node: isl.ScheduleNode) -> isl.ScheduleNode:
        # bottom-up by hand: islpy ignores exceptions raised in its callbacks
        for k in range(node.n_children()):
            node = walk(node.child(k)).parent()
        return visit(node)

    root = walk(schedule.get_root())
    return root.get_schedule(), list(reversed(infos))


def _bands(node: isl.ScheduleNode) -> list[isl.ScheduleNode]:
    out = [node] if node.get_type() == isl.schedule_node_type.band else []
    for k in range(node.n_children()):
        out += _bands(node.child(k))
    return out


def _has_skewed_band(schedule: isl.Schedule) -> bool:
    return any(band_is_skewed(b) for b in _bands(schedule.get_root()))


#: seconds: a skewed schedule found faster than this is computed again without the bounds
#: on coefficients and constants (under :data:`UNBOUNDED_TIME_LIMIT`)
CHEAP_SCHEDULE = 0.5
#: time tiles of fused stencil sweeps: steps x (skewed) rows.  Measured on Zen 4 at PolyBench's
#: LARGE sizes (1 MiB L2, 32 MiB L3): jacobi-2d 1.08 s untiled, 0.62 s with 8 x 8, 0.58 s with
#: 16 x 16; fdtd-2d 0.82 / 0.48 / 0.45 s; heat-3d (rows are 115 KiB planes) 1.50 / 0.94 /
#: 0.95 s
TIME_TILE = 16
ROW_TILE = 16
#: time tiles of 1-D sweeps (rows of one point) on a team: steps, and tiles across the rows
#: per thread.  jacobi-1d LARGE (500 steps of 2 x 2000 points) on 2 threads, Zen 4: 0.253 ms
#: with 32 steps x 512 points, 0.259 with 64 x 512, 0.269 with 100 x 500, 0.297 with 64 x
#: 1024 (0.336 one thread untiled, forking each sweep 1.3 ms)
POINT_TIME_TILE = 32
POINT_TILES_PER_THREAD = 2
#: updates a time tile of a team's wavefront must hold, else the sweeps keep their one-thread
#: schedule: forking the team costs about a microsecond.  jacobi-1d MEDIUM (100 steps of 2 x
#: 400 points, 6400 updates per tile) ran 0.65x its single thread in wavefronts; LARGE (32000
#: per tile) 1.3x
MIN_WAVEFRONT_TILE = 16384
#: seconds ISL's skewed search may take on a nest whose outer-parallel schedule is at hand
JACOBI_TIME_LIMIT = 2.0
UNBOUNDED_TIME_LIMIT = 1.0
#: seconds each narrower search may take once ISL's own search has timed out
RETRY_TIME_LIMIT = 1.0
#: the narrower searches, in order: outer parallelism first (ISL's ``outer_coincidence``),
#: then no fusion across strongly connected components (``serialize_sccs``)
RETRY_SEARCHES = ({"outer_coincidence": True}, {"serialize_sccs": True})


def _narrower(options: SchedulerOptions, **search) -> SchedulerOptions:
    """``options`` with ``search``'s ISL options, under :data:`RETRY_TIME_LIMIT`."""
    return replace(options, time_limit=min(options.time_limit or RETRY_TIME_LIMIT,
                                           RETRY_TIME_LIMIT), **search)


def _after_time_out(model: PolyhedralModel, deps, options: SchedulerOptions,
                    err: SchedulerTimeout) -> tuple[isl.Schedule, str]:
    """A schedule from a narrower search once ISL's own search timed out, and the remark's
    words; re-raises ``err`` when each of :data:`RETRY_SEARCHES` times out too.  ISL's search
    can explode where a narrower one does not: a random nest of six statements over 14 x 14
    arrays ran for more than 10 minutes with the default options and for 0.08 s with outer
    coincidence (tests/schedules/test_auto_schedule_random.py found it)."""
    for search in RETRY_SEARCHES:
        try:
            tree = compute_isl_schedule(model, deps, _narrower(options, **search))
        except (SchedulerTimeout, isl.Error, RuntimeError):
            continue
        words = ", ".join(k.replace("_", " ") for k in search)
        return tree, f"; {err}: this schedule is from its narrower search with {words}"
    raise err


def _unskewed_if_cheap(model: PolyhedralModel, deps, options: SchedulerOptions,
                       tree: isl.Schedule, seconds: float) -> isl.Schedule:
    """ISL's schedule without the bounds on coefficients and constant terms when that one has
    no skewed band and ``tree`` has one.  The bounds (Polly's) keep the ILP fast on large
    static sizes, but can make ISL fuse statements at the price of a skew the unbounded
    search avoids (bicg: ``q[i] = 0`` fused into ``s[j] += r[i] * A[i][j]`` by ``i + j``);
    only tried when the bounded search was quick, and under a short time limit."""
    if seconds > CHEAP_SCHEDULE or not _has_skewed_band(tree) or \
            (options.max_coefficient < 0 and options.max_constant_term < 0):
        return tree
    free = replace(options, max_coefficient=-1, max_constant_term=-1,
                   time_limit=min(options.time_limit or UNBOUNDED_TIME_LIMIT,
                                  UNBOUNDED_TIME_LIMIT))
    try:
        alt = compute_isl_schedule(model, deps, free)
    except (SchedulerTimeout, isl.Error, RuntimeError):
        return tree
    return tree if _has_skewed_band(alt) else alt


def _outer_parallel_bands(tree: isl.Schedule) -> tuple[int, int]:
    """(outermost bands whose first member is coincident, outermost bands): the bands on no
    other band's path from the root."""
    outer = []

    def visit(node: isl.ScheduleNode) -> None:
        if node.get_type() == isl.schedule_node_type.band:
            outer.append(node)
            return
        for k in range(node.n_children()):
            visit(node.child(k))
    visit(tree.get_root())
    parallel = sum(1 for b in outer if b.band_n_member() and b.band_member_get_coincident(0))
    return parallel, len(outer)


def _outer_parallel_if_more(model: PolyhedralModel, deps, options: SchedulerOptions,
                            tree: isl.Schedule) -> tuple[isl.Schedule, str]:
    """ISL's schedule with outer coincidence, and the remark's words, when ``tree`` has an
    outermost band that starts sequential and that schedule has more that start parallel and
    no skewed band; else ``tree`` and no words."""
    parallel, bands = _outer_parallel_bands(tree)
    if parallel == bands:
        return tree, ""
    try:
        alt = compute_isl_schedule(model, deps, _narrower(options, outer_coincidence=True))
    except (SchedulerTimeout, isl.Error, RuntimeError):
        return tree, ""
    alt_parallel, alt_bands = _outer_parallel_bands(alt)
    if alt_parallel <= parallel or _has_skewed_band(alt):
        return tree, ""
    return alt, (f"; ISL's schedule with outer coincidence: {alt_parallel} of {alt_bands} "
                 f"outermost bands start parallel, against {parallel} of {bands}")


def _vector_innermost_if_chains(model: PolyhedralModel, deps, scheduler: SchedulerOptions,
                                tree: isl.Schedule, machine: MachineModel,
                                options: AutoScheduleOptions) -> tuple[isl.Schedule, str]:
    """ISL's schedule with outer coincidence, and the remark's words, when ``tree`` (its bands
    ordered and tiled) leaves the deepest statements in chains that unroll-and-jam cannot
    split and that schedule's innermost loops carry nothing
    (:mod:`~polyopt.schedules.innermost_chains`); else ``tree`` and no words.  trisolv and
    cholesky: ISL's default search keeps the dot-product form, a chain of FMA latencies
    inside a triangle, where outer coincidence finds the column (right-looking) form."""
    from .innermost_chains import latency_bound, vector_innermost

    def ordered(t: isl.Schedule) -> isl.UnionMap:
        return transform_tree(t, model, machine, options)[0].get_map().intersect_domain(
            model.domains())
    try:
        if not latency_bound(model, deps, ordered(tree)):
            return tree, ""
        alt = compute_isl_schedule(model, deps, _narrower(scheduler, outer_coincidence=True))
        if _has_skewed_band(alt) or not vector_innermost(model, deps, ordered(alt)):
            return tree, ""
    except (SchedulerTimeout, isl.Error, RuntimeError, ScheduleError):
        return tree, ""
    return alt, ("; ISL's schedule with outer coincidence: the innermost loops of its own "
                 "run the deepest statements as chains of dependent iterations that "
                 "unroll-and-jam cannot split (their bounds move with the loop around them), "
                 "this one's carry nothing")


def _memref_bytes(model: PolyhedralModel, name: str) -> int:
    t = model.memrefs[name].type
    shape = getattr(t, "shape", None)
    width = getattr(getattr(t, "element_type", None), "width", None) or 64
    if not shape or any(not isinstance(d, int) or d < 0 for d in shape):
        return 0
    size = max(1, width // 8)
    for d in shape:
        size *= d
    return size


def _streamed_bytes(model: PolyhedralModel, groups: list[set[str]], cache: int) -> int:
    """The bytes of arrays larger than ``cache`` that the top-level nests ``groups`` (each a
    set of statement names) stream through memory: each nest streams every such array it
    touches once."""
    total = 0
    for group in groups:
        touched = {a.memref for name in group for a in model.statement(name).accesses}
        total += sum(b for b in (_memref_bytes(model, m) for m in touched) if b > cache)
    return total


def _tree_groups(schedule: isl.Schedule) -> list[set[str]]:
    """The statements of each top-level nest of ``schedule`` (the filters of an outermost
    sequence or set; one nest otherwise)."""
    node = schedule.get_root().child(0)
    if node.get_type() not in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
        return [{s.get_tuple_name() for s in _sets(schedule.get_domain())}]
    return [{s.get_tuple_name() for s in _sets(node.child(k).filter_get_filter())}
            for k in range(node.n_children())]


def _sets(uset: isl.UnionSet) -> list[isl.Set]:
    out: list[isl.Set] = []
    uset.foreach_set(out.append)
    return out


def _original_is_stride_one(model: PolyhedralModel) -> bool:
    """Whether every access is stride-1 or invariant in the innermost loop around it, in the
    original order (no array walked across rows there: the order worth keeping)."""
    from .band_tiling import _access_score
    return all(not _access_score(model, s.name, s.depth - 1)[1]
               for s in model.statements if s.depth)


def _original_groups(model: PolyhedralModel) -> list[set[str]]:
    groups: dict[int, set[str]] = {}
    for s in model.statements:
        groups.setdefault(s.position[0] if s.position else 0, set()).add(s.name)
    return list(groups.values())


def _skewed_recurrence(schedule: isl.Schedule) -> bool:
    """Whether some skewed band's innermost member is not coincident (carries a
    dependence)."""
    for b in _bands(schedule.get_root()):
        n = b.band_n_member()
        if band_is_skewed(b) and not b.band_member_get_coincident(n - 1):
            return True
    return False


def _innermost_loops_parallel(model: PolyhedralModel, deps) -> bool:
    """Whether the innermost loop around every statement (in the original order) carries no
    dependence between instances of that statement."""
    for s in model.statements:
        if s.depth == 0 or s.domain.is_empty():
            continue
        dom = isl.UnionSet.from_set(s.domain)
        try:
            carried = carried_at(model, deps, 2 * s.depth - 1)
        except ValueError:    # the normalized schedule is shorter (empty loops around)
            return False
        pairs = carried.intersect_domain(dom).intersect_range(dom)
        if not pairs.is_empty():
            return False
    return True


def _same_order(model: PolyhedralModel, new: isl.UnionMap) -> bool:
    """Whether ``new`` runs the instances in exactly the original order."""
    old = normalize_schedule(model, model.schedule())
    new = normalize_schedule(model, new)
    return old.lex_lt_union_map(old).is_equal(new.lex_lt_union_map(new))


# ---------------------------------------------------------------------------------------------
# code


def _count(ops: list[Operation]) -> tuple[int, int]:
    loops = total = 0
    for top in ops:
        for op in top.walk():
            total += 1
            loops += isinstance(op, AffineForOp)
    return loops, total


class _LoopRecorder(AffineGenerator):
    """The AST -> affine generator, remembering which schedule dimension each loop runs
    (ISL names the iterator of dimension ``k`` of a schedule map ``ck``) and which statements
    run inside it."""

    def __init__(self, model: PolyhedralModel):
        super().__init__(model)
        self.loops: list[tuple[int, AffineForOp, set[str]]] = []
        self._inside: list[set[str]] = []

    def _gen_for(self, node: isl.AstNode, b: Builder) -> None:
        name = node.for_get_iterator().get_id().get_name()
        before = {id(op) for op in b.block.ops}
        self._inside.append(set())
        try:
            super()._gen_for(node, b)
        finally:
            inside = self._inside.pop()
        if self._inside:
            self._inside[-1].update(inside)
        if name.startswith("c") and name[1:].isdigit():
            self.loops += [(int(name[1:]), op, inside) for op in b.block.ops
                           if id(op) not in before and isinstance(op, AffineForOp)]

    def _gen_user(self, node: isl.AstNode, b: Builder) -> None:
        if self._inside:
            self._inside[-1].add(node.user_get_expr().get_op_arg(0).get_id().get_name())
        super()._gen_user(node, b)


def _generate(model: PolyhedralModel, schedule: isl.UnionMap, options: AutoScheduleOptions,
              separate: bool = False
              ) -> tuple[list[Operation], list[tuple[int, AffineForOp, set[str]]]]:
    """Generate ``schedule``'s loops and replace the scop by them (nothing changes when it
    raises: the code is built in a detached block first); returns the new top-level ops and
    the generated loops with their schedule dimensions."""
    scratch = Block()
    gen = _LoopRecorder(model)
    try:
        new_ops = gen.generate(schedule, Builder.at_end(scratch), separate=separate)
        _, old_total = _count(model.scop_ops)
        loops, total = _count(new_ops)
        limit = min(options.max_ops, options.growth * max(old_total, 1))
        if loops > options.max_loops or total > limit:
            raise ScheduleError(f"the generated code blows up ({loops} loops, {total} ops for "
                                f"{old_total} ops originally; limits {options.max_loops} loops, "
                                f"{limit} ops)", model.scop_ops[0].loc)
        inside = {id(op) for top in model.scop_ops for op in top.walk()}
        for top in model.scop_ops:
            for r in top.results:
                # the scop's own ops go with it (a top-level statement of several ops)
                if any(id(u.op) not in inside for u in r.uses):
                    raise ScheduleError(f"'{top.name}' op result is used after the scop",
                                        top.loc)
    except Exception:
        for op in reversed(list(scratch.ops)):
            op.erase()
        raise
    anchor = model.scop_ops[0]
    for op in new_ops:
        op.detach()
        anchor.parent.insert_before(anchor, op)
    for op in reversed(model.scop_ops):
        op.erase()
    alive = {id(op) for top in new_ops for op in top.walk()}
    return new_ops, [entry for entry in gen.loops if id(entry[1]) in alive]


def _mark_parallel(model: PolyhedralModel, deps, schedule: isl.UnionMap,
                   loops: list[tuple[int, AffineForOp, set[str]]]) -> int:
    """Put :data:`PARALLEL` on each generated loop that carries no dependence: no pair of
    the statements inside it is carried by its schedule dimension."""
    carried: dict[int, isl.UnionMap] = {}
    count = 0
    for k, loop, names in loops:
        if k not in carried:
            carried[k] = carried_at(model, deps, k, schedule)
        dom = isl.UnionSet(model.param_space() + "{ }")
        for name in names:
            dom = dom.union(isl.UnionSet.from_set(model.statement(name).domain))
        if carried[k].intersect_domain(dom).intersect_range(dom).is_empty():
            loop.attributes[PARALLEL] = UnitAttr()
            count += 1
    return count


def _mark_reductions(model: PolyhedralModel, deps, schedule: isl.UnionMap,
                     loops: list[tuple[int, AffineForOp, set[str]]], tops: list,
                     updates: set) -> None:
    """On each outermost generated loop that is not parallel: the arrays whose sums it
    carries, when that is all it carries (:func:`~polyopt.schedules.privatize.
    reduction_arrays`; ``--hopt-parallel`` gives each thread its own copies)."""
    from .privatize import mark_reductions, reduction_arrays
    top_ids = {id(op) for op in tops}
    for k, loop, names in loops:
        if id(loop) in top_ids and PARALLEL not in loop.attributes and names:
            arrays = reduction_arrays(model, deps, k, sorted(names), schedule, updates)
            if arrays:
                mark_reductions(loop, arrays)


def _mark_original_reductions(model: PolyhedralModel, deps) -> None:
    """:func:`_mark_reductions` for a scop kept in its original order (loop depth ``d`` is
    dimension ``2d + 1`` of the original schedule)."""
    from .privatize import mark_reductions, reduction_arrays
    for top in model.scop_ops:
        if not isinstance(top, AffineForOp):
            continue
        names = [s.name for s in model.statements if s.loops and s.loops[0] is top]
        if names:
            arrays = reduction_arrays(model, deps, 1, names)
            if arrays:
                mark_reductions(top, arrays)


# ---------------------------------------------------------------------------------------------
# remarks


def _describe_band(info: BandInfo) -> str:
    members = ", ".join(info.members)
    what = f"band ({members})"
    if not info.permutable:
        what += " not permutable"
    if info.tile_sizes:
        what += f" tiled {'x'.join(map(str, info.tile_sizes))}"
    if info.innermost is not None:
        what += f", member {info.innermost} moved innermost (stride-1 accesses)"
    par = [str(k) for k, c in enumerate(info.coincident) if c]
    if par:
        what += f", parallel member(s) {', '.join(par)}"
    if info.outer_tile is not None:
        what += ", its tile loop moved outermost"
    return what


def _innermost_note(ops: list[Operation], model: PolyhedralModel) -> str:
    inner = [op for top in ops for op in top.walk()
             if isinstance(op, AffineForOp) and not any(isinstance(o, AffineForOp)
                                                      for o in op.body.ops)]
    if not inner:
        return ""
    par = sum(1 for op in inner if PARALLEL in op.attributes)
    return (f"; {par} of {len(inner)} innermost loops parallel (left to LLVM's vectorizer)"
            if par else f"; no innermost loop is parallel ({len(inner)} carry dependences)")


# ---------------------------------------------------------------------------------------------
# the pass


def schedule_scop(model: PolyhedralModel, machine: MachineModel,
                  options: AutoScheduleOptions = AutoScheduleOptions(), remark: Remark = None
                  ) -> NestResult:
    """Reschedule one scop in place (see the module docstring); returns what was done."""
    start = time.perf_counter()
    names = [s.name for s in model.statements]
    loc = model.scop_ops[0].loc
    label = f"nest of {', '.join(names)}"

    def done(result: NestResult, message: str) -> NestResult:
        result.seconds = time.perf_counter() - start
        if remark is not None:
            remark(loc, f"auto-schedule: {label}: {message}")
        return result

    def fallback(why: str) -> NestResult:
        return done(NestResult(names, "fallback", why), f"{why}; it keeps its original order")

    try:
        deps = compute_dependences(model)
    except ScheduleError as err:
        return fallback(err.message)
    try:
        # a time-tiling (skewed) band would make the vectorizable innermost loops of a
        # Jacobi-style stencil sequential: its schedule with outer parallelism (cheap) is
        # kept at hand, taken when ISL's own is skewed or takes too long (heat-3d: 0.4 s
        # instead of 4-8 s for the skewed search)
        alt = None
        if not options.scheduler.outer_coincidence and _innermost_loops_parallel(model, deps):
            alt = compute_isl_schedule(model, deps,
                                       replace(options.scheduler, outer_coincidence=True))
            if _has_skewed_band(alt):
                alt = None
        scheduler = options.scheduler
        searched = ""
        if alt is not None and scheduler.time_limit is not None:
            scheduler = replace(scheduler, time_limit=min(scheduler.time_limit,
                                                          JACOBI_TIME_LIMIT))
        try:
            began = time.perf_counter()
            tree = compute_isl_schedule(model, deps, scheduler)
            tree = _unskewed_if_cheap(model, deps, scheduler, tree,
                                      time.perf_counter() - began)
        except SchedulerTimeout as err:
            if alt is None:
                tree, searched = _after_time_out(model, deps, scheduler, err)
            else:
                tree = alt
        if options.outer_parallel and not options.scheduler.outer_coincidence and \
                alt is None and not searched:
            tree, why = _outer_parallel_if_more(model, deps, scheduler, tree)
            searched += why
        if not options.scheduler.outer_coincidence and alt is None and not searched:
            tree, why = _vector_innermost_if_chains(model, deps, scheduler, tree, machine,
                                                    options)
            searched += why
        sweeps = False
        if alt is not None and (tree is alt or _has_skewed_band(tree)):
            # and no tiles: each sweep streams through its arrays once, rows stay in cache
            # without them, and short tiles only cut the vector loops
            tree, options, sweeps = alt, replace(options, tile=False), True
    except SchedulerTimeout as err:
        return fallback(f"scheduler time-out: {err}")
    except (isl.Error, RuntimeError) as err:
        return fallback(f"ISL's scheduler failed: {err}")
    if _skewed_recurrence(tree) and _original_is_stride_one(model):
        # seidel: the skewed band's innermost loop carries A[i][j - 1] -> A[i][j], so no
        # vector loop is gained, while every point pays the skewed bounds; the nest is
        # latency-bound (each point waits for the previous one), not memory-bound, so the
        # tiles buy nothing (LARGE: 25.1 s tiled, 18.9 s in the original order)
        return done(NestResult(names, "kept", "a skewed band around a recurrence"),
                    "ISL's schedule is a skewed (time-tiling) band whose innermost loop "
                    "carries a dependence: no vector loop to gain from it, the original "
                    "stride-1 order is kept")
    original = _streamed_bytes(model, _original_groups(model), machine.l2_bytes)
    streamed = _streamed_bytes(model, _tree_groups(tree), machine.l2_bytes)
    if streamed > original and _original_is_stride_one(model):
        # ISL split nests that share an array larger than the cache (atax: A * x and
        # A^T * tmp read A row by row in one loop over i): each part would stream it again
        if options.mark_parallel:
            _mark_original_reductions(model, deps)
        note = _register_steps(model.scop_ops) if options.jam else ""
        return done(NestResult(names, "kept", "ISL's schedule streams more memory"),
                    f"ISL's schedule splits it into nests that stream {streamed >> 20} MiB "
                    f"of arrays larger than L2 instead of {original >> 20} MiB; the original "
                    f"order is kept" + note)
    try:
        tree, bands = transform_tree(tree, model, machine, options)
        schedule = tree.get_map().intersect_domain(model.domains())
        fusion = ""
        if sweeps and options.fuse_sweeps:
            schedule, fusion = _fuse_sweeps(model, deps, schedule, machine, options.team)
        if not any(b.tile_sizes for b in bands) and _same_order(model, schedule):
            if options.mark_parallel:
                _mark_original_reductions(model, deps)
            note = _register_steps(model.scop_ops) if options.jam else ""
            return done(NestResult(names, "kept", "the original order is ISL's schedule",
                                   bands=bands),
                        "ISL's schedule is the original order (no band to tile); "
                        + (note[2:] if note else "unchanged"))
        check_legality(model, schedule, deps)
    except ScheduleError as err:
        return fallback(f"the schedule is not legal: {err.message}")
    except isl.Error as err:
        return fallback(f"ISL failed on the schedule: {err}")
    from .privatize import update_statements
    updates = update_statements(model) if options.mark_parallel else set()
    try:
        # fused sweeps: no guard left in their loops (the peeled rows and columns come out)
        new_ops, loops = _generate(model, schedule, options, separate=bool(fusion))
    except ScheduleError as err:
        return fallback(err.message)
    result = NestResult(names, "scheduled", searched[2:], schedule=str(schedule.coalesce()),
                        bands=bands)
    if options.mark_parallel:
        result.parallel_loops = _mark_parallel(model, deps, schedule, loops)
        _mark_reductions(model, deps, schedule, loops, new_ops, updates)
    band_text = "; ".join(_describe_band(b) for b in bands) or "no band"
    band_text += fusion
    note = _innermost_note(new_ops, model) if options.mark_parallel else ''
    if options.jam:
        note += _register_steps(new_ops)
    return done(result, f"schedule {result.schedule}; {band_text}{note}{searched}")


def _fuse_sweeps(model: PolyhedralModel, deps, schedule: isl.UnionMap,
                 machine: MachineModel, team: int = 1) -> tuple[isl.UnionMap, str]:
    """The sweeps of a time step fused on their outer loop with shifts
    (:func:`~polyopt.schedules.shift_fusion.fuse_with_shifts`) when they share an array, the
    arrays of a step do not fit in L2 together and each sweep keeps an inner loop, then cut
    into time tiles; on a ``team`` of threads, whenever a tile holds enough work
    (:func:`_wavefront_tiles`), with the tiles in wavefronts
    (:func:`~polyopt.schedules.shift_fusion.tile_wavefront`).  ``schedule`` unchanged
    otherwise.  Returns the schedule and the remark's words."""
    from .shift_fusion import fuse_with_shifts, sequence_position, _constant_dim, _maps
    p = sequence_position(schedule)
    if p is None:
        return schedule, ""
    maps = _maps(schedule)
    n = maps[0].dim(isl.dim_type.out)
    # an inner loop stays for the vectorizer; rows of one point (1-D sweeps) only as time
    # tiles in wavefronts, with each sweep's row loop innermost
    points = any(all(_constant_dim(m, d) is not None for d in range(p + 2, n)) for m in maps)
    tiles = _wavefront_tiles(model, schedule, p, points, team) if team > 1 and p == 1 \
        else None
    wavefront = tiles is not None
    if points and not wavefront:
        return schedule, ""
    by_position: dict[int, set[str]] = {}
    for m in maps:
        name = m.get_tuple_name(isl.dim_type.in_)
        by_position.setdefault(_constant_dim(m, p), set()).update(
            a.memref for a in model.statement(name).accesses)
    groups = list(by_position.values())
    # between two sweeps' uses of a row of a shared array, the step touches about all of
    # its arrays: when they do not fit in L2 together, no row is left for the next sweep,
    # even where each array would fit (jacobi-2d's A and B of 1.2 MiB in a 2 MiB L2).  On
    # Emerald Rapids (2 MiB L2), 100 steps apart / fused and time-tiled: jacobi-2d n = 401
    # (2.5 MiB a step) 20.2 / 14.9 ms, fdtd-2d 367 x 411 (3.5 MiB) 21.5 / 14.4 ms, heat-3d
    # n = 61 (3.5 MiB) 41.0 / 38.1 ms
    step_bytes = sum(_memref_bytes(model, a) for a in set().union(*groups))
    shared = any(groups[a] & groups[b] for a in range(len(groups))
                 for b in range(a + 1, len(groups)))
    if not wavefront and not (shared and step_bytes > machine.l2_bytes):
        return schedule, ""
    fused = fuse_with_shifts(model, deps, schedule, p)
    if fused is None:
        return schedule, ""
    try:
        check_legality(model, fused, deps)
    except ScheduleError:
        return schedule, ""
    words = (f"; the {len(groups)} sweeps of each step fused on their outer loop (with "
             f"shifts): their arrays are streamed once per step")
    if p == 1:
        # then tiles of TIME_TILE steps x ROW_TILE rows, skewed so that each tile only needs
        # rows computed by earlier ones: a tile's rows stay in cache across its steps
        from .shift_fusion import tile_time, time_skew
        k = time_skew(deps, fused)
        if k is not None:
            steps, rows = tiles or (TIME_TILE, ROW_TILE)
            tiled = tile_time(model, fused, k, steps, rows, rows_inside=points)
            try:
                check_legality(model, tiled, deps)
            except ScheduleError:
                return fused, words
            words += (f"; time tiles of {steps} steps x {rows} rows (rows skewed by {k} per "
                      f"step)")
            if wavefront:
                from .shift_fusion import tile_wavefront
                front = tile_wavefront(model, tiled)
                try:
                    check_legality(model, front, deps)
                except ScheduleError:
                    return tiled, words
                return front, words + "; tiles run in wavefronts"
            return tiled, words
    return fused, words


def _wavefront_tiles(model: PolyhedralModel, schedule: isl.UnionMap, p: int, points: bool,
                     team: int) -> Optional[tuple[int, int]]:
    """The steps and rows of the time tiles a ``team`` runs in wavefronts, for the sweeps of
    ``schedule`` (time at dimension 0, rows at ``p + 1``); ``None`` when a tile would hold
    fewer than :data:`MIN_WAVEFRONT_TILE` updates (then the team would wait on forks).
    Rows of one point (``points``): :data:`POINT_TIME_TILE` steps and
    :data:`POINT_TILES_PER_THREAD` tiles across the rows per thread; a wavefront of 16 x 16
    such tiles is 512 updates."""
    steps_extent, rows_extent = _dim_extent(schedule, 0), _dim_extent(schedule, p + 1)
    steps, rows = TIME_TILE, ROW_TILE
    if points:
        steps = POINT_TIME_TILE
        rows = max(rows, -(-(rows_extent or ROW_TILE) // (POINT_TILES_PER_THREAD * team)))
    total = 0
    for st in model.statements:
        if st.domain.dim(isl.dim_type.param) or not st.domain.count_val().is_int():
            return steps, rows                  # sizes not known: the team runs its tiles
        total += st.domain.count_val().to_python()
    if steps_extent and rows_extent:
        per_step_row = total / (steps_extent * rows_extent)
        if min(steps, steps_extent) * min(rows, rows_extent) * per_step_row < \
                MIN_WAVEFRONT_TILE:
            return None
    return steps, rows


def _dim_extent(umap: isl.UnionMap, d: int) -> Optional[int]:
    """How many values output dimension ``d`` of ``umap`` takes, end to end; ``None`` when
    that is not a constant."""
    from .shift_fusion import _maps
    low = high = None
    for m in _maps(umap):
        lo, hi = m.range().dim_min_val(d), m.range().dim_max_val(d)
        if not (lo.is_int() and hi.is_int()):
            return None
        low = lo.to_python() if low is None else min(low, lo.to_python())
        high = hi.to_python() if high is None else max(high, hi.to_python())
    return None if low is None else high - low + 1


def _register_steps(ops: list[Operation]) -> str:
    """Unroll-and-jam around the innermost reductions of ``ops``; the innermost loops ISL
    finds parallel marked for LLVM
    (:func:`~polyopt.schedules.parallel_accesses.annotate_parallel_innermost`) and the others
    split where they carry their dependences at one iteration; then scalar replacement.
    Returns the remark's words."""
    from ..affine.scalrep import scalar_replace
    from .guards import simplify_guards, unswitch_invariant_guards
    from .index_set_split import split_innermost_loops
    from .parallel_accesses import annotate_parallel_innermost
    report = jam_reductions(ops)
    tops = [top for top in ops if top.parent is not None]
    for top in tops:
        annotate_parallel_innermost(top)
    # the loops left unmarked carry dependences: split the ones that carry them at one point
    split = sum(split_innermost_loops(top) for top in tops)
    words = f"; {split} innermost loop(s) split around the iteration that carries their " \
            f"dependences" if split else ""
    if report.jams:
        for top in [t for t in tops if t.parent is not None]:
            # a statement fused into one iteration of a reduction loop keeps its guard there,
            # jammed copies of it too: take them out, so that the sums can live in registers
            simplify_guards(top)
            unswitch_invariant_guards(top)
            scalar_replace(top)
        words = f"; unroll-and-jam around innermost reductions: {report.describe()}" + words
    return words


def _keep(op: Operation) -> bool:
    return KEEP_SCHEDULE in op.attributes


def schedule_function(func: Operation, machine: MachineModel,
                      options: AutoScheduleOptions = AutoScheduleOptions(),
                      remark: Remark = None) -> list[NestResult]:
    """Reschedule every scop of ``func`` (statements numbered across the function)."""
    from .scops import function_scops
    results = []
    from .epilogue import held_for_fusion
    for model in function_scops(func, None)[0]:
        anchor = held_for_fusion(model.scop_ops)
        if anchor is not None:
            if remark is not None:
                remark(model.scop_ops[0].loc, f"auto-schedule: the elementwise nest after "
                                              f"{anchor.name} is left as it is, for hopt-expand "
                                              f"to fuse into it")
            continue
        if any(_keep(op) for op in model.scop_ops):
            if remark is not None:
                remark(model.scop_ops[0].loc, f"auto-schedule: a nest marked {KEEP_SCHEDULE} "
                                              f"is left as it is, with the nests next to it")
            continue
        results.append(schedule_scop(model, machine, options, remark))
    return results


def schedule_remaining_nests(module: Operation, machine: MachineModel, remark: Remark = None,
                             options: AutoScheduleOptions = AutoScheduleOptions()
                             ) -> list[NestResult]:
    """The automatic scheduler on every function of ``module`` (``--hopt``, unless
    ``--no-hopt-schedule``): each scop is rescheduled with ISL, tiled for ``machine`` (the
    pipeline's :func:`~polyopt.pipeline.machine_model`) and regenerated, or left as it is
    with a remark saying why."""
    results: list[NestResult] = []
    for func in list(module.walk()):
        if func.name == "func.func" and func.regions and func.regions[0].blocks:
            results += schedule_function(func, machine, options, remark)
    return results
