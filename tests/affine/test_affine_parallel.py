"""``affine.parallel``: custom and generic syntax as mlir-opt-22 prints it, the verifier's rules
and messages (MLIR's, plus polyopt's stricter ones), accessors, the builder, and the induction
variables as affine dimensions."""

from __future__ import annotations

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.affine_expr import AffineMap, dim, symbol
from polyopt.affine.diagnostics import ParseError, PolyoptError, VerifyError
from polyopt.affine.dialects.affine import (ATOMIC_RMW_KINDS, AffineLoadOp, AffineParallelOp,
                                            AffineStoreOp, AffineYieldOp, reduction_matches)
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FloatType, FunctionType, IntegerType, MemRefType, f32, index
from polyopt.affine.verifier import verify
from upstream_mlir import mlir_opt, mlir_opt_error, run_mlir_opt

# ---------------------------------------------------------------------------------------------
# golden round trips: input -> the text mlir-opt-22 prints (checked again against mlir-opt-22)

GOLDEN = {
    # max/min groups, steps, two reductions; the lower bounds share one map over %arg1
    "minmax_steps_reduce": ("""\
func.func @f(%A: memref<100x100xf32>, %a: index, %n: index) -> (f32, f32) {
  %r:2 = affine.parallel (%i, %j) = (0, max(%a, 2)) to (min(%n, 64), 10) step (2, 3) reduce ("addf", "maximumf") -> (f32, f32) {
    %v = affine.load %A[%i, %j] : memref<100x100xf32>
    affine.yield %v, %v : f32, f32
  }
  return %r#0, %r#1 : f32, f32
}
""", """\
module {
  func.func @f(%arg0: memref<100x100xf32>, %arg1: index, %arg2: index) -> (f32, f32) {
    %0:2 = affine.parallel (%arg3, %arg4) = (0, max(%arg1, 2)) to (min(%arg2, 64), 10) step (2, 3) reduce ("addf", "maximumf") -> (f32, f32) {
      %1 = affine.load %arg0[%arg3, %arg4] : memref<100x100xf32>
      affine.yield %1, %1 : f32, f32
    }
    return %0#0, %0#1 : f32, f32
  }
}
"""),
    # no dimension; symbols; a nest of parallels using the outer IVs as dimensions; unit steps
    # are not printed; a single result type prints in parentheses; the attribute dictionary
    "forms": ("""\
func.func @f(%A: memref<100x100xf32>, %a: index, %n: index, %m: index) -> (i32, f64) {
  affine.parallel () = () to () {
  }
  affine.parallel (%i, %j) = (%a, %a + %n) to (symbol(%n) + %a, min(%n, 3, %m floordiv 2)) step (1, 4) {
    affine.parallel (%k) = (max(%i, %j - 1, symbol(%m))) to (%i * 2 + 1) {
      %v = affine.load %A[%i, %k] : memref<100x100xf32>
      affine.store %v, %A[%j, %k] : memref<100x100xf32>
    }
  }
  %c = arith.constant 3 : i32
  %s = arith.constant 2.0 : f64
  %r = affine.parallel (%i) = (-5) to (%n ceildiv 3 - 1) reduce ("muli") -> i32 {
    affine.yield %c : i32
  } {foo = 3 : i64}
  %r3:2 = affine.parallel (%i, %j, %k) = (max(0, %a), 0, 0) to (min(1, %a), %n mod 7, 3) reduce ("ori", "minimumf") -> (i32, f64) {
    affine.yield %c, %s : i32, f64
  }
  return %r, %r3#1 : i32, f64
}
""", """\
module {
  func.func @f(%arg0: memref<100x100xf32>, %arg1: index, %arg2: index, %arg3: index) -> (i32, f64) {
    affine.parallel () = () to () {
    }
    affine.parallel (%arg4, %arg5) = (%arg1, %arg1 + %arg2) to (%arg1 + symbol(%arg2), min(%arg2, 3, %arg3 floordiv 2)) step (1, 4) {
      affine.parallel (%arg6) = (max(%arg4, %arg5 - 1, symbol(%arg3))) to (%arg4 * 2 + 1) {
        %2 = affine.load %arg0[%arg4, %arg6] : memref<100x100xf32>
        affine.store %2, %arg0[%arg5, %arg6] : memref<100x100xf32>
      }
    }
    %c3_i32 = arith.constant 3 : i32
    %cst = arith.constant 2.000000e+00 : f64
    %0 = affine.parallel (%arg4) = (-5) to (%arg2 ceildiv 3 - 1) reduce ("muli") -> (i32) {
      affine.yield %c3_i32 : i32
    } {foo = 3 : i64}
    %1:2 = affine.parallel (%arg4, %arg5, %arg6) = (max(0, %arg1), 0, 0) to (min(1, %arg1), %arg2 mod 7, 3) reduce ("ori", "minimumf") -> (i32, f64) {
      affine.yield %c3_i32, %cst : i32, f64
    }
    return %0, %1#1 : i32, f64
  }
}
"""),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name):
    source, expected = GOLDEN[name]
    printed = print_module(parse(source, f"{name}.mlir"))
    assert printed == expected
    assert print_module(parse(printed, "printed.mlir")) == printed   # a fixed point


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_same_as_mlir_opt(name):
    source, expected = GOLDEN[name]
    assert mlir_opt(source) == expected
    assert mlir_opt(expected) == expected    # mlir-opt-22 accepts what we print


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_parses_mlir_opt_generic_form(name):
    source, expected = GOLDEN[name]
    generic = mlir_opt(source, "--mlir-print-op-generic")
    assert "lowerBoundsGroups" in generic and "reductions = [" in generic
    assert print_module(parse(generic, f"{name}.generic.mlir")) == expected


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_our_generic_form_is_accepted_by_mlir_opt(name):
    source, expected = GOLDEN[name]
    generic = print_module(parse(source), generic=True)
    assert '"affine.parallel"' in generic and "upperBoundsGroups = dense<" in generic
    assert mlir_opt(generic) == expected


