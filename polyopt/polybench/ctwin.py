"""The C twins of the PolyBench kernels: PolyBench's C compiled by clang-22, called through ctypes.

Two builds of each kernel's ``c/<name>.c`` at a dataset's sizes, as shared libraries:

- ``clang``: ``clang-22 -O3 -march=native``;
- ``polly``: ``clang-22 -O3 -march=native -mllvm -polly -mllvm -polly-vectorizer=stripmine``.
  Debian's clang-22 has Polly linked into libLLVM: the ``-mllvm -polly`` flags work as they
  are (loading ``LLVMPolly.so`` with ``-fplugin``/``-fpass-plugin`` as well aborts with
  "Option 'polly-dependences-computeout' registered more than once").

Both add ``-shared -fPIC`` and ``-D<PARAM>=<size>``; libraries are cached by the hash of the
sources, flags and compiler version.  A missing clang-22 or a clang-22 without Polly is a
:class:`ToolchainError` naming the Debian package.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .suite import ELEMENT_TYPES, HERE, Kernel

CLANG = "clang-22"
BASE_FLAGS = ("-O3", "-march=native")
POLLY_FLAGS = ("-mllvm", "-polly", "-mllvm", "-polly-vectorizer=stripmine")
# Polly's parallel code generation (the outermost parallel loops through the GNU OpenMP ABI,
# which LLVM's libomp also provides; clang -fopenmp links libomp)
POLLY_PARALLEL_FLAGS = ("-mllvm", "-polly-parallel", "-fopenmp")
COMPILERS = {"clang": BASE_FLAGS, "polly": BASE_FLAGS + POLLY_FLAGS,
             "polly-parallel": BASE_FLAGS + POLLY_FLAGS + POLLY_PARALLEL_FLAGS}


class ToolchainError(RuntimeError):
    """The C compiler the twins need is missing or cannot build them."""


def clang_path() -> str:
    path = shutil.which(CLANG)
    if path is None:
        raise ToolchainError(f"{CLANG} not found: install Debian's clang-22 and "
                             f"libpolly-22-dev (scripts/setup.sh does)")
    return path


def command_line(compiler: str) -> str:
    """The compiler's flags as a user would type them (for reports)."""
    return " ".join((CLANG,) + COMPILERS[compiler])


