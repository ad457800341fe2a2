"""Raising structured control flow to the affine dialect, so that the polyhedral passes see it
(Polygeist's ``raise-scf-to-affine``; MLIR 22 has no such pass, and its
``--affine-raise-from-memref`` does the memref part, whose rules
:func:`raise_memref_accesses` follows exactly).

    scf.for %i = %c0 to %n step %c1 {           affine.for %i = 0 to %n {
      %j = arith.addi %i, %c1 : index             %v = affine.load %A[%i + 1] : memref<?xf64>
      %v = memref.load %A[%j] : memref<?xf64>  ->  affine.if #set(%i)[%m] {
      %c = arith.cmpi slt, %i, %m : index            affine.store %v, %B[%i] : memref<?xf64>
      scf.if %c {                                  }
        memref.store %v, %B[%i] : memref<?xf64>  }
      }                                          (#set = (d0)[s0] : (-d0 + s0 - 1 >= 0))
    }

What is raised (outer ops first, so that an inner loop's bounds may use the raised outer IVs):

* ``scf.for`` over ``index`` with a positive constant step, signed comparison, and bounds that
  are affine in valid dims and symbols -> ``affine.for`` (``iter_args`` -> ``iter_args``).  A
  bound is an affine expression of constants, affine IVs, valid symbols (function arguments,
  ``memref.dim`` ...), ``affine.apply`` results (composed) and ``arith.addi``/``subi``/``muli``
  of those; a lower bound ``arith.maxsi`` tree and an upper bound ``arith.minsi`` tree become
  multi-result ``max``/``min`` bound maps (what ``--lower-affine`` generates for them).
* ``scf.if`` whose condition is an ``arith.cmpi`` (``slt``, ``sle``, ``sgt``, ``sge``, ``eq``)
  of such expressions, or an ``arith.andi`` of those -> ``affine.if``; a lone ``ne`` becomes
  the ``eq`` set with the branches swapped.
* ``memref.load``/``memref.store`` whose subscripts are such expressions -> ``affine.load``/
  ``affine.store``.

Expressions also take ``mod``, ``floordiv`` and ``ceildiv`` by positive constants written as
the exact ``arith`` sequences ``--lower-affine`` expands them into, so that affine code lowered
by upstream comes back as it was.

Index arithmetic left without users by the raising (the bounds' constants, the subscripts'
``arith.addi``) is erased.  What cannot be raised stays as written; it is executed as written
and the polyhedral passes leave nests that contain it alone (``--remarks`` says why).
"""

from __future__ import annotations

from typing import Callable, Optional

from .affine_expr import (AffineConstantExpr, AffineDimExpr, AffineExpr, AffineExprKind,
                          AffineMap, AffineSymbolExpr, IntegerSet, constant, dim, symbol)
from .affine_rules import is_pure, is_valid_dim, is_valid_symbol
from .attributes import IntegerAttr
from .dialects.affine import (AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp,
                              AffineYieldOp)
from .ir import Block, Operation, Value
from .linear_form import add_forms, constant_of, is_constant_form, scale_form
from .types import IndexType, IntegerType

__all__ = ["raise_scf_to_affine", "raise_memref_accesses"]

Remark = Optional[Callable[[object, str], None]]


def _constant_int(v: Value) -> Optional[int]:
    """The value of an integer ``arith.constant`` (MLIR's ``m_ConstantInt``)."""
    op = v.defining_op
    if op is None or op.name != "arith.constant":
        return None
    a = op.attributes.get("value")
    if not isinstance(a, IntegerAttr) or isinstance(a.value, bool):
        return None
    return a.value if isinstance(v.type, (IndexType, IntegerType)) else None


