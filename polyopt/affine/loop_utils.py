"""Loop utilities on ``affine.for`` (MLIR's ``Affine/Utils/LoopUtils.cpp``): unroll by a factor,
full unroll, unroll-and-jam, promotion of single-iteration loops, and the map helpers they share
(folding ``affine.apply`` into affine users, canonical linear forms, trip counts, intervals).

    affine.for %i = 0 to 10 {                 unroll(loop, 4)      affine.for %i = 0 to 8 step 4 {
      %a = affine.load %A[%i]                 ------------->         %a = affine.load %A[%i]
      affine.store %a, %B[%i]                                        affine.store %a, %B[%i]
    }                                                                %a1 = affine.load %A[%i + 1]
                                                                     ... (copies %i + 2, %i + 3)
                                                                   }
                                                                   affine.for %i = 8 to 10 { ... }

Unroll-and-jam (``unroll_jam``) unrolls a loop and fuses ("jams") the copies of every loop nested
in it, so that the copies share the inner loops:

    affine.for %i = 0 to 8 {                  unroll_jam(loop, 2)  affine.for %i = 0 to 8 step 2 {
      affine.for %k = 0 to 16 {               ------------------>    affine.for %k = 0 to 16 {
        S(%i, %k)                                                      S(%i, %k)
      }                                                                S(%i + 1, %k)
    }                                                                }}

Jamming reorders the iterations (``S(%i + 1, 0)`` now runs before ``S(%i, 1)``): it is only
legal when no dependence is reversed.  As in MLIR the utility itself does not analyse
dependences -- ``polyopt.affine`` does not import the polyhedral layer -- but it takes the check as
a callback: ``unroll_jam(loop, f, check=loop_legality.unroll_jam_is_legal)`` refuses with a
:class:`ScheduleError` naming the loop, the memref and a violating pair.  Plain unrolling never
reorders anything and needs no check.

All utilities validate everything before their first mutation: a refusal leaves the IR untouched.
New index expressions are folded into the maps of the affine ops that use them (MLIR's
``affine.apply`` + ``canonicalize``): an unrolled copy reads ``%A[%i + 1]``, not an
``affine.apply``; other users of an induction variable read an ``affine.apply``.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional, Sequence

from .affine_expr import AffineExpr, AffineExprKind, AffineMap, IntegerSet, constant, dim, symbol
from .affine_rules import is_constant_like
from .attributes import IntegerSetAttr
from .builder import Builder
from .diagnostics import ScheduleError
from .dialects.affine import (AffineApplyOp, AffineForOp, AffineIfOp, AffineLoadOp, AffineMaxOp,
                              AffineMinOp, AffineStoreOp, AffineVectorLoadOp,
                              AffineVectorStoreOp)
from .ir import BlockArgument, Operation, OpResult, Value
from .value_table import export_map
from .linear_form import (add_forms, constant_of, floordiv_form, is_constant_form,
                          mod_form, scale_form)

__all__ = [
    "UnrollResult", "unroll", "unroll_full", "unroll_jam", "promote_if_single_iteration",
    "get_perfectly_nested_loops", "constant_trip_count", "trip_count_divisor",
    "loop_runs_at_least_once", "fold_affine_apply", "replace_index_uses", "add_iter_args",
    "simplify_affine_expr", "value_linear_form", "is_defined_outside", "describe_loop",
    "JamCheck",
]

_K = AffineExprKind
_MAP_OPS = (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp, AffineApplyOp,
            AffineMinOp, AffineMaxOp)

#: ``check(loop, factor)`` raises :class:`ScheduleError` when unroll-and-jam is illegal.
JamCheck = Callable[[AffineForOp, int], None]


# ---------------------------------------------------------------------------------------------
# canonical linear forms
#
# A linear form is a dict {key: coefficient}; the key ``None`` holds the constant term.  Keys
# are leaves (``("d", i)``/``("s", i)`` for map positions, ``("v", value)`` for SSA values) or
# opaque non-linear terms ``(kind, frozen lhs form, divisor)`` such as ``("floordiv", ..., 4)``.
# Equal forms mean equal expressions; multiples of a divisor are pulled out of floordiv/mod.


def _freeze(lin: dict) -> frozenset:
    return frozenset(lin.items())


_add = add_forms
_scale = scale_form
_is_const = is_constant_form
_cval = constant_of


def _floordiv(lin: dict, q: int) -> dict:
    return floordiv_form(lin, q, lambda rest, d: {("floordiv", _freeze(rest), d): 1})


def _mod(lin: dict, q: int) -> dict:
    return mod_form(lin, q, lambda rest, d: {("mod", _freeze(rest), d): 1})


def _linearize(e: AffineExpr, leaf: Callable[[AffineExpr], dict]) -> dict:
    """The linear form of ``e``; ``leaf`` gives the form of a dim or symbol."""
    k = e.kind
    if k is _K.CONSTANT:
        return {None: e.value} if e.value else {}
    if k is _K.DIM or k is _K.SYMBOL:
        return leaf(e)
    lhs, rhs = _linearize(e.lhs, leaf), _linearize(e.rhs, leaf)
    if k is _K.ADD:
        return _add(lhs, rhs)
    if k is _K.MUL:
        if _is_const(rhs):
            return _scale(lhs, _cval(rhs))
        if _is_const(lhs):
            return _scale(rhs, _cval(lhs))
        a, b = sorted((_freeze(lhs), _freeze(rhs)), key=repr)
        return {("mul", a, b): 1}
    name = {_K.FLOORDIV: "floordiv", _K.CEILDIV: "ceildiv", _K.MOD: "mod"}[k]
    if not _is_const(rhs) or _cval(rhs) <= 0:
        return {(name, _freeze(lhs), _freeze(rhs)): 1}
    q = _cval(rhs)
    if _is_const(lhs):
        v = _cval(lhs)
        r = v // q if k is _K.FLOORDIV else -((-v) // q) if k is _K.CEILDIV else v % q
        return {None: r} if r else {}
    if k is _K.FLOORDIV:
        return _floordiv(lhs, q)
    if k is _K.CEILDIV:          # ceil(x / q) = -floor(-x / q)
        return _scale(_floordiv(_scale(lhs, -1), q), -1)
    return _mod(lhs, q)


def _position_leaf(e: AffineExpr) -> dict:
    return {("d" if e.kind is _K.DIM else "s", e.position): 1}


def _key_expr(key) -> AffineExpr:
    tag = key[0]
    if tag == "d":
        return dim(key[1])
    if tag == "s":
        return symbol(key[1])
    lhs = _unlinearize(dict(key[1]))
    rhs = key[2] if isinstance(key[2], int) else _unlinearize(dict(key[2]))
    if tag == "mul":
        return lhs * rhs
    if tag == "floordiv":
        return lhs.floordiv(rhs)
    if tag == "ceildiv":
        return lhs.ceildiv(rhs)
    return lhs.mod(rhs)


def _key_order(key) -> tuple:
    if key[0] in ("d", "s"):
        return (0 if key[0] == "d" else 1, key[1], "")
    e = _key_expr(key)
    used = e.used_dims()
    return (2, min(used) if used else 1 << 30, str(e))


def _unlinearize(lin: dict) -> AffineExpr:
    """``d0 * a + d1 * b + s0 * c + terms + const`` (dims, then symbols, by position)."""
    out: Optional[AffineExpr] = None
    for k in sorted((k for k in lin if k is not None), key=_key_order):
        c = lin[k]
        base = _key_expr(k)
        t = base if c == 1 else base * c
        out = t if out is None else out + t
    c = _cval(lin)
    if out is None:
        return constant(c)
    return out + c if c else out


#: simplify_affine_expr's results so far.  Expressions are immutable values, and the same ones
#: are simplified over and over (the subscripts of each unrolled copy of a register tile, every
#: map an unrolled IV is folded into, each pipeline a module goes through); the sort of the
#: non-linear terms made each simplification cost tens of microseconds.  Emptied when it
#: reaches the bound.
_SIMPLIFIED: dict[AffineExpr, AffineExpr] = {}
_SIMPLIFIED_BOUND = 1 << 16


def simplify_affine_expr(e: AffineExpr) -> AffineExpr:
    """``e`` in canonical linear form: ``d0 * 4 + d1 + 1`` for ``(d0 + 1) * 4 + d1 - 3``,
    constant multiples pulled out of floordiv/mod, constants folded (MLIR's
    ``simplifyAffineExpr``, by flattening).  Equal linear forms give equal expressions."""
    done = _SIMPLIFIED.get(e)
    if done is not None:
        return done
    given = e
    # one pass can expose more (``(d0 ceildiv 2) * 2 - d0`` becomes ``(-d0) mod 2``, which the
    # next pass writes ``d0 mod 2``): repeat until nothing changes
    for _ in range(8):
        s = _unlinearize(_linearize(e, _position_leaf))
        if s == e:
            break
        e = s
    if len(_SIMPLIFIED) >= _SIMPLIFIED_BOUND:
        _SIMPLIFIED.clear()
    _SIMPLIFIED[given] = e
    return e


def constant_index(v: Value) -> Optional[int]:
    """The integer ``v`` holds when an ``arith.constant`` (or a constant-like op) defines it,
    else None."""
    op = v.defining_op
    if op is None or not is_constant_like(op):
        return None
    value = getattr(op.attributes.get("value"), "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def value_linear_form(amap: AffineMap, operands: Sequence[Value]) -> list[dict]:
    """The results of ``amap(operands)`` as linear forms over SSA values (keys ``("v", value)``):
    constants fold and ``affine.apply`` results are expanded, so two accesses address the same
    element iff their forms are equal, and differ by a constant iff the difference of their
    forms is constant."""
    forms = [_value_form(v) for v in operands]
    nd = amap.num_dims

    def leaf(e: AffineExpr) -> dict:
        return forms[e.position if e.kind is _K.DIM else nd + e.position]

    return [_linearize(r, leaf) for r in amap.results]


def _value_form(v: Value, depth: int = 0) -> dict:
    c = constant_index(v)
    if c is not None:
        return {None: c} if c else {}
    op = v.defining_op
    if isinstance(op, AffineApplyOp) and depth < 32:
        forms = [_value_form(w, depth + 1) for w in op.operands]
        nd = op.map.num_dims
        return _linearize(op.map.results[0],
                          lambda e: forms[e.position if e.kind is _K.DIM else nd + e.position])
    return {("v", v): 1}


# ---------------------------------------------------------------------------------------------
# maps over a table of SSA values (compose, fold constants, dedupe and drop operands)


class _Atoms:
    """A table of SSA values; ``dim(k)`` in a *global* expression stands for ``values[k]``.
    A value becomes a symbol of the exported map when every import used it as a symbol."""

    def __init__(self):
        self.values: list[Value] = []
        self.index: dict[Value, int] = {}
        self.symbolic: list[bool] = []

    def add(self, v: Value, symbolic: bool) -> AffineExpr:
        c = constant_index(v)
        if c is not None:
            return constant(c)
        k = self.index.get(v)
        if k is None:
            k = len(self.values)
            self.values.append(v)
            self.index[v] = k
            self.symbolic.append(symbolic)
        elif not symbolic:
            self.symbolic[k] = False
        return dim(k)

    def import_exprs(self, amap, operands: Sequence[Value],
                     subst: Optional[dict] = None) -> list[AffineExpr]:
        """The results of ``amap`` (an AffineMap or the constraints of an IntegerSet) over
        ``operands`` as global expressions; operands in ``subst`` become ``subst[v]()``."""
        subst = subst or {}
        nd = amap.num_dims
        args = [subst[v]() if v in subst else self.add(v, i >= nd)
                for i, v in enumerate(operands)]
        results = amap.results if isinstance(amap, AffineMap) else amap.constraints
        return [r.replace(args[:nd], args[nd:]) for r in results]

    def export(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[Value]]:
        """A map with compact operands (dims in table order, then symbols) for ``exprs``."""
        return export_map(exprs, self.values, self.symbolic, simplify_affine_expr,
                          presimplify=True)


#: _compose_rewrite's results by what decides them: the map (or set), ``amap`` and, for each
#: operand position, the constant it holds, the substituted value, or which of the distinct
#: other values it is (numbered by first occurrence).  Unrolling composes the same bump into
#: the same subscripts copy after copy, nest after nest; composing, simplifying and exporting
#: cost 200 microseconds each time.  Emptied when it reaches the bound.
_COMPOSED: dict = {}
_COMPOSED_BOUND = 1 << 15
_SUBSTITUTED = ("s",)


def _compose_rewrite(m, ops: Sequence[Value], value: Value, amap: AffineMap,
                     operands: Sequence[Value]) -> tuple[AffineMap, list[Value]]:
    """``m(ops)`` with ``value`` read as ``amap(operands)``: the composed map over compact
    operands (see :class:`_Atoms`)."""
    distinct: list[Value] = []
    number: dict[int, int] = {}
    shape: list = []
    for v in (*ops, *operands):
        if v is value:
            shape.append(_SUBSTITUTED)
            continue
        k = number.get(id(v))
        if k is None:
            c = constant_index(v)
            if c is not None:
                shape.append((c,))
                continue
            k = number[id(v)] = len(distinct)
            distinct.append(v)
        shape.append(k)
    key = (type(m), m, len(ops), amap, tuple(shape))
    known = _COMPOSED.get(key)
    if known is None:
        atoms = _Atoms()
        subst = {value: lambda: atoms.import_exprs(amap, operands)[0]}
        new_map, new_ops = atoms.export(atoms.import_exprs(m, ops, subst))
        known = (new_map, tuple(number[id(v)] for v in new_ops))
        if len(_COMPOSED) >= _COMPOSED_BOUND:
            _COMPOSED.clear()
        _COMPOSED[key] = known
    return known[0], [distinct[k] for k in known[1]]


def _compose_user(op: Operation, value: Value, amap: AffineMap,
                  operands: Sequence[Value]) -> None:
    """Rewrite the maps of ``op`` in which ``value`` is an operand so that it reads
    ``amap(operands)`` (one result) instead; other uses of ``value`` by ``op`` stay."""

    def rewrite(m, ops):
        return _compose_rewrite(m, ops, value, amap, operands)

    if isinstance(op, _MAP_OPS):
        if value in op.map_operands:
            op.set_map(*rewrite(op.map, op.map_operands))
    elif isinstance(op, AffineForOp):
        if value in op.lower_operands:
            op.set_lower_bound(*rewrite(op.lower_map, op.lower_operands))
        if value in op.upper_operands:
            op.set_upper_bound(*rewrite(op.upper_map, op.upper_operands))
    elif isinstance(op, AffineIfOp) and value in op.cond_operands:
        cond = op.condition
        m, new_ops = rewrite(cond, op.cond_operands)
        op.attributes["condition"] = IntegerSetAttr(
            IntegerSet(m.num_dims, m.num_symbols, m.results, cond.eq_flags))
        op.set_operands(new_ops)


def _unique_users(value: Value) -> list[Operation]:
    users: list[Operation] = []
    seen: set[int] = set()
    for use in value.uses:
        if id(use.op) not in seen:
            seen.add(id(use.op))
            users.append(use.op)
    return users


def fold_affine_apply(apply: AffineApplyOp) -> bool:
    """Compose ``apply`` into the maps of its affine users (loads, stores, applies, min/max,
    loop bounds, if conditions: MLIR's ``composeAffineMapAndOperands``) and erase it when no
    other user is left; returns whether it was erased."""
    result = apply.result
    for user in _unique_users(result):
        _compose_user(user, result, apply.map, apply.operands)
    if not result.uses:
        apply.erase()
        return True
    return False


def replace_index_uses(value: Value, amap: AffineMap, operands: Sequence[Value],
                       builder: Builder, loc=None) -> None:
    """Replace every use of the index ``value`` by ``amap(operands)`` (one result): folded into
    affine users; the others read an ``affine.apply`` created with ``builder`` (which must be
    at a point dominating every use)."""
    if not value.uses:
        return
    apply = builder.create(AffineApplyOp.build, amap, list(operands), loc=loc)
    value.replace_all_uses_with(apply.result)
    fold_affine_apply(apply)


# ---------------------------------------------------------------------------------------------
# bounds and trip counts


def _aligned_bounds(loop: AffineForOp) -> tuple[_Atoms, list[AffineExpr], list[AffineExpr]]:
    atoms = _Atoms()
    return (atoms, atoms.import_exprs(loop.lower_map, loop.lower_operands),
            atoms.import_exprs(loop.upper_map, loop.upper_operands))


def _global_leaf(e: AffineExpr) -> dict:
    return {("d", e.position): 1}


def constant_trip_count(loop: AffineForOp) -> Optional[int]:
    """MLIR's ``getConstantTripCount``: the number of iterations when the (single-result)
    bounds differ by a constant (``%i * 4 to %i * 4 + 4``: 4), else ``None``."""
    if loop.lower_map.num_results != 1 or loop.upper_map.num_results != 1:
        return None
    _, lbs, ubs = _aligned_bounds(loop)
    diff = _linearize(ubs[0] - lbs[0], _global_leaf)
    if not _is_const(diff):
        return None
    return max(0, -(-_cval(diff) // loop.step))


def trip_count_divisor(loop: AffineForOp) -> int:
    """MLIR's ``getLargestDivisorOfTripCount``: a number known to divide the trip count (the
    trip count itself when constant, 1 when nothing is known; 0 for a loop that never runs)."""
    tc = constant_trip_count(loop)
    if tc is not None:
        return tc
    if loop.lower_map.num_results != 1:
        return 1
    _, lbs, ubs = _aligned_bounds(loop)
    g = 0
    for ub in ubs:
        diff = _linearize(ub - lbs[0], _global_leaf)
        d = 0
        for c in diff.values():
            d = math.gcd(d, c)
        g = math.gcd(g, d // loop.step if d % loop.step == 0 else 1)
    return g if g else 1


_Interval = tuple[float, float]
_UNBOUNDED: _Interval = (-math.inf, math.inf)


def _form_interval(lin: dict, leaf_interval: Callable[[object], _Interval]) -> _Interval:
    lo = hi = float(_cval(lin))
    for k, c in lin.items():
        if k is None:
            continue
        if k[0] == "v":
            a, b = leaf_interval(k[1])
        elif k[0] in ("floordiv", "ceildiv", "mod") and isinstance(k[2], int):
            a0, b0 = _form_interval(dict(k[1]), leaf_interval)
            q = k[2]
            if k[0] == "mod":
                a, b = 0, q - 1
                if math.isfinite(a0) and math.isfinite(b0) and a0 // q == b0 // q:
                    a, b = a0 % q, b0 % q
            else:
                rnd = (lambda x: math.floor(x / q)) if k[0] == "floordiv" else \
                    (lambda x: math.ceil(x / q))
                a = rnd(a0) if math.isfinite(a0) else a0
                b = rnd(b0) if math.isfinite(b0) else b0
        else:
            return _UNBOUNDED
        if c > 0:
            lo, hi = lo + c * a, hi + c * b
        else:
            lo, hi = lo + c * b, hi + c * a
        if math.isnan(lo) or math.isnan(hi):
            return _UNBOUNDED
    return lo, hi


def _value_interval(v: Value, memo: dict) -> _Interval:
    """Bounds of an index value from the loops around it (box over-approximation)."""
    if v in memo:
        return memo[v]
    memo[v] = _UNBOUNDED          # cycles (none expected) stay unbounded
    out = _UNBOUNDED
    if isinstance(v, BlockArgument) and isinstance(v.block.parent_op, AffineForOp) \
            and v.index == 0:
        loop = v.block.parent_op
        lbs = value_linear_form(loop.lower_map, loop.lower_operands)
        ubs = value_linear_form(loop.upper_map, loop.upper_operands)
        leaf = lambda w: _value_interval(w, memo)  # noqa: E731
        lo = max(_form_interval(lb, leaf)[0] for lb in lbs)
        hi = min(_form_interval(ub, leaf)[1] for ub in ubs) - 1
        out = (lo, hi)
    else:
        form = _value_form(v)
        if ("v", v) not in form:
            out = _form_interval(form, lambda w: _value_interval(w, memo))
    memo[v] = out
    return out


def loop_runs_at_least_once(loop: AffineForOp) -> bool:
    """Whether ``loop`` provably runs at least once whenever it is reached: every upper bound
    exceeds every lower bound over the ranges of the enclosing induction variables (intervals,
    so correlated bounds may fail to be proven).  ``0 to min(256, 1000 - %c * 256)`` inside
    ``%c = 0 to 4`` does; ``0 to %n`` does not."""
    lbs = value_linear_form(loop.lower_map, loop.lower_operands)
    ubs = value_linear_form(loop.upper_map, loop.upper_operands)
    memo: dict = {}
    for lb in lbs:
        for ub in ubs:
            lo, _ = _form_interval(_add(ub, lb, -1), lambda w: _value_interval(w, memo))
            if not lo >= 1:
                return False
    return True


# ---------------------------------------------------------------------------------------------
# small helpers


def is_defined_outside(value: Value, op: Operation) -> bool:
    """Whether ``value`` is defined outside ``op`` (neither by ``op`` nor inside its regions)."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op
    else:
        owner = value.defining_op
    if owner is None:
        return True
    return owner is not op and not op.is_proper_ancestor_of(owner)


