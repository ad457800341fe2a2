"""convert_linalg_to_affine_loops against mlir-opt-22's -convert-linalg-to-affine-loops: for
every op (static and '?' shapes, transposed/broadcast/constant maps, casts, scalars, payloads
with constants and linalg.index), polyopt's output is mlir-opt-22's output (both printed
through polyopt); plus the pass on the command line and the --hopt dispatch."""

from __future__ import annotations

import textwrap

import pytest

import polyopt
from polyopt.affine.dialects.linalg import LinalgStructuredOp
from polyopt.affine.verifier import verify
from polyopt.affine.linalg_to_affine import convert_linalg_to_affine_loops, lower_to_affine_loops
from polyopt.cli import main
from polyopt.pipeline import PipelineOptions, run_passes
from linalg_oracle import mlir_opt

M = "affine_map"

PROGRAMS = {
    "generic_transposed_broadcast_reduction": """
func.func @f(%T: memref<7x5xf64>, %x: memref<7xf64>, %A: memref<5x7xf64>, %y: memref<5xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%T, %x : memref<7x5xf64>, memref<7xf64>) outs(%A : memref<5x7xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64):
    %0 = arith.addf %a, %b : f64
    linalg.yield %0 : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) {
  ^bb0(%a: f64, %c: f64):
    %0 = arith.addf %a, %c : f64
    linalg.yield %0 : f64
  }
  return
}
""",
    # constant and compound subscripts, a scalar input, two outputs, payload constants (hoisted
    # and merged), a value from outside, a commutative op with a constant on the left
    "generic_subscripts_constants": """
func.func @f(%M: memref<5x7xf64>, %y: memref<12xf64>, %s: f64, %z: memref<5xf64>, %N: memref<5x3xf64>) {
  %c9 = arith.constant 9.0 : f64
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 2)>,
                                   affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0 + d1)>,
                                   affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "parallel"]}
      ins(%M, %N, %s : memref<5x7xf64>, memref<5x3xf64>, f64) outs(%y, %z : memref<12xf64>, memref<5xf64>) {
  ^bb0(%a: f64, %n: f64, %b: f64, %c: f64, %d: f64):
    %one = arith.constant 1.0 : f64
    %0 = arith.addf %a, %b : f64
    %1 = arith.addf %0, %c : f64
    %2 = arith.addf %one, %1 : f64
    %3 = arith.mulf %2, %n : f64
    %nine = arith.constant 9.0 : f64
    %4 = arith.mulf %nine, %d : f64
    linalg.yield %3, %4 : f64, f64
  }
  %c3 = arith.constant 3.0 : f64
  linalg.fill ins(%c3 : f64) outs(%z : memref<5xf64>)
  return
}
""",
    "generic_index_dynamic": """
func.func @f(%A: memref<3x?x4xi32>, %y: memref<3x4xi32>, %D: memref<?x?xf32>) {
  linalg.reduce ins(%A : memref<3x?x4xi32>) outs(%y : memref<3x4xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %r = arith.maxsi %in, %init : i32
      linalg.yield %r : i32
    }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<3x4xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.muli %i, %j : index
    %c = arith.index_cast %k : index to i32
    linalg.yield %c : i32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]}
      outs(%D : memref<?x?xf32>) {
  ^bb0(%o: f32):
    %0 = arith.negf %o : f32
    linalg.yield %0 : f32
  }
  return
}
""",
    "map_reduce": """
func.func @f(%A: memref<5x7xf64>, %B: memref<5x7xf64>, %y: memref<5xf64>, %z: memref<5xf64>, %w: memref<7xf64>) {
  linalg.map { arith.addf } ins(%A, %B : memref<5x7xf64>, memref<5x7xf64>) outs(%B : memref<5x7xf64>)
  linalg.map ins(%A : memref<5x7xf64>) outs(%B : memref<5x7xf64>)
    (%a: f64, %o: f64) {
      %0 = arith.mulf %a, %o : f64
      %u = arith.negf %a : f64
      linalg.yield %0 : f64
    }
  linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) outs(%w : memref<7xf64>) dimensions = [0]
  linalg.reduce ins(%A, %B : memref<5x7xf64>, memref<5x7xf64>) outs(%y, %z : memref<5xf64>, memref<5xf64>)
      dimensions = [1]
    (%a: f64, %b: f64, %c: f64, %d: f64) {
      %0 = arith.addf %a, %c : f64
      %1 = arith.maximumf %b, %d : f64
      linalg.yield %0, %1 : f64, f64
    }
  return
}
""",
    "transpose_copy_fill": """
func.func @f(%X: memref<2x3x4xf32>, %Y: memref<3x4x2xf32>, %D: memref<?x4xf32>, %E: memref<4x?xf32>,
             %Z: memref<2x3x4xf64>, %s: memref<f32>, %v: f32, %I: memref<2x3x4xi16>) {
  linalg.transpose ins(%X : memref<2x3x4xf32>) outs(%Y : memref<3x4x2xf32>) permutation = [1, 2, 0]
  linalg.transpose ins(%D : memref<?x4xf32>) outs(%E : memref<4x?xf32>) permutation = [1, 0]
  linalg.copy ins(%X : memref<2x3x4xf32>) outs(%Z : memref<2x3x4xf64>)
  linalg.copy {cast = #linalg.type_fn<cast_unsigned>} ins(%I : memref<2x3x4xi16>) outs(%Z : memref<2x3x4xf64>)
  linalg.fill ins(%v : f32) outs(%s : memref<f32>)
  linalg.fill ins(%v : f32) outs(%D : memref<?x4xf32>)
  return
}
""",
    "matmuls": """
func.func @f(%A: memref<5x7xf64>, %B: memref<7x13xf64>, %C: memref<5x13xf64>, %T: memref<7x5xf64>,
             %Bt: memref<13x7xf64>, %x: memref<7xf64>, %Ai: memref<5x7xi8>, %Bi: memref<7x13xi8>,
             %Ci: memref<5x13xi32>, %Ah: memref<5x7xf16>, %Bh: memref<7x13xf16>, %Cf: memref<5x13xf32>,
             %Ab: memref<5x7xi1>, %Bb: memref<7x13xi1>, %Cb: memref<5x13xi1>) {
  linalg.matmul ins(%A, %B : memref<5x7xf64>, memref<7x13xf64>) outs(%C : memref<5x13xf64>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%T, %B : memref<7x5xf64>, memref<7x13xf64>) outs(%C : memref<5x13xf64>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%A, %Bt : memref<5x7xf64>, memref<13x7xf64>) outs(%C : memref<5x13xf64>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%A, %x : memref<5x7xf64>, memref<7xf64>) outs(%C : memref<5x13xf64>)
  linalg.matmul ins(%Ai, %Bi : memref<5x7xi8>, memref<7x13xi8>) outs(%Ci : memref<5x13xi32>)
  linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%Ai, %Bi : memref<5x7xi8>, memref<7x13xi8>)
      outs(%Ci : memref<5x13xi32>)
  linalg.matmul ins(%Ah, %Bh : memref<5x7xf16>, memref<7x13xf16>) outs(%Cf : memref<5x13xf32>)
  linalg.matmul ins(%Ai, %Bh : memref<5x7xi8>, memref<7x13xf16>) outs(%C : memref<5x13xf64>)
  linalg.matmul ins(%A, %B : memref<5x7xf64>, memref<7x13xf64>) outs(%Ci : memref<5x13xi32>)
  linalg.matmul ins(%Ab, %Bb : memref<5x7xi1>, memref<7x13xi1>) outs(%Cb : memref<5x13xi1>)
  return
}
""",
    "batch_matvec_vecmat_dot": """
func.func @f(%A3: memref<3x5x7xf32>, %B3: memref<3x7x13xf32>, %C3: memref<3x5x13xf32>, %A2: memref<5x7xf32>,
             %x: memref<7xf32>, %y: memref<5xf32>, %s: memref<f32>) {
  linalg.batch_matmul ins(%A3, %B3 : memref<3x5x7xf32>, memref<3x7x13xf32>) outs(%C3 : memref<3x5x13xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%A2, %B3 : memref<5x7xf32>, memref<3x7x13xf32>) outs(%C3 : memref<3x5x13xf32>)
  linalg.matvec ins(%A2, %x : memref<5x7xf32>, memref<7xf32>) outs(%y : memref<5xf32>)
  linalg.vecmat ins(%y, %A2 : memref<5xf32>, memref<5x7xf32>) outs(%x : memref<7xf32>)
  linalg.dot ins(%x, %x : memref<7xf32>, memref<7xf32>) outs(%s : memref<f32>)
  return
}
""",
    "convolutions": """
func.func @f(%I: memref<1x9x9x3xf32>, %K: memref<3x3x3x8xf32>, %O: memref<1x3x3x8xf32>,
             %I1: memref<2x9x3xf64>, %K1: memref<3x3x5xf64>, %O1: memref<2x7x5xf64>,
             %Kd: memref<3x3x3xf32>, %Od: memref<1x5x3x3xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%I, %K : memref<1x9x9x3xf32>, memref<3x3x3x8xf32>) outs(%O : memref<1x3x3x8xf32>)
  linalg.conv_1d_nwc_wcf ins(%I1, %K1 : memref<2x9x3xf64>, memref<3x3x5xf64>) outs(%O1 : memref<2x7x5xf64>)
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[1, 3]> : tensor<2xi64>}
    ins(%I, %Kd : memref<1x9x9x3xf32>, memref<3x3x3xf32>) outs(%Od : memref<1x5x3x3xf32>)
  return
}
""",
    # ? sizes from function arguments and allocations (memref.dim folds to the alloc's size),
    # constants and dead code of the rest of the function, an op inside a loop
    "dynamic_and_surroundings": """
func.func @f(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>, %n: index) {
  %cst = arith.constant 0.0 : f64
  linalg.fill ins(%cst : f64) outs(%C : memref<?x?xf64>)
  linalg.matmul ins(%A, %B : memref<?x?xf64>, memref<?x?xf64>) outs(%C : memref<?x?xf64>)
  %T = memref.alloc(%n) : memref<?x7xf64>
  %c1 = arith.constant 1 : index
  %d = memref.dim %T, %c1 : memref<?x7xf64>
  %c0 = arith.constant 0 : index
  %e = memref.dim %T, %c0 : memref<?x7xf64>
  %s = arith.addi %d, %e : index
  linalg.transpose ins(%A : memref<?x?xf64>) outs(%B : memref<?x?xf64>) permutation = [1, 0]
  linalg.copy ins(%T : memref<?x7xf64>) outs(%T : memref<?x7xf64>)
  affine.for %i = 0 to %s {
    %u = arith.constant 5.0 : f64
    affine.store %u, %T[%i, 0] : memref<?x7xf64>
  }
  memref.dealloc %T : memref<?x7xf64>
  return
}
func.func @g(%x: memref<7xf32>, %y: memref<7xf32>, %s: memref<f32>, %v: f32) {
  %unused = arith.constant 3 : i32
  linalg.fill ins(%v : f32) outs(%s : memref<f32>)
  linalg.dot ins(%x, %y : memref<7xf32>, memref<7xf32>) outs(%s : memref<f32>)
  affine.for %i = 0 to 3 {
    linalg.fill ins(%v : f32) outs(%x : memref<7xf32>)
    %z = arith.constant 2.0 : f32
    linalg.map ins(%x : memref<7xf32>) outs(%y : memref<7xf32>)
      (%a: f32, %b: f32) {
        %m = arith.mulf %a, %z : f32
        %k = arith.constant 2.0 : f32
        %m2 = arith.addf %m, %k : f32
        linalg.yield %m2 : f32
      }
  }
  return
}
""",
}


