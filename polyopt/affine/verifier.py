"""IR verification, in the order of MLIR's ``OperationVerifier`` (``mlir::verify``).

MLIR walks the ops and blocks under an op isolated from above (a module, a function) in
program order and checks, so that the first error it reports is the one nearest the top of
the text:

* entering an op: the op's own rules (``verify_op``: its ODS invariants and traits, its
  ``verify``), then that the entry block of each region has no predecessors;
* entering a block: it is not empty (unless its parent needs no terminator), and no op before
  its last one has successors;
* leaving a block: it ends in a terminator ("block with no terminator, has ...");
* leaving an op: the ops isolated from above directly inside it (each fully, with its
  dominance), then the rules that look into its regions (``verify_regions``: the terminator a
  region must end with, the types its terminators yield, isolation from above);
* after the whole walk of an isolated op: dominance of every operand in its regions.

polyopt's own restrictions, which mlir-opt-22 does not have (a memref layout must be injective;
a function must end in ``func.return``, since polyopt takes no unregistered ops), are checked
after all of MLIR's rules, so any input mlir-opt-22 rejects gets mlir-opt-22's first error.
"""

from __future__ import annotations

from typing import Union

from .affine_expr import AffineMap
from .affine_rules import is_isolated_from_above
from .diagnostics import VerifyError
from .dialects.memref import layout_injectivity_error
from .dominance import DominanceInfo
from .ir import (OP_REGISTRY, TERMINATOR_OPS, Block, BlockArgument, Operation, OpResult, Region,
                 Value)
from .types import FunctionType, MemRefType

# MLIR's ``SingleBlockImplicitTerminator``: the terminator these ops' blocks end with.
_TERMINATORS = {
    "affine.for": "affine.yield",
    "affine.if": "affine.yield",
    "affine.parallel": "affine.yield",
    "linalg.generic": "linalg.yield",
    "linalg.map": "linalg.yield",
    "linalg.reduce": "linalg.yield",
}

# Ops whose regions may hold several blocks joined by branches (MLIR: those without the
# ``SingleBlock`` trait); unregistered ops may too.
_MULTI_BLOCK_OPS = frozenset({"func.func", "scf.execute_region", "builtin.module"})
# MLIR's ``NoTerminator`` trait: the blocks of these ops need not end in a terminator.
_NO_TERMINATOR_OPS = frozenset({"builtin.module", "scf.forall.in_parallel"})
# Ops whose regions hold one block by an ODS ``SizedRegion<1>`` constraint, not by the
# ``SingleBlock`` trait: the op's verify (scf.while) or the block rule reports an empty block.
_SIZED_REGION_OPS = frozenset({"scf.reduce", "scf.while"})
# Terminators besides ir.TERMINATOR_OPS (which codegen relies on for what it lowers).
_OTHER_TERMINATORS = frozenset({"transform.yield"})


def verify(root: Operation) -> None:
    """Raise :class:`VerifyError` for the first error mlir-opt-22 would report under ``root``
    (see the module docstring for the order), then for polyopt's own restrictions."""
    _verify_op_and_dominance(root)
    _verify_polyopt_restrictions(root)


def _verify_op_and_dominance(top: Operation) -> None:
    """MLIR's ``verifyOpAndDominance``: everything under ``top``, then dominance in it."""
    _verify_operation(top)
    if top.regions:
        _verify_dominance_in(top, {}, {})


def _verify_operation(top: Operation) -> None:
    """The walk of MLIR's ``verifyOperation``: ops isolated from above are left to the exit
    of their parent op."""
    stack: list[tuple[Union[Operation, Block], bool]] = [(top, False)]
    while stack:
        item, leaving = stack.pop()
        if leaving:
            if isinstance(item, Block):
                _leave_block(item)
            else:
                _leave_op(item)
            continue
        stack.append((item, True))
        if isinstance(item, Block):
            _enter_block(item)
            for op in reversed(item.ops):
                if not (op.regions and is_isolated_from_above(op)):
                    stack.append((op, False))
        else:
            _enter_op(item)
            for region in reversed(item.regions):
                for block in reversed(region.blocks):
                    stack.append((block, False))


def _enter_op(op: Operation) -> None:
    _verify_region_block_counts(op)
    op.verify_op()
    _verify_terminator_position(op)
    for region in op.regions:
        if region.blocks and region.blocks[0].predecessors():
            raise VerifyError("entry block of region may not have predecessors", op.loc)


