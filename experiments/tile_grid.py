"""A small measured grid of register-tile forms, tile shapes, blockings and K unrolling for
``hop.matmul`` (all passes), each point as its ratio to numpy (OpenBLAS, one thread) timed in
the same run, to check the parameter model's default against the best point (issue 20: the
default within 3% of the grid's best).

    python3 -m experiments.tile_grid                       # f64 and f32, 2088x2048x2048, 1000^3
    python3 -m experiments.tile_grid --dtypes f64 --sizes 1000x1000x1000 --stages tiles
    python3 -m experiments.tile_grid --table               # print what the JSON holds

Stages, coarse then refined around the best (each stage reads the previous one's results):

* ``tiles``: every register tile of the list (both forms where ``--forms`` says so; row-form
  tiles in both loop orders, GEBP and GEPB, ``l2_block`` A and B) with the model's blocking,
  and the model's default;
* ``blocking``: the two best tiles over K_C x M_C (GEBP) or K_C x N_C (GEPB);
* ``ku``: the best point over K_U.

Resumable: every point measured is written to the JSON file (``--out``) at once, keyed by CPU,
size, type and parameters; a rerun skips the points it holds (``--again`` remeasures).  Points
are timed in small batches (``--batch``), each batch against numpy in one
:func:`polyopt.bench.bench_matmul` run, with the model's default in every batch so that drift
between batches shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

from polyopt.bench import Variant, bench_matmul  # noqa: E402

ALL_PASSES = {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}

# register tiles (M_R, N_R in vectors of the element type): both orientations, the shapes
# BLIS/OpenBLAS kernels use (AVX-512: 8x24/24x8 f64 row form, 16x14/14x16 column form...)
TILES_512 = [(4, 4), (3, 4), (6, 4), (4, 3), (8, 3), (8, 2), (12, 2), (14, 2), (6, 2),
             (24, 1), (28, 1)]   # one vector of B per row: A's broadcasts fold as {1toN}
TILES_256 = [(6, 2), (4, 3), (8, 1), (4, 2), (3, 4), (12, 1)]
# column form tiles as (M_R in vectors, N_R): A's column is M_R / lanes vectors
COL_TILES_512 = [(2, 14), (2, 12), (3, 8), (2, 8), (1, 24), (2, 10), (4, 6)]
COL_TILES_256 = [(2, 6), (3, 4), (1, 12), (2, 4)]
K_CS = [128, 192, 256, 320, 384]
M_CS = [96, 192, 288, 480]
# GEPB (l2_block B): K_C x N_C, B's block in L2 (A's M_C x K_C block in L3: the model's M_C)
GEPB_K_CS = [128, 192, 256, 384, 512]
GEPB_N_CS = [64, 128, 256, 512]
K_US = [1, 2, 4, 8]


def cpu_signature() -> str:
    """The CPU's model name and family/model numbers (keys the results; the CPU changes
    between sessions)."""
    name, fam, model = "?", "?", "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and name == "?":
                    name = value
                elif key == "cpu family" and fam == "?":
                    fam = value
                elif key == "model" and model == "?":
                    model = value
    except OSError:
        pass
    return f"{name} (family {fam} model {model})"


def point_key(size, dtype, p: dict) -> str:
    if not p:
        return f"{size} {dtype} default"
    return f"{size} {dtype} " + " ".join(f"{k}={p[k]}" for k in sorted(p))


def label_of(p: dict) -> str:
    if not p:
        return "default"
    form = p.get("register_form", "row")
    order = {"A": " GEBP", "B": " GEPB"}.get(p.get("l2_block"), "")
    tile = f"{p['M_R']}x{p['N_R']}" if "M_R" in p else "model tile"
    rest = " ".join(f"{k}={p[k]}" for k in ("K_C", "M_C", "N_C", "K_U") if k in p)
    return f"{form}{order} {tile} {rest}".strip()


def model_choice(m, n, k, dtype, given=None) -> dict:
    from polyopt.pipeline import machine_model
    from polyopt.schedules.blis_schedule import default_blis_params
    p = default_blis_params(m, n, k, 8 if dtype == "f64" else 4, machine_model(),
                            dict(given or {}))
    out = {"M_R": p.M_R, "N_R": p.N_R, "K_C": p.K_C, "M_C": p.M_C, "K_U": p.K_U,
           "N_C": p.N_C, "l2_block": p.l2_block}
    form = getattr(p, "register_form", None)
    if form is not None:
        out["register_form"] = form
    return out


class Grid:
    def __init__(self, path, reps, batch, again):
        self.path, self.reps, self.batch, self.again = path, reps, batch, again
        self.cpu = cpu_signature()
        self.data = {}
        if os.path.exists(path):
            with open(path) as f:
                self.data = json.load(f)
        self.points = self.data.setdefault(self.cpu, {})

    def save(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def measure(self, size, dtype, params: list[dict]):
        m, n, k = size
        skey = f"{m}x{n}x{k}"
        todo = [p for p in params if self.again or point_key(skey, dtype, p) not in self.points]
        todo = [p for n_, p in enumerate(todo) if p not in todo[:n_]]
        # the default last in each batch: the first variant timed in a run loses a few %
        pending = [[p for p in todo[start:start + self.batch] if p] + [{}]
                   for start in range(0, len(todo), self.batch)]
        retries = 0
        while pending:
            chunk = pending.pop(0)
            variants = [Variant(label_of(p), ALL_PASSES, {x: v for x, v in p.items()})
                        for p in chunk]
            t0 = time.time()
            try:
                res = bench_matmul(m, n, k, dtype, reps=self.reps, variants=variants,
                                   measure_peak=False)
            except Exception as e:   # a point that does not compile: record why
                for p in chunk[1:]:
                    self.points[point_key(skey, dtype, p)] = {"params": p, "error": str(e)}
                print(f"  batch failed: {e}", file=sys.stderr)
                self.save()
                continue
            # a shared machine: a batch in which numpy ran well below its best seen speed was
            # disturbed by other processes; it is measured again (up to twice), then kept
            # flagged "noisy"
            ref = self.data.setdefault("_numpy_best", {})
            rkey = f"{self.cpu} {skey} {dtype}"
            ref[rkey] = max(ref.get(rkey, 0.0), res.gflops(res.numpy))
            noisy = res.gflops(res.numpy) < 0.9 * ref[rkey]
            if noisy and retries < 2:
                print(f"  noisy batch (numpy {res.gflops(res.numpy):.1f} GFLOPS, best "
                      f"{ref[rkey]:.1f}): again", file=sys.stderr, flush=True)
                retries += 1
                pending.insert(0, chunk)
                continue
            retries = 0
            for p, r in zip(chunk, res.variants):
                self.points[point_key(skey, dtype, p)] = {"noisy": noisy,
                    "params": p, "ratio": res.ratio(r), "gflops": res.gflops(r.timing),
                    "numpy_gflops": res.gflops(res.numpy), "when": time.time(),
                    "model": model_choice(m, n, k, dtype, p) if p else
                    model_choice(m, n, k, dtype)}
            self.save()
            print(f"  {skey} {dtype}: " + ", ".join(
                f"{label_of(p)} {res.ratio(r):.3f}x" for p, r in zip(chunk, res.variants))
                + f"  ({time.time() - t0:.0f}s)", file=sys.stderr, flush=True)

    def results(self, size, dtype):
        m, n, k = size
        prefix = f"{m}x{n}x{k} {dtype} "
        return [v for key, v in self.points.items() if key.startswith(prefix) and "ratio" in v]


def tiles_for(dtype, forms, vector_bits):
    lanes = vector_bits // (64 if dtype == "f64" else 32)
    row = TILES_512 if vector_bits == 512 else TILES_256
    col = COL_TILES_512 if vector_bits == 512 else COL_TILES_256
    out = []
    if "row" in forms:
        out += [{"register_form": "row", "M_R": mr, "N_R": nv * lanes, "l2_block": order}
                for order in ("A", "B") for mr, nv in row]
    if "col" in forms:
        out += [{"register_form": "col", "M_R": mv * lanes, "N_R": nr} for mv, nr in col]
    return out


def best(results, n=1, pred=lambda r: True):
    rs = sorted((r for r in results if pred(r)), key=lambda r: -r["ratio"])
    return rs[:n]


def table(grid: Grid, sizes, dtypes, top=8) -> str:
    lines = [f"CPU: {grid.cpu}"]
    for dtype in dtypes:
        for size in sizes:
            rs = grid.results(size, dtype)
            if not rs:
                continue
            m, n, k = size
            default = [r for r in rs if not r["params"]]
            lines.append(f"\n{m}x{n}x{k} {dtype}: {len(rs)} points, ratio to OpenBLAS in the "
                         f"same run")
            if default:
                d = default[0]
                lines.append(f"  default ({label_of(d['model'])}): {d['ratio']:.3f}x, "
                             f"{d['gflops']:.1f} GFLOPS")
            for r in best(rs, top):
                lines.append(f"  {label_of(r['params']):40s} {r['ratio']:.3f}x  "
                             f"{r['gflops']:6.1f} GFLOPS  (model fills: "
                             f"K_C={r['model']['K_C']} M_C={r['model']['M_C']} "
                             f"N_C={r['model']['N_C']} K_U={r['model']['K_U']})")
            if default:
                b = best(rs)[0]
                lines.append(f"  default / best: {default[0]['ratio'] / b['ratio']:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", default="f64,f32")
    ap.add_argument("--sizes", default="2088x2048x2048,1000x1000x1000")
    ap.add_argument("--stages", default="tiles,blocking,ku")
    ap.add_argument("--forms", default="row,col")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--out", default="experiments/results/tile_grid.json")
    ap.add_argument("--again", action="store_true", help="remeasure points already held")
    ap.add_argument("--table", action="store_true", help="only print the table")
    args = ap.parse_args(argv)
    from polyopt.pipeline import machine_model
    grid = Grid(args.out, args.reps, args.batch, args.again)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    dtypes = args.dtypes.split(",")
    forms = args.forms.split(",")
    stages = args.stages.split(",")
    vbits = machine_model().vector_bits
    if not args.table:
        for dtype in dtypes:
            for size in sizes:
                print(f"{size} {dtype}", file=sys.stderr, flush=True)
                if "tiles" in stages:
                    grid.measure(size, dtype, [{}] + tiles_for(dtype, forms, vbits))
                rs = grid.results(size, dtype)
                if "blocking" in stages and rs:
                    pts = []
                    for r in best(rs, 2, lambda r: r["params"]):
                        tile = {x: r["params"][x]
                                for x in ("register_form", "M_R", "N_R", "l2_block")
                                if x in r["params"]}
                        if tile.get("l2_block") == "B":
                            for kc in GEPB_K_CS:
                                for nc in GEPB_N_CS:
                                    nc = max(tile["N_R"], nc - nc % tile["N_R"])
                                    pts.append(dict(tile, K_C=kc, N_C=nc))
                            continue
                        for kc in K_CS:
                            for mc in M_CS:
                                mc = max(tile["M_R"], mc - mc % tile["M_R"])
                                pts.append(dict(tile, K_C=kc, M_C=mc))
                    grid.measure(size, dtype, pts)
                rs = grid.results(size, dtype)
                if "ku" in stages and rs:
                    b = best(rs, 1, lambda r: r["params"])
                    if b:
                        p = {x: v for x, v in b[0]["params"].items() if x != "K_U"}
                        grid.measure(size, dtype, [dict(p, K_U=ku) for ku in K_US])
    print(table(grid, sizes, dtypes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
