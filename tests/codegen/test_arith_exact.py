"""Float conversions and bf16 arithmetic against exact rounding (Python's rationals).

These are the cases where mlir-runner-22 does not compute what MLIR's ops define, so it
cannot be the oracle: ``truncf`` with a rounding mode (rounded to nearest at run time),
``sitofp``/``uitofp`` to bf16 (rounded twice, through f32) and bf16 results or operands
below 2^-126 (flushed to zero by ``vcvtneps2bf16`` on AVX512-BF16 hosts).  Inputs come in
numpy arrays; results go out as their bits.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import polyopt
from polyopt.affine import float_format as ff

FMT = {"f16": ff.F16, "bf16": ff.BF16, "f32": ff.F32, "f64": ff.F64}
MODES = ("to_nearest_even", "downward", "upward", "toward_zero", "to_nearest_away")


def neighbours(bits: int, fmt: ff.Format) -> list[int]:
    """``bits`` and the bit patterns one step below and above it (finite or infinite)."""
    sign = 1 << (fmt.width - 1)
    out = [bits]
    for step in (-1, 1):
        b = bits + step if not bits & sign else bits - step
        if bits == 0 and step == -1:
            b = sign | 1
        if bits == sign and step == 1:
            b = 1
        if 0 <= b < (1 << fmt.width):
            out.append(b)
    return out


def round_with_mode(v: float, fmt: ff.Format, mode: str) -> int:
    """The bits of ``v`` rounded to ``fmt`` by ``mode``, chosen among the representable values
    around it by comparing rationals (independently of the lowering's step correction)."""
    if v != v:
        return ff.to_bits(v, fmt) | (1 << (fmt.mant_bits - 1))
    if abs(v) == float("inf"):
        return ff.to_bits(v, fmt)
    x = Fraction(v)
    cands = []
    for b in neighbours(ff.to_bits(v, fmt), fmt):
        c = ff.from_bits(b, fmt)
        if c == c:
            cands.append((b, c))
    finite = [(b, Fraction(c)) for b, c in cands if abs(c) != float("inf")]
    inf = [(b, c) for b, c in cands if abs(c) == float("inf")]
    below = [bc for bc in finite if bc[1] <= x] + [bc for bc in inf if bc[1] < 0]
    above = [bc for bc in finite if bc[1] >= x] + [bc for bc in inf if bc[1] > 0]
    lo = max(below, key=lambda bc: bc[1]) if below else None
    hi = min(above, key=lambda bc: bc[1]) if above else None
    if lo is not None and hi is not None and lo[1] == hi[1]:
        # exact (a zero keeps the sign of v)
        if x == 0:
            return ff.to_bits(v, fmt)
        return lo[0]
    if mode == "downward":
        return lo[0]
    if mode == "upward":
        return hi[0]
    if mode == "toward_zero":
        return lo[0] if x > 0 else hi[0]
    nearest = ff.to_bits(v, fmt)
    if mode == "to_nearest_even":
        return nearest
    # to_nearest_away: a tie goes to the larger magnitude
    if lo[1] not in (float("inf"), float("-inf")) and hi[1] not in (float("inf"),
                                                                    float("-inf")):
        if x - Fraction(lo[1]) == Fraction(hi[1]) - x:
            return hi[0] if x > 0 else lo[0]
    return nearest


def interesting_doubles(fmt: ff.Format, n: int, seed: int) -> np.ndarray:
    """Ties and near-ties of ``fmt``, subnormals, overflow, zeros, NaN and random values."""
    rng = np.random.default_rng(seed)
    out = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0]
    for _ in range(n):
        bits = int(rng.integers(0, (1 << fmt.width) - 1))
        a = ff.from_bits(bits, fmt)
        b = ff.from_bits(bits + 1, fmt)
        if a != a or b != b or abs(a) == float("inf") or abs(b) == float("inf"):
            continue
        mid = (a + b) / 2     # exact in double for the narrower formats
        out += [mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), a,
                float(rng.uniform(a, b)) if a < b else a]
    top = ff.from_bits(((1 << fmt.exp_bits) - 2) << fmt.mant_bits | ((1 << fmt.mant_bits) - 1),
                       fmt)
    out += [top * 1.0000001, -top * 1.5, top]
    return np.array(out, dtype=np.float64)


def truncation_kernel(src: str, dst: str, mode: str, n: int) -> str:
    mode_text = "" if mode == "to_nearest_even" else f" {mode}"
    ib = f"i{FMT[dst].width}"
    conv = "%x = arith.truncf %y : f64 to f32\n" if src == "f32" else ""
    operand = "%x" if src == "f32" else "%y"
    return f"""
func.func @k(%A: memref<{n}xf64>, %B: memref<{n}x{ib}>) {{
  affine.for %i = 0 to {n} {{
    %y = affine.load %A[%i] : memref<{n}xf64>
    {conv}    %r = arith.truncf {operand}{mode_text} : {src} to {dst}
    %b = arith.bitcast %r : {dst} to {ib}
    affine.store %b, %B[%i] : memref<{n}x{ib}>
  }}
  return
}}
"""