def test_generic_attributes_as_mlir_stores_them():
    source, _ = GOLDEN["minmax_steps_reduce"]
    op = next(o for o in parse(source).walk() if isinstance(o, AffineParallelOp))
    generic = print_module(parse(source), generic=True)
    # max(%a, 2) and the constant 0 share one map over %a; min(%n, 64) and 10 over %n
    assert "lowerBoundsGroups = dense<[1, 2]> : tensor<2xi32>" in generic
    assert "upperBoundsGroups = dense<[2, 1]> : tensor<2xi32>" in generic
    assert "reductions = [0, 4], steps = [2, 3]" in generic
    assert op.lower_map == AffineMap.get(1, 0, [0, dim(0), 2])
    assert op.upper_map == AffineMap.get(1, 0, [dim(0), 64, 10])


@pytest.mark.parametrize("kind", ATOMIC_RMW_KINDS)
def test_reduction_numbers_are_mlir_enum_values(kind):
    """``reductions`` holds arith::AtomicRMWKind values: mlir-opt-22 agrees on each number."""
    source = f"""\
func.func @f() {{
  affine.parallel (%i) = (0) to (10) reduce ("{kind}") {{
  }}
  return
}}
"""
    # no result, one reduction: invalid, but the custom parser has stored the enum value
    r = run_mlir_opt(source, "--mlir-print-op-generic")
    assert r.returncode != 0
    assert f"reductions = [{ATOMIC_RMW_KINDS.index(kind)}]" in r.stderr


# which result types each reduction accepts, as mlir-opt-22 decides (polyopt has no si32/ui32:
# maxs/mins/maxu/minu are then never valid; maxnumf/minnumf/xori never are in MLIR 22)
TYPES = ["f32", "f64", "f16", "bf16", "i1", "i8", "i32", "i64", "index"]


@pytest.mark.parametrize("kind", ATOMIC_RMW_KINDS)
def test_reduction_result_types_as_mlir_opt(kind):
    for t in TYPES:
        source = f"""\
func.func @f(%x: {t}) -> {t} {{
  %r = affine.parallel (%i) = (0) to (10) reduce ("{kind}") -> ({t}) {{
    affine.yield %x : {t}
  }}
  return %r : {t}
}}
"""
        mlir_ok = run_mlir_opt(source).returncode == 0
        try:
            parse(source, "r.mlir")
            ours_ok = True
        except VerifyError as e:
            assert "result type cannot match reduction attribute" in str(e)
            ours_ok = False
        assert ours_ok == mlir_ok, (kind, t)


