"""Dependences between statement instances and the legality of new schedules (MLIR's
``checkMemrefAccessDependence`` / ``isLoopParallel``, computed exactly with ISL's dataflow
analysis instead of per-pair FM elimination).

Three kinds, computed per memref on the ORIGINAL schedule with ``isl_union_access_info``:

* RAW (flow): reads are the sinks, writes the must-sources -> for each read, the write that
  produced its value (value-based: killed writes do not count);
* WAR (anti): writes are the sinks, reads the may-sources -> every earlier read of the element
  (memory-based);
* WAW (output): writes are the sinks and the must-sources -> the previous write of the element.

A schedule is legal when it runs the source of every such pair strictly before its sink
(lexicographic order of the schedule's time vectors).  Together these pairs are enough: a read
still sees its producer (RAW), no other write can come between them (an earlier one is ordered
before the producer by the WAW chain, a later one after the read by WAR).

Reductions are not special: ``C[i][j] += A[i][k] * B[k][j]`` carries RAW and WAW dependences on
``C`` along ``k``, so reversing ``k`` is refused even though it would only re-associate a sum --
conservative, and exactly what the rules above say (floating-point addition is not associative).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

import islpy as isl

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from .model import PolyhedralModel

__all__ = ["Dependences", "Violation", "compute_dependences", "check_legality",
           "find_violation", "carried_at", "is_parallel", "normalize_schedule",
           "evaluate_schedule", "smallest_point", "KINDS"]

KINDS = ("RAW", "WAR", "WAW")


@dataclass(eq=False)
class Dependences:
    """Pairs ``{ S0[i] -> S1[j] }`` (source instance -> sink instance) of each kind;
    ``by_memref["M0"] = (raw, war, waw)`` restricted to one memref (for messages)."""

    raw: isl.UnionMap
    war: isl.UnionMap
    waw: isl.UnionMap
    by_memref: dict[str, tuple[isl.UnionMap, isl.UnionMap, isl.UnionMap]] = \
        field(default_factory=dict)

    def of_kind(self, kind: str) -> isl.UnionMap:
        return {"RAW": self.raw, "WAR": self.war, "WAW": self.waw}[kind]

    def all(self) -> isl.UnionMap:
        """Every dependence pair, whatever its kind."""
        return self.raw.union(self.war).union(self.waw)

    def items(self) -> Iterator[tuple[str, str, isl.UnionMap]]:
        """``(kind, memref name, pairs)`` in a fixed order: RAW, WAR, WAW, memrefs by name."""
        for k, kind in enumerate(KINDS):
            for name in self.by_memref:
                yield kind, name, self.by_memref[name][k]


#: ISL operations the dataflow analysis of one scop may take (about 10 s): beyond it, a scop
#: is refused rather than analysed for minutes (random nests with ``mod``/``floordiv``
#: subscripts and parametric bounds found by the differential fuzzer).  Every scop of the
#: test suite and of the paper's listings needs less than a tenth of it.
MAX_ISL_OPERATIONS = 25_000_000


def compute_dependences(model: PolyhedralModel) -> Dependences:
    """RAW, WAR and WAW dependences of ``model`` under its original schedule (see the module
    docstring for how each is computed).  Raises :class:`ScheduleError` when ISL needs more
    than :data:`MAX_ISL_OPERATIONS` for it."""
    key = _cache_key(model)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
    ctx = isl.DEFAULT_CONTEXT   # the context of every set and map built from text
    ctx.set_max_operations(MAX_ISL_OPERATIONS)
    ctx.reset_operations()
    try:
        deps = _compute_dependences(model)
        with _CACHE_LOCK:
            _CACHE[key] = deps
            if len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        return deps
    except isl.Error as exc:
        loc = model.statements[0].loc if model.statements else None
        if "maximal number of operations exceeded" not in str(exc):
            # ISL's dataflow analysis can fail on what it builds itself (seed 131075 of the
            # differential fuzzer: "affine expression involves some of the domain
            # dimensions", a nest of empty loops with floordiv bounds): the nest stays as it is
            raise ScheduleError(f"ISL's dependence analysis failed on this nest: "
                                f"{str(exc).split(' in /')[0]}", loc) from None
        raise ScheduleError(f"the dependence analysis of this nest ({len(model.statements)} "
                            f"statements) takes ISL more than {MAX_ISL_OPERATIONS:,} "
                            f"operations; simplify its bounds and subscripts (mod, floordiv) "
                            f"or split it", loc) from None
    finally:
        ctx.set_max_operations(0)


#: The dependences of the last scops analysed, by the text of everything the analysis reads
#: (parameters, memref tuples, statements' names, domains, accesses and schedules) and the
#: operation limit: the auto-scheduler asks for them of the same nest several times
#: (``annotate_parallel_innermost`` and ``split_innermost_loops``), each time from a freshly
#: extracted model, and the dataflow analysis of a convolution takes seconds.  A hit returns
#: the same :class:`Dependences`, whose ISL maps are values (every operation on them returns a
#: new object).  Failures are not kept: they raise again.
_CACHE: "OrderedDict[tuple, Dependences]" = OrderedDict()
_CACHE_SIZE = 64
_CACHE_LOCK = threading.Lock()


def _cache_key(model: PolyhedralModel) -> tuple:
    parts: list = [MAX_ISL_OPERATIONS, model.param_space(), tuple(model.memrefs)]
    for s in model.statements:
        parts.append((s.name, str(s.domain), str(s.schedule)))
        parts.extend((a.memref, a.is_write, str(a.relation)) for a in s.accesses)
    return tuple(parts)


def _compute_dependences(model: PolyhedralModel) -> Dependences:
    sched = model.schedule()
    empty = isl.UnionMap(model.param_space() + "{ }")
    reads: dict[str, isl.UnionMap] = {n: empty for n in model.memrefs}
    writes: dict[str, isl.UnionMap] = {n: empty for n in model.memrefs}
    for s in model.statements:
        for a in s.accesses:
            target = writes if a.is_write else reads
            target[a.memref] = target[a.memref].union(isl.UnionMap.from_map(a.relation))
    by_memref = {}
    raw_all, war_all, waw_all = empty, empty, empty
    for name in model.memrefs:
        r, w = reads[name], writes[name]
        if w.is_empty():
            raw = war = waw = empty   # read-only: no dependence
        else:
            raw = isl.UnionAccessInfo.from_sink(r).set_must_source(w) \
                .set_schedule_map(sched).compute_flow().get_may_dependence()
            war = isl.UnionAccessInfo.from_sink(w).set_may_source(r) \
                .set_schedule_map(sched).compute_flow().get_may_dependence()
            waw = isl.UnionAccessInfo.from_sink(w).set_must_source(w) \
                .set_schedule_map(sched).compute_flow().get_may_dependence()
        by_memref[name] = (raw, war, waw)
        raw_all, war_all, waw_all = raw_all.union(raw), war_all.union(war), waw_all.union(waw)
    return Dependences(raw_all.coalesce(), war_all.coalesce(), waw_all.coalesce(), by_memref)


# ---------------------------------------------------------------------------------------------
# schedules


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return sorted(out, key=lambda m: m.get_tuple_name(isl.dim_type.in_) or "")


def normalize_schedule(model: PolyhedralModel, schedule: Union[isl.UnionMap, isl.Map, str]
                       ) -> isl.UnionMap:
    """``schedule`` restricted to the model's instances, with every statement's time vector
    padded with zeros to the same length in one anonymous space (so that times of different
    statements compare).  Raises :class:`ScheduleError` if a statement's instances are not all
    scheduled, or one instance gets several times."""
    if isinstance(schedule, str):
        schedule = isl.UnionMap(schedule)
    elif isinstance(schedule, isl.Map):
        schedule = isl.UnionMap.from_map(schedule)
    maps = _maps(schedule.intersect_domain(model.domains()))
    length = max((m.dim(isl.dim_type.out) for m in maps), default=0)
    out = isl.UnionMap(model.param_space() + "{ }")
    for m in maps:
        n = m.dim(isl.dim_type.out)
        if n < length:
            m = m.add_dims(isl.dim_type.out, length - n)
            zero = isl.Val.zero(m.get_ctx())
            for k in range(n, length):
                m = m.fix_val(isl.dim_type.out, k, zero)
        if m.has_tuple_id(isl.dim_type.out):
            m = m.reset_tuple_id(isl.dim_type.out)
        out = out.union(isl.UnionMap.from_map(m))
    for s in model.statements:
        mine = out.intersect_domain(isl.UnionSet.from_set(s.domain))
        if not mine.domain().is_equal(isl.UnionSet.from_set(s.domain)):
            missing = isl.UnionSet.from_set(s.domain).subtract(mine.domain())
            raise ScheduleError(f"the schedule does not give a time to every instance of "
                                f"{s.name} (missing {missing.coalesce()})", s.loc)
        if not mine.is_single_valued():
            raise ScheduleError(f"the schedule gives some instances of {s.name} several times: "
                                f"it must be a function", s.loc)
    return out


def smallest_point(s: isl.Set, nparam: int) -> Optional[list[int]]:
    """A small concrete point of ``s``, as ``[params..., dims...]``: the lexicographically
    smallest with the ``nparam`` parameters moved in front (and preferably non-negative), so
    that messages show the smallest symbol values first; ``None`` when ``s`` is empty."""
    if s.is_empty():
        return None
    flat = s.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, nparam) if nparam else s
    if nparam:
        nonneg = isl.Set.universe(flat.get_space())
        for k in range(nparam):
            nonneg = nonneg.lower_bound_val(isl.dim_type.set, k, isl.Val.zero(flat.get_ctx()))
        if not flat.intersect(nonneg).is_empty():
            flat = flat.intersect(nonneg)
    candidates = [flat]
    try:
        candidates.insert(0, flat.lexmin())
    except isl.Error:
        pass  # unbounded: any point will do
    for candidate in candidates:
        pt = candidate.sample_point()
        if not pt.is_void():      # (ISL's lexmin of a set with existential divisions can
            return [pt.get_coordinate_val(isl.dim_type.set, k).to_python()   # sample void)
                    for k in range(candidate.dim(isl.dim_type.set))]
    return None


def evaluate_schedule(schedule: Union[isl.UnionMap, isl.Map], stmt: str, point: Sequence[int],
                      params: Sequence[int] = ()) -> tuple[int, ...]:
    """The time vector ``schedule`` gives instance ``stmt[point]``, the parameters (in the order
    of the schedule's space: ``p0, p1, ...``) set to ``params``."""
    if isinstance(schedule, isl.Map):
        schedule = isl.UnionMap.from_map(schedule)
    space = schedule.get_space()
    nparam = space.dim(isl.dim_type.param)
    pnames = [space.get_dim_name(isl.dim_type.param, k) for k in range(nparam)]
    fix = " and ".join(f"{n} = {v}" for n, v in zip(pnames, params))
    inst = isl.UnionSet(f"[{', '.join(pnames)}] -> {{ {stmt}[{', '.join(map(str, point))}]"
                        f"{' : ' + fix if fix else ''} }}")
    sets: list[isl.Set] = []
    schedule.intersect_domain(inst).range().foreach_set(sets.append)
    if len(sets) != 1 or sets[0].is_empty():
        raise ValueError(f"{stmt}{list(point)} has no time in the schedule")
    return tuple(smallest_point(sets[0], nparam)[nparam:])


@dataclass(frozen=True)
class Violation:
    """One dependence pair a schedule does not respect: ``source[src_point]`` must run before
    ``sink[sink_point]`` (with the parameters ``params`` = ``param_values``)."""

    kind: str
    memref: str
    source: str
    src_point: tuple[int, ...]
    sink: str
    sink_point: tuple[int, ...]
    params: tuple[str, ...]
    param_values: tuple[int, ...]
    involved: tuple[str, ...] = ()   # the parameters the violation depends on


def find_violation(model: PolyhedralModel, schedule: isl.UnionMap,
                   deps: Optional[Dependences] = None) -> Optional[Violation]:
    """The first dependence pair (RAW, then WAR, then WAW; memrefs in order; the smallest pair)
    that ``schedule`` does not run source-strictly-before-sink, or ``None`` if it is legal."""
    deps = compute_dependences(model) if deps is None else deps
    sched = normalize_schedule(model, schedule)
    later_or_same = sched.lex_ge_union_map(sched)      # { s -> t : T(s) >= T(t) }
    pnames = [model.param_names[p] for p in model.params]
    for kind, name, pairs in deps.items():
        bad = pairs.intersect(later_or_same)
        if bad.is_empty():
            continue
        best = None
        for m in _maps(bad):
            if m.is_empty():
                continue
            nsrc = m.dim(isl.dim_type.in_)
            coords = smallest_point(m.wrap().flatten(), m.dim(isl.dim_type.param))
            key = (coords, m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out))
            if best is None or key < best[0]:
                best = (key, m, nsrc)
        (coords, src, sink), m, nsrc = best
        mparams = [m.get_space().get_dim_name(isl.dim_type.param, k)
                   for k in range(m.dim(isl.dim_type.param))]
        np_ = len(mparams)
        values = dict(zip(mparams, coords[:np_]))
        involved = tuple(p for k, p in enumerate(mparams)
                         if m.involves_dims(isl.dim_type.param, k, 1))
        return Violation(kind, name, src, tuple(coords[np_:np_ + nsrc]), sink,
                         tuple(coords[np_ + nsrc:]), tuple(pnames),
                         tuple(values.get(p, 0) for p in pnames), involved)
    return None