def describe_loop(loop: AffineForOp) -> str:
    """``'affine.for' %arg3`` with the name the printer gives the induction variable."""
    from .printer import value_namer
    p = value_namer(loop)
    try:
        return f"'affine.for' {p.value_name(loop.induction_var)}"
    except Exception:   # pragma: no cover - detached loops
        return "'affine.for'"


def get_perfectly_nested_loops(root: AffineForOp) -> list[AffineForOp]:
    """MLIR's ``getPerfectlyNestedLoops``: ``root`` and the loops below it as long as each body
    holds exactly one op besides its terminator, an ``affine.for``."""
    nest = [root]
    cur = root
    while True:
        ops = cur.body.ops[:-1]
        if len(ops) != 1 or not isinstance(ops[0], AffineForOp):
            return nest
        cur = ops[0]
        nest.append(cur)


def add_iter_args(loop: AffineForOp, inits: Sequence[Value],
                  yields: Sequence[Value] = ()) -> list[BlockArgument]:
    """Append loop-carried values to ``loop`` (MLIR's ``replaceWithAdditionalYields``, in
    place): new inits, region iter_args and results; ``yields`` (when given) are appended to
    the ``affine.yield``, else the caller extends it.  Returns the new region iter_args."""
    ops = list(loop.operands) + list(inits)
    loop.set_operands(ops)
    args = [loop.body.add_arg(v.type) for v in inits]
    for v in inits:
        loop.results.append(OpResult(v.type, loop, len(loop.results)))
    if yields:
        y = loop.yield_op
        y.set_operands(list(y.operands) + list(yields))
    return args


