"""Memref normalization (polyopt.memref_layout.normalize, MLIR's -normalize-memrefs): golden IR
for the paper's section 2.9 buffer, permuted and strided arguments across calls, memref.load/
store and casts; memrefs left alone (with a remark) when something cannot follow; agreement
with mlir-opt-22's own normalization and acceptance of our output; the same results before and
after on executed programs; and a property check that every access still reaches the same flat
offset."""

from __future__ import annotations

import itertools
import random
import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.affine_expr import parse_affine_map
from polyopt.affine.types import MemRefType, f64
from polyopt.affine.verifier import verify
from polyopt.memref_layout.layout import linearize
from polyopt.memref_layout.normalize import normalize_memref_type, normalize_memrefs
from polyopt.pipeline import machine_model
from polyopt.schedules.expand import expand_high_level_ops
from upstream_mlir import assert_mlir_opt_prints_back, mlir_opt

TILED = "affine_map<(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>"


def normalized(text: str, expected_count=None):
    """(normalized module, remarks)."""
    module = polyopt.parse(textwrap.dedent(text), "n.mlir")
    remarks = []
    count = normalize_memrefs(module, remark=lambda loc, msg: remarks.append((str(loc), msg)))
    verify(module)
    if expected_count is not None:
        assert count == expected_count
    return module, remarks


# ---------------------------------------------------------------------------------------------
# normalize_memref_type


@pytest.mark.parametrize("before, after", [
    (f"memref<64x256xf64, {TILED}>", "memref<16x256x4xf64>"),  # the paper's section 2.9 buffer
    (f"memref<10x7xf64, {TILED}>", "memref<3x7x4xf64>"),       # partial last tile: padded
    ("memref<30x20xf64, affine_map<(d0, d1) -> (d1, d0)>>", "memref<20x30xf64>"),
    ("memref<64x256xf64, affine_map<(d0, d1) -> (d0, d1 floordiv 6, d1 mod 6)>>",
     "memref<64x43x6xf64>"),
    ("memref<64x256xf64, affine_map<(d0, d1) -> (d0 * 258 + d1)>>", "memref<16510xf64>"),
    ("memref<3x4xf64, strided<[8, 1], offset: 5>>", "memref<25xf64>"),
    ("memref<30x40xf32, strided<[80, 1]>, 3>", "memref<2360xf32, 3>"),  # memory space kept
    ("memref<4x4xf64, strided<[4, 1]>>", "memref<4x4xf64>"),  # identity strides
    # cannot be normalized: returned unchanged, as MLIR's normalizeMemRefType does
    (f"memref<?x8xf64, {TILED}>", None),
    ("memref<4x4xf64, strided<[?, 1]>>", None),
])
def test_normalize_memref_type(before, after):
    module = polyopt.parse(f"func.func private @f({before})\n")
    t = module.functions[0].function_type.inputs[0]
    got = normalize_memref_type(t)
    assert str(got) == (after or before)
    if after is not None:
        assert got.layout is None and linearize(got).num_results == 1


def test_layout_symbols_are_not_normalized():
    # (the parser refuses such types; they can still be built in code)
    t = MemRefType((4, 4), f64, parse_affine_map("(d0, d1)[s0] -> (d0 * s0 + d1)"))
    assert normalize_memref_type(t) is t


# ---------------------------------------------------------------------------------------------
# golden IR


PAPER_2_9 = f"""
#tiled = {TILED}
func.func @pack(%A: memref<64x256xf64>, %out: memref<64x256xf64>) {{
  %buf = memref.alloc() {{alignment = 64 : i64}} : memref<64x256xf64, #tiled>
  affine.for %i = 0 to 64 {{
    affine.for %k = 0 to 256 {{
      %v = affine.load %A[%i, %k] : memref<64x256xf64>
      affine.store %v, %buf[%i, %k] : memref<64x256xf64, #tiled>
    }}
  }}
  affine.for %i = 0 to 16 {{
    affine.for %k = 0 to 256 {{
      affine.for %ii = 0 to 4 {{
        %w = affine.load %buf[%i * 4 + %ii, %k] : memref<64x256xf64, #tiled>
        affine.store %w, %out[%i * 4 + %ii, %k] : memref<64x256xf64>
      }}
    }}
  }}
  memref.dealloc %buf : memref<64x256xf64, #tiled>
  return
}}
"""

