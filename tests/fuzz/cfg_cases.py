"""Hand-written control-flow graphs that mlir-opt-22 accepts and ``--convert-scf-to-cf`` does
not make: blocks out of dominance order, loops entered at two places, irreducible loops, one
``cf.cond_br`` passing different values to one block, switches with duplicate cases and
loops, unreachable blocks, memref block arguments with ``?`` sizes, loop-carried memrefs,
headers that branch on their own arguments...  Each is ``(text, args, reference)``: the
function ``@f``, its argument tuples, and a Python function computing its results (and
updating its numpy arguments in place) as the function must."""

from __future__ import annotations

import numpy as np


CASES: dict = {}


def case(text: str, args: list):
    def register(ref):
        CASES[ref.__name__] = (text, args, ref)
        return ref
    return register


@case("""func.func @f(%A: memref<16xf64>, %n: index, %p: i1) -> f64 {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f64
  cf.cond_br %p, ^hdr(%c0, %z : index, f64), ^hdr(%c3, %z : index, f64)
^hdr(%i: index, %acc: f64):
  %c = arith.cmpi slt, %i, %n : index
  cf.cond_br %c, ^body, ^exit
^body:
  %v = memref.load %A[%i] : memref<16xf64>
  %s = arith.addf %acc, %v : f64
  %c1 = arith.constant 1 : index
  %i2 = arith.addi %i, %c1 : index
  cf.br ^hdr(%i2, %s : index, f64)
^exit:
  return %acc : f64
}""", [(np.arange(16.0), n, p) for n in (0, 5) for p in (True, False)])
def two_entries(A, n, p):
    return float(A[(0 if p else 3):n].sum())


@case("""func.func @f(%n: i64, %p: i1) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  cf.cond_br %p, ^a(%c0, %c0 : i64, i64), ^b(%c0, %c0 : i64, i64)
^a(%i: i64, %s: i64):
  %s1 = arith.addi %s, %c1 : i64
  %i1 = arith.addi %i, %c1 : i64
  %ca = arith.cmpi slt, %i1, %n : i64
  cf.cond_br %ca, ^b(%i1, %s1 : i64, i64), ^done(%s1 : i64)
^b(%j: i64, %t: i64):
  %t1 = arith.addi %t, %c2 : i64
  %j1 = arith.addi %j, %c1 : i64
  %cb = arith.cmpi slt, %j1, %n : i64
  cf.cond_br %cb, ^a(%j1, %t1 : i64, i64), ^done(%t1 : i64)
^done(%r: i64):
  return %r : i64
}""", [(n, p) for n in (0, 1, 5) for p in (True, False)])
def irreducible(n, p):
    i = s = 0
    at_a = p
    while True:
        s += 1 if at_a else 2
        i += 1
        if not i < n:
            return s
        at_a = not at_a


@case("""func.func @f(%c: i1, %x: i64, %y: i64) -> i64 {
  cf.cond_br %c, ^m(%x, %y : i64, i64), ^m(%y, %x : i64, i64)
^m(%a: i64, %b: i64):
  %d = arith.subi %a, %b : i64
  return %d : i64
}""", [(c, 5, 2) for c in (True, False)])
def same_block_different_args(c, x, y):
    return x - y if c else y - x


@case("""func.func @f(%n: index, %c: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  cf.br ^h(%c0, %c0 : index, index)
^h(%i: index, %s: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %i1 = arith.addi %i, %c1 : index
  %s1 = arith.addi %s, %c1 : index
  %s2 = arith.addi %s, %c2 : index
  cf.cond_br %c, ^h(%i1, %s1 : index, index), ^h(%i1, %s2 : index, index)
^e:
  return %s : index
}""", [(n, c) for n in (0, 4) for c in (True, False)])
def back_edges_of_one_cond_br(n, c):
    return max(n, 0) * (1 if c else 2)


@case("""func.func @f(%x: i32) -> i32 {
  cf.switch %x : i32, [
    default: ^d,
    1: ^a(%x : i32),
    2: ^b,
    1: ^b
  ]
^a(%v: i32):
  %c10 = arith.constant 10 : i32
  %r = arith.addi %v, %c10 : i32
  cf.br ^m(%r : i32)
^b:
  %c20 = arith.constant 20 : i32
  cf.br ^m(%c20 : i32)
^d:
  %c30 = arith.constant 30 : i32
  cf.br ^m(%c30 : i32)
^m(%o: i32):
  return %o : i32
}""", [(x,) for x in (0, 1, 2, 3, -1)])
def switch_duplicate_cases(x):
    return 11 if x == 1 else 20 if x == 2 else 30


