"""The session's real server: a ``FakeProvider`` that remembers what went wrong inside it.

Imported lazily (it imports fakeprovider, uvicorn and Starlette).
"""

from __future__ import annotations

import threading

from fakeprovider.http import HttpRequest, HttpResponse
from fakeprovider.journal import Entry
from fakeprovider.messages import Reply
from fakeprovider.provider import FakeProvider
from fakeprovider.server import ServerThread

__all__ = ["GuardedProvider", "ServerThread"]


class GuardedProvider(FakeProvider):
    """Records every exception raised while serving, so the test can re-raise it at teardown."""

    def __init__(self, scenario: str) -> None:
        self.errors: list[tuple[str, BaseException]] = []
        self._errors_lock = threading.Lock()
        super().__init__(scenario)

    def _record(self, what: str, exc: BaseException) -> None:
        with self._errors_lock:
            self.errors.append((what, exc))

    def take_errors(self) -> list[tuple[str, BaseException]]:
        with self._errors_lock:
            taken, self.errors = self.errors, []
        return taken

    def failed(self, what: str, exc: BaseException) -> None:
        self._record(what, exc)

    def receive(self, http: HttpRequest) -> tuple[Reply, HttpResponse]:
        try:
            return super().receive(http)
        except BaseException as exc:
            self._record(f"{http.method} {http.path}", exc)
            raise

    def sent(
        self,
        reply: Reply,
        *,
        started: float,
        completed: float,
        status_code: int | None,
        dropped: str | None = None,
    ) -> Entry | None:
        try:
            return super().sent(
                reply,
                started=started,
                completed=completed,
                status_code=status_code,
                dropped=dropped,
            )
        except BaseException as exc:
            self._record(f"the answer to {reply.request.method} {reply.request.path}", exc)
            raise
