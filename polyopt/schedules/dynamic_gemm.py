"""One compiled GEMM for every size: a matmul with ``?`` dimensions as BLIS's five loops
with run-time trip counts (what BLIS itself is, and what MLIR reaches with
``transform.structured.tile_using_for`` on dynamic shapes, ``pack`` with padding and
``vectorize``).

The tile sizes are the model's for a large problem of the element type (the machine model
decides M_R x N_R, K_C, M_C, N_C and the loop order, GEBP or GEPB, at compile time, as
BLIS's configuration does); the sizes M, N, K are only known when the function runs:

* every loop runs to ``min(block, size - start)``;
* A's block and B's block are packed into micro-panels (``[M_C/M_R][K_C][M_R]`` and
  ``[N_C/N_R][K_C][N_R]``), the rows or columns past the matrix's edge set to zero, so that
  the register tile always computes a full M_R x N_R tile, k unrolled by K_U;
* a tile wholly inside C is added to C with vector loads and stores; a tile on C's edge is
  stored to a small buffer first and only its part inside C is added (BLIS's edge case);
* a small product (every side at most :data:`SMALL_ON_ONE_THREAD`) packs neither A nor B, as
  the static pipeline's small path does: its tiles read A's rows and B's rows in place, a
  vector of B that crosses N's edge masked, and add their rows inside M to C directly.

The nest is built as MLIR text for the operands' types and spliced in place of the naive
product nest (inside the run-time check that the sizes agree).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..affine.builder import Builder
from ..affine.ir import Operation
from ..affine.types import FloatType, IndexType
from .blis_schedule import (GEPB_MIN_PANELS_OF_A, BlisParams, MachineModel, accumulators_needed,
                            default_blis_params, gepb_m_c_bound)
from .gemm_templates import product_extents, splice_template
from .gemv import MlirLines as _Text, dot_streams_past
from .register_tile import C_TILE_LEAD

#: Rows of B each sweep over a block's micro-panels packs (one thread), when the block has
#: more than PACK_B_PANELS_UNBLOCKED micro-panels (GEPB's few panels are packed one by one)
PACK_B_ROWS = 8
PACK_B_PANELS_UNBLOCKED = 4

#: A short A runs in GEBP's order (:func:`short_a_params`) when N and K are at least this
#: (B of 128 x 128 f64 is 128 KiB, four times a 32 KiB L1)
SHORT_A_MIN_N_K = 128

#: A product whose M, N and K are all at most this runs on one thread, even on a team: the
#: largest cube within :data:`~polyopt.schedules.blis_parallel.MIN_THREADED_PRODUCT` (Zen 4,
#: numpy on 2 threads in the same run: ``?x?`` f32 64^3 on the team 0.41x numpy, on one
#: thread 1.05x; 96^3 0.50x -> 0.98x; f64 64^3 0.28x -> 1.02x, 96^3 0.75x -> 0.97x), and
#: unpacked, in GEBP's order (B's panel in L1 while the tiles go down A), where it had packed
#: both (Zen 5, one thread, unpacked over packed: f64 96^3 1.16x, 50^3 1.19x, 8^3 1.22x,
#: 5x101x101 1.72x, 101x101x5 1.06x; f32 96^3 1.15x, 63x65x64 1.14x, 101x5x101 1.28x)
SMALL_ON_ONE_THREAD = 101

#: The problem size whose model parameters the dynamic GEMM uses.
REPRESENTATIVE_SIZE = 2048


def dynamic_params(elem_bytes: int, machine: Optional[MachineModel]) -> BlisParams:
    """The model's parameters for a large problem, in the row form (the template's); in
    GEPB's order M_C is the most rows of A whose block takes half of L3 (the static model's
    bound, :func:`~polyopt.schedules.blis_schedule.gepb_m_c_bound`), not the representative
    size's, so that up to that many rows B is packed once per block as in the static
    function; A's buffer is allocated for the rows the call has."""
    s = REPRESENTATIVE_SIZE
    p = default_blis_params(s, s, s, elem_bytes, machine, {"register_form": "row"})
    if p.l2_block == "B" and p.N_C is not None and p.N_C < s:
        p = replace(p, M_C=gepb_m_c_bound(machine or MachineModel(), p.K_C, elem_bytes, p.M_R))
    return p


def short_a_params(elem_bytes: int, machine: Optional[MachineModel],
                   large: BlisParams) -> tuple[Optional[BlisParams], int]:
    """(the model's parameters for an A of fewer rows than ``GEPB_MIN_PANELS_OF_A`` of
    ``large``'s micro-panels against a large B, that row count) when the model runs such a
    product in another order than ``large`` (GEBP: B's micro-panel in L1); else (None, 0).
    Zen 4, one thread, ``?x?`` against numpy: 32x2048x2048 f64 0.93x-0.95x with ``large``'s
    GEPB, 1.05x with GEBP; 49x512x4608 f64 0.96x-0.98x -> 1.03x."""
    rows = GEPB_MIN_PANELS_OF_A * large.M_R
    s = REPRESENTATIVE_SIZE
    short = default_blis_params(rows - 1, s, s, elem_bytes, machine, {"register_form": "row"})
    if short.l2_block == large.l2_block or short.N_R % machine.lanes(elem_bytes):
        return None, 0
    return short, rows


