"""The op graph: SSA values with use lists, operations, blocks and regions (MLIR's IR core).

Unlike the math layer (types, affine maps) this part is mutable, as in MLIR and xDSL.
Every op kind is a subclass of :class:`Operation` registered under its full name
(``affine.for``); an op whose name is not registered is kept as a plain ``Operation`` and
printed in generic form, so unknown dialects round-trip.

Op classes may define:
  * ``parse_custom(parser, loc, name)`` (classmethod): parse the custom assembly form;
  * ``print_custom(printer)``: print it (ops without one print in generic form);
  * ``verify_op()``: op-specific checks, raising :class:`VerifyError` via ``self.error(...)``;
  * ``verify_regions()``: checks that look into the op's regions (the types its terminators
    yield), run after the nested ops are verified;
  * ``result_name_hint()``: the name mlir-opt gives the first result (``c0``, ``cst``, ``alloc``).
"""

from __future__ import annotations

from typing import Callable, ClassVar, Iterator, Optional, Sequence

from .attributes import Attribute
from .diagnostics import Location, VerifyError
from .types import Type

# Ops with MLIR's ``IsTerminator`` trait: each ends a block, and only there.
TERMINATOR_OPS = frozenset({
    "func.return", "affine.yield", "scf.yield", "scf.condition", "scf.reduce",
    "scf.reduce.return", "linalg.yield", "memref.alloca_scope.return", "vector.yield",
    "cf.br", "cf.cond_br", "cf.switch", "scf.forall.in_parallel",
})

OP_REGISTRY: dict[str, type["Operation"]] = {}


def register_op(cls: type["Operation"]) -> type["Operation"]:
    """Class decorator: make ``cls`` the class of ops named ``cls.OP_NAME``."""
    OP_REGISTRY[cls.OP_NAME] = cls
    return cls


class Use:
    __slots__ = ("op", "index")

    def __init__(self, op: "Operation", index: int):
        self.op = op
        self.index = index


class Value:
    """An SSA value; ``uses`` lists the (op, operand index) pairs that read it.

    Uses are kept in a dict keyed by (op identity, operand index) so that rewiring one operand
    is O(1): a loop IV of an unrolled register tile has thousands of uses.
    """

    __slots__ = ("type", "_uses", "__weakref__")

    def __init__(self, type_: Type):
        self.type = type_
        self._uses: dict[tuple[int, int], Use] = {}

    @property
    def uses(self) -> list[Use]:
        return list(self._uses.values())

    @property
    def owner_block(self) -> Optional["Block"]:
        raise NotImplementedError

    @property
    def defining_op(self) -> Optional["Operation"]:
        return None

    def replace_all_uses_with(self, new: "Value") -> None:
        for use in list(self.uses):
            use.op.set_operand(use.index, new)

    def has_uses(self) -> bool:
        return bool(self._uses)


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type_: Type, op: "Operation", index: int):
        super().__init__(type_)
        self.op = op
        self.index = index

    @property
    def defining_op(self) -> "Operation":
        return self.op

    @property
    def owner_block(self) -> Optional["Block"]:
        return self.op.parent


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type_: Type, block: "Block", index: int):
        super().__init__(type_)
        self.block = block
        self.index = index

    @property
    def owner_block(self) -> "Block":
        return self.block


def _nested_ops(op: "Operation") -> Iterator["Operation"]:
    """The ops directly in ``op``'s blocks, each block's list read when it is reached."""
    for region in op.regions:
        for block in region.blocks:
            yield from list(block.ops)


