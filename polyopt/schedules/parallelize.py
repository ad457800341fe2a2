"""Outer-loop parallelization checked with ISL (the ``--hopt-parallel`` pass; MLIR's
``-affine-parallelize`` with ``max-nested=1``, Polly's ``-polly-parallel``).

In every scop of every function, the outermost ``affine.for`` of each nest that carries no
dependence, at most one loop deep (:data:`MAX_DEPTH`: deeper, a fork has too little work), (ISL dataflow: no RAW/WAR/WAW pair of the statements inside it is carried by its
dimension, :func:`~polyopt.schedules.dependences.is_parallel`) becomes a one-dimensional
``affine.parallel``, which the lowering runs on the OpenMP team (``--threads``); loops inside
it stay sequential.  The automatic scheduler's ``{polyopt.parallel}`` marks and user
schedules need nothing more: their loops are checked like any other.

A loop the user marks ``{polyopt.parallel}`` (a unit attribute on ``affine.for``) is an
explicit request: when it carries a dependence the pass refuses it, at the loop, naming a
violating pair, as schedules are refused::

    seidel.mlir:3:5: error: loop marked polyopt.parallel carries a RAW dependence on %arg0
      from S0[0, 1, 1] to S0[1, 1, 1]: parallel iterations would race

    affine.for %i = 0 to %n {                   affine.parallel (%i) = (0) to (symbol(%n)) {
      affine.for %j = 0 to 100 {       -->        affine.for %j = 0 to 100 {
        A[i][j] = B[i][j] * 2                       A[i][j] = B[i][j] * 2

Loops with ``iter_args`` (reductions carried in SSA values) are left sequential.  Nests the
polyhedral model cannot represent (the automatic scheduler's jammed nests carry values in
``iter_args`` between statements) are checked no further: their outermost loop marked by the
automatic scheduler in this pipeline (:func:`trust_mark`; ISL checked it when the scheduler
made it) becomes ``affine.parallel``, and any other ``polyopt.parallel`` request inside
them is refused, since it cannot be checked.
"""

from __future__ import annotations

from typing import Callable, Optional

import islpy as isl

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineParallelOp, AffineYieldOp
from ..affine.ir import Operation
from ..affine.printer import value_namer
from .auto_schedule import PARALLEL
from .dependences import Dependences, carried_at, compute_dependences, smallest_point
from .model import PolyhedralModel
from .privatize import privatizable_accesses, privatize_reductions, reductions_of
from .scops import function_scops

__all__ = ["parallelize_outer_loops", "to_affine_parallel", "trust_mark", "PARALLEL"]

Remark = Optional[Callable[[object, str], None]]

#: Loops under more sequential loops than this stay sequential: a region forked inside two
#: loops (the tiles of a triangular nest, lu's k and i) runs too little work per fork.  One
#: enclosing loop is a stencil's time loop.
MAX_DEPTH = 1

#: A Python attribute (not IR) on loops whose ``polyopt.parallel`` the scheduler proved.
_TRUSTED = "_polyopt_parallel_proved"


def trust_mark(loop: Operation) -> None:
    """Record that ``loop``'s ``polyopt.parallel`` mark was proved (by the automatic scheduler,
    with ISL) in this compilation: it holds even where the model cannot re-check it."""
    setattr(loop, _TRUSTED, True)


def parallelize_outer_loops(module: Operation, remark: Remark = None, threads: int = 1) -> int:
    """Turn the outermost dependence-free loop of every nest of ``module`` into
    ``affine.parallel`` (see the module docstring); returns how many.  Raises
    :class:`ScheduleError` at a loop marked ``polyopt.parallel`` that carries a dependence.
    With ``threads`` above one, an outermost loop that carries only sums into small arrays
    (proved by the automatic scheduler: :mod:`~polyopt.schedules.privatize`) runs in parallel
    on private copies of them."""
    count = 0
    for func in [op for op in module.walk() if op.name == "func.func"]:
        models, opaque = function_scops(func)
        private: list[AffineForOp] = []
        for op, err in _opaque_nests(func, models, opaque):
            count += _parallelize_trusted(op, err, remark, threads, private)
        for model in models:
            count += _parallelize_scop(model, remark, threads, private)
        count += _privatize(private, threads, remark)
    return count


def _opaque_nests(func: Operation, models: list, opaque: list) -> list:
    """Every top-level nest of ``func`` outside the models, with why: a run of ops whose
    extraction failed is reported by its first op only, and its other nests (the
    scheduler's marks on them) count as well."""
    errors = {id(op): err for op, err in opaque}
    modelled = {id(op) for m in models for op in m.scop_ops}
    out, err = [], None
    for op in func.regions[0].blocks[0].ops if func.regions and func.regions[0].blocks else []:
        if id(op) in errors:
            err = errors[id(op)]
            out.append((op, err))
        elif op.regions and id(op) not in modelled and err is not None:
            out.append((op, err))
    return out


def _reduction_loop(op: Operation, inside: bool, depth: int, threads: int) -> bool:
    """An outermost loop the scheduler proved to carry only sums into arrays it can copy."""
    return (isinstance(op, AffineForOp) and not inside and depth == 0 and threads > 1
            and privatizable_accesses(op, reductions_of(op), threads) is not None)


