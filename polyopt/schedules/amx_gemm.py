"""Mixed-precision GEMM on Intel's AMX tiles: ``C += A * B`` with A and B in bf16, f16 or
8-bit integers and C in f32 or i32, as :mod:`polyopt.schedules.lowp_gemm` builds it for the
vector dot engines, with the register tile in AMX's eight tile registers.

A tile holds up to 16 rows of 64 bytes.  ``tdpbf16ps`` (``amx.tile_mulf``) adds to a 16 x 16
f32 tile the product of a 16 x 32 bf16 tile of A (16 rows, 32 consecutive k) and a tile of B
holding 16 K-pairs (rows) of 16 columns, each column's pair adjacent; ``tdpb[su][su]d``
(``amx.tile_muli``) does the same with K-quads of bytes into i32, ``tdpfp16ps`` with f16.
With G k per group and TK = 64 bytes of k per row of A's tile:

* ``Ap[q, p * 16 + r, kk] = A[ic + q * 16 + r, pc + p * TK + kk]``: 16-row panels of A's
  block, each k-step a 16 x TK tile of 64-byte rows, the layout map
  ``(i, k) -> (i floordiv 16, (k floordiv TK) * 16 + i mod 16, k mod TK)``;
* where A's runs are not whole k-steps (a convolution's window rows: the 7x7 stem's 7 x 3 =
  21 bf16), ``Ap[q, r, k] = A[ic + q * 16 + r, pc + k]``: 16-row panels of whole rows of
  the block, copied by the runs' vector pieces, a k-step's tile read across a panel's rows
  with a stride of K_C;
* ``Bp[q, p, j * G + g] = B[pc + p * G + g, jc + q * 16 + j]``: 16-column panels of B's
  block in groups of G k (the dot engines' layout with 16 columns), a k-step the 16 rows
  ``p * 16 ..`` of a panel: ``(k, j) -> (j floordiv 16, k floordiv G, (j mod 16) * G +
  k mod G)``;

zero past M, N and K (K padded to whole k-steps).  The register tile is 32 x 32 of C: four
accumulator tiles (2 x 2) next to two tiles of A and two of B, the eight tile registers.
Tiles are not renamed, so the order is the one that keeps every tile busy: per k-step load
B0, B1, A0, multiply A0 B0 and A0 B1, load A1, multiply A1 B0 and A1 B1 (oneDNN's brgemm
order).  A tile inside C starts from C's tile (``amx.tile_load`` from C) and is stored back
once per K_C block; a tile on C's edge starts from zeros and is added through a buffer, as in
the dot-engine template; an epilogue runs on the buffer after the last K block.

MLIR counterpart: ``--convert-vector-to-amx`` (``vector.contract`` on the VNNI layouts to the
``amx`` dialect), then ``--convert-vector-to-llvm=enable-amx``.
"""

from __future__ import annotations

import math
from typing import Optional

from .blis_schedule import MachineModel
from .lowp_gemm import Engine, LowpGemmText, LowpParams, MixedTypes

#: Rows of a tile register, and its bytes per row.
TILE_ROWS = 16
TILE_BYTES = 64


def amx_engine(types: MixedTypes, features) -> Optional[Engine]:
    """The AMX engine for ``types`` when the CPU has it (``amx-tile`` and the type's
    multiplier: ``amx-bf16``, ``amx-int8``, ``amx-fp16``), else None.  Every sign
    combination of bytes has its instruction (``tdpbssd``, ``tdpbsud``, ``tdpbusd``,
    ``tdpbuud``)."""
    if "amx-tile" not in features:
        return None
    pair = (types.a, types.b)
    if pair == ("bf16", "bf16") and "amx-bf16" in features:
        return Engine("AMX tdpbf16ps", 2, "bf16", 16, amx=True)
    if pair == ("f16", "f16") and "amx-fp16" in features:
        return Engine("AMX-FP16 tdpfp16ps", 2, "f16", 16, amx=True)
    if pair == ("i8", "i8") and "amx-int8" in features:
        name = "tdpb" + "us"[not types.a_unsigned] + "us"[not types.b_unsigned] + "d"
        return Engine(f"AMX {name}", 4, "i8", 16, amx=True)
    return None