def _leave_op(op: Operation) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if inner.regions and is_isolated_from_above(inner):
                    _verify_op_and_dominance(inner)
    # MLIR's verifyRegionInvariants: the region traits, then the op's verifyRegions
    _verify_region_terminators(op)
    if is_isolated_from_above(op):
        _verify_isolation(op)
    op.verify_regions()


def _may_lack_terminator(block: Block) -> bool:
    """MLIR's ``mayBeValidWithoutTerminator``."""
    parent = block.parent_op
    return parent is None or parent.name in _NO_TERMINATOR_OPS or parent.name not in OP_REGISTRY


def _is_terminator(op: Operation) -> bool:
    """MLIR's ``mightHaveTrait<IsTerminator>``: an unregistered op might be one."""
    return op.name in TERMINATOR_OPS or op.name in _OTHER_TERMINATORS \
        or op.name not in OP_REGISTRY


def _enter_block(block: Block) -> None:
    if not block.ops:
        if _may_lack_terminator(block):
            return
        raise VerifyError("empty block: expect at least a terminator", block.parent_op.loc)
    for op in block.ops[:-1]:
        if op.successors:
            raise VerifyError("operation with block successors must terminate its parent block",
                              op.loc)


def _leave_block(block: Block) -> None:
    last = block.ops[-1] if block.ops else None
    if last is None:
        return
    for succ in last.successors:
        if succ.parent is not block.parent:
            raise last.error("branching to block of a different region")
    if _may_lack_terminator(block) or _is_terminator(last):
        return
    text = _generic_text(last)
    raise VerifyError("block with no terminator, has " + ("\n" if "\n" in text else "") + text,
                      last.loc)


def _generic_text(op: Operation) -> str:
    """``op`` as MLIR prints it in a diagnostic: generic form, values named in the scope of
    the closest op isolated from above."""
    from .printer import Printer     # the printer imports the dialects, which import us
    scope = op.parent_op
    while scope is not None and not is_isolated_from_above(scope) and \
            scope.parent_op is not None:
        scope = scope.parent_op
    class InlineMaps(Printer):      # a diagnostic has no alias section: maps print inline
        def alias(self, value):
            kind = "affine_map" if isinstance(value, AffineMap) else "affine_set"
            return f"{kind}<{value}>"

    p = InlineMaps(generic=True)
    if scope is not None:
        p._assign_names(scope)
    p.print_op(op)
    return p.out.getvalue()


def _verify_region_block_counts(op: Operation) -> None:
    """MLIR's ``SingleBlock`` trait: at most one block per region, and (unless the op has
    ``NoTerminator``) not an empty one."""
    if op.name in _MULTI_BLOCK_OPS or op.name not in OP_REGISTRY:
        return
    for i, region in enumerate(op.regions):
        if len(region.blocks) > 1:
            raise op.error(f"expects region #{i} to have 0 or 1 blocks")
        if region.blocks and not region.blocks[0].ops and op.name not in _NO_TERMINATOR_OPS \
                and op.name not in _SIZED_REGION_OPS:
            raise op.error("expects a non-empty block")


def _verify_region_terminators(op: Operation) -> None:
    """MLIR's ``SingleBlockImplicitTerminator`` trait, a region rule (checked after the
    nested ops)."""
    expected = _TERMINATORS.get(op.name)
    if expected is None:
        return
    for region in op.regions:
        for block in region.blocks:
            term = block.ops[-1] if block.ops else None
            if term is None or term.name != expected:
                found = f"'{term.name}'" if term is not None else "nothing"
                raise op.error(f"expects regions to end with '{expected}', found {found}")


def _verify_terminator_position(op: Operation) -> None:
    """MLIR's ``IsTerminator`` trait, checked after the op's own rules (its parent op) as
    mlir-opt does."""
    if _is_terminator(op) and op.name in OP_REGISTRY and op.parent is not None \
            and op.parent.ops[-1] is not op:
        raise op.error("must be the last operation in the parent block")


