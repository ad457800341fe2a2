"""BLIS/OpenBLAS tiling as one polyhedral schedule (paper sections 2.4-2.5, 2.12).

For ``C[i, j] += A[i, k] * B[k, j]`` over (d0, d1, d2) = (i, j, k) the schedule is

    (d0, d1, d2) -> (d1 floordiv N_C, d2 floordiv K_C, d0 floordiv M_C, d1 floordiv N_R,
                     d0 floordiv M_R, d2, d1, d0)

(without the first dimension when ``N_C`` is not given): GEBP in Goto and van de Geijn's words,
A's M_C x K_C block in L2 and B's K_C x N_R micro-panel in L1.  With ``l2_block = "B"`` (GEPB)
it is

    (d0, d1, d2) -> (d0 floordiv M_C, d2 floordiv K_C, d1 floordiv N_C, d0 floordiv M_R,
                     d1 floordiv N_R, d2, d1, d0)

B's K_C x N_C block in L2 and A's M_R x K_C micro-panel in L1 (BLIS's loops on the transposed,
column-major problem).  The last two dimensions are the register tile: ``(.., d1, d0)`` is the paper's first order; ``register_order="ij"`` gives the permuted
``(.., d0, d1)`` of section 2.12, whose register need is ``M_R*N_R/VW + N_R/VW + 1`` instead of
``M_R*N_R/VW + M_R + 1``.

:func:`default_blis_params` is the analytical model (in the spirit of Low et al. 2016) that picks
the parameters from the machine when the op does not give them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from ..affine.affine_expr import AffineMap, dim


@dataclass(frozen=True)
class MachineModel:
    """What the parameter model needs to know about the target (filled from codegen.Target)."""

    vector_bits: int = 256
    num_vector_registers: int = 16
    l1d_bytes: int = 32 * 1024
    l2_bytes: int = 512 * 1024
    l3_bytes: int = 32 * 1024 * 1024
    # facts about the core, filled from the target description (codegen/target.py) when known
    l1d_ways: int = 8
    l2_ways: int = 16
    line_bytes: int = 64
    fma_latency: int = 4            # cycles from one FMA to a dependent one
    fma_per_cycle: float = 2.0      # vector FMAs at vector_bits issued per cycle (measured)
    full_width_fma: bool = True     # vector_bits FMAs run at the rate of two half-width ones
    embedded_broadcast: bool = False   # FMAs take a broadcast memory operand ({1toN}, AVX-512)
    l2_bytes_per_cycle: float = 0.0    # vector loads streaming from L2 (measured; 0: unknown)
    features: frozenset = frozenset()  # LLVM feature names the CPU has ("avx512f", "amx-bf16", ...)

    def lanes(self, elem_bytes: int) -> int:
        return max(1, self.vector_bits // (8 * elem_bytes))

    def stream_lanes(self, elem_bytes: int) -> int:
        """The vector width of loops bound by memory, not FMAs (the GEMV forms).  Where a
        512-bit op issues as two 256-bit halves it computes nothing faster, and its loads
        split a cache line whenever the row is not 64-byte aligned (numpy's large arrays start
        16 bytes into a line; a 4000-byte row is 32 bytes off every other time): 256-bit loads
        split half as often.  Measured on Zen 4, f32 1000x1x1000: 0.92x numpy with 16 lanes,
        1.07x with 8."""
        bits = self.vector_bits if self.full_width_fma or self.vector_bits <= 256 else 256
        return max(1, bits // (8 * elem_bytes))


@dataclass(frozen=True)
class MicroKernelChoice:
    """The library micro-kernel a BLIS-mode (``--hopt-blis``) matmul calls: its symbol, its
    register tile in the matmul's orientation (rows of C x columns of C), and whose
    micro-panel it keeps in L1: BLIS's kernels are written for BLIS's loop order, B's
    micro-panel in L1 and A's streamed from L2, so a kernel polyopt calls with A and B
    swapped keeps polyopt's A there (``"A"``), another polyopt's B (``"B"``)."""

    symbol: str
    m_r: int
    n_r: int
    l1_panel: str = "B"


@dataclass(frozen=True)
class BlisParams:
    """Tile sizes of the BLIS schedule; ``None`` for ``N_C`` means no L3 tiling."""

    M_C: int
    K_C: int
    M_R: int
    N_R: int
    K_U: int = 4
    N_C: Optional[int] = None
    register_order: str = "ji"   # "ji": (.., d1, d0) as the paper; "ij": (.., d0, d1)
    # "row": broadcast A's elements, vector loads of B's row (vectors along j); "col": vector
    # loads of A's packed column, broadcast B's elements (vectors along i)
    register_form: str = "row"
    # which operand's block sits in L2 (Goto and van de Geijn's GEBP and GEPB): "A" (the
    # paper's order: A's M_C x K_C block in L2, B's K_C x N_R micro-panel in L1 across the M_R
    # loop) or "B" (BLIS's order for a row-major C: B's K_C x N_C block in L2, A's M_R x K_C
    # micro-panel in L1 across the N_R loop, A's M_C x K_C block in L3)
    l2_block: str = "A"
    # GEPB with all of N in one K_C x N_C block: the K_C loop outside the M_C loop, so that
    # B's one block is packed once per K_C block rather than once per M_C block of A
    k_outer: bool = False
    # why the model chose what it chose (the numbers it used), for --remarks and --explain
    reasons: tuple = field(default=(), compare=False, hash=False)
    origin: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        for name in ("M_C", "K_C", "M_R", "N_R", "K_U"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.N_C is not None and (not isinstance(self.N_C, int) or self.N_C < 1):
            raise ValueError(f"N_C must be a positive integer, got {self.N_C!r}")
        if self.register_order not in ("ji", "ij"):
            raise ValueError(f"register_order must be 'ji' or 'ij', got {self.register_order!r}")
        if self.l2_block not in ("A", "B"):
            raise ValueError(f"l2_block must be 'A' or 'B', got {self.l2_block!r}")
        if self.register_form not in ("row", "col"):
            raise ValueError(f"register_form must be 'row' or 'col', got {self.register_form!r}")

    def schedule(self) -> AffineMap:
        """The schedule map over (d0, d1, d2) = (i, j, k): GEBP's loops (jc,) pc, ic, jr, ir
        or GEPB's ic, pc, (jc,) ir, jr (pc, ic, ... with ``k_outer``), then k and the register
        tile."""
        i, j, k = dim(0), dim(1), dim(2)
        jc = [j.floordiv(self.N_C)] if self.N_C is not None else []
        if self.l2_block == "B" and self.k_outer:
            results = [k.floordiv(self.K_C), i.floordiv(self.M_C), *jc,
                       i.floordiv(self.M_R), j.floordiv(self.N_R)]
        elif self.l2_block == "B":
            results = [i.floordiv(self.M_C), k.floordiv(self.K_C), *jc,
                       i.floordiv(self.M_R), j.floordiv(self.N_R)]
        else:
            results = [*jc, k.floordiv(self.K_C), i.floordiv(self.M_C), j.floordiv(self.N_R),
                       i.floordiv(self.M_R)]
        results += [k] + ([j, i] if self.register_order == "ji" else [i, j])
        return AffineMap.get(3, 0, tuple(results))

    def register_need(self, lanes: int) -> int:
        """Vector registers the unrolled M_R x N_R tile keeps live (paper section 2.12)."""
        vecs = -(-self.N_R // lanes)
        if self.register_order == "ji":
            return self.M_R * vecs + self.M_R + 1
        return self.M_R * vecs + vecs + 1

    def explain(self) -> str:
        """The model's reasons, one per line ("form row ...", "4x32: 16 accumulators ...")."""
        return "\n".join(self.reasons)

    def describe(self) -> str:
        parts = [f"M_C={self.M_C}", f"K_C={self.K_C}"]
        if self.N_C is not None:
            parts.append(f"N_C={self.N_C}")
        parts += [f"M_R={self.M_R}", f"N_R={self.N_R}", f"K_U={self.K_U}",
                  f"order={self.register_order}", f"form={self.register_form}",
                  f"l2_block={self.l2_block}"]
        src = {k: v for k, v in self.origin.items() if v != "attribute"}
        tail = f" (from the model: {', '.join(sorted(src))})" if src else ""
        return ", ".join(parts) + tail


