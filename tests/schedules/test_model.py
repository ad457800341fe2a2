"""Extraction of the polyhedral model (polyopt.schedules.model): golden domains, accesses and
schedules for the nests of the paper and friends, a brute-force cross-check of every domain and
access relation against an interpreter of the loop nest, and the refusals of what the model
cannot represent (exact messages and locations)."""

from __future__ import annotations

import itertools
import textwrap

import islpy as isl
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import (AffineForOp, AffineIfOp, AffineVectorLoadOp,
                                            AffineVectorStoreOp)
from polyopt.affine.printer import print_module
from polyopt.schedules.expand import expand_high_level_ops
from polyopt.schedules.model import ACCESS_OPS, access_relation, extract


def parse_func(text: str, name: str | None = None, filename: str = "t.mlir"):
    module = polyopt.parse(textwrap.dedent(text), filename)
    funcs = [op for op in module.regions[0].blocks[0].ops if op.name == "func.func"
             and not op.is_declaration]
    if name is None:
        return funcs[-1]
    return next(f for f in funcs if f.sym_name == name)


def gist(access) -> str:
    """An access relation without its (already checked) domain constraints."""
    return str(access.relation.gist_domain(access.relation.domain()).coalesce())


def same_on(relation: isl.Map, domain: isl.Set, text: str) -> bool:
    """``relation`` is the map written ``text`` restricted to ``domain``."""
    return relation.is_equal(isl.Map(text).intersect_domain(domain))


# ---------------------------------------------------------------------------------------------
# brute force: run the loop nest symbolically and collect instances and touched elements


def _eval(v, env, pvals):
    if v in env:
        return env[v]
    op = v.defining_op
    if op is not None and op.name == "arith.constant":
        return op.attributes["value"].value
    if op is not None and op.name == "affine.apply":
        return _eval_map(op.map, op.operands, env, pvals)[0]
    return pvals[v]


def _eval_map(amap, operands, env, pvals):
    vals = [_eval(v, env, pvals) for v in operands]
    return amap.evaluate(vals[:amap.num_dims], vals[amap.num_dims:])


def interpret(model, pvals_by_name: dict[str, int]):
    """``{stmt: {instance}}`` and ``{access op: {instance + element}}`` by running the nest."""
    pvals = {v: pvals_by_name[n] for v, n in model.param_names.items()}
    instances: dict[str, set] = {s.name: set() for s in model.statements}
    touched: dict[int, set] = {}

    def run(ops, env):
        for op in ops:
            if isinstance(op, AffineForOp):
                lb = max(_eval_map(op.lower_map, op.lower_operands, env, pvals))
                ub = min(_eval_map(op.upper_map, op.upper_operands, env, pvals))
                for x in range(lb, ub, op.step):
                    run(op.body.ops, {**env, op.induction_var: x})
            elif isinstance(op, AffineIfOp):
                vals = [_eval(v, env, pvals) for v in op.cond_operands]
                nd = op.condition.num_dims
                if op.condition.evaluate(vals[:nd], vals[nd:]):
                    run(op.then_block.ops, env)
                elif op.else_block is not None:
                    run(op.else_block.ops, env)
            elif isinstance(op, ACCESS_OPS):
                s = model.statement_of(op)
                inst = tuple(env[iv] for iv in s.ivs)
                instances[s.name].add(inst)
                idx = list(_eval_map(op.map, op.map_operands, env, pvals))
                ranges = [[x] for x in idx]
                if isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp)):
                    shape = op.vector_type.shape
                    for k, n in enumerate(shape):
                        d = len(idx) - len(shape) + k
                        ranges[d] = list(range(idx[d], idx[d] + n))
                for elem in itertools.product(*ranges):
                    touched.setdefault(id(op), set()).add(inst + elem)

    run(model.scop_ops, {})
    return instances, touched


def isl_points(s: isl.Set, model, pvals_by_name) -> set:
    for k in range(s.dim(isl.dim_type.param)):
        name = s.get_space().get_dim_name(isl.dim_type.param, k)
        s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), pvals_by_name[name]))
    pts = []
    s.foreach_point(pts.append)
    n = s.dim(isl.dim_type.set)
    return {tuple(p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(n))
            for p in pts}


