"""Matrix-vector products of bf16 and f16 matrices and vectors into an f32 C (a mixed
contraction with M = 1 or N = 1) take the GEMV path of :mod:`polyopt.schedules.gemv`, not
the packed low-precision GEMM, whose 6 x 64 register tile would compute 63 zero columns (or
5 zero rows) for each one of the product: the dot form (N = 1) multiplies bf16 rows in
pairs on AVX512-BF16's ``vdpbf16ps`` where the CPU has it, and otherwise, as the axpy form
(M = 1) and f16 always do, widens the elements to f32 as it reads them.

bf16 and f16 products are exact in f32, so the only error is f32's summation:
``|C - C_ref| <= (K + 1) * 2^-24 * (sum_k |a||b| + |C0|)``.  Shapes are not multiples of the
vector width, of the pairs, of the rows per step or of the column blocks; the aligned forms
are checked at several starts of the matrix."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.codegen.target import compiling_for

from test_lowp_gemm import ALL, DOT_ENGINES, NO_ENGINE, _run_where_present, hop_source

ml_dtypes = pytest.importorskip("ml_dtypes")



def _compile(kind, m, n, k, threads=1):
    remarks = []
    compiled = polyopt.compile(hop_source(kind, m, n, k), threads=threads,
                               remark=lambda loc, msg: remarks.append(msg), **ALL)
    return compiled, remarks


def _check(fn, kind, a, b, c):
    c0 = c.copy()
    fn(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = c0.astype(np.float64) + a64 @ b64
    bound = (a.shape[1] + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + np.abs(c0))
    err = np.abs(c - want)
    assert (err <= bound).all(), f"max error {err.max()}, bound there {bound[err > bound][:3]}"
    return c


def _operands(kind, m, n, k, seed=0):
    t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(t), rng.standard_normal((k, n)).astype(t),
            rng.standard_normal((m, n)).astype(np.float32))


def _host_pairs() -> bool:
    model = polyopt.pipeline.machine_model()
    return model.vector_bits >= 512 and "avx512bf16" in model.features


@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize("m,n,k", [(1, 37, 19), (1, 255, 130), (1, 2048, 33), (1, 1000, 21),
                                   (37, 1, 45), (9, 1, 33), (130, 1, 77), (3, 1, 1),
                                   (64, 1, 16), (1003, 1, 613), (13, 1, 4097), (9, 1, 2048),
                                   (101, 1, 1000)])
def test_narrow_matrix_vector_products_match_numpy(kind, m, n, k):
    compiled, remarks = _compile(kind, m, n, k)
    path = [r for r in remarks if "matrix-vector product" in r]
    assert path and ("axpy form" if m == 1 else "dot form") in path[0], remarks
    assert not any("groups of" in r for r in remarks), remarks
    pairs = kind == "bf16" and n == 1 and _host_pairs()
    assert ("pairs of k on the bf16 dot engine" in path[0]) == pairs, path
    assert (f"{kind} widened to f32 as read" in path[0]) == (not pairs), path
    _check(compiled["mm"], kind, *_operands(kind, m, n, k))


@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize("m,n,k", [(517, 1, 2048), (1, 4100, 300)])
def test_narrow_forms_on_threads_give_bitwise_the_same_result(kind, m, n, k):
    a, b, c = _operands(kind, m, n, k)
    results = []
    for threads in (1, 2, 3):
        compiled, remarks = _compile(kind, m, n, k, threads)
        assert any("split over" in r for r in remarks) == (threads > 1), remarks
        results.append(_check(compiled["mm"], kind, a, b, c.copy()))
    assert all(np.array_equal(results[0], r) for r in results[1:])


def _at_offset(shape, kind, offset, seed):
    """An array of ``shape`` whose data starts ``offset`` bytes past a 64-byte boundary."""
    t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
    nbytes = int(np.prod(shape)) * 2
    raw = np.zeros(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    a = raw[start:start + nbytes].view(t).reshape(shape)
    a[:] = np.random.default_rng(seed).standard_normal(shape).astype(t)
    return a


@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize("m,n,k", [(37, 1, 1024), (1, 2048, 37)])
def test_aligned_narrow_forms_wherever_the_matrix_starts(kind, m, n, k):
    """Rows of a whole number of vectors (32 bf16 for the pairs, 16 widened elements
    otherwise) start each vector loop at a boundary after a masked head: right at every
    start of the matrix."""
    compiled, remarks = _compile(kind, m, n, k)
    assert any("vectors aligned (masked head and tail)" in r for r in remarks), remarks
    for offset in range(0, 64, 6):
        if m == 1:
            a = _operands(kind, m, n, k, offset)[0]
            b = _at_offset((k, n), kind, offset, offset)
        else:
            a = _at_offset((m, k), kind, offset, offset)
            b = _operands(kind, m, n, k, offset)[1]
        c = np.random.default_rng(offset).standard_normal((m, n)).astype(np.float32)
        _check(compiled["mm"], kind, a, b, c)


def test_the_dot_engine_assembly():
    """Compiled for a CPU with AVX512-BF16: the dot form's loop is zmm ``vdpbf16ps`` on 64
    bytes of a row at a time, whatever this CPU is (run where it has them); for one without
    (AVX2 only): no dot instructions, the rows widened."""
    m, n, k = 130, 1, 1000
    with compiling_for(DOT_ENGINES):
        compiled, remarks = _compile("bf16", m, n, k)
    asm = compiled.asm()
    dots = [line for line in asm.splitlines() if re.search(r"\bvdpbf16ps\b", line)]
    assert len(dots) >= 8 and all("%zmm" in line for line in dots), dots[:4]
    assert any("pairs of k on the bf16 dot engine" in r for r in remarks), remarks
    _run_where_present(DOT_ENGINES, lambda: _check(compiled["mm"], "bf16",
                                                   *_operands("bf16", m, n, k)))
    with compiling_for(NO_ENGINE):
        compiled, remarks = _compile("bf16", m, n, k)
    asm = compiled.asm()
    assert "vdpbf16ps" not in asm and "%zmm" not in asm
    assert any("bf16 widened to f32 as read" in r for r in remarks), remarks
    _run_where_present(NO_ENGINE, lambda: _check(compiled["mm"], "bf16",
                                                 *_operands("bf16", m, n, k)))


def test_upstream_accepts_the_narrow_forms():
    from upstream_mlir import mlir_opt
    for kind, (m, n, k) in (("bf16", (1003, 1, 512)), ("bf16", (1, 3008, 512)),
                            ("f16", (101, 1, 33))):
        compiled, _ = _compile(kind, m, n, k, threads=2)
        text = str(compiled.module)
        assert mlir_opt(text) == text


def test_a_convolution_with_one_filter_keeps_its_im2col():
    """A bf16 convolution with one filter is a matrix-vector product of its im2col, which
    exists only as the packing copies' reads of the input: it stays the packed GEMM, and is
    right."""
    from test_lowp_gemm import CONV
    h, w, c = 10, 9, 64
    oh, ow = h - 2, w - 2
    src = CONV.format(n=1, h=h, w=w, c=c, f=1, t="bf16", o="f32", s=1, oh=oh, ow=ow)
    remarks = []
    compiled = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any("groups of" in r for r in remarks), remarks
    rng = np.random.default_rng(3)
    inp = rng.standard_normal((1, h, w, c)).astype(ml_dtypes.bfloat16)
    flt = rng.standard_normal((3, 3, c, 1)).astype(ml_dtypes.bfloat16)
    want, mags = np.zeros((1, oh, ow, 1)), np.zeros((1, oh, ow, 1))
    for y in range(3):
        for x in range(3):
            window = inp[:, y:y + oh, x:x + ow, :].astype(np.float64)
            want += np.einsum("nhwc,cf->nhwf", window, flt[y, x].astype(np.float64))
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(flt[y, x].astype(np.float64)))
    out = np.zeros((1, oh, ow, 1), np.float32)
    compiled["conv"](inp, flt, out)
    assert (np.abs(out - want) <= (9 * c + 1) * 2.0 ** -24 * mags).all()


INT8_SHAPES = [(4096, 1, 4096), (97, 1, 103), (33, 1, 1000), (5, 1, 7), (9, 1, 64),
               (9, 1, 65), (13, 1, 128), (7, 1, 200), (3, 1, 1)]


@pytest.mark.parametrize("kind", ["s8", "u8"])
@pytest.mark.parametrize("m,n,k", INT8_SHAPES)
def test_int8_matrix_times_column_is_exact(kind, m, n, k):
    """An i8 matrix (signed, or unsigned with ``a_unsigned``) times an i8 column into i32:
    on a CPU with AVX512-VNNI the int8 dot form (``vpdpbusd`` on 64 bytes of 4 rows, a
    masked last vector; a signed A offset by 128 and 128 times B's sum taken off), else the
    packed GEMM; exact against numpy's int64 product either way, K not a multiple of 4, 64
    or 128."""
    from test_lowp_gemm import check
    compiled, remarks = _compile(kind, m, n, k)
    vnni = polyopt.pipeline.machine_model().vector_bits >= 512 and \
        "avx512vnni" in polyopt.pipeline.machine_model().features
    assert any("the int8 dot form" in r for r in remarks) == vnni, remarks
    assert any("A offset by 128" in r for r in remarks) == (vnni and kind == "s8"), remarks
    check(compiled["mm"], kind, m, n, k, seed=k)


def test_int8_dot_form_assembly():
    """Compiled for a CPU with VNNI: zmm ``vpdpbusd`` on the rows, whatever this CPU is (run
    where it has it); for one without, the packed GEMM's converted operands."""
    from test_lowp_gemm import check
    with compiling_for(DOT_ENGINES):
        compiled, remarks = _compile("s8", 130, 1, 1000)
    dots = [line for line in compiled.asm().splitlines() if re.search(r"\bvpdpbusd\b", line)]
    assert len(dots) >= 8 and all("%zmm" in line for line in dots), dots[:4]
    assert any("the int8 dot form" in r for r in remarks), remarks
    _run_where_present(DOT_ENGINES, lambda: check(compiled["mm"], "s8", 130, 1, 1000))
    with compiling_for(NO_ENGINE):
        compiled, remarks = _compile("s8", 130, 1, 1000)
    assert "vpdpbusd" not in compiled.asm()
    assert not any("matrix-vector product" in r for r in remarks), remarks
    _run_where_present(NO_ENGINE, lambda: check(compiled["mm"], "s8", 130, 1, 1000))


def test_upstream_accepts_the_int8_dot_form():
    from upstream_mlir import mlir_opt
    with compiling_for(DOT_ENGINES):
        for kind in ("s8", "u8"):
            compiled, remarks = _compile(kind, 97, 1, 103)
            assert any("the int8 dot form" in r for r in remarks), remarks
            text = str(compiled.module)
            assert mlir_opt(text) == text


@pytest.mark.parametrize("kind", ["s8", "u8"])
def test_int8_dot_form_on_threads(kind):
    """A matrix of at least PARALLEL_MIN_BYTES splits its groups of rows over the threads:
    the same (exact) result at 1, 2 and 3 threads."""
    from test_lowp_gemm import check
    vnni = polyopt.pipeline.machine_model().vector_bits >= 512 and \
        "avx512vnni" in polyopt.pipeline.machine_model().features
    for threads in (1, 2, 3):
        compiled, remarks = _compile(kind, 1003, 1, 613, threads)
        assert any("rows split over" in r for r in remarks) == (vnni and threads > 1), remarks
        check(compiled["mm"], kind, 1003, 1, 613, seed=threads)
