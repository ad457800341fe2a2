"""Guards in reduction loops: an ``affine.if`` the loops around it decide is dropped, one that
does not use the innermost loop's induction variable versions that loop; the program computes
what it computed (executed against the unchanged program on sizes that are multiples of no
step), and gramschmidt's sums go to registers again after the scheduler fused its Q column into
their loop."""

from __future__ import annotations

import numpy as np

import polyopt
from polyopt.affine.dialects.affine import AffineIfOp
from polyopt.affine.ir import walk_ops
from polyopt.affine.printer import print_module
from polyopt.pipeline import load
from polyopt.schedules.guards import simplify_guards, unswitch_invariant_guards
from upstream_mlir import mlir_opt

# j = 1, 9, 17, ...: `j == 2` never holds, `j >= 1` always does, `j == 9` at one j only
GUARDED = """\
func.func @f(%X: memref<43x13xf64>, %Q: memref<13xf64>, %R: memref<43xf64>) {
  affine.for %j = 1 to 43 step 8 {
    affine.for %i = 0 to 13 {
      affine.if affine_set<(d0) : (d0 - 2 == 0)>(%j) {
        %z = arith.constant 100.0 : f64
        affine.store %z, %Q[%i] : memref<13xf64>
      }
      affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%j) {
        %x = affine.load %X[%j, %i] : memref<43x13xf64>
        affine.store %x, %X[%j, %i] : memref<43x13xf64>
      } else {
        %z = arith.constant -1.0 : f64
        affine.store %z, %Q[%i] : memref<13xf64>
      }
      affine.if affine_set<(d0) : (d0 - 9 == 0)>(%j) {
        %x = affine.load %X[%j, %i] : memref<43x13xf64>
        %h = arith.constant 0.5 : f64
        %y = arith.mulf %x, %h : f64
        affine.store %y, %Q[%i] : memref<13xf64>
      }
      %q = affine.load %Q[%i] : memref<13xf64>
      %x = affine.load %X[%j, %i] : memref<43x13xf64>
      %r = affine.load %R[%j] : memref<43xf64>
      %p = arith.mulf %q, %x : f64
      %s = arith.addf %r, %p : f64
      affine.store %s, %R[%j] : memref<43xf64>
    }
  }
  return
}
"""


def _run(text):
    rng = np.random.default_rng(5)
    x, q, r = rng.random((43, 13)), rng.random(13), rng.random(43)
    polyopt.compile(text)["f"](x, q, r)
    return x, q, r


def test_decided_guards_go_and_the_other_versions_the_innermost_loop():
    module = load(GUARDED)
    func = module.regions[0].blocks[0].ops[0]
    assert simplify_guards(func) == 2
    text = print_module(module)
    assert "1.000000e+02" not in text and "-1.000000e+00" not in text
    assert text.count("affine.if") == 1
    assert unswitch_invariant_guards(func) == 1
    text = print_module(module)
    # affine.if (j == 9) { loop with Q's store } else { loop without it }
    ifs = [op for op in walk_ops(func) if isinstance(op, AffineIfOp)]
    assert len(ifs) == 1 and ifs[0].parent.parent_op.name == "affine.for"
    assert ifs[0].else_block is not None
    assert all(op.name == "affine.for" for op in ifs[0].then_block.ops[:-1])
    assert mlir_opt(text) == text
    for want, got in zip(_run(GUARDED), _run(text)):
        assert np.array_equal(want, got)


def test_a_guard_on_the_innermost_loops_own_variable_stays():
    src = GUARDED.replace("(%j) {\n        %x = affine.load %X[%j, %i] : memref<43x13xf64>\n"
                          "        %h", "(%i) {\n        %x = affine.load %X[%j, %i] : "
                          "memref<43x13xf64>\n        %h")
    module = load(src)
    func = module.regions[0].blocks[0].ops[0]
    simplify_guards(func)
    assert unswitch_invariant_guards(func) == 0


def test_gramschmidts_sums_are_held_in_registers():
    from polyopt.polybench.suite import kernel
    notes = []
    compiled = polyopt.compile(kernel("gramschmidt").mlir("MEDIUM"), hopt=True, copy=True,
                               unroll=True, scalrep=True, vect=True,
                               remark=lambda loc, m: notes.append(m))
    text = str(compiled.module)
    assert any("unroll-and-jam around innermost reductions" in m for m in notes)
    # the R[k][j] sums of the j loop jammed by 8: eight accumulators in one loop
    assert "-> (f64, f64, f64, f64, f64, f64, f64, f64)" in text
