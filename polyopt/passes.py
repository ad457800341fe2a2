"""The registry of named passes: ``name -> (options dataclass, function(module, options,
remark))``, with a one-line description naming the MLIR counterpart.  The pipeline
(:func:`polyopt.pipeline.run_passes`, whose ``--hopt*`` switches are spellings of
:func:`default_pipeline`), the CLI (``-p 'name{opt=v},name2'``, as mlir-opt's
``--pass-pipeline``) and the tests use it.

    >>> run_pipeline(module, "raise-scf-to-affine,hopt-raise-contractions{copy=true},hopt-expand")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

from .affine.attributes import UnitAttr
from .schedules.auto_schedule import KEEP_SCHEDULE

Remark = Optional[Callable[[object, str], None]]

__all__ = ["Pass", "REGISTRY", "register", "parse_pipeline", "run_pipeline", "BlisOptions",
           "NoOptions", "PipelineSyntaxError", "default_pipeline", "print_pipeline"]


class PipelineSyntaxError(ValueError):
    """A textual pipeline that does not parse or names an unknown pass or option."""


@dataclass(frozen=True)
class NoOptions:
    """A pass without options."""


def _per_product(default, help_: str):
    """An option that may give each product of the pass its own value (a list)."""
    return field(default=default, metadata={"help": help_, "per_product": True})


@dataclass(frozen=True)
class BlisOptions:
    """The BLIS pipeline's options (the ``--hopt-*`` switches)."""

    copy: bool = field(default=False, metadata={"help": "pack A and B (--hopt-copy)"})
    unroll: bool = field(default=False, metadata={"help": "unroll-and-jam the register tile "
                                                           "(--hopt-unroll)"})
    scalrep: bool = field(default=False, metadata={"help": "scalar replacement of C's tile "
                                                            "(--hopt-scalrep)"})
    vect: bool = field(default=False, metadata={"help": "vectorize the register tile "
                                                         "(--hopt-vect)"})
    blis: bool = field(default=False, metadata={"help": "call a BLIS micro-kernel per tile "
                                                         "(--hopt-blis)"})
    blis_kernel: Optional[str] = field(default=None, metadata={
        "help": "the micro-kernel of --hopt-blis (--hopt-blis-kernel)"})
    tiled: bool = field(default=True, metadata={"help": "BLIS tiling (false: the naive nest)"})
    threads: int = field(default=1, metadata={"help": "with copy: the packed nest's loop over "
                                                       "M_C blocks runs on this many threads "
                                                       "(--threads)"})
    # the BLIS parameters of the products that do not carry their own (hop.matmul's tile
    # attributes win; 0: the model's choice)
    # (a list, ``mc=96,144``, gives each product of the pass its own value, in order)
    mc: int = _per_product(0, "M_C, rows of A's block (0: the model's)")
    kc: int = _per_product(0, "K_C, the depth of the blocks")
    nc: int = _per_product(0, "N_C, columns of B's block")
    mr: int = _per_product(0, "M_R, rows of the register tile")
    nr: int = _per_product(0, "N_R, columns of the register tile")
    ku: int = _per_product(0, "K_U, unroll factor of the k loop")
    form: str = _per_product("", "the register tile's form, row or col (empty: the model's)")
    l2: str = _per_product("", "the block in L2, A (GEBP) or B (GEPB)")
    order: str = _per_product("", "the register tile's loop order, ji (the paper's (.., d1, "
                                  "d0)) or ij (section 2.12's permuted (.., d0, d1))")

    def tiles(self, product: int = 0) -> dict:
        """The parameters given for the ``product``-th product the pass expands (0-based), as
        ``hop.matmul``'s attributes name them.  An option given as a list (``mc=96,144``)
        has one value per product, in order; products past its end get the model's choice."""
        def value(key):
            v = getattr(self, key)
            if isinstance(v, tuple):
                return v[product] if product < len(v) else type(v[0])()
            return v
        names = {"mc": "M_C", "kc": "K_C", "nc": "N_C", "mr": "M_R", "nr": "N_R", "ku": "K_U"}
        for key in names:
            if value(key) < 0:
                raise PipelineSyntaxError(f"{key} must be positive (0: the model's choice), "
                                          f"got {value(key)}")
        out = {names[k]: value(k) for k in names if value(k)}
        from .affine.dialects.hop import tile_param_problem
        problem = tile_param_problem(out)
        if problem is not None:
            raise PipelineSyntaxError(problem)
        for key, attr, allowed in (("form", "register_form", ("row", "col")),
                                   ("l2", "l2_block", ("A", "B")),
                                   ("order", "register_order", ("ji", "ij"))):
            value_ = value(key)
            if value_ and value_ not in allowed:
                raise PipelineSyntaxError(f"{key} must be {' or '.join(allowed)} (empty: the "
                                          f"model's choice), got '{value_}'")
            if value_:
                out[attr] = value_
        return out