def cross_check(model, *param_values):
    """Every domain and access relation of ``model`` equals what running the nest gives."""
    names = [model.param_names[p] for p in model.params]
    for values in param_values or [()]:
        pv = dict(zip(names, values))
        instances, touched = interpret(model, pv)
        for s in model.statements:
            assert isl_points(s.domain, model, pv) == instances[s.name], (s.name, pv)
            for a in s.accesses:
                assert isl_points(a.relation.wrap().flatten(), model, pv) == \
                    touched.get(id(a.op), set()), (s.name, a.op, pv)


# ---------------------------------------------------------------------------------------------
# golden models

MATMUL = """
func.func @matmul(%A: memref<16x8xf64>, %B: memref<8x12xf64>, %C: memref<16x12xf64>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 12 {
      affine.for %k = 0 to 8 {
        %a = affine.load %A[%i, %k] : memref<16x8xf64>
        %b = affine.load %B[%k, %j] : memref<8x12xf64>
        %c = affine.load %C[%i, %j] : memref<16x12xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<16x12xf64>
      }
    }
  }
  return
}
"""


def test_naive_matmul():
    model = extract(parse_func(MATMUL, filename="mm.mlir"))
    assert [s.name for s in model.statements] == ["S0"]
    s = model.statement("S0")
    assert str(s.domain.coalesce()) == \
        "{ S0[i0, i1, i2] : 0 <= i0 <= 15 and 0 <= i1 <= 11 and 0 <= i2 <= 7 }"
    assert [gist(a) for a in s.accesses] == [
        "{ S0[i0, i1, i2] -> M0[i0, i2] }", "{ S0[i0, i1, i2] -> M1[i2, i1] }",
        "{ S0[i0, i1, i2] -> M2[i0, i1] }", "{ S0[i0, i1, i2] -> M2[i0, i1] }"]
    assert [a.is_write for a in s.accesses] == [False, False, False, True]
    assert s.writes.is_equal(isl.UnionMap(
        "{ S0[i, j, k] -> M2[i, j] : 0 <= i < 16 and 0 <= j < 12 and 0 <= k < 8 }"))
    assert s.reads.is_equal(isl.UnionMap(
        "{ S0[i, j, k] -> M0[i, k]; S0[i, j, k] -> M1[k, j]; S0[i, j, k] -> M2[i, j] }")
        .intersect_domain(isl.UnionSet.from_set(s.domain)))
    assert str(s.schedule.gist_domain(s.domain)) == "{ S0[i0, i1, i2] -> [0, i0, 0, i1, 0, i2, 0] }"
    assert [op.name for op in s.ops] == ["affine.load", "affine.load", "affine.load",
                                         "arith.mulf", "arith.addf", "affine.store"]
    assert len(s.loops) == 3 and s.ivs == [l.induction_var for l in s.loops]
    assert str(s.loc) == "mm.mlir:6:14"
    assert list(model.memrefs) == ["M0", "M1", "M2"]
    assert [model.describe_memref(n) for n in model.memrefs] == ["%arg0", "%arg1", "%arg2"]
    assert model.params == [] and model.context().is_equal(isl.Set("{ : }"))
    assert model.scop_ops == [model.statements[0].loops[0]]
    cross_check(model)


def test_expanded_hop_matmul_is_the_naive_nest():
    module = polyopt.parse(textwrap.dedent("""
        func.func @matmul(%A: memref<70x37xf64>, %B: memref<37x45xf64>, %C: memref<70x45xf64>) {
          hop.matmul %A, %B, %C : (memref<70x37xf64>, memref<37x45xf64>, memref<70x45xf64>)
          return
        }"""))
    expand_high_level_ops(module)
    model = extract(module.regions[0].blocks[0].ops[0])
    (s,) = model.statements
    assert str(s.domain) == "{ S0[i0, i1, i2] : 0 <= i0 <= 69 and 0 <= i1 <= 44 and 0 <= i2 <= 36 }"
    assert [gist(a) for a in s.accesses][-1] == "{ S0[i0, i1, i2] -> M2[i0, i1] }"


