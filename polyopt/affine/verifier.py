"""IR verification (MLIR's ``mlir::verify``): structure, dominance, then each op's own rules.

Op-specific rules (types, map arity, affine dim/symbol validity, shapes of ``hop.matmul``) live
in each op's ``verify_op``; this module checks what holds for every op: operands are defined
before use in an enclosing block (dominance), functions are isolated from above, and blocks end
in the terminator their parent expects.  Every memref type that appears (op results, block and
function arguments, function results) must have an injective layout (decided with ISL, see
``dialects.memref.layout_collision``).
"""

from __future__ import annotations

from .diagnostics import VerifyError
from .dialects.memref import layout_injectivity_error
from .dominance import DominanceInfo
from .ir import OP_REGISTRY, TERMINATOR_OPS, BlockArgument, Operation, OpResult, Value
from .types import FunctionType, MemRefType

# The terminator each region-holding op expects at the end of its blocks.
_TERMINATORS = {
    "func.func": "func.return",
    "affine.for": "affine.yield",
    "affine.if": "affine.yield",
}

# Ops whose regions may hold several blocks joined by branches (MLIR: those without the
# ``SingleBlock`` trait); unregistered ops may too.
_MULTI_BLOCK_OPS = frozenset({"func.func", "scf.execute_region", "builtin.module"})
_BRANCHES = frozenset({"cf.br", "cf.cond_br", "cf.switch"})


def verify(root: Operation) -> None:
    """Raise :class:`VerifyError` at the first invalid op under ``root``: each op's own rules
    (``verify_op``) before the ops nested in it, and the rules that look into its regions
    (``verify_regions``, e.g. the types its terminators yield) after them, as MLIR's
    ``verify``/``verifyRegions``."""
    positions: dict[int, dict[int, int]] = {}
    dominance: dict[int, DominanceInfo] = {}
    for op, entering in _enter_exit(root):
        if not entering:
            op.verify_regions()
            continue
        _verify_blocks(op)
        _verify_structure(op)
        for i, v in enumerate(op.operands):
            _verify_dominance(op, i, v, positions, dominance)
        _verify_memref_layouts(op)
        op.verify_op()
        _verify_terminator_position(op)


def _enter_exit(root: Operation):
    """(op, True) when the walk enters ``op``, (op, False) after everything nested in it."""
    stack = [(root, True)]
    while stack:
        op, entering = stack.pop()
        yield op, entering
        if entering:
            stack.append((op, False))
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    for inner in reversed(block.ops):
                        stack.append((inner, True))


def _layout_error(t) -> str | None:
    if isinstance(t, MemRefType) and t.layout is not None:
        return layout_injectivity_error(t)
    return None


def _verify_memref_layouts(op: Operation) -> None:
    """A layout that maps two in-bounds indices to one location is an error (the paper's
    section 2.9: any injective layout gives correct code, no other does)."""
    for i, r in enumerate(op.results):
        msg = _layout_error(r.type)
        if msg:
            raise op.error(f"result #{i}: {msg}")
    ft = getattr(op.attributes.get("function_type"), "value", None) \
        if op.name == "func.func" else None  # declarations included
    if isinstance(ft, FunctionType):
        for what, types in (("argument", ft.inputs), ("result", ft.results)):
            for i, t in enumerate(types):
                msg = _layout_error(t)
                if msg:
                    raise op.error(f"{what} #{i}: {msg}")
        return
    for region in op.regions:
        for block in region.blocks:
            for i, a in enumerate(block.args):
                msg = _layout_error(a.type)
                if msg:
                    raise op.error(f"block argument #{i}: {msg}")


