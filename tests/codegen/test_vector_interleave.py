"""``vector.interleave`` (MLIR's op, lowered as ``--convert-vector-to-llvm`` does: one
``shufflevector``): printed as ``mlir-opt-22`` prints it, verified with upstream's message,
and run against numpy (the low-precision templates pack B's K-groups with it)."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from upstream_mlir import assert_mlir_opt_prints_back, mlir_opt_error

SOURCE = """module {{
  func.func @f(%arg0: memref<{n}x{t}>, %arg1: memref<{n}x{t}>, %arg2: memref<{m}x{t}>) {{
    %c0 = arith.constant 0 : index
    %0 = vector.load %arg0[%c0] : memref<{n}x{t}>, vector<{n}x{t}>
    %1 = vector.load %arg1[%c0] : memref<{n}x{t}>, vector<{n}x{t}>
    %2 = vector.interleave %0, %1 : vector<{n}x{t}> -> vector<{m}x{t}>
    vector.store %2, %arg2[%c0] : memref<{m}x{t}>, vector<{m}x{t}>
    return
  }}
}}
"""


@pytest.mark.parametrize("n, t, dtype", [(16, "bf16", np.uint16), (64, "i8", np.uint8),
                                         (3, "f32", np.float32)])
def test_interleave_alternates_the_operands(n, t, dtype):
    src = SOURCE.format(n=n, m=2 * n, t=t)
    assert str(polyopt.parse(src)) == src
    assert_mlir_opt_prints_back(src)
    a = np.arange(n).astype(dtype)
    b = (np.arange(n) + 100).astype(dtype)
    if t == "bf16":     # bf16 arrays through their bits
        import ml_dtypes
        a, b = a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16)
    out = np.zeros(2 * n, a.dtype)
    polyopt.compile(src)["f"](a, b, out)
    want = np.empty(2 * n, a.dtype)
    want[0::2], want[1::2] = a, b
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_the_result_must_be_twice_as_wide():
    src = SOURCE.format(n=16, m=16, t="f32")
    with pytest.raises(VerifyError) as e:
        polyopt.parse(src, "f.mlir")
    assert str(e.value).splitlines()[0] == mlir_opt_error(src, filename="f.mlir")