def _verify_isolation(isolated: Operation) -> None:
    """MLIR's ``IsolatedFromAbove`` trait: no op inside uses a value defined outside."""
    for region in isolated.regions:
        inside = {id(region)}       # the regions nested in ``region``, itself included
        ops = list(_ops_under(region))
        for inner in ops:
            for r in inner.regions:
                inside.add(id(r))
        for inner in ops:
            for v in inner.operands:
                home = _defining_region(v)
                if home is None:
                    raise VerifyError("operation's operand is unlinked", inner.loc)
                if id(home) not in inside:
                    raise inner.error("using value defined outside the region")


def _ops_under(region: Region):
    for block in region.blocks:
        for op in block.ops:
            yield op
            for r in op.regions:
                yield from _ops_under(r)


def _defining_region(v: Value):
    if isinstance(v, OpResult):
        return v.op.parent.parent if v.op.parent is not None else None
    if isinstance(v, BlockArgument):
        return v.block.parent
    return None


# -- dominance ---------------------------------------------------------------------------------

def _verify_dominance_in(op: Operation, positions, dominance) -> None:
    """MLIR's ``verifyDominanceOfContainedRegions``: each operand of each op in ``op``'s
    regions, in program order, then the regions nested in that op (not in ops isolated from
    above, which are checked on their own).  The module's region is a graph region: no
    dominance there."""
    if op.name == "builtin.module":
        for block in op.regions[0].blocks if op.regions else ():
            for inner in block.ops:
                if inner.regions and not is_isolated_from_above(inner):
                    _verify_dominance_in(inner, positions, dominance)
        return
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                for i, v in enumerate(inner.operands):
                    _verify_dominance(inner, i, v, positions, dominance)
                if inner.regions and not is_isolated_from_above(inner):
                    _verify_dominance_in(inner, positions, dominance)


def _index_in_block(op: Operation, positions: dict[int, dict[int, int]]) -> int:
    block = op.parent
    table = positions.get(id(block))
    if table is None or id(op) not in table or len(table) != len(block.ops):
        table = {id(o): i for i, o in enumerate(block.ops)}
        positions[id(block)] = table
    return table[id(op)]


def _ancestor_in_region(op: Operation, region) -> Operation | None:
    """The op enclosing ``op`` (or ``op`` itself) that lives directly in a block of
    ``region``, if any."""
    cur = op
    while cur is not None:
        if cur.parent is not None and cur.parent.parent is region:
            return cur
        cur = cur.parent_op
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
    """MLIR's ``diagnoseInvalidOperandDominance`` (an error without the op-name prefix)."""
    if isinstance(v, OpResult):
        def_op = v.op
        if def_op.parent is None:
            raise op.error(f"operand #{index} is defined by an op that is not in the IR")
        anc = _ancestor_in_region(op, def_op.parent.parent)
        if anc is None or anc is def_op:
            raise _not_dominating(op, index)
        if anc.parent is def_op.parent:
            if _index_in_block(def_op, positions) >= _index_in_block(anc, positions):
                raise _not_dominating(op, index)
        elif not _dominates(def_op.parent, anc.parent, dominance):
            raise _not_dominating(op, index)
    elif isinstance(v, BlockArgument):
        anc = _ancestor_in_region(op, v.block.parent)
        if anc is None or not _dominates(v.block, anc.parent, dominance):
            raise _not_dominating(op, index)
    else:
        raise VerifyError(f"operand #{index} of '{op.name}' is not an SSA value", op.loc)


def _not_dominating(op: Operation, index: int) -> VerifyError:
    return VerifyError(f"operand #{index} does not dominate this use", op.loc)


# -- polyopt's own restrictions ----------------------------------------------------------------

def _verify_polyopt_restrictions(root: Operation) -> None:
    for op in _walk(root):
        _verify_memref_layouts(op)
        _verify_function_return(op)


def _walk(root: Operation):
    yield root
    for region in root.regions:
        yield from _ops_under(region)


def _verify_function_return(op: Operation) -> None:
    """mlir-opt-22 takes a function whose body ends in an unregistered op (which might be a
    terminator); polyopt takes no unregistered ops there, so a function body ends in
    ``func.return`` (or a branch, when it has several blocks)."""
    if op.name != "func.func" or len(op.regions[0].blocks) != 1:
        return
    term = op.regions[0].blocks[0].ops[-1] if op.regions[0].blocks[0].ops else None
    if term is None or term.name != "func.return":
        found = f"'{term.name}'" if term is not None else "nothing"
        raise op.error(f"expects regions to end with 'func.return', found {found}")


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
