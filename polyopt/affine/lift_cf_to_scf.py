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
* a loop entered once, with one back edge, leaving from its header: an ``scf.for`` when the
  header takes the induction variable (and loop-carried values), compares it ``slt`` (or
  ``ult``) with a bound defined before the loop, and the back edge passes ``iv + constant
  step`` (step > 0) and the induction variable is not read after the loop; otherwise an
  ``scf.while`` whose before region is the header (what ``--convert-scf-to-cf`` makes of an
  ``scf.while`` comes back as it was).

Upstream's pass turns every loop into ``scf.while`` and switches into ``scf.index_switch``;
this one gives the counted loops back as ``scf.for``, the form the polyhedral passes read, and
leaves a function with anything else (``cf.switch``, a return or a second exit inside a loop, a
loop entered at two places) as it was, all of it: it runs as written, through the branches,
and the remark says what stopped the lifting.
"""

from __future__ import annotations

from typing import Callable, Optional

from .attributes import IntegerAttr
from .dialects.scf import ConditionOp, ForOp, IfOp, WhileOp, YieldOp
from .dominance import DominanceInfo, PostDominanceInfo
from .ir import Block, Operation, Region, Value

__all__ = ["lift_cf_to_scf"]

Remark = Optional[Callable[[object, str], None]]


class _NotStructured(Exception):
    """The function's control flow has a shape this pass does not lift."""


def lift_cf_to_scf(module: Operation, remark: Remark = None) -> None:
    """Lift the branches of every multi-block ``func.func`` of ``module`` into
    ``scf.for``/``scf.if`` (all of a function or nothing)."""
    for func in [op for op in module.walk() if op.name == "func.func"]:
        region = func.regions[0]
        if len(region.blocks) <= 1:
            continue
        copy = func.clone()     # lifted on a copy: a shape met halfway leaves `func` intact
        try:
            lifted = _Lifter(copy.regions[0]).run()
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