def _cache_dir() -> Path:
    root = os.environ.get("POLYOPT_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), f"polyopt-{os.getuid()}")
    path = Path(root) / "polybench"
    path.mkdir(parents=True, exist_ok=True)
    return path


_VERSION: Optional[str] = None


def _clang_version(clang: str) -> str:
    global _VERSION
    if _VERSION is None:
        _VERSION = subprocess.run([clang, "--version"], capture_output=True, text=True,
                                  timeout=60).stdout
    return _VERSION


def build(kernel: Kernel, params: dict[str, int], compiler: str = "clang") -> Path:
    """The shared library of ``kernel``'s C twin at ``params`` built by ``compiler``
    (``clang`` or ``polly``), compiled once and cached."""
    if compiler not in COMPILERS:
        raise ValueError(f"compiler must be one of {', '.join(COMPILERS)}, got {compiler!r}")
    clang = clang_path()
    source = kernel.c_path()
    header = HERE / "c" / "polybench_twin.h"
    defines = [f"-D{p}={params[p]}" for p in kernel.params] + [
        f"-DDATA_TYPE_IS_{ELEMENT_TYPES[kernel.dtype][1].upper()}"]
    flags = list(COMPILERS[compiler]) + ["-shared", "-fPIC", "-Wno-unknown-pragmas"] + defines
    if compiler == "polly-parallel":
        from ..codegen.openmp import OPENMP_LIBRARIES
        flags.append(f"-Wl,-rpath,{os.path.dirname(OPENMP_LIBRARIES[0])}")
    key = hashlib.sha256("\0".join([source.read_text(), header.read_text(),
                                    _clang_version(clang), *flags]).encode()).hexdigest()[:20]
    out = _cache_dir() / f"{kernel.name}-{compiler}-{key}.so"
    if out.exists():
        return out
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run([clang, *flags, str(source), "-o", str(tmp), "-lm"],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        hint = ""
        if compiler == "polly" and "polly" in done.stderr:
            hint = " (does this clang-22 include Polly? Debian's libpolly-22-dev)"
        raise ToolchainError(f"{command_line(compiler)} failed on {source.name}{hint}:\n"
                             f"{done.stderr.strip()}")
    os.replace(tmp, out)
    return out


@dataclass
class CTwin:
    """A loaded C twin: ``init(...)`` and ``run(values)`` on numpy arrays."""

    kernel: Kernel
    params: dict
    compiler: str
    library: Path
    threads: int = 1

    def __post_init__(self):
        if self.compiler == "polly-parallel":
            from ..codegen.openmp import load_openmp_runtime
            # the team size of Polly's parallel loops: the calling thread's nthreads-var
            ctypes.CDLL(load_openmp_runtime()).omp_set_num_threads(ctypes.c_int(self.threads))
        self._lib = ctypes.CDLL(str(self.library))
        self._kernel = getattr(self._lib, self.kernel.symbol)
        self._kernel.restype = None
        self._init = self._lib.init_array
        self._init.restype = None

    def _ints(self, names) -> list:
        return [ctypes.c_int(self.params[n.upper()]) for n in names]

    def _array(self, name: str, value):
        import numpy as np
        arg = self._arg(name)
        shape = tuple(self.params[d] for d in arg.dims)
        dtype = self.kernel.numpy_dtype(arg)
        if not (isinstance(value, np.ndarray) and value.dtype == dtype
                and value.shape == shape and value.flags.c_contiguous):
            raise ValueError(f"{self.kernel.name}: argument {name} must be a C-contiguous "
                             f"{dtype} array of shape {shape}")
        return value.ctypes.data_as(ctypes.c_void_p)

    def _scalar_type(self, arg):
        """The ctypes type of a DATA_TYPE scalar."""
        return np_ctypes(self.kernel.numpy_dtype(arg))

    def _arg(self, name: str):
        return next(a for a in self.kernel.args if a.name == name)

    def init(self) -> dict:
        """PolyBench's ``init_array``: the scalars and arrays it sets (the other arrays are
        zeros: PolyBench leaves them uninitialized)."""
        import numpy as np
        values = {}
        for a in self.kernel.args:
            if a.is_scalar:
                values[a.name] = self._scalar_type(a)(0)
            else:
                values[a.name] = np.zeros(tuple(self.params[d] for d in a.dims),
                                          self.kernel.numpy_dtype(a))
        call = self._ints(self.kernel.init_ints)
        for name in self.kernel.init_args:
            v = values[name]
            call.append(self._array(name, v) if isinstance(v, np.ndarray) else ctypes.byref(v))
        self._init(*call)
        return {k: (v if isinstance(v, np.ndarray) else v.value) for k, v in values.items()}

    def _call(self, values: dict) -> list:
        call = self._ints(self.kernel.kernel_ints)
        for a in self.kernel.args:
            call.append(self._scalar_type(a)(values[a.name]) if a.is_scalar
                        else self._array(a.name, values[a.name]))
        return call

    def run(self, values: dict) -> None:
        """The kernel on ``values`` (name -> float or array), in place."""
        self._kernel(*self._call(values))

    def bind(self, values: dict):
        """A no-argument callable running the kernel on ``values`` with the arguments
        converted once (for timing)."""
        call = self._call(values)
        fn = self._kernel
        return lambda: fn(*call)


def np_ctypes(dtype):
    """The ctypes scalar type of a numpy dtype (float64 -> c_double, int32 -> c_int32...)."""
    return {"float64": ctypes.c_double, "float32": ctypes.c_float, "int32": ctypes.c_int32,
            "int8": ctypes.c_int8}[dtype.name]


def load(kernel: Kernel, params: dict[str, int], compiler: str = "clang",
         threads: int = 1) -> CTwin:
    """Build (or reuse) and load ``kernel``'s C twin (``polly-parallel`` runs on
    ``threads``)."""
    return CTwin(kernel, dict(params), compiler, build(kernel, params, compiler), threads)
