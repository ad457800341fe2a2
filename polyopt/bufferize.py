"""Tensors to memrefs by upstream's own bufferization (``--one-shot-bufferize``): polyopt's IR
holds memrefs only, and linalg on tensors is the form most frontends emit (torch-mlir, IREE's
input, hand-written linalg).  Bufferization is a large analysis (in-place decisions, aliasing,
ownership-based deallocation) that MLIR does well; this module runs ``mlir-opt-22`` on the
text before polyopt reads it, rather than writing a second one:

    mlir-opt-22 --one-shot-bufferize="bufferize-function-boundaries
                                      function-boundary-type-conversion=identity-layout-map"
                --buffer-results-to-out-params="hoist-static-allocs modify-public-functions"
                --buffer-deallocation-pipeline --mlir-print-debuginfo

so that a function ``(tensor<MxKxf32>, tensor<KxNxf32>) -> tensor<MxNxf32>`` becomes
``(memref<MxKxf32>, memref<KxNxf32>, memref<MxNxf32>)``: numpy passes the result's array as
the last argument (a static result is computed in it in place, no copy).  Temporaries are
freed where upstream's deallocation pipeline frees them.  Locations are kept
(``--mlir-print-debuginfo``), so polyopt's errors and remarks point into the file as written;
upstream's own errors are reported at theirs.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from .affine.attributes import escape_string
from .affine.diagnostics import Location, ParseError, PolyoptError, SourceFile

UPSTREAM = "mlir-opt-22"
PACKAGE = "mlir-22-tools"
FLAGS = (
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "--buffer-results-to-out-params=hoist-static-allocs modify-public-functions",
    "--buffer-deallocation-pipeline",
    "--mlir-print-debuginfo",
    "--mlir-print-local-scope",     # each op's loc("file":line:col) written at the op
)

_DIAGNOSTIC = re.compile(r"^<stdin>:(\d+):(\d+): (error|warning|note): (.*)$")


def one_shot_bufferize(text: str, filename: str = "<input>", timeout: float = 300
                       ) -> tuple[str, str]:
    """``text`` with its tensors bufferized by ``mlir-opt-22`` (see the module docstring), and
    the name to read it under: the ops' locations name ``filename``, what is not theirs (an
    error in the text upstream printed) points into ``"FILENAME (bufferized)"``.  A
    :class:`PolyoptError` at the input's location when upstream refuses it, or when the tool
    is not installed."""
    tool = shutil.which(UPSTREAM)
    if tool is None:
        raise PolyoptError(f"--one-shot-bufferize runs upstream MLIR's bufferization, "
                           f"'{UPSTREAM}', which is not installed (Debian package {PACKAGE}; "
                           f"scripts/setup.sh installs it)")
    try:
        done = subprocess.run([tool, *FLAGS, "-"], input=text, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PolyoptError(f"--one-shot-bufferize: {UPSTREAM} did not finish in "
                           f"{timeout:.0f} s") from None
    if done.returncode != 0:
        raise _upstream_error(done.stderr, text, filename)
    # upstream names the input <stdin>; the locations are the file's
    return (done.stdout.replace('loc("<stdin>"', f"loc({escape_string(filename)}"),
            f"{filename} (bufferized)")


def _upstream_error(stderr: str, text: str, filename: str) -> PolyoptError:
    """The first error upstream reported, at its place in the input."""
    for line in stderr.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m and m.group(3) == "error":
            loc = Location(SourceFile(filename, text), int(m.group(1)), int(m.group(2)))
            return ParseError(f"--one-shot-bufferize: {m.group(4)}", loc)
    detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    return PolyoptError(f"--one-shot-bufferize: {UPSTREAM} failed: {detail}")
