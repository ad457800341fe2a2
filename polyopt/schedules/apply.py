"""Applying a schedule to an affine scop: statement schedules given as affine maps over the
statement's loop IVs, checked against the dependences, turned into new loops through ISL's AST
generator (the paper's HOP approach, section 2.5).

    apply_schedule(func, {"S0": "(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)"})

      affine.for %i = 0 to 2088 {         affine.for %arg3 = 0 to 8 {
        affine.for %j = 0 to 2048 {         affine.for %arg4 = 0 to 33 {
          affine.for %k = 0 to 2048 {  ->     affine.for %arg5 = 0 to 2048 {
            S0(%i, %j, %k)                      affine.for %arg6 = #map(%arg4) to min #map1(%arg4) {
                                                  affine.for %arg7 = 0 to 256 {
                                                    S0(%arg6, %arg5, %arg3 * 256 + %arg7)

A schedule maps the statement's domain dims (``d0`` = the outermost enclosing loop's IV) to a
time vector; instances run in the lexicographic order of their times.  How the schedules of
several statements combine (:func:`build_schedule`):

* statements without a schedule keep their original 2d+1 schedule ``[c0, i0, c1, i1, ..]``;
* time vectors of different lengths are padded with zeros;
* when the statements come from several top-level ops of the scop (two nests of a 2mm), their
  original top-level position is prepended as the outermost time dimension, so the nests stay
  in textual order (``keep_nest_order=False`` compares the given times directly, e.g. to fuse);
* instances that the schedule gives the same time run in their original order (the original
  schedule is appended as a tie-breaker when the schedule is not injective).
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Optional, Sequence, Union

import islpy as isl

from ..affine.affine_expr import AffineExpr, AffineExprKind, AffineMap, AffineParseError, \
    parse_affine_map
from ..affine.builder import Builder
from ..affine.diagnostics import Location, ScheduleError
from ..affine.ir import Block, Operation
from .ast_to_affine import AffineGenerator
from .model import PolyhedralModel, Statement, extract

__all__ = ["apply_schedule", "build_schedule", "schedule_map_to_isl", "parse_schedule_map",
           "parse_schedule_option", "validate_schedule_map"]

ScheduleLike = Union[AffineMap, str]
_K = AffineExprKind
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------------------------
# schedule text


def parse_schedule_map(text: str, loc: Optional[Location] = None) -> AffineMap:
    """``affine_map<(d0, d1, d2) -> (d2 floordiv 256, d0, d1)>`` or the 2020 bare form
    ``(d0, d1, d2) -> (...)``; a malformed map raises :class:`ScheduleError` at ``loc``."""
    try:
        return parse_affine_map(text.strip())
    except AffineParseError as err:
        raise ScheduleError(f"invalid schedule map '{text.strip()}': {err.message} "
                            f"(column {err.column})", loc) from None


def parse_schedule_option(text: Union[str, Sequence[str]]) -> dict[str, AffineMap]:
    """The value(s) of ``polyopt opt --schedule``: ``'S0=(d0, d1) -> (d1, d0)'``; several
    ``NAME=MAP`` items may be given as a list or separated by ``;``.  Returns name -> map;
    malformed items and duplicate names raise :class:`ScheduleError`."""
    items = [text] if isinstance(text, str) else list(text)
    out: dict[str, AffineMap] = {}
    for item in items:
        for part in item.split(";"):
            if not part.strip():
                continue
            name, eq, body = part.partition("=")
            name = name.strip()
            if not eq or not _NAME_RE.match(name):
                raise ScheduleError(f"--schedule expects NAME=MAP (e.g. 'S0=(d0, d1) -> (d1, "
                                    f"d0)'), got '{part.strip()}'")
            if name in out:
                raise ScheduleError(f"--schedule: statement {name} is given two schedules")
            out[name] = parse_schedule_map(body)
    return out


# ---------------------------------------------------------------------------------------------
# statement schedules -> ISL


def _divisors_ok(e: AffineExpr) -> Optional[AffineExpr]:
    """The first floordiv/ceildiv/mod sub-expression whose divisor is not a positive constant."""
    for sub in e.walk():
        if sub.kind in (_K.FLOORDIV, _K.CEILDIV, _K.MOD):
            if sub.rhs.kind is not _K.CONSTANT or sub.rhs.value <= 0:
                return sub
    return None


def validate_schedule_map(stmt: Statement, amap: AffineMap) -> None:
    """Raise :class:`ScheduleError` at ``stmt`` unless ``amap`` is a schedule for it: one dim
    per enclosing loop, no symbols, pure affine results (floordiv/ceildiv/mod by positive
    constants)."""
    depth = len(stmt.ivs)
    if amap.num_dims != depth:
        want = "()" if depth == 0 else f"({', '.join(f'd{k}' for k in range(depth))})"
        raise ScheduleError(f"schedule {amap} for {stmt.name} has {amap.num_dims} dims, but "
                            f"{stmt.name} is nested in {depth} loop(s): expected {want} -> (...)",
                            stmt.loc)
    if amap.num_symbols:
        raise ScheduleError(f"schedule {amap} for {stmt.name} must not use symbols", stmt.loc)
    for k, r in enumerate(amap.results):
        bad = _divisors_ok(r)
        if not r.is_pure_affine() or bad is not None:
            why = f" ('{bad}' divides by a non-positive or non-constant)" if bad is not None \
                else ""
            raise ScheduleError(f"schedule {amap} for {stmt.name}: result #{k} '{r}' is not "
                                f"affine{why}", stmt.loc)


def _isl_expr(e: AffineExpr, names: Sequence[str]) -> str:
    k = e.kind
    if k is _K.CONSTANT:
        return str(e.value)
    if k is _K.DIM:
        return names[e.position]
    a, b = _isl_expr(e.lhs, names), _isl_expr(e.rhs, names)
    if k is _K.ADD:
        return f"({a} + {b})"
    if k is _K.MUL:      # ISL wants the constant factor first and bare
        return f"({b} * {a})" if e.rhs.kind is _K.CONSTANT else f"({a} * {b})"
    if k is _K.FLOORDIV:
        return f"floor({a} / {b})"
    if k is _K.CEILDIV:
        return f"ceil({a} / {b})"
    if k is _K.MOD:
        return f"({a} mod {b})"
    raise ValueError(f"unexpected expression {e}")


def _params_text(s: isl.Set) -> str:
    n = s.dim(isl.dim_type.param)
    return ", ".join(s.get_dim_name(isl.dim_type.param, k) for k in range(n))


def schedule_map_to_isl(stmt: Statement, amap: AffineMap) -> isl.Map:
    """``amap`` over ``stmt``'s domain dims as an ISL map restricted to the domain, in the
    domain's parameter space: ``(d0, d1, d2) -> (d2 floordiv 256, d0)`` for ``S0`` becomes
    ``{ S0[i0, i1, i2] -> [floor(i2/256), i0] }`` (floordiv/ceildiv/mod become ISL floor
    expressions).  Validates the map first (:func:`validate_schedule_map`)."""
    validate_schedule_map(stmt, amap)
    names = [f"i{k}" for k in range(amap.num_dims)]
    results = ", ".join(_isl_expr(r, names) for r in amap.results)
    tup = stmt.domain.get_tuple_name()
    text = f"[{_params_text(stmt.domain)}] -> {{ {tup}[{', '.join(names)}] -> [{results}] }}"
    return isl.Map(text).intersect_domain(stmt.domain)


def _top_position(model: PolyhedralModel, stmt: Statement) -> int:
    """Index in ``model.scop_ops`` of the top-level op holding ``stmt``."""
    tops = {id(op): k for k, op in enumerate(model.scop_ops)}
    cur = stmt.group[0] if getattr(stmt, "group", None) else stmt.ops[-1]
    while cur is not None and id(cur) not in tops:
        cur = cur.parent_op
    if cur is None:
        raise ScheduleError(f"statement {stmt.name} is not inside the scop", stmt.loc)
    return tops[id(cur)]


def _pad(m: isl.Map, length: int) -> isl.Map:
    n = m.dim(isl.dim_type.out)
    if n < length:
        m = m.add_dims(isl.dim_type.out, length - n)
        for k in range(n, length):
            m = m.fix_val(isl.dim_type.out, k, 0)
    if m.has_tuple_id(isl.dim_type.out):
        m = m.reset_tuple_id(isl.dim_type.out)
    return m


def _as_map(value: ScheduleLike, stmt: Statement) -> AffineMap:
    if isinstance(value, AffineMap):
        return value
    if isinstance(value, str):
        return parse_schedule_map(value, stmt.loc)
    raise TypeError(f"schedule for {stmt.name} must be an AffineMap or map text, got "
                    f"{type(value).__name__}")


def build_schedule(model: PolyhedralModel, schedules: Mapping[str, ScheduleLike], *,
                   keep_nest_order: bool = True) -> isl.UnionMap:
    """The combined schedule of all of ``model``'s statements (see the module docstring):
    given maps validated and converted, others original, padded to one length, the top-level
    position prepended when the statements span several top-level ops, and the original order
    appended as a tie-breaker when the result is not injective."""
    known = {s.name for s in model.statements}
    for name in schedules:
        if name not in known:
            loc = model.scop_ops[0].loc if model.scop_ops else None
            raise ScheduleError(f"schedule given for unknown statement {name} (the scop has "
                                f"{', '.join(s.name for s in model.statements) or 'none'})", loc)
    maps: dict[str, isl.Map] = {}
    for s in model.statements:
        if s.name in schedules:
            maps[s.name] = schedule_map_to_isl(s, _as_map(schedules[s.name], s))
        else:
            maps[s.name] = s.schedule.intersect_domain(s.domain)
    tops = {s.name: _top_position(model, s) for s in model.statements}
    prefix = keep_nest_order and len(set(tops.values())) > 1
    length = max((m.dim(isl.dim_type.out) for m in maps.values()), default=0)
    space = f"[{', '.join(model.param_names[p] for p in model.params)}] -> "
    out = isl.UnionMap(space + "{ }")
    for s in model.statements:
        m = _pad(maps[s.name], length)
        if prefix:
            m = m.insert_dims(isl.dim_type.out, 0, 1).fix_val(isl.dim_type.out, 0, tops[s.name])
        maps[s.name] = m
        out = out.union(isl.UnionMap.from_map(m))
    if not out.is_injective():
        orig_len = max((s.schedule.dim(isl.dim_type.out) for s in model.statements), default=0)
        out = isl.UnionMap(space + "{ }")
        for s in model.statements:
            tie = _pad(s.schedule.intersect_domain(s.domain), orig_len)
            out = out.union(isl.UnionMap.from_map(maps[s.name].flat_range_product(tie)))
    return out


# ---------------------------------------------------------------------------------------------
# the transformation


def apply_schedule(root: Operation, schedules: Mapping[str, ScheduleLike], *, check: bool = True,
                   keep_nest_order: bool = True, normalize: bool = True,
                   remark: Optional[Callable[[object, str], None]] = None) -> list[Operation]:
    """Reschedule the affine scops of ``root`` (a ``func.func``: its body's nests; or a single
    top-level ``affine.for`` nest) and replace their ops by the generated loops; returns the
    new top-level ops.

    ``schedules`` maps statement names (``"S0"``, in textual order, see
    :func:`polyopt.schedules.model.extract`) to an :class:`AffineMap` or its text (modern
    ``affine_map<(d0, d1, d2) -> (...)>`` or the 2020 bare ``(d0, d1, d2) -> (...)``) over the
    statement's enclosing loop IVs, outermost first.  With ``check`` (the default) the new
    schedule must respect every dependence; the check, like every other validation, happens
    before the IR is touched, so a :class:`ScheduleError` leaves it unchanged.
    ``keep_nest_order``/``normalize``: see :func:`build_schedule` and
    :func:`~polyopt.schedules.ast_to_affine.generate_affine`.

    In a function, nests the model cannot represent (``scf`` loops, calls...) are left alone
    and split it into scops (:func:`polyopt.schedules.scops.function_scops`); ``remark``
    hears about them, and about schedules naming statements that may be inside them (which
    are then not applied).  Scops that no schedule names are not regenerated.

        apply_schedule(f, {"S0": "(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)"})
    """
    opaque: list = []
    if root.name == "func.func":
        from .scops import function_scops
        models, opaque = function_scops(root, remark)
        if not models and not opaque:
            extract(root)   # raises: the function has no affine loop nest to model
    else:
        models = [extract([root])]
    owner = {s.name: m for m in models for s in m.statements}
    for name in schedules:
        if name in owner:
            continue
        loc = models[0].scop_ops[0].loc if models else root.loc
        if not opaque:
            raise ScheduleError(f"schedule given for unknown statement {name} (the scop has "
                                f"{', '.join(owner) or 'none'})", loc)
        if remark is not None:
            remark(loc, f"schedule for {name} not applied: no statement {name} outside the "
                        f"nests left alone (statements: {', '.join(owner) or 'none'})")
    plans = []
    for model in models:
        mine = {n: v for n, v in schedules.items() if owner.get(n) is model}
        if not mine:
            continue
        schedule = build_schedule(model, mine, keep_nest_order=keep_nest_order)
        if check:
            from .dependences import check_legality, compute_dependences
            check_legality(model, schedule, compute_dependences(model))
        plans.append((model, schedule))
    new_ops: list[Operation] = []
    for model, schedule in plans:
        new_ops += _generate(model, schedule, normalize)
    return new_ops


def _generate(model: PolyhedralModel, schedule: isl.UnionMap, normalize: bool
              ) -> list[Operation]:
    """Replace ``model``'s ops by the loops ``schedule`` generates; returns them."""
    # generate into a detached block: a failure leaves the function untouched
    scratch = Block()
    gen = AffineGenerator(model)
    try:
        new_ops = gen.generate(schedule, Builder.at_end(scratch), normalize=normalize)
        replacements = _outside_uses(model, gen)
    except Exception:
        for op in reversed(list(scratch.ops)):
            op.erase()
        raise
    anchor = model.scop_ops[0]
    for op in new_ops:
        op.detach()
        anchor.parent.insert_before(anchor, op)
    for old, new in replacements:
        old.replace_all_uses_with(new)
    for op in reversed(model.scop_ops):
        op.erase()
    return new_ops


def _outside_uses(model: PolyhedralModel, gen: AffineGenerator) -> list:
    """(old, new) for values of the scop used after it, mapped to their top-level clones."""
    inside = {id(op) for top in model.scop_ops for op in top.walk()}
    out = []
    for top in model.scop_ops:
        for r in top.results:
            if any(id(u.op) not in inside for u in r.uses):
                new = gen.lookup(r)
                if new is None:
                    raise ScheduleError(f"'{top.name}' op result is used after the scop, but the "
                                        f"new schedule does not compute it at the top level",
                                        top.loc)
                out.append((r, new))
    return out
