"""``vector.contract`` refused as mlir-opt-22 refuses it, with its message."""

import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from upstream_mlir import mlir_opt, mlir_opt_error

_CONTRACT = """func.func @f(%a: {lhs}, %b: {rhs}, %c: {acc}) -> {acc} {{
  %0 = vector.contract {{indexing_maps = [{maps}], iterator_types = [{iters}]}} %a, %b, %c
      : {lhs}, {rhs} into {acc}
  return %0 : {acc}
}}
"""

CASES = {
    # no reduction loop at all: an outer product
    "all parallel": dict(lhs="vector<3xf32>", rhs="vector<4xf32>", acc="vector<3x4xf32>",
                         maps="affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, "
                              "affine_map<(i, j) -> (i, j)>",
                         iters='"parallel", "parallel"'),
    # the reduction loop k is indexed by the left operand only
    "reduction on one side": dict(lhs="vector<3x2xf32>", rhs="vector<4xf32>",
                                  acc="vector<3x4xf32>",
                                  maps="affine_map<(i, j, k) -> (i, k)>, "
                                       "affine_map<(i, j, k) -> (j)>, "
                                       "affine_map<(i, j, k) -> (i, j)>",
                                  iters='"parallel", "parallel", "reduction"'),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_contracting_dimension_pair(case):
    text = _CONTRACT.format(**CASES[case])
    want = mlir_opt_error(text)
    assert want.endswith("error: 'vector.contract' op expected at least one contracting "
                         "dimension pair")
    with pytest.raises(VerifyError) as e:
        polyopt.parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


def test_a_contracting_pair_among_other_reductions_is_accepted():
    text = _CONTRACT.format(lhs="vector<3x2xf32>", rhs="vector<2xf32>", acc="vector<3xf32>",
                            maps="affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (k)>, "
                                 "affine_map<(i, k) -> (i)>",
                            iters='"parallel", "reduction"')
    assert str(polyopt.parse(text)) == mlir_opt(text)
