"""Lowering of the arith dialect (MLIR's ``convert-arith-to-llvm``, with ``arith-expand`` for
the ops it leaves: ``ceildivui``, ``ceildivsi``, ``floordivsi``, ``scaling_extf``,
``scaling_truncf``), on scalars and n-D vectors of every element type.

Integer flags (``overflow<nsw, nuw>``, ``exact``) and fast-math flags become LLVM's.  Shifts
by the bit width or more are undefined (LLVM ``poison``), as in MLIR.  Integer division by
zero and ``INT_MIN / -1`` are undefined in MLIR too, but trap on x86 and would kill the Python
process: the divisor is checked at run time and the call raises an error instead
(``checked_divisor`` of :mod:`.index_forms`; the check folds away for constant divisors).  Float results are correctly rounded:
f16/bf16 conversions and bf16 arithmetic go through :mod:`polyopt.codegen.float_casts`, and
``truncf``'s rounding modes are applied (LLVM and ``mlir-runner-22`` round to nearest at run
time whatever the mode).
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.attributes import FloatAttr, IntegerAttr
from polyopt.affine.attributes import DenseElementsAttr
from polyopt.affine.dialects.arith_attributes import OverflowAttr
from polyopt.affine.ir import Operation
from polyopt.affine.types import (FloatType, IndexType, MemRefType, Type,
                                  VectorType, element_type_of)
from polyopt.codegen import float_casts, libcalls
from polyopt.codegen.index_forms import Lin
from polyopt.codegen.llvm_helpers import (F32, Unsupported, call_intrinsic,
                                          ceildiv_signed, check_float, fastmath_flags,
                                          float_const, floordiv_signed, int_const, zero_like)
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem
from polyopt.codegen.strided_minmax import REFINED, refined_minmax

# ---------------------------------------------------------------------------------------------
# constants


def scalar_constant(ty: ir.Type, v) -> ir.Constant:
    if isinstance(ty, ir.IntType):
        return int_const(ty, int(v))
    return float_const(ty, float(v))


def constant_value(L: FunctionLowering, attr, t: Type) -> ir.Constant:
    """The LLVM constant of a ``value`` attribute of type ``t`` (n-D vectors: nested arrays of
    1-D rows)."""
    ml = L.ml
    if isinstance(t, VectorType):
        if not isinstance(attr, DenseElementsAttr):
            raise Unsupported(f"unsupported vector constant '{attr}'")
        et = ml.scalar_type(t.element_type)
        elems = [scalar_constant(et, v) for v in attr.values]
        n = t.shape[-1] if t.shape else 1       # a 0-D vector is one row of one element
        rows = [ir.Constant(ir.VectorType(et, n), elems[i:i + n])
                for i in range(0, len(elems), n)]

        def nest(shape, rows):
            if len(shape) <= 1:
                return rows.pop(0)
            parts = [nest(shape[1:], rows) for _ in range(shape[0])]
            return ir.Constant(ir.ArrayType(parts[0].type, shape[0]), parts)
        return nest(tuple(t.shape), rows)
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return scalar_constant(ml.scalar_type(t), attr.value)
    raise Unsupported(f"unsupported constant value '{attr}'")


@handles("arith.constant")
def _lower_constant(L: FunctionLowering, op: Operation) -> None:
    res = op.results[0]
    c = constant_value(L, op.attributes["value"], res.type)
    L.bind(res, c)
    if isinstance(res.type, IndexType):
        L.forms[res] = Lin.constant(c.constant)


# ---------------------------------------------------------------------------------------------
# integer arithmetic

_INT_BINOPS = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv",
    "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_",
    "arith.ori": "or_", "arith.xori": "xor", "arith.shli": "shl", "arith.shrsi": "ashr",
    "arith.shrui": "lshr",
}
_INT_MINMAX = {"arith.maxsi": "smax", "arith.minsi": "smin", "arith.maxui": "umax",
               "arith.minui": "umin"}
_WIDE_DIVISION = {"sdiv": "__divti3", "udiv": "__udivti3", "srem": "__modti3",
                  "urem": "__umodti3", "arith.floordivsi": "__divti3",
                  "arith.ceildivsi": "__divti3", "arith.ceildivui": "__udivti3"}


def _int_width(t: Type) -> int:
    e = element_type_of(t)
    return 64 if isinstance(e, IndexType) else e.width


def _require_libcall(t: Type, what: str) -> None:
    """LLVM divides (and converts floats to) integers of 65 to 128 bits with libgcc calls."""
    name = _WIDE_DIVISION.get(what, what)
    if 64 < _int_width(t) <= 128 and not libcalls.available(name):
        raise Unsupported(f"'{t}' needs the compiler runtime's {name}, which this process "
                          "cannot provide (libgcc_s.so.1 not found)")


def _int_flags(op: Operation) -> tuple:
    ov = op.attributes.get("overflowFlags")
    flags = tuple(sorted(ov.flags)) if isinstance(ov, OverflowAttr) else ()
    if "isExact" in op.attributes:
        flags += ("exact",)
    return flags


def ceildiv_unsigned(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """``a == 0 ? 0 : (a - 1) / d + 1`` (MLIR's arith-expand of ``ceildivui``)."""
    zero = zero_like(a.type)
    one = ir.Constant(a.type, [ir.Constant(a.type.element, 1)] * a.type.count) \
        if isinstance(a.type, ir.VectorType) else ir.Constant(a.type, 1)
    q = b.add(b.udiv(b.sub(a, one), d), one)
    return b.select(b.icmp_unsigned("==", a, zero), zero, q)


_SIGNED_DIVISIONS = {"arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi"}
_DIVISIONS = _SIGNED_DIVISIONS | {"arith.divui", "arith.remui", "arith.ceildivui"}


@handles(*_INT_BINOPS, *_INT_MINMAX, "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui")
def _lower_int_binary(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.ml.type(t)
    name = op.name
    if name in _WIDE_DIVISION or _INT_BINOPS.get(name) in _WIDE_DIVISION:
        _require_libcall(t, _INT_BINOPS.get(name, name))
    a, c = (L.get(v) for v in op.operands)
    flags = _int_flags(op)
    b = L.b

    def row(x, y):
        if name in _DIVISIONS:
            y = L.checked_divisor(x, y, signed=name in _SIGNED_DIVISIONS)
        if name in _INT_BINOPS:
            fn = getattr(b, _INT_BINOPS[name])
            return fn(x, y, flags=flags) if flags else fn(x, y)
        if name in _INT_MINMAX:
            return call_intrinsic(L, _INT_MINMAX[name], [x, y])
        if name == "arith.floordivsi":
            return floordiv_signed(b, x, y)
        if name == "arith.ceildivsi":
            return ceildiv_signed(b, x, y)
        return ceildiv_unsigned(b, x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@handles("arith.addui_extended", "arith.mulsi_extended", "arith.mului_extended")
def _lower_extended(L: FunctionLowering, op: Operation) -> None:
    """``addui_extended``: the sum and ``sum < lhs`` (unsigned overflow); ``mul*_extended``:
    the low and high halves of the product in twice the width (MLIR's lowering)."""
    t = op.operands[0].type
    L.ml.type(t)
    a, c = (L.get(v) for v in op.operands)
    b = L.b
    width = _int_width(t)

    if op.name == "arith.addui_extended":
        sums = L.map_nd(t, lambda x, y: b.add(x, y), a, c)
        over = L.map_nd(t, lambda s, x: b.icmp_unsigned("<", s, x), sums, a,
                        result_type=op.results[1].type)
        L.bind(op.results[0], sums)
        L.bind(op.results[1], over)
        return
    ext = b.sext if op.name == "arith.mulsi_extended" else b.zext
    wide = ir.IntType(2 * width)

    def product(x, y):
        wt = _like(wide, x.type)
        return b.mul(ext(x, wt), ext(y, wt))

    def high(x, y):
        p = product(x, y)
        return b.trunc(b.lshr(p, _splat_int(p.type, width)), x.type)
    L.bind(op.results[0], L.map_nd(t, lambda x, y: b.trunc(product(x, y), x.type), a, c))
    L.bind(op.results[1], L.map_nd(t, high, a, c))


def _splat_int(ty: ir.Type, v: int) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, v)] * ty.count)
    return ir.Constant(ty, v)


