"""Dominance between the blocks of a region (MLIR's ``DominanceInfo`` and
``PostDominanceInfo``), for the verifier's dominance rule and for lifting branches back into
structured control flow.

Immediate dominators by the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple,
Fast Dominance Algorithm", 2001) on the blocks in reverse post-order.  As in MLIR, a block
that cannot be reached from the entry is dominated by every block (code there never runs, so
any use in it is accepted).
"""

from __future__ import annotations

from typing import Callable, Optional

from .ir import Block, Region


def reverse_post_order(entries: list[Block],
                       edges: Callable[[Block], list[Block]] = lambda b: b.successors
                       ) -> list[Block]:
    """The blocks reachable from ``entries`` along ``edges``, each before its successors
    except along back edges (a block comes after the blocks that dominate it)."""
    seen: set[int] = set()
    order: list[Block] = []
    for entry in entries:
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        stack = [(entry, iter(edges(entry)))]
        while stack:
            block, it = stack[-1]
            nxt = next((s for s in it if id(s) not in seen), None)
            if nxt is None:
                stack.pop()
                order.append(block)
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(edges(nxt))))
    order.reverse()
    return order


_TOP = object()     # the virtual root above the roots of a _Tree


class _Tree:
    """Immediate dominators over a graph given by its roots and edge functions.

    The roots hang from a virtual root (``_TOP``, numbered before every block): with several
    roots (post-dominance with several exits) two blocks whose paths reach different roots
    meet only there, which gives them no immediate dominator (``None``) rather than whichever
    of their predecessors the iteration met last."""

    def __init__(self, roots: list[Block], succ: Callable[[Block], list[Block]],
                 pred: Callable[[Block], list[Block]]):
        order = reverse_post_order(roots, succ)
        self.number = {id(b): i for i, b in enumerate(order)}
        self.number[id(_TOP)] = -1
        root_ids = {id(r) for r in roots}
        idom: dict[int, object] = {id(r): _TOP for r in roots}
        changed = True
        while changed:
            changed = False
            for b in order:
                if id(b) in root_ids:
                    continue
                new = None
                for p in pred(b):
                    if id(p) in idom:
                        new = p if new is None else self._intersect(p, new, idom)
                if new is not None and idom.get(id(b)) is not new:
                    idom[id(b)] = new
                    changed = True
        self.idom: dict[int, Optional[Block]] = {
            k: (None if v is _TOP else v) for k, v in idom.items()}
        # each block's interval in a depth-first walk of the tree: a dominates b when a's
        # interval holds b's (the verifier asks once per operand: walking up the tree made a
        # function of a few thousand blocks take minutes)
        children: dict[int, list[Block]] = {}
        tops = []
        for b in order:
            parent = self.idom[id(b)]
            if parent is None:
                tops.append(b)
            else:
                children.setdefault(id(parent), []).append(b)
        self._enter: dict[int, int] = {}
        self._exit: dict[int, int] = {}
        clock = 0
        for top in tops:
            stack = [(top, False)]
            while stack:
                b, done = stack.pop()
                clock += 1
                if done:
                    self._exit[id(b)] = clock
                    continue
                self._enter[id(b)] = clock
                stack.append((b, True))
                stack.extend((c, False) for c in children.get(id(b), ()))

    def _intersect(self, a, b, idom):
        while a is not b:
            while self.number[id(a)] > self.number[id(b)]:
                a = idom[id(a)]
            while self.number[id(b)] > self.number[id(a)]:
                b = idom[id(b)]
        return a

    def reachable(self, b: Block) -> bool:
        return id(b) in self.idom

    def dominates(self, a: Block, b: Block) -> bool:
        """``a`` dominates ``b`` (a block dominates itself)."""
        if not self.reachable(b):
            return True
        if not self.reachable(a):
            return False
        return self._enter[id(a)] <= self._enter[id(b)] and \
            self._exit[id(b)] <= self._exit[id(a)]


def _edges(region: Region):
    """The successor and predecessor functions of the blocks of ``region``, computed once
    (``Block.predecessors`` looks at every block of the region)."""
    succs = {id(b): b.successors for b in region.blocks}
    preds: dict[int, list[Block]] = {id(b): [] for b in region.blocks}
    for b in region.blocks:
        for s in succs[id(b)]:
            if id(s) in preds:
                preds[id(s)].append(b)
    return (lambda b: succs[id(b)] if id(b) in succs else b.successors,
            lambda b: preds[id(b)] if id(b) in preds else b.predecessors())


class DominanceInfo:
    """Dominance of the blocks of one region: ``dominates(a, b)``, ``idom(b)``."""

    def __init__(self, region: Region):
        roots = region.blocks[:1]
        succ, pred = _edges(region)
        self._tree = _Tree(roots, succ, pred)

    def dominates(self, a: Block, b: Block) -> bool:
        return self._tree.dominates(a, b)

    def idom(self, b: Block) -> Optional[Block]:
        return self._tree.idom.get(id(b))

    def reachable(self, b: Block) -> bool:
        return self._tree.reachable(b)


class PostDominanceInfo:
    """Post-dominance of the blocks of one region, the blocks without successors (those that
    return) being the exits: ``ipdom(b)`` is where the paths from ``b`` meet again."""

    def __init__(self, region: Region):
        exits = [b for b in region.blocks if not b.successors]
        succ, pred = _edges(region)
        self._tree = _Tree(exits, pred, succ)

    def ipdom(self, b: Block) -> Optional[Block]:
        return self._tree.idom.get(id(b))

    def post_dominates(self, a: Block, b: Block) -> bool:
        return self._tree.reachable(b) and self._tree.dominates(a, b)
