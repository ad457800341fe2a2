"""``vector.transpose``, ``vector.outerproduct`` and ``vector.contract`` lowered to LLVM: run
by polyopt and by mlir-runner-22 on the same programs (odd sizes, every kind, with and without
an accumulator, matmul-like, batched and dot-product contractions, mixed element types) and
against numpy.  Values are small integers, so that every float result is exact whatever the
order or fusion of the arithmetic."""

import numpy as np
import pytest

from upstream_mlir import lower_and_run
from vector_programs import (UPSTREAM_OUTERPRODUCT_PASSES, Program, assert_runs_as_upstream,
                             constant, vector_type)


def _numbers(out):
    return [float(x) for x in out.replace("(", " ").replace(")", " ").replace(",", " ").split()]


def _ints(shape, seed, lo=-4, hi=5):
    return np.random.default_rng(seed).integers(lo, hi, shape)


@pytest.mark.parametrize("shape, perm", [((2, 3), (1, 0)), ((3, 1, 5), (2, 0, 1)),
                                         ((2, 3, 4), (0, 2, 1)), ((5,), (0,)),
                                         ((2, 3, 2), (0, 1, 2))])
def test_transpose_as_upstream_and_numpy(tmp_path, capfd, shape, perm):
    a = _ints(shape, 1)
    dst = tuple(shape[k] for k in perm)
    p = Program()
    p.add(constant("%a", a, "f32"),
          f"  %t = vector.transpose %a, [{', '.join(map(str, perm))}] : "
          f"{vector_type(shape, 'f32')} to {vector_type(dst, 'f32')}",
          f"  vector.print %t : {vector_type(dst, 'f32')}")
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    assert _numbers(out) == list(np.transpose(a, perm).reshape(-1))


