"""Running polyopt in the tests: ``polyopt run`` on a program, in the form the tests compare
with what mlir-runner-22 prints (:mod:`upstream_mlir`), and two compiled versions of a function
run side by side on the same random arrays.  Importable from every test folder (see
``tests/conftest.py``)."""

from __future__ import annotations

import re
import textwrap

import numpy as np

import polyopt
from polyopt.cli import main


#: The pass-flag sets a raised nest is checked under: --hopt alone, with each register-tile
#: flag, all of them, and BLIS mode.
PASS_FLAG_SETS = {
    "hopt": dict(hopt=True),
    "copy": dict(hopt=True, copy=True),
    "unroll": dict(hopt=True, unroll=True),
    "scalrep": dict(hopt=True, scalrep=True),
    "vect": dict(hopt=True, vect=True),
    "all": dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True),
    "blis": dict(hopt=True, blis=True),
}

def polyopt_run(tmp_path, capture, text: str, *flags: str, name: str = "prog.mlir") -> str:
    """What ``polyopt run FILE flags`` prints for ``text`` (written to ``tmp_path/name``),
    without its first line, ``Compilation time: ...``; the command must succeed.  ``capture``
    is the test's ``capfd`` (or ``capsys``) fixture."""
    path = tmp_path / name
    path.write_text(text)
    assert main(["run", str(path), *flags]) == 0
    out = capture.readouterr().out
    assert out.startswith("Compilation time: "), out[:200]
    return out.split("\n", 1)[1]


def mask_addresses(text: str) -> str:
    """``text`` with the address of every printed memref (``base@ = 0x...``, different in
    each run) replaced by ``base@ = 0x?``."""
    return re.sub(r"base@ = 0x[0-9a-f]+", "base@ = 0x?", text)


def random_args(shapes, seed: int = 0) -> list[np.ndarray]:
    """One f64 array per shape, uniform in [-1, 1), from ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s) for s in shapes]


def assert_same_run(ref_text: str, new_text: str, fn: str, arrays, scalars_list=((),)) -> None:
    """Function ``fn`` of ``new_text`` (a transformed module) computes what ``fn`` of
    ``ref_text`` computes: both run on copies of ``arrays`` followed by each tuple of
    ``scalars_list``, and the arrays must agree to 1e-13."""
    ref = polyopt.compile(textwrap.dedent(ref_text))[fn]
    new = polyopt.compile(new_text)[fn]
    for scalars in scalars_list:
        a = [x.copy() for x in arrays]
        b = [x.copy() for x in arrays]
        ref(*a, *scalars)
        new(*b, *scalars)
        for x, y in zip(a, b):
            np.testing.assert_allclose(y, x, rtol=1e-13, atol=1e-13,
                                       err_msg=f"scalars {scalars}")


#: the pass-flag combinations the tests use, on inputs of examples/ that exercise them: each
#: is also a -p pipeline (tests/cli/test_pass_pipeline.py) and an emitted transform script
#: (tests/transform/test_emit_script.py)
PASS_FLAG_COMBINATIONS = [
    ("hop_matmul.mlir", ["--hopt"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-copy"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-copy", "--hopt-unroll"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep",
                         "--hopt-vect"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-vect", "--threads", "2"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-copy", "--hopt-vect", "--threads", "2"]),
    ("dgemm_modern.mlir", ["--hopt", "--hopt-copy", "--hopt-vect", "--no-hopt-raise"]),
    ("dgemm_modern.mlir", ["--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep",
                           "--hopt-vect"]),
    ("seidel_2d.mlir", ["--hopt"]),
    ("seidel_2d.mlir", ["--hopt", "--no-hopt-schedule"]),
    ("seidel_2d.mlir", ["--raise-scf-to-affine", "--memref-bound-check"]),
    ("matmul_bf16_bias_relu.mlir", ["--hopt", "--hopt-copy", "--hopt-vect",
                                    "--convert-linalg-to-affine-loops"]),
    ("paper_2.1_dgemm_small.mlir", ["--hopt", "--hopt-parallel", "--threads", "2"]),
    ("paper_2.12_blis.mlir", ["--hopt", "--hopt-blis", "--hopt-blis-kernel",
                              "bli_dgemm_haswell_asm_6x8"]),
    ("hop_matmul.mlir", ["--hopt", "--hopt-blis"]),
    ("conv2d_nhwc.mlir", ["--hopt", "--hopt-copy", "--hopt-vect"]),
    ("conv2d_nhwc.mlir", ["--hopt", "--hopt-blis"]),
]
