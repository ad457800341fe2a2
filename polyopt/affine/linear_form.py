"""Linear forms of affine expressions: ``{term: coefficient}`` dicts, the key ``None`` holding
the constant (the representation MLIR's ``simplifyAffineExpr`` flattens to).

Shared by the loop utilities (unroll, scalar replacement) and the ISL AST conversion: equal
forms mean equal expressions, and multiples of a divisor are pulled out of floordiv/mod.  What
a *term* is (a map position, an SSA value, an opaque ``floordiv``) is the caller's choice; the
callers pass how to build an opaque floordiv/mod term from the part that stays inside it.
"""

from __future__ import annotations

from typing import Callable

LinearForm = dict
Opaque = Callable[[LinearForm, int], LinearForm]  # (rest, q) -> form of the opaque term


def add_forms(a: LinearForm, b: LinearForm, scale: int = 1) -> LinearForm:
    """``a + scale * b``, dropping zero coefficients."""
    out = dict(a)
    for k, c in b.items():
        v = out.get(k, 0) + c * scale
        if v:
            out[k] = v
        else:
            out.pop(k, None)
    return out


def scale_form(a: LinearForm, c: int) -> LinearForm:
    return {k: v * c for k, v in a.items()} if c else {}


def is_constant_form(lin: LinearForm) -> bool:
    return all(k is None for k in lin)


def constant_of(lin: LinearForm) -> int:
    return lin.get(None, 0)


def floordiv_form(lin: LinearForm, q: int, opaque: Opaque) -> LinearForm:
    """``lin floordiv q`` (q > 0): the terms whose coefficient q divides come out exactly, as
    does the quotient of the constant; what is left stays an opaque term unless it is a
    constant in ``[0, q)`` (then it contributes nothing)."""
    if q == 1:
        return lin
    out: LinearForm = {}
    rest: LinearForm = {}
    for k, c in lin.items():
        if k is None:
            if c // q:
                out[None] = c // q
            if c % q:
                rest[None] = c % q
        elif c % q == 0:
            out[k] = c // q
        else:
            rest[k] = c
    if is_constant_form(rest):          # 0 <= rest < q
        return out
    return add_forms(out, opaque(rest, q))


def mod_form(lin: LinearForm, q: int, opaque: Opaque) -> LinearForm:
    """``lin mod q`` (q > 0): multiples of q drop out; a constant remainder folds."""
    if q == 1:
        return {}
    rest = {k: c % q for k, c in lin.items() if c % q}
    if is_constant_form(rest):
        return rest
    return opaque(rest, q)
