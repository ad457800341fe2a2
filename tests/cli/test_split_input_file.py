"""``polyopt opt --split-input-file``: a file of several modules between ``// -----`` lines,
as MLIR's own test files are written, each part transformed on its own with the file's line
numbers in its errors; what it prints is ``mlir-opt-22 --split-input-file``'s, part for part.
Also mlir-opt's spellings of the IR-printing flags."""

import subprocess

from polyopt.cli import main, split_input

from upstream_mlir import MLIR_OPT, tool

# the third part has a type error on line 11; the marker on line 8 is indented, as mlir-opt
# allows
PARTS = """func.func @a() {
  return
}
// -----
func.func @b(%x: i32) -> i32 {
  return %x : i32
}
  // -----
func.func @c() {
  %0 = arith.constant 1 : i33
  return %0 : i32
}
// -----
func.func @d(%m: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %v = affine.load %m[%i] : memref<4xf32>
    affine.store %v, %m[%i] : memref<4xf32>
  }
  return
}
"""


def test_the_parts_print_as_mlir_opt_prints_them(tmp_path, capsys):
    path = tmp_path / "parts.mlir"
    path.write_text(PARTS)
    status = main(["opt", "--split-input-file", str(path)])
    out, err = capsys.readouterr()
    upstream = subprocess.run([tool(MLIR_OPT), "--split-input-file", str(path)],
                              capture_output=True, text=True, timeout=60)
    assert (status, upstream.returncode) == (1, 1)      # the bad part fails the run ...
    assert out == upstream.stdout                          # ... and the others still print
    assert out.count("// -----\n") == 3 and "@d" in out and "@c" not in out
    # the error points at the file's line, quoting it, as upstream's does
    assert err.splitlines()[:2] == [f"{path}:11:10: error: use of value '%0' expects "
                                    f"different type than prior uses: 'i32' vs 'i33'",
                                    "  return %0 : i32"]
    assert f"{path}:11:10: error:" in upstream.stderr


def test_a_part_that_starts_inside_a_line_keeps_its_columns(tmp_path, capsys):
    """The marker is found anywhere, as upstream finds it: what follows it on its line is
    the next part's first text."""
    path = tmp_path / "mid.mlir"
    path.write_text("func.func @a() {\n  return\n}\n// ----- x\n")
    assert main(["opt", "--split-input-file", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:4:10: error: custom op 'x' is unknown (did you mean a dialect-prefixed name?)",
        "// ----- x", "         ^"]


def test_each_part_runs_the_pipeline(tmp_path, capsys):
    matmul = """func.func @mm(%A: memref<16x12xf64>, %B: memref<12x8xf64>, %C: memref<16x8xf64>) {
  hop.matmul %A, %B, %C : (memref<16x12xf64>, memref<12x8xf64>, memref<16x8xf64>)
  return
}
"""
    path = tmp_path / "two.mlir"
    path.write_text(matmul + "// -----\n" + matmul.replace("@mm", "@mm2"))
    assert main(["opt", "--hopt", "--hopt-copy", "--split-input-file", str(path)]) == 0
    parts = capsys.readouterr().out.split("// -----\n")
    assert len(parts) == 2
    for part, name in zip(parts, ("@mm(", "@mm2(")):
        assert name in part and "hop.matmul" not in part and "memref.alloc" in part


def test_a_marker_of_ones_own(tmp_path, capsys):
    path = tmp_path / "own.mlir"
    path.write_text("func.func @a() {\n  return\n}\n#SPLIT\nfunc.func @b() {\n  return\n}\n")
    assert main(["opt", "--split-input-file=#SPLIT", str(path)]) == 0
    assert capsys.readouterr().out.count("module {") == 2
    assert main(["opt", "--split-input-file=", str(path)]) == 1
    assert "--split-input-file: the marker is empty" in capsys.readouterr().err


def test_split_input_pads_each_part_to_its_place():
    parts = split_input("a\nb // ----- c\nd")
    assert parts == ["a\nb ", "\n" + " " * 10 + " c\nd"]
    assert split_input("no marker") == ["no marker"]


def test_mlir_opts_spellings_of_the_ir_printing_flags(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text("func.func @f() {\n  return\n}\n")
    assert main(["opt", "--hopt", "--mlir-print-ir-after-all", str(path)]) == 0
    assert "// -----// IR Dump After hopt-expand //----- //" in capsys.readouterr().err
    assert main(["opt", "--hopt", "--mlir-print-ir-after=hopt-expand", str(path)]) == 0
    assert capsys.readouterr().err.count("IR Dump After") == 1
    assert main(["opt", "--hopt", "--dump-pass-pipeline", str(path)]) == 0
    assert "builtin.module(" in capsys.readouterr().err
