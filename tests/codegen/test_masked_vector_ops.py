"""``vector.maskedload``/``maskedstore`` and ``vector.gather``/``scatter`` lowered to LLVM's
masked intrinsics: run by polyopt and by mlir-runner-22 on the same program (odd sizes, lanes
off, pass-through values, runs that end past the memref where the mask turns them off), and
checked against numpy."""

import numpy as np
import pytest

from run_helpers import polyopt_run
from vector_programs import Program, assert_runs_as_upstream, constant, vector_type

MASKS = {
    "all on": [1, 1, 1, 1, 1],
    "some off": [1, 0, 1, 1, 0],
    "all off": [0, 0, 0, 0, 0],
}


def _masked_load_program(elem, start, mask, data):
    p = Program()
    n = len(mask)
    t = p.memref("%A", data, elem)
    p.add(constant("%m", np.array(mask, bool), "i1"),
          constant("%pass", np.arange(n) * 3 + 100, elem),
          f"  %v = vector.maskedload %A[{p.index(start)}], %m, %pass : {t}, vector<{n}xi1>, "
          f"{vector_type((n,), elem)} into {vector_type((n,), elem)}",
          f"  vector.print %v : {vector_type((n,), elem)}")
    return p.text()


@pytest.mark.parametrize("elem", ["f32", "f64", "i32", "i8"])
@pytest.mark.parametrize("mask", list(MASKS), ids=list(MASKS))
def test_maskedload_as_upstream_and_numpy(tmp_path, capfd, elem, mask):
    data = np.arange(7) * 2 + 1
    bits = MASKS[mask]
    out = assert_runs_as_upstream(tmp_path, capfd, _masked_load_program(elem, 1, bits, data))
    want = [data[1 + k] if on else k * 3 + 100 for k, on in enumerate(bits)]
    assert [float(x) for x in out.strip("( )\n").split(", ")] == want


def test_maskedload_past_the_end_with_the_lanes_off(tmp_path, capfd):
    # lanes 3 and 4 would read A[7] and A[8] of a memref<7xf32>: the mask turns them off
    data = np.arange(7) + 1
    out = assert_runs_as_upstream(tmp_path, capfd,
                                  _masked_load_program("f32", 4, [1, 1, 1, 0, 0], data))
    assert out == "( 5, 6, 7, 109, 112 )\n"


def _masked_store_program(elem, rows, start, mask, value):
    p = Program()
    data = np.arange(rows * 5).reshape(rows, 5)
    t = p.memref("%A", data, elem)
    n = len(mask)
    p.add(constant("%m", np.array(mask, bool), "i1"),
          constant("%v", np.array(value), elem),
          f"  vector.maskedstore %A[{p.index(start[0])}, {p.index(start[1])}], %m, %v : {t}, "
          f"vector<{n}xi1>, {vector_type((n,), elem)}")
    p.print_memref("%A", data.shape, elem)
    return p.text(), data


@pytest.mark.parametrize("elem", ["f32", "i64", "i16"])
@pytest.mark.parametrize("mask", list(MASKS), ids=list(MASKS))
def test_maskedstore_as_upstream_and_numpy(tmp_path, capfd, elem, mask):
    bits = MASKS[mask]
    value = [-1, -2, -3, -4, -5]
    text, data = _masked_store_program(elem, 3, (1, 0), bits, value)
    out = assert_runs_as_upstream(tmp_path, capfd, text)
    want = data.copy()
    for k, on in enumerate(bits):
        if on:
            want[1, k] = value[k]
    np.testing.assert_array_equal(np.array(_numbers(out)).reshape(want.shape), want)


def test_maskedstore_and_load_of_i1_bytes(tmp_path, capfd):
    # against numpy only: polyopt keeps an i1 memref as one byte per element (numpy's bool),
    # where upstream's vector.store packs a vector<6xi1> into bits and its masked ops do not
    p = Program()
    t = p.memref("%A", np.array([True, False, True, False, True, True]), "i1")
    p.add(constant("%m", np.array([1, 1, 0], bool), "i1"),
          constant("%v", np.array([0, 1, 0], bool), "i1"),
          f"  vector.maskedstore %A[{p.index(2)}], %m, %v : {t}, vector<3xi1>, vector<3xi1>",
          f"  %r = vector.maskedload %A[{p.index(1)}], %m, %v : {t}, vector<3xi1>, "
          "vector<3xi1> into vector<3xi1>",
          "  vector.print %r : vector<3xi1>")
    p.print_memref("%A", (6,), "i1")
    # A[2:4] = [0, 1]; then lanes A[1], A[2] and the pass-through's lane 2
    assert polyopt_run(tmp_path, capfd, p.text()) == "( 0, 0, 0 )\n( 1, 0, 0, 1, 1, 1 )\n"


