"""Convolutions through ``--hopt`` (issue 7): 2-D and 1-D ones as implicit GEMMs on the matmul
pipeline (packing = im2col one tile at a time), depthwise ones vectorized along the channels;
every flag subset against the numpy reference, the im2col copy's shape, and a hypothesis sweep
of shapes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_conv_ops import DTYPES, check_run, conv_text, random_operands, shapes

import polyopt
from polyopt.pipeline import PipelineOptions, run_passes

FLAGS = ("copy", "unroll", "scalrep", "vect")
ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def case(kind, batch, spatial, c, f, kernel, strides, dilations, elem, hop=False, seed=0,
         **switches):
    si, sk, so = shapes(kind, batch, spatial, c, f, kernel, strides, dilations)
    text = conv_text(kind, si, sk, so, strides, dilations, elem, hop=hop)
    compiled = polyopt.compile(text, **switches)
    check_run(compiled, kind, random_operands(si, sk, so, DTYPES[elem], seed), strides,
              dilations)
    return compiled


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "-".join(f for f, on in zip(FLAGS, c) if on) or "none")
@pytest.mark.parametrize("hop", [False, True])
def test_every_flag_subset_conv2d(combo, hop):
    # channels 16 (a multiple of 8: the split im2col copy) and odd spatial sizes
    case("conv2d", 2, (11, 10), 16, 13, (3, 2), (2, 1), (1, 2), "f32", hop=hop, hopt=True,
         **dict(zip(FLAGS, combo)))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("channels", [3, 24, 64])
def test_conv2d_strides_dilations_channels(elem, stride, dilation, channels):
    case("conv2d", 1, (13, 12), channels, 19, (3, 3), (stride, stride), (dilation, dilation),
         elem, **ALL)


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_conv1d(elem, stride, dilation):
    case("conv1d", 2, (29,), 16, 21, (3,), (stride,), (dilation,), elem, **ALL)
    case("conv1d", 1, (9,), 5, 7, (4,), (stride,), (dilation,), elem, **ALL)


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("channels", [5, 16, 37])
def test_depthwise_vectorized_along_channels(elem, channels):
    compiled = case("depthwise2d", 2, (9, 8), channels, channels, (3, 2), (2, 1), (1, 2), elem,
                    **ALL)
    width = 64 // (4 if elem == "f32" else 8)
    vector_ops = [op for op in compiled.module.walk() if op.name == "affine.vector_load"]
    assert bool(vector_ops) == (channels >= width)


def test_one_by_one_and_a_layer_of_resnet():
    case("conv2d", 1, (14, 14), 256, 64, (1, 1), (1, 1), (1, 1), "f32", **ALL)
    case("conv2d", 1, (16, 16), 64, 64, (3, 3), (1, 1), (1, 1), "f32", **ALL)


def test_im2col_copy_reads_whole_channel_runs():
    """With packing, the A buffer is filled straight from the input: the innermost copy loop
    runs over consecutive channels (no floordiv/mod on its IV), one micro-panel row at a time
    unrolled inside it; the input is never copied whole (no R x Q buffer)."""
    kind, strides, dilations = "conv2d", (1, 1), (1, 1)
    si, sk, so = shapes(kind, 1, (10, 9), 16, 20, (3, 3), strides, dilations)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, "f32"))
    run_passes(module, PipelineOptions(**ALL))
    text = str(module)
    allocs = [line for line in text.splitlines() if "memref.alloc()" in line]
    assert not any("56x144" in a for a in allocs)            # no im2col matrix
    reads = [line for line in text.splitlines() if "affine.load %arg0[" in line]
    assert reads and all(line.split("[")[1].split("]")[0].split(", ")[-1].startswith("%arg")
                         and "mod" not in line.split(", ")[-1] for line in reads)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["conv2d", "conv1d"]), batch=st.integers(1, 2),
       size=st.integers(3, 14), c=st.sampled_from([1, 3, 8, 16, 20]), f=st.integers(1, 40),
       k=st.integers(1, 3), stride=st.integers(1, 2), dilation=st.integers(1, 2),
       elem=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 1000))
def test_hypothesis_shapes(kind, batch, size, c, f, k, stride, dilation, elem, seed):
    ext = dilation * (k - 1) + 1
    if ext > size:
        k = 1
    if kind == "conv2d":
        case(kind, batch, (size, size + 1), c, f, (k, k), (stride, stride),
             (dilation, dilation), elem, seed=seed, **ALL)
    else:
        case(kind, batch, (size,), c, f, (k,), (stride,), (dilation,), elem, seed=seed, **ALL)


def test_k_c_holds_whole_channel_runs_without_padding_the_last_block():
    from polyopt.schedules.conv_gemm import conv_k_c
    assert conv_k_c(64, 576, 128) == 192      # 3 blocks; 128 would pad 576 to 640
    assert conv_k_c(64, 320, 128) == 64       # the only multiple that splits 5 x 64 evenly
    assert conv_k_c(16, 144, 128) == 144      # the whole reduction in one block
    assert conv_k_c(256, 2304, 128) == 128    # more channels than k_c: a divisor of them
    assert conv_k_c(3, 27, 128) == 27
