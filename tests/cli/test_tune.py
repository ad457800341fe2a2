"""``polyopt tune`` (:mod:`polyopt.tune`): the model's choice is trial 1, candidates are
compiled through an Executor and timed, their results checked against trial 1's, the
measurements cached (a repeated tune is answered from the cache), the best written as a
pipeline that ``polyopt opt -p`` replays; packing on/off and the thread count are searched
too (their results checked like the others'); a time budget covers the whole tune; bad
requests are errors, not tracebacks."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from polyopt.cli import main
from polyopt.pipeline import PipelineOptions

pytest.importorskip("optuna")

import polyopt.tune as tune_mod  # noqa: E402

SOURCE = """func.func @mm(%A: memref<40x30xf64>, %B: memref<30x52xf64>, %C: memref<40x52xf64>) {
  hop.matmul %A, %B, %C : (memref<40x30xf64>, memref<30x52xf64>, memref<40x52xf64>)
  return
}
"""
FLAGS = ["--hopt", "--hopt-copy", "--hopt-vect", "--threads", "1", "--samples", "1",
         "--no-progress"]


def test_tune_writes_a_replayable_best_and_caches(tmp_path, capsys):
    src = tmp_path / "mm.mlir"
    src.write_text(SOURCE)
    cache, best = tmp_path / "cache.json", tmp_path / "best.mlir"
    assert main(["tune", str(src), *FLAGS, "--budget", "4", "--cache", str(cache),
                 "--out", str(best)]) == 0
    out = capsys.readouterr().out
    assert "tuned @mm on 1 thread(s): 4 trials (0 from the cache" in out
    assert "model's choice (trial 1)" in out
    pipeline = next(line for line in out.splitlines() if "pipeline: " in line).split(
        "pipeline: ", 1)[1]
    assert pipeline.startswith("builtin.module(") and "hopt-expand{" in pipeline
    # the best as a script, the model's parameters written in: the pipeline's IR
    script = best.read_text()
    assert "transform.polyopt.blis_tile" in script and "M_C = " in script
    assert main(["opt", str(src), "-p", pipeline]) == 0
    by_pipeline = capsys.readouterr().out
    assert main(["opt", str(src), "--script", str(best)]) == 0
    assert capsys.readouterr().out == by_pipeline and "affine.for" in by_pipeline
    # again: every measurement from the cache, the same answer
    assert main(["tune", str(src), *FLAGS, "--budget", "4", "--cache", str(cache)]) == 0
    again = capsys.readouterr().out
    assert "4 trials (4 from the cache, 0 failed)" in again
    assert again.splitlines()[1:] == out.splitlines()[1:]


def test_trial_one_is_the_models_choice_and_failures_are_recorded(monkeypatch):
    """An illegal value (a negative M_R) makes its trials fail with the reason; trial 1 has
    no parameter given; trials run through any concurrent.futures.Executor."""
    monkeypatch.setattr(tune_mod, "SPACE", {"mr": (0, -1, 2), "ku": (0, 2)})
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    with ThreadPoolExecutor(1) as pool:
        result = tune_mod.tune(SOURCE, "mm.mlir", options, trials=6, samples=1, seed=3,
                               executor=pool)
    assert result.default.params == {"mr": 0, "ku": 0, "copy": True}    # one thread: no
    assert "mr=" not in result.default.pipeline and result.default.seconds > 0  # threads
    failed = [t for t in result.trials if t.seconds is None]
    assert failed and all(t.params["mr"] == -1 for t in failed)
    assert all("mr must be positive" in t.error for t in failed)
    assert result.best.params["mr"] != -1


def test_a_candidate_with_a_wrong_result_is_never_kept(monkeypatch):
    """A candidate whose results differ from trial 1's fails, whatever its time."""
    calls = []
    real = tune_mod.run_trial

    def broken(*args, **kwargs):
        seconds, results = real(*args, **kwargs)
        calls.append(args[3])
        if len(calls) == 2:      # the second candidate computes something else, fast
            results = [r * 0 + 1 for r in results]
            seconds = 1e-9
        return seconds, results
    monkeypatch.setattr(tune_mod, "run_trial", broken)
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    with ThreadPoolExecutor(1) as pool:
        result = tune_mod.tune(SOURCE, "mm.mlir", options, trials=3, samples=1, executor=pool)
    assert result.trials[1].seconds is None
    assert result.trials[1].error.startswith("wrong result: argument #0 differs")
    assert result.best.number != 2


