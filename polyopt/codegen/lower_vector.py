"""Lowering of the vector dialect: broadcast, reduction, print, load/store (MLIR's
convert-vector-to-llvm); ``vector.fma`` is in :mod:`lower_math`."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.affine.types import FloatType, IndexType, IntegerType, Type, VectorType, i1, i8
from polyopt.codegen import float_casts
from polyopt.codegen.llvm_helpers import (
    F32,
    I8,
    I32,
    I64,
    Unsupported,
    call_intrinsic,
    check_float,
    fastmath_flags,
    int_const,
    intrinsic_suffix,
)
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.memref_access import Mem


@handles("vector.broadcast")
def _lower_broadcast(L: FunctionLowering, op: Operation) -> None:
    src = op.operands[0]
    dst_t = op.results[0].type
    L.ml.type(dst_t)
    L.bind(op.results[0], L.broadcast(L.get(src), src.type, tuple(dst_t.shape),
                                      dst_t.element_type))


_REDUCE = {  # kind -> (int intrinsic, float intrinsic, combining op for the accumulator)
    "add": ("vector.reduce.add", "vector.reduce.fadd", None),
    "mul": ("vector.reduce.mul", "vector.reduce.fmul", None),
    "minui": ("vector.reduce.umin", None, "umin"), "minsi": ("vector.reduce.smin", None, "smin"),
    "maxui": ("vector.reduce.umax", None, "umax"), "maxsi": ("vector.reduce.smax", None, "smax"),
    "and": ("vector.reduce.and", None, "and"), "or": ("vector.reduce.or", None, "or"),
    "xor": ("vector.reduce.xor", None, "xor"),
    "minnumf": (None, "vector.reduce.fmin", "minnum"),
    "maxnumf": (None, "vector.reduce.fmax", "maxnum"),
    "minimumf": (None, "vector.reduce.fminimum", "minimum"),
    "maximumf": (None, "vector.reduce.fmaximum", "maximum"),
}


@handles("vector.reduction")
def _lower_reduction(L: FunctionLowering, op: Operation) -> None:
    kind = op.kind
    vec = op.operands[0]
    acc = op.operands[1] if len(op.operands) > 1 else None
    vt = vec.type
    if not isinstance(vt, VectorType) or len(vt.shape) > 1:
        raise Unsupported(f"only 0-D and 1-D vector reductions are supported, got '{vt}'")
    rt = op.results[0].type
    is_float = isinstance(rt, FloatType)
    if is_float:
        check_float(rt)
    ety = L.ml.scalar_type(rt)
    v = L.get(vec)
    b = L.b
    entry = _REDUCE.get(kind)
    if entry is None or entry[1 if is_float else 0] is None:
        raise Unsupported(f"reduction kind '{kind}' on '{rt}' is not supported")
    iname, fname, combine = entry
    suffix = intrinsic_suffix(v.type)
    fm = tuple(f for f in fastmath_flags(op) if f != "contract")
    if is_float and rt.brain:
        L.bind(op.results[0], _reduce_bf16(L, kind, v, L.get(acc) if acc is not None else None,
                                           fm))
        return
    if is_float and kind in ("add", "mul"):
        start = L.get(acc) if acc is not None else ir.Constant(ety, 0.0 if kind == "add" else 1.0)
        fn = L.ml.intrinsic(f"llvm.{fname}.{suffix}", ety, [ety, v.type])
        L.bind(op.results[0], b.call(fn, [start, v], fastmath=fm))
        return
    fn = L.ml.intrinsic(f"llvm.{fname if is_float else iname}.{suffix}", ety, [v.type])
    r = b.call(fn, [v], fastmath=fm)
    if acc is not None:
        a = L.get(acc)
        if kind == "add":
            r = b.add(r, a)
        elif kind == "mul":
            r = b.mul(r, a)
        elif combine in ("and", "or", "xor"):
            r = {"and": b.and_, "or": b.or_, "xor": b.xor}[combine](r, a)
        else:
            r = call_intrinsic(L, combine, [r, a])
    L.bind(op.results[0], r)


def _reduce_bf16(L: FunctionLowering, kind: str, v: ir.Value, acc, fm) -> ir.Value:
    """A bf16 reduction in element order, each step computed in f32 and rounded to bf16 (LLVM
    would round through ``vcvtneps2bf16``, which flushes subnormals); min/max are exact."""
    b = L.b
    wide = b.fpext(v, ir.VectorType(F32, v.type.count))
    if kind in ("add", "mul"):
        op = b.fadd if kind == "add" else b.fmul
        r = acc if acc is not None else \
            ir.Constant(v.type.element, 0.0 if kind == "add" else 1.0)
        for i in range(v.type.count):
            x = b.extract_element(v, int_const(I32, i))
            r = float_casts.through_f32(b, lambda p, q: op(p, q, flags=fm), r, x)
        return r
    base = {"minnumf": "fmin", "maxnumf": "fmax", "minimumf": "fminimum",
            "maximumf": "fmaximum"}[kind]
    fn = L.ml.intrinsic(f"llvm.vector.reduce.{base}.v{v.type.count}f32", F32, [wide.type])
    r = b.call(fn, [wide], fastmath=fm)
    if acc is not None:
        combine = {"minnumf": "minnum", "maxnumf": "maxnum", "minimumf": "minimum",
                   "maximumf": "maximum"}[kind]
        r = call_intrinsic(L, combine, [r, b.fpext(acc, F32)])
    return float_casts.trunc_f32_to_bf16(b, r)


def print_scalar(L: FunctionLowering, v: ir.Value, t: Type) -> None:
    ml, b = L.ml, L.b
    if isinstance(t, FloatType):
        check_float(t)
        if t.width == 16:   # MLIR's printF16/printBF16 print the value as a float (%g)
            v = b.fpext(v, F32)
        b.call(ml.runtime("polyopt_print_f64" if t.width == 64 else "polyopt_print_f32"), [v])
    elif isinstance(t, IndexType):
        b.call(ml.runtime("polyopt_print_u64"), [v])
    elif isinstance(t, IntegerType):
        if t.width > 64:
            raise Unsupported(f"printing '{t}' is not supported")
        if t.width < 64:
            v = (b.zext if t.width == 1 else b.sext)(v, I64)
        b.call(ml.runtime("polyopt_print_i64"), [v])
    else:
        raise Unsupported(f"printing '{t}' is not supported")


def _print_vector(L: FunctionLowering, v: ir.Value, t: VectorType) -> None:
    b, ml = L.b, L.ml
    b.call(ml.runtime("polyopt_print_open"), [])
    for i in range(t.shape[0]):
        if i:
            b.call(ml.runtime("polyopt_print_comma"), [])
        if len(t.shape) == 1:
            print_scalar(L, b.extract_element(v, int_const(I32, i)), t.element_type)
        else:
            _print_vector(L, b.extract_value(v, [i]), VectorType(t.shape[1:], t.element_type))
    b.call(ml.runtime("polyopt_print_close"), [])


@handles("vector.print")
def _lower_print(L: FunctionLowering, op: Operation) -> None:
    ml, b = L.ml, L.b
    src = op.operands[0] if op.operands else None
    if src is not None:
        t = src.type
        if isinstance(t, VectorType):
            ml.type(t)
            # a 0-D vector prints as a vector of one element: ( 7 )
            _print_vector(L, L.get(src), t if t.shape else VectorType((1,), t.element_type))
        else:
            print_scalar(L, L.get(src), t)
    string = getattr(op, "string", None)
    if string is not None:  # MLIR 22 prints a string literal without any punctuation
        b.call(ml.runtime("polyopt_print_string"), [ml.c_string(string)])
        return
    punct = getattr(op, "punctuation", "newline")
    helper = {"newline": "polyopt_print_newline", "comma": "polyopt_print_comma",
              "open": "polyopt_print_open", "close": "polyopt_print_close"}.get(punct)
    if helper is not None:
        b.call(ml.runtime(helper), [])


@handles("vector.load", "vector.store")
def _lower_vector_memop(L: FunctionLowering, op: Operation) -> None:
    vt = (op.results[0] if op.name == "vector.load" else op.operands[0]).type
    if not vt.shape:
        _lower_0d_memop(L, op)
        return
    if op.name == "vector.load":
        mem = L.mem(op.operands[0])
        subs = [L.form_of(v) for v in op.operands[1:]]
        vt = op.results[0].type
        L.ml.type(vt)
        if _is_i1_access(mem, vt):
            bytes_t = VectorType(vt.shape, i8)
            raw = L.load_vector(_byte_view(mem), subs, bytes_t)
            L.bind(op.results[0], L.map_nd(bytes_t, lambda r: L.b.trunc(
                r, ir.VectorType(ir.IntType(1), r.type.count)), raw, result_type=vt))
            return
        L.bind(op.results[0], L.load_vector(mem, subs, vt))
    else:
        value = op.operands[0]
        mem = L.mem(op.operands[1])
        subs = [L.form_of(v) for v in op.operands[2:]]
        vt = value.type
        L.ml.type(vt)
        if _is_i1_access(mem, vt):
            bytes_t = VectorType(vt.shape, i8)
            raw = L.map_nd(vt, lambda r: L.b.zext(r, ir.VectorType(I8, r.type.count)),
                           L.get(value), result_type=bytes_t)
            L.store_vector(raw, _byte_view(mem), subs, bytes_t)
            return
        L.store_vector(L.get(value), mem, subs, vt)


def _lower_0d_memop(L: FunctionLowering, op: Operation) -> None:
    """A 0-D vector load or store is one of the element (MLIR lowers it through
    ``memref.load``/``memref.store``)."""
    b = L.b
    zero = int_const(I32, 0)
    if op.name == "vector.load":
        mem = L.mem(op.operands[0])
        x = L.load_elem(mem, [L.form_of(v) for v in op.operands[1:]])
        vty = L.ml.type(op.results[0].type)
        L.bind(op.results[0], b.insert_element(ir.Constant(vty, ir.Undefined), x, zero))
    else:
        mem = L.mem(op.operands[1])
        L.store_elem(b.extract_element(L.get(op.operands[0]), zero), mem,
                     [L.form_of(v) for v in op.operands[2:]])


def _is_i1_access(mem: Mem, vt: VectorType) -> bool:
    return mem.type.element_type == i1 and vt.element_type == i1


def _byte_view(mem: Mem) -> Mem:
    """An ``i1`` memref as the bytes it is stored in (one per element, as numpy's bool)."""
    return Mem(mem.ptr, mem.type.with_(element_type=i8), mem.align)


@handles("vector.bitcast")
def _lower_bitcast(L: FunctionLowering, op: Operation) -> None:
    dst_t = op.results[0].type
    if len(dst_t.shape) != 1:
        raise Unsupported(f"vector.bitcast of n-D vectors ('{dst_t}') is not supported")
    L.bind(op.results[0], L.b.bitcast(L.get(op.operands[0]), L.ml.type(dst_t)))


@handles("vector.interleave")
def _lower_interleave(L: FunctionLowering, op: Operation) -> None:
    a, b = op.operands
    if len(a.type.shape) != 1:
        raise Unsupported(f"vector.interleave of n-D vectors ('{a.type}') is not supported")
    n = a.type.shape[0]
    mask = ir.Constant(ir.VectorType(I32, 2 * n), [x for i in range(n) for x in (i, n + i)])
    L.bind(op.results[0], L.b.shuffle_vector(L.get(a), L.get(b), mask))
