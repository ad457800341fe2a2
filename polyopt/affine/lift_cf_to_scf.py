"""Lifting branches back into structured control flow (MLIR's ``--lift-cf-to-scf``), so that a
function written with ``cf.br``/``cf.cond_br`` (what ``--convert-scf-to-cf`` makes of loops)
reaches the loop optimizations: raise-scf-to-affine runs it first.

    cf.br ^bb1(%c0 : index)                       scf.for %i = %c0 to %n step %c1 {
  ^bb1(%i: index):                                  ...
    %c = arith.cmpi slt, %i, %n : index       ->  }
    cf.cond_br %c, ^bb2, ^bb3                     ...
  ^bb2:
    ...
    %next = arith.addi %i, %c1 : index
    cf.br ^bb1(%next : index)
  ^bb3:
    ...

What is lifted, from the entry block on, following the branches:
* a straight line of blocks, each the only successor of the one before: one sequence;
* a ``cf.cond_br`` whose two paths meet again at a block (its immediate post-dominator): an
  ``scf.if``, the values the paths pass to that block its results;
* a ``cf.switch`` whose paths meet again: an ``scf.index_switch`` on the flag cast to
  ``index`` (``arith.index_cast``; ``arith.index_castui`` for an ``i1``), a repeated case
  value dropped (the first one is taken);
* a loop that leaves from one ``cf.cond_br`` on every path round it (its back edges, if
  several, from the paths of conditionals that meet at its header): an
  ``scf.for`` when it leaves from its header, the header takes the induction variable (and
  loop-carried values), compares it ``slt`` (or ``ult``) with a bound defined before the loop,
  and the back edge passes ``iv + constant step`` (step > 0) and the induction variable is not
  read after the loop; otherwise an ``scf.while`` whose before region holds the blocks from
  the header to the exiting branch (all of a do-while) and whose after region the rest.

Canonicalization merges the empty blocks ``--convert-scf-to-cf`` leaves between structures, so
that a loop's exit may be the next loop's header or an enclosing conditional's merge block, a
branch may enter a loop directly and a loop's body be an inner loop's header: a path is
followed edge by edge, and an edge that reaches a loop header, the merge block of the
conditional being built or the back edge of the loop being built ends the structure there.

A loop that leaves from several places (a ``break``, a return inside it) is first given one
latch and a selector (:func:`route_loop_exits`, the multiplexer of MLIR's CFGToSCF), and
conditionals whose paths meet only at the returns yield the values returned. A cycle entered
at several blocks (irreducible control flow) is first given one entry block that dispatches
to the entry each edge meant (:func:`route_loop_entries`), and a conditional whose paths go
on to several blocks (a block two of them reach that is not where they all meet, or some
return and others go on) has those edges sent to one new block that dispatches to where
each went: the paths meet there (CFGToSCF's multiplexers, as in Bahmann et al., "Perfect
Reconstructability of Control Flow from Demand Dependence Graphs", 2015). The slots an edge
into a multiplexer does not fill get a zero, ``ub.poison`` for a vector or a memref
(:class:`_Fill`).

Upstream's pass turns every loop into ``scf.while`` (a do-while); this one gives the counted
loops back as ``scf.for``, the form the polyhedral passes read, and leaves a function with
anything else (a block only a repeated ``cf.switch`` case reaches, an unranked memref that
nothing stands in for, a loop that never ends) as it was, all of it: it runs as
written, through the branches, and the remark says what stopped the lifting.
"""

from __future__ import annotations

from typing import Callable, Optional

from .attributes import DenseArrayAttr, FloatAttr, IntegerAttr
from .dialects.cf import BranchOp, CondBranchOp, SwitchOp
from .dialects.scf import ConditionOp, ForOp, IfOp, IndexSwitchOp, WhileOp, YieldOp
from .dominance import DominanceInfo, PostDominanceInfo
from .dialects.ub import PoisonOp
from .ir import Block, Operation, Region, Value
from .types import (FloatType, IndexType, IntegerType, MemRefType, VectorType, i1, i32,
                    i64)

__all__ = ["lift_cf_to_scf", "route_loop_entries", "route_loop_exits"]

Remark = Optional[Callable[[object, str], None]]


class _NotStructured(Exception):
    """The function's control flow has a shape this pass does not lift."""


def lift_cf_to_scf(module: Operation, remark: Remark = None) -> None:
    """Lift the branches of every multi-block ``func.func`` of ``module`` into
    ``scf.for``/``scf.while``/``scf.if``/``scf.index_switch`` (all of a function or
    nothing)."""
    for func in [op for op in module.walk() if op.name == "func.func"]:
        region = func.regions[0]
        if len(region.blocks) <= 1:
            continue
        copy = func.clone()     # lifted on a copy: a shape met halfway leaves `func` intact
        try:
            route_loop_entries(copy.regions[0])
            route_loop_exits(copy.regions[0])
            lifted = _Lifter(copy.regions[0], list(func.function_type.results)).run()
        except _NotStructured as e:
            if remark is not None:
                remark(func.loc, f"lift-cf-to-scf: branches not lifted to scf: {e}; the function runs as written "
                             f"and the loop optimizations skip it")
            continue
        for block in region.blocks:    # the old body's uses go with it
            for op in block.ops:
                for inner in op.walk():
                    inner.drop_all_operand_uses()
        func.regions[0] = lifted
        lifted.parent = func
        if remark is not None:
            remark(func.loc, "lift-cf-to-scf: branches lifted to scf.for/scf.while/scf.if")


