"""A min/max reduction over strided elements is lowered with ``llvm.maximumnum`` /
``llvm.minimumnum`` instead of ``llvm.maxnum`` / ``llvm.minnum``.

LLVM 22's loop vectorizer aborts the process (llvmlite's LLVM is built with assertions) on a
``maxnum``/``minnum`` reduction over f32 elements that a loop reads with a stride, e.g.
``m = maxnumf(m, X[k, j])`` in the loop over ``k``, which is what ``linalg.softmax`` along
the rows decomposes into: "VPlan cost model and legacy cost model disagreed"
(``LoopVectorizationPlanner::computeBestVF``; the recurrence kinds of llvm/llvm-project#148239).
``maximumnum`` is a refinement of ``arith.maxnumf``'s semantics (a NaN operand yields the other
one; of -0 and +0 it picks +0, where ``maxnumf`` allows either) whose reductions the vectorizer
costs without disagreeing.  A contiguous reduction keeps ``maxnum``: there the vectorizer does
not abort, and ``maximumnum``'s vector code is 1.8x slower (a row max over 4096 f32 on Zen 5).
"""

from __future__ import annotations

from polyopt.affine.affine_expr import AffineDimExpr
from polyopt.affine.ir import Operation, Value

#: the ops this applies to -> the intrinsic lowered instead
REFINED = {"arith.maxnumf": "maximumnum", "arith.minnumf": "minimumnum"}


def _loop_of_reduction(op: Operation):
    """(the loop, its induction variable) when ``op`` combines the loop's iter argument and
    its result is yielded by the loop's body (a loop-carried reduction), else None."""
    block = op.parent
    loop = op.parent_op
    if block is None or loop is None or loop.name not in ("affine.for", "scf.for"):
        return None
    args = list(block.args)
    if len(args) < 2 or not any(v is a for v in op.operands for a in args[1:]):
        return None
    terminator = block.ops[-1] if block.ops else None
    if terminator is None or not any(v is op.results[0] for v in terminator.operands):
        return None
    return loop, args[0]


def _unit_stride(access: Operation, iv: Value) -> bool:
    """Does ``access`` (a load in the loop of ``iv``) read consecutive elements as ``iv``
    steps (or the same element)?  Unknown forms count as strided."""
    if access.name in ("affine.load", "affine.vector_load"):
        amap, operands = access.map, list(access.map_operands)
        positions = [k for k, v in enumerate(operands) if v is iv]
        if not positions:
            return True
        results = amap.results
        if any(r.used_dims() & set(positions) for r in results[:-1]):
            return False
        last = results[-1] if results else None
        return isinstance(last, AffineDimExpr) and last.position in positions
    if access.name in ("memref.load", "vector.load"):
        indices = list(access.operands[1:])
        if not any(v is iv for v in indices):
            return all(v.defining_op is None or not any(
                u is iv for u in v.defining_op.operands) for v in indices)
        return indices[-1] is iv and not any(v is iv for v in indices[:-1])
    return True


def refined_minmax(op: Operation) -> bool:
    """Lower ``op`` (``arith.maxnumf``/``minnumf`` on scalars) with :data:`REFINED`'s
    intrinsic?  Where it is a loop-carried reduction in a loop that reads some memref with a
    stride."""
    if op.name not in REFINED or hasattr(op.results[0].type, "shape"):
        return False
    found = _loop_of_reduction(op)
    if found is None:
        return False
    loop, iv = found
    return any(not _unit_stride(inner, iv) for inner in loop.walk()
               if inner.name in ("affine.load", "affine.vector_load", "memref.load",
                                 "vector.load"))
