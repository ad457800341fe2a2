"""The public API contract of DESIGN.md: parse, print, compile, CompiledModule."""

import numpy as np
import pytest

import polyopt

MATMUL = """\
func.func @matmul(%A: memref<{m}x{k}x{t}>, %B: memref<{k}x{n}x{t}>, %C: memref<{m}x{n}x{t}>) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {k} {{
        %a = affine.load %A[%i, %k] : memref<{m}x{k}x{t}>
        %b = affine.load %B[%k, %j] : memref<{k}x{n}x{t}>
        %c = affine.load %C[%i, %j] : memref<{m}x{n}x{t}>
        %p = arith.mulf %a, %b : {t}
        %s = arith.addf %c, %p : {t}
        affine.store %s, %C[%i, %j] : memref<{m}x{n}x{t}>
      }}
    }}
  }}
  return
}}
"""

HOP = """\
func.func @matmul(%A: memref<{m}x{k}x{t}>, %B: memref<{k}x{n}x{t}>, %C: memref<{m}x{n}x{t}>) {{
  hop.matmul %A, %B, %C : (memref<{m}x{k}x{t}>, memref<{k}x{n}x{t}>, memref<{m}x{n}x{t}>)
  return
}}
"""

SHAPES = [(1, 1, 1), (17, 31, 5), (300, 200, 100)]
DTYPES = [("f32", np.float32, 1e-4), ("f64", np.float64, 1e-12)]


def _operands(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype),
            rng.uniform(-1, 1, (m, n)).astype(dtype))


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("t,dtype,tol", DTYPES)
@pytest.mark.parametrize("template,switches", [(MATMUL, {}), (HOP, {"hopt": True}), (HOP, {})])
def test_compile_matmul_matches_numpy(m, n, k, t, dtype, tol, template, switches):
    compiled = polyopt.compile(template.format(m=m, n=n, k=k, t=t), **switches)
    a, b, c = _operands(m, n, k, dtype)
    expected = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    assert compiled["matmul"](a, b, c) is None
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol * k)


def test_parse_print_fixed_point_and_str():
    module = polyopt.parse(MATMUL.format(m=4, n=5, k=6, t="f64"), "mm.mlir")
    text = str(module)
    assert text == polyopt.print_module(module)
    assert str(polyopt.parse(text)) == text


def test_compile_takes_a_module_without_mutating_it():
    module = polyopt.parse(HOP.format(m=3, n=4, k=5, t="f64"))
    before = str(module)
    compiled = polyopt.compile(module, hopt=True)
    assert str(module) == before
    assert "hop.matmul" not in str(compiled.module)
    a, b, c = _operands(3, 4, 5, np.float64)
    expected = c + a @ b
    compiled["matmul"](a, b, c)
    np.testing.assert_allclose(c, expected)


def test_argument_errors_name_the_argument():
    compiled = polyopt.compile(MATMUL.format(m=3, n=4, k=5, t="f64"))
    a, b, c = _operands(3, 4, 5, np.float64)
    with pytest.raises(ValueError, match=r"argument 'arg1' \(memref<5x4xf64>\).*shape"):
        compiled["matmul"](a, b.T.copy(), c)
    with pytest.raises(TypeError, match=r"argument 'arg0' \(memref<3x5xf64>\).*float32"):
        compiled["matmul"](a.astype(np.float32), b, c)
    with pytest.raises(ValueError, match=r"argument 'arg2'.*C-contiguous"):
        compiled["matmul"](a, b, np.asfortranarray(np.zeros((3, 4))))
    with pytest.raises(TypeError, match=r"argument 'arg0'.*numpy.ndarray"):
        compiled["matmul"](a.tolist(), b, c)
    with pytest.raises(KeyError, match=r"no function @nope"):
        compiled["nope"]


def test_input_errors_raise_polyopt_errors():
    with pytest.raises(polyopt.ParseError) as info:
        polyopt.compile("func.func @f() {\n  %x = arith.addf %y, %y : f64\n  return\n}\n",
                        filename="bad.mlir")
    assert info.value.render().startswith("bad.mlir:2:19: error: use of undeclared SSA value")
    bad_shapes = HOP.format(m=3, n=4, k=5, t="f64").replace("memref<5x4xf64>", "memref<6x4xf64>")
    with pytest.raises(polyopt.VerifyError, match="'hop.matmul' op operand #1 \\(B\\) has 6 rows"):
        polyopt.compile(bad_shapes)
    with pytest.raises(TypeError, match="unknown option"):
        polyopt.compile(MATMUL.format(m=1, n=1, k=1, t="f64"), hopt_vectorize=True)
