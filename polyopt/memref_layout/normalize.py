"""Memref normalization: layout maps become plain row-major buffers (MLIR's
``-normalize-memrefs``: ``normalizeMemRefs`` and ``normalizeMemRefType`` in
``mlir/lib/Dialect/Affine/Utils/Utils.cpp``, the pass in ``NormalizeMemRefs.cpp``).

A memref whose type carries a tiled, permuted or strided layout is replaced by an identity-layout
memref of its *physical* shape, and the layout is composed into every access::

    %buf = memref.alloc() : memref<64x256xf64, affine_map<(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>>
    %v = affine.load %buf[%i, %k] : memref<64x256xf64, affine_map<...>>
  becomes
    %buf = memref.alloc() : memref<16x256x4xf64>
    %v = affine.load %buf[%i floordiv 4, %k, %i mod 4] : memref<16x256x4xf64>

``memref<30x20xf64, (d0, d1) -> (d1, d0)>`` becomes ``memref<20x30xf64>`` (subscripts swapped),
``memref<30x40xf64, strided<[80, 1], offset: 5>>`` the 1-D ``memref<2365xf64>`` (subscript
``%i * 80 + %j + 5``), as ``mlir-opt-22 --normalize-memrefs`` does.  The buffer bytes do not move:
the flat offset of every element is unchanged, so a normalized function argument takes the same
physical buffer from numpy as before.
"""

from __future__ import annotations

from typing import Callable, Hashable, Optional

from polyopt.affine.affine_expr import (AffineBinaryExpr, AffineConstantExpr, AffineDimExpr,
                                        AffineExpr, AffineExprKind, AffineMap, constant)
from polyopt.affine.attributes import TypeAttr
from polyopt.affine.builder import Builder
from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.dialects.affine import AffineApplyOp, AffineForOp, _AffineMemOp
from polyopt.affine.dialects.func import CallOp, FuncOp, ReturnOp
from polyopt.affine.dialects.memref import (AllocaOp, AllocOp, DeallocOp, MemRefCastOp,
                                            MemRefLoadOp, MemRefStoreOp)
from polyopt.affine.dialects.vector import VectorLoadOp, VectorStoreOp
from polyopt.affine.ir import BlockArgument, Operation, OpResult, Value
from polyopt.affine.types import FunctionType, IndexType, MemRefType, UnrankedMemRefType

from .layout import expr_bounds, is_identity_layout, layout_map, physical_shape

__all__ = ["normalize_memref_type", "normalize_memrefs"]


def _a_view(t) -> bool:
    """A strided layout with a '?' offset or stride: a view (a batch slice the pipeline cut)
    that codegen reads through its descriptor; left as it is without a remark."""
    from polyopt.affine.types import StridedLayout
    layout = getattr(t, "layout", None)
    return isinstance(layout, StridedLayout) and (
        layout.offset is None or any(st is None for st in layout.strides))

# (loc, message) sink, as in polyopt.schedules.expand
RemarkSink = Optional[Callable[[object, str], None]]

# ops whose memref operand (at this position) is followed by its logical subscripts: those
# are rewritten through affine.apply when the layout is composed in
_INDEXED_OPS = {MemRefLoadOp: 0, MemRefStoreOp: 1, VectorLoadOp: 0, VectorStoreOp: 1}


def _try_normalize_type(t: MemRefType) -> tuple[Optional[MemRefType], Optional[str]]:
    """(normalized type, None) or (None, why not)."""
    if is_identity_layout(t):
        return MemRefType(tuple(t.shape), t.element_type, None, t.memory_space), None
    try:
        layout_map(t)
        shape = physical_shape(t)
    except PolyoptError as exc:
        return None, exc.message
    return MemRefType(shape, t.element_type, None, t.memory_space), None