def lowered_by_polyopt(text: str) -> str:
    module = polyopt.parse(text, "t.mlir")
    convert_linalg_to_affine_loops(module)
    verify(module)
    return str(module)


def lowered_by_mlir(text: str) -> str:
    return str(polyopt.parse(mlir_opt(text, "--convert-linalg-to-affine-loops")))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_lowering_is_mlir_opts(name):
    ours = lowered_by_polyopt(PROGRAMS[name])
    assert "linalg." not in ours
    assert ours == lowered_by_mlir(PROGRAMS[name])
    assert mlir_opt(ours) == ours          # and mlir-opt-22 prints polyopt's output back as is


# Two cases spelled out, so that a reader sees what the pass does without running mlir-opt.
def test_golden_transposed_generic():
    text = textwrap.dedent("""\
        func.func @f(%T: memref<7x5xf64>, %y: memref<5xf64>) {
          linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>],
                          iterator_types = ["parallel", "reduction"]}
              ins(%T : memref<7x5xf64>) outs(%y : memref<5xf64>) {
          ^bb0(%in: f64, %out: f64):
            %0 = arith.addf %in, %out : f64
            linalg.yield %0 : f64
          }
          return
        }
        """)
    assert lowered_by_polyopt(text) == textwrap.dedent("""\
        module {
          func.func @f(%arg0: memref<7x5xf64>, %arg1: memref<5xf64>) {
            affine.for %arg2 = 0 to 5 {
              affine.for %arg3 = 0 to 7 {
                %0 = affine.load %arg0[%arg3, %arg2] : memref<7x5xf64>
                %1 = affine.load %arg1[%arg2] : memref<5xf64>
                %2 = arith.addf %0, %1 : f64
                affine.store %2, %arg1[%arg2] : memref<5xf64>
              }
            }
            return
          }
        }
        """)