# %buf[%i, %k] becomes %buf[%i floordiv 4, %k, %i mod 4]; with %ii in [0, 4) the micro-panel
# access %buf[%i * 4 + %ii, %k] folds to %buf[%i, %k, %ii] (no division left)
PAPER_2_9_NORMALIZED = """\
module {
  func.func @pack(%arg0: memref<64x256xf64>, %arg1: memref<64x256xf64>) {
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x256x4xf64>
    affine.for %arg2 = 0 to 64 {
      affine.for %arg3 = 0 to 256 {
        %0 = affine.load %arg0[%arg2, %arg3] : memref<64x256xf64>
        affine.store %0, %alloc[%arg2 floordiv 4, %arg3, %arg2 mod 4] : memref<16x256x4xf64>
      }
    }
    affine.for %arg2 = 0 to 16 {
      affine.for %arg3 = 0 to 256 {
        affine.for %arg4 = 0 to 4 {
          %0 = affine.load %alloc[%arg2, %arg3, %arg4] : memref<16x256x4xf64>
          affine.store %0, %arg1[%arg2 * 4 + %arg4, %arg3] : memref<64x256xf64>
        }
      }
    }
    memref.dealloc %alloc : memref<16x256x4xf64>
    return
  }
}
"""


def test_golden_paper_section_2_9_buffer():
    module, remarks = normalized(PAPER_2_9, expected_count=1)
    assert str(module) == PAPER_2_9_NORMALIZED and remarks == []
    # upstream accepts it, prints it back identically, and normalizes the input to the same type
    assert_mlir_opt_prints_back(str(module))
    assert "memref.alloc() {alignment = 64 : i64} : memref<16x256x4xf64>" in \
        mlir_opt(PAPER_2_9, "--allow-unregistered-dialect", "--normalize-memrefs")


ARGS_AND_CALLS = """
#T = affine_map<(d0, d1) -> (d1, d0)>
func.func @scale(%A: memref<30x20xf64, #T>, %C: memref<3x4xf64, strided<[8, 1], offset: 5>>, %n: index) {
  affine.for %i = 0 to 30 {
    affine.for %j = 0 to 20 {
      %v = affine.load %A[%i, %j] : memref<30x20xf64, #T>
      %w = arith.addf %v, %v : f64
      affine.store %w, %A[%i, %j] : memref<30x20xf64, #T>
    }
  }
  %c1 = arith.constant 1 : index
  %x = memref.load %C[%c1, %n] : memref<3x4xf64, strided<[8, 1], offset: 5>>
  memref.store %x, %C[%n, %n] : memref<3x4xf64, strided<[8, 1], offset: 5>>
  %u = memref.cast %C : memref<3x4xf64, strided<[8, 1], offset: 5>> to memref<*xf64>
  %s = memref.cast %C : memref<3x4xf64, strided<[8, 1], offset: 5>> to memref<3x4xf64, affine_map<(d0, d1) -> (d0 * 8 + d1 + 5)>>
  %y = affine.load %s[2, 3] : memref<3x4xf64, affine_map<(d0, d1) -> (d0 * 8 + d1 + 5)>>
  affine.store %y, %s[0, 0] : memref<3x4xf64, affine_map<(d0, d1) -> (d0 * 8 + d1 + 5)>>
  return
}
func.func @caller(%A: memref<30x20xf64, #T>, %n: index) {
  %C = memref.alloca() : memref<3x4xf64, strided<[8, 1], offset: 5>>
  call @scale(%A, %C, %n) : (memref<30x20xf64, #T>, memref<3x4xf64, strided<[8, 1], offset: 5>>, index) -> ()
  return
}
"""

