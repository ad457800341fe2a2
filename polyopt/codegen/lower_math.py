"""Lowering of the math dialect, as MLIR's ``convert-math-to-llvm`` and ``convert-math-to-libm``
do it, on scalars and n-D vectors (and ``vector.fma`` with ``math.fma``).

* LLVM intrinsics where LLVM 22 has them: ``llvm.exp``, ``llvm.log``, ``llvm.sqrt``,
  ``llvm.fabs``, ``llvm.pow``, ``llvm.tanh``, ``llvm.atan2``, ``llvm.powi`` (``fpowi`` with an
  ``i32`` exponent), ``llvm.abs``/``ctlz``/``cttz`` (zero not poison), ``llvm.is.fpclass``
  (``isnan``...) ...; ``rsqrt`` is ``1 / sqrt(x)``, both rounded to the type;
* libm (resolved by the JIT from the process) otherwise: ``erf``, ``erfc``, ``cbrt``,
  ``expm1``, ``log1p``, ``acosh``, ``asinh``, ``atanh`` (``erff``... for f32), element by
  element on vectors.  ``expm1``/``log1p`` are libm's, as ``--convert-math-to-libm`` makes them
  (``--convert-math-to-llvm`` alone computes ``exp(x) - 1`` and ``log(1 + x)``, which lose the
  precision these functions exist for);
* ``ipowi`` and ``fpowi`` with a non-``i32`` exponent: the functions of
  ``--convert-math-to-funcs`` (binary exponentiation), as internal helpers;
* ``clampf``: ``maximumf(minimumf(x, max), min)``, its documented semantics;
* f16 and bf16: computed in f32 and rounded once to the type (exact for the correctly
  rounded operations), as LLVM promotes them but without ``vcvtneps2bf16``'s flush of bf16
  subnormals; ``fma`` on them in f64 rounded to odd, then to the type (a single rounding).
"""

from __future__ import annotations

from typing import Callable

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.affine.types import FloatType, Type, VectorType, element_type_of
from polyopt.codegen import float_casts
from polyopt.codegen.llvm_helpers import (F32, F64, I32, Unsupported, call_intrinsic,
                                          check_float, fastmath_flags, int_const,
                                          llvm_float_format)
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.vector_math import vector_call

_INTRINSIC_UNARY = {
    "math.absf": "fabs", "math.acos": "acos", "math.asin": "asin", "math.atan": "atan",
    "math.ceil": "ceil", "math.cos": "cos", "math.cosh": "cosh", "math.exp": "exp",
    "math.exp2": "exp2", "math.floor": "floor", "math.log": "log", "math.log10": "log10",
    "math.log2": "log2", "math.round": "round", "math.roundeven": "roundeven",
    "math.sin": "sin", "math.sinh": "sinh", "math.sqrt": "sqrt", "math.tan": "tan",
    "math.tanh": "tanh", "math.trunc": "trunc",
}
_LIBM_UNARY = {"math.acosh": "acosh", "math.asinh": "asinh", "math.atanh": "atanh",
               "math.cbrt": "cbrt", "math.erf": "erf", "math.erfc": "erfc",
               "math.expm1": "expm1", "math.log1p": "log1p"}
_INTRINSIC_BINARY = {"math.atan2": "atan2", "math.copysign": "copysign", "math.powf": "pow"}
# llvm.is.fpclass masks: snan 1, qnan 2, -inf 4, -normal 8, -subnormal 16, -0 32, +0 64,
# +subnormal 128, +normal 256, +inf 512
_FPCLASS = {"math.isnan": 0x3, "math.isinf": 0x204, "math.isfinite": 0x1F8,
            "math.isnormal": 0x108}


def _flags(op: Operation) -> tuple:
    return tuple(f for f in fastmath_flags(op) if f != "contract")


def _is16(t: Type) -> bool:
    e = element_type_of(t)
    return isinstance(e, FloatType) and e.width == 16


def _narrow(b: ir.IRBuilder, x: ir.Value, ty: ir.Type) -> ir.Value:
    """A f32 row rounded to the 16-bit row type ``ty``."""
    return float_casts.fptrunc(b, x, ty)


