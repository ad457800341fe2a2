"""0-D vector types (``vector<f32>``, shape ``()``) read and printed as mlir-opt-22 reads and
prints them; the sizes it refuses are refused with its message."""

import pytest

import polyopt
from polyopt.affine.diagnostics import ParseError
from polyopt.affine.types import VectorType
from upstream_mlir import mlir_opt, mlir_opt_error


@pytest.mark.parametrize("spelling", ["vector<f32>", "vector<i1>", "vector<index>",
                                      "vector<bf16>", "vector<f64>", "vector< i8 >"])
def test_0d_vector_type_prints_as_mlir_opt(spelling):
    text = f"func.func @f(%a: {spelling}) -> {spelling} {{\n  return %a : {spelling}\n}}\n"
    module = polyopt.parse(text)
    assert str(module) == mlir_opt(text)
    func = next(op for op in module.walk() if op.name == "func.func")
    arg_type = func.regions[0].blocks[0].args[0].type
    assert isinstance(arg_type, VectorType) and arg_type.shape == ()
    assert arg_type.num_elements == 1


def test_0d_dense_constants_print_as_mlir_opt():
    text = """func.func @f() -> vector<f32> {
  %z = arith.constant dense<7.0> : vector<f32>
  %b = arith.constant dense<true> : vector<i1>
  %i = arith.constant dense<-3> : vector<i32>
  return %z : vector<f32>
}
"""
    assert str(polyopt.parse(text)) == mlir_opt(text)


@pytest.mark.parametrize("spelling", ["vector<0xf32>", "vector<2x0xf32>"])
def test_empty_vector_types_refused_as_mlir_opt(spelling):
    text = f"func.func @f(%a: {spelling})\n"
    want = mlir_opt_error(text)
    with pytest.raises(ParseError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


@pytest.mark.parametrize("shape", ["4x", ""])
@pytest.mark.parametrize("element", ["memref<f32>", "vector<f32>", "vector<2xf32>", "none"])
def test_non_element_types_refused_as_mlir_opt(shape, element):
    text = f"func.func private @f(%a: vector<{shape}{element}>)\n"
    want = mlir_opt_error(text)
    with pytest.raises(ParseError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)
