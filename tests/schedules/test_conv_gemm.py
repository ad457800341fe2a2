"""Convolutions through ``--hopt`` (issue 7): 2-D and 1-D ones as implicit GEMMs on the matmul
pipeline (packing = im2col one tile at a time), depthwise ones vectorized along the channels;
every flag subset against the numpy reference, the im2col copy's shape, and a hypothesis sweep
of shapes."""

from __future__ import annotations

import itertools
import re

import numpy as np
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
    runs over consecutive elements of a window row (kw*C of them with no width dilation, read
    through the input seen as N x H x (W*C); no floordiv/mod on its IV), one micro-panel row
    at a time unrolled inside it; the input is never copied whole (no R x Q buffer).  (63
    output pixels, no multiple of the 4-row tile: A is packed, not read in place.)"""
    import re
    kind, strides, dilations = "conv2d", (1, 1), (1, 1)
    si, sk, so = shapes(kind, 1, (11, 9), 16, 20, (3, 3), strides, dilations)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, "f32"))
    run_passes(module, PipelineOptions(**ALL))
    lines = str(module).splitlines()
    allocs = [line for line in lines if "memref.alloc()" in line]
    assert not any("63x144" in a for a in allocs)            # no im2col matrix
    assert any("memref.collapse_shape %arg0 [[0], [1], [2, 3]] : memref<1x11x9x16xf32> into "
               "memref<1x11x144xf32>" in line for line in lines)
    assert not any("affine.load %arg0[" in line for line in lines)
    reads = 0
    for i, line in enumerate(lines):
        if "affine.load %collapse_shape[" not in line or "1x11x144" not in line:
            continue
        iv = next(re.search(r"affine.for (%arg\d+) = 0 to (\d+)", lines[j])
                  for j in range(i - 1, -1, -1) if "affine.for" in lines[j])
        assert iv and iv.group(2) == "48", line      # runs of 3 x 16 = a whole window row
        last = line.split("[")[1].split("]")[0].split(", ")[-1]
        inner = iv.group(1)
        terms = last.split(" + ")       # the run's IV added, never inside a mod/floordiv
        assert inner in terms and sum(inner in t for t in terms) == 1, line
        reads += 1
    assert reads >= 4       # M_R = 4 rows of the micro-panel, and the remainder rows


def test_dilated_width_keeps_channel_runs():
    """A width dilation splits a window row: the runs are C long, read from the NHWC input
    (by the packing copy: 63 output pixels are no whole 4-row tiles)."""
    kind, strides, dilations = "conv2d", (1, 1), (1, 2)
    si, sk, so = shapes(kind, 1, (11, 11), 16, 20, (3, 3), strides, dilations)
    module = polyopt.parse(conv_text(kind, si, sk, so, strides, dilations, "f32"))
    run_passes(module, PipelineOptions(**ALL))
    text = str(module)
    assert "memref.collapse_shape %arg0" not in text
    reads = [line for line in text.splitlines() if "affine.load %arg0[" in line]
    assert reads and all(line.split("[")[1].split("]")[0].split(", ")[-1].startswith("%arg")
                         and "mod" not in line.split(", ")[-1] for line in reads)


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_resnet_stem_shape_runs_whole_window_rows(elem):
    """ResNet-50's stem (7x7, stride 2, 3 channels) on a small odd image: runs of 7 x 3 = 21
    elements (3 alone is below the 8 a run needs), executed against numpy."""
    compiled = case("conv2d", 1, (23, 20), 3, 13, (7, 7), (2, 2), (1, 1), elem, **ALL)
    assert "memref.collapse_shape %arg0 [[0], [1], [2, 3]]" in str(compiled.module)


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
    assert conv_k_c(64, 320, 128) == 160      # 2 blocks of 160 (runs of 32 channels)
    assert conv_k_c(16, 144, 128) == 144      # the whole reduction in one block
    assert conv_k_c(256, 2304, 128) == 192    # 12 blocks, runs of 64 channels
    assert conv_k_c(3, 27, 128) == 27
    # no multiple of 8 divides 9 x 37: multiples of the channel count, least padding
    assert conv_k_c(37, 333, 80, 100) == 37
    # with the L2 limit expand_conv_tiled passes (Zen 4: 1 MiB L2, f32, model K_C 80)
    assert conv_k_c(64, 576, 80, 2048) == 576       # ResNet-50 conv2_x 3x3: one block
    assert conv_k_c(256, 2304, 80, 512) == 384      # conv4_x: 6 blocks, not 512 (padded)
    assert conv_k_c(512, 4608, 80, 256) == 256      # conv5_x
    assert conv_k_c(64, 576, 80, 40) == 576 // 8    # the limit never goes below k_c


@pytest.mark.parametrize("machine_l2, k_c", [(1 << 20, 576), (64 << 10, 288), (32 << 10, 192),
                                             (16 << 10, 144)])
def test_k_c_follows_l2(monkeypatch, machine_l2, k_c):
    """expand_conv_tiled gives B's K_C x N_C block half of L2: a 3x3 on 64 channels and 16
    filters (q = 576, f32) gets all of q with 1 MiB, 288 with 64 KiB, 192 with 32 KiB; with 16
    KiB, 144, the split of q nearest the model's own K_C (168: GEBP's micro-panel of B in two
    thirds of L1), below which the limit never goes; checked by running it.  The model is Zen
    4's with the L2 changed, whatever the host: on Zen 5's (48 KiB L1d, 2 FMAs a cycle) the
    model runs this small image in GEPB's order, whose K_C is A's micro-panel's in L1."""
    import polyopt.pipeline
    from polyopt.schedules.blis_schedule import MachineModel
    machine = MachineModel(**{**ZEN4, "l2_bytes": machine_l2})
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: machine)
    remarks = []
    si, sk, so = shapes("conv2d", 1, (7, 6), 64, 16, (3, 3), (1, 1), (1, 1))
    text = conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32", hop=True)
    compiled = polyopt.compile(text, remark=lambda loc, m: remarks.append(m), **ALL)
    assert any(f"K_C={k_c}," in m for m in remarks), remarks
    check_run(compiled, "conv2d", random_operands(si, sk, so, DTYPES["f32"], 3), (1, 1), (1, 1))