def _widen(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ty = ir.VectorType(F32, x.type.count) if isinstance(x.type, ir.VectorType) else F32
    return b.fpext(x, ty)


def _scalarized(b: ir.IRBuilder, fn: Callable, *vals: ir.Value) -> ir.Value:
    """``fn`` on scalars applied to each element of vector rows (scalars: once)."""
    if not isinstance(vals[0].type, ir.VectorType):
        return fn(*vals)
    out = None
    for i in range(vals[0].type.count):
        k = int_const(I32, i)
        r = fn(*[b.extract_element(v, k) for v in vals])
        if out is None:
            out = ir.Constant(ir.VectorType(r.type, vals[0].type.count), ir.Undefined)
        out = b.insert_element(out, r, k)
    return out


def _float_op(L: FunctionLowering, op: Operation, compute: Callable) -> None:
    """Bind ``op``'s result to ``compute`` (on f32/f64 rows) applied row by row to its float
    operands; 16-bit operands are widened to f32 and the result rounded back."""
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    b = L.b
    vals = [L.get(v) for v in op.operands]

    def row(*xs):
        if not _is16(t):
            return compute(*xs)
        return _narrow(b, compute(*[_widen(b, x) for x in xs]), xs[0].type)
    L.bind(op.results[0], L.map_nd(t, row, *vals))


@handles(*_INTRINSIC_UNARY, *_INTRINSIC_BINARY)
def _lower_intrinsic(L: FunctionLowering, op: Operation) -> None:
    base = _INTRINSIC_UNARY.get(op.name) or _INTRINSIC_BINARY[op.name]
    flags = _flags(op)
    _float_op(L, op, lambda *xs: vector_call(L, op.name, list(xs), flags)
              or call_intrinsic(L, base, list(xs), flags))


def _libm(L: FunctionLowering, base: str, x: ir.Value, flags: tuple) -> ir.Value:
    """libm's ``base`` (``erff`` for float, ``erf`` for double) on a scalar."""
    name = base + ("f" if isinstance(x.type, ir.FloatType) else "")
    fn = L.ml.get_function(name, ir.FunctionType(x.type, [x.type]), L.op.loc)
    return L.b.call(fn, [x], fastmath=flags)


@handles(*_LIBM_UNARY)
def _lower_libm(L: FunctionLowering, op: Operation) -> None:
    base = _LIBM_UNARY[op.name]
    flags = _flags(op)
    _float_op(L, op, lambda x: vector_call(L, op.name, [x], flags)
              or _scalarized(L.b, lambda e: _libm(L, base, e, flags), x))


@handles("math.rsqrt")
def _lower_rsqrt(L: FunctionLowering, op: Operation) -> None:
    """``1 / sqrt(x)``, each operation rounded to the type (MLIR's expansion)."""
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    flags = _flags(op)
    b = L.b

    def row(x):
        if not _is16(t):
            return b.fdiv(_splat(x.type, 1.0), call_intrinsic(L, "sqrt", [x], flags),
                          flags=flags)
        s = _narrow(b, call_intrinsic(L, "sqrt", [_widen(b, x)], flags), x.type)
        w = _widen(b, s)
        return _narrow(b, b.fdiv(_splat(w.type, 1.0), w, flags=flags), x.type)
    L.bind(op.results[0], L.map_nd(t, row, L.get(op.operands[0])))


@handles("math.clampf")
def _lower_clampf(L: FunctionLowering, op: Operation) -> None:
    flags = _flags(op)
    _float_op(L, op, lambda x, lo, hi: call_intrinsic(
        L, "maximum", [call_intrinsic(L, "minimum", [x, hi], flags), lo], flags))


def _splat(ty: ir.Type, v: float) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, v)] * ty.count)
    return ir.Constant(ty, v)


# ---------------------------------------------------------------------------------------------
# fma


def _fma16(L: FunctionLowering, a: ir.Value, b_: ir.Value, c: ir.Value, flags) -> ir.Value:
    """``a * b + c`` on 16-bit floats rounded once: in f64, ``a * b`` is exact and the sum is
    rounded to odd (so that rounding it to the 16-bit type is the single rounding)."""
    b = L.b
    vt = a.type
    dt = ir.VectorType(F64, vt.count) if isinstance(vt, ir.VectorType) else F64
    it = ir.VectorType(ir.IntType(64), vt.count) if isinstance(vt, ir.VectorType) \
        else ir.IntType(64)
    p = b.fmul(b.fpext(a, dt), b.fpext(b_, dt))
    z = b.fpext(c, dt)
    s = b.fadd(p, z)
    # TwoSum: the exact error of s = p + z
    bb = b.fsub(s, p)
    err = b.fadd(b.fsub(p, b.fsub(s, bb)), b.fsub(z, bb))
    bits = b.bitcast(s, it)
    inexact = b.fcmp_ordered("!=", err, _splat(dt, 0.0))
    even = b.icmp_unsigned("==", b.and_(bits, _splat(it, 1)), _splat(it, 0))
    finite = b.fcmp_ordered("<", call_intrinsic(L, "fabs", [s]), _splat(dt, float("inf")))
    # toward the error's side: magnitude up if the error has s's sign
    same_sign = b.icmp_signed(">=", b.xor(bits, b.bitcast(err, it)), _splat(it, 0))
    odd = b.select(same_sign, b.add(bits, _splat(it, 1)), b.sub(bits, _splat(it, 1)))
    fix = b.and_(b.and_(inexact, even), finite)
    s = b.bitcast(b.select(fix, odd, bits), dt)
    return float_casts.fptrunc(b, s, vt)


