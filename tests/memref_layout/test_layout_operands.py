"""Operands with layouts (issue 4, part 4): legal layouts (injectivity, decided with ISL, checked
by the verifier), the numpy boundary for layout-mapped arguments, and hop.matmul/linalg.matmul
on transposed, leading-dimension and offset operands with alpha/beta, naive, with --hopt and
with --hopt --hopt-copy (packing absorbs the layouts; the arguments keep their layout types and
so the same numpy buffers), against numpy on sizes that are not multiples of any tile
(37x29x41)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import polyopt
from polyopt.affine.affine_expr import parse_affine_map
from polyopt.affine.types import MemRefType, StridedLayout, f64
from polyopt.cli import main
from polyopt.memref_layout.layout import is_injective, layout_collision, physical_size
from polyopt.schedules.expand import expand_high_level_ops

# ---------------------------------------------------------------------------------------------
# injectivity: a layout that maps two in-bounds indices to one location is an error


def func_with_arg(t: str) -> str:
    return f"func.func @f(%a: {t}) {{\n  return\n}}\n"


@pytest.mark.parametrize("t, pair", [
    ("memref<4x4xf64, affine_map<(d0, d1) -> (d0 + d1)>>", "(0, 1) and (1, 0) both map to (1)"),
    ("memref<4x4xf64, affine_map<(d0, d1) -> (d0 floordiv 2, d1)>>",
     "(0, 0) and (1, 0) both map to (0, 0)"),
    ("memref<4x6xf64, affine_map<(d0, d1) -> (d0)>>", "(0, 0) and (0, 1) both map to (0)"),
    ("memref<3x4xf64, affine_map<(d0, d1) -> (d0 * 3 + d1)>>",
     "(0, 3) and (1, 0) both map to (3)"),
    ("memref<4x4xf64, strided<[1, 1]>>", "(0, 1) and (1, 0) both map to (1)"),
    ("memref<4x5xf64, strided<[4, 1], offset: 2>>", "(0, 4) and (1, 0) both map to (6)"),
    ("memref<?x4xf64, strided<[2, 1]>>", "(0, 2) and (1, 0) both map to (2)"),
    # the paper's section 2.9 example of strides (128, 2): on 126x100 rows overlap (d1 * 2
    # reaches 198 > 128); it is injective for up to 64 columns (see below)
    ("memref<126x100xf32, affine_map<(d0, d1) -> (d0 * 128 + d1 * 2)>>",
     "(0, 64) and (1, 0) both map to (128)"),
])
def test_non_injective_layout_is_an_error(t, pair):
    with pytest.raises(polyopt.VerifyError) as info:
        polyopt.parse(func_with_arg(t), "bad.mlir")
    err = info.value
    layout = t.split(", ", 1)[1][:-1]
    layout = layout[len("affine_map<"):-1] if layout.startswith("affine_map<") else layout
    assert err.message == (f"'func.func' op argument #0: memref layout {layout} of {t} is not "
                           f"injective: indices {pair}")
    assert (err.loc.line, err.loc.col) == (1, 1)


def test_non_injective_alloc_result_and_declaration_and_cli(tmp_path, capsys):
    bad = "memref<4x4xf64, affine_map<(d0, d1) -> (d0 + d1)>>"
    text = f"func.func @g() {{\n  %m = memref.alloca() : {bad}\n  return\n}}\n"
    with pytest.raises(polyopt.VerifyError, match=r"^.*2:8: error: 'memref.alloca' op result "
                                                  r"#0: memref layout .* is not injective: "
                                                  r"indices \(0, 1\) and \(1, 0\)"):
        polyopt.parse(text, "alloc.mlir")
    with pytest.raises(polyopt.VerifyError, match="result #0: memref layout"):
        polyopt.parse(f"func.func private @ext() -> {bad}\n")
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:8: error: 'memref.alloca' op result #0: memref layout" in err
    assert "  %m = memref.alloca()" in err and "       ^" in err


@pytest.mark.parametrize("t", [
    "memref<64x256xf64, affine_map<(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>>",  # paper 2.9
    "memref<64x256xf64, affine_map<(d0, d1) -> (d0, d1 floordiv 6, d1 mod 6)>>",
    "memref<64x256xf64, affine_map<(d0, d1) -> (d0 * 258 + d1)>>",
    "memref<126x64xf32, affine_map<(d0, d1) -> (d0 * 128 + d1 * 2)>>",
    "memref<30x20xf64, affine_map<(d0, d1) -> (d1, d0)>>",
    "memref<30x40xf64, strided<[80, 1]>>",
    "memref<37x29xf64, strided<[29, 1], offset: 5>>",
    "memref<3x4xf64, strided<[-4, 1], offset: 8>>",
    "memref<4x4xf64, affine_map<(d0, d1) -> (d0 + d1, d0 - d1 + 3)>>",  # a rotation
])
def test_injective_layouts_verify(t):
    polyopt.parse(func_with_arg(t))


def brute_force_collision(t: MemRefType):
    amap = parse_affine_map(str(t.layout)) if not isinstance(t.layout, StridedLayout) else None
    seen = {}
    for idx in itertools.product(*(range(d) for d in t.shape)):  # lexicographic order
        if amap is not None:
            place = amap.evaluate(idx)
        else:
            place = (t.layout.offset + sum(i * s for i, s in zip(idx, t.layout.strides)),)
        if place in seen:
            return seen[place], idx, place
        seen[place] = idx
    return None


def test_isl_decision_agrees_with_brute_force():
    """Random quasi-affine layouts on small boxes: the ISL answer is the enumeration's, and
    the witness is a real collision (the lexicographically first pair (i, j) with i < j)."""
    rng = random.Random(4)
    terms = ["d0", "d1", "d0 floordiv {c}", "d1 floordiv {c}", "d0 mod {c}", "d1 mod {c}",
             "d0 * {c}", "d1 * {c}", "d0 ceildiv {c}", "d0 * {c} + d1", "d1 * {c} + d0",
             "d0 * {c} + d1 * {k}", "(d0 + d1) mod {c}", "d0 - d1 + {c}"]
    checked = {True: 0, False: 0}
    for _ in range(250):
        n = rng.randint(1, 3)
        results = [rng.choice(terms).format(c=rng.randint(1, 5), k=rng.randint(-3, 4))
                   for _ in range(n)]
        layout = parse_affine_map(f"(d0, d1) -> ({', '.join(results)})")
        shape = (rng.randint(1, 7), rng.randint(1, 7))
        t = MemRefType(shape, f64, layout)
        if layout.is_identity() or t.layout is None:
            continue
        expected = brute_force_collision(t)
        got = layout_collision(t)
        assert is_injective(t) == (expected is None), (t, got, expected)
        if expected is not None:
            i, j, place = got
            assert i < j and layout.evaluate(i) == layout.evaluate(j) == place, (t, got)
            # the smallest pair: j is the first index colliding with an earlier one? No: i is
            # lexicographically smallest, then j; compare with the enumeration of all pairs
            pairs = [(a, b) for a, b in itertools.combinations(
                itertools.product(*(range(d) for d in shape)), 2)
                if layout.evaluate(a) == layout.evaluate(b)]
            assert (i, j) == min(pairs), t
        checked[expected is None] += 1
    assert checked[True] > 30 and checked[False] > 30, checked
    for _ in range(60):
        shape = (rng.randint(1, 5), rng.randint(1, 6))
        strides = (rng.randint(-6, 6), rng.randint(-3, 3))
        off = sum(-s * (d - 1) for s, d in zip(strides, shape) if s < 0)
        t = MemRefType(shape, f64, StridedLayout(strides, off))
        assert is_injective(t) == (brute_force_collision(t) is None), t


# ---------------------------------------------------------------------------------------------
# the numpy boundary: any large-enough C-contiguous buffer, never a too-small one


BOUNDARY = """
#T = affine_map<(d0, d1) -> (d1, d0)>
func.func @ld(%A: memref<30x40xf64, strided<[80, 1]>>, %B: memref<30x40xf64>) {
  affine.for %i = 0 to 30 {
    affine.for %j = 0 to 40 {
      %v = affine.load %A[%i, %j] : memref<30x40xf64, strided<[80, 1]>>
      affine.store %v, %B[%i, %j] : memref<30x40xf64>
    }
  }
  return
}
func.func @tr(%A: memref<30x20xf64, #T>, %B: memref<30x20xf64>) {
  affine.for %i = 0 to 30 {
    affine.for %j = 0 to 20 {
      %v = affine.load %A[%i, %j] : memref<30x20xf64, #T>
      affine.store %v, %B[%i, %j] : memref<30x20xf64>
    }
  }
  return
}
"""


@pytest.fixture(scope="module")
def boundary():
    return polyopt.compile(BOUNDARY)


def test_leading_dimension_buffer_as_a_2d_array(boundary):
    rng = np.random.default_rng(1)
    big = rng.random((30, 80))
    out = np.zeros((30, 40))
    boundary["ld"](big, out)
    np.testing.assert_array_equal(out, big[:, :40])
    # the exact physical buffer (29 * 80 + 40 elements) and any larger flat buffer work too
    flat = rng.random(29 * 80 + 40)
    boundary["ld"](flat, out)
    np.testing.assert_array_equal(out, np.lib.stride_tricks.as_strided(flat, (30, 40),
                                                                        (80 * 8, 8)))
    boundary["ld"](big.reshape(-1), out)
    np.testing.assert_array_equal(out, big[:, :40])


def test_transposed_takes_the_physical_array(boundary):
    A = np.random.default_rng(2).random((30, 20))
    out = np.zeros((30, 20))
    boundary["tr"](np.ascontiguousarray(A.T), out)
    np.testing.assert_array_equal(out, A)


def test_too_small_or_logical_or_wrong_buffers_are_refused(boundary):
    out = np.zeros((30, 40))
    with pytest.raises(ValueError, match=r"buffer too small: the layout needs 2360 elements, "
                                         r"got an array of 2359 elements"):
        boundary["ld"](np.zeros(2359), out)
    with pytest.raises(ValueError, match=r"needs 2360 elements, got an array of 1200 elements "
                                         r"\(shape \(30, 40\)\)"):
        boundary["ld"](np.zeros((30, 40)), out)
    with pytest.raises(ValueError, match=r"logical shape \(30, 20\).*physical buffer, of shape "
                                         r"\(20, 30\)"):
        boundary["tr"](np.zeros((30, 20)), np.zeros((30, 20)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        boundary["ld"](np.zeros((80, 30)).T, out)
    with pytest.raises(TypeError, match="expected dtype float64, got float32"):
        boundary["ld"](np.zeros((30, 80), np.float32), out)
    with pytest.raises(ValueError, match=r"expected shape \(30, 40\)"):  # identity: exact shape
        boundary["ld"](np.zeros((30, 80)), np.zeros((30, 41)))


# ---------------------------------------------------------------------------------------------
# hop.matmul / linalg.matmul with layout operands (C = alpha * op(A) * op(B) + beta * C)

M, N, K = 37, 29, 41
T = "affine_map<(d0, d1) -> (d1, d0)>"


class Operand:
    """A memref type with a layout and how numpy holds it: ``make(logical)`` builds the buffer
    passed to the function, ``view(buffer)`` reads the logical matrix back."""

    def __init__(self, layout, make, view):
        self.layout, self.make, self.view = layout, make, view


def plain():
    return Operand(None, lambda x: x.copy(), lambda b: b)


def transposed():
    return Operand(T, lambda x: np.ascontiguousarray(x.T), lambda b: b.T)


def leading(rows, cols, ld, affine=False):
    layout = f"affine_map<(d0, d1) -> (d0 * {ld} + d1)>" if affine else f"strided<[{ld}, 1]>"

    def make(x):
        buf = np.full((rows, ld), 7.5, x.dtype)  # the gap between rows must survive untouched
        buf[:, :cols] = x
        return buf
    return Operand(layout, make, lambda b: b[:, :cols])


def with_offset(rows, cols, off):
    def make(x):
        buf = np.full(off + rows * cols, -3.25, x.dtype)
        buf[off:] = x.reshape(-1)
        return buf
    return Operand(f"strided<[{cols}, 1], offset: {off}>", make,
                   lambda b: b[off:].reshape(rows, cols))


def mtype(shape, layout, et):
    lay = f", {layout}" if layout else ""
    return f"memref<{shape[0]}x{shape[1]}x{et}{lay}>"


# name: (A, B, C, alpha, beta, op)
CASES = {
    "at_b": (transposed(), plain(), plain(), None, None, "hop"),
    "a_bt": (plain(), transposed(), plain(), None, None, "hop"),
    "at_bt": (transposed(), transposed(), plain(), None, None, "hop"),
    "c_ld_strided": (plain(), plain(), leading(M, N, 2 * N), None, None, "hop"),
    "c_ld_map": (plain(), plain(), leading(M, N, 2 * N, affine=True), None, None, "hop"),
    "c_offset": (plain(), plain(), with_offset(M, N, 5), None, None, "hop"),
    "a_ld_b_offset": (leading(M, K, K + 3), with_offset(K, N, 2), plain(), None, None, "hop"),
    "alpha": (plain(), plain(), plain(), 2.0, None, "hop"),
    "beta": (plain(), plain(), plain(), None, 0.5, "hop"),
    "at_bt_c_ld_alpha_beta": (transposed(), transposed(), leading(M, N, 2 * N), 2.0, 0.5,
                              "hop"),
    "beta_zero_nan_c": (transposed(), plain(), leading(M, N, 2 * N), 1.5, 0.0, "hop"),
    "ones_fold": (plain(), transposed(), plain(), 1.0, 1.0, "hop"),
    "linalg_at_c_ld": (transposed(), plain(), leading(M, N, 2 * N), None, None, "linalg"),
    "linalg_bt_c_offset": (plain(), transposed(), with_offset(M, N, 3), None, None, "linalg"),
}


def case_text(name, case, et="f64"):
    a, b, c, alpha, beta, op = case
    ta, tb, tc = (mtype((M, K), a.layout, et), mtype((K, N), b.layout, et),
                  mtype((M, N), c.layout, et))
    if op == "linalg":
        body = f"  linalg.matmul ins(%A, %B : {ta}, {tb}) outs(%C : {tc})\n"
    else:
        attrs = [f"{k} = {v} : {et}" for k, v in (("alpha", alpha), ("beta", beta))
                 if v is not None]
        attr = f" {{{', '.join(attrs)}}}" if attrs else ""
        body = f"  hop.matmul %A, %B, %C{attr} : ({ta}, {tb}, {tc})\n"
    return f"func.func @{name}(%A: {ta}, %B: {tb}, %C: {tc}) {{\n{body}  return\n}}\n"


def module_text(cases, et="f64"):
    return "".join(case_text(n, c, et) for n, c in cases.items())


def check_case(fn, name, case, dtype, rng, tol):
    a, b, c, alpha, beta, _ = case
    A, B, C0 = rng.random((M, K)), rng.random((K, N)), rng.random((M, N))
    A, B, C0 = A.astype(dtype), B.astype(dtype), C0.astype(dtype)
    if name == "beta_zero_nan_c":
        C0[::3, ::2] = np.nan  # beta = 0: C is overwritten, NaNs must not propagate
    bufs = [a.make(A), b.make(B), c.make(C0)]
    before = bufs[2].copy()
    fn(*bufs)
    al = 1.0 if alpha is None else alpha
    be = 1.0 if beta is None else beta
    ref = al * (A.astype(np.float64) @ B.astype(np.float64))
    if be != 0:
        ref = ref + be * C0.astype(np.float64)
    got = c.view(bufs[2])
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=name)
    # nothing outside the logical elements of C is written (leading-dimension gaps, offsets)
    mask = np.ones(bufs[2].shape, bool)
    c.view(mask)[...] = False
    np.testing.assert_array_equal(bufs[2][mask], before[mask], err_msg=name)


FLAGS = [{}, {"hopt": True}, {"hopt": True, "copy": True}]
FLAG_IDS = ["naive", "hopt", "hopt-copy"]


@pytest.mark.parametrize("flags", FLAGS, ids=FLAG_IDS)
def test_matmul_with_layout_operands_f64(flags):
    compiled = polyopt.compile(module_text(CASES), **flags)
    rng = np.random.default_rng(5)
    for name, case in CASES.items():
        check_case(compiled[name], name, case, np.float64, rng, 1e-12)


F32_CASES = {k: CASES[k] for k in ("at_bt_c_ld_alpha_beta", "beta_zero_nan_c", "c_offset")}


@pytest.mark.parametrize("flags", FLAGS, ids=FLAG_IDS)
def test_matmul_with_layout_operands_f32(flags):
    compiled = polyopt.compile(module_text(F32_CASES, "f32"), **flags)
    rng = np.random.default_rng(6)
    for name, case in F32_CASES.items():
        check_case(compiled[name], name, case, np.float32, rng, 2e-4)


def test_alpha_beta_of_one_fold_away_and_beta_zero_does_not_read_c():
    module = polyopt.parse(module_text({k: CASES[k] for k in ("ones_fold", "beta_zero_nan_c")}))
    expand_high_level_ops(module)
    ones, zero = str(module).split("func.func @")[1:]
    assert "arith.constant" not in ones and ones.count("affine.for") == 3
    # the beta nest stores the constant 0 without loading C; the product nest scales A by alpha
    beta_nest = zero.split("affine.for")[1:3]
    assert "affine.store %cst" in "".join(beta_nest) and "affine.load" not in "".join(beta_nest)
    assert "arith.constant 1.500000e+00 : f64" in zero


def test_physical_sizes_of_the_operands():
    """The buffers the cases above pass are the layouts' physical sizes (or larger)."""
    for text, size in [(f"memref<{M}x{N}xf64, strided<[{2 * N}, 1]>>", (M - 1) * 2 * N + N),
                       (f"memref<{M}x{N}xf64, strided<[{N}, 1], offset: 5>>", 5 + M * N),
                       (f"memref<{M}x{K}xf64, {T}>", M * K)]:
        t = polyopt.parse(func_with_arg(text)).functions[0].function_type.inputs[0]
        assert physical_size(t) == size, text


def test_layout_map_of_every_layout_kind():
    from polyopt.affine.diagnostics import CodegenError
    from polyopt.memref_layout.layout import layout_map
    t = MemRefType((30, 40), f64, StridedLayout((80, 1), 5))
    assert layout_map(t) == parse_affine_map("(d0, d1) -> (d0 * 80 + d1 + 5)")
    tiled = parse_affine_map("(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)")
    assert layout_map(MemRefType((64, 256), f64, tiled)) is tiled
    assert layout_map(MemRefType((3, 4), f64)).is_identity()
    with pytest.raises(CodegenError, match="dynamic strides"):
        layout_map(MemRefType((30, 40), f64, StridedLayout((None, 1), 0)))
    with pytest.raises(CodegenError, match="has 1 strides but the memref has rank 2"):
        layout_map(MemRefType((30, 40), f64, StridedLayout((1,), 0)))