def split_sum_chains(loop: AffineForOp, parts: int) -> int:
    """Each loop-carried float sum whose body is one chain ``acc + p0 + p1 + ...`` (a k loop
    unrolled by K_U after scalar replacement) becomes ``parts`` partial sums carried side by
    side, ``p0, p_parts, ...`` into the first, ``p1, ...`` into the second, added pairwise
    after the loop: ``parts`` chains in flight instead of one, for a tile with fewer
    accumulators than the FMA latency needs (LLVM's loop vectorizer interleaves reductions
    the same way).  The sum reassociates (the last bits change).  Returns how many sums were
    split; a chain whose length ``parts`` does not divide stays as it is."""
    from .dialects.arith import ConstantOp
    from .ir import OP_REGISTRY
    from .types import FloatType, VectorType
    block = loop.body
    split = 0
    for n, arg in enumerate(list(loop.region_iter_args)):
        elem = arg.type.element_type if isinstance(arg.type, VectorType) else arg.type
        if not isinstance(elem, FloatType):
            continue
        chain, sides, v = [], [], loop.yield_op.operands[n]
        while v is not arg:
            op = v.defining_op
            if op is None or op.name != "arith.addf" or op.parent is not block or \
                    op.attributes.get("fastmath") is not None or len(v.uses) != 1:
                chain = None
                break
            side = next((k for k, x in enumerate(op.operands)
                         if x is arg or (x.defining_op is not None and
                                         x.defining_op.name == "arith.addf" and
                                         x.defining_op.parent is block)), None)
            if side is None:
                chain = None
                break
            chain.append(op)
            sides.append(side)
            v = op.operands[side]
        if not chain or len(arg.uses) != 1 or len(chain) % parts:
            continue
        chain.reverse()
        sides.reverse()
        zero = ConstantOp.build(0.0, arg.type, loc=loop.loc)
        loop.parent.insert_before(loop, zero)
        heads = [arg] + add_iter_args(loop, [zero.results[0]] * (parts - 1))
        for t, (op, side) in enumerate(zip(chain, sides)):
            op.set_operand(side, heads[t % parts])
            heads[t % parts] = op.results[0]
        y = loop.yield_op
        first_new = len(y.operands)
        y.set_operands(list(y.operands[:n]) + [heads[0]] + list(y.operands[n + 1:]) +
                       heads[1:])
        results = [loop.results[n]] + loop.results[first_new:first_new + parts - 1]
        old_uses = list(results[0].uses)
        AddF = OP_REGISTRY["arith.addf"]
        b = Builder.after(loop)
        while len(results) > 1:       # pairwise: (r0 + r1) + (r2 + r3)
            pairs = [b.create(AddF.build, results[t], results[t + 1], loc=loop.loc).results[0]
                     for t in range(0, len(results) - 1, 2)]
            results = pairs + (results[-1:] if len(results) % 2 else [])
        for use in old_uses:
            use.op.set_operand(use.index, results[0])
        split += 1
    return split