ZEN4 = dict(vector_bits=512, num_vector_registers=32, l1d_bytes=32 << 10, l2_bytes=1 << 20,
            l3_bytes=32 << 20, l1d_ways=8, l2_ways=8, fma_latency=4, fma_per_cycle=1,
            full_width_fma=False, embedded_broadcast=True, l2_bytes_per_cycle=32.0)


@pytest.mark.parametrize("l2, channels, threads, order, k_c", [
    (1 << 20, 64, 1, "B", 576), (1 << 20, 64, 2, "B", 576), (1 << 20, 128, 1, "B", 384),
    (1 << 20, 128, 2, "B", 576), (1 << 20, 128, 3, "B", 576),
    (256 << 10, 128, 1, "B", 384), (256 << 10, 128, 2, "B", 192)])
def test_the_loop_order_is_the_models(monkeypatch, l2, channels, threads, order, k_c):
    """3x3 convolutions at 28x28 (784 rows) on a Zen 4 model, ResNet-50's conv2_x (64
    channels and filters, q = 576) and conv3_x (128, q = 1152): one thread runs GEPB, the
    order the model picks for their GEMMs (A's 4-row micro-panel in L1, B's K_C x N_C block
    in L2); a team too, with B as one block in half of L2 (the threads then split the
    M_C blocks, each packing its own im2col'd A), its K_C lowered to fit (one thread's K_C of
    conv3_x 384: B's block at most CONV_B_BLOCK_BYTES; with 256 KiB of L2,
    192 for conv3_x, where the model's 384 would have needed two blocks of B, GEPB's team
    then splitting N, each thread packing all of A: it had run GEBP).  Zen 4, 2026-11-27, GFLOPS
    GEPB / GEBP at 56x56 x 64: 109.5 / 102.1 on one thread, 212.8 / 199.6 on two; conv3_x,
    B as one block, 204.4 / 197.9 on two (split by N, 0.86x GEBP)."""
    import polyopt.pipeline
    from polyopt.schedules.blis_schedule import MachineModel, default_blis_params
    machine = MachineModel(**{**ZEN4, "l2_bytes": l2})
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: machine)
    q = 9 * channels
    assert default_blis_params(784, channels, q, 4, machine, {},
                               c_row_bytes=4 * channels).l2_block == "B"
    si, sk, so = shapes("conv2d", 1, (30, 30), channels, channels, (3, 3), (1, 1), (1, 1))
    remarks = []
    compiled = polyopt.compile(conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32"),
                               threads=threads, remark=lambda loc, m: remarks.append(m), **ALL)
    chosen = [m for m in remarks if "BLIS schedule" in m]
    assert len(chosen) == 1 and f"l2_block={order}" in chosen[0] and f"K_C={k_c}," in chosen[0]
    if threads > 1 and order == "B":
        assert f"N_C={channels}," in chosen[0]
    check_within_bound(compiled, random_operands(si, sk, so, DTYPES["f32"], 5), q)


