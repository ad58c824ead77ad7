"""The turn-format ablations of `make bfcl` (bench/bfcl_agent.py's FORMATS, bench/bfcl_variants.py):
each variant is an agent of its TurnFormat, runs by name, and is tabled side by side; the system
message's size per variant in characters, and in tokens by a (fake) llama-server's /tokenize.
CPython only: the harness is not part of the package."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import textwrap

import pytest

if sys.platform == "emscripten":
    pytest.skip("the benchmark harness runs on CPython", allow_module_level=True)

from aerix import TurnFormat
from aerix.testing import ScriptedModel
from bench import bfcl_agent, bfcl_data, bfcl_variants

KNOBS = {"thought": "first", "system": "full", "call_keys": "tool_first", "example": False, "duplicate_calls": "drop"}
FLAT = {"name": "kettle.boil", "description": "Boil water.", "parameters": {"type": "dict", "properties": {"litres": {"type": "float"}}, "required": ["litres"]}}
ENTRY = {"id": "q1", "question": [[{"role": "user", "content": "Boil a litre, twice."}]], "function": [FLAT]}


def test_every_knob_value_away_from_the_default_is_a_variant_by_name():
    assert bfcl_agent.FORMATS["default"] == TurnFormat() and set(bfcl_agent.VARIANTS) == set(bfcl_agent.FORMATS)
    away = {(k, getattr(f, k)) for f in bfcl_agent.FORMATS.values() for k in KNOBS if getattr(f, k) != KNOBS[k]}
    assert away == {("thought", "last"), ("thought", "none"), ("system", "compact"), ("call_keys", "input_first"), ("example", True), ("duplicate_calls", "keep")}
    for name, fmt in bfcl_agent.FORMATS.items():
        agent = bfcl_agent.agent_for(ScriptedModel([]), [], name)
        assert agent.turn_format == fmt and agent.generation == {"temperature": 0}


def test_each_variant_has_its_own_fingerprint_but_where_only_the_dropping_differs():
    prints = {name: bfcl_agent.fingerprint(ENTRY, name) for name in bfcl_agent.FORMATS}
    assert len(set(prints.values())) == len(prints)  # the format is part of the fingerprint, dropping included


def test_the_default_scores_the_calls_kept_and_keep_duplicates_scores_every_call():
    turn = json.dumps({"thought": "t", "calls": [{"tool": "kettle_boil", "input": {"litres": 1.0}}] * 2})
    kept = asyncio.run(bfcl_agent.question_record(ScriptedModel([turn]), "parallel", ENTRY))
    both = asyncio.run(bfcl_agent.question_record(ScriptedModel([turn]), "parallel", ENTRY, "keep-duplicates"))
    assert kept["calls"] == [{"kettle.boil": {"litres": 1.0}}] and both["calls"] == [{"kettle.boil": {"litres": 1.0}}] * 2
    assert bfcl_variants._repeats(both) == 1 and bfcl_variants._repeats(kept) == 0


def result(model, variant, accuracy, rows):
    summary = {c: {"accuracy": accuracy, "no_turn": 0} for c in (*bfcl_data.CATEGORIES, "all")}
    summary["all"]["no_turn"] = 1
    return {"model": {"name": model}, "variant": variant, "summary": summary, "questions": rows}


def test_the_variants_table_puts_each_run_side_by_side(tmp_path):
    twice = {"turn": {"calls": [{"tool": "a", "input": {"x": 1}}, {"tool": "a", "input": {"x": 1}}]}, "usage": [[400, 30, 0], [420, 20, 0]], "seconds": 2.0}
    once = {"turn": {"calls": [{"tool": "a", "input": {"x": 1}}]}, "usage": [[300, 10, 0]], "seconds": 1.0}
    for name, data in {"bfcl-m.json": result("m", "default", 0.5, [twice, once]), "bfcl-m-compact.json": result("m", "compact", 0.25, [once]),
                       "bfcl-a-thought-none.json": result("a", "thought-none", 1.0, [once]), "bfcl-system-tokens.json": {"m": {}}}.items():  # fmt: skip
        (tmp_path / name).write_text(json.dumps(data))
    lines = bfcl_variants.variants_table(bfcl_variants.read_results(tmp_path)).splitlines()
    assert lines[0] == ("| model | variant | simple_python | multiple | parallel | parallel_multiple | irrelevance | all | no turn | repeated calls"
                        " | prompt tokens | completion tokens | s/question |")  # fmt: skip
    assert lines[2:] == [
        "| a | thought-none | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% | 1 | 0 | 300 | 10 | 1.00 |",
        "| m | default | 50.0% | 50.0% | 50.0% | 50.0% | 50.0% | 50.0% | 1 | 1 | 350 | 30 | 1.50 |",
        "| m | compact | 25.0% | 25.0% | 25.0% | 25.0% | 25.0% | 25.0% | 1 | 0 | 300 | 10 | 1.00 |",
    ]


def test_the_system_messages_are_the_demos_and_bfcl_sized_ones_in_every_variant(bfcl_data_root):
    found = {(v, s): text for v, s, text in bfcl_variants.system_messages()}
    assert {v for v, _ in found} == set(bfcl_agent.FORMATS) and {s for _, s in found} == {"demo", *bfcl_variants.SIZED}
    assert found[("default", "demo")].startswith("You are a small assistant") and "## weather" in found[("default", "demo")]
    assert sum(line.startswith('{"tool": ') for line in found[("compact", "demo")].splitlines()) == 5 and found[("keep-duplicates", "demo")] == found[("default", "demo")]
    assert len(found[("compact", "simple_python_0")]) < len(found[("default", "simple_python_0")])


FAKE_TOKENIZER = '''
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
if "--version" in sys.argv:
    print("version: 0 (fake)"); sys.exit(0)
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def do_POST(self):
        assert self.path == "/tokenize"
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["content"]
        data = json.dumps({"tokens": list(range(len(text.split())))}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def test_tokens_are_counted_by_each_models_own_server_and_written(bfcl_data_root, tmp_path, monkeypatch, capsys):
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_TOKENIZER))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("AERIX_LLAMA_SERVER", str(binary))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF fake")
    out = tmp_path / "tokens.json"
    assert bfcl_variants.main(["--tokens", "--model", str(gguf), "--out", str(out)]) == 0
    counts = json.loads(out.read_text())
    words = {(v, s): len(text.split()) for v, s, text in bfcl_variants.system_messages()}
    assert {(v, s): n for v, sizes in counts["fake"].items() for s, n in sizes.items()} == words
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "| model | variant | demo (tokens) | simple_python_0 (tokens) | multiple_0 (tokens) | parallel_multiple_0 (tokens) |"
    assert printed[2].startswith(f"| fake | default | {words[('default', 'demo')]} | ")
