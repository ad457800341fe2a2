"""Remarks on float reductions carried by ``iter_args`` in source order (what ``--hopt`` tells
about the loops it leaves to LLVM).

``%s = affine.for ... iter_args(%a = %z) { %n = arith.addf %a, %v }`` adds one element at a
time: IEEE addition is not associative, so neither polyopt nor LLVM may split the sum into
vector partial sums, and the loop runs at one add per add latency (a row sum of 1024 f32:
0.32x numpy's pairwise, vectorized ``sum`` on Zen 5).  With ``fastmath<reassoc>`` on the
``arith.addf`` LLVM's loop vectorizer does split it (4.2x numpy, same loop): the remark names
the op and the flag, as LLVM's ``-Rpass-analysis=loop-vectorize`` says "cannot prove it is
safe to reorder floating-point operations".  The same for ``mulf``, ``maximumf``/``minimumf``
(and ``maxnumf``/``minnumf``, which LLVM also wants ``nnan`` for, not asked here)."""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.dialects.affine import AffineForOp
from ..affine.ir import Operation
from ..affine.types import FloatType

#: the combining ops of a reduction LLVM vectorizes once they may be reassociated
COMBINERS = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.maxnumf",
             "arith.minnumf")


def _reassociable(op: Operation) -> bool:
    fm = op.attributes.get("fastmath")
    text = str(fm) if fm is not None else ""
    return "reassoc" in text or "fast" in text.replace("fastmath", "")


def strict_reductions(root: Operation) -> list[tuple[AffineForOp, Operation]]:
    """(innermost loop, combining op) for each float ``iter_args`` value of an innermost loop
    folded by one op of :data:`COMBINERS` without ``reassoc`` (or ``fast``)."""
    found = []
    for loop in root.walk():
        if not isinstance(loop, AffineForOp) or not loop.inits:
            continue
        if any(isinstance(op, AffineForOp) for op in loop.body.ops):
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
        remark(op.loc, f"a float reduction ({op.name} of a loop-carried value) runs in source "
                       f"order, one {op.name.split('.')[1]} at a time: fastmath<reassoc> on it "
                       f"lets LLVM's loop vectorizer split it into vector partial sums (the "
                       f"result then differs in the last bits)")
