"""``polyopt tune FILE``: search the BLIS parameters of a function's products (M_C, K_C, N_C,
M_R, N_R, K_U, the register tile's form and loop order, the block in L2: the ``hopt-expand``
options of :mod:`polyopt.passes`; packing on or off; with ``--threads T`` > 1, the number of
threads and the parallel loop) by timing candidates, and write the best as the transform
script that replays it (``polyopt opt --script best.mlir FILE``, :mod:`polyopt.transform`).

* **Space** (:func:`search_space`): :data:`SPACE`'s BLIS parameters for each product (each
  optimized nest: ``mc``, ``mc#1``, ... as the passes' list options ``mc=96,144``), ``0`` (or
  empty) the model's choice; ``copy``, packing A and B, the flags' choice first, then the
  other (without packing, ``--hopt-vect`` may refuse the nest or run it slowly: such trials fail or lose);
  with ``T`` > 1 threads, ``threads`` from T down to 1 (the nest compiled for that many; the
  program's OpenMP team stays T).  ``l2`` is also **the parallel loop** when threads > 1
  (:mod:`polyopt.schedules.blis_parallel`): ``A`` (GEBP's order) runs the ic loop over M_C
  blocks on the threads, ``B`` (GEPB's) the jc loop over N_C blocks, and the model's choice
  (empty) is the model's order; the BLIS options have no other switch for it.

* **Search**: optuna's TPE sampler (Bergstra et al., NeurIPS 2011) over one categorical choice
  per parameter, each with ``0`` (or empty), the model's own choice.  Trial 1 is the model's choice
  everywhere, so the result is never slower than the default pipeline as measured.  optuna is
  chosen for its ask/tell interface (trials are proposed in batches and compiled in parallel,
  then told their time) and because its TPE handles categorical, conditional spaces without
  a surrogate to fit by hand.
* **Trials** go through a ``concurrent.futures.Executor`` (default: a local process pool of
  ``workers`` processes; ``--scheduler ADDRESS``: a Dask cluster's workers): each worker
  compiles its candidate, then times it holding a lock shared by all of them, so that
  candidates are timed one at a time; in the local pool, a batch's timing starts once all of
  its candidates are compiled (a barrier), so that no compilation runs beside a timed call.
* **Cache**: every measurement is kept in a JSON file keyed by the function's canonical IR,
  the pipeline and the machine (:attr:`~polyopt.codegen.cpu_facts.CpuFacts.signature`, the
  thread count): a repeated tune is answered from it.
* **Timing**: one warm-up call, then the median of ``samples`` samples of at least 20 ms each
  (back-to-back calls averaged), on random operands (scalars: random floats in [0.5, 1) or
  small integers).  One measurement per trial is noisy (on a shared machine, 5% and more), so
  the search's fastest is re-timed against the model's choice, alternating, and kept only if
  it still wins.
* **Budget**: ``trials`` trials, or ``seconds`` of wall time for the whole tune, the
  re-timing included: a batch of trials starts only if it and the re-timing are expected to
  end within the budget (estimated from the batches so far: 2 x the slowest batch is kept
  for the re-timing, which compiles two candidates and times each ``samples`` times); a
  candidate still compiling when only that reserve is left is cut (its worker stopped) and
  the tune ends there, so one slow compilation cannot overrun the budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import statistics
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

#: the values tried per parameter; 0 is the model's choice
SPACE = {
    "mc": (0, 48, 96, 144, 192, 288, 384, 528, 768),
    "kc": (0, 64, 128, 192, 256, 384, 512, 768),
    "nc": (0, 256, 512, 1024, 2048, 4096),
    "mr": (0, 2, 3, 4, 6, 8),
    "nr": (0, 8, 16, 32, 48, 64),
    "ku": (0, 1, 2, 4, 8),
    "form": ("", "row", "col"),
    "l2": ("", "A", "B"),
    "order": ("", "ji", "ij"),
}

SAMPLE_SECONDS = 0.02
#: a candidate whose first call is this many times slower than the best time so far is not
#: sampled further (:func:`run_trial`'s ``cutoff``)
CUTOFF = 3.0
#: the longest a compiled trial waits for the rest of its batch to compile
BARRIER_SECONDS = 300.0


def search_space(options, threads: int, nests: int = 1) -> dict:
    """The values tried per parameter under the pass flags ``options`` at ``threads`` threads:
    :data:`SPACE` for the first product, ``mc#1``... for the second (``nests`` products: each
    optimized nest has its own parameters), then ``copy`` (the flags' packing first, then the
    other way) and, with more than one thread, ``threads`` (``threads`` first, then 1 ...
    threads - 1).  The first value of each is the model's (the flags') choice: trial 1."""
    out = dict(SPACE)
    for nest in range(1, nests):
        out.update({f"{k}#{nest}": v for k, v in SPACE.items()})
    out["copy"] = (bool(options.copy), not options.copy)
    if threads > 1:
        out["threads"] = (threads, *range(1, threads))
    return out


class TuneError(ValueError):
    """A request the tuner cannot serve (no function to time, a budget of nothing...)."""


@dataclass
class Trial:
    """One candidate: its parameters, its pipeline, and its time (``None`` when it failed,
    with ``error``)."""

    number: int
    params: dict
    pipeline: str
    seconds: Optional[float] = None
    error: str = ""
    cached: bool = False

    def changed(self, model: "Trial") -> dict:
        """The parameters whose value is not the one of ``model`` (trial 1: the model's
        choice)."""
        return {k: v for k, v in self.params.items() if model.params.get(k) != v}


@dataclass
class TuneResult:
    func: str
    threads: int
    trials: list = field(default_factory=list)
    #: (the model's choice, the search's fastest) re-timed alternately after the search, in
    #: seconds; None when the fastest was the model's choice
    confirmed: Optional[tuple] = None

    @property
    def default(self) -> Trial:
        return self.trials[0]

    @property
    def fastest(self) -> Trial:
        """The trial the search timed fastest (one measurement each: noise included)."""
        timed = [t for t in self.trials if t.seconds is not None]
        return min(timed, key=lambda t: t.seconds)

    @property
    def best(self) -> Trial:
        """The fastest trial if the alternating re-timing confirms it beats the model's
        choice, else the model's choice."""
        fastest = self.fastest
        if self.confirmed is not None and self.confirmed[1] >= self.confirmed[0]:
            return self.default
        return fastest

    def to_json(self) -> dict:
        return {"func": self.func, "threads": self.threads,
                "trials": [{"number": t.number, "params": t.params, "pipeline": t.pipeline,
                            "seconds": t.seconds, "error": t.error, "cached": t.cached}
                           for t in self.trials],
                "fastest": self.fastest.number if any(
                    t.seconds is not None for t in self.trials) else None,
                "confirmed": list(self.confirmed) if self.confirmed is not None else None,
                "best": self.best.number if self.default.seconds is not None else None}

    def report(self) -> str:
        best, default = self.best, self.default
        failed = sum(t.seconds is None for t in self.trials)
        cached = sum(t.cached for t in self.trials)
        lines = [f"tuned @{self.func} on {self.threads} thread(s): {len(self.trials)} trials "
                 f"({cached} from the cache, {failed} failed)"]
        if default.seconds is not None:
            lines.append(f"  model's choice (trial 1): {default.seconds * 1e3:.3f} ms")
        fastest = self.fastest
        if fastest is not default:
            lines.append(f"  fastest in the search (trial {fastest.number}): "
                         f"{fastest.seconds * 1e3:.3f} ms")
        if self.confirmed is not None:
            a, b = self.confirmed
            lines.append(f"  re-timed alternately: the model's choice {a * 1e3:.3f} ms, trial "
                         f"{fastest.number} {b * 1e3:.3f} ms ({a / b:.3f}x)")
        lines.append(f"  best: trial {best.number}" + (
            f", {self.confirmed[0] / self.confirmed[1]:.3f}x the model's choice"
            if self.confirmed is not None and best is not default else
            " (the model's choice)" if best is default else ""))
        given = best.changed(default)
        lines.append("  parameters: " + (", ".join(f"{k}={v}" for k, v in given.items())
                                         or "the model's"))
        lines.append(f"  pipeline: {best.pipeline}")
        return "\n".join(lines)