@dataclass(frozen=True)
class Pass:
    name: str
    summary: str
    options: type
    run: Callable

    def describe_options(self) -> str:
        return ", ".join(f"{f.name.replace('_', '-')}={f.default}" for f in fields(self.options))


REGISTRY: dict[str, Pass] = {}


def register(name: str, summary: str, options: type = NoOptions):
    """Decorator: ``@register("hopt-expand", "...", BlisOptions) def f(module, opts, remark)``."""
    def wrap(fn):
        if name in REGISTRY:
            raise ValueError(f"pass '{name}' registered twice")
        REGISTRY[name] = Pass(name, summary, options, fn)
        return fn
    return wrap


# ---------------------------------------------------------------------------------------------
# the passes


@register("lift-cf-to-scf", "loops and conditionals written with cf.br/cf.cond_br become "
          "scf.for/scf.if (mlir-opt --lift-cf-to-scf, for the shapes --convert-scf-to-cf "
          "makes; raise-scf-to-affine runs it first)")
def _lift_cf(module, opts, remark):
    from .affine.lift_cf_to_scf import lift_cf_to_scf
    lift_cf_to_scf(module, remark)


@register("raise-scf-to-affine", "cf branches lifted to scf, scf.forall to scf.parallel, then "
          "scf.for/scf.if with affine bounds become affine.for/affine.if (Polygeist's "
          "raise-scf-to-affine)")
def _raise_scf(module, opts, remark):
    from .affine.dialects.scf_forall import forall_to_parallel
    from .affine.raise_scf_to_affine import raise_scf_to_affine
    forall_to_parallel(module)
    raise_scf_to_affine(module, remark)


@register("scf-forall-to-parallel", "scf.forall becomes scf.parallel (mlir-opt "
          "--scf-forall-to-parallel)")
def _forall_to_parallel(module, opts, remark):
    from .affine.dialects.scf_forall import forall_to_parallel
    forall_to_parallel(module)


@register("drop-equivalent-buffer-results", "memref results of private functions that are "
          "one of the function's arguments are dropped, calls use their operand (mlir-opt "
          "--drop-equivalent-buffer-results)")
def _drop_buffer_results(module, opts, remark):
    from .transform.buffer_results import drop_equivalent_buffer_results
    drop_equivalent_buffer_results(module, public=False)


@register("memref-bound-check", "refuse affine accesses that may leave their memref "
          "(mlir-opt --test-memref-bound-check)")
def _bound_check(module, opts, remark):
    from .schedules.bounds_check import check_bounds
    check_bounds(module)


@register("hopt-report-opaque-nests", "a remark for every nest the polyhedral model cannot "
          "represent, and for every float reduction kept in source order (no MLIR "
          "counterpart; LLVM's -Rpass-analysis=loop-vectorize)")
def _report_opaque(module, opts, remark):
    from .schedules.reduction_hints import remark_strict_reductions
    from .schedules.scops import report_opaque_nests
    report_opaque_nests(module, remark)
    remark_strict_reductions(module, remark)


