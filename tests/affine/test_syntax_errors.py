"""Issue 13, parser robustness: malformed or absurd input is a ``FILE:LINE:COL`` error (with
mlir-opt-22's message where both refuse it), never a Python exception, a hang or unbounded
memory.  Each case here is a defect a fuzz found or one of its kind."""

from __future__ import annotations

import re
import time

import pytest

import polyopt
import polyopt.affine.printer
from polyopt.affine.diagnostics import ParseError, PolyoptError
from polyopt.affine.parser import MAX_NESTING, MAX_NESTING_IN_OP, MAX_VECTOR_ELEMENTS
from polyopt.cli import main
from upstream_mlir import mlir_opt_error


def _func(body: str, args: str = "%a: index") -> str:
    return f"func.func @f({args}) {{\n  {body}\n  return\n}}\n"


def our_error(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "in.mlir")
    assert info.value.loc is not None, "the error has no location"
    return str(info.value).replace("in.mlir:", "", 1)


# both refuse these, with the same position and message
SAME_AS_MLIR = {
    "int_width_absurd": _func("return", "%a: i99999999999"),
    "int_width_over_limit": _func("return", "%a: i16777216"),
    "i0_constant_out_of_range": _func("%c = arith.constant 1 : i0"),
    "attr_int_out_of_range": '"test.op"() {a = 99999999999999999999999999 : i64} : () -> ()\n',
    "i8_out_of_range": _func("%c = arith.constant 300 : i8"),
    "i1_out_of_range": _func("%c = arith.constant 2 : i1"),
    "index_out_of_range": _func("%c = arith.constant 9223372036854775808 : index"),
    "affine_constant_beyond_int64":
        _func("%x = affine.apply affine_map<(d0) -> (d0 * 99999999999999999999)>(%a)"),
    "affine_divisor_beyond_int64":
        _func("%x = affine.apply affine_map<(d0) -> (d0 floordiv 9223372036854775808)>(%a)"),
    "affine_below_min_int64":
        _func("%x = affine.apply affine_map<(d0) -> (-9223372036854775809)>(%a)"),
    "affine_set_constant_beyond_int64":
        "#set = affine_set<(d0) : (d0 - 99999999999999999999 >= 0)>\n"
        + _func("affine.if #set(%a) {\n  }"),
    "subscript_beyond_int64":
        _func("%v = affine.load %A[99999999999999999999] : memref<4xf32>", "%A: memref<4xf32>"),
    "dimension_beyond_int64": _func("return", "%a: memref<99999999999999999999xf32>"),
    "memory_space_beyond_int64": _func("return", "%a: memref<4xf32, 99999999999999999999>"),
    "stride_beyond_int64": _func("return", "%a: memref<4xf32, strided<[99999999999999999999]>>"),
    "offset_beyond_int64":
        _func("return", "%a: memref<4xf32, strided<[1], offset: 99999999999999999999>>"),
    "result_count_zero": _func("%r:0 = affine.apply affine_map<(d0) -> (d0)>(%a)"),
    "result_count_huge":
        _func("%r:99999999999999999999 = affine.apply affine_map<(d0) -> (d0)>(%a)"),
    "vector_size_zero": _func("return", "%a: vector<2x0xf32>"),
    "dense_shape_mismatch": _func("%c = arith.constant dense<[1, 2, 3]> : vector<2xi8>"),
    "dense_ranks": _func("%c = arith.constant dense<[1, [2]]> : vector<2xi8>"),
    "dense_float_for_int": _func("%c = arith.constant dense<1.5> : vector<2xi8>"),
    "dense_int_for_float": _func("%c = arith.constant dense<1> : vector<2xf32>"),
    "dense_bool_for_int": _func("%c = arith.constant dense<true> : vector<2xi32>"),
    "dense_element_out_of_range": _func("%c = arith.constant dense<256> : vector<2xi8>"),
    "dense_hex_out_of_range": _func("%c = arith.constant dense<0x7FC00000> : vector<2xf16>"),
    "dense_hex_size": _func('%c = arith.constant dense<"0x010203"> : vector<2xi8>'),
    "dense_hex_digits": _func('%c = arith.constant dense<"0xZZ"> : vector<2xi8>'),
    "dense_empty": _func("%c = arith.constant dense<> : vector<2xi8>"),
    "dense_not_shaped": '"test.op"() {a = dense<1.0> : f32} : () -> ()\n',
    "dense_dynamic_shape": '"test.op"() {a = dense<1> : tensor<?xi32>} : () -> ()\n',
    "hex_float_minus": _func("%c = arith.constant -0x3F80 : bf16"),
    "hex_float_too_wide": _func("%c = arith.constant 0x10000 : f16"),
    "decimal_int_for_float": _func("%c = arith.constant 1 : f32"),
    "loc_alias_never_defined": "func.func @f() {\n  return loc(#nope)\n}\n",
    "loc_alias_not_a_location": "#a = 1 : i32\nfunc.func @f() {\n  return loc(#a)\n}\n",
    "loc_bad_instance": "func.func @f() {\n  return loc(foo)\n}\n",
    "loc_callsite_without_at": 'func.func @f() {\n  return loc(callsite("a"))\n}\n',
    "loc_line_too_big": 'func.func @f() {\n  return loc("a":4294967296:1)\n}\n',
    "loc_range_without_column": 'func.func @f() {\n  return loc("a":1:2 to 3)\n}\n',
    "loc_fused_without_list": 'func.func @f() {\n  return loc(fused<"x">)\n}\n',
    "symbol_redefinition": "func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n",
    "module_redefinition": "module @a {\n}\nmodule @a {\n}\n",
    "call_into_other_module":
        "module @a {\n  func.func @g() {\n    return\n  }\n}\n"
        "func.func @f() {\n  call @g() : () -> ()\n  return\n}\n",
    "arg_attr_not_dialect": "func.func @f(%a: i32 {foo}) {\n  return\n}\n",
    "result_attr_not_dialect": "func.func private @f() -> (i32 {foo})\n",
    "public_declaration": "func.func @f(i32)\n",
    "inferred_attr_in_dict":
        'func.func @f() attributes {sym_visibility = "private"} {\n  return\n}\n',
    "unbound_result_count": _func("%x, %y = affine.apply affine_map<(d0) -> (d0)>(%a)"),
    "string_unknown_escape": '"test.op"() {b = "p\\q"} : () -> ()\n',
    "string_unterminated": '"test.op"() {b = "pq} : () -> ()\n',
    "string_newline": '"test.op"() {b = "p\nq"} : () -> ()\n',
    # MLIR refuses a name of an enclosing region, even outside a func.func (the fuzzer found
    # polyopt taking both, and its printer giving two values one name)
    "shadowing_in_a_loop": _func("%x = arith.constant 1.0 : f32\n  affine.for %i = 0 to 4 {\n"
                                 "    %x = arith.constant 2.0 : f32\n  }"),
    "shadowing_an_induction_variable": _func("affine.for %i = 0 to 4 {\n"
                                             "    affine.for %i = 0 to 4 {\n    }\n  }"),
    "shadowing_outside_a_function":
        "%y = affine.min affine_map<() -> (3, 4)>()\n" + _func("%y = arith.constant 1 : index"),
    "function_in_a_function": _func("func.func private @g(i32)"),
}