@case("""func.func @f(%x: i64, %b: i1) -> i64 {
  cf.switch %x : i64, [
    default: ^m(%x : i64),
    -5: ^m(%x : i64),
    7: ^s
  ]
^s:
  cf.switch %b : i1, [
    default: ^m(%x : i64),
    1: ^t
  ]
^t:
  %c = arith.constant 100 : i64
  cf.br ^m(%c : i64)
^m(%v: i64):
  %one = arith.constant 1 : i64
  %w = arith.addi %v, %one : i64
  return %w : i64
}""", [(x, b) for x in (-5, 0, 7) for b in (True, False)])
def switch_default_and_case_to_one_block(x, b):
    return 101 if (x == 7 and b) else x + 1


@case("""func.func @f(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  cf.br ^loop(%c0, %c0 : i32, i32)
^loop(%state: i32, %k: i32):
  %k1 = arith.addi %k, %c1 : i32
  %done = arith.cmpi sge, %k, %n : i32
  cf.cond_br %done, ^exit(%state : i32), ^disp
^disp:
  cf.switch %state : i32, [
    default: ^loop(%c0, %k1 : i32, i32),
    0: ^loop(%c1, %k1 : i32, i32),
    1: ^loop(%c2, %k1 : i32, i32),
    2: ^loop(%c3, %k1 : i32, i32)
  ]
^exit(%s: i32):
  return %s : i32
}""", [(n,) for n in (0, 1, 2, 3, 4, 9)])
def switch_state_machine(n):
    return max(n, 0) % 4


@case("""func.func @f(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^h(%c0 : index)
^dead:
  cf.br ^h(%c1 : index)
^h(%i: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %i1 = arith.addi %i, %c1 : index
  cf.br ^h(%i1 : index)
^dead2:
  cf.br ^dead2
^e:
  %m = arith.maxsi %i, %c0 : index
  return %m : index
}""", [(n,) for n in (-1, 0, 5)])
def unreachable_blocks(n):
    return max(n, 0)


@case("""func.func @f(%A: memref<?xf64>, %B: memref<?xf64>, %p: i1, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f64
  cf.cond_br %p, ^pick(%A : memref<?xf64>), ^pick(%B : memref<?xf64>)
^pick(%M: memref<?xf64>):
  cf.br ^h(%c0, %z : index, f64)
^h(%i: index, %acc: f64):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %v = memref.load %M[%i] : memref<?xf64>
  %s = arith.addf %acc, %v : f64
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  memref.store %s, %M[%i] : memref<?xf64>
  cf.br ^h(%i1, %s : index, f64)
^e:
  return %acc : f64
}""", [(np.arange(6.0), np.arange(6.0) * 10, p, 4) for p in (True, False)])
def memref_block_argument(A, B, p, n):
    M = A if p else B
    acc = 0.0
    for i in range(n):
        acc += M[i]
        M[i] = acc
    return acc


@case("""func.func @f(%A: memref<?xf64>, %B: memref<?xf64>, %n: index, %steps: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f64
  cf.br ^h(%c0, %A, %B : index, memref<?xf64>, memref<?xf64>)
^h(%t: index, %src: memref<?xf64>, %dst: memref<?xf64>):
  %go = arith.cmpi slt, %t, %steps : index
  cf.cond_br %go, ^pre, ^e
^pre:
  cf.br ^ih(%c1 : index)
^ih(%i: index):
  %gi = arith.cmpi slt, %i, %n : index
  cf.cond_br %gi, ^ib, ^latch
^ib:
  %im = arith.subi %i, %c1 : index
  %a = memref.load %src[%im] : memref<?xf64>
  %b = memref.load %src[%i] : memref<?xf64>
  %s = arith.addf %a, %b : f64
  %m = arith.mulf %s, %half : f64
  memref.store %m, %dst[%i] : memref<?xf64>
  %i1 = arith.addi %i, %c1 : index
  cf.br ^ih(%i1 : index)
^latch:
  %t1 = arith.addi %t, %c1 : index
  cf.br ^h(%t1, %dst, %src : index, memref<?xf64>, memref<?xf64>)
^e:
  %nm = arith.subi %n, %c1 : index
  %r = memref.load %src[%nm] : memref<?xf64>
  return %r : f64
}""", [(np.arange(9.0), np.zeros(9), 9, k) for k in (0, 1, 2, 5)])
def ping_pong_memrefs(A, B, n, steps):
    src, dst = A, B
    for _ in range(steps):
        for i in range(1, n):
            dst[i] = (src[i - 1] + src[i]) * 0.5
        src, dst = dst, src
    return float(src[n - 1])