def test_a_team_lowers_k_c_to_keep_b_one_block_on_zen5(monkeypatch):
    """ResNet-50's conv4_x (14x14 output, 256 channels and filters, q = 2304) on two threads
    with Zen 5's model: GEPB's K_C for one thread is 1152 (A's 4-row micro-panel in a quarter
    of 48 KiB), whose 1152 x 256 block of B would overflow half of L2; the team takes K_C 384
    (6 blocks) with B as one block, not GEBP.  Zen 5, two threads, same process: 1.05x-1.26x
    over GEBP with K_C 384 (0.97x-0.98x torch's two threads before, 1.01x-1.03x after)."""
    import polyopt.pipeline
    from polyopt.schedules.blis_schedule import MachineModel
    machine = MachineModel(**{**ZEN4, "l1d_bytes": 48 << 10, "l1d_ways": 12, "l2_ways": 16,
                              "fma_per_cycle": 2, "full_width_fma": True,
                              "l2_bytes_per_cycle": 48.0})
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: machine)
    si, sk, so = shapes("conv2d", 1, (16, 16), 256, 256, (3, 3), (1, 1), (1, 1))
    remarks = []
    compiled = polyopt.compile(conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32"),
                               threads=2, remark=lambda loc, m: remarks.append(m), **ALL)
    chosen = [m for m in remarks if "BLIS schedule" in m]
    assert len(chosen) == 1 and "l2_block=B" in chosen[0] and "K_C=384," in chosen[0] and \
        "N_C=256," in chosen[0], chosen
    check_within_bound(compiled, random_operands(si, sk, so, DTYPES["f32"], 7), 2304)


@pytest.mark.parametrize("threads", [2, 3])
def test_a_short_image_splits_the_filters_on_the_team(monkeypatch, threads):
    """A 3x3 convolution with a 7x7 output (ResNet-50's conv5_x, scaled down: 49 rows of its
    implicit GEMM, fewer than GEPB's 16 micro-panels, and a filter larger than L2) runs in
    GEBP's order on one thread; a team splits N, the filters, each thread packing its own
    block of them with one thread's register tile and K_C (its 49 rows in blocks of 32 and
    17 had left one thread 4 micro-panels and the other 2 and an edge row: conv5_x on two
    Zen 5 threads 250 -> 308-326 GFLOPS), and gives one thread's bits."""
    import polyopt.pipeline
    from polyopt.schedules.blis_schedule import MachineModel
    machine = MachineModel(**{**ZEN4, "l1d_bytes": 48 << 10, "l1d_ways": 12, "l2_ways": 16,
                              "l2_bytes": 256 << 10, "fma_per_cycle": 2,
                              "full_width_fma": True, "l2_bytes_per_cycle": 48.0})
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: machine)
    si, sk, so = shapes("conv2d", 1, (9, 9), 64, 256, (3, 3), (1, 1), (1, 1))
    text = conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32")
    operands = random_operands(si, sk, so, DTYPES["f32"], 8)
    outs, chosen = [], []
    for team in (1, threads):
        remarks = []
        compiled = polyopt.compile(text, threads=team, remark=lambda loc, m: remarks.append(m),
                                   **ALL)
        chosen.append(next(m for m in remarks if "BLIS schedule" in m))
        work = [a.copy() for a in operands]
        compiled["conv"](*work)
        outs.append(work[-1])
        if team > 1:
            assert any("loop over N_C blocks (jc) parallel" in m for m in remarks), remarks
    one, team = chosen
    assert "l2_block=A" in one and "l2_block=B" in team and "M_C=56," in team, chosen
    tile = lambda m: re.findall(r"\b(?:K_C|M_R|N_R|K_U)=\d+", m)
    assert tile(team) == tile(one) and len(tile(one)) == 4, chosen
    assert np.array_equal(outs[0], outs[1])
    check_within_bound(compiled, operands, 576)