def check_legality(model: PolyhedralModel, new_schedule: Union[isl.UnionMap, isl.Map, str],
                   deps: Optional[Dependences] = None) -> None:
    """Raise :class:`ScheduleError` at the sink statement unless ``new_schedule`` (statement
    instances -> time vectors) runs the source of every dependence pair strictly before its sink:

        schedule violates a RAW dependence on %arg0 from S0[1, 1] to S0[2, 1]: the new schedule
        runs S0[2, 1] first

    The pair named is real (both instances exist and depend on each other in the original
    program); the exception carries it as ``err.violation`` (a :class:`Violation`)."""
    if isinstance(new_schedule, str):
        new_schedule = isl.UnionMap(new_schedule)
    elif isinstance(new_schedule, isl.Map):
        new_schedule = isl.UnionMap.from_map(new_schedule)
    v = find_violation(model, new_schedule, deps)
    if v is None:
        return
    sched = normalize_schedule(model, new_schedule)
    src = f"{v.source}[{', '.join(map(str, v.src_point))}]"
    snk = f"{v.sink}[{', '.join(map(str, v.sink_point))}]"
    t_src = evaluate_schedule(sched, v.source, v.src_point, v.param_values)
    t_snk = evaluate_schedule(sched, v.sink, v.sink_point, v.param_values)
    order = f"at the same time as {src}" if t_src == t_snk else "first"
    msg = (f"schedule violates a {v.kind} dependence on {model.describe_memref(v.memref)} from "
           f"{src} to {snk}: the new schedule runs {snk} {order}")
    used = [f"{model.describe_param(p)} = {val}" for p, val in zip(v.params, v.param_values)
            if p in v.involved]
    if used:
        msg += f" (with {', '.join(used)})"
    err = ScheduleError(msg, model.statement(v.sink).loc)
    err.violation = v
    raise err


