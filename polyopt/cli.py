"""The ``polyopt`` command line, in the spirit of ``mlir-opt`` and ``mlir-cpu-runner``.

    polyopt opt FILE.mlir [-o OUT] [--hopt] [--memref-bound-check] [--mlir-print-op-generic]
    polyopt run FILE.mlir [--hopt] [--memref-bound-check] [-e main] [--reps N] [-O N]
    polyopt translate FILE.mlir [--hopt] [--memref-bound-check] --emit llvm|asm [-O N]

Without pass flags ``opt`` prints what it parsed, as mlir-opt does.

Errors in the input are printed as ``FILE:LINE:COL: error: message`` with the source line and
a caret, and the exit status is 1; ``--debug`` adds the Python traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from dataclasses import replace
from typing import Optional, Sequence

from .affine.diagnostics import PolyoptError, SourceFile, decode_source
from .pipeline import PipelineOptions


def _add_pipeline_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("passes")
    for name, flag, help_ in PipelineOptions.flag_fields():
        group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction,
                           default=getattr(PipelineOptions, name), help=help_)
    for name, option, help_ in PipelineOptions.value_fields():
        meta = PipelineOptions.__dataclass_fields__[name].metadata
        group.add_argument(option, dest=name, default=None, metavar=meta.get("metavar", "NAME"),
                           type=meta.get("type", str), help=help_)


def _add_pass_flags(parser: argparse.ArgumentParser) -> None:
    """The stand-alone passes (opt, run, translate): ``--convert-linalg-to-affine-loops``."""
    for name, flag, help_ in PipelineOptions.pass_fields():
        parser.add_argument(flag, dest=name, action="store_true", help=help_)


def _pipeline_switches(args: argparse.Namespace) -> dict:
    names = [name for name, _, _ in PipelineOptions.flag_fields()] + \
        [name for name, _, _ in PipelineOptions.value_fields()] + \
        [name for name, _, _ in PipelineOptions.pass_fields() if hasattr(args, name)]
    return {name: getattr(args, name) for name in names}


def _add_llvm_vectorize(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llvm-vectorize", dest="llvm_vectorize",
                        action=argparse.BooleanOptionalAction, default=True,
                        help="let LLVM's loop and SLP vectorizers run (default); "
                             "--no-llvm-vectorize leaves vectorization to polyopt's --hopt-vect, "
                             "as in the paper's experiments")


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="input .mlir file ('-' reads stdin)")
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks for errors")
    parser.add_argument("-p", "--pass-pipeline", dest="pass_pipeline", default=None,
                        metavar="PIPELINE",
                        help="run these registered passes, in order, instead of the pass "
                             "flags' pipeline, e.g. 'hopt-raise-contractions{copy=true "
                             "vect=true},hopt-expand{copy=true vect=true mc=300 kc=128}' "
                             "(mlir-opt's syntax, also nested in builtin.module(...) and "
                             "func.func(...); --dump-pipeline prints the flags' pipeline; see "
                             "polyopt/passes.py)")
    parser.add_argument("--script", metavar="SCRIPT.mlir", default=None,
                        help="apply this transform script (its @__transform_main) instead of "
                             "the pass flags' pipeline: MLIR's transform dialect with "
                             "transform.polyopt.* steps (see polyopt/transform/; "
                             "polyopt opt --hopt ... --emit-script writes one)")
    parser.add_argument("--dump-pipeline", "--dump-pass-pipeline", dest="dump_pipeline",
                        action="store_true",
                        help="print the pass pipeline that runs, as -p reads it, on stderr "
                             "(mlir-opt's --dump-pass-pipeline)")
    parser.add_argument("--print-ir-after-all", "--mlir-print-ir-after-all",
                        dest="print_ir_after_all", action="store_true",
                        help="print the IR after every pass on stderr")
    parser.add_argument("--print-ir-after", "--mlir-print-ir-after", dest="print_ir_after",
                        action="append", default=[], metavar="PASS",
                        help="print the IR after this pass on stderr (repeatable)")
    parser.add_argument("--remarks", action="store_true",
                        help="report what the passes chose (tile sizes, schedules) on stderr")
    parser.add_argument("--schedule", action="append", default=[], metavar="S=MAP",
                        help="apply a schedule to statement S of every function before the "
                             "other passes, e.g. --schedule 'S0=(d0, d1, d2) -> (d2, d0, d1)' "
                             "(repeatable; statements are numbered S0, S1, ... in textual "
                             "order; legality is checked)")
    parser.add_argument("--func", dest="schedule_func", metavar="NAME", default=None,
                        help="with --schedule: the function to schedule (default: every "
                             "function with a body)")
    _add_pipeline_flags(parser)
    _add_pass_flags(parser)


#: ``bench conv2d``'s shape flags (one layer) and their defaults
CONV_SHAPE_FLAGS = {"n": "batch", "h": "input height", "w": "input width",
                    "c": "input channels", "f": "filters (output channels)",
                    "kh": "window height", "kw": "window width",
                    "stride": "stride (both dimensions)", "dilation": "dilation (both dimensions)"}
CONV_SHAPE_DEFAULTS = {"n": 1, "h": 58, "w": 58, "c": 64, "f": 64, "kh": 3, "kw": 3,
                       "stride": 1, "dilation": 1}


class _Parser(argparse.ArgumentParser):
    """argparse's parser with mlir-opt's convention for a bad flag: one ``error:`` line and
    exit status 1 (argparse prints the whole usage block and exits with 2)."""

    def error(self, message: str):
        self.exit(1, f"{self.prog}: error: {message} ('{self.prog} --help' lists the "
                     f"options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="polyopt",
        description="Polyhedral optimizer for MLIR affine code: transform, JIT-run, translate.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p_opt = sub.add_parser("opt", help="parse, transform and print the module (like mlir-opt)")
    _add_common(p_opt)
    p_opt.add_argument("-o", dest="output", metavar="OUT", help="write the result to OUT")
    p_opt.add_argument("--mlir-print-op-generic", dest="generic", action="store_true",
                       help="print every op in MLIR's generic form")
    p_opt.add_argument("--mlir-print-debuginfo", dest="debuginfo", action="store_true",
                       help="print each op's source location, loc(\"FILE\":LINE:COL), as "
                            "mlir-opt does (generated ops carry the location of the op they "
                            "come from; the parser keeps such locations)")
    p_opt.add_argument("--verify-diagnostics", action="store_true",
                       help="check the errors (and with --remarks the remarks) against the "
                            "input's '// expected-error {{TEXT}}' comments (@+N, @-N, @above, "
                            "@below for other lines) instead of printing them; status 0 when "
                            "every one was produced and nothing else (mlir-opt's "
                            "--verify-diagnostics)")
    # mlir-opt's value is optional, and only given as --split-input-file=MARKER: main turns
    # the bare flag into that form, so that it does not take the file name for the marker
    p_opt.add_argument("--split-input-file", default=None, metavar="MARKER",
                       help=f"treat each part of the input between lines '{SPLIT_MARKER}' "
                            f"(or MARKER) as a module of its own: errors in one part are "
                            f"reported with the file's line numbers and the others still "
                            f"run; the outputs are joined by '{SPLIT_MARKER}' (mlir-opt's "
                            f"--split-input-file)")
    p_opt.add_argument("--emit-script", action="store_true",
                       help="print the transform script that replays what the pipeline did "
                            "(the model's BLIS parameters filled in) instead of the IR; "
                            "polyopt opt --script replays it")

    p_run = sub.add_parser("run", help="JIT-compile and run the entry function "
                                       "(like mlir-cpu-runner)")
    _add_common(p_run)
    p_run.add_argument("-e", "--entry", default="main", help="entry function (default: main)")
    p_run.add_argument("--reps", type=int, default=1, metavar="N",
                       help="run the entry function N times (default: 1)")
    p_run.add_argument("-O", dest="opt_level", type=int, default=3, choices=range(4),
                       help="LLVM optimization level (default: 3)")
    _add_llvm_vectorize(p_run)

    p_tr = sub.add_parser("translate", help="print the LLVM IR or assembly polyopt generates")
    _add_common(p_tr)
    p_tr.add_argument("--emit", choices=("llvm", "asm"), default="llvm",
                      help="llvm: LLVM IR (after -O); asm: host assembly")
    p_tr.add_argument("-O", dest="opt_level", type=int, default=3, choices=range(4),
                      help="LLVM optimization level (default: 3; -O0 shows the IR as lowered)")
    _add_llvm_vectorize(p_tr)
    p_tr.add_argument("-o", dest="output", metavar="OUT", help="write the result to OUT")
    p_tune = sub.add_parser("tune", help="search the BLIS parameters of a function's products "
                                         "by timing them; print and write the best pipeline")
    _add_common(p_tune)
    p_tune.add_argument("--budget", default="12", metavar="N|Ns",
                        help="trials (N) or seconds (Ns, e.g. 120s) to spend (default: 12)")
    p_tune.add_argument("-e", "--entry", dest="tune_func", metavar="NAME", default=None,
                        help="the function to time (default: the module's only one)")
    p_tune.add_argument("--out", metavar="FILE", default=None,
                        help="write the best as a transform script there, the model's "
                             "parameters filled in (replay: polyopt opt --script FILE INPUT)")
    p_tune.add_argument("--workers", type=int, default=1, metavar="W",
                        help="processes compiling candidates in parallel; they are timed one "
                             "at a time (default: 1)")
    p_tune.add_argument("--samples", type=int, default=5,
                        help="timed samples per candidate, the median kept (default: 5)")
    p_tune.add_argument("--seed", type=int, default=0, help="the search's seed (default: 0)")
    p_tune.add_argument("--cache", metavar="FILE", default=None,
                        help="the measurements' cache (default: ~/.cache/polyopt/tune.json)")
    p_tune.add_argument("--no-cache", action="store_true", help="measure every candidate")
    p_tune.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_tune.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run the trials on the Dask cluster of this scheduler "
                             "(distributed.Client(ADDRESS).get_executor()) instead of local "
                             "processes")
    p_tune.add_argument("--json", action="store_true",
                        help="print every trial (parameters, pipeline, seconds, error) as JSON")

    p_bench = sub.add_parser("bench", help="time generated code against numpy (OpenBLAS, one "
                                           "thread) in the same run")
    bsub = p_bench.add_subparsers(dest="kernel", metavar="KERNEL")
    bsub.required = True
    p_mm = bsub.add_parser("matmul", help="C += A*B through hop.matmul")
    p_mm.add_argument("--m", type=int, default=2088, help="rows of A and C (default: 2088)")
    p_mm.add_argument("--n", type=int, default=2048, help="columns of B and C (default: 2048)")
    p_mm.add_argument("--k", type=int, default=2048, help="columns of A, rows of B (default: 2048)")
    p_mm.add_argument("--dtype", choices=("f64", "f32", "bf16", "f16", "i8", "u8"),
                      default=None,
                      help="element type (default: f64; with --sweep, both); bf16 and f16: "
                           "A and B of that type, C f32; i8 (u8): A i8 (u8), B i8, C i32, on "
                           "the CPU's dot engine, timed against torch's matmul of that type")
    p_mm.add_argument("--reps", type=int, default=5, help="timed repetitions (default: 5)")
    p_mm.add_argument("--sweep", action="store_true",
                      help="time a sweep of shapes (tiny, middle, odd, matrix-vector, skinny, "
                           "transformer and CNN layers) against numpy, one ratio per shape")
    p_mm.add_argument("--shapes", default=None, metavar="MxNxK,...",
                      help="with --sweep: these shapes instead of the default sweep")
    p_mm.add_argument("--dynamic", action="store_true",
                      help="with --sweep: also time one function of memref<?x?> operands, "
                           "compiled once per type, at every shape")
    p_mm.add_argument("--samples", type=int, default=7,
                      help="with --sweep: alternating samples per shape, about 2 ms each "
                           "(default: 7)")
    p_mm.add_argument("--json", action="store_true", help="print the results as JSON")
    p_mm.add_argument("--steps", action="store_true",
                      help="time the paper's ladder (naive, cache tiling, BLIS tiling, ...) "
                           "in one run instead of one configuration")
    p_mm.add_argument("--schedule", default=None, metavar="MAP",
                      help="give hop.matmul this schedule attribute, e.g. "
                           "'(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)'")
    p_mm.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    for name in ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U"):
        p_mm.add_argument(f"--{name.lower().replace('_', '')}", dest=name, type=int, default=None,
                          metavar="N", help=f"tile parameter {name} of hop.matmul")
    p_mm.add_argument("--form", choices=("row", "col"), default=None,
                      help="register-tile form: row (broadcast A, vector loads of B) or col "
                           "(vector loads of A's packed column, broadcast B); default: the "
                           "model's")
    p_mm.add_argument("--l2-block", dest="l2_block", choices=("A", "B"), default=None,
                      help="which operand's block sits in L2: A (GEBP, the paper's loop "
                           "order) or B (GEPB: B's K_C x N_C block in L2, A's micro-panel in "
                           "L1); default: the model's")
    p_mm.add_argument("--explain", action="store_true",
                      help="print the form, tile and blocking the model chose and why")
    _add_pipeline_flags(p_mm)
    _add_llvm_vectorize(p_mm)
    p_mm.set_defaults(hopt=True)

    p_cv = bsub.add_parser("conv2d", help="O += conv(I, K) through hop.conv2d (NHWC, HWCF, "
                                          "NHWF, no padding) against numpy im2col + matmul")
    for name, help_ in CONV_SHAPE_FLAGS.items():
        default = CONV_SHAPE_DEFAULTS[name]
        p_cv.add_argument(f"--{name}", type=int, default=None,
                          help=f"{help_} (default: {default})")
    p_cv.add_argument("--dtype", choices=("f64", "f32", "bf16"), default="f32",
                      help="element type (default: f32); bf16: bf16 input and filter, f32 "
                           "output, timed with --epilogue against torch in bf16")
    p_cv.add_argument("--epilogue", default=None, metavar="bias,relu",
                      help="follow the convolution with these ops (bias, relu) and time it "
                           "fused, unfused and against torch's conv2d(bias) + relu")
    p_cv.add_argument("--reps", type=int, default=5, help="timed repetitions (default: 5)")
    p_cv.add_argument("--layout", choices=("nhwc", "nchw"), default="nhwc",
                      help="nhwc (default): hop.conv2d on NHWC/HWCF arrays, torch in "
                           "channels_last; nchw: linalg.conv_2d_nchw_fchw on NCHW/FCHW "
                           "arrays, torch on its default NCHW tensors")
    p_cv.add_argument("--resnet50", action="store_true",
                      help="the ResNet-50 layers of issue 7 (3x3 at 56, 28, 14, 7 and 1x1 at "
                           "56; inputs padded by the caller) instead of one shape")
    p_cv.add_argument("--json", action="store_true", help="print the results as JSON")
    p_cv.add_argument("--threads", type=int, default=None, metavar="N",
                      help="threads of polyopt's parallel code, numpy's OpenBLAS and torch "
                           "(default: OMP_NUM_THREADS, else the cores)")
    p_cv.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")

    p_bm = bsub.add_parser("batch-matmul", help="C[b] = A[b] * B[b] through "
                                                "linalg.batch_matmul against a loop of numpy "
                                                "matmuls and torch.bmm")
    for name, default, help_ in (("batch", 64, "matrices in the batch"),
                                 ("m", 128, "rows of A and C"), ("n", 128, "columns of B and C"),
                                 ("k", 128, "columns of A, rows of B")):
        p_bm.add_argument(f"--{name}", type=int, default=default,
                          help=f"{help_} (default: {default})")
    p_bm.add_argument("--dtype", choices=("f64", "f32"), default="f32")
    p_bm.add_argument("--shared-b", action="store_true",
                      help="one B for the whole batch: hop.matmul of a BxMxK A and a KxN B "
                           "against numpy's broadcasting matmul and torch.matmul")
    p_bm.add_argument("--reps", type=int, default=5, help="timed repetitions (default: 5)")
    p_bm.add_argument("--threads", type=int, default=None, metavar="N",
                      help="threads of polyopt's parallel code (the batch loop), numpy's "
                           "OpenBLAS and torch (default: OMP_NUM_THREADS, else the cores)")
    p_bm.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")

    p_sm = bsub.add_parser("softmax", help="linalg.softmax along the rows against numpy "
                                           "(max, exp, sum, divide) and torch.softmax")
    p_sm.add_argument("--rows", type=int, default=64, help="rows (default: 64)")
    p_sm.add_argument("--n", type=int, default=1024, help="elements per row (default: 1024)")
    p_sm.add_argument("--dtype", choices=("f64", "f32"), default="f32")
    p_sm.add_argument("--dim", type=int, default=1, metavar="D",
                      help="1 (default): along the rows; 0: along the columns")
    p_sm.add_argument("--reps", type=int, default=7, help="timed repetitions (default: 7)")
    p_sm.add_argument("--threads", type=int, default=None, metavar="N",
                      help="threads of polyopt's parallel rows loop and torch (default: "
                           "OMP_NUM_THREADS, else the cores)")
    p_sm.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")

    p_dw = bsub.add_parser("depthwise", help="linalg.depthwise_conv_2d_nchw_chw against torch "
                                             "conv2d(groups=C) and numpy's sum over the taps")
    for name, default, help_ in (("n", 1, "images"), ("c", 144, "channels"),
                                 ("oh", 56, "output height"), ("ow", 56, "output width"),
                                 ("k", 3, "window height and width"), ("stride", 1, "stride")):
        p_dw.add_argument(f"--{name}", type=int, default=default,
                          help=f"{help_} (default: {default})")
    p_dw.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw",
                      help="nchw (default): linalg.depthwise_conv_2d_nchw_chw, torch on the "
                           "same arrays; nhwc: linalg.depthwise_conv_2d_nhwc_hwc, torch in "
                           "channels_last")
    p_dw.add_argument("--mobilenet", action="store_true",
                      help="MobileNet-v2's 3x3 depthwise layers at 224x224 instead")
    p_dw.add_argument("--dtype", choices=("f64", "f32"), default="f32")
    p_dw.add_argument("--epilogue", default=None, metavar="bias,relu6",
                      help="follow the convolution by a per-channel bias and/or relu or relu6 "
                           "(MobileNet's); polyopt is also timed with that nest unfused, in a "
                           "called function, and torch as conv2d(bias) + relu6")
    p_dw.add_argument("--reps", type=int, default=7, help="timed repetitions (default: 7)")
    p_dw.add_argument("--threads", type=int, default=None, metavar="N",
                      help="threads of polyopt's channels loop and torch (default: "
                           "OMP_NUM_THREADS, else the cores)")
    p_dw.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")

    p_pb = bsub.add_parser("polybench", help="PolyBench/C 4.2 kernels: polyopt without passes "
                                             "and with --hopt against clang-22 -O3 and Polly")
    p_pb.add_argument("--kernels", default=None, metavar="K1,K2,...",
                      help="comma-separated kernels (default: all), e.g. gemm,2mm,lu")
    p_pb.add_argument("--dataset", choices=("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE"),
                      default="LARGE", help="PolyBench's dataset sizes (default: LARGE)")
    p_pb.add_argument("--reps", type=int, default=3, help="timed repetitions (default: 3)")
    p_pb.add_argument("--json", action="store_true", help="print the results as JSON")
    p_pb.add_argument("--threads", type=int, default=None, metavar="N",
                      help="with N > 1, two more builds on N threads: polyopt --hopt "
                           "--hopt-parallel and Polly -polly-parallel -fopenmp (default: "
                           "OMP_NUM_THREADS, else the cores; the other builds run on one)")
    p_pb.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")

    p_tg = sub.add_parser("target", help="describe this CPU as polyopt sees it: signature, "
                                         "feature flags, caches, micro-benchmarks (FMA "
                                         "throughput and latency, loads), the machine model")
    p_tg.add_argument("--json", action="store_true", help="print the description as JSON")
    p_tg.add_argument("--remeasure", action="store_true",
                      help="run the micro-benchmarks again instead of reading the cache "
                           "($XDG_CACHE_HOME/polyopt/) and store the new figures")
    p_tg.add_argument("--debug", action="store_true", help="show Python tracebacks")

    p_peak = sub.add_parser("peak", help="measure the FMA peak of this core (JIT'd loop of "
                                         "independent vector FMAs at the widest width)")
    p_peak.add_argument("--dtype", choices=("f64", "f32", "both"), default="both")
    p_peak.add_argument("--reps", type=int, default=5, help="repetitions (median; default 5)")
    p_peak.add_argument("--debug", action="store_true", help="show Python tracebacks")
    return parser


class UsageError(Exception):
    """A command-line mistake that is not about the input text."""


def _read_source(path: str) -> tuple[str, str]:
    """The input's text and the name errors give it; bytes that are not UTF-8 are a located
    error."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)   # a text stream replaced in tests has none
        if stream is None:
            return sys.stdin.read(), "<stdin>"
        return decode_source(stream.read(), "<stdin>"), "<stdin>"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UsageError(f"cannot open input file '{path}': {e.strerror}") from None
    return decode_source(data, path), path


