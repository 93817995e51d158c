"""`ptxforge grammar` checked with a real matcher: llguidance from PyPI (what
vLLM and SGLang run for Lark grammars, and what llama.cpp and vLLM run when
they are given GBNF and built or configured with llguidance).

- Every task reference (`ptxforge reference NAME`) is accepted by the Lark and
  the GBNF grammar, and by the `--task NAME --arch sm_90` grammar of its task.
- Modules of the nvcc corpora (tests/corpus, and tests/external where built) are accepted: each kernel once
  (from its -O3 configurations in turn) and each other configuration on its
  smallest module; the GBNF grammar on every other one of those. Matching all
  142 modules byte by byte takes about 30 s per format: PTXFORGE_GRAMMAR_ALL=1
  does it.
- A hallucinated opcode, an impossible type suffix, an invalid modifier chain
  and a wrong operand count are rejected at the mistake, and the lint rejects
  each mutant too.

xgrammar is not used: its wheel depends on torch (with CUDA wheels, gigabytes);
the EBNF form is the GBNF rules under another header (GrammarTest checks that).

Run as a script (`python3 test_grammar.py PTXFORGE`) it prints the grammar
sizes and compile times that docs/guided.md records.

Environment: PTXFORGE (the binary), PTXFORGE_CORPUS_MANIFEST (corpus_manifest.tsv).
"""

import glob
import os
import subprocess
import sys
import time

import pytest

try:
    import llguidance
    from llguidance.gbnf_to_lark import gbnf_to_lark
except ImportError as error:  # not installed, or a wheel that does not load here
    pytest.skip(f"llguidance is not importable ({error}); pip install llguidance", allow_module_level=True)

PTXFORGE = os.environ.get("PTXFORGE", "ptxforge")
MANIFEST = os.environ.get("PTXFORGE_CORPUS_MANIFEST", "")


