"""Write the small GGUF models that aerix's tests and benchmarks run on.

    .venv/bin/python -m build.models OUTDIR

writes ``tiny.gguf``, ``bench.gguf``, ``bench-bigvocab.gguf``, the template models
(``tpl-llama3``, ``tpl-gemma``, ``tpl-qwen3``, ``tpl-mistral``, ``tpl-phi``, ``tpl-none``) and
``models.json`` into OUTDIR. The output is a pure function of the constants below (fixed seeds),
and a file whose bytes would not change is left alone, so make sees no change.
``models.json`` lists every GGUF in OUTDIR (also the bundled model that ``build.site``
copies there) with its size and sha256: the page's model cache uses its copy of a
model while the sha256 listed is the one it kept (web/model-cache.mjs, MODEL CACHE).

The weights are noise: these models speak no language. What they do have:

- a real llama.cpp tokenizer: byte-level GPT-2 BPE (the 256 byte tokens, some
  merges) plus the ChatML control tokens, with a ChatML chat template, so the
  engine's chat path (template, tokenizer, grammar over tokens) is the real one.
  The template models are tiny with another family's chat (build/families.py): its
  published template and the special tokens that template writes, its own BOS,
  EOS and end of turn; ``tpl-none`` is tiny without a chat template;
- a built-in preference, planted in the output layer, for closing JSON (``"``,
  ``}``, ``]``) and for ending the turn right after a ``}`` or ``]``. Under a
  JSON-schema grammar, tiny's and bench's turns end on their own within about
  50-150 tokens instead of running to ``max_tokens``. bench-bigvocab's 32k
  tokens drown that preference, so its constrained turns mostly run to
  ``max_tokens``: what a constraint-cost benchmark wants. Without a grammar
  the same preference ends free text within a few tokens; pass the engine
  ``ignore_eos`` (never together with a grammar) for long free-text runs;
- bytes >= 0x80 that the model all but never samples. llama.cpp's grammar lets
  through bytes that are not valid UTF-8 and wllama then fails the request, so a
  noise model that likes such bytes would fail turns that a real model passes.

How the preference is planted: every token embedding has 1.0 in dimension 0
(BIAS_DIM), and ``}``/``]`` have CLOSE_FEATURE in dimension 1 (CLOSE_DIM). The
blocks never write to those two dimensions (the matching rows of ``attn_output``
and ``ffn_down`` are zero), so after the final RMS norm they still hold those
values scaled by ~1. Column 0 of ``output`` then acts as a per-token logit bias
and column 1 as a bias that only applies after a closing bracket. The other
dimensions carry the noise that makes generations differ.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType, TokenType
from gguf.quants import quantize

from .families import FAMILIES, Chat

__all__ = ["ModelSpec", "SPECS", "CHAT_TEMPLATE", "CHATML", "CONTROL_TOKENS", "ENDOFTEXT", "IM_START", "IM_END",
           "chatml", "build_vocab", "write_model", "main"]

# Control tokens go after the byte tokens and merges, in this order.
ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CONTROL_TOKENS = (ENDOFTEXT, IM_START, IM_END)

# The chat template every model here carries (llama.cpp renders it with its own Jinja);
# chatml() is the same layout in Python, for everything on this side that builds a prompt.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHATML = Chat("chatml", CHAT_TEMPLATE, controls=CONTROL_TOKENS, bos=ENDOFTEXT, eos=IM_END)


def chatml(messages: list[dict[str, str]], generation_prompt: bool = True) -> str:
    """The conversation as CHAT_TEMPLATE renders it: each message closed by ``<|im_end|>`` and a
    newline, then, with ``generation_prompt``, the opening of the assistant turn the model writes."""
    opening = f"{IM_START}assistant\n" if generation_prompt else ""
    return "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages) + opening


BIAS_DIM, CLOSE_DIM = 0, 1
CLOSE_FEATURE = 2.0

# Merges for tiny: enough to exercise llama.cpp's BPE path and shorten prompts a
# little, few enough that tiny stays byte-level in practice.
TINY_MERGES = (
    "Ġ t", "h e", "Ġ a", "i n", "e r", "o n", "r e", "a n", "Ġt he", "e n",
    "a t", "o r", "Ġ s", "e s", "Ġ w", "i s", "Ġ o", "i t", "a l", "Ġ c",
    "Ġ f", "Ġ b", "Ġ p", "o u", "Ġ m", "a r", "l e", "Ġ d", "n d", "Ġa nd",
    '" :', '" ,', '" }', '{ "', '" ]', "[ {", "} ]", "} }",
)


@dataclass(frozen=True)
class ModelSpec:
    """One model: its shape, storage type and how strongly it prefers to close JSON."""

    name: str
    seed: int
    n_embd: int
    n_layer: int
    n_head: int
    n_ff: int
    quant: GGMLQuantizationType
    n_vocab_target: int | None = None  # None: bytes + TINY_MERGES + controls
    close_strength: float = 1.0  # scales the JSON-closing and end-of-turn preferences
    noise: float = 1.5  # std of the context-dependent part of each logit
    n_ctx_train: int = 4096
    chat: Chat = CHATML  # template and special tokens

    @property
    def file(self) -> str:
        return f"{self.name}.gguf"


SPECS: tuple[ModelSpec, ...] = (
    ModelSpec("tiny", seed=1, n_embd=64, n_layer=2, n_head=4, n_ff=128,
              quant=GGMLQuantizationType.F32),
    # The bench models close JSON less eagerly so constrained generations run
    # long enough to time.
    ModelSpec("bench", seed=2, n_embd=256, n_layer=4, n_head=8, n_ff=768,
              quant=GGMLQuantizationType.Q8_0, close_strength=0.5),
    ModelSpec("bench-bigvocab", seed=3, n_embd=256, n_layer=4, n_head=8, n_ff=768,
              quant=GGMLQuantizationType.Q8_0, close_strength=0.5, n_vocab_target=32000),
    # tiny's shape and seed with another family's chat; tpl-none is tiny without its template
    # (the engine must refuse it: llama.cpp would fall back to ChatML without a word).
    *(ModelSpec(f"tpl-{chat.name}", seed=1, n_embd=64, n_layer=2, n_head=4, n_ff=128,
                quant=GGMLQuantizationType.F32, chat=chat)
      for chat in (*FAMILIES, replace(CHATML, name="none", template=None))),
)


# --- tokenizer -----------------------------------------------------------------

def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (llama.cpp uses the same)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def synthetic_merges(count: int) -> list[str]:
    """`count` merges that are valid BPE (both halves exist before each merge).

    Pairs of printable ASCII first, then lowercase trigrams, then lowercase
    4-grams: a vocabulary the size of a real model's, without a corpus.
    """
    ascii_chars = [BYTE_CHAR[b] for b in range(0x20, 0x7F)]
    lower = [BYTE_CHAR[b] for b in range(ord("a"), ord("z") + 1)]
    merges: list[str] = [f"{a} {b}" for a in ascii_chars for b in ascii_chars]
    merges += [f"{a}{b} {c}" for a in lower for b in lower for c in lower]
    merges += [f"{a}{b} {c}{d}" for a in lower for b in lower for c in lower for d in lower]
    if count > len(merges):
        raise ValueError(f"cannot make {count} synthetic merges (at most {len(merges)})")
    return merges[:count]


@dataclass(frozen=True)
class Vocab:
    tokens: list[str]
    types: list[int]
    merges: list[str]

    def id(self, token: str) -> int:
        return self.tokens.index(token)


def build_vocab(spec: ModelSpec) -> Vocab:
    """Byte tokens (id = byte value), merge results, then the chat's control and user-defined tokens."""
    chat = spec.chat
    if spec.n_vocab_target is None:
        merges = list(TINY_MERGES)
    else:
        merges = synthetic_merges(spec.n_vocab_target - 256 - len(chat.specials))
    tokens = [BYTE_CHAR[b] for b in range(256)]
    known = set(tokens)
    for merge in merges:
        left, right = merge.split(" ")
        if left not in known or right not in known:
            raise ValueError(f"merge {merge!r} uses a token that does not exist yet")
        if left + right not in known:
            tokens.append(left + right)
            known.add(left + right)
    types = [int(TokenType.NORMAL)] * len(tokens)
    tokens += chat.controls + chat.user_defined
    types += [int(TokenType.CONTROL)] * len(chat.controls) + [int(TokenType.USER_DEFINED)] * len(chat.user_defined)
    return Vocab(tokens, types, merges)


