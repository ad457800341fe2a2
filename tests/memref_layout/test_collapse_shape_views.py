"""``memref.collapse_shape`` as a view in the memref passes: packing sees it as an alias of its
source, normalization leaves it (and its source) alone while normalizing everything else."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.affine.dialects.memref import CollapseShapeOp
from polyopt.memref_layout.data_copy import alias_root, generate_copy
from polyopt.memref_layout.normalize import normalize_memrefs

WRITE_THROUGH_VIEW = """\
func.func @f(%A: memref<4x4x4xf64>) {
  %V = memref.collapse_shape %A [[0, 1], [2]] : memref<4x4x4xf64> into memref<16x4xf64>
  %c = arith.constant 1.0 : f64
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j, 0] : memref<4x4x4xf64>
      affine.store %c, %V[%i * 4 + %j, 1] : memref<16x4xf64>
    }
  }
  return
}
"""


def test_alias_root_sees_through_collapse_shape():
    module = polyopt.parse(WRITE_THROUGH_VIEW)
    view = next(op for op in module.walk() if isinstance(op, CollapseShapeOp))
    assert alias_root(view.result) is view.source


def test_packing_refuses_a_memref_written_through_its_collapsed_view():
    module = polyopt.parse(WRITE_THROUGH_VIEW, "t.mlir")
    func = module.regions[0].blocks[0].ops[0]
    a = func.regions[0].blocks[0].args[0]
    top = next(o for o in func.regions[0].blocks[0].ops if isinstance(o, AffineForOp))
    before = str(module)
    with pytest.raises(ScheduleError, match=r"%collapse_shape may alias it and is written by "
                                            r"'affine.store'"):
        generate_copy(top, a, depth=1)
    assert str(module) == before


MIXED = """\
func.func @f(%A: memref<2x3x4xf64>, %out: memref<6x4xf64>) {
  %V = memref.collapse_shape %A [[0, 1], [2]] : memref<2x3x4xf64> into memref<6x4xf64>
  %T = memref.alloc() : memref<6x4xf64, affine_map<(d0, d1) -> (d1, d0)>>
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 4 {
      %v = affine.load %V[%i, %j] : memref<6x4xf64>
      affine.store %v, %T[%i, %j] : memref<6x4xf64, affine_map<(d0, d1) -> (d1, d0)>>
    }
  }
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 4 {
      %t = affine.load %T[%i, 3 - %j] : memref<6x4xf64, affine_map<(d0, d1) -> (d1, d0)>>
      affine.store %t, %out[%i, %j] : memref<6x4xf64>
    }
  }
  memref.dealloc %T : memref<6x4xf64, affine_map<(d0, d1) -> (d1, d0)>>
  return
}
"""


def test_normalization_keeps_the_view_and_normalizes_the_rest():
    module = polyopt.parse(MIXED, "t.mlir")
    remarks = []
    count = normalize_memrefs(module, remark=lambda loc, msg: remarks.append(msg))
    text = str(module)
    assert count == 1 and not remarks
    assert ("memref.collapse_shape %arg0 [[0, 1], [2]] : memref<2x3x4xf64> into "
            "memref<6x4xf64>") in text
    assert "memref.alloc() : memref<4x6xf64>" in text and "affine_map" not in text
    a = np.random.default_rng(0).standard_normal((2, 3, 4))
    got = np.zeros((6, 4))
    polyopt.compile(module)["f"](a, got)
    np.testing.assert_array_equal(got, a.reshape(6, 4)[:, ::-1])


STRIDED_SOURCE = """\
func.func @f(%A: memref<4x5x6xf64, strided<[30, 6, 1], offset: 3>>) {
  %V = memref.collapse_shape %A [[0, 1], [2]] : memref<4x5x6xf64, strided<[30, 6, 1], offset: 3>> into memref<20x6xf64, strided<[6, 1], offset: 3>>
  return
}
"""


def test_a_strided_source_keeps_its_type():
    module = polyopt.parse(STRIDED_SOURCE, "t.mlir")
    before = str(module)
    remarks = []
    assert normalize_memrefs(module, remark=lambda loc, msg: remarks.append(msg)) == 0
    assert str(module) == before
    assert any("memref.collapse_shape" in m for m in remarks), remarks