def _check_factor(factor: int, what: str) -> None:
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
        raise ValueError(f"{what} factor must be a positive integer, got {factor!r}")


def _has_only_terminator(loop: AffineForOp) -> bool:
    return len(loop.body.ops) <= 1


def _bump_map(k: int) -> AffineMap:
    return AffineMap.get(1, 0, (dim(0) + k,))


# ---------------------------------------------------------------------------------------------
# promotion


def promote_if_single_iteration(loop: AffineForOp) -> bool:
    """MLIR's ``promoteIfSingleIteration``: a loop that runs exactly once is replaced by its
    body; its IV becomes the lower bound (folded into affine users), its iter_args the inits
    and its results the yielded values.  Returns whether it happened.

        affine.for %j = %i to %i + 1 { S(%j) }   ->   S(%i)
    """
    if constant_trip_count(loop) != 1:
        return False
    block = loop.body
    replace_index_uses(loop.induction_var, loop.lower_map, loop.lower_operands,
                       Builder.before(loop), loop.loc)
    for arg, init in zip(loop.region_iter_args, loop.inits):
        arg.replace_all_uses_with(init)
    yielded = list(block.terminator.operands)
    for res, v in zip(loop.results, yielded):
        res.replace_all_uses_with(v)
    body = block.ops[:-1]
    del block.ops[:-1]
    for op in body:
        op.parent = None
    loop.parent.insert_ops(loop.parent.index_of(loop), body)
    loop.erase()
    return True


