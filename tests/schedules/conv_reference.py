"""numpy reference of the convolution ops (test helper): O + conv(I, K), no padding.

    conv2d:      O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]
    conv1d:      O[n, ow, f]     += I[n, ow*sw + kw*dw, c] * K[kw, c, f]
    depthwise2d: O[n, oh, ow, c] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _windows(x: np.ndarray, axes: tuple[int, ...], kernel: Sequence[int],
             strides: Sequence[int], dilations: Sequence[int],
             out: Sequence[int]) -> np.ndarray:
    """``x`` with one window per output position along ``axes``: the window dims (of sizes
    ``kernel``, dilated) are appended after x's dims, the ``axes`` become output positions."""
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations))
    w = sliding_window_view(x, extent, axis=axes)
    index = [slice(None)] * w.ndim
    for a, s, n in zip(axes, strides, out):
        index[a] = slice(0, (n - 1) * s + 1, s)
    for j, d in enumerate(dilations):
        index[x.ndim + j] = slice(None, None, d)
    return w[tuple(index)]


def conv_reference(kind: str, I: np.ndarray, K: np.ndarray, O: np.ndarray,
                   strides: Sequence[int], dilations: Sequence[int]) -> np.ndarray:
    """``O + conv(I, K)`` for ``kind`` in ``{"conv2d", "conv1d", "depthwise2d"}``, computed in
    float64 (einsum over the sliding windows of I); returns a new float64 array of O's shape.
    ``I``, ``K``, ``O`` are in the layouts of the ops (NHWC/HWCF/NHWF, NWC/WCF/NWF,
    NHWC/HWC/NHWC)."""
    I64, K64, O64 = (np.asarray(a, dtype=np.float64) for a in (I, K, O))
    if kind == "conv2d":
        kh, kw = K.shape[:2]
        win = _windows(I64, (1, 2), (kh, kw), strides, dilations, O.shape[1:3])
        return O64 + np.einsum("nhwcij,ijcf->nhwf", win, K64)   # win: N, OH, OW, C, KH, KW
    if kind == "conv1d":
        win = _windows(I64, (1,), (K.shape[0],), strides, dilations, O.shape[1:2])
        return O64 + np.einsum("nwck,kcf->nwf", win, K64)       # win: N, OW, C, KW
    if kind == "depthwise2d":
        kh, kw = K.shape[:2]
        win = _windows(I64, (1, 2), (kh, kw), strides, dilations, O.shape[1:3])
        return O64 + np.einsum("nhwcij,ijc->nhwc", win, K64)
    raise ValueError(f"unknown convolution kind {kind!r}")


def output_size(size: int, k: int, stride: int, dilation: int) -> int:
    """The output extent of a spatial dim: ``(size - dilation * (k - 1) - 1) // stride + 1``."""
    return (size - dilation * (k - 1) - 1) // stride + 1
