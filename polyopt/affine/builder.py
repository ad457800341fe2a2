"""An insertion point and op creation helpers (MLIR's ``OpBuilder``).

    b = Builder.at_end(func.body)            # or Builder.before(op), Builder.after(op)
    c0 = b.create(ConstantOp, 0, index).result
    loop = b.create(AffineForOp.build_constant, 0, 128)
    with b.inside(loop.body):                # insert before the loop's terminator
        ...
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Optional

from .ir import Block, Operation


class Builder:
    def __init__(self, block: Optional[Block] = None, index: Optional[int] = None):
        self.block = block
        self.index = index  # None: append at the end of the block

    # -- insertion points -------------------------------------------------------------------
    @classmethod
    def at_end(cls, block: Block) -> "Builder":
        return cls(block, None)

    @classmethod
    def at_start(cls, block: Block) -> "Builder":
        return cls(block, 0)

    @classmethod
    def before(cls, op: Operation) -> "Builder":
        return cls(op.parent, op.parent.index_of(op))

    @classmethod
    def after(cls, op: Operation) -> "Builder":
        return cls(op.parent, op.parent.index_of(op) + 1)

    @classmethod
    def before_terminator(cls, block: Block) -> "Builder":
        """Before the block's terminator (or at the end when it has none yet)."""
        term = block.terminator
        if term is not None and term.name in ("affine.yield", "func.return"):
            return cls.before(term)
        return cls.at_end(block)

    def set_before(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.index_of(op)

    def set_after(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.index_of(op) + 1

    @contextmanager
    def inside(self, block: Block):
        """Temporarily insert before ``block``'s terminator."""
        saved = (self.block, self.index)
        inner = Builder.before_terminator(block)
        self.block, self.index = inner.block, inner.index
        try:
            yield self
        finally:
            self.block, self.index = saved

    # -- creation ---------------------------------------------------------------------------
    def insert(self, op: Operation) -> Operation:
        if self.block is None:
            raise ValueError("builder has no insertion point")
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    def create(self, build: type[Operation] | Callable[..., Operation], *args, **kwargs):
        """``build`` is an op class (its ``build`` classmethod is used) or a build function."""
        factory = build.build if isinstance(build, type) else build
        return self.insert(factory(*args, **kwargs))