def _gather_program(elem, shape, base, offsets, mask, offset_elem="i32"):
    p = Program()
    data = np.arange(int(np.prod(shape))).reshape(shape) * 10 + 1
    t = p.memref("%A", data, elem)
    offsets = np.array(offsets)
    vs = offsets.shape
    p.add(constant("%idx", offsets, offset_elem),
          constant("%m", np.array(mask, bool), "i1"),
          constant("%pass", -np.arange(offsets.size).reshape(vs) - 1, elem),
          f"  %g = vector.gather %A[{', '.join(p.index(i) for i in base)}] [%idx], %m, %pass : "
          f"{t}, {vector_type(vs, offset_elem)}, {vector_type(vs, 'i1')}, {vector_type(vs, elem)}"
          f" into {vector_type(vs, elem)}",
          f"  vector.print %g : {vector_type(vs, elem)}")
    return p.text(), data


def _numbers(out):
    return [float(x) for x in out.replace("(", "").replace(")", "").replace("\n", ",").split(",")
            if x.strip()]


GATHERS = {
    # name: (memref shape, base indices, offsets, mask)
    "1-D": ((9,), (2,), [6, 0, 3, 3, -2], [1, 1, 0, 1, 1]),
    "past a row": ((3, 4), (1, 1), [0, 3, 6, -4], [1, 1, 1, 1]),
    "lanes off out of bounds": ((5,), (0,), [4, 100, -100, 1], [1, 0, 0, 1]),
    "2-D offsets": ((4, 3), (0, 2), [[0, 1, 2], [9, -2, 4]], [[1, 0, 1], [1, 1, 0]]),
}


@pytest.mark.parametrize("elem", ["f32", "i64"])
@pytest.mark.parametrize("offset_elem", ["i32", "index"])
@pytest.mark.parametrize("case", list(GATHERS))
def test_gather_as_upstream_and_numpy(tmp_path, capfd, elem, offset_elem, case):
    shape, base, offsets, mask = GATHERS[case]
    text, data = _gather_program(elem, shape, base, offsets, mask, offset_elem)
    out = assert_runs_as_upstream(tmp_path, capfd, text)
    flat = data.reshape(-1)
    start = int(np.ravel_multi_index(base, shape))
    off, on = np.array(offsets).reshape(-1), np.array(mask).reshape(-1)
    want = [flat[start + o] if m else -k - 1 for k, (o, m) in enumerate(zip(off, on))]
    assert _numbers(out) == want


def _scatter_program(elem, shape, base, offsets, mask, values):
    p = Program()
    data = np.arange(int(np.prod(shape))).reshape(shape)
    t = p.memref("%A", data, elem)
    offsets = np.array(offsets)
    vs = offsets.shape
    p.add(constant("%idx", offsets, "i32"),
          constant("%m", np.array(mask, bool), "i1"),
          constant("%v", np.array(values), elem),
          f"  vector.scatter %A[{', '.join(p.index(i) for i in base)}] [%idx], %m, %v : {t}, "
          f"{vector_type(vs, 'i32')}, {vector_type(vs, 'i1')}, {vector_type(vs, elem)}")
    p.print_memref("%A", shape, elem)
    return p.text(), data


SCATTERS = {
    # name: (memref shape, base, offsets, mask, values)
    "1-D": ((7,), (1,), [5, 0, 2, 3], [1, 1, 0, 1], [-1, -2, -3, -4]),
    # two lanes write A[2]: the later lane's value stays (LLVM's order)
    "same address twice": ((5,), (0,), [2, 4, 2], [1, 1, 1], [-1, -2, -3]),
    "2-D": ((3, 3), (1, 0), [[0, 4, -3], [1, 1, 5]], [[1, 1, 1], [0, 1, 0]],
            [[-1, -2, -3], [-4, -5, -6]]),
}


@pytest.mark.parametrize("elem", ["f64", "i32"])
@pytest.mark.parametrize("case", list(SCATTERS))
def test_scatter_as_upstream_and_numpy(tmp_path, capfd, elem, case):
    shape, base, offsets, mask, values = SCATTERS[case]
    text, data = _scatter_program(elem, shape, base, offsets, mask, values)
    if np.ndim(offsets) > 1:   # upstream unrolls an n-D gather but leaves an n-D scatter as is
        out = polyopt_run(tmp_path, capfd, text)
    else:
        out = assert_runs_as_upstream(tmp_path, capfd, text)
    want = data.reshape(-1).copy()
    start = int(np.ravel_multi_index(base, shape))
    for o, m, v in zip(np.ravel(offsets), np.ravel(mask), np.ravel(values)):
        if m:
            want[start + o] = v
    assert _numbers(out) == list(want)


