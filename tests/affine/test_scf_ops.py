"""The scf dialect: every op in custom and generic form printed exactly as mlir-opt-22 prints
it (SSA names, elided terminators, spacing), our generic form accepted by mlir-opt-22, and
invalid programs refused with mlir-opt-22's message at its location."""

from __future__ import annotations

import textwrap

import pytest

from polyopt.affine.diagnostics import ParseError, PolyoptError, VerifyError
from polyopt.affine.dialects.arith import ConstantOp
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.dialects.scf import (ConditionOp, ForOp, IfOp, IndexSwitchOp, ParallelOp,
                                         ReduceOp, WhileOp, YieldOp)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FunctionType, f32, i1, index
from polyopt.affine.verifier import verify
from upstream_mlir import mlir_opt, run_mlir_opt


def ours(text: str, generic: bool = False) -> str:
    printed = print_module(parse(text, "t.mlir"), generic=generic)
    if not generic:
        assert print_module(parse(printed, "printed.mlir")) == printed  # a fixed point
    return printed


# ---------------------------------------------------------------------------------------------
# round trips: one program per op family, written loosely (the printer canonicalizes)

CASES = {
    "for": """\
func.func @f(%A: memref<?xf32>, %n: index, %x: i32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %v = memref.load %A[%i] : memref<?xf32>
    %s = arith.maximumf %acc, %v : f32
    scf.yield %s : f32
  }
  scf.for %i = %c0 to %n step %c1 {
    memref.store %z, %A[%i] : memref<?xf32>
  } {tag = "plain"}
  %c10 = arith.constant 10 : i32
  %c2 = arith.constant 2 : i32
  scf.for %k = %x to %c10 step %c2 : i32 {
  }
  %u:2 = scf.for unsigned %k = %x to %c10 step %c2 iter_args(%p = %x, %q = %z) -> (i32, f32) : i32 {
    scf.yield %k, %q : i32, f32
  }
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %i to %n step %c1 {
      memref.store %z, %A[%j] : memref<?xf32>
    }
  }
  return %r : f32
}
""",
    "if": """\
func.func @f(%A: memref<?xf32>, %n: index, %c: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %t = scf.if %c -> (f32) {
    %v = memref.load %A[%c0] : memref<?xf32>
    scf.yield %v : f32
  } else {
    scf.yield %z : f32
  }
  scf.if %c {
    memref.store %z, %A[%c0] : memref<?xf32>
  }
  %a, %b = scf.if %c -> (f32, index) {
    scf.yield %t, %c0 : f32, index
  } else {
    scf.yield %z, %c1 : f32, index
  }
  scf.if %c {
  } else {
    memref.store %z, %A[%c0] : memref<?xf32>
  } {note}
  scf.if %c {
    scf.yield
  } else {
    scf.yield
  }
  return %t : f32
}
""",
    "parallel": """\
func.func @f(%A: memref<?x?xf32>, %n: index, %m: index) -> (f32, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 0.0 : f32
  %zi = arith.constant 0 : i32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c2) {
    memref.store %z, %A[%i, %j] : memref<?x?xf32>
  }
  %s, %t = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z, %zi) -> (f32, i32) {
    %v = memref.load %A[%i, %i] : memref<?x?xf32>
    %w = arith.fptosi %v : f32 to i32
    scf.reduce(%v, %w : f32, i32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.maximumf %a, %b : f32
      scf.reduce.return %r : f32
    }, {
    ^bb0(%a: i32, %b: i32):
      %r = arith.maxsi %a, %b : i32
      scf.reduce.return %r {k} : i32
    }
  } {mapping = 1}
  %one = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z) -> f32 {
    scf.reduce(%z : f32) {
    ^bb0(%a: f32, %b: f32):
      scf.reduce.return %a : f32
    }
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.reduce
  }
  return %s, %t : f32, i32
}
""",
    "while": """\
func.func @f(%n: index, %x: f32, %a: i32) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w:2 = scf.while (%p = %c0, %q = %x) : (index, f32) -> (index, f32) {
    %cond = arith.cmpi slt, %p, %n : index
    scf.condition(%cond) %p, %q : index, f32
  } do {
  ^bb0(%p2: index, %q2: f32):
    %r = arith.maxsi %p2, %c1 : index
    scf.yield {k} %r, %q2 : index, f32
  } attributes {tag = 1}
  %z = scf.while : () -> i32 {
    %t = arith.constant true
    scf.condition(%t) {k} %a : i32
  } do {
  ^bb0(%q: i32):
    scf.yield
  }
  scf.while : () -> () {
    %f = arith.constant false
    scf.condition(%f)
  } do {
    scf.yield
  }
  return %w#0 : index
}
""",
    "execute_region": """\
func.func @f(%x: f32, %a: i32) -> f32 {
  %r = scf.execute_region -> f32 {
    scf.yield %x : f32
  } {e}
  %p:2 = scf.execute_region -> (i32, f32) no_inline {
    scf.yield %a, %r : i32, f32
  }
  scf.execute_region {
    scf.yield
  }
  return %p#1 : f32
}
""",
    "index_switch": """\
func.func @f(%n: index, %x: f32, %a: i32) -> f32 {
  %r = scf.index_switch %n -> f32
  case 2 {
    scf.yield %x : f32
  }
  case -5 {
    %y = arith.negf %x : f32
    scf.yield %y : f32
  }
  default {
    scf.yield %x : f32
  }
  scf.index_switch %n {q}
  case 0 {
    scf.yield
  }
  default {
  }
  scf.index_switch %n
  default {
    scf.yield {a}
  }
  %s:2 = scf.index_switch %n -> i32, f32
  default {
    scf.yield %a, %x : i32, f32
  }
  return %r : f32
}
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_prints_as_mlir_opt(name):
    assert ours(CASES[name]) == mlir_opt(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_parses_mlir_opt_generic_form(name):
    generic = mlir_opt(CASES[name], "--mlir-print-op-generic")
    assert '"scf.' in generic
    assert ours(generic) == mlir_opt(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_our_generic_form_is_accepted_by_mlir_opt(name):
    generic = ours(CASES[name], generic=True)
    assert '"scf.' in generic
    assert mlir_opt(generic) == mlir_opt(CASES[name])


def test_quirks_of_the_custom_form():
    printed = ours(CASES["for"] + CASES["parallel"].replace("@f", "@g") +
                   CASES["index_switch"].replace("@f", "@h"))
    # mlir-opt's spacing: two spaces before an integer loop's type, one after scf.reduce and
    # after the switch operand; the empty yields of scf.for/scf.if and of a default region are
    # elided, scf.parallel's scf.reduce and the case regions' yields are not
    assert "step %c2_i32  : i32 {" in printed
    assert "-> (i32, f32)  : i32 {" in printed
    assert "      scf.reduce \n" in printed
    assert "scf.index_switch %arg0 \n" in printed and "scf.index_switch %arg0 -> f32 \n" in printed
    assert "    default {\n    }\n" in printed
    assert "    case 0 {\n      scf.yield\n    }\n" in printed


def test_op_classes_and_accessors():
    module = parse(CASES["for"] + CASES["while"].replace("@f", "@w") +
                   CASES["parallel"].replace("@f", "@p") +
                   CASES["index_switch"].replace("@f", "@s"))
    loops = [op for op in module.walk() if isinstance(op, ForOp)]
    first = loops[0]
    assert first.lower_bound.defining_op.attributes["value"].value == 0
    assert len(first.inits) == 1 and first.region_iter_args[0].type == f32
    assert isinstance(first.yield_op, YieldOp) and first.induction_var.type == index
    assert [l.is_unsigned for l in loops] == [False, False, False, True, False, False]
    (w,) = [op for op in module.walk() if isinstance(op, WhileOp)][:1]
    assert isinstance(w.condition_op, ConditionOp) and len(w.condition_op.args) == 2
    par = [op for op in module.walk() if isinstance(op, ParallelOp)]
    assert [p.num_dims for p in par] == [2, 1, 1, 1]
    assert isinstance(par[1].reduce_op, ReduceOp) and len(par[1].reduce_op.regions) == 2
    sw = next(op for op in module.walk() if isinstance(op, IndexSwitchOp))
    assert sw.cases == (2, -5) and len(sw.case_regions) == 2


def test_builders_make_verified_ops_that_print_as_mlir_opt():
    func = FuncOp.build("f", FunctionType((index, f32), (f32,)))
    n, x = func.body.args

    def add(op):
        func.body.append(op)
        return op
    c0 = add(ConstantOp.build(0, index)).result
    c1 = add(ConstantOp.build(1, index)).result
    loop = add(ForOp.build(c0, n, c1, [x]))
    loop.body.append(YieldOp.build([loop.region_iter_args[0]]))
    add(ForOp.build(c0, n, c1))
    add(ParallelOp.build([c0], [n], [c1]))
    cond = add(ConstantOp.build(1, i1)).result
    branch = add(IfOp.build(cond, [f32], with_else=True))
    branch.then_block.append(YieldOp.build([loop.results[0]]))
    branch.else_block.append(YieldOp.build([x]))
    add(IfOp.build(cond))
    w = add(WhileOp.build([c0], [index]))
    w.before_block.append(ConditionOp.build(cond, [w.before_block.args[0]]))
    w.after_block.append(YieldOp.build([w.after_block.args[0]]))
    add(ReturnOp(operands=[branch.results[0]]))
    module = ModuleOp.build()
    module.body.append(func)
    verify(module)
    printed = print_module(module)
    assert printed == mlir_opt(printed)
    assert printed.count("scf.yield") == 4   # the empty yields of the plain loop/if are elided


# ---------------------------------------------------------------------------------------------
# errors: the first error line, as mlir-opt-22 reports it

HEADER = ("func.func @f(%n: index, %m: index, %a: i32, %b: i32, %x: f32, %c: i1, "
          "%A: memref<?xf32>) {\n  %c0 = arith.constant 0 : index\n"
          "  %c1 = arith.constant 1 : index\n")


def program(body: str) -> str:
    return HEADER + textwrap.indent(textwrap.dedent(body).strip("\n"), "  ") + \
        "\n  return\n}\n"


ERRORS = {
    "for_operand_type": ("""
        scf.for %i = %x to %x step %x : f32 {
        }""", "4:3: error: 'scf.for' op operand #0 must be signless integer or index, but got "
              "'f32'"),
    "for_bound_type": ("""
        scf.for %i = %c0 to %a step %c1 {
        }""", "4:23: error: use of value '%a' expects different type than prior uses: 'index' "
              "vs 'i32'"),
    "for_iter_count": ("""
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f32, f32) {
          scf.yield %s : f32
        }""", "4:8: error: custom op 'scf.for' mismatch in number of loop-carried values and "
              "defined values"),
    "for_no_step": ("""
        scf.for %i = %c0 to %n {
        }""", "4:26: error: custom op 'scf.for' expected 'step'"),
    "for_yield_count": ("""
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f32) {
          %y = arith.addf %s, %s : f32
        }""", "4:8: error: 'scf.for' op along control flow edge from Operation scf.yield to "
              "Region #0: region branch point has 0 operands, but region successor needs 1 "
              "inputs"),
    "for_yield_type": ("""
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %x) -> (f32) {
          scf.yield %a : i32
        }""", "4:8: error: 'scf.for' op 0-th region iter_arg and 0-th yielded value have "
              "different type: 'f32' != 'i32'"),
    "for_condition_terminator": ("""
        scf.for %i = %c0 to %n step %c1 {
          scf.condition(%c)
        }""", "5:5: error: 'scf.condition' op expects parent op 'scf.while'"),
    "generic_for_types": ("""
        "scf.for"(%c0, %a, %c1) ({
        ^bb0(%i: index):
          "scf.yield"() : () -> ()
        }) : (index, i32, index) -> ()""",
        "4:3: error: 'scf.for' op failed to verify that all of {lowerBound, upperBound, step} "
        "have same type"),
    "generic_for_iv_type": ("""
        "scf.for"(%c0, %n, %c1) ({
        ^bb0(%i: i32):
          "scf.yield"() : () -> ()
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.for' op expected induction variable to be same type as bounds and "
        "step"),
    "generic_for_iter_args": ("""
        %r = "scf.for"(%c0, %n, %c1, %x) ({
        ^bb0(%i: index):
          "scf.yield"(%x) : (f32) -> ()
        }) : (index, index, index, f32) -> (f32)""",
        "4:8: error: 'scf.for' op different number of inits and region iter_args: 1 != 0"),
    "generic_for_result_type": ("""
        %r = "scf.for"(%c0, %n, %c1, %x) ({
        ^bb0(%i: index, %s: f32):
          "scf.yield"(%s) : (f32) -> ()
        }) : (index, index, index, f32) -> (i32)""",
        "4:8: error: 'scf.for' op 0-th region iter_arg and 0-th loop result have different "
        "type: 'f32' != 'i32'"),
    "generic_for_empty": ("""
        "scf.for"(%c0, %n, %c1) ({
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.for' op region #0 ('region') failed to verify constraint: region "
        "with 1 blocks"),
    "if_condition_type": ("""
        scf.if %a {
        }""", "4:10: error: use of value '%a' expects different type than prior uses: 'i1' vs "
              "'i32'"),
    "if_results_without_else": ("""
        %r = scf.if %c -> (f32) {
          scf.yield %x : f32
        }""", "4:8: error: 'scf.if' op must have an else block if defining values"),
    "if_yield_type": ("""
        %r = scf.if %c -> (f32) {
          scf.yield %a : i32
        } else {
          scf.yield %x : f32
        }""", "4:8: error: 'scf.if' op along control flow edge from Operation scf.yield to "
              "parent: successor operand type #0 'i32' should match successor input type #0 "
              "'f32'"),
    "if_yield_count": ("""
        scf.if %c {
          scf.yield %x : f32
        }""", "4:3: error: 'scf.if' op along control flow edge from Operation scf.yield to "
              "parent: region branch point has 1 operands, but region successor needs 0 "
              "inputs"),
    "if_block_arguments": ("""
        scf.if %c {
        ^bb0(%z: i32):
          scf.yield
        }""", "4:3: error: 'scf.if' op region #0 should have no arguments"),
    "generic_if_two_blocks": ("""
        "scf.if"(%c) ({
          "scf.yield"() : () -> ()
        ^bb1:
          "scf.yield"() : () -> ()
        }, {
        }) : (i1) -> ()""", "4:3: error: 'scf.if' op expects region #0 to have 0 or 1 blocks"),
    "yield_outside": ("""
        scf.yield""", "4:3: error: 'scf.yield' op expects parent op to be one of "
                      "'scf.execute_region, scf.for, scf.if, scf.index_switch, scf.while'"),
    "yield_in_affine_for": ("""
        affine.for %i = 0 to 4 {
          scf.yield
        }""", "5:5: error: 'scf.yield' op expects parent op to be one of 'scf.execute_region, "
              "scf.for, scf.if, scf.index_switch, scf.while'"),
    "parallel_bound_count": ("""
        scf.parallel (%i, %j) = (%c0) to (%n, %m) step (%c1, %c1) {
        }""", "4:27: error: custom op 'scf.parallel' expected 2 operands"),
    "parallel_zero_step": ("""
        scf.parallel (%i) = (%c0) to (%n) step (%c0) {
        }""", "4:3: error: 'scf.parallel' op constant step operand must be positive"),
    "parallel_no_dims": ("""
        scf.parallel () = () to () step () {
        }""", "4:3: error: 'scf.parallel' op needs at least one tuple element for lowerBound, "
              "upperBound and step"),
    "parallel_reductions": ("""
        %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%x) -> f32 {
          scf.reduce
        }""", "4:8: error: 'scf.parallel' op expects number of results: 1 to be the same as "
              "number of reductions: 0"),
    "parallel_reduce_type": ("""
        %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%x) -> f32 {
          scf.reduce(%a : i32) {
          ^bb0(%p: i32, %q: i32):
            scf.reduce.return %p : i32
          }
        }""", "5:5: error: 'scf.reduce' op expects type of 0-th reduction operand: 'i32' to be "
              "the same as the 0-th result type: 'f32'"),
    "generic_parallel_segments": ("""
        "scf.parallel"(%c0, %n, %c1) ({
        ^bb0(%i: index):
          "scf.reduce"() : () -> ()
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.parallel' op operand count (3) does not match with the total size "
        "(0) specified in attribute 'operandSegmentSizes'"),
    "generic_parallel_ivs": ("""
        "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
        ^bb0(%i: index, %j: index):
          "scf.reduce"() : () -> ()
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.parallel' op expects the same number of induction variables: 2 as "
        "bound and step values: 1"),
    "generic_parallel_iv_type": ("""
        "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
        ^bb0(%i: i32):
          "scf.reduce"() : () -> ()
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.parallel' op expects arguments for the induction variable to be of "
        "index type"),
    "generic_parallel_terminator": ("""
        "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
        ^bb0(%i: index):
          "scf.yield"() : () -> ()
        }) : (index, index, index) -> ()""",
        "4:3: error: 'scf.parallel' op expects body to terminate with 'scf.reduce'"),
    "reduce_arguments": ("""
        %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%x) -> f32 {
          scf.reduce(%x : f32) {
          ^bb0(%p: f32, %q: i32):
            scf.reduce.return %p : f32
          }
        }""", "5:5: error: 'scf.reduce' op expected two block arguments with type 'f32' in the "
              "0-th reduction region"),
    "reduce_return_type": ("""
        %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%x) -> f32 {
          scf.reduce(%x : f32) {
          ^bb0(%p: f32, %q: f32):
            scf.reduce.return %a : i32
          }
        }""", "7:7: error: 'scf.reduce.return' op must have type 'f32' (the type of the "
              "reduction inputs)"),
    "reduce_operand_types": ("""
        %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%x) -> f32 {
          scf.reduce(%x, %x : f32) {
          ^bb0(%p: f32, %q: f32):
            scf.reduce.return %p : f32
          }
        }""", "5:16: error: custom op 'scf.reduce' number of operands and types do not match: "
              "got 2 operands and 1 types"),
    "reduce_in_for": ("""
        scf.for %i = %c0 to %n step %c1 {
          scf.reduce
        }""", "5:5: error: 'scf.reduce' op expects parent op 'scf.parallel'"),
    "reduce_return_outside": ("""
        scf.reduce.return %x : f32""", "4:3: error: 'scf.reduce.return' op expects parent op "
                                       "'scf.reduce'"),
    "while_result_types": ("""
        %r = scf.while (%p = %c0) : (index) -> f32 {
          scf.condition(%c) %p : index
        } do {
        ^bb0(%q: f32):
          scf.yield %c0 : index
        }""", "4:8: error: 'scf.while' op along control flow edge from Operation scf.condition "
              "to parent: successor operand type #0 'index' should match successor input type "
              "#0 'f32'"),
    "while_after_arguments": ("""
        %r = scf.while (%p = %c0) : (index) -> index {
          scf.condition(%c) %p : index
        } do {
        ^bb0(%q: f32):
          scf.yield %c0 : index
        }""", "4:8: error: 'scf.while' op along control flow edge from Operation scf.condition "
              "to Region #1: successor operand type #0 'index' should match successor input "
              "type #0 'f32'"),
    "while_yield_type": ("""
        %r = scf.while (%p = %c0) : (index) -> index {
          scf.condition(%c) %p : index
        } do {
        ^bb0(%q: index):
          scf.yield %x : f32
        }""", "4:8: error: 'scf.while' op along control flow edge from Operation scf.yield to "
              "Region #0: successor operand type #0 'f32' should match successor input type #0 "
              "'index'"),
    "while_no_condition": ("""
        %r = scf.while (%p = %c0) : (index) -> index {
          scf.yield %p : index
        } do {
        ^bb0(%q: index):
          scf.yield %q : index
        }""", "4:8: error: 'scf.while' op expects the 'before' region to terminate with "
              "'scf.condition'"),
    "while_types_count": ("""
        %r = scf.while (%p = %c0, %s = %x) : (index) -> index {
          scf.condition(%c) %p : index
        } do {
        ^bb0(%q: index):
          scf.yield %q : index
        }""", "4:38: error: custom op 'scf.while' expected as many input types as operands "
              "(expected 2 got 1)"),
    "while_no_do": ("""
        scf.while : () -> () {
          scf.condition(%c)
        }""", "7:3: error: custom op 'scf.while' expected 'do'"),
    "while_empty_after": ("""
        scf.while : () -> () {
          scf.condition(%c)
        } do {
        }""", "4:3: error: 'scf.while' op region #1 ('after') failed to verify constraint: "
              "region with 1 blocks"),
    "condition_outside": ("""
        scf.condition(%c)""", "4:3: error: 'scf.condition' op expects parent op 'scf.while'"),
    "switch_duplicate": ("""
        scf.index_switch %n
        case 1 {
          scf.yield
        }
        case 1 {
          scf.yield
        }
        default {
        }""", "4:3: error: 'scf.index_switch' op has duplicate case value: 1"),
    "switch_result_type": ("""
        %r = scf.index_switch %n -> f32
        case 1 {
          scf.yield %a : i32
        }
        default {
          scf.yield %x : f32
        }""", "4:8: error: 'scf.index_switch' op expected result #0 of each region to be "
              "'f32'"),
    "switch_default_values": ("""
        %r = scf.index_switch %n -> f32
        default {
        }""", "4:8: error: 'scf.index_switch' op expected each region to return 1 values, but "
              "default region returns 0"),
    "switch_no_default": ("""
        scf.index_switch %n
        case 1 {
          scf.yield
        }""", "8:3: error: custom op 'scf.index_switch' expected 'default'"),
    "switch_case_value": ("""
        scf.index_switch %n
        case x {
          scf.yield
        }
        default {
        }""", "5:8: error: custom op 'scf.index_switch' expected integer value"),
    "switch_case_too_large": ("""
        scf.index_switch %n
        case 99999999999999999999 {
          scf.yield
        }
        default {
        }""", "5:8: error: custom op 'scf.index_switch' integer value too large"),
    "switch_empty_case": ("""
        scf.index_switch %n
        case 0 {
        }
        default {
        }""", "4:3: error: 'scf.index_switch' op region #1 ('caseRegions') failed to verify "
              "constraint: region with 1 blocks"),
    "execute_region_empty": ("""
        scf.execute_region {
        }""", "4:3: error: 'scf.execute_region' op region needs to have at least one block"),
    "execute_region_arguments": ("""
        scf.execute_region {
        ^bb0(%q: index):
          scf.yield
        }""", "4:3: error: 'scf.execute_region' op region cannot have any arguments"),
    "execute_region_yield": ("""
        %r = scf.execute_region -> f32 {
          scf.yield %a : i32
        }""", "4:8: error: 'scf.execute_region' op along control flow edge from Operation "
              "scf.yield to parent: successor operand type #0 'i32' should match successor "
              "input type #0 'f32'"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_mlir_opt(name):
    body, expected = ERRORS[name]
    text = program(body)
    with pytest.raises((ParseError, VerifyError)) as err:
        parse(text, "t.mlir")
    assert err.value.render().splitlines()[0] == "t.mlir:" + expected
    upstream = run_mlir_opt(text).stderr.splitlines()[0]
    assert upstream == "<stdin>:" + expected


def test_deliberate_difference_parallel_with_uneven_bound_lists():
    # mlir-opt-22 accepts two lower bounds for one induction variable (its verifier only
    # counts the steps); polyopt cannot tell which bound goes with which dimension
    text = program("""
        "scf.parallel"(%c0, %c0, %n, %c1) <{operandSegmentSizes = array<i32: 2, 1, 1, 0>}> ({
        ^bb0(%i: index):
          "scf.reduce"() : () -> ()
        }) : (index, index, index, index) -> ()""")
    assert run_mlir_opt(text).stderr == ""
    with pytest.raises(PolyoptError) as err:
        parse(text, "t.mlir")
    assert err.value.render().splitlines()[0] == (
        "t.mlir:4:3: error: 'scf.parallel' op expects as many lower bounds, upper bounds and "
        "steps, got 2, 1 and 1")


def test_cli_reports_scf_errors_with_location(tmp_path):
    from polyopt.cli import main
    path = tmp_path / "bad.mlir"
    path.write_text(program("""
        %r = scf.if %c -> (f32) {
          scf.yield %x : f32
        }"""))
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["opt", str(path)]) == 1
    assert err.getvalue().startswith(f"{path}:4:8: error: 'scf.if' op must have an else block "
                                     f"if defining values\n")