@register("hopt-linalg-to-loops", "linalg ops the BLIS expansion does not take (NCHW "
          "convolutions, transposed matmuls, generics...) become affine loops, so that "
          "contraction and convolution raising and the automatic scheduler see them; a "
          "quantized matmul of bytes first becomes a linalg.matmul and its zero points' "
          "share, an mmt4d the matmul of its unpacked matrices")
def _linalg_rest_to_loops(module, opts, remark):
    from .affine.dialects.linalg import LinalgStructuredOp
    from .affine.linalg_to_affine import lower_to_affine_loops
    from .schedules.expand import blis_takes
    from .schedules.mmt4d import decompose_mmt4ds
    from .schedules.quantized import decompose_quantized_matmuls
    decompose_quantized_matmuls(module, remark)
    decompose_mmt4ds(module, remark)
    from .affine.dialects.linalg_softmax import decompose_softmax
    decompose_softmax(module, keep=lambda op: blis_takes(op, remark))   # (hopt-expand: vectors)
    todo = [op for op in module.walk() if isinstance(op, LinalgStructuredOp) and not blis_takes(
        op, remark if op.name == "linalg.depthwise_conv_2d_nchw_chw" else None)]
    from .schedules.reduction_hints import remark_strict_reductions
    for op in reversed(todo):   # innermost first, as convert-linalg-to-affine-loops
        loops = lower_to_affine_loops(op)
        if loops:
            remark_strict_reductions(loops[0], remark)


def _microkernel_for(opts: BlisOptions):
    if not opts.blis:
        return None
    from .pipeline import _microkernel_chooser
    return _microkernel_chooser(opts.blis_kernel)


def _expansion_args(opts: BlisOptions) -> dict:
    from .pipeline import machine_model
    from .schedules.expand import RegisterTileSteps
    return dict(tiled=opts.tiled, machine=machine_model(), copy=opts.copy or opts.blis,
                steps=RegisterTileSteps(vect=opts.vect, unroll=opts.unroll,
                                        scalrep=opts.scalrep),
                microkernel_for=_microkernel_for(opts), threads=opts.threads,
                tiles=opts.tiles)


@register("hopt-raise-contractions", "affine nests computing C (+)= alpha*A*B (+beta*C) go "
          "through the BLIS pipeline (Polly's matmul pattern; no MLIR counterpart)",
          BlisOptions)
def _raise_contractions(module, opts, remark):
    from .schedules.expand import expand_contraction
    from .schedules.raise_contractions import raise_contractions
    args = _expansion_args(opts)

    def keep(ops):
        # the automatic scheduler (hopt-schedule, next) leaves the BLIS nests as they are
        for op in ops:
            op.attributes[KEEP_SCHEDULE] = UnitAttr()
    tiles, count = args.pop("tiles"), iter(range(1 << 30))
    _fold_applies_into_accesses(module)
    raise_contractions(module, remark=remark, on_raised=keep, machine=args["machine"],
                       threads=args["threads"], expand=lambda con: expand_contraction(con, remark=remark,
                                                             tiles=tiles(next(count)), **args))


def _fold_applies_into_accesses(module) -> None:
    """``affine.apply`` results used as subscripts (what --convert-linalg-to-affine-loops
    writes for ``oh + kh``) go into the access maps, where the raising reads them (MLIR's
    canonicalize does the same)."""
    from .affine.dialects.affine import AffineApplyOp
    from .affine.loop_utils import fold_affine_apply
    for apply in [op for op in module.walk() if isinstance(op, AffineApplyOp)]:
        if apply.parent is not None:
            fold_affine_apply(apply)


@register("hopt-expand", "hop.matmul/hop.conv2d, linalg.matmul/batch_matmul and the linalg "
          "convolutions through the BLIS pipeline (the paper's -hopt)", BlisOptions)
def _expand(module, opts, remark):
    from .schedules.expand import expand_high_level_ops
    _drop_keep_marks(module)      # when hopt-schedule did not run
    expand_high_level_ops(module, remark=remark, **_expansion_args(opts))


