"""ptxforge.Client: against a `ptxforge serve` this test starts on a free
port (skipped, saying why, when the binary or its serve command is absent),
and against a small stub for the retry rules (429 with Retry-After)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import ptxforge
from ptxforge._paths import foreign_binary_environment
from conftest import FAST, REPO, fenced


def ptxforge_binary() -> str | None:
    candidates = [os.environ.get("PTXFORGE_BIN"), shutil.which("ptxforge"), str(REPO / "build" / "ptxforge")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def start_server(binary: str, *extra: str, environment: dict | None = None):
    """Starts `ptxforge serve --port 0` and waits for its "listening on" line."""
    arguments = [binary, "serve", "--port", "0", "--executor", "emu", *extra]
    if "--workers" not in extra:
        arguments += ["--workers", "2"]
    process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**foreign_binary_environment(), **(environment or {})})
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "listening on " in line:
            url = re.search(r"listening on (http://\S+)", line).group(1)
            # Keep draining stderr so that the server never blocks on a full pipe.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, url
    process.kill()
    process.wait()
    raise AssertionError("ptxforge serve did not start:\n" + "".join(lines))


def stop_server(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def serve_binary():
    binary = ptxforge_binary()
    if binary is None:
        pytest.skip("no ptxforge binary (set PTXFORGE_BIN or build ./build/ptxforge)")
    probe = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"{binary} has no serve command: {(probe.stderr or probe.stdout).strip()[:200]}")
    return binary, probe.stdout


@pytest.fixture(scope="module")
def server(serve_binary):
    process, url = start_server(serve_binary[0])
    yield url
    stop_server(process)


@pytest.fixture(scope="module")
def client(server):
    return ptxforge.Client(server, timeout=120)


def test_health_and_tasks(client):
    assert client.health()["status"] == "ok"
    names = {task["name"] for task in client.tasks()}
    assert "vector_add" in names
    assert client.task("vector_add")["name"] == "vector_add"
    with pytest.raises(ptxforge.Error) as raised:
        client.task("vector_ad")
    assert raised.value.status == 404 and raised.value.code == "unknown-task"


def test_check_matches_the_in_process_gate(client, engine, reference_ptx, wrong_ptx):
    remote = client.check("vector_add", ptx=reference_ptx, seed=11, **FAST)
    local = engine.check("vector_add", ptx=reference_ptx, seed=11, **FAST)
    assert remote["verdict"] == local["verdict"] == "correct"
    assert remote["summary"] == local["summary"]
    assert client.check("vector_add", answer=fenced(wrong_ptx), **FAST)["verdict"] == "wrong"


def test_batch_keeps_order_and_isolates_errors(client, reference_ptx, wrong_ptx):
    results = client.check_batch([
        {"task": "vector_add", "ptx": reference_ptx, **FAST},
        {"task": "vector_add", "ptx": reference_ptx, "trails": 2},
        {"task": "vector_add", "answer": fenced(wrong_ptx), **FAST},
    ])
    assert results[0]["verdict"] == "correct"
    assert isinstance(results[1], ptxforge.Error) and results[1].code == "bad-request"
    assert results[2]["verdict"] == "wrong"


def test_reward(client, reference_ptx):
    reward = client.reward("vector_add", answer=fenced(reference_ptx), weights={"correct": 0.7}, **FAST)
    assert reward["verdict"] == "correct"
    assert reward["reward"] == pytest.approx(0.9)
    assert reward["check"]["verdict"] == "correct"


def test_lint_compile_extract(client, reference_ptx):
    assert client.lint(reference_ptx)["ok"] is True
    assert client.lint((REPO / "examples/broken.ptx").read_text())["ok"] is False
    assert client.compile(reference_ptx, "sm_90")["ok"] is True
    assert client.extract_ptx(fenced(reference_ptx)).strip() == reference_ptx.strip()
    with pytest.raises(ptxforge.Error) as raised:
        client.extract("no code")
    assert raised.value.code == "no-ptx"


def test_malformed_request_raises(client, reference_ptx):
    with pytest.raises(ptxforge.Error) as raised:
        client.check("vector_add", ptx=reference_ptx, trials="many")
    assert raised.value.status == 400 and raised.value.code == "bad-request"


def test_metrics_are_prometheus_text(client):
    assert "# " in client.metrics()


def test_trl_reward_through_the_client(client, reference_ptx, wrong_ptx):
    reward_func = ptxforge.rewards.make_trl_reward(client=client, options=FAST, concurrency=2)
    rewards = reward_func(prompts=["p", "p"], completions=[fenced(reference_ptx), fenced(wrong_ptx)],
                          completion_ids=[[1], [2]], task=["vector_add", "vector_add"], trainer_state=None)
    assert rewards == pytest.approx([0.8, 0.2])


def test_api_key(serve_binary, reference_ptx):
    binary, help_text = serve_binary
    if "PTXFORGE_SERVE_API_KEY" not in help_text:
        pytest.skip("ptxforge serve does not take an API key (PTXFORGE_SERVE_API_KEY)")
    process, url = start_server(binary, environment={"PTXFORGE_SERVE_API_KEY": "sesame"})
    try:
        with pytest.raises(ptxforge.Error) as raised:
            ptxforge.Client(url, api_key="wrong").check("vector_add", ptx=reference_ptx, **FAST)
        assert raised.value.status == 401
        document = ptxforge.Client(url, api_key="sesame").check("vector_add", ptx=reference_ptx, **FAST)
        assert document["verdict"] == "correct"
    finally:
        stop_server(process)


def test_a_full_queue_is_retried(serve_binary, reference_ptx):
    """One worker and a queue of one: concurrent requests get 429 + Retry-After,
    which the Client waits out; every check still comes back."""
    process, url = start_server(serve_binary[0], "--workers", "1", "--queue", "1")
    try:
        statuses = []

        class CountingClient(ptxforge.Client):
            def _send(self, *arguments):
                reply = super()._send(*arguments)
                statuses.append((reply[0], reply[1].get("Retry-After")))
                return reply

        bodies = [{"task": "vector_add", "ptx": reference_ptx, **FAST}] * 6
        documents = CountingClient(url, max_retries=30).map("check", bodies, concurrency=6)
        assert [d["verdict"] for d in documents] == ["correct"] * 6
        busy = [retry_after for status, retry_after in statuses if status == 429]
        assert busy and all(retry_after for retry_after in busy), statuses
    finally:
        stop_server(process)


# --- the retry rules, against a stub ------------------------------------------


class Stub(BaseHTTPRequestHandler):
    """429 with Retry-After for the first `busy` requests, then a check document."""

    busy = 2
    seen: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append((time.monotonic(), self.headers.get("Authorization"), body))
        if len(Stub.seen) <= Stub.busy:
            self.reply(429, {"error": {"kind": "io", "code": "queue-full", "message": "busy"}}, {"Retry-After": "1"})
        else:
            self.reply(200, {"verdict": "correct", "task": body.get("task")})

    def reply(self, status, document, headers=None):
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture()
def stub():
    Stub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_429_is_retried_after_retry_after(stub):
    Stub.busy = 2
    started = time.monotonic()
    document = ptxforge.Client(stub, api_key="k").check("vector_add", ptx=".version 9.0")
    assert document["verdict"] == "correct"
    assert len(Stub.seen) == 3
    assert time.monotonic() - started >= 1.9  # Retry-After: 1, twice
    assert all(auth == "Bearer k" for _, auth, _ in Stub.seen)


def test_429_retries_are_bounded(stub):
    Stub.busy = 100
    with pytest.raises(ptxforge.Error) as raised:
        ptxforge.Client(stub, max_retries=1).check("vector_add", ptx=".version 9.0")
    assert raised.value.status == 429 and raised.value.code == "queue-full"
    assert len(Stub.seen) == 2


def test_a_named_client_sends_its_name_with_every_check(stub):
    Stub.busy = 0
    named = ptxforge.Client(stub, client="trainer-7")
    named.check("vector_add", ptx=".version 9.0")
    named.check_batch([{"task": "vector_add", "ptx": ".version 9.0"}])
    named.reward_body({"task": "vector_add", "ptx": ".version 9.0", "client": "own-name"})
    ptxforge.Client(stub).check("vector_add", ptx=".version 9.0")
    bodies = [body for _, _, body in Stub.seen]
    assert bodies[0]["client"] == "trainer-7"
    assert bodies[1]["client"] == "trainer-7" and "client" not in bodies[1]["requests"][0]
    assert bodies[2]["client"] == "own-name"
    assert "client" not in bodies[3]


def test_unreachable_service_is_an_error():
    with pytest.raises(ptxforge.Error) as raised:
        ptxforge.Client("http://127.0.0.1:9", timeout=5).health()
    assert raised.value.status == 0 and raised.value.code == "unreachable"