def _options(args: argparse.Namespace) -> PipelineOptions:
    try:
        return PipelineOptions(**_pipeline_switches(args))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _write_output(text: str, output: Optional[str]) -> None:
    if output and output != "-":
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"cannot write output file '{output}': {e.strerror}") from None
    else:
        sys.stdout.write(text)


def _remark_printer(args: argparse.Namespace):
    if not args.remarks:
        return None

    def remark(loc, message: str) -> None:
        where = str(loc) if loc is not None else args.file
        print(f"{where}: remark: {message}", file=sys.stderr)
    return remark


def _transform(args: argparse.Namespace, part: Optional[tuple[str, str]] = None,
               remark=None):
    """Parse the input (or ``part``, the text and name of a part of it), apply
    ``--schedule``s, then the pipeline's passes; ``remark`` takes the remarks instead of
    stderr."""
    from .pipeline import load, run_passes
    text, name = part if part is not None else _read_source(args.file)
    if getattr(args, "bufferize", False):
        from .bufferize import one_shot_bufferize
        text, name = one_shot_bufferize(text, name)
    module = load(text, name)
    options, remark = _options(args), remark or _remark_printer(args)
    raised = False
    writer = None
    if getattr(args, "emit_script", False):
        from .transform.emit import ScriptWriter
        writer = ScriptWriter()
    if args.schedule_func is not None and not args.schedule:
        raise UsageError("--func names the function --schedule applies to; no --schedule given")
    if args.schedule:
        from .schedules.apply import apply_schedule, parse_schedule_option
        schedules = parse_schedule_option(args.schedule)
        funcs = [f for f in module.functions if not f.is_declaration]
        if args.schedule_func is not None:
            funcs = [f for f in funcs if f.sym_name == args.schedule_func]
            if not funcs:
                raise UsageError(f"--func: no function @{args.schedule_func} with a body")
        if options.raise_scf or options.hopt:   # the schedules apply to the raised nests
            from .affine.raise_scf_to_affine import raise_scf_to_affine
            from .passes import REGISTRY
            if writer is not None:
                p = REGISTRY["raise-scf-to-affine"]
                writer.run_pass(module, p, p.options(), remark)
            else:
                raise_scf_to_affine(module, remark)
            raised = True
        if writer is not None:
            writer.schedule(funcs, schedules, remark)
        else:
            for f in funcs:
                apply_schedule(f, schedules, remark=remark)
    if getattr(args, "script", None) is not None:
        return _apply_script(args, module, options, remark)
    from .passes import PipelineSyntaxError, default_pipeline, parse_pipeline, run_pipeline
    try:
        if getattr(args, "pass_pipeline", None) is not None:
            pipeline = parse_pipeline(args.pass_pipeline)
        else:
            pipeline = default_pipeline(options, raised=raised)
        after = _ir_printer(args, pipeline)
        if getattr(args, "dump_pipeline", False):
            print(_pipeline_text(pipeline), file=sys.stderr)
        if getattr(args, "emit_script", False):
            from .transform.emit import run_and_emit_script
            args.emitted_script = run_and_emit_script(module, pipeline, remark, writer)
        else:
            run_pipeline(module, pipeline, remark, after)
    except PipelineSyntaxError as e:
        raise UsageError(str(e)) from None
    return module