@register("hopt-delicm", "a 0-d scalar whose every live range ends by storing into an array "
          "element nothing else touches meanwhile lives in that element (Polly's "
          "-polly-delicm; the inverse of mlir-opt --affine-scalrep)")
def _delicm(module, opts, remark):
    from .schedules.delicm import forward_scalars
    forward_scalars(module, remark)


@register("hopt-collapse-loops", "innermost perfectly nested loops whose accesses all walk "
          "contiguous elements become one loop over memref.collapse_shape views (mlir-opt "
          "--affine-loop-coalescing without its floordiv/mod subscripts)")
def _collapse_loops(module, opts, remark):
    from .schedules.collapse_loops import collapse_contiguous_loops
    collapse_contiguous_loops(module, remark)


@register("hopt-normalize-memrefs", "tiled-layout buffers become higher-rank row-major ones "
          "(mlir-opt --normalize-memrefs)")
def _normalize(module, opts, remark):
    from .memref_layout.normalize import normalize_memrefs
    normalize_memrefs(module, arguments=False, remark=remark)


@register("hopt-blis-calls", "register tiles marked by --hopt-blis become micro-kernel calls "
          "(no MLIR counterpart)")
def _blis_calls(module, opts, remark):
    from .schedules.microkernel_call import map_to_microkernels
    map_to_microkernels(module, remark)


@dataclass(frozen=True)
class ScheduleOptions:
    """The automatic scheduler's pass options."""

    outer_parallel: bool = field(default=False, metadata={
        "help": "prefer schedules whose outermost loops are parallel (ISL's "
                "outer_coincidence) where ISL's own has a sequential outermost loop (set by "
                "--hopt-parallel on more than one thread)"})
    threads: int = field(default=1, metadata={
        "help": "the threads the parallel loops will run on: with more than one, time tiles "
                "of stencil sweeps run in parallel wavefronts (set by --hopt-parallel)"})


@register("hopt-schedule", "every other nest through the automatic ISL scheduler when it is "
          "built (Pluto/Polly-style; a no-op until then)", ScheduleOptions)
def _schedule_rest(module, opts, remark):
    from .pipeline import machine_model
    from .schedules.auto_schedule import (PARALLEL, AutoScheduleOptions,
                                          schedule_remaining_nests)
    from .schedules.parallelize import trust_mark
    before = {id(op) for op in module.walk() if PARALLEL in op.attributes}
    schedule_remaining_nests(module, machine_model(), remark,
                             AutoScheduleOptions(outer_parallel=opts.outer_parallel,
                                                 team=opts.threads))
    _drop_keep_marks(module)
    for op in module.walk():    # the scheduler's marks were checked with ISL as it made them
        if PARALLEL in op.attributes and id(op) not in before:
            trust_mark(op)


@dataclass(frozen=True)
class ParallelOptions:
    """The threads pass's options."""

    threads: int = field(default=1, metadata={
        "help": "the team size: above one, loops that carry only sums into small arrays run "
                "in parallel on a private copy per thread (--threads)"})


@register("hopt-parallel", "the outermost dependence-free loop of each nest becomes "
          "affine.parallel, checked with ISL; {polyopt.parallel} on a loop carrying a "
          "dependence is refused (mlir-opt -affine-parallelize{max-nested=1}, Polly's "
          "-polly-parallel); with threads > 1, loops carrying only array sums the scheduler "
          "proved get a private copy per thread (OpenMP's reduction(+: y[0:n]))",
          ParallelOptions)
def _parallelize(module, opts, remark):
    from .schedules.parallelize import parallelize_outer_loops
    parallelize_outer_loops(module, remark, opts.threads)


def _drop_keep_marks(module) -> None:
    """The marks raising leaves on its BLIS nests for hopt-schedule are not part of the IR."""
    for op in module.walk():
        op.attributes.pop(KEEP_SCHEDULE, None)


@register("convert-linalg-to-affine-loops", "linalg ops on memrefs become affine loop nests "
          "(mlir-opt --convert-linalg-to-affine-loops)")