@pytest.mark.parametrize("name", SAME_AS_MLIR)
def test_same_error_as_mlir_opt(name):
    text = SAME_AS_MLIR[name]
    assert our_error(text) == mlir_opt_error(text, "--allow-unregistered-dialect")


# polyopt refuses these (mlir-opt-22 may take them): polyopt-specific limits and unsupported
# constructs, each a located error naming what is wrong
POLYOPT_LIMITS = {
    "vector_too_large": (_func("return", "%a: vector<99999999999xf32>"), (1, 18),
                         f"vector types of more than {MAX_VECTOR_ELEMENTS} elements"),
    "vector_llvm_aborts": (_func("return", "%a: vector<65536xf32>"), (1, 18),
                           "LLVM's code generator fails on them"),
    "tensor_argument": (_func("return", "%a: tensor<4xf32>"), (1, 18),
                        "tensor values are not supported by polyopt"),
    "tensor_constant": (_func("%c = arith.constant dense<1.0> : tensor<4xf32>"), (2, 23),
                        "tensor values are not supported by polyopt"),
    "signed_integer_type": (_func("return", "%a: si8"), (1, 18), "type 'si8' is not supported"),
    "other_float_type": (_func("return", "%a: f8E4M3FN"), (1, 18),
                         "type 'f8E4M3FN' is not supported by polyopt"),
    "decimal_literal_too_long": ('"test.op"() {a = ' + "9" * 5000 + " : i64} : () -> ()\n",
                                 (1, 18), "integer literal with 5000 digits is too large"),
    "complex_dense": ('"test.op"() {a = dense<(1, 2)> : tensor<2xi8>} : () -> ()\n', (1, 24),
                      "complex elements are not supported"),
}


