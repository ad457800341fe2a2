"""Memrefs with a descriptor (``?`` sizes, strided layouts) merged with other values where
control flow meets: results of ``scf.if``, ``scf.index_switch``, ``scf.execute_region`` and
``affine.if``, values carried by ``scf.for``, ``scf.while`` and ``affine.for``, block arguments
of ``cf.br``/``cf.cond_br``, in any order among scalars and vectors.  A descriptor flows
through a phi of its struct and is unpacked after it; every phi of the block must still come
first (LLVM refused "PHI nodes not grouped at top of basic block").  Checked against numpy,
and against mlir-runner-22 for the same program lowered upstream."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run

DYN = "memref<?xf32>"
STRIDED = "memref<?xf32, strided<[?], offset: ?>>"
DYN2D = "memref<?x?xf32>"

#: kind -> (type, the value chosen first, the value chosen second, the use after the join as
#: an f32 expression of the joined value ``{x}``: an op defining ``{u}``, or None for itself)
KINDS = {
    "dyn": (DYN, "%A", "%B", f"{{u}} = memref.load {{x}}[%c1] : {DYN}"),
    "idx": ("index", "%c0", "%c2", f"{{u}} = memref.load %A[{{x}}] : {DYN}"),
    "strided": (STRIDED, "%S", "%T", f"{{u}} = memref.load {{x}}[%c1] : {STRIDED}"),
    "f32": ("f32", "%h1", "%h2", None),
    "vec": ("vector<4xf32>", "%v1", "%v2", "{u} = vector.extract {x}[2] : f32 from vector<4xf32>"),
    "dyn2d": (DYN2D, "%D", "%E", f"{{u}} = memref.load {{x}}[%c1, %c0] : {DYN2D}"),
    "vec2d": ("vector<2x3xf32>", "%w1", "%w2",
              "{u} = vector.extract {x}[1, 2] : f32 from vector<2x3xf32>"),
}

ORDERS = [
    ("dyn", "idx"),                     # the colleague's reproducer
    ("idx", "dyn"),
    ("dyn", "dyn", "f32"),
    ("strided", "f32", "dyn2d"),
    ("vec", "dyn", "vec2d", "strided"),
    ("dyn", "idx", "strided", "f32", "vec", "dyn2d", "vec2d"),
    ("vec2d", "dyn2d", "vec", "f32", "strided", "idx", "dyn"),
]

HEAD = f"""\
func.func @f(%A: {DYN}, %B: {DYN}, %S: {STRIDED}, %T: {STRIDED}, %D: {DYN2D}, %E: {DYN2D},
             %k: index) -> f32 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %h1 = arith.constant 1.5 : f32
  %h2 = arith.constant 2.5 : f32
  %v1 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %v2 = arith.constant dense<[10.0, 20.0, 30.0, 40.0]> : vector<4xf32>
  %w1 = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : vector<2x3xf32>
  %w2 = arith.constant dense<[[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : vector<2x3xf32>
  %p = arith.cmpi sge, %k, %c1 : index
"""


def _join(vals: list[str]) -> str:
    return ", ".join(vals)


def _construct(name: str, kinds: tuple) -> tuple[str, list[str]]:
    """The text of construct ``name`` merging the first and the second value of each kind (the
    second when ``k >= 1``; for ``index_switch`` when ``k`` is 1 or 2), and the names of the
    merged values."""
    n = len(kinds)
    types = _join([KINDS[c][0] for c in kinds])
    first = _join([KINDS[c][1] for c in kinds])
    second = _join([KINDS[c][2] for c in kinds])
    results = [f"%r#{i}" for i in range(n)]
    if name == "scf_if":
        return (f"  %r:{n} = scf.if %p -> ({types}) {{\n    scf.yield {second} : {types}\n"
                f"  }} else {{\n    scf.yield {first} : {types}\n  }}\n", results)
    if name in ("scf_for", "affine_for"):
        # the body selects between the carried value and the second one, so it uses both
        args = _join([f"%a{i} = {KINDS[c][1]}" for i, c in enumerate(kinds)])
        sel = "".join(f"    %s{i} = arith.select %q, {KINDS[c][2]}, %a{i} : {KINDS[c][0]}\n"
                      for i, c in enumerate(kinds))
        sels = _join([f"%s{i}" for i in range(n)])
        if name == "scf_for":
            loop, yld = "scf.for %i = %c0 to %k step %c1", "scf.yield"
        else:
            loop, yld = "affine.for %i = 0 to %k", "affine.yield"
        return (f"  %r:{n} = {loop} iter_args({args}) -> ({types}) {{\n"
                f"    %q = arith.cmpi sge, %i, %c0 : index\n{sel}"
                f"    {yld} {sels} : {types}\n  }}\n", results)
    if name == "scf_while":
        inits = _join([f"%a{i} = {KINDS[c][1]}" for i, c in enumerate(kinds)])
        carried = _join([f"%a{i}" for i in range(n)])
        bargs = _join([f"%b{i}: {KINDS[c][0]}" for i, c in enumerate(kinds)])
        return (f"  %r:{n + 1} = scf.while ({inits}, %j = %c0) : ({types}, index) -> "
                f"({types}, index) {{\n"
                f"    %go = arith.cmpi slt, %j, %k : index\n"
                f"    scf.condition(%go) {carried}, %j : {types}, index\n"
                f"  }} do {{\n  ^bb0({bargs}, %j2: index):\n"
                f"    %j3 = arith.addi %j2, %c1 : index\n"
                f"    scf.yield {second}, %j3 : {types}, index\n  }}\n", results)
    if name == "index_switch":
        return (f"  %r:{n} = scf.index_switch %k -> {types}\n"
                f"  case 1 {{\n    scf.yield {second} : {types}\n  }}\n"
                f"  case 2 {{\n    scf.yield {second} : {types}\n  }}\n"
                f"  default {{\n    scf.yield {first} : {types}\n  }}\n", results)
    if name == "execute_region":
        return (f"  %r:{n} = scf.execute_region -> ({types}) {{\n"
                f"    cf.cond_br %p, ^bb1, ^bb2\n"
                f"  ^bb1:\n    scf.yield {second} : {types}\n"
                f"  ^bb2:\n    scf.yield {first} : {types}\n  }}\n", results)
    if name == "affine_if":
        return (f"  %r:{n} = affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%k) -> ({types}) {{\n"
                f"    affine.yield {second} : {types}\n"
                f"  }} else {{\n    affine.yield {first} : {types}\n  }}\n", results)
    xs = [f"%x{i}" for i in range(n)]
    bargs = _join([f"%x{i}: {KINDS[c][0]}" for i, c in enumerate(kinds)])
    if name == "cf_br":
        return (f"  cf.cond_br %p, ^bb1, ^bb2\n^bb1:\n  cf.br ^bb3({second} : {types})\n"
                f"^bb2:\n  cf.br ^bb3({first} : {types})\n^bb3({bargs}):\n", xs)
    if name == "cf_cond_br":
        return (f"  cf.cond_br %p, ^bb1({second} : {types}), ^bb1({first} : {types})\n"
                f"^bb1({bargs}):\n", xs)
    if name == "cf_loop":
        return (f"  cf.br ^bb1({first}, %c0 : {types}, index)\n"
                f"^bb1({bargs}, %j: index):\n"
                f"  %go = arith.cmpi slt, %j, %k : index\n"
                f"  cf.cond_br %go, ^bb2, ^bb3\n"
                f"^bb2:\n  %j2 = arith.addi %j, %c1 : index\n"
                f"  cf.br ^bb1({second}, %j2 : {types}, index)\n^bb3:\n", xs)
    raise AssertionError(name)


CONSTRUCTS = ["scf_if", "scf_for", "scf_while", "index_switch", "execute_region", "affine_if",
              "affine_for", "cf_br", "cf_cond_br", "cf_loop"]


def function(name: str, kinds: tuple) -> str:
    """``@f(A, B, S, T, D, E, k) -> f32``: the sum of the uses of the merged values."""
    text, xs = _construct(name, kinds)
    body = [HEAD, text]
    acc = "%zero"
    for i, (c, x) in enumerate(zip(kinds, xs)):
        use = KINDS[c][3]
        u = x
        if use is not None:
            u = f"%u{i}"
            body.append("  " + use.format(u=u, x=x) + "\n")
        body.append(f"  %t{i} = arith.addf {acc}, {u} : f32\n")
        acc = f"%t{i}"
    body.append(f"  return {acc} : f32\n}}\n")
    return "".join(body)


def arrays():
    A = np.arange(1, 6, dtype=np.float32)
    B = np.arange(101, 106, dtype=np.float32)
    S = np.arange(201, 210, dtype=np.float32)[1::2]
    T = np.arange(301, 313, dtype=np.float32)[::3]
    D = np.arange(401, 407, dtype=np.float32).reshape(3, 2)
    E = np.arange(501, 507, dtype=np.float32).reshape(3, 2)
    return A, B, S, T, D, E


def expected(name: str, kinds: tuple, k: int) -> np.float32:
    A, B, S, T, D, E = arrays()
    second = k in (1, 2) if name == "index_switch" else k >= 1
    pick = {"dyn": (A[1], B[1]), "idx": (A[0], A[2]), "strided": (S[1], T[1]),
            "f32": (1.5, 2.5), "vec": (3.0, 30.0), "dyn2d": (D[1, 0], E[1, 0]),
            "vec2d": (6.0, 12.0)}
    total = np.float32(0)
    for c in kinds:
        total += np.float32(pick[c][second])
    return total


@pytest.mark.parametrize("kinds", ORDERS, ids=["-".join(o) for o in ORDERS])
@pytest.mark.parametrize("name", CONSTRUCTS)
def test_merged_descriptors_run_as_numpy(name, kinds):
    f = polyopt.compile(function(name, kinds))["f"]
    for k in (0, 1, 3):
        assert f(*arrays(), k) == expected(name, kinds, k), (name, kinds, k)


def test_the_reproducer_selects_by_the_condition():
    text = """
func.func @f(%A: memref<?xf32>, %B: memref<?xf32>, %p: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m:2 = scf.if %p -> (memref<?xf32>, index) {
    scf.yield %A, %c0 : memref<?xf32>, index
  } else {
    scf.yield %B, %c1 : memref<?xf32>, index
  }
  %v = memref.load %m#0[%m#1] : memref<?xf32>
  return %v : f32
}"""
    f = polyopt.compile(text)["f"]
    A, B = np.arange(3, dtype=np.float32), np.arange(10, 13, dtype=np.float32)
    assert f(A, B, True) == A[0] and f(A, B, False) == B[1]


def _fill(name: str, buf: str, n: int, base: int) -> str:
    return (f"  %{name} = memref.alloc() : memref<{n}xf32>\n"
            f"  scf.for %i = %c0 to %c{n} step %c1 {{\n"
            f"    %ii = arith.index_cast %i : index to i32\n"
            f"    %fi = arith.sitofp %ii : i32 to f32\n"
            f"    %base = arith.constant {base}.0 : f32\n"
            f"    %vi = arith.addf %fi, %base : f32\n"
            f"    memref.store %vi, %{name}[%i] : memref<{n}xf32>\n  }}\n"
            f"  %{buf}_d = memref.cast %{name} : memref<{n}xf32> to {DYN}\n")


#: @main: the arrays of :func:`arrays`, built in MLIR, and @f's result for k = 0, 1, 3
MAIN = (f"""\
func.func @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c9 = arith.constant 9 : index
  %c12 = arith.constant 12 : index
""" + _fill("a", "A", 5, 1) + _fill("b", "B", 5, 101) + _fill("s", "S", 9, 201)
        + _fill("t", "T", 12, 301) + _fill("d", "D", 6, 401) + _fill("e", "E", 6, 501) + f"""\
  %S0 = memref.subview %S_d[1] [4] [2] : {DYN} to memref<4xf32, strided<[2], offset: 1>>
  %S = memref.cast %S0 : memref<4xf32, strided<[2], offset: 1>> to {STRIDED}
  %T0 = memref.subview %T_d[0] [4] [3] : {DYN} to memref<4xf32, strided<[3]>>
  %T = memref.cast %T0 : memref<4xf32, strided<[3]>> to {STRIDED}
  %D0 = memref.expand_shape %d [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
  %D = memref.cast %D0 : memref<3x2xf32> to {DYN2D}
  %E0 = memref.expand_shape %e [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
  %E = memref.cast %E0 : memref<3x2xf32> to {DYN2D}
  %k3 = arith.constant 3 : index
  %f0 = call @f(%A_d, %B_d, %S, %T, %D, %E, %c0)
      : ({DYN}, {DYN}, {STRIDED}, {STRIDED}, {DYN2D}, {DYN2D}, index) -> f32
  vector.print %f0 : f32
  %f1 = call @f(%A_d, %B_d, %S, %T, %D, %E, %c1)
      : ({DYN}, {DYN}, {STRIDED}, {STRIDED}, {DYN2D}, {DYN2D}, index) -> f32
  vector.print %f1 : f32
  %f3 = call @f(%A_d, %B_d, %S, %T, %D, %E, %k3)
      : ({DYN}, {DYN}, {STRIDED}, {STRIDED}, {DYN2D}, {DYN2D}, index) -> f32
  vector.print %f3 : f32
  return
}}
""")

UPSTREAM_PASSES = ["--lower-affine", "--convert-scf-to-cf", "--expand-strided-metadata",
                   "--convert-vector-to-llvm", "--finalize-memref-to-llvm",
                   "--convert-arith-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
                   "--reconcile-unrealized-casts"]


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_merged_descriptors_print_what_mlir_runner_prints(tmp_path, capfd, name):
    text = function(name, ORDERS[-2]) + MAIN
    ours = polyopt_run(tmp_path, capfd, text)
    assert ours == lower_and_run(text, UPSTREAM_PASSES)
    assert ours.split() == [str(expected(name, ORDERS[-2], k)) for k in (0, 1, 3)]
