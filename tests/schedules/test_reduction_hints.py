"""--hopt remarks on float reductions kept in source order (``iter_args`` folded by
``arith.addf``... without ``reassoc``), and with ``fastmath<reassoc>`` the loop is vectorized
by LLVM and still sums within the reassociated bound."""

from __future__ import annotations

import re

import numpy as np
import pytest

import polyopt

HINT = ("a float reduction (arith.{op} carried by the innermost loop) runs in source order, "
        "one {op} at a time: fastmath<reassoc> on it")


def row_sums(op: str, flags: str, t: str = "f32", init: str = "0.0") -> str:
    return f"""func.func @f(%x: memref<8x100x{t}>, %s: memref<8x{t}>) {{
  affine.for %i = 0 to 8 {{
    %z = arith.constant {init} : {t}
    %r = affine.for %j = 0 to 100 iter_args(%a = %z) -> {t} {{
      %v = affine.load %x[%i, %j] : memref<8x100x{t}>
      %n = arith.{op} %a, %v{flags} : {t}
      affine.yield %n : {t}
    }}
    affine.store %r, %s[%i] : memref<8x{t}>
  }}
  return
}}
"""


def compiled(src):
    remarks = []
    mod = polyopt.compile(src, remark=lambda loc, m: remarks.append((loc, m)), hopt=True)
    return mod, remarks


@pytest.mark.parametrize("op", ["addf", "mulf", "maximumf"])
def test_a_strict_reduction_is_named_at_its_op(op):
    _, remarks = compiled(row_sums(op, ""))
    hits = [(loc, m) for loc, m in remarks if HINT.format(op=op) in m]
    assert len(hits) == 1, remarks
    assert (hits[0][0].line, hits[0][0].col) == (6, 12)


@pytest.mark.parametrize("flags", [" fastmath<reassoc>", " fastmath<fast>"])
def test_reassoc_silences_it_and_llvm_vectorizes_the_sum(flags):
    mod, remarks = compiled(row_sums("addf", flags))
    assert not any("float reduction" in m for _, m in remarks)
    assert re.search(r"vaddps\s+[^\n]*%[yz]mm", mod.asm()), "the sum is not vectorized"
    x = np.random.default_rng(0).standard_normal((8, 100)).astype(np.float32)
    s = np.zeros(8, np.float32)
    mod["f"](x, s)
    exact = x.astype(np.float64).sum(1)
    bound = 100 * 2.0 ** -24 * np.abs(x.astype(np.float64)).sum(1)
    assert (np.abs(s - exact) <= bound).all()


def test_integers_and_outer_loops_get_no_remark():
    _, remarks = compiled(row_sums("addi", "", "i32", "0"))
    assert not any("float reduction" in m for _, m in remarks)
    src = """func.func @f(%x: memref<8x100xf32>) -> f32 {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 8 iter_args(%a = %z) -> f32 {
    affine.for %j = 0 to 100 {
      %v = affine.load %x[%i, %j] : memref<8x100xf32>
      affine.store %v, %x[%i, %j] : memref<8x100xf32>
    }
    %n = arith.addf %a, %a : f32
    affine.yield %n : f32
  }
  return %r : f32
}
"""
    _, remarks = compiled(src)
    assert not any("float reduction" in m for _, m in remarks)


def test_an_element_updated_by_the_innermost_loop_is_a_reduction_too():
    """``s[i] = s[i] + x[i, j]`` in the j loop; a multiply-accumulate (a contraction, raised
    and vectorized along its other loops) is not named."""
    src = """func.func @f(%x: memref<8x100xf32>, %s: memref<8xf32>, %c: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 100 {
      %v = affine.load %x[%i, %j] : memref<8x100xf32>
      %a = affine.load %s[%i] : memref<8xf32>
      %n = arith.addf %a, %v : f32
      affine.store %n, %s[%i] : memref<8xf32>
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 100 {
        %a = affine.load %x[%i, %k] : memref<8x100xf32>
        %b = affine.load %x[%j, %k] : memref<8x100xf32>
        %p = arith.mulf %a, %b : f32
        %o = affine.load %c[%i, %j] : memref<8x8xf32>
        %n = arith.addf %o, %p : f32
        affine.store %n, %c[%i, %j] : memref<8x8xf32>
      }
    }
  }
  return
}
"""
    _, remarks = compiled(src)
    hits = [(loc.line, loc.col) for loc, m in remarks if HINT.format(op="addf") in m]
    assert hits == [(6, 12)], remarks


@pytest.mark.parametrize("flags", ["", " fastmath<reassoc>"])
def test_a_linalg_reduce_is_named_at_its_regions_op(flags):
    """``linalg.reduce`` becomes loops in --hopt (hopt-linalg-to-loops): its combiner is
    named there, at the region's op; with reassoc in the region the sum is vectorized."""
    src = f"""func.func @f(%x: memref<8x100xf32>, %s: memref<8xf32>) {{
  linalg.reduce ins(%x : memref<8x100xf32>) outs(%s : memref<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {{
      %0 = arith.addf %in, %init{flags} : f32
      linalg.yield %0 : f32
    }}
  return
}}
"""
    mod, remarks = compiled(src)
    hits = [(loc.line, loc.col) for loc, m in remarks if HINT.format(op="addf") in m]
    assert hits == ([] if flags else [(4, 12)]), remarks
    assert bool(re.search(r"vaddps\s+[^\n]*%[yz]mm", mod.asm())) == bool(flags)
    x = np.random.default_rng(2).standard_normal((8, 100)).astype(np.float32)
    s = np.ones(8, np.float32)
    mod["f"](x, s)
    exact = 1 + x.astype(np.float64).sum(1)
    assert (np.abs(s - exact) <= 101 * 2.0 ** -24 * (1 + np.abs(x).sum(1))).all()


def test_a_pooling_window_is_too_short_to_name():
    src = """func.func @f(%x: memref<1x9x9x4xf32>, %w: memref<3x3xf32>, %o: memref<1x7x7x4xf32>) {
  linalg.pooling_nhwc_sum ins(%x, %w : memref<1x9x9x4xf32>, memref<3x3xf32>) outs(%o : memref<1x7x7x4xf32>)
  return
}
"""
    _, remarks = compiled(src)
    assert not any("float reduction" in m for _, m in remarks), remarks
