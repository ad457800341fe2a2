"""linalg ops on memrefs: custom and generic syntax, printing and verification, each checked
live against mlir-opt-22 (polyopt prints exactly what it prints, it accepts what polyopt
prints, its generic form parses back to the same op, and it rejects what polyopt rejects
with the same message)."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.affine_expr import AffineMap, dim
from polyopt.affine.builder import Builder
from polyopt.affine.dialects.arith import FLOAT_BINARY
from polyopt.affine.dialects.linalg import (STRUCTURED_OPS, BatchMatmulOp, CopyOp, DotOp,
                                            FillOp, GenericOp, LinalgMatmulOp,
                                            LinalgYieldOp, MapOp, MatvecOp, ReduceOp,
                                            TransposeOp, VecmatOp)
from polyopt.affine.ir import Block, Region
from linalg_oracle import func, mlir_opt, mlir_opt_error, polyopt_error, printed

ARGS = ("%A: memref<5x7xf64>, %B: memref<7x13xf64>, %C: memref<5x13xf64>, %T: memref<7x5xf64>, "
        "%x: memref<7xf64>, %y: memref<5xf64>, %s: memref<f64>, %v: f64, "
        "%A3: memref<3x5x7xf32>, %B3: memref<3x7x13xf32>, %C3: memref<3x5x13xf32>, "
        "%Ai: memref<5x7xi8>, %Bi: memref<7x13xi8>, %Ci: memref<5x13xi32>, "
        "%Ah: memref<5x7xf16>, %Bh: memref<7x13xf16>, %Cf: memref<5x13xf32>, "
        "%D: memref<?x?xf64>, %E: memref<?x7xf64>, %F: memref<7x?xf64>")

# Each op in every form it has; the comment says what the case shows.
CASES = {
    "generic_transposed_broadcast": """
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>,
                                       affine_map<(d0, d1) -> (d0, d1)>],
                      iterator_types = ["parallel", "parallel"], doc = "x", library_call = "f"}
          ins(%T, %x : memref<7x5xf64>, memref<7xf64>) outs(%A : memref<5x7xf64>) {
      ^bb0(%a: f64, %b: f64, %c: f64):
        %0 = arith.addf %a, %b : f64
        linalg.yield %0 : f64
      }""",
    # extra attributes print as `attrs =  {...}` (two spaces, as mlir-opt-22)
    "generic_reduction_attrs": """
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                      iterator_types = ["parallel", "reduction"]}
          ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) attrs = {foo = 1 : i32, bar} {
      ^bb0(%a: f64, %c: f64):
        %0 = arith.addf %a, %c : f64
        linalg.yield %0 : f64
      }""",
    "generic_scalar_input_two_outputs_index": """
      linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>,
                                       affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
          ins(%v : f64) outs(%y, %y : memref<5xf64>, memref<5xf64>) {
      ^bb0(%a: f64, %o: f64, %p: f64):
        %i = linalg.index 0 : index
        %f = arith.index_cast %i : index to i64
        %g = arith.sitofp %f : i64 to f64
        %0 = arith.mulf %a, %g : f64
        linalg.yield %0, %p : f64, f64
      }""",
    "generic_no_inputs_dynamic": """
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]}
          outs(%D : memref<?x?xf64>) {
      ^bb0(%o: f64):
        %0 = arith.negf %o : f64
        linalg.yield %0 : f64
      }""",
    "map_short": "linalg.map { arith.addf } ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) "
                 "outs(%A : memref<5x7xf64>)",
    "map_short_attrs": "linalg.map { arith.subf {fastmath = #arith.fastmath<fast>} } "
                       "ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) outs(%A : memref<5x7xf64>) "
                       "{foo = 2 : i32}",
    # a body that is not one op over the inputs prints in the long form
    "map_long": """
      linalg.map ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) outs(%A : memref<5x7xf64>)
        (%a: f64, %b: f64, %o: f64) {
          %0 = arith.subf %b, %a : f64
          %1 = arith.mulf %0, %o : f64
          linalg.yield %1 : f64
        }""",
    "map_init_only": """
      linalg.map outs(%y : memref<5xf64>)
        (%o: f64) {
          %i = linalg.index 0 : index
          %f = arith.index_cast %i : index to i64
          %g = arith.sitofp %f : i64 to f64
          linalg.yield %g : f64
        }""",
    "reduce_short": "linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) "
                    "dimensions = [1]",
    "reduce_short_attrs": "linalg.reduce { arith.maximumf } ins(%A : memref<5x7xf64>) "
                          "outs(%x : memref<7xf64>) dimensions = [0] {bar}",
    # (in, init) operands are not (init, in): the long form
    "reduce_long_two": """
      linalg.reduce ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) outs(%y, %y : memref<5xf64>, memref<5xf64>)
          dimensions = [1]
        (%a: f64, %b: f64, %c: f64, %d: f64) {
          %0 = arith.addf %a, %c : f64
          %1 = arith.maximumf %b, %d : f64
          linalg.yield %0, %1 : f64, f64
        }""",
    "reduce_no_dims": "linalg.reduce { arith.mulf } ins(%A3 : memref<3x5x7xf32>) "
                      "outs(%A3 : memref<3x5x7xf32>) dimensions = [] {x}",
    "transpose": "linalg.transpose ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>) "
                 "permutation = [1, 0]",
    "transpose_attrs_dynamic": "linalg.transpose ins(%E : memref<?x7xf64>) "
                               "outs(%F : memref<7x?xf64>) permutation = [1, 0] {x = 1}",
    "copy": "linalg.copy ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>)",
    "copy_cast_attrs": "linalg.copy {cast = #linalg.type_fn<cast_unsigned>} "
                       "ins(%Ah : memref<5x7xf16>) outs(%A : memref<5x7xf64>) {z}",
    "fill": "linalg.fill ins(%v : f64) outs(%s : memref<f64>)",
    "matmul": "linalg.matmul ins(%A, %B : memref<5x7xf64>, memref<7x13xf64>) "
              "outs(%C : memref<5x13xf64>)",
    # explicit default maps are not printed; MLIR 22's transpose_a/b and broadcasts are maps
    "matmul_default_maps": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, "
                           "affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] "
                           "ins(%A, %B : memref<5x7xf64>, memref<7x13xf64>) outs(%C : memref<5x13xf64>)",
    "matmul_transpose_a": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, "
                          "affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] "
                          "ins(%T, %B : memref<7x5xf64>, memref<7x13xf64>) outs(%C : memref<5x13xf64>)",
    "matmul_broadcast_b_cast": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, "
                               "affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] "
                               "{cast = #linalg.type_fn<cast_unsigned>, foo = 1} "
                               "ins(%Ai, %x : memref<5x7xi8>, memref<7xf64>) outs(%C : memref<5x13xf64>)",
    "matmul_mixed_attrs_after": "linalg.matmul ins(%Ai, %Bi : memref<5x7xi8>, memref<7x13xi8>) "
                                "outs(%Ci : memref<5x13xi32>) {cast = #linalg.type_fn<cast_signed>}",
    "matmul_f16_dynamic": "linalg.matmul ins(%Ah, %Bh : memref<5x7xf16>, memref<7x13xf16>) "
                          "outs(%Cf : memref<5x13xf32>)\n"
                          "linalg.matmul ins(%D, %D : memref<?x?xf64>, memref<?x?xf64>) "
                          "outs(%D : memref<?x?xf64>)",
    "batch_matmul": "linalg.batch_matmul ins(%A3, %B3 : memref<3x5x7xf32>, memref<3x7x13xf32>) "
                    "outs(%C3 : memref<3x5x13xf32>)",
    "batch_matmul_maps": "linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, "
                         "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
                         "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] "
                         "ins(%A, %B3 : memref<5x7xf64>, memref<3x7x13xf32>) outs(%C3 : memref<3x5x13xf32>)",
    "matvec_vecmat_dot": "linalg.matvec ins(%A, %x : memref<5x7xf64>, memref<7xf64>) "
                         "outs(%y : memref<5xf64>)\n"
                         "linalg.vecmat {cast = #linalg.type_fn<cast_unsigned>} "
                         "ins(%y, %A : memref<5xf64>, memref<5x7xf64>) outs(%x : memref<7xf64>)\n"
                         "linalg.dot ins(%x, %x : memref<7xf64>, memref<7xf64>) "
                         "outs(%s : memref<f64>) {z = 1}",
}


@pytest.mark.parametrize("name", list(CASES))
def test_prints_what_mlir_opt_prints(name):
    text = func(CASES[name], ARGS)
    theirs = mlir_opt(text)
    ours = printed(text)
    assert ours == theirs
    assert mlir_opt(ours) == theirs          # mlir-opt-22 accepts polyopt's print


@pytest.mark.parametrize("name", list(CASES))
def test_generic_form_parses_to_the_same_op(name):
    text = func(CASES[name], ARGS)
    generic = mlir_opt(text, "--mlir-print-op-generic")
    assert '"linalg.' in generic
    assert printed(generic) == mlir_opt(text)


def test_printing_is_a_fixed_point_of_parsing():
    text = func("\n".join(CASES.values()), ARGS)
    once = printed(text)
    assert printed(once) == once


# ---------------------------------------------------------------------------------------------
# accessors and builders


def _ops(text):
    m = polyopt.parse(func(text, ARGS))
    return m, [op for op in m.walk() if op.name.startswith("linalg.") and
               op.name not in ("linalg.yield", "linalg.index")]


def test_every_op_class_has_its_maps_and_iterators():
    _, ops = _ops("\n".join(CASES.values()))
    by_name = {op.name for op in ops}
    assert by_name == {"linalg.generic", "linalg.map", "linalg.reduce", "linalg.transpose",
                       "linalg.copy", "linalg.fill", "linalg.matmul", "linalg.batch_matmul",
                       "linalg.matvec", "linalg.vecmat", "linalg.dot"}
    assert set(STRUCTURED_OPS) >= by_name
    for op in ops:
        assert len(op.indexing_maps) == len(op.operands)
        assert all(m.num_dims == op.num_loops for m in op.indexing_maps)
        assert len(op.inputs) + len(op.outputs) == len(op.operands)


def test_accessors():
    _, ops = _ops(CASES["transpose"] + "\n" + CASES["reduce_short"] + "\n" + CASES["matmul_transpose_a"]
                  + "\n" + CASES["generic_reduction_attrs"])
    tr, red, mm, gen = ops
    assert isinstance(tr, TransposeOp) and tr.permutation == (1, 0)
    assert tr.indexing_maps[0] == AffineMap.get(2, 0, (dim(1), dim(0)))
    assert isinstance(red, ReduceOp) and red.dimensions == (1,)
    assert red.iterator_types == ("parallel", "reduction")
    assert red.indexing_maps[1] == AffineMap.get(2, 0, (dim(0),))
    assert isinstance(mm, LinalgMatmulOp) and not mm.has_default_maps and not mm.is_plain
    assert isinstance(gen, GenericOp) and gen.iterator_types == ("parallel", "reduction")
    assert gen.doc is None and gen.attributes["foo"] is not None


def test_three_dimensional_transpose_maps():
    text = func("linalg.transpose ins(%X : memref<2x3x4xf32>) outs(%Y : memref<3x4x2xf32>) "
                "permutation = [1, 2, 0]", "%X: memref<2x3x4xf32>, %Y: memref<3x4x2xf32>")
    op = next(o for o in polyopt.parse(text).walk() if isinstance(o, TransposeOp))
    # init[d0, d1, d2] = input[d2, d0, d1]
    assert op.indexing_maps[0] == AffineMap.get(3, 0, (dim(2), dim(0), dim(1)))
    assert printed(text) == mlir_opt(text)


def test_builders_print_what_mlir_opt_parses():
    m = polyopt.parse(func("", ARGS))
    f = m.functions[0]
    A, B, C, T, x, y, s, v = f.args[:8]
    b = Builder.before(f.body.ops[-1])
    body = Block([A.type.element_type, x.type.element_type, A.type.element_type])
    add = body.append(FLOAT_BINARY["addf"].build(body.args[0], body.args[1]))
    body.append(LinalgYieldOp.build([add.result]))
    maps = [AffineMap.get(2, 0, (dim(1), dim(0))), AffineMap.get(2, 0, (dim(1),)),
            AffineMap.identity(2)]
    b.create(GenericOp, [T, x], [A], maps, ["parallel", "parallel"], Region([body]))
    b.create(TransposeOp, A, T, [1, 0])
    b.create(CopyOp, A, A)
    b.create(FillOp, v, s)
    b.create(LinalgMatmulOp, A, B, C)
    b.create(LinalgMatmulOp, T, B, C, indexing_maps=[AffineMap.get(3, 0, (dim(2), dim(0))),
                                                    AffineMap.get(3, 0, (dim(2), dim(1))),
                                                    AffineMap.get(3, 0, (dim(0), dim(1)))])
    b.create(MatvecOp, A, x, y)
    b.create(VecmatOp, y, A, x)
    b.create(LinalgMatmulOp, A, B, C, unsigned=True)    # vecmat declares no cast (signed)
    b.create(DotOp, x, x, s)
    b.create(BatchMatmulOp, *f.args[8:11])
    text = str(m)
    polyopt.parse(text)                    # verifies
    assert mlir_opt(text) == text


def test_map_builder_short_form():
    text = func(CASES["map_short"], ARGS)
    op = next(o for o in polyopt.parse(text).walk() if isinstance(o, MapOp))
    block = op.payload_block
    assert [a.type for a in block.args] == [op.init.type.element_type] * 3
    assert [o.name for o in block.ops] == ["arith.addf", "linalg.yield"]


# ---------------------------------------------------------------------------------------------
# errors: mlir-opt-22 rejects the same inputs with the same message and position

GEN = "linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}} {operands} {{\n{body}\n}}"


def generic(maps, iters, operands, body):
    return GEN.format(maps=", ".join(f"affine_map<{m}>" for m in maps),
                      iters=", ".join(f'"{i}"' for i in iters), operands=operands, body=body)


Y = "outs(%y : memref<5xf64>)"
ERRORS = {
    "generic_window": generic(["(d0) -> (d0)"], ["window"], Y, "^bb0(%a: f64):\n linalg.yield %a : f64"),
    "generic_no_iterators": "linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>]} "
                            + Y + " {\n^bb0(%a: f64):\n linalg.yield %a : f64\n}",
    "generic_map_count": generic(["(d0) -> (d0)"] * 2, ["parallel"], Y,
                                 "^bb0(%a: f64):\n linalg.yield %a : f64"),
    "generic_non_invertible": generic(["(d0, d1) -> (d0)", "(d0, d1) -> (d0)"], ["parallel"] * 2,
                                      "ins(%y : memref<5xf64>) " + Y,
                                      "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "generic_loop_count": generic(["(d0) -> (d0)"], ["parallel"] * 2, Y,
                                  "^bb0(%a: f64):\n linalg.yield %a : f64"),
    "generic_rank": generic(["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, d1)"], ["parallel"] * 2,
                            "ins(%A : memref<5x7xf64>) " + Y,
                            "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "generic_shape": generic(["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d1, d0)"], ["parallel"] * 2,
                             "ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>)",
                             "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "generic_shape_at_least": generic(["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0 + d1)"],
                                      ["parallel"] * 2, "ins(%A : memref<5x7xf64>) " + Y,
                                      "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "generic_negative": generic(["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0 - 1)"], ["parallel"] * 2,
                                "ins(%A : memref<5x7xf64>) " + Y,
                                "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "generic_symbols": generic(["(d0)[s0] -> (d0)"], ["parallel"], Y,
                               "^bb0(%a: f64):\n linalg.yield %a : f64"),
    "generic_block_args": generic(["(d0) -> (d0)"] * 2, ["parallel"], "ins(%y : memref<5xf64>) " + Y,
                                  "^bb0(%a: f64):\n linalg.yield %a : f64"),
    "generic_block_arg_type": generic(["(d0) -> (d0)"] * 2, ["parallel"], "ins(%y : memref<5xf64>) " + Y,
                                      "^bb0(%a: f32, %b: f64):\n linalg.yield %b : f64"),
    "generic_scalar_output": generic(["(d0) -> (d0)", "(d0) -> ()"], ["parallel"],
                                     "ins(%y : memref<5xf64>) outs(%v : f64)",
                                     "^bb0(%a: f64, %b: f64):\n linalg.yield %a : f64"),
    "yield_count": generic(["(d0) -> (d0)"] * 2, ["parallel"], "ins(%y : memref<5xf64>) " + Y,
                           "^bb0(%a: f64, %b: f64):\n linalg.yield %a, %b : f64, f64"),
    "yield_type": generic(["(d0) -> (d0)"] * 2, ["parallel"], "ins(%y : memref<5xf64>) " + Y,
                          "^bb0(%a: f64, %b: f64):\n %c = arith.constant 1 : i32\n linalg.yield %c : i32"),
    "index_dim": generic(["(d0) -> (d0)"], ["parallel"], Y,
                         "^bb0(%b: f64):\n %i = linalg.index 1 : index\n linalg.yield %b : f64"),
    "index_outside": "%i = linalg.index 0 : index",
    "transpose_permutation": "linalg.transpose ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>) "
                             "permutation = [1, 1]",
    "transpose_permutation_size": "linalg.transpose ins(%A : memref<5x7xf64>) "
                                  "outs(%T : memref<7x5xf64>) permutation = [0]",
    "transpose_rank": "linalg.transpose ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) "
                      "permutation = [1, 0]",
    "transpose_shape": "linalg.transpose ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>) "
                       "permutation = [1, 0]",
    "transpose_type": "linalg.transpose ins(%A : memref<5x7xf64>) outs(%Tf : memref<7x5xf32>) "
                      "permutation = [1, 0]",
    "copy_shape": "linalg.copy ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>)",
    "copy_rank": "linalg.copy ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>)",
    "fill_type": "linalg.fill ins(%f : f32) outs(%A : memref<5x7xf64>)",
    "map_arity": "linalg.map ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>)\n"
                 "  (%a: f64) { linalg.yield %a : f64 }",
    "map_shape": "linalg.map { arith.addf } ins(%A, %T : memref<5x7xf64>, memref<7x5xf64>) "
                 "outs(%A : memref<5x7xf64>)",
    "map_arg_type": "linalg.map ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>)\n"
                    "  (%a: f32, %b: f64) { linalg.yield %b : f64 }",
    "map_init_type": "linalg.map ins(%A : memref<5x7xf64>) outs(%A : memref<5x7xf64>)\n"
                     "  (%a: f64, %b: f32) { linalg.yield %a : f64 }",
    "reduce_dims_range": "linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) "
                         "outs(%y : memref<5xf64>) dimensions = [2]",
    "reduce_dims_order": "linalg.reduce { arith.addf } ins(%A3 : memref<3x5x7xf32>) "
                         "outs(%x : memref<7xf64>) dimensions = [1, 0]",
    "reduce_init_shape": "linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) "
                         "outs(%y : memref<5xf64>) dimensions = [0]",
    "reduce_init_rank": "linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) "
                        "outs(%A : memref<5x7xf64>) dimensions = [0]",
    "reduce_args": "linalg.reduce ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) dimensions = [1]\n"
                   "  (%a: f64) { linalg.yield %a : f64 }",
    "reduce_arg_type": "linalg.reduce ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) "
                       "dimensions = [1]\n  (%a: f32, %b: f64) { linalg.yield %b : f64 }",
    "reduce_input_shapes": "linalg.reduce ins(%A, %T : memref<5x7xf64>, memref<7x5xf64>) "
                           "outs(%y, %y : memref<5xf64>, memref<5xf64>) dimensions = [1]\n"
                           "  (%a: f64, %b: f64, %c: f64, %d: f64) { linalg.yield %c, %d : f64, f64 }",
    "matmul_shape": "linalg.matmul ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) "
                    "outs(%A : memref<5x7xf64>)",
    "matmul_rank": "linalg.matmul ins(%y, %A : memref<5xf64>, memref<5x7xf64>) "
                   "outs(%A : memref<5x7xf64>)",
    "matmul_map_count": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, "
                        "affine_map<(d0, d1, d2) -> (d2, d1)>] ins(%A, %T : memref<5x7xf64>, "
                        "memref<7x5xf64>) outs(%M5 : memref<5x5xf64>)",
    "matmul_map_dims": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, "
                       "affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] "
                       "ins(%A, %T : memref<5x7xf64>, memref<7x5xf64>) outs(%M5 : memref<5x5xf64>)",
    "matmul_broadcast": "linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0)>, "
                        "affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] "
                        "ins(%y, %T : memref<5xf64>, memref<7x5xf64>) outs(%M5 : memref<5x5xf64>)",
    "matmul_index": "linalg.matmul ins(%I, %I : memref<7x7xindex>, memref<7x7xindex>) "
                    "outs(%I : memref<7x7xindex>)",
    "batch_matmul_out_map": "linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, "
                            "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
                            "affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>] "
                            "ins(%A3, %B3 : memref<3x5x7xf32>, memref<3x7x13xf32>) outs(%C3 : memref<3x5x13xf32>)",
    "batch_matmul_in_map": "linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, "
                           "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
                           "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] "
                           "ins(%A3, %B3 : memref<3x5x7xf32>, memref<3x7x13xf32>) outs(%C3 : memref<3x5x13xf32>)",
    "batch_matmul_shape": "linalg.batch_matmul ins(%A3, %A3 : memref<3x5x7xf32>, memref<3x5x7xf32>) "
                          "outs(%C3 : memref<3x5x13xf32>)",
    "matvec_shape": "linalg.matvec ins(%A, %y : memref<5x7xf64>, memref<5xf64>) "
                    "outs(%y : memref<5xf64>)",
    "vecmat_shape": "linalg.vecmat ins(%x, %A : memref<7xf64>, memref<5x7xf64>) "
                    "outs(%x : memref<7xf64>)",
    "dot_rank": "linalg.dot ins(%y, %y : memref<5xf64>, memref<5xf64>) outs(%y : memref<5xf64>)",
    "matmul_transpose_a_removed": "linalg.matmul_transpose_a ins(%A, %T : memref<5x7xf64>, "
                                  "memref<7x5xf64>) outs(%M5 : memref<5x5xf64>)",
}
ERR_ARGS = ARGS + (", %Tf: memref<7x5xf32>, %f: f32, %M5: memref<5x5xf64>, "
                   "%I: memref<7x7xindex>")


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_are_mlir_opts(name):
    text = func(ERRORS[name], ERR_ARGS)
    assert polyopt_error(text) == mlir_opt_error(text)


# Inputs mlir-opt-22 rejects with a message that polyopt words more clearly (or that
# mlir-opt-22 crashes on); polyopt's message is pinned here.
OWN_ERRORS = {
    # mlir-opt prints a '?' size as -9223372036854775808
    "map_dynamic_shape": ("linalg.map { arith.addf } ins(%E, %A : memref<?x7xf64>, memref<5x7xf64>) "
                          "outs(%A : memref<5x7xf64>)",
                          "2:1: error: 'linalg.map' op expected shape of input (?, 7) to match "
                          "shape of output (5, 7)"),
    # mlir-opt-22 splits 3 operands into 1 + 1 and complains about ranks
    "reduce_counts": ("linalg.reduce { arith.addf } ins(%A, %A : memref<5x7xf64>, memref<5x7xf64>) "
                      "outs(%y : memref<5xf64>) dimensions = [1]",
                      "2:30: error: custom op 'linalg.reduce' expects as many inits as inputs, "
                      "got 2 input(s) and 1 init(s)"),
    # mlir-opt-22 crashes (segmentation fault) on a non-string iterator type
    "iterator_not_string": ("linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], "
                            "iterator_types = [1]} outs(%y : memref<5xf64>) {\n^bb0(%a: f64):\n"
                            " linalg.yield %a : f64\n}",
                            "2:16: error: custom op 'linalg.generic' expected \"iterator_types\" "
                            "to be an array of strings, got 1 : i64"),
    "tensor": ("linalg.fill ins(%v : f64) outs(%y : tensor<5xf64>)",
               "2:37: error: linalg ops on tensors are not supported; use memrefs"),
    "unranked": ("linalg.copy ins(%u : memref<*xf64>) outs(%u : memref<*xf64>)",
                 "2:1: error: 'linalg.copy' op operand #0 must be a ranked memref, got "
                 "'memref<*xf64>'"),
}


@pytest.mark.parametrize("name", list(OWN_ERRORS))
def test_errors_polyopt_words_itself(name):
    body, message = OWN_ERRORS[name]
    text = func(body, ARGS + ", %u: memref<*xf64>")
    assert polyopt_error(text) == message


def test_generic_form_region_that_is_not_the_payload_is_refused():
    text = func('"linalg.copy"(%x, %x) <{operandSegmentSizes = array<i32: 1, 1>}> ({\n'
                '^bb0(%a: f64, %b: f64):\n  %0 = arith.addf %a, %b : f64\n'
                '  "linalg.yield"(%0) : (f64) -> ()\n}) : (memref<7xf64>, memref<7xf64>) -> ()',
                ARGS)
    mlir_opt(text)   # mlir-opt-22 takes it (and would print it as a plain copy)
    assert polyopt_error(text) == ("2:1: error: 'linalg.copy' op region is not the op's payload; "
                                   "write a different body as linalg.generic")
