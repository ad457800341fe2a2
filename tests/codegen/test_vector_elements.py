"""``vector.extract``/``insert`` (static, dynamic and poison positions), ``vector.shuffle``,
``vector.shape_cast`` and the strided slices, run against numpy on 1-D and 2-D vectors."""

import numpy as np
import pytest

import polyopt


def _shape(s):
    return "x".join(map(str, s))


def _run(body, ins, out_shape, *scalars, scalar_types=()):
    """Load each input array into ``%v0, %v1, ...``, run ``body`` (which defines ``%r``) and
    return ``%r`` stored into an array of ``out_shape``."""
    args = [f"%M{k}: memref<{_shape(a.shape)}xf32>" for k, a in enumerate(ins)]
    args.append(f"%O: memref<{_shape(out_shape)}xf32>")
    args += [f"%s{k}: {t}" for k, t in enumerate(scalar_types)]
    lines = ["    %c0 = arith.constant 0 : index"]
    for k, a in enumerate(ins):
        z = ", ".join(["%c0"] * a.ndim)
        lines.append(f"    %v{k} = vector.load %M{k}[{z}] : memref<{_shape(a.shape)}xf32>, "
                     f"vector<{_shape(a.shape)}xf32>")
    lines.append(body)
    z = ", ".join(["%c0"] * len(out_shape))
    lines.append(f"    vector.store %r, %O[{z}] : memref<{_shape(out_shape)}xf32>, "
                 f"vector<{_shape(out_shape)}xf32>")
    text = (f"func.func @f({', '.join(args)}) {{\n" + "\n".join(lines) +
            "\n    return\n  }\n")
    assert str(polyopt.parse(text)).strip().startswith("module")
    out = np.full(out_shape, -1.0, np.float32)
    polyopt.compile(text)["f"](*ins, out, *scalars)
    return out


A8 = np.arange(8, dtype=np.float32) + 10
B4 = np.arange(4, dtype=np.float32) + 50
W24 = np.arange(8, dtype=np.float32).reshape(2, 4) + 20


@pytest.mark.parametrize("k", [0, 3, 7])
def test_extract_static_and_dynamic_element(k):
    body = (f"    %e = vector.extract %v0[{k}] : f32 from vector<8xf32>\n"
            f"    %d = vector.extract %v0[%s0] : f32 from vector<8xf32>\n"
            f"    %a = arith.addf %e, %d : f32\n"
            f"    %r = vector.broadcast %a : f32 to vector<2xf32>")
    out = _run(body, [A8], (2,), 7 - k, scalar_types=["index"])
    np.testing.assert_array_equal(out, [A8[k] + A8[7 - k]] * 2)


@pytest.mark.parametrize("i, j", [(0, 0), (1, 3), (1, 0)])
def test_extract_from_2d_with_dynamic_outer_position(i, j):
    body = ("    %e = vector.extract %v0[%s0, %s1] : f32 from vector<2x4xf32>\n"
            f"    %row = vector.extract %v0[{i}] : vector<4xf32> from vector<2x4xf32>\n"
            "    %b = vector.broadcast %e : f32 to vector<4xf32>\n"
            "    %r = arith.addf %row, %b : vector<4xf32>")
    out = _run(body, [W24], (4,), i, j, scalar_types=["index", "index"])
    np.testing.assert_array_equal(out, W24[i] + W24[i, j])


@pytest.mark.parametrize("i, j", [(0, 2), (1, 3)])
def test_insert_static_dynamic_and_row(i, j):
    body = ("    %x = arith.constant 99.0 : f32\n"
            f"    %a = vector.insert %x, %v0 [{i}, {j}] : f32 into vector<2x4xf32>\n"
            "    %b = vector.insert %x, %a [%s0, %s1] : f32 into vector<2x4xf32>\n"
            f"    %r = vector.insert %v1, %b [{1 - i}] : vector<4xf32> into vector<2x4xf32>")
    out = _run(body, [W24, B4], (2, 4), 1 - i, 3 - j, scalar_types=["index", "index"])
    want = W24.copy()
    want[i, j] = 99
    want[1 - i, 3 - j] = 99
    want[1 - i] = B4
    np.testing.assert_array_equal(out, want)


def test_insert_into_1d_dynamic():
    body = ("    %x = arith.constant 5.5 : f32\n"
            "    %r = vector.insert %x, %v0 [%s0] : f32 into vector<8xf32>")
    out = _run(body, [A8], (8,), 6, scalar_types=["index"])
    want = A8.copy()
    want[6] = 5.5
    np.testing.assert_array_equal(out, want)


