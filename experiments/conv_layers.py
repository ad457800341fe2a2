"""Convolution layers (issue 7): ResNet-50's layers through ``hop.conv2d`` with all passes,
against numpy's im2col + matmul timed in the same run (and torch's conv2d when installed).

    python3 -m experiments.conv_layers [--reps N] [--dtype f32]

The layers are ``polyopt.bench.RESNET50_LAYERS``: batch 1, NHWC input, HWCF filter, no
padding (the inputs are padded by the caller: 58x58 in, 56x56 out for the 3x3 layers, 230x230
for the 7x7 stride-2 stem; "/2" marks stride 2).  polyopt runs
a 2-D convolution as an implicit GEMM on the matmul pipeline, M = N*OH*OW output pixels,
N = F filters, K = KH*KW*C, where packing A is im2col done one M_C x K_C tile at a time; the
table gives each layer's GEMM shape.  numpy's baseline copies the whole im2col matrix, then
calls OpenBLAS's matmul (one thread) and adds into the output: what a Python user writes.

Each layer is one run of :func:`polyopt.bench.bench_conv2d`, the harness behind
``polyopt bench conv2d --resnet50``: the result is checked against numpy (in f64) first, each
contender warms up once, then the repetitions alternate polyopt, numpy (and torch).  To time
another layer, add a step: ``ConvStep("conv3_x 3x3 stride 2", ConvShape(1, 57, 57, 128, 128,
3, 3, stride=2))``.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from typing import Mapping, Optional, Sequence  # noqa: E402

from polyopt.bench import RESNET50_LAYERS, ConvShape, bench_conv2d  # noqa: E402

from experiments.common import (ALL_PASSES, Progress, gflops_text, markdown_table,  # noqa: E402
                                percent_text, run_steps)

TITLE = "Convolution layers (issue 7)"
DTYPE = "f32"
TORCH_MISSING = "torch not installed"

# tiny layers for the tests (report.py's --sizes-for-tests): a 3x3, a strided and dilated 3x3
# and a 1x1, in well under a second each
TEST_LAYERS = {
    "tiny 3x3": ConvShape(1, 10, 9, 16, 12, 3, 3),
    "tiny 3x3 stride 2 dilation 2": ConvShape(1, 11, 12, 8, 13, 3, 3, stride=2, dilation=2),
    "tiny 1x1": ConvShape(1, 7, 6, 24, 8, 1, 1),
}


@dataclass(frozen=True)
class ConvStep:
    """One layer to time: a shape, an element type and ``polyopt.compile`` switches (all
    passes unless told otherwise)."""

    label: str
    shape: ConvShape
    dtype: str = DTYPE
    switches: dict = field(default_factory=lambda: dict(ALL_PASSES))

    @property
    def gemm(self) -> tuple[int, int, int]:
        """The implicit GEMM polyopt runs: (M, N, K) = (N*OH*OW, F, KH*KW*C)."""
        s = self.shape
        oh, ow = s.out_hw
        return s.n * oh * ow, s.f, s.kh * s.kw * s.c

    def describe(self) -> str:
        return f"{self.label} ({shape_text(self.shape)}) {self.dtype}"

    def estimate_seconds(self, reps: int) -> float:
        """For the ETA only: compiling (a few tenths of a second), then reps + 1 runs of
        polyopt and numpy at a guessed 100 GFLOPS each."""
        return 0.5 + (reps + 1) * self.shape.flops * (2 / 100e9)

    def to_json(self) -> dict:
        m, n, k = self.gemm
        return {"label": self.label, "shape": asdict(self.shape),
                "shape_text": shape_text(self.shape), "dtype": self.dtype,
                "switches": self.switches, "gemm": {"m": m, "n": n, "k": k},
                "flops": self.shape.flops}


def shape_text(s: ConvShape) -> str:
    """``input * filter -> output`` (NHWC, HWCF, NHWF), with the stride and dilation if not 1."""
    oh, ow = s.out_hw
    text = f"{s.n}x{s.h}x{s.w}x{s.c} * {s.kh}x{s.kw}x{s.c}x{s.f} -> {s.n}x{oh}x{ow}x{s.f}"
    if s.stride != 1:
        text += f", stride {s.stride}"
    if s.dilation != 1:
        text += f", dilation {s.dilation}"
    return text


def steps(layers: Mapping[str, ConvShape] = RESNET50_LAYERS, dtype: str = DTYPE
          ) -> list[ConvStep]:
    return [ConvStep(label, shape, dtype) for label, shape in layers.items()]


def run_layer(step: ConvStep, *, reps: int, peak: Optional[float] = None) -> dict:
    """Time one layer with the harness and return its result dict (a failure is recorded,
    not raised, as in :func:`experiments.common.run_step`)."""
    record = step.to_json()
    start = time.perf_counter()
    try:
        result = bench_conv2d(step.shape, step.dtype, reps=reps, switches=step.switches)
    except Exception as e:  # noqa: BLE001 -- recorded in the report
        record.update(status="error", reason=f"{type(e).__name__}: {e}",
                      traceback=traceback.format_exc(), seconds=time.perf_counter() - start)
        return record
    flops = step.shape.flops
    bench = result.to_json()
    record.update(
        status="ok", gflops=result.gflops(result.polyopt),
        gflops_min=flops / result.polyopt.maximum / 1e9,
        gflops_max=flops / result.polyopt.minimum / 1e9,
        fraction_of_peak=result.gflops(result.polyopt) / peak if peak else None,
        ratio_vs_numpy=bench["ratio_vs_numpy"], compile_time=result.compile_time,
        max_abs_error=result.max_abs_error, numpy_gflops=result.gflops(result.numpy),
        numpy_gflops_min=flops / result.numpy.maximum / 1e9,
        numpy_gflops_max=flops / result.numpy.minimum / 1e9,
        numpy_fraction_of_peak=result.gflops(result.numpy) / peak if peak else None,
        torch=result.torch is not None, torch_gflops=bench.get("torch_gflops"),
        ratio_vs_torch=bench.get("ratio_vs_torch"),
        torch_note=result.torch_note if result.torch is not None else TORCH_MISSING,
        blas=result.blas, bench=bench, seconds=time.perf_counter() - start)
    return record


def run_layers(layer_steps: Sequence[ConvStep], *, reps: int, peaks: dict,
               progress: Optional[Progress] = None, name: str = "conv layers") -> list[dict]:
    """Time every layer in order; ``peaks`` maps dtype to the measured FMA peak (GFLOPS)."""
    return run_steps(layer_steps, reps=reps, peaks=peaks, progress=progress, name=name,
                     run=run_layer)


def layers_table(records: Sequence[dict]) -> str:
    """One row per layer: polyopt (median GFLOPS, min..max, % of the measured peak), numpy
    im2col + matmul, polyopt's speed-up over numpy, compile time, and torch."""
    header = ["layer", "shape (NHWC * HWCF -> NHWF)", "as GEMM (MxNxK)", "polyopt GFLOPS",
              "min..max", "of peak", "numpy im2col+matmul GFLOPS", "polyopt vs numpy",
              "compile", "polyopt vs torch", "torch"]
    rows = []
    for r in records:
        g = r["gemm"]
        head = [r["label"], r["shape_text"], f"{g['m']}x{g['n']}x{g['k']}"]
        if r["status"] != "ok":
            rows.append(head + [r["status"]] + [""] * 7)
            continue
        torch_ratio = f"{r['ratio_vs_torch']:.3f}x" if r["ratio_vs_torch"] else "—"
        rows.append(head + [f"**{gflops_text(r['gflops'])}**",
                            f"{gflops_text(r['gflops_min'])}..{gflops_text(r['gflops_max'])}",
                            percent_text(r["fraction_of_peak"]),
                            gflops_text(r["numpy_gflops"]), f"{r['ratio_vs_numpy']:.3f}x",
                            f"{r['compile_time']:.2f} s", torch_ratio, r["torch_note"]])
    return markdown_table(header, rows)


def layers_notes(records: Sequence[dict]) -> str:
    return "\n".join(f"- **{r['label']}**: {r['status']}: {r['reason']}"
                     for r in records if r["status"] != "ok")


def main(argv=None) -> int:
    from polyopt.codegen.peak import measure_peak
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dtype", choices=("f32", "f64"), default=DTYPE)
    parser.add_argument("--sizes-for-tests", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    layers = TEST_LAYERS if args.sizes_for_tests else RESNET50_LAYERS
    records = run_layers(steps(layers, args.dtype), reps=args.reps,
                         peaks={args.dtype: measure_peak(args.dtype).gflops})
    print(f"## {TITLE}\n\n{layers_table(records)}")
    notes = layers_notes(records)
    if notes:
        print("\n" + notes)
    return 1 if notes else 0


if __name__ == "__main__":
    raise SystemExit(main())
