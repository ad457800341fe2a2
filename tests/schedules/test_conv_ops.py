"""The convolution ops' plain loop nests (:mod:`polyopt.schedules.conv_loops`): every kind
(``linalg.conv_2d_nhwc_hwcf``, ``linalg.conv_1d_nwc_wcf``, ``linalg.depthwise_conv_2d_nhwc_hwc``,
``hop.conv2d``) expanded by ``expand_conv_naive``, compiled with ``polyopt.compile`` and run
against numpy (``conv_reference``) and against upstream MLIR (mlir-opt-22's
``--convert-linalg-to-affine-loops``, run by mlir-runner-22); the vectorized depthwise nest."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conv_reference import conv_reference, output_size
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.diagnostics import ScheduleError, VerifyError
from polyopt.affine.dialects.affine import AffineForOp, AffineVectorLoadOp
from polyopt.affine.dialects.linalg import LINALG_CONV_OPS
from polyopt.affine.loop_utils import constant_trip_count
from polyopt.affine.verifier import verify
from polyopt.schedules.conv_loops import (CONV_LOOP_ORDERS, expand_conv_naive,
                                          vectorize_depthwise)
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run

OP_NAMES = {"conv2d": "linalg.conv_2d_nhwc_hwcf", "conv1d": "linalg.conv_1d_nwc_wcf",
            "depthwise2d": "linalg.depthwise_conv_2d_nhwc_hwc"}
DTYPES = {"f32": np.float32, "f64": np.float64}


def shapes(kind: str, n: int, spatial, c: int, f: int, kernel, strides, dilations):
    """(input, filter, output) shapes of a conv of ``kind`` with output sizes from the formula."""
    out = tuple(output_size(x, k, s, d) for x, k, s, d in zip(spatial, kernel, strides, dilations))
    if kind == "conv2d":
        return (n, *spatial, c), (*kernel, c, f), (n, *out, f)
    if kind == "conv1d":
        return (n, *spatial, c), (*kernel, c, f), (n, *out, f)
    return (n, *spatial, c), (*kernel, c), (n, *out, c)


def memref(shape, elem: str) -> str:
    return "memref<" + "".join(f"{d}x" for d in shape) + elem + ">"


def dense(values) -> str:
    return f"dense<[{', '.join(map(str, values))}]> : tensor<{len(values)}xi64>"


def conv_text(kind, si, sk, so, strides, dilations, elem, name="conv", hop=False) -> str:
    ti, tk, to = memref(si, elem), memref(sk, elem), memref(so, elem)
    if hop:
        op = (f"hop.conv2d %I, %K, %O {{strides = [{strides[0]}, {strides[1]}], dilations = "
              f"[{dilations[0]}, {dilations[1]}]}} : ({ti}, {tk}, {to})")
    else:
        op = (f"{OP_NAMES[kind]} {{dilations = {dense(dilations)}, strides = {dense(strides)}}} "
              f"ins(%I, %K : {ti}, {tk}) outs(%O : {to})")
    return (f"func.func @{name}(%I: {ti}, %K: {tk}, %O: {to}) {{\n  {op}\n  return\n}}\n")


def conv_ops(module):
    return [op for op in module.walk() if hasattr(op, "CONV_KIND")]


def expand_all(module) -> list[list[AffineForOp]]:
    nests = [expand_conv_naive(op) for op in conv_ops(module)]
    verify(module)
    assert not conv_ops(module)
    return nests


def random_operands(si, sk, so, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in (si, sk, so)]


def check_run(compiled, kind, operands, strides, dilations, name="conv"):
    i, k, o = operands
    expected = conv_reference(kind, i, k, o, strides, dilations)
    got = o.copy()
    compiled[name](i, k, got)
    tol = dict(rtol=2e-5, atol=2e-5) if o.dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, expected, **tol)


# ---------------------------------------------------------------------------------------------
# every kind, f32 and f64, strides 1 and 2, dilations 1 and 2, batch 1 and 2, odd sizes


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("dilation", [1, 2])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["conv2d", "conv1d", "depthwise2d"])
def test_naive_nest_computes_the_convolution(kind, elem, stride, dilation, batch):
    if kind == "conv1d":
        spatial, kernel, strides, dilations = (13,), (3,), (stride,), (dilation,)
    else:   # different strides/dilations per dimension catch swapped h/w
        spatial, kernel = (9, 11), (3, 2)
        strides, dilations = (stride, stride + 1), (dilation, 1)
    si, sk, so = shapes(kind, batch, spatial, 3, 5, kernel, strides, dilations)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, elem))
    expand_all(module)
    check_run(polyopt.compile(module), kind, random_operands(si, sk, so, DTYPES[elem]),
              strides, dilations)


@pytest.mark.parametrize("kind", ["conv2d", "conv1d", "depthwise2d"])
def test_loop_order_and_extents(kind):
    if kind == "conv1d":
        strides, dilations = (2,), (1,)
        si, sk, so = shapes(kind, 2, (10,), 3, 5, (4,), strides, dilations)
        extents = dict(n=2, ow=4, f=5, kw=4, c=3)
    else:
        strides, dilations = (2, 1), (1, 2)
        si, sk, so = shapes(kind, 2, (9, 10), 3, 5, (3, 4), strides, dilations)
        extents = dict(n=2, oh=4, ow=4, f=5, kh=3, kw=4, c=3)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, "f64"))
    (loops,) = expand_all(module)
    order = CONV_LOOP_ORDERS[kind]
    assert [constant_trip_count(loop) for loop in loops] == [extents[k] for k in order]
    for outer, inner in zip(loops, loops[1:]):     # a perfect nest
        assert inner.parent_op is outer
        assert [o for o in outer.body.ops if o.name != "affine.yield"] == [inner]
    assert order[-1] == "c"


def test_linalg_conv2d_expands_like_hop_conv2d():
    strides, dilations = (1, 2), (2, 1)
    si, sk, so = shapes("conv2d", 1, (10, 9), 2, 3, (2, 3), strides, dilations)
    lin = polyopt.parse(conv_text("conv2d", si, sk, so, strides, dilations, "f64"))
    hop = polyopt.parse(conv_text("conv2d", si, sk, so, strides, dilations, "f64", hop=True))
    expand_all(lin)
    expand_all(hop)
    assert str(lin) == str(hop)


def test_expand_refuses_other_ops():
    module = polyopt.parse("func.func @f(%A: memref<4x4xf64>) {\n  linalg.matmul ins(%A, %A : "
                           "memref<4x4xf64>, memref<4x4xf64>) outs(%A : memref<4x4xf64>)\n"
                           "  return\n}\n")
    (op,) = [o for o in module.walk() if o.name == "linalg.matmul"]
    with pytest.raises(TypeError, match="expand_conv_naive expects a convolution op"):
        expand_conv_naive(op)


# ---------------------------------------------------------------------------------------------
# the semantics are upstream MLIR's


def fill_values(shape, salt: int) -> np.ndarray:
    """Small integers (exact in f32 and f64): ((sum_j (7j + salt) * i_j) mod 11) - 5."""
    idx = np.indices(shape)
    return (sum((7 * j + salt) * idx[j] for j in range(len(shape))) % 11 - 5).astype(float)


def fill_loops(name: str, shape, elem: str, salt: int) -> str:
    r = len(shape)
    dims = ", ".join(f"d{j}" for j in range(r))
    expr = " + ".join(f"d{j} * {7 * j + salt}" for j in range(r))
    ivs = [f"%{name}{j}" for j in range(r)]
    lines = [" " * (2 * j + 2) + f"affine.for {ivs[j]} = 0 to {n} {{"
             for j, n in enumerate(shape)]
    pad = " " * (2 * r + 2)
    lines += [pad + f"%{name}_v = affine.apply affine_map<({dims}) -> (({expr}) mod 11 - 5)>"
                    f"({', '.join(ivs)})",
              pad + f"%{name}_i = arith.index_cast %{name}_v : index to i64",
              pad + f"%{name}_f = arith.sitofp %{name}_i : i64 to {elem}",
              pad + f"affine.store %{name}_f, %{name}[{', '.join(ivs)}] : {memref(shape, elem)}"]
    lines += [" " * (2 * j + 2) + "}" for j in reversed(range(r))]
    return "\n".join(lines)


def upstream_program(kind, si, sk, so, strides, dilations, elem) -> str:
    ti, tk, to = memref(si, elem), memref(sk, elem), memref(so, elem)
    printer = "printMemrefF32" if elem == "f32" else "printMemrefF64"
    return f"""\
