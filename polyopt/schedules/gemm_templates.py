"""What the GEMM templates share (:mod:`~polyopt.schedules.dynamic_gemm`,
:mod:`~polyopt.schedules.lowp_gemm`): a template is a ``func.func`` in MLIR text over the
operands and the sizes, spliced in place of the naive product nest that
:func:`~polyopt.schedules.expand.expand_matmul` built (after its run-time size check and
``C *= beta`` nest)."""

from __future__ import annotations

from typing import Sequence

from ..affine.builder import Builder
from ..affine.dialects.arith import ConstantOp
from ..affine.ir import Value
from ..affine.types import IndexType


def product_extents(b: Builder, loops: Sequence, loc) -> list[Value]:
    """(M, N, K) of the naive product nest ``loops`` (i, j, k) as index values: a constant
    bound becomes an ``arith.constant`` at ``b``, a size is its operand."""
    extents = []
    for loop in loops:
        if loop.upper_map.is_constant():
            c = b.create(ConstantOp, loop.upper_map.single_constant_result, IndexType(),
                         loc=loc)
            extents.append(c.result)
        else:
            extents.append(loop.upper_operands[0])
    return extents


def splice_template(b: Builder, text: str, name: str, values: Sequence[Value], loc) -> list:
    """The body of the one function of ``text`` (parsed as ``name``) inserted at ``b``, its
    arguments replaced by ``values``, every op located at ``loc``; returns the ops."""
    from ..affine.parser import parse
    func = next(op for op in parse(text, name).walk() if op.name == "func.func")
    func.body.ops[-1].drop_all_operand_uses()      # the return, left behind
    for arg, value in zip(func.body.args, values):
        arg.replace_all_uses_with(value)
    # the parsed function is thrown away: its ops move, uncopied
    out = func.body.ops[:-1]
    del func.body.ops[:-1]
    for op in out:
        op.parent = None
        for inner in op.walk():
            inner.loc = loc
        b.insert(op)
    return out
