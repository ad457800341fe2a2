"""A function's scops: the runs of its top-level ops that the polyhedral model represents,
between the ops it cannot (structured control flow that was not raised to affine, calls,
``memref.load``/``store`` with non-affine subscripts...).  Those are left alone -- they run as
written, and no schedule moves anything across them -- with a remark naming the op that makes
their nest opaque (scop detection at the granularity of top-level nests, as Polly's and pet's
is at that of maximal regions).

    func.func @f(...) {
      affine.for %i = ... { S0 }          scop 1: S0, S1
      affine.for %j = ... { S1 }
      scf.while ... { ... }               left alone: 'scf.while' op holds regions ...
      affine.for %k = ... { S2 }          scop 2: S2 (statements are numbered across scops)
    }
"""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineIfOp, AffineParallelOp
from ..affine.ir import Operation
from .model import ACCESS_OPS, PolyhedralModel, extract, unsupported_op

__all__ = ["function_scops", "report_opaque_nests"]

Remark = Optional[Callable[[object, str], None]]


def _left_alone(top: Operation, err: ScheduleError, remark: Remark) -> None:
    if remark is not None:
        where = f" (at {err.loc.line}:{err.loc.col})" if err.loc is not None else ""
        remark(top.loc, f"nest left alone by the polyhedral passes, it runs as written: "
                        f"{err.message}{where}")


def function_scops(func: Operation, remark: Remark = None
                   ) -> tuple[list[PolyhedralModel], list[tuple[Operation, ScheduleError]]]:
    """The models of ``func``'s scops in textual order (statements ``S0, S1, ...`` numbered
    across them) and the nests left alone, each with why: a top-level op holding an op the
    model cannot represent ends a scop (``remark`` names it when that op is a nest), and a run
    of ops whose extraction fails (a non-affine subscript, a value escaping...) is left alone
    as a whole."""
    body = func.regions[0].blocks[0].ops if func.regions and func.regions[0].blocks else []
    runs: list[list[Operation]] = [[]]
    opaque: list[tuple[Operation, ScheduleError]] = []
    for op in body:
        err = unsupported_op(op)
        if err is None:
            runs[-1].append(op)
            continue
        if op.regions:
            opaque.append((op, err))
            _left_alone(op, err, remark)
        runs.append([])
    models: list[PolyhedralModel] = []
    first = 0
    for run in runs:
        marks = [k for k, op in enumerate(run)
                 if isinstance(op, (AffineForOp, AffineIfOp, AffineParallelOp) + ACCESS_OPS)]
        if not marks:
            continue
        ops = run[marks[0]:marks[-1] + 1]
        try:
            model = extract(ops, first_statement=first)
        except ScheduleError as err:
            opaque.append((ops[0], err))
            _left_alone(ops[0], err, remark)
            continue
        models.append(model)
        first += len(model.statements)
    return models, opaque


def report_opaque_nests(module: Operation, remark: Remark) -> None:
    """A remark for every nest of ``module``'s functions that the polyhedral model leaves
    alone (what ``--hopt`` tells about the nests it cannot see), except nests that hold the
    high-level ops ``--hopt`` expands (``hop.matmul`` in a loop: the op is what it optimizes)."""
    if remark is None:
        return
    for func in module.walk():
        if func.name != "func.func" or not func.regions or not func.regions[0].blocks:
            continue
        for top, err in function_scops(func)[1]:
            if not any(op.dialect in ("hop", "linalg") for op in top.walk()):
                _left_alone(top, err, remark)
