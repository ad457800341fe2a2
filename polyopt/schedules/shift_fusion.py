"""Fusion with shifts of the sweeps inside a time loop (the ``shift-and-fuse`` of Pluto's
``--smartfuse`` and of PPCG's fusion of stencil sweeps): nests that run one after the other
in every time step share their outer loop, each shifted by the distance its dependences
need, so that one pass over the arrays does the work of several while the inner loops stay
as they were (vectorizable).

    for t:                                      for t:
      for i, j, k: B[i,j,k] = f(A[i-1..i+1])      for i:
      for i, j, k: A[i,j,k] = f(B[i-1..i+1])  -->   for j, k: B[i,j,k]   = f(A[i-1..i+1])
                                                    for j, k: A[i-1,j,k] = f(B[i-2..i])
                                                (heat-3d: A and B are streamed once per step)

On the flat schedule map (``S -> [.., c, x, ..]``, with ``c`` the position of the nest in the
sequence at dimension ``p`` and ``x`` its outermost loop), the fused schedule is
``S -> [.., x + s_c, c, ..]``: nest ``c`` is shifted by ``s_c``, the smallest shift for which
every dependence from an earlier nest ``a`` (with the same outer values) keeps
``x_src + s_a <= x_snk + s_c`` (ties run in sequence order).  The result goes through the
legality check like any schedule.

The fused schedule is then time-tiled (:func:`time_skew`, :func:`tile_time`, what Pluto's
diamond-free skewed tiling does with the rows only): rows are skewed by ``k`` per step, the
smallest ``k`` that makes every dependence distance along the skewed rows non-negative, and
the band ``(t, x + k t)`` is cut into rectangles of ``T`` steps by ``R`` rows, so that a tile
works on ``R + k T`` rows across ``T`` steps from cache instead of streaming the arrays at
every step; the inner loops of each row stay whole and vectorizable.

On a team of threads the tiles run in wavefronts (:func:`tile_wavefront`, Pluto's
``--parallel`` on a tiled band without concurrent start): tile ``(T, R)`` only needs tiles
with smaller ``T`` or ``R``, so the tiles with the same ``T + R`` run in parallel, one fork
per wavefront instead of one per sweep.  1-D sweeps (rows of one point), which one thread
runs untiled, are tiled then too, each sweep's rows of a tile one vector loop.
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from .dependences import Dependences
from .model import PolyhedralModel

__all__ = ["fuse_with_shifts", "sequence_position", "time_skew", "tile_time",
           "tile_wavefront"]


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out


def _constant_dim(m: isl.Map, d: int) -> Optional[int]:
    """The value of output dimension ``d`` of ``m`` when it is a constant."""
    pma = isl.PwMultiAff.from_map(m)
    pieces: list[isl.MultiAff] = []
    pma.foreach_piece(lambda _s, ma: pieces.append(ma))
    values = set()
    for ma in pieces:
        aff = ma.get_at(d)
        if not aff.is_cst():
            return None
        v = aff.get_constant_val()
        if not v.is_int():
            return None
        values.add(v.to_python())
    return values.pop() if len(values) == 1 else None


def sequence_position(schedule: isl.UnionMap) -> Optional[int]:
    """The first dimension ``p`` of ``schedule`` that is a constant per statement with at
    least two values (a sequence of nests), where dimension ``p + 1`` is a loop of some
    statements (a constant of the others: a statement outside that loop); ``None`` when there
    is none."""
    maps = _maps(schedule)
    if len(maps) < 2:
        return None
    n = maps[0].dim(isl.dim_type.out)
    for p in range(n - 1):
        consts = [_constant_dim(m, p) for m in maps]
        if any(c is None for c in consts):
            continue
        if len(set(consts)) < 2:
            continue
        if any(_constant_dim(m, p + 1) is None for m in maps):
            return p
        return None
    return None


def _min_distance(pairs: isl.Map, p: int, a: int, c: int) -> Optional[int]:
    """The smallest ``y[p + 1] - x[p + 1]`` over the time pairs ``x -> y`` of ``pairs`` with
    ``x[p] = a``, ``y[p] = c`` and equal dimensions before ``p`` (``None``: no such pair)."""
    n = pairs.dim(isl.dim_type.in_)
    xs = ", ".join(f"x{k}" for k in range(n))
    ys = ", ".join(f"y{k}" for k in range(n))
    same = " and ".join([f"x{k} = y{k}" for k in range(p)] + [f"x{p} = {a}", f"y{p} = {c}"])
    space = pairs.get_space()
    params = [space.get_dim_name(isl.dim_type.param, k)
              for k in range(space.dim(isl.dim_type.param))]
    filt = isl.Map(f"[{', '.join(params)}] -> {{ [{xs}] -> [{ys}] : {same} }}")
    sel = pairs.intersect(filt)
    if sel.is_empty():
        return None
    delta = sel.deltas()
    low = delta.dim_min_val(p + 1)
    if not low.is_int():
        return None
    return low.to_python()


def fuse_with_shifts(model: PolyhedralModel, deps: Dependences, schedule: isl.UnionMap,
                     p: int) -> Optional[isl.UnionMap]:
    """``schedule`` with the nests of the sequence at dimension ``p`` fused on their
    outermost loop (dimension ``p + 1``) with shifts (see the module docstring); ``None``
    when a distance is unbounded.  The caller checks legality."""
    maps = _maps(schedule)
    n = maps[0].dim(isl.dim_type.out)
    positions = sorted({_constant_dim(m, p) for m in maps})
    every = deps.all()
    pairs_u = every.apply_domain(schedule).apply_range(schedule)
    pairs_list = _maps(pairs_u)
    if not pairs_list:
        return None
    pairs = pairs_list[0]
    for m in pairs_list[1:]:
        pairs = pairs.union(m)
    shift = {positions[0]: 0}
    for k, c in enumerate(positions[1:], start=1):
        need = 0
        for a in positions[:k]:
            low = _min_distance(pairs, p, a, c)
            if low is None:
                continue
            need = max(need, shift[a] - low)
        shift[c] = need
    params = model.param_space()
    ins = ", ".join(f"d{k}" for k in range(n))
    pieces = []
    for c, s in shift.items():
        outs = [f"d{k}" for k in range(n)]
        outs[p], outs[p + 1] = f"d{p + 1} + {s}", str(c)
        pieces.append(f"[{ins}] -> [{', '.join(outs)}] : d{p} = {c}")
    swap = isl.UnionMap(params + "{ " + "; ".join(pieces) + " }")
    return schedule.apply_range(swap)


def _union_pairs(deps: Dependences, schedule: isl.UnionMap) -> Optional[isl.Map]:
    pairs_list = _maps(deps.all().apply_domain(schedule).apply_range(schedule))
    if not pairs_list:
        return None
    pairs = pairs_list[0]
    for m in pairs_list[1:]:
        pairs = pairs.union(m)
    return pairs


def time_skew(deps: Dependences, fused: isl.UnionMap, max_skew: int = 4) -> Optional[int]:
    """The smallest ``k`` in ``0..max_skew`` such that every dependence of the fused
    schedule ``S -> [t, x, ...]`` with ``dt > 0`` has ``dx + k * dt >= 0`` (then ``(t, x +
    k * t)`` is a permutable band that rectangular tiles may cut); ``None`` when none."""
    pairs = _union_pairs(deps, fused)
    if pairs is None:
        return 0
    delta = pairs.deltas()
    n = delta.dim(isl.dim_type.set)
    space = delta.get_space()
    params = [space.get_dim_name(isl.dim_type.param, k)
              for k in range(space.dim(isl.dim_type.param))]
    names = ", ".join(f"e{k}" for k in range(n))
    if not delta.intersect(isl.Set(f"[{', '.join(params)}] -> {{ [{names}] : e0 < 0 }}")
                           ).is_empty():
        return None
    for k in range(max_skew + 1):
        bad = isl.Set(f"[{', '.join(params)}] -> {{ [{names}] : e0 > 0 and e1 + {k} * e0 < 0 }}")
        if delta.intersect(bad).is_empty():
            return k
    return None


def tile_time(model: PolyhedralModel, fused: isl.UnionMap, skew: int, time_tile: int,
              row_tile: int, rows_inside: bool = False) -> isl.UnionMap:
    """``S -> [t, x, rest]`` (fused sweeps) as time tiles: ``S -> [floor(t / T),
    floor((x + k t) / R), t, x + k t, rest]`` -- ``T`` steps of ``R`` (skewed) rows at a
    time, the inner loops of each row as they were (still vectorizable).  ``rows_inside``
    (rows of one point, ``rest`` the sweep's position): ``S -> [.., t, rest, x + k t]``, each
    sweep's rows of the tile one vectorizable loop."""
    n = _maps(fused)[0].dim(isl.dim_type.out)
    ins = ", ".join(f"d{k}" for k in range(n))
    rest = [f"d{k}" for k in range(2, n)]
    skewed = f"d1 + {skew} * d0"
    inner = rest + [skewed] if rows_inside else [skewed] + rest
    outs = [f"floor(d0 / {time_tile})", f"floor(({skewed}) / {row_tile})", "d0"] + inner
    tiles = isl.UnionMap(f"{model.param_space()}{{ [{ins}] -> [{', '.join(outs)}] }}")
    return fused.apply_range(tiles)


def tile_wavefront(model: PolyhedralModel, tiled: isl.UnionMap) -> isl.UnionMap:
    """Time tiles ``S -> [T, R, rest]`` (:func:`tile_time`) in wavefronts: ``S -> [T + R,
    R, rest]``.  Every dependence goes to a tile with ``T`` and ``R`` no smaller, so the
    tiles of one wavefront are independent and its ``R`` loop is parallel."""
    n = _maps(tiled)[0].dim(isl.dim_type.out)
    ins = ", ".join(f"d{k}" for k in range(n))
    outs = ["d0 + d1"] + [f"d{k}" for k in range(1, n)]
    front = isl.UnionMap(f"{model.param_space()}{{ [{ins}] -> [{', '.join(outs)}] }}")
    return tiled.apply_range(front)
