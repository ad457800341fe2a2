"""raise-scf-to-affine: golden outputs (accepted and printed identically by mlir-opt-22), affine
code lowered by upstream's --lower-affine raised back to exactly what was lowered (random nests
too), memref raising identical to mlir-opt-22's --affine-raise-from-memref, what stays scf and
why, and raised programs computing what the scf ones compute."""

from __future__ import annotations

import random
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.raise_scf_to_affine import raise_memref_accesses, raise_scf_to_affine
from upstream_mlir import mlir_opt


def lower_affine(text: str) -> str:
    """``mlir-opt-22 --lower-affine``: affine loops and ifs become scf, subscripts and bounds
    become arith.  (Its ``overflow<nsw>`` flags on the index arithmetic are dropped: polyopt's
    arith does not parse them yet, and the raising reads the arithmetic, not its flags.)"""
    return mlir_opt(text, "--lower-affine").replace(" overflow<nsw>", "")


def raised(text: str, remarks: list | None = None) -> str:
    module = parse(text, "t.mlir")
    sink = None if remarks is None else (lambda loc, msg: remarks.append(
        f"{loc.line}:{loc.col}: {msg}"))
    raise_scf_to_affine(module, sink)
    from polyopt.affine.verifier import verify
    verify(module)
    return print_module(module)


# ---------------------------------------------------------------------------------------------
# golden: scf as a user writes it


GOLDEN = [(
    # index arithmetic in bounds and subscripts, a comparison, a `ne` (branches swapped),
    # a symbol computed by a pure op (divui by a constant)
    """\
func.func @f(%A: memref<?xf64>, %B: memref<?xf64>, %n: index, %m: index, %alpha: f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %q = arith.divui %n, %c4 : index
  %ub = arith.muli %q, %c4 : index
  scf.for %i = %c0 to %ub step %c4 {
    %j = arith.addi %i, %c1 : index
    %a = memref.load %A[%j] : memref<?xf64>
    %s = arith.mulf %a, %alpha : f64
    %inside = arith.cmpi slt, %j, %m : index
    scf.if %inside {
      memref.store %s, %B[%i] : memref<?xf64>
    } else {
      memref.store %a, %B[%i] : memref<?xf64>
    }
    %ne = arith.cmpi ne, %i, %c4 : index
    scf.if %ne {
      memref.store %a, %B[%j] : memref<?xf64>
    }
  }
  return
}
""", """\
#map = affine_map<()[s0] -> (s0 * 4)>
#set = affine_set<(d0)[s0] : (-d0 + s0 - 2 >= 0)>
#set1 = affine_set<(d0) : (d0 - 4 == 0)>
module {
  func.func @f(%arg0: memref<?xf64>, %arg1: memref<?xf64>, %arg2: index, %arg3: index, %arg4: f64) {
    %c4 = arith.constant 4 : index
    %0 = arith.divui %arg2, %c4 : index
    affine.for %arg5 = 0 to #map()[%0] step 4 {
      %1 = affine.load %arg0[%arg5 + 1] : memref<?xf64>
      %2 = arith.mulf %1, %arg4 : f64
      affine.if #set(%arg5)[%arg3] {
        affine.store %2, %arg1[%arg5] : memref<?xf64>
      } else {
        affine.store %1, %arg1[%arg5] : memref<?xf64>
      }
      affine.if #set1(%arg5) {
      } else {
        affine.store %1, %arg1[%arg5 + 1] : memref<?xf64>
      }
    }
    return
  }
}
"""), (
    # iter_args, an scf.if with results under a conjunction, an inner loop bounded by the outer
    # IV (a dim), max/min bounds from arith.maxsi/minsi, a subi, an affine.apply composed
    """\
func.func @g(%A: memref<16x16xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %z) -> (f32) {
    %lo = arith.subi %i, %c3 : index
    %lb = arith.maxsi %lo, %c0 : index
    %hi = affine.apply affine_map<(d0) -> (d0 + 2)>(%i)
    %ub = arith.minsi %hi, %n : index
    %t = scf.for %j = %lb to %ub step %c1 iter_args(%a2 = %acc) -> (f32) {
      %ge = arith.cmpi sge, %j, %c1 : index
      %le = arith.cmpi sle, %j, %i : index
      %both = arith.andi %ge, %le : i1
      %v = scf.if %both -> (f32) {
        %x = memref.load %A[%i, %j] : memref<16x16xf32>
        scf.yield %x : f32
      } else {
        scf.yield %z : f32
      }
      %s = arith.addf %a2, %v : f32
      scf.yield %s : f32
    }
    scf.yield %t : f32
  }
  return %r : f32
}
""", """\
#map = affine_map<(d0) -> (d0 - 3, 0)>
#map1 = affine_map<(d0)[s0] -> (d0 + 2, s0)>
#set = affine_set<(d0, d1) : (d0 - 1 >= 0, -d0 + d1 >= 0)>
module {
  func.func @g(%arg0: memref<16x16xf32>, %arg1: index) -> f32 {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = affine.for %arg2 = 0 to 16 iter_args(%arg3 = %cst) -> (f32) {
      %1 = affine.for %arg4 = max #map(%arg2) to min #map1(%arg2)[%arg1] iter_args(%arg5 = %arg3) -> (f32) {
        %2 = affine.if #set(%arg4, %arg2) -> f32 {
          %4 = affine.load %arg0[%arg2, %arg4] : memref<16x16xf32>
          affine.yield %4 : f32
        } else {
          affine.yield %cst : f32
        }
        %3 = arith.addf %arg5, %2 : f32
        affine.yield %3 : f32
      }
      affine.yield %1 : f32
    }
    return %0 : f32
  }
}
""")]


