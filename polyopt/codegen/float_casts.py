"""Float conversions and 16-bit float arithmetic emitted so that every result is the correctly
rounded one (IEEE 754, what MLIR's arith ops specify), on scalars and 1-D LLVM vectors.

LLVM's x86 code generator is not exact everywhere, and neither is ``mlir-runner-22``, which uses
the same code generator:

* ``fptrunc float to bfloat`` becomes ``vcvtneps2bf16`` on AVX512-BF16 hosts, which flushes
  subnormal inputs and results to zero; :func:`trunc_f32_to_bf16` rounds with integer
  operations instead (round to nearest even, subnormals kept, NaNs quieted), and bf16
  arithmetic is done in f32 and rounded that way (:func:`through_f32`: exact, because f32 has
  more than twice bf16's precision);
* ``sitofp``/``uitofp`` to ``bfloat`` convert through f32 and round twice (``16842753`` becomes
  ``16777216``, not ``16908288``); :func:`int_to_float` rounds once;
* ``arith.truncf`` with a rounding mode becomes ``llvm.experimental.constrained.fptrunc``,
  which only promises that the floating-point environment has that mode: at run time the
  result is rounded to nearest.  :func:`fptrunc` applies the mode (``downward``, ``upward``,
  ``toward_zero``, ``to_nearest_away``) by correcting the nearest result by one step.
"""

from __future__ import annotations

from typing import Optional

from llvmlite import ir

from polyopt.codegen.llvm_helpers import (BF16, F32, F64, BFloatType, intrinsic_suffix,
                                          llvm_float_format)


def _vec(ty: ir.Type, like: ir.Type) -> ir.Type:
    """``ty``, or a vector of ``ty`` with ``like``'s length."""
    return ir.VectorType(ty, like.count) if isinstance(like, ir.VectorType) else ty


