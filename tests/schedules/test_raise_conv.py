"""Convolution raising (``--hopt``, pass ``hopt-raise-contractions``): 7-d loop nests that compute
a convolution (NHWC/HWCF like ``linalg.conv_2d_nhwc_hwcf``, NCHW/FCHW like
``linalg.conv_2d_nchw_fchw``, 1-D NWC) become the implicit GEMM of the convolution ops.  Every
raised program runs against numpy and the unoptimized program, on shapes that are multiples of
no tile (N=2, 11x11, C=5, F=7, 3x3), under every pass flag combination; the remarks say what was
recognized, near misses say why not and stay correct; mlir-opt-22 accepts what comes out; the
raised NHWC nest is the op's own expansion."""

from __future__ import annotations

import numpy as np
import pytest
from conv_nests import ConvNest
from upstream_mlir import mlir_opt

import polyopt
from polyopt.affine.parser import parse
from polyopt.schedules.raise_contractions import raise_contractions

from run_helpers import PASS_FLAG_SETS

FLAGS = PASS_FLAG_SETS


def compile_with_remarks(text, **switches):
    remarks = []
    fn = polyopt.compile(text, remark=lambda loc, msg: remarks.append(msg), **switches)["conv"]
    return fn, remarks


def check(nest: ConvNest, text: str, switches: dict, *, init: bool = False, seed: int = 0,
          raised: bool = True) -> list[str]:
    """Run ``text`` with ``switches`` and unoptimized on the same operands; both must equal
    numpy's convolution.  Returns the remarks of the optimized compile, which say the nest
    was raised (or not, with ``raised=False``)."""
    fn, remarks = compile_with_remarks(text, **switches)
    plain = polyopt.compile(text)["conv"]
    inp, flt, out = nest.operands(seed)
    want = nest.reference(inp, flt, out, init=init)
    got, ref = out.copy(), out.copy()
    fn(inp, flt, got)
    plain(inp, flt, ref)
    if nest.elem == "i32":
        np.testing.assert_array_equal(got, want.astype(np.int32))
        np.testing.assert_array_equal(got, ref)
    else:
        tol = 1e-4 if nest.elem == "f32" else 1e-11
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    ok = [m for m in remarks if m.startswith("raised to a convolution")]
    assert len(ok) == (1 if raised else 0), remarks
    return remarks


@pytest.mark.parametrize("flags", list(FLAGS))
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_every_pass_flag_combination(layout, flags):
    nest = ConvNest(layout)
    remarks = check(nest, nest.text(), FLAGS[flags])
    layout_name = layout.upper()
    assert any(m.startswith("raised to a convolution: ") and f"({layout_name}, strides 1x1, "
               f"dilations 1x1, nxohxowxfxkhxkwxc = 2x9x9x7x3x3x5" in m for m in remarks)


ORDERS = [
    ("c", "kw", "kh", "f", "ow", "oh", "n"),
    ("f", "n", "kh", "oh", "c", "kw", "ow"),
    ("kh", "kw", "c", "n", "oh", "ow", "f"),
]


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("order, stride, dilation, elem", [
    (ORDERS[0], (1, 1), (1, 1), "f64"),
    (ORDERS[1], (2, 2), (1, 1), "f32"),
    (ORDERS[2], (1, 2), (2, 1), "i32"),
    (ORDERS[1], (2, 1), (2, 2), "f64"),
])
def test_loop_orders_strides_dilations_types(layout, order, stride, dilation, elem):
    nest = ConvNest(layout, stride=stride, dilation=dilation, elem=elem)
    remarks = check(nest, nest.text(order), FLAGS["all"])
    s, d = "x".join(map(str, stride)), "x".join(map(str, dilation))
    assert any(f"strides {s}, dilations {d}" in m for m in remarks if m.startswith("raised"))


def test_one_d_nwc():
    nest = ConvNest("nwc", w=13, stride=(2,), dilation=(1,), kw=4)
    remarks = check(nest, nest.text(("kw", "f", "ow", "c", "n")), FLAGS["all"])
    assert any("(NWC, strides 2, dilations 1" in m and "linalg.conv_1d_nwc_wcf" in m
               for m in remarks)


@pytest.mark.parametrize("layout, init, body, elem", [
    ("nhwc", "inside", "mul-add", "f32"),
    ("nchw", "inside", "fma", "f64"),
    ("nchw", "nest", "mul-add", "i32"),
    ("nhwc", "none", "fma", "f32"),
])
def test_initialization_and_fma(layout, init, body, elem):
    nest = ConvNest(layout, elem=elem)
    remarks = check(nest, nest.text(init=init, body=body), FLAGS["copy"], init=init != "none")
    raised = [m for m in remarks if m.startswith("raised")]
    assert ("O = 0 first" in raised[0]) == (init == "inside")


