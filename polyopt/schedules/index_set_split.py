"""Index-set splitting of an innermost loop at the one iteration that carries its dependences
(Griebl, Feautrier and Lengauer's index-set splitting, reduced to its simplest case; MLIR has no
such pass, its loop utilities split iteration ranges only for tiles).

floyd-warshall's relaxation reads ``path[i][k]`` in every iteration of ``j`` and writes it in
iteration ``j = k``; that one iteration makes the ``j`` loop carry dependences (LLVM's vectorizer
sees a store that may hit the invariant load, and its run-time check, hoisted out of the ``i``
loop, covers row ``k`` itself, so the scalar loop always runs).  Every carried pair has one end
at ``j = k``; the iterations before it and after it are each independent::

    affine.for %j = 0 to 2800 {                affine.for %j = 0 to %k { S }           (parallel)
      S(path[i][j], path[i][k], path[k][j]) -> affine.for %j = %k to %k + 1 { S }
    }                                          affine.for %j = %k + 1 to 2800 { S }    (parallel)

Splitting a loop into consecutive ranges keeps every instance in its place, so it is always
legal; the split point ``f`` (an affine function of the loops around and the function's
symbols) is found by ISL: the iterations ``w`` such that every dependence the loop carries has
its source or its sink at ``w``, when that is one point for each iteration of the loops
around.  The pieces before and after ``f`` are checked parallel again (ISL) and get
:data:`PARALLEL` and :data:`PARALLEL_ACCESSES` (which the lowering turns into LLVM's
``llvm.loop.parallel_accesses``: their loads and stores need no run-time alias check).
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from ..affine.affine_expr import AffineMap, constant, dim
from ..affine.attributes import UnitAttr
from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from ..affine.ir import BlockArgument, Operation, Value
from ..affine.loop_utils import results_over_shared_operands
from ..codegen.loop_metadata import PARALLEL_ACCESSES
from .ast_to_affine import drop_redundant_bounds
from .dependences import carried_at, compute_dependences
from .model import extract
from .point_loops import innermost_loops
from .vector_legality import is_loop_parallel

__all__ = ["PARALLEL_ACCESSES", "split_at_carrying_iteration", "split_innermost_loops"]

#: the scheduler's mark of a loop that carries no dependence (auto_schedule.PARALLEL)
PARALLEL = "polyopt.parallel"


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out


def _iv_pairs(carried: isl.UnionMap, space: str) -> isl.Map:
    """``{ [a] -> [b] }``: the iterations of the root loop (dimension 0 of every statement)
    at the two ends of each carried pair."""
    out = isl.Map(space + "{ [a] -> [b] : 1 = 0 }")
    for m in _maps(carried):
        n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
        m = m.project_out(isl.dim_type.in_, 1, n_in - 1).project_out(isl.dim_type.out, 1,
                                                                       n_out - 1)
        m = m.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
        out = out.union(m.align_params(out.get_space()))
    return out.coalesce()


def _split_point(model, deps) -> Optional[isl.PwAff]:
    """The root loop's iteration that is an end of every dependence it carries, as a
    function of the parameters, or ``None`` when there is no such single iteration."""
    carried = carried_at(model, deps, 1)
    if carried.is_empty():
        return None
    space = model.param_space()
    pairs = _iv_pairs(carried, space)
    iters = isl.Set(space + "{ [w] : 1 = 0 }")
    for s in model.statements:
        d = s.domain
        iters = iters.union(d.project_out(isl.dim_type.set, 1, d.dim(isl.dim_type.set) - 1)
                            .reset_tuple_id().align_params(iters.get_space()))
    other = isl.Map(space + "{ [[a] -> [b]] -> [w] : w < a or w > a }").intersect(
        isl.Map(space + "{ [[a] -> [b]] -> [w] : w < b or w > b }"))
    missed = other.intersect_domain(pairs.wrap()).range()      # iterations some pair avoids
    # where the loops around carry nothing, any split will do: look where they carry
    where = pairs.domain().params()
    points = iters.subtract(missed).intersect_params(where).coalesce()
    if points.is_empty() or not points.lexmin().is_equal(points.lexmax()):
        return None
    if not where.is_subset(points.params()):
        return None     # for some iterations of the loops around, no single point
    pma = points.lexmin_pw_multi_aff()
    if pma.n_piece() != 1:
        return None
    return pma.get_pw_aff(0)


def _as_affine(pa: isl.PwAff, model) -> Optional[tuple[AffineMap, list[Value]]]:
    """``pa`` (one piece, no division) as a one-result affine map over the values it uses;
    ``None`` when it divides or uses a value that cannot be a loop bound's operand."""
    affs: list = []
    pa.foreach_piece(lambda _s, aff: affs.append(aff))
    if len(affs) != 1 or affs[0].dim(isl.dim_type.div):
        return None
    aff = affs[0]
    if not aff.get_denominator_val().is_one():
        return None
    expr = constant(aff.get_constant_val().to_python())
    operands: list[Value] = []
    by_name = {model.param_names[p]: p for p in model.params}
    for k in range(aff.dim(isl.dim_type.param)):
        c = aff.get_coefficient_val(isl.dim_type.param, k).to_python()
        if c == 0:
            continue
        value = by_name.get(aff.get_dim_name(isl.dim_type.param, k))
        if value is None or not _bound_operand(value):
            return None
        operands.append(value)
        expr = expr + dim(len(operands) - 1) * c
    return AffineMap.get(len(operands), 0, (expr,)), operands


