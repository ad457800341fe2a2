"""How many of the CFG fuzzer's functions lift-cf-to-scf lifts, and why the others stay as
branches: the fuzzer's programs (:func:`cfg_fuzzer.generate`) through every pipeline of
:data:`cfg_fuzzer.PIPELINES`, lifted only (no JIT, no run: ``cfg_fuzzer.py`` checks that the
lifted functions compute what the branches do).

``python3 tests/fuzz/lift_census.py --seeds 0:200`` prints the lifted fraction per pipeline
and the remarks of the functions left as branches, most frequent first; ``--cfgs 0:1000``
does the same for the random CFGs (:func:`cfg_fuzzer.random_cfg`), counting apart those with
a cycle entered at several blocks (irreducible).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cfg_fuzzer import PIPELINES, generate, mlir_opt, polyopt_lift, random_cfg  # noqa: E402


def census(seeds, pipelines=PIPELINES, examples: int = 0):
    """(lifted, not lifted, reasons, per pipeline) over ``seeds`` x ``pipelines``; a CFG with
    one block (nothing to lift) counts in neither."""
    lifted = not_lifted = 0
    reasons: collections.Counter = collections.Counter()
    per: dict = collections.defaultdict(lambda: [0, 0])
    shown: collections.Counter = collections.Counter()
    for seed in seeds:
        prog = generate(seed)
        for flags in pipelines:
            cf = mlir_opt(prog.text, flags)
            if cf is None:
                continue
            _, remarks = polyopt_lift(cf)
            label = " ".join(flags)
            bad = [r for r in remarks if "not lifted" in r]
            if bad:
                not_lifted += 1
                per[label][1] += 1
                why = bad[0].split("to scf: ", 1)[-1].split(";")[0]
                reasons[why] += 1
                if shown[why] < examples:
                    shown[why] += 1
                    print(f"# seed {seed} {label}: {why}")
            elif remarks:
                lifted += 1
                per[label][0] += 1
    return lifted, not_lifted, reasons, per


def cfg_census(seeds):
    """(lifted, not lifted, irreducible lifted, irreducible, reasons) over the random CFGs of
    ``seeds``."""
    import polyopt
    from polyopt.affine.lift_cf_to_scf import _irreducible_cycle
    lifted = not_lifted = irr_lifted = irr = 0
    reasons: collections.Counter = collections.Counter()
    for seed in seeds:
        text = random_cfg(seed).text
        func = next(op for op in polyopt.parse(text).walk() if op.name == "func.func")
        is_irr = _irreducible_cycle(func.regions[0]) is not None
        _, remarks = polyopt_lift(text)
        bad = [r for r in remarks if "not lifted" in r]
        irr += is_irr
        if bad:
            not_lifted += 1
            reasons[bad[0].split("to scf: ", 1)[-1].split(";")[0]] += 1
        else:
            lifted += 1
            irr_lifted += is_irr
    return lifted, not_lifted, irr_lifted, irr, reasons


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:100", help="START:STOP")
    ap.add_argument("--examples", type=int, default=0, help="seeds to print per reason")
    ap.add_argument("--cfgs", default=None, help="START:STOP: the random CFGs instead")
    args = ap.parse_args(argv)
    if args.cfgs:
        start, stop = map(int, args.cfgs.split(":"))
        lifted, not_lifted, irr_lifted, irr, reasons = cfg_census(range(start, stop))
        print(f"{lifted} of {lifted + not_lifted} random CFGs lifted; irreducible: {irr_lifted} "
              f"of {irr}")
        for why, k in reasons.most_common():
            print(f"{k:5d}  {why}")
        return 0
    start, stop = map(int, args.seeds.split(":"))
    lifted, not_lifted, reasons, per = census(range(start, stop), examples=args.examples)
    total = lifted + not_lifted
    print(f"{lifted} of {total} multi-block functions lifted "
          f"({100 * lifted / max(total, 1):.1f}%), {not_lifted} left as branches")
    for label, (a, b) in per.items():
        print(f"  {a:4d} / {a + b:4d}  {label}")
    for why, k in reasons.most_common():
        print(f"{k:5d}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