def _linalg_to_affine(module, opts, remark):
    from .affine.linalg_to_affine import convert_linalg_to_affine_loops
    convert_linalg_to_affine_loops(module)


@register("hopt", "the --hopt pipeline as one pass, its BLIS options given ({mc=300 kc=128}); "
          "hopt-copy, hopt-unroll{ku=N}, hopt-scalrep, hopt-vect and hopt-blis{kernel=NAME} "
          "after it in a textual pipeline are its switches (the paper's -hopt)", BlisOptions)
def _hopt(module, opts, remark):
    for p, o in hopt_passes(opts):
        p.run(module, o, remark)


def hopt_passes(opts: BlisOptions) -> list:
    """The passes ``hopt{...}`` stands for: :func:`default_pipeline` under ``--hopt`` and the
    switches in ``opts``, with ``opts``' BLIS parameters in its expansion passes."""
    from dataclasses import replace
    from .pipeline import PipelineOptions
    try:
        flags = PipelineOptions(hopt=True, copy=opts.copy, unroll=opts.unroll,
                                scalrep=opts.scalrep, vect=opts.vect, blis=opts.blis,
                                blis_kernel=opts.blis_kernel, threads=opts.threads)
    except ValueError as e:     # the pass's options, as the flags would spell them
        raise PipelineSyntaxError(f"hopt: {e}") from None
    return [(p, replace(opts) if isinstance(o, BlisOptions) else o)
            for p, o in default_pipeline(flags)]


@dataclass(frozen=True)
class UnrollSwitch:
    """``hopt-unroll``'s option."""

    ku: int = field(default=0, metadata={"help": "K_U, the k loop's unroll factor (0: the "
                                                 "model's)"})


@dataclass(frozen=True)
class BlisSwitch:
    """``hopt-blis``'s option."""

    kernel: Optional[str] = field(default=None, metadata={"help": "the micro-kernel (default: "
                                                                  "the best the CPU runs)"})


def _switch_only(module, opts, remark):
    raise PipelineSyntaxError("a hopt switch runs as part of the hopt pass before it")


#: the switches of ``hopt`` in a textual pipeline: name -> what it sets in the options
HOPT_SWITCHES = {
    "hopt-copy": lambda o: {"copy": True},
    "hopt-unroll": lambda o: {"unroll": True, **({"ku": o.ku} if o.ku else {})},
    "hopt-scalrep": lambda o: {"scalrep": True},
    "hopt-vect": lambda o: {"vect": True},
    "hopt-blis": lambda o: {"blis": True, **({"blis_kernel": o.kernel} if o.kernel else {})},
}
for _name, _options in (("hopt-copy", NoOptions), ("hopt-unroll", UnrollSwitch),
                        ("hopt-scalrep", NoOptions), ("hopt-vect", NoOptions),
                        ("hopt-blis", BlisSwitch)):
    register(_name, f"--{_name} as a switch of the hopt pass before it in a textual pipeline",
             _options)(_switch_only)


# ---------------------------------------------------------------------------------------------
# pipelines as text


_NAME = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*")
#: the op anchors of MLIR's textual pipelines; polyopt's passes run on the whole module, so a
#: pass nested under ``func.func(...)`` runs over every function as it would at module level
_ANCHORS = ("builtin.module", "func.func")


def _value(text: str, ftype, where: str):
    t = str(ftype)
    if "bool" in t:
        if text in ("true", "1", ""):
            return True
        if text in ("false", "0"):
            return False
        raise PipelineSyntaxError(f"{where}: expected true or false, got '{text}'")
    if "int" in t and "Optional" not in t:
        try:
            return int(text)
        except ValueError:
            raise PipelineSyntaxError(f"{where}: expected an integer, got '{text}'") from None
    return text


