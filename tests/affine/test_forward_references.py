"""Values used in a block written before the block that defines them (MLIR's forward
references), and the result-group forms ``%r#N``: read, printed and run as mlir-opt-22 and
mlir-runner-22 do, and refused with mlir-opt-22's messages."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.cli import main
from upstream_mlir import lower_and_run, mlir_opt, mlir_opt_error

# the loop body before its header: %i, %acc and %lim are used before the block defining them
SUM = """func.func @sum(%A: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^header(%c0, %z : index, f64)
^body:
  %v = memref.load %A[%i] : memref<?xf64>
  %w = affine.load %A[%lim - 1] : memref<?xf64>
  %p = arith.mulf %v, %w : f64
  %acc2 = arith.addf %acc, %p : f64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^header(%i2, %acc2 : index, f64)
^header(%i: index, %acc: f64):
  %lim = arith.subi %n, %i : index
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^body, ^exit
^exit:
  return %acc : f64
}
"""

# an scf.for (lowered by --convert-scf-to-cf into blocks of its own) and a result group,
# both using values of blocks written later
NEST = """func.func @nest(%A: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^header(%c0, %z : index, f64)
^body:
  %inner = scf.for %j = %c0 to %i step %c1 iter_args(%s = %acc) -> (f64) {
    %v = memref.load %A[%j] : memref<?xf64>
    %t = arith.addf %s, %v : f64
    scf.yield %t : f64
  }
  %sel = arith.select %r#1, %acc, %inner : f64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^header(%i2, %sel : index, f64)
^header(%i: index, %acc: f64):
  %i64 = arith.index_cast %i : index to i64
  %r:2 = arith.addui_extended %i64, %i64 : i64, i1
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^body, ^exit
^exit:
  return %acc : f64
}
"""


def sum_reference(A: np.ndarray) -> float:
    n = len(A)
    return float(sum(A[i] * A[n - i - 1] for i in range(n)))


FLAGS = [(), ("--canonicalize",), ("--convert-scf-to-cf",),
         ("--convert-scf-to-cf", "--canonicalize")]


@pytest.mark.parametrize("text", [SUM, NEST], ids=["sum", "nest"])
@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "print")
def test_reads_and_prints_what_mlir_opt_prints(text, flags):
    """mlir-opt-22 keeps the blocks in the order written (its passes too): what it prints has
    the uses before the definitions, and polyopt prints it back unchanged."""
    upstream = mlir_opt(text, *flags)
    assert str(polyopt.parse(upstream)) == upstream
    if not flags:
        assert str(polyopt.parse(text)) == upstream


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "print")
def test_upstream_output_has_forward_uses(flags):
    """The tests here are about forward references: in what mlir-opt-22 prints, SUM and NEST
    use values in blocks written before the blocks that define them."""
    for text in (SUM, NEST):
        func = polyopt.parse(mlir_opt(text, *flags)).body.ops[0]
        blocks = func.regions[0].blocks
        position = {id(b): k for k, b in enumerate(blocks)}
        forward = [op.name for b in blocks for op in b.ops for v in op.operands
                   if v.owner_block is not None and v.owner_block.parent is b.parent
                   and position[id(v.owner_block)] > position[id(b)]]
        assert forward, mlir_opt(text, *flags)


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "print")
@pytest.mark.parametrize("n", [0, 1, 7])
def test_runs_as_numpy(flags, n):
    rng = np.random.default_rng(n)
    A = rng.uniform(-1, 1, n)
    sum_fn = polyopt.compile(mlir_opt(SUM, *flags))["sum"]
    assert sum_fn(A.copy(), n) == pytest.approx(sum_reference(A), rel=1e-12, abs=1e-12)
    nest_fn = polyopt.compile(mlir_opt(NEST, *flags))["nest"]
    expected = sum(float(np.sum(A[:i])) for i in range(n))
    assert nest_fn(A.copy(), n) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_runs_as_mlir_runner(tmp_path, capfd):
    """polyopt run of a main whose loop counter and sum are used before their header block,
    against mlir-runner-22 on the same text."""
    from run_helpers import polyopt_run
    text = """func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %z = arith.constant 0 : i64
  cf.br ^header(%c0, %z : index, i64)
