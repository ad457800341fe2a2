"""``polyopt opt --emit-script`` writes the transform script a pass-flag combination amounts to,
with the model's BLIS parameters filled in; ``polyopt opt --script`` replays it to the same
IR (golden: every combination the tests use), and its numbers can be edited."""

import re
from pathlib import Path

import pytest

from polyopt.cli import main

from run_helpers import PASS_FLAG_COMBINATIONS

EXAMPLES = Path(__file__).parents[2] / "examples"


def opt(capsys, *args) -> str:
    assert main(["opt", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.parametrize("example, flags", PASS_FLAG_COMBINATIONS)
def test_an_emitted_script_replays_the_flags(tmp_path, capsys, example, flags):
    path = str(EXAMPLES / example)
    by_flags = opt(capsys, path, *flags)
    script = opt(capsys, path, *flags, "--emit-script")
    assert "transform.named_sequence @__transform_main" in script
    (tmp_path / "s.mlir").write_text(script)
    threads = flags[flags.index("--threads"):][:2] if "--threads" in flags else []
    by_script = opt(capsys, path, "--script", str(tmp_path / "s.mlir"), *threads)
    assert by_script == by_flags


def test_the_model_s_parameters_are_written_down_and_editable(tmp_path, capsys):
    path = str(EXAMPLES / "hop_matmul.mlir")
    flags = ["--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep", "--hopt-vect"]
    script = opt(capsys, path, *flags, "--emit-script")
    tile = re.search(r"transform.polyopt.blis_tile %\d+ \{([^}]*)\}", script)
    assert tile, script
    for name in ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U", "register_form", "l2_block"):
        assert f"{name} = " in tile.group(1)
    # the remark of the default pipeline names the same numbers
    assert main(["opt", path, *flags, "--remarks"]) == 0
    remark = capsys.readouterr().err
    mc = re.search(r"M_C = (\d+)", tile.group(1)).group(1)
    assert f"M_C={mc}" in remark
    # an edited script is an experiment: M_C changes, the rest stays the model's
    edited = re.sub(r"M_C = \d+", "M_C = 96", script)
    (tmp_path / "e.mlir").write_text(edited)
    assert main(["opt", path, "--script", str(tmp_path / "e.mlir"), "--remarks"]) == 0
    assert "M_C=96" in capsys.readouterr().err


def test_a_script_is_printed_back_as_upstream_prints_it(tmp_path, capsys):
    """The upstream ops of a script round-trip through polyopt's printer as mlir-opt-22 prints
    them (the oracle; polyopt's own transform.polyopt.* ops are not registered there)."""
    from upstream_mlir import mlir_opt
    h = "!transform.any_op"
    text = (
        "module attributes {transform.with_named_sequence} {\n"
        f"  transform.named_sequence @__transform_main(%root: {h} {{transform.consumed}}) {{\n"
        f'    %l = transform.structured.match ops{{["affine.for", "hop.matmul"]}} '
        f'attributes{{tag}} in %root : ({h}) -> !transform.op<"affine.for">\n'
        f'    %a, %b = transform.split_handle %l : (!transform.op<"affine.for">) -> ({h}, {h})\n'
        f"    transform.loop.unroll %a {{factor = 4}} : {h}\n"
        f"    transform.loop.unroll_and_jam %b {{factor = 2}} : {h}\n"
        f'    %g = transform.apply_registered_pass "hopt-expand" with options = {{"copy" = true, '
        f'"mc" = 64 : i64}} to %root : ({h}) -> {h}\n'
        "    transform.yield\n  }\n}\n")
    (tmp_path / "s.mlir").write_text(text)
    ours = opt(capsys, str(tmp_path / "s.mlir"))
    theirs = mlir_opt(text)
    assert [line.rstrip() for line in ours.strip().splitlines()] == \
        [line.rstrip() for line in theirs.strip().splitlines()]


@pytest.mark.parametrize("flags", [
    ["--schedule", "S0=(d0, d1, d2) -> (d0 floordiv 4, (d0 + d1) floordiv 4, "
                   "(d0 * 2 + d1 + d2) floordiv 4, d0, d0 + d1, d0 * 2 + d1 + d2)"],
    ["--hopt", "--schedule", "S0=(d0, d1, d2) -> (d0, d0 + d1, d0 + d2)", "--func", "seidel"],
])
def test_a_schedule_option_is_a_schedule_step(tmp_path, capsys, flags):
    path = str(EXAMPLES / "seidel_2d.mlir")
    by_flags = opt(capsys, path, *flags)
    script = opt(capsys, path, *flags, "--emit-script")
    assert "transform.polyopt.schedule" in script
    (tmp_path / "s.mlir").write_text(script)
    assert opt(capsys, path, "--script", str(tmp_path / "s.mlir")) == by_flags


def test_a_pipeline_with_options_becomes_a_script_with_those_parameters(tmp_path, capsys):
    """What ``polyopt tune --out`` writes: the tuned pipeline as a script, the options given
    and the model's choice for the rest, replaying the pipeline's IR."""
    from polyopt.transform.emit import script_for_pipeline
    path = EXAMPLES / "hop_matmul.mlir"
    pipeline = ("builtin.module(hopt-expand{copy=true unroll=true scalrep=true vect=true "
                "mc=96 kc=256 nr=16 form=row},hopt-normalize-memrefs)")
    script = script_for_pipeline(path.read_text(), str(path), pipeline)
    assert "M_C = 96 : i64" in script and "K_C = 256 : i64" in script and \
        "N_R = 16 : i64" in script and 'register_form = "row"' in script
    (tmp_path / "s.mlir").write_text(script)
    assert opt(capsys, str(path), "--script", str(tmp_path / "s.mlir")) == \
        opt(capsys, str(path), "-p", pipeline)


def test_per_product_options_become_per_product_scripts(tmp_path, capsys):
    from polyopt.transform.emit import script_for_pipeline
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
    from test_pass_pipeline import TWO_PRODUCTS
    src = tmp_path / "two.mlir"
    src.write_text(TWO_PRODUCTS)
    pipeline = "builtin.module(hopt-expand{copy=true vect=true mc=48,24},hopt-normalize-memrefs)"
    script = script_for_pipeline(TWO_PRODUCTS, str(src), pipeline)
    assert script.count("transform.polyopt.blis_tile") == 2
    assert "M_C = 48 : i64" in script and "M_C = 24 : i64" in script
    (tmp_path / "s.mlir").write_text(script)
    assert opt(capsys, str(src), "--script", str(tmp_path / "s.mlir")) == \
        opt(capsys, str(src), "-p", pipeline)
