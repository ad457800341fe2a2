"""Bands of an ISL schedule tree made fast: the innermost member chosen for stride-1 accesses,
then rectangular tiles sized from the target's caches (Pluto's tiling and intra-tile
reordering; PPCG's ``--tile``; Polly's ``-polly-tiling``).

    band [i, j] permutable, coincident [1, 0]      x2[i] += A[j][i] * y2[j]   (mvt, 2nd nest)
      --order_band_members-->  band [j, i]          i innermost: A[j][i] and x2[i] are read
                                                   with stride 1, and i carries no dependence
      --tile_band(32, 64)-->   band [floor(j/32), floor(i/64)] / band [j, i]

Reordering the members of a *permutable* band is always legal (every dependence has a
non-negative distance along every member), and so is tiling it.  Members are reordered only
when each statement's member is one of its loop indices (plus constants): the skewed members
of a stencil's band are left in ISL's order (the innermost one is already the stride-1 one,
skewed by the time dimension).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Optional, Sequence

import islpy as isl

from .blis_schedule import MachineModel
from .model import PolyhedralModel

__all__ = ["BandInfo", "member_dims", "order_band_members", "choose_tile_sizes", "tile_band",
           "band_is_skewed", "band_footprint"]


@dataclass(frozen=True)
class BandInfo:
    """What was done to one band, for remarks: its members (ISL text of each statement's
    function), the tile sizes (empty: not tiled), the member moved innermost (``None``: kept),
    the tile loop moved outermost because it is parallel (``None``: kept)."""

    members: tuple[str, ...]
    tile_sizes: tuple[int, ...]
    innermost: Optional[int]
    coincident: tuple[bool, ...]
    permutable: bool
    outer_tile: Optional[int] = None


def _pieces(upa: isl.UnionPwAff) -> list[tuple[str, isl.Aff]]:
    # the callbacks only collect: islpy ignores (prints) exceptions raised in them
    pws: list[isl.PwAff] = []
    upa.foreach_pw_aff(pws.append)
    out: list[tuple[str, isl.Aff]] = []
    for pa in pws:
        name = pa.get_domain_space().get_tuple_name(isl.dim_type.set)
        affs: list[isl.Aff] = []
        pa.foreach_piece(lambda _set, aff: affs.append(aff))
        out += [(name, aff) for aff in affs]
    return out


def _coefficient(aff: isl.Aff, dim: int) -> Fraction:
    """The coefficient of input dimension ``dim`` in ``aff`` (rational when ``aff`` divides)."""
    val = aff.get_coefficient_val(isl.dim_type.in_, dim)
    return Fraction(val.to_python()) if val.is_int() else Fraction(str(val))


def member_dims(node: isl.ScheduleNode) -> Optional[list[dict[str, Optional[int]]]]:
    """For each member of the band at ``node``: statement name -> the index of the loop
    dimension the member is (``i_d + constant``, coefficient 1), or ``None`` for a constant
    member (a statement that does not run in that loop); ``None`` overall when some
    statement's member is anything else (a skew, a scaling, a piecewise function)."""
    mupa = node.band_get_partial_schedule()
    out: list[dict[str, Optional[int]]] = []
    for m in range(node.band_n_member()):
        dims: dict[str, Optional[int]] = {}
        for name, aff in _pieces(mupa.get_at(m)):
            n = aff.dim(isl.dim_type.in_)
            coeffs = [_coefficient(aff, d) for d in range(n)]
            nonzero = [d for d, c in enumerate(coeffs) if c != 0]
            if aff.dim(isl.dim_type.div) or len(nonzero) > 1 or \
                    (nonzero and coeffs[nonzero[0]] != 1):
                return None
            d = nonzero[0] if nonzero else None
            if name in dims and dims[name] != d:
                return None    # piecewise with different dimensions
            dims[name] = d
        out.append(dims)
    return out


def band_is_skewed(node: isl.ScheduleNode) -> bool:
    """Whether some member of the band is not a plain loop index of each statement."""
    return member_dims(node) is None