class Operation:
    """A generic operation; subclasses give ops their custom syntax, accessors and rules."""

    OP_NAME: ClassVar[Optional[str]] = None

    def __init__(self, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attributes: Optional[dict[str, Attribute]] = None,
                 regions: int | Sequence["Region"] = 0, loc: Optional[Location] = None,
                 name: Optional[str] = None, successors: Sequence["Block"] = ()):
        self._name = name if name is not None else self.OP_NAME
        if self._name is None:
            raise ValueError("an op needs a name")
        self._operands: list[Value] = []
        self.results: list[OpResult] = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.regions: list[Region] = []
        self.successors: list[Block] = list(successors)   # blocks a terminator branches to
        self.parent: Optional[Block] = None
        self.loc = loc
        for v in operands:
            self._append_operand(v)
        if isinstance(regions, int):
            for _ in range(regions):
                self.add_region(Region())
        else:
            for r in regions:
                self.add_region(r)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def create(cls, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
               attributes: Optional[dict[str, Attribute]] = None,
               regions: int | Sequence["Region"] = 0, loc: Optional[Location] = None,
               successors: Sequence["Block"] = ()) -> "Operation":
        """Build an op by name with the registered class (generic ``Operation`` if unknown)."""
        klass = OP_REGISTRY.get(name)
        op = Operation.__new__(klass) if klass is not None else Operation.__new__(Operation)
        Operation.__init__(op, operands, result_types, attributes, regions, loc, name=name,
                           successors=successors)
        return op

    @property
    def name(self) -> str:
        return self._name

    @property
    def dialect(self) -> str:
        return self._name.split(".", 1)[0]

    # -- operands ------------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def operand(self, i: int) -> Value:
        return self._operands[i]

    def _append_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"operand of {self._name} must be a Value, got {type(v).__name__}")
        i = len(self._operands)
        v._uses[(id(self), i)] = Use(self, i)
        self._operands.append(v)

    def _drop_use(self, i: int) -> None:
        self._operands[i]._uses.pop((id(self), i), None)

    def set_operand(self, i: int, v: Value) -> None:
        self._drop_use(i)
        self._operands[i] = v
        v._uses[(id(self), i)] = Use(self, i)

    def set_operands(self, values: Sequence[Value]) -> None:
        for i in range(len(self._operands)):
            self._drop_use(i)
        self._operands = []
        for v in values:
            self._append_operand(v)

    def drop_all_operand_uses(self) -> None:
        for i in range(len(self._operands)):
            self._drop_use(i)

    # -- results -------------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise ValueError(f"{self._name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def result_types(self) -> tuple[Type, ...]:
        return tuple(r.type for r in self.results)

    # -- regions -------------------------------------------------------------------------------
    def add_region(self, region: "Region") -> "Region":
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def parent_op(self) -> Optional["Operation"]:
        return self.parent.parent_op if self.parent is not None else None

    def ancestors(self) -> Iterator["Operation"]:
        op = self.parent_op
        while op is not None:
            yield op
            op = op.parent_op

    def is_proper_ancestor_of(self, other: "Operation") -> bool:
        return any(a is self for a in other.ancestors())

    def walk(self, pre_order: bool = True) -> Iterator["Operation"]:
        """All ops nested in this one, including itself (pre-order by default)."""
        if not pre_order:
            yield from self._walk_post_order()
            return
        yield self
        if not self.regions:
            return
        # one generator per level on a stack, not a chain of ``yield from`` as deep as the
        # nesting (each op passed up through every level); the ops of a block are read when
        # the walk reaches it, as before
        stack = [_nested_ops(self)]
        while stack:
            for op in stack[-1]:
                yield op
                if op.regions:
                    stack.append(_nested_ops(op))
                    break
            else:
                stack.pop()

    def _walk_post_order(self) -> Iterator["Operation"]:
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op._walk_post_order()
        yield self

    # -- placement -----------------------------------------------------------------------------
    def detach(self) -> "Operation":
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None
        return self

    def erase(self) -> None:
        """Remove this op (and everything nested in it); its results must be unused."""
        for r in self.results:
            if r.uses and not all(self.is_proper_ancestor_of(u.op) or u.op is self for u in r.uses):
                raise ValueError(f"erasing {self._name} whose result is still used")
        for op in list(self.walk(pre_order=False)):
            op.drop_all_operand_uses()
        self.detach()

    def move_before(self, other: "Operation") -> None:
        self.detach()
        other.parent.insert_before(other, self)

    def move_after(self, other: "Operation") -> None:
        self.detach()
        other.parent.insert_after(other, self)

    # -- cloning -------------------------------------------------------------------------------
    def clone(self, mapping: Optional[dict[Value, Value]] = None) -> "Operation":
        """Deep copy; operands found in ``mapping`` are remapped and new values are added to it
        (successor blocks too: :meth:`Region.clone` maps each block to its copy)."""
        mapping = {} if mapping is None else mapping
        new = Operation.__new__(type(self))
        # what Operation.__init__ would set, built directly (unrolling clones tens of
        # thousands of ops); subclass-specific python fields are shared
        fields = new.__dict__
        fields.update(self.__dict__)
        fields["attributes"] = dict(self.attributes)
        fields["regions"] = []
        fields["successors"] = [mapping.get(b, b) for b in self.successors]
        fields["parent"] = None
        operands = fields["_operands"] = []
        key = id(new)
        for i, v in enumerate(self._operands):
            v = mapping.get(v, v)
            if not isinstance(v, Value):
                raise TypeError(f"operand of {self._name} must be a Value, got "
                                f"{type(v).__name__}")
            v._uses[(key, i)] = Use(new, i)
            operands.append(v)
        results = fields["results"] = []
        for i, old in enumerate(self.results):
            res = OpResult(old.type, new, i)
            results.append(res)
            mapping[old] = res
        for region in self.regions:
            new.add_region(region.clone(mapping))
        return new

    # -- diagnostics ---------------------------------------------------------------------------
    def error(self, message: str) -> VerifyError:
        """A VerifyError pointing at this op, with the op name as prefix (as MLIR's emitOpError)."""
        return VerifyError(f"'{self._name}' op {message}", self.loc)

    # -- hooks for subclasses ------------------------------------------------------------------
    def verify_op(self) -> None:
        """Op-specific checks (overridden)."""

    def verify_regions(self) -> None:
        """Checks that look into the op's regions, run after the ops nested in it are verified
        (MLIR's ``verifyRegions``; overridden)."""

    def result_name_hint(self) -> Optional[str]:
        return None

    def __repr__(self) -> str:
        return f"<{self._name} at {self.loc}>" if self.loc else f"<{self._name}>"