def _erase_zero_trip(loop: AffineForOp) -> None:
    for res, init in zip(loop.results, loop.inits):
        res.replace_all_uses_with(init)
    loop.erase()


# ---------------------------------------------------------------------------------------------
# unroll


class UnrollResult(NamedTuple):
    """What an unroll left: ``main`` is the unrolled (or unroll-jammed) loop, ``cleanup`` the
    loop running the iterations the factor does not cover; either is ``None`` when it does not
    exist (the factor divides the trip count, the loop was fully unrolled or promoted)."""

    main: Optional[AffineForOp]
    cleanup: Optional[AffineForOp]


def _split_point(loop: AffineForOp, factor: int) -> tuple[AffineMap, list[Value], bool]:
    """The first iteration the main loop of an unroll by ``factor`` does not run:
    ``lb + ((ub - lb) ceildiv step) floordiv factor * factor * step`` (single-result bounds),
    and whether it provably is ``>= lb`` (else the cleanup needs ``max(lb, split)``)."""
    atoms, lbs, ubs = _aligned_bounds(loop)
    lb, ub = lbs[0], ubs[0]
    step = loop.step
    tc = (ub - lb).ceildiv(step)
    split = lb + tc.floordiv(factor) * (factor * step)
    m, ops = atoms.export([split])
    memo: dict = {}
    lo, _ = _form_interval(_add(value_linear_form(m, ops)[0],
                                value_linear_form(loop.lower_map, loop.lower_operands)[0], -1),
                           lambda w: _value_interval(w, memo))
    return m, ops, lo >= 0


