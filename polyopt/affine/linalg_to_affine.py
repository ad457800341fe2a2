"""Structured linalg ops to affine loop nests: MLIR's ``-convert-linalg-to-affine-loops``.

Every structured op (:class:`~polyopt.affine.dialects.linalg.LinalgStructuredOp`: generic,
map, reduce, transpose, copy, fill, the matmuls, matvec/vecmat/dot, the convolutions) on
memrefs becomes one perfect nest of ``affine.for`` loops, one per loop of the op in order
(``d0`` outermost), from 0 to the size of the first operand dimension its indexing maps
index with that loop alone (a ``memref.dim`` for a ``?`` size).  The body loads every input
and output element the payload reads (``affine.load``; scalar inputs are used as they are),
runs the payload (the op's region, with ``linalg.index`` replaced by the loop's induction
variable, or the named op's own body) and stores what it yields (``affine.store``)::

    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                     affine_map<(d0, d1) -> (d0)>],
                    iterator_types = ["parallel", "reduction"]}
        ins(%A : memref<7x5xf64>) outs(%y : memref<5xf64>) {
    ^bb0(%in: f64, %out: f64):
      %0 = arith.addf %in, %out : f64
      linalg.yield %0 : f64
    }
  becomes
    affine.for %i = 0 to 5 {
      affine.for %j = 0 to 7 {
        %0 = affine.load %A[%j, %i] : memref<7x5xf64>
        %1 = affine.load %y[%i] : memref<5xf64>
        %2 = arith.addf %0, %1 : f64
        affine.store %2, %y[%i] : memref<5xf64>
      }
    }

A map result that is not a lone loop index is an ``affine.apply`` of that expression
(``affine.apply affine_map<(d0, d1) -> (d0 * 2 + d1)>(%oh, %kh)``), a constant one an
``arith.constant``; as in MLIR, the loads and the apply ops for the stores come first, then
the payload, then the stores.  The pass (:func:`convert_linalg_to_affine_loops`) then does
what MLIR's greedy driver does around its patterns (:mod:`polyopt.affine.greedy_cleanup`):
constants move to the top of the function and merge, ``memref.dim`` of static sizes folds,
unused loads and other dead ops go; so ``polyopt opt --convert-linalg-to-affine-loops``
prints what ``mlir-opt-22 --convert-linalg-to-affine-loops`` prints.
"""

from __future__ import annotations

from typing import Sequence

from .affine_expr import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap, dim, symbol
from .builder import Builder
from .dialects.affine import AffineApplyOp, AffineForOp, AffineLoadOp, AffineStoreOp
from .dialects.arith import ConstantOp
from .dialects.linalg import LinalgIndexOp, LinalgStructuredOp, loop_sources
from .dialects.memref import DimOp
from .diagnostics import CodegenError
from .ir import Operation, Value
from .types import MemRefType, index

__all__ = ["lower_to_affine_loops", "convert_linalg_to_affine_loops"]


def convert_linalg_to_affine_loops(root: Operation, cleanup: bool = True,
                                   check_sizes: bool = False) -> int:
    """The pass (MLIR's ``-convert-linalg-to-affine-loops``): every structured linalg op under
    ``root`` becomes its affine loop nest (:func:`lower_to_affine_loops`); with ``cleanup``
    (the default), the greedy driver's constant hoisting, ``memref.dim`` folding and dead-op
    removal run over ``root`` too, as in mlir-opt.  With ``check_sizes`` (what the pipeline
    asks before running the code, not what the pass prints), a nest over ``?`` sizes runs only
    when the operands' sizes agree at run time (:mod:`polyopt.affine.runtime_checks`).
    Returns how many ops were lowered."""
    from .greedy_cleanup import cleanup_greedily
    count = 0

    def rewrite(r: Operation) -> bool:
        nonlocal count
        todo = [op for op in r.walk() if isinstance(op, LinalgStructuredOp)]
        # innermost first: a structured op nested in another's payload is lowered before it
        for op in reversed(todo):
            lower_to_affine_loops(op, check_sizes)
        count += len(todo)
        return bool(todo)

    if cleanup:
        cleanup_greedily(root, rewrite)
    else:
        rewrite(root)
    return count