@case("""func.func @f(%n: i32, %A: memref<16xi32>) -> i32 {
  %c0 = arith.constant 0 : i32
  cf.br ^h(%c0, %c0 : i32, i32)
^h(%i: i32, %s: i32):
  %t = arith.cmpi slt, %i, %n : i32
  cf.cond_br %t, ^b, ^e
^b:
  %c3 = arith.constant 3 : i32
  %x = arith.index_cast %i : i32 to index
  memref.store %i, %A[%x] : memref<16xi32>
  %s1 = arith.addi %s, %i : i32
  %i1 = arith.addi %i, %c3 : i32
  cf.br ^h(%i1, %s1 : i32, i32)
^e:
  return %s : i32
}""", [(n, np.zeros(16, dtype=np.int32)) for n in (-1, 0, 1, 16)])
def i32_loop_step_in_body(n, A):
    s = 0
    for i in range(0, n, 3):
        A[i] = i
        s += i
    return s


@case("""func.func @f(%n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  cf.br ^h(%c0, %c0 : index, index)
^h(%i: index, %s: index):
  %sq = arith.muli %i, %c3 : index
  %t = arith.cmpi slt, %sq, %n : index
  cf.cond_br %t, ^b, ^e(%sq : index)
^b:
  %i1 = arith.addi %i, %c1 : index
  %s1 = arith.addi %s, %sq : index
  cf.br ^h(%i1, %s1 : index, index)
^e(%last: index):
  %z = arith.addi %last, %i : index
  return %z, %s : index, index
}""", [(n,) for n in (0, 1, 10)])
def header_values_after_the_loop(n):
    i = s = 0
    while 3 * i < n:
        s += 3 * i
        i += 1
    return 4 * i, s


@case("""func.func @f(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^h(%c0 : index)
^h(%i: index):
  %i1 = arith.addi %i, %c1 : index
  %t = arith.cmpi slt, %i1, %n : index
  cf.cond_br %t, ^h(%i1 : index), ^e
^e:
  return %i1 : index
}""", [(n,) for n in (-1, 0, 1, 5)])
def self_loop(n):
    return max(n, 1)


@case("""func.func @f(%n: index, %m: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^h1(%c0, %c0 : index, index)
^h1(%i: index, %s: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^pre, ^e(%s : index)
^pre:
  cf.br ^h2(%c0, %s : index, index)
^h2(%j: index, %s2: index):
  %t2 = arith.cmpi slt, %j, %m : index
  cf.cond_br %t2, ^b2, ^latch1
^b2:
  %s3 = arith.addi %s2, %j : index
  %j1 = arith.addi %j, %c1 : index
  %big = arith.cmpi sgt, %s3, %c1 : index
  cf.cond_br %big, ^e(%s3 : index), ^h2(%j1, %s3 : index, index)
^latch1:
  %i1 = arith.addi %i, %c1 : index
  cf.br ^h1(%i1, %s2 : index, index)
^e(%r: index):
  return %r : index
}""", [(n, m) for n in (0, 2) for m in (0, 1, 3)])
def break_out_of_two_loops(n, m):
    s = 0
    for _ in range(n):
        for j in range(m):
            s += j
            if s > 1:
                return s
    return s


@case("""func.func @f(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  cf.br ^h(%c10, %c0 : index, index)
^h(%i: index, %s: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^e, ^b
^b:
  %i1 = arith.subi %i, %c1 : index
  %s1 = arith.addi %s, %c1 : index
  cf.br ^h(%i1, %s1 : index, index)
^e:
  return %s : index
}""", [(n,) for n in (0, 5, 11, 20)])
def slt_leaving_on_true(n):
    return max(0, 10 - n + 1)


@case("""func.func @f(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^h(%c0, %c1 : index, index)
^h(%i: index, %st: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %i1 = arith.addi %i, %st : index
  %st1 = arith.addi %st, %c1 : index
  cf.br ^h(%i1, %st1 : index, index)
^e:
  return %st : index
}""", [(n,) for n in (0, 1, 10)])
def step_carried_by_the_loop(n):
    i, st = 0, 1
    while i < n:
        i, st = i + st, st + 1
    return st


