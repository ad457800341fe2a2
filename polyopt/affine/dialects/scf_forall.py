"""``scf.forall`` on memrefs (what ``transform.structured.tile_using_forall`` and IREE emit) and
its terminator ``scf.forall.in_parallel``::

    scf.forall (%i, %j) in (16, %n) { ... }                       // from 0, step 1
    scf.forall (%i) = (1) to (%n) step (%c2) { ... } {mapping = [#gpu.thread<x>]}

Each bound is a constant or an ``index`` operand: ``staticLowerBound``/``staticUpperBound``/
``staticStep`` hold the constants and MLIR's ``kDynamic`` for each operand.  Tensor
``shared_outs`` are refused (polyopt runs memrefs).  The iterations may run in any order: the
pipeline turns the op into ``scf.parallel`` (:func:`forall_to_parallel`, MLIR's
``--scf-forall-to-parallel``), which the raising and the OpenMP lowering take.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import ArrayAttr, DenseArrayAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Block, Operation, Region, Value, register_op
from ..types import IndexType, IntegerType, i64, index
from .affine import DYNAMIC, _parse_dynamic_index_list, _print_dynamic_index_list

__all__ = ["ForallOp", "InParallelOp", "forall_to_parallel"]

_BOUNDS = ("staticLowerBound", "staticUpperBound", "staticStep")
_NAMES = ("lower bound", "upper bound", "step")


@register_op
class InParallelOp(Operation):
    """``scf.forall.in_parallel { }``: ends an ``scf.forall``'s body (its region holds the
    tensor slices a loop with ``shared_outs`` inserts; on memrefs it is empty)."""

    OP_NAME = "scf.forall.in_parallel"

    @classmethod
    def build(cls, loc=None) -> "InParallelOp":
        return cls(regions=[Region([Block()])], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "InParallelOp":
        region = p.parse_region(allow_empty=True)
        if not region.blocks:
            region.add_block(Block())
        return cls(regions=[region], attributes=p.parse_optional_attr_dict(), loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.forall.in_parallel ")
        p.print_region(self.regions[0], print_empty_block=True)
        p.print_attr_dict(self.attributes)

    def verify_op(self) -> None:
        parent = self.parent_op
        if parent is None or parent.name != "scf.forall":
            raise self.error("expects parent op 'scf.forall'")
        if any(self.regions[0].blocks[0].ops) if self.regions and self.regions[0].blocks \
                else False:
            raise self.error("may only insert tensor slices (tensor.parallel_insert_slice): "
                             "polyopt runs memrefs")


@register_op
class ForallOp(Operation):
    """``scf.forall`` (module docstring).  Operands: the dynamic lower bounds, upper bounds
    and steps, in that order (``operandSegmentSizes``, with no outputs)."""

    OP_NAME = "scf.forall"

    # -- accessors -----------------------------------------------------------------------------
    def _static(self, k: int) -> tuple[int, ...]:
        a = self.attributes.get(_BOUNDS[k])
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    def _segments(self) -> tuple[int, int, int]:
        return tuple(sum(1 for s in self._static(k) if s == DYNAMIC) for k in range(3))

    def _dynamic(self, k: int) -> tuple[Value, ...]:
        seg = self._segments()
        start = sum(seg[:k])
        return tuple(self.operands[start:start + seg[k]])

    def mixed(self, k: int) -> list:
        """The ``k``-th list (0: lower bounds, 1: upper bounds, 2: steps), an int or a
        Value per dimension."""
        it = iter(self._dynamic(k))
        return [next(it) if s == DYNAMIC else s for s in self._static(k)]

    @property
    def rank(self) -> int:
        return len(self._static(1))

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def induction_vars(self) -> list[Value]:
        return self.body.args

    def is_normalized(self) -> bool:
        """Lower bounds 0 and steps 1 (constants or ``arith.constant`` operands): printed as
        ``in (upper bounds)``."""
        def const(x, want):
            return x == want if isinstance(x, int) else _constant_index(x) == want
        return all(const(x, 0) for x in self.mixed(0)) and all(const(x, 1)
                                                              for x in self.mixed(2))

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name) -> "ForallOp":
        ivs = p.parse_comma_separated("(", ")", lambda: p.parse_ssa_name()[0])
        rank = len(ivs)
        lists: list[tuple[list[int], list[Value]]] = []
        if p.optional_keyword("in"):
            lists = [([0] * rank, []), _parse_dynamic_index_list(p, cls.OP_NAME),
                     ([1] * rank, [])]
        else:
            p.expect("=")
            lists.append(_parse_dynamic_index_list(p, cls.OP_NAME))
            for kw in ("to", "step"):
                p.skip_ws()
                if not p.optional_keyword(kw):
                    raise ParseError(f"custom op 'scf.forall' expected '{kw}'", p.loc())
                lists.append(_parse_dynamic_index_list(p, cls.OP_NAME))
        for k, (static, _) in enumerate(lists):
            if len(static) != rank:
                raise ParseError(f"expected {rank} {_NAMES[k]} values, got {len(static)}", loc)
        p.skip_ws()
        if p.peek_keyword("shared_outs"):
            raise ParseError("custom op 'scf.forall' shared_outs: tensors are not supported "
                             "here (polyopt runs memrefs; bufferize first: polyopt opt "
                             "--one-shot-bufferize)", p.loc())
        body = Block([index] * rank)
        region = p.parse_region(entry_args=list(zip(ivs, body.args)))
        block = region.blocks[0]
        if not block.ops or block.ops[-1].name != InParallelOp.OP_NAME:
            block.append(InParallelOp.build(loc=loc))
        attrs = p.parse_optional_attr_dict()
        attrs.update({b: DenseArrayAttr(i64, tuple(s)) for b, (s, _) in zip(_BOUNDS, lists)})
        operands = [v for _, dyn in lists for v in dyn]
        return cls(operands=operands, attributes=attrs, regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions) -> "ForallOp":
        attrs = dict(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        sizes = tuple(seg.values) if isinstance(seg, DenseArrayAttr) else ()
        if len(sizes) != 4 or sum(sizes) != len(operands):
            raise ParseError(f"'{cls.OP_NAME}' op operand count ({len(operands)}) does not match "
                             f"with the total size ({sum(sizes)}) specified in attribute "
                             f"'operandSegmentSizes'", loc)
        if sizes[3] or result_types:
            raise ParseError("'scf.forall' op shared_outs: tensors are not supported here "
                             "(polyopt runs memrefs; bufferize first: polyopt opt "
                             "--one-shot-bufferize)", loc)
        return cls(operands=operands, attributes=attrs, regions=regions, loc=loc)

    def generic_attributes(self) -> dict:
        attrs = dict(self.attributes)
        attrs["operandSegmentSizes"] = DenseArrayAttr(IntegerType(32), (*self._segments(), 0))
        return dict(sorted(attrs.items()))

    def print_custom(self, p) -> None:
        p.print("scf.forall (" + ", ".join(p.value_name(v) for v in self.induction_vars)
                + ")")
        if self.is_normalized():
            p.print(" in ")
            _print_dynamic_index_list(p, self._static(1), self._dynamic(1))
        else:
            p.print(" = ")
            _print_dynamic_index_list(p, self._static(0), self._dynamic(0))
            p.print(" to ")
            _print_dynamic_index_list(p, self._static(1), self._dynamic(1))
            p.print(" step ")
            _print_dynamic_index_list(p, self._static(2), self._dynamic(2))
        p.print(" ")
        p.print_region(self.regions[0], print_block_terminators=False)
        p.print_attr_dict(self.attributes, elide=_BOUNDS + ("operandSegmentSizes",))

    # -- verification --------------------------------------------------------------------------
    def verify_op(self) -> None:
        for b in _BOUNDS:
            a = self.attributes.get(b)
            if a is None:
                raise self.error(f"requires attribute '{b}'")
            if not isinstance(a, DenseArrayAttr) or a.element_type != i64:
                raise self.error(f"attribute '{b}' failed to satisfy constraint: i64 dense "
                                 f"array attribute")
        if self.results:
            raise self.error(f"produces {len(self.results)} results, but has only 0 outputs")
        rank = self.rank
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("region #0 ('region') failed to verify constraint: region with 1 "
                             "blocks")
        body = self.body
        if len(body.args) != rank:
            raise self.error(f"region expects {rank} arguments")
        for k, a in enumerate(body.args):
            if not isinstance(a.type, IndexType):
                raise self.error(f"expects {k}-th block argument to be an index")
        mapping = self.attributes.get("mapping")
        if mapping is not None and isinstance(mapping, ArrayAttr) and \
                len(mapping.elements) != rank:
            raise self.error("mapping attribute size must match op rank")
        if sum(self._segments()) != self.num_operands:
            raise self.error("the static bounds' kDynamic markers do not match the operands")
        for k, name in enumerate(_NAMES):
            n = len(self._static(k))
            if n != rank:
                raise VerifyError(f"expected {rank} {name} values, got {n}", self.loc)
        for k, v in enumerate(self.operands):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        if not body.ops or body.ops[-1].name != InParallelOp.OP_NAME:
            raise self.error("expects body to terminate with 'scf.forall.in_parallel'")


def _constant_index(v: Value) -> Optional[int]:
    from .scf import _constant_int
    return _constant_int(v)


def forall_to_parallel(root: Operation) -> int:
    """Every ``scf.forall`` under ``root`` as the ``scf.parallel`` with its bounds (MLIR's
    ``--scf-forall-to-parallel``: constants become ``arith.constant`` ops in front of it, the
    mapping attribute is kept); a forall of no dimensions is its body, run once.  A constant
    step that is not positive, which ``scf.forall`` accepts, is an error: it has no iteration
    order to run.  Returns how many."""
    from ..builder import Builder
    from .arith import ConstantOp
    from .scf import ParallelOp, ReduceOp
    loops = [op for op in root.walk() if isinstance(op, ForallOp)]
    for op in reversed(loops):          # innermost first
        for s in op.mixed(2):
            c = s if isinstance(s, int) else _constant_index(s)
            if c is not None and c <= 0:
                raise VerifyError(f"'scf.forall' op has a step of {c}: its iterations have no "
                                  f"order to run in (steps must be positive)", op.loc)
        if op.rank == 0:       # runs its body once (mlir-opt-22 makes an invalid scf.parallel)
            for o in list(op.body.ops[:-1]):
                o.move_before(op)
            op.erase()
            continue
        b = Builder.before(op)
        values = [[x if isinstance(x, Value) else
                   b.create(ConstantOp, x, index, loc=op.loc).result for x in op.mixed(k)]
                  for k in range(3)]
        par = b.create(ParallelOp.build, *values, loc=op.loc)
        if "mapping" in op.attributes:
            par.attributes["mapping"] = op.attributes["mapping"]
        inner = par.body
        terminator = inner.ops[-1]                       # the empty scf.reduce
        for old, new in zip(op.body.args, inner.args):
            old.replace_all_uses_with(new)
        for o in list(op.body.ops[:-1]):
            o.move_before(terminator)
        assert isinstance(terminator, ReduceOp)
        op.erase()
    return len(loops)
