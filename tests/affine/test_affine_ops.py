"""The affine dialect ops: golden round trips, agreement with mlir-opt-22, generic form,
2020 syntax, verification messages, builders and the dim/symbol rules (affine_rules)."""

from __future__ import annotations

import textwrap

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.affine_expr import AffineMap, IntegerSet, dim, symbol
from polyopt.affine.affine_rules import (get_affine_scope, is_valid_dim, is_valid_symbol,
                                         verify_dim_and_symbol_identifiers)
from polyopt.affine.diagnostics import ParseError, PolyoptError, VerifyError
from polyopt.affine.dialects.affine import (AffineApplyOp, AffineForOp, AffineIfOp, AffineLoadOp,
                                            AffineMaxOp, AffineMinOp, AffineStoreOp,
                                            AffineVectorLoadOp, AffineVectorStoreOp,
                                            AffineYieldOp)
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FunctionType, MemRefType, VectorType, f64, index
from polyopt.affine.verifier import verify
from upstream_mlir import mlir_opt, mlir_opt_error


def roundtrip(text: str) -> str:
    """Parse and print; the printed text must parse and print to itself (a fixed point)."""
    printed = print_module(parse(text, "input.mlir"))
    assert print_module(parse(printed, "printed.mlir")) == printed
    return printed


# ---------------------------------------------------------------------------------------------
# golden round trips: input -> canonical text (each expected text is what mlir-opt-22 prints for
# the same input; test_same_as_mlir_opt re-checks that against the installed mlir-opt-22)

