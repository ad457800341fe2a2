"""Which SSA values may be affine dimensions or symbols (MLIR's ``isValidDim``/``isValidSymbol``).

An affine map's operands are split into *dimensions* (they may vary inside the affine region:
loop induction variables) and *symbols* (fixed for the whole affine scope: function arguments,
constants, sizes).  The rules, as in ``mlir/lib/Dialect/Affine/IR/AffineOps.cpp`` (MLIR 22):

* the *affine scope* of an op is the region of its closest ancestor with the ``AffineScope``
  trait (``func.func``); a value defined at the top level of that region, or an argument of it,
  is a valid symbol there;
* constants are valid symbols anywhere, and so is the result of a ``Pure`` op (``arith.addi``,
  ``affine.apply``, ``affine.min``, casts, ...) whose operands are all valid symbols;
* ``memref.dim`` of a top-level memref (or of an ``alloc`` whose size is a valid symbol);
* a valid dimension is a valid symbol, an ``affine.for``/``affine.parallel`` induction
  variable, or a result of ``affine.apply``, ``affine.delinearize_index`` or
  ``affine.linearize_index`` whose operands are all valid dimensions.

So ``%k = arith.addi %i, %j`` inside a loop nest (``%i``, ``%j`` induction variables) is neither,
and cannot subscript an ``affine.load``; ``%i`` itself is a dimension but not a symbol.

Op kinds are recognised by name, except that an op class may declare ``PURE = True/False``,
``CONSTANT_LIKE = True``, ``AFFINE_SCOPE = True`` or ``ISOLATED_FROM_ABOVE = True`` to override.
"""

from __future__ import annotations

from typing import Optional, Sequence

from .ir import BlockArgument, Operation, Region, Value
from .types import IndexType, MemRefType

__all__ = [
    "is_affine_scope", "is_isolated_from_above", "is_constant_like", "is_pure",
    "get_affine_scope", "is_top_level_value", "is_affine_induction_var", "for_induction_var_owner",
    "is_valid_symbol", "is_valid_dim", "is_valid_affine_index_operand",
    "verify_dim_and_symbol_identifiers",
]

_AFFINE_SCOPE_OPS = frozenset({"func.func"})
_ISOLATED_OPS = frozenset({"func.func", "builtin.module"})
_CONSTANT_OPS = frozenset({"arith.constant"})

# Ops MLIR marks ``Pure`` (no memory effects, always speculatable) beyond the arith dialect.
_PURE_OPS = frozenset({
    "affine.apply", "affine.min", "affine.max",
    "affine.delinearize_index", "affine.linearize_index",
    "memref.cast", "memref.reinterpret_cast", "memref.collapse_shape", "memref.expand_shape",
    "vector.broadcast", "vector.splat", "vector.extract", "vector.insert", "vector.fma",
    "vector.shuffle", "vector.extractelement", "vector.insertelement",
})
# arith ops that are only speculatable when the divisor is a known constant (MLIR's
# ``ConditionallySpeculatable``); the signed ones also need the divisor to differ from -1.
_DIV_UNSIGNED = frozenset({"arith.divui", "arith.ceildivui", "arith.remui", "arith.remsi"})
_DIV_SIGNED = frozenset({"arith.divsi", "arith.ceildivsi", "arith.floordivsi"})


# ---------------------------------------------------------------------------------------------
# op traits


def is_affine_scope(op: Optional[Operation]) -> bool:
    """Does ``op`` have MLIR's ``AffineScope`` trait (``func.func``)?"""
    if op is None:
        return False
    flag = getattr(type(op), "AFFINE_SCOPE", None)
    return bool(flag) if flag is not None else op.name in _AFFINE_SCOPE_OPS


def is_isolated_from_above(op: Optional[Operation]) -> bool:
    if op is None:
        return False
    flag = getattr(type(op), "ISOLATED_FROM_ABOVE", None)
    return bool(flag) if flag is not None else op.name in _ISOLATED_OPS


def is_constant_like(op: Operation) -> bool:
    """MLIR's ``m_Constant`` match: ``arith.constant`` (and ops declaring ``CONSTANT_LIKE``)."""
    return bool(getattr(type(op), "CONSTANT_LIKE", False)) or op.name in _CONSTANT_OPS


