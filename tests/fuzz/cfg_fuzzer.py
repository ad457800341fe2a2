"""Differential fuzzing of functions of several blocks (cf.br/cf.cond_br/cf.switch).

Random structured programs -- scf.for with constant, dynamic, zero-trip and triangular bounds,
constant or dynamic steps, index or i64 induction variables, signed or unsigned, and iter_args
of f64/i64/index; scf.if with and without results and else; scf.index_switch; scf.while loops
counting, halving, leaving on a loaded value, doing their work in the before region, or going
on while an i1 they carry says so; loads and stores on the function's memrefs; arith ops;
nests up to depth 10 -- are turned into branches by ``mlir-opt-22 --convert-scf-to-cf`` and a
random choice of ``--canonicalize``, ``--cse``, ``--sccp``, ``--lift-cf-to-scf``... (which
merge, reorder and rewrite the blocks), then run by polyopt with no switches, ``hopt``, the
full pipeline and ``hopt`` on two threads, and compared with a Python interpreter of the
structured program (generated with its MLIR text, line for line), as is polyopt's run of the
structured program itself.  lift-cf-to-scf's output must be accepted by mlir-opt-22.

Floats are only added, subtracted and scaled by powers of two, so that FMA contraction cannot
change a result, and the comparison is exact.  Every while loop is bounded by a counter.

Every polyopt run happens in a forked child with a timeout: a hang is a failure like a wrong
answer, a traceback, or an error without a location.  The variants of several programs are
the functions of one module, compiled once per switch set (the JIT is most of the time).

``python3 tests/fuzz/cfg_fuzzer.py --minutes 10`` runs a campaign; ``--replay SEED --show``
one program through every pipeline.
"""

from __future__ import annotations

import os
import pickle
import random
import re
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

# the polyopt of this checkout, whatever `pip install -e` points at
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

N = 16          # the length of %A and %B
M = 4           # %C is MxM

PY_PRELUDE = """
MASK = (1 << 64) - 1
def wrap(x):
    x &= MASK
    return x - (1 << 64) if x >> 63 else x
def tdiv(a, b):
    q = abs(a) // abs(b)
    return wrap(q if (a >= 0) == (b >= 0) else -q)
def u(x):
    return x & MASK
class Budget(Exception):
    pass
"""


@dataclass
class Val:
    name: str           # without the %
    type: str           # index, i64, f64, i1
    lo: Optional[int] = None    # known bounds of an integer value (both or neither)
    hi: Optional[int] = None

    @property
    def bounded(self) -> bool:
        return self.lo is not None