def test_golden_dynamic_matmul():
    text = ("func.func @f(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>) {\n"
            "  linalg.matmul ins(%A, %B : memref<?x?xf64>, memref<?x?xf64>) "
            "outs(%C : memref<?x?xf64>)\n  return\n}\n")
    # the loop bounds are memref.dim of the first operand dimension each loop indexes: A's
    # rows (i), B's columns (j), A's columns (k)
    assert lowered_by_polyopt(text) == textwrap.dedent("""\
        module {
          func.func @f(%arg0: memref<?x?xf64>, %arg1: memref<?x?xf64>, %arg2: memref<?x?xf64>) {
            %c1 = arith.constant 1 : index
            %c0 = arith.constant 0 : index
            %dim = memref.dim %arg0, %c0 : memref<?x?xf64>
            %dim_0 = memref.dim %arg0, %c1 : memref<?x?xf64>
            %dim_1 = memref.dim %arg1, %c1 : memref<?x?xf64>
            affine.for %arg3 = 0 to %dim {
              affine.for %arg4 = 0 to %dim_1 {
                affine.for %arg5 = 0 to %dim_0 {
                  %0 = affine.load %arg0[%arg3, %arg5] : memref<?x?xf64>
                  %1 = affine.load %arg1[%arg5, %arg4] : memref<?x?xf64>
                  %2 = affine.load %arg2[%arg3, %arg4] : memref<?x?xf64>
                  %3 = arith.mulf %0, %1 : f64
                  %4 = arith.addf %2, %3 : f64
                  affine.store %4, %arg2[%arg3, %arg4] : memref<?x?xf64>
                }
              }
            }
            return
          }
        }
        """)
    assert lowered_by_polyopt(text) == lowered_by_mlir(text)