# Section 2.5 of the paper: the matmul after the (k/256, i/64, j, i, k) schedule, 2088 rows:
# the i tiles of 64 need a min bound (the last one has 2088 - 32 * 64 = 40 rows).
TILED = """
#lb = affine_map<(d0) -> (d0 * 64)>
#ub = affine_map<(d0) -> (2088, d0 * 64 + 64)>
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  affine.for %arg3 = 0 to 8 {
    affine.for %arg4 = 0 to 33 {
      affine.for %arg5 = 0 to 2048 {
        affine.for %arg6 = #lb(%arg4) to min #ub(%arg4) {
          affine.for %arg7 = 0 to 256 {
            %3 = affine.load %A[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
            %4 = affine.load %B[%arg3 * 256 + %arg7, %arg5] : memref<2048x2048xf64>
            %5 = affine.load %C[%arg6, %arg5] : memref<2088x2048xf64>
            %6 = arith.mulf %3, %4 : f64
            %7 = arith.addf %5, %6 : f64
            affine.store %7, %C[%arg6, %arg5] : memref<2088x2048xf64>
          }
        }
      }
    }
  }
  return
}
"""


def test_paper_tiled_nest_with_min_bound():
    model = extract(parse_func(TILED))
    (s,) = model.statements
    assert str(s.domain.coalesce()) == (
        "{ S0[i0, i1, i2, i3, i4] : 0 <= i0 <= 7 and 0 <= i1 <= 32 and 0 <= i2 <= 2047 and "
        "64i1 <= i3 <= 2087 and i3 <= 63 + 64i1 and 0 <= i4 <= 255 }")
    assert [gist(a) for a in s.accesses] == [
        "{ S0[i0, i1, i2, i3, i4] -> M0[i3, 256i0 + i4] }",
        "{ S0[i0, i1, i2, i3, i4] -> M1[256i0 + i4, i2] }",
        "{ S0[i0, i1, i2, i3, i4] -> M2[i3, i2] }",
        "{ S0[i0, i1, i2, i3, i4] -> M2[i3, i2] }"]
    last_tile = s.domain.fix_val(isl.dim_type.set, 1, isl.Val.int_from_si(s.domain.get_ctx(), 32))
    rows = last_tile.project_out(isl.dim_type.set, 4, 1).project_out(isl.dim_type.set, 0, 3)
    assert str(rows.coalesce()) == "{ [i3] : 2048 <= i3 <= 2087 }"   # 40 rows
    # every element of A, B and C is touched (A[i][k] for all 2088 x 2048)
    assert s.accesses[0].relation.range().is_equal(
        isl.Set("{ M0[a, b] : 0 <= a < 2088 and 0 <= b < 2048 }"))


def test_paper_listing_with_its_scalar_buffer_is_refused():
    # the listing of section 2.5 keeps the accumulator in a one-element buffer allocated inside
    # the nest: the model refuses the allocation (hoisting it would be legal, but is not ours)
    text = TILED.replace(
        "          affine.for %arg7 = 0 to 256 {\n",
        "          %0 = memref.alloca() : memref<1xf64>\n"
        "          affine.for %arg7 = 0 to 256 {\n")
    with pytest.raises(ScheduleError) as err:
        extract(parse_func(text, filename="tiled.mlir"))
    assert str(err.value) == ("tiled.mlir:9:16: error: 'memref.alloca' op inside the scop: "
                              "allocations are not modelled (hoist them out of the loop nest)")


STEPS = """
func.func @steps(%A: memref<64xf64>, %N: index) {
  affine.for %i = 2 to 17 step 3 {
    affine.for %j = max affine_map<(d0)[s0] -> (d0, s0)>(%i)[%N] to 40 step 4 {
      %v = affine.load %A[%i + %j] : memref<64xf64>
      affine.store %v, %A[%j floordiv 2] : memref<64xf64>
    }
  }
  return
}
"""


