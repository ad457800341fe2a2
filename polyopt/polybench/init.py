"""PolyBench/C 4.2's ``init_array`` formulas in numpy, one function per kernel.

The same values as the C twins' ``init_array`` (C's integer ``/`` and ``%`` on non-negative
operands, then DATA_TYPE double arithmetic in the same order; lu's ``-j % n`` truncates toward
zero as C does), computed with array operations so that the LARGE datasets initialise in well
under a second (lu's ``B = A*A**T`` is a matmul here; PolyBench's triple loop takes seconds).
The tests check these against the twins' ``init_array``.  Arrays PolyBench does not initialise
are zeros.

PolyBench/C 4.2: Copyright (c) 2010-2016, Ohio State University; see LICENSE-PolyBench.txt.
"""

from __future__ import annotations

from typing import Callable


def _ij(rows: int, cols: int):
    import numpy as np
    i = np.arange(rows, dtype=np.int64)[:, None]
    j = np.arange(cols, dtype=np.int64)[None, :]
    return i, j


def _f(x):
    import numpy as np
    return np.asarray(x, dtype=np.float64)


def _gemm(p):
    ni, nj, nk = p["NI"], p["NJ"], p["NK"]
    i, j = _ij(ni, nj)
    C = _f((i * j + 1) % ni) / ni
    i, j = _ij(ni, nk)
    A = _f(i * (j + 1) % nk) / nk
    i, j = _ij(nk, nj)
    B = _f(i * (j + 2) % nj) / nj
    return {"alpha": 1.5, "beta": 1.2, "C": C, "A": A, "B": B}


def _2mm(p):
    ni, nj, nk, nl = p["NI"], p["NJ"], p["NK"], p["NL"]
    i, j = _ij(ni, nk)
    A = _f((i * j + 1) % ni) / ni
    i, j = _ij(nk, nj)
    B = _f(i * (j + 1) % nj) / nj
    i, j = _ij(nj, nl)
    C = _f((i * (j + 3) + 1) % nl) / nl
    i, j = _ij(ni, nl)
    D = _f(i * (j + 2) % nk) / nk
    return {"alpha": 1.5, "beta": 1.2, "A": A, "B": B, "C": C, "D": D}


def _3mm(p):
    ni, nj, nk, nl, nm = p["NI"], p["NJ"], p["NK"], p["NL"], p["NM"]
    i, j = _ij(ni, nk)
    A = _f((i * j + 1) % ni) / (5 * ni)
    i, j = _ij(nk, nj)
    B = _f((i * (j + 1) + 2) % nj) / (5 * nj)
    i, j = _ij(nj, nm)
    C = _f(i * (j + 3) % nl) / (5 * nl)
    i, j = _ij(nm, nl)
    D = _f((i * (j + 2) + 2) % nk) / (5 * nk)
    return {"A": A, "B": B, "C": C, "D": D}


def _atax(p):
    import numpy as np
    m, n = p["M"], p["N"]
    fn = float(n)
    x = 1 + np.arange(n, dtype=np.float64) / fn
    i, j = _ij(m, n)
    A = _f((i + j) % n) / (5 * m)
    return {"A": A, "x": x}


def _bicg(p):
    import numpy as np
    m, n = p["M"], p["N"]
    pv = _f(np.arange(m) % m) / m
    r = _f(np.arange(n) % n) / n
    i, j = _ij(n, m)
    A = _f(i * (j + 1) % n) / n
    return {"A": A, "r": r, "p": pv}


def _doitgen(p):
    import numpy as np
    nr, nq, np_ = p["NR"], p["NQ"], p["NP"]
    i = np.arange(nr, dtype=np.int64)[:, None, None]
    j = np.arange(nq, dtype=np.int64)[None, :, None]
    k = np.arange(np_, dtype=np.int64)[None, None, :]
    A = _f((i * j + k) % np_) / np_
    i, j = _ij(np_, np_)
    C4 = _f(i * j % np_) / np_
    return {"A": A, "C4": C4}


def _mvt(p):
    import numpy as np
    n = p["N"]
    i = np.arange(n, dtype=np.int64)
    ii, jj = _ij(n, n)
    return {"x1": _f(i % n) / n, "x2": _f((i + 1) % n) / n, "y_1": _f((i + 3) % n) / n,
            "y_2": _f((i + 4) % n) / n, "A": _f(ii * jj % n) / n}


def _gemver(p):
    import numpy as np
    n = p["N"]
    fn = float(n)
    i = np.arange(n, dtype=np.float64)
    ii, jj = _ij(n, n)
    return {"alpha": 1.5, "beta": 1.2, "A": _f(ii * jj % n) / n, "u1": i.copy(),
            "u2": ((i + 1) / fn) / 2.0, "v1": ((i + 1) / fn) / 4.0, "v2": ((i + 1) / fn) / 6.0,
            "y": ((i + 1) / fn) / 8.0, "z": ((i + 1) / fn) / 9.0, "x": np.zeros(n),
            "w": np.zeros(n)}


