"""``C += A @ B`` run by compiled code against numpy (float64 reference), shared by the
schedule tests."""

import numpy as np


def check_matmul(matmul, m, n, k, t, seed=0, f32_tol=1e-5):
    """Call ``matmul(a, b, c)`` on random operands in [-1, 1) of type ``t`` ("f64"/"f32") and
    check ``c`` against numpy, with a tolerance that grows with ``k``."""
    dtype = np.float64 if t == "f64" else np.float32
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(dtype)
    c = rng.uniform(-1, 1, (m, n)).astype(dtype)
    expected = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    matmul(a, b, c)
    tol = (1e-12 if t == "f64" else f32_tol) * max(k, 1)
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)