def test_the_pass_options_reach_convolutions():
    """``hopt-expand{mr=.. nr=.. kc=..}`` sets the BLIS parameters of a convolution that has
    none of its own, as of a matmul (they were ignored)."""
    from polyopt.passes import run_pipeline
    si, sk, so = shapes("conv2d", 1, (12, 11), 24, 40, (3, 3), (1, 1), (1, 1))
    text = conv_text("conv2d", si, sk, so, (1, 1), (1, 1), "f32")
    module = polyopt.parse(text)
    remarks = []
    run_pipeline(module, "hopt-expand{copy=true unroll=true scalrep=true vect=true mr=3 "
                         "nr=16 kc=72}", remark=lambda loc, m: remarks.append(m))
    assert any("K_C=72," in m and "M_R=3," in m and "N_R=16," in m for m in remarks), remarks
    compiled = polyopt.CompiledModule(module, PipelineOptions(**ALL, threads=1))
    check_within_bound(compiled, random_operands(si, sk, so, DTYPES["f32"], 6), 216)


def check_within_bound(compiled, operands, q):
    """The f32 conv2d (stride and dilation 1) against float64, within q + 1 units of
    roundoff of the sum of |products| (and |O|)."""
    from conv_reference import conv_reference
    i, k, o = operands
    want = conv_reference("conv2d", i, k, o, (1, 1), (1, 1))
    mags = conv_reference("conv2d", np.abs(i), np.abs(k), np.abs(o), (1, 1), (1, 1))
    got = o.copy()
    compiled["conv"](i, k, got)
    assert (np.abs(got - want) <= (q + 1) * 2.0 ** -24 * mags).all()


VIEW_CONVS = {
    # a slice of the channels: a pixel's channels are contiguous, the row's pixels are not
    "channel slice": ("""func.func @f(%X: memref<1x5x9x7xf32>, %K: memref<2x3x4x6xf32>, %O: memref<1x4x7x6xf32>) {
  %sv = memref.subview %X[0, 0, 0, 1] [1, 5, 9, 4] [1, 1, 1, 1] : memref<1x5x9x7xf32> to memref<1x5x9x4xf32, strided<[315, 63, 7, 1], offset: 1>>
  hop.conv2d %sv, %K, %O {strides = [1, 1], dilations = [1, 1]} : (memref<1x5x9x4xf32, strided<[315, 63, 7, 1], offset: 1>>, memref<2x3x4x6xf32>, memref<1x4x7x6xf32>)
  return
}""", (1, 5, 9, 7), lambda x: x[..., 1:5], (2, 3, 4, 6), (1, 4, 7, 6)),
    # every other column
    "column stride": ("""func.func @f(%X: memref<1x6x12x8xf32>, %K: memref<2x3x8x5xf32>, %O: memref<1x5x4x5xf32>) {
  %sv = memref.subview %X[0, 0, 0, 0] [1, 6, 6, 8] [1, 1, 2, 1] : memref<1x6x12x8xf32> to memref<1x6x6x8xf32, strided<[576, 96, 16, 1]>>
  hop.conv2d %sv, %K, %O {strides = [1, 1], dilations = [1, 1]} : (memref<1x6x6x8xf32, strided<[576, 96, 16, 1]>>, memref<2x3x8x5xf32>, memref<1x5x4x5xf32>)
  return
}""", (1, 6, 12, 8), lambda x: x[:, :, ::2, :], (2, 3, 8, 5), (1, 5, 4, 5)),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(VIEW_CONVS))
def test_a_convolution_of_a_view_whose_width_and_channels_do_not_fold(name, threads):
    """The im2col copy read window rows through the input with W and C folded into one
    dimension, which a view like these cannot be: packing failed with an internal
    'cannot collapse' (a fuzzer's find).  They read pixel by pixel now."""
    text, xshape, view, kshape, oshape = VIEW_CONVS[name]
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, xshape).astype(np.float32)
    k = rng.uniform(-1, 1, kshape).astype(np.float32)
    v = view(x)
    kh, kw = kshape[:2]
    ref = np.zeros(oshape, np.float64)
    for p in range(kh):
        for q in range(kw):
            ref += np.einsum("nhwc,cf->nhwf", v[:, p:p + oshape[1], q:q + oshape[2], :],
                             k[p, q].astype(np.float64))
    o = np.zeros(oshape, np.float32)
    polyopt.compile(text, hopt=True, copy=True, unroll=True, scalrep=True, vect=True,
                    threads=threads)["f"](x, k, o)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
