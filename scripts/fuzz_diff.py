#!/usr/bin/env python3
"""Long differential-fuzzing campaigns (issue 13, item 7): random valid programs (affine nests
and hop/linalg ops, tests/fuzz/diff_programs.py) run through polyopt under every flag
combination and random schedules, compared with their expected outputs, the unoptimized
program and, on a subset, mlir-runner-22 running the upstream-lowered program
(tests/fuzz/diff_harness.py).  The CI counterpart is tests/fuzz/test_diff_fuzz.py.

    python3 scripts/fuzz_diff.py --minutes 20                 # nice -n 10, from a random seed
    python3 scripts/fuzz_diff.py --minutes 60 --seed 1000 --out fuzz-failures
    python3 scripts/fuzz_diff.py --replay 1234                # rerun one program, verbosely

Programs run in a worker process, so that a crash (a segfault in generated code) or a hang is
recorded as a failure of that program instead of ending the campaign.  It prints how many
programs and runs were made and how many failed; each failing program is saved to ``--out``
(``seed-<seed>-<kind>.mlir``, with the flags and the message in a comment header).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tests" / "fuzz"


def _paths() -> None:
    for p in (str(FUZZ), str(ROOT)):      # this checkout's polyopt, not an installed one
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)


def _case(seed: int):
    from diff_programs import any_case
    return any_case(seed)


def _check(seed: int, upstream: bool, flag_sets, schedules: int) -> dict:
    from diff_harness import Stats, check_case
    case = _case(seed)
    stats = Stats()
    check_case(case, stats, random.Random(seed), max_flag_sets=flag_sets, schedules=schedules,
               upstream=upstream)
    return {"seed": seed, "description": case.description, "runs": stats.runs,
            "upstream_runs": stats.upstream_runs, "refused": stats.refused,
            "failures": [{"kind": f.kind, "what": f.what, "message": f.message, "text": f.text}
                         for f in stats.failures]}


def worker(args) -> int:
    """Read seeds from stdin, write one JSON result per line."""
    _paths()
    for line in sys.stdin:
        seed, upstream = line.split()
        result = _check(int(seed), upstream == "1", args.flag_sets, args.schedules)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return 0


class Worker:
    def __init__(self, args):
        cmd = [sys.executable, __file__, "--worker", "--schedules", str(args.schedules)]
        if args.flag_sets is not None:
            cmd += ["--flag-sets", str(args.flag_sets)]
        self.err = tempfile.TemporaryFile("w+")   # a pipe could fill up and block it
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, cwd=ROOT)
        self.done = 0

    def run(self, seed: int, upstream: bool, timeout: float):
        """The result dict, or ("crash"|"hang", details)."""
        import selectors
        self.proc.stdin.write(f"{seed} {int(upstream)}\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.kill()
            return ("hang", f"no result after {timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.err.seek(0)
            err = self.err.read()[-3000:]
            return ("crash", f"the worker died (exit status {self.proc.returncode}): {err}")
        self.done += 1
        return json.loads(line)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.kill()


def save(out: Path, seed: int, kind: str, what: str, message: str, text: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"seed-{seed}-{kind}.mlir"
    n = 1
    while path.exists():
        n += 1
        path = out / f"seed-{seed}-{kind}-{n}.mlir"
    header = "\n".join("// " + line for line in
                       [f"polyopt differential fuzz: seed {seed} ({kind})",
                        f"replay: python3 scripts/fuzz_diff.py --replay {seed}",
                        f"with: {what}"] + message.splitlines()[:60])
    path.write_text(header + "\n" + text)
    return path


def campaign(args) -> int:
    os.nice(10)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    first = seed
    deadline = time.time() + args.minutes * 60
    totals = Counter()
    kinds = Counter()
    refused = Counter()
    failing = []
    w = Worker(args)
    print(f"fuzz_diff: seeds from {first}, {args.minutes} minutes, failures to {args.out}",
          flush=True)
    try:
        while time.time() < deadline:
            upstream = args.upstream_every > 0 and seed % args.upstream_every == 0
            result = w.run(seed, upstream, args.timeout)
            if isinstance(result, tuple):
                kind, message = result
                totals["programs"] += 1
                kinds[kind] += 1
                text = _text_of(seed)
                failing.append(seed)
                p = save(args.out, seed, kind, "(the whole program)", message, text)
                print(f"  seed {seed}: {kind}: {message[:300]} -> {p}", flush=True)
                w = Worker(args)
            else:
                totals["programs"] += 1
                totals["runs"] += result["runs"]
                totals["upstream"] += result["upstream_runs"]
                refused.update(result["refused"])
                if result["failures"]:
                    failing.append(seed)
                for f in result["failures"]:
                    kinds[f["kind"]] += 1
                    p = save(args.out, seed, f["kind"], f["what"], f["message"], f["text"])
                    print(f"  seed {seed}: {f['kind']} with {f['what']}: "
                          f"{f['message'].splitlines()[0][:300]} -> {p}", flush=True)
                if w.done >= 150:          # JIT engines accumulate: a fresh worker
                    w.close()
                    w = Worker(args)
            if totals["programs"] % 25 == 0:
                print(f"  {totals['programs']} programs, {totals['runs']} runs, "
                      f"{totals['upstream']} upstream runs, {len(failing)} failing",
                      flush=True)
            seed += 1
    finally:
        w.close()
    print(f"\nfuzz_diff: seeds {first}..{seed - 1}: {totals['programs']} programs, "
          f"{totals['runs']} polyopt runs, {totals['upstream']} upstream runs")
    print(f"failing programs: {len(failing)}" +
          (f" (seeds {', '.join(map(str, failing[:50]))})" if failing else ""))
    for kind, n in sorted(kinds.items()):
        print(f"  {kind}: {n}")
    if refused:
        print("refusals (allowed: schedules, tile attributes, --hopt-blis):")
        for msg, n in refused.most_common(15):
            print(f"  {n:5d}  {msg}")
    return 1 if failing else 0


def _text_of(seed: int) -> str:
    _paths()
    try:
        return _case(seed).text
    except Exception as e:  # noqa: BLE001
        return f"// (the program could not be regenerated: {e})\n"


def replay(args) -> int:
    _paths()
    case = _case(args.replay)
    print(case.description)
    print(case.text)
    result = _check(args.replay, True, None, args.schedules)
    print(f"{result['runs']} runs, {result['upstream_runs']} upstream runs, "
          f"refused: {result['refused']}")
    for f in result["failures"]:
        print(f"\n{f['kind']} with {f['what']}:\n{f['message']}")
    return 1 if result["failures"] else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20, help="how long to run (default 20)")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "polyopt-fuzz-diff",
                    help="where failing programs are saved (default: $TMPDIR/polyopt-fuzz-diff)")
    ap.add_argument("--upstream-every", type=int, default=4, metavar="K",
                    help="run mlir-runner-22 on every K-th program (default 4; 0: never)")
    ap.add_argument("--flag-sets", type=int, default=None, metavar="N",
                    help="flag combinations per program besides the baseline (default: all)")
    ap.add_argument("--schedules", type=int, default=3,
                    help="random schedules per affine program (default 3)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds one program may take before it counts as a hang")
    ap.add_argument("--replay", type=int, default=None, metavar="SEED",
                    help="run one program and print everything about it")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.replay is not None:
        return replay(args)
    return campaign(args)


if __name__ == "__main__":
    sys.exit(main())