def _generate_cleanup(loop: AffineForOp, factor: int) -> AffineForOp:
    """MLIR's ``generateCleanupLoopForUnroll``: a copy of ``loop`` after it runs from the split
    point to the upper bound; ``loop`` now stops at the split point.  Loop results flow
    through the cleanup loop (its inits are ``loop``'s results)."""
    split_map, split_ops, above_lb = _split_point(loop, factor)
    cleanup = loop.clone()
    loop.parent.insert_after(loop, cleanup)
    if above_lb:
        cleanup.set_lower_bound(split_map, split_ops)
    else:
        atoms = _Atoms()
        exprs = atoms.import_exprs(loop.lower_map, loop.lower_operands) + \
            atoms.import_exprs(split_map, split_ops)
        cleanup.set_lower_bound(*atoms.export(exprs))
    loop.set_upper_bound(split_map, split_ops)
    _chain_results(loop, cleanup)
    return cleanup


def _chain_results(first: AffineForOp, then: AffineForOp) -> None:
    """``then`` (a copy of ``first`` placed after it) continues its iterations: the users of
    ``first``'s results read ``then``'s, whose inits are ``first``'s results."""
    if first.results:
        for res, new in zip(first.results, then.results):
            res.replace_all_uses_with(new)
        n = len(then.operands) - len(first.results)
        then.set_operands(list(then.operands[:n]) + list(first.results))


def peel_last_iterations(loop: AffineForOp, count: int) -> Optional[AffineForOp]:
    """Peel the last ``count`` iterations of ``loop`` into a copy that runs after it (MLIR's
    ``scf`` peeling, ``peelForLoop``, peels one partial iteration; this peels whole ones, so
    that code can be placed between the two parts, e.g. a prefetch shortly before a loop
    ends).  ``loop`` keeps the first ``trip count - count`` iterations; its results flow
    through the copy (the copy's inits are ``loop``'s results).  Returns the copy, or ``None``
    (nothing changed) unless the trip count is constant, greater than ``count`` and the
    lower bound a single expression.

        affine.for %k = %lb to %lb + 256 step 4 iter_args(%a = %z)
      ->
        %r = affine.for %k = %lb to %lb + 224 step 4 iter_args(%a = %z)
        affine.for %k = %lb + 224 to %lb + 256 step 4 iter_args(%a = %r)
    """
    trips = constant_trip_count(loop)
    if trips is None or not 0 < count < trips or loop.lower_map.num_results != 1:
        return None
    lb = loop.lower_map
    split = AffineMap.get(lb.num_dims, lb.num_symbols,
                          (lb.results[0] + (trips - count) * loop.step,))
    operands = list(loop.lower_operands)
    tail = loop.clone()
    loop.parent.insert_after(loop, tail)
    tail.set_lower_bound(split, operands)
    loop.set_upper_bound(split, operands)
    _chain_results(loop, tail)
    return tail


def _unroll_body(loop: AffineForOp, factor: int) -> None:
    """Append ``factor - 1`` copies of the body (IV bumped, iter_args chained) and scale the
    step (MLIR's ``generateUnrolledLoop``)."""
    body = loop.body
    term = body.terminator
    originals = list(body.ops[:-1])
    iv = loop.induction_var
    step = loop.step
    iv_used = bool(iv.uses)
    last = list(term.operands)
    for k in range(1, factor):
        b = Builder.before(term)    # fresh: folding below erases ops of the block
        mapping: dict = {}
        apply = None
        if iv_used:
            apply = b.create(AffineApplyOp.build, _bump_map(k * step), [iv], loc=loop.loc)
            mapping[iv] = apply.result
        for arg, v in zip(loop.region_iter_args, last):
            mapping[arg] = v
        for op in originals:
            b.insert(op.clone(mapping))
        last = [mapping.get(v, v) for v in term.operands]
        if apply is not None:
            fold_affine_apply(apply)
    term.set_operands(last)
    loop.set_step(step * factor)


def _refuse(loop: AffineForOp, what: str, factor: int, why: str) -> ScheduleError:
    return ScheduleError(f"cannot {what} {describe_loop(loop)} by {factor}: {why}", loop.loc)


