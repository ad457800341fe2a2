"""ISL AST -> affine loops: the code-generation half of the paper's HOP approach (section 2.5).

    schedule { S0[i, j, k] -> [k/256, i/64, j, i, k] }  over the naive matmul nest
      --ISL AST build-->
    for (c0 = 0; c0 <= 7; c0++) for (c1 = 0; c1 <= 32; c1++) for (c2 = 0; c2 <= 2047; c2++)
      for (c3 = 64*c1; c3 <= min(2087, 64*c1 + 63); c3++)
        for (c4 = 256*c0; c4 <= 256*c0 + 255; c4++)
          S0(c3, c2, c4);
      --generate_affine-->
    affine.for %arg3 = 0 to 8 {
      affine.for %arg4 = 0 to 33 {
        affine.for %arg5 = 0 to 2048 {
          affine.for %arg6 = #map(%arg4) to min #map1(%arg4) {      // d0 * 64, (2088, d0 * 64 + 64)
            affine.for %arg7 = 0 to 256 {
              %0 = affine.load %arg0[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
              ...

``for`` nodes become ``affine.for`` (a ``max`` lower bound when the init is a max, the conjuncts
and ``min`` operands of the condition as the results of the exclusive upper bound map), ``if``
nodes ``affine.if`` (a disjunction becomes a chain of ifs that repeats the then-branch), ``user``
nodes clones of the statement's ops with the domain dimensions replaced by the AST's argument
expressions, folded into the maps of the affine ops that use them (other uses of an IV get an
``affine.apply``).  A select ``c ? a : b`` among the expressions of a node (ISL writes one for
the value of a degenerate loop when that value is piecewise, e.g. the index of a tile) has no
affine form: the node is generated twice, with ``a`` under ``affine.if c`` and with ``b`` in its
else-branch (where Polly emits an LLVM ``select``, the affine dialect needs control flow):

    for (c1 = 0; c1 <= 5; c1++) {               affine.for %arg3 = 0 to 6 {
      int c2 = c1 <= 4 ? 0 : 1;          -->      affine.if #set(%arg3) {           // -d0 + 4 >= 0
      for (c3 = 2 * c1; ...)                        ...  S0 with c2 = 0
        for (c4 = max(5 * c2, c3 - 5); ...)       } else {
          S0(c4, c3 - c4, ...);                     ...  S0 with c2 = 1

The generated nest is then cleaned up by the utilities below, each named after its MLIR
counterpart: :func:`drop_redundant_bounds`, :func:`promote_if_single_iteration`,
:func:`normalize_loop` (for loops with a constant trip count and a non-constant lower bound, as
in the paper's listings: ``0 to 256`` with ``%arg3 * 256 + %arg7`` subscripts) and
:func:`remove_empty_loops`.

Expressions are kept as affine expressions over *atoms*: ``d<k>`` stands for the k-th value of a
table (generated IVs, parameters, other values), and every expression is brought to a canonical
linear form (:func:`canonicalize_expr`) before it is turned into a map with compact operands.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Mapping, Optional, Sequence

import islpy as isl

from ..affine.affine_expr import AffineExpr, AffineExprKind, AffineMap, IntegerSet, constant, \
    dim, symbol
from ..affine.affine_rules import is_constant_like, is_pure
from ..affine.attributes import IntegerSetAttr
from ..affine.builder import Builder
from ..affine.diagnostics import Location, ScheduleError
from ..affine.dialects.affine import (AffineApplyOp, AffineForOp, AffineIfOp, AffineLoadOp,
                                      AffineMaxOp, AffineMinOp, AffineStoreOp,
                                      AffineVectorLoadOp, AffineVectorStoreOp)
from ..affine.ir import Block, Operation, Value
from ..affine.value_table import export_map
from ..affine.linear_form import (add_forms, constant_of, floordiv_form, is_constant_form,
                                   mod_form, scale_form)

__all__ = [
    "generate_affine", "build_ast", "AffineGenerator", "canonicalize_expr",
    "drop_redundant_bounds", "promote_if_single_iteration", "normalize_loop",
    "remove_empty_loops", "constant_trip_count", "replace_index_value", "simplify_generated",
]

_K = AffineExprKind
_MAP_OPS = (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp, AffineApplyOp,
            AffineMinOp, AffineMaxOp)
_T = isl.ast_expr_op_type

# ISL AST build options (context-wide, so they are set around each build and restored):
# conditions without disjunctions (ISL splits the code instead), min/max detected, bounds of
# nested loops exploited, ``else`` branches allowed, atomic upper bounds (one loop with a
# ``min`` rather than a full/partial tile split: the partial-tile strategy belongs to later
# passes).
_AST_OPTIONS = {
    "ast_build_allow_or": 0,
    "ast_build_allow_else": 1,
    "ast_build_detect_min_max": 1,
    "ast_build_exploit_nested_bounds": 1,
    "ast_build_atomic_upper_bound": 1,
    "ast_build_scale_strides": 1,
    "ast_build_prefer_pdiv": 1,
}


# ---------------------------------------------------------------------------------------------
# canonical linear forms of affine expressions


_is_const = is_constant_form
_cval = constant_of
_add_lin = add_forms
_scale_lin = scale_form


def _term(e: AffineExpr) -> dict:
    """A non-linear sub-expression kept as one opaque term."""
    if e.kind is _K.CONSTANT:
        return {None: e.value} if e.value else {}
    if e.kind in (_K.DIM, _K.SYMBOL):
        return _lin(e)
    return {e: 1}


def _floordiv_lin(lin: dict, q: int) -> dict:
    return floordiv_form(lin, q, lambda rest, d: _term(_unlin(rest).floordiv(d)))


def _mod_lin(lin: dict, q: int) -> dict:
    return mod_form(lin, q, lambda rest, d: _term(_unlin(rest).mod(d)))


def _lin(e: AffineExpr) -> dict:
    """``e`` as {term: coefficient} (``None`` is the constant term); floordiv/mod pull out the
    multiples of the divisor and stay opaque terms otherwise."""
    k = e.kind
    if k is _K.CONSTANT:
        return {None: e.value} if e.value else {}
    if k is _K.DIM:
        return {("d", e.position): 1}
    if k is _K.SYMBOL:
        return {("s", e.position): 1}
    lhs, rhs = _lin(e.lhs), _lin(e.rhs)
    if k is _K.ADD:
        return _add_lin(lhs, rhs)
    if k is _K.MUL:
        if _is_const(rhs):
            return _scale_lin(lhs, _cval(rhs))
        if _is_const(lhs):
            return _scale_lin(rhs, _cval(lhs))
        return {_unlin(lhs) * _unlin(rhs): 1}
    if not _is_const(rhs) or _cval(rhs) <= 0:
        a, b = _unlin(lhs), _unlin(rhs)
        return {a.floordiv(b) if k is _K.FLOORDIV else a.ceildiv(b) if k is _K.CEILDIV
                else a.mod(b): 1}
    q = _cval(rhs)
    if _is_const(lhs):
        v = _cval(lhs)
        r = v // q if k is _K.FLOORDIV else -((-v) // q) if k is _K.CEILDIV else v % q
        return {None: r} if r else {}
    if k is _K.FLOORDIV:
        return _floordiv_lin(lhs, q)
    if k is _K.CEILDIV:          # ceil(x / q) = -floor(-x / q)
        return _scale_lin(_floordiv_lin(_scale_lin(lhs, -1), q), -1)
    return _mod_lin(lhs, q)


def _key_order(k) -> tuple:
    if isinstance(k, tuple):
        return (0 if k[0] == "d" else 1, k[1], "")
    used = k.used_dims()
    return (2, min(used) if used else 1 << 30, str(k))


def _unlin(lin: dict) -> AffineExpr:
    """Rebuild ``d0 * a + d1 * b + ... + s0 * c + terms + const`` (dims, then symbols, by
    position)."""
    out: Optional[AffineExpr] = None
    for k in sorted((k for k in lin if k is not None), key=_key_order):
        c = lin[k]
        base = dim(k[1]) if isinstance(k, tuple) and k[0] == "d" else \
            symbol(k[1]) if isinstance(k, tuple) else k
        t = base if c == 1 else base * c
        out = t if out is None else out + t
    c = _cval(lin)
    if out is None:
        return constant(c)
    return out + c if c else out


def canonicalize_expr(e: AffineExpr) -> AffineExpr:
    """``e`` in canonical linear form: ``d0 * 256 + d1`` for ``d1 + (d0 * 64) * 4``, constant
    multiples pulled out of floordiv/mod (``(d0 * 4 + d1) floordiv 4 -> d0 + d1 floordiv 4``),
    constants folded.  Equal linear forms give equal expressions."""
    return _unlin(_lin(e))


# ---------------------------------------------------------------------------------------------
# values as the dims of "global" expressions


class _Atoms:
    """A table of SSA values; ``dim(k)`` in a global expression stands for ``values[k]``.
    Values only ever used as symbols become map symbols when exported, the others map dims."""

    def __init__(self):
        self.values: list = []
        self.index: dict = {}
        self.symbolic: list[bool] = []

    def add(self, v, symbolic: bool = False) -> AffineExpr:
        k = self.index.get(v)
        if k is None:
            k = len(self.values)
            self.values.append(v)
            self.index[v] = k
            self.symbolic.append(symbolic)
        elif not symbolic:
            self.symbolic[k] = False
        return dim(k)

    def rebind(self, k: int, v: Value) -> None:
        """Replace the placeholder at position ``k`` by the value ``v``."""
        old = self.values[k]
        self.index.pop(old, None)
        self.values[k] = v
        self.index[v] = k

    def import_exprs(self, amap, operands: Sequence[Value],
                     subst: Optional[dict] = None) -> list[AffineExpr]:
        """The results of ``amap`` (an AffineMap or IntegerSet) applied to ``operands`` as
        global expressions; operands in ``subst`` are replaced by its global expressions."""
        subst = subst or {}
        nd = amap.num_dims
        args = [subst[v] if v in subst else self.add(v, i >= nd) for i, v in enumerate(operands)]
        results = amap.results if isinstance(amap, AffineMap) else amap.constraints
        return [canonicalize_expr(r.replace(args[:nd], args[nd:])) for r in results]

    def export(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[Value]]:
        """A map with compact operands (dims in table order, then symbols) for ``exprs``."""
        return export_map(exprs, self.values, self.symbolic, canonicalize_expr)


def _map_users_rewrite(op: Operation, value: Value, repl: tuple[AffineMap, Sequence[Value]]) \
        -> bool:
    """Rewrite the affine map(s) of ``op`` so that operand ``value`` becomes ``repl``'s single
    result; ``False`` when ``op`` is not an op with affine maps."""
    rmap, rops = repl

    def rewrite(amap, operands):
        atoms = _Atoms()
        r = atoms.import_exprs(rmap, rops)[0]
        exprs = atoms.import_exprs(amap, operands, {value: r})
        return atoms.export(exprs)

    if isinstance(op, _MAP_OPS):
        op.set_map(*rewrite(op.map, op.map_operands))
        return True
    if isinstance(op, AffineForOp):
        if value in op.inits:
            return False
        if value in op.lower_operands:
            op.set_lower_bound(*rewrite(op.lower_map, op.lower_operands))
        if value in op.upper_operands:
            op.set_upper_bound(*rewrite(op.upper_map, op.upper_operands))
        return True
    if isinstance(op, AffineIfOp):
        cond = op.condition
        m, ops = rewrite(cond, op.cond_operands)
        op.attributes["condition"] = IntegerSetAttr(
            IntegerSet(m.num_dims, m.num_symbols, m.results, cond.eq_flags))
        op.set_operands(ops)
        return True
    return False


def replace_index_value(value: Value, amap: AffineMap, operands: Sequence[Value],
                        apply_builder: Callable[[], Builder]) -> None:
    """Replace every use of the index ``value`` by ``amap(operands)`` (one result): composed
    into the maps of affine users (loads, stores, applies, loop bounds, if conditions); other
    users read one ``affine.apply`` created with ``apply_builder()`` (MLIR's
    ``replaceAllUsesWith`` + ``canonicalizeMapAndOperands``)."""
    applied: Optional[Value] = None
    if amap.num_results == 1 and amap.results[0].kind in (_K.DIM, _K.SYMBOL):
        pos = amap.results[0].position + (amap.num_dims if amap.results[0].kind is _K.SYMBOL
                                          else 0)
        applied = operands[pos]     # a bare operand: non-affine users read it directly
    users: list[Operation] = []
    for use in value.uses:          # each user once: ``operands`` may contain ``value`` itself
        if not any(u is use.op for u in users):
            users.append(use.op)
    for user in users:
        if _map_users_rewrite(user, value, (amap, operands)):
            continue
        if applied is None:
            applied = apply_builder().create(AffineApplyOp.build, amap, list(operands),
                                             loc=user.loc).result
        for i, v in enumerate(user.operands):
            if v is value:
                user.set_operand(i, applied)


# ---------------------------------------------------------------------------------------------
# loop utilities (post-processing of the generated nest)


def _bounds(loop: AffineForOp, atoms: _Atoms) -> tuple[list[AffineExpr], list[AffineExpr]]:
    return (atoms.import_exprs(loop.lower_map, loop.lower_operands),
            atoms.import_exprs(loop.upper_map, loop.upper_operands))


def constant_trip_count(loop: AffineForOp) -> Optional[int]:
    """MLIR's ``getConstantTripCount``: the trip count when the (single-result) bounds differ
    by a constant, else ``None``."""
    atoms = _Atoms()
    lbs, ubs = _bounds(loop, atoms)
    if len(lbs) != 1 or len(ubs) != 1:
        return None
    diff = _lin(ubs[0] - lbs[0])
    if not _is_const(diff):
        return None
    return max(0, -(-_cval(diff) // loop.step))


def promote_if_single_iteration(loop: AffineForOp) -> bool:
    """MLIR's ``promoteIfSingleIteration``: a loop that runs exactly once is replaced by its
    body, its IV by the lower bound (folded into affine users, an ``affine.apply`` for others),
    its iter_args by the inits and its results by the yielded values.

        affine.for %j = %i to %i + 1 { S(%j) }   ->   S(%i)
    """
    if constant_trip_count(loop) != 1:
        return False
    block = loop.body
    replace_index_value(loop.induction_var, loop.lower_map, loop.lower_operands,
                        lambda: Builder.before(loop))
    for arg, init in zip(loop.region_iter_args, loop.inits):
        arg.replace_all_uses_with(init)
    yielded = list(block.terminator.operands) if block.terminator is not None else []
    for res, v in zip(loop.results, yielded):
        res.replace_all_uses_with(v)
    for op in list(block.ops[:-1]):
        op.move_before(loop)
    loop.erase()
    return True


def normalize_loop(loop: AffineForOp) -> bool:
    """MLIR's ``normalizeAffineFor``: rewrite ``for %i = lb to ub step s`` (single-result
    ``lb``) as ``for %t = 0 to (ub - lb) ceildiv s`` with ``%i = lb + %t * s`` folded into the
    users.  Returns ``False`` when the loop is already normalized or has a ``max`` bound.

        affine.for %k = #map(%c) to #map1(%c) { A[%k] }   // c * 256 to c * 256 + 256
          ->  affine.for %t = 0 to 256 { A[%c * 256 + %t] }
    """
    if loop.lower_map.num_results != 1:
        return False
    if loop.has_constant_lower_bound and loop.constant_lower_bound == 0 and loop.step == 1:
        return False
    step = loop.step
    atoms = _Atoms()
    lbs, ubs = _bounds(loop, atoms)
    lb = lbs[0]
    iv = loop.induction_var
    t = atoms.add(iv)
    new_iv = canonicalize_expr(lb + t * step)
    m, ops = atoms.export([new_iv])
    new_ub = [canonicalize_expr((u - lb).ceildiv(step)) for u in ubs]
    ub_map, ub_ops = atoms.export(new_ub)
    replace_index_value(iv, m, ops, lambda: Builder.at_start(loop.body))
    loop.set_lower_bound(AffineMap.constant_map(0), [])
    loop.set_upper_bound(ub_map, ub_ops)
    loop.set_step(1)
    return True


def _isl_text(e: AffineExpr) -> Optional[str]:
    """``e`` (dims only) in ISL syntax (dims are ``a<k>``); ``None`` if not quasi-affine."""
    k = e.kind
    if k is _K.CONSTANT:
        return str(e.value)
    if k is _K.DIM:
        return f"a{e.position}"
    if k is _K.SYMBOL:
        return None
    a, b = _isl_text(e.lhs), _isl_text(e.rhs)
    if a is None or b is None:
        return None
    if k is _K.ADD:
        return f"({a} + {b})"
    if k is _K.MUL:
        if e.rhs.kind is _K.CONSTANT:       # ISL wants the constant factor first and bare
            return f"({b} * {a})"
        if e.lhs.kind is _K.CONSTANT:
            return f"({a} * {b})"
        return None
    if e.rhs.kind is not _K.CONSTANT or e.rhs.value <= 0:
        return None
    if k is _K.FLOORDIV:
        return f"floor({a} / {b})"
    if k is _K.CEILDIV:
        return f"ceil({a} / {b})"
    return f"({a} mod {b})"


def _enclosing_constraints(op: Operation, atoms: _Atoms) -> Optional[list[str]]:
    """ISL constraints (over atoms ``a<k>``) known at ``op`` from the enclosing ``affine.for``
    bounds and ``affine.if`` then-branches (steps and else-branches are over-approximated)."""
    cons: list[str] = []
    cur = op
    while cur.parent is not None and cur.parent_op is not None:
        block = cur.parent
        parent = cur.parent_op
        if isinstance(parent, AffineForOp):
            iv = _isl_text(atoms.add(parent.induction_var))
            lbs, ubs = _bounds(parent, atoms)
            for lb in lbs:
                t = _isl_text(lb)
                if t is not None:
                    cons.append(f"{iv} >= {t}")
            for ub in ubs:
                t = _isl_text(ub)
                if t is not None:
                    cons.append(f"{iv} < {t}")
        elif isinstance(parent, AffineIfOp) and block is parent.then_block:
            cond = parent.condition
            for c, eq in zip(atoms.import_exprs(cond, parent.cond_operands), cond.eq_flags):
                t = _isl_text(c)
                if t is not None:
                    cons.append(f"{t} {'=' if eq else '>='} 0")
        cur = parent
    return cons


def _isl_set(n: int, cons: Sequence[str]) -> isl.Set:
    names = ", ".join(f"a{k}" for k in range(n))
    body = " and ".join(cons) if cons else ""
    return isl.Set(f"{{ [{names}] : {body} }}" if body else f"{{ [{names}] }}")


def _redundant_results(exprs: list[AffineExpr], n_atoms: int, cons: list[str],
                       upper: bool) -> list[int]:
    """Indices of ``min`` (``upper``) / ``max`` results implied by the others under ``cons``."""
    texts = [_isl_text(e) for e in exprs]
    keep = list(range(len(exprs)))
    for i in range(len(exprs)):
        if len(keep) == 1 or texts[i] is None:
            continue
        others = [j for j in keep if j != i and texts[j] is not None]
        if not others:
            continue
        # result i matters iff at some point it is strictly tighter than every other one
        cmp = "<" if upper else ">"
        extra = [f"{texts[i]} {cmp} {texts[j]}" for j in others]
        if _is_empty(n_atoms, tuple(cons + extra)):
            keep.remove(i)
    return [i for i in range(len(exprs)) if i not in keep]


#: Whether ``_isl_set(n, cons)`` is empty, by ``(n, cons)``: the same bounds are simplified
#: again for every pipeline a nest goes through (each flag set, each thread count), and
#: reading and deciding each set took ISL about half a millisecond.  Emptied at the bound.
_EMPTY: dict = {}
_EMPTY_BOUND = 1 << 14


def _is_empty(n: int, cons: tuple) -> bool:
    known = _EMPTY.get((n, cons))
    if known is None:
        known = _isl_set(n, cons).is_empty()
        if len(_EMPTY) >= _EMPTY_BOUND:
            _EMPTY.clear()
        _EMPTY[(n, cons)] = known
    return known


def drop_redundant_bounds(loop: AffineForOp) -> bool:
    """Drop the results of a ``min`` upper bound / ``max`` lower bound that never decide the
    bound given the enclosing loops and conditions (in the spirit of MLIR's
    ``simplifyConstrainedMinMaxOp``/``-affine-simplify-structures``, decided with ISL).

        affine.for %i = 0 to 100 { affine.for %j = %i to min(%i + 8, 200) }
          ->  ... to %i + 8     (but min(2088, d0 * 64 + 64) over d0 in [0, 33) stays)
    """
    if loop.lower_map.num_results < 2 and loop.upper_map.num_results < 2:
        return False
    atoms = _Atoms()
    lbs, ubs = _bounds(loop, atoms)
    cons = _enclosing_constraints(loop, atoms)
    changed = False
    for upper, exprs in ((False, lbs), (True, ubs)):
        if len(exprs) < 2:
            continue
        drop = _redundant_results(exprs, len(atoms.values), cons, upper)
        if not drop:
            continue
        kept = [e for i, e in enumerate(exprs) if i not in drop]
        m, ops = atoms.export(kept)
        (loop.set_upper_bound if upper else loop.set_lower_bound)(m, ops)
        changed = True
    return changed


def _is_empty_body(block: Optional[Block]) -> bool:
    return block is None or all(op.name == "affine.yield" and not op.operands
                                for op in block.ops)


def remove_empty_loops(ops: Sequence[Operation]) -> int:
    """Erase loops without work (MLIR's ``AffineForEmptyLoopFolder`` and zero-trip loops) and
    ``affine.if`` ops whose branches are empty, innermost first; returns how many."""
    count = 0
    for top in list(ops):
        for op in list(top.walk(pre_order=False)):
            if op.parent is None and op is not top:
                continue
            if isinstance(op, AffineForOp) and not op.results and (
                    _is_empty_body(op.body) or constant_trip_count(op) == 0):
                op.erase()
                count += 1
            elif isinstance(op, AffineIfOp) and not op.results and \
                    _is_empty_body(op.then_block) and _is_empty_body(op.else_block):
                op.erase()
                count += 1
    return count


def simplify_generated(ops: Sequence[Operation], *, normalize: bool = True) -> None:
    """The clean-up after code generation, outermost loops first: redundant bounds dropped,
    single-iteration loops promoted, loops with a constant trip count and a non-constant lower
    bound normalized to start at 0 (``normalize``), empty loops removed."""
    loops = [op for top in ops for op in top.walk() if isinstance(op, AffineForOp)]
    for loop in loops:
        drop_redundant_bounds(loop)
        if promote_if_single_iteration(loop):
            continue
        if normalize and not loop.has_constant_lower_bound \
                and loop.lower_map.num_results == 1 and constant_trip_count(loop) is not None:
            normalize_loop(loop)


# ---------------------------------------------------------------------------------------------
# ISL AST construction


@contextlib.contextmanager
def _ast_build_options(ctx: isl.Context, overrides: Optional[Mapping[str, int]] = None
                       ) -> Iterator[None]:
    options = dict(_AST_OPTIONS)
    for name, value in (overrides or {}).items():
        if not hasattr(ctx, "set_" + name):
            raise ValueError(f"unknown ISL AST build option {name!r}")
        options[name] = int(value)
    saved = {name: getattr(ctx, "get_" + name)() for name in options}
    try:
        for name, value in options.items():
            getattr(ctx, "set_" + name)(value)
        yield
    finally:
        for name, value in saved.items():
            getattr(ctx, "set_" + name)(value)


def build_ast(model, schedule: isl.UnionMap, context: Optional[isl.Set] = None,
              ast_options: Optional[Mapping[str, int]] = None,
              separate: bool = False) -> isl.AstNode:
    """The ISL AST of ``schedule`` (restricted to the model's domains) under the model's
    context (and ``context``, a parameter set, when given).  ``ast_options`` overrides ISL
    context options such as ``{"ast_build_allow_or": 1}`` for this build; ``separate``
    asks ISL to split every loop where the set of statements it runs changes (its
    ``separate`` option: no guard inside a loop, at the price of more code)."""
    sched = schedule.intersect_domain(model.domains())
    ctx_set = model.context()
    if context is not None:
        ctx_set = ctx_set.intersect(context)
    with _ast_build_options(sched.get_ctx(), ast_options):
        build = isl.AstBuild.from_context(ctx_set)
        if separate and not sched.is_empty():
            n = sched.range().as_set().dim(isl.dim_type.set)
            dims = ", ".join(f"c{k}" for k in range(n))
            build = build.set_options(isl.UnionMap(
                f"{model.param_space()}{{ [{dims}] -> separate[x] : 0 <= x < {n} }}"))
        return build.node_from_schedule_map(sched)


# ---------------------------------------------------------------------------------------------
# AST -> affine


class _Placeholder:
    """Stands for the IV of a loop whose bounds are being computed."""


class _Select(Exception):
    """Raised by :meth:`AffineGenerator._expr` at a select (``isl_ast_op_select`` /
    ``isl_ast_op_cond``) whose condition ``alts`` (a disjunction of conjunctions of
    constraints) is not decided yet; the node being generated is split on it."""

    def __init__(self, alts: list[list[tuple[AffineExpr, bool]]]):
        super().__init__("undecided select in the ISL AST")
        self.alts = alts


def _condition_key(alts: list[list[tuple[AffineExpr, bool]]]) -> tuple:
    return tuple(tuple(conj) for conj in alts)


class AffineGenerator:
    """Converts the ISL AST of a schedule of ``model`` into affine ops.

    After :meth:`generate`, :meth:`lookup` gives the clone of a value defined by a statement
    at the top level of the generated code (for uses after the scop).
    """

    def __init__(self, model, *, loc: Optional[Location] = None):
        self.model = model
        self.loc = loc if loc is not None else (model.scop_ops[0].loc if model.scop_ops else None)
        self.stmts = {s.name: s for s in model.statements}
        self.params = {name: v for v, name in model.param_names.items()}
        self.atoms = _Atoms()
        self.env: dict[str, AffineExpr] = {}
        # original value -> (clone, defining statement or None, its instance arguments)
        self.scopes: list[dict] = [{}]
        self.scop_values: set = set()
        self.defined_by: dict = {}
        for top in model.scop_ops:
            for op in top.walk():
                self.scop_values.update(op.results)
                for region in op.regions:
                    for block in region.blocks:
                        self.scop_values.update(block.args)
        for s in model.statements:
            for op in getattr(s, "group", None) or s.ops:
                for r in op.results:
                    self.defined_by[r] = s
        self.precloned: set = set()
        # select conditions decided by the enclosing affine.if branches (key -> taken)
        self.decided: dict[tuple, bool] = {}

    # -- entry point -----------------------------------------------------------------------
    def generate(self, schedule: isl.UnionMap, builder: Builder, *,
                 context: Optional[isl.Set] = None, normalize: bool = True,
                 simplify: bool = True, ast_options: Optional[Mapping[str, int]] = None,
                 separate: bool = False) -> list[Operation]:
        """See :func:`generate_affine`."""
        block = builder.block
        pos = len(block.ops) if builder.index is None else builder.index
        before = block.ops[pos - 1] if pos > 0 else None
        after = block.ops[pos] if pos < len(block.ops) else None

        def inserted() -> list[Operation]:
            start = block.index_of(before) + 1 if before is not None else 0
            end = block.index_of(after) if after is not None else len(block.ops)
            return block.ops[start:end]

        node = build_ast(self.model, schedule, context, ast_options, separate)
        self._preclone_constants(builder)
        self._gen(node, builder)
        for old in self.precloned:
            for r in old.results:
                new = self.scopes[0][r][0]
                if not new.uses and new.defining_op.parent is not None:
                    new.defining_op.erase()
        if simplify:
            simplify_generated(inserted(), normalize=normalize)
            remove_empty_loops(inserted())
        return list(inserted())

    def lookup(self, value: Value) -> Optional[Value]:
        entry = self.scopes[0].get(value)
        return entry[0] if entry is not None else None

    # -- helpers ---------------------------------------------------------------------------
    def _error(self, message: str, loc=None) -> ScheduleError:
        return ScheduleError(message, loc if loc is not None else self.loc)

    def _preclone_constants(self, b: Builder) -> None:
        """Constants at the top level of the scop are materialized first, so that bounds and
        every statement can use them whatever the schedule."""
        for op in self.model.scop_ops:
            if is_constant_like(op) and not op.operands and not op.regions:
                new = b.insert(op.clone())
                for old, res in zip(op.results, new.results):
                    self.scopes[0][old] = (res, None, [])
                self.precloned.add(op)

    @contextlib.contextmanager
    def _scope(self):
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    # -- expressions -----------------------------------------------------------------------
    def _param(self, name: str) -> AffineExpr:
        v = self.params.get(name)
        if v is None:
            raise self._error(f"unknown identifier '{name}' in the ISL AST")
        if v in self.scop_values:
            entry = self._find(v)
            if entry is None:
                raise self._error(f"the schedule uses parameter {name}, defined inside the scop "
                                  f"where the generated code cannot see it")
            v = entry[0]
        return self.atoms.add(v, symbolic=True)

    def _expr(self, e: isl.AstExpr, sign_free: bool = False) -> AffineExpr:
        t = e.get_type()
        if t == isl.ast_expr_type.int:
            return constant(int(e.get_val().to_python()))
        if t == isl.ast_expr_type.id:
            name = e.get_id().get_name()
            if name in self.env:
                return self.env[name]
            return self._param(name)
        op = e.get_op_type()
        args = [e.get_op_arg(i) for i in range(e.get_op_n_arg())]
        if op == _T.add:
            return canonicalize_expr(self._expr(args[0]) + self._expr(args[1]))
        if op == _T.sub:
            return canonicalize_expr(self._expr(args[0]) - self._expr(args[1]))
        if op == _T.minus:
            return canonicalize_expr(-self._expr(args[0]))
        if op == _T.mul:
            a, b = self._expr(args[0]), self._expr(args[1])
            if a.kind is not _K.CONSTANT and b.kind is not _K.CONSTANT:
                raise self._error(f"non-affine product in the ISL AST: {e.to_C_str()}")
            return canonicalize_expr(a * b)
        if op in (_T.div, _T.fdiv_q, _T.pdiv_q, _T.pdiv_r, _T.zdiv_r):
            a, b = self._expr(args[0]), self._expr(args[1])
            if b.kind is not _K.CONSTANT or b.value <= 0:
                raise self._error(f"division by a non-constant in the ISL AST: {e.to_C_str()}")
            if op == _T.pdiv_r or (op == _T.zdiv_r and sign_free):
                return canonicalize_expr(a.mod(b.value))
            if op == _T.zdiv_r:
                raise self._error(f"C remainder whose sign matters in the ISL AST: "
                                  f"{e.to_C_str()}")
            return canonicalize_expr(a.floordiv(b.value))
        if op in (_T.select, _T.cond):
            alts = self._dnf(args[0])
            taken = self.decided.get(_condition_key(alts))
            if taken is None:
                raise _Select(alts)
            return self._expr(args[1] if taken else args[2], sign_free)
        raise self._error(f"cannot express the ISL AST expression '{e.to_C_str()}' as an "
                          f"affine expression")

    @staticmethod
    def _flatten_op(e: isl.AstExpr, kind) -> list[isl.AstExpr]:
        if e.get_type() == isl.ast_expr_type.op and e.get_op_type() == kind:
            out = []
            for i in range(e.get_op_n_arg()):
                out += AffineGenerator._flatten_op(e.get_op_arg(i), kind)
            return out
        return [e]

    def _comparison(self, e: isl.AstExpr) -> list[tuple[AffineExpr, bool]]:
        """A comparison as constraints ``g >= 0`` / ``g == 0`` (``x <= min(a, b)`` splits)."""
        op = e.get_op_type()
        a, b = e.get_op_arg(0), e.get_op_arg(1)
        if op in (_T.ge, _T.gt):
            a, b = b, a
            op = _T.le if op == _T.ge else _T.lt
        if op in (_T.le, _T.lt):
            out = []
            for x in self._flatten_op(a, _T.max):
                for y in self._flatten_op(b, _T.min):
                    g = self._expr(y) - self._expr(x)
                    out.append((canonicalize_expr(g - 1 if op == _T.lt else g), False))
            return out
        if op == _T.eq:
            zero_rhs = b.get_type() == isl.ast_expr_type.int and b.get_val().to_python() == 0
            zero_lhs = a.get_type() == isl.ast_expr_type.int and a.get_val().to_python() == 0
            g = self._expr(a, sign_free=zero_rhs) - self._expr(b, sign_free=zero_lhs)
            return [(canonicalize_expr(g), True)]
        raise self._error(f"unsupported condition in the ISL AST: {e.to_C_str()}")

    def _dnf(self, e: isl.AstExpr) -> list[list[tuple[AffineExpr, bool]]]:
        """The condition as a disjunction of conjunctions of constraints."""
        if e.get_type() != isl.ast_expr_type.op:
            raise self._error(f"unsupported condition in the ISL AST: {e.to_C_str()}")
        op = e.get_op_type()
        if op in (_T.and_, _T.and_then):
            alts: list[list] = [[]]
            for i in range(e.get_op_n_arg()):
                sub = self._dnf(e.get_op_arg(i))
                alts = [x + y for x in alts for y in sub]
            if len(alts) > 64:
                raise self._error("condition in the ISL AST is too large to split into "
                                  "affine.if ops")
            return alts
        if op in (_T.or_, _T.or_else):
            out = []
            for i in range(e.get_op_n_arg()):
                out += self._dnf(e.get_op_arg(i))
            return out
        return [self._comparison(e)]

    # -- nodes -----------------------------------------------------------------------------
    def _gen(self, node: isl.AstNode, b: Builder) -> None:
        try:
            self._gen_node(node, b)
        except _Select as sel:
            # raised by the node's own expressions (those of nested nodes are split there),
            # which are all read before the node creates an op: nothing to undo
            self._gen_split(node, sel.alts, b)

    def _gen_split(self, node: isl.AstNode, alts, b: Builder) -> None:
        """``node`` under ``affine.if`` on a select's condition ``alts``, generated with the
        select's first value in the then-branch(es) and its second one in the else-branch."""
        key = _condition_key(alts)
        for conj in alts:
            for g, _ in conj:
                if any(isinstance(self.atoms.values[k], _Placeholder) for k in g.used_dims()):
                    raise self._error(f"a select in the ISL AST depends on the loop whose "
                                      f"bounds hold it: {node.to_C_str().strip()}")

        def branch(taken: bool) -> Callable[[Builder], None]:
            def gen(inner: Builder) -> None:
                self.decided[key] = taken
                try:
                    self._gen(node, inner)
                finally:
                    del self.decided[key]
            return gen

        self._guarded(alts, branch(True), branch(False), b)

    def _gen_node(self, node: isl.AstNode, b: Builder) -> None:
        t = node.get_type()
        if t == isl.ast_node_type.for_:
            self._gen_for(node, b)
        elif t == isl.ast_node_type.if_:
            self._gen_if(node, b)
        elif t == isl.ast_node_type.block:
            children = node.block_get_children()
            for i in range(children.n_ast_node()):
                self._gen(children.get_at(i), b)
        elif t == isl.ast_node_type.user:
            self._gen_user(node, b)
        elif t == isl.ast_node_type.mark:
            self._gen(node.mark_get_node(), b)
        else:
            raise self._error(f"unsupported ISL AST node {t}")

    def _gen_for(self, node: isl.AstNode, b: Builder) -> None:
        name = node.for_get_iterator().get_id().get_name()
        saved = self.env.get(name)
        init = node.for_get_init()
        if node.for_is_degenerate():
            self.env[name] = self._expr(init)
            try:
                self._gen(node.for_get_body(), b)
            finally:
                self._restore(name, saved)
            return
        inc = node.for_get_inc()
        if inc.get_type() != isl.ast_expr_type.int or inc.get_val().to_python() <= 0:
            raise self._error(f"loop step must be a positive constant, got {inc.to_C_str()}")
        step = int(inc.get_val().to_python())
        lbs = [self._expr(x) for x in self._flatten_op(init, _T.max)]
        placeholder = _Placeholder()
        iv = self.atoms.add(placeholder)
        k = iv.position
        self.env[name] = iv
        try:
            alts = self._dnf(node.for_get_cond())
            if len(alts) != 1:
                raise self._error(f"disjunctive loop condition in the ISL AST: "
                                  f"{node.for_get_cond().to_C_str()}")
            ubs = []
            for g, eq in alts[0]:
                lin = _lin(g)
                a = lin.pop(("d", k), 0)
                rest = _unlin(lin)
                if eq or a >= 0 or k in rest.used_dims():
                    raise self._error(f"unsupported loop condition in the ISL AST: "
                                      f"{node.for_get_cond().to_C_str()}")
                # a * iv + rest >= 0  <=>  iv <= floor(rest / -a)
                ubs.append(canonicalize_expr(rest.floordiv(-a) + 1))
            lb_map, lb_ops = self.atoms.export(lbs)
            ub_map, ub_ops = self.atoms.export(ubs)
            loop = b.create(AffineForOp.build, lb_map, lb_ops, ub_map, ub_ops, step,
                            loc=self.loc)
            self.atoms.rebind(k, loop.induction_var)
            with self._scope():
                self._gen(node.for_get_body(), Builder.before_terminator(loop.body))
        finally:
            self._restore(name, saved)

    def _restore(self, name: str, saved: Optional[AffineExpr]) -> None:
        if saved is None:
            self.env.pop(name, None)
        else:
            self.env[name] = saved

    def _gen_if(self, node: isl.AstNode, b: Builder) -> None:
        alts = self._dnf(node.if_get_cond())
        then_node = node.if_get_then_node()
        else_node = node.if_get_else_node() if node.if_has_else_node() else None
        self._if_chain(alts, then_node, else_node, b)

    def _if_chain(self, alts, then_node: isl.AstNode, else_node: Optional[isl.AstNode],
                  b: Builder) -> None:
        self._guarded(alts, lambda inner: self._gen(then_node, inner),
                      (lambda inner: self._gen(else_node, inner)) if else_node is not None
                      else None, b)

    def _guarded(self, alts, then_gen: Callable[[Builder], None],
                 else_gen: Optional[Callable[[Builder], None]], b: Builder) -> None:
        """``affine.if`` ops for the disjunction ``alts`` (a chain of ifs), ``then_gen``
        filling each then-block and ``else_gen`` (if any) the innermost else-block."""
        cons = alts[0]
        m, ops = self.atoms.export([g for g, _ in cons])
        iset = IntegerSet(m.num_dims, m.num_symbols, m.results, [eq for _, eq in cons])
        with_else = len(alts) > 1 or else_gen is not None
        op = b.create(AffineIfOp.build, iset, ops, (), with_else, loc=self.loc)
        with self._scope():
            then_gen(Builder.before_terminator(op.then_block))
        if len(alts) > 1:
            with self._scope():
                self._guarded(alts[1:], then_gen, else_gen,
                              Builder.before_terminator(op.else_block))
        elif else_gen is not None:
            with self._scope():
                else_gen(Builder.before_terminator(op.else_block))

    # -- statements ------------------------------------------------------------------------
    def _find(self, v: Value):
        for scope in reversed(self.scopes):
            entry = scope.get(v)
            if entry is not None:
                return entry
        return None

    def _resolve(self, v: Value, stmt, args: list[AffineExpr], b: Builder) -> Value:
        """The value the instance ``stmt(args)`` reads for ``v``, an op result of another
        statement (or a constant) defined inside the scop."""
        entry = self._find(v)
        if entry is not None:
            new, owner, owner_args = entry
            if owner is None or list(owner_args) == list(args[:len(owner_args)]):
                return new
        op = v.defining_op
        if op is not None and is_constant_like(op) and not op.operands and not op.regions:
            new_op = b.insert(op.clone())
            return new_op.results[v.index]
        owner = self.defined_by.get(v)
        what = f"statement {owner.name}" if owner is not None else "an op of the scop"
        raise self._error(f"statement {stmt.name} uses a value computed by {what} in the same "
                          f"iteration, but the new schedule does not run that computation "
                          f"before it in an enclosing position", stmt.loc)

    def _gen_user(self, node: isl.AstNode, b: Builder) -> None:
        call = node.user_get_expr()
        name = call.get_op_arg(0).get_id().get_name()
        stmt = self.stmts.get(name)
        if stmt is None:
            raise self._error(f"unknown statement '{name}' in the ISL AST")
        args = [self._expr(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg())]
        if len(args) != len(stmt.ivs):
            raise self._error(f"statement {name} expects {len(stmt.ivs)} indices, the AST "
                              f"gives {len(args)}")
        self.instantiate(stmt, args, b)

    def instantiate(self, stmt, args: list[AffineExpr], b: Builder) -> list[Operation]:
        """Clone ``stmt``'s ops at ``b`` for the instance whose domain dims are ``args``
        (global expressions); returns the new ops."""
        subst = dict(zip(stmt.ivs, args))
        mapping: dict = {}
        folded: dict = {}       # result of a cloned affine.apply -> its global expression
        iv_applies: dict = {}
        new_ops: list[Operation] = []
        for op in stmt.ops:
            if op in self.precloned:
                for r in op.results:
                    mapping[r] = self.scopes[0][r][0]
                continue
            for v in op.operands:
                if v in mapping or v in subst or v not in self.scop_values:
                    continue
                mapping[v] = self._resolve(v, stmt, args, b)
            if isinstance(op, _MAP_OPS):
                new = op.clone(mapping)
                amap = op.map
                nd = amap.num_dims
                vals = []
                for j, v in enumerate(op.map_operands):
                    if v in subst:
                        vals.append(subst[v])
                    elif mapping.get(v) in folded:
                        vals.append(folded[mapping[v]])
                    else:
                        vals.append(self.atoms.add(mapping.get(v, v), j >= nd))
                results = [canonicalize_expr(r.replace(vals[:nd], vals[nd:]))
                           for r in amap.results]
                new.set_map(*self.atoms.export(results))
                b.insert(new)
                if isinstance(op, AffineApplyOp):
                    folded[new.result] = results[0]
            else:
                for v in op.operands:
                    if v in subst and v not in iv_applies:
                        e = subst[v]
                        if e.kind is _K.DIM:         # the IV is a new IV (or a parameter)
                            iv_applies[v] = self.atoms.values[e.position]
                            continue
                        m, ops = self.atoms.export([e])
                        apply = b.create(AffineApplyOp.build, m, ops, loc=op.loc)
                        new_ops.append(apply)
                        iv_applies[v] = apply.result
                new = op.clone({**mapping, **iv_applies})
                for old, res in zip(op.results, new.results):
                    mapping[old] = res
                b.insert(new)
            new_ops.append(new)
        # pure ops whose users were all folded (affine.apply, rematerialized index math) die;
        # they were inserted before the builder's index, which must move back with them (or
        # the next statement lands after the block's terminator)
        for op in reversed(new_ops):
            if is_pure(op) and not any(r.uses for r in op.results):
                if op.parent is b.block and b.index is not None:
                    b.index -= 1
                op.erase()
        scope = self.scopes[-1]
        for op in stmt.ops:
            if op in self.precloned:
                continue
            for r in op.results:
                new_v = mapping.get(r)
                if new_v is not None and new_v.defining_op.parent is not None:
                    scope[r] = (new_v, stmt, list(args))
        return [op for op in new_ops if op.parent is not None]


def generate_affine(model, schedule: isl.UnionMap, builder: Builder, *,
                    context: Optional[isl.Set] = None, normalize: bool = True,
                    simplify: bool = True, ast_options: Optional[Mapping[str, int]] = None
                    ) -> list[Operation]:
    """Generate affine loops executing ``model``'s statements in the order of ``schedule``
    (an ``isl.UnionMap`` from statement instances to a common time space, e.g.
    ``{ S0[i, j, k] -> [floor(k/256), floor(i/64), j, i, k] }``) at ``builder``; returns the
    top-level ops inserted.  The original ops are not touched (clones are inserted), and
    values defined before the scop are used as they are.

    ``context`` adds known facts about the parameters; ``normalize`` shifts loops with a
    constant trip count and a non-constant lower bound to start at 0 (as the paper's
    listings); ``simplify=False`` keeps the raw conversion of the AST (no bound simplification,
    promotion, normalization or empty-loop removal); ``ast_options`` overrides the ISL AST
    build options (``_AST_OPTIONS``: no disjunctions, min/max detection, atomic upper bounds).

    Raises :class:`ScheduleError` when the AST holds something the affine dialect cannot
    express (a disjunctive loop condition, a non-affine expression) or when a value computed
    by one statement and read by another is no longer available where the schedule puts the
    reader.
    """
    return AffineGenerator(model).generate(schedule, builder, context=context,
                                           normalize=normalize, simplify=simplify,
                                           ast_options=ast_options)
