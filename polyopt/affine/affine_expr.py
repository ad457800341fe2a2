"""Immutable affine math layer mirroring MLIR 22's ``AffineExpr`` / ``AffineMap`` / ``IntegerSet``.

Everything here reproduces the behaviour of upstream MLIR 22 (``mlir/lib/IR/AffineExpr.cpp``,
``AffineMap.cpp``, ``IntegerSet.cpp`` and ``AsmPrinter.cpp``):

* Expressions are simplified *on construction* by the same local rewrite rules MLIR applies in
  its ``operator+``/``operator*``/``floorDiv``/``ceilDiv``/``operator%`` overloads
  (``simplifyAdd``, ``simplifyMul``, ``simplifyFloorDiv``, ``simplifyCeilDiv``, ``simplifyMod``),
  including canonical operand ordering (constants to the right, symbolic operands to the right,
  ``d1 + d0`` -> ``d0 + d1``, dims before symbols) and MLIR's 64-bit integer semantics (constant
  folding is skipped when it would overflow ``int64``; some internal folds wrap around like the
  C++ code does).
* Printing (``str()``) is byte-for-byte MLIR's ``printAffineExprInternal``: ``d0 - d1`` for
  ``d0 + d1 * -1``, ``-d0``, ``d0 - 2``, ``d0 - d1 * 3``, parentheses by binding strength.
* Parsing of map / set *bodies* (``parse_affine_map``, ``parse_integer_set``,
  ``parse_affine_expr``) follows MLIR's ``AffineParser`` grammar, precedence, associativity and
  affine-ness checks, and builds expressions through the same operator calls, so the parsed
  result is exactly what ``mlir-opt`` would build.

Evaluation (``evaluate``) uses exact (unbounded) Python integers: ``floordiv`` rounds toward
-inf, ``ceildiv`` toward +inf and ``mod`` is ``lhs - rhs * floordiv(lhs, rhs)`` (so the result
lies in ``[0, rhs)`` for a positive ``rhs``).

Known MLIR 22 bug that is NOT reproduced by default (see ``EMULATE_MLIR22_ADD_MOD_BUG``):
``e + X`` is folded to ``e mod q`` whenever ``X`` is *any* binary expression
``((e floordiv q) * q) <op> -1`` -- e.g. ``d0 + ((d0 floordiv 4) * 4 - 1)`` prints as
``d0 mod 4`` in ``mlir-opt-22`` although it is not equal to it (``simplifyAdd`` does not check
that ``X`` is a multiplication; presumably fixed upstream after 22 by llvm-project PR #181613).
polyopt computes with correct math; tests set the flag to ``True`` only to compare printing
with ``mlir-opt-22`` on such expressions.
"""

from __future__ import annotations

import enum
import math
import re
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

__all__ = [
    "AffineExprKind", "AffineExpr", "AffineDimExpr", "AffineSymbolExpr", "AffineConstantExpr",
    "AffineBinaryExpr", "AffineMap", "IntegerSet", "AffineParseError",
    "dim", "symbol", "constant", "get_affine_binary_op_expr",
    "parse_affine_map", "parse_integer_set", "parse_affine_map_or_integer_set",
    "parse_affine_expr", "EMULATE_MLIR22_ADD_MOD_BUG",
]

#: When True reproduce MLIR 22's ``simplifyAdd`` bug that rewrites ``e + X`` into
#: ``e mod q`` whenever ``X`` is *any* binary expression whose RHS is the constant -1 and whose
#: LHS is ``(e floordiv q) * q`` -- e.g. ``d0 + ((d0 floordiv 4) * 4 - 1)`` becomes ``d0 mod 4``
#: in ``mlir-opt-22`` (wrong, but that is what MLIR 22 parses/prints). False (default) = correct
#: math: a wrong simplification would make polyopt compute wrong results.
EMULATE_MLIR22_ADD_MOD_BUG = False

# ---------------------------------------------------------------------------------------------
# int64 helpers (MLIR stores constants as int64_t)
# ---------------------------------------------------------------------------------------------

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_U64_MASK = (1 << 64) - 1


def _wrap(v: int) -> int:
    """Two's complement wrap-around to int64 (what the C++ code does on overflow)."""
    return ((v - _I64_MIN) & _U64_MASK) + _I64_MIN


def _fits(v: int) -> bool:
    return _I64_MIN <= v <= _I64_MAX


def _u64(v: int) -> int:
    return v & _U64_MASK


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _floor_div(a: int, b: int) -> int:
    return a // b


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _mod(a: int, b: int) -> int:
    return a % b


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------


class AffineExprKind(enum.Enum):
    """MLIR ``AffineExprKind`` (same order as the C++ enum)."""

    ADD = 0
    MUL = 1
    MOD = 2
    FLOORDIV = 3
    CEILDIV = 4
    CONSTANT = 5
    DIM = 6
    SYMBOL = 7

    @property
    def is_binary(self) -> bool:
        return self.value <= AffineExprKind.CEILDIV.value


_BINOP_SPELLING = {
    AffineExprKind.ADD: " + ",
    AffineExprKind.MUL: " * ",
    AffineExprKind.FLOORDIV: " floordiv ",
    AffineExprKind.CEILDIV: " ceildiv ",
    AffineExprKind.MOD: " mod ",
}

ExprLike = Union["AffineExpr", int]


def _as_expr(v: ExprLike) -> "AffineExpr":
    if isinstance(v, AffineExpr):
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected AffineExpr or int, got {type(v).__name__}")
    return AffineConstantExpr(v)


