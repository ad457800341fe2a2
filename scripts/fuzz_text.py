#!/usr/bin/env python3
"""Long campaigns of the text fuzzer (issue 13): mutated examples and test snippets through
polyopt's parser, printer and LLVM lowering, each input in a worker subprocess capped at
1 GiB of memory (beyond its size when the input starts) and a second of CPU time.

    nice -n 10 python3 scripts/fuzz_text.py --minutes 20
    python3 scripts/fuzz_text.py --minutes 5 --seed 7 --out /tmp/fuzz --jobs 2

Prints how many inputs ran and how many failed (by kind: internal, unlocated, reparse,
fixed-point, slow, memory, hang, crash; upstream with --upstream) and saves each failing input to the output folder as
``<seed>.mlir`` with ``<seed>.txt`` saying what went wrong.  ``check_input(make_input(seed))``
in ``tests/fuzz/text_fuzzer.py`` replays one.  Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import select
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)                                  # this tree's polyopt
sys.path.insert(1, os.path.join(ROOT, "tests", "fuzz"))

import text_fuzzer  # noqa: E402

MEMORY_BYTES = 1 << 30     # per input, on top of the worker's size when it starts the input
RETIRE_BYTES = 256 << 20   # a worker that grew by this much is replaced
HANG_SECONDS = 30.0        # wall-clock limit of one input (the machine may be shared)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def worker(upstream: bool) -> None:
    """Read seeds on stdin, write one JSON result per seed on stdout.  Each input may use
    MEMORY_BYTES more address space than the worker has when it starts it; a worker whose size
    grew by more than RETIRE_BYTES (what an input left behind) retires after its result."""
    text_fuzzer.check_input(text_fuzzer.corpus()[0].encode())       # imports and caches
    start_size = _vm_size()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    for line in sys.stdin:
        seed = int(line)
        result = {"seed": seed}
        limit = _vm_size() + MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY
                                                else min(limit, hard), hard))
        try:
            data = text_fuzzer.make_input(seed)
        except MemoryError:   # the fuzzer's own fault, not polyopt's: say so
            data = None
            result.update(outcome="FAIL", kind="fuzzer", detail="MemoryError making the input")
        try:
            if data is not None:
                result["outcome"] = text_fuzzer.check_input(data, upstream=upstream)
        except text_fuzzer.Failure as f:
            kind = "memory" if f.detail.startswith("MemoryError") else f.kind
            result.update(outcome="FAIL", kind=kind, detail=f.detail)
        except MemoryError:
            result.update(outcome="FAIL", kind="memory", detail="MemoryError")
        retire = _vm_size() - start_size > RETIRE_BYTES
        result["retire"] = retire
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        if retire:
            return


class Worker:
    def __init__(self, upstream: bool):
        flags = ["--worker"] + (["--upstream"] if upstream else [])
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *flags],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1, cwd=ROOT)
        self.seed = None
        self.started = 0.0

    def submit(self, seed: int) -> None:
        self.seed = seed
        self.started = time.monotonic()
        self.proc.stdin.write(f"{seed}\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _save(out: str, seed: int, kind: str, detail: str) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{seed}.mlir"), "wb") as f:
        f.write(text_fuzzer.make_input(seed))
    with open(os.path.join(out, f"{seed}.txt"), "w") as f:
        f.write(f"{kind}\n{detail}\n")


def campaign(minutes: float, seed: int, out: str, jobs: int, upstream: bool = False) -> int:
    deadline = time.monotonic() + minutes * 60
    corpus = text_fuzzer.corpus()
    print(f"text fuzz: {len(corpus)} seed programs, base seed {seed}, {minutes:g} minutes, "
          f"{jobs} worker(s); failures go to {out}", flush=True)
    workers = [Worker(upstream) for _ in range(jobs)]
    outcomes: collections.Counter = collections.Counter()
    failures: collections.Counter = collections.Counter()
    next_seed, ran, last_report = seed, 0, time.monotonic()

    def record(w: Worker, kind: str, detail: str) -> None:
        failures[kind] += 1
        _save(out, w.seed, kind, detail)
        print(f"  FAIL seed {w.seed}: {kind}: {detail.splitlines()[0][:160]}", flush=True)

    for w in workers:
        w.submit(next_seed)
        next_seed += 1
    while workers:
        ready, _, _ = select.select([w.proc.stdout for w in workers], [], [], 1.0)
        now = time.monotonic()
        for w in list(workers):
            replace = False
            if w.proc.stdout in ready:
                line = w.proc.stdout.readline()
                if not line:                                   # the worker died
                    record(w, "crash", f"worker exited with status {w.proc.wait()}")
                    replace = True
                else:
                    result = json.loads(line)
                    if result["outcome"] == "FAIL":
                        record(w, result["kind"], result["detail"])
                    else:
                        outcomes[result["outcome"]] += 1
                    if result.get("retire"):
                        w.proc.wait()
                        replace = True
                ran += 1
            elif now - w.started > HANG_SECONDS:
                w.kill()
                record(w, "hang", f"no result after {HANG_SECONDS:g} s")
                ran += 1
                replace = True
            else:
                continue
            if replace:
                workers.remove(w)
                w = Worker(upstream)
                workers.append(w)
            if now < deadline:
                w.submit(next_seed)
                next_seed += 1
            else:
                workers.remove(w)
                w.kill()
        if now - last_report > 60:
            last_report = now
            print(f"  {ran} inputs, {sum(failures.values())} failed", flush=True)
    failed = sum(failures.values())
    print(f"{ran} inputs ran, {failed} failed" + (f" ({dict(failures)})" if failed else "")
          + f"; outcomes: {dict(outcomes)}; seeds {seed}..{next_seed - 1}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10, help="how long to run")
    parser.add_argument("--seed", type=int, default=None,
                        help="first input seed (default: from the clock; printed)")
    parser.add_argument("--out", default=None, help="folder for failing inputs (default: "
                        "fuzz-failures/text-<time> in the repository)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--upstream", action="store_true",
                        help="also require mlir-opt-22 to read what polyopt prints and print it "
                             "identically (slower; finds printer and verifier differences)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.upstream)
        return 0
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
    out = args.out or os.path.join(ROOT, "fuzz-failures", time.strftime("text-%Y%m%d-%H%M%S"))
    return campaign(args.minutes, seed, out, max(1, args.jobs), args.upstream)


if __name__ == "__main__":
    sys.exit(main())