class _ByteTokenizer:
    """One token per byte (and an end token): the matcher then sees the text
    itself, not a model's tokenization of it."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = [256]

    def __call__(self, text):
        return list(text if isinstance(text, bytes) else text.encode())


_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()), slices=[])


def run(*args):
    return subprocess.run([PTXFORGE, *args], capture_output=True, text=True, check=False)


def grammar_text(fmt, *extra):
    result = run("grammar", "--format", fmt, *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout


def matcher(fmt, *extra):
    text = grammar_text(fmt, *extra)
    lark = text if fmt == "lark" else gbnf_to_lark(text)
    compiled = llguidance.LLMatcher.grammar_from_lark(lark)
    m = llguidance.LLMatcher(_TOKENIZER, compiled, log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def first_rejected_byte(m, data):
    """None when the grammar accepts `data` whole; else the offset of the first byte it refuses."""
    m = m.deep_copy()
    consumed = m.try_consume_tokens(list(data))
    if consumed == len(data) and m.is_accepting():
        return None
    return consumed


def describe(data, offset):
    line = data[:offset].count(b"\n") + 1
    return f"line {line}: {data[max(0, offset - 50):offset]!r} ^ {data[offset:offset + 30]!r}"


def task_names():
    result = run("tasks", "--format", "json")
    assert result.returncode == 0, result.stderr
    import json

    listed = json.loads(result.stdout)
    rows = listed["tasks"] if isinstance(listed, dict) else listed
    return [row["name"] for row in rows]


@pytest.fixture(scope="module")
def references():
    out = {}
    for name in task_names():
        result = run("reference", name, "--arch", "sm_90")
        if result.returncode != 0:
            pytest.skip(f"ptxforge reference {name} failed (no NVRTC?): {result.stderr.strip()}")
        out[name] = result.stdout.encode()
    return out


def corpus_modules():
    """Each kernel once, from its -O3 configurations in turn, and each other
    configuration (debug, lineinfo, fast math, rdc) on its smallest module."""
    if not MANIFEST or not os.path.exists(MANIFEST):
        return []
    rows = [line.rstrip("\n").split("\t") for line in open(MANIFEST)]
    rows = [r for r in rows if len(r) == 4 and os.path.exists(r[3])]
    # tests/external's nvcc modules, where lint_vs_ptxas has built them.
    external = os.path.join(os.path.dirname(MANIFEST), "external")
    for path in sorted(glob.glob(os.path.join(external, "*", "*.ptx"))):
        config = os.path.basename(os.path.dirname(path))
        rows.append([config, "external/" + os.path.basename(path)[:-4], "", path])
    if os.environ.get("PTXFORGE_GRAMMAR_ALL") == "1":
        return [r[3] for r in rows]
    chosen = []
    for i, kernel in enumerate(sorted({r[1] for r in rows})):
        mine = sorted(r for r in rows if r[1] == kernel)
        o3 = [r for r in mine if r[0].startswith("o3-")] or mine
        chosen.append(o3[i % len(o3)][3])
    for config in sorted({r[0] for r in rows if not r[0].startswith("o3-")}):
        paths = [r[3] for r in rows if r[0] == config]
        chosen.append(min(paths, key=os.path.getsize))
    return chosen


@pytest.mark.parametrize("fmt", ["lark", "gbnf"])
def test_every_task_reference_is_accepted(fmt, references):
    m = matcher(fmt)
    for name, data in references.items():
        offset = first_rejected_byte(m, data)
        assert offset is None, f"{fmt}: reference of {name} rejected at {describe(data, offset)}"


def test_task_grammar_accepts_its_reference_and_only_its_signature(references):
    for name, data in references.items():
        m = matcher("lark", "--task", name, "--arch", "sm_90")
        offset = first_rejected_byte(m, data)
        assert offset is None, f"--task {name}: reference rejected at {describe(data, offset)}"
    # Another kernel name, or one parameter more, is refused.
    name, data = next(iter(references.items()))
    m = matcher("lark", "--task", name, "--arch", "sm_90")
    renamed = data.replace(f".entry {name}(".encode(), b".entry other_kernel(")
    assert first_rejected_byte(m, renamed) is not None
    extra = data.replace(f"{name}_param_0,".encode(), f"{name}_param_0,\n\t.param .u64 {name}_param_9,".encode(), 1)
    assert extra != data and first_rejected_byte(m, extra) is not None


@pytest.mark.parametrize("fmt", ["lark", "gbnf"])
def test_corpus_modules_are_accepted(fmt):
    modules = corpus_modules()
    if not modules:
        pytest.skip("no nvcc corpus manifest (configure with nvcc, build corpus_ptx)")
    if fmt == "gbnf" and os.environ.get("PTXFORGE_GRAMMAR_ALL") != "1":
        modules = modules[::2]  # the same rules as Lark's: half the sample keeps the test short
    m = matcher(fmt)
    for path in modules:
        data = open(path, "rb").read()
        offset = first_rejected_byte(m, data)
        assert offset is None, f"{fmt}: {path} rejected at {describe(data, offset)}"


# (what is planted, the text to replace in the saxpy reference, its replacement)
MISTAKES = [
    ("hallucinated opcode", b"mad.lo.s32", b"fmad.lo.s32"),
    ("hallucinated opcode", b"cvta.to.global.u64", b"cvta2.to.global.u64"),
    ("impossible type suffix", b"ld.param.f32", b"ld.param.f33"),
    ("impossible type suffix", b"mad.lo.s32", b"mad.lo.i32"),
    ("invalid modifier chain", b"setp.ge.s32", b"setp.gte.s32"),
    ("invalid modifier chain", b"ld.param.u64", b"ld.param.rn.u64"),
    ("invalid modifier chain", b"cvta.to.global.u64", b"cvta.to.global.sync.u64"),
]


@pytest.mark.parametrize("fmt", ["lark", "gbnf"])
@pytest.mark.parametrize("what,old,new", MISTAKES)
def test_planted_mistakes_are_rejected_at_the_mistake(fmt, what, old, new, references):
    data = references["saxpy"]
    assert old in data
    mutant = data.replace(old, new, 1)
    m = matcher(fmt)
    offset = first_rejected_byte(m, mutant)
    assert offset is not None, f"{fmt}: {what} ({new.decode()}) accepted"
    at = mutant.index(new)
    assert at <= offset <= at + len(new), f"{fmt}: {what} rejected elsewhere: {describe(mutant, offset)}"
    # The lint says no too: the grammar does not refuse what the lint takes.
    lint = subprocess.run([PTXFORGE, "lint", "-"], input=mutant, capture_output=True, check=False)
    assert lint.returncode == 1, lint.stdout


def test_wrong_operand_count_is_rejected(references):
    data = references["saxpy"]
    mutant = data.replace(b"mad.lo.s32 \t%r1, %r3, %r4, %r5;", b"mad.lo.s32 \t%r1, %r3, %r4;", 1)
    assert mutant != data
    offset = first_rejected_byte(matcher("lark"), mutant)
    assert offset is not None and mutant[offset:offset + 1] == b";"


@pytest.mark.parametrize("extra", [(), ("--arch", "sm_90a", "--task", "saxpy")])
def test_gbnf_keeps_llama_cpp_rules(extra):
    """What llama.cpp's GBNF parser refuses (llama-grammar.cpp): a rule that can
    reach itself before any character (left recursion), and an open repetition
    (`*`, `+`) of an item that can match nothing (which it rewrites into left
    recursion). Checked on the rules as llguidance's GBNF parser reads them."""
    from llguidance import gbnf_to_lark as g2l

    rules = g2l.GrammarParser().parse(grammar_text("gbnf", *extra))
    nullable = {name: False for name in rules}

    def is_nullable(node):
        if isinstance(node, g2l.LiteralNode):
            return node.value == ""
        if isinstance(node, g2l.RuleRefNode):
            return nullable[node.name]
        if isinstance(node, g2l.RepetitionNode):
            return node.min_times == 0 or is_nullable(node.node)
        if isinstance(node, g2l.SequenceNode):
            return all(is_nullable(n) for n in node.nodes)
        if isinstance(node, g2l.AlternativeNode):
            return any(is_nullable(n) for n in node.alternatives)
        return False  # a character class

    changed = True
    while changed:
        changed = False
        for name, rule in rules.items():
            if not nullable[name] and is_nullable(rule.alternatives):
                nullable[name] = changed = True

    def leading_rules(node):
        """The rules `node` can begin with."""
        if isinstance(node, g2l.RuleRefNode):
            return {node.name}
        if isinstance(node, g2l.RepetitionNode):
            return leading_rules(node.node)
        if isinstance(node, g2l.AlternativeNode):
            return set().union(*(leading_rules(n) for n in node.alternatives))
        if isinstance(node, g2l.SequenceNode):
            out = set()
            for n in node.nodes:
                out |= leading_rules(n)
                if not is_nullable(n):
                    break
            return out
        return set()

    def open_repetitions_of_nullable(node):
        if isinstance(node, g2l.RepetitionNode):
            if node.max_times is None and is_nullable(node.node):
                yield str(node)
            yield from open_repetitions_of_nullable(node.node)
        for child in getattr(node, "nodes", []) + getattr(node, "alternatives", []) if not isinstance(
                node, g2l.RepetitionNode) else []:
            yield from open_repetitions_of_nullable(child)

    for name, rule in rules.items():
        bad = list(open_repetitions_of_nullable(rule.alternatives))
        assert not bad, f"{name}: open repetition of an item that can be empty: {bad[0]}"
        # Left recursion: `name` reachable from itself through leading positions.
        seen, stack = set(), list(leading_rules(rule.alternatives))
        while stack:
            current = stack.pop()
            assert current != name, f"{name} is left-recursive"
            if current not in seen:
                seen.add(current)
                stack.extend(leading_rules(rules[current].alternatives))