@case("""func.func @f(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^h(%c0, %n : index, index)
^h(%i: index, %u: index):
  %t = arith.cmpi slt, %i, %u : index
  cf.cond_br %t, ^b, ^e
^b:
  %i1 = arith.addi %i, %c1 : index
  %u1 = arith.subi %u, %c1 : index
  cf.br ^h(%i1, %u1 : index, index)
^e:
  return %i : index
}""", [(n,) for n in (-1, 0, 1, 4, 7)])
def bound_carried_by_the_loop(n):
    return max(0, (n + 1) // 2)


@case("""func.func @f(%n: index, %A: memref<16xindex>) -> index {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  cf.br ^h(%c0, %c0 : index, index)
^h(%i: index, %p: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %i1 = arith.addi %c2, %i : index
  memref.store %i1, %A[%i] : memref<16xindex>
  cf.br ^h(%i1, %i1 : index, index)
^e:
  return %p : index
}""", [(n, np.zeros(16, dtype=np.int64)) for n in (0, 1, 10)])
def next_iv_carried_too(n, A):
    p = 0
    for i in range(0, n, 2):
        A[i] = i + 2
        p = i + 2
    return p


for _flag, _dests, _pred in (("true", "^b, ^e", "slt"), ("false", "^e, ^b", "sge")):
    @case(f"""func.func @f(%n: index) -> index {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = arith.constant {_flag}
  cf.br ^h(%c0, %init : index, i1)
^h(%i: index, %flag: i1):
  cf.cond_br %flag, {_dests}
^b:
  %i1 = arith.addi %i, %c1 : index
  %t = arith.cmpi {_pred}, %i1, %n : index
  cf.br ^h(%i1, %t : index, i1)
^e:
  return %i : index
}}""", [(n,) for n in (-1, 0, 1, 5)])
    def header_branches_on_its_argument(n):
        return max(n, 1)
    CASES[f"header_branches_on_its_argument_{_flag}"] = CASES.pop(
        "header_branches_on_its_argument")


@case("""func.func @f(%A: memref<8x8xf64>, %B: memref<8x8xf64>, %C: memref<8x8xf64>, %k: i32) -> f64 {
  %z = arith.constant 0.0 : f64
  cf.switch %k : i32, [
    default: ^mm,
    1: ^fill
  ]
^fill:
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.store %z, %C[%i, %j] : memref<8x8xf64>
    }
  }
  cf.br ^mm
^mm:
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      scf.for %l = %c0 to %c8 step %c1 {
        %a = memref.load %A[%i, %l] : memref<8x8xf64>
        %b = memref.load %B[%l, %j] : memref<8x8xf64>
        %c = memref.load %C[%i, %j] : memref<8x8xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        memref.store %s, %C[%i, %j] : memref<8x8xf64>
      }
    }
  }
  %r = memref.load %C[%c1, %c1] : memref<8x8xf64>
  return %r : f64
}""", [(np.arange(64.0).reshape(8, 8), np.ones((8, 8)), np.full((8, 8), 2.0), k)
       for k in (0, 1)])
def loops_in_the_blocks_of_a_switch(A, B, C, k):
    if k == 1:
        C[:] = 0
    C += A @ B
    return float(C[1, 1])


@case("""func.func @f(%A: memref<16xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^h(%c0, %z : index, f64)
^h(%i: index, %acc: f64):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^b, ^e
^b:
  %v = memref.load %A[%i] : memref<16xf64>
  %w = scf.execute_region -> f64 {
    %neg = arith.cmpf olt, %v, %z : f64
    cf.cond_br %neg, ^bb1, ^bb2(%v : f64)
  ^bb1:
    %nv = arith.negf %v : f64
    cf.br ^bb2(%nv : f64)
  ^bb2(%r: f64):
    scf.yield %r : f64
  }
  %big = arith.cmpf ogt, %w, %acc : f64
  %ok = arith.constant true
  cf.assert %ok, "never"
  cf.cond_br %big, ^ret(%w : f64), ^latch
^latch:
  %s = arith.addf %acc, %w : f64
  %i1 = arith.addi %i, %c1 : index
  cf.br ^h(%i1, %s : index, f64)
^ret(%x: f64):
  return %x : f64
^e:
  return %acc : f64
}""", [(np.array([1.0, -2, 0.5, 4, -8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]), n)
       for n in (0, 1, 2, 4, 16)])
def return_from_a_loop_holding_an_execute_region(A, n):
    acc = 0.0
    for i in range(n):
        w = abs(A[i])
        if w > acc:
            return float(w)
        acc += w
    return acc


# structured programs for the shapes the generator does not reach: mlir-opt-22 turns them into
# branches (``STRUCTURED`` are converted by each of the test's pipelines)
STRUCTURED: dict = {}


def _deep_nest(depth: int) -> str:
    """``depth`` nested scf.for loops of 2 iterations, each carrying a sum of all ivs."""
    lines = ["func.func @f(%A: memref<256xindex>, %n: index) -> index {",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %c2 = arith.constant 2 : index"]
    ind = "  "
    acc = "%c0"
    for d in range(depth):
        ub = "%n" if d == depth // 2 else "%c2"
        lines.append(f"{ind}%r{d} = scf.for %i{d} = %c0 to {ub} step %c1 "
                     f"iter_args(%a{d} = {acc}) -> (index) {{")
        acc = f"%a{d}"
        ind += "  "
    lines.append(f"{ind}%lin0 = arith.addi %i0, %c0 : index")
    for d in range(1, depth):
        lines.append(f"{ind}%lm{d} = arith.muli %lin{d - 1}, %c2 : index")
        lines.append(f"{ind}%lin{d} = arith.addi %lm{d}, %i{d} : index")
    lines.append(f"{ind}%sub = arith.remui %lin{depth - 1}, %n256 : index")
    lines.insert(4, "  %n256 = arith.constant 256 : index")
    lines.append(f"{ind}memref.store %lin{depth - 1}, %A[%sub] : memref<256xindex>")
    s = f"%a{depth - 1}"
    for d in range(depth):
        lines.append(f"{ind}%s{d} = arith.addi {s}, %i{d} : index")
        s = f"%s{d}"
    for d in reversed(range(depth)):
        lines.append(f"{ind}scf.yield {s} : index")
        ind = ind[:-2]
        lines.append(f"{ind}}}")
        s = f"%r{d}"
    lines.append(f"  return %r0 : index\n}}")
    return "\n".join(lines)


def _deep_nest_reference(depth):
    def ref(A, n):
        import itertools
        total = 0
        ranges = [range(n) if d == depth // 2 else range(2) for d in range(depth)]
        for ivs in itertools.product(*ranges):
            lin = 0
            for v in ivs:
                lin = lin * 2 + v
            A[lin % 256] = lin
            total += sum(ivs)
        return total
    return ref


STRUCTURED["deep_nest_9"] = (_deep_nest(9), [(np.zeros(256, dtype=np.int64), n)
                                             for n in (0, 1, 2)], _deep_nest_reference(9))

STRUCTURED["while_in_for_in_while"] = ("""func.func @f(%A: memref<16xf64>, %n: index) -> (index, f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f64
  %r:2 = scf.while (%k = %n, %acc = %z) : (index, f64) -> (index, f64) {
    %go = arith.cmpi sgt, %k, %c0 : index
    scf.condition(%go) %k, %acc : index, f64
  } do {
  ^bb0(%k2: index, %acc2: f64):
    %s = scf.for %i = %c0 to %k2 step %c1 iter_args(%a = %acc2) -> (f64) {
      %w:2 = scf.while (%j = %i, %b = %a) : (index, f64) -> (index, f64) {
        %sub = arith.remui %j, %c16 : index
        %v = memref.load %A[%sub] : memref<16xf64>
        %pos = arith.cmpf olt, %v, %z : f64
        %lt = arith.cmpi slt, %j, %k2 : index
        %both = arith.andi %pos, %lt : i1
        scf.condition(%both) %j, %b : index, f64
      } do {
      ^bb0(%j2: index, %b2: f64):
        %sub2 = arith.remui %j2, %c16 : index
        %v2 = memref.load %A[%sub2] : memref<16xf64>
        %b3 = arith.addf %b2, %v2 : f64
        %one = arith.constant 1.0 : f64
        %v3 = arith.addf %v2, %one : f64
        memref.store %v3, %A[%sub2] : memref<16xf64>
        %j3 = arith.addi %j2, %c1 : index
        scf.yield %j3, %b3 : index, f64
      }
      scf.yield %w#1 : f64
    }
    %k3 = arith.divui %k2, %c2 : index
    scf.yield %k3, %s : index, f64
  }
  return %r#0, %r#1 : index, f64
}""", [(np.array([-3.0, 1, -2, -1, 0, -5, 2, -1, 1, -1, -1, -2, 3, 0, -1, -4]), n)
       for n in (0, 1, 6, 15)], None)


def _while_in_for_in_while_reference(A, n):
    k, acc = n, 0.0
    while k > 0:
        a = acc
        for i in range(0, k):
            j, b = i, a
            while A[j % 16] < 0 and j < k:
                b += A[j % 16]
                A[j % 16] += 1.0
                j += 1
            a = b
        k, acc = k // 2, a
    return k, acc


STRUCTURED["while_in_for_in_while"] = STRUCTURED["while_in_for_in_while"][:2] + (
    _while_in_for_in_while_reference,)
