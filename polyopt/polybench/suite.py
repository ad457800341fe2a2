"""The PolyBench/C 4.2 kernels polyopt carries: their sizes, arguments and MLIR text.

Each kernel is an affine MLIR template (``kernels/<name>.mlir.in``, PolyBench's loop structure
and statement order, in the kernel's DATA_TYPE: double but for deriche's float and
floyd-warshall's and nussinov's int) whose ``${PARAM}`` placeholders take the sizes of a
dataset from PolyBench 4.2's ``*.h`` headers (the table below), and a C twin
(``c/<name>.c``, PolyBench's ``init_array`` and kernel bodies) compiled by :mod:`.ctwin`.

The MLIR function ``@kernel_<name>`` takes PolyBench's kernel arguments without the integer
sizes (they are static in the memref types): DATA_TYPE scalars as ``f64`` and arrays as
memrefs, in PolyBench's order.  The C twin's ``kernel_<name>`` takes PolyBench's own
signature: the integer sizes first, then the same arguments.

PolyBench/C 4.2: Copyright (c) 2010-2016, Ohio State University; see LICENSE-PolyBench.txt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Optional

HERE = Path(__file__).resolve().parent
DATASETS = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")

#: PolyBench's element types as MLIR spells them -> (numpy dtype name, C type)
ELEMENT_TYPES = {"f64": ("float64", "double"), "f32": ("float32", "float"),
                 "i32": ("int32", "int"), "i8": ("int8", "char")}

#: the largest difference a build may show from clang's arrays, relative to the array's largest
#: magnitude: builds may reassociate and contract (clang contracts a*b+c into an FMA by
#: default), which moves a double result by some units of 2^-52 and a float one (deriche's
#: recurrences over a row of the image) by some units of 2^-23; integers are exact
TOLERANCES = {"f64": 1e-9, "f32": 1e-5, "i32": 0.0, "i8": 0.0}


@dataclass(frozen=True)
class Arg:
    """One argument of the kernel after the integer sizes: a DATA_TYPE scalar (``dims`` is
    empty) or an array whose dimensions are names of the kernel's parameters."""

    name: str
    dims: tuple[str, ...] = ()

    @property
    def is_scalar(self) -> bool:
        return not self.dims


@dataclass(frozen=True)
class Kernel:
    """A PolyBench kernel: its parameters and their sizes per dataset, its arguments, which
    integer sizes PolyBench's ``init_array`` and kernel take (lower-case parameter names, in
    PolyBench's order), which arguments ``init_array`` fills, and which it prints (its
    live-out arrays, PolyBench's ``print_array``)."""

    name: str
    category: str
    params: tuple[str, ...]
    sizes: dict
    args: tuple[Arg, ...]
    kernel_ints: tuple[str, ...]
    init_ints: tuple[str, ...]
    init_args: tuple[str, ...]
    outputs: tuple[str, ...]
    dtype: str = "f64"
    arg_dtypes: tuple[tuple[str, str], ...] = ()

    def element_type(self, arg: Arg) -> str:
        """The MLIR element type of ``arg`` (a scalar's type): the kernel's DATA_TYPE unless
        PolyBench gives the argument its own (nussinov's ``base seq[N]`` is ``char``)."""
        return dict(self.arg_dtypes).get(arg.name, self.dtype)

    def numpy_dtype(self, arg: Arg):
        import numpy as np
        return np.dtype(ELEMENT_TYPES[self.element_type(arg)][0])

    @property
    def tolerance(self) -> float:
        """See :data:`TOLERANCES`."""
        return TOLERANCES[self.dtype]

    @property
    def symbol(self) -> str:
        """``kernel_<name>`` with PolyBench's spelling (``kernel_jacobi_1d``)."""
        return "kernel_" + self.name.replace("-", "_")

    def params_of(self, dataset: str) -> dict[str, int]:
        """The parameters' values for ``dataset`` (MINI ... EXTRALARGE)."""
        if dataset not in self.sizes:
            raise ValueError(f"unknown dataset {dataset!r}: one of {', '.join(DATASETS)}")
        return dict(zip(self.params, self.sizes[dataset]))

    def shape(self, arg: Arg, dataset: str) -> tuple[int, ...]:
        p = self.params_of(dataset)
        return tuple(p[d] for d in arg.dims)

    @property
    def arrays(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if not a.is_scalar)

    @property
    def scalars(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.is_scalar)

    def template_path(self) -> Path:
        return HERE / "kernels" / f"{self.name}.mlir.in"

    def c_path(self) -> Path:
        return HERE / "c" / f"{self.name}.c"

    def mlir(self, dataset: str) -> str:
        """The kernel as MLIR text at ``dataset``'s sizes (static shapes)."""
        return mlir_source(self, self.params_of(dataset))