def test_arch_leaves_out_hopper_opcodes():
    module = (b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
              b"\twgmma.fence.sync.aligned;\n\tret;\n}\n")
    assert first_rejected_byte(matcher("lark", "--arch", "sm_80"), module) is not None
    hopper = module.replace(b"sm_80", b"sm_90a")
    assert first_rejected_byte(matcher("lark", "--arch", "sm_90a"), hopper) is None


def measure():
    """Sizes and compile times of each grammar (docs/guided.md)."""
    for fmt, extra in [("lark", ()), ("gbnf", ()), ("lark", ("--task", "saxpy", "--arch", "sm_90"))]:
        text = grammar_text(fmt, *extra)
        start = time.perf_counter()
        lark = text if fmt == "lark" else gbnf_to_lark(text)
        compiled = llguidance.LLMatcher.grammar_from_lark(lark)
        m = llguidance.LLMatcher(_TOKENIZER, compiled, log_level=0)
        m.compute_bitmask()
        elapsed = time.perf_counter() - start
        print(f"{fmt:5} {' '.join(extra):28} {len(text):7} bytes  {text.count(chr(10)):4} lines  "
              f"compile + first mask {elapsed * 1000:.1f} ms  error={m.is_error()}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        PTXFORGE = sys.argv[1]
    measure()
