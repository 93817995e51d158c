"""ptxforge.Error: the package's one exception, for every reply that is not a 200."""

from __future__ import annotations

from typing import Any, Mapping


class Error(Exception):
    """A failed operation, in the parts the service's error body has.

    ``status`` is the HTTP status `ptxforge serve` answers with (400 malformed
    request, 401 missing API key, 404 unknown task, 413 body too large, 429
    queue full, 500 the gate is broken, 504 deadline passed), or 0 when the
    service could not be reached. ``kind`` and ``code`` are stable names to
    branch on; ``message`` is for people (and models).
    """

    def __init__(self, status: int, kind: str, code: str, message: str):
        super().__init__(status, kind, code, message)
        self.status = int(status)
        self.kind = kind
        self.code = code
        self.message = message

    @classmethod
    def from_reply(cls, status: int, body: Any) -> "Error":
        """The Error of a reply body {"error": {"kind", "code", "message"}}."""
        error = body.get("error") if isinstance(body, Mapping) else None
        if not isinstance(error, Mapping):
            text = body if isinstance(body, str) else repr(body)
            return cls(status, "internal", "bad-reply", f"unexpected reply body: {text[:500]}")
        return cls(status, str(error.get("kind", "")), str(error.get("code", "")), str(error.get("message", "")))

    def to_json(self) -> dict:
        """The service's error body for this Error."""
        return {"error": {"kind": self.kind, "code": self.code, "message": self.message}}

    def __str__(self) -> str:
        head = f"{self.code}: " if self.code else ""
        return f"{head}{self.message} (status {self.status}, {self.kind})"

    def __reduce__(self):  # picklable, so that it crosses Ray and process pools
        return (type(self), (self.status, self.kind, self.code, self.message))
