"""The transform script a pass pipeline amounts to (``polyopt opt --emit-script``).

:func:`run_and_emit_script` runs a pipeline as :func:`polyopt.passes.run_pipeline` does and
writes down what it did as a script for :mod:`polyopt.transform.interpreter`: each pass is a
``transform.apply_registered_pass`` with its options, except ``hopt-expand``, which becomes one
block of ``transform.polyopt.*`` steps per product, with the BLIS parameters the model chose
for it filled in (``transform.polyopt.blis_tile %p {M_C = ..., ...}``).  Replaying the script
on the same input gives the same IR (tests/transform/test_emit_script.py), and editing its
numbers is an experiment.

Where the model's choice is not written down: the products of ``hopt-raise-contractions``
(raised and expanded inside the pass; the pass and its options are in the script), and a
product whose expansion does not go through the BLIS parameters (a convolution, a GEMV, a
``?``-sized or mixed-precision product, a ``schedule`` map): its ``blis_tile`` has no
attributes, and the model chooses again on replay, as it did the first time.
"""

from __future__ import annotations

from dataclasses import fields

from ..passes import BlisOptions

HANDLE = "!transform.any_op"

_PARAMS = ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U", "register_form", "l2_block",
           "register_order")


def _attr(value) -> str:
    if isinstance(value, tuple):            # one value per product: the pass's list option
        return '"' + ",".join(str(v) for v in value) + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    return f'"{value}"'


def _pass_line(p, opts, target: str, result: str) -> str:
    changed = {f.name.replace("_", "-"): getattr(opts, f.name) for f in fields(opts)
               if getattr(opts, f.name) != f.default}
    options = ""
    if changed:
        options = " with options = {" + ", ".join(f'"{k}" = {_attr(v)}'
                                                  for k, v in changed.items()) + "}"
    return (f'{result} = transform.apply_registered_pass "{p.name}"{options} to {target} : '
            f"({HANDLE}) -> {HANDLE}")


def _blis_attrs(params) -> str:
    if params is None:
        return ""
    values = {k: getattr(params, k) for k in _PARAMS if getattr(params, k, None) is not None}
    return " {" + ", ".join(f"{k} = {_attr(v)}" for k, v in values.items()) + "}"


class ScriptWriter:
    """The lines of a script, written as the steps run on the payload."""

    def __init__(self):
        self.lines: list[str] = []
        self.root = "%root"
        self._numbers = iter(range(1 << 30))

    def fresh(self) -> str:
        return f"%{next(self._numbers)}"

    def run_pass(self, module, p, opts, remark=None) -> None:
        result = self.fresh()
        self.lines.append(_pass_line(p, opts, self.root, result))
        self.root = result
        p.run(module, opts, remark)

    def schedule(self, funcs, schedules: dict, remark=None) -> None:
        """``--schedule``: the statements' maps applied to each function of ``funcs``."""
        from ..schedules.apply import apply_schedule
        maps = ", ".join(f"{name} = affine_map<{m}>" for name, m in schedules.items())
        for f in funcs:
            handle = self.fresh()
            self.lines.append(f'{handle} = transform.structured.match ops{{["func.func"]}} '
                              f'attributes{{sym_name = "{f.sym_name}"}} in {self.root} : '
                              f"({HANDLE}) -> {HANDLE}")
            self.lines.append(f"{self.fresh()} = transform.polyopt.schedule {handle} "
                              f"{{schedule = {{{maps}}}}} : ({HANDLE}) -> {HANDLE}")
            apply_schedule(f, schedules, remark=remark)

    def text(self) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        consumed = "consumed" if self.lines else "readonly"
        return ("module attributes {transform.with_named_sequence} {\n"
                f"  transform.named_sequence @__transform_main(%root: {HANDLE} "
                f"{{transform.{consumed}}}) {{\n" + body +
                "    transform.yield\n  }\n}\n")