def lower_to_affine_loops(op: LinalgStructuredOp, check_sizes: bool = False
                          ) -> list[AffineForOp]:
    """Replace the structured op ``op`` by its affine loop nest; returns the loops, outermost
    first (none for an op without loops, e.g. a ``linalg.fill`` of a 0-d memref).

    Precondition: ``op`` verifies (its indexing maps are invertible).  The ``memref.dim``
    ops of ``?`` sizes are created before the nest, in operand order; loads nobody reads are
    not left behind.  Raises :class:`CodegenError` for an op on tensors or whose payload
    cannot be built."""
    if not isinstance(op, LinalgStructuredOp):
        raise TypeError(f"lower_to_affine_loops expects a structured linalg op, got "
                        f"'{getattr(op, 'name', op)}'")
    loc = op.loc
    maps = op.indexing_maps
    sources = loop_sources(maps)
    if sources is None or any(not isinstance(v.type, MemRefType) for v in op.outputs):
        raise CodegenError(f"'{op.name}' op cannot be lowered to loops (non-invertible "
                           f"indexing maps or non-memref outputs)", loc)
    b = Builder.before(op)
    bounds = _loop_bounds(b, op, sources, loc)
    if check_sizes:
        b = _guard_operand_sizes(b, op, sources, bounds, loc)
    loops: list[AffineForOp] = []
    inner = b
    for ub in bounds:
        if isinstance(ub, int):
            loop = inner.create(AffineForOp.build_constant, 0, ub, loc=loc)
        else:
            loop = inner.create(AffineForOp.build, AffineMap.constant_map(0), [],
                                AffineMap.get(0, 1, (symbol(0),)), [ub], loc=loc)
        loops.append(loop)
        inner = Builder.before_terminator(loop.body)
    ivs = [loop.induction_var for loop in loops]
    created: list[Operation] = []

    def indices(amap: AffineMap) -> list[Value]:
        return [_index_value(inner, e, amap.num_dims, ivs, loc, created) for e in amap.results]

    args: list[Value] = []
    for v, amap in zip(op.operands, maps):
        if not isinstance(v.type, MemRefType):
            args.append(v)                      # a scalar input is used as it is
            continue
        load = inner.create(AffineLoadOp, v, indices(amap), loc=loc)
        created.append(load)
        args.append(load.result)
    n_in = op.num_inputs
    store_indices = [indices(amap) for amap in maps[n_in:]]
    yielded = _emit_payload(inner, op, args, ivs, loc)
    for value, out, idx in zip(yielded, op.outputs, store_indices):
        inner.create(AffineStoreOp, value, out, idx, loc=loc)
    op.erase()
    for dead in reversed(created):
        if dead.parent is not None and not any(r.has_uses() for r in dead.results):
            dead.erase()
    return loops


def _loop_bounds(b: Builder, op: LinalgStructuredOp, sources, loc) -> list:
    """Each loop's upper bound: the static size, or a ``memref.dim`` of the operand dimension
    that gives it (created in operand order, as MLIR creates them)."""
    bounds: list = [None] * len(sources)
    for d, (k, j) in sorted(enumerate(sources), key=lambda e: e[1]):
        v = op.operands[k]
        size = v.type.shape[j]
        if size is not None:
            bounds[d] = size
            continue
        c = b.create(ConstantOp, j, index, loc=loc).result
        bounds[d] = b.create(DimOp, v, c, loc=loc).result
    return bounds