GOLDEN = {
    "for_const": (
        """\
func.func @f(%A: memref<16xf64>) {
  affine.for %i = 0 to 16 step 4 {
    affine.for %j = -2 to 3 {
      affine.yield
    }
  }
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16xf64>) {
    affine.for %arg1 = 0 to 16 step 4 {
      affine.for %arg2 = -2 to 3 {
      }
    }
    return
  }
}
"""),
    "for_symbol": (
        """\
func.func @f(%A: memref<16xf64>, %N: index) {
  %c1 = arith.constant 1 : index
  affine.for %i = %c1 to %N {
  }
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16xf64>, %arg1: index) {
    %c1 = arith.constant 1 : index
    affine.for %arg2 = %c1 to %arg1 {
    }
    return
  }
}
"""),
    "for_maps": (
        """\
#lb = affine_map<(d0) -> (d0 * 16)>
func.func @f(%A: memref<16xf64>, %N: index) {
  affine.for %i = 0 to 8 {
    affine.for %j = #lb(%i) to affine_map<(d0)[s0] -> (d0 * 16 + s0)>(%i)[%N] {
    }
    affine.for %j = affine_map<()[s0] -> (s0)>()[%N] to affine_map<() -> (7)>() {
    }
  }
  return
}
""",
        """\
#map = affine_map<(d0) -> (d0 * 16)>
#map1 = affine_map<(d0)[s0] -> (d0 * 16 + s0)>
module {
  func.func @f(%arg0: memref<16xf64>, %arg1: index) {
    affine.for %arg2 = 0 to 8 {
      affine.for %arg3 = #map(%arg2) to #map1(%arg2)[%arg1] {
      }
      affine.for %arg3 = %arg1 to 7 {
      }
    }
    return
  }
}
"""),
    "for_minmax": (
        """\
#map7 = affine_map<(d0) -> (d0 * 64)>
#map8 = affine_map<(d0) -> (2088, d0 * 64 + 64)>
func.func @f(%A: memref<16xf64>, %N: index) {
  affine.for %i = 0 to 33 {
    affine.for %j = #map7(%i) to min #map8(%i) {
    }
    affine.for %j = max affine_map<(d0)[s0] -> (d0, s0)>(%i)[%N] to min affine_map<()[s0] -> (s0, 100)>()[%N] {
    }
  }
  return
}
""",
        """\
#map = affine_map<(d0) -> (d0 * 64)>
#map1 = affine_map<(d0) -> (2088, d0 * 64 + 64)>
#map2 = affine_map<(d0)[s0] -> (d0, s0)>
#map3 = affine_map<()[s0] -> (s0, 100)>
module {
  func.func @f(%arg0: memref<16xf64>, %arg1: index) {
    affine.for %arg2 = 0 to 33 {
      affine.for %arg3 = #map(%arg2) to min #map1(%arg2) {
      }
      affine.for %arg3 = max #map2(%arg2)[%arg1] to min #map3()[%arg1] {
      }
    }
    return
  }
}
"""),
    "for_iter": (
        """\
func.func @f(%A: memref<16xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : index
  %r = affine.for %i = 0 to 16 iter_args(%acc = %z) -> f64 {
    %v = affine.load %A[%i] : memref<16xf64>
    %s = arith.addf %acc, %v : f64
    affine.yield %s : f64
  }
  %p:2 = affine.for %i = 0 to 16 iter_args(%a = %r, %k = %c0) -> (f64, index) {
    affine.yield %a, %k : f64, index
  }
  return %p#0 : f64
}
""",
        """\
module {
  func.func @f(%arg0: memref<16xf64>) -> f64 {
    %cst = arith.constant 0.000000e+00 : f64
    %c0 = arith.constant 0 : index
    %0 = affine.for %arg1 = 0 to 16 iter_args(%arg2 = %cst) -> (f64) {
      %2 = affine.load %arg0[%arg1] : memref<16xf64>
      %3 = arith.addf %arg2, %2 : f64
      affine.yield %3 : f64
    }
    %1:2 = affine.for %arg1 = 0 to 16 iter_args(%arg2 = %0, %arg3 = %c0) -> (f64, index) {
      affine.yield %arg2, %arg3 : f64, index
    }
    return %1#0 : f64
  }
}
"""),
    "for_attrs": (
        """\
func.func @f(%A: memref<16xf64>) {
  affine.for %i = 0 to 16 {
  } {unroll = 4 : i64, "polyopt.tag"}
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16xf64>) {
    affine.for %arg1 = 0 to 16 {
    } {polyopt.tag, unroll = 4 : i64}
    return
  }
}
"""),
    "if_forms": (
        """\
#set = affine_set<(d0)[s0] : (d0 - 10 >= 0, s0 - d0 - 1 >= 0, d0 mod 2 == 0)>
func.func @f(%A: memref<16xf64>, %N: index) {
  affine.for %i = 0 to 16 {
    affine.if #set(%i)[%N] {
      %v = affine.load %A[%i] : memref<16xf64>
    }
    affine.if affine_set<(d0) : (d0 >= 0)>(%i) {
    } else {
    }
    affine.if affine_set<() : (0 == 0)>() {
      affine.yield
    } else {
      %v = affine.load %A[0] : memref<16xf64>
      affine.store %v, %A[1] : memref<16xf64>
    }
    %r = affine.if #set(%i)[%N] -> f64 {
      %v = affine.load %A[%i] : memref<16xf64>
      affine.yield %v : f64
    } else {
      %v = affine.load %A[0] : memref<16xf64>
      affine.yield %v : f64
    }
    %s:2 = affine.if #set(%i)[%N] -> (index, index) {
      affine.yield %i, %N : index, index
    } else {
      affine.yield %N, %i : index, index
    } {tag}
  }
  return
}
""",
        """\
#set = affine_set<(d0)[s0] : (d0 - 10 >= 0, -d0 + s0 - 1 >= 0, d0 mod 2 == 0)>
#set1 = affine_set<(d0) : (d0 >= 0)>
#set2 = affine_set<() : (0 == 0)>
module {
  func.func @f(%arg0: memref<16xf64>, %arg1: index) {
    affine.for %arg2 = 0 to 16 {
      affine.if #set(%arg2)[%arg1] {
        %2 = affine.load %arg0[%arg2] : memref<16xf64>
      }
      affine.if #set1(%arg2) {
      } else {
      }
      affine.if #set2() {
      } else {
        %2 = affine.load %arg0[0] : memref<16xf64>
        affine.store %2, %arg0[1] : memref<16xf64>
      }
      %0 = affine.if #set(%arg2)[%arg1] -> f64 {
        %2 = affine.load %arg0[%arg2] : memref<16xf64>
        affine.yield %2 : f64
      } else {
        %2 = affine.load %arg0[0] : memref<16xf64>
        affine.yield %2 : f64
      }
      %1:2 = affine.if #set(%arg2)[%arg1] -> (index, index) {
        affine.yield %arg2, %arg1 : index, index
      } else {
        affine.yield %arg1, %arg2 : index, index
      } {tag}
    }
    return
  }
}
"""),
    "load_store": (
        """\
func.func @f(%A: memref<16x16xf64>, %S: memref<f64>, %V: memref<256x2xvector<4xf64>>, %N: index) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i + 1, %j * 2 - 1] : memref<16x16xf64>
      %b = affine.load %A[%i * 2 + %j, symbol(%N) - %i] {nontemporal} : memref<16x16xf64>
      %c = affine.load %A[(%i floordiv 2) mod 3, %j ceildiv 4 + 3 * %i] : memref<16x16xf64>
      %d = affine.load %A[%i * symbol(%N), %j * -1] : memref<16x16xf64>
      affine.store %a, %A[%j, %i] : memref<16x16xf64>
      %s = affine.load %S[] : memref<f64>
      affine.store %s, %S[] : memref<f64>
      %v = affine.load %V[%i * 32 + %j, 1] : memref<256x2xvector<4xf64>>
      affine.store %v, %V[%i, 0] : memref<256x2xvector<4xf64>>
    }
  }
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16x16xf64>, %arg1: memref<f64>, %arg2: memref<256x2xvector<4xf64>>, %arg3: index) {
    affine.for %arg4 = 0 to 8 {
      affine.for %arg5 = 0 to 8 {
        %0 = affine.load %arg0[%arg4 + 1, %arg5 * 2 - 1] : memref<16x16xf64>
        %1 = affine.load %arg0[%arg4 * 2 + %arg5, -%arg4 + symbol(%arg3)] {nontemporal} : memref<16x16xf64>
        %2 = affine.load %arg0[(%arg4 floordiv 2) mod 3, %arg5 ceildiv 4 + %arg4 * 3] : memref<16x16xf64>
        %3 = affine.load %arg0[%arg4 * symbol(%arg3), -%arg5] : memref<16x16xf64>
        affine.store %0, %arg0[%arg5, %arg4] : memref<16x16xf64>
        %4 = affine.load %arg1[] : memref<f64>
        affine.store %4, %arg1[] : memref<f64>
        %5 = affine.load %arg2[%arg4 * 32 + %arg5, 1] : memref<256x2xvector<4xf64>>
        affine.store %5, %arg2[%arg4, 0] : memref<256x2xvector<4xf64>>
      }
    }
    return
  }
}
"""),
    "vector_ops": (
        """\
func.func @f(%A: memref<16x16xf64>, %B: memref<8x32xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 16 step 4 {
      %v = affine.vector_load %A[%i, %j] : memref<16x16xf64>, vector<4xf64>
      affine.vector_store %v, %A[%j, %i + 4 * %j] : memref<16x16xf64>, vector<4xf64>
      %w = affine.vector_load %B[%i floordiv 2, %j * 2] : memref<8x32xf32>, vector<8xf32>
      affine.vector_store %w, %B[0, 0] : memref<8x32xf32>, vector<8xf32>
    }
  }
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16x16xf64>, %arg1: memref<8x32xf32>) {
    affine.for %arg2 = 0 to 16 {
      affine.for %arg3 = 0 to 16 step 4 {
        %0 = affine.vector_load %arg0[%arg2, %arg3] : memref<16x16xf64>, vector<4xf64>
        affine.vector_store %0, %arg0[%arg3, %arg2 + %arg3 * 4] : memref<16x16xf64>, vector<4xf64>
        %1 = affine.vector_load %arg1[%arg2 floordiv 2, %arg3 * 2] : memref<8x32xf32>, vector<8xf32>
        affine.vector_store %1, %arg1[0, 0] : memref<8x32xf32>, vector<8xf32>
      }
    }
    return
  }
}
"""),
    "prefetch": (
        """\
func.func @f(%A: memref<16x16xf64>, %i: index) {
  affine.prefetch %A[%i, %i + 3], read, locality<3>, data : memref<16x16xf64>
  affine.prefetch %A[%i * 2 + 1, 0], write, locality<0>, instr : memref<16x16xf64>
  return
}
""",
        """\
module {
  func.func @f(%arg0: memref<16x16xf64>, %arg1: index) {
    affine.prefetch %arg0[%arg1, %arg1 + 3], read, locality<3>, data : memref<16x16xf64>
    affine.prefetch %arg0[%arg1 * 2 + 1, 0], write, locality<0>, instr : memref<16x16xf64>
    return
  }
}
"""),
    "apply_min_max": (
        """\
#tile = affine_map<(d0) -> (d0 * 4)>
func.func @f(%A: memref<16xf64>, %N: index) {
  affine.for %i = 0 to 16 {
    %a = affine.apply #tile(%i)
    %b = affine.apply affine_map<(d0)[s0] -> (d0 + s0 * 2)>(%i)[%N]
    %c = affine.apply affine_map<()[s0] -> (s0 floordiv 4)>()[%N]
    %m = affine.min affine_map<(d0)[s0] -> (d0 + 4, s0, 16)>(%a)[%N]
    %x = affine.max affine_map<(d0, d1) -> (d0, d1 - 3)>(%a, %b) {tag}
    %y = affine.min affine_map<() -> (3, 4)>()
  }
  return
}
""",
        """\
#map = affine_map<(d0) -> (d0 * 4)>
#map1 = affine_map<(d0)[s0] -> (d0 + s0 * 2)>
#map2 = affine_map<()[s0] -> (s0 floordiv 4)>
#map3 = affine_map<(d0)[s0] -> (d0 + 4, s0, 16)>
#map4 = affine_map<(d0, d1) -> (d0, d1 - 3)>
#map5 = affine_map<() -> (3, 4)>
module {
  func.func @f(%arg0: memref<16xf64>, %arg1: index) {
    affine.for %arg2 = 0 to 16 {
      %0 = affine.apply #map(%arg2)
      %1 = affine.apply #map1(%arg2)[%arg1]
      %2 = affine.apply #map2()[%arg1]
      %3 = affine.min #map3(%0)[%arg1]
      %4 = affine.max #map4(%0, %1) {tag}
      %5 = affine.min #map5()
    }
    return
  }
}
"""),
}

