"""Outer-loop vectorization of an ``affine.for`` (the paper's ``-affine-vectorize`` /
``-hopt-vect``, section 2.8), with upstream ops only.

``vectorize_loop(loop, W)`` runs ``W`` consecutive iterations of a parallel loop in lock-step:
the loop's step becomes ``W * step`` and every value of the body that differs between those
iterations becomes a ``vector<W x T>``::

    affine.for %j = 0 to 100 {             affine.for %j = 0 to 96 step 8 {
      affine.for %k = 0 to 64 {              affine.for %k = 0 to 64 {
        %a = affine.load %A[%i, %k]            %a = affine.load %A[%i, %k]
        %b = affine.load %B[%k, %j]     ->     %av = vector.broadcast %a : f64 to vector<8xf64>
        %c = affine.load %C[%i, %j]            %b = affine.vector_load %B[%k, %j]
        %p = arith.mulf %a, %b                 %c = affine.vector_load %C[%i, %j]
        %s = arith.addf %c, %p                 %p = arith.mulf %av, %b : vector<8xf64>
        affine.store %s, %C[%i, %j]            %s = arith.addf %c, %p : vector<8xf64>
    }}                                         affine.vector_store %s, %C[%i, %j]
                                           }}
                                           affine.for %j = 96 to 100 { <the original body> }

* An access whose subscripts do not depend on the induction variable stays a scalar
  ``affine.load``; where a vector is needed its value is ``vector.broadcast`` (an
  ``arith.constant dense<...>`` for constants), placed once after the definition, or before
  the vector loop for values defined outside it.
* An access whose *last* subscript is ``iv + (something invariant)`` (coefficient 1, loop step
  1) and whose other subscripts do not depend on ``iv`` becomes ``affine.vector_load`` /
  ``affine.vector_store`` of ``W`` consecutive elements on the original memref (upstream MLIR has
  no ``memref_shape_cast``: this is how the paper's vector memrefs are spelled today).  Any
  other dependence on ``iv`` (another dimension, a stride, ``floordiv``) is refused with a
  :class:`ScheduleError` that names the op and the memref.
* ``arith`` ops (and ``math.fma``) on values that differ between iterations become the same op
  on vectors; ``mulf`` + ``addf`` may become ``vector.fma`` (``fma=True``; by default they stay
  separate and LLVM contracts them, as it does for scalar code -- same instructions, see the
  note at :func:`vectorize_loop`).
* Loops nested in the body run in lock-step too (their bounds must not depend on ``iv``);
  their ``iter_args`` that differ between iterations become vector ``iter_args`` -- the
  scalar-replaced register tile of the paper (C accumulators carried around the ``k`` loop)
  becomes vector accumulators.  ``affine.if`` conditions must not depend on ``iv`` either.
* Trip counts that ``W`` does not divide: the vector loop covers the full groups of ``W``
  iterations and the original loop, with new bounds, runs the rest (the scalar epilogue).
  Constant bounds fold; ``min`` upper bounds and ``max`` lower bounds get one guarded epilogue
  per combination of the bound that is active (``affine.if``), because the epilogue's start is
  not expressible as a ``max`` of affine functions otherwise.

Legality: running iterations in lock-step reorders the instances of different iterations, which
is correct when the loop carries no dependence.  ``check`` decides: the ``--hopt-vect`` pass
passes :func:`polyopt.schedules.vector_legality.check_parallel` (ISL).  Without one, a
conservative syntactic test (:func:`check_independent_iterations`) proves that no element is
touched by two iterations when one of them writes it.  Every check runs before the IR changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from .affine_expr import (AffineConstantExpr, AffineDimExpr, AffineExpr,
                          AffineExprKind, AffineMap, AffineSymbolExpr, IntegerSet, constant, dim,
                          symbol)
from .affine_rules import is_constant_like, is_pure
from .builder import Builder
from .diagnostics import ScheduleError
from .dialects.affine import (AffineApplyOp, AffineForOp, AffineIfOp, AffineLoadOp,
                              AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp,
                              AffineYieldOp)
from .dialects.arith import ConstantOp
from .dialects.vector import BroadcastOp, VectorFMAOp
from .ir import BlockArgument, Operation, Value
from .printer import Printer, value_namer
from .types import FloatType, IndexType, IntegerType, MemRefType, StridedLayout, Type, VectorType

__all__ = ["vectorize_loop", "check_independent_iterations", "vector_element_bits",
           "is_contiguous_in_last_dim", "VectorizeCheck"]

#: ``check(loop)`` raises :class:`ScheduleError` (or returns ``False``) when the iterations of
#: ``loop`` may not run in lock-step.
VectorizeCheck = Callable[[AffineForOp], object]

_NONLINEAR = "nonlinear"   # an index value that depends on the iv in a non-affine way
_K = AffineExprKind
_ACCESS = (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp)


# ---------------------------------------------------------------------------------------------
# small helpers


def _iv_coefficient(e: AffineExpr, operand_coeffs: Sequence[object], num_dims: int,
                    aligned: Optional[Callable[[AffineExpr], bool]] = None,
                    width: int = 1) -> object:
    """The coefficient of the induction variable in ``e`` when the map's operands have the
    given coefficients (``0``: invariant, ``_NONLINEAR``); ``_NONLINEAR`` unless ``e`` is
    ``c * iv + (invariant)``.

    With ``aligned`` (the vector loop's groups of ``width`` iterations start where
    ``aligned(x)`` says ``x`` is a multiple of ``width``): ``x floordiv k`` and ``x mod k``
    with ``x = iv + ...`` and ``width`` dividing ``k`` are constant resp. ``+1`` per lane
    within a group (so tiled layouts and normalized packed buffers vectorize)."""
    if isinstance(e, AffineConstantExpr):
        return 0
    if isinstance(e, AffineDimExpr):
        return operand_coeffs[e.position]
    if isinstance(e, AffineSymbolExpr):
        return operand_coeffs[num_dims + e.position]
    a = _iv_coefficient(e.lhs, operand_coeffs, num_dims, aligned, width)
    b = _iv_coefficient(e.rhs, operand_coeffs, num_dims, aligned, width)
    if a == 0 and b == 0:
        return 0
    if a is _NONLINEAR or b is _NONLINEAR:
        return _NONLINEAR
    if e.kind is _K.ADD:
        return a + b
    if e.kind is _K.MUL:
        if isinstance(e.rhs, AffineConstantExpr):
            return a * e.rhs.value
        if isinstance(e.lhs, AffineConstantExpr):
            return b * e.lhs.value
    if e.kind in (_K.FLOORDIV, _K.MOD) and aligned is not None and a == 1 and \
            isinstance(e.rhs, AffineConstantExpr) and e.rhs.value > 0 and \
            e.rhs.value % width == 0 and aligned(e.lhs):
        return 0 if e.kind is _K.FLOORDIV else 1
    return _NONLINEAR   # iv * symbol, iv floordiv c, iv mod c, ...


def _physical_subscripts(t: MemRefType, amap: AffineMap) -> Optional[tuple[AffineExpr, ...]]:
    """The indices into the physical (row-major) buffer of ``t`` that an access with map
    ``amap`` touches, over ``amap``'s inputs, up to a constant (a dynamic offset counts as 0);
    ``None`` for layouts that are not affine in the indices (dynamic strides, layout maps with
    symbols)."""
    layout = t.layout
    if layout is None:
        return amap.results
    if isinstance(layout, StridedLayout):
        if any(x is None for x in layout.strides):
            return None
        # a dynamic offset ('?', a batch slice) moves every element alike: 0 stands for it
        flat: AffineExpr = constant(layout.offset or 0)
        for stride, sub in zip(layout.strides, amap.results):
            flat = flat + sub * stride
        return (flat,)
    if isinstance(layout, AffineMap) and layout.num_symbols == 0 and \
            layout.num_dims == amap.num_results:
        return layout.compose(amap).results
    return None


def is_contiguous_in_last_dim(t: MemRefType) -> bool:
    """Are consecutive indices of the last dimension of ``t`` always consecutive in memory?
    (Identity layout; ``strided`` with last stride 1; a layout map whose results other than
    the last do not use the last index and whose last result is ``d_last + ...``.)  Tiled
    layouts (``d1 floordiv 16, ..., d1 mod 16``) are contiguous only within aligned groups:
    :func:`vectorize_loop` accepts those when it can prove the alignment."""
    if t.rank == 0:
        return False
    physical = _physical_subscripts(t, AffineMap.identity(t.rank))
    if physical is None:
        return False
    coeffs = [0] * t.rank
    coeffs[-1] = 1
    lanes = [_iv_coefficient(e, coeffs, t.rank) for e in physical]
    return all(c == 0 for c in lanes[:-1]) and lanes[-1] == 1


def _vectorizable_element(t: Type) -> bool:
    return isinstance(t, (FloatType, IntegerType)) and not (isinstance(t, IntegerType)
                                                             and t.width == 1)


# ---------------------------------------------------------------------------------------------
# linear forms (for the syntactic independence test)


def _linear_form(e: AffineExpr, leaves: Sequence[object], num_dims: int) -> dict:
    """``e`` over ``leaves`` (one per map input: a key, or a linear form of its own) as
    ``{term: coefficient}``; constant under key ``1``; non-linear sub-expressions are opaque
    terms keyed by their structure over the leaf keys."""
    if isinstance(e, AffineConstantExpr):
        return {1: e.value} if e.value else {}
    if isinstance(e, (AffineDimExpr, AffineSymbolExpr)):
        pos = e.position if isinstance(e, AffineDimExpr) else num_dims + e.position
        leaf = leaves[pos]
        return dict(leaf) if isinstance(leaf, dict) else {leaf: 1}
    a = _linear_form(e.lhs, leaves, num_dims)
    b = _linear_form(e.rhs, leaves, num_dims)
    if e.kind is _K.ADD:
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + v
        return {k: v for k, v in out.items() if v}
    if e.kind is _K.MUL:
        for x, y in ((a, b), (b, a)):
            if set(y) <= {1}:
                k = y.get(1, 0)
                return {t: c * k for t, c in x.items() if c * k}
    key = (e.kind, tuple(sorted(a.items(), key=repr)), tuple(sorted(b.items(), key=repr)))
    return {key: 1}


def _sub(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return {k: v for k, v in out.items() if v}


# ---------------------------------------------------------------------------------------------
# the analysis of the loop body


class _Body:
    """What every value of ``loop``'s body is across ``W`` consecutive iterations: uniform
    (absent from ``vary``), a vector (``True``), or, for ``index`` values, ``c * iv + ...``
    (``vary[v] == c``) or non-affine in the iv (``_NONLINEAR``)."""

    def __init__(self, loop: AffineForOp, width: Optional[int] = None):
        self.loop = loop
        self.width = width
        self.iv = loop.induction_var
        self.ops = [op for op in loop.walk() if op is not loop]
        self.inside = {id(op) for op in self.ops}
        self.inside.add(id(loop))
        self.vary: dict[Value, object] = {self.iv: 1}
        self._solve()

    def defined_inside(self, v: Value) -> bool:
        owner = v.block.parent_op if isinstance(v, BlockArgument) else v.defining_op
        return owner is not None and id(owner) in self.inside

    def state(self, v: Value) -> object:
        return self.vary.get(v, 0)

    def varies(self, v: Value) -> bool:
        return self.state(v) != 0

    def _join(self, v: Value, states: Sequence[object]) -> object:
        if all(st == 0 for st in states):
            return 0
        if not isinstance(v.type, IndexType):
            return True
        return states[0] if all(st == states[0] for st in states) else _NONLINEAR

    def subscript_coeffs(self, op: Operation, exprs: Optional[Sequence[AffineExpr]] = None
                         ) -> list[object]:
        """How each subscript of an access op (or each of ``exprs`` over its map's inputs)
        changes from one lane to the next: ``c`` for ``c * iv + ...``, else ``_NONLINEAR``
        (``floordiv``/``mod`` of ``iv + ...`` by a multiple of the width count as constant /
        ``+1`` when the groups of lanes are aligned, see :func:`_iv_coefficient`)."""
        amap = op.map
        coeffs = [self.state(v) for v in op.map_operands]
        aligned = None
        if self.width is not None and self.loop.step == 1 and all(
                r.largest_known_divisor() % self.width == 0 for r in self.loop.lower_map.results):
            iv_positions = [k for k, v in enumerate(op.map_operands) if v is self.iv]
            others = [k for k, c in enumerate(coeffs) if c != 0 and k not in iv_positions]
            if not others:
                zero = [dim(k) for k in range(amap.num_dims)] + \
                       [symbol(k) for k in range(amap.num_symbols)]
                for k in iv_positions:
                    zero[k] = constant(0)

                def aligned(x: AffineExpr) -> bool:
                    rest = x.replace(zero[:amap.num_dims], zero[amap.num_dims:])
                    return rest.largest_known_divisor() % self.width == 0
        return [_iv_coefficient(e, coeffs, amap.num_dims, aligned, self.width or 1)
                for e in (amap.results if exprs is None else exprs)]

    def _set(self, v: Value, s: object) -> bool:
        old = self.state(v)
        if s == 0 or s == old:
            return False
        if old != 0 and isinstance(v.type, IndexType):
            s = _NONLINEAR   # the coefficient is not the same everywhere
        if s == old:
            return False
        self.vary[v] = s
        return True

    def _solve(self) -> None:
        changed = True
        while changed:
            changed = False
            for op in self.ops:
                for v, s in self._transfer(op):
                    changed |= self._set(v, s)

    def _transfer(self, op: Operation):
        if isinstance(op, AffineForOp):
            yields = op.yield_op.operands
            for k, (init, arg, res) in enumerate(zip(op.inits, op.region_iter_args, op.results)):
                s = self._join(arg, [self.state(init), self.state(yields[k])])
                yield arg, s
                yield res, s
            return
        if isinstance(op, AffineIfOp):
            blocks = [op.then_block] + ([op.else_block] if op.has_else else [])
            for k, res in enumerate(op.results):
                yield res, self._join(res, [self.state(b.ops[-1].operands[k]) for b in blocks])
            return
        if isinstance(op, AffineApplyOp):
            coeffs = [self.state(v) for v in op.operands]
            yield op.results[0], _iv_coefficient(op.map.results[0], coeffs, op.map.num_dims)
            return
        if isinstance(op, AffineLoadOp):
            if any(c != 0 for c in self.subscript_coeffs(op)):
                yield op.results[0], True
            return
        if any(self.varies(v) for v in op.operands):
            for r in op.results:
                yield r, (_NONLINEAR if isinstance(r.type, IndexType) else True)


class _Plan:
    """The checked transformation: what becomes a vector, what needs a broadcast."""

    def __init__(self, loop: AffineForOp, width: int, fma: bool):
        self.loop = loop
        self.width = width
        self.body = _Body(loop, width)
        # uniform values some consumer needs as a vector / as a scalar (ordered: deterministic IR)
        self.needs_vector: dict[Value, None] = {}
        self.needs_scalar: dict[Value, None] = {}
        self.vector_access: dict[int, bool] = {}
        self.fused: dict[int, tuple[Operation, Value]] = {}   # addf -> (mulf, addend)
        self.skipped: set[int] = set()                          # mulf folded into an fma
        self._names: Optional[Printer] = None
        self._check(fma)

    # -- messages ------------------------------------------------------------------------------
    def name(self, v: Value) -> str:
        if self._names is None:
            self._names = value_namer(self.loop)
        return self._names.value_name(v)

    def refuse(self, op: Operation, why: str) -> ScheduleError:
        iv = self.name(self.loop.induction_var)
        return ScheduleError(f"cannot vectorize the loop over {iv}: '{op.name}' op {why}", op.loc)

    # -- checks --------------------------------------------------------------------------------
    def _use(self, v: Value, as_vector: bool) -> None:
        if self.body.varies(v):
            return
        (self.needs_vector if as_vector else self.needs_scalar)[v] = None

    def _check(self, fma: bool) -> None:
        loop, body = self.loop, self.body
        if loop.inits:
            raise self.refuse(loop, "carries values from one iteration to the next (iter_args): "
                                    "a reduction along the vectorized loop is not supported")
        for op in body.ops:
            self._check_op(op)
        if fma:
            self._find_fma()

    def _check_op(self, op: Operation) -> None:
        body = self.body
        if isinstance(op, AffineYieldOp):
            parent = op.parent_op
            if parent is self.loop:
                return
            for v, r in zip(op.operands, parent.results):
                self._use(v, body.varies(r))
            return
        if isinstance(op, AffineForOp):
            for v in op.lower_operands + op.upper_operands:
                if body.varies(v):
                    raise self.refuse(op, f"has bounds that depend on "
                                          f"{self.name(self.loop.induction_var)}: the iterations "
                                          f"cannot run in lock-step")
                self._use(v, False)
            for init, arg in zip(op.inits, op.region_iter_args):
                if body.varies(arg) and not _vectorizable_element(arg.type):
                    raise self.refuse(op, f"carries a value of type '{arg.type}' that differs "
                                          f"between iterations (only integers and floats can "
                                          f"become vectors)")
                self._use(init, body.varies(arg))
            return
        if isinstance(op, AffineIfOp):
            for v in op.cond_operands:
                if body.varies(v):
                    raise self.refuse(op, f"has a condition that depends on "
                                          f"{self.name(self.loop.induction_var)} (masking is "
                                          f"not supported)")
                self._use(v, False)
            for r in op.results:
                if body.varies(r) and not _vectorizable_element(r.type):
                    raise self.refuse(op, f"yields a value of type '{r.type}' that differs "
                                          f"between iterations")
            return
        if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)):
            raise self.refuse(op, "is already a vector access (vectorize before, not after)")
        if isinstance(op, (AffineLoadOp, AffineStoreOp)):
            self._check_access(op)
            return
        if op.regions:
            raise self.refuse(op, "holds regions: only affine.for and affine.if can be "
                                  "vectorized through")
        if not (is_pure(op) or op.name.startswith(("arith.", "math."))):
            raise self.refuse(op, "has side effects that cannot be run once for several "
                                  "iterations")
        varying = [v for v in op.operands if body.varies(v)]
        if not varying:
            for v in op.operands:
                self._use(v, False)
            return
        if op.name == "affine.apply":
            return   # an index expression of the iv: checked where it is used
        for v in op.operands:
            if body.varies(v) and isinstance(v.type, IndexType):
                what = "the induction variable" if v is body.iv else "an index computed from it"
                raise self.refuse(op, f"uses {what} as a value (only affine subscripts may "
                                      f"depend on it)")
        if not (op.name.startswith("arith.") or op.name == "math.fma") or op.name in (
                "arith.constant", "arith.index_cast", "arith.index_castui"):
            raise self.refuse(op, "cannot be applied to vectors")
        for r in op.results:
            if not _vectorizable_element(r.type) and not (
                    isinstance(r.type, IntegerType) and op.name in ("arith.cmpf", "arith.cmpi")):
                raise self.refuse(op, f"produces a '{r.type}' that cannot become a vector")
        for k, v in enumerate(op.operands):
            scalar_cond = op.name == "arith.select" and k == 0 and not body.varies(v)
            self._use(v, not scalar_cond)

    def _check_access(self, op: Operation) -> None:
        body = self.body
        mem = op.memref
        is_store = isinstance(op, AffineStoreOp)
        if body.defined_inside(mem):
            raise self.refuse(op, "accesses a memref defined inside the loop")
        operands = op.map_operands
        per_result = body.subscript_coeffs(op)
        if all(c == 0 for c in per_result):
            self.vector_access[id(op)] = False
            for v in operands:
                self._use(v, False)
            if is_store:
                if body.varies(op.value):
                    raise self.refuse(op, f"stores a value that differs between iterations to "
                                          f"{self.name(mem)} at a place that does not")
                self._use(op.value, False)
            return
        iv = self.name(self.loop.induction_var)
        what = f"{'stores to' if is_store else 'loads from'} {self.name(mem)}"
        mt = op.memref_type
        if not is_store and isinstance(mt.layout, AffineMap) and \
                _vectorizable_element(mt.element_type):
            # a layout map decides what is contiguous: a packed column of A is logically
            # A[i, k] but physically [i floordiv M_R, k, i mod M_R], i last (the column
            # form's vector loads); normalize-memrefs makes the vector load's subscripts the
            # physical ones before lowering.  Loads only: scalar replacement reads a vector
            # store's footprint from its logical subscripts
            physical = _physical_subscripts(mt, op.map)
            lanes = None if physical is None else body.subscript_coeffs(op, physical)
            if lanes is not None and all(c == 0 for c in lanes[:-1]) and \
                    lanes[-1] is not _NONLINEAR and lanes[-1] * self.loop.step == 1:
                self.vector_access[id(op)] = True
                return
        if any(c is _NONLINEAR for c in per_result):
            raise self.refuse(op, f"{what} with a subscript that is not affine in {iv} (or a "
                                  f"floordiv/mod that is not aligned to the vector width)")
        if any(c != 0 for c in per_result[:-1]):
            raise self.refuse(op, f"{what} along a dimension other than the last ({iv} may only "
                                  f"appear in the last subscript)")
        stride = per_result[-1] * self.loop.step
        if stride != 1:
            raise self.refuse(op, f"{what} with stride {stride} along {iv} (only contiguous, "
                                  f"stride-1 accesses become vector loads/stores)")
        mt = op.memref_type
        if not _vectorizable_element(mt.element_type):
            raise self.refuse(op, f"{what}, whose elements ('{mt.element_type}') cannot form "
                                  f"vectors")
        physical = _physical_subscripts(mt, op.map)
        lanes = None if physical is None else body.subscript_coeffs(op, physical)
        if lanes is None or any(c != 0 for c in lanes[:-1]) or lanes[-1] != 1:
            raise self.refuse(op, f"{what}, whose layout does not keep consecutive iterations "
                                  f"consecutive in memory")
        self.vector_access[id(op)] = True
        if is_store:
            self._use(op.value, True)

    def _find_fma(self) -> None:
        body = self.body
        for op in body.ops:
            if op.name != "arith.addf" or not body.varies(op.results[0]) or \
                    "fastmath" in op.attributes:
                continue
            for k in (0, 1):
                m = op.operands[k].defining_op
                if m is None or m.name != "arith.mulf" or "fastmath" in m.attributes or \
                        m.parent is not op.parent or len(m.results[0].uses) != 1 or \
                        id(m) in self.skipped or not body.varies(m.results[0]):
                    continue
                self.fused[id(op)] = (m, op.operands[1 - k])
                self.skipped.add(id(m))
                break


# ---------------------------------------------------------------------------------------------
# the syntactic independence test (the default ``check``)


def check_independent_iterations(loop: AffineForOp) -> None:
    """Raise :class:`ScheduleError` unless no memory element is touched by two different
    iterations of ``loop`` when one of the accesses writes it -- proven syntactically, without
    ISL: for every pair of accesses to one memref (one a store), either some subscript is
    ``c * iv + e`` in both with the same ``c != 0`` and the same loop-invariant ``e`` (so equal
    elements mean equal ``iv``), or some subscript differs by a non-zero constant and does
    not depend on the loop.  Memrefs allocated inside the loop are private to an iteration.
    Conservative: :func:`polyopt.schedules.vector_legality.check_parallel` answers exactly
    (ISL)."""
    body = _Body(loop)
    by_memref: dict[Value, list[Operation]] = {}
    for op in body.ops:
        if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)):
            raise ScheduleError(f"'{op.name}' op: the syntactic independence test does not "
                                f"analyze vector accesses", op.loc)
        if isinstance(op, (AffineLoadOp, AffineStoreOp)) and \
                not body.defined_inside(op.memref):
            by_memref.setdefault(op.memref, []).append(op)

    iv_key = ("iv",)
    leaf_ids: dict[Value, tuple] = {body.iv: iv_key}

    def leaf(v: Value) -> object:
        """A key for ``v``: ``("outer", n)`` for values defined outside the loop (invariant),
        ``("inner", n)`` for values of the body; ``affine.apply``s of the body expand."""
        d = v.defining_op
        if isinstance(d, AffineApplyOp) and body.defined_inside(v):
            return _linear_form(d.map.results[0], [leaf(o) for o in d.operands], d.map.num_dims)
        if v not in leaf_ids:
            leaf_ids[v] = ("inner" if body.defined_inside(v) else "outer", len(leaf_ids))
        return leaf_ids[v]

    def subscripts(op: Operation) -> list[dict]:
        leaves = [leaf(v) for v in op.map_operands]
        return [_linear_form(e, leaves, op.map.num_dims) for e in op.map.results]

    def invariant(form: dict) -> bool:
        return not any(k == iv_key or k[:1] == ("inner",) for key in form
                       for k in _leaf_keys(key))

    def independent(a: Operation, b: Operation) -> bool:
        for fa, fb in zip(subscripts(a), subscripts(b)):
            ca, cb = fa.get(iv_key, 0), fb.get(iv_key, 0)
            ra = {k: v for k, v in fa.items() if k != iv_key}
            rb = {k: v for k, v in fb.items() if k != iv_key}
            if ca == cb != 0 and invariant(ra) and invariant(rb) and not _sub(ra, rb):
                return True      # same element => same iv
            if ca == cb == 0 and invariant(fa) and invariant(fb):
                diff = _sub(fa, fb)
                if diff and set(diff) == {1}:
                    return True  # never the same element
        return False

    for mem, ops in by_memref.items():
        stores = [op for op in ops if isinstance(op, AffineStoreOp)]
        for s in stores:
            for other in ops:
                if independent(s, other):
                    continue
                names = value_namer(loop)
                kind = "writes" if isinstance(other, AffineStoreOp) else "reads"
                raise ScheduleError(
                    f"cannot vectorize the loop over {names.value_name(loop.induction_var)}: "
                    f"its iterations may not be independent: 'affine.store' writes "
                    f"{names.value_name(mem)} and '{other.name}' {kind} it at a place that may "
                    f"be the same in different iterations (not provable without ISL: pass "
                    f"check=polyopt.schedules.vector_legality.check_parallel)", other.loc)


def _leaf_keys(key: object):
    """The leaf keys (``("iv",)``, ``("outer", n)``, ``("inner", n)``) inside a term key."""
    if isinstance(key, tuple) and key and isinstance(key[0], str):
        yield key
    elif isinstance(key, tuple):
        for part in key:
            yield from _leaf_keys(part)


# ---------------------------------------------------------------------------------------------
# bounds of the vector loop and of the epilogue


def _fold_constant(amap: AffineMap, pick) -> Optional[int]:
    if amap.results and all(isinstance(r, AffineConstantExpr) for r in amap.results):
        return pick(r.value for r in amap.results)
    return None


def _compact(amap: AffineMap, operands: Sequence[Value]) -> tuple[AffineMap, list[Value]]:
    """Drop unused inputs and merge repeated operands (MLIR's canonicalizeMapAndOperands)."""
    nd = amap.num_dims
    used_d, used_s = amap.used_dims(), amap.used_symbols()
    new_dims: list[Value] = []
    new_syms: list[Value] = []
    dim_repl: list[AffineExpr] = []
    sym_repl: list[AffineExpr] = []
    for k in range(nd):
        v = operands[k]
        if k not in used_d:
            dim_repl.append(constant(0))
            continue
        if not any(x is v for x in new_dims):
            new_dims.append(v)
        dim_repl.append(dim(next(i for i, x in enumerate(new_dims) if x is v)))
    for k in range(amap.num_symbols):
        v = operands[nd + k]
        if k not in used_s:
            sym_repl.append(constant(0))
            continue
        if not any(x is v for x in new_syms):
            new_syms.append(v)
        sym_repl.append(symbol(next(i for i, x in enumerate(new_syms) if x is v)))
    new = amap.replace_dims_and_symbols(dim_repl, sym_repl, len(new_dims), len(new_syms))
    return new, new_dims + new_syms


@dataclass
class _Epilogue:
    """One scalar remainder loop ``lower to upper`` (maps over ``operands``), run when
    ``guard`` (over the same operands) holds; ``guard is None``: always."""

    lower: AffineMap
    upper: AffineMap
    operands: list[Value]
    guard: Optional[IntegerSet]


@dataclass
class _Bounds:
    main_lower: tuple[AffineMap, list[Value]]
    main_upper: tuple[AffineMap, list[Value]]
    epilogues: list[_Epilogue]


def _plan_bounds(loop: AffineForOp, width: int) -> Optional[_Bounds]:
    """Bounds of the vector loop (full groups of ``width`` iterations) and of the scalar
    remainder; ``None`` when not even one full group runs (constant trip count < width)."""
    s = loop.step
    ws = width * s
    lmap, umap = loop.lower_map, loop.upper_map
    lops, uops = list(loop.lower_operands), list(loop.upper_operands)
    lc, uc = _fold_constant(lmap, max), _fold_constant(umap, min)
    if lc is not None and uc is not None:
        trips = max(0, -(-(uc - lc) // s))
        groups = trips // width
        if groups == 0:
            return None
        split = lc + groups * ws
        rest = [] if trips % width == 0 else [
            _Epilogue(AffineMap.constant_map(split), AffineMap.constant_map(uc), [], None)]
        return _Bounds((AffineMap.constant_map(lc), []), (AffineMap.constant_map(split), []), rest)

    main_upper = AffineMap.get(umap.num_dims, umap.num_symbols,
                               [e - (width - 1) * s for e in umap.results])
    # lower and upper bounds in one space, where an operand of both is one input (a dim if it
    # is a dim of either map), so that `upper - lower` simplifies
    dims_: list[Value] = []
    syms_: list[Value] = []
    for amap, ops in ((lmap, lops), (umap, uops)):
        for k, v in enumerate(ops):
            if k < amap.num_dims and not any(x is v for x in dims_):
                dims_.append(v)
    for amap, ops in ((lmap, lops), (umap, uops)):
        for v in ops[amap.num_dims:]:
            if not any(x is v for x in dims_ + syms_):
                syms_.append(v)
    nd, ns = len(dims_), len(syms_)

    def position(v: Value) -> AffineExpr:
        for k, x in enumerate(dims_):
            if x is v:
                return dim(k)
        return symbol(next(k for k, x in enumerate(syms_) if x is v))

    def unify(amap: AffineMap, ops: Sequence[Value]) -> tuple[AffineExpr, ...]:
        repl = [position(v) for v in ops]
        return amap.replace_dims_and_symbols(repl[:amap.num_dims], repl[amap.num_dims:],
                                             nd, ns).results

    lows, ups = unify(lmap, lops), unify(umap, uops)
    operands = dims_ + syms_
    epilogues = []
    for q, low in enumerate(lows):
        for k, up in enumerate(ups):
            # the case where `low` is the (first) largest lower bound, `up` the (first) smallest
            cons: list[AffineExpr] = []
            for r, other in enumerate(lows):
                if r != q:
                    cons.append(low - other - (1 if r < q else 0))
            for m, other in enumerate(ups):
                if m != k:
                    cons.append(other - up - (1 if m < k else 0))
            if any(isinstance(c, AffineConstantExpr) and c.value < 0 for c in cons):
                continue   # this combination never happens
            cons = [c for c in cons if not isinstance(c, AffineConstantExpr)]
            span = up - low
            trips = span if s == 1 else span.ceildiv(s)
            start = low + trips.floordiv(width) * ws
            if isinstance(span, AffineConstantExpr):
                t = max(0, -(-span.value // s))
                if t % width == 0:
                    continue   # no remainder in this case
                lower = [start]
            else:
                lower = [low, start]   # start < low when the loop does not run at all
            guard = IntegerSet.get(nd, ns, cons, [False] * len(cons)) if cons else None
            epilogues.append(_Epilogue(AffineMap.get(nd, ns, lower), AffineMap.get(nd, ns, [up]),
                                       operands, guard))
    return _Bounds((lmap, lops), (main_upper, uops), epilogues)


# ---------------------------------------------------------------------------------------------
# building the vector loop


class _Emitter:
    def __init__(self, plan: _Plan, main: AffineForOp):
        self.plan = plan
        self.body = plan.body
        self.width = plan.width
        self.main = main
        self.map: dict[Value, Value] = {plan.body.iv: main.induction_var}
        self.vectors: dict[Value, Value] = {}    # uniform old value -> its broadcast
        self.outside = Builder.before(main)

    def vtype(self, t: Type) -> VectorType:
        return VectorType((self.width,), t)

    def m(self, v: Value) -> Value:
        return self.map.get(v, v)

    def vec(self, v: Value) -> Value:
        if self.body.varies(v):
            return self.map[v]
        return self.vectors[v]

    def broadcast(self, old: Value, b: Builder) -> None:
        """The vector of ``old`` (uniform), created at ``b``."""
        new = self.m(old)
        d = new.defining_op
        vt = self.vtype(new.type)
        if d is not None and is_constant_like(d) and isinstance(new.type, (FloatType,
                                                                           IntegerType)):
            made = b.create(ConstantOp, d.attributes["value"].value, vt, loc=d.loc)
        else:
            made = b.create(BroadcastOp, new, vt, loc=d.loc if d is not None else None)
        self.vectors[old] = made.results[0]

    def run(self) -> None:
        for v in self.plan.needs_vector:
            if not self.body.defined_inside(v):
                self.broadcast(v, self.outside)
        self.emit_block(self.plan.loop.body, Builder.before_terminator(self.main.body))

    def after_def(self, values: Sequence[Value], b: Builder) -> None:
        for v in values:
            if v in self.plan.needs_vector:
                self.broadcast(v, b)

    def emit_block(self, block, b: Builder) -> None:
        self.after_def(block.args[1:] if isinstance(block.parent_op, AffineForOp) else
                       block.args, b)
        for op in block.ops:
            if isinstance(op, AffineYieldOp):
                continue
            self.emit(op, b)

    def yield_values(self, yield_op: Operation, results: Sequence[Value]) -> list[Value]:
        return [self.vec(v) if self.body.varies(r) else self.m(v)
                for v, r in zip(yield_op.operands, results)]

    def emit(self, op: Operation, b: Builder) -> None:
        body, plan = self.body, self.plan
        if isinstance(op, AffineForOp):
            inits = [self.vec(i) if body.varies(a) else self.m(i)
                     for i, a in zip(op.inits, op.region_iter_args)]
            new = b.create(AffineForOp.build, op.lower_map, [self.m(v) for v in op.lower_operands],
                           op.upper_map, [self.m(v) for v in op.upper_operands], op.step, inits,
                           loc=op.loc)
            for k, v in op.attributes.items():
                new.attributes.setdefault(k, v)
            for old, nv in zip(op.body.args, new.body.args):
                self.map[old] = nv
            self.emit_block(op.body, Builder.before_terminator(new.body))
            if op.inits:
                new.body.append(AffineYieldOp.build(self.yield_values(op.yield_op, op.results),
                                                    loc=op.yield_op.loc))
            for old, nv in zip(op.results, new.results):
                self.map[old] = nv
            self.after_def(op.results, b)
            return
        if isinstance(op, AffineIfOp):
            types = [self.vtype(r.type) if body.varies(r) else r.type for r in op.results]
            new = b.create(AffineIfOp.build, op.condition, [self.m(v) for v in op.cond_operands],
                           types, op.has_else, loc=op.loc)
            for old_block, new_block in zip([op.then_block] + ([op.else_block] if op.has_else
                                                               else []),
                                            [new.then_block] + ([new.else_block] if op.has_else
                                                                else [])):
                self.emit_block(old_block, Builder.before_terminator(new_block))
                if op.results:
                    new_block.append(AffineYieldOp.build(
                        self.yield_values(old_block.ops[-1], op.results), loc=op.loc))
            for old, nv in zip(op.results, new.results):
                self.map[old] = nv
            self.after_def(op.results, b)
            return
        if isinstance(op, (AffineLoadOp, AffineStoreOp)) and plan.vector_access.get(id(op)):
            operands = [self.m(v) for v in op.map_operands]
            if isinstance(op, AffineLoadOp):
                new = b.create(AffineVectorLoadOp.build, self.vtype(op.results[0].type),
                               self.m(op.memref), operands, op.map, loc=op.loc)
                self.map[op.results[0]] = new.results[0]
            else:
                b.create(AffineVectorStoreOp.build, self.vec(op.value), self.m(op.memref),
                         operands, op.map, loc=op.loc)
            return
        if id(op) in plan.skipped:
            return
        if id(op) in plan.fused:
            mul, addend = plan.fused[id(op)]
            new = b.create(VectorFMAOp.build, self.vec(mul.operands[0]),
                           self.vec(mul.operands[1]), self.vec(addend), loc=op.loc)
            self.map[op.results[0]] = new.results[0]
            return
        if any(body.varies(r) for r in op.results) and op.name != "affine.apply":
            operands = [self.m(v) if (op.name == "arith.select" and k == 0 and
                                      not body.varies(v)) else self.vec(v)
                        for k, v in enumerate(op.operands)]
            new = Operation.create(op.name, operands, [self.vtype(r.type) for r in op.results],
                                   dict(op.attributes), loc=op.loc)
            b.insert(new)
            for old, nv in zip(op.results, new.results):
                self.map[old] = nv
            return
        # uniform (or an index expression of the iv: lane 0's value)
        if is_constant_like(op) and not any(r in plan.needs_scalar for r in op.results) and \
                all(r in plan.needs_vector for r in op.results):
            d = op.clone()
            for old, nv in zip(op.results, d.results):
                self.map[old] = nv   # only read by broadcast(), never inserted
            self.after_def(op.results, b)
            return
        new = b.insert(op.clone(self.map))
        self.after_def(op.results, b)


# ---------------------------------------------------------------------------------------------
# the entry point


def vector_element_bits(loop: AffineForOp) -> int:
    """The widest element (in bits) that :func:`vectorize_loop` would load or store as a
    vector along ``loop`` (0 if none): choose the width as
    ``host_target().vector_width(vector_element_bits(loop))``."""
    body = _Body(loop)
    bits = 0
    for op in body.ops:
        if isinstance(op, (AffineLoadOp, AffineStoreOp)) and \
                any(body.varies(v) for v in op.map_operands):
            et = op.memref_type.element_type
            if isinstance(et, (FloatType, IntegerType)):
                bits = max(bits, et.width)
    return bits


def vectorize_loop(loop: AffineForOp, width: int, *, check: Optional[VectorizeCheck] = None,
                   fma: bool = False) -> AffineForOp:
    """Vectorize ``loop`` by ``width`` lanes along its induction variable (outer-loop
    vectorization: nested loops run in lock-step); returns the vector loop.

    Arguments:
        loop: an ``affine.for`` without ``iter_args`` whose iterations are independent; every
            access that depends on its induction variable ``iv`` must have ``iv`` (coefficient
            1, loop step 1) in its last subscript only, on a memref whose last dimension is
            contiguous; nested loop bounds and ``affine.if`` conditions must not depend on
            ``iv``.
        width: the number of lanes, from the target:
            ``host_target().vector_width(vector_element_bits(loop))`` (8 for f64 with
            AVX-512).  ``width == 1`` returns ``loop`` unchanged.
        check: ``check(loop)`` proves the iterations independent, raising
            :class:`ScheduleError` (or returning ``False``) otherwise;
            :func:`polyopt.schedules.vector_legality.check_parallel` does it with ISL.
            ``None``: the conservative syntactic :func:`check_independent_iterations`.
        fma: turn ``mulf`` + ``addf`` pairs (the product used once) into ``vector.fma``.
            Off by default: the lowering marks float ops ``contract``, so LLVM fuses them
            into the same ``vfmadd`` instructions (measured: identical inner loops and speed
            for the vectorized matmul), and the IR stays closer to the source.

    After the call, the vector loop (step ``width * step``) stands where ``loop`` was, followed
    by the scalar remainder: ``loop`` itself with new bounds (constant bounds, or one
    ``min``/``max`` bound combination), or copies of it under ``affine.if`` guards (several
    combinations of ``min`` upper / ``max`` lower bounds), or nothing when ``width`` divides
    the constant trip count.  When a constant trip count is smaller than ``width`` nothing
    changes and ``loop`` is returned.

    Raises :class:`ScheduleError` (naming the op and the memref) before changing anything.
    A min-bounded tile loop (``W = 8``)::

        affine.for %j = (d0 * 16)(%jt) to min (d0 * 16 + 16, 45)(%jt) { S(%j) }
      ->
        affine.for %j = (d0 * 16)(%jt) to min (d0 * 16 + 9, 38)(%jt) step 8 { vector S(%j) }
        affine.if (d0 * 16 - 30 >= 0)(%jt) {       // 45 is the smaller upper bound
          affine.for %j = max (d0 * 16, d0 * 16 + (d0 * -2 + 5) * 8)(%jt) to 45 { S(%j) }
        }
    """
    if not isinstance(loop, AffineForOp):
        raise TypeError(f"vectorize_loop expects an affine.for, got "
                        f"'{getattr(loop, 'name', loop)}'")
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"vectorize_loop: width must be a positive integer, got {width!r}")
    if width == 1:
        return loop
    plan = _Plan(loop, width, fma)
    if check is None:
        check_independent_iterations(loop)
    elif check(loop) is False:
        raise plan.refuse(loop, "has iterations that are not independent (the check refused "
                                "it)")
    bounds = _plan_bounds(loop, width)
    if bounds is None:
        return loop

    # -- from here on the IR changes ---------------------------------------------------------
    (lmap, lops), (umap, uops) = bounds.main_lower, bounds.main_upper
    main = AffineForOp.build(lmap, lops, umap, uops, loop.step * width, loc=loop.loc)
    for k, v in loop.attributes.items():
        main.attributes.setdefault(k, v)
    loop.parent.insert_before(loop, main)
    _Emitter(plan, main).run()

    anchor: Operation = main
    for n, ep in enumerate(bounds.epilogues):
        last = n == len(bounds.epilogues) - 1
        rest = loop if last else loop.clone()
        lower, lower_ops = _compact(ep.lower, ep.operands)
        upper, upper_ops = _compact(ep.upper, ep.operands)
        rest.set_lower_bound(lower, lower_ops)
        rest.set_upper_bound(upper, upper_ops)
        if ep.guard is None:
            if rest.parent is None:
                anchor.parent.insert_after(anchor, rest)
            else:
                rest.move_after(anchor)
            anchor = rest
            continue
        gmap, gops = _compact(AffineMap.get(ep.guard.num_dims, ep.guard.num_symbols,
                                            ep.guard.constraints), ep.operands)
        guard = IntegerSet.get(gmap.num_dims, gmap.num_symbols, gmap.results,
                               ep.guard.eq_flags)
        cond = AffineIfOp.build(guard, gops, loc=loop.loc)
        anchor.parent.insert_after(anchor, cond)
        if rest.parent is not None:
            rest.detach()
        cond.then_block.insert(0, rest)
        anchor = cond
    if not bounds.epilogues:
        loop.erase()
    return main
