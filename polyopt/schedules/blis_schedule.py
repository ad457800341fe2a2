"""BLIS/OpenBLAS tiling as one polyhedral schedule (paper sections 2.4-2.5, 2.12).

For ``C[i, j] += A[i, k] * B[k, j]`` over (d0, d1, d2) = (i, j, k) the schedule is

    (d0, d1, d2) -> (d1 floordiv N_C, d2 floordiv K_C, d0 floordiv M_C, d1 floordiv N_R,
                     d0 floordiv M_R, d2, d1, d0)

(without the first dimension when ``N_C`` is not given).  The last two dimensions are the register
tile: ``(.., d1, d0)`` is the paper's first order; ``register_order="ij"`` gives the permuted
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
    features: frozenset = frozenset()  # LLVM feature names the CPU has ("avx512f", "amx-bf16", ...)

    def lanes(self, elem_bytes: int) -> int:
        return max(1, self.vector_bits // (8 * elem_bytes))


@dataclass(frozen=True)
class MicroKernelChoice:
    """The library micro-kernel a BLIS-mode (``--hopt-blis``) matmul calls: its symbol and
    its register tile in the matmul's orientation (rows of C x columns of C)."""

    symbol: str
    m_r: int
    n_r: int


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
        if self.register_form not in ("row", "col"):
            raise ValueError(f"register_form must be 'row' or 'col', got {self.register_form!r}")

    def schedule(self) -> AffineMap:
        """The schedule map over (d0, d1, d2) = (i, j, k)."""
        i, j, k = dim(0), dim(1), dim(2)
        results = []
        if self.N_C is not None:
            results.append(j.floordiv(self.N_C))
        results += [k.floordiv(self.K_C), i.floordiv(self.M_C), j.floordiv(self.N_R),
                    i.floordiv(self.M_R), k]
        results += [j, i] if self.register_order == "ji" else [i, j]
        return AffineMap.get(3, 0, tuple(results))

    def register_need(self, lanes: int) -> int:
        """Vector registers the unrolled M_R x N_R tile keeps live (paper section 2.12)."""
        vecs = -(-self.N_R // lanes)
        if self.register_order == "ji":
            return self.M_R * vecs + self.M_R + 1
        return self.M_R * vecs + vecs + 1

    def describe(self) -> str:
        parts = [f"M_C={self.M_C}", f"K_C={self.K_C}"]
        if self.N_C is not None:
            parts.append(f"N_C={self.N_C}")
        parts += [f"M_R={self.M_R}", f"N_R={self.N_R}", f"K_U={self.K_U}",
                  f"order={self.register_order}", f"form={self.register_form}"]
        src = {k: v for k, v in self.origin.items() if v != "attribute"}
        tail = f" (from the model: {', '.join(sorted(src))})" if src else ""
        return ", ".join(parts) + tail


# Register tiles that LLVM 22 compiles without spills and near peak on AVX2 (PERF-NOTES.md,
# measured), best first; used when the machine has 16 vector registers.
_MEASURED_AVX2 = {8: [(6, 8, "ij"), (4, 12, "ij")], 4: [(4, 24, "ij"), (6, 16, "ij")]}


# Register tiles measured on AVX-512 (Zen 5, 32 zmm registers, 48 KiB 12-way L1d), ratio to
# OpenBLAS's SkylakeX kernel in the same run at 2088x2048x2048: f64 4x32 1.11-1.12x, 3x32 1.14x,
# 4x24 1.10x, 6x32 1.05x, 4x40 1.04x, 8x16 0.97x; f32 4x64 1.03-1.05x, 3x64 1.04x, 5x64 1.03x,
# 6x64 1.02x, 8x32 0.98-1.00x, 4x48 0.97-0.99x, 16x16 0.79x (all at 1000^3, where C stays in
# cache, within 2% of each other).  C's rows are often a multiple of 4 KiB apart, so a tile's
# M_R rows share L1 sets: B's K_C x N_R micro-panel takes 2/3 of every set's ways and C's rows
# must fit in the rest, or they evict the prefetched tile of C (and B) before the k loop ends.
# Hence few rows and wide tiles: 4 rows x 4 vectors keeps 16 accumulators and C's lines in 4
# ways.
_MEASURED_AVX512 = {8: [(4, 32, "ji")], 4: [(4, 64, "ji")]}


def _register_tile(machine: MachineModel, elem_bytes: int) -> tuple[int, int, str]:
    lanes = machine.lanes(elem_bytes)
    measured = None
    if machine.vector_bits == 256 and machine.num_vector_registers == 16:
        measured = _MEASURED_AVX2.get(elem_bytes)
    elif machine.vector_bits == 512 and machine.num_vector_registers == 32:
        measured = _MEASURED_AVX512.get(elem_bytes)
    if measured:
        return measured[0]
    # Otherwise: the largest accumulator block that fits the register file in the permuted
    # order, with enough independent accumulators to cover FMA latency (>= 8), at most as many
    # rows as the L1 ways B's micro-panel leaves free (a third of them, see above; a VIPT L1
    # has 4 KiB per way), preferring square-ish tiles (fewer loads per FMA).
    best = None
    regs = machine.num_vector_registers
    max_rows = max(1, max(1, machine.l1d_bytes // 4096) // 3)
    for nr_vecs in range(1, 5):
        for mr in range(1, max_rows + 1):
            need = mr * nr_vecs + nr_vecs + 1
            if need > regs or mr * nr_vecs < 8:
                continue
            loads_per_fma = (mr + nr_vecs) / (mr * nr_vecs)
            key = (mr * nr_vecs, -loads_per_fma)
            if best is None or key > best[0]:
                best = (key, (mr, nr_vecs * lanes, "ij"))
    return best[1] if best else (4, 2 * lanes, "ij")


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
                        given: Optional[dict] = None) -> BlisParams:
    """Fill the tile parameters the op does not give from an analytical model of the machine:

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
    mr, nr, order = _register_tile(machine, elem_bytes)
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
    # B's K_C x N_R micro-panel stays in L1 (two thirds of it: A's micro-panel streams through
    # the rest); A's M_C x K_C block fills most of L2 (packing B once per M_C block, a larger
    # block repacks B less often: measured faster than half of L2 on the AVX-512 Zen 5)
    kc = int(0.66 * machine.l1d_bytes / (nr * elem_bytes))
    kc = max(8, kc - kc % 8)
    kc = given.get("K_C", _dividing(k, kc, _K_C_MULTIPLE) or _balanced(k, kc, _K_C_MULTIPLE))
    mc = int(machine.l2_bytes / 3 / (kc * elem_bytes))
    mc = max(mr, mc - mc % mr)
    mc = given.get("M_C", _balanced(m, mc, mr))
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
    ku = given.get("K_U", 4)
    for name, v in (("M_C", mc), ("K_C", kc), ("M_R", mr), ("N_R", nr), ("K_U", ku),
                    ("N_C", nc)):
        origin[name] = "attribute" if name in given else "model"
    return BlisParams(M_C=mc, K_C=kc, M_R=mr, N_R=nr, K_U=ku, N_C=nc,
                      register_order=given.get("register_order", order),
                      register_form=given.get("register_form", "row"), origin=origin)


def with_order(params: BlisParams, order: str) -> BlisParams:
    return replace(params, register_order=order)