#: the parameters that change the flags (and so which passes run) rather than the BLIS
#: options of the expansion passes
FLAG_PARAMS = ("copy", "threads")


def trial_pipeline(options, params: dict) -> str:
    """The text of the pipeline the pass flags ``options`` spell (threads resolved), with
    ``params``' ``copy`` and ``threads`` as those flags (packing adds its memref
    normalization; threads also go to the schedule and parallel passes) and the rest as the
    BLIS options of the expansion passes.  With the model's values (:func:`search_space`'s
    first ones) it is the flags' own pipeline."""
    from .passes import BlisOptions, default_pipeline, print_pipeline
    flags = {k: params[k] for k in FLAG_PARAMS if k in params}
    blis = {}
    for k in (k for k in params if k not in FLAG_PARAMS and "#" not in k):
        values = [params[k]]
        while f"{k}#{len(values)}" in params:
            values.append(params[f"{k}#{len(values)}"])
        # one value per product (the pass's list option), or one for all when they agree
        blis[k] = values[0] if len(set(values)) == 1 else tuple(values)
    out = []
    for p, opts in default_pipeline(replace(options, **flags)):
        if isinstance(opts, BlisOptions):
            opts = replace(opts, **blis)
        out.append((p, opts))
    return f"builtin.module({print_pipeline(out)})"