REFUSED = {
    "n-D maskedload": (
        "%x = vector.maskedload %A[%c0, %c0], %m, %p : memref<4x4xf32>, vector<2x4xi1>, "
        "vector<2x4xf32> into vector<2x4xf32>", "memref<4x4xf32>", "vector<2x4x",
        "'vector.maskedload': an n-D vector ('vector<2x4xf32>') is not supported (MLIR's "
        "convert-vector-to-llvm lowers 1-D ones only)"),
    "gather across a strided dim": (
        "%x = vector.gather %A[%c0, %c0] [%i], %m, %p : memref<4x4xf32, strided<[1, 4]>>, "
        "vector<4xi32>, vector<4xi1>, vector<4xf32> into vector<4xf32>",
        "memref<4x4xf32, strided<[1, 4]>>", "vector<4x",
        "'vector.gather': the most minor dimension of 'memref<4x4xf32, strided<[1, 4]>>' must "
        "have unit stride"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_is_not_lowered_is_a_located_error(tmp_path, capfd, case):
    from polyopt.cli import main
    from upstream_mlir import mlir_opt
    op, mt, vt, message = REFUSED[case]
    text = (f"func.func @main(%A: {mt}) {{\n  %c0 = arith.constant 0 : index\n"
            f"  %m = arith.constant dense<true> : {vt}i1>\n"
            f"  %p = arith.constant dense<1.0> : {vt}f32>\n"
            f"  %i = arith.constant dense<1> : {vt}i32>\n  {op}\n  return\n}}\n")
    mlir_opt(text)      # valid MLIR
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert main(["run", str(path)]) == 1
    err = capfd.readouterr().err
    assert err.splitlines()[0] == f"{path}:6:8: error: {message}"


def test_on_numpy_arrays_with_dynamic_sizes_and_views():
    """The memref's descriptor (sizes, a subview's offset and strides) addresses the lanes."""
    import polyopt
    text = """func.func @f(%A: memref<?x?xf32>, %out: memref<4x6xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %m = arith.constant dense<[true, false, true, true, false, true]> : vector<6xi1>
  %pass = arith.constant dense<-1.0> : vector<6xf32>
  %off = arith.constant dense<[0, 2, 4, 7, 1, -3]> : vector<6xi32>
  %V = memref.subview %A[1, 1] [3, 4] [1, 1] : memref<?x?xf32> to memref<3x4xf32, strided<[?, 1], offset: ?>>
  %a = vector.maskedload %A[%i, %c1], %m, %pass : memref<?x?xf32>, vector<6xi1>, vector<6xf32> into vector<6xf32>
  vector.store %a, %out[%c0, %c0] : memref<4x6xf32>, vector<6xf32>
  %b = vector.gather %V[%c1, %c1] [%off], %m, %pass : memref<3x4xf32, strided<[?, 1], offset: ?>>, vector<6xi32>, vector<6xi1>, vector<6xf32> into vector<6xf32>
  vector.store %b, %out[%c1, %c0] : memref<4x6xf32>, vector<6xf32>
  %ten = arith.constant dense<10.0> : vector<6xf32>
  vector.scatter %V[%c2, %c0] [%off], %m, %ten : memref<3x4xf32, strided<[?, 1], offset: ?>>, vector<6xi32>, vector<6xi1>, vector<6xf32>
  vector.maskedstore %A[%c3, %c0], %m, %ten : memref<?x?xf32>, vector<6xi1>, vector<6xf32>
  return
}
"""
    from upstream_mlir import mlir_opt
    mlir_opt(text)      # valid MLIR 22
    f = polyopt.compile(text)["f"]
    a = np.arange(5 * 9, dtype=np.float32).reshape(5, 9)
    before = a.copy()
    out = np.zeros((4, 6), np.float32)
    f(a, out, 2)
    m = np.array([1, 0, 1, 1, 0, 1], bool)
    off = np.array([0, 2, 4, 7, 1, -3])
    np.testing.assert_array_equal(out[0], np.where(m, before[2, 1:7], -1))
    flat = before.reshape(-1)
    base = 2 * 9 + 2                # V[1, 1] is A[2, 2]; V's rows are A's (stride 9)
    np.testing.assert_array_equal(out[1], np.where(m, flat[base + off], -1))
    want = before.reshape(-1).copy()
    want[(3 * 9 + 1 + off)[m]] = 10      # V[2, 0] is A[3, 1]
    want = want.reshape(5, 9)
    want[3, :6][m] = 10
    np.testing.assert_array_equal(a, want)