def _apply_script(args: argparse.Namespace, module, options, remark):
    """``--script``: the transform script replaces the pass flags' pipeline."""
    from .affine.printer import print_module
    from .pipeline import load
    from .transform.interpreter import apply_script
    given = [flag for flag, on in (("-p", args.pass_pipeline is not None),
                                   ("--hopt", options.hopt),
                                   ("--raise-scf-to-affine", options.raise_scf),
                                   ("--hopt-parallel", getattr(options, "parallel", False)),
                                   ("--emit-script", getattr(args, "emit_script", False)),
                                   ("--dump-pipeline", args.dump_pipeline),
                                   ("--print-ir-after", bool(args.print_ir_after)))
             if on]
    if given:
        raise UsageError(f"--script says which transformations run; {given[0]} cannot be "
                         f"combined with it (the script's transform.apply_registered_pass "
                         f"runs passes)")
    text, name = _read_source(args.script)
    script = load(text, name)
    after = None
    if args.print_ir_after_all:
        def after(op, payload) -> None:
            print(f"// -----// IR Dump After {op.name} ({op.loc}) //----- //", file=sys.stderr)
            print(print_module(payload, generic=getattr(args, "generic", False),
                               debuginfo=getattr(args, "debuginfo", False)), end="",
                  file=sys.stderr)
    apply_script(script, module, remark=remark, after=after)
    return module