# 2020 spellings (the paper's listings) print like their MLIR 22 counterparts
GOLDEN_2020 = {
    # bare maps as aliases and in place (bounds, affine.apply), bare integer set in affine.if
    "bare_maps_and_sets": (
        """\
#map7 = (d0) -> (d0 * 64)
func @f(%A: memref<2088x2048xf64>) {
  %c0 = constant 0 : index
  affine.for %i = #map7(%c0) to min (d0) -> (2088, d0 * 64 + 64)(%c0) {
    %x = affine.apply (d0) -> (d0 + 1)(%i)
    affine.if (d0) : (d0 - 10 >= 0)(%x) {
      %y = affine.load %A[%x, %i] : memref<2088x2048xf64>
    }
  }
  return
}
""",
        """\
#map = affine_map<(d0) -> (d0 * 64)>
#map1 = affine_map<(d0) -> (2088, d0 * 64 + 64)>
#map2 = affine_map<(d0) -> (d0 + 1)>
#set = affine_set<(d0) : (d0 - 10 >= 0)>
module {
  func.func @f(%arg0: memref<2088x2048xf64>) {
    %c0 = arith.constant 0 : index
    affine.for %arg1 = #map(%c0) to min #map1(%c0) {
      %0 = affine.apply #map2(%arg1)
      affine.if #set(%0) {
        %1 = affine.load %arg0[%0, %arg1] : memref<2088x2048xf64>
      }
    }
    return
  }
}
"""),
}


@pytest.mark.parametrize("name", sorted(GOLDEN) + sorted(GOLDEN_2020))
def test_golden(name):
    source, expected = GOLDEN[name] if name in GOLDEN else GOLDEN_2020[name]
    assert roundtrip(source) == expected


# ---------------------------------------------------------------------------------------------
# agreement with mlir-opt-22, both ways