class _Gen:
    """Emits the MLIR text and the Python reference of one random structured program."""

    def __init__(self, rng: random.Random, size: int):
        self.rng = rng
        self.size = size            # a budget of statements
        self.mlir: list[str] = []
        self.py: list[str] = []
        self.depth = 1
        self.counter = 0
        self.loop_depth = 0
        self.scopes: list[list[Val]] = []

    # -- plumbing ------------------------------------------------------------------------
    def fresh(self, prefix="v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, mlir: str, py: Optional[str] = None) -> None:
        self.mlir.append("  " * self.depth + mlir)
        if py is not None:
            self.py.append("    " * self.depth + py)

    def emit_py(self, py: str) -> None:
        self.py.append("    " * self.depth + py)

    def values(self, *types) -> list[Val]:
        return [v for s in self.scopes for v in s if v.type in types]

    def add(self, v: Val) -> Val:
        self.scopes[-1].append(v)
        return v

    def const(self, type_: str, value) -> Val:
        name = self.fresh("c")
        if type_ == "f64":
            self.emit(f"%{name} = arith.constant {float(value)!r} : f64",
                      f"{name} = {float(value)!r}")
        elif type_ == "i1":
            self.emit(f"%{name} = arith.constant {'true' if value else 'false'}",
                      f"{name} = {bool(value)}")
        else:
            self.emit(f"%{name} = arith.constant {value} : {type_}", f"{name} = {value}")
        bounded = type_ in ("index", "i64")
        return self.add(Val(name, type_, value, value) if bounded else Val(name, type_))

    def pick(self, type_: str) -> Val:
        vs = self.values(type_)
        if not vs or self.rng.random() < 0.15:
            if type_ == "f64":
                return self.const("f64", self.rng.choice([0.0, 1.0, -2.5, 0.75, 3.0]))
            if type_ == "i1":
                return self.const("i1", self.rng.random() < 0.5)
            return self.const(type_, self.rng.randint(-5, 9))
        return self.rng.choice(vs)

    def pick_bounded(self, lo=-4, hi=12) -> Val:
        """An index value known to lie in a small range."""
        vs = [v for v in self.values("index") if v.bounded and v.lo >= lo and v.hi <= hi]
        if not vs or self.rng.random() < 0.3:
            return self.const("index", self.rng.randint(max(lo, -2), min(hi, 9)))
        return self.rng.choice(vs)

    # -- expressions ---------------------------------------------------------------------
    def int_op(self, t: str) -> Val:
        r = self.rng
        a, b = self.pick(t), self.pick(t)
        n = self.fresh()
        kind = r.choice(["addi", "subi", "muli", "maxsi", "minsi", "andi", "ori", "xori",
                         "remui", "divsi", "shrsi", "select", "cast"])
        lo = hi = None
        if kind in ("addi", "subi", "muli"):
            sym = {"addi": "+", "subi": "-", "muli": "*"}[kind]
            self.emit(f"%{n} = arith.{kind} %{a.name}, %{b.name} : {t}",
                      f"{n} = wrap({a.name} {sym} {b.name})")
            if a.bounded and b.bounded and kind != "muli":
                if kind == "addi":
                    lo, hi = a.lo + b.lo, a.hi + b.hi
                else:
                    lo, hi = a.lo - b.hi, a.hi - b.lo
        elif kind in ("maxsi", "minsi"):
            f = "max" if kind == "maxsi" else "min"
            self.emit(f"%{n} = arith.{kind} %{a.name}, %{b.name} : {t}",
                      f"{n} = {f}({a.name}, {b.name})")
            if a.bounded and b.bounded:
                lo, hi = (max(a.lo, b.lo), max(a.hi, b.hi)) if f == "max" else \
                    (min(a.lo, b.lo), min(a.hi, b.hi))
        elif kind in ("andi", "ori", "xori"):
            sym = {"andi": "&", "ori": "|", "xori": "^"}[kind]
            self.emit(f"%{n} = arith.{kind} %{a.name}, %{b.name} : {t}",
                      f"{n} = wrap({a.name} {sym} {b.name})")
        elif kind == "remui":
            c = self.const(t, r.randint(1, 9))
            self.emit(f"%{n} = arith.remui %{a.name}, %{c.name} : {t}",
                      f"{n} = u({a.name}) % {c.name}")
            lo, hi = 0, c.lo - 1
        elif kind == "divsi":
            c = self.const(t, r.choice([1, 2, 3, -2, 5]))
            self.emit(f"%{n} = arith.divsi %{a.name}, %{c.name} : {t}",
                      f"{n} = tdiv({a.name}, {c.name})")
        elif kind == "shrsi":
            c = self.const(t, r.randint(0, 3))
            self.emit(f"%{n} = arith.shrsi %{a.name}, %{c.name} : {t}",
                      f"{n} = {a.name} >> {c.name}")
            if a.bounded:
                lo, hi = a.lo >> c.lo, a.hi >> c.lo
        elif kind == "select":
            c = self.cond()
            self.emit(f"%{n} = arith.select %{c.name}, %{a.name}, %{b.name} : {t}",
                      f"{n} = {a.name} if {c.name} else {b.name}")
            if a.bounded and b.bounded:
                lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
        else:
            other = "i64" if t == "index" else "index"
            src = self.pick(other)
            self.emit(f"%{n} = arith.index_cast %{src.name} : {other} to {t}",
                      f"{n} = {src.name}")
            lo, hi = src.lo, src.hi
        return self.add(Val(n, t, lo, hi))

    def float_op(self) -> Val:
        r = self.rng
        a, b = self.pick("f64"), self.pick("f64")
        n = self.fresh()
        kind = r.choice(["addf", "subf", "scale", "negf", "select", "sitofp", "load"])
        if kind in ("addf", "subf"):
            sym = "+" if kind == "addf" else "-"
            self.emit(f"%{n} = arith.{kind} %{a.name}, %{b.name} : f64",
                      f"{n} = {a.name} {sym} {b.name}")
        elif kind == "scale":      # exact: FMA contraction cannot change it
            c = self.const("f64", r.choice([0.5, 0.25, -1.0, 2.0]))
            self.emit(f"%{n} = arith.mulf %{a.name}, %{c.name} : f64",
                      f"{n} = {a.name} * {c.name}")
        elif kind == "negf":
            self.emit(f"%{n} = arith.negf %{a.name} : f64", f"{n} = -{a.name}")
        elif kind == "select":
            c = self.cond()
            self.emit(f"%{n} = arith.select %{c.name}, %{a.name}, %{b.name} : f64",
                      f"{n} = {a.name} if {c.name} else {b.name}")
        elif kind == "sitofp":
            i = self.pick_bounded(-100, 100) if r.random() < 0.5 else self.pick("i64")
            if i.type == "index":
                j = self.fresh()
                self.emit(f"%{j} = arith.index_cast %{i.name} : index to i64", f"{j} = {i.name}")
                i = self.add(Val(j, "i64", i.lo, i.hi))
            self.emit(f"%{n} = arith.sitofp %{i.name} : i64 to f64", f"{n} = float({i.name})")
        else:
            return self.load("f64")
        return self.add(Val(n, "f64"))

    def subscript(self, size: int) -> Val:
        """An in-bounds subscript: a bounded value in range, or any index value mod size."""
        vs = [v for v in self.values("index") if v.bounded and v.lo >= 0 and v.hi < size]
        if vs and self.rng.random() < 0.6:
            return self.rng.choice(vs)
        v = self.pick("index")
        c = self.const("index", size)
        n = self.fresh()
        self.emit(f"%{n} = arith.remui %{v.name}, %{c.name} : index", f"{n} = u({v.name}) % {size}")
        return self.add(Val(n, "index", 0, size - 1))

    def load(self, t: str) -> Val:
        n = self.fresh()
        if t == "f64" and self.rng.random() < 0.3:
            i, j = self.subscript(M), self.subscript(M)
            self.emit(f"%{n} = memref.load %C[%{i.name}, %{j.name}] : memref<{M}x?xf64>",
                      f"{n} = float(C[{i.name}, {j.name}])")
        elif t == "f64":
            i = self.subscript(N)
            self.emit(f"%{n} = memref.load %A[%{i.name}] : memref<{N}xf64>",
                      f"{n} = float(A[{i.name}])")
        else:
            i = self.subscript(N)
            self.emit(f"%{n} = memref.load %B[%{i.name}] : memref<?xi64>",
                      f"{n} = int(B[{i.name}])")
        return self.add(Val(n, t))

    def store(self) -> None:
        r = self.rng.random()
        if r < 0.45:
            v, i = self.pick("f64"), self.subscript(N)
            self.emit(f"memref.store %{v.name}, %A[%{i.name}] : memref<{N}xf64>",
                      f"A[{i.name}] = {v.name}")
        elif r < 0.75:
            v, i = self.pick("i64"), self.subscript(N)
            self.emit(f"memref.store %{v.name}, %B[%{i.name}] : memref<?xi64>",
                      f"B[{i.name}] = {v.name}")
        else:
            v, i, j = self.pick("f64"), self.subscript(M), self.subscript(M)
            self.emit(f"memref.store %{v.name}, %C[%{i.name}, %{j.name}] : memref<{M}x?xf64>",
                      f"C[{i.name}, {j.name}] = {v.name}")
        self.emit_py("steps[0] += 1")
        self.emit_py("if steps[0] > 20000: raise Budget")

    def cond(self) -> Val:
        r = self.rng
        n = self.fresh()
        kind = r.random()
        if kind < 0.5:
            t = r.choice(["index", "i64"])
            a, b = self.pick(t), self.pick(t)
            pred = r.choice(["slt", "sle", "sgt", "sge", "eq", "ne", "ult", "uge"])
            sym = {"slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "eq": "==", "ne": "!=",
                   "ult": "<", "uge": ">="}[pred]
            if pred in ("ult", "uge"):
                py = f"u({a.name}) {sym} u({b.name})"
            else:
                py = f"{a.name} {sym} {b.name}"
            self.emit(f"%{n} = arith.cmpi {pred}, %{a.name}, %{b.name} : {t}", f"{n} = {py}")
        elif kind < 0.75:
            a, b = self.pick("f64"), self.pick("f64")
            pred = r.choice(["olt", "oge", "oeq", "une"])
            sym = {"olt": "<", "oge": ">=", "oeq": "==", "une": "!="}[pred]
            self.emit(f"%{n} = arith.cmpf {pred}, %{a.name}, %{b.name} : f64",
                      f"{n} = {a.name} {sym} {b.name}")
        else:
            a, b = self.pick("i1"), self.pick("i1")
            op = r.choice(["andi", "ori", "xori"])
            sym = {"andi": "and", "ori": "or", "xori": "!="}[op]
            self.emit(f"%{n} = arith.{op} %{a.name}, %{b.name} : i1",
                      f"{n} = bool({a.name}) {sym} bool({b.name})")
        return self.add(Val(n, "i1"))

    # -- statements ----------------------------------------------------------------------
    def block(self, budget: int) -> None:
        while budget > 0:
            budget -= 1
            self.size -= 1
            r = self.rng.random()
            nest_ok = self.size > 0 and self.depth < 10
            if r < 0.18 and nest_ok:
                self.for_loop(budget)
            elif r < 0.28 and nest_ok:
                self.while_loop(budget)
            elif r < 0.40 and nest_ok:
                self.if_stmt(budget)
            elif r < 0.44 and nest_ok:
                self.switch_stmt(budget)
            elif r < 0.58:
                self.store()
            elif r < 0.72:
                self.float_op()
            elif r < 0.8:
                self.load(self.rng.choice(["f64", "i64"]))
            elif r < 0.92:
                self.int_op(self.rng.choice(["index", "i64", "index"]))
            else:
                self.cond()

    def switch_stmt(self, budget: int) -> None:
        """``scf.index_switch`` (``cf.switch`` after --convert-scf-to-cf)."""
        r = self.rng
        flag = self.pick_bounded(-2, 6) if r.random() < 0.7 else self.pick("index")
        cases = sorted(r.sample(range(-1, 5), r.randint(1, 3)))
        types = self.carried_types()
        res = self.fresh("r")
        head = (self.result_names(res, len(types))[0] if types else "") + \
            f"scf.index_switch %{flag.name}" + (" -> " + ", ".join(types) if types else "")
        self.emit(head)
        first = True
        for case in cases + [None]:
            self.emit(f"case {case} {{" if case is not None else "default {")
            if case is None:
                self.emit_py("else:")
            else:
                self.emit_py(f"{'if' if first else 'elif'} {flag.name} == {case}:")
            first = False
            self.depth += 1
            self.emit_py("pass")
            self.scopes.append([])
            if r.random() < 0.8:
                self.block(r.randint(1, max(1, min(budget, 3))))
            ys = self.yield_values(types)
            self.emit("scf.yield" + (" " + ", ".join(f"%{y.name}" for y in ys) + " : " +
                                     ", ".join(types) if types else ""))
            if types:
                self.emit_py(f"{res}_all = [" + ", ".join(y.name for y in ys) + "]")
            self.scopes.pop()
            self.depth -= 1
            self.emit("}")
        for j, (name, t) in enumerate(zip(self.result_names(res, len(types))[1], types)):
            self.emit_py(f"{self.py_name(name)} = {res}_all[{j}]")
            self.add(Val(name, t))

    def carried_types(self) -> list[str]:
        return [self.rng.choice(["f64", "i64", "index", "f64"])
                for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3]))]

    def yield_values(self, types: list[str]) -> list[Val]:
        return [self.pick(t) for t in types]

    def for_loop(self, budget: int) -> None:
        r = self.rng
        outer_trips = self.loop_depth
        # bounds: constants (zero-trip too), %n, enclosing ivs (triangular), sums
        lo = self.pick_bounded(-3, 8)
        hi_lim = 12 if outer_trips < 2 else 6
        if r.random() < 0.3:
            hi = self.values("index")
            hi = [v for v in hi if v.name == "n"]
            ub = hi[0] if hi else self.pick_bounded(-2, hi_lim)
        else:
            ub = self.pick_bounded(-2, hi_lim)
        if r.random() < 0.25:
            st = [v for v in self.values("index") if v.name == "s"][0]
        else:
            st = self.const("index", r.choice([1, 1, 1, 2, 3, 5]))
        itype = "index"
        if r.random() < 0.15:
            itype = "i64"
            conv = []
            for v in (lo, ub, st):
                n = self.fresh()
                self.emit(f"%{n} = arith.index_cast %{v.name} : index to i64", f"{n} = {v.name}")
                conv.append(self.add(Val(n, "i64", v.lo, v.hi)))
            lo, ub, st = conv
        unsigned = itype == "index" and lo.lo >= 0 and ub.lo >= 0 and r.random() < 0.3
        types = self.carried_types()
        inits = self.yield_values(types)
        iv = self.fresh("i")
        args = [self.fresh("a") for _ in types]
        res = self.fresh("r")
        head = (f"scf.for {'unsigned ' if unsigned else ''}%{iv} = %{lo.name} to %{ub.name} "
                f"step %{st.name}")
        if types:
            iter_args = ", ".join(f"%{a} = %{v.name}" for a, v in zip(args, inits))
            head = (self.result_names(res, len(types))[0] + head + f" iter_args({iter_args})"
                    f" -> ({', '.join(types)})")
        if itype == "i64":
            head += " : i64"
        self.emit(head + " {")
        for a, v in zip(args, inits):
            self.emit_py(f"{a} = {v.name}")
        self.emit_py(f"for {iv} in range({lo.name}, {ub.name}, {st.name}):")
        self.depth += 1
        self.loop_depth += 1
        self.emit_py("steps[0] += 1")
        self.emit_py("if steps[0] > 20000: raise Budget")
        ivlo, ivhi = lo.lo, max(lo.lo, ub.hi - 1)
        self.scopes.append([Val(iv, itype, ivlo, ivhi)] +
                           [Val(a, t) for a, t in zip(args, types)])
        self.block(r.randint(1, max(1, min(budget, 5))))
        ys = self.yield_values(types)
        if types:
            self.emit("scf.yield " + ", ".join(f"%{y.name}" for y in ys) + " : " + ", ".join(types))
            self.emit_py(", ".join(args) + ", = " + ", ".join(y.name for y in ys) + ",")
        self.scopes.pop()
        self.loop_depth -= 1
        self.depth -= 1
        self.emit("}")
        for name, a, t in zip(self.result_names(res, len(types))[1], args, types):
            self.emit_py(f"{self.py_name(name)} = {a}")
            self.add(Val(name, t))

    @staticmethod
    def result_names(res: str, count: int) -> tuple[str, list[str]]:
        """The ``%res:count = `` prefix and the results' names (``%res`` alone for one result:
        polyopt's parser does not accept ``%r#0`` after ``%r:1``, see the report)."""
        if count == 1:
            return f"%{res} = ", [res]
        return f"%{res}:{count} = ", [f"{res}#{k}" for k in range(count)]

    @staticmethod
    def py_name(name: str) -> str:
        return name.replace("#", "_")

    def while_loop(self, budget: int) -> None:
        r = self.rng
        # flag: the loop goes on while an i1 it carries says so (the before region is only
        # scf.condition: the header branches on one of its arguments)
        shape = r.choice(["count", "halve", "data", "dowhile", "flag"])
        types = self.carried_types()
        inits = self.yield_values(types)
        counter_init = self.pick_bounded(-2, 6) if shape != "halve" else \
            self.pick_bounded(0, 60)
        bound = self.pick_bounded(-2, 10 if self.loop_depth < 2 else 5)
        if shape == "flag":
            f0 = self.fresh()
            self.emit(f"%{f0} = arith.cmpi slt, %{counter_init.name}, %{bound.name} : index",
                      f"{f0} = {counter_init.name} < {bound.name}")
            types.append("i1")
            inits.append(self.add(Val(f0, "i1")))
        step = self.const("index", r.choice([1, 1, 2, 3]))
        k = self.fresh("k")
        args = [self.fresh("w") for _ in types]
        bk = self.fresh("b")
        bargs = [self.fresh("b") for _ in types]
        extra_t = r.choice([None, None, "f64", "i64", "index"])
        res = self.fresh("r")
        all_types = ["index"] + types + ([extra_t] if extra_t else [])
        inits_txt = ", ".join([f"%{k} = %{counter_init.name}"] +
                              [f"%{a} = %{v.name}" for a, v in zip(args, inits)])
        self.emit(f"{self.result_names(res, len(all_types))[0]}scf.while ({inits_txt}) : "
                  f"({', '.join(['index'] + types)}) -> ({', '.join(all_types)}) {{")
        self.emit_py(f"{k} = {counter_init.name}")
        for a, v in zip(args, inits):
            self.emit_py(f"{a} = {v.name}")
        self.emit_py("while True:")
        self.depth += 1
        self.loop_depth += 1
        self.emit_py("steps[0] += 1")
        self.emit_py("if steps[0] > 20000: raise Budget")
        self.scopes.append([Val(k, "index", None, None)] + [Val(a, t) for a, t in zip(args, types)])
        if shape == "dowhile":
            self.block(r.randint(1, max(1, min(budget, 3))))
        c = self.fresh()
        if shape == "flag":
            c = args[-1]
        elif shape == "halve":
            z = self.const("index", 0)
            self.emit(f"%{c} = arith.cmpi sgt, %{k}, %{z.name} : index", f"{c} = {k} > 0")
        else:
            self.emit(f"%{c} = arith.cmpi slt, %{k}, %{bound.name} : index",
                      f"{c} = {k} < {bound.name}")
        if shape != "flag":
            self.add(Val(c, "i1"))
        if shape == "data":
            x = self.load("f64")
            thr = self.const("f64", r.choice([0.0, 0.5, 2.0]))
            d = self.fresh()
            self.emit(f"%{d} = arith.cmpf olt, %{x.name}, %{thr.name} : f64",
                      f"{d} = {x.name} < {thr.name}")
            c2 = self.fresh()
            self.emit(f"%{c2} = arith.andi %{c}, %{d} : i1", f"{c2} = {c} and {d}")
            c = c2
        extra = self.pick(extra_t) if extra_t else None
        fwd = [k] + args + ([extra.name] if extra else [])
        self.emit(f"scf.condition(%{c}) " + ", ".join(f"%{v}" for v in fwd) + " : " +
                  ", ".join(all_types))
        self.scopes.pop()
        self.emit_py(f"{res}_all = [" + ", ".join(fwd) + "]")
        self.emit_py(f"if not {c}: break")
        self.depth -= 1
        self.emit("} do {")
        bnames = [bk] + bargs + ([self.fresh("b")] if extra_t else [])
        self.emit("^bb0(" + ", ".join(f"%{b}: {t}" for b, t in zip(bnames, all_types)) + "):")
        self.depth += 1
        self.emit_py(", ".join(bnames) + ", = " + f"{res}_all")
        self.scopes.append([Val(bk, "index", None, None)] +
                           [Val(b, t) for b, t in zip(bnames[1:], all_types[1:])])
        if shape != "dowhile":
            self.block(r.randint(1, max(1, min(budget, 4))))
        nk = self.fresh()
        if shape == "halve":
            two = self.const("index", 2)
            self.emit(f"%{nk} = arith.divui %{bk}, %{two.name} : index", f"{nk} = u({bk}) // 2")
        else:
            self.emit(f"%{nk} = arith.addi %{bk}, %{step.name} : index",
                      f"{nk} = {bk} + {step.name}")
        ys = self.yield_values(types)
        if shape == "flag":
            nf = self.fresh()
            self.emit(f"%{nf} = arith.cmpi slt, %{nk}, %{bound.name} : index",
                      f"{nf} = {nk} < {bound.name}")
            ys[-1] = Val(nf, "i1")
        self.emit("scf.yield " + ", ".join([f"%{nk}"] + [f"%{y.name}" for y in ys]) + " : " +
                  ", ".join(["index"] + types))
        self.emit_py(", ".join([k] + args) + ", = " + ", ".join([nk] + [y.name for y in ys]) + ",")
        self.scopes.pop()
        self.loop_depth -= 1
        self.depth -= 1
        self.emit("}")
        for j, (name, t) in enumerate(zip(self.result_names(res, len(all_types))[1], all_types)):
            self.emit_py(f"{self.py_name(name)} = {res}_all[{j}]")
            self.add(Val(name, t))

    def if_stmt(self, budget: int) -> None:
        r = self.rng
        c = self.cond()
        types = self.carried_types() if r.random() < 0.6 else []
        with_else = bool(types) or r.random() < 0.5
        res = self.fresh("r")
        head = f"scf.if %{c.name}"
        if types:
            head = self.result_names(res, len(types))[0] + head + " -> (" + ", ".join(types) + ")"
        self.emit(head + " {")
        self.emit_py(f"if {c.name}:")
        for branch in range(2 if with_else else 1):
            if branch == 1:
                self.emit("} else {")
                self.emit_py("else:")
            self.depth += 1
            self.emit_py("pass")
            self.scopes.append([])
            if r.random() < 0.85:
                self.block(r.randint(1, max(1, min(budget, 4))))
            ys = self.yield_values(types)
            if types:
                self.emit("scf.yield " + ", ".join(f"%{y.name}" for y in ys) + " : " +
                          ", ".join(types))
                self.emit_py(f"{res}_all = [" + ", ".join(y.name for y in ys) + "]")
            self.scopes.pop()
            self.depth -= 1
        self.emit("}")
        for j, (name, t) in enumerate(zip(self.result_names(res, len(types))[1], types)):
            self.emit_py(f"{self.py_name(name)} = {res}_all[{j}]")
            self.add(Val(name, t))