class AffineExpr:
    """Base class of MLIR's ``mlir::AffineExpr`` (immutable, hashable, structurally compared).

    Build expressions with :func:`dim`, :func:`symbol`, :func:`constant` and the operators
    ``+ - * // %`` (``//`` is ``floordiv``, ``%`` is ``mod``), :meth:`floordiv`,
    :meth:`ceildiv` and :meth:`mod`; ints are accepted on either side. Every operation applies
    MLIR 22's construction-time simplifications.
    """

    __slots__ = ("_hash", "_symbolic", "_pure")
    kind: AffineExprKind

    def __setattr__(self, name, value):  # immutability
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    # -- operators (MLIR AffineExpr operator overloads) ---------------------------------------

    def __add__(self, other: ExprLike) -> "AffineExpr":
        if isinstance(other, int) and not isinstance(other, bool):
            other = AffineConstantExpr(other)
        elif not isinstance(other, AffineExpr):
            return NotImplemented
        return _get_add(self, other)

    def __radd__(self, other: int) -> "AffineExpr":
        # MLIR: operator+(int64_t val, AffineExpr expr) { return expr + val; }
        if isinstance(other, int) and not isinstance(other, bool):
            return _get_add(self, AffineConstantExpr(other))
        return NotImplemented

    def __mul__(self, other: ExprLike) -> "AffineExpr":
        if isinstance(other, int) and not isinstance(other, bool):
            other = AffineConstantExpr(other)
        elif not isinstance(other, AffineExpr):
            return NotImplemented
        return _get_mul(self, other)

    def __rmul__(self, other: int) -> "AffineExpr":
        # MLIR: operator*(int64_t val, AffineExpr expr) { return expr * val; }
        if isinstance(other, int) and not isinstance(other, bool):
            return _get_mul(self, AffineConstantExpr(other))
        return NotImplemented

    def __neg__(self) -> "AffineExpr":
        # MLIR: operator-() { return *this * getAffineConstantExpr(-1); }
        return _get_mul(self, AffineConstantExpr(-1))

    def __sub__(self, other: ExprLike) -> "AffineExpr":
        if isinstance(other, int) and not isinstance(other, bool):
            # MLIR: operator-(int64_t v) { return *this + (-v); }
            return _get_add(self, AffineConstantExpr(_wrap(-other)) if _fits(other)
                            else AffineConstantExpr(-other))
        if not isinstance(other, AffineExpr):
            return NotImplemented
        return _get_add(self, -other)

    def __rsub__(self, other: int) -> "AffineExpr":
        # MLIR: operator-(int64_t val, AffineExpr expr) { return expr * (-1) + val; }
        if isinstance(other, int) and not isinstance(other, bool):
            return _get_add(-self, AffineConstantExpr(other))
        return NotImplemented

    def floordiv(self, other: ExprLike) -> "AffineExpr":
        """MLIR ``AffineExpr::floorDiv``."""
        return _get_floordiv(self, _as_expr(other))

    def ceildiv(self, other: ExprLike) -> "AffineExpr":
        """MLIR ``AffineExpr::ceilDiv``."""
        return _get_ceildiv(self, _as_expr(other))

    def mod(self, other: ExprLike) -> "AffineExpr":
        """MLIR ``AffineExpr::operator%``."""
        return _get_mod(self, _as_expr(other))

    def __floordiv__(self, other: ExprLike) -> "AffineExpr":
        if not isinstance(other, (AffineExpr, int)) or isinstance(other, bool):
            return NotImplemented
        return self.floordiv(other)

    def __rfloordiv__(self, other: int) -> "AffineExpr":
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return AffineConstantExpr(other).floordiv(self)

    def __mod__(self, other: ExprLike) -> "AffineExpr":
        if not isinstance(other, (AffineExpr, int)) or isinstance(other, bool):
            return NotImplemented
        return self.mod(other)

    def __rmod__(self, other: int) -> "AffineExpr":
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return AffineConstantExpr(other).mod(self)

    # -- queries ------------------------------------------------------------------------------

    def is_symbolic_or_constant(self) -> bool:
        """MLIR ``isSymbolicOrConstant``: no dimension identifiers appear."""
        return self._symbolic

    def is_pure_affine(self) -> bool:
        """MLIR ``isPureAffine``: mul/floordiv/ceildiv/mod only by constants."""
        return self._pure

    def used_dims(self) -> frozenset[int]:
        return frozenset(e.position for e in self.walk() if isinstance(e, AffineDimExpr))

    def used_symbols(self) -> frozenset[int]:
        return frozenset(e.position for e in self.walk() if isinstance(e, AffineSymbolExpr))

    def is_function_of_dim(self, position: int) -> bool:
        return position in self.used_dims()

    def is_function_of_symbol(self, position: int) -> bool:
        return position in self.used_symbols()

    def largest_known_divisor(self) -> int:
        """MLIR ``getLargestKnownDivisor`` (int64 semantics)."""
        raise NotImplementedError

    def is_multiple_of(self, k: int) -> bool:
        """MLIR ``isMultipleOf``."""
        raise NotImplementedError

    def walk(self) -> Iterator["AffineExpr"]:
        """All sub-expressions in post-order (MLIR ``AffineExpr::walk``)."""
        stack: list[tuple[AffineExpr, bool]] = [(self, False)]
        while stack:
            e, visited = stack.pop()
            if isinstance(e, AffineBinaryExpr) and not visited:
                stack.append((e, True))
                stack.append((e.rhs, False))
                stack.append((e.lhs, False))
            else:
                yield e

    # -- evaluation / substitution --------------------------------------------------------------

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> int:
        """Exact integer value at the given point (see module docstring for semantics)."""
        raise NotImplementedError

    def replace(self, dims: Sequence[ExprLike], symbols: Sequence[ExprLike] = ()) -> "AffineExpr":
        """MLIR ``replaceDimsAndSymbols``: substitute ``dN`` by ``dims[N]`` and ``sN`` by
        ``symbols[N]`` (positions beyond the given lists are kept), re-simplifying every
        rebuilt node; untouched sub-trees are returned as is."""
        return self._replace(tuple(_as_expr(d) for d in dims), tuple(_as_expr(s) for s in symbols))

    replace_dims_and_symbols = replace

    def replace_dims(self, dims: Sequence[ExprLike]) -> "AffineExpr":
        return self.replace(dims, ())

    def replace_symbols(self, symbols: Sequence[ExprLike]) -> "AffineExpr":
        return self.replace((), symbols)

    def replace_expr(self, mapping: dict) -> "AffineExpr":
        """MLIR's sparse ``AffineExpr::replace(DenseMap)``: replace whole sub-expressions."""
        if self in mapping:
            return _as_expr(mapping[self])
        return self

    def shift_dims(self, num_dims: int, shift: int, offset: int = 0) -> "AffineExpr":
        """MLIR ``shiftDims``: dims[offset, num_dims) -> dims[offset+shift, ...)."""
        dims = [dim(i) for i in range(offset)] + [dim(i + shift) for i in range(offset, num_dims)]
        return self.replace(dims, ())

    def shift_symbols(self, num_symbols: int, shift: int, offset: int = 0) -> "AffineExpr":
        syms = [symbol(i) for i in range(offset)] + \
               [symbol(i + shift) for i in range(offset, num_symbols)]
        return self.replace((), syms)

    def compose(self, amap: "AffineMap") -> "AffineExpr":
        """MLIR ``AffineExpr::compose``: replace dims by the results of ``amap``."""
        return self.replace(amap.results, ())

    def _replace(self, dims, symbols) -> "AffineExpr":
        raise NotImplementedError

    # -- printing -----------------------------------------------------------------------------

    def to_str(self, dim_names: Optional[Sequence[str]] = None,
               symbol_names: Optional[Sequence[str]] = None) -> str:
        """Print like MLIR's ``printAffineExprInternal``.

        ``dim_names`` / ``symbol_names`` replace ``dN`` / ``sN`` (e.g. SSA names for
        ``affine.load`` subscripts; pass ``"symbol(%n)"`` strings for symbols as MLIR does)."""
        out: list[str] = []
        _print_expr(self, False, out, dim_names, symbol_names)
        return "".join(out)

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"AffineExpr({self.to_str()!r})"

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:  # an expression is a value, never falsy
        return True


class AffineDimExpr(AffineExpr):
    """MLIR ``AffineDimExpr``: dimensional identifier ``d<position>``."""

    __slots__ = ("position",)
    kind = AffineExprKind.DIM

    def __init__(self, position: int):
        if not isinstance(position, int) or position < 0:
            raise ValueError(f"invalid dim position {position!r}")
        object.__setattr__(self, "position", position)
        object.__setattr__(self, "_hash", hash((AffineExprKind.DIM, position)))
        object.__setattr__(self, "_symbolic", False)
        object.__setattr__(self, "_pure", True)

    def __eq__(self, other):
        if not isinstance(other, AffineExpr):
            return NotImplemented
        return type(other) is AffineDimExpr and other.position == self.position

    __hash__ = AffineExpr.__hash__

    def __reduce__(self):
        return (AffineDimExpr, (self.position,))

    def largest_known_divisor(self) -> int:
        return 1

    def is_multiple_of(self, k: int) -> bool:
        return _wrap(k * k) == 1

    def evaluate(self, dims, symbols=()):
        return dims[self.position]

    def _replace(self, dims, symbols):
        return dims[self.position] if self.position < len(dims) else self


class AffineSymbolExpr(AffineExpr):
    """MLIR ``AffineSymbolExpr``: symbolic identifier ``s<position>``."""

    __slots__ = ("position",)
    kind = AffineExprKind.SYMBOL

    def __init__(self, position: int):
        if not isinstance(position, int) or position < 0:
            raise ValueError(f"invalid symbol position {position!r}")
        object.__setattr__(self, "position", position)
        object.__setattr__(self, "_hash", hash((AffineExprKind.SYMBOL, position)))
        object.__setattr__(self, "_symbolic", True)
        object.__setattr__(self, "_pure", True)

    def __eq__(self, other):
        if not isinstance(other, AffineExpr):
            return NotImplemented
        return type(other) is AffineSymbolExpr and other.position == self.position

    __hash__ = AffineExpr.__hash__

    def __reduce__(self):
        return (AffineSymbolExpr, (self.position,))

    def largest_known_divisor(self) -> int:
        return 1

    def is_multiple_of(self, k: int) -> bool:
        return _wrap(k * k) == 1

    def evaluate(self, dims, symbols=()):
        return symbols[self.position]

    def _replace(self, dims, symbols):
        return symbols[self.position] if self.position < len(symbols) else self