func.func @main() {{
  %I = memref.alloc() : {ti}
  %K = memref.alloc() : {tk}
  %O = memref.alloc() : {to}
{fill_loops("I", si, elem, 3)}
{fill_loops("K", sk, elem, 5)}
{fill_loops("O", so, elem, 2)}
  {OP_NAMES[kind]} {{dilations = {dense(dilations)}, strides = {dense(strides)}}} ins(%I, %K : {ti}, {tk}) outs(%O : {to})
  %U = memref.cast %O : {to} to memref<*x{elem}>
  call @{printer}(%U) : (memref<*x{elem}>) -> ()
  return
}}
func.func private @{printer}(memref<*x{elem}>)
"""


def run_upstream(text: str) -> str:
    return lower_and_run(text, [
        "--convert-linalg-to-affine-loops", "--lower-affine", "--convert-scf-to-cf",
        "--finalize-memref-to-llvm", "--convert-arith-to-llvm", "--convert-func-to-llvm",
        "--convert-cf-to-llvm", "--reconcile-unrealized-casts"])


UPSTREAM_CASES = {   # kind: (spatial, channels, filters, kernel, strides, dilations)
    "conv2d": ((7, 9), 3, 4, (3, 2), (2, 1), (2, 3)),
    "conv1d": ((11,), 3, 5, (3,), (2,), (2,)),
    "depthwise2d": ((9, 8), 5, None, (2, 3), (2, 3), (3, 1)),
}


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("kind", sorted(UPSTREAM_CASES))
def test_semantics_agree_with_mlir_opt_and_mlir_runner(kind, elem, tmp_path, capfd):
    spatial, c, f, kernel, strides, dilations = UPSTREAM_CASES[kind]
    si, sk, so = shapes(kind, 2, spatial, c, f or c, kernel, strides, dilations)
    text = upstream_program(kind, si, sk, so, strides, dilations, elem)
    upstream = run_upstream(text)
    data = upstream.split("data =", 1)[1]
    values = np.array([float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", data)])
    expected = conv_reference(kind, fill_values(si, 3), fill_values(sk, 5), fill_values(so, 2),
                              strides, dilations)
    np.testing.assert_array_equal(values, expected.ravel())
    # polyopt on the same program (the conv expanded by expand_conv_naive) prints the same
    module = polyopt.parse(text, "upstream.mlir")
    expand_all(module)
    ours = polyopt_run(tmp_path, capfd, str(module), name="conv.mlir")
    assert mask_addresses(ours) == mask_addresses(upstream)


# ---------------------------------------------------------------------------------------------
# the vectorized depthwise nest


@pytest.mark.parametrize("channels,width,elem", [
    (16, 8, "f32"),    # the width divides C
    (13, 8, "f32"),    # a scalar remainder loop for the last 5 channels
    (12, 8, "f64"),
    (9, 4, "f64"),
    (5, 8, "f32"),     # C < width: nothing to vectorize, nothing changes
])
def test_vectorized_depthwise_is_correct(channels, width, elem):
    strides, dilations = (2, 1), (1, 2)
    si, sk, so = shapes("depthwise2d", 2, (9, 10), channels, None, (3, 2), strides, dilations)
    module = polyopt.parse(conv_text("depthwise2d", si, sk, so, strides, dilations, elem))
    (loops,) = expand_all(module)
    before = str(module)
    vloop = vectorize_depthwise(loops, width)
    verify(module)
    vector_loads = [op for op in module.walk() if isinstance(op, AffineVectorLoadOp)]
    if channels < width:
        assert vloop is loops[-1] and str(module) == before
    else:
        assert vloop.step == width and len(vector_loads) == 3   # I, K and O
        assert f"vector<{width}x{elem}>" in str(module)
        kw = loops[-2]
        c_loops = [o for o in kw.body.ops if isinstance(o, AffineForOp)]
        assert len(c_loops) == (1 if channels % width == 0 else 2)
    check_run(polyopt.compile(module), "depthwise2d",
              random_operands(si, sk, so, DTYPES[elem], seed=channels), strides, dilations)


def test_vectorize_depthwise_refuses_a_non_contiguous_channel_dim():
    text = """\
