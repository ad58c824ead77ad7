"""Runs ``async def`` tests without a plugin, on CPython and inside Pyodide alike."""

from __future__ import annotations

import inspect

import pytest

from bfcl_fixture import bfcl_data_root  # noqa: F401  (fixture: the pinned bfcl-eval data, tests/unit/bfcl_fixture.py)
from helpers import run_coroutine
from pg_server import postgres, postgres_dsn  # noqa: F401  (fixtures: a throwaway PostgreSQL, tests/unit/pg_server.py)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        run_coroutine(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None