def test_non_unit_steps():
    model = extract(parse_func(STEPS))
    (s,) = model.statements
    assert [model.describe_value(p) for p in model.params] == ["%arg1"]
    # i in {2, 5, 8, 11, 14}; j from max(i, N) by 4: an existential per loop
    i_only = s.domain.project_out(isl.dim_type.set, 1, 1)
    assert i_only.fix_val(isl.dim_type.param, 0, isl.Val.int_from_si(i_only.get_ctx(), 0)) \
        .is_equal(isl.Set("[p0] -> { [i] : p0 = 0 and 2 <= i <= 14 and (i - 2) mod 3 = 0 }"))
    assert same_on(s.accesses[1].relation, s.domain,
                   "[p0] -> { S0[i0, i1] -> M0[o0] : -1 + i1 <= 2o0 <= i1 }")
    cross_check(model, (0,), (5,), (13,), (39,), (50,))


IFS = """
func.func @ifs(%A: memref<10x10xf64>, %N: index) {
  %cst = arith.constant 0.0 : f64
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      affine.if affine_set<(d0, d1)[s0] : (d0 - d1 >= 0, s0 - d0 - 1 >= 0)>(%i, %j)[%N] {
        affine.store %cst, %A[%i, %j] : memref<10x10xf64>
      } else {
        %v = affine.load %A[%j, %i] : memref<10x10xf64>
        affine.store %v, %A[%i, %j] : memref<10x10xf64>
      }
    }
  }
  return
}
"""


def test_affine_if_then_and_else():
    model = extract(parse_func(IFS))
    s0, s1 = model.statements
    assert str(s0.domain.coalesce()) == \
        "[p0] -> { S0[i0, i1] : 0 <= i0 <= 9 and i0 < p0 and 0 <= i1 <= 9 and i1 <= i0 }"
    # the else branch is the complement of a conjunction: a union
    assert str(s1.domain.coalesce()) == ("[p0] -> { S1[i0, i1] : i0 >= 0 and i1 <= 9 and "
                                         "((p0 <= i0 <= 9 and i1 >= 0) or (i0 < p0 and i1 > i0)) }")
    assert [(c.name, then) for c, then in s1.conditions] == [("affine.if", False)]
    # both branches share the loop body's sequence: then first, else next
    assert str(s0.schedule.gist_domain(s0.domain)) == "[p0] -> { S0[i0, i1] -> [0, i0, 0, i1, 0] }"
    assert same_on(s1.schedule, s1.domain, "[p0] -> { S1[i0, i1] -> [0, i0, 0, i1, 1] }")
    cross_check(model, (0,), (4,), (10,), (12,))


MM2 = """
func.func @mm2(%A: memref<8x6xf64>, %B: memref<6x7xf64>, %T: memref<8x7xf64>,
               %C: memref<7x5xf64>, %D: memref<8x5xf64>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 7 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<8x6xf64>
        %b = affine.load %B[%k, %j] : memref<6x7xf64>
        %t = affine.load %T[%i, %j] : memref<8x7xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %t, %p : f64
        affine.store %s, %T[%i, %j] : memref<8x7xf64>
      }
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 7 {
        %a = affine.load %T[%i, %k] : memref<8x7xf64>
        %b = affine.load %C[%k, %j] : memref<7x5xf64>
        %d = affine.load %D[%i, %j] : memref<8x5xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %d, %p : f64
        affine.store %s, %D[%i, %j] : memref<8x5xf64>
      }
    }
  }
  return
}
"""