# --- the planted preferences ------------------------------------------------------

def byte_bias(b: int, strength: float) -> float:
    """Logit bias of one byte. Only relative values matter."""
    if b >= 0x80:
        return -30.0  # never start a multi-byte sequence: see the module docstring
    if b in (0x0A, 0x09):
        return -10.0  # JSON may have newlines between tokens; a turn needs none
    if b < 0x20 or b == 0x7F:
        return -30.0
    c = chr(b)
    if c == '"':
        return 3.0 * strength  # ends strings
    if c in "}]":
        return 2.5 * strength  # ends objects and arrays
    if c.isdigit():
        return -1.0 * strength  # numbers end sooner
    if c in "eE":
        return -2.0 * strength  # and rarely grow an exponent
    if c == ",":
        return -1.0 * strength  # another item is the opposite of closing
    if c in "{[":
        return -1.0 * strength
    if c == "\\":
        return -8.0  # escapes only lengthen strings
    if c == " ":
        return -2.0  # keeps JSON compact; also keeps the optional space after the root rare
    return 0.0


def token_bias(token: str, strength: float, chat: Chat = CHATML) -> float:
    if token == chat.turn_end:
        # Rarely on its own: a free-text reply runs on until the model writes a
        # closing bracket; CLOSE_DIM adds the rest after one.
        return -8.0
    if token in chat.specials:
        return -30.0
    return min(byte_bias(CHAR_BYTE[ch], strength) for ch in token)


