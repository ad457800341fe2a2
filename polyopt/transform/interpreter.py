"""Apply a transform script to payload IR (MLIR's ``-transform-interpreter``).

The script's ``@__transform_main`` runs op by op; its first argument is a handle to the payload
module.  Handles are lists of payload ops.  Each op checks its preconditions and fails with an
error at the script op (a note points at the payload op) and the IR left as the previous steps
made it.  Upstream's rules kept here: an op that rewrites its target consumes the handle
(``apply_registered_pass``, ``loop.unroll``, ``loop.unroll_and_jam``, ``polyopt.expand``,
``polyopt.parallelize`` on loops, ``polyopt.schedule``), and any later use of a handle to the
consumed ops or to ops nested in them is an error naming both.

The products' steps (``transform.polyopt.blis_tile``, ``pack``, ``unroll_and_jam``,
``scalar_replace``, ``vectorize``, ``micro_kernel``, ``parallelize`` on a product) each check
their preconditions when they run and are recorded on the product; ``transform.polyopt.expand``
builds its loop nest with them at once, through the same code as the ``hopt-expand`` pass
(:func:`polyopt.schedules.expand.expand_contraction`), whose BLIS schedule ISL checks against
the product's dependences.  polyopt's BLIS expansion is one step (tiling, packing and the
register tile are generated together), so the intermediate states are not IR.

Loop steps act at once: ``transform.structured.tile_using_for`` (on a linalg op, lowered to
its affine nest, or a band of loops: an ISL schedule, checked), ``transform.loop.unroll``
(:func:`~polyopt.affine.loop_utils.unroll`), ``transform.loop.unroll_and_jam`` (checked with ISL:
:func:`~polyopt.schedules.loop_legality.unroll_jam_is_legal`), ``transform.polyopt.parallelize``
(refused with the carried dependence's pair), ``transform.polyopt.schedule`` (an ISL schedule
for the nest's statements, checked as ``--schedule`` is), ``transform.polyopt.vectorize``
(``{width = N}``, default the target's lanes; the loop's iterations proved independent with
ISL) and ``transform.polyopt.scalar_replace`` (MLIR's ``-affine-scalrep`` on the nest).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from ..affine.attributes import (AffineMapAttr, DictAttr, FloatAttr, IntegerAttr, StringAttr,
                                 UnitAttr)
from ..affine.diagnostics import PolyoptError, ScheduleError
from ..affine.dialects.hop import tile_param_problem
from ..affine.dialects.affine import AffineForOp
from ..affine.dialects.transform import (ApplyRegisteredPassOp, LoopUnrollAndJamOp,
                                         LoopUnrollOp, MatchOp, NamedSequenceOp,
                                         PolyoptStepOp, SplitHandleOp, TileUsingForOp,
                                         YieldOp)
from ..affine.ir import Operation, Value

__all__ = ["TransformError", "apply_script", "find_entry"]

Remark = Optional[Callable[[object, str], None]]

ENTRY = "__transform_main"

#: the attributes ``transform.polyopt.blis_tile`` takes: integers, then strings
TILE_INTS = ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U")
TILE_STRINGS = {"register_form": ("row", "col"), "l2_block": ("A", "B"),
                "register_order": ("ji", "ij")}


class TransformError(ScheduleError):
    """A transform step that cannot apply: at the script op, with notes at payload ops."""

    def __init__(self, message: str, loc=None, notes=()):
        super().__init__(message, loc)
        self.notes = list(notes)

    def render(self, default_file: str = "<input>") -> str:
        out = [super().render(default_file)]
        for loc, text in self.notes:
            if loc is None:
                out.append(f"note: {text}")
                continue
            caret = " " * (loc.col - 1) + "^"
            out.append(f"{loc}: note: {text}\n{loc.file.line_text(loc.line)}\n{caret}")
        return "\n".join(out)


@dataclass
class ProductPlan:
    """The steps a script asked of one product so far (``transform.polyopt.*``)."""

    tiled: bool = False
    tiles: dict = field(default_factory=dict)
    schedule: object = None
    copy: bool = False
    unroll: bool = False
    scalrep: bool = False
    vect: bool = False
    blis: bool = False
    kernel: Optional[str] = None
    threads: int = 1
    done: set = field(default_factory=set)


def find_entry(script: Operation) -> NamedSequenceOp:
    for op in script.walk():
        if isinstance(op, NamedSequenceOp) and op.sym_name == ENTRY:
            return op
    raise TransformError(f"the script has no transform.named_sequence @{ENTRY}", script.loc)


def apply_script(script: Operation, payload: Operation, *, remark: Remark = None,
                 after: Optional[Callable[[Operation, Operation], None]] = None) -> None:
    """Run ``script``'s ``@__transform_main`` on ``payload`` (a module), in place, then verify
    the payload; ``after(script op, payload)`` is called after each step."""
    from ..affine.verifier import verify
    _Interpreter(payload, remark, after).run(find_entry(script))
    verify(payload)


def _is_product(op: Operation) -> bool:
    from ..affine.dialects.hop import HopMatmulOp
    from ..affine.dialects.linalg import BatchMatmulOp, LinalgMatmulOp
    return isinstance(op, (HopMatmulOp, LinalgMatmulOp, BatchMatmulOp)) or \
        hasattr(op, "CONV_KIND")


def _nested_in(op: Operation, ancestor: Operation) -> bool:
    while op is not None:
        if op is ancestor:
            return True
        op = op.parent_op
    return False


class _Interpreter:
    def __init__(self, payload: Operation, remark: Remark, after):
        self.payload = payload
        self.remark = remark
        self.after = after
        self.handles: dict[Value, list[Operation]] = {}
        self.consumed: dict[Value, tuple[Operation, list[Operation]]] = {}
        self.plans: dict[int, ProductPlan] = {}

    # -- handles ---------------------------------------------------------------------------
    def ops(self, op: Operation, value: Value) -> list[Operation]:
        if value in self.consumed:
            by, _ = self.consumed[value]
            raise TransformError("op uses a handle invalidated by a previously executed "
                                 "transform op", op.loc,
                                 [(by.loc, "invalidated by this transform op, which consumed "
                                           "the payload ops the handle points to or their "
                                           "ancestors")])
        return self.handles[value]

    def consume(self, op: Operation, value: Value) -> None:
        """``op`` rewrites the payload of ``value``: every handle to those ops or to ops nested
        in them becomes invalid."""
        targets = self.handles[value]
        for v, ops in list(self.handles.items()):
            if any(_nested_in(p, t) for p in ops for t in targets):
                self.consumed[v] = (op, ops)
                del self.handles[v]

    def fail(self, op: Operation, message: str, payload: Optional[Operation] = None,
             cause: Optional[PolyoptError] = None):
        notes = []
        if payload is not None:
            notes.append((payload.loc, f"payload op {payload.name}"))
        if cause is not None and cause.loc is not None and \
                (payload is None or cause.loc != payload.loc):
            notes.append((cause.loc, "at this payload op"))
        return TransformError(message, op.loc, notes)

    # -- the sequence ----------------------------------------------------------------------
    def run(self, seq: NamedSequenceOp) -> None:
        args = seq.body.args
        if not args:
            raise TransformError(f"@{ENTRY} takes the payload's handle as its first argument",
                                 seq.loc)
        self.handles[args[0]] = [self.payload]
        for op in seq.body.ops:
            if isinstance(op, YieldOp):
                break
            self.step(op)
            if self.after is not None:
                self.after(op, self.payload)

    def step(self, op: Operation) -> None:
        if isinstance(op, MatchOp):
            self.match(op)
        elif isinstance(op, SplitHandleOp):
            self.split(op)
        elif isinstance(op, ApplyRegisteredPassOp):
            self.apply_pass(op)
        elif isinstance(op, (LoopUnrollOp, LoopUnrollAndJamOp)):
            self.loop_unroll(op, jam=isinstance(op, LoopUnrollAndJamOp))
        elif isinstance(op, TileUsingForOp):
            self.tile_using_for(op)
        elif isinstance(op, PolyoptStepOp):
            getattr(self, "polyopt_" + op.step)(op)
        else:
            raise TransformError(f"'{op.name}' is not a transform op polyopt applies", op.loc)

    def bind(self, op: Operation, ops: list[Operation], index: int = 0) -> None:
        if len(op.results) > index:
            expected = op.results[index].type.op_name
            for p in ops:
                if expected is not None and p.name != expected:
                    raise self.fail(op, f"the result handle is !transform.op<\"{expected}\"> "
                                        f"but the payload op is '{p.name}'", p)
            self.handles[op.results[index]] = list(ops)

    # -- upstream ops ----------------------------------------------------------------------
    def match(self, op: MatchOp) -> None:
        names, wanted = op.op_names, op.op_attrs
        out: list[Operation] = []
        for target in self.ops(op, op.operands[0]):
            for p in target.walk():
                if p is target or (names and p.name not in names):
                    continue
                if all(k in p.attributes and (isinstance(v, UnitAttr) or p.attributes[k] == v)
                       for k, v in wanted.items()):
                    out.append(p)
        self.bind(op, out)

    def split(self, op: SplitHandleOp) -> None:
        ops = self.ops(op, op.operands[0])
        if len(ops) != len(op.results):
            raise self.fail(op, f"expected to contain {len(op.results)} payloads but it "
                                f"contains {len(ops)} payloads")
        for i, p in enumerate(ops):
            self.bind(op, [p], i)

    def apply_pass(self, op: ApplyRegisteredPassOp) -> None:
        from ..passes import PipelineSyntaxError, _pass_with_options
        targets = self.ops(op, op.operands[0])
        options = " ".join(f"{k}={_option_text(v)}" for k, v in op.options.items())
        try:
            p, opts = _pass_with_options(op.pass_name, options)
        except PipelineSyntaxError as e:
            raise self.fail(op, str(e)) from None
        for t in targets:
            if t.name != "builtin.module":
                raise self.fail(op, f"polyopt's passes run on a module; the handle holds "
                                    f"'{t.name}' (apply the pass to the script's argument)", t)
        self.consume(op, op.operands[0])
        for t in targets:
            self.run_payload(op, lambda: p.run(t, opts, self.remark))
        self.bind(op, targets)

    def run_payload(self, op: Operation, fn, payload: Optional[Operation] = None):
        """Run a payload transformation; its errors are reported at the script op."""
        try:
            return fn()
        except TransformError:
            raise
        except PolyoptError as e:
            raise self.fail(op, e.message, payload, cause=e) from None

    def loops(self, op: Operation) -> list[AffineForOp]:
        out = self.ops(op, op.operands[0])
        for p in out:
            if not isinstance(p, AffineForOp):
                raise self.fail(op, f"'{op.name}' applies to affine.for loops, not to "
                                    f"'{p.name}'", p)
        return out

    def loop_unroll(self, op, jam: bool) -> None:
        from ..affine.loop_utils import unroll, unroll_jam
        from ..schedules.loop_legality import unroll_jam_is_legal
        loops = self.loops(op)
        self.consume(op, op.operands[0])
        for loop in loops:
            if jam:
                self.run_payload(op, lambda: unroll_jam(loop, op.factor,
                                                        check=unroll_jam_is_legal), loop)
            else:
                self.run_payload(op, lambda: unroll(loop, op.factor), loop)

    def tile_using_for(self, op: TileUsingForOp) -> None:
        """Rectangular tiling of a linalg op's loops (lowered to its affine nest first) or of
        the band of perfectly nested loops under an ``affine.for``, through an ISL schedule
        checked against the dependences; handles to the point band and the tile loops."""
        from ..affine.dialects.linalg import LinalgStructuredOp
        targets = self.ops(op, op.operands[0])
        if len(targets) != 1:
            raise self.fail(op, f"expects a handle to one payload op, got {len(targets)}")
        target = targets[0]
        if not isinstance(target, (AffineForOp, LinalgStructuredOp)):
            raise self.fail(op, f"tile_using_for applies to linalg ops and affine.for loops, "
                                f"not to '{target.name}'", target)
        self.consume(op, op.operands[0])
        tiles, point = self.run_payload(op, lambda: _tile(target, op.tile_sizes), target)
        self.bind(op, [point])
        for i, loop in enumerate(tiles):
            self.bind(op, [loop], i + 1)

    # -- the products' steps ---------------------------------------------------------------
    def products(self, op: PolyoptStepOp, allow_loops: bool = False) -> list[Operation]:
        out = self.ops(op, op.operands[0])
        for p in out:
            if not _is_product(p) and not (allow_loops and isinstance(p, AffineForOp)):
                raise self.fail(op, f"'{op.name}' applies to products (hop.matmul, hop.conv2d, "
                                    f"linalg.matmul, linalg.batch_matmul, the linalg "
                                    f"convolutions){' or affine.for loops' if allow_loops else ''}"
                                    f", not to '{p.name}'", p)
        return out

    def plan(self, op: PolyoptStepOp, p: Operation, needs_tile: bool = True) -> ProductPlan:
        plan = self.plans.setdefault(id(p), ProductPlan())
        if op.step in plan.done:
            raise self.fail(op, f"'{op.name}' was already applied to this product", p)
        if needs_tile and not plan.tiled:
            raise self.fail(op, f"'{op.name}' needs the BLIS tiling first "
                                f"(transform.polyopt.blis_tile)", p)
        plan.done.add(op.step)
        return plan

    def no_attrs(self, op: PolyoptStepOp, allowed=()) -> None:
        extra = sorted(set(op.attributes) - set(allowed))
        if extra:
            raise self.fail(op, f"'{op.name}' takes no attribute '{extra[0]}'"
                                + (f" (attributes: {', '.join(allowed)})" if allowed else ""))

    def polyopt_blis_tile(self, op: PolyoptStepOp) -> None:
        self.no_attrs(op, TILE_INTS + tuple(TILE_STRINGS) + ("schedule",))
        tiles, schedule = {}, None
        for k, v in op.attributes.items():
            if k in TILE_INTS:
                if not isinstance(v, IntegerAttr) or _is_bool(v) or v.value <= 0:
                    raise self.fail(op, f"{k} must be a positive integer, got {v}")
                tiles[k] = int(v.value)
            elif k in TILE_STRINGS:
                allowed = TILE_STRINGS[k]
                if not isinstance(v, StringAttr) or v.value not in allowed:
                    raise self.fail(op, f"{k} must be {' or '.join(repr(a) for a in allowed)}, "
                                        f"got {v}")
                tiles[k] = v.value
            else:
                if not isinstance(v, AffineMapAttr) or v.value.num_dims != 3:
                    raise self.fail(op, f"schedule must be an affine_map over (d0, d1, d2) = "
                                        f"(i, j, k), got {v}")
                schedule = v.value
        if schedule is not None and tiles:
            raise self.fail(op, "give the BLIS parameters or a schedule, not both")
        problem = tile_param_problem(tiles)     # what hop.matmul's verifier says of them
        if problem is not None:
            raise self.fail(op, problem)
        for p in self.products(op):
            plan = self.plan(op, p, needs_tile=False)
            if (tiles or schedule is not None) and hasattr(p, "CONV_KIND"):
                raise self.fail(op, "a convolution's BLIS parameters are the model's: give "
                                    "blis_tile no attributes", p)
            plan.tiled, plan.tiles, plan.schedule = True, tiles, schedule

    def polyopt_pack(self, op: PolyoptStepOp) -> None:
        self.no_attrs(op)
        for p in self.products(op):
            plan = self.plan(op, p)
            if plan.schedule is not None:
                raise self.fail(op, "packing applies to the BLIS schedule (tile parameters), "
                                    "not to a 'schedule' map", p)
            plan.copy = True

    def _register_step(self, op: PolyoptStepOp, flag: str) -> None:
        self.no_attrs(op)
        for p in self.products(op):
            plan = self.plan(op, p)
            if plan.blis:
                raise self.fail(op, f"'{op.name}': the micro-kernel is the register tile", p)
            setattr(plan, flag, True)

    def polyopt_unroll_and_jam(self, op: PolyoptStepOp) -> None:
        self._register_step(op, "unroll")

    def _on_loops(self, op: PolyoptStepOp) -> Optional[list[AffineForOp]]:
        """The handle's loops when it holds loops (the step then applies at once), None when
        it holds products."""
        targets = self.products(op, allow_loops=True)
        loops = [p for p in targets if isinstance(p, AffineForOp)]
        if loops and len(loops) != len(targets):
            raise self.fail(op, "the handle mixes loops and products")
        return loops or None

    def polyopt_scalar_replace(self, op: PolyoptStepOp) -> None:
        loops = self._on_loops(op)
        if loops is None:
            self._register_step(op, "scalrep")
            return
        from ..affine.scalrep import scalar_replace
        self.no_attrs(op)
        for loop in loops:      # MLIR's -affine-scalrep on the nest; the loops stay
            self.run_payload(op, lambda: scalar_replace(loop), loop)

    def polyopt_vectorize(self, op: PolyoptStepOp) -> None:
        loops = self._on_loops(op)
        if loops is None:
            self._register_step(op, "vect")
            return
        from ..affine.vectorize import vector_element_bits, vectorize_loop
        from ..codegen.target import host_target
        from ..schedules.vector_legality import check_parallel
        self.no_attrs(op, ("width",))
        width = op.attributes.get("width")
        if width is not None and (not isinstance(width, IntegerAttr) or width.value < 1):
            raise self.fail(op, f"width must be a positive integer, got {width}")
        self.consume(op, op.operands[0])
        out = []
        for loop in loops:
            lanes = int(width.value) if width is not None else \
                host_target().vector_width(vector_element_bits(loop))
            out.append(self.run_payload(op, lambda: vectorize_loop(loop, lanes,
                                                                   check=check_parallel),
                                        loop))
        self.bind(op, out)

    def polyopt_micro_kernel(self, op: PolyoptStepOp) -> None:
        self.no_attrs(op, ("kernel",))
        kernel = op.attributes.get("kernel")
        if kernel is not None and not isinstance(kernel, StringAttr):
            raise self.fail(op, f"kernel must be a string (a BLIS kernel's name), got {kernel}")
        for p in self.products(op):
            plan = self.plan(op, p)
            if plan.unroll or plan.scalrep or plan.vect:
                raise self.fail(op, "the micro-kernel is the register tile: drop "
                                    "unroll_and_jam, scalar_replace and vectorize", p)
            if plan.schedule is not None:
                raise self.fail(op, "the micro-kernel needs the BLIS schedule (tile "
                                    "parameters), not a 'schedule' map", p)
            plan.blis, plan.kernel = True, kernel.value if kernel is not None else None

    def polyopt_parallelize(self, op: PolyoptStepOp) -> None:
        targets = self.products(op, allow_loops=True)
        loops = [p for p in targets if isinstance(p, AffineForOp)]
        if loops:
            self.no_attrs(op)
            if len(loops) != len(targets):
                raise self.fail(op, "the handle mixes loops and products")
            self.consume(op, op.operands[0])
            self.bind(op, [self.run_payload(op, lambda: _parallelize_loop(loop), loop)
                           for loop in loops])
            return
        self.no_attrs(op, ("threads",))
        threads = op.attributes.get("threads")
        if not isinstance(threads, IntegerAttr) or threads.value < 1:
            raise self.fail(op, f"threads must be a positive integer, got {threads}")
        for p in targets:
            self.plan(op, p).threads = int(threads.value)
        self.bind(op, targets)

    def polyopt_schedule(self, op: PolyoptStepOp) -> None:
        from ..schedules.apply import apply_schedule
        self.no_attrs(op, ("schedule",))
        s = op.attributes.get("schedule")
        if isinstance(s, AffineMapAttr):
            maps = {"S0": s.value}
        elif isinstance(s, DictAttr) and all(isinstance(v, AffineMapAttr) for _, v in s.entries):
            maps = {k: v.value for k, v in s.entries}
        else:
            raise self.fail(op, "schedule must be an affine_map (one statement) or a dictionary "
                                "{S0 = affine_map<...>, ...} by statement")
        targets = self.ops(op, op.operands[0])
        for t in targets:
            if t.name == "func.func":
                continue
            if not isinstance(t, AffineForOp) or t.parent_op is None or \
                    t.parent_op.name != "func.func":
                raise self.fail(op, "schedule applies to functions and to the top-level loop "
                                    "nests of a function", t)
        self.consume(op, op.operands[0])
        new = []
        for t in targets:
            made = self.run_payload(op, lambda: apply_schedule(t, maps, check=True,
                                                               remark=self.remark), t)
            new += [t] if t.name == "func.func" else made
        self.bind(op, [n for n in new if isinstance(n, AffineForOp) or n.name == "func.func"])

    def polyopt_expand(self, op: PolyoptStepOp) -> None:
        self.no_attrs(op)
        targets = self.products(op)
        self.consume(op, op.operands[0])
        new: list[Operation] = []
        for p in targets:
            plan = self.plans.pop(id(p), ProductPlan())
            new += self.run_payload(op, lambda: _expand_product(p, plan, self.remark), p)
        self.bind(op, new)


def _is_bool(a) -> bool:
    return isinstance(a, IntegerAttr) and getattr(a.type, "width", 0) == 1


def _option_text(a) -> str:
    if _is_bool(a):
        return "true" if a.value else "false"
    if isinstance(a, (IntegerAttr, FloatAttr, StringAttr)):
        return str(a.value)
    if isinstance(a, UnitAttr):
        return "true"
    return str(a)


def _parallelize_loop(loop: AffineForOp):
    """``loop`` as ``affine.parallel`` if ISL proves it carries no dependence."""
    from ..schedules.dependences import compute_dependences
    from ..schedules.model import extract
    from ..schedules.parallelize import carried_pair, to_affine_parallel
    from ..affine.loop_utils import describe_loop
    top = loop
    while isinstance(top.parent_op, AffineForOp):
        top = top.parent_op
    if loop.inits:
        raise ScheduleError(f"cannot parallelize {describe_loop(loop)}: it carries values in "
                            f"iter_args (a reduction)", loop.loc)
    try:
        model = extract(top, scalar_flows=True)
    except ScheduleError as err:
        raise ScheduleError(f"cannot parallelize {describe_loop(loop)}: its dependences cannot "
                            f"be analysed: {err.message}", err.loc or loop.loc) from None
    pair = carried_pair(model, compute_dependences(model), loop)
    if pair is not None:
        kind, memref, src, snk = pair
        raise ScheduleError(f"cannot parallelize {describe_loop(loop)}: it carries a {kind} "
                            f"dependence on {memref} from {src} to {snk}: parallel iterations "
                            f"would race", loop.loc)
    return to_affine_parallel(loop)


def _tile(target: Operation, sizes: tuple[int, ...]) -> tuple[list, Operation]:
    """Tile ``target``'s first ``len(sizes)`` loops (see ``tile_using_for``): each statement's
    schedule becomes the tile coordinates followed by its original (2d+1) schedule, so the
    order inside a tile is the original one.  Returns (tile loops, the first point loop)."""
    import islpy as isl
    from ..affine.affine_expr import AffineMap, constant, dim
    from ..affine.dialects.linalg import LinalgStructuredOp
    from ..affine.linalg_to_affine import lower_to_affine_loops
    from ..affine.loop_utils import describe_loop, get_perfectly_nested_loops
    from ..schedules.apply import apply_schedule
    from ..schedules.model import extract
    loc = target.loc
    if isinstance(target, LinalgStructuredOp):
        loops = lower_to_affine_loops(target)
        if not loops:
            raise ScheduleError(f"'{target.name}' has no loops to tile", loc)
        target = loops[0]
    band = get_perfectly_nested_loops(target)
    if len(sizes) > len(band):
        raise ScheduleError(f"{len(sizes)} tile sizes for {describe_loop(target)}, which heads "
                            f"a band of {len(band)} perfectly nested loop(s)", loc)
    if not any(sizes):
        return [], target
    if target.parent_op is None or target.parent_op.name != "func.func":
        raise ScheduleError("tile_using_for applies to a top-level loop nest of a function",
                            loc)
    model = extract(target, scalar_flows=True)
    maps = {}
    for s in model.statements:
        n = len(s.ivs)
        outs = [dim(i).floordiv(t) for i, t in enumerate(sizes) if t]
        for pos in range(s.schedule.dim(isl.dim_type.out)):
            if pos % 2 == 0:
                val = s.schedule.plain_get_val_if_fixed(isl.dim_type.out, pos)
                outs.append(constant(val.to_python()))
            else:
                outs.append(dim(pos // 2))
        maps[s.name] = AffineMap(n, 0, tuple(outs))
    new = apply_schedule(target, maps, check=True)
    nests = [o for o in new if isinstance(o, AffineForOp)]
    if len(nests) != 1:
        raise ScheduleError(f"tiling {describe_loop(target)} gave {len(nests)} loop nests; "
                            f"expected one", loc)
    chain = get_perfectly_nested_loops(nests[0])
    count = sum(1 for t in sizes if t)
    return chain[:count], (chain[count] if len(chain) > count else chain[-1])


def _expand_product(op: Operation, plan: ProductPlan, remark: Remark) -> list[Operation]:
    """Build ``op``'s loop nest as ``hopt-expand`` would with ``plan``'s steps; returns the new
    top-level ops (those built in front of ``op``)."""
    from ..pipeline import _microkernel_chooser, machine_model
    from ..schedules.contraction import contraction_of_op
    from ..schedules.expand import (RegisterTileSteps, blis_takes, _expand_conv,
                                    expand_contraction)
    from ..passes import _drop_keep_marks
    from ..affine.dialects.linalg import LinalgStructuredOp
    block = op.parent
    module = op
    while module.parent_op is not None:
        module = module.parent_op
    _drop_keep_marks(module)
    old = {id(o) for o in block.ops}
    steps = RegisterTileSteps(vect=plan.vect, unroll=plan.unroll, scalrep=plan.scalrep)
    machine = machine_model()
    kernel = _microkernel_chooser(plan.kernel) if plan.blis else None
    if plan.tiled and isinstance(op, LinalgStructuredOp):
        why: list = []
        if not blis_takes(op, lambda loc, msg: why.append(msg)):
            raise ScheduleError(why[0] if why else f"'{op.name}' is not a product the BLIS "
                                f"pipeline takes", op.loc)
    if hasattr(op, "CONV_KIND"):
        _expand_conv(op, plan.tiled, machine, remark, plan.copy, steps, kernel, plan.threads)
    else:
        con = contraction_of_op(op)
        if plan.tiles:
            if not con.has_static_shape or con.is_mixed:
                raise ScheduleError(f"'{op.name}' op: BLIS parameters apply to products of one "
                                    f"element type (f32, f64) with static shapes", op.loc)
            con = replace(con, tile_params={**con.tile_params, **plan.tiles})
        if plan.schedule is not None:
            con = replace(con, schedule=plan.schedule, tile_params={})
        expand_contraction(con, tiled=plan.tiled, machine=machine, remark=remark,
                           copy=plan.copy or plan.blis, steps=steps, microkernel_for=kernel,
                           threads=plan.threads)
        op.erase()
    # the expansion builds in front of the product, which it replaces (and may fuse the
    # elementwise nest after it)
    return [o for o in block.ops if id(o) not in old]