# The paper's section 2.5 loop nest (cache tiling of DGEMM, M_C = 64, K_C = 256), modernized.
PAPER_2_5 = """\
#map7 = affine_map<(d0) -> (d0 * 64)>
#map8 = affine_map<(d0) -> (2088, d0 * 64 + 64)>
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  %c0 = arith.constant 0 : index
  affine.for %arg3 = 0 to 8 {
    affine.for %arg4 = 0 to 33 {
      affine.for %arg5 = 0 to 2048 {
        affine.for %arg6 = #map7(%arg4) to min #map8(%arg4) {
          %0 = memref.alloca() : memref<1xf64>
          %1 = affine.load %C[%arg6, %arg5] : memref<2088x2048xf64>
          affine.store %1, %0[%c0] : memref<1xf64>
          affine.for %arg7 = 0 to 256 {
            %3 = affine.load %A[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
            %4 = affine.load %B[%arg3 * 256 + %arg7, %arg5] : memref<2048x2048xf64>
            %5 = affine.load %0[0] : memref<1xf64>
            %6 = arith.mulf %3, %4 : f64
            %7 = arith.addf %5, %6 : f64
            affine.store %7, %0[0] : memref<1xf64>
          }
          %2 = affine.load %0[%c0] : memref<1xf64>
          affine.store %2, %C[%arg6, %arg5] : memref<2088x2048xf64>
        }
      }
    }
  }
  return
}
"""

# The same nest as the paper prints it (2020 syntax): must print as mlir-opt prints PAPER_2_5.
PAPER_2_5_2020 = """\
#map7 = (d0) -> (d0 * 64)
#map8 = (d0) -> (2088, d0 * 64 + 64)
func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  %c0 = constant 0 : index
  affine.for %arg3 = 0 to 8 {
    affine.for %arg4 = 0 to 33 {
      affine.for %arg5 = 0 to 2048 {
        affine.for %arg6 = #map7(%arg4) to min #map8(%arg4) {
          %0 = alloca() : memref<1xf64>
          %1 = affine.load %C[%arg6, %arg5] : memref<2088x2048xf64>
          affine.store %1, %0[%c0] : memref<1xf64>
          affine.for %arg7 = 0 to 256 {
            %3 = affine.load %A[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
            %4 = affine.load %B[%arg3 * 256 + %arg7, %arg5] : memref<2048x2048xf64>
            %5 = affine.load %0[0] : memref<1xf64>
            %6 = mulf %3, %4 : f64
            %7 = addf %5, %6 : f64
            affine.store %7, %0[0] : memref<1xf64>
          }
          %2 = affine.load %0[%c0] : memref<1xf64>
          affine.store %2, %C[%arg6, %arg5] : memref<2088x2048xf64>
        }
      }
    }
  }
  return
}
"""

# Everything at once: value numbering across sibling and nested regions, map/set alias order,
# an iter_args loop at the top level after a nest, if/else with results inside an else.
MIXED = """\
func.func @f(%A: memref<64x64xf64>, %N: index) {
  %c0 = arith.constant 0 : index
  %s = affine.for %i = max affine_map<(d0)[s0] -> (d0, s0)>(%c0)[%N] to affine_map<()[s0] -> (s0 + 4)>()[%N] iter_args(%acc = %c0) -> (index) {
    %a = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%N]
    %m = affine.min affine_map<(d0)[s0] -> (d0, s0, 3)>(%i)[%N]
    %x = affine.max affine_map<(d0) -> (d0, 3)>(%i)
    affine.yield %a : index
  }
  affine.for %i = %c0 to %N {
    affine.if affine_set<(d0)[s0] : (d0 - 10 >= 0, s0 - d0 - 1 >= 0)>(%i)[%N] {
      %v = affine.vector_load %A[%i, symbol(%N)] : memref<64x64xf64>, vector<4xf64>
      affine.vector_store %v, %A[%i + 1, %i * 2 - 1] : memref<64x64xf64>, vector<4xf64>
    } else {
      %r = affine.if affine_set<(d0) : (d0 >= 0)>(%i) -> f64 {
        %z = affine.load %A[0, 0] : memref<64x64xf64>
        affine.yield %z : f64
      } else {
        %z = affine.load %A[1, 1] : memref<64x64xf64>
        affine.yield %z : f64
      }
      affine.store %r, %A[%i, %i] : memref<64x64xf64>
    }
  }
  return
}
"""

MLIR_CASES = {**{name: src for name, (src, _) in GOLDEN.items()},
              "paper_2_5": PAPER_2_5, "mixed": MIXED}


@pytest.mark.parametrize("name", sorted(MLIR_CASES))
def test_same_as_mlir_opt(name):
    source = MLIR_CASES[name]
    assert print_module(parse(source, f"{name}.mlir")) == \
        mlir_opt(source, "--allow-unregistered-dialect")


def test_paper_listing_2020_syntax_prints_as_mlir_opt():
    assert roundtrip(PAPER_2_5_2020) == mlir_opt(PAPER_2_5, "--allow-unregistered-dialect")


@pytest.mark.parametrize("name", sorted(MLIR_CASES))
def test_parses_mlir_opt_generic_form(name):
    source = MLIR_CASES[name]
    generic = mlir_opt(source, "--allow-unregistered-dialect", "-mlir-print-op-generic")
    assert print_module(parse(generic, f"{name}.generic.mlir")) == \
        mlir_opt(source, "--allow-unregistered-dialect")


@pytest.mark.parametrize("name", ["for_iter", "if_forms", "paper_2_5", "mixed"])
def test_our_generic_form_is_accepted_by_mlir_opt(name):
    # operandSegmentSizes is recomputed for affine.for, terminators and empty else regions are
    # written out: mlir-opt reads it back to the same module
    source = MLIR_CASES[name]
    generic = print_module(parse(source), generic=True)
    assert '"affine.for"' in generic and "operandSegmentSizes" in generic
    assert mlir_opt(generic, "--allow-unregistered-dialect") == \
        mlir_opt(source, "--allow-unregistered-dialect")