def test_two_nests_2mm():
    func = parse_func(MM2)
    model = extract(func)
    assert len(model.scop_ops) == 2 and all(isinstance(op, AffineForOp) for op in model.scop_ops)
    s0, s1 = model.statements
    assert str(s0.domain) == "{ S0[i0, i1, i2] : 0 <= i0 <= 7 and 0 <= i1 <= 6 and 0 <= i2 <= 5 }"
    assert str(s1.domain) == "{ S1[i0, i1, i2] : 0 <= i0 <= 7 and 0 <= i1 <= 4 and 0 <= i2 <= 6 }"
    assert [gist(a) for a in s1.accesses] == [
        "{ S1[i0, i1, i2] -> M2[i0, i2] }", "{ S1[i0, i1, i2] -> M3[i2, i1] }",
        "{ S1[i0, i1, i2] -> M4[i0, i1] }", "{ S1[i0, i1, i2] -> M4[i0, i1] }"]
    assert {n: model.describe_memref(n) for n in model.memrefs} == \
        {"M0": "%arg0", "M1": "%arg1", "M2": "%arg2", "M3": "%arg3", "M4": "%arg4"}
    assert [str(s.schedule.gist_domain(s.domain)) for s in model.statements] == [
        "{ S0[i0, i1, i2] -> [0, i0, 0, i1, 0, i2, 0] }",
        "{ S1[i0, i1, i2] -> [1, i0, 0, i1, 0, i2, 0] }"]
    assert model.schedule().is_equal(isl.UnionMap.from_map(s0.schedule)
                                      .union(isl.UnionMap.from_map(s1.schedule)))
    assert model.domains().is_equal(isl.UnionSet.from_set(s0.domain)
                                    .union(isl.UnionSet.from_set(s1.domain)))
    # the same statements when the two nests are given explicitly
    explicit = extract(list(model.scop_ops))
    assert [str(s.domain) for s in explicit.statements] == [str(s0.domain), str(s1.domain)]
    with pytest.raises(ValueError, match="consecutive"):
        extract([model.scop_ops[1], model.scop_ops[0]])


def test_imperfect_nest_schedule_positions():
    model = extract(parse_func("""
        func.func @f(%A: memref<4x5xf64>, %C: memref<4x4xf64>) {
          %z = arith.constant 0.0 : f64
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 4 {
              affine.store %z, %C[%i, %j] : memref<4x4xf64>
              affine.for %k = 0 to 5 {
                %a = affine.load %A[%i, %k] : memref<4x5xf64>
                %c = affine.load %C[%i, %j] : memref<4x4xf64>
                %s = arith.addf %a, %c : f64
                affine.store %s, %C[%i, %j] : memref<4x4xf64>
              }
              %x = affine.load %C[%i, %j] : memref<4x4xf64>
              affine.store %x, %C[%j, %i] : memref<4x4xf64>
            }
          }
          return
        }"""))
    got = [str(s.schedule.gist_domain(s.domain)) for s in model.statements]
    assert got == ["{ S0[i0, i1] -> [0, i0, 0, i1, 0, 0, 0] }",
                   "{ S1[i0, i1, i2] -> [0, i0, 0, i1, 1, i2, 0] }",
                   "{ S2[i0, i1] -> [0, i0, 0, i1, 2, 0, 0] }"]
    cross_check(model)


SYMBOLIC = """
func.func @sym(%A: memref<?x?xf64>, %N: index, %M: index) {
  %c1 = arith.constant 1 : index
  affine.for %i = 0 to %N {
    %ii = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %z = arith.constant 0.0 : f64
    affine.for %j = affine_map<(d0) -> (d0)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 4, s0)>(%i)[%M] {
      affine.store %z, %A[%ii, %j + symbol(%c1)] : memref<?x?xf64>
    }
  }
  return
}
"""


def test_symbolic_bounds_and_folded_apply():
    model = extract(parse_func(SYMBOLIC))
    (s,) = model.statements
    assert [model.describe_value(p) for p in model.params] == ["%arg1", "%arg2"]
    assert [model.param_names[p] for p in model.params] == ["p0", "p1"]
    assert str(s.domain) == \
        "[p0, p1] -> { S0[i0, i1] : 0 <= i0 < p0 and i0 <= i1 <= 3 + i0 and i1 < p1 }"
    # the affine.apply and the constant %c1 fold into the subscripts...
    assert gist(s.accesses[0]) == "[p0, p1] -> { S0[i0, i1] -> M0[2i0, 1 + i1] }"
    # ...and the pure ops of the outer body come along with the statement (rematerialized)
    assert [op.name for op in s.ops] == ["affine.apply", "arith.constant", "affine.store"]
    assert [op.name for op in s.group] == ["affine.store"]
    assert str(s.schedule.gist_domain(s.domain)) == \
        "[p0, p1] -> { S0[i0, i1] -> [0, i0, 0, i1, 0] }"
    cross_check(model, (0, 0), (3, 5), (6, 2), (7, 30))


