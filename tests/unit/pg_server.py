"""The tests' throwaway PostgreSQL (the server itself: build/pg.py, which ``make chaos`` uses
too). The fixture ``postgres_dsn`` (registered in conftest.py) gives the DSN of a fresh, empty
database, and ``postgres`` the session's server (``postgres.new_database()`` for more). Without
PostgreSQL (or psycopg) they skip, with the reason printed to stderr; with
``AERIX_REQUIRE_POSTGRES=1`` (set by .ci/run) they fail. build/ is imported only when a test asks
for a server: the Pyodide run of these tests has tests/ alone.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from build.pg import ThrowawayPostgres

__all__ = ["missing_reason", "postgres", "postgres_dsn"]


def missing_reason() -> str | None:
    """Why the tests cannot have a PostgreSQL here (None: they can)."""
    if sys.platform == "emscripten":
        return "no PostgreSQL server in Pyodide"
    from build import pg

    return pg.missing_reason()


@pytest.fixture(scope="session")
def postgres(pytestconfig: pytest.Config) -> Iterator[ThrowawayPostgres]:
    """The session's server; skips (the reason printed to stderr, past pytest's capture, once) or,
    under AERIX_REQUIRE_POSTGRES=1, fails when there is none."""
    reason = missing_reason()
    if reason is not None:
        if os.environ.get("AERIX_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"AERIX_REQUIRE_POSTGRES=1 but {reason}")
        capture = pytestconfig.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            print(f"\nskipped: the PostgreSQL tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from build.pg import throwaway_postgres

    with throwaway_postgres() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres: ThrowawayPostgres) -> str:
    """The DSN of a fresh, empty database on the session's server."""
    return postgres.new_database()