@pytest.mark.parametrize("src, dst", [("f64", "f32"), ("f64", "f16"), ("f64", "bf16"),
                                      ("f32", "f16"), ("f32", "bf16")])
@pytest.mark.parametrize("mode", MODES)
def test_truncf_rounding_modes(src, dst, mode):
    vals = interesting_doubles(FMT[dst], 300, hash((src, dst, mode)) & 0xFFFF)
    if src == "f32":   # the inputs as the f32 values the kernel truncates
        vals = np.array([ff.from_bits(ff.to_bits(v, ff.F32), ff.F32) for v in vals])
    n = len(vals)
    ib = {16: np.int16, 32: np.int32}[FMT[dst].width]
    out = np.zeros(n, dtype=ib)
    polyopt.compile(truncation_kernel(src, dst, mode, n))["k"](vals, out)
    mask = (1 << FMT[dst].width) - 1
    for v, got in zip(vals.tolist(), out.tolist()):
        assert got & mask == round_with_mode(v, FMT[dst], mode), (v, mode, hex(got & mask))


@pytest.mark.parametrize("t, signed", [("i32", True), ("i32", False), ("i64", True),
                                       ("i64", False), ("i16", True)])
def test_int_to_bf16_rounds_once(t, signed):
    w = int(t[1:])
    rng = np.random.default_rng(w + signed)
    vals = [0, 1, -1, (1 << (w - 1)) - 1, -(1 << (w - 1)), 16842753, 16908289, 16842752,
            (1 << 24) + (1 << 16) + 1] + [int(x) for x in rng.integers(-(1 << (w - 1)),
                                                                       (1 << (w - 1)) - 1, 500)]
    vals = [((v + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1)) for v in vals]
    # random magnitudes, so that every bit length is covered
    vals += [int(rng.integers(0, 1 << k)) * int(rng.choice([-1, 1]))
             for k in range(1, w - 1) for _ in range(4)]
    n = len(vals)
    npt = {16: np.int16, 32: np.int32, 64: np.int64}[w]
    op = "sitofp" if signed else "uitofp"
    text = f"""
func.func @k(%A: memref<{n}x{t}>, %B: memref<{n}xi16>) {{
  affine.for %i = 0 to {n} {{
    %x = affine.load %A[%i] : memref<{n}x{t}>
    %r = arith.{op} %x : {t} to bf16
    %b = arith.bitcast %r : bf16 to i16
    affine.store %b, %B[%i] : memref<{n}xi16>
  }}
  return
}}
"""
    out = np.zeros(n, dtype=np.int16)
    polyopt.compile(text)["k"](np.array(vals, dtype=npt), out)
    for v, got in zip(vals, out.tolist()):
        x = v if signed else v % (1 << w)
        want = ff.round_fraction(Fraction(abs(x)), x < 0, ff.BF16)
        assert got & 0xFFFF == want, (x, hex(got & 0xFFFF), hex(want))


@pytest.mark.parametrize("op", ["addf", "subf", "mulf", "divf"])
def test_bf16_arithmetic_keeps_subnormals(op):
    """bf16 results and operands below 2^-126 are rounded, not flushed to zero."""
    rng = np.random.default_rng(11)
    tiny = [ff.from_bits(int(b), ff.BF16) for b in rng.integers(1, 0x80, 60)]   # subnormals
    small = [ff.from_bits(int(b), ff.BF16) for b in rng.integers(0x0080, 0x0200, 60)]
    ones = [ff.from_bits(int(b), ff.BF16) for b in rng.integers(0x3F00, 0x4100, 60)]
    a = np.array(tiny + small + small + ones + tiny + tiny, dtype=np.float32)
    b = np.array(small + tiny + ones + small + tiny + ones, dtype=np.float32)
    n = len(a)
    text = f"""
func.func @k(%A: memref<{n}xf32>, %B: memref<{n}xf32>, %C: memref<{n}xi16>) {{
  affine.for %i = 0 to {n} {{
    %x = affine.load %A[%i] : memref<{n}xf32>
    %y = affine.load %B[%i] : memref<{n}xf32>
    %xb = arith.truncf %x : f32 to bf16
    %yb = arith.truncf %y : f32 to bf16
    %r = arith.{op} %xb, %yb : bf16
    %bits = arith.bitcast %r : bf16 to i16
    affine.store %bits, %C[%i] : memref<{n}xi16>
  }}
  return
}}
"""
    out = np.zeros(n, dtype=np.int16)
    polyopt.compile(text)["k"](a, b, out)
    fn = {"addf": lambda x, y: x + y, "subf": lambda x, y: x - y, "mulf": lambda x, y: x * y,
          "divf": lambda x, y: x / y}[op]
    for x, y, got in zip(a.tolist(), b.tolist(), out.tolist()):
        exact = fn(Fraction(x), Fraction(y))
        want = ff.round_fraction(exact, exact < 0, ff.BF16)
        assert got & 0xFFFF == want, (op, x, y, hex(got & 0xFFFF), hex(want))
    assert any(0 < (g & 0x7FFF) < 0x80 for g in out.tolist())   # subnormal results occurred
