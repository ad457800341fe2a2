"""The operand and result counts an op's ODS definition fixes, checked with the messages of
MLIR's count traits (``OneResult``, ``NOperands<N>``...), in their order: results, then
operands.  For ops read in generic form, whose counts the parser cannot enforce."""

from __future__ import annotations

from .ir import Operation


def check_result_count(op: Operation, expected: int) -> None:
    """``ZeroResults`` / ``OneResult`` / ``NResults<N>``."""
    n = len(op.results)
    if n == expected:
        return
    if expected == 0:
        raise op.error("requires zero results")
    if expected == 1:
        raise op.error("requires one result")
    raise op.error(f"expected {expected} results, but found {n}")


def check_operand_count(op: Operation, expected: int) -> None:
    """``ZeroOperands`` / ``OneOperand`` / ``NOperands<N>``."""
    n = len(op.operands)
    if n == expected:
        return
    if expected == 0:
        raise op.error("requires zero operands")
    if expected == 1:
        raise op.error("requires a single operand")
    raise op.error(f"expected {expected} operands, but found {n}")


def check_counts(op: Operation, operands: int, results: int = 1) -> None:
    """Both, in the order MLIR's traits run: the result count first."""
    check_result_count(op, results)
    check_operand_count(op, operands)
