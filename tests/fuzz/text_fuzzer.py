"""The text fuzzer: mutations of the examples and of the MLIR in the tests, and the check every
input must pass (issue 13, item 7).

An input ends in success or in a :class:`PolyoptError` with a location.  An input that parses
must also print to text that parses back to the same text (a fixed point: after one more round
where mlir-opt-22's own affine simplification needs it, see ``_check``), its generic print must
read back to the same module, and it must lower to LLVM IR (``prepare_for_lowering`` then
``lower_module``) or give a located error.  Anything else is a
failure: another exception (an internal error), an error without a location, a printed module
that does not read back, more than :data:`CPU_SECONDS` of CPU time.

Used by ``tests/fuzz/test_text_fuzz.py`` (a few hundred inputs, seeded) and by
``scripts/fuzz_text.py`` (long campaigns in a subprocess with memory and time limits).
"""

from __future__ import annotations

import ast
import functools
import glob
import os
import random
import re
import time
from dataclasses import dataclass
from typing import Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

#: The per-input budget (CPU seconds of the checking process).
CPU_SECONDS = 1.0
#: Inputs are cut to this size (after each mutation, so that repeated ones stay small):
#: polyopt reads, prints and lowers about 100 KB in a second, and past it a linear cost would
#: count as slow.
MAX_INPUT_BYTES = 64_000


# ---------------------------------------------------------------------------------------------
# the corpus


def _snippets_in(path: str) -> list[str]:
    """The string constants of a test file that look like MLIR modules."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, UnicodeDecodeError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                "{" in node.value and re.search(r"\bfunc(\.func)? @|\bmodule\b", node.value):
            found.append(node.value)
    return found


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    """The seeds: ``examples/*.mlir``, the ``.mlir`` files under ``tests/`` and the MLIR string
    constants of the tests that polyopt parses, in a fixed order."""
    import polyopt
    from polyopt.affine.diagnostics import PolyoptError
    texts: list[str] = []
    for pattern in ("examples/*.mlir", "tests/**/*.mlir"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True)):
        texts.extend(_snippets_in(path))
    seeds, seen = [], set()
    for text in texts:
        if text in seen:
            continue
        seen.add(text)
        try:
            polyopt.parse(text)
        except PolyoptError:
            continue
        seeds.append(text)
    return tuple(seeds)


# ---------------------------------------------------------------------------------------------
# mutations

_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|\s+|%[A-Za-z0-9_$.\-]+(?:#[0-9]+)?'
                    r"|[@^#!][A-Za-z0-9_$.\-]+|0x[0-9a-fA-F]+"
                    r"|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|[A-Za-z_][A-Za-z0-9_$.]*|->|.",
                    re.S)
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")

INTERESTING_TOKENS = [
    "{", "}", "(", ")", "<", ">", "[", "]", ",", ":", "=", "->", "?", "x", "*", "+", "-",
    "%0", "%arg0", "%c0", "%1#1", "@f", "@main", "#map", "#map1", "#set", "#loc", "!t", "^bb0:",
    "^bb1", "loc(", "loc(#loc)", 'loc("a.mlir":1:2)', "loc(unknown)", "dense<", "dense<1>",
    '"0x00"', "array<i32: 0, 0, 0>", "affine.for", "affine.if", "affine.yield", "affine.load",
    "affine.store", "affine.apply", "arith.constant", "arith.addf", "memref.alloc()",
    "memref.dim", "func.func", "func.call", "module", "return", "else", "index", "i0", "i1",
    "i8", "i64", "f16", "bf16", "f32", "f64", "vector<4xf32>", "memref<?xf32>",
    "memref<4x4xf64>", "tensor<2xf32>", "affine_map<(d0) -> (d0)>", "affine_set<(d0) : (d0 >= 0)>",
    "step", "to", "iter_args", "min", "max", "floordiv", "ceildiv", "mod", "symbol(", "true",
    "false", "unit", "attributes", "private", "strided<[?, 1], offset: ?>", "<{", "}>", "\"",
    "hop.matmul", "linalg.matmul", "ins(", "outs(",
]

INTERESTING_NUMBERS = [
    "0", "1", "-1", "-0", "2", "3", "7", "17", "255", "256", "65535", "65536", "2147483647",
    "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
    "18446744073709551616", "99999999999999999999", "1" + "0" * 400, "9" * 5000, "0.0", "-0.0",
    "1.5", "1e999", "1.0e-999", "3.4028235e+38", "0x7FC00000", "0xFFFFFFFFFFFFFFFFFF",
    "0x7E00", "0x0", "16777216", "1073741824",
]