def _pipeline_text(pipeline) -> str:
    """The pipeline as ``-p`` reads it back, anchored as mlir-opt prints one."""
    from .passes import print_pipeline
    return f"builtin.module({print_pipeline(pipeline)})"


def _ir_printer(args: argparse.Namespace, pipeline):
    """``--print-ir-after-all`` / ``--print-ir-after=NAME``: the IR on stderr after those
    passes, under mlir-opt's header; None when neither is given."""
    from .affine.printer import print_module
    from .passes import REGISTRY, PipelineSyntaxError
    names = set(getattr(args, "print_ir_after", []) or [])
    for name in names:
        if name not in REGISTRY:
            raise PipelineSyntaxError(f"--print-ir-after: unknown pass '{name}' (known: "
                                      f"{', '.join(sorted(REGISTRY))})")
    every = getattr(args, "print_ir_after_all", False)
    if not every and not names:
        return None
    # mlir-opt prints nothing for a pass that is not in the pipeline; say why instead
    for name in sorted(names - {p.name for p, _ in pipeline}):
        print(f"polyopt: warning: --print-ir-after={name}: no such pass in this pipeline "
              f"({_pipeline_text(pipeline)})", file=sys.stderr)

    def after(name: str, module) -> None:
        if every or name in names:
            print(f"// -----// IR Dump After {name} //----- //", file=sys.stderr)
            print(print_module(module, generic=getattr(args, "generic", False),
                               debuginfo=getattr(args, "debuginfo", False)), end="",
                  file=sys.stderr)
    return after