# transposed: subscripts swapped; strided with offset: 1-D of 5 + 2 * 8 + 3 + 1 elements;
# memref.load/store subscripts through affine.apply; the cast to an equivalent layout folds
# away, the cast to memref<*xf64> stays; the call site and both signatures change together
ARGS_AND_CALLS_NORMALIZED = """\
#map = affine_map<(d0, d1) -> (d0 * 8 + d1 + 5)>
module {
  func.func @scale(%arg0: memref<20x30xf64>, %arg1: memref<25xf64>, %arg2: index) {
    affine.for %arg3 = 0 to 30 {
      affine.for %arg4 = 0 to 20 {
        %4 = affine.load %arg0[%arg4, %arg3] : memref<20x30xf64>
        %5 = arith.addf %4, %4 : f64
        affine.store %5, %arg0[%arg4, %arg3] : memref<20x30xf64>
      }
    }
    %c1 = arith.constant 1 : index
    %0 = affine.apply #map(%c1, %arg2)
    %1 = memref.load %arg1[%0] : memref<25xf64>
    %2 = affine.apply #map(%arg2, %arg2)
    memref.store %1, %arg1[%2] : memref<25xf64>
    %cast = memref.cast %arg1 : memref<25xf64> to memref<*xf64>
    %3 = affine.load %arg1[24] : memref<25xf64>
    affine.store %3, %arg1[5] : memref<25xf64>
    return
  }
  func.func @caller(%arg0: memref<20x30xf64>, %arg1: index) {
    %alloca = memref.alloca() : memref<25xf64>
    call @scale(%arg0, %alloca, %arg1) : (memref<20x30xf64>, memref<25xf64>, index) -> ()
    return
  }
}
"""


def test_golden_arguments_calls_loads_and_casts():
    # 4 memrefs: @scale's two arguments, @caller's argument and its alloca
    module, remarks = normalized(ARGS_AND_CALLS, expected_count=4)
    assert str(module) == ARGS_AND_CALLS_NORMALIZED and remarks == []
    mlir_opt(str(module), "--allow-unregistered-dialect")


DECLARATION_AND_RESULTS = f"""
#tiled = {TILED}
func.func private @ext(memref<8x8xf64, #tiled>)
func.func @make() -> memref<8x8xf64, #tiled> {{
  %m = memref.alloc() : memref<8x8xf64, #tiled>
  call @ext(%m) : (memref<8x8xf64, #tiled>) -> ()
  return %m : memref<8x8xf64, #tiled>
}}
func.func @use() {{
  %m = call @make() : () -> memref<8x8xf64, #tiled>
  %c = arith.constant 1.0 : f64
  affine.store %c, %m[5, 3] : memref<8x8xf64, #tiled>
  memref.dealloc %m : memref<8x8xf64, #tiled>
  return
}}
"""


def test_function_results_declarations_and_call_results():
    module, remarks = normalized(DECLARATION_AND_RESULTS, expected_count=2)
    text = str(module)
    assert "#tiled" not in text and "floordiv" not in text and remarks == []
    assert "func.func private @ext(memref<2x8x4xf64>)" in text
    assert "func.func @make() -> memref<2x8x4xf64>" in text
    assert "%0 = call @make() : () -> memref<2x8x4xf64>" in text
    assert "affine.store %cst, %0[1, 3, 1] : memref<2x8x4xf64>" in text
    mlir_opt(text, "--allow-unregistered-dialect")


# ---------------------------------------------------------------------------------------------
# what cannot be normalized is left alone, with its whole group, and reported


@pytest.mark.parametrize("text, reason, line", [
    # an op polyopt cannot rewrite; the caller's alloc must keep the callee's type too
    (f"""
     #tiled = {TILED}
     func.func @f(%m: memref<8x8xf64, #tiled>) {{
       "foo.bar"(%m) : (memref<8x8xf64, #tiled>) -> ()
       return
     }}
     func.func @g() {{
       %m = memref.alloc() : memref<8x8xf64, #tiled>
       call @f(%m) : (memref<8x8xf64, #tiled>) -> ()
       return
     }}
     """, "it is used by 'foo.bar', which polyopt cannot rewrite", 4),
    # a hop.matmul not expanded yet (normalization runs after --hopt)
    ("""
     func.func @mm(%A: memref<8x4xf64, affine_map<(d0, d1) -> (d1, d0)>>, %B: memref<4x8xf64>, %C: memref<8x8xf64>) {
       hop.matmul %A, %B, %C : (memref<8x4xf64, affine_map<(d0, d1) -> (d1, d0)>>, memref<4x8xf64>, memref<8x8xf64>)
       return
     }
     """, "it is used by 'hop.matmul'", 3),
    (f"""
     func.func @dyn(%m: memref<?x8xf64, {TILED}>) {{
       return
     }}
     """, "dynamic memref dimensions ('?') are not supported yet", 2),
    ("""
     func.func @cast(%m: memref<4x4xf64, strided<[8, 1]>>) {
       %c = memref.cast %m : memref<4x4xf64, strided<[8, 1]>> to memref<?x4xf64, strided<[8, 1]>>
       return
     }
     """, "dynamic memref dimensions ('?') are not supported yet (nor 2 memref value(s) tied "
          "to it by calls, returns or casts)", 3),
])
def test_unnormalizable_memrefs_are_left_unchanged_and_reported(text, reason, line):
    text = textwrap.dedent(text)
    before = str(polyopt.parse(text))
    module, remarks = normalized(text, expected_count=0)
    assert str(module) == before
    assert len(remarks) == 1, remarks
    loc, msg = remarks[0]
    assert loc.startswith(f"n.mlir:{line}:"), remarks
    assert "is not normalized: " + reason in msg, msg