def _bound_operand(v: Value) -> bool:
    """An induction variable of an enclosing ``affine.for`` or an argument of the function:
    valid as a dimension of any loop bound inside."""
    if not isinstance(v, BlockArgument):
        return False
    owner = v.block.parent_op
    return isinstance(owner, AffineForOp) or (owner is not None and owner.name == "func.func")


def _bounded(loop: AffineForOp, split: AffineMap, split_ops: list[Value], shift: int,
             lower: bool) -> tuple[AffineMap, list[Value]]:
    """``loop``'s lower (``max``) or upper (``min``) bound with ``split + shift`` added."""
    operands: list[Value] = []
    amap, ops = (loop.lower_map, loop.lower_operands) if lower else \
        (loop.upper_map, loop.upper_operands)
    results = results_over_shared_operands(amap, ops, operands)
    results += [r + shift for r in results_over_shared_operands(split, split_ops, operands)]
    return AffineMap.get(len(operands), 0, tuple(results)), operands


def split_at_carrying_iteration(loop: AffineForOp) -> Optional[list[AffineForOp]]:
    """Split the innermost ``loop`` into the ranges before, at and after the iteration that
    every dependence it carries touches (module docstring); returns the three loops, or
    ``None`` with nothing changed when there is no such iteration or a piece is not
    parallel."""
    if loop.inits or loop.step != 1 or any(isinstance(o, AffineForOp) for o in loop.walk()
                                            if o is not loop):
        return None
    try:
        model = extract(loop)
        if not model.statements:
            return None
        found = _split_point(model, compute_dependences(model))
    except (ScheduleError, isl.Error):
        return None
    if found is None:
        return None
    split = _as_affine(found, model)
    if split is None:
        return None
    amap, ops = split
    before, at, after = loop.clone(), loop.clone(), loop
    for piece in (before, at):
        loop.parent.insert_before(loop, piece)
    before.set_upper_bound(*_bounded(loop, amap, ops, 0, lower=False))
    at.set_lower_bound(*_bounded(loop, amap, ops, 0, lower=True))
    at.set_upper_bound(*_bounded(loop, amap, ops, 1, lower=False))
    after.set_lower_bound(*_bounded(loop, amap, ops, 1, lower=True))
    if not (is_loop_parallel(before) and is_loop_parallel(after)):
        # cannot happen when the split point is right; keep the loop as it was
        after.set_lower_bound(before.lower_map, list(before.lower_operands))
        before.erase()
        at.erase()
        return None
    for piece in (before, after):
        piece.attributes[PARALLEL] = UnitAttr()
        piece.attributes[PARALLEL_ACCESSES] = UnitAttr()
    for piece in (before, at, after):
        drop_redundant_bounds(piece)       # max(0, k) over k >= 0 is k
    return [before, at, after]


def split_innermost_loops(root: Operation) -> int:
    """:func:`split_at_carrying_iteration` on every innermost ``affine.for`` under ``root``
    not marked parallel (by the scheduler or :data:`PARALLEL_ACCESSES`); the number of loops
    split.  A loop that carries nothing is left as it is: no iteration carries a dependence
    there."""
    count = 0
    for loop in innermost_loops([root]):
        if loop.parent is None or PARALLEL_ACCESSES in loop.attributes \
                or PARALLEL in loop.attributes:
            continue        # parallel already (annotate_parallel_innermost ran first)
        if split_at_carrying_iteration(loop) is not None:
            count += 1
    return count