#: mlir-opt's default --split-input-file marker, also what joins the outputs
SPLIT_MARKER = "// -----"


def split_input(text: str, marker: str = SPLIT_MARKER) -> list[str]:
    """The parts of ``text`` between occurrences of ``marker``, as mlir-opt's
    ``--split-input-file`` cuts them; each part is preceded by blanks standing for what came
    before it (newlines, then spaces up to its column), so that its errors carry the file's
    line and column numbers."""
    parts, start = [], 0
    while True:
        end = text.find(marker, start)
        piece = text[start:] if end < 0 else text[start:end]
        before = text[:start]
        column = start - (before.rfind("\n") + 1)
        parts.append("\n" * before.count("\n") + " " * column + piece)
        if end < 0:
            return parts
        start = end + len(marker)


def _opt_parts(args: argparse.Namespace) -> int:
    """``opt --split-input-file`` and/or ``--verify-diagnostics``.  Split: each part
    transformed and printed on its own; a part that fails prints its error and nothing on
    stdout, and the status is 1.  Verify: the diagnostics are checked against the
    ``expected-*`` comments instead of printed, and the status says whether they matched."""
    from .affine.expected_diagnostics import Diagnostic, expectations_in, unmatched
    from .affine.printer import print_module
    marker = args.split_input_file
    if args.emit_script:
        raise UsageError(f"--emit-script writes one script; drop "
                         f"{'--split-input-file' if marker is not None else '--verify-diagnostics'}")
    if marker == "":
        raise UsageError("--split-input-file: the marker is empty")
    text, name = _read_source(args.file)
    whole = SourceFile(name, text)
    verify = args.verify_diagnostics
    outputs, problems, status = [], [], 0
    for part in split_input(text, marker) if marker is not None else [text]:
        emitted: list = []
        remark = None
        if verify and args.remarks:
            def remark(loc, message: str, emitted=emitted) -> None:
                emitted.append(Diagnostic("remark", loc, message))
        try:
            module = _transform(args, (part, name), remark)
            outputs.append(print_module(module, generic=args.generic,
                                        debuginfo=args.debuginfo) + "\n")
        except PolyoptError as e:
            if e.loc is not None and e.loc.file.name == name:   # quote the file's own line
                e.loc = replace(e.loc, file=whole)
            outputs.append("")
            if not verify:
                sys.stdout.flush()
                print(e.render(name), file=sys.stderr)
                status = 1
                continue
            emitted.append(Diagnostic(e.kind, e.loc, e.message))
        if verify:
            problems += unmatched(emitted, expectations_in(SourceFile(name, part)))
    _write_output(f"{SPLIT_MARKER}\n".join(outputs) if marker is not None else outputs[0],
                  args.output)
    for loc, message in problems:
        print(PolyoptError(message, loc).render(name), file=sys.stderr)
    return 1 if problems else status


def cmd_opt(args: argparse.Namespace) -> int:
    from .affine.printer import print_module
    if args.split_input_file is not None or args.verify_diagnostics:
        return _opt_parts(args)
    module = _transform(args)
    if args.emit_script:
        _write_output(args.emitted_script, args.output)
        return 0
    _write_output(print_module(module, generic=args.generic, debuginfo=args.debuginfo),
                  args.output)
    return 0


def _compile(args: argparse.Namespace):
    from .pipeline import CompiledModule, prepare_for_lowering
    start = time.perf_counter()
    module = _transform(args)
    prepare_for_lowering(module)
    compiled = CompiledModule(module, _options(args), opt_level=args.opt_level,
                              llvm_vectorize=args.llvm_vectorize)
    return compiled, time.perf_counter() - start