def run_and_emit_script(module, pipeline, remark=None,
                        writer: ScriptWriter | None = None) -> str:
    """Run ``pipeline`` ([(pass, options)]) on ``module`` in place, verify it, and return the
    transform script that replays it (see the module docstring); ``writer`` holds the steps
    that ran before (``--schedule``)."""
    from ..affine.verifier import verify
    from ..passes import hopt_passes
    writer = writer if writer is not None else ScriptWriter()
    # the hopt pass is written as the passes it stands for
    pipeline = [step for p, opts in pipeline
                for step in (hopt_passes(opts) if p.name == "hopt" else [(p, opts)])]
    for p, opts in pipeline:
        if p.name == "hopt-expand":
            _expand_steps(module, opts, remark, writer)
        else:
            writer.run_pass(module, p, opts, remark)
    verify(module)
    return writer.text()


def _expand_steps(module, opts: BlisOptions, remark, writer: ScriptWriter) -> None:
    """``hopt-expand`` as steps per product (run on ``module`` as the pass would)."""
    from ..passes import REGISTRY, _drop_keep_marks, _expansion_args
    from ..schedules.contraction import contraction_of_op
    from ..schedules.expand import (expand_high_level_op, expansion_targets,
                                    recording_blis_choices)
    _drop_keep_marks(module)
    targets = expansion_targets(module, opts.tiled, remark)
    if not targets or not opts.tiled:
        writer.run_pass(module, REGISTRY["hopt-expand"], opts, remark)
        return
    lines, root = writer.lines, writer.root
    kinds = list(dict.fromkeys(op.name for op in targets))
    wanted = {id(op) for op in targets}
    matched = [op for op in module.walk() if op.name in kinds]
    handle = writer.fresh()
    lines.append(f"{handle} = transform.structured.match ops{{[{', '.join(map(repr, kinds))}]}}"
                 f" in {root} : ({HANDLE}) -> {HANDLE}".replace("'", '"'))
    if len(matched) == 1:
        handles = [handle]
    else:
        base = writer.fresh()
        handles = [f"{base}#{i}" for i in range(len(matched))]
        lines.append(f"{base}:{len(matched)} = transform.split_handle {handle} : ({HANDLE}) -> "
                     f"({', '.join([HANDLE] * len(matched))})")
    args = _expansion_args(opts)
    tiles_of = args.pop("tiles")
    index = {id(op): i for i, op in enumerate(targets)}
    for op, h in zip(matched, handles):
        if id(op) not in wanted:
            continue
        conv = hasattr(op, "CONV_KIND")
        con = None if conv else contraction_of_op(op)
        with recording_blis_choices() as chosen:
            expand_high_level_op(op, **args, tiles=tiles_of(index[id(op)]), remark=remark)
        params = chosen[0] if len(chosen) == 1 and not conv and con.schedule is None and \
            con.has_static_shape and not con.is_mixed else None
        lines.append(f"transform.polyopt.blis_tile {h}{_blis_attrs(params)} : {HANDLE}")
        if opts.blis:
            kernel = f' {{kernel = "{opts.blis_kernel}"}}' if opts.blis_kernel else ""
            lines.append(f"transform.polyopt.micro_kernel {h}{kernel} : {HANDLE}")
        else:
            if opts.copy:
                lines.append(f"transform.polyopt.pack {h} : {HANDLE}")
            for flag, step in (("unroll", "unroll_and_jam"), ("scalrep", "scalar_replace"),
                               ("vect", "vectorize")):
                if getattr(opts, flag):
                    lines.append(f"transform.polyopt.{step} {h} : {HANDLE}")
        if opts.threads > 1:
            lines.append(f"transform.polyopt.parallelize {h} {{threads = {opts.threads} : i64}}"
                         f" : {HANDLE}")
        lines.append(f"{writer.fresh()} = transform.polyopt.expand {h} : ({HANDLE}) -> "
                     f"{HANDLE}")


def script_for_pipeline(source: str, filename: str, pipeline: str, remark=None) -> str:
    """The script that replays the textual ``pipeline`` (``-p``'s syntax) on the MLIR text
    ``source``, the parameters it leaves to the model filled in (``polyopt tune --out``)."""
    from ..passes import parse_pipeline
    from ..pipeline import load
    return run_and_emit_script(load(source, filename), parse_pipeline(pipeline), remark)