GARBAGE = [b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\t", b"\r", b"\r\n",
           "é".encode(), "\u00a0".encode(), "\u2028".encode(), b"\\", b"\"", b"'", b"`",
           b"$", b"\x1b[0m", b"//", b"/*"]


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _significant(tokens: list[str]) -> list[int]:
    return [k for k, t in enumerate(tokens) if not t.isspace() and not t.startswith("//")]


def mutate(text: str, rng: random.Random, other: Optional[str] = None) -> bytes:
    """One to three random mutations of ``text`` (``other`` is another seed for splices)."""
    data = text
    raw: Optional[bytes] = None
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(MUTATIONS)
        if kind == "garbage":
            base = raw if raw is not None else data.encode("utf-8")
            pos = rng.randrange(len(base) + 1)
            junk = b"".join(rng.choice(GARBAGE) for _ in range(rng.randint(1, 3))) \
                if rng.random() < 0.8 else rng.randbytes(rng.randint(1, 8))
            raw = base[:pos] + junk + base[pos:]
            continue
        if raw is not None:          # text mutations after garbage: on the decodable text
            data = raw.decode("utf-8", errors="replace")
            raw = None
        data = _MUTATORS[kind](data, rng, other)[:MAX_INPUT_BYTES]
    return raw[:MAX_INPUT_BYTES] if raw is not None else data.encode("utf-8")[:MAX_INPUT_BYTES]


def _delete_token(text, rng, other):
    tokens = _tokens(text)
    sig = _significant(tokens)
    if sig:
        del tokens[rng.choice(sig)]
    return "".join(tokens)


def _swap_tokens(text, rng, other):
    tokens = _tokens(text)
    sig = _significant(tokens)
    if len(sig) >= 2:
        a, b = rng.sample(sig, 2)
        if rng.random() < 0.5:      # often a neighbour: more interesting than far-apart tokens
            b = sig[min(sig.index(a) + 1, len(sig) - 1)]
        tokens[a], tokens[b] = tokens[b], tokens[a]
    return "".join(tokens)


def _insert_token(text, rng, other):
    tokens = _tokens(text)
    pos = rng.randrange(len(tokens) + 1)
    pool = rng.choice((INTERESTING_TOKENS, INTERESTING_NUMBERS, tokens or INTERESTING_TOKENS))
    new = rng.choice(pool)
    tokens.insert(pos, new if rng.random() < 0.5 else " " + new + " ")
    return "".join(tokens)


def _replace_token(text, rng, other):
    tokens = _tokens(text)
    sig = _significant(tokens)
    if sig:
        tokens[rng.choice(sig)] = rng.choice(INTERESTING_TOKENS + tokens)
    return "".join(tokens)


def _mutate_number(text, rng, other):
    tokens = _tokens(text)
    numbers = [k for k, t in enumerate(tokens) if _NUMBER.fullmatch(t)]
    if not numbers:
        return _insert_token(text, rng, other)
    for k in rng.sample(numbers, min(len(numbers), rng.choice((1, 1, 2, 5)))):
        t = tokens[k]
        choice = rng.random()
        if choice < 0.5:
            tokens[k] = rng.choice(INTERESTING_NUMBERS)
        elif choice < 0.7:
            tokens[k] = "-" + t
        elif choice < 0.85 and t.isdigit() and len(t) < 30:
            tokens[k] = str(int(t) + rng.choice((-2, -1, 1, 2, 1 << 32, 1 << 63, 1 << 64)))
        else:
            tokens[k] = t * rng.randint(2, 30)       # more digits
    return "".join(tokens)


