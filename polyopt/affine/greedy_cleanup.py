"""What MLIR's greedy pattern driver (``applyPatternsGreedily``) does to a module besides
applying its patterns, so that a pass built on it prints what ``mlir-opt`` prints:

* **constant uniquing and hoisting** (``OperationFolder``): at the start of every iteration
  the driver walks the ops in post-order; each ``arith.constant`` moves to the start of its
  function's entry block (unless it is already there, or right after a constant moved
  before it) and a constant equal to one seen before in the same function (same value and
  type) is replaced by that one (:func:`unique_constants`);
* **folding** of ``memref.dim``: of a static dimension to an ``arith.constant``, of a
  ``memref.alloc``/``alloca`` dynamic dimension to its size operand (:func:`fold_dims`);
  and the ``Commutative`` trait's fold: a constant operand of ``arith.addf``, ``muli``,
  ``maxsi``... moves to the right (:func:`fold_commutative`);
* **dead code**: an op without memory writes whose results are unused is erased
  (``isOpTriviallyDead``; :func:`erase_trivially_dead`).

The driver also folds every other op (``arith.addi`` of constants, ``x * 1.0``, constant
``affine.for`` bound operands, ...) and erases region ops with no effects; that is not done
here: :mod:`polyopt.affine.linalg_to_affine` needs the three steps above, and anything else
is left as written.
"""

from __future__ import annotations

import math
import struct
from typing import Iterator, Optional

from .affine_rules import is_constant_like, is_isolated_from_above
from .attributes import FloatAttr, IntegerAttr
from .ir import Block, Operation, Region
from .types import IndexType, MemRefType

__all__ = ["unique_constants", "fold_dims", "fold_commutative", "erase_trivially_dead",
           "cleanup_greedily"]

# arith ops with MLIR's ``Commutative`` trait
_COMMUTATIVE = frozenset(f"arith.{n}" for n in (
    "addi", "addf", "muli", "mulf", "andi", "ori", "xori", "maxsi", "maxui", "minsi", "minui",
    "maximumf", "minimumf", "maxnumf", "minnumf"))

# ops with no memory effects besides reads (or the allocation of their own result)
_EFFECT_FREE = frozenset({
    "affine.apply", "affine.min", "affine.max", "affine.load", "affine.vector_load",
    "memref.load", "memref.dim", "memref.rank", "memref.alloc", "memref.alloca",
    "memref.cast", "memref.subview", "memref.collapse_shape", "memref.expand_shape",
    "memref.reinterpret_cast", "memref.transpose", "memref.view", "memref.get_global",
    "memref.extract_strided_metadata", "vector.broadcast", "vector.splat", "vector.extract",
    "vector.insert", "vector.fma", "vector.shuffle", "vector.extractelement",
    "vector.insertelement", "vector.reduction", "vector.load", "vector.transfer_read",
    "linalg.index", "amx.tile_zero", "amx.tile_load", "amx.tile_mulf", "amx.tile_muli",
})


def _post_order(root: Operation) -> Iterator[Operation]:
    """The ops nested in ``root`` (not ``root``), children first, as ``Region::walk`` visits
    them; the op lists are read as the walk reaches them (moving an op earlier in a block
    does not visit it twice)."""
    for region in root.regions:
        for block in region.blocks:
            for op in list(block.ops):
                if op.parent is not block:
                    continue
                yield from _post_order(op)
                yield op


def _insertion_region(block: Block) -> Optional[Region]:
    """The region constants of ``block`` move to: that of the closest ancestor isolated from
    above (a function body)."""
    region = block.parent
    while region is not None:
        parent = region.parent
        if parent is None or is_isolated_from_above(parent) or parent.parent is None:
            return region
        region = parent.parent.parent
    return None


def _float_key(v: float, t) -> tuple:
    bits = getattr(t, "width", 64)
    if bits == 32:
        return ("f", struct.pack("<f", v))
    return ("f", struct.pack("<d", v)) if not math.isnan(v) else ("nan", repr(v))


def _constant_key(op: Operation) -> Optional[tuple]:
    a = op.attributes.get("value")
    t = op.results[0].type if op.results else None
    if isinstance(a, FloatAttr):
        return (str(t), _float_key(a.value, a.type))
    if isinstance(a, IntegerAttr):
        return (str(t), ("i", a.value))
    values = getattr(a, "values", None)
    if values is not None:
        return (str(t), ("dense", tuple(_float_key(v, None) if isinstance(v, float) else v
                                        for v in values)))
    return None


