"""Types mlir-opt-22 reads and polyopt does not support: refused where they are written with a
message that says so, never with a syntax error that upstream does not give."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError
from polyopt.cli import main
from upstream_mlir import mlir_opt, mlir_opt_error


def _refusal(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, filename="t.mlir")
    return info.value.render().splitlines()[0]


# Arith/ops.mlir has a scalable twin of most of its tests (a quarter of its parts)
SCALABLE = {
    "one_dim": ("func.func @f(%a: vector<[8]xi64>) {\n  return\n}\n", 18),
    "trailing_dim": ("func.func @f(%a: vector<4x[8]xf32>) {\n  return\n}\n", 18),
    "in_an_op": ("func.func @f(%a: vector<4xi64>) {\n"
                 "  %0 = arith.addi %a, %a : vector<[8]xi64>\n  return\n}\n", 28),
}


@pytest.mark.parametrize("name", sorted(SCALABLE))
def test_scalable_vectors_are_refused_as_unsupported(name):
    text, col = SCALABLE[name]
    if name != "in_an_op":
        mlir_opt(text)       # valid upstream
    line = 2 if name == "in_an_op" else 1
    assert _refusal(text) == (f"t.mlir:{line}:{col}: error: scalable vector types are not "
                              "supported by polyopt (fixed-size vectors only)")


def test_a_malformed_scalable_dimension_gets_mlir_opts_message():
    text = "func.func @f(%a: vector<4x[8x2]xi64>) {\n  return\n}\n"
    assert _refusal(text) == mlir_opt_error(text, filename="t.mlir")


MEMORY_SPACES = {
    "string": ('"local"', 36),
    "dictionary": ("{memSpace = \"special\", subIndex = 1}", 36),
    "dialect_attribute": ("#gpu.address_space<workgroup>", 36),
}


@pytest.mark.parametrize("name", sorted(MEMORY_SPACES))
def test_non_integer_memory_spaces_are_refused_as_unsupported(name):
    space, col = MEMORY_SPACES[name]
    text = f"func.func private @f(memref<4xf32, {space}>)\n"
    mlir_opt(text)           # valid upstream
    assert _refusal(text) == (f"t.mlir:1:{col}: error: memory space '{space}' is not supported "
                              "by polyopt (integer memory spaces only)")


def test_memory_space_after_a_layout_and_of_an_unranked_memref():
    text = ("func.func private @f(memref<4xf32, affine_map<(d0) -> (d0)>, \"x\">)\n"
            "func.func private @g(memref<*xf32, \"x\">)\n")
    mlir_opt(text)
    assert _refusal(text) == ("t.mlir:1:62: error: memory space '\"x\"' is not supported by "
                              "polyopt (integer memory spaces only)")
    assert _refusal(text.split("\n", 1)[1]).startswith("t.mlir:1:36: error: memory space")


def test_integer_memory_spaces_and_layout_aliases_still_read():
    text = ("#map = affine_map<(d0) -> (d0 + 1)>\n"
            "func.func private @f(memref<4xf32, 3>, memref<4xf32, #map, 1>, memref<*xf32, 2>)\n")
    assert str(polyopt.parse(text)) == mlir_opt(text)


def test_cli_exit_status(tmp_path, capsys):
    path = tmp_path / "t.mlir"
    path.write_text(SCALABLE["one_dim"][0])
    assert main(["opt", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:18: error: scalable vector types") and "Traceback" not in err


def test_a_memref_of_memrefs_is_refused_as_unsupported():
    text = "func.func private @f(memref<1xmemref<1xf64>>)\n"
    mlir_opt(text)
    assert _refusal(text) == ("t.mlir:1:22: error: memref element type 'memref<1xf64>' is not "
                              "supported by polyopt (elements of integer, index, float or vector "
                              "type only)")
    invalid = "func.func private @f(memref<1xnone>)\n"
    mlir_opt_error(invalid)
    assert _refusal(invalid) == "t.mlir:1:22: error: invalid memref element type 'none'"