def route_loop_exits(region: Region, max_rounds: int = 1000) -> None:
    """Give every loop of ``region`` (a function's body, as branches) one exit on every path
    round it, as MLIR's CFGToSCF does with its multiplexer blocks: the back edges and the
    exits of a loop that leaves from several places (a ``break``, a return inside it), or from
    one place that some path round it skips, all go to a new latch, told by an ``i32``
    selector which one was taken (0: round again)::

        ^latch(%sel: i32, <header args>, <each exit's args>, <loop values read after it>):
          %again = arith.cmpi eq, %sel, %c0 : i32
          cf.cond_br %again, ^header(<header args>), ^exits(%sel, ...)
        ^exits(%sel: i32, ...):
          cf.switch %sel : i32, [default: ^exitN(...), 1: ^exit1(...), ...]

    A slot an edge does not fill gets a :class:`_Fill` value (a zero, ``ub.poison`` for a
    vector or a memref); the loop's values read after it are read from ``^exits``' arguments.
    A loop carrying a value that has none (an unranked memref) is left as it is. Raises
    nothing: the lifting refuses what is left.
    """
    for _ in range(max_rounds):
        if not _route_one_loop(region):
            return


def _route_one_loop(region: Region) -> bool:
    """Reroute the first loop that needs it (see :func:`route_loop_exits`); False when none
    does."""
    dom = DominanceInfo(region)
    preds: dict[int, list[Block]] = {id(b): [] for b in region.blocks}
    for b in region.blocks:
        if dom.reachable(b):
            for succ in b.successors:
                preds[id(succ)].append(b)
    for header in region.blocks:
        latches = [p for p in preds[id(header)] if dom.dominates(header, p)]
        if not latches or not dom.reachable(header):
            continue
        loop = {id(header): header}
        work = list(latches)
        while work:
            b = work.pop()
            if id(b) not in loop and dom.dominates(header, b):
                loop[id(b)] = b
                work.extend(preds[id(b)])
        exits = [(b, i) for b in loop.values() for i, s in enumerate(b.successors)
                 if id(s) not in loop]
        exiting = {id(b) for b, _ in exits}
        if not exits:
            continue
        leave = exits[0][0]
        if len(exiting) == 1 and len(exits) == 1 and leave.terminator.name == "cf.cond_br" \
                and all(dom.dominates(leave, la) for la in latches):
            continue        # already one exit on every path round the loop
        if _reroute(region, dom, header, latches, loop, exits):
            return True
    return False


class _Fill:
    """The values a multiplexer passes in the slots of the edges it does not take (MLIR's
    CFGToSCF passes ``ub.poison`` in all of them): a zero for an integer, an index or a float
    (what the polyhedral passes read best), ``ub.poison`` for a vector (lowered as zeros) and
    for a ranked memref of any shape and layout (lowered as a null pointer with a zero
    descriptor); nothing for other types (the lifting refuses them). Each value is made once,
    at the top of ``block``."""

    def __init__(self, block: Block, loc):
        self.block = block
        self.loc = loc
        self.values: dict = {}

    def available(self, t) -> bool:
        return isinstance(t, (IntegerType, IndexType, FloatType, VectorType, MemRefType))

    def __call__(self, t) -> Value:
        v = self.values.get(t)
        if v is not None:
            return v
        if isinstance(t, (IntegerType, IndexType)):
            op = Operation.create("arith.constant", result_types=[t],
                                  attributes={"value": IntegerAttr(0, t)}, loc=self.loc)
        elif isinstance(t, FloatType):
            op = Operation.create("arith.constant", result_types=[t],
                                  attributes={"value": FloatAttr(0.0, t)}, loc=self.loc)
        else:
            op = PoisonOp.build(t, loc=self.loc)
        self.block.insert(0, op)
        v = op.results[0]
        self.values[t] = v
        return v


def _retarget(b: Block, new_succ: dict) -> Operation:
    """Rebuild the terminator of ``b`` with the successors ``new_succ`` (successor index ->
    (block, values)) in place of its own; the new terminator."""
    term = b.terminator
    succ = [new_succ.get(i, (s, list(term.successor_operands(i))))
            for i, s in enumerate(term.successors)]
    if term.name == "cf.br":
        new = BranchOp.build(succ[0][0], succ[0][1], loc=term.loc)
    elif term.name == "cf.cond_br":
        new = CondBranchOp.build(term.condition, succ[0][0], succ[0][1], succ[1][0],
                                 succ[1][1], loc=term.loc)
    else:
        new = SwitchOp.build(term.flag, succ[0], [(v, d, vals) for v, (d, vals)
                                                  in zip(term.case_values, succ[1:])],
                             loc=term.loc)
    term.erase()
    b.append(new)
    return new


