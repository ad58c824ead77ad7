"""The template models (build/families.py, build/models.py): each family's published template,
rendered the way llama.cpp's Jinja path renders it, against a golden file; the GGUF that carries
it; the special tokens it writes; and the prefix property the engine's cache reuse relies on."""

from __future__ import annotations

import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("the template models are built on CPython: Pyodide has no build/ nor gguf", allow_module_level=True)

import re

import jinja2
import pytest
from gguf import GGUFReader, TokenType
from test_turn import golden

from build.families import FAMILIES, GEMMA, LLAMA3, MISTRAL, QWEN3, TEMPLATES, Chat, render, template
from build.models import CONTROL_TOKENS, SPECS, write_model

SYSTEM = {"role": "system", "content": "You are a test agent. Answer with one JSON object."}
USER1 = {"role": "user", "content": "What is 2 + 2?"}
REPLY1 = {"role": "assistant", "content": '{"final": "4"}'}
USER2 = {"role": "user", "content": "And 3 + 3?"}
TURN1 = [SYSTEM, USER1]
TURN2 = [SYSTEM, USER1, REPLY1, USER2]

# What a special token looks like in any of these families: text that must never reach the model
# as plain characters.
LOOKS_SPECIAL = re.compile(
    r"<\|[A-Za-z0-9_]+\|>|\[/?[A-Z_]+\]|</?s>|<(?:bos|eos|pad|unk)>|<(?:start|end)_of_[a-z]+>|</?think>"
)

SPEC = {s.chat.name: s for s in SPECS if s.name.startswith("tpl-")}
VARIANTS = [(chat, {}) for chat in FAMILIES] + [(QWEN3, {"enable_thinking": False})]


def variant_id(chat: Chat, context: dict[str, object]) -> str:
    return chat.name + ("-no-thinking" if context else "")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GGUFReader]:
    """Every template model, written as `python -m build.models` writes it."""
    outdir = tmp_path_factory.mktemp("models")
    readers = {}
    for name, spec in SPEC.items():
        entry = write_model(spec, outdir)
        assert entry["chat"] == name
        readers[name] = GGUFReader(outdir / spec.file)
    return readers


def vocab(reader: GGUFReader) -> dict[str, int]:
    """Token text -> token type."""
    fields = reader.fields
    return dict(zip(fields["tokenizer.ggml.tokens"].contents(), fields["tokenizer.ggml.token_type"].contents()))


def token(reader: GGUFReader, key: str) -> str:
    return reader.fields["tokenizer.ggml.tokens"].contents()[reader.fields[key].contents()]


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


# --- rendering ------------------------------------------------------------------------------

@pytest.mark.parametrize(("chat", "context"), VARIANTS, ids=[variant_id(*v) for v in VARIANTS])
def test_two_turns_render_as_the_golden_file(chat: Chat, context: dict[str, object]) -> None:
    golden(f"templates/{variant_id(chat, context)}.txt", render(chat, TURN2, **context))


def test_gemma_folds_the_system_message_into_the_first_user_turn() -> None:
    text = render(GEMMA, TURN2)
    assert "system" not in text
    assert text.startswith(f"<bos><start_of_turn>user\n{SYSTEM['content']}\n\n{USER1['content']}<end_of_turn>\n")


def test_mistral_puts_the_system_message_into_the_last_user_turn() -> None:
    assert render(MISTRAL, TURN1) == f"<s>[INST] {SYSTEM['content']}\n\n{USER1['content']}[/INST]"
    assert render(MISTRAL, TURN2).endswith(f"[INST] {SYSTEM['content']}\n\n{USER2['content']}[/INST]")


