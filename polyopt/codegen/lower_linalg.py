"""Lowering of what is left of linalg at LLVM time: ``linalg.fill`` as a loop over the
buffer.  The other linalg ops become affine nests before lowering
(:func:`polyopt.pipeline.prepare_for_lowering` runs
:func:`polyopt.affine.linalg_to_affine.convert_linalg_to_affine_loops`); one that reaches
this point is an error naming that pass."""

from __future__ import annotations

from typing import Callable

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.dialects.linalg import STRUCTURED_OPS
from polyopt.affine.ir import Operation
from polyopt.affine.types import MemRefType
from polyopt.codegen.llvm_helpers import I64, Unsupported, i64
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem
from polyopt.memref_layout.layout import is_identity_layout


@handles("linalg.fill")
def _lower_fill(L: FunctionLowering, op: Operation) -> None:
    value = L.get(op.operands[0])
    out = op.operands[1]
    if not isinstance(out.type, MemRefType):
        raise Unsupported("only memref outputs are supported (bufferize tensors first)")
    mem = L.mem(out)
    t = mem.type
    if any(d == 0 for d in t.shape):
        return
    if is_identity_layout(t) or t.rank == 0:
        # one flat loop over the buffer
        flat = MemRefType((max(1, t.num_elements),), t.element_type)
        target = Mem(mem.ptr, flat, mem.align)
        emit_loop_nest(L, (flat.shape[0],), lambda ivs: L.store_elem(value, target, ivs))
    else:
        emit_loop_nest(L, tuple(t.shape), lambda ivs: L.store_elem(value, mem, ivs))


@handles(*(name for name in STRUCTURED_OPS if name != "linalg.fill"))
def _refuse_unconverted(L: FunctionLowering, op: Operation) -> None:
    raise CodegenError(f"'{op.name}' must be lowered to affine loops before LLVM "
                       f"(polyopt.pipeline.prepare_for_lowering, or "
                       f"--convert-linalg-to-affine-loops)", op.loc)


def emit_loop_nest(L: FunctionLowering, shape: tuple, body: Callable) -> None:
    """``for i0 in [0, shape[0]) ... body([i0, ...] as linear forms)``."""
    b = L.b
    ivs: list = []

    def level(k):
        if k == len(shape):
            body(ivs)
            return
        pre = b.block
        header = L.fn.append_basic_block("fill.header")
        bodyb = L.fn.append_basic_block("fill.body")
        exit_ = L.fn.append_basic_block("fill.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64)
        b.cbranch(b.icmp_signed("<", iv, i64(shape[k])), bodyb, exit_)
        b.position_at_end(bodyb)
        form = L.leaf(iv)
        L.leaf_ranges[id(iv)] = (0, shape[k] - 1)
        ivs.append(form)
        level(k + 1)
        ivs.pop()
        nxt = b.add(iv, i64(1), flags=("nuw", "nsw"))
        latch = b.block
        b.branch(header)
        iv.add_incoming(i64(0), pre)
        iv.add_incoming(nxt, latch)
        b.position_at_end(exit_)
    level(0)
