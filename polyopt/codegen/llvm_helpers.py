"""Small LLVM IR helpers shared by the lowering modules: LLVM types, constants, fast-math
flags, intrinsic calls and MLIR's exact integer division expansions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional, Sequence

from llvmlite import ir

from polyopt.affine import float_format
from polyopt.affine.attributes import IntegerAttr
from polyopt.affine.ir import Operation
from polyopt.affine.types import FloatType, Type, VectorType

if TYPE_CHECKING:
    from polyopt.codegen.lowering import FunctionLowering

class BFloatType(ir.types._BaseFloatType):
    """LLVM's ``bfloat`` (llvmlite has ``half``, ``float`` and ``double`` only); constants are
    written in LLVM's ``0xR`` hexadecimal form."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"

    def format_constant(self, value):
        return "0xR%04X" % float_format.to_bits(value, float_format.BF16)


BFloatType._create_instance()


class X86AMXType(ir.Type):
    """LLVM's ``x86_amx``, the contents of an AMX tile register (llvmlite has no such type).
    LLVM allows it only as the operand or result of the ``llvm.x86.*.internal`` intrinsics
    and of phis: never in memory, in a function's signature or in an aggregate."""

    def _to_string(self):
        return "x86_amx"

    def __eq__(self, other):
        return isinstance(other, X86AMXType)

    def __hash__(self):
        return hash(X86AMXType)


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
BF16 = BFloatType()
X86_AMX = X86AMXType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

NSW = ("nsw",)


class Unsupported(Exception):
    """Raised by type/attribute helpers; turned into a CodegenError naming the current op."""


def wrap_int(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if bits > 1 and v >> (bits - 1) else v


def int_const(ty: ir.IntType, v: int) -> ir.Constant:
    if ty.width == 1:
        return ir.Constant(ty, 1 if v & 1 else 0)
    return ir.Constant(ty, wrap_int(int(v), ty.width))


def i64(v: int) -> ir.Constant:
    return int_const(I64, v)


def is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def lowbit(v: int) -> int:
    return v & -v


def attr_int(attr) -> Optional[int]:
    return attr.value if isinstance(attr, IntegerAttr) else None


def fastmath_flags(op: Operation) -> tuple:
    """LLVM fast-math flags for a float op: ``contract`` plus the op's ``fastmath<...>``."""
    flags = {"contract"}
    fm = op.attributes.get("fastmath")
    if fm is not None:
        text = str(fm)
        if "<" in text:
            for f in text[text.index("<") + 1:text.rindex(">")].split(","):
                f = f.strip()
                if f == "fast":
                    flags.add("fast")
                elif f in ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"):
                    flags.add(f)
    return tuple(sorted(flags))


class FnAttrs(ir.FunctionAttributes):
    """Function attributes plus ``"target-cpu"``/``"target-features"`` string attributes."""

    def __init__(self, extra: Sequence[str]):
        super().__init__()
        self._extra = list(extra)

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + self._extra


def llvm_str(s: str) -> str:
    return '"' + s.replace("\\", "\\5C").replace('"', "\\22") + '"'


def opaque_alloca(builder: ir.IRBuilder, ty: ir.Type) -> ir.Value:
    """``alloca ty`` typed as an opaque ``ptr`` (llvmlite types allocas as typed pointers)."""
    a = builder.alloca(ty)
    a.type = PTR
    return a


def index_space(shape: Sequence[int]):
    """All index tuples of ``shape`` in row-major order (``()`` once for an empty shape)."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in index_space(shape[1:]):
            yield (i,) + rest


# ---------------------------------------------------------------------------------------------
# Integer division expansions (MLIR lower-affine / arith semantics)


def floordiv_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """floor(a / c) for c > 0 (MLIR's lower-affine expansion)."""
    zero = ir.Constant(a.type, 0)
    m1 = ir.Constant(a.type, -1)
    negative = b.icmp_signed("<", a, zero)
    dividend = b.select(negative, b.sub(m1, a), a)
    q = b.sdiv(dividend, c)
    return b.select(negative, b.sub(m1, q), q)


def ceildiv_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """ceil(a / c) for c > 0 (MLIR's lower-affine expansion)."""
    zero = ir.Constant(a.type, 0)
    one = ir.Constant(a.type, 1)
    nonpos = b.icmp_signed("<=", a, zero)
    dividend = b.select(nonpos, b.sub(zero, a), b.sub(a, one))
    q = b.sdiv(dividend, c)
    return b.select(nonpos, b.sub(zero, q), b.add(q, one))


def mod_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """a mod c in [0, c) for c > 0."""
    r = b.srem(a, c)
    neg = b.icmp_signed("<", r, ir.Constant(a.type, 0))
    return b.select(neg, b.add(r, c), r)


def signs_differ_and_inexact(b: ir.IRBuilder, r: ir.Value, d: ir.Value) -> ir.Value:
    """``r != 0 and sign(r) != sign(d)``: the truncated quotient must be decremented."""
    zero = zero_like(r.type)
    nonzero = b.icmp_signed("!=", r, zero)
    differ = b.icmp_signed("<", b.xor(r, d), zero)
    return b.and_(nonzero, differ)


def zero_like(t: ir.Type) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, 0)] * t.count)
    return ir.Constant(t, 0)


