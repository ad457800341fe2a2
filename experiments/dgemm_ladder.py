"""Figure 5 of the paper: DGEMM 2088x2048x2048, one optimization at a time.

    python3 -m experiments.dgemm_ladder [--size M N K] [--slow-size M N K] [--reps N]

The steps (each a set of ``polyopt.compile`` switches and ``hop.matmul`` tile attributes):
naive -> cache tiling with section 2.5's schedule -> BLIS tiling -> +packing ->
+unroll-and-jam -> +scalar replacement -> +vectorization; then the register tiles the paper
tried with all passes on (4x8, 6x8, 3x16, and section 2.12's permuted order), the tuned
configuration (the machine model's tiles, all passes), BLIS mode (``blis=True``: the BLIS
micro-kernel inside polyopt's loops) and numpy.

LLVM 22 vectorizes the unrolled register tile by itself (its SLP vectorizer), which hides
what polyopt's own vectorization does; the steps from +packing on are therefore run twice:
with LLVM's vectorizers (the default) and without (``llvm_vectorize=False``), the paper's
setting, where vectors come only from ``vect=True``.

To try another configuration, add a Step: ``Step(Variant("8x16, K_U=8", ALL_PASSES,
{"M_R": 8, "N_R": 16, "K_U": 8}), 2088, 2048, 2048)``.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
from dataclasses import replace  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

from polyopt.bench import Variant, paper_ladder  # noqa: E402
from polyopt.codegen.target import host_target  # noqa: E402

from experiments.common import ALL_PASSES, PaperRef, Step  # noqa: E402

TITLE = "DGEMM ladder (paper Figure 5)"
PAPER_SIZE = (2088, 2048, 2048)

# The paper's GFLOPS (its i7-8700K, 75.2 GFLOPS peak), by step label.
PAPER = {
    "naive": PaperRef(0.558, "2.3", "hop.matmul expanded to the naive nest, LLVM -O3"),
    "tiling (2.5)": PaperRef(1.60, "2.5"),
    "BLIS tiling": PaperRef(None, "2.7", "the full schedule without unroll-and-jam: not timed"),
    "+packing": PaperRef(2.39, "2.6"),
    "+unroll-and-jam": PaperRef(None, "2.7", "timed only together with scalar replacement"),
    "+scalar replacement": PaperRef(23.27, "2.7", "unroll-and-jam + scalar replacement, 4x8 "
                                    "tile, K_U = 4"),
    "+vectorization": PaperRef(49.83, "2.8.1", "4x8 tile"),
    "4x8 tile": PaperRef(49.73, "2.10", "M_C = 72, K_C = 256"),
    "6x8 tile": PaperRef(40.41, "2.10", "the paper's register order needs 6*8/4 + 6 + 1 = 19 "
                         "of 16 ymm registers: it spills"),
    "3x16 tile": PaperRef(61.94, "2.10", "M_C = 180, K_C = 480: the paper's best"),
    "permuted": PaperRef(58.8, "2.12", "its 6x8 in the permuted order (15 registers, no "
                         "spill) is 'about 5% slower' than 3x16: 0.95 x 61.94",
                         approximate=True),
    "tuned": PaperRef(61.94, "2.10", "the paper's tuned configuration is its 3x16 tile"),
    "BLIS mode (2.12)": PaperRef(61.42, "2.12", "bli_dgemm_haswell_asm_6x8, M_C = 174, "
                                 "K_C = 512"),
}
NUMPY_PAPER = PaperRef(67.49, "1.3.2", "OpenBLAS; MKL 67.70, BLIS 63.29")

# (label, M_R, N_R, key into PAPER) of the register tiles the paper tried in section 2.10
DGEMM_TILES = [("4x8 tile", 4, 8, "4x8 tile"), ("6x8 tile", 6, 8, "6x8 tile"),
               ("3x16 tile", 3, 16, "3x16 tile")]


def register_need(m_r: int, n_r: int, lanes: int, order: str) -> int:
    """Vector registers an unrolled M_R x N_R tile keeps live (paper section 2.12): the
    accumulators, plus M_R broadcasts of A in the paper's order (.., j, i) or N_R/lanes
    vectors of B in the permuted order (.., i, j), plus one."""
    vecs = -(-n_r // lanes)
    return m_r * vecs + (m_r if order == "ji" else vecs) + 1


def permuted_tile(lanes: int, registers: int) -> tuple[int, int]:
    """The register tile with the fewest rows that spills in the paper's order on this
    register file and fits in the permuted one, i.e. the tile for which polyopt chooses
    section 2.12's permutation by itself: 6x8 on AVX2 f64, 8x24 on AVX-512 f64."""
    for m_r in range(1, registers):
        for vecs in range(1, 5):
            n_r = vecs * lanes
            if register_need(m_r, n_r, lanes, "ji") > registers >= \
                    register_need(m_r, n_r, lanes, "ij"):
                return m_r, n_r
    raise ValueError(f"no register tile spills only in the paper's order with {registers} "
                     f"registers of {lanes} lanes")