@pytest.mark.parametrize("k", range(len(GOLDEN)))
def test_golden(k):
    source, expected = GOLDEN[k]
    assert raised(source) == expected
    assert mlir_opt(expected) == expected    # upstream accepts it and prints it the same


# ---------------------------------------------------------------------------------------------
# upstream's --lower-affine output comes back as what was lowered


LOWERED = {
    "matmul": """\
func.func @mm(%A: memref<23x19xf64>, %B: memref<19x37xf64>, %C: memref<23x37xf64>) {
  affine.for %i = 0 to 23 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 19 {
        %a = affine.load %A[%i, %k] : memref<23x19xf64>
        %b = affine.load %B[%k, %j] : memref<19x37xf64>
        %c = affine.load %C[%i, %j] : memref<23x37xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<23x37xf64>
      }
    }
  }
  return
}
""",
    "tiled_reduction": """\
#map = affine_map<(d0) -> (d0 * 8)>
#map1 = affine_map<(d0)[s0] -> (d0 * 8 + 8, s0)>
#set = affine_set<(d0, d1)[s0] : (d0 - d1 >= 0, s0 - d0 - 2 >= 0)>
func.func @tiled(%A: memref<100x100xf32>, %n: index) -> f32 {
  %z = arith.constant 0.0 : f32
  %r = affine.for %ii = 0 to 13 iter_args(%acc = %z) -> (f32) {
    %t = affine.for %i = #map(%ii) to min #map1(%ii)[%n] step 3 iter_args(%a2 = %acc) -> (f32) {
      %u = affine.for %j = 0 to 10 iter_args(%a3 = %a2) -> (f32) {
        %v = affine.if #set(%i, %j)[%n] -> f32 {
          %x = affine.load %A[%i + %j * 2, symbol(%n) + 1] : memref<100x100xf32>
          affine.yield %x : f32
        } else {
          affine.yield %z : f32
        }
        %s = arith.addf %a3, %v : f32
        affine.yield %s : f32
      }
      affine.yield %u : f32
    }
    affine.yield %t : f32
  }
  return %r : f32
}
""",
    "stencil_max_min": """\
func.func @stencil(%A: memref<64x64xf64>, %B: memref<64x64xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %d = memref.dim %A, %c0 : memref<64x64xf64>
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 63 {
      affine.for %j = max affine_map<(d0)[s0] -> (1, d0 - s0)>(%i)[%n] to min affine_map<(d0)[s0] -> (63, d0 + 5, s0)>(%i)[%d] {
        %a = affine.load %A[%i - 1, %j] : memref<64x64xf64>
        %b = affine.load %A[%i + 1, %j] : memref<64x64xf64>
        %s = arith.addf %a, %b : f64
        affine.store %s, %B[%i, %j] : memref<64x64xf64>
      }
    }
    affine.if affine_set<(d0) : (d0 - 2 == 0)>(%t) {
      %a0 = affine.load %A[0, 0] : memref<64x64xf64>
      affine.store %a0, %B[0, 0] : memref<64x64xf64>
    }
  }
  return
}
""",
    "divisions": """\
func.func @divs(%A: memref<100xf32>, %B: memref<10x10xf32>, %n: index) {
  affine.for %i = 0 to 50 {
    affine.for %j = affine_map<(d0) -> (d0 ceildiv 3)>(%i) to affine_map<(d0)[s0] -> ((d0 + s0) floordiv 2)>(%i)[%n] step 2 {
      %v = affine.load %A[(%i * 2 - %j) mod 7 + %j ceildiv 5] : memref<100xf32>
      affine.store %v, %A[(%j - 10) floordiv 4 + 20] : memref<100xf32>
      affine.store %v, %B[%j floordiv 2, %i mod 3] : memref<10x10xf32>
    }
    affine.if affine_set<(d0)[s0] : (d0 - 3 >= 0, s0 - d0 - 1 >= 0)>(%i)[%n] {
      %w = affine.load %A[%i] : memref<100xf32>
      affine.store %w, %A[%i + 1] : memref<100xf32>
    } else {
      %w = affine.load %A[0] : memref<100xf32>
      affine.store %w, %A[1] : memref<100xf32>
    }
  }
  return
}
""",
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_lower_affine_output_raises_back_to_the_original(name):
    source = LOWERED[name]
    lowered = lower_affine(source)
    assert "scf.for" in lowered and "memref.load" in lowered and "affine." not in lowered
    assert raised(lowered) == mlir_opt(source)


def _random_nest(rng: random.Random) -> str:
    """A random affine nest: bounds that are constants, symbols, outer IVs and min/max of them,
    steps, an affine.if, subscripts with mod/floordiv by constants."""
    def subscript(ivs):
        parts = []
        for v in ivs:
            c = rng.choice([0, 0, 1, 1, 2, -1, 3])
            parts.append(v if c == 1 else f"{v} * {c}") if c else None
        if rng.random() < 0.3:
            parts.append("symbol(%n)")
        e = " + ".join(parts) or "0"
        k = rng.randint(-2, 3)
        if k:
            e = f"{e} + {k}"
        if ivs and rng.random() < 0.25:
            e = f"({e}) {rng.choice(['floordiv', 'ceildiv'])} {rng.randint(2, 4)}"
        return e

    lines, ivs, ind = [], [], "  "
    for d in range(rng.randint(1, 3)):
        lb = "0" if not ivs or rng.random() < 0.5 else f"affine_map<(d0) -> (d0)>({ivs[-1]})"
        ub = rng.choice(["10", "%n"] + ([f"min affine_map<(d0)[s0] -> (d0 + 4, s0)>({ivs[-1]})"
                                         f"[%n]"] if ivs else []))
        step = rng.choice([1, 1, 2, 3])
        lines.append(f"{ind}affine.for %i{d} = {lb} to {ub}" + (f" step {step}" if step > 1
                                                                else "") + " {")
        ivs.append(f"%i{d}")
        ind += "  "
    if rng.random() < 0.5:
        if rng.random() < 0.5:
            cond = f"affine_set<(d0)[s0] : (d0 - {rng.randint(0, 5)} >= 0, s0 - d0 - 1 >= 0)>" \
                   f"({ivs[-1]})[%n]"
        else:
            cond = f"affine_set<(d0) : (d0 - {rng.randint(0, 5)} == 0)>({ivs[-1]})"
        lines.append(f"{ind}affine.if {cond} {{")
        ind += "  "
    lines.append(f"{ind}%v = affine.load %A[({subscript(ivs)}) mod 12] : memref<12xf64>")
    lines.append(f"{ind}affine.store %v, %B[({subscript(ivs)}) mod 12, ({subscript(ivs)}) mod 5]"
                 f" : memref<12x5xf64>")
    while len(ind) > 2:
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    return ("func.func @f(%A: memref<12xf64>, %B: memref<12x5xf64>, %n: index) {\n" +
            "\n".join(lines) + "\n  return\n}\n")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 2 ** 32 - 1))