def _gesummv(p):
    import numpy as np
    n = p["N"]
    i, j = _ij(n, n)
    return {"alpha": 1.5, "beta": 1.2, "x": _f(np.arange(n) % n) / n,
            "A": _f((i * j + 1) % n) / n, "B": _f((i * j + 2) % n) / n}


def _syrk(p):
    m, n = p["M"], p["N"]
    i, j = _ij(n, m)
    A = _f((i * j + 1) % n) / n
    i, j = _ij(n, n)
    C = _f((i * j + 2) % m) / m
    return {"alpha": 1.5, "beta": 1.2, "A": A, "C": C}


def _syr2k(p):
    m, n = p["M"], p["N"]
    i, j = _ij(n, m)
    A = _f((i * j + 1) % n) / n
    B = _f((i * j + 2) % m) / m
    i, j = _ij(n, n)
    C = _f((i * j + 3) % n) / m
    return {"alpha": 1.5, "beta": 1.2, "A": A, "B": B, "C": C}


def _trmm(p):
    import numpy as np
    m, n = p["M"], p["N"]
    i, j = _ij(m, m)
    A = np.where(j < i, _f((i + j) % m) / m, 0.0)
    np.fill_diagonal(A, 1.0)
    i, j = _ij(m, n)
    B = _f((n + (i - j)) % n) / n
    return {"alpha": 1.5, "A": A, "B": B}


def _covariance(p):
    m, n = p["M"], p["N"]
    i, j = _ij(n, m)
    return {"float_n": float(n), "data": (_f(i) * j) / m}


def _correlation(p):
    m, n = p["M"], p["N"]
    i, j = _ij(n, m)
    return {"float_n": float(n), "data": _f(i * j) / m + i}


def _lower_unit_times_transposed(n: int):
    """lu's, cholesky's and ludcmp's A: 1 on the diagonal, -(j % n)/n + 1 below it, 0 above,
    times its transpose (PolyBench makes it positive semi-definite: B = A*A**T, A = B)."""
    import numpy as np
    i, j = _ij(n, n)
    # C's -j % n is -(j % n): the remainder has the dividend's sign
    A = np.where(j <= i, _f(-(j % n)) / n + 1, 0.0)
    np.fill_diagonal(A, 1.0)
    return A @ A.T     # PolyBench: B[r][s] = sum_t A[r][t] * A[s][t]; A = B


def _lu(p):
    return {"A": _lower_unit_times_transposed(p["N"])}


def _cholesky(p):
    return {"A": _lower_unit_times_transposed(p["N"])}


def _trisolv(p):
    import numpy as np
    n = p["N"]
    i, j = _ij(n, n)
    # (DATA_TYPE) (i+n-j+1)*2/n: the cast binds first, then double arithmetic; above the
    # diagonal L is left uninitialised (zeros here)
    L = np.where(j <= i, _f(i + n - j + 1) * 2 / n, 0.0)
    return {"L": L, "x": np.full(n, -999.0), "b": np.arange(n, dtype=np.float64)}


def _ludcmp(p):
    import numpy as np
    n = p["N"]
    fn = float(n)
    b = (np.arange(n, dtype=np.int64) + 1) / fn / 2.0 + 4
    return {"A": _lower_unit_times_transposed(n), "b": b, "x": np.zeros(n), "y": np.zeros(n)}


def _durbin(p):
    import numpy as np
    n = p["N"]
    return {"r": _f(n + 1 - np.arange(n, dtype=np.int64))}


def _jacobi_1d(p):
    import numpy as np
    n = p["N"]
    i = np.arange(n, dtype=np.float64)
    return {"A": (i + 2) / n, "B": (i + 3) / n}


def _jacobi_2d(p):
    n = p["N"]
    i, j = _ij(n, n)
    return {"A": (_f(i) * (j + 2) + 2) / n, "B": (_f(i) * (j + 3) + 3) / n}


def _seidel_2d(p):
    n = p["N"]
    i, j = _ij(n, n)
    return {"A": (_f(i) * (j + 2) + 2) / n}


def _heat_3d(p):
    import numpy as np
    n = p["N"]
    i = np.arange(n, dtype=np.int64)[:, None, None]
    j = np.arange(n, dtype=np.int64)[None, :, None]
    k = np.arange(n, dtype=np.int64)[None, None, :]
    A = _f(i + j + (n - k)) * 10 / n
    return {"A": A, "B": A.copy()}


