"""Where the parser's errors point, against mlir-opt-22 (same FILE:LINE:COL and words)."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from upstream_mlir import mlir_opt_error

CASES = {
    # MLIR points at the character after the '@'
    "function_name": "func.func @$invalid_function_name()\n",
    "function_name_digit": "func.func @1f()\n",
    "callee_name": "func.func @f() {\n  func.call @$x() : () -> ()\n  return\n}\n",
    # a custom op's symbol name: its parser's error names the op
    "function_without_at": "func.func missing()\n",
    "global_with_two_visibilities": 'memref.global "private" "public" @foo : memref<2x2xf32>\n',
    # ... but an attribute's symbol reference is not a custom op's
    "symbol_reference_attribute": '"func.func"() <{function_type = () -> (), sym_name = "f", '
                                  'sym_visibility = "private"}> ({}) {a = @ x} : () -> ()\n',
    # a repeated dimension or symbol: at the second name, not the blank before it
    "repeated_dimension": "#m = affine_map<(i, j , i) -> (0)>\n",
    "repeated_symbol": "#m = affine_map<(i)[s0, s1,  s0] -> (0)>\n",
    # an operator keyword as an operand: just after the token before it
    "floordiv_as_operand": "#m = affine_map<(i) -> (i,   floordiv 2)>\n",
    "mod_as_right_operand": "#m = affine_map<(i) -> (i + mod)>\n",
    "ceildiv_in_parentheses": "#m = affine_map<(i) -> (i * (ceildiv))>\n",
    # a non-affine pair is reported at the operator that follows it, if any, else at its own
    "ceildiv_followed_by_multiply": "#m = affine_map<(i, j) -> (i*2 ceildiv j*5)>\n",
    "ceildiv_followed_by_add": "#m = affine_map<(i, j) -> (i ceildiv j + 1)>\n",
    "multiply_chain": "#m = affine_map<(i, j) -> (i * j * 2)>\n",
    "mod_chain": "#m = affine_map<(i, j) -> (i mod j mod 2)>\n",
    "multiply_in_subscript": """func.func @f(%A: memref<4x4xf64>) {
  affine.for %i = 0 to 4 {
    %v = affine.load %A[%i * %i * 2, %i] : memref<4x4xf64>
  }
  return
}
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_points_where_mlir_opt_points(name):
    text = CASES[name]
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, filename="t.mlir")
    ours = info.value.render().splitlines()[0]
    upstream = mlir_opt_error(text, filename="t.mlir")
    if "use of undeclared identifier" in upstream:
        # the same place and words; polyopt names the identifier too
        assert ours.startswith(upstream + " '"), (ours, upstream)
    elif "expected valid '@'-identifier" in upstream:
        # the same place and words; polyopt says what it found
        assert ours.startswith(upstream + ", found "), (ours, upstream)
    else:
        assert ours == upstream