def test_lower_one_op_returns_its_loops():
    module = polyopt.parse(PROGRAMS["convolutions"])
    ops = [op for op in module.walk() if isinstance(op, LinalgStructuredOp)]
    depthwise = ops[-1]
    loops = lower_to_affine_loops(depthwise)
    # MLIR's loop order for the depthwise convolution: (n, oh, ow, c, kh, kw)
    assert [lp.constant_upper_bound for lp in loops] == [1, 5, 3, 3, 3, 3]
    assert sum(isinstance(op, LinalgStructuredOp) for op in module.walk()) == 2
    with pytest.raises(TypeError, match="expects a structured linalg op"):
        lower_to_affine_loops(loops[0])


def test_cli_option_prints_mlir_opts_lowering(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text(PROGRAMS["matmuls"])
    assert main(["opt", "--convert-linalg-to-affine-loops", str(path)]) == 0
    assert capsys.readouterr().out == lowered_by_mlir(PROGRAMS["matmuls"])
    assert main(["opt", str(path)]) == 0          # without the option: the ops as written
    assert "linalg.matmul" in capsys.readouterr().out


def test_pipeline_option_is_data():
    assert ("linalg_to_affine", "--convert-linalg-to-affine-loops") in \
        [(n, f) for n, f, _ in PipelineOptions.pass_fields()]
    module = polyopt.parse(PROGRAMS["map_reduce"])
    run_passes(module, PipelineOptions(linalg_to_affine=True))
    assert "linalg." not in str(module)


# ---------------------------------------------------------------------------------------------
# --hopt: which linalg ops the BLIS pipeline takes

def test_hopt_takes_plain_matmul_and_raises_or_remarks_on_the_others():
    module = polyopt.parse(PROGRAMS["matmuls"])
    remarks = []
    run_passes(module, PipelineOptions(hopt=True), remark=lambda loc, m: remarks.append(m))
    # the default f64 matmul and the three mixed ones the pipeline takes (i8 x i8 -> i32
    # signed and unsigned, f16 x f16 -> f32: naive without --hopt-copy/--hopt-vect, said so)
    # are expanded; the others become loops first (hopt-linalg-to-loops), where contraction
    # raising takes the two transposed ones into the BLIS pipeline and says why not for the
    # broadcast and the two of other mixed types; none is left as a linalg op
    assert not any(op.name == "linalg.matmul" for op in module.walk())
    assert sum("BLIS schedule" in m for m in remarks) == 3
    raised = [m for m in remarks if m.startswith("raised to a contraction")]
    assert len(raised) == 2 and sum("A[k, i]" in m for m in raised) == 1 and \
        sum("B[j, k]" in m for m in raised) == 1
    not_raised = [m for m in remarks if m.startswith("not raised to a contraction")]
    assert sum("a broadcast, not a contraction" in m for m in not_raised) == 1
    assert sum("multiplies 'arith." in m for m in not_raised) == 2
    assert sum("narrower than C runs as a naive nest: it needs --hopt-copy and --hopt-vect"
               in m for m in remarks) == 3


def test_hopt_takes_batch_matmuls_and_leaves_dynamic_matmul_naive():
    module = polyopt.parse(PROGRAMS["batch_matvec_vecmat_dot"] + PROGRAMS["dynamic_and_surroundings"]
                           .replace("@f(", "@h(").replace("@g(", "@k("))
    remarks = []
    run_passes(module, PipelineOptions(hopt=True), remark=lambda loc, m: remarks.append(m))
    # the default batch_matmul is a batched contraction (a BLIS nest per batch slice); the
    # one whose A is broadcast over the batch becomes loops that contraction raising takes
    # (A shared by the batch); the dynamic matmul's loops are not raised, with a remark
    assert not any(op.name.startswith("linalg.") for op in module.walk())
    assert sum(m.startswith("linalg.batch_matmul: BLIS schedule") for m in remarks) == 1
    assert sum(m.startswith("raised to a contraction: C[b0, i, j] += A[i, k] * B[b0, k, j]")
               for m in remarks) == 1
    assert sum(m.startswith("not raised to a contraction") and "'?' sizes" in m
               for m in remarks) == 1


def test_llvm_lowering_names_the_pass_for_an_unconverted_op():
    from polyopt.affine.diagnostics import CodegenError
    from polyopt.codegen.to_llvm import lower_module
    module = polyopt.parse(PROGRAMS["map_reduce"], "mr.mlir")
    with pytest.raises(CodegenError) as info:
        lower_module(module)
    assert info.value.render().startswith(
        "mr.mlir:3:3: error: 'linalg.map' must be lowered to affine loops before LLVM "
        "(polyopt.pipeline.prepare_for_lowering, or --convert-linalg-to-affine-loops)")