def parse_pipeline(text: str) -> list[tuple[Pass, object]]:
    """``'name{opt=v opt2=v2},name2'`` (mlir-opt's syntax; options separated by spaces or
    commas), also nested in ``builtin.module(...)`` and ``func.func(...)`` as
    ``--pass-pipeline`` writes it -> [(pass, options)]."""
    items, pos = _parse_items(text, 0, None)
    if text[pos:].strip():
        raise PipelineSyntaxError(f"cannot parse the pass pipeline at '{text[pos:].strip()}'")
    return _fold_hopt_switches(items)


def _fold_hopt_switches(items: list) -> list:
    """``hopt{mc=300}, hopt-copy, hopt-unroll{ku=4}`` -> ``hopt{copy=true unroll=true mc=300
    ku=4}``: a switch sets its flag in the ``hopt`` pass before it."""
    from dataclasses import replace
    out: list = []
    for p, opts in items:
        if p.name not in HOPT_SWITCHES:
            out.append((p, opts))
            continue
        if not out or out[-1][0].name != "hopt":
            raise PipelineSyntaxError(f"'{p.name}' is a switch of the hopt pass: write it right "
                                      f"after 'hopt' (e.g. 'hopt{{mc=300}},{p.name}')")
        hopt, hopt_opts = out[-1]
        out[-1] = (hopt, replace(hopt_opts, **HOPT_SWITCHES[p.name](opts)))
    return out


def _parse_items(text: str, pos: int, closing: str | None) -> tuple[list, int]:
    out: list = []
    while True:
        if not text[pos:].strip() or (closing and text[pos:].lstrip().startswith(closing)):
            break
        m = _NAME.match(text, pos)
        if m is None or not m.group(1):
            raise PipelineSyntaxError(f"cannot parse the pass pipeline at '{text[pos:]}'")
        name, pos = m.group(1), m.end()
        if text.startswith("(", pos):
            if name not in _ANCHORS:
                raise PipelineSyntaxError(f"'{name}(...)': the pipeline nests under "
                                          f"{' and '.join(_ANCHORS)} only")
            inner, pos = _parse_items(text, pos + 1, ")")
            if not text.startswith(")", pos):
                raise PipelineSyntaxError(f"missing ')' after '{name}(' in the pass pipeline")
            out += inner
            pos += 1
        else:
            options = ""
            if text.startswith("{", pos):
                end = text.find("}", pos)
                if end < 0:
                    raise PipelineSyntaxError(f"missing '}}' after '{name}{{' in the pass "
                                              f"pipeline")
                options, pos = text[pos + 1:end], end + 1
            out.append(_pass_with_options(name, options))
        rest = text[pos:].lstrip()
        pos = len(text) - len(rest)
        if rest.startswith(","):
            pos += 1
        elif rest and not (closing and rest.startswith(closing)):
            raise PipelineSyntaxError(f"expected ',' in the pass pipeline at '{rest}'")
    return out, len(text) - len(text[pos:].lstrip())


def _pass_with_options(name: str, options: str) -> tuple[Pass, object]:
    p = REGISTRY.get(name)
    if p is None:
        raise PipelineSyntaxError(f"unknown pass '{name}' (known: "
                                  f"{', '.join(sorted(REGISTRY))})")
    kwargs = {}
    known = {f.name: f for f in fields(p.options)}
    last = None
    for item in re.split(r"[\s,]+", options.strip()):
        if not item:
            continue
        if "=" not in item and last is not None and _listable(known[last]):
            # mlir-opt's list options: ``mc=96,144`` is one value per product
            more = _value(item, known[last].type, f"{name}{{{last}}}")
            kwargs[last] = (kwargs[last] if isinstance(kwargs[last], tuple)
                            else (kwargs[last],)) + (more,)
            continue
        key, _, val = item.partition("=")
        fname = key.replace("-", "_")
        if fname not in known:
            raise PipelineSyntaxError(
                f"pass '{name}' has no option '{key}' (options: "
                f"{', '.join(k.replace('_', '-') for k in known) or 'none'})")
        kwargs[fname] = _value(val, known[fname].type, f"{name}{{{key}}}")
        last = fname
    if isinstance(kwargs.get("threads"), int) and kwargs["threads"] < 1:
        raise PipelineSyntaxError(f"{name}{{threads}} must be a positive integer, got "
                                  f"{kwargs['threads']}")
    return p, p.options(**kwargs)