def count_products(source: str, filename: str, options) -> int:
    """How many products one expansion pass of the flags' pipeline gives BLIS parameters to
    (the most of any pass: each pass numbers its products from 0)."""
    from .passes import BlisOptions, default_pipeline
    from .pipeline import load
    from .schedules.expand import recording_blis_choices
    module = load(source, filename)
    most = 1
    for p, opts in default_pipeline(options):
        with recording_blis_choices() as chosen:
            p.run(module, opts, None)
        if isinstance(opts, BlisOptions):
            most = max(most, len(chosen))
    return most


def _entry(module, name: Optional[str]):
    funcs = [f for f in module.functions if not f.is_declaration]
    if name is not None:
        funcs = [f for f in funcs if f.sym_name == name]
        if not funcs:
            raise TuneError(f"--entry: no function @{name} with a body")
    elif len(funcs) != 1:
        raise TuneError(f"{len(funcs)} functions with a body: name the one to tune with --entry "
                        f"({', '.join('@' + f.sym_name for f in funcs)})")
    return funcs[0].sym_name


def _operands(signature, seed: int = 0) -> list:
    import numpy as np
    from .codegen.jit import MemRefArg, ScalarArg
    rng = np.random.default_rng(seed)
    out = []
    for a in signature.args:
        if isinstance(a, ScalarArg) and not a.is_index:
            dt = np.dtype(a.dtype)
            out.append(dt.type(rng.uniform(0.5, 1.0) if dt.kind == "f" else
                               rng.integers(1, 4)))
            continue
        if not isinstance(a, MemRefArg) or any(s is None for s in a.shape):
            raise TuneError(f"@{signature.name}: the tuner times functions of memrefs with "
                            f"static shapes (and scalars); argument "
                            f"'{getattr(a, 'name', a)}' is not one")
        shape = a.physical_shape or a.shape
        dt = np.dtype(a.dtype)
        if dt.kind == "f":
            out.append(rng.uniform(-1, 1, shape).astype(dt))
        else:
            out.append(rng.integers(-8, 8, shape).astype(dt))
    return out


def _restart_pool(executor: ProcessPoolExecutor, workers: int) -> ProcessPoolExecutor:
    """A fresh local pool in place of ``executor``, whose workers are stopped where they are
    (a compilation past the budget)."""
    import multiprocessing
    for process in list(getattr(executor, "_processes", {}).values()):
        process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)
    return ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"))


