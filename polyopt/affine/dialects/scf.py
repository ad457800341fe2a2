"""The scf dialect (structured control flow): ``scf.for``, ``scf.if``, ``scf.yield``,
``scf.parallel``/``scf.reduce``/``scf.reduce.return``, ``scf.while``/``scf.condition``,
``scf.execute_region`` and ``scf.index_switch``.

Custom forms parse and print exactly as ``mlir-opt-22`` does (including its quirks: the two
spaces before ``: i32`` of an integer ``scf.for``, the space after ``scf.reduce`` and
``scf.index_switch %x``), with the terminators MLIR elides: an ``scf.for`` without
``iter_args``, an ``scf.if`` without results and an ``scf.index_switch`` default region whose
``scf.yield`` is empty print no ``scf.yield``; ``scf.parallel`` always prints its
``scf.reduce``.  Generic forms parse too (``scf.parallel``'s ``operandSegmentSizes`` is checked
and dropped: the split of its operands follows from the number of results).

Verification follows MLIR 22 with its messages: what ``verify()`` and the ODS constraints check
is in ``verify_op`` (before the nested ops), what looks at the types the terminators pass along
the control-flow edges (MLIR's ``RegionBranchOpInterface``) is in ``verify_regions`` (after
them).  Two deliberate differences: an ``scf.parallel`` whose generic form gives different
numbers of lower bounds, upper bounds and steps is refused (mlir-opt-22 accepts it), and a
block that does not end in a terminator is reported at the op that owns it.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import DenseArrayAttr, IntegerAttr, UnitAttr
from ..diagnostics import Location, ParseError
from ..ir import Block, Operation, Region, Value, register_op
from ..types import FunctionType, IndexType, IntegerType, Type, i1, i64, index

__all__ = ["ForOp", "IfOp", "YieldOp", "ParallelOp", "ReduceOp", "ReduceReturnOp", "WhileOp",
           "ConditionOp", "ExecuteRegionOp", "IndexSwitchOp"]

#: Ops that end a block (a block whose last op is one of these gets no implicit terminator).
_TERMINATOR_NAMES = frozenset({
    "scf.yield", "scf.condition", "scf.reduce", "scf.reduce.return", "affine.yield",
    "func.return", "linalg.yield", "vector.yield", "memref.alloca_scope.return"})

_YIELD_PARENTS = ("scf.execute_region", "scf.for", "scf.if", "scf.index_switch", "scf.while")


# ---------------------------------------------------------------------------------------------
# parsing helpers (MLIR's OpAsmParser: operands are resolved against the type the op expects)


def _custom_error(op_name: str, message: str, loc: Location) -> ParseError:
    return ParseError(f"custom op '{op_name}' {message}", loc)


def _use(p) -> tuple[str, int]:
    """``%name`` -> (name, offset of the ``%``), not resolved yet."""
    p.skip_ws()
    offset = p.pos
    name, _ = p.parse_ssa_name()
    return name, offset


def _resolve(p, use: tuple[str, int], expected: Type) -> Value:
    name, offset = use
    value = p._lookup(name, offset)
    p.spelled[value] = (name, offset)
    p.check_type(value, expected, offset)
    return value


def _keyword(p, op_name: str, kw: str) -> None:
    if not p.optional_keyword(kw):
        raise _custom_error(op_name, f"expected '{kw}'", p.loc())


def _parse_uses(p, open_: str = "(", close: str = ")") -> list[tuple[str, int]]:
    return p.parse_comma_separated(open_, close, lambda: _use(p))


def _parse_assignments(p) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """``(%a = %x, %b = %y)`` -> (the names defined, the values used)."""
    names: list[tuple[str, int]] = []
    uses: list[tuple[str, int]] = []

    def one():
        names.append(_use(p))
        p.expect("=")
        uses.append(_use(p))
    p.parse_comma_separated("(", ")", one)
    return names, uses


def _parse_typed_operands(p, op_name: str) -> list[Value]:
    """``%a, %b : f32, i32`` (or nothing) as ``scf.yield``/``scf.condition`` write them."""
    uses = []
    if p.peek("%"):
        uses.append(_use(p))
        while p.optional(","):
            uses.append(_use(p))
    if not uses:
        return []
    p.expect(":")
    p.skip_ws()
    tstart = p.pos
    types = p.parse_type_list()
    if len(types) != len(uses):
        raise p.error(f"{len(uses)} operands present, but expected {len(types)}", tstart)
    return [_resolve(p, u, t) for u, t in zip(uses, types)]


def _ensure_terminator(region: Region, build) -> None:
    """MLIR's ``ensureTerminator``: an implicit terminator when the last block lacks one."""
    if not region.blocks:
        region.add_block(Block())
    block = region.blocks[-1]
    if not block.ops or block.ops[-1].name not in _TERMINATOR_NAMES:
        block.append(build())


def _print_typed_operands(p, values: Sequence[Value]) -> None:
    if values:
        p.print(" ")
        p.print_operands(values)
        p.print(" : ")
        p.print_types(v.type for v in values)


