"""lift-cf-to-scf's multiplexers (a loop's one latch, a cycle's one entry) pass every edge's
values in slots of their own, and an edge fills the slots of the others with a stand-in value
(``ub.poison`` in MLIR's CFGToSCF): a zero for an integer, an index or a float, ``ub.poison``
for a vector (lowered as zeros) and for a memref of any shape or layout (lowered as a null
pointer with a zero descriptor). Before, a loop or a cycle carrying a memref or a vector
through such a slot stayed as branches.

Each function is lifted, accepted by mlir-opt-22, and run as written and lifted (with --hopt
and the full pipeline) against a Python reference."""

from __future__ import annotations

import re

import numpy as np
import pytest

import polyopt
from polyopt.passes import run_pipeline
from upstream_mlir import mlir_opt

LIFTED = "lift-cf-to-scf: branches lifted to scf.for/scf.while/scf.if"
_CF = re.compile(r"\bcf\.")     # a cf op (not scf.)
SWITCHES = [dict(hopt=True), dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)]

# a search that swaps its two buffers each round and leaves from two places: the exit taken
# when a value passes the key carries a vector, a float and the buffer it was found in; the
# other the buffer and a count. The latch's slots for the exit not taken get ub.poison (the
# vector and the memrefs) and zeros
SEARCH = """func.func @search(%A: memref<8xf32>, %B: memref<8xf32>, %n: index, %key: f32) -> (f32, index, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  cf.br ^head(%c0, %A, %B, %z : index, memref<8xf32>, memref<8xf32>, i64)
^head(%i: index, %cur: memref<8xf32>, %oth: memref<8xf32>, %cnt: i64):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^body, ^done(%cur, %cnt : memref<8xf32>, i64)
^body:
  %v = memref.load %cur[%i] : memref<8xf32>
  %vec = vector.broadcast %v : f32 to vector<4xf32>
  %hit = arith.cmpf ogt, %v, %key : f32
  cf.cond_br %hit, ^found(%vec, %v, %cur : vector<4xf32>, f32, memref<8xf32>), ^next
^next:
  %cnt2 = arith.addi %cnt, %one : i64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^head(%i2, %oth, %cur, %cnt2 : index, memref<8xf32>, memref<8xf32>, i64)
^found(%fv: vector<4xf32>, %f: f32, %fm: memref<8xf32>):
  %r = vector.reduction <add>, %fv : vector<4xf32> into f32
  %l = memref.load %fm[%c0] : memref<8xf32>
  %s = arith.addf %r, %l : f32
  %s2 = arith.addf %s, %f : f32
  %ic = arith.index_cast %i : index to i64
  return %s2, %i, %ic : f32, index, i64
^done(%dm: memref<8xf32>, %dc: i64):
  %l2 = memref.load %dm[%c0] : memref<8xf32>
  return %l2, %n, %dc : f32, index, i64
}
"""


def _search(A, B, n, key):
    cur, oth, cnt = A, B, 0
    for i in range(n):
        v = cur[i]
        if v > key:
            return (float(4 * v + cur[0] + v), i, i)
        cur, oth, cnt = oth, cur, cnt + 1
    return (float(cur[0]), n, cnt)


# a cycle entered at two blocks (^x from the entry, ^y from ^pre), each taking a vector and
# a memref: the entry multiplexer's slots for the entry not taken get ub.poison
IRREDUCIBLE = """func.func @ping(%A: memref<4xf32>, %B: memref<4xf32>, %p: i1, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v0 = vector.load %A[%c0] : memref<4xf32>, vector<4xf32>
  cf.cond_br %p, ^x(%c0, %v0, %A : index, vector<4xf32>, memref<4xf32>), ^pre
^pre:
  %w0 = vector.load %B[%c0] : memref<4xf32>, vector<4xf32>
  cf.br ^y(%c1, %w0, %B : index, vector<4xf32>, memref<4xf32>)
^x(%i: index, %v: vector<4xf32>, %m: memref<4xf32>):
  %more = arith.cmpi slt, %i, %n : index
  %i1 = arith.addi %i, %c1 : index
  %two = arith.addf %v, %v : vector<4xf32>
  cf.cond_br %more, ^y(%i1, %two, %B : index, vector<4xf32>, memref<4xf32>), ^out(%v, %m : vector<4xf32>, memref<4xf32>)
^y(%j: index, %w: vector<4xf32>, %mm: memref<4xf32>):
  %more2 = arith.cmpi slt, %j, %n : index
  %j1 = arith.addi %j, %c1 : index
  %u = vector.load %mm[%c0] : memref<4xf32>, vector<4xf32>
  %sum = arith.addf %w, %u : vector<4xf32>
  cf.cond_br %more2, ^x(%j1, %sum, %A : index, vector<4xf32>, memref<4xf32>), ^out(%w, %mm : vector<4xf32>, memref<4xf32>)
^out(%r: vector<4xf32>, %rm: memref<4xf32>):
  %e = memref.load %rm[%c1] : memref<4xf32>
  %red = vector.reduction <add>, %r : vector<4xf32> into f32
  %t = arith.addf %red, %e : f32
  return %t : f32
}
"""