def _fdtd_2d(p):
    import numpy as np
    tmax, nx, ny = p["TMAX"], p["NX"], p["NY"]
    i, j = _ij(nx, ny)
    return {"_fict_": np.arange(tmax, dtype=np.float64), "ex": (_f(i) * (j + 1)) / nx,
            "ey": (_f(i) * (j + 2)) / ny, "hz": (_f(i) * (j + 3)) / nx}


def _gramschmidt(p):
    import numpy as np
    from fractions import Fraction
    from ..codegen.cpu_facts import host_facts
    m, n = p["M"], p["N"]
    i, j = _ij(m, n)
    # (((DATA_TYPE) ((i*j) % m) / m )*100) + 10, one value per remainder; R and Q are set to
    # 0.0 (zeros here).  clang -O3 -march=native contracts q*100 + 10 into an FMA where the
    # target has one (-ffp-contract=on): one rounding, computed exactly here with fractions
    q = _f(np.arange(m)) / m
    facts = host_facts()
    if facts.has("fma") or facts.arch in ("aarch64", "arm64"):
        table = np.array([float(Fraction(x) * 100 + 10) for x in q.tolist()])
    else:
        table = q * 100 + 10
    return {"A": table[i * j % m]}


def _symm(p):
    import numpy as np
    m, n = p["M"], p["N"]
    i, j = _ij(m, n)
    C = _f((i + j) % 100) / m
    B = _f((n + i - j) % 100) / m
    i, j = _ij(m, m)
    # the lower triangle and the diagonal; -999 above it ("regions that should not be used")
    A = np.where(j <= i, _f((i + j) % 100) / m, -999.0)
    return {"alpha": 1.5, "beta": 1.2, "C": C, "A": A, "B": B}


def _adi(p):
    n = p["N"]
    i, j = _ij(n, n)
    return {"u": _f(i + n - j) / n}   # v, p and q are left uninitialised (zeros here)


def _deriche(p):
    import numpy as np
    w, h = p["W"], p["H"]
    i, j = _ij(w, h)
    # (DATA_TYPE) ((313*i+991*j)%65536) / 65535.0f: the int converted to float, then a float
    # division (DATA_TYPE float)
    imgIn = ((313 * i + 991 * j) % 65536).astype(np.float32) / np.float32(65535.0)
    return {"alpha": 0.25, "imgIn": imgIn}   # imgOut, y1 and y2 are not set (zeros here)


def _floyd_warshall(p):
    import numpy as np
    n = p["N"]
    i, j = _ij(n, n)
    # path[i][j] = i*j%7+1, or 999 where (i+j)%13 == 0 || (i+j)%7 == 0 || (i+j)%11 == 0
    s = i + j
    far = (s % 13 == 0) | (s % 7 == 0) | (s % 11 == 0)
    return {"path": np.where(far, 999, i * j % 7 + 1).astype(np.int32)}


def _nussinov(p):
    import numpy as np
    n = p["N"]
    # seq[i] = (base)((i+1)%4) (base is char); table is set to 0 (zeros here)
    return {"seq": ((np.arange(n, dtype=np.int64) + 1) % 4).astype(np.int8)}


INITIALIZERS: dict[str, Callable[[dict], dict]] = {
    "gemm": _gemm, "2mm": _2mm, "3mm": _3mm, "atax": _atax, "bicg": _bicg,
    "doitgen": _doitgen, "mvt": _mvt, "gemver": _gemver, "gesummv": _gesummv, "syrk": _syrk,
    "syr2k": _syr2k, "trmm": _trmm, "covariance": _covariance, "correlation": _correlation,
    "lu": _lu, "cholesky": _cholesky, "trisolv": _trisolv, "ludcmp": _ludcmp,
    "durbin": _durbin, "jacobi-1d": _jacobi_1d, "jacobi-2d": _jacobi_2d, "seidel-2d": _seidel_2d,
    "heat-3d": _heat_3d, "fdtd-2d": _fdtd_2d,
    "gramschmidt": _gramschmidt,
    "symm": _symm,
    "adi": _adi,
    "deriche": _deriche,
    "floyd-warshall": _floyd_warshall,
    "nussinov": _nussinov,
}


def init_values(kernel, params: dict[str, int]) -> dict:
    """Every argument of ``kernel`` at ``params``: PolyBench's initial values (scalars as
    Python numbers, arrays C-contiguous in the argument's element type), zeros for the arrays
    it leaves uninitialised."""
    import numpy as np
    values = INITIALIZERS[kernel.name](params)
    out = {}
    for a in kernel.args:
        dtype = kernel.numpy_dtype(a)
        if a.is_scalar:
            out[a.name] = dtype.type(values[a.name]).item()
        else:
            shape = tuple(params[d] for d in a.dims)
            v = values.get(a.name)
            out[a.name] = (np.zeros(shape, dtype) if v is None else
                           np.ascontiguousarray(np.broadcast_to(v, shape), dtype=dtype))
    return out