# ---------------------------------------------------------------------------------------------
# errors: FILE:LINE:COL and message (agree with mlir-opt-22 unless noted)

NEGATIVE = [
    # (name, source, expected error, same as mlir-opt-22?)
    ("subscript_count", """\
func.func @f(%A: memref<10x10xf64>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<10x10xf64>
  }
  return
}
""", "bad.mlir:3:10: error: 'affine.load' op affine map num results must equal memref rank", True),
    ("non_affine_subscript", """\
func.func @f(%A: memref<10x10xf64>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %v = affine.load %A[%i * %j, %j] : memref<10x10xf64>
    }
  }
  return
}
""", "bad.mlir:4:30: error: non-affine expression: at least one of the multiply operands has to "
     "be either a constant or symbolic", True),
    # an arith.addi of induction variables is neither a dimension nor a symbol
    ("subscript_not_a_dim", """\
func.func @f(%A: memref<10x10xf64>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %k = arith.addi %i, %j : index
      %v = affine.load %A[%k, %j] : memref<10x10xf64>
    }
  }
  return
}
""", "bad.mlir:5:12: error: 'affine.load' op operand cannot be used as a dimension id", True),
    # an induction variable is a dimension, not a symbol
    ("iv_as_symbol", """\
func.func @f(%A: memref<10x10xf64>, %x: f64) {
  affine.for %i = 0 to 10 {
    affine.store %x, %A[symbol(%i), 0] : memref<10x10xf64>
  }
  return
}
""", "bad.mlir:3:5: error: 'affine.store' op operand cannot be used as a symbol", True),
    ("loop_bound_iv_as_symbol", """\
func.func @f() {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to %i {
    }
  }
  return
}
""", "bad.mlir:3:5: error: 'affine.for' op operand cannot be used as a symbol", True),
    ("if_operand_not_a_dim", """\
func.func @f() {
  affine.for %i = 0 to 10 {
    %k = arith.muli %i, %i : index
    affine.if affine_set<(d0) : (d0 >= 0)>(%k) {
    }
  }
  return
}
""", "bad.mlir:4:5: error: 'affine.if' op operand cannot be used as a dimension id", True),
    ("apply_dim_as_symbol", """\
func.func @f() {
  affine.for %i = 0 to 10 {
    %a = affine.apply affine_map<()[s0] -> (s0)>()[%i]
  }
  return
}
""", "bad.mlir:3:10: error: dimensional operand cannot be used as a symbol", True),
    ("apply_operand_count", """\
func.func @f(%n: index) {
  %a = affine.apply affine_map<(d0, d1) -> (d0 + d1)>(%n)
  return
}
""", "bad.mlir:2:8: error: custom op 'affine.apply' dimension or symbol index mismatch", True),
    ("bound_operand_count", """\
#map = affine_map<(d0)[s0] -> (d0 + s0)>
func.func @f(%n: index) {
  affine.for %i = 0 to #map(%n) {
  }
  return
}
""", "bad.mlir:3:3: error: custom op 'affine.for' symbol operand count and affine map symbol "
     "count must match", True),
    ("min_operand_count", """\
func.func @f(%n: index) {
  %a = affine.min affine_map<(d0)[s0] -> (d0, s0)>(%n)
  return
}
""", "bad.mlir:2:8: error: 'affine.min' op operand count and affine map dimension and symbol "
     "count must match", True),
    ("if_operand_count", """\
func.func @f(%n: index) {
  affine.if affine_set<(d0)[s0] : (d0 - s0 >= 0)>(%n) {
  }
  return
}
""", "bad.mlir:2:3: error: custom op 'affine.if' symbol operand count and integer set symbol "
     "count must match", True),
    ("store_type_mismatch", """\
func.func @f(%A: memref<10x10xf64>) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to 10 {
    affine.store %c, %A[%i, %i] : memref<10x10xf64>
  }
  return
}
""", "bad.mlir:4:18: error: use of value '%c' expects different type than prior uses: 'f64' vs "
     "'f32'", True),
    # mlir-opt-22 says only "use of undeclared SSA value name" (same place); we name the value
    ("undeclared_in_subscript", """\
func.func @f(%A: memref<10x10xf64>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i, %k + 1] : memref<10x10xf64>
  }
  return
}
""", "bad.mlir:3:29: error: use of undeclared SSA value name '%k'", False),
    ("non_index_subscript", """\
func.func @f(%A: memref<10x10xf64>, %n: i32) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i, symbol(%n)] : memref<10x10xf64>
  }
  return
}
""", "bad.mlir:3:36: error: use of value '%n' expects different type than prior uses: 'index' vs "
     "'i32'", True),
    ("non_index_bound", """\
func.func @f(%n: i32) {
  affine.for %i = 0 to %n {
  }
  return
}
""", "bad.mlir:2:24: error: use of value '%n' expects different type than prior uses: 'index' vs "
     "'i32'", True),
    ("not_a_memref", """\
func.func @f(%A: memref<10xf64>, %n: index) {
  %v = affine.load %A[%n] : vector<4xf64>
  return
}
""", "bad.mlir:2:27: error: custom op 'affine.load' invalid kind of type specified: expected "
     "builtin.memref, but found 'vector<4xf64>'", True),
    ("vector_element_type", """\
func.func @f(%A: memref<10x10xf64>) {
  affine.for %i = 0 to 10 {
    %v = affine.vector_load %A[%i, 0] : memref<10x10xf64>, vector<4xf32>
  }
  return
}
""", "bad.mlir:3:10: error: 'affine.vector_load' op requires memref and vector types of the same "
     "elemental type", True),
    ("multi_result_bound_needs_min", """\
func.func @f() {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to affine_map<(d0) -> (d0, 10)>(%i) {
    }
  }
  return
}
""", "bad.mlir:3:26: error: custom op 'affine.for' upper loop bound affine map with multiple "
     "results requires 'min' prefix", True),
    ("negative_step", """\
func.func @f() {
  affine.for %i = 0 to 10 step -1 {
  }
  return
}
""", "bad.mlir:2:32: error: custom op 'affine.for' expected step to be representable as a "
     "positive signed integer", True),
    # deliberate difference: mlir-opt-22 accepts step 0 (an endless loop)
    ("zero_step", """\
func.func @f() {
  affine.for %i = 0 to 10 step 0 {
  }
  return
}
""", "bad.mlir:2:3: error: 'affine.for' op expected step to be representable as a positive "
     "signed integer", False),
    ("yield_type", """\
func.func @f() {
  %c = arith.constant 1.0 : f64
  %c32 = arith.constant 1.0 : f32
  %r = affine.for %i = 0 to 10 iter_args(%a = %c) -> (f64) {
    affine.yield %c32 : f32
  }
  return
}
""", "bad.mlir:5:5: error: 'affine.yield' op types mismatch between yield op and its parent",
     True),
    ("yield_count", """\
func.func @f() {
  %c = arith.constant 1.0 : f64
  %r = affine.for %i = 0 to 10 iter_args(%a = %c) -> (f64) {
  }
  return
}
""", "bad.mlir:3:8: error: 'affine.yield' op parent of yield must have same number of results as "
     "the yield operands", True),
    ("if_results_without_else", """\
func.func @f(%n: index) {
  %r = affine.if affine_set<(d0) : (d0 >= 0)>(%n) -> index {
    affine.yield %n : index
  }
  return
}
""", "bad.mlir:2:8: error: 'affine.if' op along control flow edge from parent to parent: region "
     "branch point has 0 operands, but region successor needs 1 inputs", True),
    ("generic_for_segment_sizes", """\
func.func @f(%n: index) {
  "affine.for"(%n) <{lowerBoundMap = affine_map<() -> (0)>, operandSegmentSizes = array<i32: 0, 0, 0>, step = 1 : index, upperBoundMap = affine_map<()[s0] -> (s0)>}> ({
  ^bb0(%i: index):
    "affine.yield"() : () -> ()
  }) : (index) -> ()
  return
}
""", "bad.mlir:2:3: error: 'affine.for' op operand count (1) does not match with the total size "
     "(0) specified in attribute 'operandSegmentSizes'", True),
    ("generic_load_non_index", """\
func.func @f(%A: memref<10x10xf64>, %n: index, %m: i32) {
  %v = "affine.load"(%A, %n, %m) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (memref<10x10xf64>, index, i32) -> f64
  return
}
""", "bad.mlir:2:8: error: 'affine.load' op operand #2 must be variadic of index, but got 'i32'",
     True),
]