@dataclass
class Program:
    seed: int
    text: str                   # the structured MLIR
    ref: str                    # the Python reference's source
    n: int
    s: int
    x: float
    m: int
    p: bool
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    result_types: list = field(default_factory=list)

    def inputs(self):
        return (self.A.copy(), self.B.copy(), self.C.copy(), self.n, self.s, self.x, self.m,
                self.p)

    def expected(self):
        """(results, A, B, C) by the Python reference, or None over the step budget."""
        env: dict = {}
        exec(PY_PRELUDE + self.ref, env)
        A, B, C, n, s, x, m, p = self.inputs()
        try:
            results = env["f"](A, B, C, n, s, x, m, p, [0])
        except env["Budget"]:
            return None
        return _normalize(results, self.result_types), A, B, C


def _normalize(results, types):
    if not isinstance(results, tuple):
        results = (results,) if results is not None else ()
    out = []
    for v, t in zip(results, types):
        out.append(float(v) if t == "f64" else int(v))
    return tuple(out)


def generate(seed: int, size: Optional[int] = None) -> Program:
    """The program of ``seed`` (its text, Python reference and inputs)."""
    rng = random.Random(seed)
    while True:
        g = _Gen(rng, size if size is not None else rng.randint(4, 22))
        g.scopes.append([Val("A", "memref"), Val("B", "memref"), Val("C", "memref"),
                         Val("n", "index", 0, 9), Val("s", "index", 1, 3), Val("x", "f64"),
                         Val("m", "i64"), Val("p", "i1")])
        g.py.append("def f(A, B, C, n, s, x, m, p, steps):")
        g.for_loop(4) if rng.random() < 0.6 else g.while_loop(4)
        g.block(rng.randint(1, 7))
        rets = []
        for t in ("f64", "i64", "index"):
            if rng.random() < 0.7:
                rets.append(g.pick(t))
        g.emit("return " + ", ".join(f"%{v.name}" for v in rets) +
               (" : " + ", ".join(v.type for v in rets) if rets else ""),
               "return (" + "".join(f"{v.name}, " for v in rets) + ")")
        body = "\n".join(g.mlir)
        text = (f"func.func @f(%A: memref<{N}xf64>, %B: memref<?xi64>, %C: memref<{M}x?xf64>, "
                f"%n: index, %s: index, %x: f64, %m: i64, %p: i1)"
                + (" -> (" + ", ".join(v.type for v in rets) + ")" if rets else "")
                + " {\n" + body + "\n}\n")
        ref = "\n".join(g.py)
        ref = re.sub(r"\b(r\d+)#(\d+)", r"\1_\2", ref)
        arng = np.random.default_rng(seed)
        prog = Program(seed, text, ref, n=int(arng.integers(0, 10)), s=int(arng.integers(1, 4)),
                       x=float(arng.integers(-8, 8)) / 4, m=int(arng.integers(-9, 9)),
                       p=bool(arng.integers(0, 2)),
                       A=arng.integers(-8, 8, N).astype(np.float64) / 4,
                       B=arng.integers(-20, 20, N).astype(np.int64),
                       C=arng.integers(-8, 8, (M, M)).astype(np.float64) / 2,
                       result_types=[v.type for v in rets])
        if prog.expected() is not None:
            return prog


