"""Differential test: random straight-line programs of arith ops (chains of integer and float
arithmetic, comparisons, selects and casts on scalars and vectors) print the same with polyopt
and with mlir-runner-22.  Seeds are fixed; ``POLYOPT_FUZZ_PROGRAMS`` runs more of them.

Undefined behaviour is kept out by construction: divisors are made odd (never zero, and a
dividend ``| 1`` is never ``INT_MIN``), shift amounts are reduced modulo the width, float to
integer casts are left out (out-of-range results are poison); NaNs compare equal whatever their
sign (LLVM leaves it unspecified).  polyopt contracts ``mulf`` + ``addf`` into an FMA, so a
product never feeds an addition here.  maximumf/minimumf/maxnumf/minnumf are left out:
upstream needs ``--arith-expand`` for the ceil/floor divisions, and its expansion of maximumf
returns -0 for ``maximumf(+0, -0)`` (they are checked without it in test_arith_exec).
"""

from __future__ import annotations

import os
import random

import pytest

from arith_oracle import Program, assert_same_output

INTS = ("i8", "i16", "i32", "i64")
FLOATS = ("f16", "f32", "f64")
INT_OPS = ("addi", "subi", "muli", "andi", "ori", "xori", "maxsi", "maxui", "minsi", "minui")
DIV_OPS = ("divui", "divsi", "ceildivui", "ceildivsi", "floordivsi", "remui", "remsi")
SHIFTS = ("shli", "shrui", "shrsi")
FLOAT_OPS = ("addf", "subf", "mulf", "divf", "remf")
WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "f32": 32, "f64": 64}


class RandomProgram:
    def __init__(self, seed: int, length: int = 60):
        self.rng = random.Random(seed)
        self.p = Program()
        self.pool: dict[str, list[tuple[str, bool]]] = {}   # type -> [(value, is a product)]
        self.length = length

    def shape(self) -> str:
        return self.rng.choice(["", "", "4", "3"])

    def typ(self, elem: str, shape: str) -> str:
        return f"vector<{shape}x{elem}>" if shape else elem

    def literal(self, elem: str) -> str:
        r = self.rng
        if elem == "i1":
            return r.choice(["true", "false"])
        if elem in INTS:
            w = WIDTH[elem]
            return str(r.choice([r.randint(-(1 << (w - 1)), (1 << (w - 1)) - 1),
                                 r.randint(-10, 10), -(1 << (w - 1)), (1 << (w - 1)) - 1]))
        v = r.choice([r.uniform(-100, 100), r.uniform(-1, 1), 0.0, -0.0, 1e4, 3.0])
        return repr(float(v))

    def fresh(self, t: str, elem: str, shape: str) -> str:
        if shape:
            n = int(shape)
            return self.p.value(t, [self.literal(elem) for _ in range(n)])
        return self.p.value(t, self.literal(elem))

    def operand(self, t: str, elem: str, shape: str, no_product: bool = False) -> str:
        choices = [v for v, prod in self.pool.get(t, []) if not (no_product and prod)]
        if choices and self.rng.random() < 0.7:
            return self.rng.choice(choices)
        return self.fresh(t, elem, shape)

    def add(self, v: str, t: str, product: bool = False) -> None:
        self.pool.setdefault(t, []).append((v, product))
        self.p.print(v, t, f"{v} : {t}")

    def step(self) -> None:
        r = self.rng
        shape = self.shape()
        kind = r.choice(["int", "int", "div", "shift", "float", "float", "cmp", "select", "cast"])
        if kind in ("int", "div", "shift", "cmp") or kind == "select" and r.random() < 0.5:
            elem = r.choice(INTS)
        else:
            elem = r.choice(FLOATS)
        t = self.typ(elem, shape)
        p = self.p
        if kind == "int":
            a, b = self.operand(t, elem, shape), self.operand(t, elem, shape)
            self.add(p.op(f"arith.{r.choice(INT_OPS)} {a}, {b} : {t}"), t)
        elif kind == "div":
            one = p.value(t, [1] * int(shape) if shape else 1)
            a = p.op(f"arith.ori {self.operand(t, elem, shape)}, {one} : {t}")
            b = p.op(f"arith.ori {self.operand(t, elem, shape)}, {one} : {t}")
            self.add(p.op(f"arith.{r.choice(DIV_OPS)} {a}, {b} : {t}"), t)
        elif kind == "shift":
            w = WIDTH[elem]
            m = p.value(t, [w] * int(shape) if shape else w)
            s = p.op(f"arith.remui {self.operand(t, elem, shape)}, {m} : {t}")
            self.add(p.op(f"arith.{r.choice(SHIFTS)} {self.operand(t, elem, shape)}, {s} : {t}"),
                     t)
        elif kind == "float":
            op = r.choice(FLOAT_OPS)
            sum_like = op in ("addf", "subf")
            a = self.operand(t, elem, shape, no_product=sum_like)
            b = self.operand(t, elem, shape, no_product=sum_like)
            self.add(p.op(f"arith.{op} {a}, {b} : {t}"), t, product=op == "mulf")
        elif kind == "cmp":
            a, b = self.operand(t, elem, shape), self.operand(t, elem, shape)
            pred = r.choice(["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"])
            self.add(p.op(f"arith.cmpi {pred}, {a}, {b} : {t}"), self.typ("i1", shape))
        elif kind == "select":
            a, b = self.operand(t, elem, shape), self.operand(t, elem, shape)
            ct = self.typ("i1", shape)
            c = self.operand(ct, "i1", shape) if ct in self.pool else \
                self.p.value(ct, [r.choice(["true", "false"]) for _ in range(int(shape))]
                             if shape else r.choice(["true", "false"]))
            if shape:
                self.add(p.op(f"arith.select {c}, {a}, {b} : {ct}, {t}"), t)
            else:
                self.add(p.op(f"arith.select {c}, {a}, {b} : {t}"), t)
        else:
            self.cast(shape)

    def cast(self, shape: str) -> None:
        r, p = self.rng, self.p
        choice = r.choice(["int", "float", "itof"])
        if choice == "int":
            s, d = r.sample(INTS, 2)
            ts, td = self.typ(s, shape), self.typ(d, shape)
            x = self.operand(ts, s, shape)
            if WIDTH[d] > WIDTH[s]:
                self.add(p.op(f"arith.{r.choice(['extsi', 'extui'])} {x} : {ts} to {td}"), td)
            else:
                self.add(p.op(f"arith.trunci {x} : {ts} to {td}"), td)
        elif choice == "float":
            s, d = r.sample(FLOATS, 2)
            ts, td = self.typ(s, shape), self.typ(d, shape)
            op = "extf" if WIDTH[d] > WIDTH[s] else "truncf"
            self.add(p.op(f"arith.{op} {self.operand(ts, s, shape)} : {ts} to {td}"), td)
        else:
            s, d = r.choice(INTS), r.choice(FLOATS)
            ts, td = self.typ(s, shape), self.typ(d, shape)
            op = r.choice(["sitofp", "uitofp"])
            self.add(p.op(f"arith.{op} {self.operand(ts, s, shape)} : {ts} to {td}"), td)

    def build(self) -> Program:
        for _ in range(self.length):
            self.step()
        return self.p


SEEDS = range(int(os.environ.get("POLYOPT_FUZZ_PROGRAMS", "6")))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_arith_programs_match_mlir_runner(seed):
    assert_same_output(RandomProgram(seed).build(), ["--arith-expand"])
