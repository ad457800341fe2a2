"""The options and the order of passes, shared by the CLI and the Python API.

Options are data: :class:`PipelineOptions` is a frozen dataclass whose fields are the pass
switches; the CLI flags (``--hopt``, and ``--no-hopt`` to turn one off) are generated from its
fields, so the two cannot drift.

    MLIR text --parse--> Module --[--raise-scf-to-affine, --hopt: raise affine scf to affine]
              --[--memref-bound-check: refuse out-of-bounds accesses]
              --[--hopt-schedule (with --hopt): reschedule the affine nests with ISL]
              --[--hopt: expand hop/linalg ops]
              --[--hopt-copy: pack A and B, normalize the buffers' layouts]--> affine IR
              --[--convert-linalg-to-affine-loops]
              --(expand what is left, naively)--> lower to LLVM --O3--> JIT
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Optional, Union

from .affine.diagnostics import PolyoptError
from .affine.ir import Operation
from .affine.parser import parse as parse_text


@dataclass(frozen=True)
class PipelineOptions:
    """Pass switches; each field is a ``--flag`` of ``polyopt opt|run|translate``."""

    hopt: bool = field(default=False, metadata={
        "flag": "--hopt",
        "help": "expand hop.matmul and linalg.matmul into BLIS-tiled affine loop nests through "
                "ISL (tile attributes or the op's schedule, defaults from the machine model), "
                "hop.conv2d into its loop nest (the paper's -hopt)"})
    raise_scf: bool = field(default=False, metadata={
        "flag": "--raise-scf-to-affine", "standalone": True,
        "help": "raise scf.for/scf.if with affine bounds and conditions, and memref.load/store "
                "with affine subscripts, to the affine dialect so that the polyhedral passes see "
                "them (Polygeist's raise-scf-to-affine); --hopt runs it first as well"})
    copy: bool = field(default=False, metadata={
        "flag": "--hopt-copy",
        "help": "with --hopt: pack the operands of BLIS-tiled matmuls (paper section 2.6): A "
                "into an M_C x K_C buffer of M_R-row micro-panels under the K_C/M_C loops, B "
                "into K_C x N_R panels under the N_R loop (K_C x N_C under the K_C loop when "
                "N_C is given), zero-padded, 64-byte aligned, allocated once per call "
                "(--no-hopt-copy: no packing, the paper's -hopt-copy=false)"})
    unroll: bool = field(default=False, metadata={
        "flag": "--hopt-unroll",
        "help": "with --hopt: unroll the M_R x N_R register tile into the k loop and unroll k by "
                "K_U (paper section 2.7); with --hopt-copy, partial tiles run as full ones on "
                "zero-padded buffers"})
    scalrep: bool = field(default=False, metadata={
        "flag": "--hopt-scalrep",
        "help": "with --hopt: scalar replacement (affine-scalrep): C's tile in registers across "
                "the k loop, redundant loads removed, invariant loads hoisted"})
    vect: bool = field(default=False, metadata={
        "flag": "--hopt-vect",
        "help": "with --hopt: vectorize the register tile along j with the target's vector "
                "width (paper section 2.8; upstream vector/affine ops only)"})

    blis: bool = field(default=False, metadata={
        "flag": "--hopt-blis",
        "help": "with --hopt: tile and pack as --hopt-copy does, with the register tile of a "
                "BLIS micro-kernel (the PyPI package 'blis'), and call that hand-written kernel "
                "for each M_R x N_R x K_C tile (paper section 2.12, 'outer MLIR, inner BLIS')"})
    hopt_raise: bool = field(default=True, metadata={
        "flag": "--hopt-raise",
        "help": "with --hopt (on by default): affine nests that compute a matrix product "
                "(C (+)= alpha * A * B after an optional C = 0 or C *= beta, in any loop order, "
                "batched, A/B transposed or strided) go through the BLIS pipeline like "
                "hop.matmul, with a remark saying what was recognized or why a near miss was "
                "not (--no-hopt-raise: leave them as written)"})
    bufferize: bool = field(default=False, metadata={
        "pass_flag": "--one-shot-bufferize",
        "help": "tensors to memrefs before anything else, by upstream's bufferization "
                "(mlir-opt-22 --one-shot-bufferize with function boundaries, results to out "
                "parameters, its deallocation pipeline): a tensor result becomes the "
                "function's last memref argument; locations stay the input's"})
    forall_to_parallel: bool = field(default=False, metadata={
        "pass_flag": "--scf-forall-to-parallel",
        "help": "scf.forall becomes scf.parallel, as mlir-opt's --scf-forall-to-parallel does "
                "(raise-scf-to-affine and compiling do it anyway)"})
    linalg_to_affine: bool = field(default=False, metadata={
        "pass_flag": "--convert-linalg-to-affine-loops",
        "help": "lower the linalg ops on memrefs to affine loop nests, as mlir-opt's "
                "-convert-linalg-to-affine-loops does (after the --hopt passes, which take "
                "linalg.matmul and the convolutions first); compiling does it anyway"})
    memref_bound_check: bool = field(default=False, metadata={
        "flag": "--memref-bound-check",
        "standalone": True,
        "help": "refuse an affine load or store that may access its memref out of bounds, "
                "naming the access and an offending iteration (MLIR's memref bound check, "
                "mlir-opt's --test-memref-bound-check); without it the program is taken as "
                "written, as mlir-opt does.  Packing and --hopt-blis check the nests they "
                "transform in any case"})
    auto_schedule: bool = field(default=True, metadata={
        "flag": "--hopt-schedule",
        "help": "with --hopt (on by default): reschedule every other affine nest with ISL's "
                "scheduler (Pluto-style permutable bands, fusion, skewing), tile its bands "
                "from the machine model and mark its parallel loops, or leave it as written "
                "with a remark saying why (--no-hopt-schedule: leave them all as written)"})
    parallel: bool = field(default=False, metadata={
        "flag": "--hopt-parallel", "standalone": True,
        "help": "run the outermost loop of each affine nest that carries no dependence (ISL "
                "dataflow; the automatic scheduler's and user schedules' nests included) as an "
                "affine.parallel on the --threads team; a loop the input marks "
                "{polyopt.parallel} that carries a dependence is refused, naming the pair "
                "(MLIR's -affine-parallelize, Polly's -polly-parallel)"})
    blis_kernel: Optional[str] = field(default=None, metadata={
        "option": "--hopt-blis-kernel",
        "help": "with --hopt-blis: the micro-kernel to call (default: the best one this CPU "
                "runs for the element type), e.g. bli_dgemm_haswell_asm_6x8"})
    threads: Optional[int] = field(default=None, metadata={
        "option": "--threads", "type": int, "metavar": "N",
        "help": "threads of the parallel loops (affine.parallel, scf.parallel), run on LLVM's "
                "OpenMP runtime (libomp); default: OMP_NUM_THREADS, else the number of cores "
                "this process may use; 1 runs them as sequential loops"})

    def __post_init__(self):
        if self.threads is not None and (not isinstance(self.threads, int)
                                         or isinstance(self.threads, bool) or self.threads < 1):
            raise ValueError(f"threads must be a positive integer, got {self.threads!r}")
        if self.blis_kernel is not None and not self.blis:
            raise ValueError("--hopt-blis-kernel needs --hopt-blis")
        needs_hopt = [f.metadata["flag"] for f in fields(self)
                      if "flag" in f.metadata and f.name != "hopt" and getattr(self, f.name)
                      and not f.metadata.get("standalone") and f.default is not True]
        if needs_hopt and not self.hopt:
            verb = "needs" if len(needs_hopt) == 1 else "need"
            raise ValueError(f"{', '.join(needs_hopt)} {verb} --hopt (they transform the loop "
                             f"nests --hopt generates)")

    @classmethod
    def flag_fields(cls):
        """(name, --flag, help) of the on/off switches."""
        return [(f.name, f.metadata["flag"], f.metadata["help"]) for f in fields(cls)
                if "flag" in f.metadata]

    @classmethod
    def pass_fields(cls):
        """(name, --flag, help) of the switches of passes that stand alone (no --hopt)."""
        return [(f.name, f.metadata["pass_flag"], f.metadata["help"]) for f in fields(cls)
                if "pass_flag" in f.metadata]

    @classmethod
    def value_fields(cls):
        """(name, --option, help) of the options that take a value."""
        return [(f.name, f.metadata["option"], f.metadata["help"]) for f in fields(cls)
                if "option" in f.metadata]


def machine_model(target=None):
    """The description the schedule model needs (vector width and registers, cache sizes,
    ways and line size, FMA latency and throughput, full-width FMAs, embedded broadcasts, the
    feature names), every field from the target's facts and measurements
    (:mod:`polyopt.codegen.description`), never from the CPU's name.  The host's is measured
    at most once per process, then read from the cache; a named target that is not the host
    gets MachineModel's defaults for what only a measurement can tell."""
    from .codegen.description import describe_target
    from .codegen.target import host_target
    from .schedules.blis_schedule import MachineModel
    t = target if target is not None else host_target()
    return MachineModel(**describe_target(t).machine_fields())