class _MapOperands:
    """The dims and symbols of a map being built, each value once, in order of first use
    (``--affine-raise-from-memref``'s ``toAffineExpr``/``findInListOrAdd``).

    ``extended`` adds what this pass raises beyond upstream's memref raising: ``arith.subi``
    and the composition of ``affine.apply``.
    """

    def __init__(self, extended: bool):
        self.extended = extended
        self.dims: list[Value] = []
        self.symbols: list[Value] = []

    def expr(self, v: Value) -> Optional[AffineExpr]:
        c = _constant_int(v)
        if c is not None:
            return constant(c)
        op = v.defining_op
        binary = ("arith.addi", "arith.muli", "arith.subi") if self.extended else \
            ("arith.addi", "arith.muli")
        if op is not None and op.name in binary and op.num_operands == 2:
            saved = (len(self.dims), len(self.symbols))
            lhs, rhs = self.expr(op.operands[0]), self.expr(op.operands[1])
            if lhs is not None and rhs is not None:
                if op.name == "arith.addi":
                    return lhs + rhs
                if op.name == "arith.subi":
                    return lhs - rhs
                # a product is affine (or semi-affine) when one factor has no dims
                if lhs.is_symbolic_or_constant() or rhs.is_symbolic_or_constant():
                    return lhs * rhs
            del self.dims[saved[0]:], self.symbols[saved[1]:]
        if self.extended and op is not None and op.name == "arith.select":
            saved = (len(self.dims), len(self.symbols))
            e = self._division(op)
            if e is not None:
                return e
            del self.dims[saved[0]:], self.symbols[saved[1]:]
        if self.extended and op is not None and op.name == "affine.apply":
            saved = (len(self.dims), len(self.symbols))
            amap = op.map
            inner = [self.expr(x) for x in op.operands]
            if all(e is not None for e in inner) and amap.num_results == 1:
                return amap.results[0].replace(inner[:amap.num_dims], inner[amap.num_dims:])
            del self.dims[saved[0]:], self.symbols[saved[1]:]
        if is_valid_symbol(v):
            return symbol(_position(self.symbols, v))
        if is_valid_dim(v):
            return dim(_position(self.dims, v))
        return None

    def _division(self, select: Operation) -> Optional[AffineExpr]:
        """``x mod c``, ``x floordiv c`` or ``x ceildiv c`` (``c`` a positive constant) from the
        exact ``arith`` sequences ``--lower-affine`` expands them into:

            mod:      r = remsi x, c;  select (r < 0), r + c, r
            floordiv: n = x < 0;  q = divsi (select n, -1 - x, x), c;  select n, -1 - q, q
            ceildiv:  p = x <= 0;  q = divsi (select p, 0 - x, x - 1), c;  select p, 0 - q, q + 1
        """
        cond, t, f = select.operands
        cmp = _cmpi(cond)
        if cmp is None or _constant_int(cmp[2]) != 0:
            return None
        pred, x = cmp[0], cmp[1]
        if pred == "slt" and _is(x, "arith.remsi") and f is x and _is(t, "arith.addi") and \
                t.defining_op.operands[0] is x:
            rem = x.defining_op
            c = _constant_int(rem.operands[1])
            if c is not None and c > 0 and _constant_int(t.defining_op.operands[1]) == c:
                lhs = self.expr(rem.operands[0])
                return None if lhs is None else lhs % c
        if pred not in ("slt", "sle") or not _is(t, "arith.subi"):
            return None
        if pred == "slt":     # floordiv
            quotient, corrected, bias = f, t, -1
        else:                 # ceildiv
            if not _is(f, "arith.addi") or _constant_int(f.defining_op.operands[1]) != 1:
                return None
            quotient, corrected, bias = f.defining_op.operands[0], t, 0
        sub = corrected.defining_op
        if not _is(quotient, "arith.divsi") or _constant_int(sub.operands[0]) != bias or \
                sub.operands[1] is not quotient:
            return None
        div = quotient.defining_op
        c = _constant_int(div.operands[1])
        dividend = div.operands[0]
        if c is None or c <= 0 or not _is(dividend, "arith.select"):
            return None
        inner_cond, neg, pos = dividend.defining_op.operands
        if inner_cond is not cond or not _is(neg, "arith.subi"):
            return None
        negated = neg.defining_op
        if _constant_int(negated.operands[0]) != bias or negated.operands[1] is not x:
            return None
        if pred == "slt" and pos is not x:
            return None
        if pred == "sle" and not (_is(pos, "arith.subi") and pos.defining_op.operands[0] is x
                                  and _constant_int(pos.defining_op.operands[1]) == 1):
            return None
        lhs = self.expr(x)
        if lhs is None:
            return None
        return lhs.floordiv(c) if pred == "slt" else lhs.ceildiv(c)

    def map(self, exprs) -> tuple[AffineMap, list[Value]]:
        if self.extended:
            exprs = [_simplified(e) for e in exprs]
        return AffineMap.get(len(self.dims), len(self.symbols), tuple(exprs)), \
            self.dims + self.symbols