def test_reduction_matches():
    assert reduction_matches("addf", FloatType(16, brain=True))
    assert reduction_matches("andi", IntegerType(1)) and not reduction_matches("andi", index)
    assert reduction_matches("assign", index) and not reduction_matches("maxnumf", f32)


# ---------------------------------------------------------------------------------------------
# errors: FILE:LINE:COL and message; mlir_agrees says whether mlir-opt-22 says the same


def _func(body: str) -> str:
    return ("func.func @f(%x: index, %n: index, %A: memref<10xf32>, %F: f32) {\n  " + body
            + "\n  return\n}\n")


_GEN_HEAD = '"affine.parallel"(%n) <{lowerBoundsGroups = dense<1> : tensor<1xi32>, '
_GEN_BODY = '''}> ({
  ^bb0(%i: index):
    "affine.yield"() : () -> ()
  }) : (index) -> ()'''


def _generic(attrs: str, body: str = _GEN_BODY) -> str:
    return _func(_GEN_HEAD + attrs + body)


_LB0 = "lowerBoundsMap = affine_map<() -> (0)>, "
_UBN = "upperBoundsGroups = dense<1> : tensor<1xi32>, upperBoundsMap = affine_map<()[s0] -> (s0)>"

NEGATIVE = [
    ("step_not_constant", _func("affine.parallel (%i) = (0) to (10) step (%n) {\n  }"),
     "bad.mlir:2:3: error: custom op 'affine.parallel' steps must be constant integers", True),
    ("bad_reduction_name", _func('affine.parallel (%i) = (0) to (10) reduce ("bogus") -> f32 {'
                                 '\n    affine.yield %F : f32\n  }'),
     'bad.mlir:2:46: error: custom op \'affine.parallel\' invalid reduction value: "bogus"', True),
    ("reduction_type", _func('%r = affine.parallel (%i) = (0) to (10) reduce ("addf") -> i32 {'
                             '\n    affine.yield %F : f32\n  }'),
     "bad.mlir:2:8: error: 'affine.parallel' op result type cannot match reduction attribute",
     True),
    ("maxnumf_never_valid", _func('%r = affine.parallel (%i) = (0) to (10) reduce ("maxnumf") '
                                  '-> f32 {\n    affine.yield %F : f32\n  }'),
     "bad.mlir:2:8: error: 'affine.parallel' op result type cannot match reduction attribute",
     True),
    ("missing_yield_operand", _func('%r = affine.parallel (%i) = (0) to (10) reduce ("addf") '
                                    '-> f32 {\n  }'),
     "bad.mlir:2:8: error: 'affine.yield' op parent of yield must have same number of results "
     "as the yield operands", True),
    ("result_without_reduction", _func("%r = affine.parallel (%i) = (0) to (10) -> f32 {\n"
                                       "    affine.yield %F : f32\n  }"),
     "bad.mlir:2:8: error: 'affine.parallel' op a reduction must be specified for each output",
     True),
    ("yield_type", _func('%r = affine.parallel (%i) = (0) to (10) reduce ("addf") -> (f32) {\n'
                         '    affine.yield %x : index\n  }'),
     "bad.mlir:3:5: error: 'affine.yield' op types mismatch between yield op and its parent",
     True),
    ("group_count", _func("affine.parallel (%i, %j) = (0) to (%n) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op the number of region arguments (2) and the "
     "number of map groups for lower (1) and upper bound (1), and the number of steps (2) must "
     "all match", True),
    ("step_count", _func("affine.parallel (%i) = (0) to (10) step (1, 2) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op the number of region arguments (1) and the "
     "number of map groups for lower (1) and upper bound (1), and the number of steps (2) must "
     "all match", True),
    ("empty_max", _func("affine.parallel (%i) = (max()) to (10) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op expected lower bound map to have at least one "
     "result", True),
    ("empty_min", _func("affine.parallel (%i) = (0) to (min()) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op expected upper bound map to have at least one "
     "result", True),
    # an index computed with arith inside the body is neither a dimension nor a symbol
    ("bound_not_a_dim", _func("affine.parallel (%i) = (0) to (10) {\n"
                              "    %v = arith.index_cast %i : index to i32\n"
                              "    %w = arith.index_cast %v : i32 to index\n"
                              "    affine.parallel (%j) = (0) to (%w) {\n    }\n  }"),
     "bad.mlir:5:5: error: 'affine.parallel' op operand cannot be used as a dimension id", True),
    ("non_affine_bound", _func("affine.parallel (%i) = (%x * %n) to (10) {\n  }"),
     "bad.mlir:2:30: error: non-affine expression: at least one of the multiply operands has to "
     "be either a constant or symbolic", True),
    ("non_index_bound", _func("%c = arith.constant 1 : i32\n"
                              "  affine.parallel (%i) = (%c) to (10) {\n  }"),
     "bad.mlir:3:27: error: use of value '%c' expects different type than prior uses: 'index' "
     "vs 'i32'", True),
    ("yield_without_results", _func("affine.parallel (%i) = (0) to (10) {\n"
                                    "    %v = affine.load %A[%i] : memref<10xf32>\n"
                                    "    affine.yield %v : f32\n  }"),
     "bad.mlir:4:5: error: 'affine.yield' op parent of yield must have same number of results "
     "as the yield operands", True),
    ("yield_not_last", _func('affine.parallel (%i) = (0) to (10) {\n    "affine.yield"() : () -> ()'
                             '\n    %c = arith.constant 1 : i32\n  }'),
     "bad.mlir:3:5: error: 'affine.yield' op must be the last operation in the parent block",
     True),
    # generic form: the ODS constraints
    ("generic_no_reductions", _generic(_LB0 + "steps = [1], " + _UBN),
     "bad.mlir:2:3: error: 'affine.parallel' op requires attribute 'reductions'", True),
    ("generic_no_steps", _generic(_LB0 + "reductions = [], " + _UBN),
     "bad.mlir:2:3: error: 'affine.parallel' op requires attribute 'steps'", True),
    ("generic_i64_groups", _func(_GEN_HEAD.replace("1xi32", "1xi64") + _LB0
                                 + "reductions = [], steps = [1], " + _UBN + _GEN_BODY),
     "bad.mlir:2:3: error: 'affine.parallel' op attribute 'lowerBoundsGroups' failed to satisfy "
     "constraint: 32-bit signless integer elements attribute", True),
    ("generic_i32_steps", _generic(_LB0 + "reductions = [], steps = [1 : i32], " + _UBN),
     "bad.mlir:2:3: error: 'affine.parallel' op attribute 'steps' failed to satisfy constraint: "
     "64-bit integer array attribute", True),
    ("generic_reduction_out_of_range", _generic(_LB0 + "reductions = [16], steps = [1], " + _UBN),
     "bad.mlir:2:3: error: 'affine.parallel' op attribute 'reductions' failed to satisfy "
     "constraint: Reduction ops", True),
    ("generic_group_total", _func(_GEN_HEAD.replace("dense<1>", "dense<2>") + _LB0
                                  + "reductions = [], steps = [1], " + _UBN + _GEN_BODY),
     "bad.mlir:2:3: error: 'affine.parallel' op expected lower bounds map to have 2 results",
     True),
    ("generic_no_block", _generic(_LB0 + "reductions = [], steps = [1], " + _UBN,
                                  "}> ({\n  }) : (index) -> ()"),
     "bad.mlir:2:3: error: 'affine.parallel' op region #0 ('region') failed to verify "
     "constraint: region with 1 blocks", True),
    # stricter than mlir-opt-22: it crashes printing this one (the map wants two operands) ...
    ("generic_operand_count", _generic(_LB0 + "reductions = [], steps = [1], " + _UBN.replace(
        "()[s0] -> (s0)", "()[s0, s1] -> (s0 + s1)")),
     "bad.mlir:2:3: error: 'affine.parallel' op operand count (1) does not match the inputs of "
     "the bound maps (2)", False),
    # ... accepts a body argument that is no index, and steps that loop forever or backwards
    ("generic_f32_iv", _generic(_LB0 + "reductions = [], steps = [1], " + _UBN,
                                _GEN_BODY.replace("%i: index", "%i: f32")),
     "bad.mlir:2:3: error: 'affine.parallel' op region argument #0 must be of 'index' type, got "
     "'f32'", False),
    ("step_zero", _func("affine.parallel (%i) = (0) to (10) step (0) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op step #0 must be positive, got 0", False),
    ("step_negative", _func("affine.parallel (%i, %j) = (0, 0) to (10, 10) step (1, -2) {\n  }"),
     "bad.mlir:2:3: error: 'affine.parallel' op step #1 must be positive, got -2", False),
]


@pytest.mark.parametrize("name,source,expected,mlir_agrees", NEGATIVE,
                         ids=[n[0] for n in NEGATIVE])
def test_errors(name, source, expected, mlir_agrees):
    with pytest.raises(PolyoptError) as info:
        parse(source, "bad.mlir")
    assert str(info.value) == expected
    rendered = info.value.render().splitlines()
    assert rendered[0] == expected and rendered[2].index("^") == info.value.loc.col - 1
    if mlir_agrees:
        assert mlir_opt_error(source, filename="bad.mlir") == expected
    else:   # mlir-opt-22 accepts it, or crashes on it
        r = run_mlir_opt(source)
        assert r.returncode == 0 or "PLEASE submit a bug report" in r.stderr, r.stderr


def test_syntax_errors_are_parse_errors():
    with pytest.raises(ParseError):
        parse(NEGATIVE[0][1], "bad.mlir")
    with pytest.raises(VerifyError):
        parse(NEGATIVE[2][1], "bad.mlir")


# ---------------------------------------------------------------------------------------------
# accessors, the builder, dimensions


def test_accessors_and_dims():
    source, _ = GOLDEN["forms"]
    m = parse(source)
    ops = [o for o in m.walk() if isinstance(o, AffineParallelOp)]
    empty, outer, inner, r1, r3 = ops
    assert empty.num_dims == 0 and empty.dims() == [] and empty.ivs == []
    assert outer.num_dims == 2 and outer.steps == (1, 4)
    assert outer.lower_groups == (1, 1) and outer.upper_groups == (1, 3)
    a, n, mm = m.walk().__next__().regions[0].blocks[0].ops[0].body.args[1:]
    assert outer.lower_operands == (a, n)
    assert outer.lower_bound_map(1) == AffineMap.get(2, 0, [dim(0) + dim(1)])
    # the upper operands: dims %a, %n, %m (%n also as a symbol: its own operand)
    assert outer.upper_bound_map(1).num_results == 3
    d0, d1 = outer.dims()
    assert d1.induction_var is outer.ivs[1] and d1.step == 4 and d0.name == "affine.parallel"
    assert d1.lower_map == outer.lower_bound_map(1) and d1.upper_operands == outer.upper_operands
    assert inner.lower_operands[:2] == (outer.ivs[0], outer.ivs[1])
    assert inner.lower_map == AffineMap.get(2, 1, [dim(0), dim(1) - 1, symbol(0)])
    assert r1.reductions == ("muli",) and r3.reductions == ("ori", "minimumf")
    assert r3.yield_op.operands[1].type == r3.results[1].type


def test_build_prints_and_verifies():
    mt = MemRefType((16, 16), f32)
    module = ModuleOp.build()
    func = FuncOp.build("f", FunctionType((mt, index), (f32,)))
    module.body.append(func)
    A, n = func.body.args
    par = AffineParallelOp.build(
        [AffineMap.constant_map(0), AffineMap.constant_map(1)], [],
        [AffineMap.get(0, 1, [symbol(0), 16]), AffineMap.get(0, 1, [16])], [n],
        steps=[2, 1], reductions=["addf"], result_types=[f32])
    func.body.append(par)
    i, j = par.ivs
    load = par.body.append(AffineLoadOp.build(A, [i, j]))
    par.body.append(AffineStoreOp.build(load.result, A, [j, i]))
    par.body.append(AffineYieldOp.build([load.result]))
    func.body.append(ReturnOp(operands=[par.results[0]]))
    verify(module)
    text = print_module(module)
    assert "affine.parallel (%arg2, %arg3) = (0, 1) to (min(symbol(%arg1), 16), 16) step (2, 1) " \
           "reduce (\"addf\") -> (f32)" in text
    assert mlir_opt(text) == text
    with pytest.raises(ValueError):
        AffineParallelOp.build([AffineMap.constant_map(0)], [], [], [], steps=[1])
