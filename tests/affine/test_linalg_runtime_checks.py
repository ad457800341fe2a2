"""linalg ops on '?' memrefs (issue 13): the operands' sizes are checked when the code runs, so
disagreeing sizes are an error of the call, never an out-of-bounds access (MLIR leaves them
undefined)."""

import numpy as np
import pytest

import polyopt

TEXT = """
func.func @mm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  linalg.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
  return
}
func.func @conv1(%I: memref<?xf32>, %K: memref<?xf32>, %O: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(o, k) -> (o * 2 + k)>, affine_map<(o, k) -> (k)>,
                                   affine_map<(o, k) -> (o)>],
                  iterator_types = ["parallel", "reduction"]}
    ins(%I, %K : memref<?xf32>, memref<?xf32>) outs(%O : memref<?xf32>) {
  ^bb0(%i: f32, %k: f32, %o: f32):
    %p = arith.mulf %i, %k : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
"""


@pytest.fixture(scope="module")
def compiled():
    return polyopt.compile(TEXT, filename="k.mlir")


def test_sizes_that_agree_run(compiled):
    rng = np.random.default_rng(0)
    for m, n, k in [(1, 1, 1), (7, 13, 5), (30, 2, 17)]:
        A = rng.random((m, k), dtype=np.float32)
        B = rng.random((k, n), dtype=np.float32)
        C = np.zeros((m, n), np.float32)
        compiled["mm"](A, B, C)
        np.testing.assert_allclose(C, A @ B, rtol=1e-5)
    I, K = rng.random(11, dtype=np.float32), rng.random(3, dtype=np.float32)
    O = np.zeros(5, np.float32)
    compiled["conv1"](I, K, O)
    np.testing.assert_allclose(O, [I[2 * o:2 * o + 3] @ K for o in range(5)], rtol=1e-5)


@pytest.mark.parametrize("b_shape, c_shape", [((5, 6), (3, 6)), ((4, 6), (3, 7)),
                                              ((4, 6), (2, 6))])
def test_matmul_sizes_that_disagree_are_an_error(compiled, b_shape, c_shape):
    C = np.full(c_shape, 7.0, np.float32)
    with pytest.raises(RuntimeError, match=r"^k.mlir:3:3: error: 'linalg.matmul' operands have "
                                           r"sizes that do not agree at run time$"):
        compiled["mm"](np.ones((3, 4), np.float32), np.ones(b_shape, np.float32), C)
    assert (C == 7.0).all()


def test_a_window_that_reads_past_the_input_is_an_error(compiled):
    # output 6 needs input index 2 * 5 + 2 = 12 of an input of 11
    with pytest.raises(RuntimeError, match=r"^k.mlir:7:3: error: 'linalg.generic' operands have "
                                           r"sizes that do not agree at run time$"):
        compiled["conv1"](np.ones(11, np.float32), np.ones(3, np.float32),
                          np.zeros(6, np.float32))


def test_the_printed_pass_is_mlir_s_without_checks():
    module = polyopt.parse(TEXT)
    from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops
    convert_linalg_to_affine_loops(module)
    assert "cf.assert" not in str(module) and "affine.if" not in str(module)