^body:
  %k = arith.index_cast %i : index to i64
  %sq = arith.muli %k, %k : i64
  %acc2 = arith.addi %acc, %sq : i64
  vector.print %acc2 : i64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^header(%i2, %acc2 : index, i64)
^header(%i: index, %acc: i64):
  %cond = arith.cmpi slt, %i, %c5 : index
  cf.cond_br %cond, ^body, ^exit
^exit:
  return
}
"""
    upstream = lower_and_run(text, ["--convert-vector-to-llvm", "--convert-to-llvm"])
    assert polyopt_run(tmp_path, capfd, text) == upstream == "0\n1\n5\n14\n30\n"
    canonical = mlir_opt(text, "--canonicalize")
    assert polyopt_run(tmp_path, capfd, canonical, name="canonical.mlir") == upstream


def test_polyopt_run_prints_as_mlir_runner(tmp_path, capfd):
    from run_helpers import polyopt_run
    text = """func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  cf.br ^header(%c0 : index)
^body:
  %k = arith.index_cast %i : index to i32
  vector.print %k : i32
  cf.br ^header(%next : index)
^header(%i: index):
  %next = arith.addi %i, %c1 : index
  %cond = arith.cmpi slt, %i, %c4 : index
  cf.cond_br %cond, ^body, ^exit