def test_only_the_blocked_group_stays():
    """Two independent buffers: the one used by an unknown op stays, the other is normalized."""
    module, remarks = normalized(f"""
        #tiled = {TILED}
        func.func @f() {{
          %a = memref.alloc() : memref<8x8xf64, #tiled>
          %b = memref.alloc() : memref<8x8xf64, #tiled>
          "foo.bar"(%a) : (memref<8x8xf64, #tiled>) -> ()
          %c = affine.load %b[7, 7] : memref<8x8xf64, #tiled>
          return
        }}
        """, expected_count=1)
    text = str(module)
    assert "%alloc = memref.alloc() : memref<8x8xf64, #map>" in text
    assert "affine.load %alloc_0[1, 7, 3] : memref<2x8x4xf64>" in text
    assert len(remarks) == 1 and "'foo.bar'" in remarks[0][1]


def test_rejects_non_modules():
    module = polyopt.parse("func.func @f() {\n  return\n}\n")
    with pytest.raises(ValueError, match="expects a builtin.module"):
        normalize_memrefs(module.functions[0])


# ---------------------------------------------------------------------------------------------
# upstream: same normalized types as mlir-opt-22 --normalize-memrefs, and it accepts ours


UPSTREAM_CASES = [
    PAPER_2_9,
    f"""
    #tiled = {TILED}
    #T = affine_map<(d0, d1) -> (d1, d0)>
    #S = affine_map<(d0, d1) -> (d0 * 258 + d1)>
    func.func @f(%A: memref<30x20xf64, #T>, %B: memref<64x256xf64, #S>, %C: memref<3x4xf64, strided<[8, 1], offset: 5>>) {{
      %buf = memref.alloc() : memref<64x256xf64, #tiled>
      %small = memref.alloca() : memref<10x7xf32, #tiled>
      affine.for %i = 0 to 64 {{
        affine.for %k = 0 to 256 {{
          %v = affine.load %B[%i, %k] : memref<64x256xf64, #S>
          affine.store %v, %buf[%i, %k] : memref<64x256xf64, #tiled>
          %w = affine.load %A[%i mod 30, %k mod 20] : memref<30x20xf64, #T>
          %x = affine.vector_load %buf[%i, %k] : memref<64x256xf64, #tiled>, vector<4xf64>
        }}
      }}
      %z = affine.load %C[1, 2] : memref<3x4xf64, strided<[8, 1], offset: 5>>
      memref.dealloc %buf : memref<64x256xf64, #tiled>
      return
    }}
    func.func @g(%A: memref<30x20xf64, #T>, %B: memref<64x256xf64, #S>, %C: memref<3x4xf64, strided<[8, 1], offset: 5>>) {{
      call @f(%A, %B, %C) : (memref<30x20xf64, #T>, memref<64x256xf64, #S>, memref<3x4xf64, strided<[8, 1], offset: 5>>) -> ()
      return
    }}
    func.func private @ext(memref<8x8xf64, #tiled>)
    func.func @load(%A: memref<30x20xf64, #T>, %i: index) -> f64 {{
      %v = memref.load %A[%i, %i] : memref<30x20xf64, #T>
      return %v : f64
    }}
    """,
]


def memref_types(module) -> list[str]:
    """Every memref type in signatures and op results, in order."""
    out = []
    for f in module.functions:
        ft = f.function_type
        out += [str(t) for t in (*ft.inputs, *ft.results) if isinstance(t, MemRefType)]
        for op in f.walk():
            out += [str(r.type) for r in op.results if isinstance(r.type, MemRefType)]
    return out