def _linear(e: AffineExpr) -> Optional[dict]:
    """``{("d"|"s", position) | None: coefficient}`` of an expression without divisions or
    products of non-constants, else None."""
    if isinstance(e, AffineConstantExpr):
        return {None: e.value} if e.value else {}
    if isinstance(e, AffineDimExpr):
        return {("d", e.position): 1}
    if isinstance(e, AffineSymbolExpr):
        return {("s", e.position): 1}
    lhs, rhs = _linear(e.lhs), _linear(e.rhs)
    if lhs is None or rhs is None:
        return None
    if e.kind is AffineExprKind.ADD:
        return add_forms(lhs, rhs)
    if e.kind is AffineExprKind.MUL:
        if is_constant_form(rhs):
            return scale_form(lhs, constant_of(rhs))
        if is_constant_form(lhs):
            return scale_form(rhs, constant_of(lhs))
    return None


def _simplified(e: AffineExpr) -> AffineExpr:
    """A linear expression as ``dims + symbols + constant`` (what MLIR's ``simplifyAffineExpr``
    makes of it: ``s0 - (d0 + 1) - 1`` becomes ``-d0 + s0 - 2``); others as they are."""
    form = _linear(e)
    if form is None:
        return e
    out: Optional[AffineExpr] = None
    for key in sorted(k for k in form if k is not None):
        base = dim(key[1]) if key[0] == "d" else symbol(key[1])
        term = base * form[key] if form[key] != 1 else base
        out = term if out is None else out + term
    c = constant_of(form)
    if out is None:
        return constant(c)
    return out + c if c else out


def _is(v: Value, name: str) -> bool:
    return v.defining_op is not None and v.defining_op.name == name


def _position(values: list[Value], v: Value) -> int:
    for k, x in enumerate(values):
        if x is v:
            return k
    values.append(v)
    return len(values) - 1


# ---------------------------------------------------------------------------------------------
# bounds and conditions


def _leaves(v: Value, combine: str) -> list[Value]:
    """The operands of a tree of ``combine`` ops (``arith.maxsi``) rooted at ``v``."""
    op = v.defining_op
    if op is not None and op.name == combine and op.num_operands == 2:
        return _leaves(op.operands[0], combine) + _leaves(op.operands[1], combine)
    return [v]


def _guarded(fn):
    """``fn``, returning None instead of exceeding Python's recursion limit on expressions
    thousands of ops deep (they are left as they are)."""
    def guarded(*args):
        try:
            return fn(*args)
        except RecursionError:
            return None
    guarded.__doc__ = fn.__doc__
    return guarded


@_guarded
def _bound(v: Value, is_lower: bool) -> Optional[tuple[AffineMap, list[Value]]]:
    """The bound map of ``v`` (a max of lower bounds or a min of upper bounds)."""
    for leaves in (_leaves(v, "arith.maxsi" if is_lower else "arith.minsi"), [v]):
        ops = _MapOperands(extended=True)
        exprs = [ops.expr(x) for x in leaves]
        if all(e is not None for e in exprs):
            return ops.map(exprs)
    return None


# (lhs, rhs) -> (constraint, is equality), for cmpi predicates an integer set can express
_PREDICATES = {
    "slt": lambda a, b: (b - a - 1, False), "sle": lambda a, b: (b - a, False),
    "sgt": lambda a, b: (a - b - 1, False), "sge": lambda a, b: (a - b, False),
    "eq": lambda a, b: (a - b, True),
}


def _cmpi(v: Value) -> Optional[tuple[str, Value, Value]]:
    op = v.defining_op
    if op is None or op.name != "arith.cmpi" or op.num_operands != 2:
        return None
    if not all(isinstance(x.type, IndexType) for x in op.operands):
        return None
    return op.predicate, op.operands[0], op.operands[1]


