"""Copy loops over a flattened index split at its divisor (``delinearize_copy_loop``), the form
the NCHW implicit GEMM's im2col copies take: the split loop copies the same elements (run
against the loop as written, on bases and bounds that cross the divisor anywhere), subscripts
it cannot split stay as they are, and NCHW convolutions whose output rows no micro-panel
divides stay equal to numpy at one and two threads."""

from __future__ import annotations

import numpy as np
import pytest
from conv_nests import ConvNest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.affine.parser import parse
from polyopt.schedules.delinearize_copy import delinearize_copy_loop

from test_raise_conv import _named_nchw, check

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _copy_source(rows: int, d: int, width: int, panels: int, total: int,
                 load_sub: str = "(%p * {w} + %x) floordiv {d}, (%p * {w} + %x) mod {d}") -> str:
    """``buf[p, x] = I[(p*W + x) floordiv D, (p*W + x) mod D]`` over ``panels`` panels of
    ``W`` columns of a flattened ``rows x D`` plane holding ``total`` elements (the last
    panel partial when ``total`` is not a multiple of W)."""
    sub = load_sub.format(w=width, d=d)
    return f"""func.func @copy(%I: memref<{rows}x{d}xf32>, %buf: memref<{panels}x{width}xf32>) {{
  affine.for %p = 0 to {panels} {{
    affine.for %x = 0 to min affine_map<(d0) -> ({width}, d0 * -{width} + {total})>(%p) {{
      %v = affine.load %I[{sub}] : memref<{rows}x{d}xf32>
      affine.store %v, %buf[%p, %x] : memref<{panels}x{width}xf32>
    }}
  }}
  return
}}
"""


def _split(text: str) -> tuple[str, bool]:
    module = parse(text)
    inner = [op for op in module.walk() if isinstance(op, AffineForOp)
             and not any(isinstance(o, AffineForOp) for o in op.body.ops)]
    done = [delinearize_copy_loop(loop) for loop in inner]
    return str(module), any(done)


def _run(text: str, inp: np.ndarray, panels: int, width: int) -> np.ndarray:
    buf = np.full((panels, width), -1.0, np.float32)
    polyopt.compile(text)["copy"](inp, buf)
    return buf


@pytest.mark.parametrize("rows,d,width", [
    (9, 56, 64),     # ResNet's conv2_x rows, 64-column panels: 1 or 2 rows a panel
    (30, 7, 64),     # short rows: up to 11 rows a panel
    (5, 64, 64),     # rows as wide as the panels: one row each
    (13, 97, 16),    # panels far narrower than the rows
])
def test_the_split_copy_copies_the_same_elements(rows, d, width):
    total = rows * d
    panels = -(-total // width)
    text = _copy_source(rows, d, width, panels, total)
    split, changed = _split(text)
    assert changed
    assert f"floordiv {d}" not in split.split("affine.load")[1].split("\n")[0], split
    inp = np.arange(rows * d, dtype=np.float32).reshape(rows, d)
    np.testing.assert_array_equal(_run(split, inp, panels, width),
                                  _run(text, inp, panels, width))
    # and both are the flattened plane, padded with the untouched -1s
    want = np.full(panels * width, -1.0, np.float32)
    want[:total] = inp.ravel()
    np.testing.assert_array_equal(_run(split, inp, panels, width).ravel(), want)


@pytest.mark.parametrize("rows,d,width", [(9, 56, 64), (30, 7, 64), (13, 97, 16)])
def test_a_copy_loop_from_its_panels_first_column_splits_too(rows, d, width):
    """GEBP packs B's micro-panels inside the ic loop, each copy loop running over the
    panel's own columns: ``x`` from ``p * W`` to ``min(p * W + W, total)``."""
    total = rows * d
    panels = -(-total // width)
    text = f"""func.func @copy(%I: memref<{rows}x{d}xf32>, %buf: memref<{panels}x{width}xf32>) {{
  affine.for %p = 0 to {panels} {{
    affine.for %x = affine_map<(d0) -> (d0 * {width})>(%p) to min affine_map<(d0) -> (d0 * {width} + {width}, {total})>(%p) {{
      %v = affine.load %I[%x floordiv {d}, %x mod {d}] : memref<{rows}x{d}xf32>
      affine.store %v, %buf[%p, %x - %p * {width}] : memref<{panels}x{width}xf32>
    }}
  }}
  return
}}
"""
    split, changed = _split(text)
    assert changed
    assert f"floordiv {d}" not in split.split("affine.load")[1].split("\n")[0], split
    inp = np.arange(rows * d, dtype=np.float32).reshape(rows, d)
    want = np.full(panels * width, -1.0, np.float32)
    want[:total] = inp.ravel()
    np.testing.assert_array_equal(_run(split, inp, panels, width).ravel(), want)
    np.testing.assert_array_equal(_run(text, inp, panels, width).ravel(), want)


@pytest.mark.parametrize("load_sub", [
    "(%p * {w} + %x * 2) floordiv {d}, (%p * {w} + %x) mod {d}",   # x scaled inside
    "(%p * {w} + %x) floordiv {d}, (%p * {w} + %x) mod 8",          # two divisors
    "(%p * {w} + %x) floordiv {d}, (%p * 32 + %x) mod {d}",          # two bases
])
def test_subscripts_it_cannot_split_stay(load_sub):
    text = _copy_source(9, 56, 64, 8, 9 * 56 - 50, load_sub)
    split, changed = _split(text)
    assert not changed
    assert split == str(parse(text))


def test_a_plain_use_of_x_beside_the_division():
    """``x floordiv D`` with a base of 0, and ``x`` itself in another subscript."""
    text = _copy_source(9, 56, 64, 8, 9 * 56 - 50, "%x floordiv {d} + %p, %x mod {d}")
    split, changed = _split(text)
    assert changed
    inp = np.arange(9 * 56, dtype=np.float32).reshape(9, 56)
    np.testing.assert_array_equal(_run(split, inp, 8, 64), _run(text, inp, 8, 64))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("nest", [
    ConvNest("nchw", n=2, h=30, w=29, c=6, f=9),                            # 28x27 outputs
    ConvNest("nchw", n=1, h=23, w=31, c=4, f=5, stride=(2, 2)),             # 11x15
    ConvNest("nchw", n=1, h=20, w=24, c=3, f=10, dilation=(2, 3), kh=3, kw=2),
])
def test_nchw_convolutions_stay_exact(nest, threads):
    remarks = check(nest, _named_nchw(nest), dict(ALL, threads=threads))
    assert any("(NCHW" in m for m in remarks), remarks