def _access_score(model: PolyhedralModel, stmt: str, dim: int) -> tuple[int, bool]:
    """How well the accesses of ``stmt`` suit loop dimension ``dim`` innermost: +2 for a
    stride-1 access (``dim`` only in the last subscript, coefficient +-1), +1 for an invariant
    one (a register across the loop), -4 for a large stride (``dim`` in another subscript);
    and whether some access has that large stride."""
    score, strided = 0, False
    for acc in model.statement(stmt).accesses:
        pma = isl.PwMultiAff.from_map(_first_elements(acc.relation))
        pieces: list[isl.MultiAff] = []
        pma.foreach_piece(lambda _set, ma: pieces.append(ma))
        uses = [(k, c) for ma in pieces for k in range(ma.dim(isl.dim_type.out))
                for c in [_coefficient(ma.get_at(k), dim)]
                if c != 0]   # (subscript position, coefficient) of the uses of dim
        last = acc.relation.dim(isl.dim_type.out) - 1
        if not uses:
            score += 1
        elif all(k == last and abs(c) == 1 for k, c in uses):
            score += 2
        elif any(k != last for k, _ in uses):
            score -= 4
            strided = True
    return score, strided


def _writes_along(model: PolyhedralModel, stmt: str, dim: int) -> bool:
    """Does a write of ``stmt`` move along loop dimension ``dim`` (a new element each
    iteration, unlike a sum into one element)?"""
    for acc in model.statement(stmt).accesses:
        if not acc.is_write:
            continue
        pma = isl.PwMultiAff.from_map(_first_elements(acc.relation))
        pieces: list[isl.MultiAff] = []
        pma.foreach_piece(lambda _set, ma: pieces.append(ma))
        if any(_coefficient(ma.get_at(k), dim) != 0 for ma in pieces
               for k in range(ma.dim(isl.dim_type.out))):
            return True
    return False


def order_band_members(node: isl.ScheduleNode, model: PolyhedralModel
                       ) -> tuple[isl.ScheduleNode, Optional[int]]:
    """Move the member best suited to be the innermost loop (see :func:`_access_score`;
    parallel members without a large-stride access first, for vectorization) to the end of the permutable band at ``node``.
    Returns the new node and the original index of the member moved (``None``: unchanged)."""
    n = node.band_n_member()
    if n < 2 or not node.band_get_permutable():
        return node, None
    dims = member_dims(node)
    if dims is None:
        return node, None
    coincident = [bool(node.band_member_get_coincident(m)) for m in range(n)]
    scored = [[_access_score(model, s, d) for s, d in dims[m].items() if d is not None]
              for m in range(n)]
    scores = [sum(sc for sc, _ in scored[m]) for m in range(n)]
    strided = [any(st for _, st in scored[m]) for m in range(n)]
    # a parallel member innermost is vectorized, unless it walks an array across rows: then
    # the stride-1 member is better innermost even when it carries a reduction (atax's
    # tmp[i] += A[i][j] * x[j] keeps j innermost, and unroll-and-jam of i breaks the chain)
    candidates = [m for m in range(n) if coincident[m] and not strided[m]] or list(range(n))
    if len(candidates) == n and any(coincident) and not coincident[n - 1] and any(
            d is not None and _writes_along(model, s, d) for s, d in dims[n - 1].items()):
        # ... but a recurrence along the innermost member (adi's p[i][j] from p[i][j - 1],
        # through a division) is one chain of latencies, which unroll-and-jam does not take
        # apart as it does a sum into one element: the parallel member goes innermost, its
        # iterations independent, even walking across rows (Polly orders adi so)
        candidates = [m for m in range(n) if coincident[m]]
    best = max(candidates, key=lambda m: (scores[m], m))   # ties: the later member
    if best == n - 1:
        return node, None
    order = [m for m in range(n) if m != best] + [best]
    return _permute_members(node, order), best


def parallel_member_outermost(node: isl.ScheduleNode) -> tuple[isl.ScheduleNode, Optional[int]]:
    """Move the first parallel (coincident) member of the permutable band at ``node`` to its
    front, when its first member is not parallel (Pluto's outer parallelism: a loop that
    carries no dependence stays parallel in any position of a permutable band).  Applied to
    tile loops, it gives the threads whole tiles to share (trmm's column tiles) instead of a
    fork inside two sequential tile loops.  Returns the new node and the member moved."""
    n = node.band_n_member()
    coincident = [bool(node.band_member_get_coincident(m)) for m in range(n)]
    if n < 2 or not node.band_get_permutable() or coincident[0] or not any(coincident):
        return node, None
    first = coincident.index(True)
    return _permute_members(node, [first] + [m for m in range(n) if m != first]), first


