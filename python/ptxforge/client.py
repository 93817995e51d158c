"""ptxforge.Client: the same operations against a `ptxforge serve` over HTTP.

Standard library only (urllib), so that a trainer process needs nothing but
this package's pure-Python files to reach a gate on another machine. A full
queue (429) or a service that is starting (503) is retried, honouring
Retry-After, a bounded number of times; every other non-200 reply raises
ptxforge.Error with the service's kind, code and message.
"""

from __future__ import annotations

import email.utils
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Optional, Union

from ._engine import request_body
from ._errors import Error

DEFAULT_URL = "http://127.0.0.1:8177"
_RETRIED_STATUSES = (429, 503)


def _retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Client:
    """A client of `ptxforge serve`.

    url: the service (default $PTXFORGE_URL, else http://127.0.0.1:8177);
    api_key: sent as `Authorization: Bearer KEY` (default $PTXFORGE_API_KEY,
    else $PTXFORGE_SERVE_API_KEY, the variable the service reads its key from);
    timeout: seconds for one HTTP exchange (a check on a busy service can
    take minutes); max_retries / max_retry_wait: how often and, in all, how
    many seconds a 429 or 503 is retried before it is raised; client: the
    name this client's checks queue under (the service serves waiting
    clients in turn; default: its API key, else this machine's address, so
    that processes on one machine share one turn unless they are named).
    """

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 600.0, max_retries: int = 8, max_retry_wait: float = 120.0,
                 client: Optional[str] = None):
        self.url = (url or os.environ.get("PTXFORGE_URL") or DEFAULT_URL).rstrip("/")
        if api_key is None:
            api_key = os.environ.get("PTXFORGE_API_KEY") or os.environ.get("PTXFORGE_SERVE_API_KEY")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.client = client

    def _named(self, body: Mapping[str, Any]) -> dict:
        """`body` with this client's name, unless it names one itself."""
        body = dict(body)
        if self.client is not None:
            body.setdefault("client", self.client)
        return body

    # --- HTTP ---------------------------------------------------------------

    def _send(self, method: str, path: str, body: Any = None) -> tuple[int, Mapping[str, str], bytes]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, error.read()
        except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as error:
            reason = getattr(error, "reason", error)
            code = "timeout" if isinstance(reason, (socket.timeout, TimeoutError)) else "unreachable"
            raise Error(0, "io", code, f"{method} {self.url}{path}: {reason}") from None

    def request(self, method: str, path: str, body: Any = None, *, raw: bool = False) -> Any:
        """One call: the decoded JSON reply (the text with raw=True). Retries
        429/503 as the class says; raises Error for any other non-200."""
        waited = 0.0
        for attempt in range(self.max_retries + 1):
            status, headers, payload = self._send(method, path, body)
            if status in _RETRIED_STATUSES and attempt < self.max_retries and waited < self.max_retry_wait:
                delay = _retry_after_seconds(headers.get("Retry-After"))
                if delay is None:  # no advice: back off exponentially
                    delay = min(8.0, 0.25 * 2**attempt)
                delay = min(delay, self.max_retry_wait - waited)
                time.sleep(delay)
                waited += delay
                continue
            break
        text = payload.decode("utf-8", errors="replace")
        if status == 200 and raw:
            return text
        try:
            decoded = json.loads(text) if text else None
        except ValueError:
            decoded = text
        if status != 200:
            raise Error.from_reply(status, decoded)
        if isinstance(decoded, str):
            raise Error(status, "internal", "bad-reply", f"{method} {path}: the reply is not JSON: {text[:300]}")
        return decoded

    # --- checks -------------------------------------------------------------

    def check(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
              **options: Any) -> dict:
        """POST /v1/check: the check document of bare PTX or a model's answer."""
        return self.request("POST", "/v1/check", self._named(request_body(task, ptx, answer, options)))

    def check_body(self, body: Mapping[str, Any]) -> dict:
        """POST /v1/check with a body as it is."""
        return self.request("POST", "/v1/check", self._named(body))

    def check_batch(self, requests: Iterable[Mapping[str, Any]]) -> list[Union[dict, Error]]:
        """POST /v1/check/batch: in order, each request's check document, or
        the Error that request got (a bad request does not spoil the batch)."""
        reply = self.request("POST", "/v1/check/batch", self._named({"requests": [dict(r) for r in requests]}))
        results = []
        for result in reply.get("results", []):
            if isinstance(result, Mapping) and "error" in result and "verdict" not in result:
                error = result["error"] if isinstance(result["error"], Mapping) else {}
                status = result.get("status", error.get("status", 400))
                results.append(Error.from_reply(int(status), result))
            else:
                results.append(result)
        return results

    def reward(self, task: str, ptx: Optional[str] = None, answer: Optional[str] = None,
               weights: Optional[Mapping[str, float]] = None, **options: Any) -> dict:
        """POST /v1/reward: {"reward", "verdict", "stages", "speedup", ..., "check"}."""
        body = request_body(task, ptx, answer, options)
        if weights is not None:
            body["weights"] = dict(weights)
        return self.reward_body(body)

    def reward_body(self, body: Mapping[str, Any]) -> dict:
        """POST /v1/reward with a body as it is."""
        return self.request("POST", "/v1/reward", self._named(body))

    def map(self, function: str, bodies: Iterable[Mapping[str, Any]], concurrency: int = 8) -> list:
        """check_body or reward_body (by name) over many bodies, `concurrency`
        requests in flight at once; results in order, an Error raised as soon as one is seen."""
        call = {"check": self.check_body, "reward": self.reward_body}[function]
        bodies = list(bodies)
        if concurrency <= 1 or len(bodies) <= 1:
            return [call(body) for body in bodies]
        with ThreadPoolExecutor(max_workers=min(concurrency, len(bodies))) as pool:
            return list(pool.map(call, bodies))

    # --- the rest of the API ------------------------------------------------

    def lint(self, ptx: str) -> dict:
        return self.request("POST", "/v1/lint", {"ptx": ptx})

    def compile(self, ptx: str, arch: Optional[str] = None) -> dict:  # noqa: A003
        body = {"ptx": ptx}
        if arch:
            body["arch"] = arch
        return self.request("POST", "/v1/compile", body)

    def extract(self, answer: str) -> dict:
        return self.request("POST", "/v1/extract", {"answer": answer})

    def extract_ptx(self, answer: str) -> str:
        return self.extract(answer)["ptx"]

    def tasks(self) -> list:
        return self.request("GET", "/v1/tasks")["tasks"]

    def task(self, name: str) -> dict:
        return self.request("GET", "/v1/tasks/" + urllib.parse.quote(name, safe=""))

    def health(self) -> dict:
        return self.request("GET", "/healthz")

    def metrics(self) -> str:
        """GET /metrics: Prometheus text."""
        return self.request("GET", "/metrics", raw=True)

    def __repr__(self) -> str:
        return f"ptxforge.Client({self.url!r})"