def _check_cleanup_possible(loop: AffineForOp, factor: int, what: str) -> bool:
    """Whether a cleanup loop is needed; refuses when it cannot be expressed."""
    if trip_count_divisor(loop) % factor == 0:
        return False
    if loop.lower_map.num_results != 1 or loop.upper_map.num_results != 1:
        bound = "lower bound is a max" if loop.lower_map.num_results != 1 else \
            "upper bound is a min"
        raise _refuse(loop, what, factor, f"its {bound} and {factor} does not divide the trip "
                      f"count, so the cleanup loop's lower bound is not affine")
    return True


def unroll(loop: AffineForOp, factor: int, *, cleanup: bool = True) -> UnrollResult:
    """Unroll ``loop`` by ``factor`` (MLIR's ``loopUnrollByFactor``): the body is repeated
    ``factor`` times with the IV bumped by the step (``%A[%i + 1]``) and the iter_args chained
    through the copies, the step multiplied by ``factor``.

    When ``factor`` does not provably divide the trip count, ``cleanup=True`` (default) adds a
    cleanup loop after the main one for the remaining iterations (its bound is the map
    ``lb + (tc floordiv factor) * factor * step``; results flow through it), and
    ``cleanup=False`` refuses.  A constant trip count below ``factor`` unrolls fully (with
    ``cleanup=True``).  Loops with a ``max`` lower / ``min`` upper bound are refused unless
    ``factor`` divides every candidate trip count (MLIR's restriction: the cleanup's lower
    bound would not be affine).  Single-iteration loops left over are promoted.

        affine.for %i = 0 to %n {          affine.for %i = 0 to #split()[%n] step 2 { S(%i)
          S(%i)                  ->            S(%i + 1) }
        }                                  affine.for %i = max(0, #split()[%n]) to %n { S(%i) }
    """
    _check_factor(factor, "unroll")
    tc = constant_trip_count(loop)
    if factor == 1:
        if tc == 1:
            promote_if_single_iteration(loop)
            return UnrollResult(None, None)
        return UnrollResult(loop, None)
    if _has_only_terminator(loop) or tc == 0:
        return UnrollResult(loop, None)
    if tc is not None and tc < factor:
        if not cleanup:
            raise _refuse(loop, "unroll", factor, f"its trip count {tc} is smaller than the "
                          f"factor (cleanup=False)")
        unroll_full(loop)
        return UnrollResult(None, None)
    needs_cleanup = _check_cleanup_possible(loop, factor, "unroll")
    if needs_cleanup and not cleanup:
        raise _refuse(loop, "unroll", factor, "the factor does not divide the trip count "
                      "(cleanup=False)")
    rest = _generate_cleanup(loop, factor) if needs_cleanup else None
    _unroll_body(loop, factor)
    main: Optional[AffineForOp] = loop
    if promote_if_single_iteration(loop):
        main = None
    if rest is not None and promote_if_single_iteration(rest):
        rest = None
    return UnrollResult(main, rest)


def unroll_full(loop: AffineForOp) -> None:
    """Replace a loop with a constant trip count by that many copies of its body (MLIR's
    ``loopUnrollFull``); a loop that never runs is erased (its results become its inits).
    Refuses (:class:`ScheduleError`) a loop whose trip count is not constant."""
    tc = constant_trip_count(loop)
    if tc is None:
        raise ScheduleError(f"cannot fully unroll {describe_loop(loop)}: its trip count is not "
                            f"constant", loop.loc)
    if tc == 0:
        _erase_zero_trip(loop)
        return
    if tc > 1:
        _unroll_body(loop, tc)
    promote_if_single_iteration(loop)


# ---------------------------------------------------------------------------------------------
# unroll-and-jam


def _gather_sub_blocks(loop: AffineForOp) -> tuple[list[list[Operation]], list[AffineForOp]]:
    """MLIR's ``JamBlockGatherer``: the maximal runs of ops without an ``affine.for`` in the
    body of ``loop`` and, recursively, in the bodies of the loops nested in it (through
    ``affine.for`` only: an ``affine.if`` is part of a run and is copied whole), and the nested
    loops reached that way (the ones the jammed copies share)."""
    runs: list[list[Operation]] = []
    shared: list[AffineForOp] = []

    def walk(block) -> None:
        run: list[Operation] = []
        for op in block.ops[:-1]:
            if isinstance(op, AffineForOp):
                if run:
                    runs.append(run)
                    run = []
                shared.append(op)
                walk(op.body)
            else:
                run.append(op)
        if run:
            runs.append(run)

    walk(loop.body)
    return runs, shared


def _check_inner_bounds(loop: AffineForOp, factor: int, shared: list[AffineForOp]) -> None:
    """The loops nested in ``loop`` are shared by the jammed copies: their bounds may not
    depend on ``loop``'s IV nor on values computed in its body (induction variables of the
    nested loops are fine).  MLIR's ``areInnerBoundsInvariant``, refined."""
    for inner in shared:
        for v in list(inner.lower_operands) + list(inner.upper_operands):
            if is_defined_outside(v, loop):
                continue
            if isinstance(v, BlockArgument) and v.index == 0 and v is not loop.induction_var \
                    and isinstance(v.block.parent_op, AffineForOp):
                continue
            why = "the induction variable" if v is loop.induction_var else \
                "a value computed in its body"
            raise _refuse(loop, "unroll-and-jam", factor,
                          f"the bounds of the nested {describe_loop(inner)} "
                          f"({inner.loc}) depend on {why}, so the jammed copies cannot share it")


