"""A convolution's im2col read in place (``expand._a_in_place``): where all of N is one block
of B, at most two register tiles wide, and the output pixels are whole 4-row tiles, the
register tile reads the input's windows instead of a packed A, with K_U dividing the window
rows' runs of consecutive input elements; on a team the loop over M_C blocks runs on the
threads all the same.  Every case runs against numpy, on odd images, and at 1, 2 and 3
threads with the same bits."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.bench import ConvShape, conv2d_source

from cache_targets import l2_multiple

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _operands(s: ConvShape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    oh, ow = s.out_hw
    return (rng.uniform(-1, 1, (s.n, s.h, s.w, s.c)).astype(dtype),
            rng.uniform(-1, 1, (s.kh, s.kw, s.c, s.f)).astype(dtype),
            rng.uniform(-1, 1, (s.n, oh, ow, s.f)).astype(dtype))


def _reference(s: ConvShape, i, k, o):
    oh, ow = s.out_hw
    out = o.astype(np.float64)
    for kh in range(s.kh):
        for kw in range(s.kw):
            win = i[:, kh * s.dilation:kh * s.dilation + s.stride * (oh - 1) + 1:s.stride,
                    kw * s.dilation:kw * s.dilation + s.stride * (ow - 1) + 1:s.stride, :]
            out += np.einsum("nhwc,cf->nhwf", win.astype(np.float64),
                             k[kh, kw].astype(np.float64))
    return out


def _compile(s: ConvShape, dtype: str, threads: int, attributes=None):
    remarks = []
    compiled = polyopt.compile(conv2d_source(s, dtype, attributes), threads=threads,
                               remark=lambda loc, msg: remarks.append(msg), **ALL)
    return compiled, remarks


def _run(compiled, args):
    out = [a.copy() for a in args]
    compiled["conv"](*out)
    return out[-1]


def _input_and_views(compiled) -> list:
    """The input (the function's first argument) and its views (W and C folded)."""
    func = next(op for op in compiled.module.walk() if op.name == "func.func")
    values = [func.regions[0].blocks[0].args[0]]
    for op in compiled.module.walk():
        if op.name == "memref.collapse_shape" and op.operands[0] is values[0]:
            values.append(op.results[0])
    return values


def _reads_input_in_tiles(compiled) -> bool:
    """Does a load of the input (or a view of it) sit in a loop nest with ``iter_args`` (the
    register tile's k loop)?"""
    inputs = _input_and_views(compiled)
    for op in compiled.module.walk():
        if op.name == "affine.load" and any(op.operands[0] is v for v in inputs):
            if any(a.name == "affine.for" and a.inits for a in op.ancestors()):
                return True
    return False


@pytest.mark.parametrize("s,dtype,k_u", [
    # the stem's 7x7/2 on 3 channels: runs of 21, k unrolled by 3; 9 x 12 = 108 pixels
    (ConvShape(1, 23, 29, 3, 13, 7, 7, stride=2), "f32", 3),
    # a 3x3 on 16 channels: runs of 48; 8 x 10 pixels, 20 filters (N edge inside one tile)
    (ConvShape(1, 10, 12, 16, 20, 3, 3), "f32", 4),
    # f64, two images, 40 filters: two 32-column tiles
    (ConvShape(2, 16, 18, 32, 40, 3, 3), "f64", 4),
])
def test_windows_read_in_place_match_numpy_at_every_thread_count(s, dtype, k_u):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    args = _operands(s, np_dtype)
    ref = _reference(s, *args)
    one = None
    for threads in (1, 2, 3):
        compiled, remarks = _compile(s, dtype, threads)
        assert any("A not packed" in r and "input's windows" in r for r in remarks), remarks
        assert not any("packed A into" in r for r in remarks), remarks
        if k_u != 4:
            assert any(f"k unrolled by {k_u}" in r for r in remarks), remarks
        assert _reads_input_in_tiles(compiled)
        out = _run(compiled, args)
        tol = (1e-4 if dtype == "f32" else 1e-12) * s.kh * s.kw * s.c
        assert np.max(np.abs(out - ref)) <= tol
        if one is None:
            one = out
        else:
            assert np.array_equal(out, one), threads


def _divisions_of(expr, position: int) -> set:
    """The (kind, divisor) of the floordiv and mod nodes of ``expr`` over dim ``position``."""
    from polyopt.affine.affine_expr import AffineExprKind as K
    found, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if e.kind in (K.FLOORDIV, K.MOD) and position in e.lhs.used_dims():
            found.add((e.kind.name, e.rhs.value))
        if e.kind.is_binary:
            stack += [e.lhs, e.rhs]
    return found


@pytest.mark.parametrize("s,k_u,run", [
    (ConvShape(1, 23, 29, 3, 13, 7, 7, stride=2), 3, 21),     # runs of 7 x 3, K_U 3
    (ConvShape(1, 10, 12, 16, 20, 3, 3), 4, 48),              # runs of 3 x 16, K_U 4
])
def test_the_steps_of_an_unrolled_k_iteration_share_the_window_position(s, k_u, run):
    """K_U divides the run and the k loop steps by K_U, so the K_U steps of an iteration read
    one window position: their loads of the input differ in the last subscript only (a
    constant more), the divisions of k are the first step's.  Spelled ``(k + r) floordiv
    21`` per step, LLVM divided k + r again for each (the stem ran 1.15x-1.20x slower).
    And k is divided by the run only (the input read with W and C folded: a window row and
    the offset in its run), not by C and then by KW for the position and the channel (the
    stem 1.13x-1.14x, conv3_x 1.11x-1.14x faster)."""
    compiled, _ = _compile(s, "f32", 1)
    inputs = _input_and_views(compiled)
    k_loops = [op for op in compiled.module.walk()
               if op.name == "affine.for" and op.inits and op.step == k_u]
    assert k_loops
    for loop in k_loops:
        loads = [op for op in loop.walk() if op.name == "affine.load"
                 and any(op.operands[0] is v for v in inputs)]
        assert len(loads) == 4 * k_u                 # M_R rows x K_U steps
        positions = {(tuple(str(e) for e in op.map.results[:-1]),
                      tuple(id(v) for v in op.map_operands)) for op in loads}
        assert len(positions) == 4, sorted(positions)
        k = loop.induction_var
        for op in loads:
            at = [n for n, v in enumerate(op.map_operands) if v is k]
            divisions = set().union(*(_divisions_of(e, at[0]) for e in op.map.results))
            assert divisions == {("FLOORDIV", run), ("MOD", run)}, divisions


def test_several_k_c_blocks_on_a_team_read_in_place_with_the_same_bits():
    """K = 3 x 3 x 128 = 1152 is two K_C blocks: each thread packs B's block once per K_C
    block around its own M_C blocks, and reads the windows in place.  (A team's K_C x 128
    block of B takes at most half of L2: 576 of K on a 1 MiB L2, Zen 4 and 5.  The channels
    grow with this CPU's L2: Emerald Rapids' 2 MiB holds all of 1152, and 2304 is two
    blocks.)"""
    s = ConvShape(1, 22, 22, 128 * l2_multiple(), 128, 3, 3)
    args = _operands(s, np.float32, seed=2)
    ref = _reference(s, *args)
    outs = []
    for threads in (2, 3):
        compiled, remarks = _compile(s, "f32", threads)
        assert any("A not packed" in r for r in remarks), remarks
        assert any("A read in place; B's block each thread's own packed once per K_C block"
                   in r for r in remarks), remarks
        outs.append(_run(compiled, args))
        assert np.max(np.abs(outs[-1] - ref)) <= 1e-4 * s.kh * s.kw * s.c
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("s,attributes,why", [
    (ConvShape(1, 11, 9, 16, 20, 3, 3), None, "63 pixels: no whole 4-row tiles"),
    (ConvShape(1, 10, 12, 16, 150, 3, 3), None, "150 filters: three 64-column tiles"),
    (ConvShape(1, 10, 12, 16, 20, 3, 3), {"K_U": "4 : i32"}, "tile attributes given"),
])
def test_where_reading_in_place_does_not_pay_im2col_is_packed(s, attributes, why):
    args = _operands(s, np.float32, seed=1)
    compiled, remarks = _compile(s, "f32", 1, attributes)
    assert not any("A not packed" in r for r in remarks), (why, remarks)
    assert any("packed A into" in r for r in remarks), (why, remarks)
    assert not _reads_input_in_tiles(compiled), why
    assert np.max(np.abs(_run(compiled, args) - _reference(s, *args))) <= 1e-4 * 144