NEGATIVE += [
    ("prefetch_rw", """\
func.func @f(%A: memref<16xf64>) {
  affine.prefetch %A[0], load, locality<3>, data : memref<16xf64>
  return
}
""", "bad.mlir:2:3: error: custom op 'affine.prefetch' rw specifier has to be 'read' or "
     "'write'", True),
    ("prefetch_cache", """\
func.func @f(%A: memref<16xf64>) {
  affine.prefetch %A[0], read, locality<3>, dota : memref<16xf64>
  return
}
""", "bad.mlir:2:3: error: custom op 'affine.prefetch' cache type has to be 'data' or "
     "'instr'", True),
    ("prefetch_locality", """\
func.func @f(%A: memref<16xf64>) {
  affine.prefetch %A[0], read, locality<4>, data : memref<16xf64>
  return
}
""", "bad.mlir:2:3: error: 'affine.prefetch' op attribute 'localityHint' failed to satisfy "
     "constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum "
     "value is 3", True),
]


@pytest.mark.parametrize("name,source,expected,mlir_agrees", NEGATIVE,
                         ids=[n[0] for n in NEGATIVE])
def test_errors(name, source, expected, mlir_agrees):
    with pytest.raises(PolyoptError) as info:
        parse(source, "bad.mlir")
    assert str(info.value) == expected
    # the rendered diagnostic quotes the line and puts a caret under the column
    rendered = info.value.render().splitlines()
    assert rendered[0] == expected and rendered[2].index("^") == info.value.loc.col - 1
    if mlir_agrees:
        assert mlir_opt_error(source, "--allow-unregistered-dialect",
                              filename="bad.mlir") == expected


def test_errors_are_parse_or_verify_errors():
    with pytest.raises(ParseError):
        parse(NEGATIVE[1][1], "bad.mlir")   # non-affine subscript: the text is malformed
    with pytest.raises(VerifyError):
        parse(NEGATIVE[0][1], "bad.mlir")   # wrong rank: well-formed but invalid


# ---------------------------------------------------------------------------------------------
# accessors and builders


def _one(module, cls):
    ops = [op for op in module.walk() if isinstance(op, cls)]
    assert ops, f"no {cls.OP_NAME} in module"
    return ops


