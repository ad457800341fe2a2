"""``vector.step``, ``vector.from_elements``, ``vector.to_elements`` and
``vector.deinterleave`` (what MLIR's vectorizers and canonicalizations leave): printed and
refused as mlir-opt-22 does, and run as mlir-runner-22 runs them."""

from __future__ import annotations

import pytest

from polyopt.affine.diagnostics import PolyoptError
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run, mlir_opt, mlir_opt_error

MAIN = """\
func.func @main() {
  %c1 = arith.constant 1.5 : f32
  %c2 = arith.constant -2.0 : f32
  %v = vector.from_elements %c1, %c2, %c1, %c2, %c2, %c1, %c1, %c1 : vector<8xf32>
  %even, %odd = vector.deinterleave %v : vector<8xf32> -> vector<4xf32>
  vector.print %even : vector<4xf32>
  vector.print %odd : vector<4xf32>
  %s = vector.step : vector<5xindex>
  vector.print %s : vector<5xindex>
  %x:4 = vector.to_elements %odd : vector<4xf32>
  %t = arith.addf %x#0, %x#3 : f32
  vector.print %t : f32
  %z = vector.from_elements %t : vector<f32>
  vector.print %z : vector<f32>
  return
}
"""


def test_printed_as_mlir_opt_prints():
    assert print_module(parse(MAIN, "t.mlir")) == mlir_opt(MAIN)
    generic = mlir_opt(MAIN, "--mlir-print-op-generic")
    assert print_module(parse(generic, "g.mlir")) == mlir_opt(MAIN)


def test_runs_as_mlir_runner(tmp_path, capfd):
    upstream = lower_and_run(MAIN, ["--test-lower-to-llvm"])
    assert polyopt_run(tmp_path, capfd, MAIN) == upstream


def body(text: str) -> str:
    return f"func.func @f() {{\n  {text}\n  return\n}}\n"


@pytest.mark.parametrize("text", [
    "%a = arith.constant 1.0 : f32\n  %v = vector.from_elements %a : vector<2xf32>",
    "%v = vector.step : vector<4xf32>",
    "%v = vector.step : vector<2x4xindex>",
    "%a = arith.constant dense<1.0> : vector<7xf32>\n"
    "  %v, %w = vector.deinterleave %a : vector<7xf32> -> vector<3xf32>",
    "%a = arith.constant dense<1.0> : vector<8xf32>\n"
    "  %v, %w = vector.deinterleave %a : vector<8xf32> -> vector<3xf32>",
])
def test_errors_are_mlir_opts(text):
    with pytest.raises(PolyoptError) as info:
        parse(body(text), "t.mlir")
    assert info.value.render().splitlines()[0] == mlir_opt_error(body(text), filename="t.mlir")