def cmd_run(args: argparse.Namespace) -> int:
    if args.reps < 1:
        raise UsageError(f"--reps must be at least 1, got {args.reps}")
    compiled, seconds = _compile(args)
    if args.entry not in compiled:
        known = ", ".join(f"@{n}" for n in compiled.function_names) or "none"
        raise UsageError(f"entry function '@{args.entry}' not found (functions: {known})")
    sig = compiled.signatures[args.entry]
    if sig.args:
        raise UsageError(f"entry function '@{args.entry}' takes arguments; polyopt run needs one "
                         "without arguments (call functions with arguments from Python)")
    if sig.numpy_error is not None:
        from .affine.diagnostics import CodegenError
        func = next(op for op in compiled.module.walk() if op.name == "func.func"
                    and op.sym_name == args.entry)
        raise CodegenError(f"entry function '@{args.entry}' cannot be run: {sig.numpy_error} "
                           "(polyopt run takes an entry returning nothing or scalars, as "
                           "mlir-runner's -entry-point-result)", func.loc)
    print(f"Compilation time: {seconds:.4f} s", flush=True)
    fn = compiled[args.entry]
    from .codegen.jit import AssertionFailure
    for _ in range(args.reps):
        try:
            result = fn()
        except AssertionFailure as failure:  # a cf.assert of the program failed
            sys.stdout.flush()
            print("\n".join(failure.messages), file=sys.stderr)
            return 1
        sys.stdout.flush()
        if result is not None:
            print(result if not isinstance(result, tuple) else " ".join(map(str, result)))
    return 0


def cmd_translate(args: argparse.Namespace) -> int:
    compiled, _ = _compile(args)
    if args.emit == "asm":
        text = compiled.asm()
    elif args.opt_level == 0:
        text = compiled.llvm_ir
    else:
        text = compiled.optimized_llvm_ir()
    _write_output(text if text.endswith("\n") else text + "\n", args.output)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if not getattr(args, "json", False):
        from .bench import machine_summary
        print(machine_summary(), flush=True)
    if args.kernel == "conv2d":
        return cmd_bench_conv2d(args)
    if args.kernel == "polybench":
        return cmd_bench_polybench(args)
    if args.kernel == "batch-matmul":
        return cmd_bench_batch_matmul(args)
    if args.kernel == "softmax":
        return cmd_bench_softmax(args)
    if args.kernel == "depthwise":
        return cmd_bench_depthwise(args)
    if args.sweep:
        return cmd_bench_sweep(args)
    if args.shapes is not None or args.dynamic:
        raise UsageError(f"{'--shapes' if args.shapes is not None else '--dynamic'} goes with "
                         f"--sweep")
    args.dtype = args.dtype or "f64"
    if args.dtype not in ("f64", "f32"):
        return cmd_bench_lowp(args)
    from .bench import (TILE_NAMES, Variant, bench_matmul, blis_mode_variant, dump_json,
                        paper_ladder)
    tiles = {name: getattr(args, name) for name in TILE_NAMES if getattr(args, name) is not None}
    for name, v in tiles.items():
        if v < 1:
            raise UsageError(f"--{name.lower().replace('_', '')} must be positive, got {v}")
    from .affine.dialects.hop import tile_param_problem
    problem = tile_param_problem(tiles)
    if problem is not None:
        raise UsageError(problem)
    if args.form is not None:
        tiles["register_form"] = args.form
    if args.l2_block is not None:
        tiles["l2_block"] = args.l2_block
    if args.explain:
        print(_explain_matmul(args.m, args.n, args.k, args.dtype, tiles, args.threads))
    switches = {name: v for name, v in _pipeline_switches(args).items()
                if v is not None and name not in ("raise_scf", "auto_schedule")}
    # raise_scf is implied by --hopt; auto_schedule has no nest to act on in hop.matmul's
    if not switches.get("memref_bound_check"):   # a check, not a configuration
        switches.pop("memref_bound_check", None)
    if switches.get("hopt_raise", True):         # on by default; hop.matmul has no nest to raise
        switches.pop("hopt_raise", None)
    if not switches.get("hopt") and not args.steps and (tiles or args.schedule):
        flag = {"register_form": "--form", "l2_block": "--l2-block"}
        given = [flag.get(name, "--" + name.lower().replace("_", "")) for name in tiles] + \
            (["--schedule"] if args.schedule else [])
        raise UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to the "
                         f"BLIS nest --hopt generates; --no-hopt times the naive loops")
    if args.steps:
        if tiles or args.schedule:
            raise UsageError("--steps times fixed configurations; drop the tile options")
        variants = paper_ladder(args.m, args.n, args.k, args.threads)
        blis, why_not = blis_mode_variant(args.dtype)
        if blis is not None:
            variants.append(blis)
        else:
            print(f"polyopt: note: no BLIS-mode row: {why_not}", file=sys.stderr)
    else:
        if switches.get("blis"):   # BLIS mode packs and calls the kernel: nothing else applies
            flags = "--hopt --hopt-blis" + (f" --hopt-blis-kernel {switches['blis_kernel']}"
                                            if switches.get("blis_kernel") else "")
        else:
            flags = " ".join(flag if switches[name] else "--no-" + flag[2:]
                             for name, flag, _ in PipelineOptions.flag_fields()
                             if name not in ("blis", "raise_scf", "hopt_raise")
                             and name in switches
                             and (name != "parallel" or switches[name]))
        variants = [Variant(f"polyopt {flags}", switches, tiles, args.schedule)]
    if not args.llvm_vectorize:
        variants = [replace(v, switches=dict(v.switches, llvm_vectorize=False))
                    for v in variants]
    try:
        result = bench_matmul(args.m, args.n, args.k, args.dtype, reps=args.reps,
                              variants=variants, threads=args.threads)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.json:
        dump_json([result])
    else:
        print(result.report())
    return 0


def cmd_bench_lowp(args: argparse.Namespace) -> int:
    """``bench matmul --dtype bf16|f16|i8|u8``: :mod:`polyopt.bench_lowp` (all passes, the
    model's parameters; the tile and pass options do not apply)."""
    from .bench_lowp import bench_lowp_matmul
    if args.steps or args.schedule or args.explain or args.json or any(
            getattr(args, name) is not None for name in ("M_C", "K_C", "N_C", "M_R", "N_R",
                                                         "K_U", "form", "l2_block")):
        raise UsageError(f"--dtype {args.dtype} times the low-precision GEMM with the model's "
                         "parameters; drop --steps, --schedule, --explain, --json and the tile "
                         "options")
    from .codegen.openmp import resolve_threads
    try:
        result = bench_lowp_matmul(args.m, args.n, args.k, args.dtype, reps=args.reps,
                                   threads=resolve_threads(args.threads))
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(result.report())
    return 0


