"""Bad input gets ``FILE:LINE:COL: error: ...``, the source line and a caret, exit status 1,
and never a traceback (DESIGN.md, Contracts)."""

import subprocess
import sys

import pytest

from polyopt.cli import main

FUNC = """\
func.func @f(%A: memref<4x4xf64>, %B: memref<4x5xf64>, %x: f64, %y: f32, %n: index) {{
{body}
  return
}}
"""

# (name, body placed inside @f, expected (line, col), expected message)
CASES = [
    ("missing_brace", "  affine.for %i = 0 to 4 {", (5, 1),
     "expected '}' to end a region"),
    ("undeclared_ssa", "  %v = affine.load %A[%i, %n] : memref<4x4xf64>", (2, 23),
     "use of undeclared SSA value name '%i'"),
    ("addf_type_mismatch", "  %s = arith.addf %x, %y : f64", (2, 23),
     "use of value '%y' expects different type than prior uses: 'f64' vs 'f32'"),
    ("non_affine_subscript",
     "  affine.for %i = 0 to 4 {\n    %v = affine.load %A[%i * %i, %i] : memref<4x4xf64>\n  }",
     (3, 28), "non-affine expression: at least one of the multiply operands has to be either "
     "a constant or symbolic"),
    ("wrong_subscript_count",
     "  affine.for %i = 0 to 4 {\n    %v = affine.load %A[%i] : memref<4x4xf64>\n  }", (3, 10),
     "'affine.load' op affine map num results must equal memref rank"),
    ("hop_matmul_shapes",
     "  hop.matmul %A, %B, %A : (memref<4x4xf64>, memref<4x5xf64>, memref<4x4xf64>)", (2, 3),
     "'hop.matmul' op operand #2 (C) has 4 columns but B has 5 columns"),
    ("hop_matmul_zero_tile",
     "  hop.matmul %A, %A, %A {M_R = 0 : i32} : "
     "(memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>)", (2, 3),
     "'hop.matmul' op M_R must be positive, got 0"),
    ("unknown_op", "  %v = foo.bar %x : f64", (2, 8), "custom op 'foo.bar' is unknown"),
    ("ssa_redefinition", "  %v = arith.addf %x, %x : f64\n  %v = arith.addf %x, %x : f64",
     (3, 3), "redefinition of SSA value '%v'"),
    ("undefined_alias",
     "  affine.for %i = 0 to #map9(%n) {\n  }", (2, 24), "undefined symbol alias id 'map9'"),
    ("store_type_mismatch",
     "  affine.for %i = 0 to 4 {\n    affine.store %y, %A[%i, %i] : memref<4x4xf64>\n  }",
     (3, 18), "use of value '%y' expects different type than prior uses: 'f64' vs 'f32'"),
    ("subscript_not_dim_or_symbol",
     "  affine.for %i = 0 to 4 {\n    %c1 = arith.constant 1 : index\n"
     "    %j = arith.addi %i, %c1 : index\n    %v = affine.load %A[%j, %i] : memref<4x4xf64>\n  }",
     (5, 10), "'affine.load' op operand cannot be used as a dimension id"),
    ("unknown_type", "  %m = memref.alloc() : memref<4xfoo>", (2, 34), "unknown type 'foo'"),
    ("loop_bound_not_index", "  affine.for %i = 0 to %x {\n  }", (2, 24),
     "use of value '%x' expects different type than prior uses: 'index' vs 'f64'"),
    ("call_undefined_function", "  call @nowhere(%x) : (f64) -> ()", (2, 3),
     "'func.call' op 'nowhere' does not reference a valid function"),
    ("linalg_matmul_shapes",
     "  linalg.matmul ins(%A, %B : memref<4x4xf64>, memref<4x5xf64>) "
     "outs(%A : memref<4x4xf64>)", (2, 3),
     "'linalg.matmul' op inferred input/output operand #2 has shape's dimension #1 to be 5, "
     "but found 4"),
    ("bad_integer_literal", "  %c = arith.constant 300 : i8", (2, 23),
     "integer constant out of range for attribute"),
    ("affine_if_operand_count",
     "  affine.if affine_set<(d0, d1) : (d0 - d1 >= 0)>(%n) {\n  }", (2, 3),
     "custom op 'affine.if' dim operand count and integer set dim count must match"),
]


@pytest.mark.parametrize("name,body,pos,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_reported_with_location(tmp_path, capsys, name, body, pos, message):
    path = tmp_path / f"{name}.mlir"
    path.write_text(FUNC.format(body=body))
    status = main(["opt", str(path)])
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{pos[0]}:{pos[1]}: error: "), first
    assert first.endswith(message), first
    # the source line and a caret under the column follow
    lines = err.splitlines()
    assert len(lines) == 3 and lines[2].strip() == "^"
    col = int(first[len(str(path)) + 1:].split(":")[1])
    assert lines[2] == " " * (col - 1) + "^"


def test_console_script_exit_status_and_no_traceback(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(FUNC.format(body="  %v = arith.addf %x, %nope : f64"))
    proc = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{path}:2:23: error: use of undeclared SSA value name '%nope'")
    assert "Traceback" not in proc.stderr


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    status = main(["opt", str(tmp_path / "absent.mlir")])
    _, err = capsys.readouterr()
    assert status == 1
    assert err.startswith("polyopt: error: cannot open input file")


def test_stdin_input(monkeypatch, capsys):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("func.func @f() {\n  return\n}\n"))
    assert main(["opt", "-"]) == 0
    out, _ = capsys.readouterr()
    assert out == "module {\n  func.func @f() {\n    return\n  }\n}\n"


def test_pass_flags_without_hopt_are_a_usage_error(capsys):
    import os
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "hop_matmul.mlir")
    assert main(["opt", "--hopt-copy", "--hopt-vect", example]) == 1
    err = capsys.readouterr().err
    assert err == ("polyopt: error: --hopt-copy, --hopt-vect need --hopt (they transform the "
                   "loop nests --hopt generates)\n")
    import polyopt
    with pytest.raises(ValueError, match="--hopt-unroll needs --hopt"):
        polyopt.compile(open(example).read(), unroll=True)
