"""Random valid programs for the differential fuzzer (issue 13, item 7), each with inputs and
the outputs it must produce.

Two families, both drawn from a seed (``random.Random``), so a failure is replayed from its
seed alone:

* :func:`affine_case`: random affine nests -- loops with constant, symbolic, ``max``/``min``
  and ``floordiv`` bounds and steps, ``affine.if`` with inequalities, equalities and ``mod``,
  several statements per nest at every depth, several memrefs (arguments, and
  ``memref.alloc``/``alloca`` temporaries initialized and drained by nests of their own),
  integer (i32/i64: exact, wrapping) and float (f32/f64) arithmetic on loads, constants and
  induction variables.  The expected outputs come from :class:`Interpreter`, which runs the
  same program in Python with MLIR's semantics (``floordiv``/``mod`` rounding, two's
  complement wrap, f32 rounding).  Memref sizes come from the accesses the program makes, so
  every access that runs is in bounds: the programs are valid for any correct compiler.
* :func:`ops_case`: ``hop.matmul``/``linalg.matmul`` (random shapes, operand layouts --
  leading dimensions, offsets, transposed -- ``alpha``/``beta``, tile attributes, a
  ``schedule`` attribute), ``hop.conv2d`` and the linalg 1-D, 2-D and depthwise convolutions
  (random shapes, strides, dilations), ``linalg.fill``, one or two per function (the second may
  read the first's result).  Expected outputs from numpy.

A case's memref arguments are passed as flat physical buffers (polyopt's calling convention
for layouts, identity ones included); the expected buffers include the bytes a layout skips,
which must come back untouched.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

DTYPES = {"f64": np.float64, "f32": np.float32, "i32": np.int32, "i64": np.int64}
FLOAT_CONSTANTS = (0.5, -0.25, 1.0, 2.0, -1.5, 0.75, 3.0, -2.0, 0.125)


def wrap(v: int, elem: str) -> int:
    """``v`` as a two's complement integer of ``elem``'s width (i32/i64)."""
    bits = 32 if elem == "i32" else 64
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---------------------------------------------------------------------------------------------
# cases


@dataclass
class Arg:
    """A function argument: a memref (``shape``, ``layout`` text or None, the flat physical
    buffer's ``size``, ``offset`` and ``strides`` when the layout is strided) or an index."""

    name: str
    type: str
    elem: str = "index"
    shape: tuple = ()
    layout: Optional[str] = None
    size: int = 0
    offset: int = 0
    strides: Optional[tuple] = None   # None: not strided (an affine map) or index
    value: int = 0                    # an index argument's value

    @property
    def is_memref(self) -> bool:
        return self.elem != "index"


@dataclass
class Case:
    """A program (``@f`` in ``text``), its arguments, inputs and expected outputs."""

    seed: int
    family: str                       # "affine" | "ops"
    text: str
    args: list
    inputs: list                      # numpy buffers for memrefs, ints for indices
    expected: list                    # numpy buffers, one per memref argument
    elem: str
    description: str
    exact: bool = False
    has_symbols: bool = False
    has_hop: bool = False
    tiles_given: bool = False         # tile or schedule attributes chosen by the generator
    magnitude: float = 1.0            # scale of the float results, for the tolerance
    reduction: int = 1                # length of the longest sum, for the tolerance
    oob_text: Optional[str] = None    # the program with one memref a row too small
    oob_memref: Optional[str] = None  # that memref's new type
    # mlir-opt-22 lowers the program as written (it lowers linalg.softmax on memrefs nowhere:
    # upstream then runs the IR polyopt lowers without flags, as for hop ops)
    upstream_lowers: bool = True

    @property
    def upstream_ok(self) -> bool:
        """mlir-runner-22 can run it: every memref layout is strided (reinterpret_cast)."""
        return all(a.strides is not None for a in self.args if a.is_memref)

    def fresh_inputs(self) -> list:
        return [x.copy() if isinstance(x, np.ndarray) else x for x in self.inputs]


# ---------------------------------------------------------------------------------------------
# affine expressions over named variables (loop IVs "i<n>", symbols "s<n>")


@dataclass(frozen=True)
class Lin:
    """``sum(c * var) + const``, then optionally ``floordiv``/``ceildiv``/``mod k``, plus
    ``post``."""

    terms: tuple = ()
    const: int = 0
    div: Optional[tuple] = None
    post: int = 0

    def variables(self) -> list:
        return [v for v, _ in self.terms]

    def value(self, env: dict) -> int:
        v = self.const + sum(c * env[x] for x, c in self.terms)
        if self.div is not None:
            op, k = self.div
            v = v // k if op == "floordiv" else -(-v // k) if op == "ceildiv" else v % k
        return v + self.post

    def shifted(self, d: int) -> "Lin":
        return replace(self, post=self.post + d) if self.div else replace(self, const=self.const + d)

    def text(self, name) -> str:
        parts = [name(x) if c == 1 else f"{name(x)} * {c}" for x, c in self.terms]
        s = _plus(" + ".join(parts), self.const)
        if self.div is not None:
            s = _plus(f"({s}) {self.div[0]} {self.div[1]}", self.post)
        return s


def _plus(s: str, c: int) -> str:
    if not s:
        return str(c)
    return f"{s} + {c}" if c > 0 else f"{s} - {-c}" if c < 0 else s


def _var_key(v: str) -> tuple:
    return (v[0] != "i", int(v[1:]))   # IVs (dims) first, then symbols


def map_text(exprs: list) -> str:
    """``affine_map<(d..)[s..] -> (exprs)>(%ivs)[%syms]`` (a bare integer for one constant)."""
    vs = sorted({v for e in exprs for v in e.variables()}, key=_var_key)
    if not vs and len(exprs) == 1:
        return str(exprs[0].value({}))
    dims = [v for v in vs if v[0] == "i"]
    syms = [v for v in vs if v[0] == "s"]
    names = {v: f"d{k}" for k, v in enumerate(dims)}
    names.update({v: f"s{k}" for k, v in enumerate(syms)})
    body = ", ".join(e.text(names.__getitem__) for e in exprs)
    head = f"({', '.join(names[v] for v in dims)})" + \
        (f"[{', '.join(names[v] for v in syms)}]" if syms else "")
    ops = f"({', '.join('%' + v for v in dims)})" + \
        (f"[{', '.join('%' + v for v in syms)}]" if syms else "")
    return f"affine_map<{head} -> ({body})>{ops}"


def subscript_text(e: Lin) -> str:
    return e.text(lambda v: f"%{v}" if v[0] == "i" else f"symbol(%{v})")


# ---------------------------------------------------------------------------------------------
# the affine program: AST, emission, interpretation


@dataclass
class Load:
    mem: str
    subs: list


@dataclass
class Const:
    value: object


@dataclass
class VarVal:
    var: str          # an IV or a symbol, as a number


@dataclass
class Bin:
    op: str           # add sub mul max min and or xor
    a: object
    b: object


@dataclass
class Select:
    a: object         # a < b ? a : b
    b: object


@dataclass
class Store:
    mem: str
    subs: list
    value: object


@dataclass
class Loop:
    iv: str
    lbs: list
    ubs: list
    step: int
    body: list


@dataclass
class Reduce:
    """``%r = affine.for %iv ... iter_args(%acc = init) { yield acc <op> term }``, then
    ``mem[subs] = %r``."""

    iv: str
    lbs: list
    ubs: list
    step: int
    op: str
    init: object
    term: object
    mem: str
    subs: list


@dataclass
class VLoad:
    mem: str
    subs: list        # the last subscript is the first lane's


@dataclass
class Splat:
    value: object     # a scalar value broadcast to every lane


@dataclass
class VStore:
    """``affine.vector_store`` of ``width`` lanes computed lane-wise from ``value`` (a tree
    of :class:`VLoad`, :class:`Splat` and :class:`Bin`)."""

    mem: str
    subs: list
    width: int
    value: object


@dataclass
class If:
    conds: list       # (Lin, is_equality)
    then: list
    els: list


FLOAT_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
             "max": "arith.maxnumf", "min": "arith.minnumf"}