def cmd_bench_sweep(args: argparse.Namespace) -> int:
    """``bench matmul --sweep``: :mod:`polyopt.shape_sweep`, one line per point as it lands,
    then the table."""
    from .shape_sweep import SHAPES, parse_shapes, run_sweep, sweep_summary, sweep_table
    if args.samples < 1:
        raise UsageError(f"--samples must be at least 1, got {args.samples}")
    if args.steps or args.schedule or args.explain or any(
            getattr(args, name) is not None for name in ("M_C", "K_C", "N_C", "M_R", "N_R",
                                                         "K_U", "form", "l2_block")):
        raise UsageError("--sweep times the model's default for each shape; drop --steps, "
                         "--schedule, --explain and the tile options")
    try:
        if args.shapes is not None and not args.shapes.strip(" ,"):
            raise ValueError("no shape given (MxNxK,...)")
        shapes = parse_shapes(args.shapes) if args.shapes else list(SHAPES)
    except ValueError as e:
        raise UsageError(f"--shapes: {e}") from None
    dtypes = [args.dtype] if args.dtype else ["f64", "f32"]
    switches = {} if args.llvm_vectorize else {"llvm_vectorize": False}

    def progress(p):
        if not args.json:
            print(f"{p.dtype} {p.m}x{p.n}x{p.k}: {p.ratio:.2f}x numpy "
                  f"({p.gflops:.1f} vs {p.numpy_gflops:.1f} GFLOPS)", file=sys.stderr,
                  flush=True)
    points = run_sweep(shapes, dtypes, samples=args.samples, threads=args.threads,
                       switches=switches, dynamic=args.dynamic, progress=progress)
    if args.json:
        import json
        json.dump([p.to_json() for p in points], sys.stdout, indent=2)
        print()
    else:
        from .bench import blas_description
        print(f"numpy: {blas_description()}; polyopt on {args.threads or 'default'} thread(s); "
              f"ratio = numpy's time / polyopt's, median of {args.samples} alternating samples")
        print(sweep_table(points))
        print(sweep_summary(points))
    return 0


def _explain_matmul(m: int, n: int, k: int, dtype: str, tiles: dict,
                    threads: Optional[int] = 1) -> str:
    """``bench matmul --explain``: the parameters the model picks for this shape (on
    ``threads`` threads, as the compilation does) and why."""
    from .bench import Variant, matmul_source
    from .codegen.openmp import resolve_threads
    from .pipeline import load, machine_model
    from .schedules.expand import matmul_blis_params
    source = matmul_source(m, n, k, dtype, Variant("explain", tiles=tiles).attributes())
    op = next(o for o in load(source, "<explain>").walk() if o.name == "hop.matmul")
    try:
        p = matmul_blis_params(op, machine_model(), resolve_threads(threads))
    except ValueError as e:
        raise UsageError(str(e)) from None
    lines = [f"model's choice for {m}x{n}x{k} {dtype}: {p.describe()}"]
    lines += [f"  {r}" for r in p.reasons]
    return "\n".join(lines)


def _bench_conv_epilogue(args: argparse.Namespace, shapes: dict) -> int:
    """``bench conv2d --epilogue ...`` (or ``--dtype bf16``): :mod:`polyopt.bench_conv_epilogue`,
    on ``--threads`` threads."""
    from .bench_conv_epilogue import bench_conv_epilogue
    if args.json:
        raise UsageError("--epilogue and --dtype bf16 print text: drop --json")
    epilogue = tuple(e.strip() for e in (args.epilogue or "").split(",") if e.strip())
    if args.epilogue is not None and not epilogue:
        raise UsageError("--epilogue: no op given (bias, relu or bias,relu)")
    if len(set(epilogue)) != len(epilogue):
        raise UsageError(f"--epilogue: an op given twice: {args.epilogue}")
    for label, shape in shapes.items():
        try:
            r = bench_conv_epilogue(shape, args.dtype, epilogue, reps=args.reps,
                                    threads=args.threads)
        except ValueError as e:
            raise UsageError(str(e)) from None
        print((f"{label}: " if label else "") + r.report(), flush=True)
    return 0


def cmd_bench_batch_matmul(args: argparse.Namespace) -> int:
    """``bench batch-matmul``: :mod:`polyopt.bench_batch`."""
    from .bench_batch import bench_batch_matmul
    from .codegen.openmp import resolve_threads
    try:
        result = bench_batch_matmul(args.batch, args.m, args.n, args.k, args.dtype,
                                    reps=args.reps, threads=resolve_threads(args.threads),
                                    shared_b=args.shared_b)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(result.report())
    return 0


def cmd_bench_depthwise(args: argparse.Namespace) -> int:
    """``bench depthwise``: :mod:`polyopt.bench_depthwise`."""
    from .bench_depthwise import MOBILENET_LAYERS, bench_depthwise, parse_epilogue, report
    from .codegen.openmp import resolve_threads
    threads = resolve_threads(args.threads)
    layers = [(c, size, size, stride) for c, size, stride in MOBILENET_LAYERS] \
        if args.mobilenet else [(args.c, args.oh, args.ow, args.stride)]
    try:
        epilogue = parse_epilogue(args.epilogue) if args.epilogue is not None else ()
        results = [bench_depthwise(args.n, c, oh, ow, args.k, stride, args.dtype, args.layout,
                                   reps=args.reps, threads=threads, epilogue=epilogue)
                   for c, oh, ow, stride in layers]
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(report(results))
    return 0


def cmd_bench_softmax(args: argparse.Namespace) -> int:
    """``bench softmax``: :mod:`polyopt.bench_softmax`."""
    from .bench_softmax import bench_softmax
    from .codegen.openmp import resolve_threads
    try:
        result = bench_softmax(args.rows, args.n, args.dtype, reps=args.reps, dim=args.dim,
                               threads=resolve_threads(args.threads))
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(result.report())
    return 0