def run_trial(source: str, filename: str, func: str, pipeline: str, threads: int,
              samples: int, lock=None, cutoff: Optional[float] = None,
              barrier=None) -> tuple[float, list]:
    """Compile ``source`` with ``pipeline`` and time ``@func`` (seconds per call, the median
    of ``samples`` samples), holding ``lock`` while timing; with the arguments after one call
    on the operands (for the caller to compare).  When that first call takes more than
    ``cutoff`` seconds, its time is the answer (the candidate is out of the running; its
    samples would only spend the budget).  With a ``barrier`` (shared by a batch of trials),
    no trial is timed before all of the batch are compiled: on two cores, a compilation
    beside a timed run slows it (by up to 2x here).  Runs in a worker process."""
    from .bench import time_sample
    from .passes import run_pipeline
    from .pipeline import CompiledModule, PipelineOptions, load, prepare_for_lowering
    try:
        module = load(source, filename)
        run_pipeline(module, pipeline)
        prepare_for_lowering(module)
        compiled = CompiledModule(module, PipelineOptions(threads=threads))
        fn = compiled[func]
        args = _operands(compiled.signatures[func])
    finally:
        if barrier is not None:
            try:
                barrier.wait(BARRIER_SECONDS)
            except Exception:       # a broken or timed-out barrier: time anyway
                pass
    once = [a.copy() for a in args]
    if lock is not None:      # every call under the lock: no other candidate's runs overlap
        lock.acquire()
    try:
        first = time.perf_counter()
        fn(*once)
        first = time.perf_counter() - first
        if cutoff is not None and first > cutoff:
            return first, once
        fn(*args)
        times = [time_sample(lambda: fn(*args), SAMPLE_SECONDS) for _ in range(samples)]
    finally:
        if lock is not None:
            lock.release()
    return statistics.median(times), once


def run_pair(source: str, filename: str, func: str, pipelines: tuple, threads: int,
             samples: int, lock=None) -> tuple:
    """Both ``pipelines`` compiled, then timed alternately ``samples`` times each (holding
    ``lock``): their median seconds per call.  Runs in a worker process."""
    from .bench import time_sample
    from .passes import run_pipeline
    from .pipeline import CompiledModule, PipelineOptions, load, prepare_for_lowering
    fns = []
    for pipeline in pipelines:
        module = load(source, filename)
        run_pipeline(module, pipeline)
        prepare_for_lowering(module)
        compiled = CompiledModule(module, PipelineOptions(threads=threads))
        fns.append(compiled[func])
    args = _operands(compiled.signatures[func])
    if lock is not None:
        lock.acquire()
    try:
        for fn in fns:
            fn(*args)
        times: list = [[] for _ in fns]
        for _ in range(samples):
            for q, fn in enumerate(fns):
                times[q].append(time_sample(lambda: fn(*args), 5 * SAMPLE_SECONDS))
    finally:
        if lock is not None:
            lock.release()
    return tuple(statistics.median(t) for t in times)


def _differs(got: list, want: list) -> Optional[str]:
    """Why a candidate's results are not the model's choice's (sums may be reassociated: a
    tolerance of the type's precision times the sizes), or None."""
    import numpy as np
    for q, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"argument #{q} has shape {g.shape}, expected {w.shape}"
        if g.dtype.kind == "f":
            eps = float(np.finfo(g.dtype).eps)
            tol = eps * 64 * max(1.0, float(np.abs(w).max(initial=0.0))) * math.sqrt(w.size)
            if not np.allclose(g, w, rtol=0, atol=tol):
                return f"argument #{q} differs from the model's choice's by " \
                       f"{float(np.abs(g - w).max()):.3g}"
        elif not np.array_equal(g, w):
            return f"argument #{q} differs from the model's choice's"
    return None