def _listable(f) -> bool:
    """Options that take one value per product (:meth:`BlisOptions.tiles`)."""
    return f.metadata.get("per_product", False)


def _option_text(value) -> str:
    if isinstance(value, tuple):
        return ",".join(_option_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def print_pipeline(pipeline) -> str:
    """The text :func:`parse_pipeline` reads back (options that differ from the defaults)."""
    items = []
    for p, opts in pipeline:
        changed = [f"{f.name.replace('_', '-')}={_option_text(getattr(opts, f.name))}"
                   for f in fields(opts) if getattr(opts, f.name) != f.default]
        items.append(p.name + ("{" + " ".join(changed) + "}" if changed else ""))
    return ",".join(items)


def run_pipeline(module, pipeline, remark: Remark = None,
                 after: Optional[Callable[[str, object], None]] = None):
    """Run ``pipeline`` (text or [(pass, options)]) on ``module`` in place, then verify it;
    ``after(pass name, module)`` is called after each pass (``--print-ir-after``)."""
    from .affine.verifier import verify
    if isinstance(pipeline, str):
        pipeline = parse_pipeline(pipeline)
    for p, opts in pipeline:
        p.run(module, opts, remark)
        if after is not None:
            after(p.name, module)
    verify(module)
    return module


def default_pipeline(options, *, raised: bool = False) -> list[tuple[Pass, object]]:
    """The passes the ``--hopt*`` switches of :class:`polyopt.pipeline.PipelineOptions` spell:

    scf-forall-to-parallel (--scf-forall-to-parallel), raise-scf-to-affine
    (--raise-scf-to-affine or --hopt), memref-bound-check, then with --hopt:
    hopt-report-opaque-nests, hopt-delicm, hopt-linalg-to-loops and hopt-raise-contractions (unless
    --no-hopt-raise), hopt-schedule,
    hopt-parallel (--hopt-parallel, also without --hopt), hopt-expand, hopt-collapse-loops,
    hopt-normalize-memrefs (--hopt-copy/--hopt-blis), hopt-blis-calls
    (--hopt-blis); convert-linalg-to-affine-loops."""
    out = []

    def add(name, opts=None):
        p = REGISTRY[name]
        out.append((p, opts if opts is not None else p.options()))
    if getattr(options, "forall_to_parallel", False):
        add("scf-forall-to-parallel")
    if (options.raise_scf or options.hopt) and not raised:
        add("raise-scf-to-affine")
    if options.memref_bound_check:
        add("memref-bound-check")
    if options.hopt:
        # the IR is generated for --threads (None: one thread; compile() and the commands that
        # run code resolve the default first)
        blis = BlisOptions(copy=options.copy, unroll=options.unroll, scalrep=options.scalrep,
                           vect=options.vect, blis=options.blis, blis_kernel=options.blis_kernel,
                           threads=getattr(options, "threads", None) or 1)
        add("hopt-report-opaque-nests")
        add("hopt-delicm")
        if getattr(options, "hopt_raise", True):
            add("hopt-linalg-to-loops")
            add("hopt-raise-contractions", blis)
        if getattr(options, "auto_schedule", True):
            team = blis.threads if getattr(options, "parallel", False) else 1
            add("hopt-schedule", ScheduleOptions(outer_parallel=team > 1, threads=team))
        if getattr(options, "parallel", False):
            add("hopt-parallel", ParallelOptions(threads=blis.threads))
        add("hopt-expand", blis)
        add("hopt-collapse-loops")
        if options.copy or options.blis:
            add("hopt-normalize-memrefs")
        if options.blis:
            add("hopt-blis-calls")
    elif getattr(options, "parallel", False):
        add("hopt-parallel", ParallelOptions(threads=getattr(options, "threads", None) or 1))
    if options.linalg_to_affine:
        add("convert-linalg-to-affine-loops")
    return out
