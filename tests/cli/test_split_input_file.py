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


INVALID = """func.func @c() {
  %0 = arith.constant 1 : i33
  // expected-error @+1 {{expects different type than prior uses: 'i32' vs 'i33'}}
  return %0 : i32
}
// -----
func.func @ok() {
  return
}
// -----
// expected-error @below {{custom op 'x' is unknown}}
x
// -----
func.func @f(%m: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    // expected-error @+1 {{non-affine expression: at least one of the multiply operands}}
    %v = affine.load %m[%i * %i] : memref<4xf32>
  }
  return
}
"""


def test_verify_diagnostics_passes_where_every_error_was_expected(tmp_path, capsys):
    path = tmp_path / "invalid.mlir"
    path.write_text(INVALID)
    status = main(["opt", "--split-input-file", "--verify-diagnostics", str(path)])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    assert out.count("// -----\n") == 3 and "@ok" in out


def test_verify_diagnostics_reports_what_is_missing_and_what_was_not_expected(tmp_path,
                                                                               capsys):
    path = tmp_path / "wrong.mlir"
    path.write_text(INVALID.replace("@+1 {{expects", "@+2 {{expects")
                    + "// -----\nfunc.func @g() {\n  // expected-error {{never}}\n  return\n}\n")
    assert main(["opt", "--split-input-file", "--verify-diagnostics", str(path)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert errors == [
        f"{path}:4:10: error: unexpected error: use of value '%0' expects different type than "
        f"prior uses: 'i32' vs 'i33'",
        f"{path}:3:6: error: expected error \"expects different type than prior uses: 'i32' "
        f"vs 'i33'\" was not produced",
        f"{path}:23:6: error: expected error \"never\" was not produced"]


def test_verify_diagnostics_without_split_and_with_remarks(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text("""func.func @mm(%A: memref<16x12xf64>, %B: memref<12x8xf64>, %C: memref<16x8xf64>) {
  // expected-remark @+1 {{BLIS schedule}}
  hop.matmul %A, %B, %C : (memref<16x12xf64>, memref<12x8xf64>, memref<16x8xf64>)
  return
}
""")
    assert main(["opt", "--hopt", "--remarks", "--verify-diagnostics", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "affine.for" in out and err == ""
    # without --remarks the passes give none, so the expected one is missing
    assert main(["opt", "--hopt", "--verify-diagnostics", str(path)]) == 1
    assert 'expected remark "BLIS schedule" was not produced' in capsys.readouterr().err
    # and a remark nobody expected is reported
    path.write_text(path.read_text().replace("  // expected-remark @+1 {{BLIS schedule}}\n", ""))
    assert main(["opt", "--hopt", "--remarks", "--verify-diagnostics", str(path)]) == 1
    assert f"{path}:2:3: error: unexpected remark: hop.matmul: BLIS schedule" in \
        capsys.readouterr().err


def test_mlir_opt_agrees_on_what_is_expected(tmp_path):
    """The same file passes upstream's verifier: the comments are read as mlir-opt reads
    them, and the affine.load message is upstream's.  (Not the first part: upstream adds a
    note, "prior use here", that polyopt does not give.)"""
    path = tmp_path / "invalid.mlir"
    path.write_text(INVALID[INVALID.index("func.func @ok"):])
    upstream = subprocess.run([tool(MLIR_OPT), "--split-input-file", "--verify-diagnostics",
                               str(path)], capture_output=True, text=True, timeout=60)
    assert upstream.returncode == 0, upstream.stderr


def test_a_regular_expression_expectation_is_refused_at_the_comment(tmp_path, capsys):
    path = tmp_path / "re.mlir"
    path.write_text("// expected-error-re {{a{{.*}}b}}\nx\n")
    assert main(["opt", "--verify-diagnostics", str(path)]) == 1
    assert f"{path}:1:4: error: expected-error-re: regular expressions" in \
        capsys.readouterr().err


def test_split_input_from_stdin():
    """The input is read once: the parts of stdin, not a second (empty) read of it."""
    import sys
    proc = subprocess.run([sys.executable, "-m", "polyopt", "opt", "--split-input-file", "-"],
                          input=PARTS, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1            # the third part's error, at its line in stdin
    assert proc.stderr.startswith("<stdin>:11:10: error: use of value '%0' expects")
    assert proc.stdout.count("module {") == 3 and "@d" in proc.stdout
