"""Acceptance of the foundation: the paper's section 2.1 listing runs as printed, and polyopt
and upstream MLIR 22 read each other's output."""

import os
import re

import numpy as np

from polyopt.cli import main
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from run_helpers import mask_addresses
from upstream_mlir import lower_and_run, mlir_opt

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def _example(name: str) -> str:
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read()


def _memref_values(text: str) -> np.ndarray:
    """The numbers printed after ``data =`` by printMemrefF64 / print_memref_2d_f64."""
    data = text.split("data =", 1)[1]
    return np.array([float(x) for x in re.findall(r"-?[0-9][0-9.e+-]*", data)])


def test_paper_listing_as_printed_runs(capsys):
    """Section 2.1 in 2020 syntax (alloc, constant, linalg.fill(%A, %cf1), call
    @print_memref_2d_f64), shrunk to 16x16: every element of C is 1 + 16."""
    assert main(["run", os.path.join(EXAMPLES, "paper_2.1_dgemm_small.mlir")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert re.fullmatch(r"Compilation time: [0-9.]+ s", lines[0])
    assert lines[1].startswith("Unranked Memref base@ = 0x")
    assert "rank = 2 offset = 0 sizes = [16, 16] strides = [16, 1] data =" in lines[1]
    values = _memref_values(out)
    assert values.shape == (256,) and np.all(values == 17.0)


def test_full_size_paper_listing_is_the_shrunk_one_scaled():
    """The example kept at the paper's 2048 differs from the tested copy only in the sizes."""
    big, small = _example("paper_2.1_dgemm.mlir"), _example("paper_2.1_dgemm_small.mlir")
    code = lambda t: [l for l in t.splitlines() if not l.startswith("//")]  # noqa: E731
    assert [l.replace("2048", "16") for l in code(big)] == code(small)
    module = parse(big, "paper_2.1_dgemm.mlir")
    assert "memref<2048x2048xf64>" in print_module(module)


def test_reps_runs_the_entry_several_times(capsys):
    assert main(["run", "--reps", "3", os.path.join(EXAMPLES, "paper_2.1_dgemm_small.mlir")]) == 0
    out = capsys.readouterr().out
    assert out.count("Unranked Memref") == 3
    # each run allocates and fills its own matrices
    chunks = out.split("Unranked Memref")[1:]
    assert [set(_memref_values("Unranked" + c)) for c in chunks] == [{17.0}] * 3
    assert out.count("Compilation time:") == 1


def test_our_output_is_accepted_by_mlir_opt():
    for name in ("paper_2.1_dgemm_small.mlir", "dgemm_modern.mlir", "hop_matmul.mlir"):
        ours = print_module(parse(_example(name), name))
        theirs = mlir_opt(ours, "--allow-unregistered-dialect")
        # and mlir-opt's print of our output is our print again (both canonical)
        assert print_module(parse(theirs, "mlir-opt-output")) == ours


def test_mlir_opt_output_parses_here():
    """IR printed by mlir-opt-22 after -canonicalize (and in generic form) parses and prints
    as mlir-opt printed it."""
    for flags in (["-canonicalize"], ["-canonicalize", "-mlir-print-op-generic"],
                  ["-affine-loop-tile=tile-size=8", "-canonicalize"]):
        theirs = mlir_opt(_example("dgemm_modern.mlir"), *flags)
        ours = print_module(parse(theirs, "mlir-opt-output"))
        if "-mlir-print-op-generic" not in flags:
            assert ours == theirs


def test_modern_program_runs_like_mlir_runner(capfd):
    """The modern program, run by polyopt and by upstream MLIR (lowered with mlir-opt-22 and
    executed by mlir-runner-22), prints the same memref."""
    src = os.path.join(EXAMPLES, "dgemm_modern.mlir")
    upstream = lower_and_run(_example("dgemm_modern.mlir"), [
        "--convert-linalg-to-loops", "--lower-affine", "--convert-scf-to-cf",
        "--finalize-memref-to-llvm", "--convert-math-to-llvm", "--convert-arith-to-llvm",
        "--convert-func-to-llvm", "--convert-cf-to-llvm", "--reconcile-unrealized-casts"])
    assert main(["run", src]) == 0
    ours = capfd.readouterr().out
    assert mask_addresses(ours.split("\n", 1)[1]) == mask_addresses(upstream)


def test_hop_matmul_expands_to_the_naive_nest_of_section_2_3():
    from polyopt.schedules.expand import expand_high_level_ops
    module = parse(_example("hop_matmul.mlir"), "hop_matmul.mlir")
    assert expand_high_level_ops(module) == 1
    out = print_module(module)
    assert "hop.matmul" not in out
    assert out.count("affine.for") == 3
    assert "affine.for %arg3 = 0 to 2088 {" in out
    assert "%3 = arith.mulf %0, %1 : f64" in out and "%4 = arith.addf %2, %3 : f64" in out


def test_hopt_tiles_hop_matmul(capsys, tmp_path):
    assert main(["opt", "--hopt", os.path.join(EXAMPLES, "hop_matmul.mlir")]) == 0
    out = capsys.readouterr().out
    assert "hop.matmul" not in out
    # the BLIS schedule has 7 or 8 dimensions (N_C), less those ISL promotes when a tile
    # covers a whole dimension (which tiles the host's model picks decides)
    assert 5 <= out.count("affine.for") <= 8
    # sizes that no tile divides: partial tiles are min-bounded, whatever the model picks
    odd = _example("hop_matmul.mlir").replace("2088", "2087").replace("2048", "2047")
    (tmp_path / "odd.mlir").write_text(odd)
    assert main(["opt", "--hopt", str(tmp_path / "odd.mlir")]) == 0
    assert "min #map" in capsys.readouterr().out


def test_timed_dgemm_program_runs_the_full_pipeline(capsys):
    """The paper-style timed program (hop.matmul + rtclock + vector.print) through every pass;
    shrunk so the test is fast: the sizes appear in the types and the flop count only."""
    text = _example("dgemm_hop_main.mlir")
    small = (text.replace("2088", "67").replace("2048", "45").replace("2087", "66")
             .replace("17515413504.0", "271890.0"))
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "dgemm_hop_main.mlir")
    assert os.path.exists(path)
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(small)
    status = main(["run", f.name, "--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep",
                   "--hopt-vect"])
    os.unlink(f.name)
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert re.fullmatch(r"Compilation time: [0-9.]+ s", out[0])
    assert out[1] == "46"                      # C = 1 + A * B with ones: 1 + 45
    assert float(out[2]) > 0                   # GFLOPS, whatever the machine does
