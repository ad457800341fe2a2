"""The peers ``polyopt bench matmul`` times beside polyopt: numpy (OpenBLAS) always, torch.mm
on one thread when torch is importable.  Speed is never asserted; that the peer was timed in
the same alternating run, checked, and reported (table, JSON) is."""

import json
import sys

import pytest

from polyopt.bench import MatmulBenchResult, Timing, Variant, bench_matmul

ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}


def _torch_importable() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _torch_importable(), reason="torch is not installed (an optional peer)")
@pytest.mark.parametrize("dtype,threads", [("f64", 1), ("f32", 1), ("f64", 2)])
def test_torch_mm_is_timed_beside_numpy(dtype, threads):
    """torch runs on the bench's thread count, as polyopt does."""
    import torch
    result = bench_matmul(19, 23, 13, dtype, reps=3, variants=[Variant("all", ALL_PASSES)],
                          measure_peak=False, threads=threads)
    assert result.torch is not None and result.torch.reps == 3
    assert torch.get_num_threads() == threads
    assert result.torch_note.startswith(f"torch {torch.__version__}") and \
        f"{threads} thread(s)" in result.torch_note
    (variant,) = result.variants
    assert result.ratio_vs_torch(variant) == pytest.approx(
        result.torch.median / variant.timing.median)
    data = json.loads(json.dumps(result.to_json()))
    assert data["torch"]["reps"] == 3 and data["torch_gflops"] > 0
    assert data["variants"][0]["ratio_vs_torch"] == pytest.approx(
        result.ratio_vs_torch(variant))
    lines = result.report().splitlines()
    assert "vs torch" in lines[1]
    assert any(line.strip().startswith("torch.mm ") for line in lines)
    assert any(line.startswith("  torch: torch ") for line in lines)