class MeasurementCache:
    """Measurements by (canonical IR, pipeline, machine, threads), in a JSON file."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self.entries: dict = {}
        if path is not None and path.exists():
            try:
                self.entries = json.loads(path.read_text())
            except (OSError, ValueError):
                self.entries = {}
            if not isinstance(self.entries, dict):   # JSON, but not a cache of ours
                self.entries = {}

    @staticmethod
    def key(ir: str, pipeline: str, machine: str, threads: int) -> str:
        return hashlib.sha256("\n".join([ir, pipeline, machine, str(threads)]).encode()
                              ).hexdigest()

    def get(self, key: str) -> Optional[dict]:
        return self.entries.get(key)

    def put(self, key: str, value: dict) -> None:
        self.entries[key] = value
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.entries, indent=1, sort_keys=True))
            os.replace(tmp, self.path)


def default_cache_path() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "polyopt" / "tune.json"


@contextlib.contextmanager
def dask_executor(address: str):
    """``with dask_executor(address) as (executor, lock)``: the Dask cluster at ``address``,
    whose workers run the trials (each compiles and times on its own machine; machines of
    one kind, as the cache key records), timed one at a time under a cluster-wide
    ``distributed.Lock``; the client is closed on leaving."""
    try:
        import distributed
    except ImportError:
        raise TuneError("--scheduler needs Dask's distributed (pip install distributed)") \
            from None
    try:
        client = distributed.Client(address, timeout="10s")
    except (OSError, ValueError) as e:     # ValueError: an address that does not parse
        raise TuneError(f"--scheduler: cannot reach the Dask scheduler at {address}: {e}") \
            from None
    try:
        yield client.get_executor(), distributed.Lock("polyopt-tune-timing")
    finally:
        client.close()


def tune(source: str, filename: str, options, *, func: Optional[str] = None,
         trials: Optional[int] = None, seconds: Optional[float] = None, workers: int = 1,
         samples: int = 5, seed: int = 0, cache: Optional[Path] = None,
         executor: Optional[Executor] = None, lock=None,
         progress: bool = False) -> TuneResult:
    """Tune the BLIS parameters of ``source``'s function ``func`` (see the module docstring)
    under the pass flags ``options`` (:class:`polyopt.pipeline.PipelineOptions`) for at most
    ``trials`` trials or ``seconds`` seconds.  ``executor`` (with the ``lock`` its workers time
    under) replaces the local process pool of ``workers``."""
    start = time.perf_counter()
    import optuna
    from .affine.printer import print_module
    from .codegen.cpu_facts import host_facts
    from .codegen.openmp import resolve_threads
    from .pipeline import load
    if trials is None and seconds is None:
        raise TuneError("give a budget: a number of trials or seconds")
    if (trials is not None and trials < 1) or (seconds is not None and seconds <= 0):
        raise TuneError(f"the budget must be positive, got {trials if trials is not None else seconds}")
    if workers < 1 or samples < 1:
        raise TuneError(f"workers and samples must be at least 1, got {workers} and {samples}")
    if not options.hopt:
        raise TuneError("the tuner searches the --hopt pipeline's parameters: give --hopt "
                        "(and the --hopt-* passes to tune under)")
    module = load(source, filename)           # errors in the input are reported before tuning
    func = _entry(module, func)
    threads = resolve_threads(options.threads)
    options = replace(options, threads=threads)
    ir = print_module(module)
    machine = host_facts().signature
    store = MeasurementCache(cache)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=seed))
    key = MeasurementCache.key(ir, "products\n" + trial_pipeline(options, {}), machine,
                               threads)
    hit = store.get(key)
    nests = hit["products"] if hit is not None else count_products(source, filename, options)
    if hit is None:
        store.put(key, {"products": nests})
    space = search_space(options, threads, nests)
    study.enqueue_trial({k: v[0] for k, v in space.items()})   # trial 1: the model's choice
    result = TuneResult(func, threads)
    reference = None          # the results of the model's choice (trial 1, measured first)
    own_pool = executor is None
    if own_pool:
        # fresh interpreters (not forks of one that may hold LLVM's or OpenMP's threads)
        import multiprocessing
        context = multiprocessing.get_context("spawn")
        manager = context.Manager()
        lock = manager.Lock()
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=trials, unit="trial", desc="tune", leave=False)
    walls: list = []          # the wall seconds of each batch measured so far
    out_of_time = False

    def deadline() -> Optional[float]:
        """How long a trial may still take: the budget minus what the re-timing needs (it
        compiles two candidates in one worker: twice the slowest batch so far); None without
        a time budget."""
        if seconds is None or not result.trials:
            return None
        reserve = 2 * max(walls, default=0.0)
        return max(0.0, start + seconds - reserve - time.perf_counter())

    def room() -> bool:
        """Is there time for one more batch and the re-timing after it?"""
        if trials is not None:
            return len(result.trials) < trials
        if not result.trials:
            return True                                 # trial 1, whatever it costs
        slowest = max(walls, default=0.0)
        return time.perf_counter() - start + 3 * slowest <= seconds
    try:
        while room():
            batch = workers if trials is None else min(workers, trials - len(result.trials))
            asked = [study.ask() for _ in range(batch)]
            timed = [x.seconds for x in result.trials if x.seconds is not None]
            cutoff = CUTOFF * min(timed) if timed else None
            pending = []
            begun = time.perf_counter()
            todo = []
            for t in asked:
                params = {k: t.suggest_categorical(k, v) for k, v in space.items()}
                trial = Trial(len(result.trials) + len(pending) + 1, params,
                              trial_pipeline(options, params))
                key = MeasurementCache.key(ir, trial.pipeline, machine, threads)
                hit = store.get(key)
                if hit is not None:
                    trial.seconds, trial.error, trial.cached = hit.get("seconds"), \
                        hit.get("error", ""), True
                    pending.append((t, trial, key, None))
                else:
                    pending.append((t, trial, key, None))
                    todo.append(len(pending) - 1)
            # the batch compiles together, then is timed one at a time (own pool: a barrier)
            barrier = manager.Barrier(len(todo)) if own_pool and len(todo) > 1 else None
            for q in todo:
                t, trial, key, _ = pending[q]
                pending[q] = (t, trial, key, executor.submit(
                    run_trial, source, filename, func, trial.pipeline, threads, samples, lock,
                    cutoff if trial.number > 1 else None, barrier))
            for t, trial, key, future in pending:
                if future is not None:
                    try:
                        trial.seconds, results = future.result(timeout=deadline())
                    except FutureTimeout:
                        # a compilation that outlives the budget: the tune stops here
                        trial.error = "cut: the time budget ran out before it was timed"
                        out_of_time = True
                        future.cancel()
                        result.trials.append(trial)
                        study.tell(t, math.inf)
                        continue
                    except Exception as e:      # an illegal combination: the trial fails
                        trial.error = str(e).splitlines()[0] if str(e) else type(e).__name__
                    else:
                        if reference is None:
                            # trial 1 measured now, or its time came from the cache: its
                            # results are computed for the comparison
                            reference = results if trial.number == 1 else executor.submit(
                                run_trial, source, filename, func, result.trials[0].pipeline,
                                threads, 1, lock).result()[1]
                        wrong = _differs(results, reference)
                        if wrong is not None:   # never kept, whatever its time
                            trial.seconds, trial.error = None, f"wrong result: {wrong}"
                    store.put(key, {"seconds": trial.seconds, "error": trial.error})
                study.tell(t, trial.seconds if trial.seconds is not None else math.inf)
                result.trials.append(trial)
                if bar is not None:
                    bar.update(1)
                    timed = [x.seconds for x in result.trials if x.seconds is not None]
                    if timed:
                        bar.set_postfix(best_ms=f"{min(timed) * 1e3:.3f}")
            if out_of_time:
                if own_pool:
                    executor = _restart_pool(executor, workers)
                break
            if any(f is not None for *_, f in pending):
                walls.append(time.perf_counter() - begun)
        if result.default.seconds is None:
            raise TuneError(f"the model's own choice failed to compile or run: "
                            f"{result.default.error}")
        if result.fastest is not result.default:
            # one measurement per trial, the first in a fresh process: the winner is re-timed
            # against the model's choice, alternating, before it is kept
            key = MeasurementCache.key(ir, "confirm\n" + result.default.pipeline + "\n" +
                                       result.fastest.pipeline, machine, threads)
            hit = store.get(key)
            if hit is not None:
                result.confirmed = tuple(hit["seconds"])
            else:
                result.confirmed = executor.submit(
                    run_pair, source, filename, func,
                    (result.default.pipeline, result.fastest.pipeline), threads,
                    max(samples, 5), lock).result()
                store.put(key, {"seconds": list(result.confirmed)})
    finally:
        if bar is not None:
            bar.close()
        if own_pool:
            executor.shutdown()
            manager.shutdown()
    return result