def substitutions(params: dict[str, int]) -> dict[str, str]:
    """``${P}`` and the bounds PolyBench writes as ``P - 1``, ``P - 2``, ``P + 1``
    (``${P_1}``, ``${P_2}``, ``${P_P1}``)."""
    subs = {}
    for name, value in params.items():
        subs[name] = str(value)
        subs[f"{name}_1"] = str(value - 1)
        subs[f"{name}_2"] = str(value - 2)
        subs[f"{name}_P1"] = str(value + 1)
    return subs


def mlir_source(kernel: Kernel, params: dict[str, int]) -> str:
    """``kernel``'s template with ``params`` substituted (any positive sizes, not only the
    datasets': the tests use odd ones)."""
    missing = [p for p in kernel.params if p not in params]
    if missing:
        raise ValueError(f"{kernel.name}: no value for {', '.join(missing)}")
    bad = {p: v for p, v in params.items() if not isinstance(v, int) or v < 2}
    if bad:
        raise ValueError(f"{kernel.name}: sizes must be integers >= 2, got {bad}")
    text = kernel.template_path().read_text(encoding="utf-8")
    return Template(text).substitute(substitutions(params))


def _k(name, category, params, sizes, args, *, kernel_ints=None, init_ints=None,
       init_args=None, outputs, dtype="f64", arg_dtypes=None) -> Kernel:
    parsed = tuple(Arg(a[0], tuple(a[1:])) if isinstance(a, tuple) else Arg(a) for a in args)
    lower = tuple(p.lower() for p in params)
    table = dict(zip(DATASETS, sizes))
    return Kernel(name, category, tuple(params), table, parsed,
                  kernel_ints if kernel_ints is not None else lower,
                  init_ints if init_ints is not None else lower,
                  init_args if init_args is not None else tuple(a.name for a in parsed),
                  outputs, dtype, tuple((arg_dtypes or {}).items()))