def tile_steps(dtype: str, size: tuple[int, int, int], tiles, paper: dict,
               paper_permuted_tile: tuple[int, int]) -> list[Step]:
    """All passes with each register tile given as M_R/N_R attributes (the model fills in
    the rest; polyopt picks the register order), then section 2.12's permuted order."""
    target = host_target()
    lanes = target.vector_width(64 if dtype == "f64" else 32)
    regs = target.num_vector_registers
    steps = []
    for label, m_r, n_r, key in tiles:
        need = register_need(m_r, n_r, lanes, "ji")
        note = f"paper's order needs {need} of this machine's {regs} vector registers"
        if need <= regs:
            note += ": no spill, polyopt keeps it"
        elif register_need(m_r, n_r, lanes, "ij") <= regs:
            note += ": it would spill, polyopt permutes it (2.12)"
        else:
            note += ": it spills in either order"
        steps.append(Step(Variant(label, ALL_PASSES, {"M_R": m_r, "N_R": n_r}), *size, dtype,
                          paper.get(key), note))
    m_r, n_r = paper_permuted_tile
    ji, ij = register_need(m_r, n_r, lanes, "ji"), register_need(m_r, n_r, lanes, "ij")
    if ji > regs >= ij:
        note = (f"the paper's order would need {ji} of this machine's {regs} registers, the "
                f"permuted one {ij}: polyopt picks the permuted order by itself")
    else:
        # polyopt does not permute the paper's tile here (no spill in the paper's order, or a
        # spill either way): show the permutation on the tile that needs it on this machine
        m_r, n_r = permuted_tile(lanes, regs)
        note = (f"the paper's {paper_permuted_tile[0]}x{paper_permuted_tile[1]} needs {ji} of "
                f"this machine's {regs} registers in its order, {ij} permuted, so polyopt keeps "
                f"the paper's order for it; {m_r}x{n_r} needs "
                f"{register_need(m_r, n_r, lanes, 'ji')} in the paper's order and "
                f"{register_need(m_r, n_r, lanes, 'ij')} permuted: polyopt picks the permuted "
                f"order by itself")
    steps.append(Step(Variant(f"{m_r}x{n_r} tile, permuted (2.12)", ALL_PASSES,
                              {"M_R": m_r, "N_R": n_r}), *size, dtype, paper.get("permuted"),
                      note))
    return steps


def ladder(dtype: str, size: tuple[int, int, int], slow_size: Optional[tuple] = None, *,
           tiles, paper: dict, paper_permuted_tile: tuple[int, int]) -> list[Step]:
    """The ladder for ``dtype``: ``slow_size`` (default ``size``) for the two slow first
    steps, naive and section 2.5's tiling."""
    slow = slow_size or size
    tiling = {v.label: v for v in paper_ladder(*slow)}["tiling (2.5)"]
    steps = [Step(Variant("naive", {"hopt": False}), *slow, dtype, paper.get("naive")),
             Step(tiling, *slow, dtype, paper.get("tiling (2.5)")),
             Step(Variant("BLIS tiling", {"hopt": True}), *size, dtype,
                  paper.get("BLIS tiling"))]
    switches = {"hopt": True}
    from_packing = []
    for label, switch in (("+packing", "copy"), ("+unroll-and-jam", "unroll"),
                          ("+scalar replacement", "scalrep"), ("+vectorization", "vect")):
        switches = {**switches, switch: True}
        from_packing.append(Step(Variant(label, switches), *size, dtype, paper.get(label)))
    from_packing += tile_steps(dtype, size, tiles, paper, paper_permuted_tile)
    from_packing.append(Step(Variant("tuned (model's tiles)", ALL_PASSES), *size, dtype,
                             paper.get("tuned"), "all passes, tile sizes from polyopt's "
                             "machine model"))
    blis = Step(Variant("BLIS mode (2.12)", {"hopt": True, "blis": True}), *size, dtype,
                paper.get("BLIS mode (2.12)"), "polyopt's tiling and packing around the "
                "BLIS micro-kernel (blis=True)", optional=True)
    without_llvm = [replace(s, variant=replace(s.variant, switches={**s.variant.switches,
                                                                    "llvm_vectorize": False}))
                    for s in from_packing]
    return steps + from_packing + [blis] + without_llvm


def steps(size: tuple[int, int, int] = PAPER_SIZE,
          slow_size: Optional[tuple[int, int, int]] = None) -> list[Step]:
    return ladder("f64", size, slow_size, tiles=DGEMM_TILES, paper=PAPER,
                  paper_permuted_tile=(6, 8))


def tuned_result(records: Sequence[dict]) -> Optional[dict]:
    """The tuned step with LLVM's vectorizers on: its run's numpy makes the numpy row."""
    return next((r for r in records if r["label"].startswith("tuned") and r["llvm_vectorize"]),
                None)


def main(argv=None, title: str = TITLE, build=steps, dtype: str = "f64",
         numpy_paper: Optional[PaperRef] = NUMPY_PAPER) -> int:
    from polyopt.codegen.peak import measure_peak

    from experiments.common import print_standalone, run_steps
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--size", type=int, nargs=3, default=PAPER_SIZE, metavar=("M", "N", "K"))
    parser.add_argument("--slow-size", type=int, nargs=3, metavar=("M", "N", "K"),
                        help="size of the naive and section 2.5 steps (default: --size)")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    ladder_steps = build(tuple(args.size), tuple(args.slow_size) if args.slow_size else None)
    records = run_steps(ladder_steps, reps=args.reps,
                        peaks={dtype: measure_peak(dtype).gflops}, name=title)
    print_standalone(title, records, tuned_result(records), numpy_paper)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