# ---------------------------------------------------------------------------------------------
# parallelism


def _carried_time_relation(length: int, dim: int, space: str) -> isl.UnionMap:
    xs = [f"x{k}" for k in range(length)]
    ys = [f"y{k}" for k in range(length)]
    eq = [f"x{k} = y{k}" for k in range(dim)]
    cons = " and ".join(eq + [f"(x{dim} < y{dim} or x{dim} > y{dim})"])
    return isl.UnionMap(f"{space}{{ [{', '.join(xs)}] -> [{', '.join(ys)}] : {cons} }}")


def carried_at(model: PolyhedralModel, deps: Dependences, dim: int,
               schedule: Optional[isl.UnionMap] = None) -> isl.UnionMap:
    """The dependence pairs (all kinds) carried by time dimension ``dim`` of ``schedule``
    (the original 2d+1 schedule by default, where loop depth ``d`` is dimension ``2d + 1``):
    pairs whose times agree before ``dim`` and differ at ``dim``."""
    sched = normalize_schedule(model, model.schedule() if schedule is None else schedule)
    maps = _maps(sched)
    length = max((m.dim(isl.dim_type.out) for m in maps), default=0)
    if length == 0:     # no statement instance runs (empty domains): nothing is carried
        return isl.UnionMap(model.param_space() + "{ }")
    if not 0 <= dim < length:
        raise ValueError(f"schedule dimension {dim} out of range (the schedule has {length})")
    times = _carried_time_relation(length, dim, model.param_space())
    same_prefix = sched.apply_range(times).apply_range(sched.reverse())   # { s -> t }
    return deps.all().intersect(same_prefix)


def is_parallel(model: PolyhedralModel, deps: Dependences, loop: Union[AffineForOp, int],
                schedule: Optional[isl.UnionMap] = None) -> bool:
    """Whether no dependence is carried by ``loop`` (MLIR's ``isLoopParallel``): an
    ``affine.for`` of the model (its iterations may run in any order, so it can be vectorized or
    unroll-jammed), or a time dimension of ``schedule``."""
    if isinstance(loop, AffineForOp):
        if schedule is not None:
            raise ValueError("is_parallel: give a time dimension, not a loop, with a schedule")
        inside = [s for s in model.statements if any(l is loop for l in s.loops)]
        if not inside:
            raise ValueError("is_parallel: the loop is not part of the model")
        depth = next(k for k, l in enumerate(inside[0].loops) if l is loop)
        dom = isl.UnionSet(model.param_space() + "{ }")
        for s in inside:
            dom = dom.union(isl.UnionSet.from_set(s.domain))
        if dom.is_empty():
            return True     # a loop that never runs (its schedule has no time dimensions)
        pairs = carried_at(model, deps, 2 * depth + 1)
        return pairs.intersect_domain(dom).intersect_range(dom).is_empty()
    return carried_at(model, deps, loop, schedule).is_empty()
