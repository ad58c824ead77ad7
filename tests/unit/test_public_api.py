"""The public surface: ``__all__`` is exactly what the package hands on."""

from __future__ import annotations

import importlib

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
    for name in ("abort", "agent", "artifacts", "calls", "channels", "choose", "compaction", "conversations", "digest", "durable", "durable.book", "durable.lifecycle", "durable.record", "errors", "events", "fields", "input_types", "input_view", "inputs", "limits", "loop", "model", "output", "patterns", "proxy", "serve", "sizes", "state", "stores", "stores.contract", "stores.sqlite", "subagents", "testing", "tools", "trust", "turn", "turn_format"):
        module = importlib.import_module(f"aerix.{name}")
        assert module.__all__, name
        for symbol in module.__all__:
            assert hasattr(module, symbol), f"aerix.{name}.{symbol}"


def test_the_readme_example_names_exist():
    from aerix import AerixError, Agent, Hooks, Limits, tool  # noqa: F401
    from aerix.testing import ScriptedModel  # noqa: F401