def _multiplex(region: Region, edges: list[tuple[Block, int]], fill: _Fill, loc,
               place: Callable[[Operation, Block], None]) -> tuple[Block, list[Operation]]:
    """Send ``edges`` (block, successor index) to one new block of ``region`` that dispatches
    to their old targets on an ``i32`` selector (MLIR's EdgeMultiplexer)::

        ^mux(%sel: i32, <args of target 0>, <args of target 1>, ...):
          cf.switch %sel : i32, [default: ^targetN(...), 0: ^target0(...), ...]

    An edge passes its target's selector (made by ``place(op, source block)``), its values in
    its target's slots and ``fill`` values in the others. The multiplexer and the ops made
    (the selectors, the rebuilt terminators, the switch)."""
    targets: list[Block] = []
    for b, i in edges:
        if all(t is not b.successors[i] for t in targets):
            targets.append(b.successors[i])
    mux = Block([i32] + [a.type for t in targets for a in t.args])
    region.add_block(mux)
    made: list[Operation] = []
    cases, start = [], 1
    for j, t in enumerate(targets):
        cases.append((j, t, mux.args[start:start + len(t.args)]))
        start += len(t.args)
    default = cases.pop()
    switch = SwitchOp.build(mux.args[0], (default[1], default[2]), cases, loc=loc) if cases \
        else BranchOp.build(default[1], default[2], loc=loc)
    mux.append(switch)
    made.append(switch)
    new_succ: dict[int, dict[int, tuple[Block, list]]] = {}
    blocks: dict[int, Block] = {}
    for b, i in edges:
        term = b.terminator
        j = next(k for k, t in enumerate(targets) if t is b.successors[i])
        sel = Operation.create("arith.constant", result_types=[i32],
                               attributes={"value": IntegerAttr(j, i32)}, loc=loc)
        place(sel, b)
        made.append(sel)
        vals = [sel.results[0]]
        for k, t in enumerate(targets):
            vals += list(term.successor_operands(i)) if k == j else \
                [fill(a.type) for a in t.args]
        new_succ.setdefault(id(b), {})[i] = (mux, vals)
        blocks[id(b)] = b
    for b in blocks.values():
        made.append(_retarget(b, new_succ[id(b)]))
    return mux, made


def _irreducible_cycle(region: Region) -> Optional[tuple[list[Block], list[Block]]]:
    """A cycle of ``region`` entered at several blocks: (its blocks, its entry blocks), in
    the region's order; None when every cycle has one entry. The cycles are the strongly
    connected components of the blocks the entry reaches, and, once a cycle's entry is put
    aside, those of the rest of it (the loops nested in it)."""
    dom = DominanceInfo(region)
    blocks = [b for b in region.blocks if dom.reachable(b)]
    preds: dict[int, list[Block]] = {id(b): [] for b in blocks}
    for b in blocks:
        for s in b.successors:
            preds[id(s)].append(b)

    def components(nodes: list[Block]) -> list[list[Block]]:
        """Tarjan's strongly connected components of ``nodes`` (iterative)."""
        inside = {id(b) for b in nodes}
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        on_stack: set[int] = set()
        stack: list[Block] = []
        out: list[list[Block]] = []
        for root in nodes:
            if id(root) in index:
                continue
            work = [(root, iter([s for s in root.successors if id(s) in inside]))]
            index[id(root)] = low[id(root)] = len(index)
            stack.append(root)
            on_stack.add(id(root))
            while work:
                b, it = work[-1]
                s = next(it, None)
                if s is not None:
                    if id(s) not in index:
                        index[id(s)] = low[id(s)] = len(index)
                        stack.append(s)
                        on_stack.add(id(s))
                        work.append((s, iter([x for x in s.successors if id(x) in inside])))
                    elif id(s) in on_stack:
                        low[id(b)] = min(low[id(b)], index[id(s)])
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[id(parent)] = min(low[id(parent)], low[id(b)])
                if low[id(b)] == index[id(b)]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(id(x))
                        comp.append(x)
                        if x is b:
                            break
                    out.append(comp)
        return out

    order = {id(b): k for k, b in enumerate(region.blocks)}
    todo = [blocks]
    while todo:
        for comp in components(todo.pop()):
            if len(comp) == 1 and all(s is not comp[0] for s in comp[0].successors):
                continue
            members = {id(b) for b in comp}
            comp.sort(key=lambda b: order[id(b)])
            entries = [b for b in comp if any(id(p) not in members for p in preds[id(b)])]
            if len(entries) > 1:
                return comp, entries
            todo.append([b for b in comp if b is not entries[0]])
    return None


def route_loop_entries(region: Region, max_rounds: int = 1000) -> None:
    """Give every cycle of ``region`` (a function's body, as branches) one entry, as MLIR's
    CFGToSCF does for irreducible control flow: the edges into a cycle entered at several
    blocks, and its edges back to those blocks, all go to one new block that dispatches to
    the entry each one meant on an ``i32`` selector (:func:`_multiplex`); the cycle is then a
    loop with that block as its header, lifted as any other::

        ^a: cf.cond_br %p, ^x, ^y          ^a: cf.cond_br %p, ^h(%c0), ^h(%c1)
        ^x: cf.cond_br %q, ^y, ^out   ->   ^h(%sel: i32): cf.switch %sel, [default: ^y, 0: ^x]
        ^y: cf.cond_br %r, ^x, ^out        ^x: cf.cond_br %q, ^h(%c1), ^out
                                           ^y: cf.cond_br %r, ^h(%c0), ^out

    A cycle whose entries take a value of a type :class:`_Fill` has nothing for is left as it
    is (the lifting refuses it)."""
    for _ in range(max_rounds):
        found = _irreducible_cycle(region)
        if found is None:
            return
        comp, entries = found
        is_entry = {id(b) for b in entries}
        fill = _Fill(region.blocks[0], entries[0].terminator.loc)
        if not all(fill.available(a.type) for e in entries for a in e.args):
            return
        dom = DominanceInfo(region)
        edges = [(b, i) for b in region.blocks if dom.reachable(b)
                 for i, s in enumerate(b.successors) if id(s) in is_entry]

        def place(op: Operation, src: Block) -> None:
            src.insert(len(src.ops) - 1, op)
        _multiplex(region, edges, fill, entries[0].terminator.loc, place)