@_guarded
def _condition(v: Value) -> Optional[tuple[IntegerSet, list[Value], bool]]:
    """(set, operands, swap): the integer set that holds exactly when the ``i1`` value ``v``
    does; ``swap`` when it is the set of the negation (a lone ``cmpi ne``)."""
    ops = _MapOperands(extended=True)
    constraints: list[AffineExpr] = []
    eqs: list[bool] = []

    def conjunction(c: Value) -> bool:
        op = c.defining_op
        if op is not None and op.name == "arith.andi" and op.num_operands == 2:
            return conjunction(op.operands[0]) and conjunction(op.operands[1])
        cmp = _cmpi(c)
        if cmp is None or cmp[0] not in _PREDICATES:
            return False
        a, b = ops.expr(cmp[1]), ops.expr(cmp[2])
        if a is None or b is None:
            return False
        e, eq = _PREDICATES[cmp[0]](a, b)
        constraints.append(e)
        eqs.append(eq)
        return True

    swap = False
    if not conjunction(v):
        cmp = _cmpi(v)
        if cmp is None or cmp[0] != "ne":
            return None
        ops = _MapOperands(extended=True)
        a, b = ops.expr(cmp[1]), ops.expr(cmp[2])
        if a is None or b is None:
            return None
        constraints, eqs, swap = [a - b], [True], True
    iset = IntegerSet.get(len(ops.dims), len(ops.symbols),
                          [_simplified(e) for e in constraints], eqs)
    return iset, ops.dims + ops.symbols, swap


# ---------------------------------------------------------------------------------------------
# rewriting


def _move_region_body(src: Block, dst: Block) -> Operation:
    """Move ``src``'s ops but its terminator into ``dst`` (before ``dst``'s terminator, if it
    has one), its arguments replaced by ``dst``'s; returns ``src``'s terminator."""
    for old, new in zip(src.args, dst.args):
        old.replace_all_uses_with(new)
    term = src.ops[-1]
    anchor = dst.ops[-1] if dst.ops else None
    for op in list(src.ops[:-1]):
        op.detach()
        if anchor is not None:
            dst.insert_before(anchor, op)
        else:
            dst.append(op)
    return term


def _replace(old: Operation, new: Operation, dead: list[Operation]) -> None:
    old.parent.insert_before(old, new)
    for a, b in zip(old.results, new.results):
        a.replace_all_uses_with(b)
    dead.extend(v.defining_op for v in old.operands if v.defining_op is not None)
    old.erase()


def _for_plan(op: Operation):
    """The bounds and step of the ``affine.for`` the ``scf.for`` becomes, or why it cannot
    become one (a string)."""
    if not isinstance(op.induction_var.type, IndexType):
        return f"its induction variable is '{op.induction_var.type}', not index"
    if op.is_unsigned:
        return "it compares unsigned"
    step = _constant_int(op.step)
    if step is None or step <= 0:
        return "its step is not a positive constant"
    lower = _bound(op.lower_bound, True)
    if lower is None:
        return "its lower bound is not an affine function of dims and symbols"
    upper = _bound(op.upper_bound, False)
    if upper is None:
        return "its upper bound is not an affine function of dims and symbols"
    return lower, upper, step


def _raise_for(op: Operation, plan, dead: list[Operation]) -> Operation:
    (lb_map, lb_ops), (ub_map, ub_ops), step = plan
    new = AffineForOp.build(lb_map, lb_ops, ub_map, ub_ops, step, inits=op.inits, loc=op.loc)
    new.attributes.update({k: v for k, v in op.attributes.items() if k != "unsignedCmp"})
    term = _move_region_body(op.body, new.body)
    if op.inits:
        new.body.append(AffineYieldOp.build(term.operands, loc=term.loc))
    _replace(op, new, dead)
    return new


def _raise_if(op: Operation, cond: tuple[IntegerSet, list[Value], bool],
              dead: list[Operation]) -> Operation:
    iset, operands, swap = cond
    blocks = [op.then_block, op.else_block]
    if swap:
        blocks.reverse()
    new = AffineIfOp.build(iset, operands, op.result_types, with_else=blocks[1] is not None,
                           loc=op.loc)
    new.attributes.update(op.attributes)
    for src, region in zip(blocks, new.regions):
        if src is None:     # no else, or the eq branch of a `ne` without else: nothing to do
            continue
        term = _move_region_body(src, region.blocks[0])
        if op.results:
            region.blocks[0].append(AffineYieldOp.build(term.operands, loc=term.loc))
    _replace(op, new, dead)
    return new


