"""``linalg.depthwise_conv_2d_nchw_chw`` (PyTorch's and torch-mlir's depthwise layout) as
vector rows of each channel's output plane (``--hopt --hopt-vect``).

In NCHW a channel's output rows are contiguous and its filter is ``KH x KW`` scalars, so the
convolution is, per channel, ``O[oh, ow:ow+W] += F[kh, kw] * I[oh*sh + kh*dh, ow + kw*dw :
... + W]`` for the ``KH x KW`` taps: a vector FMA per tap, the input read at ``KW`` shifted
offsets of its rows (stride 1 along the width, any dilation), the taps broadcast once per
channel.  ``R`` output rows at a time share the input rows they read: an input row serves up
to ``KH`` of them from one load.  The last ``OW mod W`` columns are one masked vector, and an
output row narrower than a full vector uses the narrowest vector that holds it (a 7x7 plane,
MobileNet's last layers: 8 lanes, one masked).  Channels (and images) run on the team.

MLIR's counterpart is ``transform.structured.vectorize`` of the op after tiling its channels
and output rows to one (``linalg::vectorizeConvolution`` vectorizes the ``ow`` dimension of
the 1-D depthwise form the same way); the libraries' is oneDNN's depthwise ``jit:avx512``
kernel in its blocked layout.  The sum per output element keeps the op's order (the initial
output, then the taps ``kh``-major), each ``mulf``/``addf`` pair contracted into an FMA as
everywhere in polyopt.

Unit-stride width only: a stride along the width reads every ``s``-th element (the
auto-scheduled nest keeps those; it runs them at 1.6x-2.4x torch).
"""

from __future__ import annotations

from typing import Optional

from .depthwise_epilogue import EpilogueStores, depthwise_epilogue, replace_by_template
from .depthwise_nhwc import operand_refusal
from .gemv import MlirLines

#: Output rows per step: one input row load serves up to KH of them.
ROWS = 4
#: Elements (all channels) from which the channels run on the team.
PARALLEL_MIN_ELEMENTS = 32 * 1024


def depthwise_refusal(op) -> Optional[str]:
    """Why ``op`` does not take the vector rows, or None."""
    if op.name != "linalg.depthwise_conv_2d_nchw_chw":
        return "not a depthwise NCHW convolution"
    why = operand_refusal(op)
    if why is None and op.strides[1] not in (1, 2):
        why = f"its stride along the width is {op.strides[1]} (the vector rows take 1 and 2)"
    return why


def _lanes_for(width: int, widest: int) -> int:
    """The narrowest vector of at least 4 lanes holding ``width`` elements, at most
    ``widest``."""
    lanes = 4
    while lanes < width and lanes < widest:
        lanes *= 2
    return min(lanes, widest)