# ---------------------------------------------------------------------------------------------
# float arithmetic

_FLOAT_BINOPS = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul",
                 "arith.divf": "fdiv", "arith.remf": "frem"}
_FLOAT_MINMAX = {"arith.maximumf": "maximum", "arith.minimumf": "minimum",
                 "arith.maxnumf": "maxnum", "arith.minnumf": "minnum"}


def is_bf16_type(t: Type) -> bool:
    e = element_type_of(t)
    return isinstance(e, FloatType) and e.brain


@handles(*_FLOAT_BINOPS, *_FLOAT_MINMAX)
def _lower_float_binary(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    a, c = (L.get(v) for v in op.operands)
    flags = fastmath_flags(op)
    name = op.name
    b = L.b
    refined = refined_minmax(op)      # (LLVM's vectorizer aborts on strided maxnum sums)

    def compute(x, y):
        if name in _FLOAT_BINOPS:
            return getattr(b, _FLOAT_BINOPS[name])(x, y, flags=flags)
        return call_intrinsic(L, REFINED[name] if refined else _FLOAT_MINMAX[name], [x, y])

    def row(x, y):
        if is_bf16_type(t):
            return float_casts.through_f32(b, compute, x, y)
        return compute(x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@handles("arith.negf")
def _lower_negf(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    L.ml.type(t)
    flags = fastmath_flags(op)
    L.bind(op.results[0], L.map_nd(t, lambda x: L.b.fneg(x, flags=flags), L.get(op.operands[0])))


# ---------------------------------------------------------------------------------------------
# comparisons and select

_ICMP = {"eq": ("s", "=="), "ne": ("s", "!="), "slt": ("s", "<"), "sle": ("s", "<="),
         "sgt": ("s", ">"), "sge": ("s", ">="), "ult": ("u", "<"), "ule": ("u", "<="),
         "ugt": ("u", ">"), "uge": ("u", ">=")}


@handles("arith.cmpi", "arith.cmpf")
def _lower_cmp(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    pred = op.predicate
    a, c = (L.get(v) for v in op.operands)
    b = L.b
    L.ml.type(t)
    if op.name == "arith.cmpf":
        check_float(t)
        flags = tuple(f for f in fastmath_flags(op) if f != "contract")

        def row(x, y):
            # LLVM's predicates carry MLIR's names (oeq, ult, ord, false, ...)
            return b.fcmp_ordered(pred, x, y, flags=flags)
    else:
        sign, cmp = _ICMP[pred]

        def row(x, y):
            return (b.icmp_signed if sign == "s" else b.icmp_unsigned)(cmp, x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c, result_type=op.results[0].type))


@handles("arith.select")
def _lower_select(L: FunctionLowering, op: Operation) -> None:
    cond, x, y = (L.get(v) for v in op.operands)
    t = op.results[0].type
    if isinstance(t, MemRefType):
        mx, my = L.mem(op.operands[1]), L.mem(op.operands[2])
        if mx.has_descriptor:
            L.bind_llvm(op.results[0], L.b.select(cond, x, y))
        else:
            L.bind(op.results[0], Mem(L.b.select(cond, mx.ptr, my.ptr), t,
                                      min(mx.align, my.align)))
        return
    L.ml.type(t)
    if isinstance(t, VectorType) and not isinstance(op.operands[0].type, VectorType):
        L.bind(op.results[0], L.b.select(cond, x, y))  # one i1 selects the whole vector
        return
    L.bind(op.results[0], L.map_nd(t, lambda c, p, q: L.b.select(c, p, q), cond, x, y))


# ---------------------------------------------------------------------------------------------
# casts


def _row_type(L: FunctionLowering, t: Type) -> ir.Type:
    ty = L.ml.type(t)
    while isinstance(ty, ir.ArrayType):
        ty = ty.element
    return ty


@handles("arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast",
         "arith.index_castui", "arith.bitcast", "arith.sitofp", "arith.uitofp", "arith.fptosi",
         "arith.fptoui", "arith.extf", "arith.truncf")
def _lower_cast(L: FunctionLowering, op: Operation) -> None:
    src_t, dst_t = op.operands[0].type, op.results[0].type
    if isinstance(src_t, MemRefType):
        # index_cast (index <-> i64) and bitcast: the same buffer seen with the other element
        # type, when both are stored in the same number of bytes
        m = L.mem(op.operands[0])
        size = [L.ml.abi_size(L.ml.mem_type(t.element_type)) for t in (src_t, dst_t)]
        if size[0] != size[1]:
            raise Unsupported(f"'{src_t}' and '{dst_t}' store their elements in {size[0]} and "
                              f"{size[1]} bytes: the buffer cannot be reinterpreted")
        L.bind(op.results[0], Mem(m.ptr, dst_t, m.align))
        return
    for t in (src_t, dst_t):
        if isinstance(element_type_of(t), FloatType):
            check_float(t)
    if op.name in ("arith.fptosi", "arith.fptoui"):
        _require_libcall(dst_t, "__fixsfti")
    row_ty = _row_type(L, dst_t)
    _row_type(L, src_t)
    v = L.get(op.operands[0])
    b = L.b
    name = op.name
    mode = getattr(op, "rounding_mode", None)

    def row(x):
        if name in ("arith.extui", "arith.extsi"):
            return (b.zext if name == "arith.extui" else b.sext)(x, row_ty)
        if name == "arith.trunci":
            return _trunc_with_flags(b, x, row_ty, _int_flags(op))
        if name in ("arith.index_cast", "arith.index_castui"):
            sw, dw = _elem_width(x.type), _elem_width(row_ty)
            if sw == dw:
                return x
            if sw > dw:
                return b.trunc(x, row_ty)
            return (b.zext if name == "arith.index_castui" else b.sext)(x, row_ty)
        if name == "arith.bitcast":
            return b.bitcast(x, row_ty)
        if name in ("arith.sitofp", "arith.uitofp"):
            return float_casts.int_to_float(b, x, row_ty, name == "arith.sitofp")
        if name in ("arith.fptosi", "arith.fptoui"):
            return (b.fptosi if name == "arith.fptosi" else b.fptoui)(x, row_ty)
        if name == "arith.extf":
            return b.fpext(x, row_ty)
        return float_casts.fptrunc(b, x, row_ty, mode)
    L.bind(op.results[0], L.map_nd(src_t, row, v, result_type=dst_t))


def _elem_width(ty: ir.Type) -> int:
    return (ty.element if isinstance(ty, ir.VectorType) else ty).width


def _trunc_with_flags(b: ir.IRBuilder, x: ir.Value, ty: ir.Type, flags: tuple) -> ir.Value:
    """``trunc [nuw] [nsw]`` (llvmlite's builder has no flags on casts)."""
    if not flags:
        return b.trunc(x, ty)
    from llvmlite.ir import instructions
    instr = instructions.CastInstr(b.block, "trunc " + " ".join(sorted(flags)), x, ty)
    b._insert(instr)
    return instr


# ---------------------------------------------------------------------------------------------
# scaling casts (arith-expand with include-f8e8m0)


def _e8m0_scale(b: ir.IRBuilder, s32: ir.Value) -> ir.Value:
    """The f32 value of a scale reduced to ``f8E8M0FNU``: its f32 exponent field ``e``,
    ``2^(e - 127)`` as ``e << 23`` (``0.0`` for ``e = 0``), NaN for ``e = 255``."""
    i32 = ir.VectorType(ir.IntType(32), s32.type.count) if isinstance(s32.type, ir.VectorType) \
        else ir.IntType(32)
    e = b.and_(b.lshr(b.bitcast(s32, i32), _splat_int(i32, 23)), _splat_int(i32, 0xFF))
    bits = b.shl(e, _splat_int(i32, 23))
    nan = b.icmp_unsigned("==", e, _splat_int(i32, 0xFF))
    return b.bitcast(b.select(nan, _splat_int(i32, -1), bits), _like(F32, s32.type))


def _like(elem: ir.Type, ty: ir.Type) -> ir.Type:
    return ir.VectorType(elem, ty.count) if isinstance(ty, ir.VectorType) else elem


def _to_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    if isinstance(e, ir.FloatType):
        return x
    if isinstance(e, ir.DoubleType):
        return b.fptrunc(x, _like(F32, x.type))
    return b.fpext(x, _like(F32, x.type))


def _resize(b: ir.IRBuilder, x: ir.Value, ty: ir.Type) -> ir.Value:
    """An exact widening, or a rounding to nearest even (f32 -> f16/bf16)."""
    if x.type == ty:
        return x
    from polyopt.codegen.llvm_helpers import llvm_float_format
    if llvm_float_format(_scalar(ty)).width > llvm_float_format(_scalar(x.type)).width:
        return b.fpext(x, ty)
    return float_casts.fptrunc(b, x, ty)


def _scalar(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


@handles("arith.scaling_extf", "arith.scaling_truncf")
def _lower_scaling(L: FunctionLowering, op: Operation) -> None:
    """``scaling_extf``: ``extf(x) * 2^e(scale)``; ``scaling_truncf``: ``truncf(x / 2^e(scale))``
    with the op's rounding mode, where ``2^e(scale)`` is the scale converted to f32 and reduced
    to its exponent (``f8E8M0FNU``), as ``--arith-expand="include-f8e8m0=true"`` computes."""
    x_t, r_t = op.operands[0].type, op.results[0].type
    for t in (x_t, op.operands[1].type, r_t):
        check_float(t)
    x, s = (L.get(v) for v in op.operands)
    b = L.b
    out_ty = _row_type(L, r_t)
    mode = op.rounding_mode

    def row(xv, sv):
        scale = _e8m0_scale(b, _to_f32(b, sv))
        if op.name == "arith.scaling_extf":
            return b.fmul(b.fpext(xv, out_ty), _resize(b, scale, out_ty))
        return float_casts.fptrunc(b, b.fdiv(xv, _resize(b, scale, xv.type)), out_ty, mode)
    L.bind(op.results[0], L.map_nd(x_t, row, x, s, result_type=r_t))