def normalize_memref_type(memref_type: MemRefType) -> MemRefType:
    """MLIR's ``normalizeMemRefType``: the identity-layout memref of the physical shape.

    ``memref<64x256xf64, (d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>`` -> ``memref<16x256x4xf64>``;
    ``memref<30x20xf64, (d0, d1) -> (d1, d0)>`` -> ``memref<20x30xf64>``;
    ``memref<3x4xf64, strided<[8, 1], offset: 5>>`` -> ``memref<25xf64>``.  Like MLIR, a type
    that cannot be normalized (dynamic dimensions, strides or offset, layout symbols, results
    that can be negative) is returned unchanged; an identity layout is dropped.
    """
    new, _ = _try_normalize_type(memref_type)
    return memref_type if new is None else new


# ---------------------------------------------------------------------------------------------
# analysis: which memrefs must change together, and can they?

class _Groups:
    """Union-find over memref "slots" that must keep one type: SSA values, and function
    inputs/results (``("arg", name, i)``/``("res", name, j)``), linked through calls, returns
    and casts.  A group with a reason cannot be normalized."""

    def __init__(self):
        self.parent: dict[Hashable, Hashable] = {}
        self.reason: dict[Hashable, tuple[object, str, MemRefType]] = {}

    def find(self, x: Hashable) -> Hashable:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while x != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: Hashable, b: Hashable) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.reason and ra not in self.reason:
                self.reason[ra] = self.reason[rb]

    def reject(self, x: Hashable, t: MemRefType, loc, why: str) -> None:
        """``x`` (of type ``t``) and its group cannot be normalized: ``why`` (at ``loc``)."""
        self.reason.setdefault(self.find(x), (loc, why, t))

    def why_not(self, x: Hashable) -> Optional[tuple[object, str, MemRefType]]:
        return self.reason.get(self.find(x))


def _is_candidate(t) -> bool:
    return isinstance(t, MemRefType) and not is_identity_layout(t)


# the reason of groups tied to a function signature when ``arguments=False`` (not reported)
_SIGNATURE_KEPT = "function signatures are kept (arguments=False)"


class _Analysis:
    def __init__(self, module: Operation, arguments: bool):
        self.module = module
        self.arguments = arguments
        self.funcs: dict[str, FuncOp] = {f.sym_name: f for f in module.body.ops
                                         if isinstance(f, FuncOp)}
        self.groups = _Groups()
        self.types: dict[Hashable, MemRefType] = {}  # slot -> its current (old) type
        self.casts_to_fold: list[MemRefCastOp] = []

    def slot(self, key: Hashable, t: MemRefType, loc) -> Hashable:
        self.types[key] = t
        self.groups.find(key)
        _, why = _try_normalize_type(t)
        if why is not None:
            self.groups.reject(key, t, loc, why)
        return key

    def run(self) -> None:
        for f in self.funcs.values():
            ft = f.function_type
            for what, types in (("arg", ft.inputs), ("res", ft.results)):
                for i, t in enumerate(types):
                    if _is_candidate(t):
                        self.slot((what, f.sym_name, i), t, f.loc)
                        if not self.arguments:
                            self.groups.reject((what, f.sym_name, i), t, f.loc, _SIGNATURE_KEPT)
        for op in self.module.walk():
            if op is self.module:
                continue
            for r in op.results:
                if _is_candidate(r.type):
                    self.slot(r, r.type, op.loc)
                    self.definer(op, r)
            for region in op.regions:
                for block in region.blocks:
                    for a in block.args:
                        if _is_candidate(a.type):
                            self.slot(a, a.type, op.loc)
                            if isinstance(op, FuncOp) and block is op.body:
                                self.groups.union(("arg", op.sym_name, a.index), a)
                            else:
                                self.groups.reject(a, a.type, op.loc,
                                                   f"it is a block argument of '{op.name}'")
            for i, v in enumerate(op.operands):
                if _is_candidate(v.type):
                    self.use(op, i, v)

    def definer(self, op: Operation, r: OpResult) -> None:
        if isinstance(op, (AllocOp, AllocaOp)):
            return  # symbol operands come with layout symbols, which the type check rejects
        if isinstance(op, CallOp):
            self.link_callee(op, ("res", op.callee, r.index), r)
            return
        if isinstance(op, MemRefCastOp):
            if not _is_candidate(op.source.type):
                self.cast(op)  # otherwise when its source is seen as an operand
            return
        self.groups.reject(r, r.type, op.loc, f"it is defined by '{op.name}'")

    def link_callee(self, op: Operation, key: Hashable, v: Value) -> None:
        if op.callee not in self.funcs:
            self.groups.reject(v, v.type, op.loc, f"'{op.name}' calls @{op.callee}, which is "
                               "not in the module")
            return
        self.groups.union(key, v)

    def use(self, op: Operation, i: int, v: Value) -> None:
        g = self.groups
        if isinstance(op, _AffineMemOp) and i == op.MEMREF_INDEX:
            return
        if _INDEXED_OPS.get(type(op)) == i:
            return
        if isinstance(op, DeallocOp):
            return
        if isinstance(op, ReturnOp):
            f = op.parent_op
            g.union(("res", f.sym_name, i), v)
            return
        if isinstance(op, CallOp):
            self.link_callee(op, ("arg", op.callee, i), v)
            return
        if isinstance(op, MemRefCastOp):
            self.cast(op)
            return
        g.reject(v, v.type, op.loc, f"it is used by '{op.name}', which polyopt cannot rewrite")

    def cast(self, op: MemRefCastOp) -> None:
        src, res = op.source, op.results[0]
        rt = res.type
        if isinstance(rt, UnrankedMemRefType):
            return  # memref<*xf64> takes any ranked memref: the cast stays valid
        slots = [v for v in (src, res) if _is_candidate(v.type)]
        for v in slots[1:]:
            self.groups.union(slots[0], v)
        ns = _try_normalize_type(src.type)[0] if isinstance(src.type, MemRefType) else None
        nr = _try_normalize_type(rt)[0] if isinstance(rt, MemRefType) else None
        if ns is not None and ns == nr:
            self.casts_to_fold.append(op)  # both sides normalize to one type: it folds away
            return
        self.groups.reject(slots[0], slots[0].type, op.loc, f"'{op.name}' from '{src.type}' to "
                           f"'{rt}' cannot be kept once normalized")