def _privatize(loops: list[AffineForOp], threads: int, remark: Remark) -> int:
    for loop in loops:
        arrays = reductions_of(loop)
        par = privatize_reductions(loop, arrays, threads)
        if remark is not None:
            namer = value_namer(par)
            names = ", ".join(namer.value_name(a) for a in arrays)
            remark(par.loc, f"outermost loop carries only sums into {names}: affine.parallel "
                            f"over {threads} threads, each summing into its own copy")
    return len(loops)


def _parallelize_trusted(top: Operation, err: ScheduleError, remark: Remark,
                         threads: int = 1, private: Optional[list] = None) -> int:
    """In a nest the model cannot represent: the outermost proved marks become
    ``affine.parallel``; an unproved request is refused with why it cannot be checked."""
    chosen: list[AffineForOp] = []

    def visit(op: Operation, inside: bool, depth: int) -> None:
        if isinstance(op, AffineParallelOp):
            inside = True
        if private is not None and PARALLEL not in op.attributes and \
                _reduction_loop(op, inside, depth, threads):
            private.append(op)
            inside = True
        if isinstance(op, AffineForOp) and PARALLEL in op.attributes:
            if not getattr(op, _TRUSTED, False):
                raise ScheduleError(f"loop marked {PARALLEL} cannot be checked: {err.message}",
                                    op.loc)
            if not inside and not op.inits and depth <= MAX_DEPTH:
                chosen.append(op)
                inside = True
        if isinstance(op, AffineForOp):
            depth += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner, inside, depth)

    visit(top, False, 0)
    for loop in chosen:
        par = to_affine_parallel(loop)
        if remark is not None:
            remark(par.loc, "outermost loop the scheduler proved parallel became "
                            "affine.parallel")
    return len(chosen)


def _parallelize_scop(model: PolyhedralModel, remark: Remark, threads: int = 1,
                      private: Optional[list] = None) -> int:
    deps = compute_dependences(model)
    chosen: list[AffineForOp] = []

    def visit(op: Operation, inside: bool, depth: int) -> None:
        if isinstance(op, AffineParallelOp):
            inside = True
        if isinstance(op, AffineForOp):
            pair = carried_pair(model, deps, op)
            if pair is not None and PARALLEL in op.attributes:
                kind, memref, src, snk = pair
                raise ScheduleError(
                    f"loop marked {PARALLEL} carries a {kind} dependence on {memref} from "
                    f"{src} to {snk}: parallel iterations would race", op.loc)
            if pair is not None and private is not None and \
                    _reduction_loop(op, inside, depth, threads):
                private.append(op)
                inside = True
            if pair is None and not inside and not op.inits and depth <= MAX_DEPTH:
                chosen.append(op)
                inside = True
            depth += 1
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    visit(inner, inside, depth)

    for top in model.scop_ops:
        visit(top, False, 0)
    for loop in chosen:
        par = to_affine_parallel(loop)
        if remark is not None:
            remark(par.loc, "outermost parallel loop of the nest (no carried dependence) "
                            "became affine.parallel")
    return len(chosen)


def carried_pair(model: PolyhedralModel, deps: Dependences, loop: AffineForOp):
    """``None`` if ``loop`` carries no dependence, else ``(kind, memref, source, sink)`` of
    the smallest carried pair (RAW first, then WAR, WAW), instances as ``S0[0, 1]``."""
    inside = [s for s in model.statements if any(l is loop for l in s.loops)]
    if not inside:
        return None
    depth = next(k for k, l in enumerate(inside[0].loops) if l is loop)
    dom = isl.UnionSet(model.param_space() + "{ }")
    for s in inside:
        dom = dom.union(isl.UnionSet.from_set(s.domain))
    if dom.is_empty():
        return None
    carried = carried_at(model, deps, 2 * depth + 1).intersect_domain(dom).intersect_range(dom)
    if carried.is_empty():
        return None
    for kind, name, pairs in deps.items():
        bad = pairs.intersect(carried)
        if bad.is_empty():
            continue
        maps: list[isl.Map] = []
        bad.foreach_map(maps.append)
        best = None
        for m in maps:
            if m.is_empty():
                continue
            nparam = m.dim(isl.dim_type.param)
            nsrc = m.dim(isl.dim_type.in_)
            coords = smallest_point(m.wrap().flatten(), nparam)[nparam:]
            key = (coords, m.get_tuple_name(isl.dim_type.in_),
                   m.get_tuple_name(isl.dim_type.out), nsrc)
            if best is None or key < best:
                best = key
        coords, src, snk, nsrc = best
        return (kind, model.describe_memref(name),
                f"{src}[{', '.join(map(str, coords[:nsrc]))}]",
                f"{snk}[{', '.join(map(str, coords[nsrc:]))}]")
    return None


def to_affine_parallel(loop: AffineForOp) -> AffineParallelOp:
    """Replace ``loop`` (without ``iter_args``) by a one-dimensional ``affine.parallel`` with
    the same bounds, step and body.  Does not check legality (:func:`carried_pair` does)."""
    if loop.inits:
        raise ValueError("to_affine_parallel: a loop with iter_args is a reduction")
    par = AffineParallelOp.build([loop.lower_map], list(loop.lower_operands), [loop.upper_map],
                                 list(loop.upper_operands), steps=[loop.step], loc=loop.loc)
    block = loop.body
    loop.induction_var.replace_all_uses_with(par.body.args[0])
    yield_ = par.body.terminator
    for op in list(block.ops):
        if isinstance(op, AffineYieldOp):
            continue
        op.detach()
        par.body.insert_before(yield_, op)
    loop.parent.insert_before(loop, par)
    loop.erase()
    return par