def _print_arrow_types(p, types: Sequence[Type]) -> None:
    """MLIR's ``printOptionalArrowTypeList``."""
    if not types:
        return
    if len(types) == 1 and not isinstance(types[0], FunctionType):
        p.print(" -> " + p.type_str(types[0]))
    else:
        p.print(" -> (" + ", ".join(p.type_str(t) for t in types) + ")")


# ---------------------------------------------------------------------------------------------
# verification helpers


def _constant_int(v: Value) -> Optional[int]:
    op = v.defining_op
    if op is None or op.name != "arith.constant":
        return None
    a = op.attributes.get("value")
    return a.value if isinstance(a, IntegerAttr) and not isinstance(a.value, bool) else None


def _is_int_or_index(t: Type) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def _check_parent(op: Operation, allowed: Sequence[str]) -> None:
    parent = op.parent_op
    if parent is None or parent.name not in allowed:
        if len(allowed) == 1:
            raise op.error(f"expects parent op '{allowed[0]}'")
        raise op.error(f"expects parent op to be one of '{', '.join(allowed)}'")


def _check_single_block(op: Operation, k: int, name: str) -> None:
    """ODS ``SizedRegion<1>``."""
    if len(op.regions[k].blocks) != 1:
        raise op.error(f"region #{k} ('{name}') failed to verify constraint: region with 1 "
                       f"blocks")


def _terminator(op: Operation, block: Block, expected: str) -> Operation:
    """The terminator of ``block``, which must be ``expected``."""
    last = block.ops[-1] if block.ops else None
    if last is None or last.name != expected:
        found = f"'{last.name}'" if last is not None else "nothing"
        raise op.error(f"expects regions to end with '{expected}', found {found}")
    return last


def _check_edge(op: Operation, source: str, target: str, operands: Sequence[Value],
                inputs: Sequence[Value]) -> None:
    """MLIR's check of one control-flow edge of a ``RegionBranchOpInterface`` op: the values
    passed along it must match the successor's inputs (region arguments or op results)."""
    where = f"along control flow edge from {source} to {target}"
    if len(operands) != len(inputs):
        raise op.error(f"{where}: region branch point has {len(operands)} operands, but region "
                       f"successor needs {len(inputs)} inputs")
    for k, (a, b) in enumerate(zip(operands, inputs)):
        if a.type != b.type:
            raise op.error(f"{where}: successor operand type #{k} '{a.type}' should match "
                           f"successor input type #{k} '{b.type}'")


# ---------------------------------------------------------------------------------------------
# scf.yield