@pytest.mark.parametrize("case", range(len(UPSTREAM_CASES)))
def test_same_types_as_upstream_normalization(case):
    text = textwrap.dedent(UPSTREAM_CASES[case])
    ours, remarks = normalized(text)
    theirs = polyopt.parse(mlir_opt(text, "--allow-unregistered-dialect", "--normalize-memrefs"))
    assert remarks == []
    assert memref_types(ours) == memref_types(theirs)
    assert all("affine_map" not in t and "strided" not in t for t in memref_types(ours))
    # mlir-opt accepts what we print, and prints it back the way we do
    assert_mlir_opt_prints_back(str(ours))


# ---------------------------------------------------------------------------------------------
# same results before and after


PROGRAM = f"""
#tiled = {TILED}
#T = affine_map<(d0, d1) -> (d1, d0)>
func.func @pack_twice(%A: memref<64x256xf64>, %out: memref<64x256xf64, #tiled>) {{
  %buf = memref.alloc() {{alignment = 64 : i64}} : memref<64x256xf64, #tiled>
  affine.for %i = 0 to 64 {{
    affine.for %k = 0 to 256 {{
      %v = affine.load %A[%i, %k] : memref<64x256xf64>
      %d = arith.addf %v, %v : f64
      affine.store %d, %buf[%i, %k] : memref<64x256xf64, #tiled>
    }}
  }}
  affine.for %i = 0 to 16 {{
    affine.for %k = 0 to 256 {{
      affine.for %ii = 0 to 4 {{
        %w = affine.load %buf[%i * 4 + %ii, %k] : memref<64x256xf64, #tiled>
        affine.store %w, %out[%i * 4 + %ii, %k] : memref<64x256xf64, #tiled>
      }}
    }}
  }}
  memref.dealloc %buf : memref<64x256xf64, #tiled>
  return
}}
func.func @vec(%A: memref<8x16xf64, strided<[20, 1], offset: 2>>, %B: memref<8x16xf64>) {{
  affine.for %i = 0 to 8 {{
    affine.for %j = 0 to 4 {{
      %v = affine.vector_load %A[%i, %j * 4] : memref<8x16xf64, strided<[20, 1], offset: 2>>, vector<4xf64>
      %w = arith.addf %v, %v : vector<4xf64>
      affine.vector_store %w, %B[%i, %j * 4] : memref<8x16xf64>, vector<4xf64>
      affine.vector_store %w, %A[%i, %j * 4] : memref<8x16xf64, strided<[20, 1], offset: 2>>, vector<4xf64>
    }}
  }}
  return
}}
func.func @partial(%A: memref<10x7xf64>, %P: memref<10x7xf64, #tiled>, %B: memref<10x7xf64>) {{
  %t = memref.alloca() : memref<10x7xf64, #tiled>
  affine.for %i = 0 to 10 {{
    affine.for %j = 0 to 7 {{
      %v = affine.load %A[%i, %j] : memref<10x7xf64>
      affine.store %v, %P[%i, %j] : memref<10x7xf64, #tiled>
      affine.store %v, %t[%i, %j] : memref<10x7xf64, #tiled>
    }}
  }}
  affine.for %i = 0 to 10 {{
    affine.for %j = 0 to 7 {{
      %v = affine.load %t[9 - %i, %j] : memref<10x7xf64, #tiled>
      affine.store %v, %B[%i, %j] : memref<10x7xf64>
    }}
  }}
  return
}}
func.func @scale(%A: memref<30x20xf64, #T>, %C: memref<3x4xf64, strided<[8, 1], offset: 5>>, %n: index) {{
  affine.for %i = 0 to 30 {{
    affine.for %j = 0 to 20 {{
      %v = affine.load %A[%i, %j] : memref<30x20xf64, #T>
      %w = affine.load %A[29 - %i, %j] : memref<30x20xf64, #T>
      %s = arith.mulf %v, %w : f64
      affine.store %s, %A[%i, %j] : memref<30x20xf64, #T>
    }}
  }}
  %c1 = arith.constant 1 : index
  %x = memref.load %C[%c1, %n] : memref<3x4xf64, strided<[8, 1], offset: 5>>
  memref.store %x, %C[%n, %n] : memref<3x4xf64, strided<[8, 1], offset: 5>>
  return
}}
func.func @mm(%A: memref<37x41xf64, #T>, %B: memref<41x29xf64, strided<[32, 1], offset: 3>>, %C: memref<37x29xf64, strided<[58, 1]>>) {{
  hop.matmul %A, %B, %C {{M_C = 16 : i32, K_C = 8 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 2 : i32, alpha = 2.0 : f64, beta = 0.5 : f64}} : (memref<37x41xf64, #T>, memref<41x29xf64, strided<[32, 1], offset: 3>>, memref<37x29xf64, strided<[58, 1]>>)
  return
}}
"""


