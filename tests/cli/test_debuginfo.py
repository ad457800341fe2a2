"""``polyopt opt --mlir-print-debuginfo``: every op followed by its source location as
``mlir-opt-22 --mlir-print-debuginfo --mlir-print-local-scope`` prints it (argument locations
aside); the parser keeps printed locations, so a second run prints the same ones; the ops a
pass generates carry the location of the op they come from."""

import re
from pathlib import Path

import pytest

from polyopt.cli import main

from upstream_mlir import mlir_opt

EXAMPLES = Path(__file__).parents[2] / "examples"
_ARG_LOC = re.compile(r' loc\("[^"]*":\d+:\d+\)(?=( =|,|\)))')


def opt(capsys, *args) -> str:
    assert main(["opt", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.parametrize("example", ["seidel_2d.mlir", "dgemm_modern.mlir",
                                     "conv2d_nhwc.mlir"])
def test_locations_are_printed_as_upstream_prints_them(capsys, example):
    path = str(EXAMPLES / example)
    ours = opt(capsys, path, "--mlir-print-debuginfo")
    theirs = mlir_opt(Path(path).read_text(), "--mlir-print-debuginfo",
                      "--mlir-print-local-scope")
    # upstream read stdin
    theirs = _ARG_LOC.sub("", theirs).replace('loc("<stdin>":', f'loc("{path}":')
    assert ours.strip() == theirs.strip()


def test_printed_locations_are_kept_by_the_parser(tmp_path, capsys):
    first = opt(capsys, str(EXAMPLES / "seidel_2d.mlir"), "--mlir-print-debuginfo")
    (tmp_path / "again.mlir").write_text(first)
    assert opt(capsys, str(tmp_path / "again.mlir"), "--mlir-print-debuginfo") == first
    mlir_opt(first)         # upstream reads it back


def test_generated_ops_carry_the_location_of_their_source(capsys):
    path = str(EXAMPLES / "hop_matmul.mlir")
    out = opt(capsys, path, "--hopt", "--hopt-copy", "--hopt-vect", "--mlir-print-debuginfo")
    locs = re.findall(r'loc\("[^"]*":(\d+):(\d+)\)', out)
    # the module, the function, its return, and the product's nest at 4:3
    assert set(locs) == {("0", "0"), ("3", "1"), ("4", "3"), ("5", "3")}
    assert sum(1 for loc in locs if loc == ("4", "3")) > 30