def _block_of_b(p: BlisParams) -> int:
    """The columns of B's K_C x N_C block the template packs: N_C as whole micro-panels."""
    return max(p.N_R, (p.N_C or 4 * p.N_R) // p.N_R * p.N_R)


def dynamic_gemm_source(types: tuple[str, str, str], etype: str, p: BlisParams, lanes: int,
                        alpha: bool, threads: int = 1, stream_lanes: int = 0,
                        short: Optional[BlisParams] = None, short_rows: int = 0,
                        streams_past: int = 0, accumulators: int = 8) -> str:
    """``func.func @gemm(%A, %B, %C, %M, %N, %K, %Aaddr, %Baddr[, %alpha])``:
    ``C += alpha * A * B`` for the run-time sizes M, N, K (``%Aaddr``, ``%Baddr``: A's and
    B's aligned pointers as indices, values of the function's top level, where the GEMV
    forms' rows reach a vector boundary; the operands' types may have ``?`` anywhere), with
    ``p``'s tiles
    and loop order, or ``short``'s when M is below ``short_rows``, or unpacked on one
    thread when every side is at most :data:`SMALL_ON_ONE_THREAD`.  With
    ``threads > 1`` the packing loops over micro-panels and the outer loop over register
    tiles are ``affine.parallel`` (each thread its panels and its tiles of C, with its own edge
    buffer; every element of C summed in the same order: the same bits at every thread
    count); the GEMV forms split their column blocks or rows (``streams_past``: the size of A
    past which the dot form streams more rows at a time, checked at run time, 0 for never:
    :func:`~polyopt.schedules.gemv.dot_streams_past`); ``accumulators``: the independent
    FMA chains that keep the FMA pipes busy (latency x FMAs per cycle), which narrow edge
    tiles make up with several sets of accumulators."""
    ta, tb, tc = types
    w = lanes
    vt = f"vector<{w}x{etype}>"
    zero = "0.000000e+00"
    t = _Text()
    args = (f"%A: {ta}, %B: {tb}, %C: {tc}, %M: index, %N: index, %K: index, %Aaddr: index, "
            f"%Baddr: index")
    t.add(0, f"func.func @gemm({args}{', %alpha: ' + etype if alpha else ''}) {{")
    t.add(1, f"%zero = arith.constant {zero} : {etype}")
    t.add(1, f"%zv = arith.constant dense<{zero}> : {vt}")
    par = threads > 1
    if alpha:
        t.add(1, f"%alphav = vector.broadcast %alpha : {etype} to {vt}")

    def blis_nest(p: BlisParams, par: bool, a_in_place: bool = False,
                  b_in_place: bool = False) -> None:
        """BLIS's five loops with ``p``'s tiles and order, their packed panels allocated
        and freed around them; with ``par``, split over the team.  With ``a_in_place`` the
        register tile reads A's rows where they are, not packed (see the caller); with
        ``b_in_place`` too, B's rows, the vectors that cross N's edge masked
        (``vector.maskedload``)."""
        mr, nr, kc, ku = p.M_R, p.N_R, p.K_C, p.K_U
        mc = max(mr, p.M_C // mr * mr)
        nc = _block_of_b(p)
        nv = nr // w
        tap = f"memref<?x{kc}x{mr}x{etype}>"
        tbp = f"memref<{nc // nr}x{kc}x{nr}x{etype}>"
        ttmp = f"memref<{mr}x{nr}x{etype}>"
        # A's buffer: M_C's micro-panels, or as many as M has
        if not a_in_place:
            t.add(1, f"%panels_of_a = affine.min affine_map<()[s0] -> ({mc // mr}, "
                     f"(s0 + {mr - 1}) floordiv {mr})>()[%M]")
            t.add(1, f"%Ap = memref.alloc(%panels_of_a) {{alignment = 64 : i64}} : {tap}")
        if not b_in_place:
            t.add(1, f"%Bp = memref.alloc() {{alignment = 64 : i64}} : {tbp}")
        # N's edge tiles narrower than M_R columns run in the column form (one vector of A's
        # packed column times a broadcast of B per column), accumulated in %ctmp[column, row]
        column = 1 < mr <= w and not mr & (mr - 1) and not a_in_place
        mvt, tct = f"vector<{mr}x{etype}>", f"memref<{nr}x{mr}x{etype}>"
        if column:
            t.add(1, f"%zm = arith.constant dense<{zero}> : {mvt}")
        if not par:
            t.add(1, f"%tmp = memref.alloca() {{alignment = 64 : i64}} : {ttmp}")
            if column:
                t.add(1, f"%ctmp = memref.alloca() {{alignment = 64 : i64}} : {tct}")
        kc_of = f"min affine_map<(d0)[s0] -> ({kc}, s0 - d0)>(%pc)[%K]"
        full_k = f"affine_map<(d0)[s0] -> ({kc}, ((s0 - d0) floordiv {ku}) * {ku})>(%pc)[%K]"

        def pack_a(d: int) -> None:
            """A[ic + q*M_R + r, pc + p] -> Ap[q, p, r], one micro-panel at a time (M_R rows read
            side by side, each panel written in order); rows past M are zero."""
            if par:
                t.add(d, f"affine.parallel (%q) = (0) to (min({mc // mr}, (symbol(%M) - %ic + "
                         f"{mr - 1}) floordiv {mr})) {{")
            else:
                t.add(d, f"affine.for %q = 0 to min affine_map<(d0)[s0] -> ({mc // mr}, "
                         f"(s0 - d0 + {mr - 1}) floordiv {mr})>(%ic)[%M] {{")
            t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 * {mr} - {mr} >= 0)>"
                         f"(%ic, %q)[%M] {{")
            t.add(d + 2, f"affine.for %p = 0 to {kc_of} {{")
            for r in range(mr):
                t.add(d + 3, f"%va{r} = affine.load %A[%ic + %q * {mr} + {r}, %pc + %p] : {ta}")
                t.add(d + 3, f"affine.store %va{r}, %Ap[%q, %p, {r}] : {tap}")
            t.add(d + 2, "}")
            t.add(d + 1, "} else {")
            t.add(d + 2, f"affine.for %p = 0 to {kc_of} {{")
            t.add(d + 3, f"affine.for %r = 0 to {mr} {{")
            t.add(d + 4, f"%inside = affine.if affine_set<(d0, d1, d2)[s0] : (s0 - d0 - d1 * {mr} "
                         f"- d2 - 1 >= 0)>(%ic, %q, %r)[%M] -> {etype} {{")
            t.add(d + 5, f"%vr = affine.load %A[%ic + %q * {mr} + %r, %pc + %p] : {ta}")
            t.add(d + 5, f"affine.yield %vr : {etype}")
            t.add(d + 4, "} else {")
            t.add(d + 5, f"affine.yield %zero : {etype}")
            t.add(d + 4, "}")
            t.add(d + 4, f"affine.store %inside, %Ap[%q, %p, %r] : {tap}")
            t.add(d + 3, "}")
            t.add(d + 2, "}")
            t.add(d + 1, "}")
            t.add(d, "}")

        def pack_b(d: int) -> None:
            """B[pc + p, jc + q*N_R + j] -> Bp[q, p, j]; columns past N in the last
            micro-panel are zero."""
            prange = f"0 to {kc_of}"
            blocked = not par and nc // nr > PACK_B_PANELS_UNBLOCKED
            if par:
                t.add(d, f"affine.parallel (%q) = (0) to (min({nc // nr}, (symbol(%N) - %jc + "
                         f"{nr - 1}) floordiv {nr})) {{")
            elif blocked:
                # B's rows a few at a time across all panels: one panel at a time read each
                # row of a 2048-column block in 128 pieces 16 KiB apart, more streams than
                # the prefetchers follow (32x2048x2048 f64 in GEBP's order: 0.76x -> 1.0x
                # numpy)
                t.add(d, f"affine.for %pb = 0 to {kc_of} step {PACK_B_ROWS} {{")
                prange = (f"affine_map<(d0) -> (d0)>(%pb) to min affine_map<(d0, d1)[s0] -> "
                          f"(d1 + {PACK_B_ROWS}, {kc}, s0 - d0)>(%pc, %pb)[%K]")
                d += 1
            if not par:
                t.add(d, f"affine.for %q = 0 to min affine_map<(d0)[s0] -> ({nc // nr}, "
                         f"(s0 - d0 + {nr - 1}) floordiv {nr})>(%jc)[%N] {{")
            # a whole micro-panel: N_R columns, a constant trip count (straight vector copies)
            t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 * {nr} - {nr} >= 0)>"
                         f"(%jc, %q)[%N] {{")
            t.add(d + 2, f"affine.for %p = {prange} {{")
            t.add(d + 3, f"affine.for %j = 0 to {nr} {{")
            t.add(d + 4, f"%vb = affine.load %B[%pc + %p, %jc + %q * {nr} + %j] : {tb}")
            t.add(d + 4, f"affine.store %vb, %Bp[%q, %p, %j] : {tbp}")
            t.add(d + 3, "}")
            t.add(d + 2, "}")
            # the micro-panel on N's edge: each vector of its row a masked load (the columns
            # past N zero); element by element, its copy and zero padding had cost more than
            # the tiles that read it (f32 128x65x256: 64 stores per row of B for 1 column)
            t.add(d + 1, "} else {")
            masks = []
            for v in range(nv):
                count, mask, col = t.fresh("pcount"), t.fresh("pmask"), t.fresh("pcol")
                t.add(d + 2, f"{count} = affine.min affine_map<(d0, d1)[s0] -> ({w}, s0 - d0 - "
                             f"d1 * {nr} - {v * w})>(%jc, %q)[%N]")
                t.add(d + 2, f"{mask} = vector.create_mask {count} : vector<{w}xi1>")
                t.add(d + 2, f"{col} = affine.apply affine_map<(d0, d1) -> (d0 + d1 * {nr} + "
                             f"{v * w})>(%jc, %q)")
                masks.append((mask, col))
            t.add(d + 2, f"affine.for %p = {prange} {{")
            t.add(d + 3, f"%prow = affine.apply affine_map<(d0, d1) -> (d0 + d1)>(%pc, %p)")
            for v, (mask, col) in enumerate(masks):
                vb = t.fresh("vb")
                t.add(d + 3, f"{vb} = vector.maskedload %B[%prow, {col}], {mask}, %zv : {tb}, "
                             f"vector<{w}xi1>, {vt} into {vt}")
                t.add(d + 3, f"affine.vector_store {vb}, %Bp[%q, %p, {v * w}] : {tbp}, {vt}")
            t.add(d + 2, "}")
            t.add(d + 1, "}")
            t.add(d, "}")
            if blocked:
                t.add(d - 1, "}")

        def micro_tile(d: int) -> None:
            """The M_R x N_R tile at (ic + ir, jc + jr): k unrolled by K_U, then the rest."""
            edge_rows = False     # A read in place through rows clamped to M's last

            def step(depth: int, k: str, accs: list[str], vecs: int, mask: str = "") -> list[str]:
                bs = []
                for v in range(vecs):
                    b = t.fresh("b")
                    if not b_in_place:
                        t.add(depth, f"{b} = affine.vector_load %Bp[%jr floordiv {nr}, {k}, "
                                     f"{v * w}] : {tbp}, {vt}")
                    elif mask and v == vecs - 1:   # the vector that crosses N's edge
                        row, col = t.fresh("brow"), t.fresh("bcol")
                        t.add(depth, f"{row} = affine.apply affine_map<(d0, d1) -> "
                                     f"(d0 + {k.replace('%k', 'd1')})>(%pc, %k)")
                        t.add(depth, f"{col} = affine.apply affine_map<(d0, d1) -> "
                                     f"(d0 + d1 + {v * w})>(%jc, %jr)")
                        t.add(depth, f"{b} = vector.maskedload %B[{row}, {col}], {mask}, %zv : "
                                     f"{tb}, vector<{w}xi1>, {vt} into {vt}")
                    else:
                        t.add(depth, f"{b} = affine.vector_load %B[%pc + {k}, %jc + %jr + "
                                     f"{v * w}] : {tb}, {vt}")
                    bs.append(b)
                out = []
                for i in range(mr):
                    a = t.fresh("a")
                    if not a_in_place:
                        t.add(depth, f"{a} = affine.load %Ap[%ir floordiv {mr}, {k}, {i}] : "
                                     f"{tap}")
                    elif not edge_rows:
                        t.add(depth, f"{a} = affine.load %A[%ic + %ir + {i}, %pc + {k}] : {ta}")
                    else:     # rows past M read M's last row (their sums are not stored)
                        kx = t.fresh("kx")
                        t.add(depth, f"{kx} = affine.apply affine_map<(d0, d1) -> "
                                     f"(d0 + {k.replace('%k', 'd1')})>(%pc, %k)")
                        t.add(depth, f"{a} = memref.load %A[%row{i}, {kx}] : {ta}")
                    ab = t.fresh("ab")
                    t.add(depth, f"{ab} = vector.broadcast {a} : {etype} to {vt}")
                    for v in range(vecs):
                        acc = t.fresh("acc")
                        t.add(depth, f"{acc} = vector.fma {ab}, {bs[v]}, {accs[i * vecs + v]} : "
                                     f"{vt}")
                        out.append(acc)
                return out

            def loop(depth: int, bounds: str, step_size: int, inits: list[str], unroll: int,
                     vecs: int, mask: str = "", sets: int = 1) -> list[str]:
                """The k loop carrying ``inits`` (``sets`` of them, the unrolled steps taking
                the sets in turn)."""
                count = len(inits)
                types = ", ".join([vt] * count)
                res = t.fresh("r")
                names = [t.fresh("x") for _ in range(count)]
                init_text = ", ".join(f"{n} = {v}" for n, v in zip(names, inits))
                t.add(depth, f"{res}{':' + str(count) if count > 1 else ''} = affine.for %k = "
                             f"{bounds} step {step_size} iter_args({init_text}) -> ({types}) {{")
                per_set = count // sets
                accs = [names[q * per_set:(q + 1) * per_set] for q in range(sets)]
                for u in range(unroll):
                    accs[u % sets] = step(depth + 1, f"%k + {u}" if u else "%k", accs[u % sets],
                                          vecs, mask)
                t.add(depth + 1, f"affine.yield {', '.join(sum(accs, []))} : {types}")
                t.add(depth, "}")
                return [f"{res}#{q}" for q in range(count)] if count > 1 else [res]


            def kernel(depth: int, vecs: int, mask: str = "") -> list[str]:
                # a narrow edge tile has fewer accumulators than the FMA pipes keep in
                # flight: the unrolled k steps take turns on several sets of them, summed
                # after the loop (f32 128x65x256 on Zen 5: one vector of 4 rows waited on
                # the FMA latency, a quarter of the time for 1.5% of the FMAs)
                sets = max(1, min(ku, -(-accumulators // (mr * vecs))))
                while ku % sets:
                    sets -= 1
                accs = loop(depth, f"0 to min {full_k}", ku, ["%zv"] * (mr * vecs * sets), ku,
                            vecs, mask, sets)
                per_set = mr * vecs
                while sets > 1:
                    half = sets // 2
                    summed = []
                    for q in range(half * per_set):
                        v = t.fresh("ks")
                        t.add(depth, f"{v} = arith.addf {accs[q]}, {accs[q + half * per_set]} : "
                                     f"{vt}")
                        summed.append(v)
                    accs = summed + accs[2 * half * per_set:]
                    sets -= half
                return loop(depth, f"affine_map<(d0)[s0] -> (((s0 - d0) floordiv {ku}) * {ku})>"
                                   f"(%pc)[%K] to {kc_of}", 1, accs, 1, vecs, mask)

            def c_at(i: int, v: int) -> str:
                return f"%C[%ic + %ir + {i}, %jc + %jr + {v * w}]"

            def c_lines(rows: range, locality: int, depth: int) -> None:
                for i in rows:
                    for col in sorted(set(range(0, nr, line)) | {nr - 1}):
                        t.add(depth, f"affine.prefetch %C[%ic + %ir + {i}, %jc + %jr + {col}], "
                                     f"read, locality<{locality}>, data : {tc}")

            def add_tile(depth: int, accs: list[str]) -> None:
                for i in range(mr):
                    for v in range(nv):
                        c = t.fresh("c")
                        t.add(depth, f"{c} = affine.vector_load {c_at(i, v)} : {tc}, {vt}")
                        value = t.fresh("c")
                        if alpha:
                            t.add(depth, f"{value} = vector.fma %alphav, {accs[i * nv + v]}, {c} : "
                                         f"{vt}")
                        else:
                            t.add(depth, f"{value} = arith.addf {c}, {accs[i * nv + v]} : {vt}")
                        t.add(depth, f"affine.vector_store {value}, {c_at(i, v)} : {tc}, {vt}")

            t.add(d, f"affine.if affine_set<(d0, d1, d2, d3)[s0, s1] : (s0 - d0 - d1 - {mr} >= 0, "
                     f"s1 - d2 - d3 - {nr} >= 0)>(%ic, %ir, %jc, %jr)[%M, %N] {{")
            # a tile inside C: C is read only after the k loop (the accumulators start from
            # zero), so its lines are prefetched as the static pipeline's tile does
            # (register_tile._c_tile_prefetcher): the tile M_R rows below to L2 before the
            # loop, this tile's to L1 C_TILE_LEAD iterations before the loop ends, in a whole
            # K_C block; in K's last, partial block this tile's to L1 before the loop.
            # (Zen 4, 2088x2048x2048 f64: 0.96x-0.98x the static function with this tile's
            # lines sent to L2 before the loop)
            elem = int(etype[1:]) // 8
            line = 64 // elem
            lead = -(-C_TILE_LEAD // ku) * ku
            split = kc >= 4 * lead
            if split:
                c_lines(range(mr, 2 * mr), 1, d + 1)
                t.add(d + 1, f"affine.if affine_set<(d0)[s0] : (s0 - d0 - {kc} >= 0)>(%pc)[%K] {{")
                accs = loop(d + 2, f"0 to {kc - lead}", ku, ["%zv"] * (mr * nv), ku, nv)
                c_lines(range(mr), 3, d + 2)
                accs = loop(d + 2, f"{kc - lead} to {kc}", ku, accs, ku, nv)
                add_tile(d + 2, accs)
                t.add(d + 1, "} else {")
                c_lines(range(mr), 3, d + 2)
                add_tile(d + 2, kernel(d + 2, nv))
                t.add(d + 1, "}")
            else:
                c_lines(range(mr), 3, d + 1)
                add_tile(d + 1, kernel(d + 1, nv))
            t.add(d, "} else {")
            if a_in_place:
                for i in range(mr):
                    t.add(d + 1, f"%row{i} = affine.min affine_map<(d0, d1)[s0] -> (d0 + d1 + {i}, "
                                 f"s0 - 1)>(%ic, %ir)[%M]")
                edge_rows = True
            if column:
                t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 - {mr} >= 0)>"
                             f"(%jc, %jr)[%N] {{")
            # a tile on C's edge: computed on the zero-padded panels, stored to a buffer, and only
            # its part inside C added; only the vectors that hold columns inside C are computed,
            # one version per vector count (N = 65 f32 on 64-column tiles spent half its FMAs on
            # zeros; halves and quarters computed 64 columns for 101's edge of 37)
            widths = list(range(nv, 0, -1))     # as many vectors as hold its columns
            for level, vecs in enumerate(widths):
                depth = d + 1 + level
                if level + 1 < len(widths):     # more columns than the next width holds?
                    t.add(depth, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 - "
                                 f"{widths[level + 1] * w} - 1 >= 0)>(%jc, %jr)[%N] {{")
                    depth += 1
                mask = ""
                if b_in_place:     # B's columns in the last vector that are inside N
                    count, mask = t.fresh("bcount"), t.fresh("bmask")
                    t.add(depth, f"{count} = affine.min affine_map<(d0, d1)[s0] -> ({w}, s0 - d0 "
                                 f"- d1 - {(vecs - 1) * w})>(%jc, %jr)[%N]")
                    t.add(depth, f"{mask} = vector.create_mask {count} : vector<{w}xi1>")
                accs = kernel(depth, vecs, mask)
                if b_in_place:
                    add_rows_to_c(depth, accs, vecs, mask)
                for i in range(mr if not b_in_place else 0):
                    for v in range(vecs):
                        value = accs[i * vecs + v]
                        if alpha:
                            value = t.fresh("sa")
                            t.add(depth, f"{value} = arith.mulf %alphav, {accs[i * vecs + v]} : {vt}")
                        t.add(depth, f"affine.vector_store {value}, %tmp[{i}, {v * w}] : {ttmp}, "
                                     f"{vt}")
                if level + 1 < len(widths):
                    t.add(depth - 1, "} else {")
            for level in range(len(widths) - 2, -1, -1):
                t.add(d + 1 + level, "}")
            if not b_in_place:
                add_to_c(d + 1, f"%tmp[%i, %j] : {ttmp}")
            if column:
                t.add(d + 1, "} else {")
                column_edge(d + 2)
                t.add(d + 1, "}")
            t.add(d, "}")

        def add_rows_to_c(d: int, accs: list[str], vecs: int, mask: str) -> None:
            """The rows of an edge tile that are inside M added to C with vectors, the last
            masked to N's edge (the unpacked path's; the packed one's go through %tmp)."""
            mt = f"vector<{w}xi1>"
            for i in range(mr):
                t.add(d, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 - {i + 1} >= 0)>"
                         f"(%ic, %ir)[%M] {{")
                for v in range(vecs):
                    value = accs[i * vecs + v]
                    c, total = t.fresh("c"), t.fresh("c")
                    if v < vecs - 1:
                        t.add(d + 1, f"{c} = affine.vector_load %C[%ic + %ir + {i}, %jc + %jr + "
                                     f"{v * w}] : {tc}, {vt}")
                    else:
                        row, col = t.fresh("crow"), t.fresh("ccol")
                        t.add(d + 1, f"{row} = affine.apply affine_map<(d0, d1) -> (d0 + d1 + "
                                     f"{i})>(%ic, %ir)")
                        t.add(d + 1, f"{col} = affine.apply affine_map<(d0, d1) -> (d0 + d1 + "
                                     f"{v * w})>(%jc, %jr)")
                        t.add(d + 1, f"{c} = vector.maskedload %C[{row}, {col}], {mask}, %zv : "
                                     f"{tc}, {mt}, {vt} into {vt}")
                    if alpha:
                        t.add(d + 1, f"{total} = vector.fma %alphav, {value}, {c} : {vt}")
                    else:
                        t.add(d + 1, f"{total} = arith.addf {c}, {value} : {vt}")
                    if v < vecs - 1:
                        t.add(d + 1, f"affine.vector_store {total}, %C[%ic + %ir + {i}, "
                                     f"%jc + %jr + {v * w}] : {tc}, {vt}")
                    else:
                        t.add(d + 1, f"vector.maskedstore %C[{row}, {col}], {mask}, {total} : "
                                     f"{tc}, {mt}, {vt}")
                t.add(d, "}")

        def column_edge(d: int) -> None:
            """The 1 to M_R - 1 columns of a tile on N's edge in the column form: C's column of
            M_R rows is one vector, A's packed column (loaded once per k) times a broadcast of B
            per column, each column on K_U partial sums (a single chain would wait on the FMA
            latency); stored to %ctmp[column, row], then the part inside C added.  One FMA per k
            and column instead of M_R (the static pipeline's
            :func:`~polyopt.schedules.register_tile._column_edge`); one version per column
            count, so that the columns share A's loads."""
            for r in range(1, mr):
                if r < mr - 1:
                    t.add(d, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 - {r} == 0)>"
                             f"(%jc, %jr)[%N] {{")
                columns(d + 1 if r < mr - 1 else d, r)
                if r < mr - 1:
                    t.add(d, "} else {")
                    d += 1
            for r in range(mr - 2, 0, -1):
                d -= 1
                t.add(d, "}")
            add_to_c(d, f"%ctmp[%j, %i] : {tct}")

        def add_to_c(d: int, element: str) -> None:
            """``C[i, j] += element`` over the part of the edge tile inside C (``element``: an
            access of the tile's buffer by ``%i``, ``%j`` with its type)."""
            t.add(d, f"affine.for %i = 0 to min affine_map<(d0, d1)[s0] -> ({mr}, "
                     f"s0 - d0 - d1)>(%ic, %ir)[%M] {{")
            t.add(d + 1, f"affine.for %j = 0 to min affine_map<(d0, d1)[s0] -> ({nr}, "
                         f"s0 - d0 - d1)>(%jc, %jr)[%N] {{")
            et, ec, es = t.fresh("et"), t.fresh("ec"), t.fresh("es")
            t.add(d + 2, f"{et} = affine.load {element}")
            t.add(d + 2, f"{ec} = affine.load %C[%ic + %ir + %i, %jc + %jr + %j] : {tc}")
            t.add(d + 2, f"{es} = arith.addf {ec}, {et} : {etype}")
            t.add(d + 2, f"affine.store {es}, %C[%ic + %ir + %i, %jc + %jr + %j] : {tc}")
            t.add(d + 1, "}")
            t.add(d, "}")

        def columns(d: int, r: int) -> None:
            """``r`` columns of the column form into %ctmp[0:r, :]."""
            def fmas(depth: int, k: str, accs: list[str]) -> list[str]:
                a = t.fresh("ca")
                t.add(depth, f"{a} = affine.vector_load %Ap[%ir floordiv {mr}, {k}, 0] : {tap}, "
                             f"{mvt}")
                out = []
                for c, acc in enumerate(accs):
                    b, bb, nxt = t.fresh("cb"), t.fresh("cbb"), t.fresh("cacc")
                    t.add(depth, f"{b} = affine.load %Bp[%jr floordiv {nr}, {k}, {c}] : {tbp}")
                    t.add(depth, f"{bb} = vector.broadcast {b} : {etype} to {mvt}")
                    t.add(depth, f"{nxt} = vector.fma {a}, {bb}, {acc} : {mvt}")
                    out.append(nxt)
                return out

            def carried(depth: int, bounds: str, step: int, inits: list[str], unroll: int
                        ) -> list[str]:
                """A k loop carrying ``inits`` (``unroll`` groups of ``r`` columns)."""
                count = len(inits)
                res, names = t.fresh("cr"), [t.fresh("cx") for _ in inits]
                types = ", ".join([mvt] * count)
                init_text = ", ".join(f"{n} = {v}" for n, v in zip(names, inits))
                t.add(depth, f"{res}{':' + str(count) if count > 1 else ''} = affine.for %k = "
                             f"{bounds} step {step} iter_args({init_text}) -> ({types}) {{")
                nexts = []
                for u in range(unroll):
                    nexts += fmas(depth + 1, f"%k + {u}" if u else "%k", names[u * r:(u + 1) * r])
                t.add(depth + 1, f"affine.yield {', '.join(nexts)} : {types}")
                t.add(depth, "}")
                return [f"{res}#{q}" for q in range(count)] if count > 1 else [res]

            partial = carried(d, f"0 to min {full_k}", ku, ["%zm"] * (ku * r), ku)
            sums = []
            for c in range(r):             # each column's K_U partial sums, pairwise
                parts = partial[c::r]
                while len(parts) > 1:
                    pairs = []
                    for q in range(0, len(parts) - 1, 2):
                        v = t.fresh("cs")
                        t.add(d, f"{v} = arith.addf {parts[q]}, {parts[q + 1]} : {mvt}")
                        pairs.append(v)
                    parts = pairs + (parts[-1:] if len(parts) % 2 else [])
                sums.append(parts[0])
            rest = carried(d, f"affine_map<(d0)[s0] -> (((s0 - d0) floordiv {ku}) * {ku})>"
                              f"(%pc)[%K] to {kc_of}", 1, sums, 1)
            for c, v in enumerate(rest):
                if alpha:
                    av, scaled = t.fresh("cal"), t.fresh("csa")
                    t.add(d, f"{av} = vector.broadcast %alpha : {etype} to {mvt}")
                    t.add(d, f"{scaled} = arith.mulf {av}, {v} : {mvt}")
                    v = scaled
                t.add(d, f"affine.vector_store {v}, %ctmp[{c}, 0] : {tct}, {mvt}")

        def tiles(d: int, outer: str, inner: str) -> None:
            """The ir and jr loops over the current blocks, ``outer`` first."""
            bound = {"ir": f"min affine_map<(d0)[s0] -> ({mc}, s0 - d0)>(%ic)[%M] step {mr}",
                     "jr": f"min affine_map<(d0)[s0] -> ({nc}, s0 - d0)>(%jc)[%N] step {nr}"}
            if par:
                parallel = {"ir": f"(0) to (min({mc}, symbol(%M) - %ic)) step ({mr})",
                            "jr": f"(0) to (min({nc}, symbol(%N) - %jc)) step ({nr})"}
                t.add(d, f"affine.parallel (%{outer}) = {parallel[outer]} {{")
                t.add(d + 1, f"%tmp = memref.alloca() {{alignment = 64 : i64}} : {ttmp}")
                if column:
                    t.add(d + 1, f"%ctmp = memref.alloca() {{alignment = 64 : i64}} : {tct}")
            else:
                t.add(d, f"affine.for %{outer} = 0 to {bound[outer]} {{")
            t.add(d + 1, f"affine.for %{inner} = 0 to {bound[inner]} {{")
            micro_tile(d + 2)
            t.add(d + 1, "}")
            t.add(d, "}")

        # GEPB: ic, pc (pack A), jc (pack B), ir, jr; GEBP: jc, pc (pack B), ic (pack A), jr, ir
        blocks = {"ic": ("%M", mc, (lambda d: None) if a_in_place else pack_a),
                  "jc": ("%N", nc, (lambda d: None) if b_in_place else pack_b)}
        outer, inner = ("ic", "jc") if p.l2_block == "B" else ("jc", "ic")
        size, step, _ = blocks[outer]
        t.add(1, f"affine.for %{outer} = 0 to {size} step {step} {{")
        t.add(2, f"affine.for %pc = 0 to %K step {kc} {{")
        blocks[outer][2](3)
        size, step, pack = blocks[inner]
        t.add(3, f"affine.for %{inner} = 0 to {size} step {step} {{")
        pack(4)
        tiles(4, *(("ir", "jr") if p.l2_block == "B" else ("jr", "ir")))
        t.add(3, "}")
        t.add(2, "}")
        t.add(1, "}")
        if not a_in_place:
            t.add(1, f"memref.dealloc %Ap : {tap}")
        if not b_in_place:
            t.add(1, f"memref.dealloc %Bp : {tbp}")

    # a row (M = 1) or a column (N = 1): BLAS level 2 (polyopt.schedules.gemv), chosen by
    # the sizes when the function runs; else the GEMM
    t.add(1, "affine.if affine_set<()[s0] : (s0 - 1 == 0)>()[%M] {")
    _axpy(t, ta, tb, tc, etype, stream_lanes or w, alpha, threads)
    t.add(1, "} else {")
    t.add(1, "affine.if affine_set<()[s0] : (s0 - 1 == 0)>()[%N] {")
    _dot(t, ta, tb, tc, etype, stream_lanes or w, alpha, threads, streams_past)
    t.add(1, "} else {")
    # a small product, on one thread, neither A nor B packed (BLIS's "sup" path, the static
    # pipeline's :func:`~polyopt.schedules.blis_schedule.unpacked_params`): the copies would
    # cost more than the reuse they buy
    side = SMALL_ON_ONE_THREAD
    t.add(1, f"affine.if affine_set<()[s0, s1, s2] : ({side} - s0 >= 0, {side} - s1 >= 0, "
             f"{side} - s2 >= 0)>()[%M, %N, %K] {{")
    blis_nest(replace(p, l2_block="A"), False, a_in_place=True, b_in_place=True)
    t.add(1, "} else {")
    # GEPB, or GEBP for an A of few micro-panels against a B larger than L1 when the model
    # says so (``short``): the order is chosen by the sizes when the function runs (32^3 f64
    # ran 1.34x numpy in GEPB's order, 1.25x in GEBP's)
    if short is not None:
        t.add(1, f"affine.if affine_set<()[s0, s1, s2] : ({short_rows - 1} - s0 >= 0, "
                 f"s1 - {SHORT_A_MIN_N_K} >= 0, s2 - {SHORT_A_MIN_N_K} >= 0)>()[%M, %N, %K] {{")
        blis_nest(short, par)
        t.add(1, "} else {")
    def main_nest(par: bool) -> None:
        """``p``'s nest; in GEPB's order with N within one block of B, A read in place:
        each of A's micro-panels then serves at most N_C / N_R tiles, and packing it cost
        as much as a pass of the register tile over it."""
        if p.l2_block != "B":
            blis_nest(p, par)
            return
        t.add(1, f"affine.if affine_set<()[s0] : ({_block_of_b(p)} - s0 >= 0)>()[%N] {{")
        blis_nest(p, par, a_in_place=True)
        t.add(1, "} else {")
        blis_nest(p, par)
        t.add(1, "}")

    main_nest(par)
    if short is not None:
        t.add(1, "}")
    t.add(1, "}")
    t.add(1, "}")
    t.add(1, "}")
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def _axpy(t: _Text, ta: str, tb: str, tc: str, etype: str, w: int, alpha: bool,
          threads: int) -> None:
    """C[0, :] += A[0, k] * B[k, :] for U rows of B at a time, on blocks of C's row (the
    static path's axpy form, :mod:`polyopt.schedules.gemv`, with run-time N and K); the
    columns past the last full vector one at a time."""
    from .gemv import ALIGN_MIN_VECTORS, AXPY_BLOCK_BYTES, AXPY_ROWS, aligned_axpy
    u = AXPY_ROWS
    elem = int(etype[1:]) // 8
    block = max(w, AXPY_BLOCK_BYTES // elem // threads // w * w)
    vt = f"vector<{w}x{etype}>"
    n_vec = f"affine_map<()[s0] -> ((s0 floordiv {w}) * {w})>()[%N]"
    k_full = f"affine_map<()[s0] -> ((s0 floordiv {u}) * {u})>()[%K]"

    def coefficients(d: int, k: str, count: int, vt: str = vt) -> list[str]:
        """A[0, k + r] (times alpha) broadcast to ``vt``, for each row r of B."""
        coeffs = []
        for r in range(count):
            a = t.fresh("a")
            t.add(d, f"{a} = affine.load %A[0, {k} + {r}] : {ta}")
            if alpha:
                scaled = t.fresh("as")
                t.add(d, f"{scaled} = arith.mulf %alpha, {a} : {etype}")
                a = scaled
            av = t.fresh("av")
            t.add(d, f"{av} = vector.broadcast {a} : {etype} to {vt}")
            coeffs.append(av)
        return coeffs

    def over_k(d: int, body) -> None:
        t.add(d, f"affine.for %k = 0 to {k_full} step {u} {{")
        body(d + 1, "%k", u)
        t.add(d, "}")
        t.add(d, f"affine.for %k = {k_full} to %K {{")
        body(d + 1, "%k", 1)
        t.add(d, "}")

    # the aligned form (gemv.aligned_axpy) when every row of B starts at the same offset from
    # a vector boundary, as the static path's: of whole vectors, else of half vectors
    # (gemv.aligning_lanes), else the plain form
    widths = [w] + ([w // 2] if w // 2 >= 4 else [])
    for depth, width in enumerate(widths, start=2):
        def width_coefficients(d: int, k: str, count: int, width=width) -> list[str]:
            return coefficients(d, k, count, f"vector<{width}x{etype}>")
        whole_vectors_not = f", s0 mod {w} - 1 >= 0" if width < w else ""
        t.add(depth, f"affine.if affine_set<()[s0] : (s0 mod {width} == 0, "
                     f"s0 - {ALIGN_MIN_VECTORS * width} >= 0{whole_vectors_not})>()[%N] {{")
        aligned_axpy(t, depth + 1, "%N", etype, width, max(width, block // width * width),
                     threads, tb, tc, "%Baddr", width_coefficients, over_k)
        t.add(depth, "} else {")
    _plain_axpy(t, ta, tb, tc, etype, w, alpha, block, threads, n_vec, coefficients, over_k)
    for depth in reversed(range(2, 2 + len(widths))):
        t.add(depth, "}")


def _plain_axpy(t: _Text, ta: str, tb: str, tc: str, etype: str, w: int, alpha: bool,
                block: int, threads: int, n_vec: str, coefficients, over_k) -> None:
    """The axpy form's blocks of whole vectors from column 0, then the columns past the
    last whole vector one at a time."""
    vt = f"vector<{w}x{etype}>"
    if threads > 1:   # blocks of C's row on the threads
        t.add(2, f"affine.parallel (%j0) = (0) to ((symbol(%N) floordiv {w}) * {w}) "
                 f"step ({block}) {{")
    else:
        t.add(2, f"affine.for %j0 = 0 to {n_vec} step {block} {{")

    def rows(d: int, k: str, count: int) -> None:
        coeffs = coefficients(d, k, count)
        t.add(4, f"affine.for %j = affine_map<(d0) -> (d0)>(%j0) to min "
                 f"affine_map<(d0)[s0] -> (d0 + {block}, (s0 floordiv {w}) * {w})>(%j0)[%N] "
                 f"step {w} {{")
        c = t.fresh("c")
        t.add(5, f"{c} = affine.vector_load %C[0, %j] : {tc}, {vt}")
        for r, av in enumerate(coeffs):
            b = t.fresh("b")
            t.add(5, f"{b} = affine.vector_load %B[{k} + {r}, %j] : {tb}, {vt}")
            nc = t.fresh("c")
            t.add(5, f"{nc} = vector.fma {av}, {b}, {c} : {vt}")
            c = nc
        t.add(5, f"affine.vector_store {c}, %C[0, %j] : {tc}, {vt}")
        t.add(4, "}")

    over_k(3, rows)
    t.add(2, "}")
    t.add(2, "affine.for %k = 0 to %K {")
    t.add(3, f"%ta = affine.load %A[0, %k] : {ta}")
    coeff = "%ta"
    if alpha:
        t.add(3, f"%tas = arith.mulf %alpha, %ta : {etype}")
        coeff = "%tas"
    t.add(3, f"affine.for %j = {n_vec} to %N {{")
    t.add(4, f"%tb = affine.load %B[%k, %j] : {tb}")
    t.add(4, f"%tc = affine.load %C[0, %j] : {tc}")
    t.add(4, f"%ts = math.fma {coeff}, %tb, %tc : {etype}")
    t.add(4, f"affine.store %ts, %C[0, %j] : {tc}")
    t.add(3, "}")
    t.add(2, "}")


def _dot(t: _Text, ta: str, tb: str, tc: str, etype: str, w: int, alpha: bool,
         threads: int, streams_past: int = 0) -> None:
    """C[i, 0] += A[i, :] . B[:, 0] for R rows at a time with P vector accumulators each
    (the static path's dot form, with run-time M and K); the k past the last group of
    vectors one at a time, then the rows past the last group of R one at a time.  With
    ``streams_past``, R and P are the streaming ones when A is larger than that at run time
    (:func:`~polyopt.schedules.gemv.dot_shape`)."""
    from .gemv import (ALIGN_MIN_VECTORS, DOT_ACCUMULATORS, DOT_ROWS, STREAM_DOT_ACCUMULATORS,
                       STREAM_DOT_ROWS, aligned_dot_rows, aligned_edges, dot_rows)
    vt = f"vector<{w}x{etype}>"
    tv = f"memref<?x{etype}>"
    t.add(2, f"%Bv = memref.collapse_shape %B [[0, 1]] : {tb} into memref<?x{etype}>")
    zero = t.fresh("zs")      # the GEMM's %zv may be wider (MachineModel.stream_lanes)
    t.add(2, f"{zero} = arith.constant dense<0.000000e+00> : {vt}")

    def rows_loop(d: int, bounds: str, rows: int, p: int) -> None:
        k_vec = f"affine_map<()[s0] -> ((s0 floordiv {w * p}) * {w * p})>()[%K]"
        t.add(d, f"affine.{bounds} {{")
        sums = []
        for total in dot_rows(t, d + 1, rows, p, w, etype, ta, tv, k_vec, zero):
            sr = t.fresh("s")
            t.add(d + 1, f"{sr} = vector.reduction <add>, {total} : {vt} into {etype}")
            sums.append(sr)
        tail = t.fresh("t")
        inits = ", ".join(f"%y{r} = {sv}" for r, sv in enumerate(sums))
        types = ", ".join([etype] * rows)
        t.add(d + 1, f"{tail}{':' + str(rows) if rows > 1 else ''} = affine.for %k = {k_vec} "
                     f"to %K iter_args({inits}) -> ({types}) {{")
        b = t.fresh("b")
        t.add(d + 2, f"{b} = affine.load %B[%k, 0] : {tb}")
        nexts = []
        for r in range(rows):
            a = t.fresh("a")
            t.add(d + 2, f"{a} = affine.load %A[%i + {r}, %k] : {ta}")
            nx = t.fresh("y")
            t.add(d + 2, f"{nx} = math.fma {a}, {b}, %y{r} : {etype}")
            nexts.append(nx)
        t.add(d + 2, f"affine.yield {', '.join(nexts)} : {types}")
        t.add(d + 1, "}")
        add_to_c(d + 1, [f"{tail}#{r}" if rows > 1 else tail for r in range(rows)])
        t.add(d, "}")

    def add_to_c(d: int, totals: list[str]) -> None:
        """C[i + r, 0] += (alpha *) totals[r]."""
        for r, total in enumerate(totals):
            if alpha:
                scaled = t.fresh("sa")
                t.add(d, f"{scaled} = arith.mulf %alpha, {total} : {etype}")
                total = scaled
            c = t.fresh("c")
            t.add(d, f"{c} = affine.load %C[%i + {r}, 0] : {tc}")
            nc = t.fresh("c")
            t.add(d, f"{nc} = arith.addf {c}, {total} : {etype}")
            t.add(d, f"affine.store {nc}, %C[%i + {r}, 0] : {tc}")

    def aligned_rows_loop(d: int, bounds: str, rows: int, p: int, edges) -> None:
        """The same rows in the aligned form (gemv.aligned_dot_rows): masked head and
        tail, no scalar loop."""
        t.add(d, f"affine.{bounds} {{")
        sums = []
        for total in aligned_dot_rows(t, d + 1, rows, p, w, etype, ta, tv, edges):
            sr = t.fresh("s")
            t.add(d + 1, f"{sr} = vector.reduction <add>, {total} : {vt} into {etype}")
            sums.append(sr)
        add_to_c(d + 1, sums)
        t.add(d, "}")

    def plain_or_aligned_rows(d: int, rows: int, p: int, loop, edges) -> None:
        m_full = f"affine_map<()[s0] -> ((s0 floordiv {rows}) * {rows})>()[%M]"
        extra = (edges,) if edges is not None else ()
        if threads > 1:   # groups of rows on the threads
            loop(d, f"parallel (%i) = (0) to ((symbol(%M) floordiv {rows}) * {rows}) "
                    f"step ({rows})", rows, p, *extra)
        else:
            loop(d, f"for %i = 0 to {m_full} step {rows}", rows, p, *extra)
        loop(d, f"for %i = {m_full} to %M", 1, p, *extra)

    def rows_loops(d: int, rows: int, p: int) -> None:
        """The rows in the aligned form when K is a whole number of vectors of at least
        ALIGN_MIN_VECTORS groups (every row then starts at the same offset from a vector
        boundary, :func:`polyopt.schedules.gemv.gemv_form`), else in the plain one."""
        t.add(d, f"affine.if affine_set<()[s0] : (s0 mod {w} == 0, "
                 f"s0 - {ALIGN_MIN_VECTORS * w * p} >= 0)>()[%K] {{")
        edges = aligned_edges(t, d + 1, "%K", etype, w, p, ta, tv, "%Aaddr", zero)
        plain_or_aligned_rows(d + 1, rows, p, aligned_rows_loop, edges)
        t.add(d, "} else {")
        plain_or_aligned_rows(d + 1, rows, p, rows_loop, None)
        t.add(d, "}")

    if not streams_past:
        rows_loops(2, DOT_ROWS, DOT_ACCUMULATORS)
        return
    elem = int(etype[1:]) // 8
    t.add(2, "%elements_of_a = arith.muli %M, %K : index")
    t.add(2, f"%streamed_past = arith.constant {streams_past // elem} : index")
    t.add(2, "%streamed = arith.cmpi ugt, %elements_of_a, %streamed_past : index")
    t.add(2, "scf.if %streamed {")
    rows_loops(3, STREAM_DOT_ROWS, STREAM_DOT_ACCUMULATORS)
    t.add(2, "} else {")
    rows_loops(3, DOT_ROWS, DOT_ACCUMULATORS)
    t.add(2, "}")


def _aligned_pointer_at_top_level(op: Operation, memref, loc):
    """``memref.extract_aligned_pointer_as_index`` of ``memref`` in front of ``op``'s ancestor
    at the function's top level (the size check puts the product inside an ``affine.if``, and
    only a value of the top level may be an affine symbol)."""
    from ..affine.dialects.func import FuncOp
    from ..affine.dialects.memref_meta import ExtractAlignedPointerAsIndexOp
    top = op
    while not isinstance(top.parent_op, FuncOp):
        top = top.parent_op
    return Builder.before(top).insert(
        ExtractAlignedPointerAsIndexOp([memref], [IndexType()], loc=loc)).results[0]


def expand_dynamic_gemm(con, machine: Optional[MachineModel], remark=None,
                        threads: int = 1) -> Optional[list[Operation]]:
    """Build the dynamic GEMM of a matrix-form contraction with ``?`` sizes in front of its
    anchor (after the run-time size check and the ``C *= beta`` nest); None (nothing built)
    when it does not apply: integer elements, operands that share memory or are not
    row-major, an anchor inside a loop (its sizes would not be symbols)."""
    from ..affine.dialects.func import FuncOp
    from ..memref_layout.data_copy import alias_root
    from .expand import _is_one, _scalar, expand_matmul
    operands = con.operands
    types = [v.type for v in operands]
    etype = types[2].element_type
    if not (isinstance(etype, FloatType) and etype.width in (32, 64)
            and all(t.layout is None and t.rank == 2 for t in types)
            and len({id(alias_root(v)) for v in operands}) == 3
            and isinstance(con.anchor.parent_op, FuncOp)):
        return None
    machine = machine or MachineModel()
    elem_bytes = etype.width // 8
    params = dynamic_params(elem_bytes, machine)
    lanes = machine.lanes(elem_bytes)
    if params.N_R % lanes:
        return None
    # (one thread: on two, GEBP's order ran 32x2048x2048 0.59x-0.63x numpy against GEPB's
    # 0.72x-0.73x; the team splits GEPB's loops better)
    short, short_rows = short_a_params(elem_bytes, machine, params) if threads == 1 \
        else (None, 0)
    loops = expand_matmul(con)          # the size check, the beta nest, the naive nest
    product = loops[0]
    b = Builder.before(product)
    m, n, k = product_extents(b, loops, con.loc)
    alpha = None
    if con.alpha is not None and not _is_one(con.alpha):
        alpha = _scalar(b, con.alpha, etype, con.loc)
    text = dynamic_gemm_source(tuple(str(t) for t in types), str(etype), params, lanes,
                               alpha is not None, threads, machine.stream_lanes(elem_bytes),
                               short, short_rows, dot_streams_past(machine) or 0,
                               accumulators_needed(machine))
    addresses = [_aligned_pointer_at_top_level(product, v, con.loc) for v in operands[:2]]
    new_ops = splice_template(b, text, "<dynamic gemm>",
                              [*operands, m, n, k, *addresses] + ([alpha] if alpha else []),
                              con.loc)
    product.erase()
    if remark is not None:
        remark(con.loc, f"{con.kind} with '?' operands: one GEMM for every size, BLIS's loops "
                        f"with run-time trip counts ({'GEPB' if params.l2_block == 'B' else 'GEBP'}"
                        f", M_C={params.M_C}, K_C={params.K_C}, N_C={params.N_C}, "
                        f"M_R={params.M_R}, N_R={params.N_R}, K_U={params.K_U}, the model's for "
                        f"{REPRESENTATIVE_SIZE}^3)"
                        + (f"; M below {short_rows} (N and K at least {SHORT_A_MIN_N_K}) at run "
                           f"time: GEBP, M_C={short.M_C}, K_C={short.K_C}, N_C={short.N_C}, "
                           f"M_R={short.M_R}, N_R={short.N_R}" if short is not None else "")
                        + "; edge tiles through a buffer; M or N = 1 at run time: the GEMV "
                          f"forms; every side at most {SMALL_ON_ONE_THREAD} at run time: A and B "
                          "read in place (not packed), on one thread"
                        + (f"; panels and tiles split over {threads} threads" if threads > 1
                           else ""))
    return new_ops
