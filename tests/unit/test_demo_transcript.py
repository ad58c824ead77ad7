"""`make demo`'s transcript (build/demo.py): one line for the model's raw text of each generation,
however its answer streamed, and nothing in it that drives the terminal."""

from __future__ import annotations

import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("build/ runs on CPython: the Pyodide runner copies only tests/", allow_module_level=True)

from build.demo import transcript

RUN = [
    {"type": "text", "text": '{"thought": "x", "final": "Expect'},
    {"type": "final_delta", "text": "Expect"},
    {"type": "text", "text": ' rain"}'},
    {"type": "final_delta", "text": " rain"},
    {"type": "usage", "promptTokens": 883, "cachedTokens": 830, "completionTokens": 47},
    {"type": "turn", "turn": 1, "thought": "x", "calls": []},
    {"type": "final", "text": "Expect rain"},
]


def test_the_answer_streaming_as_final_delta_does_not_split_the_models_line():
    assert transcript(RUN) == [
        '  model    {"thought": "x", "final": "Expect rain"}',
        "  usage    prompt 883 (cached 830) → 47 tokens",
        "turn 1   thought: 'x'",
        "FINAL    Expect rain",
    ]


def test_a_models_control_characters_are_shown_escaped():
    lines = transcript([{"type": "text", "text": "a\x1b[2Jb\x9bc\td\ne"}, {"type": "final", "text": "\x07ok"}])
    assert lines == ["  model    a\\x1b[2Jb\\x9bc\td\ne", "FINAL    \\x07ok"]


def test_make_demo_model_names_pick_a_file_of_the_site_or_say_which_target_makes_it(tmp_path):
    from build.demo import model_url

    (tmp_path / "models").mkdir()
    assert model_url(None, tmp_path) is None and model_url("bundled", tmp_path) is None
    assert model_url("./models/tiny.gguf", tmp_path) == "./models/tiny.gguf"  # a URL goes as given
    with pytest.raises(SystemExit, match="make general-model"):
        model_url("general", tmp_path)
    (tmp_path / "models" / "aerix-general-q8_0.gguf").write_bytes(b"GGUF")
    assert model_url("general", tmp_path) == "./models/aerix-general-q8_0.gguf"
