"""Lowering of the cf dialect (MLIR's ``--convert-cf-to-llvm``): the blocks of a region joined
by ``cf.br``/``cf.cond_br``/``cf.switch`` become LLVM basic blocks and their arguments phis
(:func:`lower_blocks`).

``cf.assert`` (MLIR's convert-cf-to-llvm aborts the process; polyopt records the
message with the runtime's ``polyopt_assert_fail`` and the Python call raises it when the
function returns).  A failed assert returns from the function at once (from the thread's part
of a parallel loop, in one): what follows it is what the assert guards, e.g. a store at an index
it found out of bounds, which crashed the process when it ran on.  A caller of that function
goes on with its zero results until it returns (the call then raises the message)."""

from __future__ import annotations

from typing import Callable

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.dominance import DominanceInfo, reverse_post_order
from polyopt.affine.ir import Block, Operation, Region
from polyopt.codegen.lowering import FunctionLowering, handles

_BRANCHES = ("cf.br", "cf.cond_br", "cf.switch")


@handles("cf.assert")
def _lower_assert(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    fail = L.fn.append_basic_block("assert.fail")
    cont = L.fn.append_basic_block("assert.ok")
    b.cbranch(L.get(op.operands[0]), cont, fail)
    b.position_at_end(fail)
    where = f"{op.loc}: " if op.loc is not None else ""
    b.call(L.ml.runtime("polyopt_assert_fail"), [L.ml.c_string(f"{where}error: {op.message}")])
    result = L.fn.function_type.return_type
    if isinstance(result, ir.VoidType):
        b.ret_void()
    else:
        b.ret(ir.Constant(result, None))
    b.position_at_end(cont)


def lower_blocks(L: FunctionLowering, region: Region, first: ir.Block,
                 exit_: Callable[[Operation], None]) -> None:
    """Lower the blocks of ``region``, its entry block at ``first``; ``exit_`` lowers a
    terminator that leaves the region (``func.return``, ``scf.yield``).

    Blocks are lowered in reverse post-order, so that a value is lowered before the blocks
    it dominates use it even when the text puts them first; blocks no path reaches are not
    lowered (nothing branches to them).  A branch that passes values goes through an edge block
    of its own when it is conditional: the phis of a block that two edges of one ``cf.cond_br``
    reach (``cf.cond_br %c, ^bb1(%a : i32), ^bb1(%b : i32)``) then tell them apart.
    """
    dom = DominanceInfo(region)
    order = reverse_post_order(region.blocks[:1])
    llvm_blocks = {id(region.blocks[0]): first}
    phis: dict[int, list] = {}
    for i, block in enumerate(region.blocks[1:], start=1):
        if dom.reachable(block):
            llvm_blocks[id(block)] = L.fn.append_basic_block(f"bb{i}")
    for block in order:
        bb = llvm_blocks[id(block)]
        L.b.position_at_end(bb)
        if block is not region.blocks[0]:
            phis[id(block)] = [L.b.phi(L.ml.type(a.type)) for a in block.args]
            L.bind_phis(block.args, phis[id(block)])
    for block in order:
        L.b.position_at_end(llvm_blocks[id(block)])    # after its phis
        term = L.lower_ops(block)
        if term is None:
            raise CodegenError("a block without a terminator", block.parent_op.loc)
        if term.name in _BRANCHES:
            L.with_op(term, lambda op: _lower_branch(L, op, llvm_blocks, phis))
        else:
            exit_(term)


def _lower_branch(L: FunctionLowering, op: Operation, llvm_blocks: dict, phis: dict) -> None:
    b = L.b

    def edge(i: int, direct: bool) -> ir.Block:
        """The LLVM block the branch's ``i``-th successor edge goes to, its values added to
        the successor's phis."""
        dest = op.successors[i]
        values = [L.get(v) for v in op.successor_operands(i)]
        if not values:
            return llvm_blocks[id(dest)]
        if direct:
            source = b.block
            target = llvm_blocks[id(dest)]
        else:
            source = target = L.fn.append_basic_block(f"edge.{op.name[3:]}")
        for phi, v in zip(phis[id(dest)], values):
            phi.add_incoming(v, source)
        if not direct:
            with b.goto_block(source):
                b.branch(llvm_blocks[id(dest)])
        return target

    if op.name == "cf.br":
        b.branch(edge(0, direct=True))
    elif op.name == "cf.cond_br":
        cond = L.get(op.condition)
        b.cbranch(cond, edge(0, direct=False), edge(1, direct=False))
    else:
        flag = L.get(op.flag)
        default = edge(0, direct=False)
        targets = [edge(i, direct=False) for i in range(1, len(op.successors))]
        sw = b.switch(flag, default)
        seen: set[int] = set()
        for value, target in zip(op.case_values, targets):
            if value not in seen:       # the first of equal cases wins (LLVM takes only one)
                seen.add(value)
                sw.add_case(ir.Constant(flag.type, value), target)