def test_for_accessors():
    m = parse(GOLDEN["for_minmax"][0] + GOLDEN["for_iter"][0].replace("@f(", "@g("))
    outer, tiled, minmax = _one(m, AffineForOp)[:3]
    assert outer.has_constant_bounds and (outer.constant_lower_bound,
                                          outer.constant_upper_bound) == (0, 33)
    assert outer.step == 1 and outer.constant_trip_count == 33
    assert tiled.lower_map == AffineMap.get(1, 0, [dim(0) * 64])
    assert tiled.upper_map.num_results == 2 and not tiled.has_constant_bounds
    assert tiled.lower_operands == (outer.induction_var,) == tiled.upper_operands
    assert minmax.lower_operands[0] is outer.induction_var and len(minmax.upper_operands) == 1
    assert tiled.inits == () and tiled.region_iter_args == [] and tiled.constant_trip_count is None
    red = [op for op in _one(m, AffineForOp) if op.results][0]
    assert len(red.inits) == 1 and len(red.region_iter_args) == 1
    assert red.body.args[0] is red.induction_var
    assert red.yield_op.operands[0].type == red.results[0].type == f64


def test_if_and_memory_accessors():
    m = parse(GOLDEN["if_forms"][0] + GOLDEN["vector_ops"][0].replace("@f(", "@g("))
    ifs = _one(m, AffineIfOp)
    assert ifs[0].condition.num_constraints == 3 and len(ifs[0].cond_operands) == 2
    assert not ifs[0].has_else and ifs[0].else_block is None
    assert ifs[1].has_else and ifs[1].else_block.ops[-1].name == "affine.yield"
    assert ifs[3].results and ifs[3].then_block.ops[-1].operands
    load = _one(m, AffineLoadOp)[0]
    assert load.memref.type == MemRefType((16,), f64) and load.map == AffineMap.identity(1)
    assert load.map_operands == (ifs[0].cond_operands[0],)
    vstore = _one(m, AffineVectorStoreOp)[0]
    assert vstore.vector_type == VectorType((4,), f64)
    # ``%A[%j, %i + 4 * %j]``: dimensions are numbered by first appearance
    assert vstore.map == AffineMap.get(2, 0, [dim(0), dim(1) + dim(0) * 4])
    j, i = vstore.map_operands
    assert j.block.parent.parent.induction_var is j and i is not j
    assert vstore.value is _one(m, AffineVectorLoadOp)[0].result


def test_build_loop_nest_prints_and_verifies():
    a_type = MemRefType((16, 16), f64)
    module = ModuleOp.build()
    func = FuncOp.build("f", FunctionType((a_type, index), ()))
    module.body.append(func)
    a, n = func.args
    outer = AffineForOp.build_constant(0, 16, step=4)
    func.body.append(outer)
    func.body.append(ReturnOp())
    i = outer.induction_var
    inner = AffineForOp.build(AffineMap.get(1, 0, [dim(0)]), [i],
                              AffineMap.get(1, 1, [dim(0) + 4, symbol(0)]), [i, n])
    outer.body.insert(0, inner)
    j = inner.induction_var
    load = AffineLoadOp.build(a, [i, j], AffineMap.get(2, 0, [dim(0), dim(1) + 1]))
    inner.body.insert(0, load)
    inner.body.insert(1, AffineStoreOp.build(load.result, a, [j, i]))
    cond = AffineIfOp.build(IntegerSet(1, 1, [symbol(0) - dim(0) - 1], [False]), [j, n],
                            with_else=True)
    inner.body.insert(2, cond)
    cond.then_block.insert(0, AffineApplyOp.build(AffineMap.get(1, 0, [dim(0) * 2]), [j]))
    verify(module)
    assert print_module(module) == textwrap.dedent("""\
        #map = affine_map<(d0) -> (d0)>
        #map1 = affine_map<(d0)[s0] -> (d0 + 4, s0)>
        #map2 = affine_map<(d0) -> (d0 * 2)>
        #set = affine_set<(d0)[s0] : (-d0 + s0 - 1 >= 0)>
        module {
          func.func @f(%arg0: memref<16x16xf64>, %arg1: index) {
            affine.for %arg2 = 0 to 16 step 4 {
              affine.for %arg3 = #map(%arg2) to min #map1(%arg2)[%arg1] {
                %0 = affine.load %arg0[%arg2, %arg3 + 1] : memref<16x16xf64>
                affine.store %0, %arg0[%arg3, %arg2] : memref<16x16xf64>
                affine.if #set(%arg3)[%arg1] {
                  %1 = affine.apply #map2(%arg3)
                } else {
                }
              }
            }
            return
          }
        }
        """)
    # a clone prints the same; setters keep maps and operands consistent
    assert print_module(module.clone()) == print_module(module)
    inner.set_upper_bound(AffineMap.constant_map(16), [])
    inner.set_step(2)
    assert inner.upper_operands == () and inner.inits == () and inner.step == 2
    verify(module)
    assert "affine.for %arg3 = #map(%arg2) to 16 step 2 {" in print_module(module)
    assert outer.constant_trip_count == 4


def test_build_iter_args_and_min_max():
    module = parse("func.func @f(%n: index) -> index {\n  return %n : index\n}\n")
    func = module.functions[0]
    n = func.args[0]
    loop = AffineForOp.build_constant(0, 8, inits=[n])
    func.body.insert(0, loop)
    assert loop.body.ops == []      # the caller writes the yield of a loop with inits
    mn = AffineMinOp.build(AffineMap.get(1, 1, [dim(0), symbol(0)]), [loop.induction_var, n])
    mx = AffineMaxOp.build(AffineMap.get(0, 1, [symbol(0), symbol(0) - 2]), [n])
    loop.body.append(mn)
    loop.body.append(mx)
    loop.body.append(AffineYieldOp.build([mn.result]))
    func.body.ops[-1].set_operand(0, loop.results[0])
    verify(module)
    assert roundtrip(print_module(module)) == textwrap.dedent("""\
        #map = affine_map<(d0)[s0] -> (d0, s0)>
        #map1 = affine_map<()[s0] -> (s0, s0 - 2)>
        module {
          func.func @f(%arg0: index) -> index {
            %0 = affine.for %arg1 = 0 to 8 iter_args(%arg2 = %arg0) -> (index) {
              %1 = affine.min #map(%arg1)[%arg0]
              %2 = affine.max #map1()[%arg0]
              affine.yield %1 : index
            }
            return %0 : index
          }
        }
        """)