class _Lifter:
    def __init__(self, region: Region):
        self.region = region
        self.dom = DominanceInfo(region)
        self.pdom = PostDominanceInfo(region)
        self.visited: set[int] = set()
        # the block each op was written in (the ops move as the lifting goes)
        self.home = {id(inner): block for block in region.blocks for op in block.ops
                     for inner in op.walk()}
        # the branches stay in their blocks as the ops move: the edges do not change
        # (Block.predecessors looks at every block: quadratic in a function of many blocks)
        self.preds: dict[int, list[Block]] = {id(b): [] for b in region.blocks}
        for b in region.blocks:
            for succ in b.successors:
                self.preds[id(succ)].append(b)

    def run(self) -> Region:
        entry = self.region.blocks[0]
        body = Block([a.type for a in entry.args])
        for old, new in zip(entry.args, body.args):
            old.replace_all_uses_with(new)
        kind, _ = self._emit(entry, body, header=None, stop=None)
        if kind != "return":
            raise _NotStructured("the function does not end in a return")
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
            if id(block) in self.visited:
                raise _NotStructured("a block is reached along two paths that do not meet "
                                     "at a conditional's end")
            self.visited.add(id(block))
            term = block.terminator
            for op in block.ops[:-1]:
                op.detach()
                target.append(op)
            if term.name == "func.return":
                if header is not None or stop is not None:
                    raise _NotStructured("a return inside a loop or a conditional")
                term.detach()
                target.append(term)
                return "return", []
            if term.name == "cf.br":
                dest, values = term.dest, list(term.operands)
                term.drop_all_operand_uses()     # replaced by the structure (its operands stay
                if dest is stop:                 # readable)
                    return "merge", values
                if dest is header:
                    return "latch", values
                if self._is_loop_header(dest):
                    block = self._lift_loop(block, dest, values, target)
                    continue
                block = self._inline(dest, values)
                continue
            if term.name == "cf.cond_br":
                merge = self.pdom.ipdom(block)
                if merge is None:
                    raise _NotStructured("the paths of a cf.cond_br do not meet again")
                results = self._lift_if(term, merge, target, header)
                if merge is stop:
                    return "merge", results
                if merge is header:
                    return "latch", results
                if self._is_loop_header(merge):
                    raise _NotStructured("a conditional's paths meet at a loop header")
                block = self._inline(merge, results, predecessors=None)
                continue
            raise _NotStructured(f"'{term.name}' is not lifted")

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

    def _lift_if(self, term: Operation, merge: Block, target: Block,
                 header: Optional[Block]) -> list[Value]:
        term.drop_all_operand_uses()
        if_op = IfOp.build(term.condition, [a.type for a in merge.args], with_else=True,
                           loc=term.loc)
        for i, region in enumerate(if_op.regions):
            block = region.blocks[0]
            for op in list(block.ops):      # the empty scf.yield of a result-less if
                op.erase()
            dest, values = term.successors[i], list(term.successor_operands(i))
            if dest is not merge:
                if len(self.preds[id(dest)]) != 1:
                    raise _NotStructured("a conditional's branch target has other "
                                         "predecessors")
                kind, values = self._emit(self._inline(dest, values), block, header, merge)
                if kind != "merge":
                    raise _NotStructured("a conditional's path leaves it without reaching "
                                         "its end")
            block.append(YieldOp.build(values, loc=term.loc))
        else_block = if_op.regions[1].blocks[0]
        if not if_op.results and len(else_block.ops) == 1:
            if_op.regions[1].blocks.clear()     # no else
        target.append(if_op)
        return list(if_op.results)

    # -- loops -------------------------------------------------------------------------------

    def _is_loop_header(self, block: Block) -> bool:
        return any(self.dom.dominates(block, p) for p in self.preds[id(block)])

    def _lift_loop(self, preheader: Block, header: Block, inits: list[Value],
                   target: Block) -> Block:
        """The loop entered at ``header`` from ``preheader`` with ``inits``: an ``scf.for`` when
        it is a counted loop, else an ``scf.while``; returns the block the loop exits to."""
        preds = self.preds[id(header)]
        if len(preds) != 2 or sum(p is preheader for p in preds) != 1:
            raise _NotStructured("a loop header with other than one entry and one back edge")
        latch = preds[1] if preds[0] is preheader else preds[0]
        if header.terminator.name != "cf.cond_br" or latch is header:
            raise _NotStructured("a loop that does not leave from its header")
        counted = self._counted_loop(header, latch)
        if counted is not None:
            return self._lift_for(header, inits, target, *counted)
        return self._lift_while(header, latch, inits, target)

    def _counted_loop(self, header: Block, latch: Block):
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
        if cond_br.successor_operands(0) or cond_br.successor_operands(1) or \
                len(self.preds[id(body)]) != 1 or len(self.preds[id(exit_)]) != 1:
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
            if u.op is not cmp and not (block is not None and self.dom.dominates(body, block)):
                return None     # read after the loop: its last value is not scf.for's
        return cmp, step, predicate.value == 6

    def _lift_for(self, header: Block, inits: list[Value], target: Block, cmp: Operation,
                  step: int, unsigned: bool) -> Block:
        cond_br = header.terminator
        iv = header.args[0]
        bound = cmp.operands[1]
        body, exit_ = cond_br.successors
        self.visited.add(id(header))
        cond_br.drop_all_operand_uses()
        cmp.drop_all_operand_uses()
        loop_body = Block([a.type for a in header.args])
        for old, new in zip(header.args, loop_body.args):
            old.replace_all_uses_with(new)
        kind, nexts = self._emit(body, loop_body, header=header, stop=None)
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
        for k, arg in enumerate(loop_body.args):
            outside = [u for u in arg.uses if not for_op.is_proper_ancestor_of(u.op)]
            if outside and k == 0:
                raise _NotStructured("the induction variable is used after its loop")
            for u in outside:
                u.op.set_operand(u.index, for_op.results[k - 1])
        return exit_

    def _lift_while(self, header: Block, latch: Block, inits: list[Value],
                    target: Block) -> Block:
        """``scf.while``: the header's ops are the before region, their condition (negated
        when the loop continues on the false edge) and the values the loop needs after it the
        ``scf.condition``'s; the body up to the back edge is the after region."""
        cond_br = header.terminator
        t_dest, f_dest = cond_br.successors
        if t_dest is not header and self.dom.dominates(t_dest, latch):
            body, exit_, negate = t_dest, f_dest, False
            body_vals, exit_vals = cond_br.successor_operands(0), cond_br.successor_operands(1)
        elif f_dest is not header and self.dom.dominates(f_dest, latch):
            body, exit_, negate = f_dest, t_dest, True
            body_vals, exit_vals = cond_br.successor_operands(1), cond_br.successor_operands(0)
        else:
            raise _NotStructured("a loop whose header does not branch into its body")
        if body is exit_ or len(self.preds[id(body)]) != 1 or len(self.preds[id(exit_)]) != 1:
            raise _NotStructured("a loop whose body or exit has other predecessors")
        header_ops = header.ops[:-1]
        header_values = list(header.args) + [r for op in header_ops for r in op.results]
        in_header = {id(v) for v in header_values}
        forwarded = list(body_vals)
        index = {}
        for k, v in enumerate(forwarded):
            index.setdefault(id(v), k)
        for v in header_values + list(exit_vals):
            if id(v) in index or id(v) not in in_header:
                continue
            if v in exit_vals or any(self.home.get(id(u.op)) is not header for u in v.uses
                                     if u.op is not cond_br):
                index[id(v)] = len(forwarded)
                forwarded.append(v)
        self.visited.add(id(header))
        condition = cond_br.condition
        cond_br.drop_all_operand_uses()
        while_op = WhileOp.build(inits, [v.type for v in forwarded], loc=cond_br.loc)
        before, after = while_op.before_block, while_op.after_block
        # the header's values seen from the body are the after region's arguments, from
        # after the loop its results
        for v in header_values:
            k = index.get(id(v))
            for u in list(v.uses):
                block = self.home.get(id(u.op))
                if block is header or block is None:
                    continue
                if k is None:
                    raise _NotStructured("a header value used outside the loop")
                if self.dom.dominates(body, block):
                    u.op.set_operand(u.index, after.args[k])
                elif self.dom.dominates(exit_, block):
                    u.op.set_operand(u.index, while_op.results[k])
                else:
                    raise _NotStructured("a header value used outside the loop")
        for op in header_ops:
            op.detach()
            before.append(op)
        for old, new in zip(header.args, before.args):
            old.replace_all_uses_with(new)
        before_args = {id(old): new for old, new in zip(header.args, before.args)}
        # the condition may be a header argument (a flag the back edge computes): its use
        # by the cf.cond_br is gone, so the replacement above did not reach it
        condition = before_args.get(id(condition), condition)
        if negate:
            true = Operation.create("arith.constant", result_types=[condition.type],
                                    attributes={"value": IntegerAttr(1, condition.type)},
                                    loc=cond_br.loc)
            flip = Operation.create("arith.xori", [condition, true.results[0]],
                                    [condition.type], loc=cond_br.loc)
            before.append(true)
            before.append(flip)
            condition = flip.results[0]
        cond_values = [before_args.get(id(v), v) for v in forwarded]
        before.append(ConditionOp.build(condition, cond_values, loc=cond_br.loc))
        kind, nexts = self._emit(self._inline(body, list(after.args[:len(body_vals)])), after,
                                 header=header, stop=None)
        if kind != "latch":
            raise _NotStructured("a loop body that does not come back to its header")
        after.append(YieldOp.build(nexts, loc=cond_br.loc))
        target.append(while_op)
        exit_values = [while_op.results[index[id(v)]] if id(v) in in_header else v
                       for v in exit_vals]
        return self._inline(exit_, exit_values)

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