def test_poison_position_runs():
    body = ("    %e = vector.extract %v0[-1] : f32 from vector<8xf32>\n"
            "    %i = vector.insert %e, %v0 [-1] : f32 into vector<8xf32>\n"
            "    %r = vector.extract_strided_slice %i {offsets = [0], sizes = [8], "
            "strides = [1]} : vector<8xf32> to vector<8xf32>")
    np.testing.assert_array_equal(_run(body, [A8], (8,)), A8)


@pytest.mark.parametrize("src, dst", [((2, 4), (8,)), ((8,), (2, 4)), ((2, 4), (4, 2)),
                                      ((1, 8), (8,)), ((8,), (1, 8)), ((2, 4), (1, 2, 4))])
def test_shape_cast_keeps_row_major_order(src, dst):
    a = np.arange(8, dtype=np.float32).reshape(src) * 3 + 1
    body = f"    %r = vector.shape_cast %v0 : vector<{_shape(src)}xf32> to vector<{_shape(dst)}xf32>"
    np.testing.assert_array_equal(_run(body, [a], dst), a.reshape(dst))


@pytest.mark.parametrize("mask", [[0, 4, 1, 5, 2, 6, 3, 7], [7, 7, 0], [3, 12, 8, 1, 15]])
def test_shuffle_1d(mask):
    b = A8 + 100
    body = (f"    %r = vector.shuffle %v0, %v1 [{', '.join(map(str, mask))}] : "
            "vector<8xf32>, vector<8xf32>")
    np.testing.assert_array_equal(_run(body, [A8, b], (len(mask),)),
                                  np.concatenate([A8, b])[mask])


def test_shuffle_operands_of_different_lengths():
    body = "    %r = vector.shuffle %v0, %v1 [9, 0, 11, 7] : vector<8xf32>, vector<4xf32>"
    np.testing.assert_array_equal(_run(body, [A8, B4], (4,)),
                                  np.concatenate([A8, B4])[[9, 0, 11, 7]])


def test_shuffle_2d_rows():
    v = W24 + 100
    body = "    %r = vector.shuffle %v0, %v1 [3, 0, 2] : vector<2x4xf32>, vector<2x4xf32>"
    np.testing.assert_array_equal(_run(body, [W24, v], (3, 4)),
                                  np.concatenate([W24, v])[[3, 0, 2]])


@pytest.mark.parametrize("offset, size", [(0, 4), (2, 4), (5, 3), (7, 1)])
def test_extract_strided_slice_1d(offset, size):
    body = (f"    %r = vector.extract_strided_slice %v0 {{offsets = [{offset}], sizes = [{size}], "
            f"strides = [1]}} : vector<8xf32> to vector<{size}xf32>")
    np.testing.assert_array_equal(_run(body, [A8], (size,)), A8[offset:offset + size])


def test_extract_strided_slice_2d():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    body = ("    %r = vector.extract_strided_slice %v0 {offsets = [1, 2], sizes = [2, 3], "
            "strides = [1, 1]} : vector<4x6xf32> to vector<2x3xf32>")
    np.testing.assert_array_equal(_run(body, [a], (2, 3)), a[1:3, 2:5])
    body = ("    %r = vector.extract_strided_slice %v0 {offsets = [2], sizes = [2], "
            "strides = [1]} : vector<4x6xf32> to vector<2x6xf32>")
    np.testing.assert_array_equal(_run(body, [a], (2, 6)), a[2:4])


@pytest.mark.parametrize("offset", [0, 1, 4])
def test_insert_strided_slice_1d(offset):
    body = (f"    %r = vector.insert_strided_slice %v1, %v0 {{offsets = [{offset}], "
            "strides = [1]} : vector<4xf32> into vector<8xf32>")
    want = A8.copy()
    want[offset:offset + 4] = B4
    np.testing.assert_array_equal(_run(body, [A8, B4], (8,)), want)


def test_insert_strided_slice_2d():
    d = np.arange(24, dtype=np.float32).reshape(4, 6)
    body = ("    %r = vector.insert_strided_slice %v1, %v0 {offsets = [2, 1], "
            "strides = [1, 1]} : vector<2x4xf32> into vector<4x6xf32>")
    want = d.copy()
    want[2:4, 1:5] = W24
    np.testing.assert_array_equal(_run(body, [d, W24], (4, 6)), want)
    body = ("    %r = vector.insert_strided_slice %v1, %v0 {offsets = [3, 2], "
            "strides = [1]} : vector<4xf32> into vector<4x6xf32>")
    want = d.copy()
    want[3, 2:6] = B4
    np.testing.assert_array_equal(_run(body, [d, B4], (4, 6)), want)