def _permute_members(node: isl.ScheduleNode, order: list[int]) -> isl.ScheduleNode:
    """The permutable band at ``node`` with its members in ``order`` (old indices)."""
    coincident = [bool(node.band_member_get_coincident(m)) for m in range(len(order))]
    mupa = node.band_get_partial_schedule()
    new = mupa
    for k, m in enumerate(order):
        new = new.set_at(k, mupa.get_at(m))
    node = node.delete().insert_partial_schedule(new)
    node = node.band_set_permutable(1)
    for k, m in enumerate(order):
        node = node.band_member_set_coincident(k, int(coincident[m]))
    return node


def _extent(domain: isl.Set, dim: int) -> Optional[int]:
    """The number of values dimension ``dim`` of ``domain`` takes (``None``: unbounded or
    parametric)."""
    hi, lo = domain.dim_max_val(dim), domain.dim_min_val(dim)
    if not (hi.is_int() and lo.is_int()):
        return None
    return hi.to_python() - lo.to_python() + 1


def band_footprint(node: isl.ScheduleNode, model: PolyhedralModel, elem_bytes: int, *,
                   line_bytes: int = 64) -> Optional[int]:
    """The bytes one iteration of the outermost member of the band at ``node`` touches while
    the other members run their whole range (each access counts the product of the extents of
    the inner members in its subscripts: no overlap assumed); ``None`` when it cannot be told
    (a skewed band, parametric bounds).  A band whose footprint fits in cache gains nothing
    from tiles: the data reused across the outer member stays in cache anyway.

    An access that the inner members walk across rows, its last subscript moved by none of
    them, touches a cache line of ``line_bytes`` (or a whole row, if shorter) for each element:
    the transpose ``T[i][j] = A[j][i]`` under ``i, j`` reads 8 KiB of ``A``'s f64 elements for
    each ``i`` at ``j < 1024``, but in 64 KiB of lines, and it is those lines that the next
    iterations of ``i`` reuse."""
    dims = member_dims(node)
    if dims is None:
        return None
    total = 0
    names = set().union(*(d.keys() for d in dims))
    for name in names:
        stmt = model.statement(name)
        extents = {}
        for m in range(1, len(dims)):
            d = dims[m].get(name)
            if d is not None:
                e = _extent(stmt.domain, d)
                if e is None:
                    return None
                extents[d] = e
        for acc in stmt.accesses:
            subs = _subscripts(acc.relation)
            rank = acc.relation.dim(isl.dim_type.out)
            moved = [d for d in extents if any(_coefficient(a, d) != 0 for a in subs)]
            size = elem_bytes
            if moved and rank and not any(_coefficient(a, d) != 0 for a in subs[rank - 1::rank]
                                          for d in moved):
                size = min(line_bytes, _row_bytes(model, acc.memref, elem_bytes))
            for d in moved:
                size *= extents[d]
            total += size
    return total


def _row_bytes(model: PolyhedralModel, memref: str, elem_bytes: int) -> int:
    """The bytes of one row (the last dimension) of ``memref``; a large number when its
    shape is not static."""
    shape = getattr(model.memrefs[memref].type, "shape", None)
    if not shape or not isinstance(shape[-1], int) or shape[-1] < 0:
        return 1 << 62
    return max(elem_bytes, elem_bytes * shape[-1])


