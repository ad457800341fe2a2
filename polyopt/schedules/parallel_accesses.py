"""Innermost loops whose iterations ISL finds independent, marked for LLVM (Polly's parallel
loop annotation; MLIR's ``#llvm.loop_annotation<parallelAccesses = ...>``): the lowering gives
their loads and stores an access group and the loop ``llvm.loop.parallel_accesses``
(:mod:`polyopt.codegen.loop_metadata`), so LLVM's vectorizer needs no run-time alias check.

Without the mark LLVM checks at run time that the rows a loop writes do not overlap the rows
it reads; hoisted out of the loops around, the check covers every row the outer loop visits
and can fail where no iteration conflicts: PolyBench's lu and ludcmp (row ``i`` updated from
row ``k`` of the same array) ran their scalar loops, 1.2x slower (LARGE, Zen 5).
"""

from __future__ import annotations

from ..affine.attributes import UnitAttr
from ..affine.ir import Operation
from ..codegen.loop_metadata import PARALLEL_ACCESSES
from .point_loops import innermost_loops
from .vector_legality import is_loop_parallel

__all__ = ["PARALLEL_ACCESSES", "annotate_parallel_innermost"]


def annotate_parallel_innermost(root: Operation) -> int:
    """Put :data:`PARALLEL_ACCESSES` on every innermost ``affine.for`` under ``root`` without
    ``iter_args`` that :func:`~polyopt.schedules.vector_legality.is_loop_parallel` accepts;
    the number annotated."""
    count = 0
    for op in innermost_loops([root]):
        if not op.inits and PARALLEL_ACCESSES not in op.attributes and is_loop_parallel(op):
            op.attributes[PARALLEL_ACCESSES] = UnitAttr()
            count += 1
    return count
