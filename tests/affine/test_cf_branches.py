"""Functions of several blocks joined by ``cf.br``/``cf.cond_br``/``cf.switch``: read, printed
and verified as mlir-opt-22 does (what its ``--convert-scf-to-cf`` prints is the usual input)."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from upstream_mlir import mlir_opt, mlir_opt_error

SUM = """func.func @sum(%A: memref<?xf64>, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  cf.br ^bb1(%c0, %z : index, f64)
^bb1(%i: index, %acc: f64):
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^bb2, ^bb3
^bb2:
  %v = memref.load %A[%i] : memref<?xf64>
  %acc2 = arith.addf %acc, %v : f64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^bb1(%i2, %acc2 : index, f64)
^bb3:
  return %acc : f64
}
"""

# block names are per region; a switch's case values print unsigned; a block no branch reaches
SWITCH = """func.func @f(%c: i1, %x: i32, %b: i8) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2(%x : i32)
^bb1:
  %r = scf.execute_region -> i32 {
    cf.br ^bb1
  ^bb1:
    %y = arith.addi %x, %x : i32
    scf.yield %y : i32
  }
  cf.br ^bb2(%r : i32)
^bb2(%a: i32):
  cf.switch %x : i32, [
    default: ^bb3(%a : i32),
    42: ^bb4,
    -7: ^bb3(%x : i32)
  ]
^bb3(%v: i32):
  cf.switch %b : i8, [
    default: ^bb4,
    -1: ^bb5
  ]
^bb4:
  return %x : i32
^bb5:
  return %v : i32
^bb6:
  return %x : i32
}
"""

# a block referenced before its header; a cond_br passing values to both successors
FORWARD = """func.func @g(%c: i1, %x: f32, %y: f32) -> f32 {
  cf.cond_br %c, ^later(%x : f32), ^later(%y : f32) {hint = 1 : i32}
^later(%v: f32):
  return %v : f32
}
"""


@pytest.mark.parametrize("text", [SUM, SWITCH, FORWARD], ids=["loop", "switch", "forward"])
def test_prints_as_mlir_opt(text):
    assert str(polyopt.parse(text)) == mlir_opt(text)


@pytest.mark.parametrize("text", [SUM, SWITCH, FORWARD], ids=["loop", "switch", "forward"])
def test_generic_form_reads_back(text):
    """The generic form (successors in ``[...]``, the operand segments as properties) is what
    mlir-opt prints, and reads back to the same module."""
    upstream_generic = mlir_opt(text, "--mlir-print-op-generic")
    assert str(polyopt.parse(upstream_generic)) == mlir_opt(text)
    ours = polyopt.parse(text)
    from polyopt.affine.printer import print_module
    generic = print_module(ours, generic=True)
    for line in upstream_generic.splitlines():     # the cf ops and the block headers agree
        if '"cf.' in line or line.lstrip().startswith("^"):
            assert line in generic, (line, generic)


def test_output_of_convert_scf_to_cf_reads_back():
    scf = """func.func @mm(%A: memref<5x6xf64>, %B: memref<6x7xf64>, %C: memref<5x7xf64>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 7 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<5x6xf64>
        %b = affine.load %B[%k, %j] : memref<6x7xf64>
        %c = affine.load %C[%i, %j] : memref<5x7xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<5x7xf64>
      }
    }
  }
  return
}
"""
    cf = mlir_opt(scf, "--lower-affine", "--convert-scf-to-cf")
    assert "cf.cond_br" in cf
    assert str(polyopt.parse(cf)) == cf


INVALID = {
    "no_terminator": """func.func @f() {
  cf.br ^bb1
^bb1:
  %c = arith.constant 0 : i32
}
""",
    "entry_predecessor": """func.func @f() {
^bb1:
  cf.br ^bb1
}
""",
    "operand_count": """func.func @f(%x: i32) {
  cf.br ^bb1(%x : i32)
^bb1:
  return
}
""",
    "operand_type": """func.func @f(%x: i32) {
  cf.br ^bb1(%x : i32)
^bb1(%y: i64):
  return
}
""",
    "dominance": """func.func @f(%x: i32, %c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %y = arith.addi %x, %x : i32
  cf.br ^bb2
^bb2:
  %z = arith.addi %y, %y : i32
  return
}
""",
    "block_arg_dominance": """func.func @f(%x: i32, %c: i1) {
  cf.cond_br %c, ^bb1(%x : i32), ^bb2
^bb1(%a: i32):
  cf.br ^bb2
^bb2:
  %z = arith.addi %a, %a : i32
  return
}
""",
    "single_block_region": """func.func @f(%c: i1) {
  scf.if %c {
    cf.br ^bb1
  ^bb1:
    scf.yield
  }
  return
}
""",
    "affine_for_blocks": """func.func @f() {
  affine.for %i = 0 to 4 {
    cf.br ^bb1
  ^bb1:
  }
  return
}
""",
    "undefined_block": """func.func @f(%c: i1) {
  cf.br ^bb3
^bb1:
  return
}
""",
    "redefined_block": """func.func @f(%c: i1) {
  cf.br ^bb1
^bb1:
  return
^bb1:
  return
}
""",
    "branch_not_last": """func.func @f(%c: i1) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return
