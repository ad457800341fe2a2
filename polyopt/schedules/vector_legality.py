"""May the iterations of a loop run in lock-step?  The ISL check that outer-loop vectorization
(:func:`polyopt.affine.vectorize.vectorize_loop`) passes as its ``check``.

Running ``W`` consecutive iterations of a loop side by side reorders the instances of different
iterations, which is legal exactly when the loop carries no dependence (MLIR's
``isLoopParallel``).  Two ways to prove it:

* the polyhedral model of the loop nest (:func:`polyopt.schedules.model.extract`) and
  :func:`polyopt.schedules.dependences.is_parallel` -- value-based flow dependences, memory-based
  anti and output dependences;
* when the model cannot represent the nest -- the scalar-replaced register tile carries its
  accumulators in ``iter_args`` around the ``k`` loop, and loads before the ``k`` loop feed it
  through SSA -- a memory-based test on the access relations of each pair of accesses to one
  memref (one of them a write): no element may be touched by two different iterations of the
  loop within one iteration of the loops around it.  Values in registers never cross
  iterations of the vectorized loop (it has no ``iter_args`` itself), so memory is all that
  matters.

Both refuse with a :class:`ScheduleError` at the loop that names the memref and a violating
pair of iterations::

    cannot vectorize the loop over %arg1: it carries a RAW dependence on %arg0 from S0[0] to
    S0[1] (iterations %arg1 = 0 and %arg1 = 1 touch the same element)
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from ..affine.affine_rules import is_pure
from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineIfOp, AffineYieldOp
from ..affine.ir import BlockArgument, Value
from ..affine.printer import Printer, value_namer
from .dependences import carried_at, compute_dependences, is_parallel, smallest_point
from .model import ACCESS_OPS, access_relation, extract

__all__ = ["check_parallel", "is_loop_parallel"]


def check_parallel(loop: AffineForOp) -> None:
    """Raise :class:`ScheduleError` unless no dependence is carried by ``loop`` (ISL, exact for
    affine accesses): the ``check`` of :func:`~polyopt.affine.vectorize.vectorize_loop`."""
    if not isinstance(loop, AffineForOp):
        raise TypeError(f"check_parallel expects an affine.for, got '{loop.name}'")
    if loop.inits:
        iv = value_namer(loop).value_name(loop.induction_var)
        raise ScheduleError(f"cannot vectorize the loop over {iv}: it carries values from one "
                            f"iteration to the next (iter_args)", loop.loc)
    try:
        model = extract(loop)
    except ScheduleError:
        model = None   # not representable (iter_args, scalar flow): memory-based test
    if model is None:
        _check_memory_based(loop)
        return
    if not model.statements:
        return
    deps = compute_dependences(model)
    if is_parallel(model, deps, loop):
        return
    carried = carried_at(model, deps, 1)   # the loop is the root: time dimension 1
    for kind, name, pairs in deps.items():
        bad = pairs.intersect(carried)
        if bad.is_empty():
            continue
        maps: list[isl.Map] = []
        bad.foreach_map(maps.append)
        m = next(x for x in maps if not x.is_empty())
        nparam = m.dim(isl.dim_type.param)
        nsrc = m.dim(isl.dim_type.in_)
        point = smallest_point(m.wrap().flatten(), nparam)
        if point is None:       # ISL found no instance to show: the plain message below
            break
        point = point[nparam:]
        src, snk = point[:nsrc], point[nsrc:]
        src_name = m.get_tuple_name(isl.dim_type.in_)
        snk_name = m.get_tuple_name(isl.dim_type.out)
        iv = model.describe_value(loop.induction_var)
        raise ScheduleError(
            f"cannot vectorize the loop over {iv}: it carries a {kind} dependence on "
            f"{model.describe_memref(name)} from {src_name}[{', '.join(map(str, src))}] to "
            f"{snk_name}[{', '.join(map(str, snk))}] (iterations {iv} = {src[0]} and {iv} = "
            f"{snk[0]} touch the same element)", loop.loc)
    raise ScheduleError(f"cannot vectorize the loop over "
                        f"{model.describe_value(loop.induction_var)}: it carries a dependence",
                        loop.loc)


def is_loop_parallel(loop: AffineForOp) -> bool:
    """Whether :func:`check_parallel` accepts ``loop``, without the violating pair its message
    shows: finding the smallest one took ISL minutes on a random nest (differential fuzz,
    seed 265000 onwards), and the scheduler asks this of every innermost loop."""
    if not isinstance(loop, AffineForOp) or loop.inits:
        return False
    try:
        model = extract(loop)
    except ScheduleError:
        model = None
    try:
        if model is None:
            _check_memory_based(loop)
            return True
        if not model.statements:
            return True
        return is_parallel(model, compute_dependences(model), loop)
    except ScheduleError:
        return False


# ---------------------------------------------------------------------------------------------
# the memory-based test (for nests the polyhedral model does not represent)


def _defined_in(v: Value, inside: set[int]) -> bool:
    owner = v.block.parent_op if isinstance(v, BlockArgument) else v.defining_op
    return owner is not None and id(owner) in inside


def _depth(loop: AffineForOp) -> int:
    """The number of affine loops around ``loop`` that ``access_relation`` counts as dims."""
    d = 0
    cur = loop.parent_op
    while isinstance(cur, (AffineForOp, AffineIfOp)):
        d += isinstance(cur, AffineForOp)
        cur = cur.parent_op
    return d


def _check_memory_based(loop: AffineForOp) -> None:
    ops = [op for op in loop.walk() if op is not loop]
    inside = {id(op) for op in ops} | {id(loop)}
    names: Optional[Printer] = None
    accesses = []
    for op in ops:
        if isinstance(op, ACCESS_OPS):
            if not _defined_in(op.memref, inside):    # allocated per iteration: private
                accesses.append(op)
        elif not (isinstance(op, (AffineForOp, AffineIfOp, AffineYieldOp)) or is_pure(op)):
            raise ScheduleError(f"cannot prove the iterations of the loop independent: '{op.name}' "
                                f"op has memory effects the analysis does not model", op.loc)
    depth = _depth(loop)
    param_ids: dict[Value, str] = {}
    relations = {}
    for op in accesses:
        oa = access_relation(op)
        rel = oa.relation
        for k in range(rel.dim(isl.dim_type.param)):
            v = oa.params[k]
            rel = rel.set_dim_name(isl.dim_type.param, k,
                                   param_ids.setdefault(v, f"q{len(param_ids)}"))
        relations[id(op)] = rel
    writes = {id(op) for op in accesses if getattr(op, "IS_STORE", False)}
    for a in accesses:
        if id(a) not in writes:
            continue
        for b in accesses:
            if b.memref is not a.memref:
                continue
            ra = relations[id(a)].set_tuple_name(isl.dim_type.in_, "A")
            rb = relations[id(b)].set_tuple_name(isl.dim_type.in_, "B")
            same = ra.apply_range(rb.reverse())          # { A[x] -> B[y] : same element }
            na, nb = same.dim(isl.dim_type.in_), same.dim(isl.dim_type.out)
            space = same.get_space()
            params = [space.get_dim_name(isl.dim_type.param, k)
                      for k in range(space.dim(isl.dim_type.param))]
            xs = [f"x{k}" for k in range(na)]
            ys = [f"y{k}" for k in range(nb)]
            cons = [f"x{k} = y{k}" for k in range(depth)]
            cons.append(f"(x{depth} < y{depth} or x{depth} > y{depth})")
            other = isl.Map(f"[{', '.join(params)}] -> {{ A[{', '.join(xs)}] -> "
                            f"B[{', '.join(ys)}] : {' and '.join(cons)} }}")
            bad = same.intersect(other)
            if bad.is_empty():
                continue
            names = names or value_namer(loop)
            nparam = bad.dim(isl.dim_type.param)
            point = smallest_point(bad.wrap().flatten(), nparam)[nparam:]
            iv = names.value_name(loop.induction_var)
            kind = "writes" if id(b) in writes else "reads"
            raise ScheduleError(
                f"cannot vectorize the loop over {iv}: '{a.name}' writes "
                f"{names.value_name(a.memref)} in iteration {iv} = {point[depth]} and '{b.name}' "
                f"{kind} the same element in iteration {iv} = {point[na + depth]}", b.loc)