@pytest.mark.parametrize("args, message", [
    (["--budget", "0"], "the budget must be positive"),
    (["--budget", "ten"], "--budget: expected a number of trials (12) or seconds (120s)"),
    (["-p", "hopt-expand"], "drop -p and --schedule"),
    (["--no-hopt"], "give --hopt"),
    (["--entry", "nope"], "no function @nope with a body"),
])
def test_tune_errors(tmp_path, capsys, args, message):
    src = tmp_path / "mm.mlir"
    src.write_text(SOURCE)
    flags = FLAGS[3:] if "--no-hopt" in args else FLAGS     # no --hopt: no --hopt-* either
    assert main(["tune", str(src), *flags, "--no-cache", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_two_functions_need_an_entry(tmp_path, capsys):
    src = tmp_path / "two.mlir"
    src.write_text(SOURCE + SOURCE.replace("@mm", "@mm2"))
    assert main(["tune", str(src), *FLAGS, "--no-cache", "--budget", "1"]) == 1
    assert "2 functions with a body: name the one to tune with --entry" in \
        capsys.readouterr().err
    assert main(["tune", str(src), *FLAGS, "--no-cache", "--budget", "1", "--entry",
                 "mm2"]) == 0
    assert "tuned @mm2" in capsys.readouterr().out


def test_a_dask_cluster_runs_the_trials_and_a_repeat_comes_from_the_cache(tmp_path):
    """``--scheduler``: trials on a ``LocalCluster``'s two worker processes, timed one at a
    time under a cluster-wide lock; the same tune again is all cache."""
    distributed = pytest.importorskip("distributed")
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    cache = tmp_path / "cache.json"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with tune_mod.dask_executor(cluster.scheduler_address) as (executor, lock):
            kwargs = dict(trials=4, samples=1, cache=cache, executor=executor, lock=lock,
                          workers=2)
            first = tune_mod.tune(SOURCE, "mm.mlir", options, **kwargs)
            start = time.perf_counter()
            second = tune_mod.tune(SOURCE, "mm.mlir", options, **kwargs)
            elapsed = time.perf_counter() - start
    assert not any(t.cached for t in first.trials) and all(t.seconds for t in first.trials)
    assert all(t.cached for t in second.trials), f"{elapsed:.2f} s"
    assert second.best.pipeline == first.best.pipeline
    assert elapsed < 1.0, f"a repeated tune took {elapsed:.2f} s"


def test_the_space_has_packing_and_threads_and_trial_one_is_the_flags_pipeline():
    """``copy``: the flags' packing first, then the other way; ``threads`` (only with
    --threads T > 1): T first, then 1 .. T-1; with the first values, trial 1's pipeline is the
    flags' own."""
    from polyopt.passes import default_pipeline, print_pipeline
    one = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    two = PipelineOptions(hopt=True, copy=False, vect=True, threads=2)
    s1, s2 = tune_mod.search_space(one, 1), tune_mod.search_space(two, 2)
    assert s1["copy"] == (True, False) and "threads" not in s1
    assert s2["copy"] == (False, True) and s2["threads"] == (2, 1)
    assert "l2" in s1         # the parallel loop with threads > 1 (ic under A, jc under B)
    for options, space in ((one, s1), (two, s2)):
        model = tune_mod.trial_pipeline(options, {k: v[0] for k, v in space.items()})
        assert model == f"builtin.module({print_pipeline(default_pipeline(options))})"
    # packing added: its memref normalization comes with it; one thread of two: no threads=
    packed = tune_mod.trial_pipeline(two, {"copy": True, "threads": 1, "mr": 4})
    assert "hopt-expand{copy=true vect=true mr=4}" in packed
    assert packed.endswith("hopt-normalize-memrefs)")
    unpacked = tune_mod.trial_pipeline(one, {"copy": False})
    assert "copy=" not in unpacked and "hopt-normalize-memrefs" not in unpacked


def _spy_on_comparisons(monkeypatch):
    compared = []
    real = tune_mod._differs

    def spy(got, want):
        why = real(got, want)
        compared.append(why)
        return why
    monkeypatch.setattr(tune_mod, "_differs", spy)
    return compared


def test_packing_off_and_two_threads_compute_the_models_result(monkeypatch):
    """Every combination of packing and threads (the model's: packed, 2 threads) is timed
    and its results compared with trial 1's: all agree."""
    monkeypatch.setattr(tune_mod, "SPACE", {})
    compared = _spy_on_comparisons(monkeypatch)
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=2)
    with ThreadPoolExecutor(1) as pool:
        result = tune_mod.tune(SOURCE, "mm.mlir", options, trials=8, samples=1, seed=0,
                               executor=pool)
    assert result.threads == 2 and result.default.params == {"copy": True, "threads": 2}
    seen = {(t.params["copy"], t.params["threads"]): t for t in result.trials}
    assert set(seen) == {(True, 2), (True, 1), (False, 2), (False, 1)}
    assert all(t.seconds is not None and not t.error for t in result.trials)
    measured = [t for t in result.trials if not t.cached]
    assert len(compared) == len(measured) and all(why is None for why in compared)
    assert "threads=2" in seen[True, 2].pipeline and "threads" not in seen[True, 1].pipeline
    assert "copy=true" not in seen[False, 1].pipeline


@pytest.mark.parametrize("corrupt", ["unpacked", "one thread"])
def test_packing_off_or_fewer_threads_with_a_wrong_result_is_never_kept(monkeypatch, corrupt):
    """The comparison is enforced on the new dimensions: a packing-off (or one-thread)
    candidate that computes something else, however fast, fails and is not the best."""
    monkeypatch.setattr(tune_mod, "SPACE", {})
    real = tune_mod.run_trial

    def broken(*args, **kwargs):
        seconds, results = real(*args, **kwargs)
        pipeline = args[3]
        if (corrupt == "unpacked" and "copy=true" not in pipeline) or \
                (corrupt == "one thread" and "threads=2" not in pipeline):
            return 1e-9, [r * 0 + 1 for r in results]
        return seconds, results
    monkeypatch.setattr(tune_mod, "run_trial", broken)
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=2)
    with ThreadPoolExecutor(1) as pool:
        result = tune_mod.tune(SOURCE, "mm.mlir", options, trials=8, samples=1, seed=0,
                               executor=pool)
    bad = [t for t in result.trials if (not t.params["copy"] if corrupt == "unpacked" else
                                        t.params["threads"] == 1)]
    assert bad and all(t.seconds is None and t.error.startswith("wrong result: argument #0")
                       for t in bad)
    assert result.best.seconds is not None and result.best not in bad