def test_builders_reject_bad_arguments():
    with pytest.raises(ValueError):
        AffineForOp.build_constant(0, 8, step=0)
    with pytest.raises(ValueError):
        AffineForOp.build(AffineMap.get(1, 0, [dim(0)]), [], AffineMap.constant_map(4), [])


# ---------------------------------------------------------------------------------------------
# affine_rules: which values are valid dimensions / symbols

RULES_SOURCE = """\
func.func @f(%A: memref<8xf64>, %N: index, %I: memref<8xi64>) {
  %c2 = arith.constant 2 : index
  %top = arith.addi %N, %c2 : index
  %e = memref.load %I[%c2] : memref<8xi64>
  %loaded = arith.index_cast %e : i64 to index
  %z = arith.constant 0.0 : f64
  affine.for %i = 0 to 8 {
    %c3 = arith.constant 3 : index
    %iv_apply = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
    %sym_apply = affine.apply affine_map<()[s0] -> (s0 * 2)>()[%N]
    %iv_sum = arith.addi %i, %i : index
    %sym_sum = arith.addi %N, %top : index
    %iv_min = affine.min affine_map<(d0) -> (d0, 4)>(%i)
    %sym_div = arith.divsi %N, %c2 : index
    %var_div = arith.divsi %c2, %N : index
    %inner = memref.load %I[%i] : memref<8xi64>
    %inner_idx = arith.index_cast %inner : i64 to index
    %r = affine.for %j = 0 to 4 iter_args(%acc = %N) -> (index) {
      affine.yield %acc : index
    }
  }
  return
}
"""


def test_valid_dims_and_symbols():
    m = parse(RULES_SOURCE, "rules.mlir")
    func = m.functions[0]
    A, N, _ = func.args
    values = {"N": N, "A": A}
    loops = _one(m, AffineForOp)
    values["i"] = loops[0].induction_var
    values["acc"] = loops[1].region_iter_args[0]
    names = ["c2", "top", "loaded", "z", "c3", "iv_apply", "sym_apply", "iv_sum", "sym_sum",
             "iv_min", "sym_div", "var_div", "inner_idx"]
    results = [op.results[0] for op in m.walk() if op.results and op.parent_op.name != "builtin.module"
               and op.name not in ("memref.load", "affine.for")]
    values.update(zip(names, results))
    expected = {  # name: (valid dim, valid symbol)
        "N": (True, True), "A": (False, False), "z": (False, False),
        "c2": (True, True), "top": (True, True), "loaded": (True, True),
        "c3": (True, True),                  # constants anywhere
        "i": (True, False),                  # induction variable
        "iv_apply": (True, False),           # affine.apply of dims
        "sym_apply": (True, True),           # Pure op of symbols
        "iv_sum": (False, False),            # arith of dims: neither
        "sym_sum": (True, True),             # arith of symbols inside a loop
        "iv_min": (False, False),            # affine.min is not affine.apply
        "sym_div": (True, True),             # divsi by a constant != 0, -1 is speculatable
        "var_div": (False, False),           # divsi by a value may trap: not Pure
        "inner_idx": (False, False),         # loaded inside the loop
        "acc": (False, False),               # iter_args are not induction variables
    }
    scope = get_affine_scope(loops[0])
    assert scope is func.regions[0]
    for name, (want_dim, want_sym) in expected.items():
        v = values[name]
        assert (is_valid_dim(v, scope), is_valid_symbol(v, scope)) == (want_dim, want_sym), name
        assert (is_valid_dim(v), is_valid_symbol(v)) == (want_dim, want_sym), name


def test_verify_dim_and_symbol_identifiers():
    m = parse(RULES_SOURCE, "rules.mlir")
    loop = _one(m, AffineForOp)[0]
    n = m.functions[0].args[1]
    verify_dim_and_symbol_identifiers(loop, [loop.induction_var, n], 1)
    with pytest.raises(VerifyError, match="operand cannot be used as a symbol"):
        verify_dim_and_symbol_identifiers(loop, [n, loop.induction_var], 1)


def test_validity_of_long_chains_is_linear():
    # each value used twice: a naive recursion would take 2**200 steps
    lines = ["func.func @f(%A: memref<8xf64>, %N: index) {", "  affine.for %i = 0 to 8 {",
             "    %x0 = arith.addi %N, %N : index",
             "    %a0 = affine.apply affine_map<(d0) -> (d0)>(%i)"]
    for k in range(1, 200):
        lines.append(f"    %x{k} = arith.addi %x{k - 1}, %x{k - 1} : index")
        lines.append(f"    %a{k} = affine.apply affine_map<(d0, d1) -> (d0 + d1)>(%a{k - 1}, %a{k - 1})")
    lines += ["    %v = affine.load %A[%a199 + symbol(%x199)] : memref<8xf64>", "  }", "  return", "}"]
    load = _one(parse("\n".join(lines)), AffineLoadOp)[0]
    a, x = load.map_operands
    assert is_valid_dim(a) and not is_valid_symbol(a) and is_valid_symbol(x)
