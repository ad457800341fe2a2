"""Section 2.10's ablations: the best configuration (all passes, the machine model's tiles)
with one pass taken away at a time.

    python3 -m experiments.ablations [--size M N K] [--reps N]

The paper ran them on its best 3x16 configuration (61.84 GFLOPS).  "Without vectorization"
is run twice: with LLVM's vectorizers (the default; LLVM 22 vectorizes the scalar-replaced
tile by itself) and without them, the paper's setting.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402

from polyopt.bench import Variant  # noqa: E402

from experiments.common import ALL_PASSES, PaperRef, Step  # noqa: E402
from experiments.dgemm_ladder import NUMPY_PAPER, PAPER_SIZE  # noqa: E402

TITLE = "Ablations on the best configuration (paper section 2.10)"

# (label, switches, the paper's GFLOPS)
ABLATIONS = [
    ("all passes", ALL_PASSES, PaperRef(61.84, "2.10", "3x16, M_C = 180, K_C = 480")),
    ("without packing", {**ALL_PASSES, "copy": False}, PaperRef(22.53, "2.10")),
    ("without unroll-and-jam", {**ALL_PASSES, "unroll": False}, PaperRef(15.57, "2.10")),
    ("without packing and unroll-and-jam", {**ALL_PASSES, "copy": False, "unroll": False},
     PaperRef(10.79, "2.10")),
    ("without scalar replacement", {**ALL_PASSES, "scalrep": False},
     PaperRef(10.80, "2.11.1")),
    ("without vectorization", {**ALL_PASSES, "vect": False},
     PaperRef(23.27, "2.7", "no 3x16 number without vectorization: this is 2.7's 4x8 tile "
                            "with packing, unroll-and-jam and scalar replacement")),
    ("without vectorization", {**ALL_PASSES, "vect": False, "llvm_vectorize": False},
     PaperRef(23.27, "2.7", "no 3x16 number without vectorization: this is 2.7's 4x8 tile "
                            "with packing, unroll-and-jam and scalar replacement")),
]


def steps(size: tuple[int, int, int] = PAPER_SIZE, dtype: str = "f64") -> list[Step]:
    return [Step(Variant(label, switches), *size, dtype, paper)
            for label, switches, paper in ABLATIONS]


def main(argv=None) -> int:
    from polyopt.codegen.peak import measure_peak

    from experiments.common import print_standalone, run_steps
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--size", type=int, nargs=3, default=PAPER_SIZE, metavar=("M", "N", "K"))
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    records = run_steps(steps(tuple(args.size)), reps=args.reps,
                        peaks={"f64": measure_peak("f64").gflops}, name="ablations")
    print_standalone(TITLE, records, records[0], NUMPY_PAPER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