# -- random control-flow graphs ----------------------------------------------------------------

@dataclass
class RandomCFG:
    """A function of random blocks and branches (irreducible loops, several entries, switches,
    values passed along every edge): ``@f(%B: memref<16xi64>, %fuel: i64, %x: i64) -> i64``.
    Every block takes (fuel, acc) and passes fuel - 1 on; the targets of back edges (in the
    text's order) leave for the exit when the fuel is spent, so every cycle ends."""
    seed: int
    text: str
    blocks: list        # per block: (mul, add, check, terminator) for the Python reference

    def run(self, B: np.ndarray, fuel: int, x: int) -> int:
        mask = (1 << 64) - 1

        def wrap(v):
            v &= mask
            return v - (1 << 64) if v >> 63 else v
        block, acc = 0, x
        for _ in range(100000):
            mul, add, check, term = self.blocks[block]
            acc = wrap(acc * mul + add)
            B[block % 16] = acc
            fuel -= 1
            if check and fuel <= 0:
                return acc
            kind = term[0]
            if kind == "br":
                _, dest, delta = term
            elif kind == "cond_br":
                _, bit, (t, dt), (f, df) = term
                dest, delta = (t, dt) if (acc >> bit) & 1 else (f, df)
            elif kind == "switch":
                _, default, cases = term
                flag = acc & 3
                dest, delta = next(((d, dd) for v, d, dd in cases if v == flag), default)
            else:   # exit
                return acc
            acc = wrap(acc + delta)
            block = dest
        raise AssertionError("the reference did not end")


