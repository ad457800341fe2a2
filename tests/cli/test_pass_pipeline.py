"""Pipelines as text (``polyopt opt -p``), as mlir-opt's ``--pass-pipeline``: every pass-flag
combination is the pipeline ``--dump-pipeline`` prints, and running that text gives the same
IR; ``builtin.module(func.func(...))`` nesting; the BLIS parameters as pass options
(``hopt-expand{mc=300 kc=128}``) equal to ``hop.matmul``'s tile attributes;
``--print-ir-after-all`` / ``--print-ir-after=NAME``; errors name what is wrong."""

from pathlib import Path

import pytest

from polyopt.cli import main

from run_helpers import PASS_FLAG_COMBINATIONS as COMBINATIONS

EXAMPLES = Path(__file__).parents[2] / "examples"



def opt(capsys, *args) -> tuple[str, str]:
    assert main(["opt", *args]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    return out.out, out.err


@pytest.mark.parametrize("example, flags", COMBINATIONS)
def test_the_flags_are_the_pipeline_they_dump(capsys, example, flags):
    path = str(EXAMPLES / example)
    by_flags, err = opt(capsys, path, *flags, "--dump-pipeline")
    dumped = err.strip().splitlines()[-1]
    assert dumped.startswith("builtin.module(") and dumped.endswith(")"), err
    by_text, _ = opt(capsys, path, "-p", dumped)
    assert by_text == by_flags


def test_passes_nested_under_func_func_run_as_at_module_level(capsys):
    path = str(EXAMPLES / "hop_matmul.mlir")
    flat, _ = opt(capsys, path, "-p", "hopt-expand{copy=true vect=true},hopt-normalize-memrefs")
    nested, _ = opt(capsys, path, "-p", "builtin.module(func.func(hopt-expand{copy=true "
                                         "vect=true}), hopt-normalize-memrefs)")
    assert nested == flat


def test_tile_options_equal_the_ops_tile_attributes(tmp_path, capsys):
    text = (EXAMPLES / "hop_matmul.mlir").read_text()
    src = tmp_path / "mm.mlir"
    src.write_text(text)
    by_options, err = opt(capsys, str(src), "--remarks", "-p",
                          "hopt-expand{copy=true vect=true mc=300 kc=128 mr=4 nr=16}")
    assert "M_C=300, K_C=128, M_R=4, N_R=16" in err
    attrs = tmp_path / "attrs.mlir"
    attrs.write_text(_with_tile_attributes(text, "{K_C = 128 : i32, M_C = 300 : i32, "
                                                 "M_R = 4 : i32, N_R = 16 : i32}"))
    by_attrs, _ = opt(capsys, str(attrs), "-p", "hopt-expand{copy=true vect=true}")
    assert by_options == by_attrs
    # the op's own attributes win over the pass's options
    by_both, err = opt(capsys, str(attrs), "--remarks", "-p",
                       "hopt-expand{copy=true vect=true mc=120}")
    assert "M_C=300" in err and by_both == by_attrs


def test_form_and_l2_block_options_equal_the_attributes(tmp_path, capsys):
    from polyopt.passes import parse_pipeline, print_pipeline
    text = (EXAMPLES / "hop_matmul.mlir").read_text()
    src = tmp_path / "mm.mlir"
    src.write_text(text)
    pipeline = "hopt-expand{copy=true vect=true form=col l2=B}"
    assert print_pipeline(parse_pipeline(pipeline)) == pipeline
    by_options, err = opt(capsys, str(src), "--remarks", "-p", pipeline)
    assert "form=col, l2_block=B" in err
    attrs = tmp_path / "attrs.mlir"
    attrs.write_text(_with_tile_attributes(text, '{l2_block = "B", register_form = "col"}'))
    by_attrs, _ = opt(capsys, str(attrs), "-p", "hopt-expand{copy=true vect=true}")
    assert by_options == by_attrs


def _with_tile_attributes(text: str, attrs: str) -> str:
    """``hop.matmul %A, %B, %C : (...)`` with ``attrs`` before its colon."""
    head, sep, tail = text.partition("hop.matmul ")
    operands, colon, rest = tail.partition(" :")
    assert sep and colon, text
    return f"{head}{sep}{operands} {attrs}{colon}{rest}"


def test_print_ir_after(capsys):
    path = str(EXAMPLES / "hop_matmul.mlir")
    out, err = opt(capsys, path, "--hopt", "--hopt-copy", "--print-ir-after-all")
    headers = [line for line in err.splitlines() if line.startswith("// -----// IR Dump")]
    assert headers == [f"// -----// IR Dump After {name} //----- //" for name in
                       ("raise-scf-to-affine", "hopt-report-opaque-nests",
                        "hopt-delicm", "hopt-linalg-to-loops", "hopt-raise-contractions", "hopt-schedule",
                        "hopt-expand", "hopt-collapse-loops",
                        "hopt-normalize-memrefs")]
    assert err.rstrip().endswith(out.rstrip())      # the last dump is the result
    _, err = opt(capsys, path, "--hopt", "--print-ir-after", "hopt-expand")
    assert [line for line in err.splitlines() if "IR Dump" in line] == \
        ["// -----// IR Dump After hopt-expand //----- //"]
    assert "hop.matmul" not in err
    assert "warning" not in err


def test_print_ir_after_a_pass_that_does_not_run_says_so(capsys):
    """mlir-opt prints nothing then; without --hopt there is no hopt-expand to print after."""
    out, err = opt(capsys, str(EXAMPLES / "hop_matmul.mlir"), "--print-ir-after", "hopt-expand")
    assert "IR Dump" not in err and "hop.matmul" in out
    assert "warning: --print-ir-after=hopt-expand: no such pass in this pipeline" in err


@pytest.mark.parametrize("args, message", [
    (["-p", "hopt-expand{mc=-3}"], "mc must be positive (0: the model's choice), got -3"),
    (["-p", "hopt-expand{mc=big}"], "hopt-expand{mc}: expected an integer, got 'big'"),
    (["-p", "foo(hopt-expand)"], "'foo(...)': the pipeline nests under builtin.module and "
                                 "func.func only"),
    (["-p", "builtin.module(hopt-expand"], "missing ')' after 'builtin.module(' in the pass "
                                           "pipeline"),
    (["-p", "hopt-expand hopt-schedule"], "expected ',' in the pass pipeline at "
                                          "'hopt-schedule'"),
    (["--print-ir-after", "nope"], "--print-ir-after: unknown pass 'nope'"),
    (["-p", "hopt-expand{form=diag}"], "form must be row or col (empty: the model's choice), "
                                       "got 'diag'"),
    (["-p", "hopt-schedule{threads=0}"], "hopt-schedule{threads} must be a positive integer, "
                                         "got 0"),
    (["-p", "hopt-parallel{threads=-2}"], "hopt-parallel{threads} must be a positive integer, "
                                          "got -2"),
])
def test_pipeline_errors(capsys, args, message):
    assert main(["opt", str(EXAMPLES / "hop_matmul.mlir"), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


TWO_PRODUCTS = """func.func @two(%A: memref<96x80xf64>, %B: memref<80x64xf64>, %C: memref<96x64xf64>,
                %D: memref<64x72xf64>, %E: memref<96x72xf64>) {
  hop.matmul %A, %B, %C : (memref<96x80xf64>, memref<80x64xf64>, memref<96x64xf64>)
  hop.matmul %C, %D, %E : (memref<96x64xf64>, memref<64x72xf64>, memref<96x72xf64>)
  return
}
"""


def test_a_list_option_gives_each_product_its_own_parameters(tmp_path, capsys):
    """``mc=48,32``: the first product's M_C is 48, the second's 32 (multiples of their
    register tiles' 4 and 16 rows); the pipeline prints back as it was given."""
    from polyopt.passes import parse_pipeline, print_pipeline
    src = tmp_path / "two.mlir"
    src.write_text(TWO_PRODUCTS)
    text = "hopt-expand{copy=true vect=true mc=48,32 kc=32 form=row,col}"
    assert print_pipeline(parse_pipeline(text)) == text
    _, err = opt(capsys, str(src), "--remarks", "-p", text)
    chosen = [line for line in err.splitlines() if "BLIS schedule" in line]
    assert len(chosen) == 2
    assert "M_C=48, K_C=32" in chosen[0] and "form=row" in chosen[0]
    assert "M_C=32, K_C=32" in chosen[1] and "form=col" in chosen[1]
    # one value is every product's; 0 in a list is the model's choice for that product
    _, err = opt(capsys, str(src), "--remarks", "-p", "hopt-expand{copy=true mc=48}")
    chosen = [line for line in err.splitlines() if "BLIS schedule" in line]
    assert "M_C=48" in chosen[0] and "M_C=48" in chosen[1]
    _, err = opt(capsys, str(src), "--remarks", "-p", "hopt-expand{copy=true mc=0,24}")
    chosen = [line for line in err.splitlines() if "BLIS schedule" in line]
    import re
    assert re.search(r"from the model: [^)]*\bM_C\b", chosen[0]) and "M_C=24" in chosen[1]
    assert not re.search(r"from the model: [^)]*\bM_C\b", chosen[1])


def test_list_options_reach_raised_contractions(capsys):
    from polyopt.polybench.suite import kernel
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(kernel("2mm").mlir("SMALL"))
    _, err = opt(capsys, f.name, "--remarks", "-p",
                 "raise-scf-to-affine,hopt-raise-contractions{copy=true vect=true mc=16,32}")
    chosen = [line for line in err.splitlines() if "BLIS schedule" in line]
    assert len(chosen) == 2 and "M_C=16" in chosen[0] and "M_C=32" in chosen[1], err


def test_products_with_their_own_parameters_compute_the_product():
    import numpy as np
    import polyopt
    from polyopt.passes import run_pipeline
    from polyopt.pipeline import load
    module = run_pipeline(load(TWO_PRODUCTS, "two.mlir"),
                          "hopt-expand{copy=true unroll=true scalrep=true vect=true mc=40,24 "
                          "kc=32,48 mr=3,4 nr=16,8 order=ij,ji},hopt-normalize-memrefs")
    rng = np.random.default_rng(1)
    a, b, d = (rng.standard_normal(s) for s in ((96, 80), (80, 64), (64, 72)))
    c, e = rng.standard_normal((96, 64)), rng.standard_normal((96, 72))
    want_c = c + a @ b
    want_e = e + want_c @ d
    polyopt.compile(module)["two"](a, b, c, d, e)
    np.testing.assert_allclose(c, want_c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(e, want_e, rtol=1e-12, atol=1e-11)


def test_the_issue_s_spelling_hopt_with_its_switches(tmp_path, capsys):
    """``hopt{mc=300 kc=128}, hopt-copy, hopt-unroll{ku=4}``: the --hopt pipeline as one pass
    whose switches follow it; the same IR as its passes spelled out; a switch alone is an
    error; ``--print-ir-after hopt`` and ``--emit-script`` know it."""
    path = str(EXAMPLES / "hop_matmul.mlir")
    short, err = opt(capsys, path, "--dump-pipeline", "-p",
                     "hopt{mc=300 kc=128}, hopt-copy, hopt-unroll{ku=4}, hopt-vect")
    assert err.strip().splitlines()[-1] == \
        "builtin.module(hopt{copy=true unroll=true vect=true mc=300 kc=128 ku=4})"
    blis = "{copy=true unroll=true vect=true mc=300 kc=128 ku=4}"
    long, _ = opt(capsys, path, "-p",
                  f"raise-scf-to-affine,hopt-report-opaque-nests,hopt-delicm,"
                  f"hopt-raise-contractions{blis},"
                  f"hopt-schedule,hopt-expand{blis},hopt-normalize-memrefs")
    flags, _ = opt(capsys, path, "--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-vect")
    assert short == long and short != flags
    assert main(["opt", path, "-p", "hopt-copy"]) == 1
    assert "'hopt-copy' is a switch of the hopt pass" in capsys.readouterr().err
    _, err = opt(capsys, path, "-p", "hopt,hopt-vect", "--print-ir-after", "hopt")
    assert "// -----// IR Dump After hopt //----- //" in err
    script, _ = opt(capsys, path, "-p", "hopt{mc=300},hopt-copy,hopt-vect", "--emit-script")
    assert "M_C = 300 : i64" in script and "transform.polyopt.pack" in script
    (tmp_path / "s.mlir").write_text(script)
    by_script, _ = opt(capsys, path, "--script", str(tmp_path / "s.mlir"))
    assert by_script == opt(capsys, path, "-p", "hopt{mc=300},hopt-copy,hopt-vect")[0]
