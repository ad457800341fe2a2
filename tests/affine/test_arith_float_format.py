"""Properties of polyopt.affine.float_format (hypothesis): rounding agrees with numpy's IEEE
conversions, every value's spelling reads back as the same bits through the parser, and
NaN payloads survive."""

from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polyopt.affine import float_format as ff
from polyopt.affine.parser import parse

FORMATS = {"f16": ff.F16, "bf16": ff.BF16, "f32": ff.F32, "f64": ff.F64}


def double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


@settings(max_examples=500, deadline=None)
@given(st.integers(0, (1 << 64) - 1))
def test_rounding_doubles_agrees_with_numpy(bits):
    x = double(bits)
    with np.errstate(over="ignore"):
        for fmt, npt in ((ff.F16, np.float16), (ff.F32, np.float32)):
            want = np.array([x]).astype(npt)
            got = ff.from_bits(ff.to_bits(x, fmt), fmt)
            if math.isnan(x):
                assert math.isnan(got)
            else:
                assert got == float(want[0]) and math.copysign(1, got) == math.copysign(1, x)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.data())
def test_spelling_reads_back_as_the_same_bits(name, data):
    fmt = FORMATS[name]
    bits = data.draw(st.integers(0, (1 << fmt.width) - 1))
    v = ff.from_bits(bits, fmt)
    text = f"%0 = arith.constant {ff.format_float(v, fmt)} : {name}\n"
    op = next(o for o in parse(f"func.func @f() {{\n{text}  return\n}}\n").walk()
              if o.name == "arith.constant")
    back = op.attributes["value"].value
    assert ff.to_bits(back, fmt) == bits


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["f16", "bf16", "f32"]), st.data())
def test_nan_payloads_and_bf16_rounding(name, data):
    fmt = FORMATS[name]
    payload = data.draw(st.integers(1, (1 << fmt.mant_bits) - 1))
    sign = data.draw(st.integers(0, 1))
    bits = (sign << (fmt.width - 1)) | (((1 << fmt.exp_bits) - 1) << fmt.mant_bits) | payload
    assert ff.to_bits(ff.from_bits(bits, fmt), fmt) == bits
    if name == "bf16":    # bf16 rounding of an f32 is the usual integer trick
        f32 = data.draw(st.integers(0, (1 << 32) - 1))
        x = ff.from_bits(f32, ff.F32)
        if not math.isnan(x):
            want = (f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16
            assert ff.to_bits(x, ff.BF16) == want & 0xFFFF
