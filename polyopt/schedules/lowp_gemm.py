"""Mixed-precision GEMM on the CPU's dot-product engines: ``C += A * B`` with A and B in bf16,
f16 or 8-bit integers and C in f32 or i32 (what ``linalg.matmul`` computes with its operands
cast to C's type), as BLIS's five loops with run-time trip counts.

The engine is chosen from the target's features, never its name:

* **AMX** (``amx-tile`` with ``amx-bf16``, ``amx-int8`` or ``amx-fp16``): the register tile is
  in tile registers, :mod:`polyopt.schedules.amx_gemm`;
* **AVX512-BF16** (bf16 x bf16 -> f32): ``vdpbf16ps`` (``x86vector.avx512.dot``) adds two
  products per f32 lane, ``a[2i] * b[2i] + a[2i+1] * b[2i+1]``: A and B are packed in K-pairs;
* **AVX512-VNNI** (8-bit -> i32): ``vpdpbusd`` (``llvm.call_intrinsic
  "llvm.x86.avx512.vpdpbusd.512"``) adds four products of an unsigned byte of A and a signed
  byte of B per i32 lane: A and B are packed in K-quads.  A signed A is offset by 128 at
  packing (``a + 128`` is its byte ``xor 0x80`` read unsigned) and the offset's share,
  ``128 * sum_k B[k, j]``, is taken off through the accumulators' start value, as oneDNN and
  FBGEMM do; an unsigned B has no VNNI form and takes the next path;
* **none of these** (or f16, which no engine here accumulates in f32 short of AMX-FP16): A
  and B are converted to C's type at packing and the register tile is the plain f32 FMA or
  i32 multiply-add one (with a remark naming the missing engine).

The packed buffers hold groups of G consecutive k (G = 2 for bf16, 4 for bytes, 1
otherwise), the group of a row of A (a column of B) contiguous, so that one 32-bit broadcast
of A and one vector load of B feed a dot instruction:

* ``Ap[q, p, r * G + g] = A[ic + q * M_R + r, pc + p * G + g]``, the layout map
  ``(i, k) -> (i floordiv M_R, k floordiv G, (i mod M_R) * G + k mod G)`` of A's block;
* ``Bp[q, p, j * G + g] = B[pc + p * G + g, jc + q * N_R + j]``, the layout map
  ``(k, j) -> (j floordiv N_R, k floordiv G, (j mod N_R) * G + k mod G)`` of B's block;

with zeros past M, N and K, so that every tile is a full M_R x N_R tile and every group a full
group (zeros add nothing).  A tile inside C is added to C with vector loads and stores; a tile
on C's edge goes through a small buffer (BLIS's edge case), as in
:mod:`polyopt.schedules.dynamic_gemm`.

MLIR counterpart: ``transform.structured.pack`` to the VNNI layouts, then
``--convert-vector-to-llvm=enable-x86vector`` for the dot instructions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..affine.builder import Builder
from .blis_schedule import MachineModel
from .gemv import MlirLines
from .register_tile import C_TILE_LEAD


@dataclass(frozen=True)
class MixedTypes:
    """The element types of a contraction whose A and B are narrower than C, and how the
    integers extend (``linalg.matmul``'s ``cast``)."""

    a: str
    b: str
    c: str
    a_unsigned: bool = False
    b_unsigned: bool = False

    def __str__(self) -> str:
        def name(t, u):
            return ("u" if u else "s") + t[1:] if t.startswith("i") else t
        return f"{name(self.a, self.a_unsigned)} x {name(self.b, self.b_unsigned)} -> {self.c}"


def mixed_types_of(con) -> MixedTypes:
    a, b, c = (str(v.type.element_type) for v in con.operands)
    return MixedTypes(a, b, c, con.a_unsigned, con.b_unsigned)


@dataclass(frozen=True)
class Engine:
    """How the register tile multiplies: ``name`` for remarks and reports; ``group`` k per
    packed group; ``packed`` the packed buffers' element type; ``lanes`` of C's type per
    accumulator vector; ``offset_a``: A is signed bytes offset by 128 (VNNI); ``amx``: the
    register tile is AMX tiles (:mod:`polyopt.schedules.amx_gemm`)."""

    name: str
    group: int
    packed: str
    lanes: int
    offset_a: bool = False
    amx: bool = False

    @property
    def is_dot(self) -> bool:
        return self.group > 1


def choose_engine(types: MixedTypes, machine: MachineModel) -> tuple[Engine, Optional[str]]:
    """The fastest engine the machine has for ``types``, and, when it is the plain path, why
    (the missing feature, a phrase) for a remark."""
    from .amx_gemm import amx_engine
    features = machine.features
    amx = amx_engine(types, features)
    if amx is not None:
        return amx, None
    wide = machine.vector_bits >= 512
    if (types.a, types.b) == ("bf16", "bf16"):
        if wide and "avx512bf16" in features:
            return Engine("AVX512-BF16 vdpbf16ps", 2, "bf16", 16), None
        missing = "this CPU has no avx512bf16"
    elif (types.a, types.b) == ("i8", "i8"):
        if wide and "avx512vnni" in features and not types.b_unsigned:
            return Engine("AVX512-VNNI vpdpbusd", 4, "i8", 16,
                          offset_a=not types.a_unsigned), None
        missing = ("this CPU has no avx512vnni" if not types.b_unsigned else
                   "vpdpbusd takes a signed B")
    else:
        missing = "this CPU has no amx-fp16 to multiply f16 into f32"
    lanes = machine.lanes(4)
    plain = "f32 FMA" if types.c == "f32" else "i32 multiply-add"
    return Engine(f"{plain} on operands converted at packing", 1, types.c, lanes), missing


@dataclass(frozen=True)
class LowpParams:
    """The register tile (M_R rows x N_V vectors) and the blocks (in elements of k, rows of
    A, columns of B)."""

    M_R: int
    N_V: int
    K_C: int
    M_C: int
    N_C: int


#: Bytes of k per packed row of A and column of B in a block.  C's tile is read and
#: written once per K_C block from where C sits (L3 or memory): at 2048^3 on Zen 4, K_C of
#: 256 bytes ran bf16 at 198 GFLOPS, 1 KiB at 211-214, 2 KiB at 214-218 (i8: 415-419 ->
#: 433 GOP/s); on Zen 5, bf16 with 4 KiB (all of K = 2048 in one block, A's block 252 rows)
#: 1.03x-1.04x 2 KiB (two passes over C's 16 MiB, 510 rows) in three alternating runs.  B's
#: micro-panel then lives in L2, whose bandwidth covers one vector load per M_R dot
#: instructions.
K_C_BYTES = 4096
#: Rows of A's block on one thread: a few micro-panels, not a block that fills L2.  B's
#: micro-panel (K_C x N_R, 256 KiB for bf16 at K_C 2048) is read from L2 by every tile of the
#: block, and A's block has to share L2 with it; a small block also walks C's tiles along
#: C's rows.  Zen 5, one thread, alternating with torch in one process, A's block of 252 rows
#: (L2's 1 MiB) -> 24-36 rows: bf16 2048^3 1.04x-1.06x, s8 1.04x-1.07x, f16 (converted)
#: 1.06x; ResNet-50 conv2_x's implicit GEMM in bf16 (3136x64x576) 1.02x; flat from 12 to 48
#: rows.  On a team the block keeps filling L2: a block is a fork and a join for its packing
#: and its tiles (3136x64x576 on two threads: 906 rows 825 GFLOPS, 24 rows 548).  Not yet
#: measured on Zen 4, where blocks of 252 and 510 rows were the ones compared (K_C of 2 KiB).
ONE_THREAD_A_ROWS = 32
#: Rows of B per chunk of its packing (:meth:`LowpGemmText.b_whole_panels`): the chunk's
#: rows are read along, panel after panel.  Zen 5, one thread, against the panels one after
#: the other (each reading its columns of every row of the block, a line per row and page):
#: u8 32x4096x4096 32 rows 1.63x, 64 rows 1.34x, 8 rows 1.07x 32 rows' (1.74x); 8x4096x4096
#: 8 rows 2.5x; bf16 32x4096x4096 1.27x, 64x2048x2048 1.12x; 2048^3 the same (B is packed
#: once for 2048 rows of A).
B_CHUNK_ROWS = 8
#: The dot engines' A panels are row-major (each row's K_C elements contiguous), copied from A
#: (or a convolution's input, whose channels are contiguous) by vectors of this many bytes.
A_ROW_VECTOR_BYTES = 64


def packed_bytes(t: str) -> int:
    """Bytes of an element of the packed type ``t``."""
    return {"i8": 1, "bf16": 2, "f16": 2}.get(t, 4)


def run_pieces(run: int, widest: int) -> list[tuple[int, int]]:
    """``run`` as vector copies ``(offset, length)`` of powers of two of at most ``widest``:
    the largest that fit, and the rest by one vector ending at the run's end, over the tail
    of the one before (those elements are copied twice, the same values): 21 -> 16 at 0 and
    8 at 13, two copies instead of 16 + 4 + 1 (Emerald Rapids, the stem in bf16 on AMX,
    whose packing held a fifth to a quarter of the samples: 1.08x -> 1.40x torch)."""
    pieces, at = [], 0
    while at < run:
        n = min(widest, 1 << ((run - at).bit_length() - 1))
        pieces.append((at, n))
        at += n
        rest = run - at
        if 0 < rest < n:
            last = 1 << (rest - 1).bit_length()
            pieces.append((run - last, last))
            break
    return pieces


#: The time of a register tile of M_R rows per row, relative to the widest (six rows x four
#: vectors on 32 registers): fewer rows load B's vectors for fewer dot instructions.  Zen 5,
#: one thread, bf16 2048^3 (no rows cut): 5 rows 0.994x-0.995x the speed of 6, 4 rows 0.982x.
ROW_COST = {6: 1.0, 5: 1.006, 4: 1.018}


def register_rows(widest: int, m: Optional[int]) -> int:
    """M_R for ``m`` rows: the widest tile, or a narrower one where it cuts fewer rows from
    C's last tile than it loses per row (:data:`ROW_COST`): 49 rows (ResNet-50's conv5_x) are
    nine tiles of 6 (54 rows computed) or ten of 5 (50): bf16 49x512x4608 on Zen 5 0.967x ->
    1.028x torch.mm; 25x1024x1024 0.98x -> 1.09x."""
    if m is None or widest != 6:
        return widest
    return min(ROW_COST, key=lambda r: (-(-m // r) * r * ROW_COST[r], -r))


def lowp_params(engine: Engine, machine: MachineModel, k: Optional[int] = None,
                a_run: Optional[int] = None, threads: int = 1,
                m: Optional[int] = None) -> LowpParams:
    """The register tile uses most vector registers (M_R x N_V accumulators, N_V loads of B,
    one broadcast of A); K_C is :data:`K_C_BYTES` of k (with a static ``k``: one block up to
    a quarter more, else blocks of equal size, so that a convolution's K = 576 is not a block
    of 512 and one of 64); A's block (M_C x K_C) is :data:`ONE_THREAD_A_ROWS` rows on one
    thread, on a team it fills L2 (Zen 4, K_C of 2 KiB: M_C 510 ran i8 at 433 GOP/s, 252 at
    423-426); B's block (K_C x N_C) fills a quarter of L3.  With a static ``m``, M_R by
    :func:`register_rows`.  AMX has its own
    (:func:`~polyopt.schedules.amx_gemm.amx_params`)."""
    if engine.amx:
        from .amx_gemm import amx_params
        return amx_params(engine, machine, k, a_run)
    regs = machine.num_vector_registers
    nv = 4 if regs >= 32 else 2
    mr = register_rows(max(1, min(6, (regs - nv - 1) // nv)), m)
    nr = nv * engine.lanes
    esize = packed_bytes(engine.packed)
    kc = K_C_BYTES // esize
    g = engine.group
    # A's rows are copied by runs (``a_run`` elements, else 64 bytes) and packed in groups:
    # K_C is a multiple of both
    step = math.lcm(a_run, g) if a_run is not None and a_run > 1 else A_ROW_VECTOR_BYTES // esize
    if k is not None:
        if k <= kc * 5 // 4:
            kc = -(-k // step) * step
        else:
            blocks = -(-k // kc)
            unit = math.lcm(step, 4 * g)
            kc = -(-k // (blocks * unit)) * unit
    else:
        kc = max(step, kc // step * step)
    rows = machine.l2_bytes // (kc * esize) if threads > 1 else ONE_THREAD_A_ROWS
    mc = max(mr, rows // mr * mr)
    nc = max(nr, min(4096, machine.l3_bytes // 4 // (kc * esize)) // nr * nr)
    return LowpParams(mr, nv, kc, mc, nc)


def lowp_gemm_source(operand_types: tuple[str, str, str], types: MixedTypes, engine: Engine,
                     p: LowpParams, threads: int = 1, split_rows: bool = False,
                     epilogue=None, a_run: Optional[int] = None, direct_a: bool = False,
                     b_rows_contiguous: bool = True, c_zero: bool = False) -> str:
    """``func.func @gemm(%A, %B, %C, %M, %N, %K)``: ``C += A * B`` (operands cast to C's
    type) for the run-time sizes M, N, K on ``engine``; see the module docstring.  With
    ``threads > 1`` the packing loops over micro-panels and the loop over N_R-column tiles
    (with ``split_rows``, over M_R-row tiles) are ``affine.parallel`` (each thread its panels
    and its tiles, with its own edge buffer; every element of C summed in the same order: the
    same bits at every thread count).  An ``epilogue``
    (:class:`~polyopt.schedules.epilogue.Epilogue`) is applied to C's tile after the last K
    block, before its store; the function then takes its memrefs and scalars after ``%K``
    (``%epi0``, ...) and its output (``%out``) when that is not C.  ``a_run``: the runs in
    which A's rows are copied, aligned from column 0 (default 64 bytes; a convolution's
    im2col copies its window runs, 21 elements in the 7x7 stem of 3 channels; 1: element by
    element), K_C a multiple of it.  ``direct_a``: the register tile reads A's rows where A
    is (:func:`reads_a_in_place`); only a panel cut by M is packed.  ``b_rows_contiguous``
    False (a transposed B): B is packed element by element.  ``c_zero``: C holds zeros
    before the product (a zero fill the caller has taken out, see
    :mod:`~polyopt.schedules.zero_init`): the first K block adds its products to zeros
    instead of loading C."""
    if engine.amx:
        from .amx_gemm import AMXGemmText
        writer = AMXGemmText
    else:
        writer = LowpGemmText
    text = writer(operand_types, types, engine, p, threads, split_rows, epilogue, a_run)
    text.direct_a = direct_a and not engine.amx
    text.b_rows_contiguous = b_rows_contiguous
    text.c_zero = c_zero
    return text.source()


class LowpGemmText:
    """The text of :func:`lowp_gemm_source`: BLIS's loops, the packing into groups of k, and
    the register tile of dot instructions (vector registers).  The AMX template
    (:class:`~polyopt.schedules.amx_gemm.AMXGemmText`) shares the loops, the packing of B
    and the edge code and replaces A's packing and the tile."""

    def __init__(self, operand_types, types: MixedTypes, engine: Engine, p: LowpParams,
                 threads: int, split_rows: bool, epilogue, a_run: Optional[int] = None):
        self.ta, self.tb, self.tc = operand_types
        self.types, self.engine, self.epilogue = types, engine, epilogue
        self.g, self.w, self.mr, self.nv = engine.group, engine.lanes, p.M_R, p.N_V
        self.nr, self.kc, self.mc, self.nc = p.N_V * engine.lanes, p.K_C, p.M_C, p.N_C
        # rows of A's micro-panels and columns of B's: the register tile's, here
        self.a_panel, self.b_panel = self.mr, self.nr
        self.ct, self.pt = types.c, engine.packed
        # elements of A per copied run: 64 bytes of the packed type unless told
        self.a_run = a_run or A_ROW_VECTOR_BYTES // packed_bytes(self.pt)
        self.is_float = self.ct == "f32"
        self.vt = f"vector<{self.w}x{self.ct}>"                    # an accumulator
        self.pvt = f"vector<{self.w * self.g}x{self.pt}>"          # a vector of B's groups
        self.tbp = f"memref<{self.nc // self.b_panel}x{self.kc // self.g}x" \
                   f"{self.b_panel * self.g}x{self.pt}>"
        # A's panels hold each row's K_C elements contiguously (a row's group is one
        # broadcast, whichever row): packed by vector copies of A's rows
        self.a_row_major = True
        # A's rows are packed, zeros past K, up to a whole multiple of this many k
        self.k_pad = self.g
        # A read where it is, its panels unpacked but for one cut by M (reads_a_in_place)
        self.direct_a = False
        # B's rows are contiguous: its groups are packed by vector loads of its rows
        self.b_rows_contiguous = True
        # C is zero before the product: the first K block does not read it
        self.c_zero = False
        self.first_block = "affine_set<(d0) : (d0 == 0)>(%pc)"
        self.tap = self.a_buffer_type()
        self.ttmp = f"memref<{self.mr}x{self.nr}x{self.ct}>"
        self.zero_c = "0.000000e+00" if self.is_float else "0"
        self.zero_p = "0.000000e+00" if self.pt in ("bf16", "f16", "f32") else "0"
        self.add_op = "arith.addf" if self.is_float else "arith.addi"
        self.par = threads > 1
        self.split_rows = split_rows
        self.t = MlirLines()
        self.args: dict = {}
        self.extra = ""
        self.out, self.tout, self.tout_e = "%C", self.tc, self.ct
        if epilogue is not None:
            for q, v in enumerate(epilogue.externals):
                self.args[id(v)] = f"%epi{q}"
                self.extra += f", %epi{q}: {epilogue.view(v).type}"
            if not epilogue.stores_to_c:
                self.out, self.tout = "%out", str(epilogue.output.type)
                self.tout_e = str(epilogue.output.type.element_type)
                self.extra += f", %out: {self.tout}"
        self.last_block = f"affine_set<(d0)[s0] : (d0 + {self.kc} - s0 >= 0)>(%pc)[%K]"
        self.whole_block = f"affine_set<(d0)[s0] : (s0 - d0 - {self.kc} >= 0)>(%pc)[%K]"
        self.groups_of = f"min affine_map<(d0)[s0] -> ({self.kc // self.g}, " \
                         f"(s0 - d0 + {self.g - 1}) floordiv {self.g})>(%pc)[%K]"

    def a_buffer_type(self) -> str:
        if self.a_row_major:
            return f"memref<{self.mc // self.a_panel}x{self.a_panel}x{self.kc}x{self.pt}>"
        return f"memref<{self.mc // self.a_panel}x{self.kc // self.g}x" \
               f"{self.a_panel * self.g}x{self.pt}>"

    # -- the function ---------------------------------------------------------------------

    def source(self) -> str:
        t, engine = self.t, self.engine
        t.add(0, f"func.func @gemm(%A: {self.ta}, %B: {self.tb}, %C: {self.tc}, %M: index, "
                 f"%N: index, %K: index{self.extra}) {{")
        t.add(1, f"%zp = arith.constant {self.zero_p} : {self.pt}")
        if self.c_zero:
            t.add(1, f"%zc = arith.constant {self.zero_c} : {self.ct}")
            t.add(1, f"%zcv = arith.constant dense<{self.zero_c}> : {self.vt}")
        self.constants(1)
        t.add(1, f"%Ap = memref.alloc() {{alignment = 64 : i64}} : {self.tap}")
        t.add(1, f"%Bp = memref.alloc() {{alignment = 64 : i64}} : {self.tbp}")
        if not self.par:
            t.add(1, f"%tmp = memref.alloca() {{alignment = 64 : i64}} : {self.ttmp}")
        if engine.offset_a:
            t.add(1, "%flip = arith.constant -128 : i8")
            t.add(1, f"%Bs = memref.alloc() {{alignment = 64 : i64}} : memref<{self.nc}xi32>")
        t.add(1, f"affine.for %jc = 0 to %N step {self.nc} {{")
        t.add(2, f"affine.for %pc = 0 to %K step {self.kc} {{")
        self.pack(3, "B")
        if engine.offset_a:
            self.column_sums(3)
        t.add(3, f"affine.for %ic = 0 to %M step {self.mc} {{")
        self.pack(4, "A")
        self.tile_loops(4)
        t.add(3, "}")
        t.add(2, "}")
        t.add(1, "}")
        t.add(1, f"memref.dealloc %Ap : {self.tap}")
        t.add(1, f"memref.dealloc %Bp : {self.tbp}")
        if engine.offset_a:
            t.add(1, f"memref.dealloc %Bs : memref<{self.nc}xi32>")
        t.add(1, "return")
        t.add(0, "}")
        return "\n".join(t.lines) + "\n"

    def constants(self, d: int) -> None:
        self.t.add(d, f"%zv = arith.constant dense<{self.zero_c}> : {self.vt}")

    def tile_loops(self, d: int) -> None:
        """The loops over the register tiles of the blocks, the one split over the threads
        outermost: N_R-column panels, or with few of them (a convolution's 64 filters: one
        panel) M_R-row tiles."""
        t, mr, nr, mc, nc = self.t, self.mr, self.nr, self.mc, self.nc
        bound = {"jr": f"min affine_map<(d0)[s0] -> ({nc}, s0 - d0)>(%jc)[%N] step {nr}",
                 "ir": f"min affine_map<(d0)[s0] -> ({mc}, s0 - d0)>(%ic)[%M] step {mr}"}
        outer = "ir" if self.par and self.split_rows else "jr"
        inner = "jr" if outer == "ir" else "ir"
        if self.par:
            extent = f"(min({nc}, symbol(%N) - %jc)) step ({nr})" if outer == "jr" else \
                f"(min({mc}, symbol(%M) - %ic)) step ({mr})"
            t.add(d, f"affine.parallel (%{outer}) = (0) to {extent} {{")
            t.add(d + 1, f"%tmp = memref.alloca() {{alignment = 64 : i64}} : {self.ttmp}")
        else:
            t.add(d, f"affine.for %{outer} = 0 to {bound[outer]} {{")
        t.add(d + 1, f"affine.for %{inner} = 0 to {bound[inner]} {{")
        self.tile(d + 2)
        t.add(d + 1, "}")
        t.add(d, "}")

    # -- packing --------------------------------------------------------------------------

    def convert(self, d: int, value: str, src: str, unsigned: bool) -> str:
        """``value`` (an element of A or B) as the packed buffers hold it."""
        t, pt = self.t, self.pt
        if src == pt:
            return value
        out = t.fresh("cv")
        if src.startswith("i"):
            t.add(d, f"{out} = arith.{'extui' if unsigned else 'extsi'} {value} : {src} to {pt}")
        else:
            t.add(d, f"{out} = arith.extf {value} : {src} to {pt}")
        return out

    def operand(self, which: str):
        """(packed buffer, its type, source, source type, first row/column, panel width,
        size, element at (x, k)) of A or B."""
        if which == "A":
            def at(x, k):
                return f"%A[%ic + %q * {self.a_panel} + {x}, %pc + {k}]"
            return "%Ap", self.tap, self.ta, "%ic", self.a_panel, "%M", at

        def at(x, k):
            return f"%B[%pc + {k}, %jc + %q * {self.b_panel} + {x}]"
        return "%Bp", self.tbp, self.tb, "%jc", self.b_panel, "%N", at

    def pack(self, d: int, which: str) -> None:
        """A's M_C x K_C block (``which`` = "A") or B's K_C x N_C block into micro-panels of
        groups; the whole panels with straight copies, the rest element by element with
        zeros past the matrix."""
        if which == "A" and self.a_row_major:
            self.pack_a_rows(d)
            return
        t, g, kc = self.t, self.g, self.kc
        buf, bt, st, r_of, tile, size, at = self.operand(which)
        block = self.mc if which == "A" else self.nc
        interleaved = which == "B" and g > 1 and self.types.b == self.pt and \
            self.b_rows_contiguous
        if interleaved:
            self.b_whole_panels(d, at, st)
        self.panels(d, block // tile, tile, r_of, size)
        # whole panel and whole groups: M_R rows (N_R columns) x G k, a constant box
        t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 * {tile} - {tile} "
                     f">= 0)>({r_of}, %q)[{size}] {{")
        if not interleaved:
            t.add(d + 2, f"affine.for %p = 0 to min affine_map<(d0)[s0] -> ({kc // g}, "
                         f"(s0 - d0) floordiv {g})>(%pc)[%K] {{")
            t.add(d + 3, f"affine.for %x = 0 to {tile} {{")
            for gg in range(g):
                v = t.fresh("v")
                t.add(d + 4, f"{v} = affine.load {at('%x', f'%p * {g} + {gg}')} : {st}")
                t.add(d + 4, f"affine.store {self.packed_value(d + 4, v, which)}, "
                             f"{buf}[%q, %p, %x * {g} + {gg}] : {bt}")
            t.add(d + 3, "}")
            t.add(d + 2, "}")
        if g > 1:     # the last group of the block, cut by K
            t.add(d + 2, f"affine.for %p = affine_map<(d0)[s0] -> ((s0 - d0) floordiv {g})>"
                         f"(%pc)[%K] to {self.groups_of} {{")
            self.edge_group(d + 3, which, full_rows=True)
            t.add(d + 2, "}")
        t.add(d + 1, "} else {")
        t.add(d + 2, f"affine.for %p = 0 to {self.groups_of} {{")
        self.edge_group(d + 3, which, full_rows=False)
        t.add(d + 2, "}")
        t.add(d + 1, "}")
        t.add(d, "}")

    def b_whole_panels(self, d: int, at, st: str) -> None:
        """The whole groups of B's whole panels, by chunks of :data:`B_CHUNK_ROWS` rows of B
        across all the panels (on a team, the chunks split over the threads): a panel's
        groups, one after the other, read the panel's columns of every row of the block, a
        line of a different page per row (Zen 5, u8 32x4096x4096: 63% of the samples were in
        B's packing)."""
        t, g, kc, tile, nc = self.t, self.g, self.kc, self.b_panel, self.nc
        chunk = max(1, B_CHUNK_ROWS // g)
        if self.par:
            t.add(d, f"affine.parallel (%p0) = (0) to (min({kc // g}, (symbol(%K) - %pc) "
                     f"floordiv {g})) step ({chunk}) {{")
        else:
            t.add(d, f"affine.for %p0 = 0 to min affine_map<(d0)[s0] -> ({kc // g}, "
                     f"(s0 - d0) floordiv {g})>(%pc)[%K] step {chunk} {{")
        t.add(d + 1, f"affine.for %q = 0 to min affine_map<(d0)[s0] -> ({nc // tile}, "
                     f"(s0 - d0) floordiv {tile})>(%jc)[%N] {{")
        t.add(d + 2, f"affine.for %p = affine_map<(d0) -> (d0)>(%p0) to min affine_map<(d0, d1)"
                     f"[s0] -> (d0 + {chunk}, {kc // g}, (s0 - d1) floordiv {g})>(%p0, %pc)[%K] "
                     f"{{")
        self.interleave_rows(d + 3, at, st)
        t.add(d + 2, "}")
        t.add(d + 1, "}")
        t.add(d, "}")

    def pack_a_rows(self, d: int) -> None:
        """A's M_C x K_C block into row-major M_R-row panels ``Ap[q, x, k]``: in a panel
        inside A, each row by vector copies of its runs (``a_run`` > 1), then its last
        elements one by one, zero past K up to a whole group; a panel cut by M element by
        element, zero past M."""
        t, g, kc, mr = self.t, self.k_pad, self.kc, self.a_panel
        v = self.a_run
        row = f"%ic + %q * {mr} + %x"
        k_end = f"min affine_map<(d0)[s0] -> ({kc}, ((s0 - d0 + {g - 1}) floordiv {g}) * {g})>" \
                f"(%pc)[%K]"
        self.panels(d, self.mc // mr, mr, "%ic", "%M")
        if self.direct_a:       # whole panels are read in A itself
            t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (d0 + d1 * {mr} - s0 + {mr} - 1 "
                         f">= 0)>(%ic, %q)[%M] {{")
            self.a_cut_panel(d + 2, row, k_end)
            t.add(d + 1, "}")
            t.add(d, "}")
            return
        t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 * {mr} - {mr} >= 0)>"
                     f"(%ic, %q)[%M] {{")
        t.add(d + 2, f"affine.for %x = 0 to {mr} {{")
        start = "0"
        if v > 1:
            self.a_row_vectors(d + 3, row, v)
            # (K_C is a multiple of v: past the block's end the loop is empty)
            start = f"affine_map<(d0)[s0] -> (((s0 - d0) floordiv {v}) * {v})>(%pc)[%K]"
        t.add(d + 3, f"affine.for %k = {start} to {k_end} {{")
        self.a_element(d + 4, row, rows_ok="")
        t.add(d + 3, "}")
        t.add(d + 2, "}")
        t.add(d + 1, "} else {")
        self.a_cut_panel(d + 2, row, k_end)
        t.add(d + 1, "}")
        t.add(d, "}")

    def a_cut_panel(self, d: int, row: str, k_end: str) -> None:
        """A panel cut by M, element by element, zero past M (and past K up to a group)."""
        t, mr = self.t, self.a_panel
        t.add(d, f"affine.for %x = 0 to {mr} {{")
        t.add(d + 1, f"affine.for %k = 0 to {k_end} {{")
        self.a_element(d + 2, row, rows_ok=f"s0 - d0 - d1 * {mr} - d2 - 1 >= 0, ")
        t.add(d + 1, "}")
        t.add(d, "}")

    def a_row_vectors(self, d: int, row: str, v: int) -> None:
        """The whole ``v``-element runs of a row of A in the block, each by vector copies of
        at most 64 bytes whose lengths are powers of two (:func:`run_pieces`: 21 = 16 at 0
        and 8 at 13; A's signed bytes flipped when A is offset by 128)."""
        t = self.t
        t.add(d, f"affine.for %p = 0 to min affine_map<(d0)[s0] -> ({self.kc // v}, "
                 f"(s0 - d0) floordiv {v})>(%pc)[%K] {{")
        for offset, n in run_pieces(v, A_ROW_VECTOR_BYTES // packed_bytes(self.pt)):
            at = f"%p * {v}" + (f" + {offset}" if offset else "")
            if n == 1:
                raw = t.fresh("r")
                t.add(d + 1, f"{raw} = affine.load %A[{row}, %pc + {at}] : {self.ta}")
                t.add(d + 1, f"affine.store {self.packed_value(d + 1, raw, 'A')}, "
                             f"%Ap[%q, %x, {at}] : {self.tap}")
            else:
                self.a_vector_copy(d + 1, row, at, n)
        t.add(d, "}")

    def a_vector_copy(self, d: int, row: str, at: str, n: int) -> None:
        """``n`` elements of A's row from column ``at`` of the block, converted and flipped
        as :meth:`packed_value` does an element."""
        t, vt, types = self.t, f"vector<{n}x{self.pt}>", self.types
        src_vt = f"vector<{n}x{types.a}>"
        w = t.fresh("w")
        t.add(d, f"{w} = affine.vector_load %A[{row}, %pc + {at}] : {self.ta}, {src_vt}")
        if types.a != self.pt:      # converted at packing
            op = "extf" if not types.a.startswith("i") else \
                "extui" if types.a_unsigned else "extsi"
            cw = t.fresh("cw")
            t.add(d, f"{cw} = arith.{op} {w} : {src_vt} to {vt}")
            w = cw
        if self.engine.offset_a:
            flips, f = t.fresh("flips"), t.fresh("fw")
            t.add(d, f"{flips} = arith.constant dense<-128> : {vt}")
            t.add(d, f"{f} = arith.xori {w}, {flips} : {vt}")
            w = f
        t.add(d, f"affine.vector_store {w}, %Ap[%q, %x, {at}] : {self.tap}, {vt}")

    def a_element(self, d: int, row: str, rows_ok: str) -> None:
        """``Ap[q, x, k]``: A's element, zero past K (and past M under ``rows_ok``)."""
        t, pt = self.t, self.pt
        cond = (f"affine_set<(d0, d1, d2, d3, d4)[s0, s1] : ({rows_ok}s1 - d3 - d4 - 1 >= 0)>"
                f"(%ic, %q, %x, %pc, %k)[%M, %K]")
        e, raw = t.fresh("e"), t.fresh("r")
        t.add(d, f"{e} = affine.if {cond} -> {pt} {{")
        t.add(d + 1, f"{raw} = affine.load %A[{row}, %pc + %k] : {self.ta}")
        t.add(d + 1, f"affine.yield {self.packed_value(d + 1, raw, 'A')} : {pt}")
        t.add(d, "} else {")
        t.add(d + 1, f"affine.yield %zp : {pt}")
        t.add(d, "}")
        t.add(d, f"affine.store {e}, %Ap[%q, %x, %k] : {self.tap}")

    def interleave_rows(self, d: int, at, st: str) -> None:
        """A group of B's whole panel: its G rows loaded as vectors and interleaved
        (``vector.interleave``, twice for quads), one vector store.  Written element by
        element, LLVM's SLP vectorizer joined the loads of consecutive rows into masked loads
        of odd length (``<33 x bfloat>`` for a 17-column B), which LLVM 22's instruction
        selection cannot legalize."""
        t, g, n = self.t, self.g, self.b_panel
        rows = []
        for gg in range(g):
            v = t.fresh("row")
            t.add(d, f"{v} = affine.vector_load {at('0', f'%p * {g} + {gg}')} : {st}, "
                     f"vector<{n}x{self.pt}>")
            rows.append(v)
        width = n
        while len(rows) > 1:      # (r0, r1) -> r0 r1; (r0, r1, r2, r3) -> (r0 r2, r1 r3) -> ...
            half = len(rows) // 2
            pairs = list(zip(rows[:half], rows[half:]))
            rows = []
            for a, b in pairs:
                v = t.fresh("il")
                t.add(d, f"{v} = vector.interleave {a}, {b} : vector<{width}x{self.pt}> -> "
                         f"vector<{2 * width}x{self.pt}>")
                rows.append(v)
            width *= 2
        t.add(d, f"affine.vector_store {rows[0]}, %Bp[%q, %p, 0] : {self.tbp}, "
                 f"vector<{width}x{self.pt}>")

    #: micro-panels are packed in groups of this many (AMX: a pair, its register tile)
    panel_group = 1

    def panels(self, d: int, count: int, tile: int, start: str, size: str) -> None:
        """The loop %q over the micro-panels of a block (on the threads with ``par``), up to
        whole groups of :attr:`panel_group` (zeros past the matrix)."""
        span, g = tile * self.panel_group, self.panel_group

        def extent(rest: str) -> str:
            e = f"({rest} + {span - 1}) floordiv {span}"
            return f"({e}) * {g}" if g > 1 else e
        if self.par:
            self.t.add(d, f"affine.parallel (%q) = (0) to (min({count}, "
                          f"{extent(f'symbol({size}) - {start}')})) {{")
        else:
            self.t.add(d, f"affine.for %q = 0 to min affine_map<(d0)[s0] -> ({count}, "
                          f"{extent('s0 - d0')})>({start})[{size}] {{")

    def packed_value(self, d: int, value: str, which: str) -> str:
        """An element of A or B as the packed buffers hold it: converted, and A's byte
        flipped when it is offset by 128."""
        types = self.types
        if which == "A":
            v = self.convert(d, value, types.a, types.a_unsigned)
            if self.engine.offset_a:
                f = self.t.fresh("fl")
                self.t.add(d, f"{f} = arith.xori {v}, %flip : i8")
                v = f
            return v
        return self.convert(d, value, types.b, types.b_unsigned)

    def edge_group(self, d: int, which: str, full_rows: bool) -> None:
        """One group of every row (column) of a panel, element by element, zero where the row
        or k is past the matrix."""
        t, g, pt = self.t, self.g, self.pt
        buf, bt, st, r_of, tile, size, at = self.operand(which)
        t.add(d, f"affine.for %x = 0 to {tile} {{")
        t.add(d + 1, f"affine.for %g = 0 to {g} {{")
        rows_ok = "" if full_rows else f"s0 - d0 - d1 * {tile} - d2 - 1 >= 0, "
        cond = (f"affine_set<(d0, d1, d2, d3, d4, d5)[s0, s1] : ({rows_ok}"
                f"s1 - d3 - d4 * {g} - d5 - 1 >= 0)>({r_of}, %q, %x, %pc, %p, %g)"
                f"[{size}, %K]")
        v = t.fresh("e")
        t.add(d + 2, f"{v} = affine.if {cond} -> {pt} {{")
        raw = t.fresh("r")
        t.add(d + 3, f"{raw} = affine.load {at('%x', f'%p * {g} + %g')} : {st}")
        t.add(d + 3, f"affine.yield {self.packed_value(d + 3, raw, which)} : {pt}")
        t.add(d + 2, "} else {")
        t.add(d + 3, f"affine.yield %zp : {pt}")
        t.add(d + 2, "}")
        t.add(d + 2, f"affine.store {v}, {buf}[%q, %p, %x * {g} + %g] : {bt}")
        t.add(d + 1, "}")
        t.add(d, "}")

    def column_sums(self, d: int) -> None:
        """``Bs[j] = -128 * sum_k B[k, jc + j]`` over the block (the packed panels, zeros
        included): the start of the accumulators when A is offset by 128.  Summed by the dot
        engine itself, bytes of one times each vector of B's groups: element by element, the
        sums of B's K x N bytes took longer than the product for a few rows of A (Zen 5, s8
        49x512x4608 0.58x torch._int_mm, 64x2048x2048 0.55x)."""
        t, g, w, nv, nr, nc, tbp = self.t, self.g, self.w, self.nv, self.nr, self.nc, self.tbp
        vt, pvt = self.vt, self.pvt
        self.panels(d, nc // nr, nr, "%jc", "%N")
        ones, m128 = t.fresh("ones"), t.fresh("m128v")
        t.add(d + 1, f"{ones} = arith.constant dense<1> : {pvt}")
        t.add(d + 1, f"{m128} = arith.constant dense<-128> : {vt}")
        zeros = ", ".join(f"%cs{v} = %zv" for v in range(nv))
        sums = t.fresh("colsum")
        t.add(d + 1, f"{sums}:{nv} = affine.for %p = 0 to {self.groups_of} iter_args({zeros}) "
                     f"-> ({', '.join([vt] * nv)}) {{")
        nexts = []
        for v in range(nv):
            b = t.fresh("b")
            t.add(d + 2, f"{b} = affine.vector_load %Bp[%q, %p, {v * w * g}] : {tbp}, {pvt}")
            nexts.append(self.multiply(d + 2, f"%cs{v}", ones, b))
        t.add(d + 2, f"affine.yield {', '.join(nexts)} : {', '.join([vt] * nv)}")
        t.add(d + 1, "}")
        for v in range(nv):
            scaled = t.fresh("scaled")
            t.add(d + 1, f"{scaled} = arith.muli {sums}#{v}, {m128} : {vt}")
            t.add(d + 1, f"affine.vector_store {scaled}, %Bs[%q * {nr} + {v * w}] : "
                         f"memref<{nc}xi32>, {vt}")
        t.add(d, "}")

    # -- the register tile ----------------------------------------------------------------

    def multiply(self, d: int, acc: str, a: str, b: str) -> str:
        t, engine, vt, pvt = self.t, self.engine, self.vt, self.pvt
        out = t.fresh("acc")
        if engine.packed == "bf16":
            t.add(d, f"{out} = x86vector.avx512.dot {acc}, {a}, {b} : {pvt} -> {vt}")
        elif engine.is_dot:
            t.add(d, f'{out} = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({acc}, {a}, '
                     f'{b}) : ({vt}, {pvt}, {pvt}) -> {vt}')
        elif self.is_float:
            t.add(d, f"{out} = vector.fma {a}, {b}, {acc} : {vt}")
        else:
            prod = t.fresh("pr")
            t.add(d, f"{prod} = arith.muli {a}, {b} : {vt}")
            t.add(d, f"{out} = arith.addi {acc}, {prod} : {vt}")
        return out

    def kernel(self, d: int, groups: Optional[str] = None,
               inits: Optional[list[str]] = None, in_place: bool = False) -> list[str]:
        """The k loop of the tile at (ic + ir, jc + jr): per group, N_V vector loads of B,
        and per row of A a broadcast of its group times each of them; over ``groups`` (the
        loop's bounds, by default the whole K_C block) from ``inits`` (by default zero, or
        B's column sums); ``in_place``: A's groups read in A (a tile of whole rows, with
        :attr:`direct_a`)."""
        t, g, w, mr, nv, nr, nc = self.t, self.g, self.w, self.mr, self.nv, self.nr, self.nc
        vt, pvt, pt, tap, tbp = self.vt, self.pvt, self.pt, self.tap, self.tbp
        count = mr * nv
        names = [t.fresh("x") for _ in range(count)]
        if inits is None and self.engine.offset_a:
            inits = []
            for v in range(nv):
                s = t.fresh("bs")
                t.add(d, f"{s} = affine.vector_load %Bs[%jr + {v * w}] : memref<{nc}xi32>, "
                         f"{vt}")
                inits.append(s)
            inits = inits * mr
        elif inits is None:
            inits = ["%zv"] * count
        res = t.fresh("r")
        types_ = ", ".join([vt] * count)
        init_text = ", ".join(f"{n} = {v}" for n, v in zip(names, inits))
        t.add(d, f"{res}:{count} = affine.for %p = {groups or '0 to ' + self.groups_of} "
                 f"iter_args({init_text}) -> ({types_}) {{")
        bs = []
        for v in range(nv):
            b = t.fresh("b")
            t.add(d + 1, f"{b} = affine.vector_load %Bp[%jr floordiv {nr}, %p, {v * w * g}] : "
                         f"{tbp}, {pvt}")
            bs.append(b)
        out = []
        for i in range(mr):
            if self.engine.is_dot:
                a, ai, ab, abt = (t.fresh(h) for h in ("a", "ai", "ab", "abt"))
                if in_place:
                    t.add(d + 1, f"{a} = affine.vector_load %A[%ic + %ir + {i}, %pc + %p * {g}] "
                                 f": {self.ta}, vector<{g}x{pt}>")
                else:
                    t.add(d + 1, f"{a} = affine.vector_load %Ap[%ir floordiv {mr}, {i}, "
                                 f"%p * {g}] : {tap}, vector<{g}x{pt}>")
                t.add(d + 1, f"{ai} = vector.bitcast {a} : vector<{g}x{pt}> to vector<1xi32>")
                t.add(d + 1, f"{ab} = vector.broadcast {ai} : vector<1xi32> to vector<{w}xi32>")
                t.add(d + 1, f"{abt} = vector.bitcast {ab} : vector<{w}xi32> to {pvt}")
            else:
                a, abt = t.fresh("a"), t.fresh("ab")
                t.add(d + 1, f"{a} = affine.load %Ap[%ir floordiv {mr}, {i}, %p] : {tap}")
                t.add(d + 1, f"{abt} = vector.broadcast {a} : {pt} to {vt}")
            for v in range(nv):
                out.append(self.multiply(d + 1, names[i * nv + v], abt, bs[v]))
        t.add(d + 1, f"affine.yield {', '.join(out)} : {types_}")
        t.add(d, "}")
        return [f"{res}#{q}" for q in range(count)]

    def inside_c(self) -> str:
        """The condition of a register tile wholly inside C."""
        return (f"affine_set<(d0, d1, d2, d3)[s0, s1] : (s0 - d0 - d1 - {self.mr} >= 0, "
                f"s1 - d2 - d3 - {self.nr} >= 0)>(%ic, %ir, %jc, %jr)[%M, %N]")

    def tile(self, d: int) -> None:
        t, mr, nv, w, tc, vt = self.t, self.mr, self.nv, self.w, self.tc, self.vt
        t.add(d, f"affine.if {self.inside_c()} {{")
        # C's tile is read once per K_C block from wherever it sits (L3 or memory), after
        # the k loop, as in the f32 pipelines (register_tile._c_tile_prefetcher): the tile
        # M_R rows below to L2 before the loop, this tile's lines to L1 C_TILE_LEAD groups
        # before a whole block's loop ends; sent at the start, they were gone by the end,
        # evicted by B's micro-panel streaming through L1 (Zen 4, bf16 2048^3: 5.8% of the
        # samples on the tile's additions to C)
        full = self.kc // self.g
        if full >= 4 * C_TILE_LEAD:
            self.c_lines(d + 1, range(mr, 2 * mr), 1)
            t.add(d + 1, f"affine.if {self.whole_block} {{")
            accs = self.kernel(d + 2, f"0 to {full - C_TILE_LEAD}", in_place=self.direct_a)
            self.c_lines(d + 2, range(mr), 3)
            accs = self.kernel(d + 2, f"{full - C_TILE_LEAD} to {full}", accs,
                               in_place=self.direct_a)
            self.add_tile(d + 2, accs)
            t.add(d + 1, "} else {")
            self.c_lines(d + 2, range(mr), 3)
            self.add_tile(d + 2, self.kernel(d + 2, in_place=self.direct_a))
            t.add(d + 1, "}")
        else:
            self.c_lines(d + 1, range(mr), 3)
            self.add_tile(d + 1, self.kernel(d + 1, in_place=self.direct_a))
        t.add(d, "} else {")
        if self.direct_a:     # whole rows are in A, a panel cut by M in the buffer
            t.add(d + 1, f"affine.if affine_set<(d0, d1)[s0] : (s0 - d0 - d1 - {mr} >= 0)>"
                         f"(%ic, %ir)[%M] {{")
            self.tile_to_tmp(d + 2, self.kernel(d + 2, in_place=True))
            t.add(d + 1, "} else {")
            self.tile_to_tmp(d + 2, self.kernel(d + 2))
            t.add(d + 1, "}")
        else:
            self.tile_to_tmp(d + 1, self.kernel(d + 1))
        self.add_edge_tile(d + 1)
        t.add(d, "}")

    def tile_to_tmp(self, d: int, accs: list[str]) -> None:
        """The accumulators of a tile on C's edge into ``%tmp``."""
        t, mr, nv, w, vt = self.t, self.mr, self.nv, self.w, self.vt
        for i in range(mr):
            for v in range(nv):
                t.add(d, f"affine.vector_store {accs[i * nv + v]}, %tmp[{i}, {v * w}] : "
                         f"{self.ttmp}, {vt}")

    def c_lines(self, d: int, rows: range, locality: int) -> None:
        """Prefetch the lines of C's ``rows`` (of the tile at (ic, ir, jc, jr)) into the cache
        level of ``locality`` (3: L1, 1: L2)."""
        for i in rows:
            for col in range(0, self.nr, 64 // 4):    # C's elements are 4 bytes
                self.t.add(d, f"affine.prefetch %C[%ic + %ir + {i}, %jc + %jr + {col}], "
                              f"write, locality<{locality}>, data : {self.tc}")

    def add_tile(self, d: int, accs: list[str]) -> None:
        """C's tile plus the accumulators ``accs``, stored (through the epilogue after the
        last K block); with :attr:`c_zero`, zeros instead of C's tile in the first block."""
        if not self.c_zero:
            self.add_tile_to(d, accs, from_c=True)
            return
        self.t.add(d, f"affine.if {self.first_block} {{")
        self.add_tile_to(d + 1, accs, from_c=False)
        self.t.add(d, "} else {")
        self.add_tile_to(d + 1, accs, from_c=True)
        self.t.add(d, "}")

    def add_tile_to(self, d: int, accs: list[str], from_c: bool) -> None:
        """:meth:`add_tile` with C's tile (``from_c``) or zeros (the same additions: the
        sums' bits are those of a fill of zeros read back)."""
        t, mr, nv, w, tc, vt = self.t, self.mr, self.nv, self.w, self.tc, self.vt
        sums = []
        for i in range(mr):
            for v in range(nv):
                at = f"%C[%ic + %ir + {i}, %jc + %jr + {v * w}]"
                c, s = t.fresh("c"), t.fresh("c")
                if from_c:
                    t.add(d, f"{c} = affine.vector_load {at} : {tc}, {vt}")
                else:
                    c = "%zcv"
                t.add(d, f"{s} = {self.add_op} {c}, {accs[i * nv + v]} : {vt}")
                sums.append(s)

        def store_sums(dd: int) -> None:
            for i in range(mr):
                for v in range(nv):
                    t.add(dd, f"affine.vector_store {sums[i * nv + v]}, %C[%ic + %ir + {i}, "
                              f"%jc + %jr + {v * w}] : {tc}, {vt}")

        if self.epilogue is None:
            store_sums(d)
            return
        # C's tile is final after the last K block: the epilogue, then store
        t.add(d, f"affine.if {self.last_block} {{")
        for i in range(mr):
            for v in range(nv):
                self.epilogue_store(d + 1, sums[i * nv + v], f"%ic + %ir + {i}",
                                    f"%jc + %jr + {v * w}")
        if self.out != "%C":
            store_sums(d + 1)
        t.add(d, "} else {")
        store_sums(d + 1)
        t.add(d, "}")

    def epilogue_store(self, d: int, value: str, row: str, col: str) -> None:
        """The epilogue of ``w`` columns of C's row (``value``, the vector), stored to the
        output."""
        r = self.epilogue.emit(self.t, d, value, self.args, self.w, row, col)
        self.t.add(d, f"affine.vector_store {r}, {self.out}[{row}, {col}] : {self.tout}, "
                      f"vector<{self.w}x{self.tout_e}>")

    def add_edge_tile(self, d: int) -> None:
        """``%tmp`` (the product of a tile on C's edge) added to the part of C it covers,
        element by element (the epilogue after the last K block)."""
        t, mr, nr, tc, ct = self.t, self.mr, self.nr, self.tc, self.ct
        t.add(d, f"affine.for %i = 0 to min affine_map<(d0, d1)[s0] -> ({mr}, "
                 f"s0 - d0 - d1)>(%ic, %ir)[%M] {{")
        t.add(d + 1, f"affine.for %j = 0 to min affine_map<(d0, d1)[s0] -> ({nr}, "
                     f"s0 - d0 - d1)>(%jc, %jr)[%N] {{")
        et, ec, es = t.fresh("et"), t.fresh("ec"), t.fresh("es")
        at = "%C[%ic + %ir + %i, %jc + %jr + %j]"
        t.add(d + 2, f"{et} = affine.load %tmp[%i, %j] : {self.ttmp}")
        if self.c_zero:      # zero in the first block
            t.add(d + 2, f"{ec} = affine.if {self.first_block} -> {ct} {{")
            t.add(d + 3, f"affine.yield %zc : {ct}")
            t.add(d + 2, "} else {")
            c = t.fresh("ec")
            t.add(d + 3, f"{c} = affine.load {at} : {tc}")
            t.add(d + 3, f"affine.yield {c} : {ct}")
            t.add(d + 2, "}")
        else:
            t.add(d + 2, f"{ec} = affine.load {at} : {tc}")
        t.add(d + 2, f"{es} = {self.add_op} {ec}, {et} : {ct}")
        if self.epilogue is None:
            t.add(d + 2, f"affine.store {es}, {at} : {tc}")
        else:
            t.add(d + 2, f"affine.if {self.last_block} {{")
            row, col = "%ic + %ir + %i", "%jc + %jr + %j"
            r = self.epilogue.emit(t, d + 3, es, self.args, None, row, col)
            t.add(d + 3, f"affine.store {r}, {self.out}[{row}, {col}] : {self.tout}")
            if self.out != "%C":
                t.add(d + 3, f"affine.store {es}, {at} : {tc}")
            t.add(d + 2, "} else {")
            t.add(d + 3, f"affine.store {es}, {at} : {tc}")
            t.add(d + 2, "}")
        t.add(d + 1, "}")
        t.add(d, "}")


def a_row_run(con, engine: Engine, k_c: Optional[int] = None) -> int:
    """The runs (elements, aligned from column 0) in which the template copies A's rows by
    vectors: 64 bytes where A is a matrix or a convolution's im2col stand-in whose aligned
    64-byte runs are vectors of the input; else the stand-in's window runs (the stem's 21);
    1 (element by element) when it has none.  Given the block's ``k_c`` (a multiple of that
    run), a stand-in's window runs of whole vectors where K_C holds whole ones: the window
    position (a division of the column by the window's extents) is then computed once per
    run, not once per vector (ResNet-50's conv2_x 3x3 in bf16, runs of 192 instead of 32:
    1.06x; conv4_x 1.04x; the others within 1%)."""
    from .contraction import STAND_IN_ATTR, STAND_IN_RUN_ATTR, STAND_IN_WINDOW_RUN_ATTR
    vector = A_ROW_VECTOR_BYTES // packed_bytes(engine.packed)
    if not rows_contiguous(con.a.memref):       # a transposed or strided view of A
        return 1
    alloc = con.a.memref.defining_op
    if alloc is None or STAND_IN_ATTR not in alloc.attributes:
        return vector
    run = alloc.attributes.get(STAND_IN_RUN_ATTR)
    window = alloc.attributes.get(STAND_IN_WINDOW_RUN_ATTR)
    if run is not None and run.value >= vector:
        if k_c is not None and window is not None and window.value % vector == 0 and \
                k_c % window.value == 0:
            return window.value
        return vector
    return window.value if window is not None else 1


def f16_halves_engine(con, types: MixedTypes, machine: MachineModel) -> Optional[Engine]:
    """AMX's bf16 product on f16 split into bf16 halves (:mod:`polyopt.schedules.f16_halves`)
    for an f16 x f16 -> f32 matrix product where the CPU has AMX-BF16 but no AMX-FP16, else
    None (a convolution's im2col stand-in is not split: its reads are rewritten into windows)."""
    from .amx_gemm import amx_engine
    from .contraction import STAND_IN_ATTR
    if (types.a, types.b, types.c) != ("f16", "f16", "f32") or not con.is_matrix_form:
        return None
    if amx_engine(types, machine.features) is not None:
        return None
    bf16 = amx_engine(MixedTypes("bf16", "bf16", "f32"), machine.features)
    if bf16 is None:
        return None
    if any(v.defining_op is not None and STAND_IN_ATTR in v.defining_op.attributes
           for v in con.operands[:2]):
        return None
    return Engine("AMX tdpbf16ps on f16 split into bf16 halves (four exact products per k, "
                  "f32 FMAs where A or B holds an infinity or a NaN)", 2, "bf16", 16, amx=True)


def rows_contiguous(memref) -> bool:
    """Are a matrix's rows runs of consecutive elements (unit stride along its columns), so
    that the packing can copy them by vectors?  Not in a transposed or strided view (a raised
    ``A[k, i]``, ``B[j, k]``)."""
    from ..affine.dialects.memref import strides_and_offset
    layout = strides_and_offset(memref.type)
    return layout is not None and layout[0][-1] == 1


def reads_a_in_place(con, engine: Engine) -> bool:
    """Does the register tile read A's rows where A is, instead of a packed copy: where A is
    a row-major matrix of the packed type (not converted, not offset by 128, not a
    convolution's im2col) with K a whole number of groups, whose rows are then what a packed
    row-major panel holds (ONE_THREAD_A_ROWS's block is read from L2 either way).  Packing
    then only the panel cut by M saves a copy of A (LLVM makes it a ``memcpy``): Zen 5, one
    thread, bf16 2048x64x2048 (A read by one tile) 10% of the samples in ``memcpy``."""
    from .contraction import STAND_IN_ATTR
    t = con.a.memref.type
    alloc = con.a.memref.defining_op
    return (not engine.amx and engine.is_dot and not engine.offset_a
            and mixed_types_of(con).a == engine.packed and isinstance(con.k, int)
            and con.k % engine.group == 0 and t.layout is None and t.rank == 2
            and not (alloc is not None and STAND_IN_ATTR in alloc.attributes))


def expand_lowp_gemm(con, machine: Optional[MachineModel], remark=None,
                     threads: int = 1) -> bool:
    """Build the mixed-precision GEMM of a matrix-form contraction in front of its anchor
    (after the run-time size check and the ``C *= beta`` nest of
    :func:`~polyopt.schedules.expand.expand_matmul`, whose naive product nest it replaces);
    False (nothing built) when the combination is not one of ``MIXED_TYPES`` or alpha is
    set."""
    from ..affine.dialects.hop import MIXED_TYPES
    from .expand import expand_matmul
    from .gemm_templates import product_extents, splice_template
    types = mixed_types_of(con)
    if (types.a, types.b, types.c) not in MIXED_TYPES or con.alpha is not None:
        return False
    machine = machine or MachineModel()
    engine, missing = choose_engine(types, machine)
    a_run = a_row_run(con, engine)
    params = lowp_params(engine, machine, con.k if isinstance(con.k, int) else None, a_run,
                         threads, con.m if isinstance(con.m, int) else None)
    a_run = a_row_run(con, engine, params.K_C)
    epilogue = None
    if isinstance(con.m, int) and isinstance(con.n, int):
        from .epilogue import epilogue_of, memrefs_read_by
        from .conv_gemm import _collapse_to_matrix
        epilogue = epilogue_of(con.anchor, con.c.memref, con.m, con.n,
                               reads=memrefs_read_by(con), remark=remark, loc=con.loc,
                               collapse=lambda v: _collapse_to_matrix(
                                   Builder.before(con.anchor), v, con.loc))
    from .zero_init import zero_fill_before
    fill = zero_fill_before(con)
    loops = expand_matmul(con)          # the size check, the beta nest, the naive nest
    product = loops[0]
    b = Builder.before(product)
    extents = product_extents(b, loops, con.loc)
    nr = params.N_V * engine.lanes
    split_rows = isinstance(con.n, int) and con.n < 2 * threads * nr    # few column panels
    text = lowp_gemm_source(tuple(str(v.type) for v in con.operands), types, engine, params,
                            threads, split_rows, epilogue, a_run,
                            reads_a_in_place(con, engine), rows_contiguous(con.b.memref),
                            c_zero=fill is not None)
    after_k = []
    if epilogue is not None:
        after_k += [epilogue.view(v) for v in epilogue.externals]
        if not epilogue.stores_to_c:
            after_k.append(epilogue.output)
    halves = f16_halves_engine(con, types, machine)
    if halves is None:
        splice_template(b, text, "<low-precision gemm>", [*con.operands, *extents, *after_k],
                        con.loc)
    else:
        # the converted path where A or B holds an infinity or a NaN, else the halves'
        from .f16_halves import split_source
        ops = splice_template(b, split_source(*(str(v.type) for v in con.operands[:2]),
                                              con.m, con.n, con.k),
                              "<f16 halves>", [*con.operands[:2], *extents], con.loc)
        k4, a2, b2 = (op.results[0] for op in ops[:3])
        branch = next(op for op in ops if op.name == "scf.if")
        splice_template(Builder.before(branch.then_block.terminator), text,
                        "<low-precision gemm>", [*con.operands, *extents, *after_k], con.loc)
        engine, missing = halves, None
        params = lowp_params(engine, machine, 4 * con.k if isinstance(con.k, int) else None,
                             None, threads, con.m if isinstance(con.m, int) else None)
        nr = params.N_V * engine.lanes
        split_rows = isinstance(con.n, int) and con.n < 2 * threads * nr
        bf16 = MixedTypes("bf16", "bf16", "f32")
        text = lowp_gemm_source((str(a2.type), str(b2.type), str(con.c.memref.type)), bf16,
                                engine, params, threads, split_rows, epilogue,
                                c_zero=fill is not None)
        splice_template(Builder.before(branch.else_block.terminator), text,
                        "<low-precision gemm>", [a2, b2, con.c.memref, extents[0], extents[1],
                                                 k4, *after_k], con.loc)
    product.erase()
    if epilogue is not None:
        epilogue.nest.erase()
    if fill is not None:
        fill_loc = fill.loc
        fill.erase()
    if remark is not None:
        if fill is not None:
            remark(fill_loc or con.loc,
                   f"the zero fill of C taken into {con.kind}: its first K block adds its "
                   f"products to zeros instead of reading C")
        if epilogue is not None:
            remark(epilogue.nest.loc or con.loc,
                   f"fused into {con.kind}'s register tile after its last K block: the "
                   f"epilogue over C ({epilogue.describe()}){epilogue.lane_by_lane()}")
        why = f" ({missing})" if missing else ""
        remark(con.loc, f"{con.kind} {types}: {engine.name}{why}; BLIS's loops with run-time "
                        f"trip counts, A and B packed in groups of {engine.group} k "
                        f"(M_C={params.M_C}, K_C={params.K_C}, N_C={params.N_C}, "
                        f"register tile {params.M_R}x{params.N_V * engine.lanes})"
                        + (f"; panels and tiles split over {threads} threads" if threads > 1
                           else ""))
    return True