def amx_params(engine: Engine, machine: MachineModel, k: Optional[int] = None,
               a_run: Optional[int] = None) -> LowpParams:
    """The 32 x 32 register tile (2 x 2 accumulator tiles); K_C of :data:`AMX_K_C_BYTES`
    (whole k-steps; with a static ``k``, blocks of equal size), A's block (M_C x K_C) a
    quarter of L2, B's block a quarter of L3.

    Measured on an Emerald Rapids Xeon (2 MiB L2), one thread, 2048^3, alternating in one
    process (``experiments``-style grid of K_C x M_C): the first rule (K_C so that B's two
    micro-panels take three quarters of L1, A's block all of L2: 512 x 2048 for bf16) ran
    bf16 at 486 GFLOPS and u8 x s8 at 827 GOP/s; K_C 2048 x M_C 128 (bf16) 821, K_C 2048 x
    M_C 256 (u8) 1303, each the best of 12-15 points, both an A block of 512 KiB.  Fewer
    passes over C (its tiles are loaded and stored once per K_C block, from L3) and an A
    block that leaves L2 to B's micro-panels, as on the dot engines
    (:data:`~polyopt.schedules.lowp_gemm.K_C_BYTES`)."""
    esize = 1 if engine.packed == "i8" else 2
    step = TILE_BYTES // esize                        # k per tile row
    kc = max(step, AMX_K_C_BYTES // esize // step * step)
    # A copied by runs that are not whole k-steps (a convolution's window rows): blocks of
    # whole runs too, unless one block holds all of K
    unit = math.lcm(step, a_run) if a_run is not None and a_run > 1 else step
    if k is not None and -(-k // step) * step <= kc:
        kc = -(-k // step) * step
    elif k is not None:
        blocks = -(-k // kc)
        kc = -(-k // (blocks * unit)) * unit
    else:
        kc = max(unit, kc // unit * unit)
    mc = max(32, machine.l2_bytes // 4 // (kc * esize) // 32 * 32)
    nc = max(32, min(4096, machine.l3_bytes // 4 // (kc * esize)) // 32 * 32)
    return LowpParams(M_R=32, N_V=2, K_C=kc, M_C=mc, N_C=nc)


#: Bytes of k per row of A's block and column of B's (see :func:`amx_params`): bf16 K_C
#: 2048, i8 2048 or 4096 were within 6% of each other at 2048^3 (u8: 1303 / 1223 GOP/s).
AMX_K_C_BYTES = 4096


class AMXGemmText(LowpGemmText):
    """:func:`~polyopt.schedules.lowp_gemm.lowp_gemm_source` on AMX tiles (see the module
    docstring): A's panels are k-steps of 16 x 64-byte rows, the register tile is four
    accumulator tiles."""

    panel_group = 2       # a register tile covers two micro-panels of A and two of B

    def __init__(self, *args):
        super().__init__(*args)
        self.step = TILE_BYTES // (1 if self.pt == "i8" else 2)      # k per tile row
        self.a_panel = self.b_panel = TILE_ROWS
        # A's runs (a convolution's window rows: the stem's 7 x 3 channels) are not whole
        # k-steps: its panels hold each row's K_C elements one after the other, copied by
        # runs as on the dot engines, and a k-step's tile is read across them with a
        # stride of K_C (tileloadd's stride; the rows of a tile need not be adjacent)
        self.a_row_major = self.a_run > 1 and self.a_run % self.step != 0
        self.k_pad = self.step
        self.tbp = f"memref<{self.nc // TILE_ROWS}x{self.kc // self.g}x" \
                   f"{TILE_ROWS * self.g}x{self.pt}>"
        self.tap = self.a_buffer_type()
        # K is padded to whole k-steps: B's groups run to the step's end
        self.groups_of = (f"min affine_map<(d0)[s0] -> ({self.kc // self.g}, "
                          f"((s0 - d0 + {self.step - 1}) floordiv {self.step}) * "
                          f"{self.step // self.g})>(%pc)[%K]")
        self.steps_of = (f"min affine_map<(d0)[s0] -> ({self.kc // self.step}, "
                         f"(s0 - d0 + {self.step - 1}) floordiv {self.step})>(%pc)[%K]")
        self.acc_tile = f"!amx.tile<{TILE_ROWS}x{TILE_ROWS}x{self.ct}>"
        self.a_tile = f"!amx.tile<{TILE_ROWS}x{self.step}x{self.pt}>"
        self.b_tile = f"!amx.tile<{TILE_ROWS}x{TILE_ROWS * self.g}x{self.pt}>"

    def a_buffer_type(self) -> str:
        if self.a_row_major:
            return super().a_buffer_type()
        step = TILE_BYTES // (1 if self.pt == "i8" else 2)
        return f"memref<{self.mc // TILE_ROWS}x{self.kc // step * TILE_ROWS}x{step}x{self.pt}>"

    def constants(self, d: int) -> None:
        self.t.add(d, "%c0 = arith.constant 0 : index")

    def pack(self, d: int, which: str) -> None:
        if which == "B" or self.a_row_major:
            super().pack(d, which)
            return
        # A: each row of a k-step is TK consecutive k of a row of A, one vector copy where
        # the panel's 16 rows and the step's k are inside A and A's runs are whole k-steps,
        # else element by element (A's rows not contiguous, a_run 1: a transposed view)
        t, step, ta, tap = self.t, self.step, self.ta, self.tap
        row_v = f"vector<{step}x{self.pt}>"
        vectors = self.a_run % step == 0
        self.panels(d, self.mc // TILE_ROWS, TILE_ROWS, "%ic", "%M")
        t.add(d + 1, f"affine.for %p = 0 to {self.steps_of} {{")
        t.add(d + 2, f"affine.for %x = 0 to {TILE_ROWS} {{")
        if vectors:
            t.add(d + 3, f"affine.if affine_set<(d0, d1, d2, d3, d4)[s0, s1] : (s0 - d0 - d1 * "
                         f"{TILE_ROWS} - d2 - 1 >= 0, s1 - d3 - d4 * {step} - {step} >= 0)>"
                         f"(%ic, %q, %x, %pc, %p)[%M, %K] {{")
            v = t.fresh("v")
            t.add(d + 4, f"{v} = affine.vector_load %A[%ic + %q * {TILE_ROWS} + %x, %pc + %p * "
                         f"{step}] : {ta}, {row_v}")
            t.add(d + 4, f"affine.vector_store {v}, %Ap[%q, %p * {TILE_ROWS} + %x, 0] : {tap}, "
                         f"{row_v}")
            t.add(d + 3, "} else {")
        t.add(d + 4, f"affine.for %g = 0 to {step} {{")
        e, raw = t.fresh("e"), t.fresh("r")
        t.add(d + 5, f"{e} = affine.if affine_set<(d0, d1, d2, d3, d4, d5)[s0, s1] : (s0 - d0 - "
                     f"d1 * {TILE_ROWS} - d2 - 1 >= 0, s1 - d3 - d4 * {step} - d5 - 1 >= 0)>"
                     f"(%ic, %q, %x, %pc, %p, %g)[%M, %K] -> {self.pt} {{")
        t.add(d + 6, f"{raw} = affine.load %A[%ic + %q * {TILE_ROWS} + %x, %pc + %p * {step} "
                     f"+ %g] : {ta}")
        t.add(d + 6, f"affine.yield {raw} : {self.pt}")
        t.add(d + 5, "} else {")
        t.add(d + 6, f"affine.yield %zp : {self.pt}")
        t.add(d + 5, "}")
        t.add(d + 5, f"affine.store {e}, %Ap[%q, %p * {TILE_ROWS} + %x, %g] : {tap}")
        t.add(d + 4, "}")
        if vectors:
            t.add(d + 3, "}")
        t.add(d + 2, "}")
        t.add(d + 1, "}")
        t.add(d, "}")

    def index(self, d: int, expr: str, dims: str) -> str:
        """An ``affine.apply`` of ``expr`` over ``dims`` (the tile ops take index values)."""
        names = [x.strip() for x in dims.split(",")]
        params = ", ".join(f"d{q}" for q in range(len(names)))
        out = self.t.fresh("ix")
        self.t.add(d, f"{out} = affine.apply affine_map<({params}) -> ({expr})>({dims})")
        return out

    def multiply(self, d: int, acc: str, a: str, b: str) -> str:
        out = self.t.fresh("acc")
        types_ = f"{self.a_tile}, {self.b_tile}, {self.acc_tile}"
        if self.pt == "i8":
            za = " zext" if self.types.a_unsigned else ""
            zb = " zext" if self.types.b_unsigned else ""
            self.t.add(d, f"{out} = amx.tile_muli {a}{za}, {b}{zb}, {acc} : {types_}")
        else:
            self.t.add(d, f"{out} = amx.tile_mulf {a}, {b}, {acc} : {types_}")
        return out

    def kernel(self, d: int, inits: list[str]) -> list[str]:
        """The k-steps of the tile at (ic + ir, jc + jr) on four accumulator tiles starting
        from ``inits`` (C00, C01, C10, C11)."""
        t = self.t
        qa = [self.index(d, f"d0 floordiv {TILE_ROWS} + {h}", "%ir") for h in range(2)]
        qb = [self.index(d, f"d0 floordiv {TILE_ROWS} + {h}", "%jr") for h in range(2)]
        names = [t.fresh("x") for _ in range(4)]
        res = t.fresh("r")
        types_ = ", ".join([self.acc_tile] * 4)
        init_text = ", ".join(f"{n} = {v}" for n, v in zip(names, inits))
        t.add(d, f"{res}:4 = affine.for %p = 0 to {self.steps_of} iter_args({init_text}) -> "
                 f"({types_}) {{")
        row = self.index(d + 1, f"d0 * {TILE_ROWS}", "%p")
        a_at = f"%c0, {self.index(d + 1, f'd0 * {self.step}', '%p')}" if self.a_row_major \
            else f"{row}, %c0"

        def load(buf: str, q: str, at: str, ty: str, tile_ty: str) -> str:
            v = t.fresh("tl")
            t.add(d + 1, f"{v} = amx.tile_load {buf}[{q}, {at}] : {ty} into {tile_ty}")
            return v

        b0 = load("%Bp", qb[0], f"{row}, %c0", self.tbp, self.b_tile)
        b1 = load("%Bp", qb[1], f"{row}, %c0", self.tbp, self.b_tile)
        a0 = load("%Ap", qa[0], a_at, self.tap, self.a_tile)
        out = [self.multiply(d + 1, names[0], a0, b0), self.multiply(d + 1, names[1], a0, b1)]
        a1 = load("%Ap", qa[1], a_at, self.tap, self.a_tile)
        out += [self.multiply(d + 1, names[2], a1, b0), self.multiply(d + 1, names[3], a1, b1)]
        t.add(d + 1, f"affine.yield {', '.join(out)} : {types_}")
        t.add(d, "}")
        return [f"{res}#{q}" for q in range(4)]

    def store_tiles(self, d: int, accs: list[str], buf: str, ty: str,
                    corners: list[tuple[str, str]]) -> None:
        for acc, (r, c) in zip(accs, corners):
            self.t.add(d, f"amx.tile_store {buf}[{r}, {c}], {acc} : {ty}, {self.acc_tile}")

    def tile(self, d: int) -> None:
        t = self.t
        t.add(d, f"affine.if {self.inside_c()} {{")
        row0 = self.index(d + 1, "d0 + d1", "%ic, %ir")
        col0 = self.index(d + 1, "d0 + d1", "%jc, %jr")
        in_c = [(row0 if r is None else r, col0 if c is None else c)
                for r, c in self._offsets(d + 1, row0, col0)]
        if self.c_zero:     # C is zeros before the first block: the tiles start from zeros
            t.add(d + 1, f"affine.if {self.first_block} {{")
            self.tile_in_c(d + 2, self.kernel(d + 2, self.zero_tiles(d + 2)), in_c)
            t.add(d + 1, "} else {")
            self.tile_in_c(d + 2, self.kernel(d + 2, self.c_tiles(d + 2, in_c)), in_c)
            t.add(d + 1, "}")
        else:
            self.tile_in_c(d + 1, self.kernel(d + 1, self.c_tiles(d + 1, in_c)), in_c)
        t.add(d, "} else {")
        accs = self.kernel(d + 1, self.zero_tiles(d + 1))
        self.store_tiles(d + 1, accs, "%tmp", self.ttmp, self._tmp_corners(d + 1))
        self.add_edge_tile(d + 1)
        t.add(d, "}")

    def c_tiles(self, d: int, in_c: list[tuple[str, str]]) -> list[str]:
        """The four accumulator tiles loaded from C at ``in_c``."""
        tiles = []
        for r, c in in_c:
            v = self.t.fresh("ct")
            self.t.add(d, f"{v} = amx.tile_load %C[{r}, {c}] : {self.tc} into {self.acc_tile}")
            tiles.append(v)
        return tiles

    def zero_tiles(self, d: int) -> list[str]:
        """Four zero accumulator tiles, one ``tile_zero`` each: a tile shared by four would
        be copied through memory (there is no move between tile registers)."""
        zeros = [self.t.fresh("tz") for _ in range(4)]
        for z in zeros:
            self.t.add(d, f"{z} = amx.tile_zero : {self.acc_tile}")
        return zeros

    def tile_in_c(self, d: int, accs: list[str], in_c: list[tuple[str, str]]) -> None:
        """The accumulator tiles ``accs`` of a register tile inside C stored to C at
        ``in_c``; after the last K block through the epilogue when there is one."""
        t, tc, w, vt = self.t, self.tc, self.w, self.vt
        if self.epilogue is None:
            self.store_tiles(d, accs, "%C", tc, in_c)
            return
        # C's tile is final after the last K block: the epilogue, then store
        t.add(d, f"affine.if {self.last_block} {{")
        self.store_tiles(d + 1, accs, "%tmp", self.ttmp, self._tmp_corners(d + 1))
        t.add(d + 1, f"affine.for %i = 0 to {self.mr} {{")
        for v in range(self.nv):
            s = t.fresh("s")
            t.add(d + 2, f"{s} = affine.vector_load %tmp[%i, {v * w}] : {self.ttmp}, {vt}")
            self.epilogue_store(d + 2, s, "%ic + %ir + %i", f"%jc + %jr + {v * w}")
            if self.out != "%C":
                t.add(d + 2, f"affine.vector_store {s}, %C[%ic + %ir + %i, %jc + %jr + "
                             f"{v * w}] : {tc}, {vt}")
        t.add(d + 1, "}")
        t.add(d, "} else {")
        self.store_tiles(d + 1, accs, "%C", tc, in_c)
        t.add(d, "}")

    def _offsets(self, d: int, row0: str, col0: str) -> list[tuple]:
        """The four tiles' (row, column) in C from the register tile's corner: None where it
        is the corner's."""
        r1 = self.index(d, f"d0 + {TILE_ROWS}", row0)
        c1 = self.index(d, f"d0 + {TILE_ROWS}", col0)
        return [(None, None), (None, c1), (r1, None), (r1, c1)]

    def _tmp_corners(self, d: int) -> list[tuple[str, str]]:
        c16 = self.t.fresh("c16")
        self.t.add(d, f"{c16} = arith.constant {TILE_ROWS} : index")
        return [("%c0", "%c0"), ("%c0", c16), (c16, "%c0"), (c16, c16)]