def _constant_int(v: Value) -> Optional[int]:
    op = v.defining_op
    if op is None or not is_constant_like(op):
        return None
    attr = op.attributes.get("value")
    value = getattr(attr, "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_pure(op: Operation) -> bool:
    """MLIR's ``isPure``: no memory effects and always speculatable."""
    flag = getattr(type(op), "PURE", None)
    if flag is not None:
        return bool(flag(op)) if callable(flag) else bool(flag)
    name = op.name
    if name in _DIV_UNSIGNED or name in _DIV_SIGNED:
        divisor = _constant_int(op.operands[1]) if op.num_operands == 2 else None
        if divisor is None or divisor == 0:
            return False
        return not (name in _DIV_SIGNED and divisor == -1)
    if name.startswith("arith.") or name.startswith("math."):
        return True
    return name in _PURE_OPS or is_constant_like(op)


# ---------------------------------------------------------------------------------------------
# scopes


def _parent_region(v: Value) -> Optional[Region]:
    if isinstance(v, BlockArgument):
        return v.block.parent
    op = v.defining_op
    return op.parent.parent if op is not None and op.parent is not None else None


def get_affine_scope(op: Operation) -> Optional[Region]:
    """The region of the closest ancestor of ``op`` that is an affine scope (MLIR's
    ``getAffineScope``); ``None`` when there is none (e.g. an op not inside a function)."""
    cur = op
    while True:
        block = cur.parent
        if block is None or block.parent is None:
            return None
        parent = block.parent.parent
        if parent is None:
            return None
        if is_affine_scope(parent):
            return block.parent
        cur = parent


def is_top_level_value(value: Value, region: Optional[Region] = None) -> bool:
    """Is ``value`` defined at the top level of ``region`` (or an argument of it)?

    Without ``region``: is it defined directly in an affine scope (a function body)?
    """
    if region is not None:
        return _parent_region(value) is region
    r = _parent_region(value)
    return r is not None and is_affine_scope(r.parent)


def for_induction_var_owner(value: Value) -> Optional[Operation]:
    """The ``affine.for`` whose induction variable ``value`` is (MLIR's
    ``getForInductionVarOwner``), else ``None``.  Loop-carried ``iter_args`` are not IVs."""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return None
    region = value.block.parent
    op = region.parent if region is not None else None
    if op is None or op.name != "affine.for" or region.blocks[0] is not value.block:
        return None
    return op


def is_affine_induction_var(value: Value) -> bool:
    """An ``affine.for`` induction variable (``affine.parallel`` is not modelled)."""
    return for_induction_var_owner(value) is not None


# ---------------------------------------------------------------------------------------------
# the rules

_UNSET = object()


def _scope_of_value(value: Value) -> Optional[Region]:
    op = value.defining_op
    return get_affine_scope(op) if op is not None else None


def is_valid_symbol(value: Value, region=_UNSET) -> bool:
    """May ``value`` be used as an affine symbol?

    With ``region`` (the affine scope of the using op, see :func:`get_affine_scope`) this is
    MLIR's ``isValidSymbol(value, region)``; without it, ``isValidSymbol(value)`` (valid at all
    its uses).
    """
    if not isinstance(value.type, IndexType):
        return False
    if region is _UNSET:
        if is_top_level_value(value):
            return True
        if value.defining_op is not None:
            return _valid_symbol(value, _scope_of_value(value), {})
        return False
    return _valid_symbol(value, region, {})


def _valid_symbol(value: Value, region: Optional[Region], memo: dict) -> bool:
    # ``memo`` keeps DAGs of pure ops (each value used twice, ...) linear instead of exponential
    key = (value, region)
    if key not in memo:
        _settle_operands_first(value, region, memo)
        memo[key] = False
        memo[key] = _valid_symbol_uncached(value, region, memo)
    return memo[key]


def _settle_operands_first(value: Value, region: Optional[Region], memo: dict) -> None:
    """Decide the operands of a chain of pure ops before the value at its end, deepest first,
    so that a chain of thousands of ``arith.addi`` does not recurse thousands deep."""
    chain = []
    seen = {value}
    stack = [value]
    while stack:
        v = stack.pop()
        op = v.defining_op
        if op is None or not is_pure(op) or is_constant_like(op):
            continue
        for w in op.operands:
            if w not in seen and (w, region) not in memo and isinstance(w.type, IndexType):
                seen.add(w)
                chain.append(w)
                stack.append(w)
    for w in reversed(chain):
        _valid_symbol(w, region, memo)


def _valid_symbol_uncached(value: Value, region: Optional[Region], memo: dict) -> bool:
    if not isinstance(value.type, IndexType):
        return False
    if region is not None and is_top_level_value(value, region):
        return True
    op = value.defining_op
    if op is None:
        # a block argument (not a top-level one) is a symbol only if it dominates the scope op
        return _valid_symbol_above(value, region, memo)
    if is_constant_like(op):
        return True
    if is_pure(op) and all(_valid_symbol(v, region, memo) for v in op.operands):
        return True
    if op.name == "memref.dim":
        return _is_dim_op_valid_symbol(op, region, memo)
    return _valid_symbol_above(value, region, memo)


def _valid_symbol_above(value: Value, region: Optional[Region], memo: dict) -> bool:
    scope_op = region.parent if region is not None else None
    if scope_op is not None and not is_isolated_from_above(scope_op):
        outer_block = scope_op.parent
        if outer_block is not None and outer_block.parent is not None:
            return _valid_symbol(value, outer_block.parent, memo)
    return False


def _is_dim_op_valid_symbol(dim_op: Operation, region: Optional[Region], memo: dict) -> bool:
    source = dim_op.operands[0]
    if is_top_level_value(source):
        return True
    if isinstance(source, BlockArgument):
        return False
    index = _constant_int(dim_op.operands[1]) if dim_op.num_operands > 1 else None
    if index is None:
        return False
    op = source.defining_op
    while op is not None and op.name == "memref.cast":
        inner = op.operands[0]
        if not isinstance(inner.type, MemRefType):
            return False
        op = inner.defining_op
    if op is None or op.name != "memref.alloc":
        return False
    mtype = op.results[0].type
    if not isinstance(mtype, MemRefType) or not 0 <= index < mtype.rank:
        return False
    if mtype.shape[index] is not None:
        return True
    dyn_pos = sum(1 for d in mtype.shape[:index] if d is None)
    return dyn_pos < op.num_operands and _valid_symbol(op.operands[dyn_pos], region, memo)


def _is_parallel_iv(value: Value) -> bool:
    """An argument of an ``affine.parallel`` body (one of its induction variables)."""
    region = value.block.parent if isinstance(value, BlockArgument) else None
    return region is not None and region.parent is not None and \
        region.parent.name == "affine.parallel"


# ``affine.apply`` and its special forms: a result is a valid dimension when all the operands
# (indices and basis alike) are
_APPLY_LIKE_OPS = frozenset({"affine.apply", "affine.delinearize_index",
                             "affine.linearize_index"})


def is_valid_dim(value: Value, region=_UNSET) -> bool:
    """May ``value`` be used as an affine dimension?

    Valid symbols, ``affine.for``/``affine.parallel`` induction variables, and the results of
    ``affine.apply``, ``affine.delinearize_index`` or ``affine.linearize_index`` whose operands
    are valid dimensions.  ``region`` as in :func:`is_valid_symbol`.
    """
    if not isinstance(value.type, IndexType):
        return False
    if region is _UNSET:
        op = value.defining_op
        if op is not None:
            return _valid_dim(value, get_affine_scope(op), {}, {})
        if is_affine_induction_var(value) or _is_parallel_iv(value):
            return True
        owner = value.block.parent.parent if value.block.parent is not None else None
        return is_affine_scope(owner)
    return _valid_dim(value, region, {}, {})


def _valid_dim(value: Value, region: Optional[Region], memo: dict, sym_memo: dict) -> bool:
    key = (value, region)
    if key in memo:
        return memo[key]
    memo[key] = False
    if not isinstance(value.type, IndexType):
        result = False
    elif _valid_symbol(value, region, sym_memo):
        result = True
    else:
        op = value.defining_op
        if op is None:
            result = is_affine_induction_var(value) or _is_parallel_iv(value)
        elif op.name in _APPLY_LIKE_OPS:
            result = all(_valid_dim(v, region, memo, sym_memo) for v in op.operands)
        elif op.name == "memref.dim":
            result = is_top_level_value(op.operands[0])
        else:
            result = False
    memo[key] = result
    return result


def is_valid_affine_index_operand(value: Value, region=_UNSET) -> bool:
    return is_valid_dim(value, region) or is_valid_symbol(value, region)


def verify_dim_and_symbol_identifiers(op: Operation, operands: Sequence[Value],
                                      num_dims: int) -> None:
    """MLIR's ``verifyDimAndSymbolIdentifiers``: the first ``num_dims`` operands must be valid
    dimensions and the rest valid symbols in the affine scope of ``op``."""
    region = get_affine_scope(op)
    for i, v in enumerate(operands):
        if i < num_dims:
            if not is_valid_dim(v, region):
                raise op.error("operand cannot be used as a dimension id")
        elif not is_valid_symbol(v, region):
            raise op.error("operand cannot be used as a symbol")