def unique_constants(root: Operation) -> None:
    """One population walk of the greedy driver (``OperationFolder::insertKnownConstant`` on
    every constant, in post-order): constants move to the start of their function's entry
    block, and duplicates within a function are replaced by the first one met.

    A constant of the entry block stays where it is when it is the block's first op or the
    op before it is a constant that stayed; every other one moves to the very front (so
    constants met later end up first).  Linear in the number of ops: the moves are recorded
    and the blocks rebuilt once."""
    states: dict[int, _Scope] = {}
    touched: dict[int, Block] = {}
    for op in _post_order(root):
        block = op.parent
        if block is None:
            continue
        region = _insertion_region(block)
        if region is None or not region.blocks:
            continue
        scope = states.get(id(region))
        if scope is None:
            scope = states[id(region)] = _Scope(region.blocks[0])
        in_entry = block is scope.entry
        key = _constant_key(op) if is_constant_like(op) and len(op.results) == 1 else None
        if key is None:
            if in_entry:
                scope.last = op
            continue
        existing = scope.seen.get(key)
        if existing is not None:
            op.results[0].replace_all_uses_with(existing.results[0])
            op.drop_all_operand_uses()
            op.parent = None
            scope.removed.add(id(op))
            touched[id(block)] = block
            continue
        scope.seen[key] = op
        if in_entry and (scope.last is None or id(scope.last) in scope.stayed):
            scope.stayed.add(id(op))
            scope.last = op
            continue
        scope.front.append(op)
        scope.removed.add(id(op))
        touched[id(block)] = block
    removed = set().union(*(scope.removed for scope in states.values()))
    for block in touched.values():
        block.ops = [o for o in block.ops if id(o) not in removed]
    for scope in states.values():
        if scope.front:
            for op in scope.front:
                op.parent = scope.entry
            scope.entry.ops = scope.front[::-1] + scope.entry.ops


class _Scope:
    """The folder's state for one function body: its entry block, the constants seen (by
    value), those that stayed in place, those moved to the front (in move order), and the
    last entry-block op left in place."""

    def __init__(self, entry: Block):
        self.entry = entry
        self.seen: dict[tuple, Operation] = {}
        self.stayed: set[int] = set()
        self.removed: set[int] = set()
        self.front: list[Operation] = []
        self.last: Optional[Operation] = None


def fold_dims(root: Operation) -> bool:
    """``memref.dim`` of a static dimension becomes an ``arith.constant`` (at the dim's place,
    as the driver materializes folded values); of a ``memref.alloc``/``alloca`` ``?``
    dimension, that dimension's size operand.  Returns whether anything changed."""
    from .builder import Builder
    from .dialects.arith import ConstantOp
    changed = False
    for op in list(_post_order(root)):
        if op.name != "memref.dim" or op.parent is None or len(op.operands) != 2:
            continue
        t = op.operands[0].type
        k = _constant_index(op.operands[1])
        if not isinstance(t, MemRefType) or k is None or not 0 <= k < t.rank:
            continue
        if t.shape[k] is not None:
            c = Builder.before(op).create(ConstantOp, t.shape[k], IndexType(), loc=op.loc)
            replacement = c.results[0]
        else:
            src = op.operands[0].defining_op
            if src is None or src.name not in ("memref.alloc", "memref.alloca"):
                continue
            position = sum(1 for d in t.shape[:k] if d is None)
            replacement = src.dynamic_sizes[position]
        op.results[0].replace_all_uses_with(replacement)
        op.erase()
        changed = True
    return changed


def fold_commutative(root: Operation) -> bool:
    """``OpTrait::impl::foldCommutative``: ``arith.addf %cst, %x`` becomes
    ``arith.addf %x, %cst``.  Returns whether anything changed."""
    changed = False
    for op in _post_order(root):
        if op.name in _COMMUTATIVE and len(op.operands) == 2:
            lhs, rhs = op.operands
            if _is_constant(lhs) and not _is_constant(rhs):
                op.set_operands([rhs, lhs])
                changed = True
    return changed


def _is_constant(v) -> bool:
    d = v.defining_op
    return d is not None and is_constant_like(d)


def _constant_index(v) -> Optional[int]:
    d = v.defining_op
    if d is None or not is_constant_like(d):
        return None
    a = d.attributes.get("value")
    return a.value if isinstance(a, IntegerAttr) else None


def is_trivially_dead(op: Operation) -> bool:
    """MLIR's ``isOpTriviallyDead`` for ops without regions: results unused and no effect
    other than reading memory or allocating the result."""
    if op.regions or not op.results or any(r.has_uses() for r in op.results):
        return False
    name = op.name
    return name.startswith(("arith.", "math.")) or name in _EFFECT_FREE


def erase_trivially_dead(root: Operation) -> bool:
    """Erase trivially dead ops under ``root`` until none is left; returns whether any was."""
    changed = False
    again = True
    while again:
        again = False
        for op in reversed(list(_post_order(root))):
            if op.parent is not None and is_trivially_dead(op):
                op.erase()
                again = changed = True
    return changed


def cleanup_greedily(root: Operation, rewrite=None, max_iterations: int = 10) -> bool:
    """The greedy driver's loop around ``rewrite(root) -> bool`` (the patterns): each
    iteration uniques/hoists constants, rewrites, folds ``memref.dim`` and erases dead ops,
    until an iteration changes nothing.  Returns whether anything changed."""
    changed_any = False
    for _ in range(max_iterations):
        unique_constants(root)
        changed = bool(rewrite(root)) if rewrite is not None else False
        changed |= fold_dims(root)
        changed |= fold_commutative(root)
        changed |= erase_trivially_dead(root)
        if not changed:
            break
        changed_any = True
    return changed_any