def test_random_affine_nests_survive_lowering_and_raising(seed):
    source = _random_nest(random.Random(seed))
    assert raised(lower_affine(source)) == mlir_opt(source)


# ---------------------------------------------------------------------------------------------
# memref accesses: upstream's own pass, exactly


MEMREF_CASES = [
    """\
func.func @f(%A: memref<100x100xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to %n {
      %a = arith.addi %i, %c1 : index
      %b = arith.muli %j, %c2 : index
      %c = arith.addi %b, %n : index
      %v = memref.load %A[%a, %c] : memref<100x100xf32>
      %w = memref.load %A[%i, %n] : memref<100x100xf32>
      %k = affine.apply affine_map<(d0) -> (d0 * 3)>(%i)
      memref.store %v, %A[%k, %c0] : memref<100x100xf32>
      %x = arith.muli %i, %j : index
      memref.store %v, %A[%x, %c0] : memref<100x100xf32>
    }
  }
  %v = memref.load %A[%c0, %n] : memref<100x100xf32>
  return
}
""", """\
func.func @f(%A: memref<100x100xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to %n {
      %a = arith.addi %c1, %i : index
      %b = arith.muli %c2, %j : index
      %b2 = arith.muli %b, %c2 : index
      %c = arith.addi %n, %b2 : index
      %d = arith.addi %c, %c1 : index
      %v = memref.load %A[%a, %d] : memref<100x100xf32>
      %y = arith.muli %n, %n : index
      memref.store %v, %A[%y, %i] : memref<100x100xf32>
      %z = arith.addi %i, %i : index
      %z2 = arith.subi %z, %j : index
      memref.store %v, %A[%z, %z2] : memref<100x100xf32>
    }
  }
  %c10 = arith.constant 10 : index
  scf.for %s = %c0 to %c10 step %c1 {
    %u = memref.load %A[%s, %c1] : memref<100x100xf32>
    memref.store %u, %A[%c1, %n] : memref<100x100xf32>
  }
  return
}
"""]


