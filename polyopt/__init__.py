"""polyopt: a polyhedral GEMM/convolution optimizer for MLIR's affine dialect.

    >>> import numpy as np, polyopt
    >>> m = polyopt.compile(open("examples/matmul_small.mlir").read())   # doctest: +SKIP
    >>> m["matmul"](A, B, C)                                              # doctest: +SKIP

Public API: :func:`parse`, :func:`print_module`, :func:`compile` and :class:`CompiledModule`,
:class:`PipelineOptions`, and the error classes.
"""

from .affine.diagnostics import (CodegenError, ParseError, PolyoptError, ScheduleError,
                                 VerifyError)
from .affine.parser import parse as _parse
from .affine.printer import print_module
from .pipeline import CompiledModule, PipelineOptions, compile


def parse(text: str, filename: str = "<input>"):
    """Parse and verify MLIR text; returns the ``builtin.module`` op (``str()`` prints it)."""
    return _parse(text, filename)


__all__ = ["parse", "print_module", "compile", "CompiledModule", "PipelineOptions",
           "PolyoptError", "ParseError", "VerifyError", "ScheduleError", "CodegenError"]