def random_cfg(seed: int) -> RandomCFG:
    rng = random.Random(seed)
    n = rng.randint(2, 9)
    terms = []
    for i in range(n):
        def target():
            return rng.randrange(n), rng.choice([0, 0, 1, -3])
        r = rng.random()
        if r < 0.12:
            terms.append(("exit",))
        elif r < 0.4:
            terms.append(("br",) + target())
        elif r < 0.8:
            terms.append(("cond_br", rng.randint(0, 3), target(), target()))
        else:
            cases = [(v, *target()) for v in rng.sample(range(-1, 5), rng.randint(1, 4))]
            if rng.random() < 0.3:
                cases.append((cases[0][0], *target()))      # a duplicate case: the first wins
            terms.append(("switch", target(), cases))
    back_targets = set()
    for i, t in enumerate(terms):
        dests = [] if t[0] == "exit" else [t[1]] if t[0] == "br" else \
            [t[2][0], t[3][0]] if t[0] == "cond_br" else [t[1][0]] + [c[1] for c in t[2]]
        back_targets.update(d for d in dests if d <= i)
    blocks = [(rng.choice([1, 3, -1, 5]), rng.randint(-4, 9), i in back_targets or
               rng.random() < 0.2, t) for i, t in enumerate(terms)]
    order = list(range(n))
    if rng.random() < 0.3:      # blocks out of the text's order (the entry stays first)
        rest = order[1:]
        rng.shuffle(rest)
        order = [0] + rest
    lines = ["func.func @f(%B: memref<16xi64>, %fuel: i64, %x: i64) -> i64 {",
             "  %one = arith.constant 1 : i64",
             "  %zero = arith.constant 0 : i64",
             "  cf.br ^b0(%fuel, %x : i64, i64)"]

    def edge(dest, delta, acc, i, k):
        if delta == 0:
            return f"^b{dest}(%f{i}, {acc} : i64, i64)"
        lines.append(f"  %d{i}_{k} = arith.constant {delta} : i64")
        lines.append(f"  %e{i}_{k} = arith.addi {acc}, %d{i}_{k} : i64")
        return f"^b{dest}(%f{i}, %e{i}_{k} : i64, i64)"
    for i in order:
        mul, add, check, term = blocks[i]
        lines.append(f"^b{i}(%fu{i}: i64, %ac{i}: i64):")
        lines.append(f"  %m{i} = arith.constant {mul} : i64")
        lines.append(f"  %a{i} = arith.constant {add} : i64")
        lines.append(f"  %p{i} = arith.muli %ac{i}, %m{i} : i64")
        lines.append(f"  %s{i} = arith.addi %p{i}, %a{i} : i64")
        lines.append(f"  %ix{i} = arith.constant {i % 16} : index")
        lines.append(f"  memref.store %s{i}, %B[%ix{i}] : memref<16xi64>")
        lines.append(f"  %f{i} = arith.subi %fu{i}, %one : i64")
        acc = f"%s{i}"
        if check:
            lines.append(f"  %done{i} = arith.cmpi sle, %f{i}, %zero : i64")
            lines.append(f"  cf.cond_br %done{i}, ^exit(%s{i} : i64), ^c{i}")
            lines.append(f"^c{i}:")
        if term[0] == "exit":
            lines.append(f"  cf.br ^exit(%s{i} : i64)")
        elif term[0] == "br":
            e = edge(term[1], term[2], acc, i, 0)
            lines.append(f"  cf.br {e}")
        elif term[0] == "cond_br":
            bit = term[1]
            lines.append(f"  %sh{i} = arith.constant {bit} : i64")
            lines.append(f"  %t{i} = arith.shrsi %s{i}, %sh{i} : i64")
            lines.append(f"  %b{i} = arith.trunci %t{i} : i64 to i1")
            e1 = edge(*term[2], acc, i, 0)
            e2 = edge(*term[3], acc, i, 1)
            lines.append(f"  cf.cond_br %b{i}, {e1}, {e2}")
        else:
            lines.append(f"  %three{i} = arith.constant 3 : i64")
            lines.append(f"  %low{i} = arith.andi %s{i}, %three{i} : i64")
            lines.append(f"  %fl{i} = arith.trunci %low{i} : i64 to i32")
            d = edge(*term[1], acc, i, 0)
            cs = [f"{v}: {edge(dest, delta, acc, i, k + 1)}"
                  for k, (v, dest, delta) in enumerate(term[2])]
            lines.append(f"  cf.switch %fl{i} : i32, [default: {d}, " + ", ".join(cs) + "]")
    lines.append("^exit(%r: i64):")
    lines.append("  return %r : i64")
    lines.append("}")
    return RandomCFG(seed, "\n".join(lines) + "\n", blocks)


