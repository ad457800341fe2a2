"""The compiler-rt conversions the JIT resolves for half/bfloat (polyopt.codegen.libcalls) round
exactly: every 16-bit input, and f32/f64 inputs sampled around every binade, subnormals, ties,
overflow and NaN payloads; and 128-bit integer arithmetic, which LLVM lowers to libgcc calls,
runs."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import polyopt
from polyopt.affine import float_format as ff
from polyopt.codegen import libcalls
from polyopt.codegen.jit import JITEngine

_LLVM = {ff.F16: "half", ff.BF16: "bfloat", ff.F32: "float", ff.F64: "double"}
_NP_BITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def converter(name: str, src: ff.Format, dst: ff.Format) -> JITEngine:
    """``void conv(src_bits* in, dst_bits* out, i64 n)`` calling the routine ``name``."""
    si, di = f"i{src.width}", f"i{dst.width}"
    return JITEngine(f"""
declare {_LLVM[dst]} @{name}({_LLVM[src]})
define void @conv(ptr %in, ptr %out, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %pi = getelementptr {si}, ptr %in, i64 %i
  %x = load {si}, ptr %pi
  %f = bitcast {si} %x to {_LLVM[src]}
  %r = call {_LLVM[dst]} @{name}({_LLVM[src]} %f)
  %y = bitcast {_LLVM[dst]} %r to {di}
  %po = getelementptr {di}, ptr %out, i64 %i
  store {di} %y, ptr %po
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
""")


def inputs(src: ff.Format, dst: ff.Format) -> np.ndarray:
    if src.width == 16:
        return np.arange(1 << 16, dtype=np.uint64)
    rng = np.random.default_rng(src.width * 7 + dst.width)
    mant = (1 << src.mant_bits) - 1
    exps = np.arange(0, 1 << src.exp_bits, dtype=np.uint64)
    parts = [rng.integers(0, 1 << src.width, 20000, dtype=np.uint64)]
    for m in (0, 1, mant, 1 << (src.mant_bits - 1)):      # every exponent, edge significands
        parts.append((exps << np.uint64(src.mant_bits)) | np.uint64(m))
    # ties and near-ties of the destination's rounding
    shift = src.mant_bits - dst.mant_bits
    base = rng.integers(0, 1 << (src.width - 1), 20000, dtype=np.uint64)
    base &= ~np.uint64((1 << shift) - 1)
    for low in (1 << (shift - 1), (1 << (shift - 1)) - 1, (1 << (shift - 1)) + 1):
        parts.append(base | np.uint64(low))
    bits = np.concatenate(parts)
    sign = np.uint64(1 << (src.width - 1))
    return np.concatenate([bits, bits | sign]) & np.uint64((1 << src.width) - 1)


def expected(bits: int, src: ff.Format, dst: ff.Format) -> int:
    v = ff.from_bits(bits, src)
    r = ff.to_bits(v, dst)
    if v != v:
        r |= 1 << (dst.mant_bits - 1)      # NaNs come out quiet
    return r


@pytest.mark.parametrize("name", sorted(libcalls.BUILTINS))
def test_conversion_routines_round_exactly(name):
    src, dst = libcalls.BUILTINS[name]
    engine = converter(name, src, dst)
    conv = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.function_address("conv"))
    x = inputs(src, dst).astype(_NP_BITS[src.width])
    out = np.zeros(len(x), dtype=_NP_BITS[dst.width])
    conv(x.ctypes.data, out.ctypes.data, len(x))
    bad = [(hex(a), hex(b), hex(expected(a, src, dst))) for a, b in zip(x.tolist(), out.tolist())
           if b != expected(a, src, dst)]
    assert not bad, bad[:10]


def test_truncation_from_double_to_16_bit_types_in_a_program():
    """``arith.truncf`` f64 -> f16/bf16 calls the routines (a segfault before they existed)."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(50) * 1e3, [1 / 3, 65519.99, 65520.0, 1e-8, -0.0]])
    n = len(x)
    fns = polyopt.compile(f"""
func.func @k(%A: memref<{n}xf64>, %H: memref<{n}xi16>, %B: memref<{n}xi16>) {{
  affine.for %i = 0 to {n} {{
    %x = affine.load %A[%i] : memref<{n}xf64>
    %h = arith.truncf %x : f64 to f16
    %b = arith.truncf %x : f64 to bf16
    %hb = arith.bitcast %h : f16 to i16
    %bb = arith.bitcast %b : bf16 to i16
    affine.store %hb, %H[%i] : memref<{n}xi16>
    affine.store %bb, %B[%i] : memref<{n}xi16>
  }}
  return
}}
""")
    h, b = np.zeros(n, np.int16), np.zeros(n, np.int16)
    fns["k"](x, h, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h.view(np.float16), x.astype(np.float16))
    assert [v & 0xFFFF for v in b.tolist()] == [ff.to_bits(v, ff.BF16) for v in x.tolist()]


def test_128_bit_integer_division_and_conversions_run():
    text = """
func.func private @rtclock() -> f64
func.func @main() {
  %t = func.call @rtclock() : () -> f64
  %z = arith.constant 0.0 : f64
  %zd = arith.mulf %t, %z : f64
  %zi = arith.fptosi %zd : f64 to i128
  %a0 = arith.constant 170141183460469231731687303715884105727 : i128
  %b0 = arith.constant -12345678901234567890123 : i128
  %a = arith.addi %a0, %zi : i128
  %b = arith.addi %b0, %zi : i128
  %q = arith.divsi %a, %b : i128
  %r = arith.remsi %a, %b : i128
  %u = arith.divui %a, %b : i128
  %f = arith.sitofp %b : i128 to f64
  %g = arith.sitofp %a : i128 to bf16
  %back = arith.fptosi %f : f64 to i128
  %q64 = arith.trunci %q : i128 to i64
  %r64 = arith.trunci %r : i128 to i64
  %u64 = arith.trunci %u : i128 to i64
  %d = arith.subi %back, %b : i128
  %d64 = arith.trunci %d : i128 to i64
  vector.print %q64 : i64
  vector.print %r64 : i64
  vector.print %u64 : i64
  vector.print %f : f64
  vector.print %g : bf16
  vector.print %d64 : i64
  return
}
"""
    import contextlib
    import io
    out = io.StringIO()
    compiled = polyopt.compile(text)
    with contextlib.redirect_stdout(out):
        compiled["main"]()
    a, b = (1 << 127) - 1, -12345678901234567890123
    q = -(a // -b)
    r = a - b * q
    mask = (1 << 64) - 1

    def s64(v):
        v &= mask
        return v - (1 << 64) if v >> 63 else v
    f = float(b)
    lines = out.getvalue().splitlines()
    assert lines[:3] == [str(s64(q)), str(s64(r)), str(s64(a // (b % (1 << 128))))]
    assert lines[3] == "%g" % f and lines[4] == "%g" % float(1 << 127)
    assert lines[5] == str(s64(int(f) - b))
