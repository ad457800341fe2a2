"""The verifier reports the first error mlir-opt-22 reports: MLIR's ``OperationVerifier`` order
(an op's own rules, then its blocks and the ops nested in them in program order, then the
rules about its regions, then dominance), and MLIR's words.

Each case is a short program and the first ``LINE:COL: error:`` line mlir-opt-22 prints for
it, written out here; ``test_mlir_opt_agrees`` re-runs mlir-opt-22 on every case to confirm
that text."""

import subprocess
import sys

import polyopt
import pytest
from polyopt.affine.diagnostics import PolyoptError
from upstream_mlir import mlir_opt_error

CASES = {
    # the nested op's error comes before the function's missing terminator
    "nested_error_before_missing_return": ("""\
func.func @f(%a: i32) {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addf %a, %a : i32
}
""", "3:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    # a function ending in a non-terminator: MLIR names the op in generic form
    "block_with_no_terminator": ("""\
func.func @f(%a: i32, %m: memref<4xi32>) {
  %c = arith.constant 0 : index
  memref.store %a, %m[%c] : memref<4xi32>
}
""", "3:3: error: block with no terminator, has "
     "\"memref.store\"(%arg0, %arg1, %0) : (i32, memref<4xi32>, index) -> ()"),
    # an op with regions as the last op: its generic form starts on the next line
    "block_with_no_terminator_loop": ("""\
func.func @f(%a: index) {
  affine.for %i = 0 to 10 {
  }
}
""", "2:3: error: block with no terminator, has "),
    # an error in a loop body comes before the misplaced func.return after the loop
    "nested_error_before_misplaced_return": ("""\
func.func @f(%a: i32) {
  affine.for %i = 0 to 10 {
    %1 = arith.addf %a, %a : i32
  }
  return
  return
}
""", "3:10: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    # the error in the first function is reported, not the missing return of the second
    "first_function_first": ("""\
func.func @f(%a: i32) {
  %1 = arith.addf %a, %a : i32
  return
}
func.func @g(%a: i32) {
  %0 = arith.addi %a, %a : i32
}
""", "2:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    # dominance is checked after every op of the function
    "dominance_after_op_rules": ("""\
func.func @f(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %x = arith.addi %a, %a : i32
  cf.br ^bb3
^bb2:
  cf.br ^bb3
^bb3:
  %y = arith.addi %x, %a : i32
  %z = arith.addf %a, %a : i32
  return %y : i32
}
""", "10:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    "dominance_message": ("""\
func.func @f(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %x = arith.addi %a, %a : i32
  cf.br ^bb3
^bb2:
  cf.br ^bb3
^bb3:
  %y = arith.addi %x, %a : i32
  return %y : i32
}
""", "9:8: error: operand #0 does not dominate this use"),
    # a polyopt-only rule (injective layouts) comes after MLIR's own checks of the op
    "op_rule_before_layout_rule": ("""\
func.func @f(%in: memref<*xf32>) {
  %out = memref.reinterpret_cast %in to offset: [0], sizes: [9, 10], strides: [42, 1]
           : memref<*xf32> to memref<9x10xf32, affine_map<(d0, d1) -> (d0)>>
  return
}
""", "2:10: error: expected result type with stride = 42 instead of 1 in dim = 0"),
    "return_type_without_op_prefix": ("""\
func.func @f(%a: f32) -> i32 {
  return %a : f32
}
""", "2:3: error: type of return operand 0 ('f32') doesn't match function result type ('i32') "
     "in function @f"),
    "while_empty_block": ("""\
func.func @f() {
  scf.while : () -> () {
    %t = arith.constant true
    scf.condition(%t)
  } do {
  ^bb0:
  }
  return
}
""", "2:3: error: 'scf.while' op expects a non-empty block"),
    # scf.while checks its terminators in its own verify, before the ops nested in it
    "while_terminator_before_nested_error": ("""\
func.func @f(%a: i32) {
  scf.while : () -> () {
    %x = arith.addf %a, %a : i32
    %t = arith.constant true
    scf.condition(%t)
  } do {
  ^bb0:
    %y = arith.addi %a, %a : i32
  }
}
""", "2:3: error: 'scf.while' op expects the 'after' region to terminate with 'scf.yield'"),
    # scf.reduce's regions are one block by an ODS constraint, not the SingleBlock trait
    "reduce_empty_block": ("""\
func.func @f(%lb: index, %x: f32) {
  %zero = arith.constant 0.0 : f32
  %r = scf.parallel (%i) = (%lb) to (%lb) step (%lb) init (%zero) -> f32 {
    scf.reduce(%x : f32) {
    ^bb0(%l : f32, %r : f32):
    }
  }
  return
}
""", "4:5: error: empty block: expect at least a terminator"),
    "for_yielded_count": ("""\
func.func @f(%arg0: index, %init: f32) {
  %x, %x2 = "scf.for"(%arg0, %arg0, %arg0, %init, %init) ({
  ^bb0(%i0 : index, %iter: f32, %iter2: i32):
    scf.yield %iter : f32
  }) : (index, index, index, f32, f32) -> (f32, f32)
  return
}
""", "2:13: error: 'scf.for' op different number of region iter_args and yielded values: "
     "2 != 1"),
    "for_yielded_type_before_result_type": ("""\
func.func @f(%arg0: index, %init: f32) {
  %x = "scf.for"(%arg0, %arg0, %arg0, %init) ({
  ^bb0(%i0 : index, %iter: f32):
    %c = arith.constant 0 : i32
    scf.yield %c : i32
  }) : (index, index, index, f32) -> (i32)
  return
}
""", "2:8: error: 'scf.for' op 0-th region iter_arg and 0-th yielded value have different "
     "type: 'f32' != 'i32'"),
    "reduce_body_without_terminator": ("""\
func.func @f(%lb: index, %x: f32) {
  %zero = arith.constant 0.0 : f32
  %r = scf.parallel (%i) = (%lb) to (%lb) step (%lb) init (%zero) -> f32 {
    scf.reduce(%x : f32) {
    ^bb0(%l : f32, %r : f32):
      %s = arith.addf %l, %r : f32
    }
  }
  return
}
""", "6:12: error: block with no terminator, has %2 = \"arith.addf\"(%arg3, %arg4) "
     "<{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32"),
    # the module's symbol rules run after everything inside it is verified
    "nested_error_before_symbol_redefinition": ("""\
func.func @f(%a: i32) {
  %1 = arith.addf %a, %a : i32
  return
}
func.func @f(%a: i32) {
  return
}
""", "2:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    "symbol_redefinition": ("""\
func.func @f(%a: i32) {
  return
}
func.func @f(%a: i32) {
  return
}
""", "4:1: error: redefinition of symbol named 'f'"),
    "later_error_before_bad_callee": ("""\
func.func @f(%a: i32) {
  %1 = call @nope(%a) : (i32) -> i32
  %2 = arith.addf %a, %a : i32
  return
}
""", "3:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    # symbol uses: all ops of a region, then the regions nested in them
    "call_after_loop_checked_first": ("""\
func.func @f(%a: i32) {
  affine.for %i = 0 to 3 {
    %1 = func.call @nope(%a) : (i32) -> i32
  }
  call @f(%a, %a) : (i32, i32) -> ()
  return
}
""", "5:3: error: 'func.call' op incorrect number of operands for callee"),
    "bad_callee_in_a_later_block": ("""\
func.func @f(%a: i32) {
  cf.br ^bb1
^bb1:
  %1 = call @nope(%a) : (i32) -> i32
  return
}
""", "4:8: error: 'func.call' op 'nope' does not reference a valid function"),
    # linalg.map/reduce/generic: a body that does not end in linalg.yield is reported by the
    # block rule or by the other terminator's own check, before the op's terminator trait
    "map_body_without_terminator": ("""\
func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.map ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %in : f32
    }
  return
}
""", "4:12: error: block with no terminator, has %0 = \"arith.addf\"(%arg2, %arg2) "
     "<{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32"),
    "reduce_body_ending_in_scf_yield": ("""\
func.func @f(%a: memref<4xf32>, %r: memref<f32>) {
  linalg.reduce ins(%a : memref<4xf32>) outs(%r : memref<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      scf.yield %s : f32
    }
  return
}
""", "5:7: error: 'scf.yield' op expects parent op to be one of 'scf.execute_region, scf.for, "
     "scf.if, scf.index_switch, scf.while'"),
    "reduce_generic_form_without_terminator": ("""\
func.func @f(%a: memref<4xf32>, %r: memref<f32>) {
  "linalg.reduce"(%a, %r) <{dimensions = array<i64: 0>}> ({
  ^bb0(%in: f32, %init: f32):
    %s = arith.addf %in, %init : f32
  }) : (memref<4xf32>, memref<f32>) -> ()
  return
}
""", "4:10: error: block with no terminator, has %0 = \"arith.addf\"(%arg2, %arg3) "
     "<{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32"),
    "map_body_ending_in_vector_yield": ("""\
func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  "linalg.map"(%a, %b) ({
  ^bb0(%in: f32, %init: f32):
    "vector.yield"(%in) : (f32) -> ()
  }) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
""", "2:3: error: 'linalg.map' op expects regions to end with 'linalg.yield', found "
     "'vector.yield'"),
    "map_yield_of_two_values": ("""\
func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.map ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    (%in: f32, %init: f32) {
      linalg.yield %in, %in : f32, f32
    }
  return
}
""", "4:7: error: 'linalg.yield' op expected number of yield values (2) to match the number "
     "of inits / outs operands of the enclosing LinalgOp (1)"),
    # memref.get_global's symbol is looked up with the other symbol uses, when the module is
    # left: an error further down the function comes first
    "get_global_of_an_undefined_symbol_after_a_later_error": ("""\
func.func @f() {
  %0 = memref.get_global @nope : memref<4xf32>
  %1 = arith.addf %0, %0 : memref<4xf32>
  return
}
""", "3:8: error: 'arith.addf' op operand #0 must be floating-point-like, but got "
     "'memref<4xf32>'"),
    "get_global_of_an_undefined_symbol": ("""\
func.func @f() {
  %0 = memref.get_global @nope : memref<4xf32>
  return
}
""", "2:8: error: 'memref.get_global' op 'nope' does not reference a valid global memref"),
    "get_global_of_a_function": ("""\
func.func @g() {
  return
}
func.func @f() {
  %0 = memref.get_global @g : memref<4xf32>
  return
}
""", "5:8: error: 'memref.get_global' op 'g' does not reference a valid global memref"),
    "get_global_of_another_type": ("""\
memref.global "private" constant @x : memref<4xf32> = dense<1.0>
func.func @f() {
  %0 = memref.get_global @x : memref<4xi32>
  return
}
""", "3:8: error: 'memref.get_global' op result type 'memref<4xi32>' does not match type "
     "'memref<4xf32>' of the global memref @x"),
    "get_global_of_a_global_in_a_nested_module": ("""\
module {
  module @inner {
    memref.global "private" @x : memref<4xf32>
  }
  func.func @f() {
    %0 = memref.get_global @x : memref<4xf32>
    return
  }
}
""", "6:10: error: 'memref.get_global' op 'x' does not reference a valid global memref"),
    # its own rules come on entering it: counts, then the attribute, then the result type
    "get_global_without_a_name": ("""\
func.func @f() {
  %0 = "memref.get_global"() : () -> memref<4xf32>
  return
}
""", "2:8: error: 'memref.get_global' op requires attribute 'name'"),
    "get_global_named_by_a_string": ("""\
func.func @f() {
  %0 = "memref.get_global"() {name = "x"} : () -> memref<4xf32>
  return
}
""", "2:8: error: 'memref.get_global' op attribute 'name' failed to satisfy constraint: flat "
     "symbol reference attribute"),
    "get_global_with_an_operand": ("""\
func.func @f(%a: index) {
  %0 = "memref.get_global"(%a) : (index) -> f32
  return
}
""", "2:8: error: 'memref.get_global' op requires zero operands"),
    "get_global_of_a_dynamic_type": ("""\
memref.global "private" @x : memref<4xf32>
func.func @f() {
  %0 = "memref.get_global"() {name = @x} : () -> memref<?xf32>
  return
}
""", "3:8: error: 'memref.get_global' op result #0 must be statically shaped memref of any "
     "type values, but got 'memref<?xf32>'"),
    # scf.while with no operands and no results: the region edges carry no values
    "while_without_results_forwarding_a_value": ("""\
func.func @f(%c: i1, %x: i32) {
  scf.while : () -> () {
    scf.condition(%c) %x : i32
  } do {
    scf.yield
  }
  return
}
""", "2:3: error: 'scf.while' op along control flow edge from Operation scf.condition to "
     "parent: region branch point has 1 operands, but region successor needs 0 inputs"),
    "while_without_operands_yielding_a_value": ("""\
func.func @f(%c: i1, %x: i32) {
  scf.while : () -> () {
    scf.condition(%c)
  } do {
    scf.yield %x : i32
  }
  return
}
""", "2:3: error: 'scf.while' op along control flow edge from Operation scf.yield to Region "
     "#0: region branch point has 1 operands, but region successor needs 0 inputs"),
    # a func.func inside another function: its parent is no symbol table, checked on entering
    # it, before anything in its body; MLIR's parser lets the body see the outer values (the
    # verifier refuses such uses), so an outer %x is no undeclared name in there
    "function_in_a_function": ("""\
func.func @f(%x: i32) {
  func.func @g() {
    %0 = arith.addi %x, %x : i32
    return
  }
  return
}
""", "2:3: error: 'func.func' op symbol's parent must have the SymbolTable trait"),
    "function_in_a_loop_in_a_function": ("""\
func.func @f() {
  affine.for %i = 0 to 3 {
    func.func private @g()
  }
  return
}
""", "3:5: error: 'func.func' op symbol's parent must have the SymbolTable trait"),
    "function_in_a_function_in_generic_form": ("""\
func.func @f(%x: i32) {
  "func.func"() <{function_type = () -> (), sym_name = "g"}> ({
    "func.return"() : () -> ()
  }) : () -> ()
  return
}
""", "2:3: error: 'func.func' op symbol's parent must have the SymbolTable trait"),
    "outer_value_in_a_module_nested_in_a_function": ("""\
func.func @f(%x: i32) {
  builtin.module {
    func.func @g() {
      %0 = arith.addi %x, %x : i32
      return
    }
  }
  return
}
""", "4:12: error: 'arith.addi' op using value defined outside the region"),
    "outer_name_redefined_in_a_nested_function": ("""\
func.func @f(%x: i32) {
  func.func @g() {
    %x = arith.constant 1 : i32
    return
  }
  return
}
""", "3:5: error: redefinition of SSA value '%x'"),
}

def _first_error(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "t.mlir")
    return info.value.render("t.mlir").splitlines()[0].removeprefix("t.mlir:")


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_error_is_mlir_opts(name):
    text, expected = CASES[name]
    assert _first_error(text) == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlir_opt_agrees(name):
    text, expected = CASES[name]
    assert mlir_opt_error(text) == expected


def test_multi_line_op_in_message():
    """An op with regions is printed on the lines after the message, as mlir-opt does."""
    text, _ = CASES["block_with_no_terminator_loop"]
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "t.mlir")
    assert info.value.message.splitlines()[1:3] == [
        '"affine.for"() <{lowerBoundMap = affine_map<() -> (0)>, operandSegmentSizes = '
        'array<i32: 0, 0, 0>, step = 1 : index, upperBoundMap = affine_map<() -> (10)>}> ({',
        "^bb0(%arg1: index):"]


def test_cli_reports_the_first_error_with_status_1(tmp_path):
    text, expected = CASES["nested_error_before_missing_return"]
    path = tmp_path / "t.mlir"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == f"{path}:{expected}"


def test_reduce_body_ending_in_another_op():
    """Only an op mlir-opt takes as a possible terminator (an unregistered one) gets past the
    block rule to scf.reduce's own."""
    text = """\
func.func @f(%lb: index, %x: f32) {
  %zero = arith.constant 0.0 : f32
  %r = scf.parallel (%i) = (%lb) to (%lb) step (%lb) init (%zero) -> f32 {
    scf.reduce(%x : f32) {
    ^bb0(%l : f32, %r : f32):
      "test.finish"() : () -> ()
    }
  }
  return
}
"""
    expected = ("4:5: error: 'scf.reduce' op reduction bodies must be terminated with an "
                "'scf.reduce.return' op")
    assert _first_error(text) == expected
    assert mlir_opt_error(text, "--allow-unregistered-dialect") == expected


# generic-form ops with the wrong number of operands or results: the messages of MLIR's count
# traits (results checked first), and the Terminator trait before affine.yield's own verify
ONE_OP = {
    "addi_1op": ('%r = "arith.addi"(%a) : (i32) -> i32',
                 "2:8: error: 'arith.addi' op expected 2 operands, but found 1"),
    "addi_0res": ('"arith.addi"(%a, %a) : (i32, i32) -> ()',
                  "2:3: error: 'arith.addi' op requires one result"),
    "addi_2res": ('%r:2 = "arith.addi"(%a, %a) : (i32, i32) -> (i32, i32)',
                  "2:10: error: 'arith.addi' op requires one result"),
    "constant_op": ('%r = "arith.constant"(%a) {value = 1 : i32} : (i32) -> i32',
                    "2:8: error: 'arith.constant' op requires zero operands"),
    "constant_nores": ('"arith.constant"() {value = 1 : i32} : () -> ()',
                       "2:3: error: 'arith.constant' op requires one result"),
    "extsi_2op": ('%r = "arith.extsi"(%a, %a) : (i32, i32) -> i64',
                  "2:8: error: 'arith.extsi' op requires a single operand"),
    "negf_2op": ('%r = "arith.negf"(%f, %f) : (f32, f32) -> f32',
                 "2:8: error: 'arith.negf' op requires a single operand"),
    "select_2op": ('%r = "arith.select"(%c, %a) : (i1, i32) -> i32',
                   "2:8: error: 'arith.select' op expected 3 operands, but found 2"),
    "cmpi_1op": ('%r = "arith.cmpi"(%a) {predicate = 0 : i64} : (i32) -> i1',
                 "2:8: error: 'arith.cmpi' op expected 2 operands, but found 1"),
    "fma_2op": ('%r = "math.fma"(%f, %f) : (f32, f32) -> f32',
                "2:8: error: 'math.fma' op expected 3 operands, but found 2"),
    "sqrt_2op": ('%r = "math.sqrt"(%f, %f) : (f32, f32) -> f32',
                 "2:8: error: 'math.sqrt' op requires a single operand"),
    "ctlz_0res": ('"math.ctlz"(%a) : (i32) -> ()',
                  "2:3: error: 'math.ctlz' op requires one result"),
    "powf_1op": ('%r = "math.powf"(%f) : (f32) -> f32',
                 "2:8: error: 'math.powf' op expected 2 operands, but found 1"),
    "return_before_return": ('return %a : i32', "2:3: error: 'func.return' op must be the "
                             "last operation in the parent block"),
    "yield_in_func": ('"affine.yield"() : () -> ()', "2:3: error: 'affine.yield' op must be "
                      "the last operation in the parent block"),
}


def _in_function(line: str) -> str:
    return ("func.func @f(%a: i32, %f: f32, %c: i1) {\n"
            f"  {line}\n"
            "  return\n"
            "}\n")


@pytest.mark.parametrize("name", sorted(ONE_OP))
def test_count_and_terminator_traits(name):
    line, expected = ONE_OP[name]
    assert _first_error(_in_function(line)) == expected
    assert mlir_opt_error(_in_function(line)) == expected


# MLIR's SingleBlock trait: an op's empty block is the op's error, before the block's own
EMPTY_BLOCK = {
    "affine_for": '"affine.for"() <{lowerBoundMap = affine_map<() -> (0)>, operandSegmentSizes '
                  '= array<i32: 0, 0, 0>, step = 1 : index, upperBoundMap = affine_map<() -> '
                  '(10)>}> ({\n  ^bb0(%k: index):\n  }) : () -> ()',
    "affine_if": '"affine.if"() ({\n  ^bb0:\n  }, {\n  }) '
                 '{condition = affine_set<() : (0 == 0)>} : () -> ()',
    "scf_for": '"scf.for"(%i, %i, %i) ({\n  ^bb0(%k: index):\n  }) '
               ': (index, index, index) -> ()',
    "scf_if": '"scf.if"(%c) ({\n  ^bb0:\n  }, {\n  }) : (i1) -> ()',
    "scf_parallel": '"scf.parallel"(%i, %i, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> '
                    '({\n  ^bb0(%k: index):\n  }) : (index, index, index) -> ()',
    "alloca_scope": '"memref.alloca_scope"() ({\n  ^bb0:\n  }) : () -> ()',
    "index_switch": '"scf.index_switch"(%i) <{cases = array<i64>}> ({\n  ^bb0:\n  }) '
                    ': (index) -> ()',
}


def _with_index(line: str) -> str:
    return f"func.func @f(%c: i1, %i: index) {{\n  {line}\n  return\n}}\n"


@pytest.mark.parametrize("name", sorted(EMPTY_BLOCK))
def test_empty_block_of_a_single_block_op(name):
    text = _with_index(EMPTY_BLOCK[name])
    op = EMPTY_BLOCK[name].split('"')[1]
    expected = f"2:3: error: '{op}' op expects a non-empty block"
    assert _first_error(text) == expected
    assert mlir_opt_error(text) == expected


def test_an_empty_block_of_a_multi_block_op_is_the_blocks_error():
    text = _with_index('"scf.execute_region"() ({\n  ^bb0:\n  }) : () -> ()')
    expected = "2:3: error: empty block: expect at least a terminator"
    assert _first_error(text) == expected
    assert mlir_opt_error(text) == expected


@pytest.mark.parametrize("attr, message", [
    ("", "requires attribute 'condition'"),
    (" {condition = 3 : i64}",
     "attribute 'condition' failed to satisfy constraint: IntegerSet attribute"),
])
def test_affine_if_condition_attribute(attr, message):
    text = _with_index(f'"affine.if"() ({{\n    "affine.yield"() : () -> ()\n  }}, {{\n  }})'
                       f'{attr} : () -> ()')
    assert _first_error(text) == f"2:3: error: 'affine.if' op {message}"
    assert mlir_opt_error(text) == f"2:3: error: 'affine.if' op {message}"


GENERIC_PARALLEL = """\
func.func @f(%a: i32) {
  "affine.parallel"() <{lowerBoundsGroups = dense<1> : tensor<1xi32>, lowerBoundsMap = \
affine_map<() -> (0)>, reductions = [], steps = [1], upperBoundsGroups = dense<1> : \
tensor<1xi32>, upperBoundsMap = affine_map<() -> (10)>}> ({
  ^bb0(%arg1: index):
BODY
    "test.end"() : () -> ()
  }) : () -> ()
  return
}
"""


@pytest.mark.parametrize("body, expected", [
    # the implicit-terminator rule is a region rule: the body's ops are verified first
    ("    %x = arith.addf %a, %a : i32",
     "4:10: error: 'arith.addf' op operand #0 must be floating-point-like, but got 'i32'"),
    ("", "2:3: error: 'affine.parallel' op expects regions to end with 'affine.yield', "
         "found 'test.end'"),
])
def test_affine_parallel_terminator_after_its_body(body, expected):
    text = GENERIC_PARALLEL.replace("BODY\n", body + "\n" if body else "")
    assert _first_error(text) == expected
    assert mlir_opt_error(text, "--allow-unregistered-dialect") == expected