def unroll_jam(loop: AffineForOp, factor: int, *,
               check: Optional[JamCheck] = None) -> UnrollResult:
    """Unroll ``loop`` by ``factor`` and jam the copies into the loops nested in it (MLIR's
    ``loopUnrollJamByFactor``): each maximal run of ops without a loop (a *sub-block*) in the
    body and in the nested loops' bodies is followed by its ``factor - 1`` copies for IVs
    ``%i + step``, ``%i + 2 * step``...; the step is multiplied by ``factor``.  A cleanup loop
    runs the iterations the factor does not cover (``unroll``'s rules).

    Preconditions, checked before anything changes (:class:`ScheduleError` otherwise):
      * the bounds of the nested loops do not depend on ``loop``'s IV or body values;
      * ``loop`` has no iter_args if loops are nested in it (jamming would split the
        loop-carried chain: a reassociation); without nested loops the jam is an unroll and
        iter_args are chained.  Nested loops with iter_args get one set per copy;
      * ``check(loop, factor)`` when given (the ``--hopt-unroll`` pass passes
        ``polyopt.schedules.loop_legality.unroll_jam_is_legal``): jamming reorders iterations
        and is only legal when no dependence is reversed.  Without ``check`` legality is the
        caller's business, as with MLIR's utility.

    A constant trip count below ``factor`` leaves the loop unchanged (everything would be
    cleanup): the result is ``UnrollResult(None, loop)``.

        affine.for %i = 0 to 8 {            affine.for %i = 0 to 8 step 2 {
          affine.for %k = 0 to 16 {   ->      affine.for %k = 0 to 16 {
            S(%i, %k) }}                        S(%i, %k)
                                                S(%i + 1, %k) }}
    """
    _check_factor(factor, "unroll-and-jam")
    tc = constant_trip_count(loop)
    if factor == 1:
        if tc == 1:
            promote_if_single_iteration(loop)
            return UnrollResult(None, None)
        return UnrollResult(loop, None)
    if _has_only_terminator(loop) or tc == 0:
        return UnrollResult(loop, None)
    if tc is not None and tc < factor:
        return UnrollResult(None, loop)
    if not any(isinstance(op, AffineForOp) for op in loop.body.ops):
        # nothing to jam into: an unroll, which never reorders anything
        return unroll(loop, factor, cleanup=True)
    if loop.inits:
        raise _refuse(loop, "unroll-and-jam", factor, "it has iter_args and loops nested in "
                      "it: the jammed copies would need separate loop-carried values combined "
                      "afterwards, which reassociates the computation")
    sub_blocks, shared = _gather_sub_blocks(loop)
    _check_inner_bounds(loop, factor, shared)
    needs_cleanup = _check_cleanup_possible(loop, factor, "unroll-and-jam")
    if check is not None:
        check(loop, factor)

    rest = _generate_cleanup(loop, factor) if needs_cleanup else None
    mappings: list[dict] = [{} for _ in range(factor - 1)]

    # nested loops with iter_args get factor - 1 more sets of them (fixed after cloning)
    carried = [inner for inner in shared if inner.inits]
    counts = {}
    for inner in carried:
        n = len(inner.inits)
        counts[id(inner)] = n
        inits = list(inner.inits)
        yields = list(inner.yield_op.operands)
        add_iter_args(inner, inits * (factor - 1), yields * (factor - 1))
        args, results = inner.region_iter_args, inner.results
        for u in range(1, factor):
            for j in range(n):
                mappings[u - 1][args[j]] = args[u * n + j]
                mappings[u - 1][results[j]] = results[u * n + j]

    iv = loop.induction_var
    step = loop.step
    loop.set_step(step * factor)
    anchors = [run[-1] for run in sub_blocks]       # insertion points move as copies go in
    for u in range(1, factor):
        mapping = mappings[u - 1]
        applies = []
        for k, run in enumerate(sub_blocks):
            b = Builder.after(anchors[k])
            if iv.uses:
                apply = b.create(AffineApplyOp.build, _bump_map(u * step), [iv], loc=loop.loc)
                mapping[iv] = apply.result
                applies.append(apply)
            for op in run:
                anchors[k] = b.insert(op.clone(mapping))
        for inner in carried:
            n = counts[id(inner)]
            ctrl = len(inner.operands) - len(inner.inits)
            y = inner.yield_op
            for j in range(n):
                inner.set_operand(ctrl + u * n + j, mapping.get(inner.operand(ctrl + j),
                                                                inner.operand(ctrl + j)))
                y.set_operand(u * n + j, mapping.get(y.operand(j), y.operand(j)))
        for apply in applies:
            fold_affine_apply(apply)

    main: Optional[AffineForOp] = loop
    if promote_if_single_iteration(loop):
        main = None
    if rest is not None and promote_if_single_iteration(rest):
        rest = None
    return UnrollResult(main, rest)


def results_over_shared_operands(amap: AffineMap, ops: Sequence[Value],
                                 operands: list) -> list[AffineExpr]:
    """``amap``'s results over the dims of ``operands``, a list shared by several maps:
    each of ``ops`` (dims then symbols, which become dims too) is found in ``operands`` by
    identity or appended to it."""
    idx = []
    for v in ops:
        for n, u in enumerate(operands):
            if u is v:
                idx.append(n)
                break
        else:
            operands.append(v)
            idx.append(len(operands) - 1)
    nd = amap.num_dims
    return [r.replace([dim(idx[t]) for t in range(nd)],
                      [dim(idx[nd + t]) for t in range(amap.num_symbols)])
            for r in amap.results]