def closes(token: str, chat: Chat = CHATML) -> bool:
    return token[-1:] in ("}", "]") and token not in chat.specials


# --- weights -------------------------------------------------------------------

def make_tensors(spec: ModelSpec, vocab: Vocab) -> dict[str, np.ndarray]:
    """Random llama weights (numpy order: out_features x in_features) with the planted bias."""
    rng = np.random.default_rng(spec.seed)
    n_vocab, d, ff = len(vocab.tokens), spec.n_embd, spec.n_ff
    reserved = (BIAS_DIM, CLOSE_DIM)

    def normal(shape: tuple[int, ...], std: float) -> np.ndarray:
        return rng.normal(0.0, std, size=shape).astype(np.float32)

    embd = normal((n_vocab, d), 1.0)
    embd[:, BIAS_DIM] = 1.0
    embd[:, CLOSE_DIM] = [CLOSE_FEATURE if closes(t, spec.chat) else 0.0 for t in vocab.tokens]

    n_free = d - len(reserved)
    output = normal((n_vocab, d), spec.noise / np.sqrt(n_free))
    output[:, BIAS_DIM] = [token_bias(t, spec.close_strength, spec.chat) for t in vocab.tokens]
    output[:, CLOSE_DIM] = 0.0
    # After a closing bracket: end the turn (the grammar only allows it once the
    # JSON is complete), and do not open anything new.
    output[vocab.id(spec.chat.turn_end), CLOSE_DIM] = 7.0 * spec.close_strength
    tensors: dict[str, np.ndarray] = {
        "token_embd.weight": embd,
        "output_norm.weight": np.ones(d, np.float32),
        "output.weight": output,
    }
    for i in range(spec.n_layer):
        attn_out = normal((d, d), 0.5 / np.sqrt(d))
        ffn_down = normal((d, ff), 0.5 / np.sqrt(ff))
        attn_out[list(reserved), :] = 0.0  # blocks must not disturb the planted dimensions
        ffn_down[list(reserved), :] = 0.0
        tensors |= {
            f"blk.{i}.attn_norm.weight": np.ones(d, np.float32),
            f"blk.{i}.attn_q.weight": normal((d, d), 1.0 / np.sqrt(d)),
            f"blk.{i}.attn_k.weight": normal((d, d), 1.0 / np.sqrt(d)),
            f"blk.{i}.attn_v.weight": normal((d, d), 1.0 / np.sqrt(d)),
            f"blk.{i}.attn_output.weight": attn_out,
            f"blk.{i}.ffn_norm.weight": np.ones(d, np.float32),
            f"blk.{i}.ffn_gate.weight": normal((ff, d), 1.0 / np.sqrt(d)),
            f"blk.{i}.ffn_up.weight": normal((ff, d), 1.0 / np.sqrt(d)),
            f"blk.{i}.ffn_down.weight": ffn_down,
        }
    return tensors


# --- writing -------------------------------------------------------------------

FILE_TYPE = {
    GGMLQuantizationType.F32: LlamaFileType.ALL_F32,
    GGMLQuantizationType.F16: LlamaFileType.MOSTLY_F16,
    GGMLQuantizationType.Q8_0: LlamaFileType.MOSTLY_Q8_0,
}


