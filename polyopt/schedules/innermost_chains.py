"""Whether a schedule leaves its deepest statements in chains of latencies: innermost loops
that carry a dependence which unroll-and-jam cannot split (the question behind choosing
between ISL's two searches for a triangular solve; Polly reaches the same column form with
its default options).

    for i: for j < i: x[i] -= L[i][j] * x[j]        (trisolv, ISL's default search)
        the j loop carries x[i] from one iteration to the next: one FMA latency each;
        unroll-and-jam of i would give independent chains, but j's bound moves with i
    for j: x[j] /= L[j][j]; for i > j: x[i] -= L[i][j] * x[j]   (with outer coincidence)
        the i loop carries nothing: LLVM's vectorizer takes it

:func:`latency_bound` answers the first question for a schedule, :func:`vector_innermost` the
second; both look at the statements of the greatest depth only (the bulk of the work) and at
the dependences among them.
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from .dependences import Dependences, carried_at, normalize_schedule
from .model import PolyhedralModel

__all__ = ["innermost_loops", "latency_bound", "vector_innermost"]


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out


def _is_loop(times: isl.Set, d: int) -> bool:
    """Whether time dimension ``d`` takes several values for one value of the dimensions
    before it (a loop of the generated code, not a constant or a function of outer loops)."""
    n = times.dim(isl.dim_type.set)
    prefix = times.project_out(isl.dim_type.set, d + 1, n - d - 1)
    as_map = isl.Map.from_range(prefix).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, d)
    return not as_map.is_single_valued()


def innermost_loops(model: PolyhedralModel, schedule: isl.UnionMap
                    ) -> dict[str, tuple[Optional[int], Optional[int], isl.Set]]:
    """For each statement with instances: the time dimensions of the loop around its
    innermost loop and of its innermost loop (``None`` where there is no such loop) in the
    normalized ``schedule``, and the set of its times."""
    out = {}
    for m in _maps(normalize_schedule(model, schedule)):
        name = m.get_tuple_name(isl.dim_type.in_)
        times = m.range()
        if times.is_empty():
            continue
        loops = [d for d in range(times.dim(isl.dim_type.set)) if _is_loop(times, d)]
        inner = loops[-1] if loops else None
        outer = loops[-2] if len(loops) > 1 else None
        out[name] = (outer, inner, times)
    return out


def _bounds_move(times: isl.Set, outer: int, inner: int) -> bool:
    """Whether the range of time dimension ``inner`` depends on dimension ``outer`` (the
    dimensions before ``outer`` fixed): a triangular or tiled-triangular pair of loops."""
    n = times.dim(isl.dim_type.set)
    q = times.project_out(isl.dim_type.set, inner + 1, n - inner - 1)
    q = q.project_out(isl.dim_type.set, outer + 1, inner - outer - 1)      # (prefix, y, x)
    ys = q.project_out(isl.dim_type.set, outer + 1, 1).insert_dims(isl.dim_type.set,
                                                                   outer + 1, 1)
    xs = q.project_out(isl.dim_type.set, outer, 1).insert_dims(isl.dim_type.set, outer, 1)
    return not ys.intersect(xs).is_subset(q)


def _deepest(model: PolyhedralModel) -> list[str]:
    live = [s for s in model.statements if not s.domain.is_empty()]
    depth = max((s.depth for s in live), default=0)
    return [s.name for s in live if s.depth == depth and depth > 0]


def _carries(model: PolyhedralModel, deps: Dependences, schedule: isl.UnionMap, dim: int,
             names: list[str]) -> bool:
    among = isl.UnionSet(model.param_space() + "{ }")
    for name in names:
        among = among.union(isl.UnionSet.from_set(model.statement(name).domain))
    pairs = carried_at(model, deps, dim, schedule)
    return not pairs.intersect_domain(among).intersect_range(among).is_empty()


def latency_bound(model: PolyhedralModel, deps: Dependences, schedule: isl.UnionMap) -> bool:
    """Whether every deepest statement's innermost loop in ``schedule`` carries a dependence
    among the deepest statements and unroll-and-jam cannot give it independent chains: there
    is no loop around it, or its bounds move with that loop (the jam copies iterations of
    the loop around into one body, which needs the same inner range for each)."""
    names = _deepest(model)
    if not names:
        return False
    loops = innermost_loops(model, schedule)
    for name in names:
        outer, inner, times = loops.get(name, (None, None, None))
        if inner is None or not _carries(model, deps, schedule, inner, names):
            return False
        if outer is not None and not _bounds_move(times, outer, inner):
            return False
    return True


def vector_innermost(model: PolyhedralModel, deps: Dependences, schedule: isl.UnionMap) -> bool:
    """Whether every deepest statement's innermost loop in ``schedule`` carries no dependence
    among the deepest statements."""
    names = _deepest(model)
    if not names:
        return False
    loops = innermost_loops(model, schedule)
    for name in names:
        _, inner, _ = loops.get(name, (None, None, None))
        if inner is None or _carries(model, deps, schedule, inner, names):
            return False
    return True