# Measured facts the model below reproduces from the machines' facts (tests/schedules/
# test_tile_model.py checks it):
# * AVX2 (16 ymm, Zen 3): f64 6x8 and 4x12, f32 4x24 and 6x16 in the permuted order, near peak;
# * AVX-512 (Zen 5: 32 zmm, two full-width FMA pipes, 48 KiB 12-way L1d), ratio to OpenBLAS's
#   SkylakeX kernel in the same run at 2088x2048x2048: f64 4x32 1.11-1.12x, 3x32 1.14x, 4x24
#   1.10x, 6x32 1.05x, 4x40 1.04x, 8x16 0.97x; f32 4x64 1.03-1.05x, 3x64 1.04x, 5x64 1.03x, 6x64
#   1.02x, 8x32 0.98-1.00x, 4x48 0.97-0.99x, 16x16 0.79x.  C's rows are often a multiple of
#   4 KiB apart, so a tile's M_R rows share L1 sets: B's K_C x N_R micro-panel takes 2/3 of
#   every set's ways and C's rows must fit in the rest, or they evict the prefetched tile of C
#   (and B) before the k loop ends.  Hence few rows and wide tiles;
# * AVX-512 on Zen 4 (32 KiB 8-way L1d, 512-bit FMAs double-pumped), 2088x2048x2048 f64, loaded
#   machine: row 4x32 0.93-0.95x, 3x32 0.98x, 24x8 (K_C 256) 0.98x; the column form 8x28 with
#   its transposed C update 0.70-0.85x.


@dataclass(frozen=True)
class TileChoice:
    """The register tile the model picks, with the numbers behind it (``reasons``: text for
    ``--remarks`` and ``bench matmul --explain``)."""

    m_r: int
    n_r: int
    order: str
    form: str = "row"
    reasons: tuple = ()