def _run_cfgs(text: str, cfgs, inputs):
    import polyopt
    module = polyopt.compile(text, filename="<cfg>", **_run_cfgs.switches)
    out = {}
    for g in cfgs:
        res = []
        for fuel, x in inputs:
            B = np.zeros(16, dtype=np.int64)
            r = module[f"g{g.seed}"](B, fuel, x)
            res.append((int(r), B.tolist()))
        out[g.seed] = res
    return out


CFG_INPUTS = [(1, 0), (3, 5), (10, -7), (25, 12345)]


def check_random_cfgs(seeds, stats: Stats, switch_sets=None, timeout: float = 120) -> None:
    """Random CFGs (:func:`random_cfg`), one module per switch set, against their reference;
    lift-cf-to-scf on each must not fail and must print what mlir-opt-22 reads."""
    cfgs = [random_cfg(s) for s in seeds]
    expected = {}
    for g in cfgs:
        res = []
        for fuel, x in CFG_INPUTS:
            B = np.zeros(16, dtype=np.int64)
            res.append((g.run(B, fuel, x), B.tolist()))
        expected[g.seed] = res
    for g in cfgs:
        stats.programs += 1
        if mlir_opt(g.text, ()) is None:
            raise AssertionError(f"mlir-opt-22 refuses the random CFG {g.seed}:\n{g.text}")
        kind, value = run_child(lambda: polyopt_lift(g.text), timeout)
        if kind != "ok":
            stats.failures.append(Failure(g.seed, kind, "random CFG", {"pass": "lift-cf-to-scf"},
                                          str(value), g.text))
        else:
            if any("not lifted" in r for r in value[1]):
                stats.not_lifted += 1
            else:
                stats.lifted += 1
            refused = upstream_refuses(value[0], g.text)
            if refused:
                stats.failures.append(Failure(g.seed, "printer", "random CFG",
                                              {"pass": "lift-cf-to-scf"}, refused, value[0]))
    text = "\n".join(g.text.replace("func.func @f(", f"func.func @g{g.seed}(", 1) for g in cfgs)
    for sw in switch_sets or SWITCH_SETS:
        def job(cs=cfgs, t=text):
            _run_cfgs.switches = sw
            return _run_cfgs(t, cs, CFG_INPUTS)
        kind, value = run_child(job, timeout)
        if kind != "ok":
            for g in cfgs:
                single = g.text.replace("func.func @f(", f"func.func @g{g.seed}(", 1)
                k1, v1 = run_child(lambda: job([g], single), timeout)
                stats.runs += 1
                if k1 != "ok" or v1[g.seed] != expected[g.seed]:
                    detail = str(v1) if k1 != "ok" else \
                        f"expected {expected[g.seed]}\n     got {v1[g.seed]}"
                    stats.failures.append(Failure(g.seed, k1 if k1 != "ok" else "wrong",
                                                  "random CFG", sw, detail, g.text))
            continue
        for g in cfgs:
            stats.runs += 1
            if value[g.seed] != expected[g.seed]:
                stats.failures.append(Failure(
                    g.seed, "wrong", "random CFG", sw,
                    f"expected {expected[g.seed]}\n     got {value[g.seed]}", g.text))


