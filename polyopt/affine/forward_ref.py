"""Forward references of the parser: a use of ``%x`` read before the op that defines ``%x``
(MLIR's forward-reference placeholders in ``OperationParser``).

In a region of several blocks a value may be used in a block written before the block that
defines it, as long as the defining block dominates the use: mlir-opt-22 itself prints loops
that way after ``--canonicalize`` (the loop body before its header).  The parser stands a
:class:`ForwardRef` in for the value until the definition is read, then replaces its uses.

MLIR resolves an operand against the type its op expects (``resolveOperand(use, type)``);
polyopt's op parsers instead compare the operand's type with the type they expect.  So a
forward reference starts with a :class:`PendingType`, which takes the first type it is
compared with as its own (and sets it on the reference); later comparisons, and the
definition, are checked against that type as MLIR checks them.
"""

from __future__ import annotations

from typing import Optional

from .ir import Value
from .types import Type


class PendingType(Type):
    """The type of a forward reference before any op said what it expects."""

    def __init__(self, ref: "ForwardRef"):
        self.ref = ref
        self.bound: Optional[Type] = None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PendingType):
            return self is other or (self.bound is not None and self.bound == other)
        if not isinstance(other, Type):
            return NotImplemented
        if self.bound is None:
            self.bound = other
            self.ref.type = other
        return self.bound == other

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return id(self)

    def __str__(self) -> str:
        return str(self.bound) if self.bound is not None else "<<type not known yet>>"


class ForwardRef(Value):
    """``%name`` used before its definition; ``offset`` is where it was first used."""

    __slots__ = ("name", "offset")

    def __init__(self, name: str, offset: int):
        super().__init__(None)      # set just below: the type refers back to the reference
        self.type = PendingType(self)
        self.name = name
        self.offset = offset

    @property
    def owner_block(self):
        return None