def accumulators_needed(machine: MachineModel) -> int:
    """Independent accumulators that keep every FMA pipe busy: latency x FMAs per cycle."""
    return max(1, int(-(-machine.fma_latency * machine.fma_per_cycle // 1)))


def _row_need(mr: int, nv: int, order: str, folded: bool) -> int:
    """Vector registers of a row-form tile: accumulators, B's vectors, A's broadcasts (none
    when they are folded into the FMAs as {1toN} operands)."""
    acc = mr * nv
    if folded:
        return acc + nv
    return acc + (mr + 1 if order == "ji" else nv + 1)


def row_bytes(memref_type) -> Optional[int]:
    """The distance in bytes between consecutive rows of a rank-2 memref, when its type says
    (row-major with a static width, or a static ``strided`` layout); else ``None``."""
    from ..affine.types import StridedLayout
    elem = memref_type.element_type.width // 8
    layout = memref_type.layout
    if layout is None:
        width = memref_type.shape[-1]
        return None if width is None else width * elem
    if isinstance(layout, StridedLayout) and layout.strides[0] is not None:
        return layout.strides[0] * elem
    return None


def rows_in_one_l1_set(rows: int, row_bytes: Optional[int], width_bytes: int,
                       machine: MachineModel) -> int:
    """At most how many of ``rows`` rows of C, ``row_bytes`` apart, each ``width_bytes`` wide
    (a register tile's row), touch one L1 set.  ``row_bytes`` ``None`` (not known) counts
    the worst case, a multiple of an L1 way's size: every row in the same sets."""
    if row_bytes is None or rows <= 1:
        return rows
    # (a tile is clamped to C's width, which is at most its row stride)
    width_bytes = min(width_bytes, row_bytes)
    line = max(1, machine.line_bytes)
    sets = max(1, machine.l1d_bytes // max(1, machine.l1d_ways) // line)
    count: dict = {}
    for r in range(rows):
        first = r * row_bytes // line
        last = (r * row_bytes + width_bytes - 1) // line
        for s in {ln % sets for ln in range(first, last + 1)}:
            count[s] = count.get(s, 0) + 1
    return max(count.values())


#: GEBP keeps B's K_C x N_R micro-panel in L1, so a wider tile has a shallower k loop, and each
#: micro-kernel call loads and stores its tile of C once per K_C.  Where K is deeper than that,
#: the tile is at most as wide as leaves K_C this deep (Zen 4, one thread, GEBP, same runs:
#: 49x512x4608 f64 3x32 (K_C 80) 1.02x numpy, 3x16..7x16 (K_C 168) 1.11x-1.16x, 7x8 1.15x;
#: 32x2048x2048 f32 3x64 1.20x, 3x32 1.32x; f64 3x32 1.04x-1.07x, 3x16 1.05x, 7x16 1.08x)
GEBP_MIN_K_C = 160


def _tile_rank(mr: int, nv: int, target: int, wide: bool) -> tuple:
    """How the model ranks an ``mr`` x ``nv``-vector row-form tile (larger is better): with
    32 registers the most accumulators up to ``target``, then the fewest, then the fewest
    loads per FMA; with 16 the fewest loads per FMA, then the most accumulators."""
    acc = mr * nv
    loads = (mr + nv) / acc
    return (min(acc, target), -acc, -loads, -mr) if wide else (-loads, acc, -mr)


def _register_tile(machine: MachineModel, elem_bytes: int,
                   c_row_bytes: Optional[int] = None, gebp: bool = True,
                   k: Optional[int] = None) -> TileChoice:
    """The row-form register tile from the machine's facts (no CPU names):

    * registers: accumulators + B's vectors + A's broadcasts <= ``num_vector_registers`` (no
      spills), in the order with fewer live values;
    * latency: at least ``fma_latency x fma_per_cycle`` independent accumulators;
    * with 32 registers: half of them as accumulators (the rest hold B's vectors and A's
      broadcasts with slack for LLVM's scheduler), at most 4 vectors of B per row (wider
      ones shrink K_C: Zen 5 measured 4x40 1.04x against 4x32 1.11x), and at most a third of
      the L1 ways as rows of C in any one set (B's micro-panel takes the other two thirds):
      when C's rows are a multiple of 4 KiB apart (``c_row_bytes``; unknown counts as that)
      they all share one set, so 4 rows in a 12-way L1, 3 in an 8-way one; rows 256 bytes
      apart (a convolution's 64 channels of f32) fall in different sets and do not count.
      That limit is GEBP's (``gebp``): in GEPB's order B streams through L1 beside A's small
      micro-panel, and C's tile is fetched into L1 near the end of its k loop (Zen 4, 2088 and
      1000 squares, same run: 4x32 1.0-1.01x 3x32, 4x64 1.02-1.03x 3x64).  GEBP's tile is also
      no wider than leaves its K_C at least :data:`GEBP_MIN_K_C` deep when the reduction ``k``
      is deeper (2 vectors with a 32 KiB L1, 3 with a 48 KiB one);
    * with 16 registers: the tile with the fewest loads per FMA, at most 2 vectors wide in the
      permuted order (AVX2: 6x8 f64, 6x16 f32).
    The column form is not chosen by default: its C update goes through a transposed buffer
    (measured slower on Zen 4: 2088x2048x2048 f64 0.87x numpy with 16x14, the row form's 4x32
    1.05x); ask for it with ``register_form = "col"`` (:func:`_column_tile`)."""
    lanes = machine.lanes(elem_bytes)
    regs = machine.num_vector_registers
    need = accumulators_needed(machine)
    ways = max(1, machine.l1d_ways)
    wide = regs >= 32
    set_rows = max(1, round(ways / 3))
    max_vecs = 4 if wide else 2
    shallow = None
    if wide and gebp and k is not None:
        deep_enough = [nv for nv in range(1, max_vecs + 1)
                       if _gebp_k_c(machine, elem_bytes, nv * lanes) >= min(k, GEBP_MIN_K_C)]
        if max(deep_enough, default=1) < max_vecs:
            shallow = _gebp_k_c(machine, elem_bytes, max_vecs * lanes)
        max_vecs = max(deep_enough, default=1)
    target = max(need, regs // 2)
    order = "ji" if wide else "ij"
    best = None
    for nv in range(1, max_vecs + 1):
        for mr in range(1, regs + 1):
            acc = mr * nv
            folded = machine.embedded_broadcast and nv == 1
            if acc < need or _row_need(mr, nv, order, folded) > regs:
                continue
            if wide and gebp and rows_in_one_l1_set(mr, c_row_bytes, nv * lanes * elem_bytes,
                                                    machine) > set_rows:
                continue
            key = _tile_rank(mr, nv, target, wide)
            if best is None or key > best[0]:
                best = (key, mr, nv, folded)
    if best is None:
        return TileChoice(4, 2 * lanes, "ij", "row", (f"no tile has >= {need} accumulators in "
                                                      f"{regs} registers: 4 x 2 vectors",))
    _, mr, nv, folded = best
    acc = mr * nv
    reasons = ("form row (broadcast A, vector loads of B; the column form adds C through a "
               "transposed buffer)",
               f"{mr}x{nv * lanes}: {acc} accumulators >= latency {machine.fma_latency} x "
               f"{machine.fma_per_cycle:g} FMAs/cycle = {need}; "
               f"{_row_need(mr, nv, order, folded)} of {regs} vector registers"
               + (" (A's broadcasts folded as {1toN})" if folded else ""),
               (_rows_reason(mr, nv * lanes * elem_bytes, c_row_bytes, set_rows, machine)
                if wide and gebp else
                f"{mr} rows: the most accumulators up to half of the registers, then the "
                f"fewest loads per FMA ({(mr + nv) / acc:.2f})" if wide else
                f"{(mr + nv) / acc:.2f} loads per FMA, the fewest in {regs} registers"))
    if shallow is not None:
        reasons += (f"{nv} vectors wide: GEBP's K_C {_gebp_k_c(machine, elem_bytes, nv * lanes)}"
                    f" (B's micro-panel in L1) for K = {k}; the widest would leave {shallow}, "
                    f"less than {GEBP_MIN_K_C} k per load and store of C's tile",)
    return TileChoice(mr, nv * lanes, order, "row", reasons)


def _column_tile(machine: MachineModel, elem_bytes: int) -> TileChoice:
    """The column-form register tile (asked for with ``register_form = "col"``): two vectors
    of A's packed column (M_R = 2 x lanes) times as many broadcasts of B as the registers
    leave room for (two for A, one for the broadcast unless it folds into the FMA as
    ``{1toN}``, one of slack), BLIS's skx shape (16x14 f64) with 32 registers."""
    lanes = machine.lanes(elem_bytes)
    regs = machine.num_vector_registers
    nv = 2
    nr = max(1, (regs - nv - (0 if machine.embedded_broadcast else 1) - 1) // nv)
    reason = (f"{nv * lanes}x{nr}: {nv * nr} accumulators, {nv} vectors of A, {nr} "
              f"broadcasts of B in {regs} vector registers"
              + (" (folded into the FMAs as {1toN})" if machine.embedded_broadcast else ""))
    return TileChoice(nv * lanes, nr, "ji", "col", ("form col", reason))


def _rows_reason(mr: int, width_bytes: int, c_row_bytes: Optional[int], set_rows: int,
                 machine: MachineModel) -> str:
    shared = rows_in_one_l1_set(mr, c_row_bytes, width_bytes, machine)
    apart = ("C's row stride unknown: counted as sharing one set" if c_row_bytes is None
             else f"C's rows {c_row_bytes} bytes apart")
    return (f"{mr} rows of C, {shared} of them in any one L1 set beside B's micro-panel: at "
            f"most {set_rows} of {machine.l1d_ways} ways ({apart})")


# K_C is a multiple of 4: of K_U's default (the k loop then needs no cleanup) and enough to keep
# the micro-panels 64-byte aligned for M_R * element size a multiple of 16 bytes.  Multiples of
# 8 padded the last K_C block by up to 5% of K (2088: 18 x 120 = 2160, while 116 splits it
# exactly): SGEMM 2088^3 went from 0.97x to 1.00x OpenBLAS, 1500^3 from 0.97x to 0.99x.
_K_C_MULTIPLE = 4


def _dividing(size: int, tile: int, multiple: int) -> Optional[int]:
    """A tile at most 10% above ``tile``, a multiple of ``multiple``, that splits ``size`` into
    equal blocks in no more blocks than ``tile`` would (2048 with 248 -> 256: 8 blocks instead
    of 9 with a short last one, which runs as a full zero-padded block); ``None`` if none."""
    if size <= tile:
        return None
    for blocks in range(-(-size // int(tile * 1.1)), -(-size // tile) + 1):
        if size % blocks == 0 and (size // blocks) % multiple == 0 and \
                size // blocks <= tile * 1.1:
            return size // blocks
    return None


def _balanced(size: int, tile: int, multiple: int) -> int:
    """The tile, at most ``tile``, that splits ``size`` into as many blocks as ``tile`` does but
    of near-equal sizes (a multiple of ``multiple``): 2048 with 248 -> 232 (9 blocks of 232 and
    a last one of 192) instead of 8 x 248 + 64, a last block that costs a full sweep of packing
    for 3% of the work."""
    if size <= tile:
        return -(-size // multiple) * multiple if size > multiple else size
    blocks = -(-size // tile)
    even = -(-size // blocks)
    even = -(-even // multiple) * multiple
    return min(tile, even) if even <= tile else tile


def default_blis_params(m: int, n: int, k: int, elem_bytes: int,
                        machine: Optional[MachineModel] = None,
                        given: Optional[dict] = None,
                        c_row_bytes: Optional[int] = None) -> BlisParams:
    """Fill the tile parameters the op does not give from an analytical model of the machine
    (``c_row_bytes``: the distance between C's rows, when known; see :func:`_register_tile`):

    * register tile M_R x N_R: fits the vector registers in the permuted order (measured shapes
      on AVX2); given tile sizes keep the paper's order unless it would spill and the permuted
      one would not (section 2.12);
    * K_C: a K_C x N_R micro-panel of B takes two thirds of L1, or up to 10% more when that
      splits K exactly (:func:`_dividing`);
    * M_C: an M_C x K_C block of A takes a third of L2 (a multiple of M_R);
    * both balanced so the last block is not a sliver (:func:`_balanced`);
    * N_C: all of N, or as much as lets a K_C x N_C block of B take half of L3;
    * K_U = 4.
    Tiles are clamped to the problem size so small problems do not get huge empty tiles.
    """
    machine = machine or MachineModel()
    given = {key: v for key, v in (given or {}).items() if v is not None}
    origin = {}
    # GEPB's tile when GEPB is what the model would choose for it, else GEBP's.  The order is
    # decided with GEPB's M_R: deciding again with GEBP's (fewer rows) could flip it back to
    # GEPB with a tile made for GEBP (49x512x4608 f64 on Zen 4 ran GEPB with 3x32: 0.97x-0.99x
    # numpy; GEBP with its own tile 1.14x)
    tile = _register_tile(machine, elem_bytes, c_row_bytes, gebp=False)
    decision_mr = given.get("M_R", tile.m_r)
    if given.get("l2_block") == "A" or _choose_l2_block(
            machine, elem_bytes, k, decision_mr,
            given.get("register_form", tile.form),
            _gebp_k_c(machine, elem_bytes, given.get("N_R", tile.n_r)),
            _gepb_k_c(machine, elem_bytes, decision_mr), given, m, n)[0] == "A":
        tile = _register_tile(machine, elem_bytes, c_row_bytes, k=k)
    if given.get("register_form") == "col":
        tile = _column_tile(machine, elem_bytes)
    mr, nr, order = tile.m_r, tile.n_r, tile.order
    reasons = list(tile.reasons)
    values = {"M_R": mr, "N_R": nr}
    for name in ("M_R", "N_R"):
        values[name] = given.get(name, values[name])
    mr, nr = values["M_R"], values["N_R"]
    if "M_R" in given or "N_R" in given:
        # the paper's order (.., d1, d0) unless it needs more vector registers than the
        # machine has and the permuted one of section 2.12 does not (it would spill)
        lanes = machine.lanes(elem_bytes)
        vecs = -(-nr // lanes)
        regs = machine.num_vector_registers
        spills_ji = mr * vecs + mr + 1 > regs
        order = "ij" if spills_ji and mr * vecs + vecs + 1 <= regs else "ji"
        reasons = [r for r in reasons[:1]] + [f"{mr}x{nr} given by the op"]
    form = given.get("register_form", tile.form)
    if form == "col":
        reasons[0] = ("form col (given: vector loads of A's packed column, B broadcast, C "
                      "added through a transposed buffer)")
        order = given.get("register_order", "ji")
    kc_gebp = _gebp_k_c(machine, elem_bytes, nr)
    l2_block, why = _choose_l2_block(machine, elem_bytes, k, decision_mr, form, kc_gebp,
                                     _gepb_k_c(machine, elem_bytes, decision_mr), given, m, n)
    reasons.append(why)
    if l2_block == "B":
        kc, mc, nc, more = _gepb_blocking(m, n, k, elem_bytes, machine, mr, nr, given)
    else:
        kc, mc, nc, more = _gebp_blocking(m, n, k, elem_bytes, machine, mr, nr, kc_gebp,
                                          given)
    reasons += more
    mc, nc, more = _whole_register_tiles(m, n, mc, nc, mr, nr)
    reasons += more
    ku = given.get("K_U", 4)
    if "K_U" in given:
        reasons.append(f"K_U {ku} (given)")
    elif kc % ku:
        reasons.append(f"K_U {ku}: k unrolled by {ku}, with a cleanup loop of {kc % ku} "
                       f"(K_C {kc} is not a multiple of {ku})")
    else:
        reasons.append(f"K_U {ku}: k unrolled by {ku} (K_C is a multiple of {ku}: no cleanup "
                       f"loop)")
    for name, v in (("M_C", mc), ("K_C", kc), ("M_R", mr), ("N_R", nr), ("K_U", ku),
                    ("N_C", nc)):
        origin[name] = "attribute" if name in given else "model"
    k_outer = l2_block == "B" and nc is not None and nc >= n and kc < k
    if k_outer:
        reasons.append(f"K_C loop outside the M_C loop: all of N is one block of B, packed "
                       f"once per K_C block instead of once per M_C block")
    return BlisParams(M_C=mc, K_C=kc, M_R=mr, N_R=nr, K_U=ku, N_C=nc,
                      register_order=given.get("register_order", order),
                      register_form=form, l2_block=l2_block, k_outer=k_outer,
                      origin=origin, reasons=tuple(reasons))


def microkernel_params(m: int, n: int, k: int, elem_bytes: int, machine: Optional[MachineModel],
                       given: dict, kernel: MicroKernelChoice) -> BlisParams:
    """:func:`default_blis_params` for a library micro-kernel (``--hopt-blis``): its tile, and
    the loop order it was written for (the order that keeps its L1 panel in L1,
    :class:`MicroKernelChoice`); in GEPB's order K_C as large as lets A's M_R x K_C micro-panel
    take all but one of L1's ways, as BLIS's configurations size it (skx's dgemm kernel:
    14 x 256 doubles, 28 of 32 KiB), the call and its C update spread over more k than
    polyopt's own tile needs (Zen 4, 2088x2048x2048, one thread, against numpy in the same
    run: ``bli_sgemm_skx_asm_32x12_l2`` 0.92x in GEBP's order with K_C 160, 0.93x in GEPB's
    with K_C 128, 0.99x-1.01x with K_C 448-592; ``bli_dgemm_skx_asm_16x14`` 0.94x, 0.85x,
    0.97x with K_C 256, 0.94x with 216)."""
    machine = machine or MachineModel()
    given = {**given, "M_R": kernel.m_r, "N_R": kernel.n_r}
    order = "B" if kernel.l1_panel == "A" else "A"
    chosen, why = {}, {}
    if "l2_block" not in given:
        chosen["l2_block"] = order
        why[f"l2_block {order} (given)"] = (
            f"l2_block {order}: {kernel.symbol} keeps "
            + ("A's micro-panel in L1 (called with A and B swapped): GEPB, B's K_C x N_C block "
               "in L2" if order == "B" else "B's micro-panel in L1: GEBP, A's block in L2"))
    if given.get("l2_block", order) == "B" == order and "K_C" not in given:
        ways = max(1, machine.l1d_ways)
        t = int(machine.l1d_bytes * (ways - 1) / ways / (kernel.m_r * elem_bytes))
        kc = _fit_k_c(k, max(_K_C_MULTIPLE, t - t % _K_C_MULTIPLE))
        chosen["K_C"] = kc
        why[f"K_C {kc} (given)"] = (
            f"K_C {kc}: A's micro-panel {kernel.m_r}x{kc} = "
            f"{kernel.m_r * kc * elem_bytes / 1024:.1f} KiB in {ways - 1} of {ways} L1 ways, as "
            f"BLIS sizes its kernels' L1 panel")
    p = default_blis_params(m, n, k, elem_bytes, machine, {**given, **chosen})
    return replace(p, reasons=tuple(next((w for g, w in why.items() if r.startswith(g)), r)
                                    for r in p.reasons),
                   origin={**p.origin, **{name: "model" for name in chosen if name in p.origin}})


def unpacked_params(m: int, n: int, k: int, elem_bytes: int,
                    machine: Optional[MachineModel] = None,
                    c_row_bytes: Optional[int] = None) -> Optional[BlisParams]:
    """The BLIS parameters of a small product that is better not packed (BLIS's small/unpacked
    "sup" path, OpenBLAS's small-matrix kernels), None when packing pays: A and B together fit
    in L2 and a register tile of the model's kind divides M and N (:func:`_dividing_tile`),
    so that every tile is whole without the zero padding of packed panels.  The copies
    would cost more than the reuse they buy: on Zen 4, one thread, unpacked over packed,
    f32 96^3 1.13x, 128^3 1.06x, 256^3 1.05x, 384^3 1.01x, 512^3 0.98x; f64 64^3 1.15x,
    192^3 1.07x."""
    machine = machine or MachineModel()
    footprint = (m * k + k * n) * elem_bytes
    if footprint > machine.l2_bytes:
        return None
    tile = _dividing_tile(machine, elem_bytes, m, n)
    if tile is None:
        return None
    mr, nr = tile
    if b_panel_thrashes_l1(n, k, nr, mr, elem_bytes, machine):
        return None
    params = default_blis_params(m, n, k, elem_bytes, machine, {"M_R": mr, "N_R": nr},
                                 c_row_bytes=c_row_bytes)
    reasons = tuple(r for r in params.reasons if not r.endswith("given by the op")) + (
        f"not packed: A and B ({footprint / 1024:.0f} KiB) fit in L2 ({machine.l2_bytes >> 10} "
        f"KiB) and the {mr}x{nr} tile divides {m}x{n}, every tile whole (BLIS's small, "
        f"unpacked path)",)
    return replace(params, reasons=reasons, origin={**params.origin, "M_R": "model",
                                                    "N_R": "model"})


def l1_set_load(row_bytes: int, rows: int, width_bytes: int, machine: MachineModel) -> int:
    """The most lines that ``rows`` rows of ``width_bytes`` each, ``row_bytes`` apart (from an
    aligned start), put in one set of L1: rows a power-of-two stride apart share their sets."""
    line = max(1, machine.line_bytes)
    sets = max(1, machine.l1d_bytes // max(1, machine.l1d_ways) // line)
    load = [0] * sets
    for r in range(rows):
        first, last = r * row_bytes // line, (r * row_bytes + width_bytes - 1) // line
        for x in range(first, last + 1):
            load[x % sets] += 1
    return max(load)


def b_panel_thrashes_l1(n: int, k: int, nr: int, mr: int, elem_bytes: int,
                        machine: MachineModel) -> bool:
    """Whether an unpacked B's K x N_R panel, which every tile of a column of tiles reads
    again, overflows the L1 sets it maps to (:func:`l1_set_load` at least the ways: rows of a
    power-of-two length share sets), on a core whose tile would then stream B from L2 at more
    than half of L2's measured bandwidth (``vector bytes x FMAs per cycle / M_R``).  Zen 5 (2
    full-width FMAs a cycle: 32 of 48 bytes a cycle), one thread, same process, packed over
    unpacked: f64 128^3 1.30x, 192^3 1.24x, 256^3 1.27x, 128x128x64 1.33x, 2048x2048x32 2.9x;
    f32 128^3 1.06x, 192^3 1.02x-1.04x, 256^3 1.03x, 2048x2048x32 1.9x; where the panel fits
    its sets, unpacked stays ahead (f64 64^3 1.09x, 96^3 1.07x, f32 128x128x64 1.04x).  Zen 4
    (one 512-bit FMA a cycle: 16 of 32 bytes) ran f32 128^3 and 256^3 and f64 192^3 unpacked
    1.05x-1.07x faster: its tile waits less on B's misses."""
    stream = gepb_stream(machine, max(1, mr))
    if stream <= 0.5 * machine.l2_bytes_per_cycle:
        return False
    return l1_set_load(n * elem_bytes, k, nr * elem_bytes, machine) >= machine.l1d_ways


def _dividing_tile(machine: MachineModel, elem_bytes: int, m: int, n: int
                   ) -> Optional[tuple[int, int]]:
    """The row-form register tile (rows, columns) that :func:`_register_tile`'s criteria rank
    first among those dividing ``m`` x ``n`` (whole vectors of B's row), None if none does."""
    lanes = machine.lanes(elem_bytes)
    regs = machine.num_vector_registers
    need = accumulators_needed(machine)
    wide = regs >= 32
    target = max(need, regs // 2)
    order = "ji" if wide else "ij"
    best = None
    for nv in range(1, (4 if wide else 2) + 1):
        if n % (nv * lanes):
            continue
        for mr in range(1, regs + 1):
            acc = mr * nv
            folded = machine.embedded_broadcast and nv == 1
            if m % mr or acc < need or _row_need(mr, nv, order, folded) > regs:
                continue
            key = _tile_rank(mr, nv, target, wide)
            if best is None or key > best[0]:
                best = (key, mr, nv * lanes)
    return None if best is None else best[1:]


def _whole_register_tiles(m: Optional[int], n: Optional[int], mc: int, nc: Optional[int],
                          mr: int, nr: int) -> tuple:
    """(M_C, N_C, reasons): a given M_C (N_C) that is not a multiple of M_R (N_R) and cuts M
    (N) taken down to one, as BLIS does (``bli_blksz_reduce_def_to``).  The register tiles are
    aligned to the matrix, not to the block: a block that is not a multiple cuts tiles,
    whose loops then keep a ``max`` bound and are not unrolled (given M_C = 196 with an 8-row
    tile, the 7x7 stem ran at 44.7 GFLOPS on two threads, 186.9 with M_C = 784)."""
    reasons = []

    def whole(block, tile, size, name, tile_name):
        if block is None or block % tile == 0 or (isinstance(size, int) and block >= size):
            return block
        fixed = max(tile, block - block % tile)
        reasons.append(f"{name} {block} -> {fixed}: a multiple of {tile_name} {tile} (a block "
                       f"that is not cuts register tiles, which then stay rolled)")
        return fixed
    return whole(mc, mr, m, "M_C", "M_R"), whole(nc, nr, n, "N_C", "N_R"), reasons


def _gebp_k_c(machine: MachineModel, elem_bytes: int, nr: int) -> int:
    """GEBP's K_C before fitting it to K: B's K_C x N_R micro-panel in two thirds of L1."""
    kc = int(0.66 * machine.l1d_bytes / (nr * elem_bytes))
    return max(8, kc - kc % 8)


def _gepb_k_c(machine: MachineModel, elem_bytes: int, mr: int) -> int:
    """GEPB's K_C before fitting it to K: A's M_R x K_C micro-panel in a quarter of L1 (the
    rest holds the lines of B streaming through and C's tile)."""
    kc = int(machine.l1d_bytes / 4 / (mr * elem_bytes))
    return max(8, kc - kc % 8)


#: GEPB's block of B in L2 serves the micro-panels of A; with fewer than this many (a short
#: A) it is packed, then streamed from L2 a few times only, where GEBP reads its micro-panel
#: of B from L1 (measured on Zen 4: 32x2048x2048 f64 0.96x -> 1.01x-1.02x numpy with GEBP,
#: 49x512x4608 0.95x -> 1.04x, f32 32x2048x2048 1.10x -> 1.25x; 64 rows were even, 128 rows
#: better with GEPB)
GEPB_MIN_PANELS_OF_A = 16


def short_a(m: int, n: int, k: int, elem_bytes: int, machine: MachineModel, mr: int) -> bool:
    """A of fewer than :data:`GEPB_MIN_PANELS_OF_A` micro-panels of ``mr`` rows against a B
    larger than L2: one thread runs it in GEBP's order (:func:`_choose_l2_block`)."""
    return m < GEPB_MIN_PANELS_OF_A * mr and k * n * elem_bytes > machine.l2_bytes


#: GEPB streams B's micro-panels from L2 (:func:`gepb_stream`): at most this share of L2's
#: measured bandwidth (:func:`_choose_l2_block`)
GEPB_STREAM_SHARE = 0.75


def gepb_stream(machine: MachineModel, mr: int) -> float:
    """The bytes of B a cycle that a row-form tile of ``mr`` rows reads at the FMA peak: GEPB's
    stream from L2, or an unpacked B's (:func:`b_panel_thrashes_l1`)."""
    return machine.vector_bits // 8 * machine.fma_per_cycle / mr


def gepb_stream_fits(machine: MachineModel, mr: int) -> bool:
    """Whether L2's measured bandwidth feeds GEPB's stream of B (:func:`gepb_stream`)."""
    bandwidth = machine.l2_bytes_per_cycle
    return bandwidth > 0 and gepb_stream(machine, mr) <= GEPB_STREAM_SHARE * bandwidth


def _choose_l2_block(machine: MachineModel, elem_bytes: int, k: int, mr: int, form: str,
                     kc_gebp: int, kc_gepb: int, given: dict, m: Optional[int] = None,
                     n: Optional[int] = None) -> tuple[str, str]:
    """GEBP (``"A"``: A's M_C x K_C block in L2, B's micro-panel in L1, the paper's order) or
    GEPB (``"B"``: B's K_C x N_C block in L2, A's micro-panel in L1), with the reason.

    A row-form tile reads N_R elements of B per k but only M_R of A, so B's micro-panel, which
    GEBP keeps in L1, limits K_C to a few dozen (80 f64 on a 32 KiB L1 with N_R = 32), and C
    is loaded and stored once per K_C block.  GEPB keeps the narrow A micro-panel in L1
    instead: a K_C several times deeper, fewer passes over C, at the price of streaming B's
    micro-panels from L2, ``vector bytes x FMAs per cycle / M_R`` bytes per cycle.  GEPB when
    that stream takes at most 3/4 of L2's measured bandwidth and the deeper K_C saves passes
    over C.  (Measured on Zen 4, 32 bytes/cycle from L2, with a 4-vector-wide tile streaming
    a 256 x 256 block of B: 6, 4 and 3 rows, 1/3 to 2/3 of the bandwidth, run at 98% of the
    FMA peak, 2 rows, all of it, at 92%.)  (Goto and van de Geijn, "Anatomy of High-Performance Matrix
    Multiplication", 2008, name the two orders; BLIS runs GEBP on the transposed, column-major
    problem, which is GEPB here.)  The column form broadcasts B: GEBP.  A short A (fewer than
    :data:`GEPB_MIN_PANELS_OF_A` micro-panels) with a B larger than L2: GEBP."""
    if "l2_block" in given:
        v = given["l2_block"]
        return v, f"l2_block {v} (given): " + ("GEPB, B's K_C x N_C block in L2" if v == "B"
                                               else "GEBP, A's M_C x K_C block in L2")
    gebp = "l2_block A (GEBP: A's block in L2, B's micro-panel in L1)"
    explicit = [name for name in ("M_C", "K_C", "N_C") if name in given]
    if explicit:
        return "A", gebp + f": {', '.join(explicit)} given (the paper's loop order)"
    if form != "row":
        return "A", gebp + ": the column form broadcasts B"
    if m is not None and n is not None and short_a(m, n, k, elem_bytes, machine, mr):
        return "A", (gebp + f": M = {m} is {-(-m // mr)} micro-panels of A, fewer than "
                            f"{GEPB_MIN_PANELS_OF_A} (of GEPB's {mr}-row tile): GEPB's block of "
                            f"B in L2 would serve too few of them")
    bandwidth = machine.l2_bytes_per_cycle
    stream = gepb_stream(machine, mr)
    if bandwidth <= 0:
        return "A", gebp + ": L2's bandwidth is not measured (GEPB streams B from it)"
    if stream > GEPB_STREAM_SHARE * bandwidth:
        return "A", (gebp + f": GEPB would stream B from L2 at {stream:.3g} bytes/cycle, more "
                            f"than 3/4 of the measured {bandwidth:g}")
    kc_gebp = _dividing(k, kc_gebp, _K_C_MULTIPLE) or _balanced(k, kc_gebp, _K_C_MULTIPLE)
    kc_gepb = _fit_k_c(k, kc_gepb)
    passes_gebp, passes_gepb = -(-k // kc_gebp), -(-k // kc_gepb)
    if passes_gepb >= passes_gebp:
        return "A", (gebp + f": K = {k} takes {passes_gebp} K_C block(s) either way (GEPB's "
                            f"K_C would be {kc_gepb})")
    return "B", (f"l2_block B (GEPB: B's K_C x N_C block in L2, A's M_R x K_C micro-panel in "
                 f"L1): K_C {kc_gepb} instead of GEBP's {kc_gebp}, {passes_gepb} passes "
                 f"over C instead of {passes_gebp}; B streams from L2 at {stream:.3g} of the "
                 f"measured {bandwidth:g} bytes/cycle")


def _fit_k_c(k: int, kc: int) -> int:
    """K_C for the reduction ``k`` near ``kc``: the split of ``k`` into blocks (a multiple of
    :data:`_K_C_MULTIPLE`, between 3/4 of ``kc`` and 10% above it) that pads the last block
    least (its zero-padded panels run a full K_C), fewer blocks on a tie; 2048 near 336 ->
    256 (8 exact blocks, not 7 of 296 with 24 padded)."""
    if k <= kc:
        return _balanced(k, kc, _K_C_MULTIPLE)
    best = None
    for blocks in range(-(-k // int(kc * 1.1)), -(-k // max(1, (3 * kc) // 4)) + 1):
        tile = -(-k // blocks)
        tile = -(-tile // _K_C_MULTIPLE) * _K_C_MULTIPLE
        key = (blocks * tile, blocks)
        if best is None or key < best[0]:
            best = (key, tile)
    return best[1]


def _cache_tile(size: int, budget_bytes: float, unit_bytes: int, multiple: int) -> int:
    """The tile of ``size`` whose ``unit_bytes`` per element take at most ``budget_bytes``,
    a multiple of ``multiple`` (at least one), balanced over ``size`` (:func:`_balanced`)."""
    t = int(budget_bytes / unit_bytes)
    return _balanced(size, max(multiple, t - t % multiple), multiple)


def _gebp_blocking(m, n, k, elem_bytes, machine, mr, nr, kc, given) -> tuple:
    """K_C, M_C, N_C and their reasons for GEBP: B's K_C x N_R micro-panel stays in L1 (two
    thirds of it: A's micro-panel streams through the rest); A's M_C x K_C block fills a third
    of L2 (packing B once per M_C block, a larger block repacks B less often: measured faster
    than half of L2 on the AVX-512 Zen 5); B's K_C x N_C block in at most half of L3."""
    reasons = []
    l1_way = machine.l1d_bytes // max(1, machine.l1d_ways)
    b_ways = max(1, (2 * machine.l1d_ways) // 3)
    kc = given.get("K_C", _dividing(k, kc, _K_C_MULTIPLE) or _balanced(k, kc, _K_C_MULTIPLE))
    reasons.append(f"K_C {kc}" + (" (given)" if "K_C" in given else
                   f": B's micro-panel {kc}x{nr} = {kc * nr * elem_bytes / 1024:.1f} KiB in "
                   f"{b_ways} of {machine.l1d_ways} L1 ways ({l1_way // 1024} KiB each)"))
    mc = given.get("M_C", _cache_tile(m, machine.l2_bytes / 3, kc * elem_bytes, mr))
    reasons.append(f"M_C {mc}" + (" (given)" if "M_C" in given else
                   f": A's block {mc}x{kc} = {mc * kc * elem_bytes / 1024:.0f} KiB in a third "
                   f"of L2 ({machine.l2_bytes // 1024} KiB, {machine.l2_ways} ways)"))
    nc = given.get("N_C")
    if nc is None:
        # B is packed once per K_C block (not once per M_C block) into a K_C x N_C block that
        # takes at most half of L3: repacking B for each M_C block cost 5-10% at 2088x2048
        limit = int(0.5 * machine.l3_bytes / (kc * elem_bytes))
        limit = max(nr, limit - limit % nr)
        # (an op that sets M_C or K_C itself, as the paper's listings, keeps its loop
        # structure: N_C only when N exceeds that limit)
        explicit = "M_C" in given or "K_C" in given
        nc = (limit if n > limit else None) if explicit else min(limit, _balanced(n, limit, nr))
        if nc is not None:
            reasons.append(f"N_C {nc}: B's K_C x N_C block in at most half of L3 "
                           f"({machine.l3_bytes >> 20} MiB)")
    return kc, mc, nc, reasons


def gepb_m_c_bound(machine: MachineModel, kc: int, elem_bytes: int, mr: int) -> int:
    """GEPB's largest M_C: A's M_C x K_C block in half of L3, a multiple of ``mr``."""
    t = int(machine.l3_bytes / 2 / (kc * elem_bytes))
    return max(mr, t - t % mr)


#: B's block may take this much more than GEPB's quarter of L2 where that holds all of N:
#: a second block of a few columns costs a second sweep over A and its own edge tiles (Zen
#: 5, f32 255x257x253: N_C 192 + 65 ran 0.93x numpy, one block of 320 1.00x-1.01x).
GEPB_N_C_SLACK = 1.1


def _gepb_blocking(m, n, k, elem_bytes, machine, mr, nr, given) -> tuple:
    """K_C, M_C, N_C and their reasons for GEPB: A's M_R x K_C micro-panel in a quarter of L1
    (:func:`_gepb_k_c`, fitted to K by :func:`_fit_k_c`); B's K_C x N_C block in a quarter of
    L2 (Zen 4, same run, 2088 and 1000 squares f64 and f32: N_C for a quarter 1.005-1.024x
    the N_C for half, an eighth like a quarter); A's M_C x K_C block in half of L3 (all of M
    when it fits, so that B is packed once per K_C x N_C block), or in a quarter of L2 when
    all of N is one block of B and nothing reuses A's block."""
    reasons = []
    kc = given.get("K_C", _fit_k_c(k, _gepb_k_c(machine, elem_bytes, mr)))
    reasons.append(f"K_C {kc}" + (" (given)" if "K_C" in given else
                   f": A's micro-panel {mr}x{kc} = {mr * kc * elem_bytes / 1024:.1f} KiB in a "
                   f"quarter of L1 ({machine.l1d_bytes // 1024} KiB)"))
    quarter = machine.l2_bytes / 4
    stretched = quarter < n * kc * elem_bytes <= GEPB_N_C_SLACK * quarter
    nc = given.get("N_C", _balanced(n, -(-n // nr) * nr, nr) if stretched else
                   _cache_tile(n, quarter, kc * elem_bytes, nr))
    reasons.append(f"N_C {nc}" + (" (given)" if "N_C" in given else
                   f": all of N in B's block {kc}x{n} = {kc * n * elem_bytes / 1024:.0f} KiB, "
                   f"up to {GEPB_N_C_SLACK:g} of a quarter of L2 ({machine.l2_bytes // 1024} "
                   f"KiB)" if stretched else
                   f": B's block {kc}x{nc} = {kc * nc * elem_bytes / 1024:.0f} KiB in a "
                   f"quarter of L2 ({machine.l2_bytes // 1024} KiB)"))
    if nc < n:
        mc = given.get("M_C", _balanced(m, gepb_m_c_bound(machine, kc, elem_bytes, mr), mr))
        reasons.append(f"M_C {mc}" + (" (given)" if "M_C" in given else
                       f": A's block {mc}x{kc} = {mc * kc * elem_bytes / 2**20:.1f} MiB in half "
                       f"of L3 ({machine.l3_bytes >> 20} MiB), reused by {-(-n // nc)} blocks "
                       f"of B"))
    else:
        # one block of B: each packed block of A is read once, so it should still be in L2
        # when the micro-kernel reads it (doitgen's 21000x160x160 on Zen 4: M_C 10500, a
        # 12.8 MiB block, 18 GFLOPS; M_C 204, a quarter of L2, 49 GFLOPS)
        mc = given.get("M_C", _cache_tile(m, machine.l2_bytes / 4, kc * elem_bytes, mr))
        reasons.append(f"M_C {mc}" + (" (given)" if "M_C" in given else
                       f": A's block {mc}x{kc} = {mc * kc * elem_bytes / 1024:.0f} KiB in a "
                       f"quarter of L2, since the one block of B (N {n} <= N_C) reads it once"))
    return kc, mc, nc, reasons


def with_order(params: BlisParams, order: str) -> BlisParams:
    return replace(params, register_order=order)