def _verify_blocks(op: Operation) -> None:
    """The rules of regions with several blocks: which ops may have them, each block ends in
    a terminator, the entry block has no predecessors, successors end their block."""
    if op.successors and op.parent is not None and op.parent.ops[-1] is not op:
        raise VerifyError("operation with block successors must terminate its parent block",
                          op.loc)
    for i, region in enumerate(op.regions):
        if len(region.blocks) <= 1:
            if region.blocks and region.blocks[0].predecessors():
                raise VerifyError("entry block of region may not have predecessors", op.loc)
            continue
        if op.name not in _MULTI_BLOCK_OPS and op.name in OP_REGISTRY:
            raise op.error(f"expects region #{i} to have 0 or 1 blocks")
        if region.blocks[0].predecessors():
            raise VerifyError("entry block of region may not have predecessors", op.loc)
        for block in region.blocks:
            term = block.terminator
            if term is None:
                raise VerifyError("empty block: expect at least a terminator", op.loc)
            for inner in block.ops[:-1]:    # before the terminator, as MLIR's verifyOnEntrance
                if inner.successors:
                    raise VerifyError("operation with block successors must terminate its "
                                      "parent block", inner.loc)
            if term.name not in TERMINATOR_OPS and term.name in OP_REGISTRY:
                raise VerifyError(f"block with no terminator, has '{term.name}'", term.loc)


def _verify_structure(op: Operation) -> None:
    expected = _TERMINATORS.get(op.name)
    if expected is None or op.name == "func.func" and len(op.regions[0].blocks) > 1:
        return      # a function's blocks joined by branches: _verify_blocks
    for region in op.regions:
        for block in region.blocks:
            term = block.terminator
            if op.name == "func.func" and term is not None and term.name in _BRANCHES:
                continue
            if term is None or term.name != expected:
                found = f"'{term.name}'" if term is not None else "nothing"
                raise op.error(f"expects regions to end with '{expected}', found {found}")
            for inner in block.ops[:-1]:
                if inner.name == expected:
                    raise inner.error("must be the last operation in the parent block")


def _verify_terminator_position(op: Operation) -> None:
    """MLIR's ``IsTerminator`` trait, checked after the op's own rules (its parent op) as
    mlir-opt does."""
    if op.name in TERMINATOR_OPS and op.parent is not None and op.parent.ops[-1] is not op:
        raise op.error("must be the last operation in the parent block")


def _index_in_block(op: Operation, positions: dict[int, dict[int, int]]) -> int:
    block = op.parent
    table = positions.get(id(block))
    if table is None or id(op) not in table or len(table) != len(block.ops):
        table = {id(o): i for i, o in enumerate(block.ops)}
        positions[id(block)] = table
    return table[id(op)]


def _ancestor_in_region(op: Operation, region) -> Operation | None:
    """The op enclosing ``op`` (or ``op`` itself) that lives directly in a block of
    ``region``, if any.

    The search stops at the enclosing function: functions are isolated from above.
    """
    cur = op
    while cur is not None:
        if cur.parent is not None and cur.parent.parent is region:
            return cur
        parent = cur.parent_op
        if parent is not None and parent.name == "func.func":
            return None
        cur = parent
    return None


def _dominates(def_block, use_block, dominance: dict) -> bool:
    if def_block is use_block:
        return True
    region = def_block.parent
    info = dominance.get(id(region))
    if info is None:
        info = dominance[id(region)] = DominanceInfo(region)
    return info.dominates(def_block, use_block)


def _verify_dominance(op: Operation, index: int, v: Value, positions, dominance) -> None:
    if isinstance(v, OpResult):
        def_op = v.op
        if def_op.parent is None:
            raise op.error(f"operand #{index} is defined by an op that is not in the IR")
        anc = _ancestor_in_region(op, def_op.parent.parent)
        if anc is None or anc is def_op:
            raise op.error(f"operand #{index} does not dominate this use")
        if anc.parent is def_op.parent:
            if _index_in_block(def_op, positions) >= _index_in_block(anc, positions):
                raise op.error(f"operand #{index} does not dominate this use")
        elif not _dominates(def_op.parent, anc.parent, dominance):
            raise VerifyError(f"operand #{index} does not dominate this use", op.loc)
    elif isinstance(v, BlockArgument):
        anc = _ancestor_in_region(op, v.block.parent)
        if anc is None or not _dominates(v.block, anc.parent, dominance):
            raise op.error(f"operand #{index} (a block argument) is not visible at this use")
    else:
        raise VerifyError(f"operand #{index} of '{op.name}' is not an SSA value", op.loc)
