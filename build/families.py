"""The chat families the template models stand for, and a renderer that lays a conversation out as
llama.cpp's Jinja path does.

Each family is a published chat template (``build/templates/NAME.jinja``, byte for byte as its
model ships it; ``build/templates/README.md`` names the model) together with what a vocabulary
needs for that template to work in llama.cpp: the special tokens it writes, as single tokens, and
which of them begins the text and which ends a turn (llama.cpp stops there). ``build.models``
writes one small noise model per family (``tpl-NAME.gguf``) from these records.

    render(LLAMA3, [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}])

renders the template the way llama.cpp (and transformers) do: ``trim_blocks`` and
``lstrip_blocks`` on, ``raise_exception``, ``tojson`` without HTML escaping, ``bos_token`` and
``eos_token`` the family's. What llama.cpp then tokenizes differs in two places the renderer does
not copy: it drops the leading ``bos_token`` text when the vocabulary adds a BOS itself
(``add_bos``), and it passes Llama 3 templates ``date_string`` = today ("%d %b %Y"), where the
template's own default is "26 Jul 2024".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["Chat", "FAMILIES", "LLAMA3", "GEMMA", "QWEN3", "MISTRAL", "PHI", "TEMPLATES", "template", "render"]

TEMPLATES = Path(__file__).resolve().parent / "templates"


def template(name: str) -> str:
    """The published template ``build/templates/NAME.jinja``, as bytes-exact text."""
    return (TEMPLATES / f"{name}.jinja").read_bytes().decode("utf-8")


@dataclass(frozen=True)
class Chat:
    """How a model holds a conversation: the template llama.cpp renders it with, the tokens that
    template writes, and which of them begins the text and ends a turn."""

    name: str
    template: str | None  # tokenizer.chat_template; None: the GGUF carries none
    controls: tuple[str, ...]  # CONTROL tokens, after the byte tokens and merges, in this order
    bos: str
    eos: str
    eot: str | None = None  # the end of a turn, where it is not eos (llama.cpp stops on both)
    pad: str | None = None  # default: bos
    add_bos: bool = False  # llama.cpp puts a BOS token before every prompt
    user_defined: tuple[str, ...] = ()  # single tokens that stay text (Qwen 3's <think>), after the controls

    @property
    def turn_end(self) -> str:
        """The token a reply ends with: the model is taught to write it after a closing bracket."""
        return self.eot or self.eos

    @property
    def specials(self) -> tuple[str, ...]:
        return self.controls + self.user_defined


LLAMA3 = Chat(
    "llama3", template("llama3"),
    controls=("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
              "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"),
    bos="<|begin_of_text|>", eos="<|eot_id|>", add_bos=True,
)
GEMMA = Chat(
    "gemma", template("gemma"),
    controls=("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"),
    bos="<bos>", eos="<eos>", eot="<end_of_turn>", pad="<pad>", add_bos=True,
)
QWEN3 = Chat(
    "qwen3", template("qwen3"),
    controls=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
    bos="<|endoftext|>", eos="<|im_end|>",
    user_defined=("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"),
)
MISTRAL = Chat(
    "mistral", template("mistral"),
    controls=("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
              "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
    bos="<s>", eos="</s>", add_bos=True,
)
PHI = Chat(
    "phi", template("phi"),
    controls=("<unk>", "<s>", "</s>", "<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"),
    bos="<s>", eos="<|endoftext|>", eot="<|end|>",
)
FAMILIES: tuple[Chat, ...] = (LLAMA3, GEMMA, QWEN3, MISTRAL, PHI)


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


_ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
_ENV.globals["raise_exception"] = _raise_exception
_ENV.filters["tojson"] = _tojson


def render(chat: Chat, messages: list[dict[str, str]], *, add_generation_prompt: bool = True, **context: Any) -> str:
    """``chat``'s template applied to ``messages``; ``context`` adds template variables
    (``enable_thinking=False``, ``date_string=...``)."""
    if chat.template is None:
        raise ValueError(f"{chat.name} has no chat template")
    compiled = _ENV.from_string(chat.template)
    return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                           bos_token=chat.bos, eos_token=chat.eos, **context)