@register_op
class YieldOp(Operation):
    """``scf.yield %a, %b : f32, index``: ends the regions of ``scf.for``/``if``/``while``
    (after region)/``execute_region``/``index_switch``, passing values to the parent."""

    OP_NAME = "scf.yield"

    @classmethod
    def build(cls, operands: Sequence[Value] = (), loc=None) -> "YieldOp":
        return cls(operands=list(operands), loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "YieldOp":
        attrs = p.parse_optional_attr_dict()
        return cls(operands=_parse_typed_operands(p, cls.OP_NAME), attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.yield")
        p.print_attr_dict(self.attributes)
        _print_typed_operands(p, self.operands)

    def verify_op(self) -> None:
        _check_parent(self, _YIELD_PARENTS)
        if self.results:
            raise self.error("requires zero results")


def _yield(loc):
    return lambda: YieldOp.build(loc=loc)


# ---------------------------------------------------------------------------------------------
# scf.for


@register_op
class ForOp(Operation):
    """``scf.for [unsigned] %i = %lb to %ub step %s [iter_args(%a = %init) -> (T)] [: i32]``.

    Operands: lower bound, upper bound, step (one signless integer or index type), then the
    loop-carried inits; the body's arguments are the induction variable and the iter args.
    ``unsigned`` (the ``unsignedCmp`` attribute) compares the induction variable with the upper
    bound as an unsigned number.
    """

    OP_NAME = "scf.for"

    @classmethod
    def build(cls, lower: Value, upper: Value, step: Value, inits: Sequence[Value] = (), *,
              unsigned: bool = False, loc=None) -> "ForOp":
        """A loop with an empty body (an ``scf.yield`` terminator unless there are inits: then
        the caller appends the ``scf.yield`` of the next values)."""
        inits = list(inits)
        body = Block([lower.type] + [v.type for v in inits])
        attrs = {"unsignedCmp": UnitAttr()} if unsigned else {}
        op = cls(operands=[lower, upper, step, *inits], result_types=[v.type for v in inits],
                 attributes=attrs, regions=[Region([body])], loc=loc)
        if not inits:
            body.append(YieldOp.build(loc=loc))
        return op

    # -- accessors -----------------------------------------------------------------------------
    @property
    def lower_bound(self) -> Value:
        return self.operands[0]

    @property
    def upper_bound(self) -> Value:
        return self.operands[1]

    @property
    def step(self) -> Value:
        return self.operands[2]

    @property
    def inits(self) -> tuple[Value, ...]:
        return self.operands[3:]

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def induction_var(self) -> Value:
        return self.body.args[0]

    @property
    def region_iter_args(self) -> list[Value]:
        return self.body.args[1:]

    @property
    def yield_op(self) -> YieldOp:
        return self.body.ops[-1]

    @property
    def is_unsigned(self) -> bool:
        return "unsignedCmp" in self.attributes

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name) -> "ForOp":
        unsigned = p.optional_keyword("unsigned")
        iv = _use(p)
        p.expect("=")
        lb = _use(p)
        _keyword(p, cls.OP_NAME, "to")
        ub = _use(p)
        _keyword(p, cls.OP_NAME, "step")
        step = _use(p)
        arg_names: list = []
        init_uses: list = []
        result_types: list[Type] = []
        if p.optional_keyword("iter_args"):
            arg_names, init_uses = _parse_assignments(p)
            p.expect("->")
            result_types = p.parse_result_types()
        if len(arg_names) != len(result_types):
            raise _custom_error(cls.OP_NAME, "mismatch in number of loop-carried values and "
                                "defined values", loc)
        t: Type = index
        if p.optional(":"):
            t = p.parse_type()
        body = Block([t] + result_types)
        entry = [(iv[0], body.args[0])] + [(n, a) for (n, _), a in zip(arg_names, body.args[1:])]
        region = p.parse_region(entry_args=entry)
        _ensure_terminator(region, _yield(loc))
        # the operands are resolved after the region, as MLIR's ForOp::parse does: a bound
        # naming the induction variable or a value of the body is then an undeclared name
        operands = [_resolve(p, u, t) for u in (lb, ub, step)]
        operands += [_resolve(p, u, rt) for u, rt in zip(init_uses, result_types)]
        attrs = p.parse_optional_attr_dict()
        if unsigned:
            attrs["unsignedCmp"] = UnitAttr()
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.for ")
        if self.is_unsigned:
            p.print("unsigned ")
        p.print(f"{p.value_name(self.induction_var)} = {p.value_name(self.lower_bound)} to "
                f"{p.value_name(self.upper_bound)} step {p.value_name(self.step)}")
        if self.inits:
            p.print(" iter_args(" + ", ".join(
                f"{p.value_name(a)} = {p.value_name(v)}"
                for a, v in zip(self.region_iter_args, self.inits)) + ")")
            p.print(" -> (" + ", ".join(p.type_str(v.type) for v in self.inits) + ")")
        p.print(" ")
        t = self.induction_var.type
        if not isinstance(t, IndexType):
            p.print(f" : {p.type_str(t)} ")
        p.print_region(self.regions[0], print_block_terminators=bool(self.inits))
        p.print_attr_dict(self.attributes, elide=("unsignedCmp",))

    # -- verification --------------------------------------------------------------------------
    def verify_op(self) -> None:
        if self.num_operands < 3:
            raise self.error(f"expected 3 or more operands, but found {self.num_operands}")
        for k in range(3):
            t = self.operands[k].type
            if not _is_int_or_index(t):
                raise self.error(f"operand #{k} must be signless integer or index, but got '{t}'")
        if not self.lower_bound.type == self.upper_bound.type == self.step.type:
            raise self.error("failed to verify that all of {lowerBound, upperBound, step} have "
                             "same type")
        if len(self.regions) != 1:
            raise self.error("requires one region")
        _check_single_block(self, 0, "region")
        if len(self.inits) != len(self.results):
            raise self.error("mismatch in number of loop-carried values and defined values")
        # LoopLikeOpInterface
        body = self.body
        iter_args = body.args[1:]
        if len(self.inits) != len(iter_args):
            raise self.error(f"different number of inits and region iter_args: "
                             f"{len(self.inits)} != {len(iter_args)}")
        term = body.ops[-1] if body.ops else None
        # MLIR's getYieldedValues: empty when the yield passes nothing, and then not checked
        yielded = term.operands if term is not None and term.name == "scf.yield" else []
        if yielded and len(yielded) != len(iter_args):
            raise self.error(f"different number of region iter_args and yielded values: "
                             f"{len(iter_args)} != {len(yielded)}")
        for k, (init, arg) in enumerate(zip(self.inits, iter_args)):
            if init.type != arg.type:
                raise self.error(f"{k}-th init and {k}-th region iter_arg have different type: "
                                 f"'{init.type}' != '{arg.type}'")
        for k, (arg, v) in enumerate(zip(iter_args, yielded)):
            if arg.type != v.type:
                raise self.error(f"{k}-th region iter_arg and {k}-th yielded value have "
                                 f"different type: '{arg.type}' != '{v.type}'")
        for k, (arg, res) in enumerate(zip(iter_args, self.results)):
            if arg.type != res.type:
                raise self.error(f"{k}-th region iter_arg and {k}-th loop result have different "
                                 f"type: '{arg.type}' != '{res.type}'")

    def verify_regions(self) -> None:
        body = self.body
        term = _terminator(self, body, "scf.yield")
        if not body.args or body.args[0].type != self.lower_bound.type:
            raise self.error("expected induction variable to be same type as bounds and step")
        iter_args = body.args[1:]
        if len(iter_args) != len(self.results):
            raise self.error("mismatch in number of basic block args and defined values")
        for k, (init, arg, res) in enumerate(zip(self.inits, iter_args, self.results)):
            if init.type != res.type:
                raise self.error(f"types mismatch between {k}th iter operand and defined value")
            if arg.type != res.type:
                raise self.error(f"types mismatch between {k}th iter region arg and defined "
                                 f"value")
        _check_edge(self, "parent", "Region #0", self.inits, iter_args)
        _check_edge(self, "Operation scf.yield", "Region #0", term.operands, iter_args)
        _check_edge(self, "Operation scf.yield", "parent", term.operands, self.results)


# ---------------------------------------------------------------------------------------------
# scf.if


@register_op
class IfOp(Operation):
    """``scf.if %cond [-> (T)] { ... } [else { ... }]``.

    The op always has two regions; the else region is empty (no block) when absent.
    """

    OP_NAME = "scf.if"

    @classmethod
    def build(cls, condition: Value, result_types: Sequence[Type] = (), with_else: bool = False,
              loc=None) -> "IfOp":
        """An ``scf.if`` with an empty then block (and else block when ``with_else``); the blocks
        get an empty ``scf.yield`` when the op has no results."""
        then_region = Region([Block()])
        else_region = Region([Block()]) if with_else else Region()
        op = cls(operands=[condition], result_types=list(result_types),
                 regions=[then_region, else_region], loc=loc)
        if not result_types:
            for r in op.regions:
                for b in r.blocks:
                    b.append(YieldOp.build(loc=loc))
        return op

    @property
    def condition(self) -> Value:
        return self.operands[0]

    @property
    def then_block(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def has_else(self) -> bool:
        return not self.regions[1].empty

    @property
    def else_block(self) -> Optional[Block]:
        return self.regions[1].blocks[0] if self.has_else else None

    @classmethod
    def parse_custom(cls, p, loc, name) -> "IfOp":
        cond = _resolve(p, _use(p), i1)
        result_types = p.parse_result_types() if p.optional("->") else []
        then_region = p.parse_region()
        _ensure_terminator(then_region, _yield(loc))
        else_region = Region()
        if p.optional_keyword("else"):
            else_region = p.parse_region()
            _ensure_terminator(else_region, _yield(loc))
        attrs = p.parse_optional_attr_dict()
        return cls(operands=[cond], result_types=result_types, attributes=attrs,
                   regions=[then_region, else_region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.if ")
        p.print_operand(self.condition)
        if self.results:
            p.print(" -> (" + ", ".join(p.type_str(t) for t in self.result_types) + ")")
        p.print(" ")
        terms = bool(self.results)
        p.print_region(self.regions[0], print_block_terminators=terms)
        if self.has_else:
            p.print(" else ")
            p.print_region(self.regions[1], print_block_terminators=terms)
        p.print_attr_dict(self.attributes)

    def verify_op(self) -> None:
        if self.num_operands != 1:
            raise self.error(f"expected 1 operands, but found {self.num_operands}")
        t = self.condition.type
        if t != i1:
            raise self.error(f"operand #0 must be 1-bit signless integer, but got '{t}'")
        if len(self.regions) != 2:
            raise self.error("expected 2 regions")
        for k, r in enumerate(self.regions):
            if len(r.blocks) > 1:
                raise self.error(f"expects region #{k} to have 0 or 1 blocks")
        for k, r in enumerate(self.regions):
            if r.blocks and r.blocks[0].args:
                raise self.error(f"region #{k} should have no arguments")
        _check_single_block(self, 0, "thenRegion")
        if self.results and not self.has_else:
            raise self.error("must have an else block if defining values")

    def verify_regions(self) -> None:
        for r in self.regions:
            if r.blocks:
                term = _terminator(self, r.blocks[0], "scf.yield")
                _check_edge(self, "Operation scf.yield", "parent", term.operands, self.results)


# ---------------------------------------------------------------------------------------------
# scf.parallel / scf.reduce / scf.reduce.return


@register_op
class ReduceReturnOp(Operation):
    """``scf.reduce.return %r : f32``: the combined value of one reduction region."""

    OP_NAME = "scf.reduce.return"

    @classmethod
    def build(cls, value: Value, loc=None) -> "ReduceReturnOp":
        return cls(operands=[value], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ReduceReturnOp":
        use = _use(p)
        attrs = p.parse_optional_attr_dict()
        t = p.parse_colon_type()
        return cls(operands=[_resolve(p, use, t)], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.reduce.return ")
        p.print_operand(self.operands[0])
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.operands[0].type))

    def verify_op(self) -> None:
        _check_parent(self, ("scf.reduce",))
        if self.num_operands != 1:
            raise self.error(f"expected 1 operands, but found {self.num_operands}")
        args = self.parent.args
        if args and args[0].type != self.operands[0].type:
            raise self.error(f"must have type '{args[0].type}' (the type of the reduction "
                             f"inputs)")


@register_op
class ReduceOp(Operation):
    """``scf.reduce(%a, %b : f32, i32) { ^bb0(%x: f32, %y: f32): ... } , { ... }``: ends the
    body of ``scf.parallel``; region ``k`` combines the running value of the ``k``-th
    reduction (its first argument) with operand ``k`` (its second)."""

    OP_NAME = "scf.reduce"

    @classmethod
    def build(cls, operands: Sequence[Value] = (), loc=None) -> "ReduceOp":
        """``scf.reduce`` with one region per operand, each an empty block with the two
        arguments (the caller adds the combination and its ``scf.reduce.return``)."""
        regions = [Region([Block([v.type, v.type])]) for v in operands]
        return cls(operands=list(operands), regions=regions, loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ReduceOp":
        operands: list[Value] = []
        if p.peek("("):
            p.expect("(")
            uses = [_use(p)]
            while p.optional(","):
                uses.append(_use(p))
            p.expect(":")
            types = p.parse_type_list()
            p.expect(")")
            if len(types) != len(uses):
                raise _custom_error(cls.OP_NAME, f"number of operands and types do not match: "
                                    f"got {len(uses)} operands and {len(types)} types",
                                    p.loc(uses[0][1]))
            operands = [_resolve(p, u, t) for u, t in zip(uses, types)]
        regions = []
        if p.peek("{"):
            regions.append(p.parse_region())
            while p.optional(","):
                regions.append(p.parse_region())
        attrs = p.parse_optional_attr_dict()
        return cls(operands=operands, attributes=attrs, regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.reduce")
        if self.operands:
            p.print("(")
            p.print_operands(self.operands)
            p.print(" : ")
            p.print_types(v.type for v in self.operands)
            p.print(")")
        p.print(" ")
        for k, r in enumerate(self.regions):
            if k:
                p.print(", ")
            p.print_region(r, print_entry_args=True, print_block_terminators=True)
        p.print_attr_dict(self.attributes)

    def verify_op(self) -> None:
        _check_parent(self, ("scf.parallel",))
        if self.results:
            raise self.error("requires zero results")
        for k, r in enumerate(self.regions):
            if len(r.blocks) != 1:
                raise self.error(f"region #{k} ('reductions') failed to verify constraint: "
                                 f"region with 1 blocks")

    def verify_regions(self) -> None:
        if len(self.regions) != self.num_operands:
            raise self.error(f"expects one reduction region per operand: {self.num_operands} "
                             f"operands, {len(self.regions)} regions")
        for k, (v, r) in enumerate(zip(self.operands, self.regions)):
            block = r.blocks[0]
            if not block.ops:
                raise self.error(f"{k}-th reduction has an empty body")
            if len(block.args) != 2 or any(a.type != v.type for a in block.args):
                raise self.error(f"expected two block arguments with type '{v.type}' in the "
                                 f"{k}-th reduction region")
            if block.ops[-1].name != "scf.reduce.return":
                raise self.error("reduction bodies must be terminated with an 'scf.reduce.return' "
                                 "op")


@register_op
class ParallelOp(Operation):
    """``scf.parallel (%i, %j) = (%lb0, %lb1) to (%ub0, %ub1) step (%s0, %s1)
    [init (%x) -> T] { ... scf.reduce ... }``: a multi-dimensional loop whose iterations may
    run in any order; its results are the reductions of ``scf.reduce`` started from the inits.

    Operands: the lower bounds, upper bounds and steps (one ``index`` per dimension), then the
    inits; ``operandSegmentSizes`` is recomputed for the generic form.
    """

    OP_NAME = "scf.parallel"

    @classmethod
    def build(cls, lowers: Sequence[Value], uppers: Sequence[Value], steps: Sequence[Value],
              inits: Sequence[Value] = (), loc=None) -> "ParallelOp":
        """A loop with an empty body (an empty ``scf.reduce`` unless there are inits: then the
        caller appends the ``scf.reduce``)."""
        n = len(lowers)
        if not n == len(uppers) == len(steps):
            raise ValueError("scf.parallel needs as many lower bounds, upper bounds and steps")
        inits = list(inits)
        body = Block([index] * n)
        op = cls(operands=[*lowers, *uppers, *steps, *inits],
                 result_types=[v.type for v in inits], regions=[Region([body])], loc=loc)
        if not inits:
            body.append(ReduceOp.build(loc=loc))
        return op

    # -- accessors -----------------------------------------------------------------------------
    @property
    def num_dims(self) -> int:
        return (self.num_operands - len(self.results)) // 3

    @property
    def lower_bounds(self) -> tuple[Value, ...]:
        return self.operands[:self.num_dims]

    @property
    def upper_bounds(self) -> tuple[Value, ...]:
        n = self.num_dims
        return self.operands[n:2 * n]

    @property
    def steps(self) -> tuple[Value, ...]:
        n = self.num_dims
        return self.operands[2 * n:3 * n]

    @property
    def inits(self) -> tuple[Value, ...]:
        return self.operands[3 * self.num_dims:]

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def induction_vars(self) -> list[Value]:
        return self.body.args

    @property
    def reduce_op(self) -> ReduceOp:
        return self.body.ops[-1]

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name) -> "ParallelOp":
        ivs = _parse_uses(p)
        p.expect("=")
        lists = []
        for k, kw in enumerate(("", "to", "step")):
            if kw:
                _keyword(p, cls.OP_NAME, kw)
            p.skip_ws()
            start = p.pos
            uses = _parse_uses(p)
            if len(uses) != len(ivs):
                raise _custom_error(cls.OP_NAME, f"expected {len(ivs)} operands", p.loc(start))
            lists.append(uses)
        init_uses = []
        if p.optional_keyword("init"):
            init_uses = _parse_uses(p)
        result_types = p.parse_result_types() if p.optional("->") else []
        if len(init_uses) != len(result_types):
            raise _custom_error(cls.OP_NAME, f"{len(init_uses)} operands present, but expected "
                                f"{len(result_types)}", loc)
        operands = [_resolve(p, u, index) for uses in lists for u in uses]
        operands += [_resolve(p, u, t) for u, t in zip(init_uses, result_types)]
        body = Block([index] * len(ivs))
        region = p.parse_region(entry_args=[(n, a) for (n, _), a in zip(ivs, body.args)])
        _ensure_terminator(region, lambda: ReduceOp.build(loc=loc))
        attrs = p.parse_optional_attr_dict()
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions) -> "ParallelOp":
        attrs = dict(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        sizes = tuple(seg.values) if isinstance(seg, DenseArrayAttr) else (0, 0, 0, 0)
        if len(sizes) != 4 or sum(sizes) != len(operands):
            raise ParseError(f"'{cls.OP_NAME}' op operand count ({len(operands)}) does not match "
                             f"with the total size ({sum(sizes)}) specified in attribute "
                             f"'operandSegmentSizes'", loc)
        if not sizes[0] == sizes[1] == sizes[2]:
            raise ParseError(f"'{cls.OP_NAME}' op expects as many lower bounds, upper bounds and "
                             f"steps, got {sizes[0]}, {sizes[1]} and {sizes[2]}", loc)
        if sizes[3] != len(result_types):
            raise ParseError(f"'{cls.OP_NAME}' op expects number of results: "
                             f"{len(result_types)} to be the same as number of initial values: "
                             f"{sizes[3]}", loc)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def generic_attributes(self) -> dict:
        attrs = dict(self.attributes)
        n = self.num_dims
        attrs["operandSegmentSizes"] = DenseArrayAttr(IntegerType(32),
                                                      (n, n, n, len(self.inits)))
        return dict(sorted(attrs.items()))

    def print_custom(self, p) -> None:
        def group(values):
            return "(" + ", ".join(p.value_name(v) for v in values) + ")"
        p.print(f"scf.parallel {group(self.induction_vars)} = {group(self.lower_bounds)} to "
                f"{group(self.upper_bounds)} step {group(self.steps)}")
        if self.inits:
            p.print(f" init {group(self.inits)}")
        _print_arrow_types(p, self.result_types)
        p.print(" ")
        p.print_region(self.regions[0], print_block_terminators=True)
        p.print_attr_dict(self.attributes, elide=("operandSegmentSizes",))

    # -- verification --------------------------------------------------------------------------
    def verify_op(self) -> None:
        bounds = self.num_operands - len(self.results)
        if bounds < 0 or bounds % 3:
            raise self.error(f"expects as many lower bounds, upper bounds and steps, and one "
                             f"init per result ({self.num_operands} operands, "
                             f"{len(self.results)} results)")
        n = self.num_dims
        for k in range(3 * n):
            t = self.operands[k].type
            if not isinstance(t, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{t}'")
        if len(self.regions) != 1:
            raise self.error("requires one region")
        _check_single_block(self, 0, "region")
        if n == 0:
            raise self.error("needs at least one tuple element for lowerBound, upperBound and "
                             "step")
        for s in self.steps:
            c = _constant_int(s)
            if c is not None and c <= 0:
                raise self.error("constant step operand must be positive")
        body = self.body
        if len(body.args) != n:
            raise self.error(f"expects the same number of induction variables: {len(body.args)} "
                             f"as bound and step values: {n}")
        if any(not isinstance(a.type, IndexType) for a in body.args):
            raise self.error("expects arguments for the induction variable to be of index type")
        term = body.ops[-1] if body.ops else None
        if term is None or term.name != "scf.reduce":
            raise self.error("expects body to terminate with 'scf.reduce'")
        if len(self.results) != len(term.regions):
            raise self.error(f"expects number of results: {len(self.results)} to be the same as "
                             f"number of reductions: {len(term.regions)}")
        for k, (res, v) in enumerate(zip(self.results, term.operands)):
            if res.type != v.type:
                raise term.error(f"expects type of {k}-th reduction operand: '{v.type}' to be "
                                 f"the same as the {k}-th result type: '{res.type}'")
        for k, (res, v) in enumerate(zip(self.results, self.inits)):
            if res.type != v.type:
                raise self.error(f"expects type of {k}-th initial value: '{v.type}' to be the "
                                 f"same as the {k}-th result type: '{res.type}'")


# ---------------------------------------------------------------------------------------------
# scf.while / scf.condition


@register_op
class ConditionOp(Operation):
    """``scf.condition(%c) %a, %b : index, f32``: ends the before region of ``scf.while``;
    when ``%c`` holds the values go to the after region, else they are the loop's results."""

    OP_NAME = "scf.condition"

    @classmethod
    def build(cls, condition: Value, args: Sequence[Value] = (), loc=None) -> "ConditionOp":
        return cls(operands=[condition, *args], loc=loc)

    @property
    def condition(self) -> Value:
        return self.operands[0]

    @property
    def args(self) -> tuple[Value, ...]:
        return self.operands[1:]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ConditionOp":
        p.expect("(")
        cond = _resolve(p, _use(p), i1)
        p.expect(")")
        attrs = p.parse_optional_attr_dict()
        args = _parse_typed_operands(p, cls.OP_NAME)
        return cls(operands=[cond, *args], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.condition(")
        p.print_operand(self.condition)
        p.print(")")
        p.print_attr_dict(self.attributes)
        _print_typed_operands(p, self.args)

    def verify_op(self) -> None:
        _check_parent(self, ("scf.while",))
        if not self.operands:
            raise self.error("expected 1 or more operands, but found 0")
        t = self.condition.type
        if t != i1:
            raise self.error(f"operand #0 must be 1-bit signless integer, but got '{t}'")


@register_op
class WhileOp(Operation):
    """``scf.while (%a = %init) : (T) -> (R) { before } do { ^bb0(%r: R): after }``: the before
    region computes the condition and the values passed on (``scf.condition``); the after
    region, run while it holds, yields the next values of the before region's arguments."""

    OP_NAME = "scf.while"

    @classmethod
    def build(cls, inits: Sequence[Value], result_types: Sequence[Type], loc=None) -> "WhileOp":
        """Empty before and after blocks with their arguments; the caller fills them (and
        their ``scf.condition``/``scf.yield``)."""
        inits = list(inits)
        before = Block([v.type for v in inits])
        after = Block(list(result_types))
        return cls(operands=inits, result_types=list(result_types),
                   regions=[Region([before]), Region([after])], loc=loc)

    @property
    def inits(self) -> tuple[Value, ...]:
        return self.operands

    @property
    def before_block(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def after_block(self) -> Block:
        return self.regions[1].blocks[0]

    @property
    def condition_op(self) -> ConditionOp:
        return self.before_block.ops[-1]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "WhileOp":
        names: list = []
        uses: list = []
        if p.peek("("):
            names, uses = _parse_assignments(p)
        p.skip_ws()
        type_at = p.pos
        p.expect(":")
        p.skip_ws()
        fstart = p.pos
        ftype = p.parse_type()
        if not isinstance(ftype, FunctionType):
            raise _custom_error(cls.OP_NAME, f"expected a function type, found '{ftype}'",
                                p.loc(fstart))
        if len(ftype.inputs) != len(uses):
            raise _custom_error(cls.OP_NAME, f"expected as many input types as operands "
                                f"(expected {len(uses)} got {len(ftype.inputs)})",
                                p.loc(type_at))
        inits = [_resolve(p, u, t) for u, t in zip(uses, ftype.inputs)]
        before = Block(list(ftype.inputs))
        before_region = p.parse_region(entry_args=[(n, a) for (n, _), a in zip(names,
                                                                                before.args)])
        _keyword(p, cls.OP_NAME, "do")
        after_region = p.parse_region(allow_empty=True)
        attrs = p.parse_optional_attr_dict_with_keyword()
        return cls(operands=inits, result_types=list(ftype.results), attributes=attrs,
                   regions=[before_region, after_region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.while")
        if self.inits:
            p.print(" (" + ", ".join(f"{p.value_name(a)} = {p.value_name(v)}"
                                     for a, v in zip(self.before_block.args, self.inits)) + ")")
        ftype = FunctionType(tuple(v.type for v in self.inits), tuple(self.result_types))
        p.print(" : " + p.type_str(ftype) + " ")
        p.print_region(self.regions[0], print_block_terminators=True)
        p.print(" do ")
        p.print_region(self.regions[1], print_entry_args=True, print_block_terminators=True)
        p.print_attr_dict(self.attributes, with_keyword=True)

    def verify_op(self) -> None:
        if len(self.regions) != 2:
            raise self.error("expected 2 regions")
        _check_single_block(self, 0, "before")
        _check_single_block(self, 1, "after")
        if not self.before_block.ops or not self.after_block.ops:
            raise self.error("expects a non-empty block")
        for which, block, expected in (("before", self.before_block, "scf.condition"),
                                       ("after", self.after_block, "scf.yield")):
            if not block.ops or block.ops[-1].name != expected:
                raise self.error(f"expects the '{which}' region to terminate with "
                                 f"'{expected}'")

    def verify_regions(self) -> None:
        before, after = self.before_block, self.after_block
        cond = before.ops[-1]
        yield_ = after.ops[-1]
        _check_edge(self, "parent", "Region #0", self.inits, before.args)
        _check_edge(self, "Operation scf.condition", "parent", cond.operands[1:], self.results)
        _check_edge(self, "Operation scf.condition", "Region #1", cond.operands[1:], after.args)
        _check_edge(self, "Operation scf.yield", "Region #0", yield_.operands, before.args)


# ---------------------------------------------------------------------------------------------
# scf.execute_region / scf.index_switch


@register_op
class ExecuteRegionOp(Operation):
    """``scf.execute_region [-> T] [no_inline] { ... scf.yield ... }``: runs its region once;
    the values its ``scf.yield`` passes are the results."""

    OP_NAME = "scf.execute_region"

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ExecuteRegionOp":
        result_types = p.parse_result_types() if p.optional("->") else []
        no_inline = p.optional_keyword("no_inline")
        region = p.parse_region(allow_empty=True)
        attrs = p.parse_optional_attr_dict()
        if no_inline:
            attrs["no_inline"] = UnitAttr()
        return cls(result_types=result_types, attributes=attrs, regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.execute_region")
        _print_arrow_types(p, self.result_types)
        if "no_inline" in self.attributes:
            p.print(" no_inline")
        p.print(" ")
        p.print_region(self.regions[0], print_block_terminators=True)
        p.print_attr_dict(self.attributes, elide=("no_inline",))

    def verify_op(self) -> None:
        if len(self.regions) != 1:
            raise self.error("requires one region")
        if self.regions[0].empty:
            raise self.error("region needs to have at least one block")
        if self.regions[0].blocks[0].args:
            raise self.error("region cannot have any arguments")

    def verify_regions(self) -> None:
        for block in self.regions[0].blocks:
            last = block.ops[-1] if block.ops else None
            if last is None or last.name not in _TERMINATOR_NAMES and \
                    last.name not in ("cf.br", "cf.cond_br", "cf.switch"):
                found = f"'{last.name}'" if last is not None else "nothing"
                raise self.error(f"expects its blocks to end with a terminator, found {found}")
            if last.name == "scf.yield":
                _check_edge(self, "Operation scf.yield", "parent", last.operands, self.results)


@register_op
class IndexSwitchOp(Operation):
    """``scf.index_switch %x [-> T] case 2 { ... } ... default { ... }``: runs the region of
    the case equal to ``%x`` (an ``index``), or the default one.

    Regions: the default region first, then one per case (the ``cases`` attribute).
    """

    OP_NAME = "scf.index_switch"

    @property
    def arg(self) -> Value:
        return self.operands[0]

    @property
    def cases(self) -> tuple[int, ...]:
        a = self.attributes.get("cases")
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    @property
    def default_region(self) -> Region:
        return self.regions[0]

    @property
    def case_regions(self) -> list[Region]:
        return self.regions[1:]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "IndexSwitchOp":
        arg = _resolve(p, _use(p), index)
        attrs = p.parse_optional_attr_dict()
        result_types = p.parse_type_list() if p.optional("->") else []
        cases: list[int] = []
        regions: list[Region] = []
        while p.optional_keyword("case"):
            p.skip_ws()
            at = p.pos
            value = p.optional_integer(cls.OP_NAME)
            if value is None:
                raise _custom_error(cls.OP_NAME, "expected integer value", p.loc(at))
            cases.append(value)
            regions.append(p.parse_region(allow_empty=True))
        _keyword(p, cls.OP_NAME, "default")
        default = p.parse_region(allow_empty=True)
        _ensure_terminator(default, _yield(loc))
        attrs["cases"] = DenseArrayAttr(i64, tuple(cases))
        return cls(operands=[arg], result_types=result_types, attributes=attrs,
                   regions=[default, *regions], loc=loc)

    def print_custom(self, p) -> None:
        p.print("scf.index_switch ")
        p.print_operand(self.arg)
        p.print_attr_dict(self.attributes, elide=("cases",))
        if self.results:
            p.print(" -> ")
            p.print_types(self.result_types)
        p.print(" ")
        for value, region in zip(self.cases, self.case_regions):
            p.newline()
            p.print(f"case {value} ")
            p.print_region(region, print_block_terminators=True)
        p.newline()
        p.print("default ")
        default = self.default_region
        term = default.blocks[0].ops[-1] if default.blocks and default.blocks[0].ops else None
        show = term is None or bool(term.operands or term.attributes or term.results)
        p.print_region(default, print_block_terminators=show)

    def verify_op(self) -> None:
        if self.num_operands != 1 or not isinstance(self.arg.type, IndexType):
            t = self.operands[0].type if self.operands else None
            raise self.error(f"operand #0 must be index, but got '{t}'")
        cases = self.attributes.get("cases")
        if not isinstance(cases, DenseArrayAttr):
            raise self.error("requires attribute 'cases'")
        if not self.regions:
            raise self.error("requires at least 1 region")
        _check_single_block(self, 0, "defaultRegion")
        for k in range(1, len(self.regions)):
            if len(self.regions[k].blocks) != 1:
                raise self.error(f"region #{k} ('caseRegions') failed to verify constraint: "
                                 f"region with 1 blocks")
        if len(self.cases) != len(self.case_regions):
            raise self.error(f"has {len(self.case_regions)} case regions but {len(self.cases)} "
                             f"case values")
        seen: set[int] = set()
        for v in self.cases:
            if v in seen:
                raise self.error(f"has duplicate case value: {v}")
            seen.add(v)
        named = [(self.default_region, "default region")] + \
            [(r, f"case region #{k}") for k, r in enumerate(self.case_regions)]
        for region, what in named:
            block = region.blocks[0]
            last = block.ops[-1] if block.ops else None
            if last is None or last.name != "scf.yield":
                raise self.error(f"expected region to end with scf.yield, but got "
                                 f"{last.name if last is not None else 'nothing'}")
            if last.num_operands != len(self.results):
                raise self.error(f"expected each region to return {len(self.results)} values, "
                                 f"but {what} returns {last.num_operands}")
            for k, (res, v) in enumerate(zip(self.results, last.operands)):
                if res.type != v.type:
                    raise self.error(f"expected result #{k} of each region to be "
                                     f"'{res.type}'")