def _reroute(region: Region, dom: DominanceInfo, header: Block, latches: list[Block],
             loop: dict[int, Block], exits: list[tuple[Block, int]]) -> bool:
    """Send the back edges and exits of the loop at ``header`` through a new latch and a
    dispatch block (see :func:`route_loop_exits`); False, changing nothing, when a slot has no
    zero. ``dom``: the dominance before the change."""
    def top_block(op: Operation) -> Optional[Block]:
        while op.parent is not None and op.parent.parent is not region:
            parent = op.parent_op
            if parent is None:
                return None
            op = parent
        return op.parent
    # the loop's values read after it
    escaping: list[Value] = []
    for b in loop.values():
        for v in list(b.args) + [r for op in b.ops for r in op.results]:
            if any(id(top_block(u.op)) not in loop for u in v.uses):
                escaping.append(v)
    targets: list[Block] = []      # the exits' blocks, each once (its selector: index + 1)
    for b, i in exits:
        if all(t is not b.successors[i] for t in targets):
            targets.append(b.successors[i])
    header_types = [a.type for a in header.args]
    exit_types = [a.type for t in targets for a in t.args]
    slot_types = header_types + exit_types + [v.type for v in escaping]
    loc = header.terminator.loc
    entry = region.blocks[0]
    fill = _Fill(entry, loc)
    if not all(fill.available(t) for t in slot_types):
        return False
    for t in slot_types:
        fill(t)
    latch = Block([i32] + slot_types)
    dispatch = Block([i32] + exit_types + [v.type for v in escaping])
    region.add_block(latch)
    region.add_block(dispatch)
    c0 = Operation.create("arith.constant", result_types=[i32],
                          attributes={"value": IntegerAttr(0, i32)}, loc=loc)
    again = Operation.create("arith.cmpi", [latch.args[0], c0.results[0]], [i1],
                             attributes={"predicate": IntegerAttr(0, i64)}, loc=loc)
    n_h, n_e = len(header_types), len(exit_types)
    latch.append(c0)
    latch.append(again)
    latch.append(CondBranchOp.build(again.results[0], header, latch.args[1:1 + n_h], dispatch,
                                    [latch.args[0]] + latch.args[1 + n_h:], loc=loc))
    cases = []
    start = 1
    for j, t in enumerate(targets):
        cases.append((j + 1, t, dispatch.args[start:start + len(t.args)]))
        start += len(t.args)
    default = cases.pop()
    if cases:
        dispatch.append(SwitchOp.build(dispatch.args[0], (default[1], default[2]), cases,
                                       loc=loc))
    else:
        dispatch.append(BranchOp.build(default[1], default[2], loc=loc))
    # after the loop, its values come from the dispatch block (which every exit now passes)
    for k, v in enumerate(escaping):
        for u in list(v.uses):
            if id(top_block(u.op)) not in loop:
                u.op.set_operand(u.index, dispatch.args[1 + n_e + k])

    def slots(selector: int, header_vals, exit_j: Optional[int], exit_vals, src: Block):
        sel = Operation.create("arith.constant", result_types=[i32],
                               attributes={"value": IntegerAttr(selector, i32)}, loc=loc)
        src.insert(len(src.ops) - 1, sel)
        vals = [sel.results[0]]
        vals += list(header_vals) if header_vals is not None else \
            [fill(t) for t in header_types]
        for j, t in enumerate(targets):
            if j == exit_j:
                vals += list(exit_vals)
            else:
                vals += [fill(a.type) for a in t.args]
        # a loop value reaches this edge when its block dominates the edge's source; else
        # the edge leads to no use of it
        for v in escaping:
            home = v.owner_block if v.defining_op is None else v.defining_op.parent
            vals.append(v if dom.dominates(home, src) else fill(v.type))
        return vals

    edges = [(b, i, None) for b in latches for i, s in enumerate(b.successors) if s is header]
    edges += [(b, i, next(j for j, t in enumerate(targets) if t is b.successors[i]))
              for b, i in exits]
    new_succ: dict[int, dict[int, tuple[Block, list]]] = {}
    for b, i, j in edges:
        term = b.terminator
        old = list(term.successor_operands(i))
        if j is None:
            new_succ.setdefault(id(b), {})[i] = (latch, slots(0, old, None, [], b))
        else:
            new_succ.setdefault(id(b), {})[i] = (latch, slots(j + 1, None, j, old, b))
    for b in {id(b): b for b, _, _ in edges}.values():
        _retarget(b, new_succ[id(b)])
    return True


def _repeated_cases(term: Operation) -> set[int]:
    """The successor indices of the edges of a ``cf.switch`` ``term`` that are never taken:
    cases whose value an earlier case has (the first one wins; an ``i1`` flag's case values
    are read modulo 2)."""
    if term is None or term.name != "cf.switch":
        return set()
    width = term.flag.type.width
    seen: set[int] = set()
    dead: set[int] = set()
    for i, value in enumerate(term.case_values, start=1):
        value = value & 1 if width == 1 else value
        if value in seen:
            dead.add(i)
        seen.add(value)
    return dead


# the ``stop`` of the paths of a conditional that meet only at the function's returns
_RETURN = Block()


