"""Small MLIR programs for the differential tests of the vector and memref lowerings: memrefs
filled from constants, the op under test, and ``vector.print`` of what it made, run by
``polyopt run`` and by upstream MLIR 22 (``mlir-opt-22`` + ``mlir-runner-22``), whose outputs
must be the same text."""

from __future__ import annotations

import numpy as np

from run_helpers import polyopt_run
from upstream_mlir import lower_and_run

#: upstream's lowering of everything these programs use
UPSTREAM_PASSES = ["--expand-realloc", "--expand-strided-metadata", "--lower-affine",
                   "--convert-vector-to-scf", "--convert-scf-to-cf", "--convert-vector-to-llvm",
                   "--finalize-memref-to-llvm", "--convert-math-to-llvm",
                   "--convert-arith-to-llvm", "--convert-ub-to-llvm", "--convert-func-to-llvm",
                   "--convert-cf-to-llvm", "--reconcile-unrealized-casts"]


def shape_str(shape) -> str:
    return "x".join(map(str, shape))


def vector_type(shape, elem: str) -> str:
    return f"vector<{shape_str(shape)}x{elem}>" if shape else f"vector<{elem}>"


def literal(values: np.ndarray, elem: str) -> str:
    """A dense literal of ``values`` (nested lists for n-D, ``true``/``false`` for i1)."""
    def one(x):
        if elem == "i1":
            return "true" if x else "false"
        if elem.startswith(("f", "bf")):
            return repr(float(x))
        return str(int(x))

    def nest(a):
        if a.ndim == 0:
            return one(a.item())
        return "[" + ", ".join(nest(r) for r in a) + "]"
    return nest(np.asarray(values))


def constant(name: str, values: np.ndarray, elem: str) -> str:
    values = np.asarray(values)
    return (f"  {name} = arith.constant dense<{literal(values, elem)}> : "
            f"{vector_type(values.shape, elem)}")


class Program:
    """``func.func @main()`` built line by line."""

    def __init__(self):
        self.lines = ["  %c0 = arith.constant 0 : index"]
        self.indices = {0}

    def index(self, k: int) -> str:
        if k not in self.indices:
            self.indices.add(k)
            self.lines.append(f"  %c{k} = arith.constant {k} : index")
        return f"%c{k}"

    def memref(self, name: str, values: np.ndarray, elem: str) -> str:
        """``%name``, a ``memref.alloc`` holding ``values`` (stored one row at a time: upstream
        lowers 1-D ``vector.store`` only); returns its type."""
        values = np.asarray(values)
        t = f"memref<{shape_str(values.shape)}x{elem}>"
        self.lines.append(f"  {name} = memref.alloc() : {t}")
        rows = values.reshape(-1, values.shape[-1])
        for r, pos in enumerate(np.ndindex(values.shape[:-1])):
            init = f"{name}_init{r}"
            self.lines.append(constant(init, rows[r], elem))
            at = ", ".join([self.index(k) for k in pos] + ["%c0"])
            self.lines.append(f"  vector.store {init}, {name}[{at}] : {t}, "
                              f"{vector_type(values.shape[-1:], elem)}")
        return t

    def print_memref(self, name: str, shape, elem: str) -> None:
        """``vector.print`` of each row of ``%name``."""
        t = f"memref<{shape_str(shape)}x{elem}>"
        vt = vector_type(shape[-1:], elem)
        for r, pos in enumerate(np.ndindex(tuple(shape[:-1]))):
            at = ", ".join([self.index(k) for k in pos] + ["%c0"])
            self.lines.append(f"  {name}_row{r} = vector.load {name}[{at}] : {t}, {vt}")
            self.lines.append(f"  vector.print {name}_row{r} : {vt}")

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "func.func @main() {\n" + "\n".join(self.lines) + "\n  return\n}\n"


#: the same, with vector.contract rewritten into vector.outerproducts, which lowers every
#: combining kind and mixed element types (the default ``dot`` rewriting lowers ``add`` alone)
UPSTREAM_OUTERPRODUCT_PASSES = [
    "--convert-vector-to-llvm=vector-contract-lowering=outerproduct"
    if p == "--convert-vector-to-llvm" else p for p in UPSTREAM_PASSES]


def assert_runs_as_upstream(tmp_path, capfd, text: str, passes=UPSTREAM_PASSES) -> str:
    """``polyopt run`` prints what mlir-runner-22 prints for ``text`` lowered by ``passes``;
    returns the output."""
    ours = polyopt_run(tmp_path, capfd, text)
    theirs = lower_and_run(text, passes)
    assert ours == theirs, f"{text}\npolyopt:\n{ours}\nmlir-runner-22:\n{theirs}"
    return ours