def run_program(module):
    """Run every function of PROGRAM on fixed inputs; returns all output buffers."""
    compiled = polyopt.compile(module)
    rng = np.random.default_rng(9)
    out = {}
    A = rng.random((64, 256))
    o = np.zeros((16, 256, 4))  # the physical buffer: micro-panels of 4 rows
    compiled["pack_twice"](A, o)
    out["pack_twice"] = (o, 2 * A.reshape(16, 4, 256).transpose(0, 2, 1))
    buf = rng.random((8, 20))[:, :].reshape(-1)[:2 + 7 * 20 + 16].copy()
    buf0 = buf.copy()
    B = np.zeros((8, 16))
    compiled["vec"](buf, B)
    view = lambda b: np.lib.stride_tricks.as_strided(b[2:], (8, 16), (160, 8))  # noqa: E731
    ref = buf0.copy()
    view(ref)[...] *= 2
    out["vec"] = (np.concatenate([B.ravel(), buf]), np.concatenate([2 * view(buf0).ravel(), ref]))
    A = rng.random((10, 7))
    P = np.full((3, 7, 4), -1.0)
    B = np.zeros((10, 7))
    compiled["partial"](A, P, B)
    ref = np.full((3, 7, 4), -1.0)
    for i, j in itertools.product(range(10), range(7)):
        ref[i // 4, j, i % 4] = A[i, j]
    out["partial"] = (np.concatenate([P.ravel(), B.ravel()]),
                      np.concatenate([ref.ravel(), A[::-1].ravel()]))
    At = rng.random((20, 30))  # the physical buffer of the transposed 30x20 A
    C = rng.random(25)
    A0, C0 = At.T.copy(), C.copy()
    compiled["scale"](At, C, 2)
    ref_c = C0.copy()
    ref_c[5 + 2 * 8 + 2] = C0[5 + 8 + 2]
    ref_a = np.array([[A0[i, j] * A0[29 - i, j] if i <= 14 else np.nan for j in range(20)]
                      for i in range(30)])
    got_a = At.T.copy()
    got_a[15:] = np.nan  # rows past the middle read rows already overwritten: compare halves
    out["scale"] = (np.concatenate([got_a.ravel(), C]), np.concatenate([ref_a.ravel(), ref_c]))
    A = rng.random((41, 37))
    Bb = rng.random(3 + 40 * 32 + 29)
    Cb = rng.random((37, 58))
    C0 = Cb.copy()
    # the exact physical buffer (36 * 58 + 29 elements), a view into the 37x58 array: the one
    # form both the strided argument and its normalized memref<2117xf64> take
    compiled["mm"](A, Bb, Cb.reshape(-1)[:36 * 58 + 29])
    Bl = np.lib.stride_tricks.as_strided(Bb[3:], (41, 29), (32 * 8, 8))
    ref = C0.copy()
    ref[:, :29] = 2 * A.T @ Bl + 0.5 * C0[:, :29]
    out["mm"] = (Cb, ref)
    return out


def test_programs_compute_the_same_before_and_after():
    module = polyopt.parse(PROGRAM, "program.mlir")
    expand_high_level_ops(module, tiled=True, machine=machine_model())
    before = run_program(module)
    for name, (got, ref) in before.items():
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, err_msg=name)
    remarks = []
    assert normalize_memrefs(module, remark=lambda loc, m: remarks.append(m)) == 10
    assert remarks == []
    verify(module)
    text = str(module)
    assert "affine_map<(d0, d1) -> (d0 floordiv 4" not in text and "strided" not in text
    assert "memref.alloc() {alignment = 64 : i64} : memref<16x256x4xf64>" in text
    assert "%arg3: memref<3x7x4xf64>" not in text  # (argument names are renumbered)
    assert "func.func @partial(%arg0: memref<10x7xf64>, %arg1: memref<3x7x4xf64>" in text
    mlir_opt(text, "--allow-unregistered-dialect")
    after = run_program(module)
    for name in before:
        np.testing.assert_array_equal(after[name][0], before[name][0], err_msg=name)


# ---------------------------------------------------------------------------------------------
# property: after normalization every access reaches the same flat offset