# -- the CFG variants ------------------------------------------------------------------------

PIPELINES = [
    ("--convert-scf-to-cf",),
    ("--convert-scf-to-cf", "--canonicalize"),
    ("--convert-scf-to-cf", "--canonicalize", "--cse"),
    ("--convert-scf-to-cf", "--cse"),
    ("--canonicalize", "--convert-scf-to-cf", "--canonicalize"),
    ("--convert-scf-to-cf", "--sccp", "--canonicalize"),
    ("--convert-scf-to-cf", "--control-flow-sink", "--canonicalize"),
    ("--convert-scf-to-cf", "--lift-cf-to-scf", "--convert-scf-to-cf"),
    ("--convert-scf-to-cf", "--lift-cf-to-scf", "--convert-scf-to-cf", "--canonicalize"),
    ("--convert-scf-to-cf", "--canonicalize", "--remove-dead-values", "--canonicalize"),
    ("--convert-scf-to-cf", "--loop-invariant-code-motion", "--canonicalize", "--cse"),
    # upstream's lifting as it is: scf.while, scf.index_switch, ub.poison
    ("--convert-scf-to-cf", "--lift-cf-to-scf"),
    ("--convert-scf-to-cf", "--canonicalize", "--lift-cf-to-scf", "--canonicalize"),
]

SWITCH_SETS = [
    {},
    {"hopt": True},
    {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True},
    {"hopt": True, "threads": 2},
]


def mlir_opt(text: str, flags, timeout: float = 60) -> Optional[str]:
    """What mlir-opt-22 makes of ``text`` under ``flags``, or None when it refuses it."""
    r = subprocess.run(["mlir-opt-22", *flags, "-"], input=text, capture_output=True,
                       text=True, timeout=timeout)
    return r.stdout if r.returncode == 0 else None


# -- running polyopt in a child ---------------------------------------------------------------

def run_child(fn, timeout: float):
    """``fn()`` in a forked child: ("ok", value) / ("error", message) / ("crash", text) /
    ("hang", None); the value is pickled back.  polyopt is imported before the fork, once
    (no thread runs yet: the JIT and OpenMP start in the children)."""
    import polyopt.passes  # noqa: F401
    import polyopt.pipeline  # noqa: F401
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:    # the child
        os.close(rfd)
        try:
            out = ("ok", fn())
        except Exception as e:      # noqa: BLE001
            out = _classify_error(e)
        try:
            data = pickle.dumps(out)
        except Exception as e:      # noqa: BLE001
            data = pickle.dumps(("crash", f"unpicklable result: {e}"))
        with os.fdopen(wfd, "wb") as w:
            w.write(data)
        os._exit(0)
    os.close(wfd)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(rfd, "rb") as r:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ("hang", None)
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return ("crash", f"child died with status {status}")
    return pickle.loads(b"".join(chunks))


_LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.S)


def _classify_error(e: Exception):
    from polyopt.affine.diagnostics import PolyoptError
    if isinstance(e, PolyoptError) and e.loc is not None and _LOCATED.match(str(e)):
        return ("error", str(e))
    return ("crash", "".join(traceback.format_exception(e)))


def polyopt_run(text: str, prog: Program, switches: dict):
    import polyopt
    fn = polyopt.compile(text, filename="<fuzz>", **switches)["f"]
    A, B, C, n, s, x, m, p = prog.inputs()
    results = fn(A, B, C, n, s, x, m, p)
    return _normalize(results, prog.result_types), A, B, C


def polyopt_lift(text: str):
    """``text`` after polyopt's lift-cf-to-scf, printed, and the pass's remarks."""
    import polyopt
    from polyopt.passes import run_pipeline
    module = polyopt.parse(text, filename="<fuzz>")
    remarks: list = []
    run_pipeline(module, "lift-cf-to-scf", remark=lambda loc, msg: remarks.append(msg))
    return str(module), remarks


def same(expected, got) -> bool:
    e_res, eA, eB, eC = expected
    g_res, gA, gB, gC = got
    if len(e_res) != len(g_res):
        return False
    for a, b in zip(e_res, g_res):
        if a != b and not (a != a and b != b):
            return False
    return np.array_equal(eA, gA, equal_nan=True) and np.array_equal(eB, gB) and \
        np.array_equal(eC, gC, equal_nan=True)


@dataclass
class Failure:
    seed: int
    what: str           # wrong / crash / hang / error / upstream
    variant: str
    switches: dict
    detail: str
    text: str

    def report(self) -> str:
        return (f"seed {self.seed}: {self.what} under {self.variant} {self.switches}:\n"
                f"{self.detail}\n--- program:\n{self.text}")


@dataclass
class Stats:
    programs: int = 0
    variants: int = 0
    runs: int = 0
    refused_upstream: int = 0
    lifted: int = 0             # CFG variants lift-cf-to-scf lifted (the others run as branches)
    not_lifted: int = 0
    failures: list = field(default_factory=list)


def check_program(prog: Program, stats: Stats, rng: random.Random, pipelines=None,
                  switch_sets=None, timeout: float = 60) -> None:
    """Run ``prog`` structured (no switches) and as the CFGs of ``pipelines`` (a random two of
    PIPELINES by default) under ``switch_sets``, comparing with the Python reference."""
    stats.programs += 1
    expected = prog.expected()
    variants = [("structured", prog.text, [{}])]
    if pipelines is None:
        pipelines = [PIPELINES[0]] + rng.sample(PIPELINES[1:], 2)
    for flags in pipelines:
        cf = mlir_opt(prog.text, flags)
        if cf is None:
            stats.refused_upstream += 1
            continue
        variants.append((" ".join(flags), cf, switch_sets or SWITCH_SETS))
    for label, text, sets in variants:
        stats.variants += 1
        if label != "structured":
            _check_lift(prog, label, text, stats, timeout)
        for sw in sets:
            stats.runs += 1
            out = run_child(lambda: polyopt_run(text, prog, sw), timeout)
            kind, value = out
            if kind == "ok" and same(expected, value):
                continue
            if kind == "ok":
                detail = f"expected {expected}\n     got {value}"
                kind = "wrong"
            else:
                detail = str(value)
            stats.failures.append(Failure(prog.seed, kind, label, sw, detail, text))