def cmd_bench_conv2d(args: argparse.Namespace) -> int:
    from .bench import RESNET50_LAYERS, ConvShape, bench_conv2d, dump_json
    if args.reps < 1:
        raise UsageError(f"--reps must be at least 1, got {args.reps}")
    given = {name: getattr(args, name) for name in CONV_SHAPE_FLAGS
             if getattr(args, name) is not None}
    if args.resnet50:
        if given:
            raise UsageError(f"--resnet50 times its own layers: drop "
                             f"{', '.join('--' + name for name in given)}")
        shapes = dict(RESNET50_LAYERS)
    else:
        shapes = {"": ConvShape(**{**CONV_SHAPE_DEFAULTS, **given})}
    if args.epilogue is not None or args.dtype == "bf16":
        if args.layout != "nhwc":
            raise UsageError("--epilogue and --dtype bf16 time the NHWC convolution: drop "
                             "--layout nchw")
        return _bench_conv_epilogue(args, shapes)
    results = []
    for label, shape in shapes.items():
        try:
            r = bench_conv2d(shape, args.dtype, reps=args.reps, threads=args.threads,
                             layout=args.layout)
        except ValueError as e:
            raise UsageError(str(e)) from None
        results.append(r)
        if not args.json:
            print((f"{label}: " if label else "") + r.report(), flush=True)
    if args.json:
        dump_json(results)
    return 0


def cmd_bench_polybench(args: argparse.Namespace) -> int:
    import json
    from .polybench.harness import bench_polybench
    from .polybench.suite import select
    if args.reps < 1:
        raise UsageError(f"--reps must be at least 1, got {args.reps}")
    if args.kernels is not None and not args.kernels.strip(" ,"):
        raise UsageError("--kernels: no kernel named (all: leave the flag out)")
    try:
        kernels = select(args.kernels)
    except ValueError as e:
        raise UsageError(f"--kernels: {e}") from None
    if not kernels:
        raise UsageError("--kernels: no kernel named")
    result = bench_polybench(kernels, args.dataset, reps=args.reps, threads=args.threads,
                             progress=lambda s: print(f"polyopt: {s}", file=sys.stderr,
                                                      flush=True))
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(result.report())
    return 1 if any(b.error for k in result.kernels for b in k.builds.values()) else 0


def cmd_target(args: argparse.Namespace) -> int:
    import json
    from .codegen.description import host_description
    desc = host_description(remeasure=args.remeasure)
    if args.json:
        json.dump(desc.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(desc.render())
    return 0


def cmd_peak(args: argparse.Namespace) -> int:
    from .codegen.peak import measure_peak
    from .codegen.target import host_target
    if args.reps < 1:
        raise UsageError(f"--reps must be at least 1, got {args.reps}")
    t = host_target()
    print(f"{t.cpu}: {t.vector_bits}-bit vectors, {t.num_vector_registers} vector registers, "
          f"FMA {'yes' if t.has_fma else 'no'}")
    for dtype in (("f64", "f32") if args.dtype == "both" else (args.dtype,)):
        p = measure_peak(dtype, t, reps=args.reps)
        print(f"  {dtype}: {p.gflops:7.1f} GFLOPS  ({p.lanes} lanes x 12 FMA chains, median of "
              f"{p.reps})")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """``polyopt tune``: :mod:`polyopt.tune`."""
    from pathlib import Path

    from .tune import TuneError, dask_executor, default_cache_path, tune
    if args.script is not None:
        raise UsageError("--script does not go with tune, which searches the parameters "
                         "itself: it writes the best pipeline as a script (--out), which "
                         "'polyopt opt --script' and 'polyopt run --script' replay")
    budget = args.budget.strip()
    try:
        trials, seconds = (None, float(budget[:-1])) if budget.endswith("s") else \
            (int(budget), None)
    except ValueError:
        raise UsageError(f"--budget: expected a number of trials (12) or seconds (120s), got "
                         f"'{args.budget}'") from None
    if args.pass_pipeline is not None or args.schedule:
        raise UsageError("tune searches the parameters of the pass flags' pipeline: drop -p "
                         "and --schedule")
    text, name = _read_source(args.file)
    cache = None if args.no_cache else Path(args.cache) if args.cache else default_cache_path()
    import contextlib
    try:
        with (contextlib.nullcontext((None, None)) if args.scheduler is None else
              dask_executor(args.scheduler)) as (executor, lock):
            result = tune(text, name, _options(args), func=args.tune_func, trials=trials,
                          seconds=seconds, workers=args.workers, samples=args.samples,
                          seed=args.seed, cache=cache, executor=executor, lock=lock,
                          progress=not args.no_progress and sys.stderr.isatty())
    except TuneError as e:
        raise UsageError(str(e)) from None
    if args.json:
        import json
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(result.report())
    if args.out:
        from .transform.emit import script_for_pipeline
        _write_output(script_for_pipeline(text, name, result.best.pipeline), args.out)
    return 0


COMMANDS = {"opt": cmd_opt, "run": cmd_run, "translate": cmd_translate, "bench": cmd_bench,
            "target": cmd_target, "peak": cmd_peak, "tune": cmd_tune}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = [f"--split-input-file={SPLIT_MARKER}" if a == "--split-input-file" else a
            for a in argv]
    args = parser.parse_args(argv)
    if args.command != "bench" and hasattr(args, "threads") and \
            (args.threads is not None or args.command != "opt"):
        from .codegen.openmp import resolve_threads
        try:         # the flag, or OMP_NUM_THREADS where the command reads it
            resolve_threads(args.threads)
        except ValueError as e:
            print(f"polyopt: error: {e}", file=sys.stderr)
            return 1
    if args.command == "bench":
        # numpy runs on as many threads as polyopt's parallel code (resolved before the
        # pinning sets OMP_NUM_THREADS)
        from .bench import pin_numpy_threads
        from .codegen.openmp import resolve_threads
        try:
            args.threads = resolve_threads(getattr(args, "threads", None))
        except ValueError as e:
            print(f"polyopt: error: {e}", file=sys.stderr)
            return 1
        pin_numpy_threads(args.threads)
    try:
        return COMMANDS[args.command](args)
    except PolyoptError as e:
        sys.stdout.flush()
        if args.debug:
            traceback.print_exc()
        name = getattr(args, "file", "<input>")
        name = "<stdin>" if name == "-" else name
        print(e.render(name), file=sys.stderr)
        return 1
    except UsageError as e:
        print(f"polyopt: error: {e}", file=sys.stderr)
        return 1
    except MemoryError as e:     # numpy's operands of a bench too large for this machine
        sys.stdout.flush()
        print(f"polyopt: error: out of memory{': ' + str(e) if str(e) else ''}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in polyopt, not in the input
        sys.stdout.flush()
        if args.debug:
            traceback.print_exc()
        print(f"polyopt: internal error: {type(e).__name__}: {e} (rerun with --debug for a "
              "traceback and report it)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