func.func @conv(%I: memref<1x5x5x8xf32, strided<[400, 80, 16, 2]>>, %K: memref<3x3x8xf32>, %O: memref<1x3x3x8xf32>) {
  linalg.depthwise_conv_2d_nhwc_hwc ins(%I, %K : memref<1x5x5x8xf32, strided<[400, 80, 16, 2]>>, memref<3x3x8xf32>) outs(%O : memref<1x3x3x8xf32>)
  return
}
"""
    module = polyopt.parse(text)
    (loops,) = expand_all(module)
    before = str(module)
    with pytest.raises(ScheduleError, match="whose layout does not keep consecutive iterations "
                                            "consecutive in memory"):
        vectorize_depthwise(loops, 8)
    assert str(module) == before


def test_vectorize_depthwise_wants_the_depthwise_nest():
    si, sk, so = shapes("conv2d", 1, (5, 5), 2, 3, (3, 3), (1, 1), (1, 1))
    module = polyopt.parse(conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32"))
    (loops,) = expand_all(module)
    with pytest.raises(ValueError, match="expects the 6 loops"):
        vectorize_depthwise(loops, 8)


# ---------------------------------------------------------------------------------------------
# a sweep of shapes


@st.composite
def conv_cases(draw):
    kind = draw(st.sampled_from(["conv2d", "conv1d", "depthwise2d"]))
    rank = 1 if kind == "conv1d" else 2
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    dilations = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    spatial = tuple(d * (k - 1) + 1 + draw(st.integers(0, 7))
                    for k, d in zip(kernel, dilations))
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 11))
    f = draw(st.integers(1, 6))
    elem = draw(st.sampled_from(["f32", "f64"]))
    width = draw(st.sampled_from([0, 4, 8])) if kind == "depthwise2d" else 0
    return kind, n, spatial, c, f, kernel, strides, dilations, elem, width


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_cases())
def test_shape_sweep(case):
    kind, n, spatial, c, f, kernel, strides, dilations, elem, width = case
    si, sk, so = shapes(kind, n, spatial, c, f, kernel, strides, dilations)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, elem))
    (loops,) = expand_all(module)
    if width:
        vectorize_depthwise(loops, width)
        verify(module)
    check_run(polyopt.compile(module), kind, random_operands(si, sk, so, DTYPES[elem]),
              strides, dilations)


# ---------------------------------------------------------------------------------------------
# verifier errors (more in tests/affine/test_linalg_conv.py)


@pytest.mark.parametrize("kind", sorted(OP_NAMES))
def test_output_size_that_disagrees_with_the_formula_is_refused(kind):
    if kind == "conv1d":
        si, sk, so = (1, 9, 3), (3, 3, 4), (1, 4, 4)            # should be 7
        message = "has width 4 but expected 7"
    elif kind == "conv2d":
        si, sk, so = (1, 9, 9, 3), (3, 3, 3, 4), (1, 7, 6, 4)   # width should be 7
        message = "has width 6 but expected 7"
    else:
        si, sk, so = (1, 9, 9, 3), (3, 3, 3), (1, 6, 7, 3)      # height should be 7
        message = "has height 6 but expected 7"
    rank = 1 if kind == "conv1d" else 2
    text = conv_text(kind, si, sk, so, (1,) * rank, (1,) * rank, "f32")
    with pytest.raises(VerifyError, match=f"'{OP_NAMES[kind]}' op operand #2 \\(output\\) "
                                          f"{message}"):
        polyopt.parse(text, "t.mlir")


def test_all_linalg_convs_are_covered():
    assert set(LINALG_CONV_OPS) == set(OP_NAMES.values())
    assert {cls.CONV_KIND for cls in LINALG_CONV_OPS.values()} == set(CONV_LOOP_ORDERS)