class AffineConstantExpr(AffineExpr):
    """MLIR ``AffineConstantExpr``: an int64 constant."""

    __slots__ = ("value",)
    kind = AffineExprKind.CONSTANT

    def __init__(self, value: int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"affine constant must be an int, got {type(value).__name__}")
        if not _fits(value):
            raise OverflowError(f"affine constant {value} does not fit in int64")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "_hash", hash((AffineExprKind.CONSTANT, value)))
        object.__setattr__(self, "_symbolic", True)
        object.__setattr__(self, "_pure", True)

    def __eq__(self, other):
        if not isinstance(other, AffineExpr):
            return NotImplemented
        return type(other) is AffineConstantExpr and other.value == self.value

    __hash__ = AffineExpr.__hash__

    def __reduce__(self):
        return (AffineConstantExpr, (self.value,))

    def largest_known_divisor(self) -> int:
        return _wrap(abs(self.value))

    def is_multiple_of(self, k: int) -> bool:
        return self.value % k == 0

    def evaluate(self, dims, symbols=()):
        return self.value

    def _replace(self, dims, symbols):
        return self


class AffineBinaryExpr(AffineExpr):
    """MLIR ``AffineBinaryOpExpr``: ``lhs <kind> rhs`` for ADD, MUL, MOD, FLOORDIV, CEILDIV.

    ``AffineBinaryExpr(kind, lhs, rhs)`` goes through MLIR's simplifying construction
    (``getAffineBinaryOpExpr``) and may therefore return a different expression class, e.g.
    ``AffineBinaryExpr(AffineExprKind.ADD, constant(1), constant(2))`` is ``constant(3)``.
    """

    __slots__ = ("kind", "lhs", "rhs")

    def __new__(cls, kind: AffineExprKind, lhs: ExprLike, rhs: ExprLike):
        return get_affine_binary_op_expr(kind, _as_expr(lhs), _as_expr(rhs))

    @classmethod
    def _raw(cls, kind: AffineExprKind, lhs: AffineExpr, rhs: AffineExpr) -> "AffineBinaryExpr":
        """Create the node without any simplification (MLIR's uniquer ``get``)."""
        self = object.__new__(cls)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "lhs", lhs)
        object.__setattr__(self, "rhs", rhs)
        object.__setattr__(self, "_hash", hash((kind, lhs._hash, rhs._hash)))
        sym = lhs._symbolic and rhs._symbolic
        object.__setattr__(self, "_symbolic", sym)
        if kind is AffineExprKind.ADD:
            pure = lhs._pure and rhs._pure
        elif kind is AffineExprKind.MUL:
            pure = lhs._pure and rhs._pure and (isinstance(lhs, AffineConstantExpr)
                                                or isinstance(rhs, AffineConstantExpr))
        else:
            pure = lhs._pure and isinstance(rhs, AffineConstantExpr)
        object.__setattr__(self, "_pure", pure)
        return self

    __hash__ = AffineExpr.__hash__

    def __reduce__(self):
        return (AffineBinaryExpr._raw, (self.kind, self.lhs, self.rhs))

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, AffineExpr):
            return NotImplemented
        if type(other) is not AffineBinaryExpr or other._hash != self._hash:
            return False
        return other.kind is self.kind and self.lhs == other.lhs and self.rhs == other.rhs

    def largest_known_divisor(self) -> int:
        kind = self.kind
        if kind is AffineExprKind.FLOORDIV or kind is AffineExprKind.CEILDIV:
            rhs = self.rhs
            if isinstance(rhs, AffineConstantExpr) and rhs.value != 0:
                lhs_div = self.lhs.largest_known_divisor()
                if lhs_div % rhs.value == 0:
                    return _wrap(abs(_trunc_div(lhs_div, rhs.value)))
            return 1
        if kind is AffineExprKind.MUL:
            return _wrap(self.lhs.largest_known_divisor() * self.rhs.largest_known_divisor())
        # ADD, MOD
        return _wrap(math.gcd(_u64(self.lhs.largest_known_divisor()),
                              _u64(self.rhs.largest_known_divisor())))

    def is_multiple_of(self, k: int) -> bool:
        uk = _u64(k)
        if uk == 0:
            raise ZeroDivisionError("is_multiple_of(0)")
        if self.kind is AffineExprKind.MUL:
            lo = _u64(self.lhs.largest_known_divisor())
            if lo % uk == 0:
                return True
            hi = _u64(self.rhs.largest_known_divisor())
            return hi % uk == 0 or ((lo * hi) & _U64_MASK) % uk == 0
        g = math.gcd(_u64(self.lhs.largest_known_divisor()), _u64(self.rhs.largest_known_divisor()))
        return g % uk == 0

    def evaluate(self, dims, symbols=()):
        a = self.lhs.evaluate(dims, symbols)
        b = self.rhs.evaluate(dims, symbols)
        kind = self.kind
        if kind is AffineExprKind.ADD:
            return a + b
        if kind is AffineExprKind.MUL:
            return a * b
        if kind is AffineExprKind.FLOORDIV:
            return _floor_div(a, b)
        if kind is AffineExprKind.CEILDIV:
            return _ceil_div(a, b)
        return _mod(a, b)

    def _replace(self, dims, symbols):
        new_lhs = self.lhs._replace(dims, symbols)
        new_rhs = self.rhs._replace(dims, symbols)
        if new_lhs is self.lhs and new_rhs is self.rhs:
            return self
        if new_lhs == self.lhs and new_rhs == self.rhs:
            return self
        return get_affine_binary_op_expr(self.kind, new_lhs, new_rhs)

    def replace_expr(self, mapping: dict) -> AffineExpr:
        if self in mapping:
            return _as_expr(mapping[self])
        new_lhs = self.lhs.replace_expr(mapping)
        new_rhs = self.rhs.replace_expr(mapping)
        if new_lhs == self.lhs and new_rhs == self.rhs:
            return self
        return get_affine_binary_op_expr(self.kind, new_lhs, new_rhs)


def dim(i: int) -> AffineDimExpr:
    """MLIR ``getAffineDimExpr``."""
    return AffineDimExpr(i)


def symbol(i: int) -> AffineSymbolExpr:
    """MLIR ``getAffineSymbolExpr``."""
    return AffineSymbolExpr(i)


def constant(v: int) -> AffineConstantExpr:
    """MLIR ``getAffineConstantExpr`` (``v`` must fit in int64, else OverflowError)."""
    return AffineConstantExpr(v)


def get_affine_binary_op_expr(kind: AffineExprKind, lhs: ExprLike, rhs: ExprLike) -> AffineExpr:
    """MLIR ``getAffineBinaryOpExpr``: dispatch to the simplifying constructors."""
    lhs, rhs = _as_expr(lhs), _as_expr(rhs)
    if kind is AffineExprKind.ADD:
        return _get_add(lhs, rhs)
    if kind is AffineExprKind.MUL:
        return _get_mul(lhs, rhs)
    if kind is AffineExprKind.FLOORDIV:
        return _get_floordiv(lhs, rhs)
    if kind is AffineExprKind.CEILDIV:
        return _get_ceildiv(lhs, rhs)
    if kind is AffineExprKind.MOD:
        return _get_mod(lhs, rhs)
    raise ValueError(f"not a binary affine expression kind: {kind}")


# ---------------------------------------------------------------------------------------------
# Simplifying constructors (MLIR AffineExpr.cpp)
# ---------------------------------------------------------------------------------------------

_K = AffineExprKind


def _is_bin(e: AffineExpr, kind: AffineExprKind) -> bool:
    return type(e) is AffineBinaryExpr and e.kind is kind


def _const_val(e: AffineExpr) -> Optional[int]:
    return e.value if type(e) is AffineConstantExpr else None