def floordiv_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """floor(a / d) for any non-zero d (scalars or vectors)."""
    q = b.sdiv(a, d)
    r = b.srem(a, d)
    adjust = signs_differ_and_inexact(b, r, d)
    return b.sub(q, b.zext(adjust, a.type))


def ceildiv_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """ceil(a / d) for any non-zero d."""
    q = b.sdiv(a, d)
    r = b.srem(a, d)
    zero = zero_like(a.type)
    nonzero = b.icmp_signed("!=", r, zero)
    same = b.icmp_signed(">=", b.xor(r, d), zero)
    return b.add(q, b.zext(b.and_(nonzero, same), a.type))


def mod_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """a - d * floor(a / d) for any non-zero d."""
    r = b.srem(a, d)
    adjust = signs_differ_and_inexact(b, r, d)
    return b.add(r, b.select(adjust, d, zero_like(a.type)))


def intrinsic_suffix(ty: ir.Type) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{intrinsic_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, BFloatType):
        return "bf16"
    raise Unsupported(f"no intrinsic for LLVM type {ty}")


_LLVM_FLOAT_FORMATS = ((ir.HalfType, float_format.F16), (BFloatType, float_format.BF16),
                       (ir.FloatType, float_format.F32), (ir.DoubleType, float_format.F64))


def llvm_float_format(ty: ir.Type) -> float_format.Format:
    """The binary format of an LLVM float type (``half``, ``bfloat``, ``float``, ``double``)."""
    for cls, fmt in _LLVM_FLOAT_FORMATS:
        if isinstance(ty, cls):
            return fmt
    raise Unsupported(f"LLVM type {ty} is not a float type")


def float_const(ty: ir.Type, value: float) -> ir.Constant:
    """A float constant of LLVM type ``ty``; a NaN keeps its exact bits (sign and payload), as
    a constant bitcast of its integer pattern."""
    fmt = llvm_float_format(ty)
    if math.isnan(value):
        bits = float_format.to_bits(value, fmt)
        return ir.Constant(ir.IntType(fmt.width), bits).bitcast(ty)
    return ir.Constant(ty, float_format.round_to(value, fmt))


def is_float_ty(ty: ir.Type) -> bool:
    """Is ``ty`` (or its vector element) an LLVM float type?"""
    if isinstance(ty, ir.VectorType):
        ty = ty.element
    return isinstance(ty, (ir.HalfType, BFloatType, ir.FloatType, ir.DoubleType))


def call_intrinsic(L: FunctionLowering, base: str, args: Sequence[ir.Value],
                    flags=()) -> ir.Value:
    ty = args[0].type
    fn = L.ml.intrinsic(f"llvm.{base}.{intrinsic_suffix(ty)}", ty, [a.type for a in args])
    return L.b.call(fn, list(args), fastmath=flags)


def check_float(t: Type) -> None:
    et = t.element_type if isinstance(t, VectorType) else t
    if not isinstance(et, FloatType) or et.width not in (16, 32, 64):
        raise Unsupported(f"type '{t}' is not supported by the LLVM lowering (use f16, bf16, f32 "
                          "or f64)")