def test_resnet_shape_with_a_batch_of_one():
    # a loop of one iteration (N=1) is folded to a constant by ISL: it must still be the batch
    nest = ConvNest("nchw", n=1, h=12, w=10, c=16, f=24)
    check(nest, nest.text(ORDERS[1]), FLAGS["all"])
    nest = ConvNest("nhwc", n=1, h=12, w=10, c=16, f=24, kh=1)
    check(nest, nest.text(), FLAGS["all"])


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_mlir_opt_accepts_the_result(layout):
    nest = ConvNest(layout, stride=(2, 1), dilation=(1, 2))
    for switches in (FLAGS["hopt"], FLAGS["all"]):
        out = polyopt.opt(nest.text(ORDERS[2]), **switches) if hasattr(polyopt, "opt") else \
            _opt_text(nest.text(ORDERS[2]), switches)
        assert "affine.for" in out and "%arg9" not in out.split("return")[0][-1:]
        mlir_opt(out)


def _opt_text(text, switches):
    from polyopt.pipeline import PipelineOptions, run_passes
    module = parse(text)
    run_passes(module, PipelineOptions(**switches))
    return str(module)


@pytest.mark.parametrize("switches", [FLAGS["hopt"], FLAGS["all"], FLAGS["blis"]])
def test_raised_nhwc_nest_is_the_ops_expansion(switches):
    nest = ConvNest("nhwc", stride=(2, 2), dilation=(1, 1))
    ti, tk, to = nest.types()
    op = (f"func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{\n"
          f"  linalg.conv_2d_nhwc_hwcf {{strides = dense<2> : tensor<2xi64>}} ins(%I, %K : "
          f"{ti}, {tk}) outs(%O : {to})\n  return\n}}\n")
    mlir_opt(op)
    raised = _opt_text(nest.text(ORDERS[0]), switches)
    assert raised == _opt_text(op, switches)
    assert "memref.collapse_shape" in raised


def test_raising_alone_builds_the_naive_gemm_on_the_input():
    # without the pipeline's options the implicit GEMM is the naive nest, reading I itself
    nest = ConvNest("nchw")
    module = parse(nest.text())
    msgs = []
    assert raise_contractions(module, remark=lambda loc, m: msgs.append(m)) == 1
    text = str(module)
    assert "memref.alloc" not in text and "floordiv" in text
    assert msgs[0].startswith("raised to a convolution: O[%arg3, %arg4, %arg5, %arg6] += "
                              "I[%arg3, %arg9, %arg5 + %arg7, %arg6 + %arg8] * "
                              "K[%arg4, %arg9, %arg7, %arg8] (NCHW")
    mlir_opt(text)


# ---------------------------------------------------------------------------------------------
# near misses: a remark naming the condition, the nest left as it was (and still correct)


NEAR_MISSES = [
    # (h=5: the output is 3 high, as the filter, which is indexed by oh)
    ("nhwc", dict(h=5), dict(filter_sub="%oh, %kw, %c, %f"),
     "the filter K[%arg4, %arg8, %arg9, %arg6] is indexed by %arg4, a loop of the output"),
    ("nhwc", dict(), dict(input_sub="%n, %oh + %kh, %ow, %c"),
     "combines an output loop and a window loop in dims 1; a convolution of rank 4 does in "
     "dims 1 and 2 (NHWC) or 2 and 3 (NCHW) (a reduction over only some window dimensions?)"),
    ("nchw", dict(w=12), dict(input_sub="%n, %c, %oh + %kh, %ow + %kw + 1"),
     "subscript #3 of the input I[%arg3, %arg9, %arg5 + %arg7, %arg6 + %arg8 + 1] is not "
     "stride * %arg6 + dilation * %arg8 (positive, no offset)"),
    ("nchw", dict(), dict(filter_sub="%f, %c, %kh, %kh"),
     "the filter K[%arg4, %arg9, %arg7, %arg7] uses a loop twice (a diagonal)"),
]


@pytest.mark.parametrize("layout, shape, change, why", NEAR_MISSES)
def test_near_misses_get_a_remark(layout, shape, change, why):
    nest = ConvNest(layout, **shape)
    text = nest.text(**change)
    fn, remarks = compile_with_remarks(text, hopt=True)
    misses = [m for m in remarks if m.startswith("not raised to a convolution: ")]
    assert len(misses) == 1 and why in misses[0], misses
    assert not any(m.startswith("raised to") for m in remarks)
    # still the program it was
    inp, flt, out = nest.operands()
    got, ref = out.copy(), out.copy()
    fn(inp, flt, got)
    polyopt.compile(text)["conv"](inp, flt, ref)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_a_sub_window_of_the_input_is_refused():
    # I is 13 high but the 9 output rows read 11: linalg.conv_2d_nhwc_hwcf would compute 11
    nest = ConvNest("nhwc")
    text = nest.text().replace("2x11x11x5xf32", "2x13x11x5xf32")
    fn, remarks = compile_with_remarks(text, hopt=True)
    assert "not raised to a convolution: the nest reads 11 of the 13 elements of dim #1 of the " \
           "input memref<2x13x11x5xf32>; linalg.conv_2d_nhwc_hwcf with stride 1 and dilation 1" \
           " computes 11 outputs from it, the nest 9" in remarks


