"""The generic verifier: dominance, isolation of functions, terminators (IR built in code,
where the parser's scoping cannot catch mistakes)."""

import pytest

from polyopt.affine.builder import Builder
from polyopt.affine.diagnostics import VerifyError
from polyopt.affine.dialects.affine import AffineForOp, AffineLoadOp
from polyopt.affine.dialects.arith import FLOAT_BINARY, ConstantOp
from polyopt.affine.parser import parse
from polyopt.affine.verifier import verify

SRC = """\
func.func @f(%A: memref<8xf64>, %x: f64) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf64>
  }
  return
}
func.func @g(%y: f64) {
  return
}
"""


def _func(module, name):
    return module.lookup_function(name)


def test_valid_module_verifies():
    verify(parse(SRC))


def test_use_before_definition_is_rejected():
    module = parse(SRC)
    f = _func(module, "f")
    x = f.body.args[1]
    b = Builder.at_start(f.body)
    add = b.create(FLOAT_BINARY["addf"], x, x)
    later = Builder.before(f.body.terminator).create(ConstantOp, 1.0, x.type)
    add.set_operand(1, later.result)
    with pytest.raises(VerifyError) as e:     # MLIR's emitError: no op-name prefix
        verify(module)
    assert e.value.message == "operand #1 does not dominate this use"


def test_value_from_inside_a_loop_used_after_it_is_rejected():
    module = parse(SRC)
    f = _func(module, "f")
    loop = next(op for op in f.walk() if isinstance(op, AffineForOp))
    load = next(op for op in loop.walk() if isinstance(op, AffineLoadOp))
    Builder.before(f.body.terminator).create(FLOAT_BINARY["mulf"], load.result, load.result)
    with pytest.raises(VerifyError) as e:
        verify(module)
    assert e.value.message == "operand #0 does not dominate this use"


def test_functions_are_isolated_from_above():
    module = parse(SRC)
    x = _func(module, "f").body.args[1]
    g = _func(module, "g")
    Builder.at_start(g.body).create(FLOAT_BINARY["addf"], x, x)
    with pytest.raises(VerifyError) as e:     # MLIR's IsolatedFromAbove trait
        verify(module)
    assert e.value.message == "'arith.addf' op using value defined outside the region"


def test_missing_terminator_is_rejected():
    module = parse(SRC)
    f = _func(module, "f")
    f.body.terminator.erase()
    with pytest.raises(VerifyError) as e:     # mlir-opt prints the op in generic form
        verify(module)
    assert e.value.message.startswith('block with no terminator, has \n"affine.for"() <{')
    assert (e.value.loc.line, e.value.loc.col) == (2, 3)
