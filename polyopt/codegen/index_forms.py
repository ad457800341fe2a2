"""Affine expressions as linear forms over LLVM values, and their emission as LLVM IR.

Bounds, ``affine.apply``/``min``/``max`` and subscripts are flattened into
``sum(coeff * term) + const`` before emission, so that constants fold, ``floordiv``/``mod`` by
a constant drop the terms whose coefficient is a multiple of it, and value ranges of loop IVs
fold divisions that are constant over a loop (see :class:`IndexFormLowering`).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from llvmlite import ir

from polyopt.affine.affine_expr import (
    AffineBinaryExpr,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineExprKind,
    AffineMap,
    AffineSymbolExpr,
)
from polyopt.affine.ir import Value
from polyopt.codegen.llvm_helpers import (
    I1,
    I64,
    NSW,
    ceildiv_positive,
    ceildiv_signed,
    floordiv_positive,
    floordiv_signed,
    i64,
    is_pow2,
    mod_positive,
    mod_signed,
)


class Lin:
    """``sum(coeff * term) + const`` over i64; terms are leaves (``("v", id)``) or opaque
    non-linear sub-expressions (``("fdiv"|"cdiv"|"mod"|"mul", lhs Lin, rhs Lin)``)."""

    __slots__ = ("terms", "const", "_hash")

    def __init__(self, terms: Optional[dict] = None, const: int = 0):
        self.terms = {k: c for k, c in (terms or {}).items() if c != 0}
        self.const = const
        self._hash = hash((frozenset(self.terms.items()), const))

    @staticmethod
    def constant(c: int) -> "Lin":
        return Lin(None, c)

    @staticmethod
    def term(key) -> "Lin":
        return Lin({key: 1}, 0)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __eq__(self, other):
        return isinstance(other, Lin) and self.const == other.const and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def add(self, other: "Lin") -> "Lin":
        terms = dict(self.terms)
        for k, c in other.terms.items():
            terms[k] = terms.get(k, 0) + c
        return Lin(terms, self.const + other.const)

    def scale(self, k: int) -> "Lin":
        if k == 0:
            return Lin.constant(0)
        return Lin({t: c * k for t, c in self.terms.items()}, self.const * k)

    def divisor(self) -> int:
        """gcd of all coefficients and the constant (0 for the zero form)."""
        g = abs(self.const)
        for c in self.terms.values():
            g = math.gcd(g, abs(c))
        return g


Range = tuple  # (lo | None, hi | None), inclusive


def range_scale(r: Range, c: int) -> Range:
    lo, hi = r
    if c >= 0:
        return (None if lo is None else lo * c, None if hi is None else hi * c)
    return (None if hi is None else hi * c, None if lo is None else lo * c)


class DivByZero(Exception):
    pass


class IndexFormLowering:
    """The part of :class:`~polyopt.codegen.lowering.FunctionLowering` that flattens affine
    expressions into :class:`Lin` forms and emits them (``self.b`` is the IR builder)."""

    # -- run-time checked division ------------------------------------------------------------

    def checked_divisor(self, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
        """The divisor ``y`` of ``x``, with a run-time check that the division is defined: a
        zero divisor (and ``INT_MIN / -1`` for signed ones) is undefined in MLIR and traps on
        x86, which would kill the Python process; polyopt records an error of the call instead
        (as a failed ``cf.assert``, naming the op being lowered) and divides by 1.  Constant
        divisors fold the check away."""
        b = self.b
        ty = y.type
        elem = ty.element if isinstance(ty, ir.VectorType) else ty

        def splat(v: int) -> ir.Constant:
            c = ir.Constant(elem, v)
            return ir.Constant(ty, [c] * ty.count) if isinstance(ty, ir.VectorType) else c
        bad = b.icmp_unsigned("==", y, splat(0))
        if signed and elem.width > 1:
            int_min = splat(-(1 << (elem.width - 1)))
            overflow = b.and_(b.icmp_signed("==", x, int_min), b.icmp_signed("==", y, splat(-1)))
            bad = b.or_(bad, overflow)
        safe = b.select(bad, splat(1), y)
        any_bad = bad
        if isinstance(ty, ir.VectorType):
            fn = self.ml.intrinsic(f"llvm.vector.reduce.or.v{ty.count}i1", I1, [bad.type])
            any_bad = b.call(fn, [bad])
        with b.if_then(any_bad, likely=False):
            op = self.op
            where = f"{op.loc}: " if op.loc is not None else ""
            what = "divides by zero or overflows (INT_MIN / -1)" if signed else "divides by zero"
            b.call(self.ml.runtime("polyopt_assert_fail"),
                   [self.ml.c_string(f"{where}error: '{op.name}' {what} at run time")])
        return safe

    # -- affine forms ---------------------------------------------------------------------------

    def leaf(self, llv: ir.Value) -> Lin:
        if isinstance(llv, ir.Constant) and isinstance(llv.constant, int):
            return Lin.constant(llv.constant)
        self.leaf_values[id(llv)] = llv
        return Lin.term(("v", id(llv)))

    def index_form(self, x) -> Lin:
        """The form of an ``int`` or of an ``i64`` LLVM value (a descriptor field)."""
        return Lin.constant(int(x)) if isinstance(x, int) else self.leaf(x)

    def form_of(self, v: Value) -> Lin:
        f = self.forms.get(v)
        if f is not None:
            return f
        return self.leaf(self.get(v))

    def flatten(self, e: AffineExpr, dims: Sequence[Lin], syms: Sequence[Lin]) -> Lin:
        if isinstance(e, AffineConstantExpr):
            return Lin.constant(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymbolExpr):
            return syms[e.position]
        assert isinstance(e, AffineBinaryExpr)
        a = self.flatten(e.lhs, dims, syms)
        b = self.flatten(e.rhs, dims, syms)
        k = e.kind
        if k is AffineExprKind.ADD:
            return a.add(b)
        if k is AffineExprKind.MUL:
            return self.lin_mul(a, b)
        if k is AffineExprKind.FLOORDIV:
            return self.lin_floordiv(a, b)
        if k is AffineExprKind.CEILDIV:
            return self.lin_ceildiv(a, b)
        return self.lin_mod(a, b)

    def map_forms(self, amap: AffineMap, operands: Sequence[Value]) -> list[Lin]:
        forms = [self.form_of(v) for v in operands]
        dims, syms = forms[:amap.num_dims], forms[amap.num_dims:]
        return [self.flatten(r, dims, syms) for r in amap.results]

    def lin_mul(self, a: Lin, b: Lin) -> Lin:
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
        return Lin.term(("mul", a, b))

    def _split(self, a: Lin, c: int) -> tuple[Lin, Lin]:
        """``a = c * q + r`` with the terms whose coefficient is a multiple of ``c`` in ``q``
        and the constant remainder in [0, c)."""
        q_terms, r_terms = {}, {}
        for k, coeff in a.terms.items():
            if coeff % c == 0:
                q_terms[k] = coeff // c
            else:
                r_terms[k] = coeff
        qc, rc = divmod(a.const, c)
        return Lin(q_terms, qc), Lin(r_terms, rc)

    def lin_floordiv(self, a: Lin, b: Lin) -> Lin:
        if not b.is_const:
            return Lin.term(("fdiv", a, b))
        c = b.const
        if c == 0:
            raise DivByZero
        if c < 0:
            return self.lin_floordiv(a.scale(-1), Lin.constant(-c))
        if a.is_const:
            return Lin.constant(a.const // c)
        if c == 1:
            return a
        q, r = self._split(a, c)
        if r.is_const:
            return q  # r.const in [0, c)
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return q.add(Lin.constant(lo // c))
        return q.add(Lin.term(("fdiv", r, Lin.constant(c))))

    def lin_ceildiv(self, a: Lin, b: Lin) -> Lin:
        if not b.is_const:
            return Lin.term(("cdiv", a, b))
        c = b.const
        if c == 0:
            raise DivByZero
        if c < 0:
            return self.lin_ceildiv(a.scale(-1), Lin.constant(-c))
        if a.is_const:
            return Lin.constant(-((-a.const) // c))
        if c == 1:
            return a
        q, r = self._split(a, c)
        if r.is_const:
            return q.add(Lin.constant(1 if r.const > 0 else 0))
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and -((-lo) // c) == -((-hi) // c):
            return q.add(Lin.constant(-((-lo) // c)))
        return q.add(Lin.term(("cdiv", r, Lin.constant(c))))

    def lin_mod(self, a: Lin, b: Lin) -> Lin:
        if not b.is_const:
            return Lin.term(("mod", a, b))
        c = b.const
        if c == 0:
            raise DivByZero
        if c < 0:  # a - c * floor(a / c), the result lies in (c, 0]
            return a.add(self.lin_floordiv(a, b).scale(-c))
        if a.is_const:
            return Lin.constant(a.const % c)
        if c == 1:
            return Lin.constant(0)
        _, r = self._split(a, c)
        if r.is_const:
            return r
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return r.add(Lin.constant(-(lo // c) * c))
        return Lin.term(("mod", r, Lin.constant(c)))

    def lin_range(self, a: Lin) -> Range:
        lo = hi = a.const
        for key, c in a.terms.items():
            tlo, thi = range_scale(self.key_range(key), c)
            lo = None if lo is None or tlo is None else lo + tlo
            hi = None if hi is None or thi is None else hi + thi
            if lo is None and hi is None:
                break
        return lo, hi

    def key_range(self, key) -> Range:
        tag = key[0]
        if tag == "v":
            return self.leaf_ranges.get(key[1], (None, None))
        a, b = key[1], key[2]
        if tag == "mul":
            (alo, ahi), (blo, bhi) = self.lin_range(a), self.lin_range(b)
            if None in (alo, ahi, blo, bhi):
                return None, None
            corners = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return min(corners), max(corners)
        if not (b.is_const and b.const > 0):
            return None, None
        c = b.const
        lo, hi = self.lin_range(a)
        if tag == "fdiv":
            return (None if lo is None else lo // c, None if hi is None else hi // c)
        if tag == "cdiv":
            return (None if lo is None else -((-lo) // c), None if hi is None else -((-hi) // c))
        if lo is not None and hi is not None and lo // c == hi // c:
            return lo % c, hi % c
        return 0, c - 1

    def emit_lin(self, a: Lin, cache: Optional[dict] = None) -> ir.Value:
        if cache is None:
            cache = {}
        hit = cache.get(a)
        if hit is not None:
            return hit
        b = self.b
        acc = None
        # positive coefficients first, so that the sum starts without a negation
        for key, c in sorted(a.terms.items(), key=lambda kc: kc[1] < 0):
            v = cache.get(key)
            if v is None:
                v = self.emit_key(key, cache)
                cache[key] = v
            if acc is not None and c < 0:
                acc = b.sub(acc, v if c == -1 else b.mul(v, i64(-c), flags=NSW), flags=NSW)
                continue
            t = v if c == 1 else b.mul(v, i64(c), flags=NSW)
            acc = t if acc is None else b.add(acc, t, flags=NSW)
        if acc is None:
            result = i64(a.const)
        elif a.const:
            result = b.add(acc, i64(a.const), flags=NSW)
        else:
            result = acc
        cache[a] = result
        return result

    def emit_key(self, key, cache: dict) -> ir.Value:
        tag = key[0]
        if tag == "v":
            return self.leaf_values[key[1]]
        b = self.b
        a, d = key[1], key[2]
        va = self.emit_lin(a, cache)
        if tag == "mul":
            return b.mul(va, self.emit_lin(d, cache), flags=NSW)
        if d.is_const and d.const > 0:
            c = d.const
            lo, _ = self.lin_range(a)
            nonneg = lo is not None and lo >= 0
            k = c.bit_length() - 1
            if tag == "fdiv":
                if is_pow2(c):
                    return (b.lshr if nonneg else b.ashr)(va, i64(k))
                if nonneg:
                    return b.udiv(va, i64(c))
                return floordiv_positive(b, va, i64(c))
            if tag == "cdiv":
                if nonneg:
                    biased = b.add(va, i64(c - 1), flags=("nuw", "nsw"))
                    return b.lshr(biased, i64(k)) if is_pow2(c) else b.udiv(biased, i64(c))
                if is_pow2(c):
                    return b.sub(i64(0), b.ashr(b.sub(i64(0), va), i64(k)))
                return ceildiv_positive(b, va, i64(c))
            # mod
            if is_pow2(c):
                return b.and_(va, i64(c - 1))
            if nonneg:
                return b.urem(va, i64(c))
            return mod_positive(b, va, i64(c))
        vd = self.checked_divisor(va, self.emit_lin(d, cache), signed=True)
        if tag == "fdiv":
            return floordiv_signed(b, va, vd)
        if tag == "cdiv":
            return ceildiv_signed(b, va, vd)
        return mod_signed(b, va, vd)

    def emit_expr_values(self, amap: AffineMap, operands: Sequence[Value]) -> list[ir.Value]:
        cache: dict = {}
        return [self.emit_lin(f, cache) for f in self.map_forms(amap, operands)]

    def combine_bound(self, forms: list[Lin], is_max: bool) -> tuple[ir.Value, Range]:
        """max (lower bounds) or min (upper bounds) of the forms, with its range."""
        # drop forms that are provably dominated by a constant one
        consts = [f.const for f in forms if f.is_const]
        ranges = [self.lin_range(f) for f in forms]
        if consts:
            best = max(consts) if is_max else min(consts)
            keep = []
            for f, (lo, hi) in zip(forms, ranges):
                if f.is_const:
                    continue
                if is_max and hi is not None and hi <= best:
                    continue
                if not is_max and lo is not None and lo >= best:
                    continue
                keep.append(f)
            forms = keep + [Lin.constant(best)]
            ranges = [self.lin_range(f) for f in forms]
        cache: dict = {}
        vals = [self.emit_lin(f, cache) for f in forms]
        result = vals[0]
        name = "llvm.smax.i64" if is_max else "llvm.smin.i64"
        for v in vals[1:]:
            result = self.b.call(self.ml.intrinsic(name, I64, [I64, I64]), [result, v])
        los = [lo for lo, _ in ranges]
        his = [hi for _, hi in ranges]
        if is_max:
            known = [x for x in los if x is not None]
            rlo = max(known) if known else None
            rhi = None if None in his else max(his)
        else:
            known = [x for x in his if x is not None]
            rhi = min(known) if known else None
            rlo = None if None in los else min(los)
        return result, (rlo, rhi)