def _ping(A, B, p, n):
    if p:
        block, i, v, m = "x", 0, A.copy(), A
    else:
        block, i, v, m = "y", 1, B.copy(), B
    while True:
        if block == "x":
            if not i < n:
                break
            block, i, v, m = "y", i + 1, v + v, B
        else:
            if not i < n:
                break
            block, i, v, m = "x", i + 1, v + m, A
    return float(np.float32(v.sum(dtype=np.float32)) + m[1])


def _lift(text: str):
    remarks = []
    module = polyopt.parse(text)
    run_pipeline(module, "lift-cf-to-scf", remark=lambda loc, msg: remarks.append(msg))
    return str(module), remarks


def _run_all(text: str, lifted: str, name: str, cases, reference, copy: bool = True):
    """``copy=False`` passes the arrays themselves (strided views stay views) to a function
    that does not write them."""
    for source, switches in [(text, {})] + [(lifted, sw) for sw in SWITCHES]:
        f = polyopt.compile(source, **switches)[name]
        for args in cases:
            got = f(*[a.copy() if copy and isinstance(a, np.ndarray) else a for a in args])
            got = tuple(got) if isinstance(got, tuple) else (got,)
            want = reference(*args)
            want = want if isinstance(want, tuple) else (want,)
            assert [float(g) for g in got] == [float(w) for w in want], (switches, args)


def test_a_loop_leaving_with_a_vector_a_memref_an_index_an_integer_and_a_float():
    lifted, remarks = _lift(SEARCH)
    assert remarks == [LIFTED]
    assert not _CF.search(lifted) and "scf.while" in lifted
    assert "ub.poison : vector<4xf32>" in lifted
    assert "ub.poison : memref<8xf32>" in lifted
    mlir_opt(lifted)
    A = np.arange(8, dtype=np.float32)
    B = -2 * np.arange(8, dtype=np.float32)
    cases = [(A, B, n, key) for n in (0, 3, 5, 8) for key in (2.5, -1.0, 100.0)]
    _run_all(SEARCH, lifted, "search", cases, _search)


def test_an_irreducible_cycle_carrying_a_vector_and_a_memref():
    lifted, remarks = _lift(IRREDUCIBLE)
    assert remarks == [LIFTED]
    assert not _CF.search(lifted) and "scf.while" in lifted and "scf.index_switch" in lifted
    assert "ub.poison : vector<4xf32>" in lifted
    mlir_opt(lifted)
    A = np.array([1, 2, 3, 4], dtype=np.float32)
    B = np.array([0.5, -1, 0.25, 8], dtype=np.float32)
    cases = [(A, B, p, n) for p in (True, False) for n in (0, 1, 2, 5)]
    _run_all(IRREDUCIBLE, lifted, "ping", cases, _ping)


STRIDED = "memref<?xf32, strided<[?], offset: ?>>"


@pytest.mark.parametrize("where", ["signature", "cast", "strided"])
def test_a_loop_carrying_a_dynamic_memref_through_a_slot(where):
    """The buffers as memref<?xf32> (in the signature, or cast inside) or with a strided
    layout of unknown strides and offset: their slots get ub.poison of the type, the
    function lifts, and runs as written (on strided views in the strided case)."""
    dyn = STRIDED if where == "strided" else "memref<?xf32>"
    text = SEARCH.replace("memref<8xf32>", dyn)
    if where == "cast":
        text = text.replace("func.func @search(%A: memref<?xf32>, %B: memref<?xf32>",
                            "func.func @search(%A0: memref<8xf32>, %B0: memref<8xf32>")
        text = text.replace("  %c0 = arith.constant 0 : index\n",
                            "  %c0 = arith.constant 0 : index\n"
                            "  %A = memref.cast %A0 : memref<8xf32> to memref<?xf32>\n"
                            "  %B = memref.cast %B0 : memref<8xf32> to memref<?xf32>\n", 1)
    lifted, remarks = _lift(text)
    assert remarks == [LIFTED]
    assert not _CF.search(lifted) and "scf.while" in lifted
    assert f"ub.poison : {dyn}" in lifted
    mlir_opt(lifted)
    A = np.arange(8, dtype=np.float32)
    B = -2 * np.arange(8, dtype=np.float32)
    if where == "strided":
        A = np.arange(24, dtype=np.float32)[1::3]
        B = -2 * np.arange(16, dtype=np.float32)[::2]
    cases = [(A, B, n, key) for n in (0, 3, 5, 8) for key in (2.5, -1.0, 100.0)]
    _run_all(text, lifted, "search", cases, _search, copy=False)
