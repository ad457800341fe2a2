"""Dependence checks that the affine loop utilities call back into (``polyopt.affine`` does not
import the polyhedral layer: ``unroll_jam(loop, f, check=unroll_jam_is_legal)``).

Unroll-and-jam of a loop ``L`` by ``f`` is a schedule: the iterations of ``L`` are cut into
groups of ``f`` consecutive ones, and inside a group the copies are interleaved at the innermost
level (copy ``u`` of each run of ops right after copy ``u - 1``).  For a statement ``S`` at
depth ``d`` in the model of ``L``'s nest, with ``t = (i0 - lb) / step`` the iteration number of
``L`` and original time ``[c0, i0, c1, i1, ..., cD]``:

    full group:    S[i0, ...] -> [c0, t floordiv f, 0,      c1, i1, ..., cD, t mod f]
    cleanup part:  S[i0, ...] -> [c0, t floordiv f, t mod f, c1, i1, ..., cD, 0]

(the iterations of the last, incomplete group run un-jammed in the cleanup loop).  The jam is
legal iff this schedule runs the source of every dependence (RAW, WAR, WAW, computed exactly
by ISL on the model of ``L``) before its sink -- the exact form of MLIR's
``isValidLoopInterchange``-style rule "no dependence carried by ``L`` has a negative distance in
a loop nested inside ``L``", restricted to pairs that land in the same group of ``f``.

Values flowing between statements through SSA registers are left out of the model on purpose:
they never leave one iteration of ``L`` (``L`` has no iter_args when loops are nested in it), and
in the jammed order copy ``u`` of the producing run still precedes copy ``u`` of the consumer.

    affine.for %i = 1 to 8 { affine.for %j = 0 to 7 {
      A[%i][%j] = A[%i - 1][%j + 1] }}       RAW distance (1, -1): jamming %i reverses it
"""

from __future__ import annotations

import islpy as isl

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from ..affine.loop_utils import describe_loop
from .dependences import compute_dependences, find_violation
from .model import PolyhedralModel, Statement, _Resolver, extract

__all__ = ["unroll_jam_is_legal", "unroll_jam_schedule"]


def _bound_texts(model: PolyhedralModel, loop: AffineForOp):
    """ISL terms of ``loop``'s bounds over the model's parameters (new parameters are added
    for bound operands no statement uses) and the full list of parameter names."""
    names = dict(model.param_names)
    params = list(model.params)
    resolver = _Resolver(lambda v: False, names, params)
    lbs = resolver.map(loop.lower_map, loop.lower_operands, {}, loop, "lower bound")
    ubs = resolver.map(loop.upper_map, loop.upper_operands, {}, loop, "upper bound")
    return lbs, ubs, [names[p] for p in params]


def _statement_schedule(stmt: Statement, depth: int, factor: int, step: int, lb: str,
                        ubs: list[str], space: str) -> isl.Map:
    dims = [f"i{d}" for d in range(stmt.depth)]
    rest: list[str] = []            # the original time after [c0, i0]: c1, i1, ..., cD
    for d in range(1, depth + 1):
        rest.append(str(stmt.position[d]) if d < len(stmt.position) else "0")
        if d < depth:
            rest.append(dims[d] if d < len(dims) else "0")
    c0 = str(stmt.position[0])
    tup = f"{stmt.name}[{', '.join(dims)}]"
    last = f"({lb}) + {step} * ({factor} * T + {factor - 1})"
    full = " and ".join(f"{last} < {ub}" for ub in ubs)
    tail = " or ".join(f"{last} >= {ub}" for ub in ubs)
    ident = f"i0 = ({lb}) + {step} * ({factor} * T + r) and 0 <= r < {factor}"
    text = (f"{space}{{ {tup} -> [{c0}, T, 0, {', '.join(rest + ['r'])}] : {ident} and ({full}); "
            f"{tup} -> [{c0}, T, r, {', '.join(rest + ['0'])}] : {ident} and ({tail}) }}")
    return isl.Map(text).intersect_domain(stmt.domain)


def unroll_jam_schedule(model: PolyhedralModel, loop: AffineForOp, factor: int) -> isl.UnionMap:
    """The schedule (statement instances -> time) of ``model`` after unroll-and-jam of
    ``loop`` (the outermost loop of every statement of ``model``) by ``factor``."""
    lbs, ubs, pnames = _bound_texts(model, loop)
    lb = str(lbs[0]) if len(lbs) == 1 else f"max({', '.join(map(str, lbs))})"
    ub_texts = [str(u) for u in ubs]
    space = f"[{', '.join(pnames)}] -> "
    depth = max(s.depth for s in model.statements)
    out = isl.UnionMap(space + "{ }")
    for s in model.statements:
        m = _statement_schedule(s, depth, factor, loop.step, lb, ub_texts, space)
        out = out.union(isl.UnionMap.from_map(m))
    return out


def _point(model: PolyhedralModel, stmt: Statement, coords) -> str:
    names = [model.describe_value(iv) for iv in stmt.ivs]
    if len(names) == 1:
        return f"{stmt.name} at {names[0]} = {coords[0]}"
    return f"{stmt.name} at ({', '.join(names)}) = ({', '.join(map(str, coords))})"


def unroll_jam_is_legal(loop: AffineForOp, factor: int) -> None:
    """Raise :class:`ScheduleError` (at ``loop``) unless unroll-and-jam of ``loop`` by
    ``factor`` keeps every dependence of the nest rooted at ``loop`` (see the module
    docstring); the message names the loop, the memref and a violating pair:

        cannot unroll-and-jam 'affine.for' %arg2 by 2: the jam would reverse a RAW dependence
        on %arg0 from S0 at (%arg2, %arg3) = (1, 1) to S0 at (%arg2, %arg3) = (2, 0)

    A nest the polyhedral model cannot represent (non-affine accesses, calls, iter_args, ...)
    is refused as well: legality cannot be proven.  The error carries the violation as
    ``err.violation`` when there is one."""
    if factor <= 1:
        return
    try:
        model = extract(loop, scalar_flows=True)
    except ScheduleError as err:
        raise ScheduleError(f"cannot unroll-and-jam {describe_loop(loop)} by {factor}: its "
                            f"dependences cannot be analysed: {err.message}",
                            err.loc or loop.loc) from None
    if not model.statements:
        return
    deps = compute_dependences(model)
    schedule = unroll_jam_schedule(model, loop, factor)
    v = find_violation(model, schedule, deps)
    if v is None:
        return
    src = _point(model, model.statement(v.source), v.src_point)
    snk = _point(model, model.statement(v.sink), v.sink_point)
    msg = (f"cannot unroll-and-jam {describe_loop(loop)} by {factor}: the jam would reverse a "
           f"{v.kind} dependence on {model.describe_memref(v.memref)} from {src} to {snk}")
    used = [f"{model.describe_param(p)} = {val}" for p, val in zip(v.params, v.param_values)
            if p in v.involved]
    if used:
        msg += f" (with {', '.join(used)})"
    err = ScheduleError(msg, loop.loc)
    err.violation = v
    raise err
