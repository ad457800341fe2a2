"""Convolution raising (issue 14, part 1): the 7-d loop nests a user wrote that compute a
convolution go through the implicit-GEMM BLIS path of the convolution ops
(:mod:`polyopt.schedules.conv_gemm`).  MLIR has no upstream counterpart (its
``linalg-generalize-named-ops`` goes the other way; ``linalg`` specialization recognizes only
``linalg.generic`` bodies, not affine nests).

Like :mod:`polyopt.schedules.raise_contractions`, the test is on the polyhedral model: the
access relations of the nest's single update statement ``O[o] = O[o] + (s *) I[i] * K[k]``
(``arith.addf``/``mulf``, ``addi``/``muli``, ``math.fma``), in any loop order, f32, f64 or
integers, over a box of static extents starting at 0, where

* NHWC: ``O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]``
  (``linalg.conv_2d_nhwc_hwcf``; 1-D: ``O[n, ow, f] += I[n, ow*sw + kw*dw, c] * K[kw, c, f]``,
  ``linalg.conv_1d_nwc_wcf``);
* NCHW: ``O[n, f, oh, ow] += I[n, c, oh*sh + kh*dh, ow*sw + kw*dw] * K[f, c, kh, kw]``
  (``linalg.conv_2d_nchw_fchw``);
* NHWC/FHWC: ``O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[f, kh, kw, c]``
  (``linalg.conv_2d_nhwc_fhwc``; the NHWC GEMM with the filter read transposed);

the factors in either order, the loops covering the output and the filter whole and the input
as the op would (its verifier's rule ``OH = (H - dh*(KH-1) - 1) floordiv sh + 1``), with
optionally an initialization ``O = 0`` (or ``O = O * beta``) in the same nest before the
updates, as the matmul raising accepts.  The nest is replaced, where it was, by the implicit
GEMM of :func:`polyopt.schedules.conv_gemm.expand_conv_tiled` (NHWC: the same nest as
``linalg.conv_2d_nhwc_hwcf`` gets from ``hopt-expand``; NCHW: one GEMM per image,
``O_n[f, p] += K[f, q] * im2col_n[q, p]``)::

    affine.for %n, %oh, %ow, %f, %kh, %kw, %c  (any order)
      O[n, oh, ow, f] += I[n, oh * 2 + kh, ow * 2 + kw, c] * K[kh, kw, c, f]
  -> remark: raised to a convolution: O[n, oh, ow, f] += I[n, 2 * oh + kh, 2 * ow + kw, c] *
     K[kh, kw, c, f] (NHWC, strides 2x2, dilations 1x1, ...); then the implicit GEMM

A nest whose input is indexed by a sum of two loops but misses one of the conditions keeps its
form, with a remark naming it (``the filter is indexed by %oh, a loop of the output``, ...).
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp
from ..affine.printer import value_namer
from ..affine.types import FloatType, IntegerType
from .conv_gemm import ConvSpec, expand_conv_tiled
from .model import extract
from .raise_contractions import (NearMiss, _box, _constant_or_value, _initialization,
                                 _match_update)

__all__ = ["RaisedConvolution", "recognize_convolution", "CONV_TEMPLATES"]

#: Per layout: the loop of each output, input and filter dimension (an input pair is
#: ``spatial * stride + window * dilation``), and the op that computes it.
CONV_TEMPLATES = {
    "NHWC": (("n", "oh", "ow", "f"), ("n", ("oh", "kh"), ("ow", "kw"), "c"),
             ("kh", "kw", "c", "f"), "linalg.conv_2d_nhwc_hwcf"),
    "NCHW": (("n", "f", "oh", "ow"), ("n", "c", ("oh", "kh"), ("ow", "kw")),
             ("f", "c", "kh", "kw"), "linalg.conv_2d_nchw_fchw"),
    "NHWC/FHWC": (("n", "oh", "ow", "f"), ("n", ("oh", "kh"), ("ow", "kw"), "c"),
                  ("f", "kh", "kw", "c"), "linalg.conv_2d_nhwc_fhwc"),
    "NWC": (("n", "ow", "f"), ("n", ("ow", "kw"), "c"), ("kw", "c", "f"),
            "linalg.conv_1d_nwc_wcf"),
}


class RaisedConvolution:
    """A recognized convolution nest: its :class:`~polyopt.schedules.conv_gemm.ConvSpec`
    (anchored at the nest) and the text of its remark."""

    def __init__(self, spec: ConvSpec, text: str):
        self.spec, self.text = spec, text

    def describe(self) -> str:
        return self.text

    def expand(self, expand, machine=None, threads: int = 1) -> None:
        """Build the implicit GEMM in front of the nest; ``expand(contraction)`` is the BLIS
        pipeline's entry with its options bound (as for raised contractions; ``threads`` is
        the one it runs on).  The caller erases the nest."""
        expand_conv_tiled(self.spec, lambda con, machine=None, **_: expand(con),
                          machine=machine, threads=threads)


def _affine_subscripts(relation: isl.Map, what: str, loc) -> list[tuple[dict, int]]:
    """Per dimension of an access: ``({loop position: coefficient}, constant)``."""
    pieces = []
    relation.as_pw_multi_aff().foreach_piece(lambda s, ma: pieces.append(ma))
    if len(pieces) != 1:
        raise NearMiss(f"the subscripts of {what} are piecewise", loc)
    ma = pieces[0]
    out = []
    for o in range(relation.dim(isl.dim_type.out)):
        aff = ma.get_at(o)
        if aff.get_denominator_val().to_python() != 1:
            raise NearMiss(f"subscript #{o} of {what} divides", loc)
        if any(aff.get_coefficient_val(isl.dim_type.param, p).to_python() != 0
               for p in range(aff.dim(isl.dim_type.param))):
            raise NearMiss(f"subscript #{o} of {what} depends on a symbol", loc)
        coeffs = {d: aff.get_coefficient_val(isl.dim_type.in_, d).to_python()
                  for d in range(relation.dim(isl.dim_type.in_))}
        out.append(({d: c for d, c in coeffs.items() if c != 0},
                    aff.get_constant_val().to_python()))
    return out


def _linear(e) -> bool:
    """Is ``e`` a sum of constant multiples of dims and constants?"""
    from ..affine.affine_expr import AffineExprKind
    k = e.kind
    if k in (AffineExprKind.DIM, AffineExprKind.CONSTANT):
        return True
    if k is AffineExprKind.ADD:
        return _linear(e.lhs) and _linear(e.rhs)
    if k is AffineExprKind.MUL:
        return (e.rhs.kind is AffineExprKind.CONSTANT and _linear(e.lhs)) or \
            (e.lhs.kind is AffineExprKind.CONSTANT and _linear(e.rhs))
    return False


def _subscripts_of(access, stmt, relation: isl.Map, what: str, loc) -> list[tuple[dict, int]]:
    """The subscripts of ``access`` over the statement's loops: from its affine map when its
    operands are the loops (a loop of one iteration keeps its place, which ISL folds to a
    constant), else from its access relation."""
    pos = {id(v): d for d, v in enumerate(stmt.ivs)}
    amap = access.map
    if amap.num_symbols or not all(id(v) in pos for v in access.map_operands) or \
            not all(_linear(e) for e in amap.results):
        return _affine_subscripts(relation, what, loc)
    n = amap.num_dims
    out = []
    for e in amap.results:
        const = e.evaluate([0] * n)
        coeffs: dict[int, int] = {}
        for t, v in enumerate(access.map_operands):
            c = e.evaluate([1 if u == t else 0 for u in range(n)]) - const
            coeffs[pos[id(v)]] = coeffs.get(pos[id(v)], 0) + c
        out.append(({d: c for d, c in coeffs.items() if c != 0}, const))
    return out


def _text(subs, names) -> str:
    parts = []
    for coeffs, const in subs:
        terms = [names[d] if c == 1 else f"{c} * {names[d]}" for d, c in coeffs.items()]
        if const or not terms:
            terms.append(str(const))
        parts.append(" + ".join(terms))
    return "[" + ", ".join(parts) + "]"


def recognize_convolution(top: AffineForOp) -> Optional[RaisedConvolution]:
    """The convolution the nest ``top`` computes (see the module docstring); ``None`` when it
    does not look like one (no factor of a single update is indexed by a sum of two loops, or
    the output and the factors are not all of rank 4, or all of rank 3);
    raises :class:`~polyopt.schedules.raise_contractions.NearMiss` naming the condition that
    fails when it does."""
    try:
        model = extract([top])
    except ScheduleError:
        return None
    try:
        updates = [u for u in (_match_update(s, top) for s in model.statements)
                   if u is not None]
    except NearMiss:
        return None
    if len(updates) != 1 or len(updates[0].factors) != 2:
        return None
    upd = updates[0]
    stmt, loc = upd.stmt, upd.stmt.loc
    namer = value_namer(top)
    names = ["%" + namer.value_name(iv).lstrip("%") for iv in stmt.ivs]
    rel = {id(x.op): x.relation for x in stmt.accesses}
    subs = {id(op): _subscripts_of(op, stmt, rel[id(op)], what, loc)
            for op, what in ((upd.store, "the output"), (upd.factors[0], "the first factor"),
                             (upd.factors[1], "the second factor"))}
    pairs = [any(len(c) == 2 for c, _ in subs[id(f)]) for f in upd.factors]
    ranks = {len(x) for x in subs.values()}
    if any(pairs) and len(subs[id(upd.store)]) == 4 and \
            sorted(len(subs[id(f)]) for f in upd.factors) == [3, 4]:
        return _depthwise(model, upd, top, subs, pairs, names)
    if not any(pairs) or len(ranks) != 1 or ranks.pop() not in (3, 4):
        return None    # not shaped like a convolution: the contraction's remark stands
    if all(pairs):
        raise NearMiss("both factors are indexed by sums of loops: a convolution's filter is "
                       "indexed by single loops", loc)
    inp, flt = upd.factors if pairs[0] else upd.factors[::-1]
    o_sub, i_sub, k_sub = subs[id(upd.store)], subs[id(inp)], subs[id(flt)]
    mem = {"O": upd.store.memref, "I": inp.memref, "K": flt.memref}
    text = {"O": "O" + _text(o_sub, names), "I": "I" + _text(i_sub, names),
            "K": "K" + _text(k_sub, names)}
    layout = _layout(o_sub, i_sub, k_sub, text, loc)
    o_names, i_names, k_names, op_name = CONV_TEMPLATES[layout]
    role = _roles(layout, o_sub, i_sub, k_sub, names, text, loc)
    strides, dilations = [], []
    for (coeffs, const), want in zip(i_sub, i_names):
        if isinstance(want, tuple):
            strides.append(coeffs[role[want[0]]])
            dilations.append(coeffs[role[want[1]]])
    _check_types(mem, loc)
    bounds = _box(stmt.domain, names, loc)
    for d, (lo, _) in enumerate(bounds):
        if lo != 0:
            raise NearMiss(f"loop {names[d]} starts at {lo}: the loops of a convolution start "
                           f"at 0", loc)
    ext = {r: bounds[d][1] for r, d in role.items()}
    _check_shapes(layout, mem, ext, strides, dilations, text, op_name, loc)
    beta = _initialization(model, upd, top, upd.store.memref, lambda v: namer.value_name(v)
                           .lstrip("%"))
    alpha = None
    if upd.scalars:
        if len(upd.scalars) > 1:
            raise NearMiss(f"the update multiplies {len(upd.scalars)} scalars besides the "
                           f"input and the filter", loc)
        alpha = _constant_or_value(upd.scalars[0])
    kind = "conv1d" if layout == "NWC" else "conv2d"
    spec = ConvSpec(op_name, top.loc, top, kind, mem["I"], mem["K"], mem["O"],
                    tuple(strides), tuple(dilations),
                    layout={"NCHW": "nchw", "NHWC/FHWC": "fhwc"}.get(layout, "nhwc"),
                    alpha=alpha, beta=beta)
    order = [r for r in ("n", "oh", "ow", "f", "kh", "kw", "c") if r in role]
    loops = ", ".join(f"{r} = {names[role[r]]}" for r in order)
    sizes = "x".join(str(ext[r]) for r in order)
    init = ""
    if beta is not None:
        init = "; O = 0 first" if isinstance(beta, (int, float)) and beta == 0 else \
            "; O scaled by beta first"
    if alpha is not None:
        init += "; times a scalar alpha"
    desc = (f"{text['O']} += {text['I']} * {text['K']} ({layout}, strides "
            f"{'x'.join(map(str, strides))}, dilations {'x'.join(map(str, dilations))}, "
            f"{'x'.join(order)} = {sizes}, with {loops}{init}), as {op_name}: "
            f"an implicit GEMM")
    return RaisedConvolution(spec, desc)


#: The depthwise layouts, as :data:`CONV_TEMPLATES` (the channel loop ``c`` indexes all three).
DEPTHWISE_TEMPLATES = {
    "NCHW": (("n", "c", "oh", "ow"), ("n", "c", ("oh", "kh"), ("ow", "kw")), ("c", "kh", "kw"),
             "linalg.depthwise_conv_2d_nchw_chw"),
    "NHWC": (("n", "oh", "ow", "c"), ("n", ("oh", "kh"), ("ow", "kw"), "c"), ("kh", "kw", "c"),
             "linalg.depthwise_conv_2d_nhwc_hwc"),
}


class RaisedDepthwise:
    """A recognized depthwise convolution nest: it becomes the named op (``text``, spliced
    with ``values``), whose vector template ``hopt-expand`` builds, its epilogue fused."""

    def __init__(self, text: str, values: list, description: str, loc):
        self.text, self.values, self.description, self.loc = text, values, description, loc

    def describe(self) -> str:
        return self.description

    def expand(self, expand, machine=None, threads: int = 1) -> None:
        """Build the op in front of the nest (``expand`` is for GEMMs: unused).  The caller
        erases the nest."""
        from ..affine.builder import Builder
        from .gemm_templates import splice_template
        splice_template(Builder.before(self.loc[1]), self.text, "<raised depthwise>",
                        self.values, self.loc[0])


def _depthwise(model, upd, top, subs, pairs, names) -> RaisedDepthwise:
    """The depthwise convolution of :func:`recognize_convolution`'s nest (its output and input
    of rank 4, its filter of rank 3), as its named op; NearMiss naming what does not fit."""
    stmt, loc = upd.stmt, upd.stmt.loc
    inp, flt = upd.factors if pairs[0] else upd.factors[::-1]
    o_sub, i_sub, k_sub = subs[id(upd.store)], subs[id(inp)], subs[id(flt)]
    mem = {"O": upd.store.memref, "I": inp.memref, "K": flt.memref}
    text = {"O": "O" + _text(o_sub, names), "I": "I" + _text(i_sub, names),
            "K": "K" + _text(k_sub, names)}
    if len(i_sub) != 4:
        raise NearMiss(f"the input {text['I']} is not of rank 4 (a depthwise convolution's "
                       f"filter {text['K']} is the factor of rank 3)", loc)
    pair_dims = tuple(t for t, (c, _) in enumerate(i_sub) if len(c) == 2)
    layout = {(2, 3): "NCHW", (1, 2): "NHWC"}.get(pair_dims)
    if layout is None:
        raise NearMiss(f"the input {text['I']} combines loops in dims "
                       f"{', '.join(map(str, pair_dims))}; a depthwise convolution does in "
                       f"dims 2 and 3 (NCHW) or 1 and 2 (NHWC)", loc)
    o_names, i_names, k_names, op_name = DEPTHWISE_TEMPLATES[layout]
    role: dict[str, int] = {}
    for t, r in enumerate(o_names):
        role[r] = _single(o_sub[t], "the output", t, text["O"], loc)
    for t, r in enumerate(k_names):
        d = _single(k_sub[t], "the filter", t, text["K"], loc)
        if r == "c" and d != role["c"]:
            raise NearMiss(f"the filter {text['K']} has {names[d]} where the output has its "
                           f"channel loop {names[role['c']]}", loc)
        if r != "c":
            if d in role.values():
                raise NearMiss(f"the filter {text['K']} is indexed by {names[d]}, a loop of "
                               f"the output {text['O']}: not a convolution", loc)
            role[r] = d
    strides, dilations = _input_windows(i_sub, i_names, role, names, text, loc)
    if len(set(role.values())) != len(role) or len(role) != len(names):
        raise NearMiss(f"the loops of {text['O']} += {text['I']} * {text['K']} are not "
                       f"n, c, oh, ow, kh, kw once each", loc)
    _check_types(mem, loc)
    et = mem["O"].type.element_type
    if not isinstance(et, FloatType) or mem["I"].type.layout is not None:
        raise NearMiss(f"element type {et} or a strided input: the depthwise vector templates "
                       f"take row-major f32 and f64", loc)
    bounds = _box(stmt.domain, names, loc)
    if any(lo != 0 for lo, _ in bounds):
        raise NearMiss("a loop does not start at 0: the loops of a convolution do", loc)
    ext = {r: bounds[d][1] for r, d in role.items()}
    _check_shapes(layout, mem, ext, strides, dilations, text, op_name, loc,
                  DEPTHWISE_TEMPLATES)
    if _initialization(model, upd, top, upd.store.memref, lambda v: v) is not None:
        raise NearMiss("the nest also initializes the output: the depthwise op accumulates "
                       "into it (write the initialization as a nest of its own)", loc)
    if upd.scalars:
        raise NearMiss("the update multiplies a scalar besides the input and the filter", loc)
    if layout == "NCHW" and strides[1] not in (1, 2):
        raise NearMiss(f"stride {strides[1]} along the width: the NCHW vector rows take 1 and "
                       f"2", loc)
    ti, tk, to = (str(mem[x].type) for x in ("I", "K", "O"))
    attrs = (f"{{dilations = dense<[{dilations[0]}, {dilations[1]}]> : tensor<2xi64>, "
             f"strides = dense<[{strides[0]}, {strides[1]}]> : tensor<2xi64>}}")
    body = (f"func.func @dw(%I: {ti}, %K: {tk}, %O: {to}) {{\n  {op_name} {attrs} "
            f"ins(%I, %K : {ti}, {tk}) outs(%O : {to})\n  return\n}}\n")
    order = ("n", "c", "oh", "ow", "kh", "kw")
    description = (f"{text['O']} += {text['I']} * {text['K']} ({layout} depthwise, strides "
                   f"{'x'.join(map(str, strides))}, dilations {'x'.join(map(str, dilations))}, "
                   f"{'x'.join(order)} = {'x'.join(str(ext[r]) for r in order)}), as {op_name}")
    return RaisedDepthwise(body, [mem["I"], mem["K"], mem["O"]], description, (top.loc, top))


def _layout(o_sub, i_sub, k_sub, text, loc) -> str:
    """NHWC, NCHW or NWC, from the ranks and which input subscripts combine two loops."""
    rank = len(o_sub)
    if not (len(i_sub) == len(k_sub) == rank) or rank not in (3, 4):
        raise NearMiss(f"{text['O']}, {text['I']} and {text['K']} are not all of rank 4 (a 2-D "
                       f"convolution) or all of rank 3 (1-D)", loc)
    pairs = tuple(t for t, (c, _) in enumerate(i_sub) if len(c) == 2)
    if any(len(c) > 2 for c, _ in i_sub):
        raise NearMiss(f"a subscript of the input {text['I']} combines more than two loops",
                       loc)
    layout = {(4, (1, 2)): "NHWC", (4, (2, 3)): "NCHW", (3, (1,)): "NWC"}.get((rank, pairs))
    if layout == "NHWC" and k_sub[0] == o_sub[3] and len(k_sub[0][0]) == 1:
        layout = "NHWC/FHWC"    # the filter's first dimension is the output's channels
    if layout is None:
        want = "dims 1 and 2 (NHWC) or 2 and 3 (NCHW)" if rank == 4 else "dim 1 (NWC)"
        raise NearMiss(f"the input {text['I']} combines an output loop and a window loop in "
                       f"dims {', '.join(map(str, pairs))}; a convolution of rank {rank} does "
                       f"in {want} (a reduction over only some window dimensions?)", loc)
    return layout


def _single(sub, what: str, t: int, text: str, loc) -> int:
    coeffs, const = sub
    if len(coeffs) != 1 or const != 0 or next(iter(coeffs.values())) != 1:
        raise NearMiss(f"subscript #{t} of {what} {text} is not a single loop", loc)
    return next(iter(coeffs))


def _roles(layout, o_sub, i_sub, k_sub, names, text, loc) -> dict[str, int]:
    """The loop (position) of each of n, oh, ow, f, kh, kw, c; NearMiss when the subscripts
    do not follow ``layout``."""
    o_names, i_names, k_names, _ = CONV_TEMPLATES[layout]
    role: dict[str, int] = {}
    for t, r in enumerate(o_names):
        role[r] = _single(o_sub[t], "the output", t, text["O"], loc)
    if len(set(role.values())) != len(role):
        raise NearMiss(f"the output {text['O']} uses a loop twice", loc)
    out_loops = set(role.values())
    for t, r in enumerate(k_names):
        d = _single(k_sub[t], "the filter", t, text["K"], loc)
        if r == "f":
            if d != role["f"]:
                raise NearMiss(f"the filter {text['K']} has {names[d]} where the output has "
                               f"its channel loop {names[role['f']]}", loc)
        elif d in out_loops:
            raise NearMiss(f"the filter {text['K']} is indexed by {names[d]}, a loop of the "
                           f"output {text['O']}: not a convolution", loc)
        else:
            role[r] = d
    k_loops = [role[r] for r in k_names]
    if len(set(k_loops)) != len(k_loops):
        raise NearMiss(f"the filter {text['K']} uses a loop twice (a diagonal)", loc)
    _input_windows(i_sub, i_names, role, names, text, loc)
    if len(set(role.values())) != len(role):
        twice = [r for r in role if list(role.values()).count(role[r]) > 1]
        raise NearMiss(f"loop {names[role[twice[0]]]} plays two roles "
                       f"({' and '.join(twice)})", loc)
    unused = [names[d] for d in range(len(names)) if d not in role.values()]
    if unused:
        raise NearMiss(f"loop {unused[0]} indexes none of the convolution's dimensions "
                       f"(a sum along it, not a convolution)", loc)
    return role


def _input_windows(i_sub, i_names, role, names, text, loc) -> tuple[list, list]:
    """(strides, dilations) of the input's subscripts ``i_sub`` against the template's
    ``i_names`` (a loop, or a (spatial, window) pair: ``stride * spatial + dilation *
    window``); NearMiss naming the subscript that does not fit."""
    strides, dilations = [], []
    for t, want in enumerate(i_names):
        coeffs, const = i_sub[t]
        if isinstance(want, str):
            d = _single(i_sub[t], "the input", t, text["I"], loc)
            if d != role[want]:
                raise NearMiss(f"subscript #{t} of the input {text['I']} is {names[d]}, not "
                               f"the {want} loop {names[role[want]]}", loc)
            continue
        spatial, window = want
        if const != 0 or set(coeffs) != {role[spatial], role[window]} or \
                min(coeffs.values()) < 1:
            raise NearMiss(f"subscript #{t} of the input {text['I']} is not "
                           f"stride * {names[role[spatial]]} + dilation * "
                           f"{names[role[window]]} (positive, no offset)", loc)
        strides.append(coeffs[role[spatial]])
        dilations.append(coeffs[role[window]])
    return strides, dilations


def _check_types(mem, loc) -> None:
    from ..memref_layout.data_copy import alias_root
    o = alias_root(mem["O"])
    for what in ("I", "K"):
        if alias_root(mem[what]) is o:
            raise NearMiss(f"the output is also the {'input' if what == 'I' else 'filter'} "
                           f"(the same memory): not a convolution", loc)
    types = {str(v.type.element_type) for v in mem.values()}
    if len(types) != 1:
        raise NearMiss(f"the operands have different element types ({', '.join(sorted(types))})",
                       loc)
    et = mem["O"].type.element_type
    if not isinstance(et, (FloatType, IntegerType)) or \
            (isinstance(et, FloatType) and et.width not in (32, 64)):
        raise NearMiss(f"element type {et}: the BLIS pipeline takes f32, f64 and integers", loc)
    for what in ("O", "K"):
        t = mem[what].type
        if t.layout is not None or not t.has_static_shape:
            raise NearMiss(f"the {'output' if what == 'O' else 'filter'} {t} is not a "
                           f"row-major memref of static shape (the implicit GEMM sees it as a "
                           f"matrix)", loc)


def _check_shapes(layout, mem, ext, strides, dilations, text, op_name, loc,
                  templates=CONV_TEMPLATES) -> None:
    """The loops cover O and K whole and the input as ``op_name``'s verifier requires."""
    o_names, i_names, k_names, _ = templates[layout]
    for what, roles in (("O", o_names), ("K", k_names)):
        shape = mem[what].type.shape
        want = tuple(ext[r] for r in roles)
        if shape != want:
            whole = "output" if what == "O" else "filter"
            raise NearMiss(f"the loops cover {'x'.join(map(str, want))} of the {whole} "
                           f"{mem[what].type}: {op_name} reads and writes it whole", loc)
    ishape = mem["I"].type.shape
    if not mem["I"].type.has_static_shape:
        raise NearMiss(f"the input {mem['I'].type} has '?' sizes", loc)
    sp = 0
    for t, want in enumerate(i_names):
        if isinstance(want, str):
            if ishape[t] != ext[want]:
                raise NearMiss(f"dim #{t} of the input {mem['I'].type} has {ishape[t]} "
                               f"elements but the {want} loop runs {ext[want]}: {op_name} "
                               f"reads it whole", loc)
            continue
        spatial, window = want
        s, d = strides[sp], dilations[sp]
        sp += 1
        size, k, got = ishape[t], ext[window], ext[spatial]
        needed = d * (k - 1) + 1 + s * (got - 1)
        expected = (size - d * (k - 1) - 1) // s + 1
        if needed > size or expected != got:
            raise NearMiss(f"the nest reads {needed} of the {size} elements of dim #{t} of the "
                           f"input {mem['I'].type}; {op_name} with stride {s} and dilation "
                           f"{d} computes {max(expected, 0)} outputs from it, the nest {got}",
                           loc)