def _elem(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def _const(ty: ir.Type, v) -> ir.Constant:
    """A constant of scalar or vector type ``ty`` (splatted)."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, v)] * ty.count)
    return ir.Constant(ty, v)


def _call(b: ir.IRBuilder, base: str, args, ret: Optional[ir.Type] = None) -> ir.Value:
    ty = args[0].type
    module = b.module
    name = f"llvm.{base}.{intrinsic_suffix(ty)}"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret or ty, [a.type for a in args]), name)
    return b.call(fn, list(args))


def is_bf16(ty: ir.Type) -> bool:
    return isinstance(_elem(ty), BFloatType)


def trunc_f32_to_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``float`` -> ``bfloat``, round to nearest even (subnormals kept, NaNs quieted)."""
    i32 = _vec(ir.IntType(32), x.type)
    bits = b.bitcast(x, i32)
    lsb = b.and_(b.lshr(bits, _const(i32, 16)), _const(i32, 1))
    rounded = b.lshr(b.add(b.add(bits, _const(i32, 0x7FFF)), lsb), _const(i32, 16))
    quiet = b.or_(b.lshr(bits, _const(i32, 16)), _const(i32, 0x40))
    is_nan = b.fcmp_unordered("uno", x, x)
    r = b.trunc(b.select(is_nan, quiet, rounded), _vec(ir.IntType(16), x.type))
    return b.bitcast(r, _vec(BF16, x.type))


def _nearest(b: ir.IRBuilder, x: ir.Value, dst: ir.Type) -> ir.Value:
    if isinstance(_elem(dst), BFloatType) and isinstance(_elem(x.type), ir.FloatType):
        return trunc_f32_to_bf16(b, x)
    return b.fptrunc(x, dst)


def fptrunc(b: ir.IRBuilder, x: ir.Value, dst: ir.Type, mode: Optional[str] = None) -> ir.Value:
    """``x`` rounded to the narrower float type ``dst`` with MLIR's rounding ``mode``
    (``None``/``to_nearest_even``, ``downward``, ``upward``, ``toward_zero``,
    ``to_nearest_away``)."""
    r = _nearest(b, x, dst)
    if mode in (None, "to_nearest_even"):
        return r
    width = llvm_float_format(_elem(dst)).width
    it = _vec(ir.IntType(width), dst)
    ri = b.bitcast(r, it)
    back = b.fpext(r, x.type)
    negative = b.icmp_signed("<", ri, _const(it, 0))
    one = _const(it, 1)
    up_mag, down_mag = b.add(ri, one), b.sub(ri, one)   # one step away from / toward zero
    if mode == "downward":
        need = b.fcmp_ordered(">", back, x)
        step = b.select(negative, up_mag, down_mag)
    elif mode == "upward":
        need = b.fcmp_ordered("<", back, x)
        step = b.select(negative, down_mag, up_mag)
    elif mode == "toward_zero":
        need = b.fcmp_ordered(">", _call(b, "fabs", [back]), _call(b, "fabs", [x]))
        step = down_mag
    elif mode == "to_nearest_away":
        ax, aback = _call(b, "fabs", [x]), _call(b, "fabs", [back])
        anext = _call(b, "fabs", [b.fpext(b.bitcast(up_mag, dst), x.type)])
        below = b.fcmp_ordered("<", aback, ax)
        tie = b.fcmp_ordered("==", b.fsub(ax, aback), b.fsub(anext, ax))
        need = b.and_(below, tie)
        step = up_mag
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    return b.select(need, b.bitcast(step, dst), r)


def fpext(b: ir.IRBuilder, x: ir.Value, dst: ir.Type) -> ir.Value:
    """Exact widening (``bfloat``/``half`` -> ``float`` -> ``double``)."""
    return b.fpext(x, dst)


def int_to_float(b: ir.IRBuilder, x: ir.Value, dst: ir.Type, signed: bool) -> ir.Value:
    """``sitofp``/``uitofp`` rounded once to nearest even.

    Integers of up to 24 bits are exact in f32, LLVM's route to ``half`` and ``bfloat``; up to
    64 bits, LLVM's conversions to ``float``/``double`` round once, and to ``half`` too (its
    range ends below 2^24, so rounding through f32 can only reach infinity).  The others (to
    ``bfloat`` LLVM rounds through f32 twice, and beyond 64 bits it calls compiler-rt) are
    rounded here, in integers, to the destination's precision (:func:`_round_integer`)."""
    width = _elem(x.type).width
    de = _elem(dst)
    if width <= 24 or width <= 64 and not isinstance(de, BFloatType):
        return (b.sitofp if signed else b.uitofp)(x, dst)
    fmt = llvm_float_format(de)
    wide = F64 if isinstance(de, ir.DoubleType) else F32
    f = _round_integer(b, x, signed, fmt.precision, wide)
    if isinstance(de, BFloatType):
        return trunc_f32_to_bf16(b, f)          # exact: f has bf16's precision
    return f if f.type == dst else b.fptrunc(f, dst)


def _round_integer(b: ir.IRBuilder, x: ir.Value, signed: bool, precision: int,
                   fty: ir.Type) -> ir.Value:
    """The integer ``x`` rounded to ``precision`` bits (nearest, ties to even) as an exact
    ``fty`` (float or double) value: the magnitude's top bits, rounded on the bits shifted
    out, converted exactly and scaled by a power of two (infinity beyond ``fty``'s range)."""
    mant, bias, emax = (23, 127, 128) if isinstance(fty, ir.FloatType) else (52, 1023, 1024)
    it = x.type
    width = _elem(it).width
    zero, one = _const(it, 0), _const(it, 1)
    if signed:
        neg = b.icmp_signed("<", x, zero)
        mag = b.select(neg, b.sub(zero, x), x)      # INT_MIN: 2^(w-1) as unsigned
    else:
        mag = x
    nbits = b.sub(_const(it, width), _call(b, "ctlz", [mag, ir.Constant(ir.IntType(1), 0)]))
    over = b.sub(nbits, _const(it, precision))
    shift = b.select(b.icmp_signed(">", over, zero), over, zero)
    hi = b.lshr(mag, shift)
    rest = b.and_(mag, b.sub(b.shl(one, shift), one))
    half = b.lshr(b.shl(one, shift), one)             # 0 when nothing is shifted out
    up = b.or_(b.icmp_unsigned(">", rest, half),
               b.and_(b.icmp_unsigned("==", rest, half),
                      b.and_(b.icmp_unsigned("!=", half, zero),
                             b.icmp_unsigned("!=", b.and_(hi, one), zero))))
    hi = b.add(hi, b.zext(up, it))                    # may reach 2^precision: still exact
    small = _vec(ir.IntType(64), it)
    if width > 64:
        hi, shift = b.trunc(hi, small), b.trunc(shift, small)
    elif width < 64:
        hi, shift = b.zext(hi, small), b.zext(shift, small)
    f = b.uitofp(hi, _vec(fty, it))                   # exact: at most precision + 1 bits
    shift = b.select(b.icmp_unsigned(">", shift, _const(small, emax)), _const(small, emax),
                     shift)
    ity = _vec(ir.IntType(mant + 1 + (8 if mant == 23 else 11)), it)
    e = b.trunc(shift, ity) if mant == 23 else shift
    scale = b.bitcast(b.shl(b.add(e, _const(ity, bias)), _const(ity, mant)), _vec(fty, it))
    f = b.fmul(f, scale)                              # times 2^shift (2^emax: infinity)
    if signed:
        f = b.select(neg, b.fneg(f), f)
    return f


def through_f32(b: ir.IRBuilder, fn, *vals: ir.Value, result: Optional[ir.Type] = None):
    """``fn`` applied to bf16 operands widened to f32, its result rounded back to bf16
    (``result``: the bf16 result type when it is not the first operand's)."""
    wide = [b.fpext(v, _vec(F32, v.type)) if is_bf16(v.type) else v for v in vals]
    r = fn(*wide)
    rt = result or vals[0].type
    if is_bf16(rt) and isinstance(_elem(r.type), ir.FloatType):
        return trunc_f32_to_bf16(b, r)
    return r
