"""Convolutions written as affine loop nests (the input of convolution raising), their operands
and their numpy results, for the tests of ``tests/schedules/test_raise_conv.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from conv_reference import conv_reference, output_size

NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32}

#: per layout: (output, input, filter) subscripts as text over the loop names; ``{h}``/``{w}``
#: stand for the window sums
LAYOUTS = {
    "nhwc": ("%n, %oh, %ow, %f", "%n, {h}, {w}, %c", "%kh, %kw, %c, %f"),
    "nchw": ("%n, %f, %oh, %ow", "%n, %c, {h}, {w}", "%f, %c, %kh, %kw"),
    "nwc": ("%n, %ow, %f", "%n, {w}, %c", "%kw, %c, %f"),
}
OUTPUT_LOOPS = {"nhwc": ("n", "oh", "ow", "f"), "nchw": ("n", "f", "oh", "ow"),
                "nwc": ("n", "ow", "f")}


@dataclass(frozen=True)
class ConvNest:
    layout: str = "nhwc"
    n: int = 2
    h: int = 11
    w: int = 11
    c: int = 5
    f: int = 7
    kh: int = 3
    kw: int = 3
    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)
    elem: str = "f32"

    @property
    def out(self) -> tuple[int, int]:
        return (output_size(self.h, self.kh, self.stride[0], self.dilation[0]),
                output_size(self.w, self.kw, self.stride[-1], self.dilation[-1]))

    @property
    def extents(self) -> dict:
        oh, ow = self.out
        e = dict(n=self.n, oh=oh, ow=ow, f=self.f, kh=self.kh, kw=self.kw, c=self.c)
        if self.layout == "nwc":
            del e["oh"], e["kh"]
        return e

    def shapes(self) -> tuple[tuple, tuple, tuple]:
        """(input, filter, output) shapes."""
        oh, ow = self.out
        n, c, f = self.n, self.c, self.f
        if self.layout == "nhwc":
            return (n, self.h, self.w, c), (self.kh, self.kw, c, f), (n, oh, ow, f)
        if self.layout == "nchw":
            return (n, c, self.h, self.w), (f, c, self.kh, self.kw), (n, f, oh, ow)
        return (n, self.w, c), (self.kw, c, f), (n, ow, f)

    def types(self) -> tuple[str, str, str]:
        return tuple(f"memref<{'x'.join(map(str, s))}x{self.elem}>" for s in self.shapes())

    def subscripts(self) -> tuple[str, str, str]:
        o, i, k = LAYOUTS[self.layout]

        def window(sp, win, s, d):
            a = f"%{sp}" if s == 1 else f"%{sp} * {s}"
            b = f"%{win}" if d == 1 else f"%{win} * {d}"
            return f"{a} + {b}"
        h = window("oh", "kh", self.stride[0], self.dilation[0])
        w = window("ow", "kw", self.stride[-1], self.dilation[-1])
        return o, i.format(h=h, w=w), k

    def text(self, order=None, *, init: str = "none", body: str = "mul-add",
             input_sub: str = None, filter_sub: str = None) -> str:
        """The function ``@conv(%I, %K, %O)``: O += conv(I, K) as one nest whose loops run in
        ``order`` (default: output loops, then window loops); ``init``: ``"nest"`` (a
        separate ``O = 0`` nest first), ``"inside"`` (``O = 0`` inside the output loops, before
        the window loops; ``order`` is then ignored); ``body``: ``"mul-add"`` or ``"fma"``.
        ``input_sub``/``filter_sub`` replace the input's or the filter's subscripts (near
        misses)."""
        ti, tk, to = self.types()
        o_sub, i_sub, k_sub = self.subscripts()
        i_sub = input_sub or i_sub
        k_sub = filter_sub or k_sub
        ext = self.extents
        is_float = self.elem.startswith("f")
        zero = "0.000000e+00" if is_float else "0"
        lines = [f"func.func @conv(%I: {ti}, %K: {tk}, %O: {to}) {{"]
        if init != "none":
            lines.append(f"  %zero = arith.constant {zero} : {self.elem}")
        out_loops = OUTPUT_LOOPS[self.layout]
        if init == "nest":
            for d, name in enumerate(out_loops):
                lines.append("  " * (d + 1) + f"affine.for %{name} = 0 to {ext[name]} {{")
            lines.append("  " * (len(out_loops) + 1) + f"affine.store %zero, %O[{o_sub}] : {to}")
            lines += ["  " * d + "}" for d in range(len(out_loops), 0, -1)]
        if init == "inside":
            order = list(out_loops) + [x for x in ext if x not in out_loops]
        order = list(order or (list(out_loops) + [x for x in ext if x not in out_loops]))
        assert sorted(order) == sorted(ext), order
        for d, name in enumerate(order):
            pad = "  " * (d + 1)
            if init == "inside" and d == len(out_loops):
                lines.append(pad + f"affine.store %zero, %O[{o_sub}] : {to}")
            lines.append(pad + f"affine.for %{name} = 0 to {ext[name]} {{")
        pad = "  " * (len(order) + 1)
        lines += [pad + f"%i = affine.load %I[{i_sub}] : {ti}",
                  pad + f"%k = affine.load %K[{k_sub}] : {tk}",
                  pad + f"%o = affine.load %O[{o_sub}] : {to}"]
        if body == "fma":
            lines.append(pad + f"%r = math.fma %i, %k, %o : {self.elem}")
        else:
            mul, add = ("arith.mulf", "arith.addf") if is_float else ("arith.muli", "arith.addi")
            lines += [pad + f"%m = {mul} %i, %k : {self.elem}",
                      pad + f"%r = {add} %o, %m : {self.elem}"]
        lines.append(pad + f"affine.store %r, %O[{o_sub}] : {to}")
        lines += ["  " * d + "}" for d in range(len(order), 0, -1)]
        lines += ["  return", "}", ""]
        return "\n".join(lines)

    def operands(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        dt = NP[self.elem]
        if self.elem == "i32":
            return [rng.integers(-9, 10, s).astype(dt) for s in self.shapes()]
        return [rng.uniform(-1, 1, s).astype(dt) for s in self.shapes()]

    def reference(self, inp, flt, out, init: bool = False) -> np.ndarray:
        """``O + conv(I, K)`` (``conv(I, K)`` with ``init``) in float64, in O's layout."""
        out = np.zeros(out.shape) if init else out
        if self.layout == "nwc":
            return conv_reference("conv1d", inp, flt, out, self.stride[-1:], self.dilation[-1:])
        if self.layout == "nhwc":
            return conv_reference("conv2d", inp, flt, out, self.stride, self.dilation)
        r = conv_reference("conv2d", inp.transpose(0, 2, 3, 1), flt.transpose(2, 3, 1, 0),
                           out.transpose(0, 2, 3, 1), self.stride, self.dilation)
        return r.transpose(0, 3, 1, 2)