# ---------------------------------------------------------------------------------------------
# rewriting

def _value_range(v: Value, memo: dict) -> Optional[tuple[int, int]]:
    """Inclusive bounds of an ``index`` value: constants, and induction variables of
    ``affine.for`` loops whose bounds are bounded (recursively); ``None`` when unknown."""
    if v in memo:
        return memo[v]
    memo[v] = None  # cycles (none in valid IR) stay unknown
    result = None
    op = v.defining_op
    if op is not None and op.name == "arith.constant" and isinstance(v.type, IndexType):
        value = getattr(op.attributes.get("value"), "value", None)
        result = (value, value) if isinstance(value, int) else None
    elif isinstance(v, BlockArgument) and isinstance(v.block.parent_op, AffineForOp) and \
            v is v.block.parent_op.induction_var:
        loop = v.block.parent_op
        lo = _map_bounds(loop.lower_map, loop.lower_operands, memo)
        hi = _map_bounds(loop.upper_map, loop.upper_operands, memo)
        if lo is not None and hi is not None:
            # iv >= every lower bound result and < every upper bound result
            result = (max(b[0] for b in lo), min(b[1] for b in hi) - 1)
    memo[v] = result
    return result


def _map_bounds(amap: AffineMap, operands, memo: dict) -> Optional[list[tuple[int, int]]]:
    ranges = [_value_range(v, memo) for v in operands]
    if not amap.results or any(r is None for r in ranges):
        return None
    dims, syms = ranges[:amap.num_dims], ranges[amap.num_dims:]
    try:
        return [expr_bounds(e, dims, syms) for e in amap.results]
    except ValueError:
        return None


_DIVISIONS = (AffineExprKind.FLOORDIV, AffineExprKind.CEILDIV, AffineExprKind.MOD)