def test_qwen3_without_thinking_opens_the_reply_with_an_empty_think_block() -> None:
    assert render(QWEN3, TURN1).endswith("<|im_start|>assistant\n")
    assert render(QWEN3, TURN1, enable_thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    # an earlier reply's thinking is dropped from the history
    thought = {"role": "assistant", "content": "<think>\nadd\n</think>\n\n" + REPLY1["content"]}
    assert "add" not in render(QWEN3, [SYSTEM, USER1, thought, USER2])


def test_llama3_dates_the_system_header_with_the_date_it_is_given() -> None:
    assert "Today Date: 26 Jul 2024\n\n" in render(LLAMA3, TURN1)  # the template's default
    assert "Today Date: 01 Dec 2026\n\n" in render(LLAMA3, TURN1, date_string="01 Dec 2026")  # llama.cpp's: today


# aerix's loop adds a note as a user message right after the user message of a turn it dropped (a
# cut or unusable generation), and a run that ended before a reply leaves a user message last.
REFUSE_REPEATED_ROLES = {"gemma", "mistral"}


@pytest.mark.parametrize("chat", FAMILIES, ids=lambda c: c.name)
def test_which_templates_refuse_two_user_messages_in_a_row(chat: Chat) -> None:
    note = {"role": "user", "content": "Your turn was cut; answer again, shorter."}
    if chat.name in REFUSE_REPEATED_ROLES:
        with pytest.raises(jinja2.TemplateError, match="roles must alternate"):
            render(chat, [SYSTEM, USER1, note])
    else:
        render(chat, [SYSTEM, USER1, note])
    # joined into one message, as the engine should send them, every family takes them
    joined = {"role": "user", "content": USER1["content"] + "\n\n" + note["content"]}
    assert joined["content"] in render(chat, [SYSTEM, joined])


# --- the prefix property ----------------------------------------------------------------------

# Where the rendering of turn 1 (with the reply the model wrote and the token that ended it) is not
# the start of turn 2's, the engine's cache serves turn 2 only up to that point.
PREFIX_BREAKS = {
    # the system message moves to the last user turn: only "<s>[INST] " is shared
    "mistral": len("<s>[INST] "),
    # turn 1 asked for the reply after an empty think block, the history shows the reply without one
    "qwen3-no-thinking": len(render(QWEN3, TURN1)),
}


@pytest.mark.parametrize(("chat", "context"), VARIANTS, ids=[variant_id(*v) for v in VARIANTS])
def test_turn_one_and_its_reply_are_the_start_of_turn_two(chat: Chat, context: dict[str, object]) -> None:
    turn1, turn2 = render(chat, TURN1, **context), render(chat, TURN2, **context)
    written = turn1 + REPLY1["content"]  # what the cache holds after turn 1 (the model's end token aside)
    if chat is MISTRAL:
        written = turn1 + " " + REPLY1["content"]  # the template puts a space before a reply
    breaks = PREFIX_BREAKS.get(variant_id(chat, context))
    if breaks is None:
        assert turn2.startswith(written + chat.turn_end)
    else:
        assert common_prefix(written, turn2) == breaks


# --- the GGUF files ---------------------------------------------------------------------------

def test_the_build_writes_one_template_model_per_family_and_one_without() -> None:
    assert sorted(SPEC) == sorted([c.name for c in FAMILIES] + ["none"])
    tiny = next(s for s in SPECS if s.name == "tiny")
    for spec in SPEC.values():
        assert (spec.n_embd, spec.n_layer, spec.quant, spec.seed) == (tiny.n_embd, tiny.n_layer, tiny.quant, tiny.seed)


@pytest.mark.parametrize("chat", FAMILIES, ids=lambda c: c.name)
def test_the_gguf_carries_the_published_template_byte_for_byte(chat: Chat, written: dict[str, GGUFReader]) -> None:
    field = written[chat.name].fields["tokenizer.chat_template"]
    assert bytes(field.parts[field.data[0]]) == (TEMPLATES / f"{chat.name}.jinja").read_bytes()
    assert chat.template == template(chat.name)


def test_the_model_without_a_template_is_tiny_without_its_template(written: dict[str, GGUFReader]) -> None:
    none = written["none"]
    assert "tokenizer.chat_template" not in none.fields
    assert list(vocab(none))[-len(CONTROL_TOKENS):] == list(CONTROL_TOKENS)


@pytest.mark.parametrize("chat", FAMILIES, ids=lambda c: c.name)
def test_bos_eos_and_end_of_turn_are_the_familys(chat: Chat, written: dict[str, GGUFReader]) -> None:
    reader = written[chat.name]
    assert token(reader, "tokenizer.ggml.bos_token_id") == chat.bos
    assert token(reader, "tokenizer.ggml.eos_token_id") == chat.eos
    assert reader.fields["tokenizer.ggml.add_bos_token"].contents() is chat.add_bos
    if chat.eot is not None:
        assert token(reader, "tokenizer.ggml.eot_token_id") == chat.eot
    else:
        assert "tokenizer.ggml.eot_token_id" not in reader.fields
    # what the template writes after a reply is what llama.cpp stops on
    reply_end = (" " if chat is MISTRAL else "") + REPLY1["content"] + chat.turn_end
    assert reply_end in render(chat, TURN2)


@pytest.mark.parametrize(("chat", "context"), VARIANTS, ids=[variant_id(*v) for v in VARIANTS])
def test_every_special_token_the_rendering_writes_is_one_token(chat: Chat, context: dict[str, object],
                                                                written: dict[str, GGUFReader]) -> None:
    types = vocab(written[chat.name])
    text = render(chat, TURN2, **context)
    used = [t for t in chat.specials if t in text]
    assert used, "the rendering writes special tokens"
    for t in used:
        wanted = TokenType.USER_DEFINED if t in chat.user_defined else TokenType.CONTROL
        assert types.get(t) == wanted, f"{t!r} is not a {wanted.name} token of tpl-{chat.name}"
    for t in sorted(chat.specials, key=len, reverse=True):
        text = text.replace(t, "")
    assert LOOKS_SPECIAL.findall(text) == []


@pytest.mark.parametrize("chat", FAMILIES, ids=lambda c: c.name)
def test_every_special_token_the_template_can_write_is_in_the_vocabulary(chat: Chat,
                                                                         written: dict[str, GGUFReader]) -> None:
    """Also those only tool calls would write (<|python_tag|>, [TOOL_CALLS], <tool_call>)."""
    types = vocab(written[chat.name])
    for found in set(LOOKS_SPECIAL.findall(template(chat.name))) | {chat.bos, chat.eos}:
        assert types.get(found) in (TokenType.CONTROL, TokenType.USER_DEFINED), f"{found!r} not in tpl-{chat.name}"
