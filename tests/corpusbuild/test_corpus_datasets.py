"""A corpus built by `ptxforge corpus build` loads with Hugging Face `datasets`
exactly as its card says: one row per kept kernel, the documented features with
their types. Skips when `datasets` is not installed (scripts/install-deps.sh
installs it)."""
import json
import os
import pathlib
import subprocess

import pytest

datasets = pytest.importorskip("datasets", reason="datasets is not installed (pip install datasets)")

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    binary = os.environ.get("PTXFORGE_BIN")
    if not binary or not pathlib.Path(binary).exists():
        pytest.skip("PTXFORGE_BIN does not name the ptxforge binary")
    work = tmp_path_factory.mktemp("corpus")
    config = work / "config.toml"
    config.write_text('[matrix]\nflags = ["-O3", "-lineinfo"]\ntargets = ["sm_80"]\n[output]\nshard_rows = 4\n')
    out = work / "out"
    subprocess.run([binary, "corpus", "build", "corpus/kernels/elementwise.cu", "corpus/kernels/histogram.cu",
                    "tasks/L1/vector_add/reference.cu", "--config", str(config), "--out", str(out), "-q"],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return out


def load(corpus, tmp_path):
    # A private cache and no network: the test reads local files only.
    os.environ["HF_HUB_OFFLINE"] = "1"
    files = sorted(str(p) for p in (corpus / "data").glob("train-*.jsonl"))
    return datasets.load_dataset("json", data_files=files, split="train", cache_dir=str(tmp_path / "hf"))


def test_rows_match_the_build(corpus, tmp_path):
    build = json.loads((corpus / "build.json").read_text())
    ds = load(corpus, tmp_path)
    assert build["rows"] > 4, "the build should need more than one shard"
    assert len(list((corpus / "data").glob("train-*.jsonl"))) == build["shards"] > 1
    assert ds.num_rows == build["rows"]
    assert set(ds["flags"]) == {"-O3", "-lineinfo"}
    assert set(ds["target"]) == {"sm_80"}
    assert len(set(ds["id"])) == ds.num_rows


def test_features_have_the_documented_types(corpus, tmp_path):
    ds = load(corpus, tmp_path)
    features = ds.features
    for name in ("id", "source_path", "cuda_source", "entry", "kernel", "flags", "target", "ptx", "ptx_sha256"):
        assert features[name].dtype == "string", name
    for name in ("ptx_lines", "ptx_bytes", "ptx_instructions", "cubin_bytes"):
        assert features[name].dtype == "int64", name
    assert features["resources"]["registers"].dtype == "int64"
    assert features["nvrtc_options"].feature.dtype == "string"
    assert features["score"]["scored"].dtype == "bool"
    assert features["score"]["speedup"].dtype == "float64"
    assert features["sass"]["instructions"].dtype == "int64"
    assert features["sass_skipped"].dtype == "string"
    row = ds[0]
    assert row["ptx"].startswith(".version")
    assert ".entry " + row["entry"] in row["ptx"]
    assert row["resources"]["registers"] > 0


def test_task_kernels_are_marked(corpus, tmp_path):
    ds = load(corpus, tmp_path).filter(lambda row: row["task"] != "")
    assert set(ds["task"]) == {"vector_add"}
    assert all(row["entry"] == "vector_add" for row in ds)


def test_lineinfo_rows_carry_line_directives(corpus, tmp_path):
    ds = load(corpus, tmp_path)
    for row in ds:
        assert (".loc" in row["ptx"]) == (row["flags"] == "-lineinfo"), row["entry"]