def _nudge_number(text, rng, other):
    """A number made a little different (bounds, sizes, steps, subscripts): mostly still valid
    input, so the printer and the lowering see it."""
    tokens = _tokens(text)
    numbers = [k for k, t in enumerate(tokens) if t.isdigit() and len(t) < 12]
    if not numbers:
        return text
    k = rng.choice(numbers)
    v = int(tokens[k])
    tokens[k] = str(max(0, rng.choice((v - 1, v + 1, v * 2, v // 2, 0, 1, v + 7, v * 3 + 1))))
    return "".join(tokens)


_TYPES = ["index", "i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]


def _swap_type(text, rng, other):
    """A scalar type replaced by another one (everywhere, or at one place)."""
    tokens = _tokens(text)
    found = [k for k, t in enumerate(tokens) if t in _TYPES or re.fullmatch(r"[0-9x?]*x(i|f|bf)[0-9]+|[0-9x?]*xindex", t)]
    if not found:
        return text
    k = rng.choice(found)
    old = re.search(r"(index|bf16|[if][0-9]+)$", tokens[k]).group(0)
    new = rng.choice(_TYPES)
    if rng.random() < 0.5:
        return "".join(t[:len(t) - len(old)] + new if t.endswith(old) and k2 in found else t
                       for k2, t in enumerate(tokens))
    tokens[k] = tokens[k][:len(tokens[k]) - len(old)] + new
    return "".join(tokens)


def _truncate(text, rng, other):
    return text[:rng.randrange(len(text) + 1)]


_NESTERS = [("(", ")"), ("[", "]"), ("{", "}"), ("<", ">"), ("-", ""), ("(-", ")"),
            ("affine.for %z = 0 to 1 {\n", "}\n"), ("module {\n", "}\n")]


def _deep_nesting(text, rng, other):
    """A token (or the whole text) wrapped in many brackets, minus signs, loops or modules."""
    depth = rng.choice((20, 60, 98, 99, 100, 101, 150, 1000, 5000))
    opener, closer = rng.choice(_NESTERS)
    if rng.random() < 0.2:
        return opener * depth + text + closer * depth
    tokens = _tokens(text)
    sig = _significant(tokens)
    if not sig:
        return opener * depth + text + closer * depth
    k = rng.choice(sig)
    tokens[k] = opener * depth + tokens[k] + closer * depth
    return "".join(tokens)


def _long_line(text, rng, other):
    tokens = _tokens(text)
    sig = _significant(tokens)
    if not sig:
        return text
    k = rng.choice(sig)
    sep = rng.choice((", ", " ", "", "\n"))
    count = min(rng.choice((100, 1000, 3000, 10000)),
                MAX_INPUT_BYTES // (len(tokens[k]) + len(sep)) + 1)
    tokens[k] = sep.join([tokens[k]] * count)
    return "".join(tokens)


def _duplicate_line(text, rng, other):
    """A line repeated (redefinitions, or many ops: up to 100 copies keeps a line of the
    heaviest ops, a convolution that expands into a 6-deep nest, within the CPU budget)."""
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    lines[k:k + 1] = [lines[k]] * min(rng.choice((2, 2, 3, 30, 100)),
                                      MAX_INPUT_BYTES // (len(lines[k]) + 1) + 1)
    return "\n".join(lines)


def _delete_line(text, rng, other):
    lines = text.split("\n")
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def _splice(text, rng, other):
    """A line of another seed inserted at a line boundary (ops the seed does not have)."""
    lines = text.split("\n")
    donor = (other or text).split("\n")
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(donor))
    return "\n".join(lines)


_MUTATORS = {
    "delete": _delete_token, "swap": _swap_tokens, "insert": _insert_token,
    "replace": _replace_token, "number": _mutate_number, "nudge": _nudge_number,
    "type": _swap_type, "truncate": _truncate,
    "nesting": _deep_nesting, "long_line": _long_line, "duplicate_line": _duplicate_line,
    "delete_line": _delete_line, "splice": _splice,
}
# weights: the cheap local mutations most often
MUTATIONS = (["delete", "swap", "insert", "replace", "number", "nudge"] * 4
             + ["type", "truncate", "duplicate_line", "delete_line", "splice"] * 2
             + ["garbage", "nesting", "long_line"])


def make_input(seed: int) -> bytes:
    """The input number ``seed`` of a campaign: a mutation of one corpus seed."""
    rng = random.Random(seed)
    seeds = corpus()
    return mutate(rng.choice(seeds), rng, rng.choice(seeds))


# ---------------------------------------------------------------------------------------------
# the check


def _check_upstream(printed: str) -> None:
    import subprocess
    proc = subprocess.run(["mlir-opt-22", "--allow-unregistered-dialect", "-"], input=printed,
                          capture_output=True, text=True, timeout=60)
    if proc.returncode:
        raise Failure("upstream", f"mlir-opt-22 refuses what polyopt prints: "
                                  f"{proc.stderr.strip()}\n--- printed:\n{printed}")
    if proc.stdout.rstrip() != printed.rstrip():
        raise Failure("upstream", f"mlir-opt-22 prints it differently\n--- polyopt:\n"
                                  f"{printed}\n--- mlir-opt-22:\n{proc.stdout}")


@dataclass
class Failure(Exception):
    """An input polyopt mishandled: ``kind`` (internal, unlocated, reparse, fixed-point, slow)
    and what happened."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def _reprint(printed: str, name: str) -> str:
    from polyopt.affine.diagnostics import PolyoptError
    from polyopt.affine.parser import parse
    from polyopt.affine.printer import print_module
    try:
        return print_module(parse(printed, name))
    except PolyoptError as e:
        raise Failure("reparse", f"the printed module does not parse: {e}\n"
                                 f"--- printed:\n{printed}") from None


def _located(e, stage: str) -> str:
    if e.loc is None:
        raise Failure("unlocated", f"{stage}: {type(e).__name__} without a location: {e}")
    return f"{stage} error"


def check_input(data: bytes, name: str = "fuzz.mlir", upstream: bool = False) -> str:
    """Run ``data`` through polyopt; the outcome ("parse error", "ok", ...), or
    :class:`Failure`.  With ``upstream``, what polyopt prints for an input it reads must also
    be read by mlir-opt-22 and printed back identically (kind "upstream"; the time mlir-opt
    takes is not counted)."""
    start = time.process_time()
    outcome = _check(data, name, upstream)
    spent = time.process_time() - start
    if spent > CPU_SECONDS:
        # once more before calling it slow: a blow-up on the input repeats, one-time costs
        # (a module imported lazily, the first JIT or target description of the process)
        # and a neighbour's load on a shared core do not (CI 2026-11-25: 1.08 s, then 0.08 s)
        start = time.process_time()
        _check(data, name, upstream)
        again = time.process_time() - start
        if again > CPU_SECONDS:
            raise Failure("slow", f"{spent:.2f} s then {again:.2f} s of CPU time (budget "
                                  f"{CPU_SECONDS} s)")
    return outcome


def _check(data: bytes, name: str, upstream: bool = False) -> str:
    from polyopt.affine.diagnostics import PolyoptError, decode_source
    from polyopt.affine.parser import parse
    from polyopt.affine.printer import print_module
    from polyopt.codegen.target import host_target
    from polyopt.codegen.to_llvm import lower_module
    from polyopt.pipeline import prepare_for_lowering
    try:
        try:
            module = parse(decode_source(data, name), name)
        except PolyoptError as e:
            return _located(e, "parse")
        printed = print_module(module)
        again = _reprint(printed, "printed.mlir")
        if again != printed:
            # mlir-opt-22's affine simplification is not idempotent and polyopt's matches it:
            # (d0) -> (d0 * 16 + (d0 * -2 + 5) * 1) prints as d0 * 16 + d0 * -2 + 5, which
            # reads back as d0 * 14 + 5; one more round must change nothing
            third = _reprint(again, "printed-again.mlir")
            if third != again:
                raise Failure("fixed-point", f"printing is not a fixed point\n--- printed:\n"
                                             f"{printed}\n--- printed again:\n{again}\n"
                                             f"--- and again:\n{third}")
            printed = again
            module = parse(printed, "printed.mlir")
        generic = print_module(module, generic=True)
        try:
            from_generic = print_module(parse(generic, "generic.mlir"))
        except PolyoptError as e:
            raise Failure("reparse", f"the generic print does not parse: {e}\n"
                                     f"--- printed:\n{generic}") from None
        if from_generic != printed:
            raise Failure("fixed-point", f"the generic print reads back differently\n"
                                         f"--- custom:\n{printed}\n--- from generic:\n"
                                         f"{from_generic}")
        if upstream:
            _check_upstream(printed)
        try:
            prepare_for_lowering(module)
            lower_module(module, host_target())
        except PolyoptError as e:
            return _located(e, "lowering")
        return "ok"
    except Failure:
        raise
    except Exception as e:   # noqa: BLE001  (what the fuzzer is looking for)
        import traceback
        raise Failure("internal", f"{type(e).__name__}: {e}\n"
                                  f"{''.join(traceback.format_exc(limit=-8))}") from None