def depthwise_source(n: int, c: int, ih: int, iw: int, kh: int, kw: int, oh: int, ow: int,
                     sh: int, sw: int, dh: int, dw: int, etype: str, widest: int,
                     parallel: bool, stores: Optional[EpilogueStores] = None) -> str:
    """``func.func @dw(%I, %F, %O)`` (see the module docstring); ``stores`` writes the
    output's stores (through a fused epilogue, whose operands follow ``%O``)."""
    w = _lanes_for(ow, widest)
    ti, tf, to = (f"memref<{n}x{c}x{ih}x{iw}x{etype}>", f"memref<{c}x{kh}x{kw}x{etype}>",
                  f"memref<{n}x{c}x{oh}x{ow}x{etype}>")
    vt, mk = f"vector<{w}x{etype}>", f"vector<{w}xi1>"
    vt2, mk2 = f"vector<{2 * w}x{etype}>", f"vector<{2 * w}xi1>"
    # whole vectors in the loop over columns; with stride 2 the last may not, as its load of
    # 2W inputs from the last tap's even offset would read one element past the row
    top = (kw - 1) * dw - (kw - 1) * dw % 2
    ow_vec = ow - ow % w
    if sw == 2:
        while ow_vec and 2 * (ow_vec - w) + top + 2 * w > iw:
            ow_vec -= w
    tails = [(col, min(w, ow - col)) for col in range(ow_vec, ow, w)]
    stores = stores or EpilogueStores(None, to, w)
    t = MlirLines()
    t.add(0, f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}{stores.signature()}) {{")
    t.add(1, f"%zero = arith.constant dense<0.0> : {vt}")
    if sw == 2:
        t.add(1, f"%zero2 = arith.constant dense<0.0> : {vt2}")
    for count in sorted({count for _, count in tails}):
        t.add(1, f"%mask{count} = vector.constant_mask [{count}] : {mk}")
    t.add(1, f"affine.for %n = 0 to {n} {{")
    t.add(2, f"affine.parallel (%c) = (0) to ({c}) {{" if parallel else
          f"affine.for %c = 0 to {c} {{")
    taps = {}
    for a in range(kh):
        for b in range(kw):
            s = t.fresh("f")
            t.add(3, f"{s} = affine.load %F[%c, {a}, {b}] : {tf}")
            taps[a, b] = t.fresh("tap")
            t.add(3, f"{taps[a, b]} = vector.broadcast {s} : {etype} to {vt}")
    stores.hoist(t, 3, ["%n", "%c", "", ""], (0, 1))     # a per-channel bias, once

    def rows_block(depth: int, rows: int, col: str, count: int | None) -> None:
        """Output rows %oh .. %oh + rows - 1, the vector at column ``col``; with ``count``
        (``col`` a constant), its first ``count`` lanes only."""
        masked = count is not None
        def load(memref: str, mt: str, row: tuple[int, int], column: int | str) -> str:
            """``memref``'s vector at row ``%oh * row[0] + row[1]`` and ``column``."""
            v = t.fresh("v")
            index = f"%oh * {row[0]} + {row[1]}"
            if masked:
                idx, ci = t.fresh("i"), t.fresh("j")
                t.add(depth, f"{idx} = affine.apply affine_map<(d0) -> (d0 * {row[0]} + "
                             f"{row[1]})>(%oh)")
                t.add(depth, f"{ci} = arith.constant {column} : index")
                t.add(depth, f"{v} = vector.maskedload {memref}[%n, %c, {idx}, {ci}], "
                             f"%mask{count}, %zero : {mt}, {mk}, {vt} into {vt}")
            else:
                t.add(depth, f"{v} = affine.vector_load {memref}[%n, %c, {index}, {column}] : "
                             f"{mt}, {vt}")
            return v
        def strided(row: tuple[int, int], offset: int, pairs: dict) -> str:
            """The input's vector at ``ow * 2 + offset`` for the block's columns: the even or
            odd lanes of the 2W elements from ``col * 2 + offset - offset mod 2`` (one load
            and ``vector.deinterleave`` per such start, shared by the taps)."""
            base = offset - offset % 2
            if base not in pairs:
                v = t.fresh("w")
                if masked:
                    start = 2 * int(col) + base
                    idx, ci, m2 = t.fresh("i"), t.fresh("j"), t.fresh("m")
                    t.add(depth, f"{idx} = affine.apply affine_map<(d0) -> (d0 * {row[0]} + "
                                 f"{row[1]})>(%oh)")
                    t.add(depth, f"{ci} = arith.constant {start} : index")
                    t.add(depth, f"{m2} = vector.constant_mask [{min(2 * w, iw - start)}] : "
                                 f"{mk2}")
                    t.add(depth, f"{v} = vector.maskedload %I[%n, %c, {idx}, {ci}], {m2}, "
                                 f"%zero2 : {ti}, {mk2}, {vt2} into {vt2}")
                else:
                    t.add(depth, f"{v} = affine.vector_load %I[%n, %c, %oh * {row[0]} + "
                                 f"{row[1]}, {col} * 2 + {base}] : {ti}, {vt2}")
                even, odd = t.fresh("ev"), t.fresh("od")
                t.add(depth, f"{even}, {odd} = vector.deinterleave {v} : {vt2} -> {vt}")
                pairs[base] = (even, odd)
            return pairs[base][offset % 2]

        accs = [load("%O", to, (1, r), col) for r in range(rows)]
        # input row %oh * sh + i feeds output row %oh + r through tap a where
        # r * sh + a * dh == i: one load serves them all
        for i in sorted({r * sh + a * dh for r in range(rows) for a in range(kh)}):
            pairs: dict = {}
            for b in range(kw):
                if sw == 2:
                    v = strided((sh, i), b * dw, pairs)
                else:
                    column = int(col) + b * dw if masked else (f"{col} + {b * dw}" if b else
                                                               col)
                    v = load("%I", ti, (sh, i), column)
                for r in range(rows):
                    for a in range(kh):
                        if r * sh + a * dh == i:
                            p, acc = t.fresh("p"), t.fresh("s")
                            t.add(depth, f"{p} = arith.mulf {v}, {taps[a, b]} : {vt}")
                            t.add(depth, f"{acc} = arith.addf {accs[r]}, {p} : {vt}")
                            accs[r] = acc
        for r in range(rows):
            subs = ["%n", "%c", f"%oh + {r}", col]
            if masked:
                idx, ci = t.fresh("i"), t.fresh("j")
                t.add(depth, f"{idx} = affine.apply affine_map<(d0) -> (d0 + {r})>(%oh)")
                t.add(depth, f"{ci} = arith.constant {col} : index")
                stores.store(t, depth, accs[r], subs, (["%n", "%c", idx, ci], f"%mask{count}"))
            else:
                stores.store(t, depth, accs[r], subs)

    def over_columns(depth: int, rows: int) -> None:
        if ow_vec:
            t.add(depth, f"affine.for %j = 0 to {ow_vec} step {w} {{")
            rows_block(depth + 1, rows, "%j", None)
            t.add(depth, "}")
        for col, count in tails:
            rows_block(depth, rows, str(col), count)

    oh_blocks = oh - oh % ROWS
    if oh_blocks:
        t.add(3, f"affine.for %oh = 0 to {oh_blocks} step {ROWS} {{")
        over_columns(4, ROWS)
        t.add(3, "}")
    if oh > oh_blocks:       # the last rows, one block
        t.add(3, f"affine.for %oh = {oh_blocks} to {oh_blocks + 1} {{")
        over_columns(4, oh - oh_blocks)
        t.add(3, "}")
    t.add(2, "}")
    t.add(1, "}")
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def expand_depthwise_nchw(op, widest_lanes, remark=None, threads: int = 1) -> bool:
    """Replace ``op`` by :func:`depthwise_source`'s nest in front of it; False (nothing
    changed) where :func:`depthwise_refusal` gives a reason.  ``widest_lanes(elem_bytes)``:
    the target's vector width."""
    if depthwise_refusal(op) is not None:
        return False
    (n, c, ih, iw), (_, kh, kw), (_, _, oh, ow) = (v.type.shape for v in op.operands)
    et = op.output.type.element_type
    (sh, sw), (dh, dw) = op.strides, op.dilations
    widest = widest_lanes(et.width // 8)
    parallel = threads > 1 and c >= 2 and n * c * oh * ow >= PARALLEL_MIN_ELEMENTS
    w = _lanes_for(ow, widest)
    epilogue = depthwise_epilogue(op, remark)
    stores = EpilogueStores(epilogue, op.output.type, w)
    text = depthwise_source(n, c, ih, iw, kh, kw, oh, ow, sh, sw, dh, dw, str(et), widest,
                            parallel, stores)
    replace_by_template(op, text, stores, remark)
    if remark is not None:
        how = f", the channels on {threads} threads" if parallel else ""
        remark(op.loc, f"{op.name}: each channel's {oh}x{ow} output as vector rows of {w} "
                       f"{et}, up to {ROWS} rows at a time sharing their input rows, the "
                       f"{kh}x{kw} taps broadcast once per channel{how}")
    return True
