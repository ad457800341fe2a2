"""Brute-force tests of polyopt.memref_layout.layout: every logical index of small memrefs is
mapped to an offset inside the physical buffer, injective layouts give distinct offsets, and
the offsets agree with numpy's addressing of the same data layout."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from polyopt.affine.affine_expr import AffineMap, parse_affine_map
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.types import MemRefType, StridedLayout, f64
from polyopt.memref_layout.layout import (expr_bounds, is_identity_layout, linearize,
                                          physical_shape, physical_size, row_major_strides)


def offsets(t: MemRefType) -> dict:
    lin = linearize(t)
    assert lin.num_dims == t.rank and lin.num_symbols == 0 and lin.num_results == 1
    return {idx: lin.evaluate(idx)[0] for idx in itertools.product(*(range(d) for d in t.shape))}


def check_in_bounds(t: MemRefType, injective: bool, tight: bool = True) -> dict:
    offs = offsets(t)
    size = physical_size(t)
    assert size == int(np.prod(physical_shape(t), dtype=np.int64))
    for idx, off in offs.items():
        assert 0 <= off < size, (t, idx, off, size)
    if injective:
        assert len(set(offs.values())) == len(offs), t
    if offs and tight:
        # without padding the buffer is not larger than needed: the last element is used
        assert max(offs.values()) == size - 1, (t, max(offs.values()), size)
    return offs


SHAPES_2D = [(1, 1), (1, 7), (5, 1), (3, 4), (4, 4), (7, 5), (8, 12), (9, 13)]


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_identity_is_row_major(shape):
    t = MemRefType(shape, f64)
    assert is_identity_layout(t)
    assert physical_shape(t) == shape
    offs = check_in_bounds(t, injective=True)
    ref = np.arange(int(np.prod(shape))).reshape(shape)
    for idx, off in offs.items():
        assert ref[idx] == off


@pytest.mark.parametrize("shape", SHAPES_2D)
def test_transposed_layout_matches_numpy_transpose(shape):
    t = MemRefType(shape, f64, parse_affine_map("(d0, d1) -> (d1, d0)"))
    assert physical_shape(t) == (shape[1], shape[0])
    offs = check_in_bounds(t, injective=True)
    # the physical buffer is a row-major (d1, d0) array; the logical view is its transpose
    view = np.arange(shape[0] * shape[1]).reshape(shape[1], shape[0]).T
    for idx, off in offs.items():
        assert view[idx] == off


def test_3d_permutations_match_numpy():
    rng = random.Random(7)
    for perm in itertools.permutations(range(3)):
        shape = tuple(rng.randint(1, 5) for _ in range(3))
        t = MemRefType(shape, f64, AffineMap.permutation(perm))
        phys = tuple(shape[p] for p in perm)
        assert physical_shape(t) == phys
        offs = check_in_bounds(t, injective=True)
        # physical index k is logical dim perm[k]: logical view = transpose by inverse perm
        view = np.arange(int(np.prod(phys))).reshape(phys).transpose(np.argsort(perm))
        for idx, off in offs.items():
            assert view[idx] == off


@pytest.mark.parametrize("shape", [(64, 256), (63, 10), (1, 3), (4, 4), (13, 7)])
@pytest.mark.parametrize("mr", [1, 3, 4])
def test_tiled_layout(shape, mr):
    layout = parse_affine_map(f"(d0, d1) -> (d0 floordiv {mr}, d1, d0 mod {mr})")
    t = MemRefType(shape, f64, layout)
    phys = (-(-shape[0] // mr), shape[1], mr if shape[0] >= mr else shape[0])
    assert physical_shape(t) == phys
    # a partial last tile is padded, as MLIR's normalizeMemRefs does (memref<16x256x4xf64>)
    offs = check_in_bounds(t, injective=True, tight=shape[0] % mr == 0 or shape[0] < mr)
    for (i, j), off in offs.items():
        assert off == np.ravel_multi_index((i // mr, j, i % mr), phys)
    if shape == (64, 256) and mr == 4:  # the paper's section 2.9 buffer
        assert phys == (16, 256, 4)


def _divides_or_less(extent: int, tile: int) -> bool:
    """A dimension of ``extent`` tiled by ``tile`` leaves no padding in the last tile."""
    return extent % tile == 0 or extent < tile


def test_2d_tiled_and_padded_layouts():
    rng = random.Random(3)
    # (map, injective, tight(shape): the largest offset is the last buffer element)
    maps = [
        ("(d0, d1) -> (d0 floordiv 2, d1 floordiv 3, d0 mod 2, d1 mod 3)", True,
         lambda s: _divides_or_less(s[0], 2) and _divides_or_less(s[1], 3)),
        ("(d0, d1) -> (d1 floordiv 4, d0, d1 mod 4)", True, lambda s: _divides_or_less(s[1], 4)),
        ("(d0, d1) -> (d0, d1 floordiv 6, d1 mod 6)", True, lambda s: _divides_or_less(s[1], 6)),
        ("(d0, d1) -> (d0 * 258 + d1)", True, lambda s: True),
        ("(d0, d1) -> (d0 * 128 + d1 * 2)", True, lambda s: True),
        ("(d0, d1) -> (d1 * 9 + d0 + 3)", True, lambda s: True),
        ("(d0, d1) -> (d0)", False, lambda s: True),                  # broadcast along d1
        ("(d0, d1) -> (d0 + d1)", False, lambda s: True),             # anti-diagonals
        ("(d0, d1) -> (d0 ceildiv 2, d1)", False, lambda s: True),
    ]
    for text, injective, tight in maps:
        layout = parse_affine_map(text)
        for _ in range(6):
            shape = (rng.randint(1, 9), rng.randint(1, 9))
            t = MemRefType(shape, f64, layout)
            phys = physical_shape(t)
            assert len(phys) == layout.num_results
            offs = check_in_bounds(t, injective=injective, tight=tight(shape))
            for idx, off in offs.items():
                assert off == np.ravel_multi_index(layout.evaluate(idx), phys), (text, idx)


def test_strided_layout_matches_numpy_as_strided():
    rng = random.Random(11)
    for _ in range(30):
        shape = (rng.randint(1, 5), rng.randint(1, 6))
        s1 = rng.randint(1, 3)
        s0 = shape[1] * s1 + rng.randint(0, 3)
        off = rng.randint(0, 5)
        t = MemRefType(shape, f64, StridedLayout((s0, s1), off))
        offs = check_in_bounds(t, injective=True)
        size = physical_size(t)
        assert size == off + (shape[0] - 1) * s0 + (shape[1] - 1) * s1 + 1
        buf = np.arange(size, dtype=np.int64)
        view = np.lib.stride_tricks.as_strided(buf[off:], shape, (s0 * 8, s1 * 8))
        for idx, o in offs.items():
            assert view[idx] == o
        assert linearize(t).evaluate((0, 0)) == (off,)


def test_strided_identity_and_negative_stride_with_offset():
    t = MemRefType((3, 4), f64, StridedLayout((4, 1), 0))
    assert is_identity_layout(t)
    assert linearize(t) == linearize(MemRefType((3, 4), f64))
    # reversed rows: offset 8 + d0 * -4 + d1 stays inside [0, 12)
    t = MemRefType((3, 4), f64, StridedLayout((-4, 1), 8))
    offs = check_in_bounds(t, injective=True)
    view = np.arange(12).reshape(3, 4)[::-1]
    for idx, o in offs.items():
        assert view[idx] == o


def test_rank_0_and_3_and_empty():
    t0 = MemRefType((), f64)
    assert linearize(t0) == AffineMap(0, 0, [0])
    assert physical_shape(t0) == () and physical_size(t0) == 1
    t3 = MemRefType((2, 3, 4), f64)
    assert linearize(t3).evaluate((1, 2, 3)) == (23,)
    assert row_major_strides((2, 3, 4)) == (12, 4, 1)
    te = MemRefType((0, 5), f64, parse_affine_map("(d0, d1) -> (d1, d0)"))
    assert physical_size(te) == 0


def test_expr_bounds_exact_for_single_occurrences():
    rng = random.Random(5)
    for text in ["(d0, d1) -> (d0 floordiv 3 + d1 mod 4 * 5 - 2)",
                 "(d0, d1) -> ((d0 * 7 + d1) mod 5)", "(d0, d1) -> ((d0 - d1) floordiv 4)",
                 "(d0, d1) -> (d0 ceildiv 3 - d1 * 2)"]:
        e = parse_affine_map(text).results[0]
        for _ in range(20):
            box = []
            for _ in range(2):
                lo = rng.randint(-9, 9)
                box.append((lo, lo + rng.randint(0, 9)))
            vals = [e.evaluate(p) for p in itertools.product(*(range(a, b + 1) for a, b in box))]
            lo, hi = expr_bounds(e, box)
            assert lo <= min(vals) and hi >= max(vals)
            if "d0 * 7" not in text:  # every dim occurs once below a single mod: exact
                assert (lo, hi) == (min(vals), max(vals)), (text, box)


@pytest.mark.parametrize("text, shape, message", [
    (None, (4, None), "dynamic memref dimensions ('?') are not supported yet"),
    ("(d0, d1) -> (d0 - 1, d1)", (4, 4), "can be negative"),
    ("(d0, d1)[s0] -> (d0 + s0, d1)", (4, 4), "symbols"),
    ("(d0) -> (d0)", (4, 4), "rank"),
    ("(d0, d1) -> (d0 mod -2, d1)", (4, 4), "unsupported layout"),
])
def test_errors(text, shape, message):
    layout = parse_affine_map(text) if text else None
    t = MemRefType(shape, f64, layout)
    with pytest.raises(CodegenError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("?", r"\?")):
        linearize(t)


def test_dynamic_strides_rejected():
    t = MemRefType((4, 4), f64, StridedLayout((None, 1), 0))
    with pytest.raises(CodegenError, match="dynamic strides"):
        physical_size(t)
    t = MemRefType((4, 4), f64, StridedLayout((4, 1), None))
    with pytest.raises(CodegenError, match="dynamic strides"):
        linearize(t)