@pytest.mark.parametrize("k", range(len(MEMREF_CASES)))
def test_memref_raising_is_upstream_affine_raise_from_memref(k):
    source = MEMREF_CASES[k]
    module = parse(source)
    raise_memref_accesses(module)
    assert print_module(module) == mlir_opt(source, "--affine-raise-from-memref")


# ---------------------------------------------------------------------------------------------
# what stays scf, and why


def test_what_is_not_raised_stays_as_written_with_remarks():
    source = """\
func.func @f(%A: memref<16xf64>, %I: memref<4xindex>, %n: index, %k: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c10 = arith.constant 10 : i32
  %c1_i32 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f64
  scf.for %i = %c0 to %c16 step %n {
    memref.store %z, %A[%i] : memref<16xf64>
  }
  scf.for unsigned %i = %c0 to %c16 step %c1 {
    memref.store %z, %A[%i] : memref<16xf64>
  }
  scf.for %i = %k to %c10 step %c1_i32 : i32 {
  }
  scf.for %o = %c0 to %c1 step %c1 {
    %ub = memref.load %I[%o] : memref<4xindex>
    scf.for %i = %c0 to %ub step %c1 {
      %sq = arith.muli %i, %i : index
      memref.store %z, %A[%sq] : memref<16xf64>
      %u = arith.cmpi ult, %i, %n : index
      scf.if %u {
        memref.store %z, %A[%i] : memref<16xf64>
      }
    }
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %a = arith.cmpi slt, %i, %n : index
    %b = arith.cmpi sgt, %i, %c1 : index
    %o = arith.ori %a, %b : i1
    scf.if %o {
      memref.store %z, %A[%i] : memref<16xf64>
    }
    %sq = arith.muli %i, %i : index
    memref.store %z, %A[%sq] : memref<16xf64>
  }
  return
}
"""
    remarks: list[str] = []
    out = raised(source, remarks)
    assert remarks == [
        "8:3: raise-scf-to-affine: 'scf.for' not raised: its step is not a positive constant",
        "11:3: raise-scf-to-affine: 'scf.for' not raised: it compares unsigned",
        "14:3: raise-scf-to-affine: 'scf.for' not raised: its induction variable is 'i32', not "
        "index",
        "18:5: raise-scf-to-affine: 'scf.for' not raised: its upper bound is not an affine "
        "function of dims and symbols",
        "22:7: raise-scf-to-affine: 'scf.if' not raised: its condition is not a conjunction of "
        "affine comparisons",
        "31:5: raise-scf-to-affine: 'scf.if' not raised: its condition is not a conjunction of "
        "affine comparisons",
    ]
    # the loops around are raised (a loaded bound defined at the function's top level would
    # be a valid symbol, one loaded inside a loop is not); i * i is not affine and stays a
    # memref.store, an access under the scf.if is raised: its subscript is an affine IV
    assert out.count("scf.for") == 4 and out.count("affine.for") == 2
    assert "%0 = affine.load %arg1[%arg4] : memref<4xindex>" in out
    assert "scf.for %arg5 = %c0 to %0 step %c1 {" in out
    assert "memref.store %cst, %arg0[%3] : memref<16xf64>" in out
    assert out.count("affine.store") == 1 and out.count("memref.store") == 5
    assert mlir_opt(out) == out