@pytest.mark.parametrize("name", POLYOPT_LIMITS)
def test_polyopt_limit_is_a_located_error(name):
    text, (line, col), message = POLYOPT_LIMITS[name]
    got = our_error(text)
    assert got.startswith(f"{line}:{col}: error: "), got
    assert message in got


def test_smallest_int64_in_a_map_reads_back():
    """mlir-opt-22 prints ``affine.for %i = -9223372036854775808 to 8`` in generic form as
    ``affine_map<() -> (-9223372036854775808)>`` and then refuses that text; polyopt reads it,
    so that what it prints always reads back (a difference the text fuzzer found)."""
    text = _func("affine.for %i = -9223372036854775808 to 8 {\n  }")
    generic = polyopt.affine.printer.print_module(polyopt.parse(text), generic=True)
    assert "affine_map<() -> (-9223372036854775808)>" in generic
    assert str(polyopt.parse(generic)) == str(polyopt.parse(text))


def _nested_loops(n: int) -> str:
    opens = "".join(f"affine.for %i{k} = 0 to 1 {{\n" for k in range(n))   # one iteration each
    return _func(opens + "}\n" * n, "%A: memref<4xf32>")


@pytest.mark.parametrize("text,what", [
    (_nested_loops(MAX_NESTING + 5), "region"),
    (_nested_loops(2000), "region"),
    ('"test.op"() {a = ' + "[" * 10000 + "]" * 10000 + "} : () -> ()\n", "list"),
    (_func("%v = affine.load %A[" + "(" * 5000 + "%i" + ")" * 5000 + "] : memref<4xf32>",
           "%A: memref<4xf32>, %i: index"), "affine expression"),
    (_func("%v = affine.load %A[" + "-" * 5000 + "%i] : memref<4xf32>",
           "%A: memref<4xf32>, %i: index"), "affine expression"),
    ("!t = " + "(" * 3000 + "i32" + ") -> i32" * 3000 + "\n", "type"),
    ('func.func @f() {\n  return loc(' + 'callsite(' * 3000 + '"a"' + ' at "b")' * 3000
     + ')\n}\n', "location"),
], ids=["loops", "loops_2000", "attribute_lists", "parentheses", "negations", "function_types",
        "locations"])
def test_deep_nesting_is_a_located_error(text, what):
    with pytest.raises(ParseError) as info:
        polyopt.parse(text, "deep.mlir")
    assert info.value.loc is not None
    assert f"{what} nested too deeply" in info.value.message


def test_region_nesting_does_not_count_against_an_ops_lists():
    inner = _func("%v = affine.load %A[" + "(" * (MAX_NESTING_IN_OP - 2) + "%i" +
                  ")" * (MAX_NESTING_IN_OP - 2) + "] : memref<4xf32>", "%A: memref<4xf32>, %i: index")
    deep = "module {\n" * (MAX_NESTING - 2) + inner + "}\n" * (MAX_NESTING - 2)
    assert "affine.load" in str(polyopt.parse(deep))


