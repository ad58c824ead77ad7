"""Runs ``async def`` tests without a plugin, on CPython and inside Pyodide alike."""

from __future__ import annotations

import inspect

import pytest

from helpers import run_coroutine


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        run_coroutine(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None