def run_passes(module: Operation, options: PipelineOptions, remark=None, *,
               raised: bool = False, after=None) -> Operation:
    """Apply the enabled passes, in order, to ``module`` (in place) and re-verify it.

    ``remark(loc, message)``, when given, receives what the passes decided (tile sizes...).
    ``raised``: the caller ran raise-scf-to-affine already (the CLI does, before
    ``--schedule``).  ``after(pass name, module)`` is called after each pass.
    """
    from .passes import default_pipeline, run_pipeline
    run_pipeline(module, default_pipeline(options, raised=raised), remark, after)
    return module


def _microkernel_chooser(requested: Optional[str]):
    """``(element type, loc) -> MicroKernelChoice`` for ``--hopt-blis``: the requested kernel
    or the best one the host runs; errors (no such kernel, wrong element type, CPU without its
    instructions, the blis package missing) point at the op."""
    from .affine.diagnostics import CodegenError
    from .codegen import microkernels
    from .codegen.target import host_target
    from .schedules.blis_schedule import MicroKernelChoice

    def choose(elem: str, loc) -> MicroKernelChoice:
        target = host_target()
        if requested is not None:
            kernel = microkernels.lookup(requested)
            if kernel is None:
                known = ", ".join(k.symbol for k in microkernels.REGISTRY)
                raise CodegenError(f"unknown BLIS micro-kernel '{requested}' (known: {known})",
                                   loc)
            if kernel.dtype != elem:
                raise CodegenError(f"micro-kernel {kernel.symbol} computes {kernel.dtype}, "
                                   f"the matmul is {elem}", loc)
        else:
            kernel = microkernels.default_kernel(elem, target)
            if kernel is None:
                raise CodegenError(f"--hopt-blis: {microkernels.why_no_kernel(elem, target)}",
                                   loc)
        try:
            microkernels.load_microkernel(kernel, target)
        except microkernels.MicroKernelError as e:
            raise CodegenError(str(e), loc) from None
        return MicroKernelChoice(kernel.symbol, kernel.m_r, kernel.n_r,
                                 l1_panel="A" if kernel.swapped else "B")
    return choose


