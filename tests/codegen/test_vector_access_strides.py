"""A vector load or store reads or writes one contiguous run of memory: on a memref whose most
minor dimension does not have unit stride (a strided view, a `?` stride, a tiled layout map)
it used to run as if it had, and returned the wrong elements (an error fuzzer's find,
2026-11-28).  vector.load/store are refused by the verifier, with mlir-opt-22's message;
affine.vector_load/store, which mlir-opt accepts but cannot lower, at code generation."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError, VerifyError
from upstream_mlir import run_mlir_opt

TILED = "affine_map<(d0, d1) -> (d1 floordiv 4, d0, d1 mod 4)>"


def vector_function(op: str, memref: str, vector: str, index: str = "%c0") -> str:
    access = (f"%w = vector.load %A[{index}] : {memref}, {vector}" if op == "load" else
              f"vector.store %v, %A[{index}] : {memref}, {vector}")
    return f"""func.func @f(%A: {memref}, %v: {vector}) {{
  %c0 = arith.constant 0 : index
  {access}
  return
}}
"""


@pytest.mark.parametrize("op", ["load", "store"])
@pytest.mark.parametrize("memref, index", [
    ("memref<8xf32, strided<[2]>>", "%c0"),
    ("memref<?xf32, strided<[?], offset: ?>>", "%c0"),
    (f"memref<8x8xf32, {TILED}>", "%c0, %c0"),
])
def test_vector_load_and_store_need_a_unit_minor_stride(op, memref, index):
    text = vector_function(op, memref, "vector<4xf32>", index)
    upstream = run_mlir_opt(text)
    assert upstream.returncode == 1
    message = f"'vector.{op}' op most minor memref dim must have unit stride"
    assert message in upstream.stderr
    with pytest.raises(VerifyError, match=message):
        polyopt.parse(text)


@pytest.mark.parametrize("memref, vector", [
    ("memref<8xf32, strided<[2]>>", "vector<1xf32>"),            # one element: any stride
    ("memref<4x8xf32, strided<[?, 1], offset: ?>>", "vector<4xf32>"),   # unit minor stride
    ("memref<8x8xf32, affine_map<(d0, d1) -> (d0 * 8 + d1)>>", "vector<4xf32>"),
])
def test_what_upstream_accepts_is_accepted(memref, vector):
    index = ", ".join(["%c0"] * memref.count("x", 0, memref.index("f32")))
    for op in ("load", "store"):
        text = vector_function(op, memref, vector, index)
        assert run_mlir_opt(text).returncode == 0
        polyopt.parse(text)


def test_an_affine_vector_load_of_a_strided_view_is_refused_not_misread():
    text = """func.func @f(%A: memref<16xf32>, %o: memref<4xf32>) {
  %s = memref.subview %A[0] [4] [2] : memref<16xf32> to memref<4xf32, strided<[2]>>
  %w = affine.vector_load %s[0] : memref<4xf32, strided<[2]>>, vector<4xf32>
  affine.vector_store %w, %o[0] : memref<4xf32>, vector<4xf32>
  return
}
"""
    assert run_mlir_opt(text).returncode == 0          # upstream's verifier lets it through
    with pytest.raises(CodegenError, match=r"3:8: error: 'affine.vector_load': a vector access "
                                           r"reads a contiguous run, but the most minor "
                                           r"dimension of 'memref<4xf32, strided<\[2\]>>'"):
        polyopt.compile(text)
    # one element at a time is a scalar access, whatever the stride
    one = text.replace("vector<4xf32>", "vector<1xf32>")
    o = np.zeros(4, np.float32)
    polyopt.compile(one)["f"](np.arange(16, dtype=np.float32), o)
    assert o.tolist() == [0, 0, 0, 0]


def test_an_affine_vector_store_across_tiles_of_a_layout_is_refused():
    text = f"""func.func @g(%A: memref<8x8xf32, {TILED}>, %v: vector<4xf32>) {{
  affine.vector_store %v, %A[1, 2] : memref<8x8xf32, {TILED}>, vector<4xf32>
  return
}}
"""
    with pytest.raises(CodegenError, match="does not have unit stride"):
        polyopt.compile(text)


def test_an_affine_vector_store_inside_one_tile_runs():
    """The same layout, the run starting at a tile's first column: one contiguous run."""
    text = f"""func.func @g(%A: memref<8x8xf32, {TILED}>) {{
  %v = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  affine.vector_store %v, %A[1, 4] : memref<8x8xf32, {TILED}>, vector<4xf32>
  return
}}
"""
    normalized = np.zeros((2, 8, 4), np.float32)    # the layout's (d1 floordiv 4, d0, d1 mod 4)
    polyopt.compile(text)["g"](normalized)
    assert normalized[1, 1].tolist() == [1, 2, 3, 4] and normalized.sum() == 10