def test_inner_nest_outer_iv_is_a_parameter_with_context():
    func = parse_func(SYMBOLIC)
    outer = func.body.ops[1]
    inner = outer.body.ops[2]
    model = extract(inner)
    assert [model.describe_value(p) for p in model.params] == ["%arg3", "%arg2"]
    (s,) = model.statements
    assert str(s.domain) == "[p0, p1] -> { S0[i0] : p0 <= i0 < p1 and i0 <= 3 + p0 }"
    assert gist(s.accesses[0]) == "[p0, p1] -> { S0[i0] -> M0[2p0, 1 + i0] }"
    # %arg3 runs over [0, %N): the bound on %N is projected out, p0 >= 0 remains
    assert str(model.context()) == "[p0, p1] -> {  : p0 >= 0 }"


def test_vector_accesses_touch_a_range():
    model = extract(parse_func("""
        func.func @v(%A: memref<4x32xf32>, %B: memref<4x32xf32>) {
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 32 step 8 {
              %v = affine.vector_load %A[%i, %j] : memref<4x32xf32>, vector<8xf32>
              affine.vector_store %v, %B[%i, %j] : memref<4x32xf32>, vector<8xf32>
            }
          }
          return
        }"""))
    (s,) = model.statements
    assert gist(s.accesses[0]) == "{ S0[i0, i1] -> M0[i0, o1] : i1 <= o1 <= 7 + i1 }"
    assert s.accesses[1].is_write and s.accesses[1].relation.range().is_equal(
        isl.Set("{ M1[a, b] : 0 <= a < 4 and 0 <= b < 32 }"))
    cross_check(model)


def test_access_relation_of_one_op():
    func = parse_func(STEPS)
    load = next(op for op in func.walk() if op.name == "affine.load")
    acc = access_relation(load)
    assert [v is l.induction_var for v, l in zip(acc.ivs, [op for op in func.walk()
                                                           if isinstance(op, AffineForOp)])] \
        == [True, True]
    assert acc.relation.is_equal(isl.Map(
        "[p0] -> { S[i, j] -> M[i + j] : 2 <= i <= 16 and (i - 2) mod 3 = 0 and j >= i and "
        "j >= p0 and j < 40 and exists (e: j = i + 4e) and i >= p0 }").union(isl.Map(
            "[p0] -> { S[i, j] -> M[i + j] : 2 <= i <= 16 and (i - 2) mod 3 = 0 and j >= i and "
            "j >= p0 and j < 40 and exists (e: j = p0 + 4e) and i < p0 }")))


def test_extraction_does_not_touch_the_ir():
    func = parse_func(MM2)
    module = func.parent_op
    before = print_module(module)
    extract(func)
    assert print_module(module) == before


# ---------------------------------------------------------------------------------------------
# refusals

