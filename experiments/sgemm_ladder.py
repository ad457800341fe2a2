"""Figure 6 of the paper: SGEMM 2088x2048x2048, the DGEMM ladder in f32.

    python3 -m experiments.sgemm_ladder [--size M N K] [--slow-size M N K] [--reps N]

Section 2.13 changes f64 to f32 and doubles N_R ("two times the number of f32 elements can be
held in a vector register"), so the register tiles are the DGEMM ones with N_R doubled: 4x16,
6x16 and the paper's SGEMM tile 3x32.  Figure 6's bars are not given as numbers in the paper's
text: the paper column stays empty, with what section 2.13 says in words.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

from typing import Optional  # noqa: E402

from experiments import dgemm_ladder  # noqa: E402
from experiments.common import PaperRef, Step  # noqa: E402

TITLE = "SGEMM ladder (paper Figure 6)"

PAPER = {
    "3x32 tile": PaperRef(None, "2.13", "M_C = 348, K_C = 512, M_R = 3, N_R = 32: 'within 2% "
                          "of MKL ... marginally better than OpenBLAS and BLIS' (no number)"),
    "tuned": PaperRef(None, "2.13", "the paper's tuned SGEMM is its 3x32 tile"),
    "BLIS mode (2.12)": PaperRef(None, "2.13", "'nearly on par with pure MLIR' (no number)"),
}
NUMPY_PAPER = PaperRef(None, "2.13", "not given for f32")

SGEMM_TILES = [("4x16 tile", 4, 16, "4x16 tile"), ("6x16 tile", 6, 16, "6x16 tile"),
               ("3x32 tile (2.13)", 3, 32, "3x32 tile")]


def steps(size: tuple[int, int, int] = dgemm_ladder.PAPER_SIZE,
          slow_size: Optional[tuple[int, int, int]] = None) -> list[Step]:
    return dgemm_ladder.ladder("f32", size, slow_size, tiles=SGEMM_TILES, paper=PAPER,
                               paper_permuted_tile=(6, 16))


if __name__ == "__main__":
    raise SystemExit(dgemm_ladder.main(title=TITLE, build=steps, dtype="f32",
                                       numpy_paper=NUMPY_PAPER))
