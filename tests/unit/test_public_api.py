"""The public surface: ``__all__`` is exactly what the package hands on."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aerix


def test_all_equals_the_public_names():
    public = {n for n in vars(aerix) if not n.startswith("_") and not isinstance(getattr(aerix, n), type(aerix))}
    assert set(aerix.__all__) == public - {"annotations"}


def test_the_openai_package_hands_on_exactly_its_all():
    import aerix.engines.openai as openai

    public = {n for n in vars(openai) if not n.startswith("_") and not isinstance(getattr(openai, n), type(openai))}
    assert set(openai.__all__) == public - {"annotations"}
    assert openai.OpenAIModel is aerix.OpenAIModel


def test_one_event_vocabulary_per_seam():
    # The client's stream events and the model protocol's deltas share no name (issue 16).
    from aerix import model
    from aerix.engines.openai import stream

    assert not set(stream.__all__) & set(model.__all__)


def test_every_module_declares_all_and_it_resolves():
    for name in ("abort", "agent", "artifacts", "calls", "channels", "choose", "compaction", "conversations", "digest", "durable", "durable.book", "durable.lifecycle", "durable.record", "errors", "eval_matchers", "eval_report", "evals", "events", "fields", "handoffs", "input_types", "input_view", "inputs", "limits", "loop", "mcp", "mcp_client", "model", "output", "patterns", "proxy", "proxy_mcp", "serve", "sizes", "state", "stores", "stores.contract", "stores.postgres", "stores.postgres_pool", "stores.sqlite", "subagents", "testing", "tools", "trace_export", "trace_spans", "tracing", "trust", "turn", "turn_format", "worker", "worker_cli"):
        module = importlib.import_module(f"aerix.{name}")
        assert module.__all__, name
        for symbol in module.__all__:
            assert hasattr(module, symbol), f"aerix.{name}.{symbol}"


def test_the_readme_example_names_exist():
    from aerix import AerixError, Agent, Hooks, Limits, tool  # noqa: F401
    from aerix.testing import ScriptedModel  # noqa: F401


def test_the_stores_package_hands_on_every_store():
    # issue 28: SQLiteStore was importable only from aerix.stores.sqlite
    import aerix.stores
    from aerix.stores import IndexedDBStore, MemoryStore, PostgresStore, SQLiteStore
    from aerix.stores.indexeddb import IndexedDBStore as FromIndexedDB
    from aerix.stores.postgres import PostgresStore as FromPostgres
    from aerix.stores.sqlite import SQLiteStore as FromSQLite

    assert (SQLiteStore, IndexedDBStore, PostgresStore) == (FromSQLite, FromIndexedDB, FromPostgres)
    assert {"MemoryStore", "SQLiteStore", "IndexedDBStore", "PostgresStore"} <= set(aerix.stores.__all__)
    assert MemoryStore.__module__ == "aerix.stores"
    with pytest.raises(AttributeError, match="no attribute 'NoStore'"):
        aerix.stores.NoStore  # noqa: B018


@pytest.mark.skipif(sys.platform == "emscripten", reason="no subprocesses in Pyodide")
def test_importing_the_stores_package_loads_neither_sqlite3_nor_the_page_store():
    # sqlite3 is a package Pyodide loads apart, the IndexedDB store talks to the page, and psycopg
    # is an optional extra Pyodide never has: each is imported when first named, not with aerix.stores.
    code = "import sys, aerix, aerix.stores; print(sorted(m for m in ('sqlite3', 'aerix.stores.sqlite', 'aerix.stores.indexeddb', 'aerix.stores.postgres', 'psycopg') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(Path(aerix.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
