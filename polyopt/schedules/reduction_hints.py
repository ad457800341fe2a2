"""Remarks on float reductions kept in source order by the innermost loop (what ``--hopt``
tells about the loops it leaves to LLVM).

``%s = affine.for ... iter_args(%a = %z) { %n = arith.addf %a, %v }``, or ``s[i] = s[i] +
x[i, j]`` in the j loop, adds one element at a time: IEEE addition is not associative, so
neither polyopt nor LLVM may split the sum into vector partial sums, and the loop runs at one
add per add latency (a row sum of 1024 f32: 0.32x numpy's pairwise, vectorized ``sum`` on
Zen 5; 1.12x in the memref form, whose rows polyopt interleaves).  With ``fastmath<reassoc>``
on the ``arith.addf`` LLVM's loop vectorizer does split it (4.2x and 4.1x numpy): the remark
names the op and the flag, as LLVM's ``-Rpass-analysis=loop-vectorize`` says "cannot prove it
is safe to reorder floating-point operations".  The same for ``mulf``, ``maximumf``/
``minimumf`` (and ``maxnumf``/``minnumf``, which LLVM also wants ``nnan`` for, not asked
here).  A multiply-accumulate into a memref is a contraction, raised and vectorized along its
other loops: not named."""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.dialects.affine import AffineForOp
from ..affine.ir import Operation
from ..affine.types import FloatType

#: the combining ops of a reduction LLVM vectorizes once they may be reassociated
COMBINERS = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
             "arith.minnumf")


#: Fewer iterations than this, the sum is not worth splitting (a window of taps).
MIN_TRIP = 16


def _reassociable(op: Operation) -> bool:
    fm = op.attributes.get("fastmath")
    text = str(fm) if fm is not None else ""
    return "reassoc" in text or "fast" in text.replace("fastmath", "")


def _memref_reductions(loop: AffineForOp) -> list[Operation]:
    """The combining ops of ``s[f(outer)] = s[f(outer)] op v`` in ``loop``'s body: an element
    the loop does not index, updated at every iteration."""
    from ..affine.dialects.affine import AffineLoadOp, AffineStoreOp
    iv = loop.induction_var
    out = []
    for store in loop.body.ops:
        if not isinstance(store, AffineStoreOp) or any(v is iv for v in store.map_operands):
            continue
        op = store.value.defining_op
        if op is None or op.name not in COMBINERS or op.parent is not loop.body or \
                not isinstance(store.value.type, FloatType) or _reassociable(op):
            continue
        if any(x.defining_op is not None and x.defining_op.name == "arith.mulf"
               for x in op.operands):
            continue    # a multiply-accumulate: a contraction, vectorized along its other loops
        for x in op.operands:
            load = x.defining_op
            if isinstance(load, AffineLoadOp) and load.memref is store.memref and \
                    load.map == store.map and \
                    all(a is b for a, b in zip(load.map_operands, store.map_operands)):
                out.append(op)
                break
    return out


def strict_reductions(root: Operation) -> list[tuple[AffineForOp, Operation]]:
    """(innermost loop, combining op) for each float reduction of an innermost loop folded by
    one op of :data:`COMBINERS` without ``reassoc`` (or ``fast``): an ``iter_args`` value, or
    an element of a memref the loop does not index (``s[i] += x[i, j]`` in the j loop)."""
    found = []
    for loop in root.walk():
        if not isinstance(loop, AffineForOp) or \
                any(isinstance(op, AffineForOp) for op in loop.body.ops):
            continue
        if loop.has_constant_bounds and \
                loop.constant_upper_bound - loop.constant_lower_bound < MIN_TRIP * loop.step:
            continue        # a pooling window's few taps: nothing to split
        found += [(loop, op) for op in _memref_reductions(loop)]
        if not loop.inits:
            continue
        yielded = loop.body.ops[-1].operands
        args = loop.body.args[1:]
        for arg, value in zip(args, yielded):
            op = value.defining_op
            if op is None or op.name not in COMBINERS or op.parent is not loop.body or \
                    not isinstance(arg.type, FloatType) or \
                    not any(o is arg for o in op.operands) or _reassociable(op):
                continue
            found.append((loop, op))
    return found


def remark_strict_reductions(root: Operation,
                             remark: Optional[Callable[[object, str], None]]) -> None:
    """One remark per :func:`strict_reductions` entry, at the combining op."""
    if remark is None:
        return
    for loop, op in strict_reductions(root):
        kind = op.name.split(".")[1]
        remark(op.loc, f"a float reduction ({op.name} carried by the innermost loop) runs in "
                       f"source order, one {kind} at a time: fastmath<reassoc> on it lets "
                       f"LLVM's loop vectorizer split it into vector partial sums (the result "
                       f"then differs in the last bits)")