# Sizes: PolyBench 4.2's headers (utilities/polybench.spec), MINI SMALL MEDIUM LARGE EXTRALARGE.
KERNELS: dict[str, Kernel] = {k.name: k for k in (
    _k("gemm", "linear-algebra/blas", ("NI", "NJ", "NK"),
       [(20, 25, 30), (60, 70, 80), (200, 220, 240), (1000, 1100, 1200), (2000, 2300, 2600)],
       ["alpha", "beta", ("C", "NI", "NJ"), ("A", "NI", "NK"), ("B", "NK", "NJ")],
       outputs=("C",)),
    _k("2mm", "linear-algebra/kernels", ("NI", "NJ", "NK", "NL"),
       [(16, 18, 22, 24), (40, 50, 70, 80), (180, 190, 210, 220), (800, 900, 1100, 1200),
        (1600, 1800, 2200, 2400)],
       ["alpha", "beta", ("tmp", "NI", "NJ"), ("A", "NI", "NK"), ("B", "NK", "NJ"),
        ("C", "NJ", "NL"), ("D", "NI", "NL")],
       init_args=("alpha", "beta", "A", "B", "C", "D"), outputs=("D",)),
    _k("3mm", "linear-algebra/kernels", ("NI", "NJ", "NK", "NL", "NM"),
       [(16, 18, 20, 22, 24), (40, 50, 60, 70, 80), (180, 190, 200, 210, 220),
        (800, 900, 1000, 1100, 1200), (1600, 1800, 2000, 2200, 2400)],
       [("E", "NI", "NJ"), ("A", "NI", "NK"), ("B", "NK", "NJ"), ("F", "NJ", "NL"),
        ("C", "NJ", "NM"), ("D", "NM", "NL"), ("G", "NI", "NL")],
       init_args=("A", "B", "C", "D"), outputs=("G",)),
    _k("atax", "linear-algebra/kernels", ("M", "N"),
       [(38, 42), (116, 124), (390, 410), (1900, 2100), (1800, 2200)],
       [("A", "M", "N"), ("x", "N"), ("y", "N"), ("tmp", "M")],
       init_args=("A", "x"), outputs=("y",)),
    _k("bicg", "linear-algebra/kernels", ("M", "N"),
       [(38, 42), (116, 124), (390, 410), (1900, 2100), (1800, 2200)],
       [("A", "N", "M"), ("s", "M"), ("q", "N"), ("p", "M"), ("r", "N")],
       init_args=("A", "r", "p"), outputs=("s", "q")),
    _k("doitgen", "linear-algebra/kernels", ("NQ", "NR", "NP"),
       [(8, 10, 12), (20, 25, 30), (40, 50, 60), (140, 150, 160), (220, 250, 270)],
       [("A", "NR", "NQ", "NP"), ("C4", "NP", "NP"), ("sum", "NP")],
       kernel_ints=("nr", "nq", "np"), init_ints=("nr", "nq", "np"),
       init_args=("A", "C4"), outputs=("A",)),
    _k("mvt", "linear-algebra/kernels", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("x1", "N"), ("x2", "N"), ("y_1", "N"), ("y_2", "N"), ("A", "N", "N")],
       outputs=("x1", "x2")),
    _k("gemver", "linear-algebra/blas", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       ["alpha", "beta", ("A", "N", "N"), ("u1", "N"), ("v1", "N"), ("u2", "N"), ("v2", "N"),
        ("w", "N"), ("x", "N"), ("y", "N"), ("z", "N")],
       outputs=("w",)),
    _k("gesummv", "linear-algebra/blas", ("N",),
       [(30,), (90,), (250,), (1300,), (2800,)],
       ["alpha", "beta", ("A", "N", "N"), ("B", "N", "N"), ("tmp", "N"), ("x", "N"),
        ("y", "N")],
       init_args=("alpha", "beta", "A", "B", "x"), outputs=("y",)),
    _k("syrk", "linear-algebra/blas", ("M", "N"),
       [(20, 30), (60, 80), (200, 240), (1000, 1200), (2000, 2600)],
       ["alpha", "beta", ("C", "N", "N"), ("A", "N", "M")],
       kernel_ints=("n", "m"), init_ints=("n", "m"), outputs=("C",)),
    _k("syr2k", "linear-algebra/blas", ("M", "N"),
       [(20, 30), (60, 80), (200, 240), (1000, 1200), (2000, 2600)],
       ["alpha", "beta", ("C", "N", "N"), ("A", "N", "M"), ("B", "N", "M")],
       kernel_ints=("n", "m"), init_ints=("n", "m"), outputs=("C",)),
    _k("trmm", "linear-algebra/blas", ("M", "N"),
       [(20, 30), (60, 80), (200, 240), (1000, 1200), (2000, 2600)],
       ["alpha", ("A", "M", "M"), ("B", "M", "N")], outputs=("B",)),
    _k("covariance", "datamining", ("M", "N"),
       [(28, 32), (80, 100), (240, 260), (1200, 1400), (2600, 3000)],
       ["float_n", ("data", "N", "M"), ("cov", "M", "M"), ("mean", "M")],
       init_args=("float_n", "data"), outputs=("cov",)),
    _k("correlation", "datamining", ("M", "N"),
       [(28, 32), (80, 100), (240, 260), (1200, 1400), (2600, 3000)],
       ["float_n", ("data", "N", "M"), ("corr", "M", "M"), ("mean", "M"), ("stddev", "M")],
       init_args=("float_n", "data"), outputs=("corr",)),
    _k("lu", "linear-algebra/solvers", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("A", "N", "N")], outputs=("A",)),
    _k("cholesky", "linear-algebra/solvers", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("A", "N", "N")], outputs=("A",)),
    _k("trisolv", "linear-algebra/solvers", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("L", "N", "N"), ("x", "N"), ("b", "N")], outputs=("x",)),
    _k("ludcmp", "linear-algebra/solvers", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("A", "N", "N"), ("b", "N"), ("x", "N"), ("y", "N")], outputs=("x",)),
    _k("durbin", "linear-algebra/solvers", ("N",),
       [(40,), (120,), (400,), (2000,), (4000,)],
       [("r", "N"), ("y", "N")], init_args=("r",), outputs=("y",)),
    _k("jacobi-1d", "stencils", ("TSTEPS", "N"),
       [(20, 30), (40, 120), (100, 400), (500, 2000), (1000, 4000)],
       [("A", "N"), ("B", "N")], init_ints=("n",), outputs=("A",)),
    _k("jacobi-2d", "stencils", ("TSTEPS", "N"),
       [(20, 30), (40, 90), (100, 250), (500, 1300), (1000, 2800)],
       [("A", "N", "N"), ("B", "N", "N")], init_ints=("n",), outputs=("A",)),
    _k("seidel-2d", "stencils", ("TSTEPS", "N"),
       [(20, 40), (40, 120), (100, 400), (500, 2000), (1000, 4000)],
       [("A", "N", "N")], init_ints=("n",), outputs=("A",)),
    _k("heat-3d", "stencils", ("TSTEPS", "N"),
       [(20, 10), (40, 20), (100, 40), (500, 120), (1000, 200)],
       [("A", "N", "N", "N"), ("B", "N", "N", "N")], init_ints=("n",), outputs=("A",)),
    _k("fdtd-2d", "stencils", ("TMAX", "NX", "NY"),
       [(20, 20, 30), (40, 60, 80), (100, 200, 240), (500, 1000, 1200), (1000, 2000, 2600)],
       [("ex", "NX", "NY"), ("ey", "NX", "NY"), ("hz", "NX", "NY"), ("_fict_", "TMAX")],
       outputs=("ex", "ey", "hz")),
    _k("gramschmidt", "linear-algebra/solvers", ("M", "N"),
       [(20, 30), (60, 80), (200, 240), (1000, 1200), (2000, 2600)],
       [("A", "M", "N"), ("R", "N", "N"), ("Q", "M", "N")], outputs=("R", "Q")),
    _k("symm", "linear-algebra/blas", ("M", "N"),
       [(20, 30), (60, 80), (200, 240), (1000, 1200), (2000, 2600)],
       ["alpha", "beta", ("C", "M", "N"), ("A", "M", "M"), ("B", "M", "N")],
       outputs=("C",)),
    _k("adi", "stencils", ("TSTEPS", "N"),
       [(20, 20), (40, 60), (100, 200), (500, 1000), (1000, 2000)],
       [("u", "N", "N"), ("v", "N", "N"), ("p", "N", "N"), ("q", "N", "N")],
       init_ints=("n",), init_args=("u",), outputs=("u",)),
    _k("deriche", "medley", ("W", "H"),
       [(64, 64), (192, 128), (720, 480), (4096, 2160), (7680, 4320)],
       ["alpha", ("imgIn", "W", "H"), ("imgOut", "W", "H"), ("y1", "W", "H"), ("y2", "W", "H")],
       init_args=("alpha", "imgIn", "imgOut"), outputs=("imgOut",), dtype="f32"),
    _k("floyd-warshall", "medley", ("N",),
       [(60,), (180,), (500,), (2800,), (5600,)],
       [("path", "N", "N")], outputs=("path",), dtype="i32"),
    _k("nussinov", "medley", ("N",),
       [(60,), (180,), (500,), (2500,), (5500,)],
       [("seq", "N"), ("table", "N", "N")], outputs=("table",), dtype="i32",
       arg_dtypes={"seq": "i8"}),
)}


def kernel(name: str) -> Kernel:
    """The kernel called ``name`` (PolyBench's spelling: ``2mm``, ``jacobi-1d``)."""
    k = KERNELS.get(name)
    if k is None:
        raise ValueError(f"unknown PolyBench kernel {name!r}; known: {', '.join(KERNELS)}")
    return k


def select(names: Optional[str]) -> list[Kernel]:
    """The kernels of a comma-separated list (all of them for ``None`` or ``"all"``)."""
    if names is None or names.strip() in ("", "all"):
        return list(KERNELS.values())
    return [kernel(n.strip()) for n in names.split(",") if n.strip()]