def _normalize_memrefs(module: Operation, remark=None) -> None:
    """The packing buffers' tiled layouts become higher-rank row-major buffers (MLIR's
    normalize-memrefs, paper section 2.12: ``memref<174x512xf64, (d0, d1) -> (d0 floordiv 6,
    d1, d0 mod 6)>`` -> ``memref<29x512x6xf64>``); function arguments keep their types."""
    from .memref_layout.normalize import normalize_memrefs
    normalize_memrefs(module, arguments=False, remark=remark)


def prepare_for_lowering(module: Operation) -> Operation:
    """What must hold before LLVM lowering: no high-level ops are left (``hop.*`` expanded,
    linalg ops lowered to affine loops as --convert-linalg-to-affine-loops does)."""
    from .affine.dialects.linalg import LinalgStructuredOp
    from .schedules.expand import expand_high_level_ops
    expand_high_level_ops(module)
    from .affine.dialects.linalg_softmax import decompose_softmax
    decompose_softmax(module)       # (upstream lowers it nowhere on memrefs)
    if any(isinstance(op, LinalgStructuredOp) for op in module.walk()):
        from .affine.linalg_to_affine import convert_linalg_to_affine_loops
        convert_linalg_to_affine_loops(module, check_sizes=True)
    return module


Source = Union[str, Operation]


