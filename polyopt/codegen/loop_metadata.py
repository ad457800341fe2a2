"""LLVM loop metadata for ``affine.for`` loops whose iterations touch memory independently
(MLIR's ``#llvm.loop_annotation<parallelAccesses = ...>`` with ``access_groups`` on the
``llvm.load``/``llvm.store`` ops; Polly's annotation of the parallel loops it proves)::

    %v = load i32, ptr %p, !llvm.access.group !1          !1 = distinct !{}
    br label %header, !llvm.loop !2                       !2 = distinct !{!2, !3}
                                                          !3 = !{!"llvm.loop.parallel_accesses", !1}

LLVM's vectorizer then needs no run-time alias check between the loop's accesses: their
independence across iterations is a fact the polyhedral layer checked (ISL), and the check
LLVM would emit can fail for reasons of its own (hoisted out of the loops around, it covers
every row the outer loop visits).  llvmlite has neither distinct nor self-referencing nodes:
:class:`_DistinctNode` writes them."""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

#: The unit attribute of an ``affine.for`` whose iterations touch memory independently, set
#: only where ISL checked it (:mod:`polyopt.schedules.index_set_split`); passes that merge its
#: iterations with others' (collapsing, jamming an outer loop into it) must drop it.
PARALLEL_ACCESSES = "polyopt.parallel_accesses"


class _DistinctNode(ir.values.MDValue):
    """``distinct !{...}``, optionally with itself as its first operand (a loop ID)."""

    def __init__(self, module: ir.Module, operands: Sequence, self_reference: bool = False):
        super().__init__(module, module._fix_metadata_operands(list(operands)),
                         name=str(len(module.metadata)))
        if self_reference:
            self.operands = (self,) + tuple(self.operands)

    def descr(self, buf):
        buf.append("distinct ")
        super().descr(buf)

    # identity, not structure: a node that holds itself cannot be hashed by its operands
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


MEMORY_INSTRUCTIONS = (ir.LoadInstr, ir.StoreInstr)


def annotate_parallel_loop(module: ir.Module, blocks: Sequence[ir.Block],
                           latch: ir.Instruction) -> int:
    """Put one new access group on every load and store in ``blocks`` (the loop's body) and
    ``llvm.loop.parallel_accesses`` of that group on the loop's back edge ``latch``; returns
    the number of accesses tagged."""
    group = _DistinctNode(module, [])
    count = 0
    for block in blocks:
        for instr in block.instructions:
            if isinstance(instr, MEMORY_INSTRUCTIONS):
                instr.set_metadata("llvm.access.group", group)
                count += 1
    parallel = module.add_metadata(["llvm.loop.parallel_accesses", group])
    latch.set_metadata("llvm.loop", _DistinctNode(module, [parallel], self_reference=True))
    return count