class _Lifter:
    def __init__(self, region: Region, result_types: list):
        self.region = region
        self.result_types = result_types
        self.visited: set[int] = set()
        # the block each op was written in (the ops move as the lifting goes)
        self.home = {id(inner): block for block in region.blocks for op in block.ops
                     for inner in op.walk()}
        self.dead_edges: list[tuple[Block, Block]] = []     # a cf.switch's repeated cases
        self.multiplexers = 0
        self._analyze()

    def _analyze(self) -> None:
        """Dominance, post-dominance and predecessors, again after a multiplexer is added."""
        region = self.region
        self.dom = DominanceInfo(region)
        self.pdom = PostDominanceInfo(region)
        # the branches stay in their blocks as the ops move: the edges do not change
        # (Block.predecessors looks at every block: quadratic in a function of many blocks);
        # a block no path reaches is no predecessor (nor a back edge: dominance says every
        # block dominates it)
        self.preds: dict[int, list[Block]] = {id(b): [] for b in region.blocks}
        for b in region.blocks:
            if not self.dom.reachable(b):
                continue
            for succ in b.successors:
                self.preds[id(succ)].append(b)
        for b, succ in self.dead_edges:
            self.preds[id(succ)].remove(b)
        self.children: Optional[dict[int, list[Block]]] = None     # of the dominator tree

    def run(self) -> Region:
        entry = self.region.blocks[0]
        body = Block([a.type for a in entry.args])
        for old, new in zip(entry.args, body.args):
            old.replace_all_uses_with(new)
        self.fill = _Fill(body, entry.ops[0].loc if entry.ops else None)
        kind, _ = self._emit(entry, body, header=None, stop=None)
        if kind != "return":
            raise _NotStructured("the function does not end in a return")
        if any(id(b) not in self.visited and self.dom.reachable(b) for b in self.region.blocks):
            raise _NotStructured("a block that no structure holds")     # its ops would be lost
        for block in self.region.blocks:     # blocks no path reaches, and what is left of others
            if id(block) not in self.visited:
                for op in block.ops:
                    for inner in op.walk():
                        inner.drop_all_operand_uses()
        return Region([body])

    # -- sequences ---------------------------------------------------------------------------

    def _emit(self, block: Block, target: Block, header: Optional[Block],
              stop: Optional[Block]) -> tuple[str, list[Value]]:
        """Move the ops from ``block`` on into ``target`` until the path reaches ``stop`` (the
        merge block of an enclosing conditional: ("merge", values passed)), ``header`` (the
        loop's back edge: ("latch", values)) or a return (("return", [])). """
        while True:
            self._visit(block)
            term = block.terminator
            for op in block.ops[:-1]:
                op.detach()
                target.append(op)
            if term.name == "func.return":
                if stop is _RETURN:     # a path of a conditional whose paths all return
                    values = list(term.operands)
                    term.drop_all_operand_uses()
                    return "merge", values
                if header is not None or stop is not None:
                    raise _NotStructured("a return inside a loop or a conditional")
                term.detach()
                target.append(term)
                return "return", []
            if term.name == "cf.br":
                dest, values = term.dest, list(term.operands)
                term.drop_all_operand_uses()     # replaced by the structure (its operands stay
                single = True                    # readable)
            elif term.name in ("cf.cond_br", "cf.switch"):
                self._join_continuations(block, target)
                term = block.terminator     # rebuilt when the paths were joined
                dest = self.pdom.ipdom(block)
                if dest is None:
                    # the paths meet only at the returns: the conditional's results are the
                    # values returned, and one return follows it
                    if header is not None or stop not in (None, _RETURN):
                        raise _NotStructured("a return inside a loop or a conditional")
                    values = self._lift_branches(term, _RETURN, target, header)
                    if stop is _RETURN:
                        return "merge", values
                    target.append(Operation.create("func.return", values, loc=term.loc))
                    return "return", []
                values = self._lift_branches(term, dest, target, header)
                single = False
            else:
                raise _NotStructured(f"'{term.name}' is not lifted")
            followed = self._follow(dest, values, single, target, header, stop)
            if isinstance(followed, tuple):
                return followed
            block = followed

    def _emit_edge(self, dest: Block, values: list[Value], target: Block,
                   header: Optional[Block], stop: Optional[Block]) -> tuple[str, list[Value]]:
        """:meth:`_emit` from the branch to ``dest`` passing ``values`` (its only entry)."""
        followed = self._follow(dest, values, True, target, header, stop)
        if isinstance(followed, tuple):
            return followed
        return self._emit(followed, target, header, stop)

    def _follow(self, dest: Block, values: list[Value], single: bool, target: Block,
                header: Optional[Block], stop: Optional[Block]):
        """Where a path goes on after an edge to ``dest``: ("merge"/"latch", values) when it
        leaves the region being built, else the block to continue with (loops met on the way
        are lifted into ``target``). ``single``: the edge is one branch (``dest`` must have
        no other predecessor), not the end of a conditional."""
        while True:
            if dest is stop:
                return "merge", values
            if dest is header:
                return "latch", values
            if not self._is_loop_header(dest):
                return self._inline(dest, values, predecessors=1 if single else None)
            dest, values = self._lift_loop(dest, values, target)
            single = True

    def _visit(self, block: Block) -> None:
        if id(block) in self.visited:
            raise _NotStructured("a block is reached along two paths that do not meet "
                                 "at a conditional's end")
        self.visited.add(id(block))

    def _inline(self, block: Block, values: list[Value],
                predecessors: Optional[int] = 1) -> Block:
        """Continue into ``block``, its arguments replaced by ``values``."""
        if predecessors is not None and len(self.preds[id(block)]) != predecessors:
            raise _NotStructured("a block with several predecessors that no conditional "
                                 "joins")
        for arg, v in zip(block.args, values):
            arg.replace_all_uses_with(v)
        return block

    # -- conditionals ------------------------------------------------------------------------

    def _join_continuations(self, block: Block, target: Block) -> None:
        """Make the paths of the conditional ending ``block`` meet at one block, as CFGToSCF
        does: the blocks each successor dominates are that path's; when the edges leaving the
        paths go to several blocks (a block two paths reach that is not where they meet, the
        paths of a loop's body entered at several places), or some paths return and others
        go on, those edges (and the ones into the returns) all go to one new block that
        dispatches to where each one went (:func:`_multiplex`), where the paths now meet."""
        if self.children is None:
            self.children = {}
            for b in self.region.blocks:
                parent = self.dom.idom(b)
                if parent is not None:
                    self.children.setdefault(id(parent), []).append(b)
        def live(b: Block) -> list[tuple[int, Block]]:
            dead = _repeated_cases(b.terminator)
            return [(i, s) for i, s in enumerate(b.successors) if i not in dead]
        inside = {id(block)}
        paths: list[Block] = []
        mine = live(block)
        for _, s in mine:
            # the path's own blocks: those its edge dominates (a loop's back edges aside)
            if id(s) in inside or sum(t is s for _, t in mine) != 1 or \
                    any(p is not block and not self.dom.dominates(s, p)
                        for p in self.preds[id(s)]):
                continue
            work = [s]
            while work:
                b = work.pop()
                inside.add(id(b))
                paths.append(b)
                work.extend(self.children.get(id(b), ()))
        edges = [(b, i) for b in [block] + paths for i, s in live(b) if id(s) not in inside]
        targets = {id(b.successors[i]) for b, i in edges}
        ipdom = self.pdom.ipdom(block)
        if ipdom is None:
            if not targets:
                return          # the paths all return: their values are the results
            returns = {id(b) for b in paths if b.terminator.name == "func.return"}
            edges += [(p, i) for p in [block] + paths for i, s in live(p) if id(s) in returns]
            targets |= returns
        if not targets or targets == {id(ipdom)} or \
                (len(targets) == 1 and ipdom is None) or \
                self.multiplexers > 4 * len(self.region.blocks) or \
                (all(b is block for b, _ in edges) and len(edges) == len(targets)):
            # one target where the paths meet (not one that an edge never taken bypasses);
            # last, a multiplexer that would dispatch just where the branch does
            return
        self.multiplexers += 1
        # the edges never taken go too: left to their blocks, the paths would meet there too
        edges += [(b, i) for b in [block] + paths for i in _repeated_cases(b.terminator)
                  if id(b.successors[i]) not in inside]
        for t in {id(b.successors[i]): b.successors[i] for b, i in edges}.values():
            if not all(self.fill.available(a.type) for a in t.args):
                raise _NotStructured(f"paths that meet only through a value of type "
                                     f"'{t.args[0].type}' that nothing stands in for")

        def place(op: Operation, src: Block) -> None:
            if id(src) in self.visited:     # its ops are already in `target`
                target.append(op)
            else:
                src.insert(len(src.ops) - 1, op)
                self.home[id(op)] = src
        mux, made = _multiplex(self.region, edges, self.fill, block.terminator.loc, place)
        for op in made:
            if op.name != "arith.constant":
                self.home[id(op)] = op.parent
        self._analyze()

    def _lift_branches(self, term: Operation, merge: Block, target: Block,
                       header: Optional[Block]) -> list[Value]:
        """The ``cf.cond_br`` or ``cf.switch`` ``term`` whose paths meet at ``merge``: an
        ``scf.if`` or ``scf.index_switch`` appended to ``target``, whose results are the
        values the paths pass to ``merge``."""
        types = self.result_types if merge is _RETURN else [a.type for a in merge.args]
        if term.name == "cf.cond_br":
            term.drop_all_operand_uses()
            op = IfOp.build(term.condition, types, with_else=True, loc=term.loc)
            paths = [0, 1]
        else:
            op, paths = self._index_switch(term, types, target)
            term.drop_all_operand_uses()
        for region, i in zip(op.regions, paths):
            block = region.blocks[0]
            for inner in list(block.ops):      # the empty scf.yield of a result-less if
                inner.erase()
            dest, values = term.successors[i], list(term.successor_operands(i))
            kind, values = self._emit_edge(dest, values, block, header, merge)
            if kind != "merge":
                raise _NotStructured("a conditional's path leaves it without reaching "
                                     "its end")
            block.append(YieldOp.build(values, loc=term.loc))
        if term.name == "cf.cond_br":
            else_block = op.regions[1].blocks[0]
            if not op.results and len(else_block.ops) == 1:
                op.regions[1].blocks.clear()     # no else
        target.append(op)
        return list(op.results)

    def _index_switch(self, term: Operation, types: list, target: Block):
        """An empty ``scf.index_switch`` for the ``cf.switch`` ``term`` (its flag cast to
        ``index`` in ``target``) and the successor each region runs: the default first, then
        each case value (the first of equal ones: the others are never taken)."""
        flag = term.flag
        width = flag.type.width
        if width > 64:
            raise _NotStructured(f"a cf.switch on {flag.type}, wider than index")
        # an i1 true is case 1: read unsigned (index_cast would make it -1); wider flags are
        # read signed, as their case values are kept
        cast = "arith.index_castui" if width == 1 else "arith.index_cast"
        to_index = Operation.create(cast, [flag], [IndexType()], loc=term.loc)
        target.append(to_index)
        cases, paths = [], [0]
        dead = _repeated_cases(term)
        for i, value in enumerate(term.case_values, start=1):
            if i not in dead:
                cases.append(value & 1 if width == 1 else value)
                paths.append(i)
            else:       # an edge never taken: its target may have no other predecessor
                self.preds[id(term.successors[i])].remove(term.parent)
                self.dead_edges.append((term.parent, term.successors[i]))
        op = IndexSwitchOp(operands=[to_index.results[0]], result_types=types,
                           attributes={"cases": DenseArrayAttr(i64, tuple(cases))},
                           regions=[Region([Block()]) for _ in paths], loc=term.loc)
        return op, paths

    # -- loops -------------------------------------------------------------------------------

    def _is_loop_header(self, block: Block) -> bool:
        return any(self.dom.dominates(block, p) for p in self.preds[id(block)])

    def _loop_blocks(self, header: Block, latches: list[Block]) -> dict[int, Block]:
        """The blocks of the natural loop of the back edges ``latches`` -> ``header``, by
        id."""
        loop = {id(header): header}
        work = list(latches)
        while work:
            b = work.pop()
            if id(b) in loop or not self.dom.dominates(header, b):
                continue
            loop[id(b)] = b
            work.extend(self.preds[id(b)])
        return loop

    def _lift_loop(self, header: Block, inits: list[Value],
                   target: Block) -> tuple[Block, list[Value]]:
        """The loop at ``header``, entered with ``inits``: an ``scf.for`` when it is a counted
        loop, else an ``scf.while``; returns the edge the loop exits by (block, values)."""
        # several back edges (a conditional at the end of the body branching to the header
        # from both sides) are one once the conditional is lifted: its paths meet there
        latches = [p for p in self.preds[id(header)] if self.dom.dominates(header, p)]
        loop = self._loop_blocks(header, latches)
        exiting = [b for b in loop.values() if any(id(s) not in loop for s in b.successors)]
        if len(exiting) != 1 or exiting[0].terminator.name != "cf.cond_br":
            raise _NotStructured("a loop that leaves from other than one conditional branch")
        leave = exiting[0]
        if not all(self.dom.dominates(leave, latch) for latch in latches):
            raise _NotStructured("a loop whose exit is not on every path round it")
        if leave is header and len(latches) == 1:
            counted = self._counted_loop(header, latches[0], loop)
            if counted is not None:
                return self._lift_for(header, inits, target, *counted)
        return self._lift_while(header, leave, loop, inits, target)

    def _counted_loop(self, header: Block, latch: Block, loop: dict[int, Block]):
        """(compare, step, unsigned) when the loop at ``header`` is ``for iv = lb; iv < ub;
        iv += step`` with ``ub`` from before the loop, a positive constant step and ``iv``
        not read after the loop; else None."""
        if len(header.ops) != 2 or header.ops[0].name != "arith.cmpi" or not header.args:
            return None
        cmp, cond_br = header.ops
        iv = header.args[0]
        predicate = cmp.attributes.get("predicate")
        if cmp.operands[0] is not iv or \
                not (isinstance(predicate, IntegerAttr) and predicate.value in (2, 6)) or \
                cond_br.condition is not cmp.results[0] or len(cmp.results[0].uses) != 1 or \
                not self._defined_before(cmp.operands[1], header):
            return None
        body, exit_ = cond_br.successors
        if id(body) not in loop or id(exit_) in loop or body is header or \
                any(v is iv for v in cond_br.successor_operands(1)):
            return None
        back = latch.terminator
        if back.name != "cf.br" or not back.operands:
            return None
        try:
            step = self._step(back.operands[0], iv)
        except _NotStructured:
            return None
        for u in iv.uses:
            block = self.home.get(id(u.op))
            if u.op is not cmp and not (block is not None and id(block) in loop):
                return None     # read after the loop: its last value is not scf.for's
        return cmp, step, predicate.value == 6

    def _lift_for(self, header: Block, inits: list[Value], target: Block, cmp: Operation,
                  step: int, unsigned: bool) -> tuple[Block, list[Value]]:
        cond_br = header.terminator
        iv = header.args[0]
        bound = cmp.operands[1]
        body, exit_ = cond_br.successors
        self._visit(header)
        loop_body = Block([a.type for a in header.args])
        for old, new in zip(header.args, loop_body.args):
            old.replace_all_uses_with(new)
        body_vals = list(cond_br.successor_operands(0))
        exit_vals = list(cond_br.successor_operands(1))
        cond_br.drop_all_operand_uses()
        cmp.drop_all_operand_uses()
        kind, nexts = self._emit_edge(body, body_vals, loop_body, header=header, stop=None)
        if kind != "latch":
            raise _NotStructured("a loop body that does not come back to its header")
        next_op = nexts[0].defining_op
        step_value = next_op.operands[1] if next_op.operands[0] is loop_body.args[0] \
            else next_op.operands[0]
        if not self._defined_before(step_value, header):
            step_op = Operation.create("arith.constant", result_types=[iv.type],
                                       attributes={"value": IntegerAttr(step, iv.type)},
                                       loc=cmp.loc)
            target.append(step_op)
            step_value = step_op.results[0]
        for_op = ForOp.build(inits[0], bound, step_value, inits[1:], unsigned=unsigned,
                             loc=cmp.loc)
        for op in list(for_op.regions[0].blocks[0].ops):
            op.erase()
        for_op.regions[0].blocks[0] = loop_body
        loop_body.parent = for_op.regions[0]
        loop_body.append(YieldOp.build(nexts[1:], loc=cmp.loc))
        target.append(for_op)
        if not nexts[0].uses:
            next_op.erase()
        # after the loop, the carried values are the loop's results
        carried = {id(a): k for k, a in enumerate(loop_body.args)}
        for k, arg in enumerate(loop_body.args):
            outside = [u for u in arg.uses if not for_op.is_proper_ancestor_of(u.op)]
            if outside and k == 0:
                raise _NotStructured("the induction variable is used after its loop")
            for u in outside:
                u.op.set_operand(u.index, for_op.results[k - 1])
        exit_vals = [for_op.results[carried[id(v)] - 1] if id(v) in carried else v
                     for v in exit_vals]
        return exit_, exit_vals

    def _lift_while(self, header: Block, leave: Block, loop: dict[int, Block], inits: list[Value],
                    target: Block) -> tuple[Block, list[Value]]:
        """``scf.while``: the blocks from the header to the one the loop leaves from
        (``leave``) are the before region, its condition (negated when the loop goes on along
        the false edge) and the values the loop needs after it the ``scf.condition``'s; the
        blocks from there to the back edge are the after region (empty in a do-while)."""
        before = Block([a.type for a in header.args])
        for old, new in zip(header.args, before.args):
            old.replace_all_uses_with(new)
        if leave is not header:
            if self._is_loop_header(leave):
                raise _NotStructured("a loop that leaves from an inner loop's header")
            kind, values = self._emit(header, before, header=header, stop=leave)
            if kind != "merge":
                raise _NotStructured("a loop that does not reach its exit")
            self._visit(leave)
            self._inline(leave, values, predecessors=None)
        else:
            self._visit(header)
        for op in leave.ops[:-1]:
            op.detach()
            before.append(op)
        cond_br = leave.terminator
        t_dest, f_dest = cond_br.successors
        negate = id(t_dest) not in loop
        cont, exit_ = (f_dest, t_dest) if negate else (t_dest, f_dest)
        cont_vals = list(cond_br.successor_operands(1 if negate else 0))
        exit_vals = list(cond_br.successor_operands(0 if negate else 1))
        condition = cond_br.condition
        cond_br.drop_all_operand_uses()
        # what the before region defines and is read past its scf.condition is passed on
        inside = {id(o) for top in before.ops for o in top.walk()}
        defined = list(before.args) + [r for op in before.ops for r in op.results]
        is_defined = {id(v) for v in defined}
        forwarded = list(cont_vals)
        index: dict[int, int] = {}
        for k, v in enumerate(forwarded):
            index.setdefault(id(v), k)
        for v in defined:
            if id(v) not in index and (any(w is v for w in exit_vals) or
                                        any(id(u.op) not in inside for u in v.uses)):
                index[id(v)] = len(forwarded)
                forwarded.append(v)
        while_op = WhileOp.build(inits, [v.type for v in forwarded], loc=cond_br.loc)
        while_op.regions[0].blocks[0] = before
        before.parent = while_op.regions[0]
        after = while_op.after_block
        # seen from the after region, the before region's values are its arguments; from
        # after the loop, the loop's results
        for v in defined:
            k = index.get(id(v))
            for u in list(v.uses):
                if id(u.op) in inside:
                    continue
                block = self.home.get(id(u.op))
                if block is None:
                    raise _NotStructured("a loop's value read by an op this pass made")
                u.op.set_operand(u.index, after.args[k] if id(block) in loop
                                 else while_op.results[k])
        if negate:
            true = Operation.create("arith.constant", result_types=[condition.type],
                                    attributes={"value": IntegerAttr(1, condition.type)},
                                    loc=cond_br.loc)
            flip = Operation.create("arith.xori", [condition, true.results[0]],
                                    [condition.type], loc=cond_br.loc)
            before.append(true)
            before.append(flip)
            condition = flip.results[0]
        before.append(ConditionOp.build(condition, forwarded, loc=cond_br.loc))
        carried = list(after.args[:len(cont_vals)])
        if cont is header:      # a do-while: the before region is all of it
            nexts = carried
        else:
            kind, nexts = self._emit_edge(cont, carried, after, header=header, stop=None)
            if kind != "latch":
                raise _NotStructured("a loop body that does not come back to its header")
        after.append(YieldOp.build(nexts, loc=cond_br.loc))
        target.append(while_op)
        exit_vals = [while_op.results[index[id(v)]] if id(v) in is_defined else v
                     for v in exit_vals]
        return exit_, exit_vals

    def _step(self, next_iv: Value, iv: Value) -> int:
        op = next_iv.defining_op
        if op is None or op.name != "arith.addi" or iv not in op.operands:
            raise _NotStructured("a loop whose back edge does not pass iv + step")
        other = op.operands[1] if op.operands[0] is iv else op.operands[0]
        c = other.defining_op
        value = c.attributes.get("value") if c is not None and c.name == "arith.constant" \
            else None
        if not isinstance(value, IntegerAttr) or value.value <= 0:
            raise _NotStructured("a loop whose step is not a positive constant")
        return value.value

    def _defined_before(self, v: Value, header: Block) -> bool:
        """``v`` is available before the loop at ``header``: it is defined in a block that
        strictly dominates the header, or it is a value this pass made before the loop (or a
        function or enclosing loop argument)."""
        op = v.defining_op
        block = self.home.get(id(op)) if op is not None else v.owner_block
        if block is None or block.parent is not self.region:
            return True
        return block is not header and self.dom.dominates(block, header)