def write_llama(path: Path, *, name: str, description: str, context: int, dim: int, layers: int, ffn: int,
                heads: int, rope_base: float, eps: float, tokens: list[str], types: list[int], merges: list[str],
                quant: GGMLQuantizationType, tensors: dict[str, np.ndarray], chat: Chat = CHATML) -> None:
    """A llama-architecture GGUF with aerix's tokenizer layout: byte-level ``gpt2`` BPE and the
    chat's special tokens and template (ChatML, no BOS, unless told otherwise). Every model aerix
    makes is written here: the generated ones below and the trained one (build/model/export.py).
    2-D tensors are stored as ``quant``; norms stay F32 (llama.cpp never quantizes 1-D tensors either)."""
    w = GGUFWriter(path, "llama")
    w.add_name(name)
    w.add_description(description)
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_rope_dimension_count(dim // heads)
    w.add_rope_freq_base(rope_base)
    w.add_layer_norm_rms_eps(eps)
    w.add_vocab_size(len(tokens))
    w.add_file_type(int(FILE_TYPE[quant]))
    if quant not in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        w.add_quantization_version(2)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")  # llama.cpp's name; "gpt2" is rejected
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index(chat.bos))
    w.add_eos_token_id(tokens.index(chat.eos))
    if chat.eot is not None:
        w.add_eot_token_id(tokens.index(chat.eot))
    w.add_pad_token_id(tokens.index(chat.pad or chat.bos))
    w.add_add_bos_token(chat.add_bos)
    if chat.template is not None:
        w.add_chat_template(chat.template)

    for key, array in tensors.items():
        if array.ndim == 2 and quant is not GGMLQuantizationType.F32:
            w.add_tensor(key, quantize(array, quant), raw_dtype=quant)
        else:
            w.add_tensor(key, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_gguf(spec: ModelSpec, path: Path) -> Vocab:
    vocab = build_vocab(spec)
    write_llama(path, name=f"aerix-{spec.name}", description="Random weights for tests and benchmarks; not a language model.",
                context=spec.n_ctx_train, dim=spec.n_embd, layers=spec.n_layer, ffn=spec.n_ff, heads=spec.n_head,
                rope_base=10000.0, eps=1e-5, tokens=vocab.tokens, types=vocab.types, merges=vocab.merges,
                quant=spec.quant, tensors=make_tensors(spec, vocab), chat=spec.chat)
    return vocab


def replace_if_changed(tmp: Path, dest: Path) -> None:
    """Move tmp over dest unless dest already holds the same bytes (keeps mtimes stable)."""
    if dest.exists() and dest.read_bytes() == tmp.read_bytes():
        tmp.unlink()
    else:
        os.replace(tmp, dest)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_model(spec: ModelSpec, outdir: Path) -> dict[str, object]:
    """Write one model into outdir and return its manifest entry."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.name}.", suffix=".tmp", dir=outdir)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.chmod(0o644)  # mkstemp makes it private; the site serves it
    try:
        vocab = write_gguf(spec, tmp)
        replace_if_changed(tmp, outdir / spec.file)
    finally:
        tmp.unlink(missing_ok=True)
    dest = outdir / spec.file
    return {
        "name": spec.name,
        "file": spec.file,
        "size": dest.stat().st_size,
        "sha256": sha256(dest),
        "n_vocab": len(vocab.tokens),
        "n_embd": spec.n_embd,
        "n_layer": spec.n_layer,
        "quant": spec.quant.name,
        "chat": spec.chat.name,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m build.models OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[0])
    outdir.mkdir(parents=True, exist_ok=True)
    entries = [write_model(spec, outdir) for spec in SPECS]
    generated = {e["file"] for e in entries}
    from .general.model import link_into  # aerix-general, once `make general-model` has made it

    link_into(outdir)
    for other in sorted(outdir.glob("*.gguf")):
        if other.name not in generated:
            size = other.stat().st_size
            entries.append({"name": other.stem, "file": other.name, "size": size, "sha256": sha256(other)})
    manifest = outdir / "models.json"
    tmp = manifest.with_name(".models.json.tmp")
    tmp.write_text(json.dumps({"models": entries}, indent=2) + "\n")
    replace_if_changed(tmp, manifest)
    for e in entries:
        made = f"{e['quant']:5}  n_vocab={e['n_vocab']}" if "quant" in e else "listed, not generated"
        print(f"{e['file']:24} {e['size']:>10,} B  {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