def test_raising_twice_changes_nothing():
    once = raised(GOLDEN[1][0])
    assert raised(once) == once


# ---------------------------------------------------------------------------------------------
# raised programs compute what the scf programs compute


RUN = """\
func.func @f(%A: memref<13x11xf64>, %B: memref<13x11xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c1 to %c13 step %c2 iter_args(%acc = %z) -> (f64) {
    %lo = arith.subi %i, %c1 : index
    %hi = arith.minsi %n, %c11 : index
    %t = scf.for %j = %lo to %hi step %c1 iter_args(%a2 = %acc) -> (f64) {
      %jm = arith.subi %j, %lo : index
      %v = memref.load %A[%i, %jm] : memref<13x11xf64>
      %even = arith.cmpi ne, %jm, %c2 : index
      %w = scf.if %even -> (f64) {
        %d = arith.mulf %v, %v : f64
        scf.yield %d : f64
      } else {
        scf.yield %v : f64
      }
      memref.store %w, %B[%i, %jm] : memref<13x11xf64>
      %s = arith.addf %a2, %w : f64
      scf.yield %s : f64
    }
    scf.yield %t : f64
  }
  return %r : f64
}
"""


@pytest.mark.parametrize("n", [0, 5, 11, 30])
def test_raised_program_computes_what_the_scf_program_computes(n):
    text = raised(RUN)
    assert "scf." not in text and "memref.load" not in text and "memref.store" not in text
    rng = np.random.default_rng(n)
    A = rng.standard_normal((13, 11))
    results = []
    for source in (RUN, text):
        B = np.zeros((13, 11))
        results.append((polyopt.compile(source)["f"](A, B, n), B))
    (r0, b0), (r1, b1) = results
    assert r0 == pytest.approx(r1) and np.array_equal(b0, b1)
    # and numpy
    expected = np.zeros((13, 11))
    total = 0.0
    for i in range(1, 13, 2):
        for j in range(i - 1, min(n, 11)):
            v = A[i, j - (i - 1)]
            w = v if j - (i - 1) == 2 else v * v
            expected[i, j - (i - 1)] = w
            total += w
    assert np.array_equal(b0, expected) and r0 == pytest.approx(total)


def test_raise_pass_in_the_pipeline_and_cli(tmp_path, capsys):
    from polyopt.cli import main
    path = tmp_path / "g.mlir"
    path.write_text(GOLDEN[0][0])
    assert main(["opt", "--raise-scf-to-affine", str(path)]) == 0
    assert capsys.readouterr().out == GOLDEN[0][1]
    # without the flag the program prints as parsed
    assert main(["opt", str(path)]) == 0
    assert "scf.for" in capsys.readouterr().out
    module = polyopt.parse(textwrap.dedent(GOLDEN[1][0]))
    from polyopt.pipeline import PipelineOptions, run_passes
    run_passes(module, PipelineOptions(hopt=True))   # --hopt raises first
    assert print_module(module) == GOLDEN[1][1]


def test_expressions_too_deep_to_analyse_stay_as_written():
    # 3000 chained arith.addi inside a loop: the subscript is affine, but analysing it would
    # exceed Python's recursion limit; it is left a memref.load instead of an internal error
    chain = "\n".join(f"    %v{k} = arith.addi %v{k - 1}, %c1 : index" for k in range(1, 3000))
    text = f"""\
func.func @f(%A: memref<10xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {{
    %v0 = arith.addi %n, %i : index
{chain}
    %x = memref.load %A[%v2999] : memref<10xf32>
  }}
  return
}}
"""
    out = raised(text)
    assert "affine.for %arg2 = 0 to %arg1 {" in out and "memref.load %arg0[%2999]" in out
