"""The exports of tests/export/export_e2e.sh loaded as a trainer would:
datasets.load_dataset("json", data_files=...), every file, every field with
the type docs/datasets.md gives it, and the columns TRL's trainers read.

PTXFORGE_EXPORT_DIR names the folder the e2e test wrote (CTest sets it and
runs the e2e test first, as a fixture).
"""
import json
import os
import pathlib

import pytest

datasets = pytest.importorskip("datasets", reason="`datasets` is not installed (scripts/install-deps.sh installs it)")

EXPORT_DIR = pathlib.Path(os.environ.get("PTXFORGE_EXPORT_DIR", ""))

# Column -> the datasets feature type every record must load as (datasets 4
# names lists List(...); older versions wrote [...]).
MESSAGE = {"content": datasets.Value("string"), "role": datasets.Value("string")}
MESSAGES = datasets.List(MESSAGE) if hasattr(datasets, "List") else [MESSAGE]
COMMON = {
    "schema_version": datasets.Value("int64"),
    "run_id": datasets.Value("int64"),
    "eval_id": datasets.Value("int64"),
    "task": datasets.Value("string"),
    "level": datasets.Value("int64"),
    "model": datasets.Value("string"),
    "arch": datasets.Value("string"),
    "prompt": MESSAGES,
}
ATTEMPT = {
    "attempt_id": datasets.Value("int64"),
    "candidate_id": datasets.Value("int64"),
    "round": datasets.Value("int64"),
    "slot": datasets.Value("int64"),
    "kind": datasets.Value("string"),
    "verdict": datasets.Value("string"),
    "timed": datasets.Value("bool"),
    "speedup": datasets.Value("float64"),
    "speedup_low": datasets.Value("float64"),
    "speedup_high": datasets.Value("float64"),
    "reward": datasets.Value("float64"),
}
FEATURES = {
    "sft": {**COMMON, **ATTEMPT, "prompt_attempt_id": datasets.Value("int64"), "completion": MESSAGES,
            "ptx": datasets.Value("string"), "registers": datasets.Value("int64")},
    "rl": {**COMMON, **ATTEMPT, "completion": MESSAGES, "ptx": datasets.Value("string"),
           "stage": datasets.Value("string"), "summary": datasets.Value("string"), "correct": datasets.Value("bool"),
           "temperature": datasets.Value("float64"), "strategies": datasets.Value("string"),
           "extract_error": datasets.Value("string"), "duplicate_of": datasets.Value("int64")},
    "pairs": {**COMMON, "chosen": MESSAGES, "rejected": MESSAGES,
              **{side + key: value for side in ("chosen_", "rejected_") for key, value in ATTEMPT.items()}},
}


def export_file(source, fmt):
    path = EXPORT_DIR / f"{source}-{fmt}.jsonl"
    if not EXPORT_DIR.name or not path.exists():
        pytest.fail(f"{path} is missing: run the export.e2e CTest first (it writes PTXFORGE_EXPORT_DIR)")
    return path


def load(path, **options):
    # A cache beside the files, which the e2e test makes anew each time.
    return datasets.load_dataset("json", data_files=str(path), split="train",
                                 cache_dir=str(path.parent / ".hf-cache"), **options)


@pytest.mark.parametrize("source", ["runs", "evals"])
@pytest.mark.parametrize("fmt", ["sft", "rl", "pairs"])
def test_each_export_loads_with_its_documented_types(source, fmt):
    path = export_file(source, fmt)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    if not lines:
        # An empty JSONL file has no columns to load; the e2e test says which exports must have records.
        assert fmt == "pairs", f"{path} is empty"
        return
    data = load(path)
    assert data.num_rows == len(lines)
    for column, feature in FEATURES[fmt].items():
        assert column in data.features, f"{fmt}: no column {column}"
        assert data.features[column] == feature, f"{fmt}.{column}: {data.features[column]} is not {feature}"
    # Values come back as written.
    assert data[0]["prompt"] == lines[0]["prompt"]
    assert data["run_id"] == [line["run_id"] for line in lines]


@pytest.mark.parametrize("source", ["runs", "evals"])
@pytest.mark.parametrize("fmt", ["sft", "rl", "pairs"])
def test_each_export_loads_block_by_block(source, fmt):
    # datasets types every column from a file's first block (10 MB by
    # default): a column null or an empty list there and filled further on
    # fails. Blocks of 4 KiB put that to the test on these small files.
    path = export_file(source, fmt)
    if path.stat().st_size == 0:
        return
    assert load(path, chunksize=4096).num_rows == len(path.read_text().splitlines())


def test_runs_and_evals_load_as_one_dataset():
    # No field is null (absent values are typed zeros and empty strings), so
    # files whose runs differ (an eval's and plain runs) agree on every type.
    both = datasets.load_dataset("json", data_files=[str(export_file("runs", "rl")), str(export_file("evals", "rl"))],
                                 split="train", cache_dir=str(EXPORT_DIR / ".hf-cache"))
    assert sorted(set(both["eval_id"])) == [0, 1]


def test_rl_diagnostics_and_reward_stages_are_structured():
    data = load(export_file("runs", "rl"))
    diagnostics = data.features["diagnostics"]
    diagnostic = diagnostics.feature if hasattr(diagnostics, "feature") else diagnostics[0]
    assert set(diagnostic) == {"code", "severity", "line", "column", "message", "hint"}
    assert set(data.features["reward_stages"]) == {"extract", "lint", "compile", "correct", "speed", "rejected"}
    lint = [row for row in data if row["verdict"] == "lint-error"]
    assert lint and any(d["code"] == "undeclared-register" for d in lint[0]["diagnostics"])
    assert all(row["ptx"] == "" and row["extract_error"] for row in data if row["verdict"] == "no-ptx")


def test_sft_and_pairs_have_the_columns_trl_reads():
    # SFTTrainer's conversational prompt-completion type: "prompt" and
    # "completion", each a list of {"role", "content"} messages; DPOTrainer's
    # conversational preference type: "prompt", "chosen", "rejected".
    sft = load(export_file("runs", "sft"))
    row = sft[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert [m["role"] for m in row["completion"]] == ["assistant"]
    assert row["completion"][0]["content"].startswith("```ptx\n")
    pairs = load(export_file("runs", "pairs"))
    assert pairs.num_rows > 0
    for row in pairs:
        assert [m["role"] for m in row["chosen"]] == [m["role"] for m in row["rejected"]] == ["assistant"]
        assert row["chosen"] != row["rejected"]
    # The columns a trainer does not read are dropped as usual.
    slim = pairs.select_columns(["prompt", "chosen", "rejected"])
    assert slim.column_names == ["prompt", "chosen", "rejected"]