def _new_commutative(kind: AffineExprKind, lhs: AffineExpr, rhs: AffineExpr) -> AffineBinaryExpr:
    """Create an ADD/MUL node, ordering leaf dim/symbol operands like MLIR 22 does
    (by position, dims before symbols; everything else keeps its order)."""
    tl, tr = type(lhs), type(rhs)
    if tl is tr and (tl is AffineDimExpr or tl is AffineSymbolExpr):
        if lhs.position > rhs.position:
            lhs, rhs = rhs, lhs
    elif tl is AffineSymbolExpr and tr is AffineDimExpr:
        lhs, rhs = rhs, lhs
    return AffineBinaryExpr._raw(kind, lhs, rhs)


def _simplify_add(lhs: AffineExpr, rhs: AffineExpr) -> Optional[AffineExpr]:
    lc, rc = _const_val(lhs), _const_val(rhs)
    # Fold constants (unless the sum overflows int64).
    if lc is not None and rc is not None:
        s = lc + rc
        return AffineConstantExpr(s) if _fits(s) else None

    # Canonicalize: constant to the RHS; a lone symbolic operand to the RHS.
    if lc is not None or (lhs._symbolic and not rhs._symbolic):
        return _get_add(rhs, lhs)

    if rc is not None and rc == 0:
        return lhs

    # (d0 + 2) + 3 -> d0 + 5.
    l_add = _is_bin(lhs, _K.ADD)
    if l_add and rc is not None:
        lrc = _const_val(lhs.rhs)
        if lrc is not None:
            return _get_add(lhs.lhs, AffineConstantExpr(_wrap(lrc + rc)))

    # c1 * expr + c2 * expr -> (c1 + c2) * expr.
    if _is_bin(lhs, _K.MUL) and _const_val(lhs.rhs) is not None:
        c1, first = lhs.rhs.value, lhs.lhs
    else:
        c1, first = 1, lhs
    r_bin = type(rhs) is AffineBinaryExpr
    if r_bin and rhs.kind is _K.MUL and _const_val(rhs.rhs) is not None:
        c2, second = rhs.rhs.value, rhs.lhs
    else:
        c2, second = 1, rhs
    if first == second:
        return _get_mul(first, AffineConstantExpr(_wrap(c1 + c2)))

    # (d0 + 2) + d1 -> (d0 + d1) + 2.
    if l_add:
        lrc = _const_val(lhs.rhs)
        if lrc is not None:
            return _get_add(_get_add(lhs.lhs, rhs), lhs.rhs)

    # expr - q * (expr floordiv q) -> expr mod q.
    if not r_bin:
        return None
    lrhs, rrhs = rhs.lhs, rhs.rhs
    rrc = _const_val(rrhs)
    if rrc == -1 and _is_bin(lrhs, _K.MUL):
        # Form ((expr floordiv q) * q) * -1 with symbolic q. NB: MLIR 22 does not check that
        # `rhs` itself is a multiplication here (upstream bug, see module docstring).
        if EMULATE_MLIR22_ADD_MOD_BUG or rhs.kind is _K.MUL:
            llrhs, rlrhs = lrhs.lhs, lrhs.rhs
            if not _is_bin(llrhs, _K.FLOORDIV):
                return None
            if llrhs.rhs == rlrhs and lhs == llrhs.lhs:
                return _get_mod(lhs, rlrhs)

    # Form (expr floordiv c) * -c with a positive constant c.
    if rhs.kind is not _K.MUL or not _is_bin(lrhs, _K.FLOORDIV):
        return None
    llrhs, rlrhs = lrhs.lhs, lrhs.rhs
    c = _const_val(rlrhs)
    if c is not None and c > 0 and lhs == llrhs and rlrhs == -rrhs:
        return _get_mod(lhs, rlrhs)
    # MLIR 22 (llvm-project PR #146492): for (e0 + e1) + (x floordiv q) * k, try to simplify
    # e1 + (x floordiv q) * k on its own, e.g. (e0 + e1) + (e1 floordiv c) * -c -> e0 + e1 mod c.
    # Any successful local rewrite is taken (including a mere operand swap).
    if l_add:
        inner = _simplify_add(lhs.rhs, rhs)
        if inner is not None:
            return _get_add(lhs.lhs, inner)
    return None