INT_OPS = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli", "max": "arith.maxsi",
           "min": "arith.minsi", "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}


class TooBig(Exception):
    """The program runs too many iterations or needs too much memory: draw another."""


class Interpreter:
    """Runs an affine program's AST on numpy arrays with MLIR's semantics; with ``trace``,
    records the range of every subscript per (memref, dimension)."""

    def __init__(self, elem: str, arrays: dict, symbols: dict, trace: bool = False,
                 max_steps: int = 30000):
        self.elem = elem
        self.arrays = arrays
        self.env = dict(symbols)
        self.trace = trace
        self.ranges: dict = {}
        self.steps = 0
        self.max_steps = max_steps

    def run(self, items: list) -> None:
        with np.errstate(all="ignore"):
            self._block(items)

    def _block(self, items):
        for item in items:
            if isinstance(item, Loop):
                lb = max(e.value(self.env) for e in item.lbs)
                ub = min(e.value(self.env) for e in item.ubs)
                for v in range(lb, ub, item.step):
                    self.steps += 1
                    if self.steps > self.max_steps:
                        raise TooBig("too many iterations")
                    self.env[item.iv] = v
                    self._block(item.body)
                self.env.pop(item.iv, None)
            elif isinstance(item, If):
                ok = all((e.value(self.env) == 0) if eq else (e.value(self.env) >= 0)
                         for e, eq in item.conds)
                self._block(item.then if ok else item.els)
            elif isinstance(item, Reduce):
                acc = self._value(item.init)
                lb = max(e.value(self.env) for e in item.lbs)
                ub = min(e.value(self.env) for e in item.ubs)
                for v in range(lb, ub, item.step):
                    self.steps += 1
                    if self.steps > self.max_steps:
                        raise TooBig("too many iterations")
                    self.env[item.iv] = v
                    acc = self._binary(item.op, acc, self._value(item.term))
                self.env.pop(item.iv, None)
                self._access(item.mem, item.subs, acc)
            elif isinstance(item, VStore):
                lanes = self._lanes(item.value, item.width)
                self._vaccess(item.mem, item.subs, item.width, lanes)
            else:
                value = self._value(item.value)
                self._access(item.mem, item.subs, value)

    def _vaccess(self, mem, subs, width, lanes=None):
        base = self._index(mem, subs)
        if self.trace:
            d = len(subs) - 1
            lo, hi = self.ranges[(mem, d)]
            self.ranges[(mem, d)] = (lo, max(hi, subs[-1].value(self.env) + width - 1))
            return [self._zero()] * width
        out = []
        for k in range(width):
            idx = base[:-1] + (base[-1] + k,)
            if lanes is None:
                a = self.arrays[mem][idx]
                out.append(a.item() if self.elem[0] == "i" else a)
            else:
                self.arrays[mem][idx] = lanes[k]
        return out

    def _lanes(self, v, width):
        if isinstance(v, VLoad):
            return self._vaccess(v.mem, v.subs, width)
        if isinstance(v, Splat):
            return [self._value(v.value)] * width
        a, b = self._lanes(v.a, width), self._lanes(v.b, width)
        return [self._binary(v.op, x, y) for x, y in zip(a, b)]

    def _index(self, mem, subs):
        idx = tuple(s.value(self.env) for s in subs)
        if self.trace:
            for d, x in enumerate(idx):
                lo, hi = self.ranges.get((mem, d), (x, x))
                self.ranges[(mem, d)] = (min(lo, x), max(hi, x))
            return None
        return idx

    def _access(self, mem, subs, value=None):
        idx = self._index(mem, subs)
        if self.trace:
            return self._zero()
        if value is None:
            return self.arrays[mem][idx].item() if self.elem[0] == "i" else self.arrays[mem][idx]
        self.arrays[mem][idx] = value
        return None

    def _zero(self):
        return 0 if self.elem[0] == "i" else DTYPES[self.elem](0)

    def _value(self, v):
        et = self.elem
        if isinstance(v, Load):
            return self._access(v.mem, v.subs)
        if isinstance(v, Const):
            return v.value if et[0] == "i" else DTYPES[et](v.value)
        if isinstance(v, VarVal):
            x = self.env[v.var]
            return wrap(x, et) if et[0] == "i" else DTYPES[et](x)
        if isinstance(v, Select):
            a, b = self._value(v.a), self._value(v.b)
            return a if a < b else b
        return self._binary(v.op, self._value(v.a), self._value(v.b))

    def _binary(self, op, a, b):
        et = self.elem
        if et[0] == "i":
            r = {"add": a + b, "sub": a - b, "mul": a * b, "max": max(a, b), "min": min(a, b),
                 "and": a & b, "or": a | b, "xor": a ^ b}[op]
            return wrap(r, et)
        if op in ("max", "min"):          # maxnumf/minnumf: a NaN operand is ignored
            if math.isnan(a):
                return b
            if math.isnan(b):
                return a
            return max(a, b) if op == "max" else min(a, b)
        t = DTYPES[et]
        return t({"add": a + b, "sub": a - b, "mul": a * b}[op])


