"""The elementwise nest after a depthwise convolution (MobileNet's folded batch norm and ReLU6:
``O = min(max(O + bias[c], 0), 6)``, a residual, a cast into another array), applied to the
vector template's accumulators before their single store instead of a second pass over the
output (:mod:`~polyopt.schedules.depthwise_nchw`, :mod:`~polyopt.schedules.depthwise_nhwc`).

MLIR counterpart: ``transform.structured.fuse_into_containing_op`` of the elementwise consumer
into the convolution's tile loop, vectorized with it.

The nest is recognized by :func:`~polyopt.schedules.epilogue.pointwise_epilogue_of`; its loads
read memrefs by some of the output's dimensions.  In both templates the vectors run along the
output's last dimension (the width in NCHW, the channels in NHWC): a load that indexes it is a
vector (masked where the template's store is), any other load a scalar broadcast.
"""

from __future__ import annotations

from typing import Optional

from ..affine.types import IntegerType
from .epilogue import Epilogue, pointwise_epilogue_of

#: The dimension of the output the templates' vectors run along.
VECTOR_DIM = 3


def depthwise_epilogue(op, remark=None) -> Optional[Epilogue]:
    """The epilogue after the depthwise convolution ``op`` over its output, or None."""
    image, filt, out = op.operands
    return pointwise_epilogue_of(op, out, reads=(image, filt), remark=remark, loc=op.loc)


class EpilogueStores:
    """Writes a template's output stores through ``epilogue`` (or plain stores without one).

    ``output_type``: the output's memref type.  ``store`` takes the output's subscripts
    twice: as affine expressions (for ``affine.load`` and ``affine.vector_load``) and, in a
    masked block, as SSA index values (for ``vector.maskedload`` / ``maskedstore``)."""

    def __init__(self, epilogue: Optional[Epilogue], output_type, lanes: int):
        self.epilogue, self.to, self.w = epilogue, output_type, lanes
        self.args: dict = {}
        self.hoisted: dict = {}       # id(load) -> its vector, loaded by :meth:`hoist`
        self.out, self.tout = "%O", output_type
        if epilogue is None:
            return
        for q, v in enumerate(epilogue.externals):
            self.args[id(v)] = f"%epi{q}"
        if not epilogue.stores_to_c:
            self.out, self.tout = "%out", epilogue.output.type

    def signature(self) -> str:
        """The template function's parameters after ``%O``."""
        if self.epilogue is None:
            return ""
        extra = "".join(f", {self.args[id(v)]}: {v.type}" for v in self.epilogue.externals)
        return extra + (f", %out: {self.tout}" if self.out != "%O" else "")

    def values(self) -> list:
        """The values the template's extra parameters take (see :meth:`signature`)."""
        if self.epilogue is None:
            return []
        return [*self.epilogue.externals, *([self.epilogue.output] if self.out != "%O" else [])]

    def hoist(self, t, depth: int, subs: list[str], dims: tuple,
              masked: Optional[tuple[list[str], str]] = None) -> None:
        """Load, once here, the epilogue's operands indexed by ``dims`` only (a bias along
        the channels, hoisted to the channel's loop), as vectors; ``subs`` (and ``masked``)
        as for :meth:`store`, valid for those dimensions.  They serve the stores that follow
        until the next call."""
        self.hoisted = {}
        if self.epilogue is None:
            return
        for op in self.epilogue.body:
            role = self.epilogue.loads.get(id(op))
            if role is None or role == "tile" or not set(role) <= set(dims):
                continue
            v, whole = self._load(t, depth, op, self.args[id(op.memref)], role, subs, masked)
            if not whole:
                b = t.fresh("eh")
                et = op.memref.type.element_type
                t.add(depth, f"{b} = vector.broadcast {v} : {et} to vector<{self.w}x{et}>")
                v = b
            self.hoisted[id(op)] = v

    def store(self, t, depth: int, acc: str, subs: list[str],
              masked: Optional[tuple[list[str], str]] = None) -> None:
        """Store the accumulator vector ``acc`` at the output's ``subs`` (``masked``: the SSA
        subscripts and the mask), through the epilogue."""
        if self.epilogue is None:
            self._vector_store(t, depth, acc, "%O", self.to, subs, masked)
            return
        def load(op, name: str, role) -> tuple[str, bool]:
            if id(op) in self.hoisted:
                return self.hoisted[id(op)], True
            return self._load(t, depth, op, name, role, subs, masked)

        result = self.epilogue.emit(t, depth, acc, self.args, self.w, load=load)
        self._vector_store(t, depth, result, self.out, self.tout, subs, masked)
        if self.out != "%O":        # the output keeps the convolution's result too
            self._vector_store(t, depth, acc, "%O", self.to, subs, masked)

    def _load(self, t, depth: int, op, name: str, role, subs: list[str],
              masked) -> tuple[str, bool]:
        """The epilogue's load ``op`` of ``name`` (role ``role``) at the output's ``subs``:
        (its value, whether a vector)."""
        dims = tuple(range(len(subs))) if role == "tile" else role
        mt, et = str(op.memref.type), op.memref.type.element_type
        v = t.fresh("e")
        if VECTOR_DIM not in dims:
            t.add(depth, f"{v} = affine.load {name}[{', '.join(subs[d] for d in dims)}] : {mt}")
            return v, False
        vt = f"vector<{self.w}x{et}>"
        if masked is None:
            t.add(depth, f"{v} = affine.vector_load {name}"
                         f"[{', '.join(subs[d] for d in dims)}] : {mt}, {vt}")
            return v, True
        ssa, mask = masked
        zero, value = t.fresh("ez"), "0" if isinstance(et, IntegerType) else "0.0"
        t.add(depth, f"{zero} = arith.constant dense<{value}> : {vt}")
        t.add(depth, f"{v} = vector.maskedload {name}[{', '.join(ssa[d] for d in dims)}], "
                     f"{mask}, {zero} : {mt}, vector<{self.w}xi1>, {vt} into {vt}")
        return v, True

    def _vector_store(self, t, depth: int, value: str, memref: str, mt, subs: list[str],
                      masked) -> None:
        vt = f"vector<{self.w}x{mt.element_type}>"
        if masked is None:
            t.add(depth, f"affine.vector_store {value}, {memref}[{', '.join(subs)}] : {mt}, {vt}")
        else:
            ssa, mask = masked
            t.add(depth, f"vector.maskedstore {memref}[{', '.join(ssa)}], {mask}, {value} : "
                         f"{mt}, vector<{self.w}xi1>, {vt}")


def replace_by_template(op, text: str, stores: EpilogueStores, remark=None) -> None:
    """Splice the template ``text`` (``func.func @dw(%I, %F, %O, ...)``, written through
    ``stores``) in front of the depthwise convolution ``op`` and erase ``op`` and the epilogue
    nest ``stores`` fused, with a remark saying so."""
    from ..affine.builder import Builder
    from .gemm_templates import splice_template
    splice_template(Builder.before(op), text, "<depthwise>", [*op.operands, *stores.values()],
                    op.loc)
    op.erase()
    epilogue = stores.epilogue
    if epilogue is None:
        return
    epilogue.nest.erase()
    if remark is not None:
        remark(epilogue.nest.loc or op.loc,
               f"fused into {op.name}'s vector template before its stores: the epilogue over "
               f"its output ({epilogue.describe()}){epilogue.lane_by_lane()}")