def test_tune_cli_searches_threads_and_packing(tmp_path, capsys):
    """``polyopt tune --threads 2 --json``: every trial carries ``copy`` and ``threads``,
    trial 1 with the flags' values; the trials' pipelines spell them."""
    import json
    src = tmp_path / "mm.mlir"
    src.write_text(SOURCE)
    flags = [f if f != "1" else "2" for f in FLAGS]
    assert main(["tune", str(src), *flags, "--budget", "4", "--no-cache", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["threads"] == 2
    first = record["trials"][0]
    assert first["params"]["copy"] is True and first["params"]["threads"] == 2
    assert "threads=2" in first["pipeline"] and "copy=true" in first["pipeline"]
    assert all({"copy", "threads", "mr", "l2"} <= set(t["params"]) for t in record["trials"])


def test_a_time_budget_covers_the_whole_tune_and_slow_candidates_are_cut_short():
    """``seconds``: batches start only while they and the re-timing fit; a candidate whose
    first call is past the cutoff is not sampled (its first call is its time)."""
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    with ThreadPoolExecutor(1) as pool:
        start = time.perf_counter()
        result = tune_mod.tune(SOURCE, "mm.mlir", options, seconds=3.0, samples=1,
                               executor=pool)
        elapsed = time.perf_counter() - start
    # (a loaded machine, the test suite on both cores, may stretch one batch)
    assert len(result.trials) > 1 and elapsed < 3.0 * 1.5, f"{elapsed:.2f} s"
    start = time.perf_counter()
    seconds, results = tune_mod.run_trial(SOURCE, "mm.mlir", "mm", result.default.pipeline, 1,
                                          samples=10_000, cutoff=0.0)
    assert seconds > 0 and len(results) == 3 and time.perf_counter() - start < 5


def test_a_compilation_that_outlives_the_budget_is_cut(monkeypatch):
    """A candidate still running when the budget (less the re-timing's reserve) is spent is
    cut: the tune returns in time with the model's choice, the candidate marked."""
    import threading
    real, release = tune_mod.run_trial, threading.Event()
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    space = tune_mod.search_space(options, 1)
    model = tune_mod.trial_pipeline(options, {k: v[0] for k, v in space.items()})

    def slow(*args, **kwargs):
        if args[3] != model:
            release.wait(30)              # "compiling" for longer than the budget
        return real(*args, **kwargs)
    monkeypatch.setattr(tune_mod, "run_trial", slow)
    pool = ThreadPoolExecutor(2)
    try:
        start = time.perf_counter()
        result = tune_mod.tune(SOURCE, "mm.mlir", options, seconds=3.0, samples=1,
                               executor=pool, workers=2)
        elapsed = time.perf_counter() - start
    finally:
        release.set()
        pool.shutdown(wait=True)
    assert elapsed < 3.0 * 1.5, f"{elapsed:.2f} s"
    cut = [t for t in result.trials if t.error.startswith("cut: the time budget ran out")]
    assert cut and result.best is result.default


def test_each_product_has_its_own_parameters_in_the_space():
    """Two products: ``mc`` and ``mc#1``...; a trial that gives them different values is a
    list option, and trial 1 is still the flags' pipeline."""
    two = """func.func @two(%A: memref<40x30xf64>, %B: memref<30x52xf64>, %C: memref<40x52xf64>,
                %D: memref<52x20xf64>, %E: memref<40x20xf64>) {
  hop.matmul %A, %B, %C : (memref<40x30xf64>, memref<30x52xf64>, memref<40x52xf64>)
  hop.matmul %C, %D, %E : (memref<40x52xf64>, memref<52x20xf64>, memref<40x20xf64>)
  return
}
"""
    options = PipelineOptions(hopt=True, copy=True, vect=True, threads=1)
    nests = tune_mod.count_products(two, "two.mlir", options)
    assert nests == 2
    space = tune_mod.search_space(options, 1, nests)
    assert "mc#1" in space and "form#1" in space and "mc#2" not in space
    first = {k: v[0] for k, v in space.items()}
    from polyopt.passes import default_pipeline, print_pipeline
    assert tune_mod.trial_pipeline(options, first) == \
        f"builtin.module({print_pipeline(default_pipeline(options))})"
    mixed = dict(first, mc=48, **{"mc#1": 96})
    assert "mc=48,96" in tune_mod.trial_pipeline(options, mixed)
    same = dict(first, mc=48, **{"mc#1": 48})
    assert "mc=48 " in tune_mod.trial_pipeline(options, same) or \
        "mc=48}" in tune_mod.trial_pipeline(options, same)
    result = tune_mod.tune(two, "two.mlir", options, trials=3, samples=1, workers=1)
    assert all(t.seconds is not None for t in result.trials), [t.error for t in result.trials]