def test_accesses_keep_their_flat_offsets():
    rng = random.Random(12)
    layouts = ["(d0, d1) -> (d0 floordiv {a}, d1, d0 mod {a})",
               "(d0, d1) -> (d1 floordiv {a}, d0, d1 mod {a})",
               "(d0, d1) -> (d0 floordiv {a}, d1 floordiv {b}, d0 mod {a}, d1 mod {b})",
               "(d0, d1) -> (d1, d0)", "(d0, d1) -> (d0, d1 floordiv {a}, d1 mod {a})",
               "(d0, d1) -> (d0 * {w} + d1 + {a})", "(d0, d1) -> (d1 * {h} + d0)"]
    accesses = ["%i, %j", "%i * 2 + %jj floordiv 3, %j", "%ii, %jj", "%i * 4 + %k, %j",
                "%n - 1 - %i, %j"]
    checked = 0
    for trial in range(40):
        n, m = rng.randint(1, 9), rng.randint(1, 9)
        a, b = rng.randint(1, 5), rng.randint(1, 5)
        text = rng.choice(layouts).format(a=a, b=b, w=m + rng.randint(0, 3), h=n)
        if rng.random() < 0.3:
            lay = f"strided<[{m + rng.randint(0, 2)}, 1], offset: {rng.randint(0, 4)}>"
        else:
            lay = f"affine_map<{text}>"
        t = f"memref<{n}x{m}xf64, {lay}>"
        acc = rng.choice(accesses)
        src = textwrap.dedent(f"""
            func.func @f(%A: {t}) {{
              affine.for %i = 0 to {n} {{
                affine.for %j = 0 to {m} {{
                  affine.for %k = 0 to 4 {{
                    %ii = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%i)
                    %jj = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
                    %v = affine.load %A[{acc.replace('%n', str(n))}] : {t}
                  }}
                }}
              }}
              return
            }}
            """)
        module = polyopt.parse(src)
        old_t = module.functions[0].function_type.inputs[0]
        ops = list(module.walk())
        loops = [op.induction_var for op in ops if op.name == "affine.for"]
        applies = [op.result for op in ops if op.name == "affine.apply"]
        load = next(op for op in ops if op.name == "affine.load")
        names = dict(zip(loops + applies, ["i", "j", "k", "ii", "jj"]))
        operand_names = [names[v] for v in load.map_operands]
        old_map = load.map
        normalize_memrefs(module)
        verify(module)
        new_t = load.memref.type
        assert new_t.layout is None and new_t == normalize_memref_type(old_t)
        assert [names[v] for v in load.map_operands] == operand_names
        old_lin, new_lin = linearize(old_t), linearize(new_t)
        for i, j, k in itertools.product(range(n), range(m), range(4)):
            env = {"i": i, "j": j, "k": k, "ii": i // 2, "jj": j % 3}
            vals = [env[nm] for nm in operand_names]
            old_idx = old_map.evaluate(vals)
            if not all(0 <= x < d for x, d in zip(old_idx, (n, m))):
                continue  # an out-of-bounds logical index: valid programs never run it
            checked += 1
            assert new_lin.evaluate(load.map.evaluate(vals)) == old_lin.evaluate(old_idx), \
                (t, acc, (i, j, k))
    assert checked > 500


def test_arguments_false_keeps_signatures_and_what_is_tied_to_them():
    remarks = []
    text = f"""
        #tiled = {TILED}
        func.func @f(%A: memref<8x8xf64, #tiled>) {{
          %buf = memref.alloc() : memref<8x8xf64, #tiled>
          %tied = memref.alloc() : memref<8x8xf64, #tiled>
          call @f(%tied) : (memref<8x8xf64, #tiled>) -> ()
          %v = affine.load %A[1, 2] : memref<8x8xf64, #tiled>
          affine.store %v, %buf[1, 2] : memref<8x8xf64, #tiled>
          return
        }}
        """
    module = polyopt.parse(textwrap.dedent(text))
    assert normalize_memrefs(module, arguments=False,
                             remark=lambda loc, m: remarks.append(m)) == 1
    verify(module)
    out = str(module)
    assert "func.func @f(%arg0: memref<8x8xf64, #map>)" in out
    assert "%alloc = memref.alloc() : memref<2x8x4xf64>" in out
    assert "%alloc_0 = memref.alloc() : memref<8x8xf64, #map>" in out  # passed to @f
    assert "affine.store %0, %alloc[0, 2, 1] : memref<2x8x4xf64>" in out
    assert remarks == []  # kept by request, not for a problem