def _simplify_in_ranges(e: AffineExpr, dims: list, syms: list) -> AffineExpr:
    """Fold ``floordiv``/``ceildiv``/``mod`` whose dividend stays within one multiple of the
    divisor over the operand ranges: with ``%ii`` in [0, 4), ``(%i * 4 + %ii) floordiv 4`` is
    ``%i`` and ``(%i * 4 + %ii) mod 4`` is ``%ii``."""
    if not isinstance(e, AffineBinaryExpr):
        return e
    lhs = _simplify_in_ranges(e.lhs, dims, syms)
    rhs = _simplify_in_ranges(e.rhs, dims, syms)
    e = AffineBinaryExpr(e.kind, lhs, rhs)
    if not isinstance(e, AffineBinaryExpr) or e.kind not in _DIVISIONS or \
            not isinstance(e.rhs, AffineConstantExpr) or e.rhs.value <= 0:
        return e
    if any(dims[d] is None for d in e.lhs.used_dims()) or \
            any(syms[s] is None for s in e.lhs.used_symbols()):
        return e
    c = e.rhs.value
    lo, hi = expr_bounds(e.lhs, [r or (0, 0) for r in dims], [r or (0, 0) for r in syms])
    if lo // c != hi // c:
        return e
    q = lo // c
    if e.kind is AffineExprKind.FLOORDIV:
        return constant(q)
    if e.kind is AffineExprKind.MOD:
        return e.lhs - q * c
    return constant(-((-lo) // c)) if -((-lo) // c) == -((-hi) // c) else e  # ceildiv


def _simplify_access(amap: AffineMap, operands, memo: dict) -> AffineMap:
    ranges = [_value_range(v, memo) for v in operands]
    if all(r is None for r in ranges):
        return amap
    dims, syms = ranges[:amap.num_dims], ranges[amap.num_dims:]
    return AffineMap(amap.num_dims, amap.num_symbols,
                     [_simplify_in_ranges(r, dims, syms) for r in amap.results])


def _rewrite_indexed(op: Operation, layout: AffineMap) -> None:
    """``memref.load %m[%i, %j]`` -> ``memref.load %m[<layout results over %i, %j>]``."""
    memref_pos = _INDEXED_OPS[type(op)]
    indices = list(op.operands[memref_pos + 1:])
    b = Builder.before(op)
    new_indices = []
    for expr in layout.results:
        if isinstance(expr, AffineDimExpr):
            new_indices.append(indices[expr.position])
            continue
        amap = AffineMap(len(indices), 0, [expr])
        new_indices.append(b.create(AffineApplyOp, amap, indices, loc=op.loc).result)
    op.set_operands(list(op.operands[:memref_pos + 1]) + new_indices)


def _rewrite_uses(v: Value, layout: AffineMap, memo: dict) -> None:
    for use in list(v.uses):
        op = use.op
        if isinstance(op, _AffineMemOp) and use.index == op.MEMREF_INDEX:
            amap = _simplify_access(layout.compose(op.map), op.map_operands, memo)
            op.set_map(amap, op.map_operands)
        elif _INDEXED_OPS.get(type(op)) == use.index:
            _rewrite_indexed(op, layout)


def normalize_buffer(buf: Value) -> None:
    """Normalize one local buffer now (what :func:`normalize_memrefs` does to it later): the
    result of a ``memref.alloc`` used only by affine accesses and its ``memref.dealloc``.
    For passes that want its accesses in physical terms before they run (the register tile's
    transposed accumulator buffers: vectorizing along their physical last dimension)."""
    op = buf.defining_op if isinstance(buf, OpResult) else None
    if not isinstance(op, (AllocOp, AllocaOp)) or buf.type.layout is None or any(
            not (isinstance(u.op, _AffineMemOp) and u.index == u.op.MEMREF_INDEX)
            and not isinstance(u.op, DeallocOp) for u in buf.uses):
        raise ValueError("normalize_buffer: not an allocation used only by affine accesses")
    _rewrite_uses(buf, layout_map(buf.type), {})
    buf.type = normalize_memref_type(buf.type)


def normalize_memrefs(module: Operation, *, arguments: bool = True,
                      remark: RemarkSink = None) -> int:
    """Normalize every memref of ``module`` with a non-identity layout (MLIR's
    ``normalizeMemRefs``, the ``-normalize-memrefs`` pass); returns how many memrefs
    (allocations and function arguments) were rewritten.

    Covers ``memref.alloc``/``alloca``/``dealloc``, function arguments and results (the
    function type and every call site change together, across functions), ``memref.cast``
    (folded away when both sides normalize to the same type; casts to ``memref<*x..>`` stay),
    ``affine.load``/``store``/``vector_load``/``vector_store`` (the layout is composed into the
    access map) and ``memref.load``/``store``/``vector.load``/``store`` (subscripts go through
    ``affine.apply``).  Preconditions: ``module`` is a verified ``builtin.module``.

    ``arguments=False`` keeps every function signature as it is (and the memrefs tied to one
    through calls, returns and casts), normalizing only memrefs local to function bodies (the
    packing buffers): what a pipeline wants when numpy callers hold the layout-typed arguments
    (a layout-mapped argument accepts any large-enough buffer, its normalized identity memref
    only the exact physical shape; see :mod:`polyopt.codegen.jit`).

    Memrefs that cannot be normalized are left unchanged, together with everything that must
    keep the same type (callers, callees, casts), and reported through
    ``remark(loc, message)``: dynamic shapes, strides or offsets, layout maps with symbols,
    block arguments other than function arguments, and users polyopt cannot rewrite (e.g. a
    ``hop.matmul`` not yet expanded, ``linalg.fill``, unknown ops).  Everything is analysed
    before the first mutation.

    Before / after::

        func.func @f(%A: memref<30x20xf64, affine_map<(d0, d1) -> (d1, d0)>>) {
          %v = affine.load %A[%i, %j] : memref<30x20xf64, affine_map<(d0, d1) -> (d1, d0)>>
        func.func @f(%A: memref<20x30xf64>) {
          %v = affine.load %A[%j, %i] : memref<20x30xf64>
    """
    if module.name != "builtin.module":
        raise ValueError(f"normalize_memrefs expects a builtin.module, got '{module.name}'")
    an = _Analysis(module, arguments)
    an.run()
    g = an.groups

    # report each group that stays unchanged once, where its first problem is
    reported = set()
    for key in an.types:
        why = g.why_not(key)
        root = g.find(key)
        if why is None or root in reported:
            continue
        reported.add(root)
        if remark is not None and why[1] is not _SIGNATURE_KEPT and not _a_view(why[2]):
            loc, reason, t = why
            others = sum(1 for k in an.types if g.find(k) == root) - 1
            also = f" (nor {others} memref value(s) tied to it by calls, returns or casts)" \
                if others else ""
            remark(loc, f"memref of type '{t}' is not normalized: {reason}{also}")

    # rewrite: accesses first (they need the old layouts), then the types
    todo = [(key, t) for key, t in an.types.items() if g.why_not(key) is None]
    memo: dict = {}
    for key, t in todo:
        if isinstance(key, Value):
            _rewrite_uses(key, layout_map(t), memo)
    count = 0
    new_sigs: dict[str, tuple[list, list]] = {}
    for key, t in todo:
        nt = normalize_memref_type(t)
        if isinstance(key, Value):
            key.type = nt
            if isinstance(key, OpResult) and isinstance(key.op, (AllocOp, AllocaOp)):
                count += 1
        else:
            what, name, i = key
            ft = an.funcs[name].function_type
            ins, outs = new_sigs.setdefault(name, (list(ft.inputs), list(ft.results)))
            (ins if what == "arg" else outs)[i] = nt
            if what == "arg":
                count += 1
    for name, (ins, outs) in new_sigs.items():
        an.funcs[name].attributes["function_type"] = TypeAttr(FunctionType(tuple(ins),
                                                                           tuple(outs)))
    for cast in an.casts_to_fold:
        src, res = cast.source, cast.results[0]
        if src.type == res.type:
            res.replace_all_uses_with(src)
            cast.erase()
    return count