REFUSALS = {
    "memref.load": ("""
        func.func @f(%A: memref<10xf64>) {
          affine.for %i = 0 to 10 {
            %v = memref.load %A[%i] : memref<10xf64>
            affine.store %v, %A[%i] : memref<10xf64>
          }
          return
        }""", "r.mlir:4:10: error: 'memref.load' op is a non-affine memory access: its "
              "subscripts cannot be analyzed (use affine.load/affine.store)"),
    "call": ("""
        func.func private @g(f64)
        func.func @f(%A: memref<10xf64>) {
          affine.for %i = 0 to 10 {
            %v = affine.load %A[%i] : memref<10xf64>
            func.call @g(%v) : (f64) -> ()
          }
          return
        }""", "r.mlir:6:5: error: 'func.call' op inside the scop: calls are not modelled (the "
              "callee may read or write any memory)"),
    "iter_args": ("""
        func.func @f(%A: memref<10xf64>) -> f64 {
          %z = arith.constant 0.0 : f64
          %r = affine.for %i = 0 to 10 iter_args(%acc = %z) -> (f64) {
            %v = affine.load %A[%i] : memref<10xf64>
            %s = arith.addf %acc, %v : f64
            affine.yield %s : f64
          }
          return %r : f64
        }""", "r.mlir:4:8: error: 'affine.for' op with iter_args (loop-carried values) is not "
              "supported by the polyhedral model yet"),
    "alloc": ("""
        func.func @f(%A: memref<10xf64>) {
          affine.for %i = 0 to 10 {
            %buf = memref.alloc() : memref<1xf64>
            %v = affine.load %A[%i] : memref<10xf64>
            affine.store %v, %buf[0] : memref<1xf64>
          }
          return
        }""", "r.mlir:4:12: error: 'memref.alloc' op inside the scop: allocations are not "
              "modelled (hoist them out of the loop nest)"),
    "region op": ("""
        func.func @f(%A: memref<10xf64>) {
          affine.for %i = 0 to 10 {
            "test.region"() ({
              "test.op"() : () -> ()
            }) : () -> ()
          }
          return
        }""", "r.mlir:4:5: error: 'test.region' op holds regions: only affine.for and affine.if "
              "may be nested inside the scop"),
    "unknown effects": ("""
        func.func @f(%A: memref<10xf64>) {
          affine.for %i = 0 to 10 {
            "test.op"() : () -> ()
          }
          return
        }""", "r.mlir:4:5: error: 'test.op' op inside the scop has unknown memory effects and "
              "cannot be modelled"),
    "arith index": ("""
        func.func @f(%A: memref<10xf64>, %N: index) {
          affine.for %i = 0 to 10 {
            %c1 = arith.constant 1 : index
            %n = arith.addi %N, %c1 : index
            affine.for %j = 0 to %n {
              %v = affine.load %A[%j] : memref<10xf64>
              affine.store %v, %A[%i] : memref<10xf64>
            }
          }
          return
        }""", "r.mlir:6:5: error: 'affine.for' op upper bound uses the result of 'arith.addi' "
              "computed inside the scop: only induction variables, constants, affine.apply and "
              "values defined before the scop can be modelled (hoist it out of the loop nest)"),
    "scalar flow": ("""
        func.func @f(%A: memref<10xf64>, %B: memref<10x10xf64>) {
          affine.for %i = 0 to 10 {
            %v = affine.load %A[%i] : memref<10xf64>
            affine.for %j = 0 to 10 {
              affine.store %v, %B[%i, %j] : memref<10x10xf64>
            }
          }
          return
        }""", "r.mlir:4:10: error: 'affine.load' op result (in S0) is used by 'affine.store' in "
              "S1: values flowing between statements through SSA registers (scalar dependences) "
              "are not modelled; store the value to a memref or recompute it where it is used"),
    "semi-affine": ("""
        func.func @f(%A: memref<100xf64>, %N: index) {
          affine.for %i = 0 to 10 {
            %v = affine.load %A[%i * symbol(%N)] : memref<100xf64>
            affine.store %v, %A[%i] : memref<100xf64>
          }
          return
        }""", "r.mlir:4:10: error: 'affine.load' op subscript `%arg2 * symbol(%arg1)` is not "
              "affine: it multiplies two non-constant terms"),
    "no nest": ("""
        func.func @f(%A: memref<100xf64>) {
          return
        }""", "r.mlir:2:1: error: function @f has no affine loop nest to model"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals(case):
    text, expected = REFUSALS[case]
    func = parse_func(text, name="f", filename="r.mlir")
    with pytest.raises(ScheduleError) as err:
        extract(func)
    assert str(err.value) == expected
    assert err.value.loc is not None


def test_memrefs_with_layout_maps_are_accessed_on_logical_indices():
    model = extract(parse_func("""
        #tiled = affine_map<(d0, d1) -> (d0 floordiv 2, d1, d0 mod 2)>
        func.func @f(%P: memref<6x5xf64, #tiled>, %S: memref<6x5xf64, strided<[10, 1]>>) {
          affine.for %i = 0 to 6 {
            affine.for %j = 0 to 5 {
              %v = affine.load %S[%i, %j] : memref<6x5xf64, strided<[10, 1]>>
              affine.store %v, %P[%i, %j] : memref<6x5xf64, #tiled>
            }
          }
          return
        }"""))
    (s,) = model.statements
    assert [gist(a) for a in s.accesses] == ["{ S0[i0, i1] -> M0[i0, i1] }",
                                             "{ S0[i0, i1] -> M1[i0, i1] }"]
    assert [model.describe_memref(n) for n in model.memrefs] == ["%arg1", "%arg0"]
