"""Static out-of-bounds checking of affine memory accesses (MLIR's memref bound check, the
``-test-memref-bound-check`` pass of mlir-opt 22; ``--memref-bound-check`` of ``polyopt
opt|run|translate``, ``memref_bound_check=True`` in :func:`polyopt.compile`).

For every ``affine.load``/``store``/``vector_load``/``vector_store`` the set of elements it may
touch over its iteration domain is computed exactly with ISL; if some iteration reaches outside
``[0, size)`` in a static dimension of the memref the access is reported with the dimension, the
offending index and the smallest offending iteration:

    affine.for %i = 0 to 16 {
      affine.for %j = 0 to 16 {
        %v = affine.load %A[%i, %j + 1] : memref<16x16xf64>
  -> error: 'affine.load' op out-of-bounds access to memref<16x16xf64> (%arg0) in dimension 1:
     index 16 at iteration (%arg1 = 0, %arg2 = 15)

With symbolic bounds an access is reported only if the overflow can happen for some values of
the symbols allowed by the context (then the message says so and gives such values).  Dynamic
(``?``) dimensions are not checked.

It is an option, as upstream: a program is not refused for an access it may never run.  The
transformations that rely on in-bounds accesses run it on what they transform and refuse it
with the same message: packing (:func:`polyopt.memref_layout.data_copy.generate_copy`, whose
copies would read and write the whole region) and the BLIS micro-kernel calls (C's tile).
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import islpy as isl

from ..affine.diagnostics import ScheduleError, VerifyError
from ..affine.ir import Operation, Value
from ..affine.printer import value_namer
from ..affine.types import MemRefType
from .dependences import smallest_point
from .model import ACCESS_OPS, PolyhedralModel, access_relation

__all__ = ["check_bounds", "find_out_of_bounds"]


def _oob_error(op: Operation, relation: isl.Map, ivs: Sequence[Value],
               params: dict[str, Value], context: isl.Set, name,
               only_certain: bool = False) -> Optional[VerifyError]:
    """The error for the first dimension in which ``relation`` (iterations -> elements) leaves
    the memref's static shape, or ``None``; ``params`` gives the value of each ISL parameter,
    ``name`` the SSA name of a value."""
    mtype = op.memref.type
    if not isinstance(mtype, MemRefType):
        return None
    space = relation.get_space()
    nparam = space.dim(isl.dim_type.param)
    pnames = [space.get_dim_name(isl.dim_type.param, k) for k in range(nparam)]
    niter = relation.dim(isl.dim_type.in_)
    rank = relation.dim(isl.dim_type.out)
    rel = relation.intersect_params(context)
    for d, size in enumerate(mtype.shape[:rank]):
        if size is None:
            continue
        ctx = rel.get_ctx()
        outside = isl.Map.universe(rel.get_space())
        low = outside.upper_bound_val(isl.dim_type.out, d, isl.Val.int_from_si(ctx, -1))
        high = outside.lower_bound_val(isl.dim_type.out, d, isl.Val.int_from_si(ctx, size))
        bad = rel.intersect(low.union(high))
        if bad.is_empty():
            continue
        if only_certain and not rel.domain().params().is_subset(bad.params()):
            continue  # in bounds for some symbol values with which the access runs
        coords = smallest_point(bad.wrap().flatten(), nparam)
        pvals = dict(zip(pnames, coords[:nparam]))
        it = coords[nparam:nparam + niter]
        index = coords[nparam + niter + d]
        msg = (f"'{op.name}' op out-of-bounds access to {mtype} ({name(op.memref)}) in dimension "
               f"{d}: index {index}")
        if ivs:
            msg += " at iteration (" + ", ".join(f"{name(v)} = {x}" for v, x in zip(ivs, it)) + ")"
        involved = [k for k in range(nparam) if bad.involves_dims(isl.dim_type.param, k, 1)]
        if involved:
            values = ", ".join(f"{name(params[pnames[k]])} = {pvals[pnames[k]]}"
                               for k in involved)
            always = context.is_subset(bad.params())
            msg += f" (for example with {values})" if always else \
                f" for some values of the symbols ({values})"
        return VerifyError(msg, op.loc)
    return None


Root = Union[Operation, Iterable[Operation], PolyhedralModel]


def find_out_of_bounds(root: Root, only_certain: bool = False,
                       memrefs: Optional[Sequence[Value]] = None) -> list[VerifyError]:
    """One :class:`VerifyError` per access under ``root`` (an op such as a ``func.func`` or a
    module, a list of ops, or a :class:`PolyhedralModel`) that may access its memref out of
    bounds, in program order; with ``memrefs``, only the accesses to those values.  With
    ``only_certain``, an access whose range depends on symbols is reported only when it goes
    out of bounds for every symbol value with which it executes at all."""
    errors: list[VerifyError] = []
    wanted = None if memrefs is None else {id(v) for v in memrefs}
    if isinstance(root, PolyhedralModel):
        by_name = {n: v for v, n in root.param_names.items()}
        for s in root.statements:
            for a in s.accesses:
                if wanted is not None and id(a.op.memref) not in wanted:
                    continue
                e = _oob_error(a.op, a.relation, s.ivs, by_name, root.context(),
                               root.describe_value, only_certain)
                if e is not None:
                    errors.append(e)
        return errors
    roots = [root] if isinstance(root, Operation) else list(root)
    namers: dict[int, object] = {}   # one per function: SSA names restart in each
    for op in (x for r in roots for x in r.walk()):
        if not isinstance(op, ACCESS_OPS) or not isinstance(op.memref.type, MemRefType):
            continue
        if wanted is not None and id(op.memref) not in wanted:
            continue
        func = next((a for a in op.ancestors() if a.name == "func.func"), None)
        if id(func) not in namers:
            namers[id(func)] = value_namer(op)
        try:
            acc = access_relation(op)
        except ScheduleError:
            continue  # not analyzable (e.g. semi-affine): nothing can be proven either way
        ctx = isl.Set.universe(acc.relation.get_space().params())
        by_name = {n: v for v, n in acc.param_names.items()}
        e = _oob_error(op, acc.relation, acc.ivs, by_name, ctx, namers[id(func)].value_name,
                       only_certain)
        if e is not None:
            errors.append(e)
    return errors


def check_bounds(root: Root, only_certain: bool = False,
                 memrefs: Optional[Sequence[Value]] = None) -> None:
    """Raise a :class:`VerifyError` at the first affine access (in program order) under
    ``root`` (see :func:`find_out_of_bounds`) that may touch its static-shaped memref out of
    bounds (see the module docstring for the message); return normally when every access is
    provably in bounds."""
    errors = find_out_of_bounds(root, only_certain, memrefs)
    if errors:
        raise errors[0]