@handles("math.fma", "vector.fma")
def _lower_fma(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    x, y, z = (L.get(v) for v in op.operands)
    flags = _flags(op)
    if _is16(t):
        L.bind(op.results[0], L.map_nd(t, lambda a, b_, c: _fma16(L, a, b_, c, flags), x, y, z))
        return
    L.bind(op.results[0], L.map_nd(t, lambda a, b_, c: call_intrinsic(L, "fma", [a, b_, c],
                                                                       flags), x, y, z))


# ---------------------------------------------------------------------------------------------
# integer ops


@handles("math.absi", "math.ctlz", "math.cttz", "math.ctpop")
def _lower_int_unary(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.ml.type(t)
    base = {"math.absi": "abs", "math.ctlz": "ctlz", "math.cttz": "cttz",
            "math.ctpop": "ctpop"}[op.name]
    false = ir.Constant(ir.IntType(1), 0)   # INT_MIN / zero are not poison (MLIR's lowering)

    def row(x):
        ty = x.type
        if base == "ctpop":
            fn = L.ml.intrinsic(f"llvm.ctpop.{_suffix(ty)}", ty, [ty])
            return L.b.call(fn, [x])
        fn = L.ml.intrinsic(f"llvm.{base}.{_suffix(ty)}", ty, [ty, false.type])
        return L.b.call(fn, [x, false])
    L.bind(op.results[0], L.map_nd(t, row, L.get(op.operands[0])))


def _suffix(ty: ir.Type) -> str:
    from polyopt.codegen.llvm_helpers import intrinsic_suffix
    return intrinsic_suffix(ty)


@handles(*_FPCLASS)
def _lower_classify(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    check_float(t)
    L.ml.type(t)
    mask = int_const(I32, _FPCLASS[op.name])

    def row(x):
        rt = ir.VectorType(ir.IntType(1), x.type.count) if isinstance(x.type, ir.VectorType) \
            else ir.IntType(1)
        fn = L.ml.intrinsic(f"llvm.is.fpclass.{_suffix(x.type)}", rt, [x.type, I32])
        return L.b.call(fn, [x, mask])
    L.bind(op.results[0], L.map_nd(t, row, L.get(op.operands[0]),
                                   result_type=op.results[0].type))


@handles("math.sincos")
def _lower_sincos(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    check_float(t)
    L.ml.type(t)
    flags = _flags(op)
    b = L.b
    x = L.get(op.operands[0])
    for res, base in zip(op.results, ("sin", "cos")):
        def row(v, base=base):
            if not _is16(t):
                return call_intrinsic(L, base, [v], flags)
            return _narrow(b, call_intrinsic(L, base, [_widen(b, v)], flags), v.type)
        L.bind(res, L.map_nd(t, row, x))


# ---------------------------------------------------------------------------------------------
# powers: llvm.powi, and --convert-math-to-funcs' helpers


def _helper(L: FunctionLowering, name: str, ret: ir.Type, params: list,
            build: Callable[[ir.Function], None]) -> ir.Function:
    """An internal function of the module, defined once by ``build``."""
    mod = L.ml.llmod
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ret, params), name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        build(fn)
    return fn


def _define_ipowi(fn: ir.Function) -> None:
    """``__mlir_math_ipowi_iN``: ``b == 0`` -> 1; ``b < 0`` -> 1 if ``a == 1``, +-1 if
    ``a == -1`` (by the parity of ``b``), 0 otherwise (``a == 0`` divides by zero in MLIR:
    undefined, 0 here); ``b > 0``: binary exponentiation, wrapping."""
    a, e = fn.args
    ty = a.type
    c = lambda v: ir.Constant(ty, v)  # noqa: E731
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    neg = fn.append_basic_block("negative")
    b = ir.IRBuilder(entry)
    zero_exp = b.icmp_signed("==", e, c(0))
    is_neg = b.icmp_signed("<", e, c(0))
    b.cbranch(is_neg, neg, loop)
    b.position_at_end(neg)
    odd = b.icmp_unsigned("!=", b.and_(e, c(1)), c(0))
    minus_one = b.select(odd, c(-1), c(1))
    r = b.select(b.icmp_signed("==", a, c(1)), c(1),
                 b.select(b.icmp_signed("==", a, c(-1)), minus_one, c(0)))
    b.ret(r)
    b.position_at_end(loop)
    acc = b.phi(ty)
    base = b.phi(ty)
    exp = b.phi(ty)
    acc.add_incoming(c(1), entry)
    base.add_incoming(a, entry)
    exp.add_incoming(e, entry)
    bit = b.icmp_unsigned("!=", b.and_(exp, c(1)), c(0))
    acc2 = b.select(bit, b.mul(acc, base), acc)
    exp2 = b.lshr(exp, c(1))
    base2 = b.mul(base, base)
    acc.add_incoming(acc2, loop)
    base.add_incoming(base2, loop)
    exp.add_incoming(exp2, loop)
    finished = b.or_(b.icmp_unsigned("==", exp2, c(0)), zero_exp)
    b.cbranch(finished, done, loop)
    b.position_at_end(done)
    b.ret(b.select(zero_exp, c(1), acc2))


def _define_fpowi(L: FunctionLowering, fn: ir.Function) -> None:
    """``__mlir_math_fpowi_fX_iN``: ``|n|`` by binary exponentiation (``INT_MIN`` as ``INT_MAX``
    then one more factor), then ``1 / r`` for negative ``n``; 16-bit floats multiply in f32 and
    round each product."""
    x, n = fn.args
    ft, it = x.type, n.type
    ci = lambda v: ir.Constant(it, v)  # noqa: E731
    one = ir.Constant(ft, 1.0)
    width = it.width
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)

    def mul(p, q):
        if llvm_float_format(ft).width == 16:
            return _narrow(b, b.fmul(_widen(b, p), _widen(b, q)), ft)
        return b.fmul(p, q)

    is_zero = b.icmp_signed("==", n, ci(0))
    le0 = b.icmp_signed("<=", n, ci(0))
    is_min = b.icmp_signed("==", n, ci(-(1 << (width - 1))))
    mag = b.select(le0, b.sub(ci(0), n), n)
    mag = b.select(is_min, ci((1 << (width - 1)) - 1), mag)
    b.branch(loop)
    b.position_at_end(loop)
    acc = b.phi(ft)
    base = b.phi(ft)
    exp = b.phi(it)
    acc.add_incoming(one, entry)
    base.add_incoming(x, entry)
    exp.add_incoming(mag, entry)
    bit = b.icmp_unsigned("!=", b.and_(exp, ci(1)), ci(0))
    acc2 = b.select(bit, mul(acc, base), acc)
    exp2 = b.lshr(exp, ci(1))
    base2 = mul(base, base)
    acc.add_incoming(acc2, loop)
    base.add_incoming(base2, loop)
    exp.add_incoming(exp2, loop)
    b.cbranch(b.icmp_unsigned("==", exp2, ci(0)), done, loop)
    b.position_at_end(done)
    r = b.select(is_min, mul(acc2, x), acc2)
    if llvm_float_format(ft).width == 16:
        inv = _narrow(b, b.fdiv(ir.Constant(F32, 1.0), _widen(b, r)), ft)
    else:
        inv = b.fdiv(one, r)
    r = b.select(le0, inv, r)
    b.ret(b.select(is_zero, one, r))


@handles("math.ipowi")
def _lower_ipowi(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.ml.type(t)
    ty = L.ml.scalar_type(element_type_of(t))
    fn = _helper(L, f"__polyopt_math_ipowi_i{ty.width}", ty, [ty, ty], _define_ipowi)
    a, e = (L.get(v) for v in op.operands)
    L.bind(op.results[0], L.map_nd(t, lambda x, y: _scalarized(
        L.b, lambda p, q: L.b.call(fn, [p, q]), x, y), a, e))


@handles("math.fpowi")
def _lower_fpowi(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    nt = op.operands[1].type
    L.ml.type(nt)
    ft = L.ml.scalar_type(element_type_of(t))
    it = L.ml.scalar_type(element_type_of(nt))
    x, n = (L.get(v) for v in op.operands)
    flags = _flags(op)
    b = L.b
    if it.width == 32:   # llvm.powi (compiler-rt's __powisf2: the same multiplications)
        def scalar(p, q):
            if llvm_float_format(ft).width == 16:
                wide = b.fpext(p, F32)
                powi = L.ml.intrinsic("llvm.powi.f32.i32", F32, [F32, I32])
                return _narrow(b, b.call(powi, [wide, q], fastmath=flags), ft)
            powi = L.ml.intrinsic(f"llvm.powi.{_suffix(ft)}.i32", ft, [ft, I32])
            return b.call(powi, [p, q], fastmath=flags)
    else:
        name = f"__polyopt_math_fpowi_{_suffix(ft)}_i{it.width}"
        fn = _helper(L, name, ft, [ft, it], lambda f: _define_fpowi(L, f))

        def scalar(p, q):
            return b.call(fn, [p, q])
    if isinstance(t, VectorType) and not isinstance(nt, VectorType):
        raise Unsupported("math.fpowi needs operands of one shape")
    L.bind(op.results[0], L.map_nd(t, lambda p, q: _scalarized(b, scalar, p, q), x, n))
