"""Guards left in reduction loops by fusion and unroll-and-jam: drop the ones whose branch is
decided by the loops around them, and take the others out of the innermost loop.

When the scheduler fuses a producer into the first iteration of its consumer's loop
(gramschmidt's ``Q[i][k] = A[i][k] / R[k][k]`` into the ``j = k + 1`` iteration of
``R[k][j] += Q[i][k] * A[i][j]``), the producer sits in the consumer's innermost loop under
``affine.if (j == k + 1)``; unroll-and-jam of ``j`` by 8 copies that guard into each of the
eight statements, seven of them never true (``j`` steps by 8 from ``k + 1``).  The guarded
store in the reduction loop then keeps scalar replacement from holding ``R[k][j]`` in a
register.

- :func:`simplify_guards` removes an ``affine.if`` whose condition is false at every point of
  the loops around it (keeping its ``else`` ops) or true at every point (keeping its ``then``
  ops), decided by ISL on those loops' domain (steps included): MLIR's
  ``affine::simplifyIntegerSet`` / the canonicalization of ``affine.if`` with a known
  condition, over the enclosing loops' constraints.
- :func:`unswitch_invariant_guards` versions an innermost loop on a guard that does not use
  its induction variable: ``affine.if c { loop with the then ops } else { loop with the else
  ops }``: MLIR's ``affine::hoistAffineIfOp`` (affine loop unswitching).
"""

from __future__ import annotations

from typing import Optional

from ..affine.dialects.affine import AffineForOp, AffineIfOp
from ..affine.ir import Block, Operation, Value, walk_ops
from .model import iteration_domain

__all__ = ["simplify_guards", "unswitch_invariant_guards"]

#: An innermost loop is versioned on at most this many guards (2^n copies of it).
MAX_UNSWITCHED = 2


def _inline(block: Optional[Block], if_op: AffineIfOp) -> None:
    """Move ``block``'s ops (not its terminator) before ``if_op``."""
    if block is None:
        return
    for op in list(block.ops):
        if op is block.terminator:
            continue
        op.detach()
        if_op.parent.insert_before(if_op, op)


def _always(if_op: AffineIfOp) -> Optional[bool]:
    """True / False when ``if_op``'s condition holds at every / no point of its loops; None
    when it depends on the point or ISL cannot tell."""
    try:
        where, ivs = iteration_domain(if_op)
        taken, taken_ivs = iteration_domain(if_op.then_block.terminator)
    except Exception:        # a bound or condition ISL does not model: leave the guard
        return None
    if len(ivs) != len(taken_ivs) or any(a is not b for a, b in zip(ivs, taken_ivs)):
        return None
    if taken.is_empty():
        return False
    if where.is_subset(taken):
        return True
    return None


def simplify_guards(root: Operation) -> int:
    """Drop the ``affine.if`` ops without results under ``root`` whose branch the loops
    around them decide; the number dropped."""
    count = 0
    for if_op in [op for op in walk_ops(root) if isinstance(op, AffineIfOp)]:
        if if_op.results or if_op.parent is None:
            continue
        known = _always(if_op)
        if known is None:
            continue
        _inline(if_op.then_block if known else if_op.else_block, if_op)
        if_op.erase()
        count += 1
    return count


def _invariant_guard(loop: AffineForOp) -> Optional[AffineIfOp]:
    iv = loop.induction_var
    for op in loop.body.ops:
        if isinstance(op, AffineIfOp) and not op.results \
                and all(v is not iv and _outside(v, loop) for v in op.cond_operands):
            return op
    return None


def _outside(v: Value, loop: AffineForOp) -> bool:
    block = v.owner_block
    owner = block.parent_op if block is not None else None
    return owner is None or not (owner is loop or loop.is_proper_ancestor_of(owner))


def _version(loop: AffineForOp, guard: AffineIfOp) -> None:
    index = loop.body.index_of(guard)
    outer = AffineIfOp.build(guard.condition, list(guard.cond_operands), with_else=True,
                             loc=guard.loc)
    loop.parent.insert_before(loop, outer)
    taken = loop.clone()
    outer.then_block.insert_before(outer.then_block.terminator, taken)
    inner = taken.body.ops[index]
    _inline(inner.then_block, inner)
    inner.erase()
    loop.detach()
    outer.else_block.insert_before(outer.else_block.terminator, loop)
    _inline(guard.else_block, guard)
    guard.erase()


def unswitch_invariant_guards(root: Operation) -> int:
    """Version each innermost ``affine.for`` under ``root`` (no loops inside, nothing carried)
    on up to :data:`MAX_UNSWITCHED` of its guards that do not depend on its induction
    variable; the number of guards taken out."""
    count = 0
    loops = [op for op in walk_ops(root) if isinstance(op, AffineForOp) and not op.inits
             and not any(isinstance(o, AffineForOp) for o in op.walk() if o is not op)]
    for loop in loops:
        work = [loop]
        for _ in range(MAX_UNSWITCHED):
            nxt = []
            for lp in work:
                guard = _invariant_guard(lp)
                if guard is None:
                    continue
                _version(lp, guard)
                count += 1
                outer = lp.parent.parent_op          # the new if's else branch holds lp
                nxt += [outer.then_block.ops[0], lp]
            work = nxt
    return count