^exit:
  return
}
"""
    upstream = lower_and_run(text, ["--convert-vector-to-llvm", "--convert-to-llvm"])
    assert polyopt_run(tmp_path, capfd, text) == upstream == "0\n1\n2\n3\n"


# -- every kind of op parser --------------------------------------------------------------------
# each use is written in the block before the one that defines the values it reads: the op
# parsers compare an operand's type with the one they expect, and that comparison gives a
# forward reference its type

OPS_HEAD = """func.func private @ext(f32) -> f32
func.func @f(%M: memref<8x8xf32>, %n: index, %x: f32, %v: vector<4xf32>, %b: i1) {
  cf.br ^def
^use:
"""
OPS_DEFS = """  cf.br ^exit
^def:
  %m = memref.alloc() : memref<8x8xf32>
  %i = arith.addi %n, %n : index
  %j = arith.constant 1 : index
  %f = arith.addf %x, %x : f32
  %w = arith.addf %v, %v : vector<4xf32>
  %c = arith.xori %b, %b : i1
  %k = arith.index_cast %i : index to i32
  cf.br ^use
^exit:
  return
}
"""
OPS_USES = {
    "memref.load": "%0 = memref.load %m[%i, %j] : memref<8x8xf32>",
    "memref.store": "memref.store %f, %m[%i, %j] : memref<8x8xf32>",
    "affine.load": "%0 = affine.load %m[%i + 1, symbol(%j)] : memref<8x8xf32>",
    "affine.store": "affine.store %f, %m[%i, %j] : memref<8x8xf32>",
    "affine.apply": "%0 = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%j]",
    "affine.min": "%0 = affine.min affine_map<(d0)[s0] -> (d0, s0)>(%i)[%j]",
    "affine.for": "affine.for %q = %i to %j {\n  }",
    "affine.for_map": "affine.for %q = max affine_map<(d0)[s0] -> (d0, s0)>(%i)[%j] to 8 {\n  }",
    "affine.if": "affine.if affine_set<(d0) : (d0 >= 0)>(%i) {\n  }",
    "affine.vector_load": "%0 = affine.vector_load %m[%i, %j] : memref<8x8xf32>, vector<4xf32>",
    "scf.for": "scf.for %q = %i to %j step %j {\n  }",
    "scf.for_iter": "%0 = scf.for %q = %i to %j step %j iter_args(%a = %f) -> (f32) {\n    scf.yield %a : f32\n  }",
    "scf.if": "%0 = scf.if %c -> (f32) {\n    scf.yield %f : f32\n  } else {\n    scf.yield %x : f32\n  }",
    "scf.while": "%0 = scf.while (%a = %f) : (f32) -> f32 {\n    scf.condition(%c) %a : f32\n  } do {\n  ^bb0(%a: f32):\n    scf.yield %a : f32\n  }",
    "arith.select": "%0 = arith.select %c, %f, %x : f32",
    "arith.cmpf": "%0 = arith.cmpf olt, %f, %x : f32",
    "arith.index_cast": "%0 = arith.index_cast %k : i32 to index",
    "arith.sitofp": "%0 = arith.sitofp %k : i32 to f32",
    "func.call": "%0 = func.call @ext(%f) : (f32) -> f32",
    "memref.dim": "%0 = memref.dim %m, %j : memref<8x8xf32>",
    "memref.subview": "%0 = memref.subview %m[%i, 0][2, 2][1, 1] : memref<8x8xf32> to memref<2x2xf32, strided<[8, 1], offset: ?>>",
    "memref.cast": "%0 = memref.cast %m : memref<8x8xf32> to memref<?x?xf32>",
    "memref.dealloc": "memref.dealloc %m : memref<8x8xf32>",
    "memref.copy": "memref.copy %m, %M : memref<8x8xf32> to memref<8x8xf32>",
    "vector.broadcast": "%0 = vector.broadcast %f : f32 to vector<4xf32>",
    "vector.extract": "%0 = vector.extract %w[0] : f32 from vector<4xf32>",
    "vector.extract_dyn": "%0 = vector.extract %w[%i] : f32 from vector<4xf32>",
    "vector.insert": "%0 = vector.insert %f, %w[1] : f32 into vector<4xf32>",
    "vector.load": "%0 = vector.load %m[%i, %j] : memref<8x8xf32>, vector<4xf32>",
    "vector.store": "vector.store %w, %m[%i, %j] : memref<8x8xf32>, vector<4xf32>",
    "vector.fma": "%0 = vector.fma %w, %w, %w : vector<4xf32>",
    "vector.reduction": "%0 = vector.reduction <add>, %w : vector<4xf32> into f32",
    "vector.transfer_read": "%0 = vector.transfer_read %m[%i, %j], %f : memref<8x8xf32>, vector<4xf32>",
    "vector.print": "vector.print %f : f32",
    "math.sqrt": "%0 = math.sqrt %f : f32",
    "math.fma": "%0 = math.fma %f, %f, %x : f32",
    "arith.negf": "%0 = arith.negf %w : vector<4xf32>",
    "linalg.fill": "linalg.fill ins(%f : f32) outs(%m : memref<8x8xf32>)",
    "linalg.matmul": "linalg.matmul ins(%m, %m : memref<8x8xf32>, memref<8x8xf32>) outs(%M : memref<8x8xf32>)",
    "memref.alloc_dyn": "%0 = memref.alloc(%i) : memref<?xf32>",
    "memref.reinterpret_cast": "%0 = memref.reinterpret_cast %m to offset: [%i], sizes: [4], strides: [1] : memref<8x8xf32> to memref<4xf32, strided<[1], offset: ?>>",
    "affine.parallel": "affine.parallel (%q) = (%i) to (%j) {\n  }",
    "scf.parallel": "scf.parallel (%q) = (%i) to (%j) step (%j) {\n  }",
    "scf.index_switch": "scf.index_switch %i\n  case 1 {\n    scf.yield\n  }\n  default {\n  }",
    "generic_form": "%0 = \"arith.addf\"(%f, %x) : (f32, f32) -> f32",
}


@pytest.mark.parametrize("name", sorted(OPS_USES))
def test_op_parsers_take_forward_references(name):
    text = OPS_HEAD + "  " + OPS_USES[name] + "\n" + OPS_DEFS
    assert str(polyopt.parse(text)) == mlir_opt(text)


# -- result groups ------------------------------------------------------------------------------

def _func(body: str, result: str = "i32") -> str:
    return f"""func.func @f(%a: i32, %b: i32) -> {result} {{
{body}
}}
"""


ACCEPTED = {
    # %r#0 names the single result of %r:1, and %r the first of a group
    "group_of_one": _func("  %r:1 = arith.addi %a, %b : i32\n  return %r#0 : i32"),
    "bare_name_of_group": _func("  %r:2 = arith.addui_extended %a, %b : i32, i1\n"
                                "  return %r : i32"),
    "second_of_group": _func("  %r:2 = arith.addui_extended %a, %b : i32, i1\n"
                             "  return %r#1 : i1", "i1"),
    "hash_zero_of_a_plain_name": _func("  %r = arith.addi %a, %b : i32\n  return %r#0 : i32"),
    "forward_group": _func("  cf.br ^bb2\n^bb1:\n  return %r#1 : i1\n^bb2:\n"
                           "  %r:2 = arith.addui_extended %a, %b : i32, i1\n  cf.br ^bb1", "i1"),
    "forward_bare_name": _func("  cf.br ^bb2\n^bb1:\n  return %r : i32\n^bb2:\n"
                               "  %r:2 = arith.addui_extended %a, %b : i32, i1\n  cf.br ^bb1"),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_result_groups_read_as_mlir_opt_reads_them(name):
    text = ACCEPTED[name]
    assert str(polyopt.parse(text)) == mlir_opt(text)


REFUSED = {
    "number_out_of_range": _func("  %r:2 = arith.addui_extended %a, %b : i32, i1\n"
                                 "  return %r#2 : i32"),
    "number_of_a_plain_name": _func("  %r = arith.addi %a, %b : i32\n  return %r#1 : i32"),
    "defined_with_a_number": _func("  %r#1 = arith.addi %a, %b : i32\n  return %a : i32"),
    "wrong_type_of_a_named_result": _func("  %r, %s = arith.addui_extended %a, %b : i32, i1\n"
                                          "  return %s#0 : i32"),
    "forward_number_out_of_range": _func("  cf.br ^bb2\n^bb1:\n  return %r#2 : i32\n^bb2:\n"
                                         "  %r:2 = arith.addui_extended %a, %b : i32, i1\n"
                                         "  cf.br ^bb1"),
    "forward_wrong_type": _func("  cf.br ^bb2\n^bb1:\n  return %r#1 : i32\n^bb2:\n"
                                "  %r:2 = arith.addui_extended %a, %b : i32, i1\n"
                                "  cf.br ^bb1"),
    # forward references in general
    "forward_type_differs_from_definition": _func(
        "  cf.br ^bb1\n^bb2:\n  %s2 = arith.addi %s, %s : i64\n  return %a : i32\n"
        "^bb1:\n  %s = arith.addi %a, %b : i32\n  cf.br ^bb2"),
    "forward_uses_disagree": _func(
        "  cf.br ^bb1\n^bb2:\n  %s2 = arith.addi %s, %s : i64\n  %s3 = arith.addi %s, %s : i32\n"
        "  return %a : i32\n^bb1:\n  %s = arith.addi %a, %b : i32\n  cf.br ^bb2"),
    "never_defined": _func("  cf.br ^bb1\n^bb2:\n  %s2 = arith.addi %q, %q : i32\n"
                           "  return %a : i32\n^bb1:\n  cf.br ^bb2"),
    "never_defined_in_a_nested_region": _func(
        "  %c0 = arith.constant 0 : index\n  scf.for %i = %c0 to %c0 step %c0 {\n"
        "    %x = arith.addi %q, %a : i32\n  }\n  return %a : i32"),
    "defined_after_the_use_in_the_same_block": _func(
        "  %s2 = arith.addi %s, %s : i32\n  %s = arith.addi %a, %b : i32\n  return %s2 : i32"),
    "defined_in_a_block_that_does_not_dominate": _func(
        "  %c = arith.cmpi slt, %a, %b : i32\n  cf.cond_br %c, ^bb1, ^bb2\n^bb1:\n"
        "  return %s : i32\n^bb2:\n  %s = arith.addi %a, %b : i32\n  cf.br ^bb1"),
    "defined_in_a_region_after_the_use": _func(
        "  %s2 = arith.addi %s, %s : i32\n  %c0 = arith.constant 0 : index\n"
        "  scf.for %i = %c0 to %c0 step %c0 {\n    %s = arith.addi %a, %b : i32\n  }\n"
        "  return %a : i32"),
    "redefined_after_a_forward_use": _func(
        "  cf.br ^bb1\n^bb2:\n  %s2 = arith.addi %s, %s : i32\n  return %a : i32\n"
        "^bb1:\n  %s = arith.addi %a, %b : i32\n  %s = arith.addi %a, %b : i32\n  cf.br ^bb2"),
    # the bound names the loop's own induction variable: affine.for resolves its operands
    # before its region, so the name is in use when the region declares it
    "affine_induction_variable_in_its_own_bound": _func(
        "  affine.for %i0 = affine_map<(d0) -> (d0 floordiv 4)>(%i0) to 10 {\n  }\n"
        "  return %a : i32"),
    "induction_variable_named_as_a_value_in_scope": _func(
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
        "  scf.for %c1 = %c0 to %c0 step %c1 {\n  }\n  return %a : i32"),
    # the generic form resolves operands after the regions: names defined inside are gone
    "generic_operand_defined_in_its_region": _func(
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
        "  \"scf.for\"(%c0, %x, %c1) ({\n  ^bb0(%i: index):\n    %x = arith.addi %c0, %c0 : index\n"
        "    scf.yield\n  }) : (index, index, index) -> ()\n  return %a : i32"),
    "generic_operand_of_the_wrong_type": _func(
        "  %c0 = arith.constant 0 : index\n"
        "  %x = \"arith.addi\"(%c0, %a) : (index, index) -> index\n  return %a : i32"),
    "used_outside_the_function_defining_it": """func.func @g() -> i32 {
  return %x : i32
}
func.func @f(%a: i32) -> i32 {
  %x = arith.addi %a, %a : i32
  return %x : i32
}
""",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_mlir_opts_message(name):
    text = REFUSED[name]
    expected = mlir_opt_error(text, filename="bad.mlir")
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, filename="bad.mlir")
    ours = info.value.render().splitlines()[0]
    if "use of undeclared SSA value name" in expected:
        # the same place and words; polyopt names the value too
        assert ours.startswith(expected + " '%"), (ours, expected)
    else:
        assert ours == expected


def test_cli_reports_an_undefined_forward_use_with_status_1(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(REFUSED["never_defined"])
    assert main(["opt", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{path}:4:20: error: use of undeclared SSA value name '%q'")
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("text", [SUM, NEST], ids=["sum", "nest"])
def test_generic_form_with_forward_uses_reads_back(text):
    """mlir-opt-22's generic form of the same functions (the operands of ``"cf.br"`` and
    ``"arith.addi"`` named before their definitions) reads to the same module."""
    generic = mlir_opt(text, "--mlir-print-op-generic")
    assert str(polyopt.parse(generic)) == mlir_opt(text)


# the loop body before its header, reading only the header's block arguments
COUNT = """func.func @count(%A: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^header(%c0, %z : index, f64)
^body:
  %v = memref.load %A[%i] : memref<?xf64>
  %acc2 = arith.addf %acc, %v : f64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^header(%i2, %acc2 : index, f64)
^header(%i: index, %acc: f64):
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^body, ^exit
^exit:
  return %acc : f64
}
"""


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "print")
def test_the_pipeline_takes_forward_uses(flags):
    """The --hopt pipeline (which lifts the branches back to scf) on a function whose loop
    body comes before its header."""
    A = np.random.default_rng(3).uniform(-1, 1, 9)
    fn = polyopt.compile(mlir_opt(COUNT, *flags), hopt=True)["count"]
    assert fn(A.copy(), 9) == pytest.approx(float(np.sum(A)), rel=1e-12, abs=1e-12)


def test_clone_maps_uses_written_before_their_definitions():
    """Region.clone (used by the passes that work on a copy, e.g. lift-cf-to-scf) maps an
    operand defined in a later block to the clone of its definition, not to the original."""
    module = polyopt.parse(SUM)
    region = module.body.ops[0].regions[0]
    mapping: dict = {}
    copy = region.clone(mapping)
    originals = {id(v) for b in region.blocks for v in b.args} | \
        {id(r) for b in region.blocks for op in b.ops for r in op.results}
    for b in copy.blocks:
        for op in b.ops:
            assert not any(id(v) in originals for v in op.operands), op.name
    body, header = copy.blocks[1], copy.blocks[2]
    assert body.ops[1].operands[1] is header.ops[0].results[0]   # affine.load %A[%lim - 1]
