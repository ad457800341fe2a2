"""Scalar replacement of affine memory accesses (MLIR's ``-affine-scalrep`` plus the paper's
extension, section 2.7): values move from memory to SSA registers.

* **store-to-load forwarding** and **redundant-load elimination** within a block: a load of an
  element just stored (or just loaded) reads that value instead, when no op in between may
  write the element;
* **dead stores** within a block: a store overwritten by a later store of the same element,
  with no possible read in between, goes;
* **invariant loads are hoisted**: a load at the top level of a loop body whose element does
  not change in the loop (its subscripts are defined outside the loop and no access in the loop
  may write it) is done once, before the loop;
* **reductions go to registers** (the paper's key step): the loads and stores of an element that
  is invariant in a loop (``C[i][j]`` across ``k``) become a loop-carried value -- one load
  before the loop, ``iter_args`` through it, one store after -- so the loop has no load or store
  of that element left:

        affine.for %k = 0 to 256 {                    %c = affine.load %C[%i, %j]
          %c = affine.load %C[%i, %j]                 %r = affine.for %k = 0 to 256
          %p = arith.mulf %a, %b          ->                 iter_args(%acc = %c) -> (f64) {
          %s = arith.addf %c, %p                        %p = arith.mulf %a, %b
          affine.store %s, %C[%i, %j]                   %s = arith.addf %acc, %p
        }                                               affine.yield %s : f64 }
                                                      affine.store %r, %C[%i, %j]

Which accesses may touch the same element is decided per memref with the affine subscripts:
two accesses of one memref value address the same element when their subscripts are equal as
linear forms over SSA values (constants folded, ``affine.apply`` expanded), and are disjoint when
in some dimension they differ by a constant at least the width accessed (``%i`` vs ``%i + 1``;
``vector<8xf64>`` at ``%j`` vs ``%j + 8``).  Anything else may alias.  As in MLIR's affine
analysis (and polyopt's polyhedral model), *distinct memref values are assumed not to alias*
unless one is a view of the other (``memref.cast``, ``memref.subview``, ...: then any access
through a different value may alias).  An op with unknown memory effects (a call) stops
everything around it.  Hoisting and carrying happen only around loops that provably run at least
once (the moved load and store would otherwise run when the loop does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .affine_rules import is_pure
from .builder import Builder
from .dialects.affine import (AffineForOp, AffineLoadOp, AffineStoreOp, AffineVectorLoadOp,
                              AffineVectorStoreOp)
from .ir import Block, Operation, Value
from .loop_utils import (_cval, add_iter_args, is_defined_outside,
                         loop_runs_at_least_once, value_linear_form)
from .types import MemRefType

__all__ = ["ScalrepStats", "scalar_replace", "forward_and_eliminate", "hoist_and_carry"]

_AFFINE_ACCESS = (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp)
_WRITES = (AffineStoreOp, AffineVectorStoreOp)

# views: a result aliases operand 0
_VIEW_OPS = frozenset({"memref.cast", "memref.subview", "memref.reinterpret_cast",
                       "memref.view", "memref.collapse_shape", "memref.expand_shape",
                       "memref.transpose", "memref.assume_alignment",
                       "memref.memory_space_cast"})
# no effect on memory contents (metadata, allocation of a fresh buffer, structure)
_NO_EFFECT_OPS = frozenset({"memref.alloc", "memref.alloca", "memref.dim", "memref.rank",
                            "memref.extract_strided_metadata",
                            "memref.extract_aligned_pointer_as_index", "affine.yield",
                            "func.return", "affine.for", "affine.if", "alloc", "alloca",
                            "return"})
# effects only on their memref operands (read and/or write, elements unknown)
_MEMREF_EFFECT_OPS = frozenset({
    "memref.load", "memref.store", "memref.copy", "memref.dealloc", "dealloc",
    "vector.load", "vector.store", "vector.transfer_read", "vector.transfer_write",
    "vector.maskedload", "vector.maskedstore", "vector.gather", "vector.scatter",
    "vector.expandload", "vector.compressstore", "linalg.fill", "linalg.matmul",
    "linalg.conv_2d_nhwc_hwcf", "linalg.conv_1d_nwc_wcf", "linalg.depthwise_conv_2d_nhwc_hwc",
    "hop.matmul", "hop.conv2d", "amx.tile_load", "amx.tile_store",
})
# dialects whose ops without memref operands do not touch memory
_REGISTER_DIALECTS = ("arith.", "math.", "vector.", "index.")


@dataclass
class ScalrepStats:
    """What :func:`scalar_replace` did (counts)."""

    forwarded: int = 0       # loads replaced by the value stored before them
    loads_removed: int = 0   # loads replaced by an earlier load of the same element
    stores_removed: int = 0  # stores overwritten before any read
    hoisted: int = 0         # invariant loads moved before their loop (groups of loads)
    carried: int = 0         # elements turned into loop-carried values (iter_args)

    def __iadd__(self, other: "ScalrepStats") -> "ScalrepStats":
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))
        return self


# ---------------------------------------------------------------------------------------------
# accesses and their relations


def _root(memref: Value) -> Value:
    """The buffer a memref value views (through casts and views)."""
    seen = 0
    while seen < 64:
        op = memref.defining_op
        if op is None or op.name not in _VIEW_OPS or not op.operands:
            return memref
        memref = op.operands[0]
        seen += 1
    return memref


@dataclass(eq=False)
class _Access:
    """A read or write of a memref.  For an affine access, per memref dimension: ``parts`` is
    the non-constant part of the subscript (a frozen linear form over SSA values), ``offsets``
    its constant part and ``widths`` the elements covered; ``parts is None`` when the elements
    are unknown.  ``key`` identifies the element(s) exactly."""

    op: Operation
    memref: Value
    root: Value
    is_write: bool
    parts: Optional[tuple] = None
    offsets: tuple[int, ...] = ()
    widths: tuple[int, ...] = ()
    value_type: object = None

    @property
    def key(self):
        return (self.memref, self.parts, self.offsets, self.widths)


def _affine_access(op: Operation) -> Optional[_Access]:
    if not isinstance(op, _AFFINE_ACCESS):
        return None
    memref = op.memref
    mt = memref.type
    if not isinstance(mt, MemRefType):
        return None
    is_write = isinstance(op, _WRITES)
    rank = mt.rank
    widths = [1] * rank
    if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)):
        shape = op.vector_type.shape
        sizes = shape[-rank:] if len(shape) > rank else shape
        for k, size in enumerate(sizes):
            widths[rank - len(sizes) + k] = size
        extra = 1
        for size in shape[:len(shape) - len(sizes)]:
            extra *= size
        if extra != 1:            # leading vector dims beyond the memref rank: be conservative
            return _Access(op, memref, _root(memref), is_write)
    vtype = op.value.type if is_write else op.results[0].type
    forms = value_linear_form(op.map, op.map_operands)
    parts = tuple(frozenset((k, c) for k, c in f.items() if k is not None) for f in forms)
    offsets = tuple(_cval(f) for f in forms)
    return _Access(op, memref, _root(memref), is_write, parts, offsets, tuple(widths), vtype)


def _relation(a: _Access, b: _Access) -> str:
    """``"same"`` element(s), ``"disjoint"``, or ``"may"`` alias."""
    if a.root is not b.root:
        return "disjoint"
    if a.memref is not b.memref or a.parts is None or b.parts is None:
        return "may"
    same = a.widths == b.widths
    for pa, pb, ca, cb, wa, wb in zip(a.parts, b.parts, a.offsets, b.offsets, a.widths,
                                      b.widths):
        if pa != pb:
            same = False
            continue
        c = ca - cb                           # a starts c elements after b
        if c >= wb or -c >= wa:
            return "disjoint"
        if c != 0:
            same = False
    return "same" if same else "may"


@dataclass
class _Effects:
    accesses: list[_Access] = field(default_factory=list)
    unknown: Optional[Operation] = None      # an op that may touch any memory


_UNKNOWN = object()


def _effects(op: Operation, out: Optional[_Effects] = None,
             known: Optional[dict] = None) -> _Effects:
    """The memory effects of ``op`` and everything nested in it; ``known`` keeps the affine
    accesses already read (by op), valid while the IR does not change."""
    out = _Effects() if out is None else out
    for inner in op.walk():
        if out.unknown is not None:
            break
        if known is None:
            acc = _affine_access(inner)
        else:
            acc = known.get(inner, _UNKNOWN)
            if acc is _UNKNOWN:
                acc = known[inner] = _affine_access(inner)
        if acc is not None:
            out.accesses.append(acc)
            continue
        name = inner.name
        if name in _NO_EFFECT_OPS or name in _VIEW_OPS or is_pure(inner):
            continue
        has_memref = any(isinstance(v.type, MemRefType) for v in inner.operands)
        if name.startswith(_REGISTER_DIALECTS) and not has_memref and not inner.regions:
            continue            # arithmetic that may trap or print, but touches no memory
        if name in _MEMREF_EFFECT_OPS:
            for v in inner.operands:
                if isinstance(v.type, MemRefType):
                    for w in (False, True):
                        out.accesses.append(_Access(inner, v, _root(v), w))
            continue
        out.unknown = inner
    return out


# ---------------------------------------------------------------------------------------------
# within a block: forwarding, redundant loads, dead stores


def _forward_in_block(block: Block, stats: ScalrepStats) -> None:
    # elements whose value is in a register: by exact key, and by buffer for invalidation
    avail: dict = {}                        # key -> (access, value)
    avail_of: dict = {}                     # root -> {key: access}
    pending_of: dict = {}                   # root -> {key: store not read yet}

    def kill(table: dict, acc: _Access, also_avail: bool) -> None:
        entries = table.get(acc.root)
        if not entries:
            return
        for key, a in list(entries.items()):
            if _relation(a, acc) != "disjoint":
                del entries[key]
                if also_avail:
                    avail.pop(key, None)

    for op in list(block.ops):
        if op.parent is not block:
            continue
        acc = _affine_access(op)
        if acc is not None and acc.parts is not None and not acc.is_write:
            result = op.results[0]
            hit = avail.get(acc.key)
            if hit is not None and hit[1].type == result.type:
                result.replace_all_uses_with(hit[1])
                op.erase()
                if hit[0].is_write:
                    stats.forwarded += 1
                else:
                    stats.loads_removed += 1
                continue
            kill(pending_of, acc, False)
            avail[acc.key] = (acc, result)
            avail_of.setdefault(acc.root, {})[acc.key] = acc
            continue
        if acc is not None and acc.parts is not None and acc.is_write:
            pending = pending_of.setdefault(acc.root, {})
            old = pending.pop(acc.key, None)
            if old is not None and old.value_type == acc.value_type:
                old.op.erase()
                stats.stores_removed += 1
            kill(avail_of, acc, True)
            avail[acc.key] = (acc, op.operands[0])
            avail_of.setdefault(acc.root, {})[acc.key] = acc
            pending[acc.key] = acc
            continue
        eff = _effects(op)
        if eff.unknown is not None:
            avail.clear()
            avail_of.clear()
            pending_of.clear()
            continue
        for e in eff.accesses:
            if e.is_write:
                kill(avail_of, e, True)
            else:
                kill(pending_of, e, False)


def forward_and_eliminate(root: Operation) -> ScalrepStats:
    """Store-to-load forwarding, redundant-load and dead-store elimination in every block under
    ``root`` (block-local; see the module docstring)."""
    stats = ScalrepStats()
    blocks = [b for op in root.walk() for r in op.regions for b in r.blocks]
    for block in blocks:
        _forward_in_block(block, stats)
    return stats


# ---------------------------------------------------------------------------------------------
# around a loop: hoisting invariant loads, carrying invariant elements in iter_args


@dataclass(frozen=True)
class _Element:
    """How to address an element again (captured before the accesses are erased)."""

    memref: Value
    amap: object
    operands: tuple
    vector_type: object       # None for scalar accesses
    loc: object

    @staticmethod
    def of(acc: _Access) -> "_Element":
        op = acc.op
        vt = op.vector_type if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)) \
            else None
        return _Element(acc.memref, op.map, tuple(op.map_operands), vt, op.loc)

    def load(self, at: Builder) -> Value:
        if self.vector_type is not None:
            return at.create(AffineVectorLoadOp.build, self.vector_type, self.memref,
                             list(self.operands), self.amap, loc=self.loc).results[0]
        return at.create(AffineLoadOp.build, self.memref, list(self.operands), self.amap,
                         loc=self.loc).results[0]

    def store(self, at: Builder, value: Value) -> Operation:
        if self.vector_type is not None:
            return at.create(AffineVectorStoreOp.build, value, self.memref, list(self.operands),
                             self.amap, loc=self.loc)
        return at.create(AffineStoreOp.build, value, self.memref, list(self.operands),
                         self.amap, loc=self.loc)


def _invariant_groups(loop: AffineForOp, accesses: list[_Access]) -> list[list[_Access]]:
    """Groups of top-level accesses of ``loop``'s body to one invariant element (in body
    order), such that no other access in the loop may touch that element."""
    groups: dict = {}                 # key -> accesses
    top = {id(op) for op in loop.body.ops}
    outside: dict = {}

    def invariant(v: Value) -> bool:
        r = outside.get(v)
        if r is None:
            r = outside[v] = is_defined_outside(v, loop)
        return r

    for acc in accesses:
        if id(acc.op) not in top or acc.parts is None:
            continue
        if not invariant(acc.memref) or not all(invariant(v) for v in acc.op.map_operands):
            continue
        groups.setdefault((acc.key, acc.value_type), []).append(acc)
    by_root: dict = {}
    for acc in accesses:
        by_root.setdefault(acc.root, []).append(acc)
    out = []
    for g in groups.values():
        members = {id(a) for a in g}
        if all(id(a) in members or _relation(g[0], a) == "disjoint"
               for a in by_root[g[0].root]):
            out.append(g)
    return out


def _carry(loop: AffineForOp, group: list[_Access], last: Operation) -> Operation:
    """Load before ``loop``, iter_arg through it, store after ``last``; returns the store."""
    elem = _Element.of(group[0])
    init = elem.load(Builder.before(loop))
    [arg] = add_iter_args(loop, [init])
    cur: Value = arg
    for acc in group:
        if acc.is_write:
            cur = acc.op.operands[0]
        else:
            acc.op.results[0].replace_all_uses_with(cur)
        acc.op.erase()
    y = loop.yield_op
    y.set_operands(list(y.operands) + [cur])
    return elem.store(Builder.after(last), loop.results[-1])


def _hoist(loop: AffineForOp, group: list[_Access]) -> None:
    init = _Element.of(group[0]).load(Builder.before(loop))
    for acc in group:
        acc.op.results[0].replace_all_uses_with(init)
        acc.op.erase()


def _loop_pass(loop: AffineForOp, stats: ScalrepStats, hoist: bool, carry: bool,
               known: dict) -> None:
    eff = _Effects()
    for op in loop.body.ops:
        _effects(op, eff, known)
    if eff.unknown is not None or not loop_runs_at_least_once(loop):
        return
    last: Operation = loop
    for group in _invariant_groups(loop, eff.accesses):
        if any(a.is_write for a in group):
            if carry:
                known.clear()           # the IR changes: accesses are read again
                last = _carry(loop, group, last)
                stats.carried += 1
        elif hoist:
            known.clear()
            _hoist(loop, group)
            stats.hoisted += 1


def hoist_and_carry(root: Operation, *, hoist: bool = True, carry: bool = True) -> ScalrepStats:
    """Around every loop under ``root``, innermost first: hoist invariant loads (``hoist``) and
    turn invariant elements that are stored into loop-carried values (``carry``)."""
    stats = ScalrepStats()
    loops = [op for op in root.walk(pre_order=False) if isinstance(op, AffineForOp)]
    # the accesses of a nest's inner loops are read again for each loop around them; they
    # are kept until a loop's pass changes the IR
    known: dict = {}
    for loop in loops:
        _loop_pass(loop, stats, hoist, carry, known)
    return stats


def scalar_replace(root: Operation, *, forward: bool = True, hoist: bool = True,
                   carry: bool = True) -> ScalrepStats:
    """Scalar replacement on everything under ``root`` (a module, function or loop): block-local
    forwarding / redundant loads / dead stores (``forward``), then around each loop, innermost
    first, hoisting of invariant loads (``hoist``) and loop-carried values for invariant
    elements that are stored (``carry``, the paper's register tile: no load or store of ``C``
    is left in the ``k`` loop), then forwarding again on what moved.  See the module docstring
    for the aliasing rules.  Returns the counts of what changed.

        affine.for %k = 0 to 4 {                 %0 = affine.load %C[%i]
          %c = affine.load %C[%i]                %1 = affine.for %k = 0 to 4 iter_args(%a = %0)
          %s = arith.addf %c, %x         ->            -> (f64) {
          affine.store %s, %C[%i]                  %s = arith.addf %a, %x
        }                                          affine.yield %s : f64 }
                                                 affine.store %1, %C[%i]
    """
    stats = ScalrepStats()
    if forward:
        stats += forward_and_eliminate(root)
    if hoist or carry:
        moved = hoist_and_carry(root, hoist=hoist, carry=carry)
        stats += moved
        if forward and (moved.hoisted or moved.carried):
            stats += forward_and_eliminate(root)
    return stats