def test_without_torch_the_table_has_no_torch_column(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # import torch raises ImportError
    result = bench_matmul(7, 9, 5, "f64", reps=1, measure_peak=False)
    assert result.torch is None and result.torch_note == "not installed (optional)"
    assert result.ratio_vs_torch(result.variants[0]) is None
    data = result.to_json()
    assert "torch" not in data and data["variants"][0]["ratio_vs_torch"] is None
    report = result.report()
    assert "vs torch" not in report and "torch.mm" not in report
    assert "torch: not installed (optional)" in report


def test_torch_peer_off():
    result = bench_matmul(7, 9, 5, "f64", reps=1, measure_peak=False, torch_peer=False)
    assert result.torch is None and result.torch_note == ""


def test_report_ratios_of_the_peers():
    """The torch row's 'vs numpy' is numpy's time over torch's; polyopt's 'vs torch' is
    torch's time over polyopt's (numbers made up, nothing timed)."""
    t = lambda s: Timing(s, s, s, 1)   # noqa: E731
    from polyopt.bench import VariantResult
    result = MatmulBenchResult(10, 10, 10, "f64", [VariantResult(Variant("p"), 0.1, t(2.0), 0.0)],
                               t(3.0), "", None, torch=t(4.0), torch_note="torch x")
    rows = {line.split()[0]: line.split() for line in result.report().splitlines()[2:5]}
    assert rows["p"][5:7] == ["1.500x", "2.000x"]
    assert rows["numpy"][6:8] == ["1.000x", "1.333x"]
    assert rows["torch.mm"][5:7] == ["0.750x", "1.000x"]


def test_short_calls_are_timed_as_bursts():
    """A sample lasts at least MIN_SAMPLE_SECONDS: a 1 ms call is repeated back to back and
    the sample is the mean; a call longer than that is timed once."""
    import time
    from polyopt import bench
    calls = []

    def short():
        calls.append(1)
        time.sleep(0.001)

    per_call = bench._time_sample(short)
    assert len(calls) >= 5 and 0.001 <= per_call < bench.MIN_SAMPLE_SECONDS
    calls.clear()

    def long():
        calls.append(1)
        time.sleep(bench.MIN_SAMPLE_SECONDS * 1.5)

    assert bench._time_sample(long) >= bench.MIN_SAMPLE_SECONDS * 1.5 and len(calls) == 1


def test_alternating_samples_follow_each_other_equally_often():
    """Each contender's sample runs right after each other contender's equally often (the
    one after torch inherits its cache footprint), its samples spread over the run; each
    gets its reps samples (in the last round, one that has them gives its turn up)."""
    import collections

    from polyopt import bench
    for n in range(2, 8):
        order = bench.each_after_each(n)
        seq = order * 2
        pairs = collections.Counter(zip(seq, seq[1:]))
        assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
        assert set(pairs.values()) <= {1, 2} and sum(pairs.values()) == len(seq) - 1
        assert sorted(collections.Counter(order).values()) == [n - 1] * n
    calls = []
    contenders = [lambda q=q: calls.append(q) for q in range(3)]
    timings = bench.time_alternating(contenders, reps=3)
    assert [t.reps for t in timings] == [3, 3, 3]
    # after the warm-up's 0, 1, 2, each sample calls its contender back to back: the turns
    # are the runs of equal calls
    turns = [q for i, q in enumerate(calls[3:]) if i == 0 or calls[3 + i - 1] != q]
    # [0, 1, 0, 2, 1, 2], then the turns of those still short of 3: 0, 1, 2
    assert turns == bench.each_after_each(3) + [0, 1, 2]
    calls.clear()
    two = bench.time_alternating(contenders[:2], reps=3)
    assert [t.reps for t in two] == [3, 3]


def test_the_peak_loop_is_one_more_contender():
    """The FMA loop a result's "of peak" is quoted against runs in the same alternating runs
    as the result: its flops are the loop's (2 x lanes x chains per iteration) over the
    iterations that make the asked-for duration."""
    from polyopt.codegen.peak import _CHAINS, PeakLoop, peak_contender
    loop = PeakLoop("f32")
    run, flops = peak_contender("f32", seconds=0.001)
    assert callable(run) and run() is None
    iters = flops / (2 * loop.lanes * _CHAINS)
    assert iters == int(iters) and iters >= 1000


def test_matmul_peak_comes_from_the_alternating_runs(monkeypatch):
    """bench_matmul times the peak loop among its contenders (one more Timing), not after."""
    import polyopt.bench as bench
    seen = []
    real = bench.time_alternating

    def spy(contenders, reps, threads=1):
        seen.append(len(contenders))
        return real(contenders, reps, threads)
    monkeypatch.setattr(bench, "time_alternating", spy)
    result = bench_matmul(7, 9, 5, "f64", reps=1, torch_peer=False)
    assert seen == [3]             # polyopt, numpy, the peak loop
    assert result.peak_gflops > 0 and "(its loop timed among them)" in result.report()


def _timing(seconds: float) -> Timing:
    return Timing(seconds, seconds, seconds, 3)


def test_conv_epilogue_report_quotes_the_peak_for_f32_only():
    """f32 rows get "of peak" against the FMA loop timed with them; bf16 runs on other units
    (dot products, AMX tiles) and gets none."""
    from polyopt.bench import ConvShape
    from polyopt.bench_conv_epilogue import ConvEpilogueResult
    s = ConvShape(1, 10, 10, 4, 8, 3, 3)           # 2 * 64 * 8 * 36 = 36864 flops
    r = ConvEpilogueResult(s, "f32", ("bias", "relu"), True, _timing(36864 / 50e9),
                           _timing(36864 / 40e9), _timing(36864 / 25e9), "torch", 1,
                           peak_gflops=100.0)
    text = r.report()
    assert "FMA peak 100.0 GFLOPS" in text and "of peak" in text
    assert "50.0%" in text and "40.0%" in text and "25.0%" in text
    bf16 = ConvEpilogueResult(s, "bf16", ("bias",), True, _timing(1e-6), _timing(1e-6),
                              None, "torch", 1)
    assert "peak" not in bf16.report()


def test_batch_report_quotes_the_peak():
    from polyopt.bench_batch import BatchBenchResult
    flops = 2.0 * 2 * 8 * 8 * 8
    r = BatchBenchResult(2, 8, 8, 8, "f32", 1, 0.5, _timing(flops / 60e9),
                         _timing(flops / 30e9), _timing(flops / 75e9), "torch", "blas",
                         "machine", peak_gflops=150.0)
    text = r.report()
    assert "FMA peak 150.0 GFLOPS" in text
    assert "40.0%" in text and "20.0%" in text and "50.0%" in text