class Emitter:
    """MLIR text of an affine program's AST."""

    def __init__(self, elem: str, types: dict, seed: int = 0):
        self.elem = elem
        self.types = types       # memref name -> type text
        self.lines: list = []
        self.n = 0
        self.rng = random.Random(seed)   # spelling choices only (affine.apply subscripts)

    def fresh(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def block(self, items, indent: int) -> None:
        pad = "  " * indent
        for item in items:
            if isinstance(item, Loop):
                lb = ("max " if len(item.lbs) > 1 else "") + map_text(item.lbs)
                ub = ("min " if len(item.ubs) > 1 else "") + map_text(item.ubs)
                step = f" step {item.step}" if item.step != 1 else ""
                self.lines.append(f"{pad}affine.for %{item.iv} = {lb} to {ub}{step} {{")
                self.block(item.body, indent + 1)
                self.lines.append(f"{pad}}}")
            elif isinstance(item, If):
                self.lines.append(f"{pad}affine.if {set_text(item.conds)} {{")
                self.block(item.then, indent + 1)
                if item.els:
                    self.lines.append(f"{pad}}} else {{")
                    self.block(item.els, indent + 1)
                self.lines.append(f"{pad}}}")
            elif isinstance(item, Reduce):
                init = self.value(item.init, pad)
                lb = ("max " if len(item.lbs) > 1 else "") + map_text(item.lbs)
                ub = ("min " if len(item.ubs) > 1 else "") + map_text(item.ubs)
                step = f" step {item.step}" if item.step != 1 else ""
                r, acc, et = self.fresh(), self.fresh().replace("%v", "%acc"), self.elem
                self.lines.append(f"{pad}{r} = affine.for %{item.iv} = {lb} to {ub}{step} "
                                  f"iter_args({acc} = {init}) -> ({et}) {{")
                term = self.value(item.term, pad + "  ")
                new = self.fresh()
                op = (INT_OPS if et[0] == "i" else FLOAT_OPS)[item.op]
                self.lines.append(f"{pad}  {new} = {op} {acc}, {term} : {et}")
                self.lines.append(f"{pad}  affine.yield {new} : {et}")
                self.lines.append(f"{pad}}}")
                subs = self.subscripts(item.subs, pad)
                self.lines.append(f"{pad}affine.store {r}, %{item.mem}[{subs}] : "
                                  f"{self.types[item.mem]}")
            elif isinstance(item, VStore):
                vt = f"vector<{item.width}x{self.elem}>"
                v = self.vvalue(item.value, vt, pad)
                subs = self.subscripts(item.subs, pad)
                self.lines.append(f"{pad}affine.vector_store {v}, %{item.mem}[{subs}] : "
                                  f"{self.types[item.mem]}, {vt}")
            else:
                v = self.value(item.value, pad)
                subs = self.subscripts(item.subs, pad)
                self.lines.append(f"{pad}affine.store {v}, %{item.mem}[{subs}] : "
                                  f"{self.types[item.mem]}")

    def subscripts(self, subs, pad: str) -> str:
        """The subscripts, some of them computed by an ``affine.apply`` first."""
        out = []
        for e in subs:
            if e.terms and self.rng.random() < 0.15:
                a = self.fresh()
                self.lines.append(f"{pad}{a} = affine.apply {map_text([e])}")
                out.append(a)
            else:
                out.append(subscript_text(e))
        return ", ".join(out)

    def vvalue(self, v, vt: str, pad: str) -> str:
        out = self.fresh()
        if isinstance(v, VLoad):
            subs = self.subscripts(v.subs, pad)
            self.lines.append(f"{pad}{out} = affine.vector_load %{v.mem}[{subs}] : "
                              f"{self.types[v.mem]}, {vt}")
        elif isinstance(v, Splat):
            x = self.value(v.value, pad)
            self.lines.append(f"{pad}{out} = vector.broadcast {x} : {self.elem} to {vt}")
        else:
            a, b = self.vvalue(v.a, vt, pad), self.vvalue(v.b, vt, pad)
            op = (INT_OPS if self.elem[0] == "i" else FLOAT_OPS)[v.op]
            self.lines.append(f"{pad}{out} = {op} {a}, {b} : {vt}")
        return out

    def value(self, v, pad: str) -> str:
        et = self.elem
        out = self.fresh()
        if isinstance(v, Load):
            subs = self.subscripts(v.subs, pad)
            self.lines.append(f"{pad}{out} = affine.load %{v.mem}[{subs}] : {self.types[v.mem]}")
        elif isinstance(v, Const):
            text = str(v.value) if et[0] == "i" else repr(float(v.value))
            self.lines.append(f"{pad}{out} = arith.constant {text} : {et}")
        elif isinstance(v, VarVal):
            if et[0] == "i":
                self.lines.append(f"{pad}{out} = arith.index_cast %{v.var} : index to {et}")
            else:
                i = self.fresh()
                self.lines.append(f"{pad}{i} = arith.index_cast %{v.var} : index to i64")
                self.lines.append(f"{pad}{out} = arith.sitofp {i} : i64 to {et}")
        elif isinstance(v, Select):
            a, b = self.value(v.a, pad), self.value(v.b, pad)
            c = self.fresh()
            cmp = f"arith.cmpi slt, {a}, {b}" if et[0] == "i" else f"arith.cmpf olt, {a}, {b}"
            self.lines.append(f"{pad}{c} = {cmp} : {et}")
            self.lines.append(f"{pad}{out} = arith.select {c}, {a}, {b} : {et}")
        else:
            a, b = self.value(v.a, pad), self.value(v.b, pad)
            op = (INT_OPS if et[0] == "i" else FLOAT_OPS)[v.op]
            self.lines.append(f"{pad}{out} = {op} {a}, {b} : {et}")
        return out


def set_text(conds: list) -> str:
    vs = sorted({v for e, _ in conds for v in e.variables()}, key=_var_key)
    dims = [v for v in vs if v[0] == "i"]
    syms = [v for v in vs if v[0] == "s"]
    names = {v: f"d{k}" for k, v in enumerate(dims)}
    names.update({v: f"s{k}" for k, v in enumerate(syms)})
    body = ", ".join(f"{e.text(names.__getitem__)} {'==' if eq else '>='} 0" for e, eq in conds)
    head = f"({', '.join(names[v] for v in dims)})" + \
        (f"[{', '.join(names[v] for v in syms)}]" if syms else "")
    ops = f"({', '.join('%' + v for v in dims)})" + \
        (f"[{', '.join('%' + v for v in syms)}]" if syms else "")
    return f"affine_set<{head} : ({body})>{ops}"


class AffineGenerator:
    """Draws one affine program (see the module docstring)."""

    def __init__(self, rng: random.Random, elem: Optional[str] = None,
                 shapes: Optional[dict] = None, first_iv: int = 0):
        """With ``shapes`` (memref name -> shape), the nests use those memrefs, whose sizes
        are fixed: every subscript is taken ``mod`` its dimension (no vector stores)."""
        self.rng = rng
        r = rng
        self.elem = elem or r.choice(["i32", "i64", "i32", "f64", "f32", "f64"])
        self.shapes = shapes
        self.temps = {}
        if shapes is not None:
            self.symbols = {}
            self.ranks = {m: len(shape) for m, shape in shapes.items()}
        else:
            self.symbols = {f"s{k}": r.randint(0, 9) for k in range(r.choice([0, 0, 1, 2]))}
            self.ranks = {f"A{k}": r.choice([1, 2, 2, 3]) for k in range(r.randint(1, 4))}
            if r.random() < 0.3:
                self.temps["T0"] = r.choice(["alloc", "alloca"])
                self.ranks["T0"] = r.choice([1, 2])
        self.n_iv = first_iv
        self.max_depth = r.choice([1, 2, 3, 3, 4])

    # -- structure

    def program(self) -> list:
        return [self.loop([], 1) if self.rng.random() < 0.9 else self.store([], 0)
                for _ in range(self.rng.choice([1, 1, 2, 3]))]

    def loop(self, scope: list, depth: int) -> Loop:
        r = self.rng
        iv = f"i{self.n_iv}"
        self.n_iv += 1
        lbs = [self.bound(scope, low=True) for _ in range(1 if r.random() < 0.8 else 2)]
        ubs = [self.bound(scope, low=False) for _ in range(1 if r.random() < 0.7 else 2)]
        step = r.choice([1, 1, 1, 1, 2, 3])
        return Loop(iv, lbs, ubs, step, self.body(scope + [iv], depth))

    def body(self, scope: list, depth: int) -> list:
        r = self.rng
        items = []
        for _ in range(r.choice([1, 1, 2, 2, 3])):
            x = r.random()
            if depth < self.max_depth and x < 0.45:
                items.append(self.loop(scope, depth + 1))
            elif x < 0.6 and scope:
                then = self.body_leaf(scope, depth)
                els = self.body_leaf(scope, depth) if r.random() < 0.4 else []
                items.append(If(self.conditions(scope), then, els))
            elif x < 0.68:
                items.append(self.reduce(scope))
            elif x < 0.76 and self.shapes is None:
                items.append(self.vstore(scope))
            else:
                items.append(self.store(scope, depth))
        if depth >= self.max_depth and not any(isinstance(i, Store) for i in items):
            items.append(self.store(scope, depth))
        return items

    def body_leaf(self, scope, depth) -> list:
        if depth < self.max_depth and self.rng.random() < 0.3:
            return [self.loop(scope, depth + 1)]
        return [self.store(scope, depth) for _ in range(self.rng.choice([1, 1, 2]))]

    def bound(self, scope: list, low: bool) -> Lin:
        r = self.rng
        ivs = [v for v in scope]
        syms = list(self.symbols)
        choice = r.random()
        if ivs and choice < 0.45:
            v = r.choice(ivs)
            if r.random() < 0.2:
                return Lin(((v, 1),), 0, ("floordiv", r.randint(2, 3)),
                           r.randint(0, 2) if low else r.randint(1, 5))
            coeff = r.choice([1, 1, 1, 2, -1])
            if coeff < 0:
                return Lin(((v, -1),), r.randint(6, 12))
            return Lin(((v, coeff),), r.randint(-1, 2) if low else r.randint(1, 6))
        if syms and choice < 0.65:
            s = r.choice(syms)
            return Lin(((s, 1),), r.randint(-2, 1) if low else r.randint(0, 3))
        return Lin((), r.randint(0, 3) if low else r.randint(1, 11))

    def conditions(self, scope: list) -> list:
        r = self.rng
        conds = []
        for _ in range(r.choice([1, 1, 2])):
            vs = r.sample(scope, min(len(scope), r.choice([1, 1, 2]))) + \
                (r.sample(list(self.symbols), 1) if self.symbols and r.random() < 0.2 else [])
            terms = tuple((v, r.choice([1, -1, 2])) for v in vs)
            if r.random() < 0.2:
                conds.append((Lin(terms[:1], r.randint(0, 1), ("mod", r.randint(2, 3))), True))
            elif r.random() < 0.1:
                conds.append((Lin(terms, r.randint(-4, 0)), True))
            else:
                conds.append((Lin(terms, r.randint(-5, 5)), False))
        return conds

    def subscripts(self, mem: str, scope: list) -> list:
        r = self.rng
        if self.shapes is not None:      # fixed sizes: (sum c * v + c0) mod size
            subs = []
            for size in self.shapes[mem]:
                vs = r.sample(scope, min(len(scope), r.choice([0, 1, 1, 2])))
                terms = tuple((v, r.choice([1, 1, 2, -1, 3])) for v in vs)
                subs.append(Lin(terms, r.randint(-2, 3), ("mod", size)) if terms
                            else Lin((), r.randrange(size)))
            return subs
        subs = []
        for _ in range(self.ranks[mem]):
            pool = scope + list(self.symbols) if r.random() < 0.15 else scope
            if not pool or r.random() < 0.1:
                subs.append(Lin((), r.randint(0, 3)))
                continue
            vs = r.sample(pool, min(len(pool), r.choice([1, 1, 1, 2])))
            terms = tuple((v, r.choice([1, 1, 1, 2, -1, 3])) for v in vs)
            if r.random() < 0.15:
                subs.append(Lin(terms, r.randint(-2, 3), (r.choice(["floordiv", "mod",
                                                                    "ceildiv"]),
                                                           r.randint(2, 4))))
            else:
                subs.append(Lin(terms, r.randint(-2, 3)))
        return subs

    # -- statements

    def store(self, scope: list, depth: int) -> Store:
        r = self.rng
        mem = r.choice(list(self.ranks))
        subs = self.subscripts(mem, scope)
        value = self.value(scope, 2)
        if r.random() < 0.4:   # an accumulation: a dependence on itself
            value = Bin(r.choice(["add", "add", "sub", "max"]), Load(mem, subs), value)
        return Store(mem, subs, value)

    def reduce(self, scope: list) -> Reduce:
        r = self.rng
        iv = f"i{self.n_iv}"
        self.n_iv += 1
        lbs = [self.bound(scope, low=True) for _ in range(1 if r.random() < 0.8 else 2)]
        ubs = [self.bound(scope, low=False) for _ in range(1 if r.random() < 0.7 else 2)]
        ops = ["add", "add", "max", "min"] + (["xor", "sub"] if self.elem[0] == "i" else [])
        mem = r.choice(list(self.ranks))
        return Reduce(iv, lbs, ubs, r.choice([1, 1, 2]), r.choice(ops), self.value(scope, 1),
                      self.value(scope + [iv], 1), mem, self.subscripts(mem, scope))

    def vstore(self, scope: list) -> VStore:
        r = self.rng
        width = r.choice([2, 4, 8])

        def vvalue(depth):
            x = r.random()
            if depth == 0 or x < 0.5:
                if r.random() < 0.7:
                    mem = r.choice(list(self.ranks))
                    return VLoad(mem, self.subscripts(mem, scope))
                return Splat(self.leaf(scope))
            return Bin(r.choice(["add", "sub", "mul", "max", "min"]), vvalue(depth - 1),
                       vvalue(depth - 1))
        mem = r.choice(list(self.ranks))
        return VStore(mem, self.subscripts(mem, scope), width, vvalue(2))

    def value(self, scope: list, depth: int):
        r = self.rng
        x = r.random()
        if depth == 0 or x < 0.35:
            return self.leaf(scope)
        if x < 0.45:
            return Select(self.value(scope, depth - 1), self.value(scope, depth - 1))
        ops = ["add", "sub", "mul", "max", "min"] + (["and", "or", "xor"]
                                                     if self.elem[0] == "i" else [])
        return Bin(r.choice(ops), self.value(scope, depth - 1), self.value(scope, depth - 1))

    def leaf(self, scope: list):
        r = self.rng
        x = r.random()
        if x < 0.6:
            mem = r.choice(list(self.ranks))
            return Load(mem, self.subscripts(mem, scope))
        if x < 0.8 or not (scope or self.symbols):
            return Const(r.randint(-3, 4) if self.elem[0] == "i" else r.choice(FLOAT_CONSTANTS))
        return VarVal(r.choice(scope + list(self.symbols)))


def _shift(items: list, offsets: dict) -> list:
    """The AST with every subscript of memref ``m``, dimension ``d``, plus ``offsets[m][d]``."""
    def sub_list(mem, subs):
        return [s.shifted(offsets[mem][d]) for d, s in enumerate(subs)]

    def value(v):
        if isinstance(v, Load):
            return Load(v.mem, sub_list(v.mem, v.subs))
        if isinstance(v, VLoad):
            return VLoad(v.mem, sub_list(v.mem, v.subs))
        if isinstance(v, Splat):
            return Splat(value(v.value))
        if isinstance(v, Bin):
            return Bin(v.op, value(v.a), value(v.b))
        if isinstance(v, Select):
            return Select(value(v.a), value(v.b))
        return v

    out = []
    for item in items:
        if isinstance(item, Loop):
            out.append(replace(item, body=_shift(item.body, offsets)))
        elif isinstance(item, If):
            out.append(If(item.conds, _shift(item.then, offsets), _shift(item.els, offsets)))
        elif isinstance(item, Reduce):
            out.append(replace(item, init=value(item.init), term=value(item.term),
                               subs=sub_list(item.mem, item.subs)))
        elif isinstance(item, VStore):
            out.append(VStore(item.mem, sub_list(item.mem, item.subs), item.width,
                              value(item.value)))
        else:
            out.append(Store(item.mem, sub_list(item.mem, item.subs), value(item.value)))
    return out


def _fill_nest(name: str, shape: tuple, value_of, first_iv: int) -> Loop:
    """A perfect nest over ``shape`` storing ``value_of(ivs)`` into ``name``."""
    ivs = [f"i{first_iv + k}" for k in range(len(shape))]
    body = [Store(name, [Lin(((v, 1),)) for v in ivs], value_of(ivs))]
    for iv, n in reversed(list(zip(ivs, shape))):
        body = [Loop(iv, [Lin(())], [Lin((), n)], 1, body)]
    return body[0]


def _memref_type(shape, elem) -> str:
    return "memref<" + "".join(f"{n}x" for n in shape) + elem + ">"


def affine_case(seed: int) -> Case:
    """A random affine program drawn from ``seed`` (redrawn internally while it runs too long
    or needs too much memory)."""
    rng = random.Random(seed)
    for _ in range(50):
        gen = AffineGenerator(rng)
        items = gen.program()
        try:
            return _finish_affine(seed, rng, gen, items)
        except TooBig:
            continue
    raise RuntimeError(f"seed {seed}: no program small enough in 50 draws")


def _finish_affine(seed: int, rng: random.Random, gen: AffineGenerator, items: list) -> Case:
    elem = gen.elem
    # sizes from the subscripts the program actually evaluates
    probe = Interpreter(elem, {}, gen.symbols, trace=True)
    probe.run(items)
    offsets, shapes, exact_dims = {}, {}, []
    for mem, rank in gen.ranks.items():
        offs, shape = [], []
        for d in range(rank):
            lo, hi = probe.ranges.get((mem, d), (0, rng.randint(0, 3)))
            off = -lo if lo < 0 else 0
            slack = 0 if rng.random() < 0.5 else rng.randint(1, 2)
            if (mem, d) in probe.ranges and slack == 0:
                exact_dims.append((mem, d))
            offs.append(off)
            shape.append(hi + off + 1 + slack)
        offsets[mem], shapes[mem] = offs, tuple(shape)
        if math.prod(shape) > 200_000:
            raise TooBig("memref too large")
    items = _shift(items, offsets)
    n_iv = gen.n_iv
    args = [m for m in gen.ranks if m not in gen.temps]
    prologue, epilogue = [], []
    for t in gen.temps:
        rank = gen.ranks[t]
        c = rng.choice(FLOAT_CONSTANTS) if elem[0] == "f" else rng.randint(-3, 3)

        def init(ivs, c=c):
            return Bin("add", VarVal(ivs[0]), Const(c))
        prologue.append(_fill_nest(t, shapes[t], init, n_iv))
        n_iv += rank
        out = f"O{t}"
        shapes[out] = shapes[t]
        args.append(out)
        gen.ranks[out] = rank
        epilogue.append(_fill_nest(out, shapes[t], lambda ivs, t=t, out=out: Bin(
            "add", Load(out, [Lin(((v, 1),)) for v in ivs]),
            Load(t, [Lin(((v, 1),)) for v in ivs])), n_iv))
        n_iv += rank
    body = prologue + items + epilogue

    np_rng = np.random.default_rng(seed)
    arrays = {}
    for m in args:
        if elem[0] == "i":
            arrays[m] = np_rng.integers(-5, 6, shapes[m]).astype(DTYPES[elem])
        else:
            arrays[m] = np_rng.uniform(-1, 1, shapes[m]).astype(DTYPES[elem])
    inputs = {m: a.copy() for m, a in arrays.items()}
    for t in gen.temps:
        arrays[t] = np.zeros(shapes[t], DTYPES[elem])
    interp = Interpreter(elem, arrays, gen.symbols)
    interp.run(body)

    def text_for(sizes: dict) -> str:
        types = {m: _memref_type(sizes[m], elem) for m in gen.ranks}
        em = Emitter(elem, types, seed)
        for t, kind in gen.temps.items():
            em.lines.append(f"  %{t} = memref.{kind}() : {types[t]}")
        em.block(body, 1)
        for t, kind in gen.temps.items():
            if kind == "alloc":
                em.lines.append(f"  memref.dealloc %{t} : {types[t]}")
        params = [f"%{m}: {types[m]}" for m in args] + [f"%{s}: index" for s in gen.symbols]
        return (f"func.func @f({', '.join(params)}) {{\n" + "\n".join(em.lines) +
                "\n  return\n}\n")

    text = text_for(shapes)
    oob_text = oob_memref = None
    arg_dims = [(m, d) for m, d in exact_dims if m in gen.ranks]
    if arg_dims and not gen.symbols:
        mem, d = rng.choice(arg_dims)
        smaller = dict(shapes)
        smaller[mem] = tuple(n - 1 if k == d else n for k, n in enumerate(shapes[mem]))
        if all(n >= 1 for n in smaller[mem]):
            oob_text = text_for(smaller)
            oob_memref = _memref_type(smaller[mem], elem)

    arg_list = [Arg(m, _memref_type(shapes[m], elem), elem, shapes[m], None,
                    math.prod(shapes[m]), 0, _row_major(shapes[m])) for m in args]
    arg_list += [Arg(s, "index", value=v) for s, v in gen.symbols.items()]
    ins = [inputs[m].reshape(-1) for m in args] + list(gen.symbols.values())
    expected = [arrays[m].reshape(-1) for m in args]
    scale = max([1.0] + [float(np.nanmax(np.abs(e[np.isfinite(e)]), initial=0.0))
                         for e in expected if elem[0] == "f"])
    desc = (f"affine {elem}: {len(items)} nest(s), memrefs "
            + ", ".join(f"{m}{list(shapes[m])}" for m in gen.ranks)
            + (f", symbols {gen.symbols}" if gen.symbols else "")
            + (f", temps {gen.temps}" if gen.temps else "")
            + f", {interp.steps} iterations")
    return Case(seed, "affine", text, arg_list, ins, expected, elem, desc,
                exact=elem[0] == "i", has_symbols=bool(gen.symbols), magnitude=scale,
                reduction=max(1, interp.steps), oob_text=oob_text, oob_memref=oob_memref)


def _row_major(shape) -> tuple:
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return tuple(reversed(strides))


# ---------------------------------------------------------------------------------------------
# hop / linalg ops


@dataclass
class Operand:
    """A matrix operand's memref: logical (rows, cols), its layout and physical buffer."""

    arg: Arg

    def logical(self, buf: np.ndarray) -> np.ndarray:
        """The logical matrix of the flat buffer (a copy)."""
        return buf[self.indices()].copy()

    def indices(self) -> np.ndarray:
        a = self.arg
        rows, cols = a.shape
        i, j = np.indices((rows, cols))
        if a.strides is not None:
            return a.offset + i * a.strides[0] + j * a.strides[1]
        if a.layout == "affine_map<(d0, d1) -> (d1, d0)>":
            return j * rows + i
        raise AssertionError(a.layout)


def matrix_arg(rng: random.Random, name: str, rows: int, cols: int, elem: str,
               layouts: bool) -> Arg:
    """A matrix argument with a random layout: identity, leading dimension, offset,
    column-major (strided or as an affine map)."""
    kind = rng.choice(["id", "id", "id", "ld", "offset", "colmajor", "transposed"]) \
        if layouts else "id"
    if kind == "id":
        return Arg(name, _memref_type((rows, cols), elem), elem, (rows, cols), None,
                   rows * cols, 0, (cols, 1))
    if kind == "transposed":
        layout = "affine_map<(d0, d1) -> (d1, d0)>"
        return Arg(name, f"memref<{rows}x{cols}x{elem}, {layout}>", elem, (rows, cols), layout,
                   rows * cols, 0, None)
    if kind == "colmajor":
        ld = rows + rng.choice([0, 0, 1, 3])
        strides, offset = (1, ld), rng.choice([0, 0, 2])
    else:
        ld = cols + rng.randint(0 if kind == "offset" else 1, 5)
        strides, offset = (ld, 1), (rng.randint(1, 7) if kind == "offset" else 0)
    size = offset + (rows - 1) * strides[0] + (cols - 1) * strides[1] + 1
    off = f", offset: {offset}" if offset else ""
    layout = f"strided<[{strides[0]}, {strides[1]}]{off}>"
    return Arg(name, f"memref<{rows}x{cols}x{elem}, {layout}>", elem, (rows, cols), layout,
               size, offset, strides)


def tensor_arg(name: str, shape: tuple, elem: str) -> Arg:
    return Arg(name, _memref_type(shape, elem), elem, tuple(shape), None, math.prod(shape), 0,
               _row_major(shape))


def _dense(values) -> str:
    return f"dense<[{', '.join(map(str, values))}]> : tensor<{len(values)}xi64>"


def conv_reference(kind: str, inp, flt, out, strides, dilations):
    """``out += conv(inp, flt)`` in float64 (NHWC/HWCF/NHWF, NWC/WCF/NWF, depthwise HWC, and
    depthwise NCHW/CHW)."""
    if kind == "depthwise2d_nchw":
        res = conv_reference("depthwise2d", inp.transpose(0, 2, 3, 1), flt.transpose(1, 2, 0),
                             out.transpose(0, 2, 3, 1), strides, dilations)
        return res.transpose(0, 3, 1, 2)
    inp, flt = inp.astype(np.float64), flt.astype(np.float64)
    res = out.astype(np.float64).copy()
    if kind == "conv1d":
        (sw,), (dw,) = strides, dilations
        ow = res.shape[1]
        for kw in range(flt.shape[0]):
            win = inp[:, kw * dw: kw * dw + sw * (ow - 1) + 1: sw, :]
            res += win @ flt[kw]
        return res
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = res.shape[1], res.shape[2]
    for kh in range(flt.shape[0]):
        for kw in range(flt.shape[1]):
            win = inp[:, kh * dh: kh * dh + sh * (oh - 1) + 1: sh,
                      kw * dw: kw * dw + sw * (ow - 1) + 1: sw, :]
            res += win * flt[kh, kw] if kind == "depthwise2d" else win @ flt[kh, kw]
    return res


CONV_OPS = {"hop.conv2d": "conv2d", "linalg.conv_2d_nhwc_hwcf": "conv2d",
            "linalg.conv_1d_nwc_wcf": "conv1d", "linalg.depthwise_conv_2d_nhwc_hwc": "depthwise2d",
            "linalg.depthwise_conv_2d_nchw_chw": "depthwise2d_nchw"}


class OpsGenerator:
    """Draws one function of hop/linalg ops (see the module docstring)."""

    def __init__(self, rng: random.Random, seed: int, max_size: int = 110):
        self.rng = rng
        self.max_size = max_size
        self.np_rng = np.random.default_rng(seed)
        self.elem = rng.choice(["f64", "f32"])
        self.args: list = []
        self.buffers: dict = {}      # arg name -> current expected flat buffer (float64)
        self.initial: dict = {}      # arg name -> its buffer before the function runs
        self.lines: list = []
        self.tiles_given = False
        self.has_hop = False
        self.reduction = 1
        self.parts: list = []
        self.emitter: Optional[Emitter] = None
        self.n_iv = 0

    def new_arg(self, arg: Arg) -> Arg:
        self.args.append(arg)
        self.buffers[arg.name] = self.np_rng.uniform(-1, 1, arg.size).astype(
            DTYPES[self.elem]).astype(np.float64)
        self.initial[arg.name] = self.buffers[arg.name].copy()
        return arg

    def size(self, big: bool = True) -> int:
        r = self.rng
        x = r.random()
        if x < 0.1:
            return 1
        if x < 0.75 or not big or self.max_size <= 24:
            return r.randint(2, min(24, self.max_size))
        return r.randint(25, self.max_size)

    def matmul(self, a_in: Optional[Arg] = None) -> Arg:
        """A matmul; ``a_in`` (a previous result) as its A when given."""
        r = self.rng
        hop = r.random() < 0.7
        self.has_hop |= hop
        n = len(self.args)
        if a_in is not None:
            m, k = a_in.shape
            a = a_in
        else:
            m, k = self.size(), self.size()
            a = self.new_arg(matrix_arg(r, f"A{n}", m, k, self.elem, True))
        nn = self.size()
        if a_in is None and m == k == nn and a.layout is None and r.random() < 0.15:
            b = a   # A * A: the operands share memory (read-only)
        else:
            b = self.new_arg(matrix_arg(r, f"B{n}", k, nn, self.elem, True))
        c = self.new_arg(matrix_arg(r, f"C{n}", m, nn, self.elem, True))
        alpha = beta = None
        attrs = []
        if hop:
            if r.random() < 0.5:
                alpha = r.choice([2.5, -1.0, 0.5, 0.0, 1.0, -0.75])
            if r.random() < 0.5:
                beta = r.choice([0.0, 0.5, 1.0, -2.0])
            if r.random() < 0.3:
                self.tiles_given = True
                attrs += self.tile_attrs()
            elif r.random() < 0.1:
                self.tiles_given = True
                attrs.append(f"schedule = affine_map<(d0, d1, d2) -> ({self.schedule()})>")
            attrs += [f"{name} = {v!r} : {self.elem}"
                      for name, v in (("alpha", alpha), ("beta", beta)) if v is not None]
        if r.random() < 0.15:   # C set by linalg.fill first
            cst = f"%fill{n}"
            v = r.choice([0.0, 1.5, -0.5])
            self.lines.append(f"  {cst} = arith.constant {v!r} : {self.elem}")
            self.lines.append(f"  linalg.fill ins({cst} : {self.elem}) outs(%{c.name} : "
                              f"{c.type})")
            buf = self.buffers[c.name]
            buf[Operand(c).indices()] = v
        if hop:
            attr = f" {{{', '.join(attrs)}}}" if attrs else ""
            self.lines.append(f"  hop.matmul %{a.name}, %{b.name}, %{c.name}{attr} : "
                              f"({a.type}, {b.type}, {c.type})")
        else:
            self.lines.append(f"  linalg.matmul ins(%{a.name}, %{b.name} : {a.type}, {b.type}) "
                              f"outs(%{c.name} : {c.type})")
        la = Operand(a).logical(self.buffers[a.name])
        lb = Operand(b).logical(self.buffers[b.name])
        cbuf = self.buffers[c.name]
        idx = Operand(c).indices()
        prod = (1.0 if alpha is None else alpha) * (la @ lb)
        be = 1.0 if beta is None else beta
        cbuf[idx] = prod if be == 0 else prod + be * cbuf[idx]
        self.reduction = max(self.reduction, k)
        self.parts.append(f"{'hop' if hop else 'linalg'}.matmul {m}x{nn}x{k} "
                          f"({', '.join(x.layout or 'id' for x in (a, b, c))})"
                          + (f" alpha={alpha}" if alpha is not None else "")
                          + (f" beta={beta}" if beta is not None else "")
                          + (f" {{{', '.join(attrs)}}}" if attrs else ""))
        return c

    def tile_attrs(self) -> list:
        r = self.rng
        out = []
        mr = r.randint(1, 8)
        nr = r.choice([1, 2, 4, 8, 16, 3, 5])
        for name, value in (("M_R", mr), ("N_R", nr), ("M_C", mr * r.randint(1, 6)),
                            ("K_C", r.choice([1, 4, 8, 16, 32, 7])),
                            ("N_C", nr * r.randint(1, 4)), ("K_U", r.choice([1, 2, 4]))):
            if r.random() < 0.5:
                out.append(f"{name} = {value} : i32")
        return out

    def schedule(self) -> str:
        """A tiling of (i, j, k) = (d0, d1, d2): a permutation of tile and point loops."""
        r = self.rng
        dims = ["d0", "d1", "d2"]
        tiles = [f"{d} floordiv {r.choice([2, 3, 4, 8])}" for d in dims if r.random() < 0.5]
        r.shuffle(tiles)
        points = dims[:]
        r.shuffle(points)
        return ", ".join(tiles + points)

    def affine_nest(self) -> None:
        """An affine nest over the identity-layout arguments so far (between the ops), run by
        :class:`Interpreter` on the expected buffers."""
        mats = {a.name: a.shape for a in self.args if a.layout is None}
        if not mats:
            return
        gen = AffineGenerator(self.rng, self.elem, mats, self.n_iv)
        items = [gen.loop([], 1)]
        self.n_iv = gen.n_iv
        dtype = DTYPES[self.elem]
        arrays = {m: self.buffers[m].astype(dtype).reshape(shape) for m, shape in mats.items()}
        interp = Interpreter(self.elem, arrays, {}, max_steps=5000)
        try:
            interp.run(items)
        except TooBig:
            return
        for m in mats:
            self.buffers[m] = arrays[m].reshape(-1).astype(np.float64)
        if self.emitter is None:
            self.emitter = Emitter(self.elem, {a.name: a.type for a in self.args})
        self.emitter.types.update({a.name: a.type for a in self.args})
        self.emitter.lines = []
        self.emitter.block(items, 1)
        self.lines += self.emitter.lines
        self.parts.append(f"an affine nest ({interp.steps} iterations)")

    def epilogue(self, out: Arg) -> None:
        """An elementwise nest right after the op that wrote ``out``: ``out = max(out +
        bias[d], 0)`` for a random dimension ``d`` (what the pipeline fuses into a product's
        register tile or a depthwise template, where it can)."""
        if out.layout is not None:
            return
        r = self.rng
        shape, et = out.shape, self.elem
        d = r.randrange(len(shape))
        bias = self.new_arg(tensor_arg(f"B{len(self.args)}", (shape[d],), et))
        ivs = [f"%e{k}" for k in range(len(shape))]
        loops = "".join(f"  affine.for {iv} = 0 to {e} {{\n" for iv, e in zip(ivs, shape))
        body = [f"%ex = affine.load %{out.name}[{', '.join(ivs)}] : {out.type}",
                f"%eb = affine.load %{bias.name}[{ivs[d]}] : {bias.type}",
                f"%es = arith.addf %ex, %eb : {et}",
                f"%ez = arith.constant 0.0 : {et}",
                f"%er = arith.maximumf %es, %ez : {et}",
                f"affine.store %er, %{out.name}[{', '.join(ivs)}] : {out.type}"]
        self.lines.append(loops + "".join(f"    {line}\n" for line in body)
                          + "  }" * len(shape))
        dtype = DTYPES[et]
        o = self.buffers[out.name].astype(dtype).reshape(shape)
        b = self.buffers[bias.name].astype(dtype)
        view = [1] * len(shape)
        view[d] = shape[d]
        self.buffers[out.name] = np.maximum(o + b.reshape(view), 0).reshape(-1).astype(
            np.float64)
        self.parts.append(f"then max(+ bias along dim {d}, 0)")

    def softmax(self) -> Arg:
        """``linalg.softmax`` along a random dimension of a new array, into another."""
        r = self.rng
        rank = r.randint(1, 3)
        shape = tuple(r.choice([1, 2, 3, 5, 8, 13, 17, 33, 40]) for _ in range(rank))
        d = r.randrange(rank)
        k0 = len(self.args)
        x = self.new_arg(tensor_arg(f"X{k0}", shape, self.elem))
        y = self.new_arg(tensor_arg(f"Y{k0}", shape, self.elem))
        self.buffers[x.name] = self.buffers[x.name] * 8
        self.initial[x.name] = self.buffers[x.name].copy()
        self.lines.append(f"  linalg.softmax dimension({d}) ins(%{x.name} : {x.type}) "
                          f"outs(%{y.name} : {y.type})")
        v = self.buffers[x.name].astype(DTYPES[self.elem]).astype(np.float64).reshape(shape)
        e = np.exp(v - v.max(axis=d, keepdims=True))
        self.buffers[y.name] = (e / e.sum(axis=d, keepdims=True)).reshape(-1)
        self.reduction = max(self.reduction, shape[d] + 8)
        self.parts.append(f"linalg.softmax dimension({d}) of {list(shape)}")
        return y

    def conv(self) -> Arg:
        r = self.rng
        op = r.choice(list(CONV_OPS))
        kind = CONV_OPS[op]
        self.has_hop |= op.startswith("hop")
        spatial = 1 if kind == "conv1d" else 2
        n = r.choice([1, 1, 2])
        c = r.randint(1, 9)
        f = c if kind.startswith("depthwise2d") else r.randint(1, 9)
        ks = [r.randint(1, 4) for _ in range(spatial)]
        strides = [r.choice([1, 1, 2, 3]) for _ in range(spatial)]
        dilations = [r.choice([1, 1, 2]) for _ in range(spatial)]
        outs = [r.randint(1, 8) for _ in range(spatial)]
        ins = [(o - 1) * s + d * (k - 1) + 1 + r.randint(0, s - 1)
               for o, s, d, k in zip(outs, strides, dilations, ks)]
        si = (n, *ins, c)
        sk = (*ks, c) if kind == "depthwise2d" else (*ks, c, f)
        so = (n, *outs, f)
        if kind == "depthwise2d_nchw":
            si, sk, so = (n, c, *ins), (c, *ks), (n, c, *outs)
        k0 = len(self.args)
        ia = self.new_arg(tensor_arg(f"I{k0}", si, self.elem))
        ka = self.new_arg(tensor_arg(f"K{k0}", sk, self.elem))
        oa = self.new_arg(tensor_arg(f"O{k0}", so, self.elem))
        if op == "hop.conv2d":
            extra = ""
            if r.random() < 0.25:
                self.tiles_given = True
                extra = ", " + ", ".join(self.tile_attrs() or ["K_C = 8 : i32"])
            self.lines.append(f"  hop.conv2d %{ia.name}, %{ka.name}, %{oa.name} {{strides = "
                              f"[{strides[0]}, {strides[1]}], dilations = [{dilations[0]}, "
                              f"{dilations[1]}]{extra}}} : ({ia.type}, {ka.type}, {oa.type})")
        else:
            self.lines.append(f"  {op} {{dilations = {_dense(dilations)}, strides = "
                              f"{_dense(strides)}}} ins(%{ia.name}, %{ka.name} : {ia.type}, "
                              f"{ka.type}) outs(%{oa.name} : {oa.type})")
        res = conv_reference(kind, self.buffers[ia.name].reshape(si),
                             self.buffers[ka.name].reshape(sk),
                             self.buffers[oa.name].reshape(so), strides, dilations)
        self.buffers[oa.name] = res.reshape(-1)
        self.reduction = max(self.reduction, math.prod(ks) * c)
        self.parts.append(f"{op} in {list(si)} filter {list(sk)} out {list(so)} strides "
                          f"{strides} dilations {dilations}")
        return oa


def ops_case(seed: int, max_size: int = 110) -> Case:
    """A random function of hop/linalg ops drawn from ``seed`` (matrix sizes up to
    ``max_size``)."""
    rng = random.Random(seed)
    gen = OpsGenerator(rng, seed, max_size)
    if rng.random() < 0.1:
        first = gen.softmax()
    else:
        first = gen.matmul() if rng.random() < 0.65 else gen.conv()
        if rng.random() < 0.35:
            gen.epilogue(first)
    if rng.random() < 0.25:
        gen.affine_nest()
    if rng.random() < 0.3:
        if len(first.shape) == 2 and first.layout is None and rng.random() < 0.6:
            gen.matmul(a_in=first)      # reads the first op's result
        elif rng.random() < 0.5:
            gen.matmul()
        else:
            gen.conv()
        if rng.random() < 0.25:
            gen.affine_nest()
    inputs = gen.initial
    dtype = DTYPES[gen.elem]
    params = ", ".join(f"%{a.name}: {a.type}" for a in gen.args)
    text = f"func.func @f({params}) {{\n" + "\n".join(gen.lines) + "\n  return\n}\n"
    ins = [inputs[a.name].astype(dtype) for a in gen.args]
    expected = [gen.buffers[a.name].astype(dtype) for a in gen.args]
    scale = max([1.0] + [float(np.abs(e).max(initial=0.0)) for e in expected])
    return Case(seed, "ops", text, gen.args, ins, expected, gen.elem,
                f"ops {gen.elem}: " + "; ".join(gen.parts), has_hop=gen.has_hop,
                tiles_given=gen.tiles_given, magnitude=scale, reduction=gen.reduction,
                upstream_lowers="linalg.softmax" not in text)


def any_case(seed: int) -> Case:
    """Even seeds: an affine program; odd seeds: hop/linalg ops."""
    return affine_case(seed) if seed % 2 == 0 else ops_case(seed)


__all__ = ["Arg", "Case", "affine_case", "ops_case", "any_case", "Interpreter", "wrap",
           "conv_reference"]
