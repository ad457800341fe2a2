"""Register-level steps on the innermost loops of a scheduled nest: unroll-and-jam of the loops
around a reduction, then scalar replacement (what Pluto's ``--unrolljam`` and Polly's
register tiling do after the schedule; MLIR's ``affine-loop-unroll-jam`` + ``affine-scalrep``).

An innermost loop that carries a dependence through an element it keeps updating (a
reduction: ``tmp[i] += A[i][j] * x[j]`` in ``j``) runs at the latency of one add per
iteration: LLVM does not vectorize it (that would reassociate the sum).  Unroll-and-jam of
the loops around it gives it independent chains, as many as the core keeps in flight
(FMA latency x FMA units, about 8), and the loads of elements invariant in the jammed loop
(``x[j]``) are shared by the copies:

    affine.for %i = 0 to 1900 {                 affine.for %i = 0 to 1896 step 8 {
      affine.for %j = 0 to 2100 {        -->      %t = affine.for %j = 0 to 2100
        tmp[i] += A[i][j] * x[j]                        iter_args(%t0 = tmp[i], .., %t7 = tmp[i+7]) {
      }                                             %x = x[j]
    }                                               %t0' = %t0 + A[i][j] * %x  ...  %t7' = ...
                                                  } ; tmp[i] = %t#0 ... tmp[i+7] = %t#7
                                                }   (and a cleanup loop for i = 1896 .. 1899)

Each jam is checked against the dependences (:func:`~polyopt.schedules.loop_legality.
unroll_jam_is_legal`); a loop that cannot be jammed (a dependence, bounds of the inner loop
that depend on it) is left alone and the next loop out is tried.  Innermost loops that carry
no dependence are LLVM's vectorizer's and are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from ..affine.ir import Operation
from ..affine.loop_utils import describe_loop, results_over_shared_operands, unroll_jam
from .loop_legality import unroll_jam_is_legal
from .vector_legality import is_loop_parallel

__all__ = ["JamReport", "jam_reductions", "innermost_loops"]

#: independent chains an innermost reduction gets: FMA latency (4 cycles) x FMA units (2)
CHAINS = 8
#: copies of a reduction loop jammed around a vectorized loop that updates its elements
VECTOR_JAM = 4


@dataclass
class JamReport:
    """What :func:`jam_reductions` did: ``(loop description, factor)`` per jam."""

    jams: list[tuple[str, int]] = field(default_factory=list)

    def describe(self) -> str:
        return ", ".join(f"{what} by {f}" for what, f in self.jams)


def innermost_loops(ops: list[Operation]) -> list[AffineForOp]:
    """The ``affine.for`` loops under ``ops`` with no loop nested in them, in program order."""
    return [op for top in ops for op in top.walk()
            if isinstance(op, AffineForOp)
            and not any(isinstance(o, AffineForOp) for o in op.walk() if o is not op)]


def _tile_origin(loop: AffineForOp) -> Optional[tuple[int, int]]:
    """``(r, T)`` when ``loop`` is a tile's point loop ``max(.., lb_r, ..) to min(lb_r + T,
    ...)``: lower-bound result ``r`` plus the constant ``T`` is one of the upper bounds (step
    1, more than one bound in all), else ``None``."""
    from ..affine.linear_form import add_forms, constant_of, is_constant_form
    from ..affine.loop_utils import value_linear_form
    if loop.step != 1 or loop.lower_map.num_results + loop.upper_map.num_results < 3:
        return None
    lbs = value_linear_form(loop.lower_map, loop.lower_operands)
    ubs = value_linear_form(loop.upper_map, loop.upper_operands)
    for r, lb in enumerate(lbs):
        for ub in ubs:
            diff = add_forms(ub, lb, -1)
            if is_constant_form(diff) and constant_of(diff) > 0:
                return r, constant_of(diff)
    return None


def _tile_size(loop: AffineForOp) -> Optional[int]:
    found = _tile_origin(loop)
    return found[1] if found is not None else None


def version_full_tile(loop: AffineForOp) -> Optional[tuple[AffineForOp, AffineForOp]]:
    """Loop versioning of a tile's point loop ``max(lb, ...) to min(lb + T, N, ...)``:
    ``affine.if (the tile is full: every other lower bound <= lb, every other upper bound >=
    lb + T) { lb to lb + T } else { the loop as it was }``, so that the full tiles (all but
    the ones at the edges of the domain) have the constant trip count ``T``.  Returns (full
    copy, original), or ``None`` when ``loop`` is not of that form."""
    from ..affine.affine_expr import AffineMap, IntegerSet, dim
    from ..affine.dialects.affine import AffineIfOp
    found = _tile_origin(loop)
    if found is None:
        return None
    r, size = found
    operands: list = []

    def remap(amap, ops):
        return results_over_shared_operands(amap, ops, operands)

    lbs = remap(loop.lower_map, loop.lower_operands)
    ubs = remap(loop.upper_map, loop.upper_operands)
    origin = lbs[r]
    constraints = []
    for k, lb in enumerate(lbs):
        if k != r:
            constraints.append(origin - lb)
    for ub in ubs:
        diff = ub - (origin + size)
        if not (diff.is_symbolic_or_constant() and not diff.used_dims()
                and diff.evaluate([0] * len(operands)) >= 0):
            constraints.append(diff)
    if not constraints:
        return None
    cond = IntegerSet(len(operands), 0, tuple(constraints), (False,) * len(constraints))
    if_op = AffineIfOp.build(cond, operands, with_else=True, loc=loop.loc)
    loop.parent.insert_before(loop, if_op)
    full = loop.clone()
    if_op.then_block.insert_before(if_op.then_block.terminator, full)
    loop.detach()
    if_op.else_block.insert_before(if_op.else_block.terminator, loop)
    lb_map = AffineMap.get(len(operands), 0, (origin,))
    full.set_lower_bound(lb_map, list(operands))
    full.set_upper_bound(AffineMap.get(len(operands), 0, (origin + size,)), list(operands))
    return full, loop


def _try_jam(loop: AffineForOp, factor: int, check) -> int:
    """Unroll-and-jam ``loop`` by the largest power of two up to ``factor`` that is legal and
    possible; returns it (1: nothing done)."""
    while factor > 1:
        try:
            result = unroll_jam(loop, factor, check=check)
        except ScheduleError:
            factor //= 2
            continue
        return factor if result.main is not None else 1
    return 1


def _streams(inner: AffineForOp, loop: AffineForOp) -> int:
    """The loads in ``inner``'s body whose element changes with both ``inner``'s and
    ``loop``'s induction variables: each jammed copy of ``loop`` adds that many streams of
    loads to ``inner`` (rows of ``A`` in ``tmp[i] += A[i][j] * x[j]``)."""
    from ..affine.dialects.affine import AffineLoadOp
    from ..affine.loop_utils import value_linear_form
    keys = {("v", inner.induction_var), ("v", loop.induction_var)}
    seen = set()
    for op in inner.body.ops:
        if isinstance(op, AffineLoadOp):
            forms = value_linear_form(op.map, op.map_operands)
            used = {k for f in forms for k in f}
            if keys <= used:
                seen.add((id(op.memref), tuple(tuple(sorted(f.items(), key=repr))
                                               for f in forms)))
    return len(seen)


def _subscripts_use(inner: AffineForOp, loop: AffineForOp) -> bool:
    """Whether some access in ``inner``'s body has ``loop``'s induction variable in its
    subscripts (a tile loop's copies would only repeat whole tiles)."""
    from ..affine.dialects.affine import AffineLoadOp, AffineStoreOp
    from ..affine.loop_utils import value_linear_form
    key = ("v", loop.induction_var)
    return any(key in f for op in inner.body.ops if isinstance(op, (AffineLoadOp, AffineStoreOp))
               for f in value_linear_form(op.map, op.map_operands))


def _jam_around(inner: AffineForOp, chains: int, check, report: JamReport, *,
                streams_rule: bool = True) -> None:
    want = chains
    loop = inner.parent_op
    if streams_rule and isinstance(loop, AffineForOp):
        # the core streams about `chains` rows at once: fewer copies when each brings several
        streams = _streams(inner, loop)
        while streams > 1 and want > 2:
            want //= 2
            streams = (streams + 1) // 2
    while want > 1 and isinstance(loop, AffineForOp) and _subscripts_use(inner, loop):
        outer = loop.parent_op if streams_rule else None
        size = _tile_size(loop)
        if size is not None and size % want == 0 and unroll_jam_legal(loop, want, check):
            full, partial = version_full_tile(loop) or (loop, None)
            done = _try_jam(full, want, check)
            if partial is not None:
                _try_jam(partial, want, check)
        else:
            done = _try_jam(loop, want, check)
        if done > 1:
            report.jams.append((describe_loop(loop), done))
            want //= done
        loop = outer


def unroll_jam_legal(loop: AffineForOp, factor: int, check) -> bool:
    if check is None:
        return True
    try:
        check(loop, factor)
    except ScheduleError:
        return False
    return True


def jam_reductions(ops: list[Operation], *, chains: int = CHAINS,
                   check: Optional[Callable] = unroll_jam_is_legal) -> JamReport:
    """Unroll-and-jam the loops around each innermost loop under ``ops`` that carries a
    dependence, nearest first, until it has ``chains`` independent copies (see the module
    docstring); returns what was jammed."""
    report = JamReport()
    for inner in innermost_loops(ops):
        if inner.parent is None:
            continue
        try:
            parallel = is_loop_parallel(inner)
        except ValueError:      # a loop that never runs (empty domain): nothing to gain
            continue
        if not parallel:
            if _accumulates(inner):
                _jam_around(inner, chains, check, report)
        elif _updates_invariant_in_parent(inner):
            # a vector loop inside a reduction loop (cov[i][j] += data[k][i] * data[k][j],
            # j vectorized, k around it): jammed copies of k update the same vector of cov,
            # loaded and stored once for VECTOR_JAM products
            _jam_around(inner, VECTOR_JAM, check, report, streams_rule=False)
    return report


def _accumulates(inner: AffineForOp) -> bool:
    """Whether ``inner``'s body stores to an element that does not change with ``inner``
    (an accumulator: the chain jamming breaks).  A recurrence over other elements (seidel's
    ``A[i][j]`` from ``A[i][j - 1]``) is not one: copies of the loops around it would depend
    on each other as well."""
    from ..affine.dialects.affine import AffineStoreOp
    from ..affine.loop_utils import value_linear_form
    key = ("v", inner.induction_var)
    return any(isinstance(op, AffineStoreOp)
               and not any(key in f for f in value_linear_form(op.map, op.map_operands))
               for op in inner.body.ops)


def _updates_invariant_in_parent(inner: AffineForOp) -> bool:
    """Whether ``inner``'s body stores to an element that changes with ``inner`` but not with
    the loop around it (the parent loop is a reduction over that element)."""
    from ..affine.dialects.affine import AffineStoreOp
    from ..affine.loop_utils import value_linear_form
    parent = inner.parent_op
    if not isinstance(parent, AffineForOp):
        return False
    for op in inner.body.ops:
        if isinstance(op, AffineStoreOp):
            used = {k for f in value_linear_form(op.map, op.map_operands) for k in f}
            if ("v", inner.induction_var) in used and ("v", parent.induction_var) not in used:
                return True
    return False