def test_nesting_up_to_the_limits_parses_prints_and_lowers():
    """What the parser accepts (regions nested to the limit, and within the innermost op
    lists nested to theirs), the printer, the verifier and the LLVM lowering handle (they
    recurse too), and the generic form reads back (the fuzzer found a module nested 99 deep
    whose generic print did not)."""
    depth = MAX_NESTING - 1                # the function counts
    subscript = "(" * (MAX_NESTING_IN_OP - 2) + "%i0" + ")" * (MAX_NESTING_IN_OP - 2)
    text = _nested_loops(depth).replace(
        "}\n" * depth, f"%v = affine.load %A[{subscript}] : memref<4xf32>\n"
        "affine.store %v, %A[%i1] : memref<4xf32>\n" + "}\n" * depth)
    text = text.replace("{\n", "attributes {test.a = " + "[" * (MAX_NESTING_IN_OP - 1)
                        + "]" * (MAX_NESTING_IN_OP - 1) + "} {\n", 1)
    module = polyopt.parse(text)
    printed = str(module)
    assert str(polyopt.parse(printed)) == printed
    generic = polyopt.affine.printer.print_module(module, generic=True)
    assert str(polyopt.parse(generic)) == printed
    compiled = polyopt.compile(text)
    import numpy as np
    A = np.arange(4, dtype=np.float32)
    compiled["f"](A)
    assert A[0] == 0.0 and A[1] == 1.0
    modules = "module {\n" * MAX_NESTING + _func("") + "}\n" * MAX_NESTING
    generic = polyopt.affine.printer.print_module(polyopt.parse(modules), generic=True)
    assert str(polyopt.parse(generic)) == str(polyopt.parse(modules))
    # the outermost module's region does not count, explicit or implicit; two top-level
    # modules are nested in the implicit one, where their regions count
    two = modules + "module {\n}\n"
    with pytest.raises(ParseError, match="region nested too deeply"):
        polyopt.parse(two)
    two = "module {\n" * (MAX_NESTING - 1) + _func("") + "}\n" * (MAX_NESTING - 1) + \
        "module {\n}\n"
    assert str(polyopt.parse(str(polyopt.parse(two)))) == str(polyopt.parse(two))


def test_long_line_parses_in_linear_time():
    """A 200,000-element attribute on one line (1.2 MB) and a file of 20,000 ops."""
    text = '"test.op"() {a = [' + ", ".join(["7"] * 200_000) + "]} : () -> ()\n"
    start = time.perf_counter()
    module = polyopt.parse(text)
    assert len(module.body.ops[0].attributes["a"].elements) == 200_000
    many = _func("\n  ".join(f"%c{k} = arith.constant {k} : index" for k in range(20_000)))
    polyopt.parse(many)
    assert time.perf_counter() - start < 60


def test_i0_constants_parse_and_print_as_mlir_opt():
    text = _func("%c = arith.constant 0 : i0")
    assert "%c0_i0 = arith.constant 0 : i0" in str(polyopt.parse(text))


def test_non_utf8_input_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_bytes(b"func.func @f() {\n  %c = arith.constant 1 : i32 // caf\xc3\xa9 \xff\n"
                     b"  return\n}\n")
    assert main(["opt", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{path}:2:39: error: invalid UTF-8 byte 0xFF in the input"), err
    assert "Traceback" not in err


def test_cli_deep_nesting_exits_1_with_location(tmp_path, capsys):
    path = tmp_path / "deep.mlir"
    path.write_text(_nested_loops(3000))
    assert main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: region nested too deeply", err)


def _chain(n: int, use: str) -> str:
    """A function whose loop body adds 1 to its induction variable ``n`` times, then ``use``s
    the last sum (``%vN``)."""
    lines = ["func.func @f(%A: memref<10xf64>) {", "  %c1 = arith.constant 1 : index",
             "  affine.for %i = 0 to 10 {", "    %v0 = arith.addi %i, %c1 : index"]
    lines += [f"    %v{k} = arith.addi %v{k - 1}, %c1 : index" for k in range(1, n)]
    lines += [f"    {use.format(last=f'%v{n - 1}')}", "  }", "  return", "}", ""]
    return "\n".join(lines)


def test_thousands_of_chained_ops_are_no_recursion_error():
    """The affine dimension/symbol rules walk operand chains without deep recursion: 3000
    chained arith.addi before an affine.load are MLIR's error, before a memref.load fine."""
    n = 3000
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(_chain(n, "%l = affine.load %A[{last}] : memref<10xf64>"), "chain.mlir")
    assert str(info.value).startswith(f"chain.mlir:{n + 4}:10: error: 'affine.load' op operand "
                                      "cannot be used as a dimension id")
    module = polyopt.parse(_chain(n, "%l = memref.load %A[{last}] : memref<10xf64>"), "chain.mlir")
    polyopt.compile(module, hopt=True, memref_bound_check=True)


def test_a_terminator_in_the_middle_of_a_block_is_mlir_opts_error():
    """Found by the text fuzzer: a second scf.yield was accepted and printing dropped one each
    round."""
    src = ("func.func @f(%c: i1) {\n  scf.if %c {\n    scf.yield\n    scf.yield\n  }\n"
           "  return\n}\n")
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(src, "t.mlir")
    assert str(info.value) == mlir_opt_error(src, filename="t.mlir") == \
        "t.mlir:3:5: error: 'scf.yield' op must be the last operation in the parent block"