^bb2:
  cf.br ^bb1
  return
}
""",
    "condition_type": """func.func @f(%x: i32) {
  cf.cond_br %x, ^bb1, ^bb1
^bb1:
  return
}
""",
    # MLIR checks this when it enters the block, before looking for its terminator
    "branch_before_the_end": """func.func @f(%x: i32) -> i32 {
  cf.br ^bb1
  %y = arith.addi %x, %x : i32
^bb1:
  return %x : i32
}
""",
    "generic_entry_successor": """func.func @f(%x: i32) {
  "cf.br"(%x)[^bb1] : (i32) -> ()
^bb1(%y: i32):
  "cf.br"()[^bb0] : () -> ()
}
""",
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_branches_are_refused_as_mlir_opt_does(name):
    text = INVALID[name]
    expected = mlir_opt_error(text, filename="t.mlir")
    with pytest.raises(PolyoptError) as e:
        polyopt.parse(text, filename="t.mlir")
    assert e.value.render("t.mlir").splitlines()[0] == expected


def test_a_switch_case_that_does_not_fit_its_type_is_an_error():
    """mlir-opt-22 truncates 5000000000 to 705032704 without a word; that branch would go
    elsewhere than written."""
    text = """func.func @f(%x: i32) {
  cf.switch %x : i32, [
    default: ^bb1,
    5000000000: ^bb1
  ]
^bb1:
  return
}
"""
    with pytest.raises(PolyoptError) as e:
        polyopt.parse(text, filename="t.mlir")
    assert e.value.render("t.mlir").startswith(
        "t.mlir:4:5: error: case value is out of range for 'i32'")


def test_clone_maps_successors_to_the_cloned_blocks():
    module = polyopt.parse(SUM)
    func = next(op for op in module.walk() if op.name == "func.func")
    copy = func.clone()
    old_blocks = {id(b) for b in func.regions[0].blocks}
    new_blocks = copy.regions[0].blocks
    for b in new_blocks:
        for s in b.successors:
            assert id(s) not in old_blocks and any(s is nb for nb in new_blocks)


# from MLIR's test/Dialect/ControlFlow/ops.mlir, in what mlir-opt-22 reads
UPSTREAM_OPS = """func.func @assert(%arg : i1) {
  cf.assert %arg, "Some message in case this assertion fails."
  return
}
func.func @switch_result_number(%arg0: i32) {
  %0:2 = "test.op_with_two_results"() : () -> (i32, i32)
  cf.switch %arg0 : i32, [
    default: ^bb2,
    0: ^bb1(%0#0 : i32)
  ]
  ^bb1(%1: i32):
    return
  ^bb2:
    return
}
func.func @cond_weights(%cond: i1) {
  cf.cond_br %cond weights([60, 40]), ^bb1, ^bb2
  ^bb1:
    return
  ^bb2:
    return
}
func.func @switch_i1_boundary(%flag: i1) {
  cf.switch %flag : i1, [default: ^bb1, 1: ^bb1]
^bb1:
  return
}
func.func @switch_i8_boundaries(%flag: i8) {
  cf.switch %flag : i8, [default: ^bb1, -128: ^bb1, 255: ^bb1]
^bb1:
  return
}
func.func @switch_i64_boundaries(%flag: i64) {
  cf.switch %flag : i64, [
    default: ^bb1,
    -9223372036854775808: ^bb1
  ]
^bb1:
  return
}
"""


def test_upstream_ops_file_prints_as_mlir_opt():
    assert str(polyopt.parse(UPSTREAM_OPS)) == mlir_opt(UPSTREAM_OPS,
                                                        "--allow-unregistered-dialect")
    generic = mlir_opt(UPSTREAM_OPS, "--allow-unregistered-dialect", "--mlir-print-op-generic")
    assert str(polyopt.parse(generic)) == str(polyopt.parse(UPSTREAM_OPS))


@pytest.mark.parametrize("body, message", [
    ("cf.cond_br %c weights([100]), ^bb1, ^bb1",
     "expects number of branch weights to match number of successors: 1 vs 2"),
    ("cf.cond_br %c weights([0, 0]), ^bb1, ^bb1", "branch weights cannot all be zero"),
    ("cf.switch %x : i8, [default: ^bb1, 256: ^bb1]", "case value is out of range for 'i8'"),
    ("cf.switch %x : i8, [default: ^bb1, -129: ^bb1]", "case value is out of range for 'i8'"),
    ('cf.switch %x : i8, [default: ^bb1, "hello": ^bb1]', "expected integer value"),
    ("cf.switch %x : i8, [45: ^bb1]", "expected 'default'"),
])
def test_upstream_invalid_file(body, message):
    """The messages of MLIR's test/Dialect/ControlFlow/invalid.mlir (mlir-opt-22 truncates an
    out-of-range case value without a word; newer MLIR refuses it, as polyopt does)."""
    text = f"func.func @f(%c: i1, %x: i8) {{\n  {body}\n^bb1:\n  return\n}}\n"
    with pytest.raises(PolyoptError) as e:
        polyopt.parse(text)
    assert message in str(e.value)


def test_post_dominators_with_several_returns():
    """^bb2's paths end at two different returns (one of them through the loop): no block
    post-dominates it.  The iteration over several exits took the first successor it had met
    (the return ^bb4) when the other one's chain reached the other exit."""
    from polyopt.affine.dominance import PostDominanceInfo
    text = """func.func @f(%n: index, %c: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^bb1(%c0 : index)
^bb1(%i: index):
  %t = arith.cmpi slt, %i, %n : index
  cf.cond_br %t, ^bb2, ^bb5
^bb2:
  cf.cond_br %c, ^bb4, ^bb3
^bb3:
  %i1 = arith.addi %i, %c1 : index
  cf.br ^bb1(%i1 : index)
^bb4:
  return %i : index
^bb5:
  return %n : index
}
"""
    func = polyopt.parse(text).regions[0].blocks[0].ops[0]
    blocks = func.regions[0].blocks
    pdom = PostDominanceInfo(func.regions[0])
    ipdom = [pdom.ipdom(b) for b in blocks]
    expected = [blocks[1], None, None, blocks[1], None, None]
    assert [blocks.index(b) if b is not None else None for b in ipdom] == \
        [blocks.index(b) if b is not None else None for b in expected]
