"""Lowering of the arith dialect: constants, integer and float arithmetic, comparisons,
select and casts, on scalars and (n-D) vectors (MLIR's convert-arith-to-llvm)."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.attributes import FloatAttr, IntegerAttr
from polyopt.affine.ir import Operation
from polyopt.affine.types import FloatType, IndexType, MemRefType, Type, VectorType
from polyopt.codegen.index_forms import Lin
from polyopt.codegen.llvm_helpers import (
    Unsupported,
    call_intrinsic,
    ceildiv_signed,
    check_float,
    fastmath_flags,
    floordiv_signed,
    int_const,
)
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem


def _constant_value(L: FunctionLowering, attr, t: Type) -> ir.Constant:
    ml = L.ml
    if isinstance(t, VectorType):
        values = getattr(attr, "values", None)
        if values is None:
            raise Unsupported(f"unsupported vector constant '{attr}'")
        et = ml.scalar_type(t.element_type)
        elems = [scalar_constant(et, v) for v in values]
        if len(elems) == 1:
            elems = elems * t.num_elements
        if len(elems) != t.num_elements:
            raise Unsupported(f"dense constant has {len(elems)} elements, '{t}' needs "
                               f"{t.num_elements}")
        n = t.shape[-1]
        rows = [ir.Constant(ir.VectorType(et, n), elems[i:i + n]) for i in range(0, len(elems), n)]

        def nest(shape, rows):
            if len(shape) == 1:
                return rows.pop(0)
            parts = [nest(shape[1:], rows) for _ in range(shape[0])]
            return ir.Constant(ir.ArrayType(parts[0].type, shape[0]), parts)
        return nest(tuple(t.shape), rows)
    et = ml.scalar_type(t)
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return scalar_constant(et, attr.value)
    raise Unsupported(f"unsupported constant value '{attr}'")


def scalar_constant(ty: ir.Type, v) -> ir.Constant:
    if isinstance(ty, ir.IntType):
        return int_const(ty, int(v))
    return ir.Constant(ty, float(v))


@handles("arith.constant")
def _lower_constant(L: FunctionLowering, op: Operation) -> None:
    res = op.results[0]
    c = _constant_value(L, op.attributes["value"], res.type)
    L.bind(res, c)
    if isinstance(res.type, IndexType):
        L.forms[res] = Lin.constant(c.constant)


_INT_BINOPS = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv",
    "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_",
    "arith.ori": "or_", "arith.xori": "xor", "arith.shli": "shl", "arith.shrsi": "ashr",
    "arith.shrui": "lshr",
}
_INT_MINMAX = {"arith.maxsi": "smax", "arith.minsi": "smin", "arith.maxui": "umax",
               "arith.minui": "umin"}
_FLOAT_BINOPS = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul",
                 "arith.divf": "fdiv", "arith.remf": "frem"}
_FLOAT_MINMAX = {"arith.maximumf": "maximum", "arith.minimumf": "minimum",
                 "arith.maxnumf": "maxnum", "arith.minnumf": "minnum"}



@handles(*_INT_BINOPS, *_INT_MINMAX, "arith.floordivsi", "arith.ceildivsi")
def _lower_int_binary(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.ml.type(t)
    a, c = (L.get(v) for v in op.operands)
    name = op.name
    b = L.b

    def row(x, y):
        if name in _INT_BINOPS:
            return getattr(b, _INT_BINOPS[name])(x, y)
        if name in _INT_MINMAX:
            return call_intrinsic(L, _INT_MINMAX[name], [x, y])
        if name == "arith.floordivsi":
            return floordiv_signed(b, x, y)
        return ceildiv_signed(b, x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@handles(*_FLOAT_BINOPS, *_FLOAT_MINMAX)
def _lower_float_binary(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    a, c = (L.get(v) for v in op.operands)
    flags = fastmath_flags(op)
    name = op.name
    b = L.b

    def row(x, y):
        if name in _FLOAT_BINOPS:
            return getattr(b, _FLOAT_BINOPS[name])(x, y, flags=flags)
        return call_intrinsic(L, _FLOAT_MINMAX[name], [x, y])
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@handles("arith.negf")
def _lower_negf(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    check_float(t)
    flags = fastmath_flags(op)
    L.bind(op.results[0], L.map_nd(t, lambda x: L.b.fneg(x, flags=flags), L.get(op.operands[0])))


_ICMP = {"eq": ("s", "=="), "ne": ("s", "!="), "slt": ("s", "<"), "sle": ("s", "<="),
         "sgt": ("s", ">"), "sge": ("s", ">="), "ult": ("u", "<"), "ule": ("u", "<="),
         "ugt": ("u", ">"), "uge": ("u", ">=")}


@handles("arith.cmpi", "arith.cmpf")
def _lower_cmp(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    pred = op.predicate
    a, c = (L.get(v) for v in op.operands)
    b = L.b
    if op.name == "arith.cmpf":
        check_float(t)
        flags = tuple(f for f in fastmath_flags(op) if f != "contract")

        def row(x, y):
            return b.fcmp_ordered(pred, x, y, flags=flags)
    else:
        L.ml.type(t)
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


_CASTS = {"arith.sitofp": "sitofp", "arith.uitofp": "uitofp", "arith.fptosi": "fptosi",
          "arith.fptoui": "fptoui", "arith.extf": "fpext", "arith.truncf": "fptrunc",
          "arith.extsi": "sext", "arith.extui": "zext", "arith.trunci": "trunc"}


@handles(*_CASTS, "arith.index_cast", "arith.index_castui", "arith.bitcast")
def _lower_cast(L: FunctionLowering, op: Operation) -> None:
    src_t, dst_t = op.operands[0].type, op.results[0].type
    for t in (src_t, dst_t):
        if isinstance(t.element_type if isinstance(t, VectorType) else t, FloatType):
            check_float(t)
    dst_ty = L.ml.type(dst_t)
    row_ty = dst_ty
    while isinstance(row_ty, ir.ArrayType):
        row_ty = row_ty.element
    v = L.get(op.operands[0])
    b = L.b
    name = op.name

    def row(x):
        if name in _CASTS:
            return getattr(b, _CASTS[name])(x, row_ty)
        if name == "arith.bitcast":
            return b.bitcast(x, row_ty)
        sw = x.type.element.width if isinstance(x.type, ir.VectorType) else x.type.width
        dw = row_ty.element.width if isinstance(row_ty, ir.VectorType) else row_ty.width
        if sw == dw:
            return x
        if sw > dw:
            return b.trunc(x, row_ty)
        return (b.zext if name == "arith.index_castui" else b.sext)(x, row_ty)
    L.bind(op.results[0], L.map_nd(src_t, row, v, result_type=dst_t))