KINDS = {  # kind: (element type, numpy combining function)
    "add": ("f32", np.add), "mul": ("i32", np.multiply),
    "minsi": ("i32", np.minimum), "maxui": ("i16", None), "minnumf": ("f64", np.fmin),
    "maximumf": ("f32", np.maximum), "and": ("i8", np.bitwise_and), "xor": ("i64", np.bitwise_xor),
    "or": ("i32", np.bitwise_or), "minui": ("i32", None), "maxsi": ("i8", np.maximum),
    "maxnumf": ("f32", np.fmax), "minimumf": ("f64", np.minimum),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("form", ["outer", "axpy"])
def test_outerproduct_with_an_accumulator_as_upstream(tmp_path, capfd, kind, form):
    elem, fn = KINDS[kind]
    m, n = 3, 5
    a, b = _ints(m, 2), _ints(n, 3)
    shape = (m, n) if form == "outer" else (m,)
    acc = _ints(shape, 4)
    p = Program()
    p.add(constant("%a", a, elem), constant("%acc", acc, elem))
    if form == "outer":
        p.add(constant("%b", b, elem))
        rhs, rhs_t = "%b", vector_type((n,), elem)
    else:
        p.add(f"  %b = arith.constant {b[0]}{'.0' if elem[0] == 'f' else ''} : {elem}")
        rhs, rhs_t = "%b", elem
    p.add(f"  %r = vector.outerproduct %a, {rhs}, %acc {{kind = #vector.kind<{kind}>}} : "
          f"{vector_type((m,), elem)}, {rhs_t}",
          f"  vector.print %r : {vector_type(shape, elem)}")
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    if fn is not None:
        prod = np.outer(a, b) if form == "outer" else a * b[0]
        assert _numbers(out) == list(fn(acc, prod).reshape(-1).astype(float))


@pytest.mark.parametrize("elem", ["f32", "i32", "f64"])
@pytest.mark.parametrize("form", ["outer", "axpy"])
def test_outerproduct_without_accumulator_is_the_product(tmp_path, capfd, elem, form):
    a, b = _ints(4, 5), _ints(3, 6)
    p = Program()
    p.add(constant("%a", a, elem))
    if form == "outer":
        p.add(constant("%b", b, elem), f"  %r = vector.outerproduct %a, %b : "
              f"{vector_type((4,), elem)}, {vector_type((3,), elem)}",
              f"  vector.print %r : {vector_type((4, 3), elem)}")
        want = np.outer(a, b)
    else:
        p.add(f"  %b = arith.constant {b[0]}{'.0' if elem[0] == 'f' else ''} : {elem}",
              f"  %r = vector.outerproduct %a, %b : {vector_type((4,), elem)}, {elem}",
              f"  vector.print %r : {vector_type((4,), elem)}")
        want = a * b[0]
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    assert _numbers(out) == list(want.reshape(-1).astype(float))


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_outerproduct_add_on_16_bit_floats_as_upstream(tmp_path, capfd, elem):
    p = Program()
    p.add(constant("%a", [1.5, -2, 3], elem), constant("%b", [4, 0.25], elem),
          constant("%acc", [[1, 2], [3, 4], [5, 6]], elem),
          f"  %r = vector.outerproduct %a, %b, %acc {{kind = #vector.kind<add>}} : "
          f"vector<3x{elem}>, vector<2x{elem}>",
          f"  vector.print %r : vector<3x2x{elem}>")
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    assert _numbers(out) == [7, 2.375, -5, 3.5, 17, 6.75]


def test_outerproduct_add_on_floats_is_fused(tmp_path, capfd):
    # (1 + 2^-12)(1 - 2^-12) - 1 = -2^-24: a separate f32 multiply rounds the product to 1
    p = Program()
    p.add("  %a = arith.constant dense<[1.000244140625, 2.0]> : vector<2xf32>",
          "  %b = arith.constant 0.999755859375 : f32",
          "  %acc = arith.constant dense<[-1.0, 0.0]> : vector<2xf32>",
          "  %r = vector.outerproduct %a, %b, %acc {kind = #vector.kind<add>} : vector<2xf32>, "
          "f32",
          "  %bits = arith.bitcast %r : vector<2xf32> to vector<2xi32>",
          "  vector.print %bits : vector<2xi32>")
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    assert _numbers(out)[0] == np.float32(-2.0 ** -24).view(np.int32)


def _affine(dims, results):
    return f"affine_map<({', '.join(dims)}) -> ({', '.join(results)})>"


def _contract_program(dims, lhs, rhs, acc, iters, sizes, kind, lhs_elem, acc_elem, seed):
    """A contraction over loops ``dims`` (letters) of sizes ``sizes``; ``lhs``/``rhs``/``acc``
    are the loops each indexes, in order; returns the program and the numpy operands."""
    size = dict(zip(dims, sizes))
    shapes = [tuple(size[d] for d in s) for s in (lhs, rhs, acc)]
    x, y = _ints(shapes[0], seed), _ints(shapes[1], seed + 1)
    z = _ints(shapes[2], seed + 2)
    p = Program()
    p.add(constant("%x", x, lhs_elem), constant("%y", y, lhs_elem))
    acc_t = vector_type(shapes[2], acc_elem) if acc else acc_elem
    if acc:
        p.add(constant("%z", z, acc_elem))
    else:
        p.add(f"  %z = arith.constant {int(z)}{'.0' if acc_elem[0] == 'f' else ''} : {acc_elem}")
    maps = ", ".join(_affine(dims, list(s)) for s in (lhs, rhs, acc))
    its = ", ".join(f'"{t}"' for t in iters)
    p.add(f"  %r = vector.contract {{indexing_maps = [{maps}], iterator_types = [{its}], "
          f"kind = #vector.kind<{kind}>}} %x, %y, %z : {vector_type(shapes[0], lhs_elem)}, "
          f"{vector_type(shapes[1], lhs_elem)} into {acc_t}",
          f"  vector.print %r : {acc_t}")
    return p.text(), x, y, z


CONTRACTS = {
    # name: (dims, lhs, rhs, acc, iterator types, sizes, einsum)
    "matmul": ("ijk", "ik", "kj", "ij", "ppr", (3, 5, 4), "ik,kj->ij"),
    "matmul transposed B": ("ijk", "ik", "jk", "ij", "ppr", (2, 3, 7), "ik,jk->ij"),
    "matmul transposed C": ("ijk", "ik", "kj", "ji", "ppr", (3, 2, 5), "ik,kj->ji"),
    "matvec": ("ik", "ik", "k", "i", "pr", (5, 3), "ik,k->i"),
    "dot": ("k", "k", "k", "", "r", (7,), "k,k->"),
    "batched": ("bijk", "bik", "bkj", "bij", "pppr", (2, 3, 2, 3), "bik,bkj->bij"),
    "two reductions": ("ikl", "ikl", "lk", "i", "prr", (3, 4, 2), "ikl,lk->i"),
}


@pytest.mark.parametrize("case", list(CONTRACTS))
@pytest.mark.parametrize("elem", ["f32", "i32"])
def test_contract_as_upstream_and_numpy(tmp_path, capfd, case, elem):
    dims, lhs, rhs, acc, iters, sizes, einsum = CONTRACTS[case]
    iters = ["parallel" if t == "p" else "reduction" for t in iters]
    text, x, y, z = _contract_program(dims, lhs, rhs, acc, iters, sizes, "add", elem, elem, 7)
    out = assert_runs_as_upstream(tmp_path, capfd, text)
    assert _numbers(out) == list((z + np.einsum(einsum, x, y)).reshape(-1).astype(float))
    assert out == lower_and_run(text, UPSTREAM_OUTERPRODUCT_PASSES)


@pytest.mark.parametrize("kind, elem", [("mul", "i32"), ("maxsi", "i32"), ("minnumf", "f32"),
                                        ("maximumf", "f64"), ("xor", "i8"), ("minui", "i16")])
def test_contract_kinds_as_upstream(tmp_path, capfd, kind, elem):
    text, *_ = _contract_program("ijk", "ik", "kj", "ij", ["parallel", "parallel", "reduction"],
                                 (2, 3, 3), kind, elem, elem, 11)
    assert_runs_as_upstream(tmp_path, capfd, text, UPSTREAM_OUTERPRODUCT_PASSES)


@pytest.mark.parametrize("lhs_elem, acc_elem", [("i8", "i32"), ("i16", "i64"), ("f32", "f64")])
def test_contract_extends_narrow_operands_as_upstream(tmp_path, capfd, lhs_elem, acc_elem):
    text, x, y, z = _contract_program("ijk", "ik", "kj", "ij",
                                      ["parallel", "parallel", "reduction"], (2, 3, 5), "add",
                                      lhs_elem, acc_elem, 3)
    out = assert_runs_as_upstream(tmp_path, capfd, text, UPSTREAM_OUTERPRODUCT_PASSES)
    assert _numbers(out) == list((z + x @ y).reshape(-1).astype(float))


def test_what_is_not_lowered_is_a_located_error(tmp_path, capfd):
    from polyopt.cli import main
    text = ("func.func @main(%a: vector<2x3xf16>, %b: vector<3xf16>, %c: vector<2xf16>) {\n"
            "  %r = vector.contract {indexing_maps = [affine_map<(i, k) -> (i, k)>, "
            "affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = "
            "[\"parallel\", \"reduction\"]} %a, %b, %c : vector<2x3xf16>, vector<3xf16> into "
            "vector<2xf16>\n  return\n}\n")
    path = tmp_path / "f16.mlir"
    path.write_text(text)
    assert main(["run", str(path)]) == 1
    assert capfd.readouterr().err.splitlines()[0] == (
        f"{path}:2:8: error: 'vector.contract': a contraction into 'vector<2xf16>' is not "
        "supported (16-bit floats)")


@pytest.mark.parametrize("case", ["matmul", "matvec", "dot", "batched", "two reductions"])
@pytest.mark.parametrize("elem", ["f32", "i32"])
@pytest.mark.parametrize("seed", [0, 1])
def test_masked_contract_as_upstream_and_numpy(tmp_path, capfd, case, elem, seed):
    dims, lhs, rhs, acc, iters, sizes, einsum = CONTRACTS[case]
    iters = ["parallel" if t == "p" else "reduction" for t in iters]
    text, x, y, z = _contract_program(dims, lhs, rhs, acc, iters, sizes, "add", elem, elem, 5)
    mask = np.random.default_rng(seed).integers(0, 2, sizes).astype(bool)
    mask_t = vector_type(sizes, "i1")
    text = text.replace("  %r = vector.contract", constant("%mask", mask, "i1") +
                        "\n  %r = vector.mask %mask { vector.contract")
    acc_t = vector_type([dict(zip(dims, sizes))[d] for d in acc], elem) if acc else elem
    text = text.replace(f"into {acc_t}\n", f"into {acc_t} }} : {mask_t} -> {acc_t}\n", 1)
    out = assert_runs_as_upstream(tmp_path, capfd, text)
    # numpy: the masked-off iterations contribute nothing
    full = np.einsum(f"{lhs},{rhs}->{dims}", x, y) * mask
    want = z + np.einsum(f"{dims}->{acc}", full)
    assert _numbers(out) == list(np.ravel(want).astype(float))


@pytest.mark.parametrize("kind, elem", [("add", "f32"), ("maxnumf", "f64"), ("mul", "i32")])
@pytest.mark.parametrize("form", ["outer", "axpy", "no accumulator"])
def test_masked_outerproduct_as_upstream_and_numpy(tmp_path, capfd, kind, elem, form):
    a, b = _ints(3, 8), _ints(4, 9)
    shape = (3,) if form == "axpy" else (3, 4)
    acc = _ints(shape, 10)
    mask = np.random.default_rng(11).integers(0, 2, shape).astype(bool)
    p = Program()
    p.add(constant("%a", a, elem), constant("%acc", acc, elem), constant("%m", mask, "i1"))
    if form == "axpy":
        p.add(f"  %b = arith.constant {b[0]}{'.0' if elem[0] == 'f' else ''} : {elem}")
        rhs_t, prod = elem, a * b[0]
    else:
        p.add(constant("%b", b, elem))
        rhs_t, prod = vector_type((4,), elem), np.outer(a, b)
    acc_part = "" if form == "no accumulator" else f", %acc {{kind = #vector.kind<{kind}>}}"
    p.add(f"  %r = vector.mask %m {{ vector.outerproduct %a, %b{acc_part} : "
          f"{vector_type((3,), elem)}, {rhs_t} }} : {vector_type(shape, 'i1')} -> "
          f"{vector_type(shape, elem)}",
          f"  vector.print %r : {vector_type(shape, elem)}")
    out = assert_runs_as_upstream(tmp_path, capfd, p.text())
    fn = {"add": np.add, "maxnumf": np.fmax, "mul": np.multiply}[kind]
    # without an accumulator the masked-off elements are undefined: upstream and polyopt
    # leave the product there
    want = prod if form == "no accumulator" else np.where(mask, fn(acc, prod), acc)
    assert _numbers(out) == list(np.ravel(want).astype(float))


def test_masked_ops_other_than_contract_are_a_located_error(tmp_path, capfd):
    from polyopt.cli import main
    text = """func.func @main(%A: memref<8xf32>, %m: vector<4xi1>) {
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %r = vector.mask %m { vector.transfer_read %A[%c0], %p : memref<8xf32>, vector<4xf32> } : vector<4xi1> -> vector<4xf32>
  return
}
"""
    path = tmp_path / "masked.mlir"
    path.write_text(text)
    assert main(["run", str(path)]) == 1
    assert capfd.readouterr().err.splitlines()[0] == (
        f"{path}:4:8: error: 'vector.mask': only a masked 'vector.contract' or "
        "'vector.outerproduct' is supported, got 'vector.transfer_read'")