def upstream_refuses(printed: str, source: str) -> Optional[str]:
    """mlir-opt-22's error on ``printed`` (polyopt's print of ``source``), or None when it
    accepts it or cannot read back its own print of ``source`` either (it prints an i64
    ``cf.switch`` case -5 as 18446744073709551611, then calls it "integer value too large")."""
    r = subprocess.run(["mlir-opt-22", "-"], input=printed, capture_output=True, text=True,
                       timeout=60)
    if r.returncode == 0:
        return None
    own = mlir_opt(source, ())
    if own is not None and mlir_opt(own, ()) is None:
        return None
    return r.stderr


def function_text(text: str, name: str) -> str:
    """The ``func.func @f`` of ``text`` (polyopt's or mlir-opt-22's print) renamed ``@name``,
    without the ``module { }`` around it."""
    lines = text.strip("\n").splitlines()
    if lines[0].startswith("module"):
        lines = lines[1:-1]
    out = "\n".join(lines)
    assert out.count("func.func @f(") == 1, text
    return out.replace("func.func @f(", f"func.func @{name}(", 1)


def variants_of(prog: Program, pipelines, stats: Stats) -> list[tuple[str, str]]:
    """(label, text): the structured program, then its CFG by each of ``pipelines``."""
    out = [("structured", prog.text)]
    for flags in pipelines:
        cf = mlir_opt(prog.text, flags)
        if cf is None:
            stats.refused_upstream += 1
            continue
        out.append((" ".join(flags), cf))
    return out


def _run_module(text: str, jobs, switches: dict):
    """Compile ``text`` once and run each (name, program) of ``jobs`` on its inputs."""
    import polyopt
    module = polyopt.compile(text, filename="<fuzz>", **switches)
    out = {}
    for name, prog in jobs:
        A, B, C, n, s, x, m, p = prog.inputs()
        results = module[name](A, B, C, n, s, x, m, p)
        out[name] = (_normalize(results, prog.result_types), A, B, C)
    return out


def check_batch(progs: list, stats: Stats, rng: random.Random, pipelines_per_program: int = 2,
                switch_sets=None, timeout: float = 120, lift_check: bool = True) -> None:
    """Like :func:`check_program` for several programs at once: every variant of every
    program is a function of one module, compiled once per switch set (the JIT is most of the
    time); a module that does not compile is retried function by function, to name the
    failing one."""
    entries = []        # (function name, prog, label, text)
    for prog in progs:
        stats.programs += 1
        chosen = [PIPELINES[0]] + rng.sample(PIPELINES[1:], pipelines_per_program - 1)
        for k, (label, text) in enumerate(variants_of(prog, chosen, stats)):
            stats.variants += 1
            if lift_check and label != "structured":
                _check_lift(prog, label, text, stats, timeout)
            entries.append((f"f{prog.seed}_{k}", prog, label, text))
    module_text = "\n".join(function_text(t, name) for name, _, _, t in entries) + "\n"
    for sw in switch_sets or SWITCH_SETS:
        kind, value = run_child(
            lambda: _run_module(module_text, [(e[0], e[1]) for e in entries], sw), timeout)
        if kind != "ok":    # one by one, to find the culprit
            for name, prog, label, text in entries:
                stats.runs += 1
                single = function_text(text, name) + "\n"
                k1, v1 = run_child(lambda: _run_module(single, [(name, prog)], sw), timeout)
                _record(stats, prog, label, sw, text, k1, v1[name] if k1 == "ok" else v1)
            continue
        for name, prog, label, text in entries:
            stats.runs += 1
            _record(stats, prog, label, sw, text, "ok", value[name])


def _record(stats: Stats, prog: Program, label: str, sw: dict, text: str, kind, value) -> None:
    expected = prog.expected()
    if kind == "ok" and same(expected, value):
        return
    if kind == "ok":
        detail = f"expected {expected}\n     got {value}"
        kind = "wrong"
    else:
        detail = str(value)
    stats.failures.append(Failure(prog.seed, kind, label, sw, detail, text))


def _check_lift(prog: Program, label: str, text: str, stats: Stats, timeout: float) -> None:
    """lift-cf-to-scf alone: no crash, and mlir-opt-22 accepts what it prints."""
    kind, value = run_child(lambda: polyopt_lift(text), timeout)
    if kind != "ok":
        stats.failures.append(Failure(prog.seed, kind, label, {"pass": "lift-cf-to-scf"},
                                      str(value), text))
        return
    printed, remarks = value
    if any("not lifted" in r for r in remarks):
        stats.not_lifted += 1
    elif remarks:
        stats.lifted += 1
    refused = upstream_refuses(printed, text)
    if refused:
        stats.failures.append(Failure(prog.seed, "printer", label, {"pass": "lift-cf-to-scf"},
                                      refused[:2000], printed))


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8, help="programs compiled as one module")
    ap.add_argument("--replay", type=int, help="run one seed through every pipeline")
    ap.add_argument("--show", action="store_true", help="print the program and its reference")
    args = ap.parse_args(argv)
    stats = Stats()
    seen: dict = {}

    def report(before: int) -> None:
        for f in stats.failures[before:]:
            key = (f.what, f.detail.splitlines()[-1][:80] if f.detail else "")
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= 2:
                print(f.report()[:4000], flush=True)

    if args.replay is not None:
        prog = generate(args.replay)
        if args.show:
            print(prog.text)
            print(prog.ref)
        check_program(prog, stats, random.Random(args.replay), pipelines=PIPELINES)
        report(0)
    else:
        end = time.monotonic() + args.minutes * 60
        seed = args.start
        while time.monotonic() < end:
            before = len(stats.failures)
            seeds = list(range(seed, seed + args.batch))
            check_batch([generate(s) for s in seeds], stats, random.Random(seed),
                        pipelines_per_program=3)
            report(before)
            seed += args.batch
    print(f"{stats.programs} programs, {stats.variants} variants, {stats.runs} runs, "
          f"{stats.refused_upstream} refused upstream, {stats.lifted} lifted, "
          f"{stats.not_lifted} not lifted, {len(stats.failures)} failures", flush=True)
    for k, v in sorted(seen.items(), key=lambda kv: -kv[1]):
        print(v, k)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