def _raise_control_flow(block: Block, dead: list[Operation], remark: Remark,
                        counts: dict) -> None:
    for op in list(block.ops):
        if op.name == "scf.for":
            plan = _for_plan(op)
            if not isinstance(plan, str):
                op = _raise_for(op, plan, dead)
                counts["scf.for"] += 1
            elif remark is not None:
                remark(op.loc, f"raise-scf-to-affine: 'scf.for' not raised: {plan}")
        elif op.name == "scf.if":
            cond = _condition(op.condition)
            if cond is not None:
                op = _raise_if(op, cond, dead)
                counts["scf.if"] += 1
            elif remark is not None:
                remark(op.loc, "raise-scf-to-affine: 'scf.if' not raised: its condition is not "
                               "a conjunction of affine comparisons")
        for region in op.regions:
            for inner in region.blocks:
                _raise_control_flow(inner, dead, remark, counts)


@_guarded
def _access_map(op: Operation, extended: bool) -> Optional[tuple[AffineMap, list[Value]]]:
    ops = _MapOperands(extended)
    exprs = []
    for v in op.indices:
        e = ops.expr(v)
        if e is None:
            return None
        exprs.append(e)
    return ops.map(exprs)


def _raise_access(op: Operation, extended: bool, dead: list[Operation]) -> bool:
    """``memref.load``/``store`` -> ``affine.load``/``store`` when every subscript is an affine
    expression of valid dims and symbols (upstream's rules unless ``extended``)."""
    access = _access_map(op, extended)
    if access is None:
        return False
    amap, operands = access
    if op.name == "memref.load":
        new = AffineLoadOp.build(op.memref, operands, amap, loc=op.loc)
    else:
        new = AffineStoreOp.build(op.value, op.memref, operands, amap, loc=op.loc)
    _replace(op, new, dead)
    return True


def _accesses(root: Operation) -> list[Operation]:
    return [op for op in root.walk() if op.name in ("memref.load", "memref.store")]


def _erase_dead(candidates: list[Operation]) -> None:
    """Erase the pure ops among ``candidates`` (and then their operands' producers) that have
    no use left."""
    while candidates:
        op = candidates.pop()
        if op.parent is None or not is_pure(op) or op.regions or \
                any(r.has_uses() for r in op.results):
            continue
        producers = [v.defining_op for v in op.operands if v.defining_op is not None]
        op.erase()
        candidates.extend(producers)


# ---------------------------------------------------------------------------------------------
# entry points


def _functions(root: Operation) -> list[Operation]:
    if root.name == "func.func":
        return [root]
    return [op for op in root.walk() if op.name == "func.func" and op.regions[0].blocks]


def raise_scf_to_affine(root: Operation, remark: Remark = None) -> dict[str, int]:
    """Raise the ``scf.for``/``scf.if``/``memref.load``/``memref.store`` ops of every function
    under ``root`` that are affine to their affine counterparts (see the module docstring).

    Returns how many ops of each kind were raised; ``remark(loc, message)`` hears about each
    ``scf.for``/``scf.if`` left as it is and why.
    """
    from .lift_cf_to_scf import lift_cf_to_scf
    lift_cf_to_scf(root, remark)     # loops written as branches first
    counts = {"scf.for": 0, "scf.if": 0, "memref": 0}
    for func in _functions(root):
        dead: list[Operation] = []
        for block in func.regions[0].blocks:
            _raise_control_flow(block, dead, remark, counts)
        for op in _accesses(func):
            counts["memref"] += _raise_access(op, True, dead)
        _erase_dead(dead)
    return counts


def raise_memref_accesses(root: Operation) -> int:
    """MLIR's ``--affine-raise-from-memref``, exactly: every ``memref.load``/``store`` under
    ``root`` whose subscripts are built from integer constants, ``arith.addi``/``muli`` and
    valid symbols and dims becomes ``affine.load``/``store`` (the index arithmetic stays,
    even when unused).  Returns how many were raised."""
    return sum(_raise_access(op, False, []) for op in _accesses(root))