class Block:
    """A list of ops with block arguments (MLIR's Block)."""

    def __init__(self, arg_types: Sequence[Type] = ()):
        self.args: list[BlockArgument] = [BlockArgument(t, self, i) for i, t in enumerate(arg_types)]
        self.ops: list[Operation] = []
        self.parent: Optional[Region] = None

    @property
    def parent_op(self) -> Optional[Operation]:
        return self.parent.parent if self.parent is not None else None

    def add_arg(self, t: Type) -> BlockArgument:
        a = BlockArgument(t, self, len(self.args))
        self.args.append(a)
        return a

    def append(self, op: Operation) -> Operation:
        assert op.parent is None, "op already in a block"
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        assert op.parent is None, "op already in a block"
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_ops(self, index: int, ops: Sequence[Operation]) -> None:
        """Insert the detached ``ops``, in order, at ``index`` (one splice of the list: a
        fully unrolled register tile's thousands of ops moved one by one cost a search of the
        block each)."""
        for op in ops:
            assert op.parent is None, "op already in a block"
            op.parent = self
        self.ops[index:index] = ops

    def index_of(self, op: Operation) -> int:
        # ops compare by identity (Operation defines no __eq__), so list.index finds the op
        # itself, searching in C: the Python loop this was took 13 s of the 20 a register-tile
        # test spent promoting an unrolled tile's 18,000 ops before their loop
        try:
            return self.ops.index(op)
        except ValueError:
            raise ValueError("op not in block") from None

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.index_of(anchor), op)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.index_of(anchor) + 1, op)

    @property
    def terminator(self) -> Optional[Operation]:
        return self.ops[-1] if self.ops else None

    @property
    def successors(self) -> list["Block"]:
        term = self.terminator
        return list(term.successors) if term is not None else []

    def predecessors(self) -> list["Block"]:
        """The blocks of the region whose terminator branches here, once per edge."""
        if self.parent is None:
            return []
        return [b for b in self.parent.blocks for s in b.successors if s is self]

    @property
    def is_entry(self) -> bool:
        return self.parent is not None and self.parent.blocks[0] is self


class Region:
    """A list of blocks owned by an op (MLIR's Region)."""

    def __init__(self, blocks: Sequence[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Optional[Operation] = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The single block of a single-block region."""
        return self.blocks[0]

    @property
    def empty(self) -> bool:
        return not self.blocks

    def clone(self, mapping: dict[Value, Value]) -> "Region":
        new = Region()
        for b in self.blocks:
            nb = Block([a.type for a in b.args])
            mapping[b] = nb     # for the successors of the terminators cloned below
            for old, arg in zip(b.args, nb.args):
                mapping[old] = arg
            new.add_block(nb)
        for b, nb in zip(self.blocks, new.blocks):
            for op in b.ops:
                nb.append(op.clone(mapping))
        if len(self.blocks) > 1:
            # a value may be used in a block written before the one defining it (blocks need
            # not come in dominance order): such operands were cloned before their definition
            # was, and are mapped now (MLIR's Region::cloneInto remaps after cloning too)
            for b, nb in zip(self.blocks, new.blocks):
                for op, nop in zip(b.ops, nb.ops):
                    for old, cloned in zip(op.walk(), nop.walk()):
                        for i, v in enumerate(old._operands):
                            if cloned._operands[i] is v and v in mapping:
                                cloned.set_operand(i, mapping[v])
        return new


def walk_ops(root: Operation, predicate: Optional[Callable[[Operation], bool]] = None):
    """All ops under ``root`` (pre-order), optionally filtered."""
    for op in root.walk():
        if predicate is None or predicate(op):
            yield op
