"""scf.for resolves its bounds, step and inits after its body, as MLIR's ForOp::parse does: a
bound naming the loop's own induction variable, an iter_arg or a value defined in the body is a
use of an undeclared name, where mlir-opt-22 says so (polyopt adds the name).  Bounds defined
after the loop in the enclosing block still resolve (a dominance error), and a loop whose bounds
are defined before it parses and runs."""

import pytest

import polyopt
from polyopt.cli import main
from run_helpers import polyopt_run
from upstream_mlir import mlir_opt, mlir_opt_error

_HEAD = """func.func @f() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
"""
_TAIL = """  return
}
"""

CASES = {
    "upper bound is the induction variable":
        "  scf.for %i = %c0 to %i step %c1 {\n  }\n",
    "lower bound is the induction variable":
        "  scf.for %i = %i to %c1 step %c1 {\n  }\n",
    "step is the induction variable":
        "  scf.for %i = %c0 to %c1 step %i {\n  }\n",
    "upper bound defined in the body":
        "  scf.for %i = %c0 to %x step %c1 {\n    %x = arith.constant 4 : index\n  }\n",
    "init is its own iter_arg":
        "  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %a) -> (f32) {\n"
        "    scf.yield %a : f32\n  }\n",
    "init defined in the body":
        "  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %y) -> (f32) {\n"
        "    %y = arith.constant 1.0 : f32\n    scf.yield %a : f32\n  }\n",
    "bound defined after the loop":
        "  scf.for %j = %c0 to %z step %c1 {\n  }\n  %z = arith.constant 4 : index\n",
    "bound type checked after the body's errors":
        "  %n = arith.constant 4 : i32\n  scf.for %i = %c0 to %n step %c1 {\n"
        "    %q = arith.addi %i, %c0 : i32\n  }\n",
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_bound_reported_as_mlir_opt(tmp_path, capsys, case):
    text = _HEAD + CASES[case] + _TAIL
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    want = mlir_opt_error(text, filename=str(path))
    assert main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    if want.endswith("use of undeclared SSA value name"):
        assert first.startswith(want + " '%")      # polyopt names the value
    else:
        assert first == want
    assert "Traceback" not in err


def test_loop_with_bounds_defined_before_it_prints_and_runs(tmp_path, capfd):
    text = """func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0 : index
  %s = scf.for %i = %c0 to %c5 step %c1 iter_args(%a = %zero) -> (index) {
    %n = arith.addi %a, %i : index
    scf.yield %n : index
  }
  vector.print %s : index
  return
}
"""
    assert str(polyopt.parse(text)) == mlir_opt(text)
    assert polyopt_run(tmp_path, capfd, text) == "10\n"