def band_streams(node: isl.ScheduleNode, model: PolyhedralModel, elem_bytes: int,
                 reuse_bytes: int) -> bool:
    """Can tiles of the band at ``node`` not help, because every access walks its array once,
    in order?  True when, for each access, (1) between two uses of an element that a member
    of the band does not change, the access touches at most ``reuse_bytes`` (a bias ``B[c]``
    re-read for every image: one row of C values), and (2) the innermost member it depends on
    moves its last subscript (a transpose ``A[j][i]`` under ``i, j`` gains from tiles: its
    cache lines are reused across ``i``).  An elementwise nest over activations, a copy, a
    stencil sweep in place of time: each element is brought into cache once whatever the
    order, and tiles only shorten the innermost loop."""
    dims = member_dims(node)
    if dims is None:
        return False
    n = len(dims)
    for name in set().union(*(d.keys() for d in dims)):
        stmt = model.statement(name)
        members = [dims[m].get(name) for m in range(n)]
        if any(d is None for d in members):
            return False
        extents = [_extent(stmt.domain, d) for d in members]
        if any(e is None for e in extents):
            return False
        for acc in stmt.accesses:
            subs = _subscripts(acc.relation)
            if not subs:
                continue
            dep = [any(_coefficient(a, d) != 0 for a in subs) for d in members]
            for m in range(n):
                if not dep[m] and any(dep[m + 1:]):
                    footprint = elem_bytes
                    for k in range(m + 1, n):
                        footprint *= extents[k] if dep[k] else 1
                    if footprint > reuse_bytes:
                        return False
            inner = [m for m in range(n) if dep[m]]
            if inner and _coefficient(subs[-1], members[inner[-1]]) == 0:
                return False
    return True


def _first_elements(relation: isl.Map) -> isl.Map:
    """``relation`` where it is single-valued, else the first element each instance touches
    (a vector access reads several: its subscripts are those of its first lane)."""
    return relation if relation.is_single_valued() else relation.lexmin()


def _subscripts(relation: isl.Map) -> list[isl.Aff]:
    pma = isl.PwMultiAff.from_map(_first_elements(relation))
    pieces: list[isl.MultiAff] = []
    pma.foreach_piece(lambda _set, ma: pieces.append(ma))
    return [ma.get_at(k) for ma in pieces for k in range(ma.dim(isl.dim_type.out))]


def choose_tile_sizes(n: int, elem_bytes: int, machine: MachineModel, *,
                      skewed: bool = False, inner_reduction: bool = False) -> tuple[int, ...]:
    """Tile sizes for an ``n``-member band (outermost first) from the target model.

    The innermost member gets a row of ``4 * lanes`` elements (four vectors: whole cache lines,
    and room for LLVM to vectorize and interleave); the others share what is left of half the
    L2 cache, with about three arrays' tiles live: ``s ** (n - 1) * inner * elem_bytes * 3 <=
    L2 / 2``, rounded down to a multiple of 8 within [8, 64] (16 at most for the time
    dimension of a skewed, stencil band, whose tiles must stay short to keep the wavefront
    of the skew within cache).  When the innermost member carries a reduction
    (``inner_reduction``: it is not vectorized, its accumulators stay in registers across
    it), its tile is four times longer, so that loading and storing them is rare."""
    lanes = machine.lanes(elem_bytes)
    inner = 4 * lanes
    if n == 1:
        return (inner,)
    budget = machine.l2_bytes // 2 // (3 * inner * elem_bytes)
    s = int(budget ** (1.0 / (n - 1)))
    s = max(8, min(64, s - s % 8))
    sizes = [s] * (n - 1) + [4 * inner if inner_reduction else inner]
    if skewed:
        sizes[0] = min(sizes[0], 16)
    return tuple(sizes)


@contextlib.contextmanager
def _tile_options(ctx: isl.Context) -> Iterator[None]:
    saved = (ctx.get_tile_scale_tile_loops(), ctx.get_tile_shift_point_loops())
    try:
        ctx.set_tile_scale_tile_loops(0)   # tile loops count tiles; point loops are the
        ctx.set_tile_shift_point_loops(0)  # original values (readable bounds)
        yield
    finally:
        ctx.set_tile_scale_tile_loops(saved[0])
        ctx.set_tile_shift_point_loops(saved[1])


def tile_band(node: isl.ScheduleNode, sizes: Sequence[int]) -> isl.ScheduleNode:
    """Tile the band at ``node`` by ``sizes`` (one per member): a band of tile loops with the
    band of point loops as its child (``isl_schedule_node_band_tile``)."""
    space = node.band_get_space()
    mv = isl.MultiVal.zero(space)
    for k, s in enumerate(sizes):
        mv = mv.set_val(k, isl.Val.int_from_si(node.get_ctx(), int(s)))
    with _tile_options(node.get_ctx()):
        return node.band_tile(mv)