def load(source: Source, filename: str = "<input>") -> Operation:
    """Parse text, or clone a given module so that the caller's IR is never mutated."""
    if isinstance(source, str):
        return parse_text(source, filename)
    if isinstance(source, Operation) and source.name == "builtin.module":
        return source.clone()
    raise TypeError(f"expected MLIR text or a builtin.module, got {type(source).__name__}")


class CompiledModule:
    """A JIT-compiled module: ``compiled["matmul"](A, B, C)`` runs ``@matmul`` on numpy arrays."""

    def __init__(self, module: Operation, options: PipelineOptions, opt_level: int = 3,
                 target=None, llvm_vectorize: bool = True):
        from .codegen.jit import JITEngine
        from .codegen.target import host_target
        from .codegen.to_llvm import lower_module
        start = time.perf_counter()
        self.module = module
        self.options = options
        from .codegen.openmp import resolve_threads
        self.target = target if target is not None else host_target()
        #: the team size of the parallel loops (``options.threads`` or the default)
        self.threads = resolve_threads(options.threads)
        from .transform.buffer_results import drop_equivalent_buffer_results
        # a function returning its outs argument (upstream's one-shot-bufferize) is callable
        self._returned_arguments = drop_equivalent_buffer_results(module)
        lowered = lower_module(module, self.target, threads=self.threads)
        self.llvm_ir: str = lowered.llvm_ir
        self.signatures = lowered.signatures
        self.engine = JITEngine(self.llvm_ir, self.target, opt_level=opt_level,
                                llvm_vectorize=llvm_vectorize, uses_amx=lowered.uses_amx)
        self._callables: dict = {}
        self.compile_time = time.perf_counter() - start

    @property
    def function_names(self) -> list[str]:
        return list(self.signatures)

    def __contains__(self, name: str) -> bool:
        return name in self.signatures

    def __getitem__(self, name: str):
        fn = self._callables.get(name)
        if fn is None:
            sig = self.signatures.get(name)
            if sig is None:
                known = ", ".join(f"@{n}" for n in self.signatures) or "none"
                raise KeyError(f"no function @{name} in the module (functions: {known})")
            fn = sig.make_callable(self.engine)
            aliases = self._returned_arguments.get(name)
            if aliases is not None and sig.numpy_error is None:
                from .transform.buffer_results import ReturnsArguments
                fn = ReturnsArguments(fn, aliases, [a.name for a in sig.args])
            self._callables[name] = fn
        return fn

    def asm(self) -> str:
        """Host assembly of the optimized module."""
        return self.engine.asm()

    def optimized_llvm_ir(self) -> str:
        return self.engine.llvm_ir_optimized()


def compile(source: Source, *, filename: str = "<input>", opt_level: int = 3,
            options: Optional[PipelineOptions] = None, remark=None,
            llvm_vectorize: bool = True, **switches) -> CompiledModule:
    """Parse (or copy) ``source``, run the pipeline, lower to LLVM, optimize and JIT it.

    Keyword switches are the fields of :class:`PipelineOptions` (``hopt=True``, ...;
    ``threads=N`` runs parallel loops on N threads, default ``OMP_NUM_THREADS`` else the
    core count, 1 sequential);
    ``llvm_vectorize=False`` turns LLVM's own loop and SLP vectorizers off.
    Errors in the input raise :class:`~polyopt.affine.diagnostics.PolyoptError` subclasses.
    """
    known = {f.name for f in fields(PipelineOptions)}
    unknown = set(switches) - known
    if unknown:
        raise TypeError(f"compile() got unknown option(s) {', '.join(sorted(unknown))}; "
                        f"known: {', '.join(sorted(known))}")
    if options is None:
        options = PipelineOptions(**switches)
    if options.threads is None:     # the code is generated for the thread count it runs on
        from dataclasses import replace
        from .codegen.openmp import resolve_threads
        options = replace(options, threads=resolve_threads())
    if options.bufferize and isinstance(source, str):
        from .bufferize import one_shot_bufferize
        source, filename = one_shot_bufferize(source, filename)
    module = load(source, filename)
    run_passes(module, options, remark)
    prepare_for_lowering(module)
    return CompiledModule(module, options, opt_level=opt_level, llvm_vectorize=llvm_vectorize)


__all__ = ["PipelineOptions", "CompiledModule", "compile", "load", "run_passes",
           "prepare_for_lowering", "PolyoptError"]