def _guard_operand_sizes(b: Builder, op: LinalgStructuredOp, sources, bounds, loc) -> Builder:
    """The nest under a run-time check that every operand dimension fits the loops: a
    dimension indexed by a loop alone has that loop's size; one indexed by an expression with
    non-negative coefficients (a convolution window) holds its largest value.  Checks that
    involve only static sizes were done by the verifier and are dropped."""
    from .runtime_checks import SizeExprs, guard_sizes
    equal, at_least = [], []
    sizes = SizeExprs()
    source_of = set(sources)
    for k, (v, amap) in enumerate(zip(op.operands, op.indexing_maps)):
        if not isinstance(v.type, MemRefType):
            continue
        for j, e in enumerate(amap.results):
            if (k, j) in source_of:
                continue
            size = v.type.shape[j]
            if isinstance(e, AffineDimExpr):
                if size is None or not isinstance(bounds[e.position], int):
                    if size is None:
                        c = b.create(ConstantOp, j, index, loc=loc).result
                        size = b.create(DimOp, v, c, loc=loc).result
                    equal.append((size, bounds[e.position]))
                continue
            dims_in = {x.position for x in e.walk() if isinstance(x, AffineDimExpr)}
            if size is not None and all(isinstance(bounds[d], int) for d in dims_in):
                continue
            if not _nondecreasing(e):
                continue
            if size is None:
                c = b.create(ConstantOp, j, index, loc=loc).result
                size = b.create(DimOp, v, c, loc=loc).result
            last = e.replace_dims([sizes(bounds[d]) - 1 if d in dims_in else 0
                                   for d in range(amap.num_dims)])
            at_least.append((size, last + 1))
    if not equal and not at_least:
        return b
    return guard_sizes(b, equal, f"'{op.name}' operands have sizes that do not agree at run "
                       "time", loc, at_least=at_least, sizes=sizes)


def _nondecreasing(e: AffineExpr) -> bool:
    """A sum of dims times non-negative constants plus a constant (so its largest value over
    a box is at the box's upper corner)."""
    from .affine_expr import AffineBinaryExpr, AffineExprKind
    if isinstance(e, (AffineDimExpr, AffineConstantExpr)):
        return True
    if isinstance(e, AffineBinaryExpr) and e.kind is AffineExprKind.ADD:
        return _nondecreasing(e.lhs) and _nondecreasing(e.rhs)
    if isinstance(e, AffineBinaryExpr) and e.kind is AffineExprKind.MUL:
        consts = [x for x in (e.lhs, e.rhs) if isinstance(x, AffineConstantExpr)]
        others = [x for x in (e.lhs, e.rhs) if not isinstance(x, AffineConstantExpr)]
        return len(consts) >= 1 and all(c.value >= 0 for c in consts) and \
            all(_nondecreasing(x) for x in others)
    return False


def _index_value(b: Builder, e: AffineExpr, num_dims: int, ivs: Sequence[Value], loc,
                 created: list) -> Value:
    """One subscript: the loop's IV for ``dK``, an ``arith.constant`` for a constant, else
    an ``affine.apply`` of ``e`` over the IVs it uses (MLIR's makeCanonicalAffineApplies)."""
    if isinstance(e, AffineDimExpr):
        return ivs[e.position]
    if isinstance(e, AffineConstantExpr):
        c = b.create(ConstantOp, e.value, index, loc=loc)
        created.append(c)
        return c.result
    used = sorted(e.used_dims())
    renumber: list[AffineExpr] = [dim(0)] * num_dims
    for new, old in enumerate(used):
        renumber[old] = dim(new)
    amap = AffineMap.get(len(used), 0, (e.replace_dims(renumber),))
    apply = b.create(AffineApplyOp, amap, [ivs[u] for u in used], loc=loc)
    created.append(apply)
    return apply.result


def _emit_payload(b: Builder, op: LinalgStructuredOp, args: list[Value], ivs: list[Value],
                  loc) -> list[Value]:
    """The payload over ``args`` at ``b``: the region's ops cloned (``linalg.index`` ->
    the IV) or the named op's body; returns the yielded values."""
    block = op.payload_block
    if block is None:
        if op.HAS_REGION:
            raise CodegenError(f"'{op.name}' op has no payload region", loc)
        try:
            return list(op.build_payload(b, args, loc))
        except ValueError as e:
            raise CodegenError(f"'{op.name}' op: {e}", loc) from None
    mapping: dict[Value, Value] = dict(zip(block.args, args))
    for inner in block.ops[:-1]:
        if isinstance(inner, LinalgIndexOp):
            mapping[inner.result] = ivs[inner.dim]
            continue
        b.insert(inner.clone(mapping))
    terminator = block.ops[-1]
    return [mapping.get(v, v) for v in terminator.operands]