def _get_add(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    simplified = _simplify_add(lhs, rhs)
    if simplified is not None:
        return simplified
    return _new_commutative(_K.ADD, lhs, rhs)


def _simplify_mul(lhs: AffineExpr, rhs: AffineExpr) -> Optional[AffineExpr]:
    lc, rc = _const_val(lhs), _const_val(rhs)
    if lc is not None and rc is not None:
        p = lc * rc
        return AffineConstantExpr(p) if _fits(p) else None

    if not lhs._symbolic and not rhs._symbolic:
        return None  # non-affine product: kept as is

    # Canonicalize: the constant / symbolic operand goes to the RHS.
    if not rhs._symbolic or lc is not None:
        return _get_mul(rhs, lhs)

    if rc is not None:
        if rc == 1:
            return lhs
        if rc == 0:
            return rhs

    # (d0 * 2) * 3 -> d0 * 6.
    if _is_bin(lhs, _K.MUL):
        lrc = _const_val(lhs.rhs)
        if lrc is not None:
            if rc is not None:
                return _get_mul(lhs.lhs, AffineConstantExpr(_wrap(lrc * rc)))
            # (d0 * 2) * s0 -> (d0 * s0) * 2.
            return _get_mul(_get_mul(lhs.lhs, rhs), lhs.rhs)
    return None


def _get_mul(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    simplified = _simplify_mul(lhs, rhs)
    if simplified is not None:
        return simplified
    return _new_commutative(_K.MUL, lhs, rhs)


def _simplify_div(lhs: AffineExpr, rhs: AffineExpr, ceil: bool) -> Optional[AffineExpr]:
    rc = _const_val(rhs)
    if rc is None or rc == 0:
        return None
    lc = _const_val(lhs)
    if lc is not None:
        q = _ceil_div(lc, rc) if ceil else _floor_div(lc, rc)
        return AffineConstantExpr(q) if _fits(q) else None
    if rc == 1:
        return lhs
    # (expr * c1) div c2 -> expr * (c1 / c2) when c2 divides c1.
    if _is_bin(lhs, _K.MUL):
        lrc = _const_val(lhs.rhs)
        if lrc is not None and lrc % rc == 0:
            return _get_mul(lhs.lhs, AffineConstantExpr(_wrap(_trunc_div(lrc, rc))))
    # (e1 + e2) floordiv c -> e1 floordiv c + e2 floordiv c when c divides e1 or e2.
    if not ceil and _is_bin(lhs, _K.ADD):
        if lhs.lhs.largest_known_divisor() % rc == 0 or lhs.rhs.largest_known_divisor() % rc == 0:
            return _get_add(_get_floordiv(lhs.lhs, rhs), _get_floordiv(lhs.rhs, rhs))
    return None


def _get_floordiv(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    simplified = _simplify_div(lhs, rhs, ceil=False)
    if simplified is not None:
        return simplified
    return AffineBinaryExpr._raw(_K.FLOORDIV, lhs, rhs)


def _get_ceildiv(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    simplified = _simplify_div(lhs, rhs, ceil=True)
    if simplified is not None:
        return simplified
    return AffineBinaryExpr._raw(_K.CEILDIV, lhs, rhs)


def _simplify_mod(lhs: AffineExpr, rhs: AffineExpr) -> Optional[AffineExpr]:
    rc = _const_val(rhs)
    # mod by zero or a negative number is undefined and preserved as is.
    if rc is None or rc < 1:
        return None
    lc = _const_val(lhs)
    if lc is not None:
        return AffineConstantExpr(_mod(lc, rc))
    # Known multiple of the modulus -> 0.
    if lhs.largest_known_divisor() % rc == 0:
        return AffineConstantExpr(0)
    if _is_bin(lhs, _K.ADD):
        # (e1 + e2) mod c -> e2 mod c if c divides e1 (resp. e1 mod c).
        if lhs.lhs.largest_known_divisor() % rc == 0:
            return _get_mod(lhs.rhs, rhs)
        if lhs.rhs.largest_known_divisor() % rc == 0:
            return _get_mod(lhs.lhs, rhs)
    # (e mod a) mod b -> e mod b when b divides a.
    if _is_bin(lhs, _K.MOD):
        inter = _const_val(lhs.rhs)
        if inter is not None and inter >= 1 and inter % rc == 0:
            return _get_mod(lhs.lhs, rhs)
    return None


def _get_mod(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    simplified = _simplify_mod(lhs, rhs)
    if simplified is not None:
        return simplified
    return AffineBinaryExpr._raw(_K.MOD, lhs, rhs)


# ---------------------------------------------------------------------------------------------
# Printing (MLIR AsmPrinter::Impl::printAffineExprInternal)
# ---------------------------------------------------------------------------------------------


def _print_expr(e: AffineExpr, strong: bool, out: list[str],
                dim_names: Optional[Sequence[str]], sym_names: Optional[Sequence[str]]) -> None:
    t = type(e)
    if t is AffineDimExpr:
        out.append(dim_names[e.position] if dim_names is not None else f"d{e.position}")
        return
    if t is AffineSymbolExpr:
        out.append(sym_names[e.position] if sym_names is not None else f"s{e.position}")
        return
    if t is AffineConstantExpr:
        out.append(str(e.value))
        return

    kind, lhs, rhs = e.kind, e.lhs, e.rhs
    if strong:
        out.append("(")
    if kind is not _K.ADD:
        if kind is _K.MUL and _const_val(rhs) == -1:
            # Pretty print multiplication with -1.
            out.append("-")
            _print_expr(lhs, True, out, dim_names, sym_names)
        else:
            _print_expr(lhs, True, out, dim_names, sym_names)
            out.append(_BINOP_SPELLING[kind])
            _print_expr(rhs, True, out, dim_names, sym_names)
        if strong:
            out.append(")")
        return

    # Addition to a product with a negative constant factor prints as a subtraction.
    if _is_bin(rhs, _K.MUL):
        rrc = _const_val(rhs.rhs)
        if rrc is not None and rrc == -1:
            _print_expr(lhs, False, out, dim_names, sym_names)
            out.append(" - ")
            _print_expr(rhs.lhs, _is_bin(rhs.lhs, _K.ADD), out, dim_names, sym_names)
            if strong:
                out.append(")")
            return
        if rrc is not None and rrc < -1:
            _print_expr(lhs, False, out, dim_names, sym_names)
            out.append(" - ")
            _print_expr(rhs.lhs, True, out, dim_names, sym_names)
            out.append(f" * {_wrap(-rrc)}")
            if strong:
                out.append(")")
            return
    # Addition of a negative constant prints as a subtraction.
    rc = _const_val(rhs)
    if rc is not None and rc < 0:
        _print_expr(lhs, False, out, dim_names, sym_names)
        out.append(f" - {_wrap(-rc)}")
        if strong:
            out.append(")")
        return
    _print_expr(lhs, False, out, dim_names, sym_names)
    out.append(" + ")
    _print_expr(rhs, False, out, dim_names, sym_names)
    if strong:
        out.append(")")


def _print_id_lists(num_dims: int, num_symbols: int) -> str:
    s = "(" + ", ".join(f"d{i}" for i in range(num_dims)) + ")"
    if num_symbols:
        s += "[" + ", ".join(f"s{i}" for i in range(num_symbols)) + "]"
    return s


# ---------------------------------------------------------------------------------------------
# AffineMap
# ---------------------------------------------------------------------------------------------


def _check_positions(exprs: Iterable[AffineExpr], num_dims: int, num_symbols: int, what: str):
    for e in exprs:
        for sub in e.walk():
            if type(sub) is AffineDimExpr and sub.position >= num_dims:
                raise ValueError(f"{what} uses d{sub.position} but has only {num_dims} dims")
            if type(sub) is AffineSymbolExpr and sub.position >= num_symbols:
                raise ValueError(f"{what} uses s{sub.position} but has only {num_symbols} symbols")


class AffineMap:
    """MLIR ``mlir::AffineMap``: ``(d0, ..)[s0, ..] -> (results...)`` (immutable, hashable).

    Create with :meth:`get` (or the constructor, same signature); results are not simplified
    beyond the construction-time simplification of the expressions themselves, exactly like
    ``AffineMap::get``.
    """

    __slots__ = ("num_dims", "num_symbols", "results", "_hash")

    def __init__(self, num_dims: int, num_symbols: int, results: Sequence[ExprLike] = ()):
        if num_dims < 0 or num_symbols < 0:
            raise ValueError("negative dim/symbol count")
        res = tuple(_as_expr(r) for r in results)
        _check_positions(res, num_dims, num_symbols, "affine map")
        object.__setattr__(self, "num_dims", int(num_dims))
        object.__setattr__(self, "num_symbols", int(num_symbols))
        object.__setattr__(self, "results", res)
        object.__setattr__(self, "_hash", hash((num_dims, num_symbols, res)))

    def __setattr__(self, name, value):
        raise AttributeError("AffineMap is immutable")

    def __reduce__(self):
        return (AffineMap, (self.num_dims, self.num_symbols, self.results))

    # -- constructors -------------------------------------------------------------------------

    @staticmethod
    def get(num_dims: int, num_symbols: int, results: Sequence[ExprLike] = ()) -> "AffineMap":
        """MLIR ``AffineMap::get(dimCount, symbolCount, results)``."""
        return AffineMap(num_dims, num_symbols, results)

    @staticmethod
    def empty(num_dims: int = 0, num_symbols: int = 0) -> "AffineMap":
        """A map with no results, e.g. ``(d0) -> ()``."""
        return AffineMap(num_dims, num_symbols, ())

    @staticmethod
    def identity(n: int) -> "AffineMap":
        """MLIR ``getMultiDimIdentityMap``."""
        return AffineMap(n, 0, [dim(i) for i in range(n)])

    multi_dim_identity = identity

    @staticmethod
    def minor_identity(num_dims: int, num_results: int) -> "AffineMap":
        """MLIR ``getMinorIdentityMap``: the last ``num_results`` dims."""
        if num_results > num_dims:
            raise ValueError("more results than dims")
        return AffineMap(num_dims, 0, [dim(i) for i in range(num_dims - num_results, num_dims)])

    @staticmethod
    def constant_map(v: int) -> "AffineMap":
        """MLIR ``getConstantMap``: ``() -> (v)``."""
        return AffineMap(0, 0, [constant(v)])

    @staticmethod
    def permutation(perm: Sequence[int]) -> "AffineMap":
        """MLIR ``getPermutationMap``: ``(d0..dn-1) -> (d[perm[0]], ...)``."""
        perm = list(perm)
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(f"not a permutation: {perm}")
        return AffineMap(len(perm), 0, [dim(p) for p in perm])

    # -- queries -------------------------------------------------------------------------------

    @property
    def num_results(self) -> int:
        return len(self.results)

    @property
    def num_inputs(self) -> int:
        return self.num_dims + self.num_symbols

    def get_result(self, i: int) -> AffineExpr:
        return self.results[i]

    def is_empty(self) -> bool:
        """MLIR ``isEmpty``: no dims, no symbols, no results."""
        return self.num_dims == 0 and self.num_symbols == 0 and not self.results

    def is_identity(self) -> bool:
        """MLIR ``isIdentity``: ``num_dims == num_results`` and result i is ``di``."""
        if self.num_dims != len(self.results):
            return False
        return all(type(r) is AffineDimExpr and r.position == i
                   for i, r in enumerate(self.results))

    def is_minor_identity(self) -> bool:
        """MLIR ``isMinorIdentity``."""
        return self.num_dims >= len(self.results) and \
            self == AffineMap.minor_identity(self.num_dims, len(self.results))

    def is_constant(self) -> bool:
        """MLIR ``isConstant``: every result is a constant (true for no results)."""
        return all(type(r) is AffineConstantExpr for r in self.results)

    def is_single_constant(self) -> bool:
        """MLIR ``isSingleConstant``."""
        return len(self.results) == 1 and type(self.results[0]) is AffineConstantExpr

    @property
    def single_constant_result(self) -> int:
        """MLIR ``getSingleConstantResult``."""
        if not self.is_single_constant():
            raise ValueError(f"map {self} is not a single constant")
        return self.results[0].value

    @property
    def constant_results(self) -> tuple[int, ...]:
        """MLIR ``getConstantResults`` (requires ``is_constant()``)."""
        if not self.is_constant():
            raise ValueError(f"map {self} is not constant")
        return tuple(r.value for r in self.results)

    def is_projected_permutation(self, allow_zero_in_results: bool = False) -> bool:
        """MLIR ``isProjectedPermutation``."""
        if self.num_symbols > 0 or len(self.results) > self.num_inputs:
            return False
        seen = set()
        for r in self.results:
            if type(r) is AffineDimExpr:
                if r.position in seen:
                    return False
                seen.add(r.position)
            elif not (allow_zero_in_results and _const_val(r) == 0):
                return False
        return True

    def is_permutation(self) -> bool:
        """MLIR ``isPermutation``."""
        return self.num_dims == len(self.results) and self.is_projected_permutation()

    def is_pure_affine(self) -> bool:
        return all(r.is_pure_affine() for r in self.results)

    def is_symbolic_or_constant(self) -> bool:
        return all(r.is_symbolic_or_constant() for r in self.results)

    def used_dims(self) -> frozenset[int]:
        return frozenset().union(*(r.used_dims() for r in self.results))

    def used_symbols(self) -> frozenset[int]:
        return frozenset().union(*(r.used_symbols() for r in self.results))

    def is_function_of_dim(self, position: int) -> bool:
        return any(r.is_function_of_dim(position) for r in self.results)

    def is_function_of_symbol(self, position: int) -> bool:
        return any(r.is_function_of_symbol(position) for r in self.results)

    # -- operations -----------------------------------------------------------------------------

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> tuple[int, ...]:
        if len(dims) != self.num_dims or len(symbols) != self.num_symbols:
            raise ValueError(f"map {self} expects {self.num_dims} dims and {self.num_symbols} "
                             f"symbols, got {len(dims)} and {len(symbols)}")
        return tuple(r.evaluate(dims, symbols) for r in self.results)

    def replace_dims_and_symbols(self, dims: Sequence[ExprLike], symbols: Sequence[ExprLike],
                                 num_dims: int, num_symbols: int) -> "AffineMap":
        """MLIR ``AffineMap::replaceDimsAndSymbols(dims, syms, numResultDims, numResultSyms)``."""
        d = tuple(_as_expr(x) for x in dims)
        s = tuple(_as_expr(x) for x in symbols)
        return AffineMap(num_dims, num_symbols, [r._replace(d, s) for r in self.results])

    def replace(self, mapping: dict, num_dims: Optional[int] = None,
                num_symbols: Optional[int] = None) -> "AffineMap":
        """MLIR's sparse ``AffineMap::replace(DenseMap, numDims, numSymbols)``."""
        return AffineMap(self.num_dims if num_dims is None else num_dims,
                         self.num_symbols if num_symbols is None else num_symbols,
                         [r.replace_expr(mapping) for r in self.results])

    def compose(self, other: "AffineMap") -> "AffineMap":
        """MLIR ``AffineMap::compose``: ``self ∘ other`` (apply ``other`` first).

        The result has ``other.num_dims`` dims and ``self.num_symbols + other.num_symbols``
        symbols: ``self``'s symbols come first, ``other``'s are shifted after them."""
        if self.num_dims != other.num_results:
            raise ValueError(f"cannot compose {self} with {other}: number of results mismatch")
        n_self_syms = self.num_symbols
        num_symbols = n_self_syms + other.num_symbols
        new_dims = [dim(i) for i in range(other.num_dims)]
        new_syms = [symbol(i) for i in range(n_self_syms, num_symbols)]
        shifted = other.replace_dims_and_symbols(new_dims, new_syms, other.num_dims, num_symbols)
        return AffineMap(other.num_dims, num_symbols,
                         [r._replace(shifted.results, ()) for r in self.results])

    def sub_map(self, indices: Sequence[int]) -> "AffineMap":
        """MLIR ``getSubMap``: keep the results at ``indices``."""
        return AffineMap(self.num_dims, self.num_symbols, [self.results[i] for i in indices])

    def drop_results(self, indices: Iterable[int]) -> "AffineMap":
        """MLIR ``dropResults``."""
        drop = set(indices)
        return AffineMap(self.num_dims, self.num_symbols,
                         [r for i, r in enumerate(self.results) if i not in drop])

    def shift_dims(self, shift: int, offset: int = 0) -> "AffineMap":
        """MLIR ``AffineMap::shiftDims``."""
        return AffineMap(self.num_dims + shift, self.num_symbols,
                         [r.shift_dims(self.num_dims, shift, offset) for r in self.results])

    def shift_symbols(self, shift: int, offset: int = 0) -> "AffineMap":
        """MLIR ``AffineMap::shiftSymbols``."""
        return AffineMap(self.num_dims, self.num_symbols + shift,
                         [r.shift_symbols(self.num_symbols, shift, offset) for r in self.results])

    # -- dunder ------------------------------------------------------------------------------------

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, AffineMap):
            return NotImplemented
        return (self._hash == other._hash and self.num_dims == other.num_dims
                and self.num_symbols == other.num_symbols and self.results == other.results)

    def __hash__(self):
        return self._hash

    def __str__(self) -> str:
        return (_print_id_lists(self.num_dims, self.num_symbols) + " -> ("
                + ", ".join(r.to_str() for r in self.results) + ")")

    def __repr__(self) -> str:
        return f"AffineMap({str(self)!r})"


# ---------------------------------------------------------------------------------------------
# IntegerSet
# ---------------------------------------------------------------------------------------------


class IntegerSet:
    """MLIR ``mlir::IntegerSet``: conjunction of ``constraint >= 0`` / ``constraint == 0``
    (``eq_flags[i]`` selects equality) over dims and symbols (immutable, hashable)."""

    __slots__ = ("num_dims", "num_symbols", "constraints", "eq_flags", "_hash")

    def __init__(self, num_dims: int, num_symbols: int, constraints: Sequence[ExprLike],
                 eq_flags: Sequence[bool]):
        cons = tuple(_as_expr(c) for c in constraints)
        eqs = tuple(bool(f) for f in eq_flags)
        if not cons and not eqs:
            # MLIR's IntegerSet needs >= 1 constraint; like its parser, an empty conjunction
            # becomes the trivially true `0 == 0`.
            cons, eqs = (AffineConstantExpr(0),), (True,)
        if len(cons) != len(eqs):
            raise ValueError("constraints and eq_flags must have the same length")
        if num_dims < 0 or num_symbols < 0:
            raise ValueError("negative dim/symbol count")
        _check_positions(cons, num_dims, num_symbols, "integer set")
        object.__setattr__(self, "num_dims", int(num_dims))
        object.__setattr__(self, "num_symbols", int(num_symbols))
        object.__setattr__(self, "constraints", cons)
        object.__setattr__(self, "eq_flags", eqs)
        object.__setattr__(self, "_hash", hash((num_dims, num_symbols, cons, eqs)))

    def __setattr__(self, name, value):
        raise AttributeError("IntegerSet is immutable")

    def __reduce__(self):
        return (IntegerSet, (self.num_dims, self.num_symbols, self.constraints, self.eq_flags))

    @staticmethod
    def get(num_dims: int, num_symbols: int, constraints: Sequence[ExprLike],
            eq_flags: Sequence[bool]) -> "IntegerSet":
        """MLIR ``IntegerSet::get``."""
        return IntegerSet(num_dims, num_symbols, constraints, eq_flags)

    @staticmethod
    def empty(num_dims: int = 0, num_symbols: int = 0) -> "IntegerSet":
        """MLIR ``IntegerSet::getEmptySet``: canonical ``(d0..) : (1 == 0)``."""
        return IntegerSet(num_dims, num_symbols, (constant(1),), (True,))

    get_empty_set = empty

    @staticmethod
    def universe(num_dims: int = 0, num_symbols: int = 0) -> "IntegerSet":
        """The always-true set MLIR's parser builds for ``() : ()``: ``(0 == 0)``."""
        return IntegerSet(num_dims, num_symbols, (constant(0),), (True,))

    def is_empty_integer_set(self) -> bool:
        """MLIR ``isEmptyIntegerSet``: structurally equal to the canonical empty set."""
        return self == IntegerSet.empty(self.num_dims, self.num_symbols)

    @property
    def num_constraints(self) -> int:
        return len(self.constraints)

    @property
    def num_equalities(self) -> int:
        return sum(self.eq_flags)

    @property
    def num_inequalities(self) -> int:
        return len(self.eq_flags) - sum(self.eq_flags)

    @property
    def num_inputs(self) -> int:
        return self.num_dims + self.num_symbols

    def is_eq(self, i: int) -> bool:
        return self.eq_flags[i]

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> bool:
        """True iff the point satisfies every constraint."""
        if len(dims) != self.num_dims or len(symbols) != self.num_symbols:
            raise ValueError(f"set {self} expects {self.num_dims} dims and {self.num_symbols} "
                             f"symbols, got {len(dims)} and {len(symbols)}")
        for c, eq in zip(self.constraints, self.eq_flags):
            v = c.evaluate(dims, symbols)
            if (v != 0) if eq else (v < 0):
                return False
        return True

    def replace_dims_and_symbols(self, dims: Sequence[ExprLike], symbols: Sequence[ExprLike],
                                 num_dims: int, num_symbols: int) -> "IntegerSet":
        """MLIR ``IntegerSet::replaceDimsAndSymbols``."""
        d = tuple(_as_expr(x) for x in dims)
        s = tuple(_as_expr(x) for x in symbols)
        return IntegerSet(num_dims, num_symbols, [c._replace(d, s) for c in self.constraints],
                          self.eq_flags)

    def used_dims(self) -> frozenset[int]:
        return frozenset().union(*(c.used_dims() for c in self.constraints))

    def used_symbols(self) -> frozenset[int]:
        return frozenset().union(*(c.used_symbols() for c in self.constraints))

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, IntegerSet):
            return NotImplemented
        return (self._hash == other._hash and self.num_dims == other.num_dims
                and self.num_symbols == other.num_symbols
                and self.constraints == other.constraints and self.eq_flags == other.eq_flags)

    def __hash__(self):
        return self._hash

    def __str__(self) -> str:
        body = ", ".join(c.to_str() + (" == 0" if eq else " >= 0")
                         for c, eq in zip(self.constraints, self.eq_flags))
        return _print_id_lists(self.num_dims, self.num_symbols) + " : (" + body + ")"

    def __repr__(self) -> str:
        return f"IntegerSet({str(self)!r})"


# ---------------------------------------------------------------------------------------------
# Parser for map / set bodies (MLIR AffineParser.cpp)
# ---------------------------------------------------------------------------------------------


class AffineParseError(ValueError):
    """Syntax / semantic error while parsing affine text; ``column`` is 1-based."""

    def __init__(self, message: str, column: int, text: str = ""):
        self.message = message
        self.column = column
        self.text = text
        super().__init__(f"column {column}: {message}")


_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<hex>0x[0-9a-fA-F]+)
  | (?P<int>[0-9]+(?P<frac>\.[0-9]*)?)
  | (?P<id>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<ssa>%[A-Za-z0-9_$.\-]+)
  | (?P<arrow>->)
  | (?P<punct>[()\[\],+\-*:<>=])
""", re.VERBOSE)

_HIGH_OPS = {"*": _K.MUL, "floordiv": _K.FLOORDIV, "ceildiv": _K.CEILDIV, "mod": _K.MOD}


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind, self.text, self.pos = kind, text, pos


def _lex(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise AffineParseError(f"unexpected character {text[pos]!r}", pos + 1, text)
        kind = m.lastgroup
        if kind == "frac":
            kind = "int"
        if kind == "int" and m.group("frac") is not None:
            raise AffineParseError("expected integer, found floating point literal", pos + 1, text)
        if kind != "ws":
            toks.append(_Tok(kind, m.group(0), pos))
        pos = m.end()
    toks.append(_Tok("eof", "", n))
    return toks


class _AffineParser:
    """Recursive-descent port of MLIR's ``AffineParser`` (same construction order)."""

    def __init__(self, text: str, names: Optional[dict[str, AffineExpr]] = None,
                 auto_names: bool = False):
        self.text = text
        self.toks = _lex(text)
        self.i = 0
        self.names: dict[str, AffineExpr] = dict(names or {})
        self.auto_names = auto_names

    # -- token helpers --------------------------------------------------------------------------
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def error(self, msg: str, tok: Optional[_Tok] = None) -> AffineParseError:
        t = tok or self.tok
        return AffineParseError(msg, t.pos + 1, self.text)

    def is_punct(self, s: str) -> bool:
        t = self.tok
        return t.kind in ("punct", "arrow") and t.text == s

    def consume_if(self, s: str) -> bool:
        if self.is_punct(s):
            self.i += 1
            return True
        return False

    def expect(self, s: str, msg: str) -> _Tok:
        if not self.is_punct(s):
            raise self.error(msg)
        t = self.tok
        self.i += 1
        return t

    def comma_list(self, open_: str, close: str, elt: Callable[[], None], ctx: str) -> None:
        self.expect(open_, f"expected '{open_}'{ctx}")
        if self.consume_if(close):
            return
        while True:
            elt()
            if self.consume_if(close):
                return
            if not self.consume_if(","):
                raise self.error(f"expected ',' or '{close}'{ctx}")

    # -- declarations ---------------------------------------------------------------------------
    def parse_id_definition(self, expr: AffineExpr) -> None:
        t = self.tok
        if t.kind != "id":
            raise self.error("expected bare identifier")
        if t.text in self.names:
            raise self.error(f"redefinition of identifier '{t.text}'")
        self.names[t.text] = expr
        self.i += 1

    def parse_dim_and_symbol_lists(self) -> tuple[int, int]:
        nd = [0]
        ns = [0]

        def dim_elt():
            self.parse_id_definition(dim(nd[0]))
            nd[0] += 1

        def sym_elt():
            self.parse_id_definition(symbol(ns[0]))
            ns[0] += 1

        self.comma_list("(", ")", dim_elt, " in dimensional identifier list")
        if self.is_punct("["):
            self.comma_list("[", "]", sym_elt, " in symbol list")
        return nd[0], ns[0]

    # -- expressions ----------------------------------------------------------------------------
    def binary_high(self, op: AffineExprKind, lhs: AffineExpr, rhs: AffineExpr,
                    op_tok: _Tok) -> AffineExpr:
        if op is _K.MUL:
            if not lhs.is_symbolic_or_constant() and not rhs.is_symbolic_or_constant():
                raise self.error("non-affine expression: at least one of the multiply operands "
                                 "has to be either a constant or symbolic", op_tok)
            return lhs * rhs
        if not rhs.is_symbolic_or_constant():
            raise self.error(f"non-affine expression: right operand of {op_tok.text} has to be "
                             "either a constant or symbolic", op_tok)
        if op is _K.FLOORDIV:
            return lhs.floordiv(rhs)
        if op is _K.CEILDIV:
            return lhs.ceildiv(rhs)
        return lhs.mod(rhs)

    @staticmethod
    def binary_low(op: str, lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
        return lhs + rhs if op == "+" else lhs - rhs

    def consume_low_op(self) -> Optional[str]:
        t = self.tok
        if t.kind == "punct" and t.text in "+-":
            self.i += 1
            return t.text
        return None

    def consume_high_op(self) -> Optional[tuple[AffineExprKind, _Tok]]:
        t = self.tok
        if (t.kind == "punct" and t.text == "*") or (t.kind == "id" and t.text in _HIGH_OPS):
            self.i += 1
            return _HIGH_OPS[t.text], t
        return None

    def parse_high_prec(self, llhs: Optional[AffineExpr], llhs_op, llhs_tok) -> AffineExpr:
        # Iterative form of MLIR's (tail-recursive) parseAffineHighPrecOpExpr: left-assoc.
        while True:
            lhs = self.parse_operand(llhs)
            hop = self.consume_high_op()
            if hop is None:
                return self.binary_high(llhs_op, llhs, lhs, llhs_tok) if llhs is not None else lhs
            llhs = self.binary_high(llhs_op, llhs, lhs, llhs_tok) if llhs is not None else lhs
            llhs_op, llhs_tok = hop

    def parse_low_prec(self, llhs: Optional[AffineExpr], llhs_op: Optional[str]) -> AffineExpr:
        # Iterative form of MLIR's (tail-recursive) parseAffineLowPrecOpExpr.
        while True:
            lhs = self.parse_operand(llhs)
            lop = self.consume_low_op()
            if lop is not None:
                if llhs is not None:
                    llhs = self.binary_low(llhs_op, llhs, lhs)
                else:
                    llhs = lhs
                llhs_op = lop
                continue
            hop = self.consume_high_op()
            if hop is not None:
                op, op_tok = hop
                high = self.parse_high_prec(lhs, op, op_tok)
                expr = self.binary_low(llhs_op, llhs, high) if llhs is not None else high
                nxt = self.consume_low_op()
                if nxt is not None:
                    llhs, llhs_op = expr, nxt
                    continue
                return expr
            if llhs is not None:
                return self.binary_low(llhs_op, llhs, lhs)
            return lhs

    def parse_expr(self) -> AffineExpr:
        return self.parse_low_prec(None, None)

    def parse_operand(self, lhs: Optional[AffineExpr]) -> AffineExpr:
        t = self.tok
        if t.kind == "int" or t.kind == "hex":
            val = int(t.text, 16) if t.kind == "hex" else int(t.text)
            if val > _I64_MAX:
                raise self.error("constant too large for index")
            self.i += 1
            return constant(val)
        if t.kind == "punct":
            if t.text == "(":
                self.i += 1
                if self.is_punct(")"):
                    raise self.error("no expression inside parentheses")
                e = self.parse_expr()
                self.expect(")", "expected ')'")
                return e
            if t.text == "-":
                # MLIR parseNegateExpression: negation binds tighter than any binary op.
                self.i += 1
                nt = self.tok
                if not (nt.kind in ("int", "hex", "id", "ssa")
                        or (nt.kind == "punct" and nt.text in "(-")):
                    raise self.error("missing operand of negation")
                return self.parse_operand(lhs) * -1
            if t.text in "+*":
                raise self.error("missing right operand of binary operator" if lhs is not None
                                 else "missing left operand of binary operator")
        if t.kind == "ssa":
            raise self.error("unexpected ssa identifier")
        if t.kind == "id":
            if t.text == "symbol":
                raise self.error("unexpected ssa identifier" if self.toks[self.i + 1].text == "("
                                 else "expected '(' at start of SSA symbol")
            e = self.names.get(t.text)
            if e is None and self.auto_names:
                m = re.fullmatch(r"([ds])([0-9]+)", t.text)
                if m:
                    e = dim(int(m.group(2))) if m.group(1) == "d" else symbol(int(m.group(2)))
            if e is None:
                raise self.error(f"use of undeclared identifier '{t.text}'")
            self.i += 1
            return e
        raise self.error("missing right operand of binary operator" if lhs is not None
                         else "expected affine expression")

    # -- maps / sets ----------------------------------------------------------------------------
    def parse_constraint(self) -> tuple[AffineExpr, bool]:
        lhs = self.parse_expr()
        t = self.tok
        for a, eq, swap in ((">", False, False), ("<", False, True), ("=", True, False)):
            if self.is_punct(a) and self.toks[self.i + 1].kind == "punct" \
                    and self.toks[self.i + 1].text == "=":
                self.i += 2
                rhs = self.parse_expr()
                return (rhs - lhs if swap else lhs - rhs), eq
        raise self.error("expected '== affine-expr' or '>= affine-expr' at end of affine "
                         "constraint", t)

    def parse_map_or_set(self) -> Union[AffineMap, IntegerSet]:
        nd, ns = self.parse_dim_and_symbol_lists()
        if self.consume_if("->"):
            results: list[AffineExpr] = []
            self.comma_list("(", ")", lambda: results.append(self.parse_expr()),
                            " in affine map range")
            return AffineMap(nd, ns, results)
        if not self.consume_if(":"):
            raise self.error("expected '->' or ':'")
        cons: list[AffineExpr] = []
        eqs: list[bool] = []

        def elt():
            c, eq = self.parse_constraint()
            cons.append(c)
            eqs.append(eq)

        self.comma_list("(", ")", elt, " in integer set constraint list")
        if not cons:
            return IntegerSet.universe(nd, ns)
        return IntegerSet(nd, ns, cons, eqs)

    def expect_eof(self) -> None:
        if self.tok.kind != "eof":
            raise self.error("encountered unexpected token")


_WRAPPER_RE = re.compile(r"^\s*(affine_map|affine_set)\s*<(.*)>\s*$", re.S)


def _strip_wrapper(text: str) -> tuple[str, Optional[str]]:
    m = _WRAPPER_RE.match(text)
    if m:
        return m.group(2), m.group(1)
    return text, None


def parse_affine_map_or_integer_set(text: str) -> Union[AffineMap, IntegerSet]:
    """Parse ``(dims)[syms] -> (exprs)`` or ``(dims)[syms] : (constraints)`` (optionally wrapped
    in ``affine_map<...>`` / ``affine_set<...>``). Raises :class:`AffineParseError` (a
    ``ValueError``) with a 1-based column on bad input (columns refer to the unwrapped body)."""
    body, _ = _strip_wrapper(text)
    p = _AffineParser(body)
    result = p.parse_map_or_set()
    p.expect_eof()
    return result


def parse_affine_map(text: str) -> AffineMap:
    """Parse an affine map body such as ``"(d0, d1)[s0] -> (d0 floordiv 4, d1 + s0)"``.
    Dim/symbol names are whatever the lists declare, e.g. ``"(i, j)[N] -> (i + N)"``."""
    body, _ = _strip_wrapper(text)
    p = _AffineParser(body)
    result = p.parse_map_or_set()
    if not isinstance(result, AffineMap):
        raise AffineParseError("expected AffineMap, but got IntegerSet", 1, body)
    p.expect_eof()
    return result


def parse_integer_set(text: str) -> IntegerSet:
    """Parse an integer set body such as ``"(d0)[s0] : (d0 - s0 >= 0, d0 == 0)"``."""
    body, _ = _strip_wrapper(text)
    p = _AffineParser(body)
    result = p.parse_map_or_set()
    if not isinstance(result, IntegerSet):
        raise AffineParseError("expected IntegerSet, but got AffineMap", 1, body)
    p.expect_eof()
    return result


def parse_affine_expr(text: str, dim_names: Optional[Sequence[str]] = None,
                      symbol_names: Optional[Sequence[str]] = None) -> AffineExpr:
    """Parse a single affine expression. Identifiers are resolved through ``dim_names`` /
    ``symbol_names`` (position = index); when both are omitted, ``dN`` / ``sN`` are recognized
    automatically."""
    names: dict[str, AffineExpr] = {}
    for i, n in enumerate(dim_names or ()):
        names[n] = dim(i)
    for i, n in enumerate(symbol_names or ()):
        if n in names:
            raise ValueError(f"duplicate identifier '{n}'")
        names[n] = symbol(i)
    p = _AffineParser(text, names, auto_names=dim_names is None and symbol_names is None)
    e = p.parse_expr()
    p.expect_eof()
    return e
