"""User schedules on stencils (issue 3): illegal tilings of jacobi-2d and seidel-2d are refused
with the violated dependence, legal skewed (and tiled) ones are accepted and compute exactly
what the original code computes."""

import numpy as np
import pytest

import polyopt
from polyopt.cli import main
from polyopt.schedules.apply import apply_schedule

from test_dependences import JACOBI, SEIDEL  # noqa: E402  (tests/schedules is on sys.path)

SEIDEL_TILED = ("(d0, d1, d2) -> (d0 floordiv 4, (d0 + d1) floordiv 4, "
                "(d0 * 2 + d1 + d2) floordiv 4, d0, d0 + d1, d0 * 2 + d1 + d2)")
JACOBI_TILED = {
    "S0": "(d0, d1, d2) -> (d0 floordiv 2, (d0 * 2 + d1) floordiv 4, (d0 * 2 + d2) floordiv 4, "
          "d0, d0 * 2 + d1, d0 * 2 + d2, 0)",
    "S1": "(d0, d1, d2) -> (d0 floordiv 2, (d0 * 2 + d1 + 1) floordiv 4, "
          "(d0 * 2 + d2 + 1) floordiv 4, d0, d0 * 2 + d1 + 1, d0 * 2 + d2 + 1, 1)",
}


def _run(text, fname, args, schedules=None):
    module = polyopt.parse(text, "stencil.mlir")
    if schedules is not None:
        apply_schedule(module.lookup_function(fname), schedules)
    polyopt.compile(module)[fname](*args)
    return module


@pytest.mark.parametrize("steps", [0, 1, 5, 7])
def test_skewed_tiled_seidel_matches_the_original(steps):
    rng = np.random.default_rng(steps)
    a = rng.random((20, 20))
    ref = a.copy()
    _run(SEIDEL, "seidel", [ref, steps])
    module = _run(SEIDEL, "seidel", [a, steps], {"S0": SEIDEL_TILED})
    assert "floordiv" in str(module) or "min" in str(module)
    np.testing.assert_array_equal(a, ref)  # same operations in a legal order: bit-identical


@pytest.mark.parametrize("steps", [1, 4, 9])
def test_skewed_tiled_jacobi_matches_the_original(steps):
    rng = np.random.default_rng(steps)
    a, b = rng.random((12, 12)), np.zeros((12, 12))
    ra, rb = a.copy(), b.copy()
    _run(JACOBI, "jacobi", [ra, rb, steps])
    _run(JACOBI, "jacobi", [a, b, steps], JACOBI_TILED)
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(b, rb)


def test_illegal_stencil_tiling_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "seidel.mlir"
    path.write_text(SEIDEL)
    status = main(["opt", str(path), "--schedule",
                   "S0=(d0, d1, d2) -> (d0 floordiv 4, d1 floordiv 4, d2 floordiv 4, d0, d1, d2)"])
    out, err = capsys.readouterr()
    assert status == 1 and out == ""
    assert err.startswith(f"{path}:7:14: error: schedule violates a RAW dependence on %arg0 from "
                          "S0[0, 1, 4] to S0[1, 1, 3]: the new schedule runs S0[1, 1, 3] first")
    assert "Traceback" not in err


def test_legal_stencil_tiling_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "seidel.mlir"
    path.write_text(SEIDEL)
    assert main(["opt", str(path), "--schedule", "S0=" + SEIDEL_TILED]) == 0
    out = capsys.readouterr().out
    assert out.count("affine.for") == 6
    polyopt.parse(out)  # what we print parses back


def test_malformed_schedule_option(tmp_path, capsys):
    path = tmp_path / "seidel.mlir"
    path.write_text(SEIDEL)
    assert main(["opt", str(path), "--schedule", "S0=(d0, d1) -> (d1, d0)"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:7:14: error: schedule (d0, d1) -> (d1, d0) for S0 has 2 dims, "
                          "but S0 is nested in 3 loop(s): expected (d0, d1, d2) -> (...)")
    assert "Traceback" not in err
