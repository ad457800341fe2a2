"""Random programs (:mod:`cfg_fuzzer`) lowered to branches by mlir-opt-22, their blocks then
shuffled (the entry block stays first): values are used in blocks written before the blocks
that define them.  Dominance does not depend on the order of the blocks, so mlir-opt-22 reads
and prints them; polyopt must print the same text and compute what the Python reference of
the program computes."""

from __future__ import annotations

import random
import re

import pytest

import polyopt
from cfg_fuzzer import (_run_module, function_text, generate, mlir_opt, run_child,  # noqa: E402
                        same)

SEEDS = list(range(100, 112))
LOWERINGS = [("--convert-scf-to-cf",), ("--convert-scf-to-cf", "--canonicalize")]
SWITCH_SETS = [{}, {"hopt": True},
               {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}]
_BLOCK = re.compile(r"  \^bb[0-9]+")       # a block header of the function's region


def shuffle_blocks(text: str, rng: random.Random) -> str:
    """``text`` (mlir-opt-22's print of one function) with the blocks after the entry block
    in a random order."""
    lines = text.strip("\n").splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("  func.func @f("))
    end = next(k for k in range(len(lines) - 1, start, -1) if lines[k] == "  }")
    body = lines[start + 1:end]
    heads = [k for k, ln in enumerate(body) if _BLOCK.match(ln)]
    if len(heads) < 2:
        return text
    entry = body[:heads[0]]
    blocks = [body[a:b] for a, b in zip(heads, heads[1:] + [len(body)])]
    rng.shuffle(blocks)
    return "\n".join(lines[:start + 1] + entry + sum(blocks, []) + lines[end:]) + "\n"


def has_forward_use(module) -> bool:
    """Some op reads a value defined in a block written after the op's block."""
    for func in module.body.ops:
        blocks = func.regions[0].blocks
        position = {id(b): k for k, b in enumerate(blocks)}
        for k, b in enumerate(blocks):
            for op in b.ops:
                for inner in op.walk():
                    for v in inner.operands:
                        home = v.owner_block
                        if home is not None and position.get(id(home), -1) > k:
                            return True
    return False


@pytest.mark.parametrize("flags", LOWERINGS, ids=" ".join)
def test_shuffled_blocks_read_print_and_run_as_upstream(flags):
    rng = random.Random(len(flags))
    jobs, texts, forward = [], [], 0
    for seed in SEEDS:
        prog = generate(seed)
        lowered = mlir_opt(prog.text, flags)
        assert lowered is not None, prog.text
        shuffled = shuffle_blocks(lowered, rng)
        upstream = mlir_opt(shuffled, ())
        assert upstream is not None, f"mlir-opt-22 refuses the shuffled text:\n{shuffled}"
        module = polyopt.parse(shuffled)
        assert str(module) == upstream.rstrip("\n") + "\n", shuffled
        forward += has_forward_use(module)
        name = f"f{seed}"
        jobs.append((name, prog))
        texts.append(function_text(shuffled, name))
    assert forward >= len(SEEDS) // 2, forward      # the programs test what they are for
    module_text = "\n".join(texts) + "\n"
    for switches in SWITCH_SETS:     # --hopt lifts the branches back to scf (cloning them)
        kind, value = run_child(lambda: _run_module(module_text, jobs, switches), 300)
        assert kind == "ok", (switches, value)
        for name, prog in jobs:
            assert same(prog.expected(), value[name]), (switches, name, prog.expected(),
                                                        value[name])
