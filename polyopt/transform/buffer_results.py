"""Drop the memref results of a function that are one of its arguments: upstream's
``-drop-equivalent-buffer-results`` (MLIR's ``bufferization`` passes), the step after
``-one-shot-bufferize="bufferize-function-boundaries"``, which leaves a function computing
into its ``outs`` argument and returning it (``return %arg2 : memref<7x9xf32, strided<...>>``).

A result is dropped when every ``func.return`` of the function returns the same block
argument in its place (through ``memref.cast``s, which change only the static type); each
``func.call`` of the function in the module then uses its own operand for that argument where
it used the result (cast back to the result's type when they differ).  Upstream's pass
changes private functions only; :func:`polyopt.compile` drops them in public ones too, and
the numpy callable of such a function returns the array passed for that argument, as
numpy's ``out=`` does (:class:`ReturnsArguments`)."""

from __future__ import annotations

from typing import Optional

from ..affine.dialects.func import CallOp, FuncOp, ReturnOp
from ..affine.ir import Operation, Value
from ..affine.types import FunctionType, MemRefType

def _argument_behind(value: Value, func: FuncOp) -> Optional[int]:
    """The index of the argument of ``func`` that ``value`` is, through ``memref.cast``s."""
    while value.defining_op is not None and value.defining_op.name == "memref.cast":
        value = value.defining_op.operands[0]
    for i, arg in enumerate(func.args):
        if value is arg:
            return i
    return None


def _equivalent_arguments(func: FuncOp) -> list[Optional[int]]:
    """For each result of ``func``: the argument every return gives in its place, or None."""
    returns = [op for op in func.walk() if isinstance(op, ReturnOp) and op.parent_op is func]
    found: list[Optional[int]] = []
    for i, t in enumerate(func.function_type.results):
        if not isinstance(t, MemRefType) or not returns:
            found.append(None)
            continue
        args = {_argument_behind(r.operands[i], func) for r in returns}
        found.append(args.pop() if len(args) == 1 and None not in args else None)
    return found


def drop_equivalent_buffer_results(module: Operation,
                                   public: bool = True) -> dict[str, list[int]]:
    """Drop them in every defined function of ``module`` (see the module docstring), or, as
    upstream's pass, in its private ones only (``public=False``: the others keep their ABI);
    returns, per function changed, the argument each of its original results was (-1: kept),
    for :class:`ReturnsArguments`."""
    from ..affine.attributes import ArrayAttr, TypeAttr
    changed: dict[str, list[int]] = {}
    funcs = [op for op in module.walk() if isinstance(op, FuncOp) and not op.is_declaration
             and (public or op.is_private)]
    for func in funcs:
        found = _equivalent_arguments(func)
        if all(a is None for a in found):
            continue
        keep = [i for i, a in enumerate(found) if a is None]
        ft = func.function_type
        for ret in [op for op in func.walk() if isinstance(op, ReturnOp)
                    and op.parent_op is func]:
            ret.set_operands([ret.operands[i] for i in keep])
        func.attributes["function_type"] = TypeAttr(
            FunctionType(tuple(ft.inputs), tuple(ft.results[i] for i in keep)))
        res_attrs = func.attributes.get("res_attrs")
        if isinstance(res_attrs, ArrayAttr):
            func.attributes["res_attrs"] = ArrayAttr(tuple(res_attrs.elements[i] for i in keep))
        changed[func.sym_name] = [-1 if a is None else a for a in found]
        for call in [op for op in module.walk() if isinstance(op, CallOp)
                     and op.callee == func.sym_name]:
            _rewrite_call(call, found, keep)
    return changed


def _rewrite_call(call: CallOp, found: list, keep: list[int]) -> None:
    """``call`` without the dropped results, their uses taking the call's own operands."""
    from ..affine.builder import Builder
    from ..affine.dialects.memref import MemRefCastOp
    b = Builder.before(call)
    new = CallOp.build(call.callee, list(call.operands),
                       [call.results[i].type for i in keep], loc=call.loc)
    for name, attr in call.attributes.items():
        new.attributes.setdefault(name, attr)
    b.insert(new)
    kept = iter(new.results)
    for i, arg in enumerate(found):
        old = call.results[i]
        if arg is None:
            old.replace_all_uses_with(next(kept))
            continue
        operand = call.operands[arg]
        if operand.type != old.type:
            cast = MemRefCastOp.build(operand, old.type, loc=call.loc)
            b.insert(cast)
            operand = cast.results[0]
        old.replace_all_uses_with(operand)
    call.erase()


class ReturnsArguments:
    """The numpy callable of a function whose memref results were dropped: calls ``fn`` (the
    function as compiled, returning its other results) and returns, in the original order,
    the arrays passed for the dropped results' arguments and the other results (one value
    alone, several as a tuple)."""

    def __init__(self, fn, aliases: list[int], arg_names: list[str]):
        self._fn, self._aliases, self._names = fn, aliases, arg_names

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def _argument(self, index: int, args: tuple, kwargs: dict):
        if index < len(args):
            return args[index]
        return kwargs.get(self._names[index])

    def __call__(self, *args, **kwargs):
        rest = self._fn(*args, **kwargs)
        kept = [a for a in self._aliases if a < 0]
        rest = () if not kept else (rest,) if len(kept) == 1 else rest
        rest = iter(rest)
        out = [next(rest) if a < 0 else self._argument(a, args, kwargs) for a in self._aliases]
        return out[0] if len(out) == 1 else tuple(out)
