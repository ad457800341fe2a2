"""The polyhedral model of an affine loop nest: statements, iteration domains, access relations
and the original schedule, as ISL objects (what MLIR keeps in ``FlatAffineValueConstraints`` and
``MemRefAccess``, and what PPCG/pet extract from C).

    func.func @f(%A: memref<16x16xf64>, %N: index) {
      affine.for %i = 0 to %N {             // S0[i0, i1] for 0 <= i0 < p0,
        affine.for %j = 0 to 16 step 2 {    //   0 <= i1 < 16, i1 even
          %a = affine.load %A[%i, %j + 1]   // reads  { S0[i0, i1] -> M0[i0, 1 + i1] }
          affine.store %a, %A[%i, %j]       // writes { S0[i0, i1] -> M0[i0, i1] }
    }}}                                     // schedule { S0[i0, i1] -> [0, i0, 0, i1, 0] }

A *statement* is a maximal straight-line group of ops in one block, between nested loops and
``affine.if``s, that touches memory; its instances are the points of its domain (one dimension per
enclosing loop of the scop, the values the induction variables take).  Index values defined
before the scop (function arguments, sizes, induction variables of loops around the scop) are the
parameters ``p0, p1, ...``; ``arith.constant``s fold to numbers and ``affine.apply``s fold into
the expressions that use them.  Memrefs are the tuples ``M0, M1, ...``.  Distinct memref values
are assumed not to alias (as MLIR's affine dependence analysis does).

Each dimension of an ``affine.parallel`` is a loop of the model, as if the op were the nest of
``affine.for``s it runs as (its :class:`~polyopt.affine.dialects.affine.AffineParallelDim`s
stand in ``Statement.loops``); a schedule applied to its statements generates ``affine.for``s.
An ``affine.parallel`` with reductions is refused, as an ``affine.for`` with ``iter_args`` is.

Pure ops whose results are used by another statement (an ``affine.apply`` or a constant computed
in an outer loop body) are *rematerialized*: they appear in front of the using statement's
``ops`` as well, so that instantiating a statement on its own (cloning its ops) is self-contained;
a group that only holds such pure ops is not a statement.  A non-pure value flowing between
statements through SSA (a load in an outer loop used in an inner one) is refused: that is a
scalar dependence the model does not track.

Anything non-affine in the scop is refused with a :class:`ScheduleError` that points at the op:
``memref.load``/``store``, calls, allocations, region ops other than ``affine.for``/``affine.if``,
``affine.for`` with ``iter_args``, ops with unknown memory effects, semi-affine subscripts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence, Union

import islpy as isl

from ..affine.affine_expr import (AffineConstantExpr, AffineDimExpr, AffineExpr, AffineExprKind,
                                  AffineMap, AffineSymbolExpr, IntegerSet, dim)
from ..affine.affine_rules import is_constant_like, is_pure
from ..affine.diagnostics import Location, ScheduleError
from ..affine.dialects.affine import (AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp,
                                      AffineVectorLoadOp, AffineVectorStoreOp)
from ..affine.dialects.affine import AffineParallelDim, AffineParallelOp
from ..affine.ir import BlockArgument, Operation, Value
from ..affine.printer import Printer, value_namer

__all__ = ["Access", "Statement", "PolyhedralModel", "OpAccess", "extract", "access_relation",
           "unsupported_op", "ACCESS_OPS"]

#: The memory accesses the model understands.
ACCESS_OPS = (AffineLoadOp, AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp)
#: What the model treats as a loop: an ``affine.for``, or one dimension of an ``affine.parallel``.
LoopLike = Union[AffineForOp, AffineParallelDim]
_LOOPS = (AffineForOp, AffineParallelDim)

_ALLOC_OPS = frozenset({"memref.alloc", "memref.alloca", "memref.dealloc", "memref.realloc",
                        "alloc", "alloca", "dealloc"})
_NON_AFFINE_ACCESS = frozenset({"memref.load", "memref.store", "vector.load", "vector.store",
                                "vector.transfer_read", "vector.transfer_write",
                                "vector.maskedload", "vector.maskedstore"})
_CALL_OPS = frozenset({"func.call", "func.call_indirect", "call", "llvm.call"})


# ---------------------------------------------------------------------------------------------
# the model


@dataclass(eq=False)
class Access:
    """One memory access of a statement: ``relation`` maps the statement's instances (its
    domain) to the elements of memref ``memref`` (``"M0"``) it touches."""

    op: Operation
    memref: str
    relation: isl.Map
    is_write: bool


@dataclass(eq=False)
class Statement:
    """A group of straight-line ops executed once per point of ``domain``.

    ``ops`` are the group's ops in order, preceded by the pure ops of other groups it uses
    (rematerialized, see the module docstring); ``loops``/``ivs`` are the enclosing loops of the
    scop, outermost first (the domain's dimensions ``i0, i1, ...``).  ``schedule`` is the
    original textual order as a 2d+1 schedule ``[c0, i0, c1, i1, ..., cd]`` padded with zeros to
    the deepest statement.  ``conditions`` are the enclosing ``affine.if``s inside the scop with
    the branch taken (True: then); ``position`` the ``c`` constants of the original schedule;
    ``group`` the statement's own ops (``ops`` without the rematerialized ones).
    A loop is an ``affine.for`` or a dimension of an ``affine.parallel`` (``AffineParallelDim``).
    """

    name: str
    ops: list[Operation]
    loops: list[LoopLike]
    ivs: list[Value]
    domain: isl.Set
    reads: isl.UnionMap
    writes: isl.UnionMap
    schedule: isl.Map
    loc: Optional[Location]
    accesses: list[Access] = field(default_factory=list)
    conditions: list[tuple[AffineIfOp, bool]] = field(default_factory=list)
    position: tuple[int, ...] = ()
    group: list[Operation] = field(default_factory=list)

    @property
    def depth(self) -> int:
        return len(self.loops)

    def __repr__(self) -> str:
        return f"<Statement {self.name} {self.domain}>"


@dataclass(eq=False)
class PolyhedralModel:
    """The statements of a scop with their domains, accesses and original schedule; see
    :func:`extract`.  ``params[k]`` is the value named ``param_names[value] == f"p{k}"`` in
    every ISL object; ``memrefs["M0"]`` the memref value of tuple ``M0``."""

    scop_ops: list[Operation]
    statements: list[Statement]
    params: list[Value]
    param_names: dict[Value, str]
    memrefs: dict[str, Value]
    memref_names: dict[Value, str]
    context_set: Optional[isl.Set] = None
    _printer: Optional[Printer] = field(default=None, repr=False)

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise KeyError(f"no statement {name!r} (have {', '.join(self.statement_names())})")

    def statement_names(self) -> list[str]:
        return [s.name for s in self.statements]

    def statement_of(self, op: Operation) -> Optional[Statement]:
        """The statement whose own group holds ``op`` (rematerialized copies do not count)."""
        for s in self.statements:
            if any(o is op for o in s.group):
                return s
        return None

    # -- ISL views --------------------------------------------------------------------------
    def param_space(self) -> str:
        """``"[p0, p1] -> "``: the prefix of ISL text over the model's parameters."""
        return f"[{', '.join(self.param_names[p] for p in self.params)}] -> "

    def domains(self) -> isl.UnionSet:
        out = isl.UnionSet(self.param_space() + "{ }")
        for s in self.statements:
            out = out.union(isl.UnionSet.from_set(s.domain))
        return out

    def reads(self) -> isl.UnionMap:
        out = isl.UnionMap(self.param_space() + "{ }")
        for s in self.statements:
            out = out.union(s.reads)
        return out

    def writes(self) -> isl.UnionMap:
        out = isl.UnionMap(self.param_space() + "{ }")
        for s in self.statements:
            out = out.union(s.writes)
        return out

    def schedule(self) -> isl.UnionMap:
        out = isl.UnionMap(self.param_space() + "{ }")
        for s in self.statements:
            out = out.union(isl.UnionMap.from_map(s.schedule))
        return out

    def context(self) -> isl.Set:
        """What is known about the parameters: the bounds of the loops around the scop whose
        induction variables are parameters and the ``affine.if`` conditions around it;
        the universe otherwise (nothing is assumed about function arguments)."""
        if self.context_set is not None:
            return self.context_set
        return isl.Set(self.param_space() + "{ : }")

    # -- names for messages -----------------------------------------------------------------
    def describe_value(self, value: Value) -> str:
        """``%arg3``, ``%c0``, ``%0``: the name the printer gives ``value`` in its function."""
        if self._printer is None:
            self._printer = value_namer(self.scop_ops[0] if self.scop_ops else None)
        return self._printer.value_name(value)

    def describe_memref(self, name: str) -> str:
        """``%arg2``: the memref of tuple ``name`` as the printed IR names it."""
        return self.describe_value(self.memrefs[name])

    def describe_param(self, name: str) -> str:
        for v, n in self.param_names.items():
            if n == name:
                return self.describe_value(v)
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# affine expressions -> ISL text

_Term = Union[int, str]  # an exact integer, or ISL expression text (parenthesized if compound)


class _NonAffine(Exception):
    def __init__(self, expr: AffineExpr, why: str):
        super().__init__(why)
        self.expr = expr
        self.why = why


def _expr_term(e: AffineExpr, dims: Sequence[_Term], syms: Sequence[_Term]) -> _Term:
    """ISL text for ``e`` with ``dN``/``sN`` replaced by ``dims[N]``/``syms[N]``."""
    if isinstance(e, AffineConstantExpr):
        return e.value
    if isinstance(e, AffineDimExpr):
        return dims[e.position]
    if isinstance(e, AffineSymbolExpr):
        return syms[e.position]
    a = _expr_term(e.lhs, dims, syms)
    b = _expr_term(e.rhs, dims, syms)
    kind = e.kind
    if kind is AffineExprKind.ADD:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return f"({a} + {b})"
    if kind is AffineExprKind.MUL:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if not isinstance(a, int) and not isinstance(b, int):
            raise _NonAffine(e, "it multiplies two non-constant terms")
        k, x = (a, b) if isinstance(a, int) else (b, a)
        return 0 if k == 0 else x if k == 1 else f"({k} * {x})"
    if not isinstance(b, int):
        raise _NonAffine(e, "it divides by a non-constant")
    if b == 0:
        raise _NonAffine(e, "it divides by zero")
    if isinstance(a, int):
        if kind is AffineExprKind.FLOORDIV:
            return a // b
        if kind is AffineExprKind.CEILDIV:
            return -((-a) // b)
        return a - b * (a // b)
    num, den = (a, b) if b > 0 else (f"(-1 * {a})", -b)
    if kind is AffineExprKind.FLOORDIV:
        return f"floor({num} / {den})" if den != 1 else num
    if kind is AffineExprKind.CEILDIV:
        return f"ceil({num} / {den})" if den != 1 else num
    # mod: lhs - rhs * floordiv(lhs, rhs) (in [0, rhs) for rhs > 0, as MLIR)
    if b > 0:
        return f"({a} mod {b})"
    return f"({a} + {-b} * floor({num} / {den}))"


def _constant_index(v: Value) -> Optional[int]:
    op = v.defining_op
    if op is None or not is_constant_like(op):
        return None
    value = getattr(op.attributes.get("value"), "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _index_op_map(op: Operation, v: Value) -> Optional[tuple[AffineMap, list]]:
    """``v``, a result of ``affine.delinearize_index`` or ``affine.linearize_index`` whose basis
    entries are constants, as ``(map, operands)``: coordinate ``k`` of ``x`` is
    ``(x floordiv stride_k) mod b_k`` (the first without the ``mod``), the linear index
    ``sum(i_k * stride_k)``, ``stride_k`` the product of the entries after ``k`` (MLIR's
    ``AffineDelinearizeIndexOp``/``AffineLinearizeIndexOp`` lowering).  None when an entry is
    not a constant."""
    basis = [b if isinstance(b, int) else _constant_index(b) for b in op.basis()]
    if any(b is None for b in basis):
        return None
    if op.name == "affine.delinearize_index":
        entries = basis if len(op.results) == len(basis) else [None] + basis
        k = list(op.results).index(v)
        stride = 1
        for b in entries[k + 1:]:
            stride *= b
        e = dim(0).floordiv(stride) if stride != 1 else dim(0)
        if k > 0:
            e = e % entries[k]
        return AffineMap.get(1, 0, (e,)), [op.operands[0]]
    indices = list(op.multi_index)
    entries = basis if len(basis) == len(indices) else [None] + basis
    total, stride = None, 1
    for pos in range(len(indices) - 1, -1, -1):
        term = dim(pos) * stride
        total = term if total is None else total + term
        if pos > 0:
            stride *= entries[pos]
    return AffineMap.get(len(indices), 0, (total,)), indices


class _Resolver:
    """Turns SSA index values into ISL terms: induction variables in ``ivs`` become their
    dimension names, constants fold, ``affine.apply`` folds into its map, values for which
    ``inside`` holds are refused, everything else becomes a parameter."""

    def __init__(self, inside: Callable[[Value], bool], param_names: dict[Value, str],
                 params: list[Value], prefix: str = "p"):
        self.inside = inside
        self.param_names = param_names
        self.params = params
        self.prefix = prefix

    def param(self, v: Value) -> str:
        name = self.param_names.get(v)
        if name is None:
            name = f"{self.prefix}{len(self.params)}"
            self.param_names[v] = name
            self.params.append(v)
        return name

    def value(self, v: Value, ivs: dict[Value, str], user: Operation, what: str) -> _Term:
        if v in ivs:
            return ivs[v]
        c = _constant_index(v)
        if c is not None:
            return c
        op = v.defining_op
        if op is not None and op.name == "affine.apply":
            return self.map(op.map, op.operands, ivs, op, "map")[0]
        if op is not None and op.name in ("affine.delinearize_index", "affine.linearize_index"):
            form = _index_op_map(op, v)
            if form is not None:
                return self.map(form[0], form[1], ivs, op, "basis")[0]
        if self.inside(v):
            if isinstance(v, BlockArgument):
                raise ScheduleError(f"'{user.name}' op {what} uses a block argument of "
                                    f"'{v.block.parent_op.name}' that is not an induction "
                                    f"variable", user.loc)
            raise ScheduleError(f"'{user.name}' op {what} uses the result of '{op.name}' computed "
                                f"inside the scop: only induction variables, constants, "
                                f"affine.apply and values defined before the scop can be "
                                f"modelled (hoist it out of the loop nest)", user.loc)
        return self.param(v)

    def map(self, amap: AffineMap, operands: Sequence[Value], ivs: dict[Value, str],
            user: Operation, what: str) -> list[_Term]:
        terms = [self.value(v, ivs, user, what) for v in operands]
        dims, syms = terms[:amap.num_dims], terms[amap.num_dims:]
        out = []
        for k, e in enumerate(amap.results):
            try:
                out.append(_expr_term(e, dims, syms))
            except _NonAffine as err:
                namer = value_namer(user)
                text = e.to_str([namer.value_name(v) for v in operands[:amap.num_dims]],
                                [f"symbol({namer.value_name(v)})"
                                 for v in operands[amap.num_dims:]])
                raise ScheduleError(f"'{user.name}' op {what} `{text}` is not affine: {err.why}",
                                    user.loc) from None
        return out

    def integer_set(self, cond: IntegerSet, operands: Sequence[Value], ivs: dict[Value, str],
                    user: Operation) -> list[str]:
        amap = AffineMap.get(cond.num_dims, cond.num_symbols, cond.constraints)
        terms = self.map(amap, operands, ivs, user, "condition")
        return [f"{t} {'=' if eq else '>='} 0" for t, eq in zip(terms, cond.eq_flags)]


def _loop_constraints(loop: LoopLike, name: str, resolver: _Resolver, ivs: dict[Value, str],
                      exists_name: str) -> list[str]:
    """``lb <= iv < ub`` for every result of the bound maps, and ``iv = lb + step * e``."""
    user = loop.op if isinstance(loop, AffineParallelDim) else loop
    lbs = resolver.map(loop.lower_map, loop.lower_operands, ivs, user, "lower bound")
    ubs = resolver.map(loop.upper_map, loop.upper_operands, ivs, user, "upper bound")
    cons = [f"{name} >= {lb}" for lb in lbs] + [f"{name} < {ub}" for ub in ubs]
    if loop.step != 1:
        lb = lbs[0] if len(lbs) == 1 else f"max({', '.join(map(str, lbs))})"
        cons.append(f"exists ({exists_name}: {name} = {lb} + {loop.step} * {exists_name})")
    return cons


def _chain_domain(space: str, tuple_text: str, texts: "_ChainTexts") -> isl.Set:
    """The points ``tuple_text`` (``"S0[i0, i1]"``, or ``""`` for a parameter set) within the
    loops and taken ``affine.if`` branches described by ``texts``."""
    key = (space, tuple_text, tuple(texts.loop_cons),
           tuple((tuple(cons), then) for cons, then in texts.conds))
    dom = _DOMAINS.get(key)
    if dom is not None:
        return dom
    dom = isl.Set(f"{space}{{ {tuple_text} : {' and '.join(texts.loop_cons)} }}")
    for cons, then in texts.conds:
        cset = isl.Set(f"{space}{{ {tuple_text} : {' and '.join(cons) if cons else ''} }}")
        dom = dom.intersect(cset) if then else dom.subtract(cset)
    if len(_DOMAINS) >= _DOMAINS_BOUND:
        _DOMAINS.clear()
    _DOMAINS[key] = dom
    return dom


#: _chain_domain's sets by their texts: access_relation asks for the domain of the same
#: loops and conditions access after access (bounds checks, copies), each time reading and
#: intersecting the text.  ISL objects are values, so the sets can be shared.
_DOMAINS: dict = {}
_DOMAINS_BOUND = 4096


@dataclass
class _ChainTexts:
    loop_cons: list[str]
    conds: list[tuple[list[str], bool]]


def _chain_texts(chain: Sequence[tuple[Operation, Optional[bool]]], resolver: _Resolver,
                 ivs: dict[Value, str], iv_name: Callable[[LoopLike], str],
                 exists_prefix: str = "e") -> _ChainTexts:
    loop_cons: list[str] = []
    conds: list[tuple[list[str], bool]] = []
    for k, (op, branch) in enumerate(chain):
        if isinstance(op, _LOOPS):
            loop_cons += _loop_constraints(op, iv_name(op), resolver, ivs, f"{exists_prefix}{k}")
        else:
            conds.append((resolver.integer_set(op.condition, op.cond_operands, ivs, op), branch))
    return _ChainTexts(loop_cons, conds)


def _enclosing_chain(op: Operation) -> list[tuple[Operation, Optional[bool]]]:
    """The ``affine.for``/``affine.if`` ops (and ``affine.parallel`` dimensions) around ``op``,
    outermost first, up to the first other op; ifs come with the branch ``op`` is in (True:
    then)."""
    chain: list[tuple[Operation, Optional[bool]]] = []
    cur = op
    while True:
        parent = cur.parent_op
        if parent is None:
            break
        if isinstance(parent, AffineForOp):
            chain.append((parent, None))
        elif isinstance(parent, AffineParallelOp):
            chain.extend((d, None) for d in reversed(parent.dims()))
        elif isinstance(parent, AffineIfOp):
            chain.append((parent, cur.parent is parent.then_block))
        else:
            break
        cur = parent
    chain.reverse()
    return chain


def _access_texts(op: Operation, resolver: _Resolver, ivs: dict[Value, str]
                  ) -> tuple[list[str], list[str]]:
    """The subscripts of an access (as ISL range entries) and the constraints on the extra
    range variables of a vector access (each vector dim spans ``[index, index + size)`` of the
    corresponding trailing memref dim)."""
    idx = resolver.map(op.map, op.map_operands, ivs, op, "subscript")
    entries = [str(t) for t in idx]
    cons: list[str] = []
    if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)):
        vshape = op.vector_type.shape
        rank = len(entries)
        for k, size in enumerate(vshape[-rank:] if len(vshape) > rank else vshape):
            d = rank - min(len(vshape), rank) + k
            o = f"o{d}"
            cons.append(f"{entries[d]} <= {o} < {entries[d]} + {size}")
            entries[d] = o
    return entries, cons


# ---------------------------------------------------------------------------------------------
# extraction


@dataclass
class _Group:
    ops: list[Operation]
    loops: list[LoopLike]
    chain: list[tuple[Operation, Optional[bool]]]
    position: list[int]


def _effect_free(op: Operation) -> bool:
    """No memory effects: may be rematerialized (duplicated) and never forms a statement."""
    return is_pure(op) or op.name.startswith(("arith.", "math.")) or op.name == "affine.apply"


def _check_supported(op: Operation) -> None:
    """Refuse what the model cannot represent (pre-order, so the outermost offender is named)."""
    name = op.name
    if isinstance(op, AffineForOp):
        if op.inits:
            raise ScheduleError("'affine.for' op with iter_args (loop-carried values) is not "
                                "supported by the polyhedral model yet", op.loc)
        return
    if isinstance(op, AffineIfOp):
        if op.results:
            raise ScheduleError("'affine.if' op with results is not supported by the polyhedral "
                                "model yet", op.loc)
        return
    if isinstance(op, AffineParallelOp):
        if op.results:
            raise ScheduleError("'affine.parallel' op with reductions is not supported by the "
                                "polyhedral model yet", op.loc)
        return
    if name == "affine.yield" or isinstance(op, ACCESS_OPS):
        return
    if name in _NON_AFFINE_ACCESS:
        raise ScheduleError(f"'{name}' op is a non-affine memory access: its subscripts cannot be "
                            f"analyzed (use affine.load/affine.store)", op.loc)
    if name in _CALL_OPS:
        raise ScheduleError(f"'{name}' op inside the scop: calls are not modelled (the callee may "
                            f"read or write any memory)", op.loc)
    if name in _ALLOC_OPS:
        raise ScheduleError(f"'{name}' op inside the scop: allocations are not modelled (hoist "
                            f"them out of the loop nest)", op.loc)
    if name.startswith("scf."):
        raise ScheduleError(f"'{name}' op is structured control flow the model cannot represent "
                            f"(--raise-scf-to-affine raises scf.for/scf.if with affine bounds "
                            f"and conditions)", op.loc)
    if op.regions:
        raise ScheduleError(f"'{name}' op holds regions: only affine.for and affine.if may be "
                            f"nested inside the scop", op.loc)
    if not _effect_free(op):
        raise ScheduleError(f"'{name}' op inside the scop has unknown memory effects and cannot "
                            f"be modelled", op.loc)


def unsupported_op(root: Operation) -> Optional[ScheduleError]:
    """The refusal :func:`extract` gives for the first op under ``root`` (pre-order) of a kind
    the model cannot represent (an ``scf.for``, a call, a ``memref.load``...), or ``None``."""
    for op in root.walk():
        try:
            _check_supported(op)
        except ScheduleError as err:
            return err
    return None


def _scop_of(root: Union[Operation, Sequence[Operation]]) -> list[Operation]:
    if isinstance(root, Operation):
        if root.name == "func.func":
            body = root.regions[0].blocks[0].ops if root.regions and root.regions[0].blocks \
                else []
            marks = [k for k, op in enumerate(body)
                     if isinstance(op, (AffineForOp, AffineIfOp, AffineParallelOp) + ACCESS_OPS)]
            if not marks:
                sym = getattr(root.attributes.get("sym_name"), "value", "?")
                raise ScheduleError(f"function @{sym} has no affine loop nest to model", root.loc)
            return list(body[marks[0]:marks[-1] + 1])
        return [root]
    ops = list(root)
    if not ops:
        raise ValueError("extract: empty op list")
    block = ops[0].parent
    if block is None or any(op.parent is not block for op in ops):
        raise ValueError("extract: the ops must be in one block")
    first = block.index_of(ops[0])
    if any(block.ops[first + k] is not op for k, op in enumerate(ops)):
        raise ValueError("extract: the ops must be consecutive, in block order")
    return ops


def extract(root: Union[Operation, Sequence[Operation]], *,
            scalar_flows: bool = False, first_statement: int = 0) -> PolyhedralModel:
    """The polyhedral model of an affine scop.

    ``root`` is a ``func.func`` (the scop is its body from the first affine loop/if/access to
    the last one), any single op (usually an ``affine.for`` nest), or consecutive ops of one
    block.  Raises :class:`ScheduleError` at the first op the model cannot represent.
    ``scalar_flows=True`` accepts values flowing between statements through SSA registers
    (they are not modelled: only for analyses they cannot affect, such as unroll-and-jam
    legality, and the statements' ``ops`` then lack those producers).  Statements are named
    from ``S{first_statement}`` on (a function's scops number theirs in one sequence, see
    :func:`polyopt.schedules.scops.function_scops`).

        affine.for %i = 0 to 4 {            S0: { S0[i0] : 0 <= i0 <= 3 }
          %x = affine.load %A[%i]               reads  { S0[i0] -> M0[i0] }
          affine.for %j = %i to 4 {         S1: { S1[i0, i1] : 0 <= i0 <= i1 <= 3 }
            affine.store %x, %B[%j] }}          -> refused: %x flows from S0 to S1 in a register
    """
    scop_ops = _scop_of(root)
    in_scop: set[int] = set()
    order: dict[int, int] = {}
    for top in scop_ops:
        for op in top.walk():
            _check_supported(op)
            in_scop.add(id(op))
            order[id(op)] = len(order)

    def inside(v: Value) -> bool:
        if isinstance(v, BlockArgument):
            owner = v.block.parent_op
            return owner is not None and id(owner) in in_scop
        return id(v.defining_op) in in_scop

    # values computed in the scop must not escape it
    for top in scop_ops:
        for op in top.walk():
            for r in op.results:
                for use in r.uses:
                    if id(use.op) not in in_scop:
                        raise ScheduleError(f"'{op.name}' op result is used after the scop "
                                            f"(by '{use.op.name}'), which is not modelled",
                                            op.loc)

    # 1. straight-line groups, in pre-order, with their loops, conditions and positions
    groups: list[_Group] = []

    def walk_seq(ops: Iterable[Operation], loops, chain, prefix, counter) -> None:
        group: list[Operation] = []

        def flush():
            if any(isinstance(op, ACCESS_OPS) for op in group):
                groups.append(_Group(list(group), list(loops), list(chain), prefix + [counter[0]]))
                counter[0] += 1
            group.clear()   # a group without accesses is no statement: its ops are pure

        for op in ops:
            if op.name == "affine.yield":
                continue
            if isinstance(op, AffineForOp):
                flush()
                pos = counter[0]
                counter[0] += 1
                walk_seq(op.body.ops, loops + [op], chain + [(op, None)], prefix + [pos], [0])
            elif isinstance(op, AffineParallelOp):
                flush()
                dims = op.dims()     # one loop per dimension, each with a 0 position inside
                if not dims:         # no dimension: the body runs once, in place
                    walk_seq(op.body.ops, loops, chain, prefix, counter)
                    continue
                pos = counter[0]
                counter[0] += 1
                walk_seq(op.body.ops, loops + dims, chain + [(d, None) for d in dims],
                         prefix + [pos] + [0] * (len(dims) - 1), [0])
            elif isinstance(op, AffineIfOp):
                flush()
                walk_seq(op.then_block.ops, loops, chain + [(op, True)], prefix, counter)
                if op.else_block is not None:
                    walk_seq(op.else_block.ops, loops, chain + [(op, False)], prefix, counter)
            else:
                group.append(op)
        flush()

    walk_seq(scop_ops, [], [], [], [0])
    stmt_groups = groups
    group_of: dict[int, int] = {}
    for k, g in enumerate(stmt_groups):
        for op in g.ops:
            group_of[id(op)] = k

    # 2. rematerialize pure ops used across statements; refuse other cross-statement values
    full_ops: list[list[Operation]] = []
    for k, g in enumerate(stmt_groups):
        extra: dict[int, Operation] = {}

        def need(v: Value, user: Operation) -> None:
            d = v.defining_op
            if d is None or id(d) not in in_scop or group_of.get(id(d)) == k or id(d) in extra:
                return
            if not _effect_free(d):
                if scalar_flows:
                    return
                other = group_of.get(id(d))
                other = "?" if other is None else first_statement + other
                raise ScheduleError(f"'{d.name}' op result (in S{other}) is used by "
                                    f"'{user.name}' in S{first_statement + k}: values flowing "
                                    f"between statements "
                                    f"through SSA registers (scalar dependences) are not "
                                    f"modelled; store the value to a memref or recompute it "
                                    f"where it is used", d.loc)
            for w in d.operands:
                need(w, d)
            extra[id(d)] = d

        for op in g.ops:
            for v in op.operands:
                need(v, op)
        pre = sorted(extra.values(), key=lambda o: order[id(o)])
        full_ops.append(pre + g.ops)

    # 3. texts (registers parameters and memrefs in order of first use)
    params: list[Value] = []
    param_names: dict[Value, str] = {}
    resolver = _Resolver(inside, param_names, params)
    memrefs: dict[str, Value] = {}
    memref_names: dict[Value, str] = {}
    pending = []
    for k, g in enumerate(stmt_groups):
        ivs = {loop.induction_var: f"i{d}" for d, loop in enumerate(g.loops)}
        depth_of = {id(loop): d for d, loop in enumerate(g.loops)}
        texts = _chain_texts(g.chain, resolver, ivs, lambda l: f"i{depth_of[id(l)]}")
        acc = []
        for op in g.ops:
            if not isinstance(op, ACCESS_OPS):
                continue
            mem = op.memref
            if inside(mem):
                raise ScheduleError(f"'{op.name}' op accesses a memref defined inside the scop "
                                    f"(by '{mem.defining_op.name}'): only memrefs defined before "
                                    f"the scop are modelled", op.loc)
            if mem not in memref_names:
                memref_names[mem] = f"M{len(memrefs)}"
                memrefs[memref_names[mem]] = mem
            entries, cons = _access_texts(op, resolver, ivs)
            acc.append((op, memref_names[mem], entries, cons))
        pending.append((g, texts, acc))

    # 4. ISL objects
    space = f"[{', '.join(param_names[p] for p in params)}] -> "
    depth = max((len(g.loops) for g in stmt_groups), default=0)
    statements: list[Statement] = []
    for k, ((g, texts, acc), ops) in enumerate(zip(pending, full_ops)):
        name = f"S{first_statement + k}"
        dims = [f"i{d}" for d in range(len(g.loops))]
        tup = f"{name}[{', '.join(dims)}]"
        sched = []
        for d in range(depth + 1):
            sched.append(str(g.position[d]) if d < len(g.position) else "0")
            if d < depth:
                sched.append(dims[d] if d < len(dims) else "0")
        domain, rels, reads, writes, schedule = _statement_sets(
            space, tup, texts, [(mname, entries, cons, isinstance(op, _WRITE_OPS))
                                for op, mname, entries, cons in acc], sched)
        accesses = [Access(op, mname, rel, isinstance(op, _WRITE_OPS))
                    for (op, mname, _, _), rel in zip(acc, rels)]
        statements.append(Statement(
            name=name, ops=ops, loops=list(g.loops), ivs=[l.induction_var for l in g.loops],
            domain=domain, reads=reads, writes=writes, schedule=schedule, loc=g.ops[0].loc,
            accesses=accesses, conditions=[(op, b) for op, b in g.chain if b is not None],
            position=tuple(g.position), group=list(g.ops)))

    model = PolyhedralModel(scop_ops=scop_ops, statements=statements, params=params,
                            param_names=param_names, memrefs=memrefs, memref_names=memref_names)
    model.context_set = _context(scop_ops[0], params, param_names)
    return model


_WRITE_OPS = (AffineStoreOp, AffineVectorStoreOp)

#: The ISL sets and maps of the statements extracted last, by the text they are read from:
#: the same nests are modelled again and again (a loop's parallelism checked loop by loop, the
#: scops of each pipeline of a flag sweep), and ISL's reading of the text, the intersections
#: and the unions were most of an extraction's time.  ISL objects are values (every operation
#: returns a new one), so a model may share them with another.
_STATEMENT_SETS: "OrderedDict[tuple, tuple]" = OrderedDict()
_STATEMENT_SETS_BOUND = 4096
_STATEMENT_SETS_LOCK = threading.Lock()


def _statement_sets(space: str, tup: str, texts: "_ChainTexts", accesses: list, sched: list
                    ) -> tuple:
    """(domain, access relations, reads, writes, original schedule) of statement ``tup``:
    ``accesses`` are (memref name, range entries, constraints, is a write)."""
    key = (space, tup, tuple(texts.loop_cons),
           tuple((tuple(cons), then) for cons, then in texts.conds),
           tuple((m, tuple(entries), tuple(cons), w) for m, entries, cons, w in accesses),
           tuple(sched))
    with _STATEMENT_SETS_LOCK:
        known = _STATEMENT_SETS.get(key)
        if known is not None:
            _STATEMENT_SETS.move_to_end(key)
            return known
    domain = _chain_domain(space, tup, texts)
    rels = []
    reads = isl.UnionMap(space + "{ }")
    writes = isl.UnionMap(space + "{ }")
    # a fully unrolled register tile is one statement of thousands of accesses, a few hundred
    # of them distinct (the same A and B elements are read by every copy)
    same: dict[tuple, isl.Map] = {}
    for mname, entries, cons, is_write in accesses:
        key = (mname, tuple(entries), tuple(cons))
        rel = same.get(key)
        if rel is None:
            rel = same[key] = isl.Map(f"{space}{{ {tup} -> {mname}[{', '.join(entries)}] : "
                                      f"{' and '.join(cons)} }}").intersect_domain(domain)
        rels.append(rel)
        if is_write:
            writes = writes.union(isl.UnionMap.from_map(rel))
        else:
            reads = reads.union(isl.UnionMap.from_map(rel))
    schedule = isl.Map(f"{space}{{ {tup} -> [{', '.join(sched)}] }}").intersect_domain(domain)
    known = (domain, rels, reads, writes, schedule)
    with _STATEMENT_SETS_LOCK:
        _STATEMENT_SETS[key] = known
        if len(_STATEMENT_SETS) > _STATEMENT_SETS_BOUND:
            _STATEMENT_SETS.popitem(last=False)
    return known


def _context(anchor: Operation, params: list[Value], param_names: dict[Value, str]
             ) -> Optional[isl.Set]:
    """Constraints on the parameters from the affine loops and ifs around the scop (their
    induction variables and conditions); other values they mention are projected out."""
    chain = _enclosing_chain(anchor)
    if not chain or not params:
        return None
    names = dict(param_names)
    temps: list[Value] = []
    resolver = _Resolver(lambda v: False, names, temps, prefix="t")
    texts = _chain_texts(chain, resolver, {}, lambda loop: resolver.param(loop.induction_var))
    all_names = [param_names[p] for p in params] + [names[t] for t in temps]
    ctx = _chain_domain(f"[{', '.join(all_names)}] -> ", "", texts)
    if temps:
        ctx = ctx.project_out(isl.dim_type.param, len(params), len(temps))
    return ctx.coalesce()


# ---------------------------------------------------------------------------------------------
# one access on its own (for checks that do not need a whole scop, e.g. bounds checking)


@dataclass(eq=False)
class OpAccess:
    """An access op with the iteration space of all the affine loops around it (up to the first
    non-affine ancestor): ``relation`` is ``{ S[i0, ...] -> M[...] }`` restricted to
    ``domain``; ``ivs`` name the dims, ``params`` the parameters ``p0, ...``."""

    op: Operation
    relation: isl.Map
    domain: isl.Set
    ivs: list[Value]
    params: list[Value]
    param_names: dict[Value, str]


@dataclass
class _OpChain:
    """The affine loops and taken branches around one op, as ISL text: the loops' induction
    variables (``i0, ...``), the parameters met so far (values defined elsewhere, ``p0, ...``
    in order of first use) and the resolver that names more of them."""

    loops: list
    ivs: dict
    params: list
    names: dict
    resolver: "_Resolver"
    texts: "_ChainTexts"

    @property
    def space(self) -> str:
        return f"[{', '.join(self.names[p] for p in self.params)}] -> "

    @property
    def tuple_text(self) -> str:
        return f"S[{', '.join(self.ivs.values())}]"


def _op_chain(op: Operation) -> _OpChain:
    chain = _enclosing_chain(op)
    loops = [c for c, _ in chain if isinstance(c, _LOOPS)]
    ivs = {loop.induction_var: f"i{d}" for d, loop in enumerate(loops)}
    depth_of = {id(loop): d for d, loop in enumerate(loops)}
    params: list[Value] = []
    names: dict[Value, str] = {}
    resolver = _Resolver(lambda v: False, names, params)
    texts = _chain_texts(chain, resolver, ivs, lambda l: f"i{depth_of[id(l)]}")
    return _OpChain(loops, ivs, params, names, resolver, texts)


def iteration_domain(op: Operation) -> tuple[isl.Set, list[Value]]:
    """The points of the affine loops around ``op`` (up to the first non-affine ancestor) at
    which ``op`` runs, within the taken ``affine.if`` branches, and those loops' induction
    variables; values defined elsewhere are parameters named after their first use (so two
    domains compare only when their ``ivs`` and parameters are the same values)."""
    c = _op_chain(op)
    return _chain_domain(c.space, c.tuple_text, c.texts), list(c.ivs)


def access_relation(op: Operation) -> OpAccess:
    """The access relation of one ``affine.load``/``store``/``vector_load``/``vector_store``
    over its enclosing affine loops; values defined elsewhere are parameters."""
    if not isinstance(op, ACCESS_OPS):
        raise TypeError(f"access_relation: '{op.name}' is not an affine memory access")
    c = _op_chain(op)
    entries, cons = _access_texts(op, c.resolver, c.ivs)
    space, tup = c.space, c.tuple_text
    domain = _chain_domain(space, tup, c.texts)
    rel = isl.Map(f"{space}{{ {tup} -> M[{', '.join(entries)}] : {' and '.join(cons)} }}")
    return OpAccess(op, rel.intersect_domain(domain), domain,
                    [l.induction_var for l in c.loops], c.params, c.names)
