"""The session object: one real server per test session (per xdist worker), started on first use.

``FakeproviderSession.example(...)`` is a context manager that yields a fresh ``ProviderHandle``
each time it is entered, so Hypothesis ``@given`` tests need no function-scoped fixture.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._handle import ProviderHandle, SearchDirs, load_planned, plan_scenario

if TYPE_CHECKING:
    from fakeprovider.scenario import Scenario

    from ._server import GuardedProvider, ServerThread

__all__ = ["DEFAULT_SCENARIO", "FakeproviderSession"]

#: What the fake plays when neither the marker nor ``load()`` chose a scenario.
DEFAULT_SCENARIO = "slow-success"

#: Every live session, so that the plugin can forget their handles when a new test starts.
_SESSIONS: weakref.WeakSet[FakeproviderSession] = weakref.WeakSet()


#: Where the running test's scenario paths are looked for: its folder, then the rootdir.
_search_dirs: SearchDirs | None = None


def forget_last_handles(search_dirs: SearchDirs | None = None) -> None:
    """A new test starts: no handle given out so far belongs to it; its scenario paths are
    looked for in ``search_dirs``."""
    global _search_dirs
    _search_dirs = search_dirs
    for session in _SESSIONS:
        session.last_handle = None


class FakeproviderSession:
    """Owns the session's real server and hands out per-test or per-example handles."""

    def __init__(self) -> None:
        self._server: ServerThread | None = None
        self._provider: GuardedProvider | None = None
        #: The handle most recently given out in the current test (the plugin reports its
        #: journal when the test fails); None until the test makes one.
        self.last_handle: ProviderHandle | None = None
        _SESSIONS.add(self)

    # -- the real server -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL of the session's server (starting it if needed)."""
        return self._ensure_server().url

    def _ensure_server(self) -> ServerThread:
        if self._server is None:
            from ._server import GuardedProvider, ServerThread

            self._provider = GuardedProvider(DEFAULT_SCENARIO)
            self._server = ServerThread(self._provider).start()
        return self._server

    def server_handle(
        self, scenario: Scenario | str | Path = DEFAULT_SCENARIO, **overrides: Any
    ) -> ProviderHandle:
        """Load ``scenario`` on the real server (jobs and journal emptied) and return its handle."""
        server = self._ensure_server()
        assert self._provider is not None
        self._provider.take_errors()
        search = _search_dirs
        load_planned(self._provider, *plan_scenario(scenario, search_dirs=search, **overrides))
        handle = ProviderHandle(self._provider, server.url, mode="server", search_dirs=search)
        self.last_handle = handle
        return handle

    def raise_errors(self) -> None:
        """Re-raise the first exception the server hit since the last handle was made, if any."""
        if self._server is not None and self._server.error is not None:
            error, self._server.error = self._server.error, None
            error.add_note("Raised inside the fakeprovider server thread, which has stopped.")
            raise error
        if self._provider is None:
            return
        errors = self._provider.take_errors()
        if not errors:
            return
        what, first = errors[0]
        more = f"; {len(errors) - 1} more error(s) followed" if len(errors) > 1 else ""
        first.add_note(f"Raised inside the fakeprovider server thread while handling {what}{more}.")
        raise first

    # -- per example -------------------------------------------------------------------------

    @contextlib.contextmanager
    def example(
        self,
        scenario: Scenario | str | Path = DEFAULT_SCENARIO,
        *,
        inprocess: bool = False,
        **overrides: Any,
    ) -> Iterator[ProviderHandle]:
        """A fresh fake for one example: the real server reset, or (``inprocess=True``) an
        in-process fake in virtual time for httpx clients. Server errors are raised on exit.
        """
        if not inprocess:
            handle = self.server_handle(scenario, **overrides)
            yield handle
            self.raise_errors()
            return
        from fakeprovider.inprocess import VirtualProvider

        search = _search_dirs
        planned, play = plan_scenario(scenario, search_dirs=search, **overrides)
        with VirtualProvider(planned, **play) as virtual:
            handle = ProviderHandle(
                virtual.provider, virtual.url, mode="inprocess", search_dirs=search
            )
            self.last_handle = handle
            yield handle

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __repr__(self) -> str:
        where = self._server.url if self._server is not None else "not started"
        return f"<FakeproviderSession server {where}>"