def test_the_input_written_in_the_nest_is_refused():
    nest = ConvNest("nhwc")
    ti, _, to = nest.types()
    o_sub, i_sub, _ = nest.subscripts()
    store = f"affine.store %r, %O[{o_sub}] : {to}"
    # after the innermost loop (c), a statement of its own
    end_c = f"{store}\n{' ' * 14}}}"
    text = nest.text().replace(end_c, f"{end_c}\n{' ' * 14}affine.store %cst, "
                               f"%I[%n, %oh + %kh, %ow + %kw, 0] : {ti}"
                               ).replace("  affine.for %n", "  %cst = arith.constant 0.5 : f32\n"
                                         "  affine.for %n")
    assert "%cst, %I" in text
    mlir_opt(text)
    fn, remarks = compile_with_remarks(text, hopt=True)
    misses = [m for m in remarks if m.startswith("not raised to a convolution")]
    assert misses and "which is not C = 0 or C = C * beta" in misses[0], remarks
    inp, flt, out = nest.operands()
    a, b = [inp.copy(), flt, out.copy()], [inp.copy(), flt, out.copy()]
    fn(*a)
    polyopt.compile(text)["conv"](*b)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-5)


def _named_nchw(nest: ConvNest) -> str:
    """``linalg.conv_2d_nchw_fchw`` (the layout PyTorch writes) of ``nest``'s shapes."""
    ti, tk, to = nest.types()
    sh, sw = nest.stride
    dh, dw = nest.dilation
    return f"""func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{
  linalg.conv_2d_nchw_fchw {{dilations = dense<[{dh}, {dw}]> : tensor<2xi64>, strides = dense<[{sh}, {sw}]> : tensor<2xi64>}}
    ins(%I, %K : {ti}, {tk}) outs(%O : {to})
  return
}}
"""


@pytest.mark.parametrize("flags", ["hopt", "all", "blis"])
@pytest.mark.parametrize("stride, dilation", [((1, 1), (1, 1)), ((2, 1), (1, 2))])
def test_the_named_nchw_convolution_goes_through_the_implicit_gemm(flags, stride, dilation):
    """hopt-linalg-to-loops gives the op's loops to convolution raising: the implicit GEMM,
    not the naive nest it was (1.9 GFLOPS at ResNet's conv2_x, against about 90)."""
    nest = ConvNest(layout="nchw", stride=stride, dilation=dilation)
    remarks = check(nest, _named_nchw(nest), FLAGS[flags])
    assert any(m.startswith("raised to a convolution") and "(NCHW, strides "
               f"{stride[0]}x{stride[1]}, dilations {dilation[0]}x{dilation[1]}" in m
               for m in remarks), remarks


FHWC = """func.func @conv(%I: memref<2x11x13x5xf32>, %K: memref<7x3x2x5xf32>, %O: memref<2x5x6x7xf32>) {
  linalg.conv_2d_nhwc_fhwc {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 2]> : tensor<2xi64>}
    ins(%I, %K : memref<2x11x13x5xf32>, memref<7x3x2x5xf32>) outs(%O : memref<2x5x6x7xf32>)
  return
}
"""


def _fhwc_reference(inp, flt, out):
    out = out.copy()
    for kh in range(3):
        for kw in range(2):
            win = inp[:, kh:kh + 9:2, 2 * kw:2 * kw + 11:2, :]      # strides 2x2, dilation 1x2
            out += np.einsum("nhwc,fc->nhwf", win, flt[:, kh, kw, :])
    return out


@pytest.mark.parametrize("flags", ["hopt", "all", "blis"])
@pytest.mark.parametrize("form", ["op", "loops"])
def test_an_fhwc_filter_is_the_nhwc_gemm_with_b_transposed(flags, form):
    """linalg.conv_2d_nhwc_fhwc (and its loops written out) goes through the NHWC implicit
    GEMM, the filter packed as B read transposed; shapes that are multiples of no tile."""
    text = FHWC if form == "op" else mlir_opt(FHWC, "--convert-linalg-to-affine-loops")
    fn, remarks = compile_with_remarks(text, **FLAGS[flags])
    rng = np.random.default_rng(5)
    inp = rng.standard_normal((2, 11, 13, 5), dtype=np.float32)
    flt = rng.standard_normal((7, 3, 2, 5), dtype=np.float32)
    out = rng.standard_normal((2, 5, 6, 7), dtype=np.float32)
    want = _fhwc_reference(inp, flt, out)
    fn(inp, flt, out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert any(m.startswith("raised to a convolution") and "(NHWC/FHWC, strides 2x2, "
               "dilations 1x2" in m for m in remarks), remarks
