"""Train the bundled tool-using model from a seed, on the CPU, and write it as GGUF.

    .venv/bin/python -m build.model.train            # what `make model` runs
    .venv/bin/python -m build.model.train --steps 60 --out /tmp/try.gguf   # a quick try

Steps: synthetic conversations rendered by aerix itself (corpus.py) → a byte-level BPE trained
on them (`tokenizers`) → a small Llama (torch_llama.py) trained on the assistant turns only, with the
shared system prompt run once per batch → models/aerix-tools.gguf (export.py) and its config,
models/aerix-tools.json → a check in PyTorch: the real aerix loop on held-out tasks, unconstrained.

Everything random comes from --seed; the same seed on the same machine and thread count gives
the same tokenizer and data exactly, and the same weights up to floating-point scheduling.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator

# OpenMP threads that spin while they wait collapse on a shared machine: with two threads on two
# busy cores a step took 12-17 s instead of 2.5 s. Passive waiting keeps the idle-machine speed.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

from aerix import Agent  # noqa: E402

from ..models import CONTROL_TOKENS, ENDOFTEXT, IM_END, IM_START, chatml  # noqa: E402
from . import circuit, corpus, score  # noqa: E402
from . import demo_tools as demo  # noqa: E402
from .export import write_gguf  # noqa: E402
from .torch_llama import Config, Llama  # noqa: E402

SPECIALS = list(CONTROL_TOKENS)  # <|endoftext|>, <|im_start|>, <|im_end|>: ids 0, 1, 2 of the trained tokenizer
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "models" / "aerix-tools.gguf"


def log(msg: str) -> None:
    print(msg, flush=True)


# -- data ------------------------------------------------------------------------------------

def pieces(messages: list[dict[str, str]]) -> tuple[str, list[tuple[str, bool]]]:
    """The rendered conversation as (the shared prefix, [(text, trained)]): the prefix is the
    system turn and the opening of the user turn; specials are pieces of their own. Joined,
    they are exactly ``chatml(messages, generation_prompt=False)`` without its last newline."""
    system, first, *rest = messages
    assert system["role"] == "system" and first["role"] == "user"
    prefix = chatml([system], generation_prompt=False) + f"{IM_START}user\n"
    out: list[tuple[str, bool]] = [(first["content"], False), (IM_END, False)]
    for m in rest:
        trained = m["role"] == "assistant"
        out += [("\n", False), (IM_START, False), (f"{m['role']}\n", False), (m["content"], trained), (IM_END, trained)]
    assert prefix + "".join(t for t, _ in out) + "\n" == chatml(messages, generation_prompt=False)
    return prefix, out


def train_tokenizer(texts: list[str], system_prefix: str, vocab: int) -> Tokenizer:
    """A byte-level BPE whose merges never take in a space: "Lisbon" is the same tokens in
    'in Lisbon', in '"city": "Lisbon"' and in a result, so copying a name is copying tokens.
    (GPT-2's pre-tokenizer glues a space to the word after it; a merge like " Lis" would give
    the same city two spellings the model must translate between. Trained on text whose
    spaces are split off, the merges have no space in them, and llama.cpp's gpt-2
    pre-tokenizer then cuts exactly as this tokenizer does.) Digits are never merged either:
    every number is its digits, each seen thousands of times, so copying "88.3" or "2.9" is
    copying digits, never a rare token like "88".)"""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    # The system prompt is the same in every conversation: weigh it like 30 of them, not all.
    tok.train_from_iterator([system_prefix] * 30 + texts, trainer)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)  # what llama.cpp does
    merges = json.loads(tok.to_str())["model"]["merges"]
    joined = ["".join(m) if isinstance(m, list) else m.replace(" ", "") for m in merges]
    assert not any("Ġ" in m for m in joined), "a merge takes in a space"
    assert not any(c in "0123456789" for m in joined for c in m), "a merge takes in a digit"
    tok.add_special_tokens(SPECIALS)
    return tok


def encode_examples(tok: Tokenizer, convs: list[list[tuple[str, bool]]]) -> list[tuple[list[int], list[float]]]:
    """Each conversation's suffix as (ids, loss weights): 0 where nothing is trained."""
    special = {s: tok.token_to_id(s) for s in SPECIALS}
    texts = sorted({t for conv in convs for t, _ in conv if t not in special})
    encoded = dict(zip(texts, tok.encode_batch(texts, add_special_tokens=False)))
    out = []
    for conv in convs:
        ids: list[int] = []
        weights: list[float] = []
        for text, trained in conv:
            if text in special:
                ids.append(special[text])
                weights.append(float(trained))
                continue
            e = encoded[text]
            ids += e.ids
            weights += corpus.emphasis(text, e.offsets) if trained else [0.0] * len(e.ids)
        out.append((ids, weights))
    return out


def batches(examples: list[tuple[list[int], list[float]]], size: int, rng: random.Random) -> list[list[int]]:
    """Indices in batches of similar length (less padding), in a seeded random order."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    chunk = size * 32
    out = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda i: len(examples[i][0]))
        out += [part[i:i + size] for i in range(0, len(part), size)]
    rng.shuffle(out)
    return [b for b in out if len(b) == size]


def tensors(examples: list[tuple[list[int], list[float]]], idx: list[int], pad: int) -> tuple[torch.Tensor, ...]:
    s = max(len(examples[i][0]) for i in idx)
    ids = torch.full((len(idx), s), pad, dtype=torch.long)
    target = torch.full((len(idx), s), pad, dtype=torch.long)
    weight = torch.zeros((len(idx), s))
    for row, i in enumerate(idx):
        x, f = examples[i]
        ids[row, : len(x)] = torch.tensor(x)
        target[row, : len(x) - 1] = torch.tensor(x[1:])
        weight[row, : len(x) - 1] = torch.tensor(f[1:], dtype=torch.float)
    return ids, target, weight


def first_turn_spans(examples: list[tuple[list[int], list[float]]]) -> list[tuple[int, int]]:
    """Where each conversation's first assistant turn is: the first run of trained positions."""
    spans = []
    for _, f in examples:
        start = next(i for i, w in enumerate(f) if w)
        end = start
        while end < len(f) and f[end]:
            end += 1
        spans.append((start, end))
    return spans


@torch.no_grad()
def monitor(model: Llama, prefix_ids: torch.Tensor, held: list[tuple[list[int], list[float]]], pad: int,
            tok: Tokenizer | None = None, show: int = 0) -> str:
    """Held-out conversations (eval world, ideal turns), teacher-forced: loss, token accuracy,
    and the share whose first assistant turn is right token for token."""
    model.eval()
    ids, target, weight = tensors(held, list(range(len(held))), pad)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, right, guess = model.loss(prefix_ids, ids, target, weight, per_token=True)
    model.train()
    picked = weight > 0
    spans = first_turn_spans(held)
    exact = sum(bool(right[r, a - 1:b - 1].all()) for r, (a, b) in enumerate(spans))
    if tok is not None and show:
        for r, (a, b) in enumerate(spans):  # the first mistake in each of the first `show` wrong first turns
            wrong = [i for i in range(a - 1, b - 1) if not right[r, i]]
            if wrong and show:
                show -= 1
                i = wrong[0]
                log(f"    …{tok.decode(held[r][0][max(0, i - 24):i + 1])!r} → {tok.decode([int(guess[r, i])])!r}"
                    f" instead of {tok.decode([int(target[r, i])])!r}")
    return f"held-out loss {float(loss):.4f}  token acc {float(right[picked].float().mean()):.3f}  first turn exact {exact}/{len(held)}"


# -- the check: the real aerix loop on the trained weights -------------------------------------

class TorchModel:
    """The trained weights behind aerix's model protocol (greedy, no constraint), for checks."""

    def __init__(self, model: Llama, tok: Tokenizer, prefix: str) -> None:
        self.model, self.tok = model, tok
        self.prefix_ids = tok.encode(prefix, add_special_tokens=False).ids
        self.base: list[Any] = []
        model.extend(self.prefix_ids, self.base)
        self.end = tok.token_to_id(IM_END)

    async def chat(self, messages: list[dict[str, str]], options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        text = chatml(messages, generation_prompt=True)
        ids = self.tok.encode(text, add_special_tokens=False).ids
        assert ids[: len(self.prefix_ids)] == self.prefix_ids
        cache = list(self.base)
        logits = self.model.extend(ids[len(self.prefix_ids):], cache)
        out: list[int] = []
        finish = "length"
        for _ in range(options.get("max_tokens") or 256):
            nxt = int(logits.argmax())
            if nxt == self.end:
                finish = "stop"
                break
            out.append(nxt)
            logits = self.model.extend([nxt], cache)
        yield {"type": "text", "text": self.tok.decode(out)}
        yield {"type": "done", "finish_reason": finish,
               "usage": {"prompt_tokens": len(ids), "completion_tokens": len(out), "cached_tokens": len(self.prefix_ids)}}


def check(model: Llama, tok: Tokenizer, prefix: str, tasks: list[corpus.Task]) -> dict[str, Any]:
    engine = TorchModel(model, tok, prefix)
    agent = Agent(model=engine, instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools(), constrain=False,
                  limits={"turns": 6, "retries": 2, "max_tokens": 256})
    loop = asyncio.new_event_loop()
    rows = []
    for task in tasks:
        agent.reset()
        events = []

        async def go() -> None:
            async for ev in agent.run(task.prompt):
                if ev.type != "text":
                    events.append(ev.to_dict())

        loop.run_until_complete(go())
        rows.append(score.score(task.to_dict(), events))
        if not (rows[-1]["first_turn"] and rows[-1]["quoted"] is not False):
            log(f"  miss [{task.kind}] {task.prompt!r}: {rows[-1]['first_turn_failure'] or rows[-1]['quote_failure']}"
                f" → {[e for e in events if e['type'] in ('turn', 'final', 'end', 'retry')][:3]}")
    return score.summarize(rows)


# -- main ------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--steps", type=int, default=2700)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--rope-base", type=float, default=1e8)
    ap.add_argument("--plant", type=int, default=1, help="start from a planted copying circuit (circuit.py)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--monitor", type=int, default=100, help="held-out teacher-forced figures every N steps")
    ap.add_argument("--check", type=int, default=120, help="held-out tasks to run in PyTorch afterwards (0: none)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    started = time.monotonic()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    n = args.steps * args.batch
    tasks = corpus.train_tasks(n, seed=args.seed)
    conversations = corpus.Conversations()
    system = conversations.system
    rendered = [pieces(conversations(t)) for t in tasks]
    prefix = rendered[0][0]
    assert all(p == prefix for p, _ in rendered)
    convs = [c for _, c in rendered]
    held = {t.prompt for t in corpus.eval_tasks(seed=corpus.EVAL_SEED)}
    assert not held & {t.prompt for t in tasks}, "a held-out prompt is in the training data"
    log(f"data: {n} conversations ({time.monotonic() - started:.0f} s)")

    tok = train_tokenizer(["".join(t for t, _ in c if t not in SPECIALS) for c in convs], prefix, args.vocab)
    examples = encode_examples(tok, convs)
    for (ids, _), (p, c) in list(zip(examples, rendered))[:200]:  # pieces tokenize as the whole does
        assert tok.encode(p, add_special_tokens=False).ids + ids == tok.encode(p + "".join(t for t, _ in c), add_special_tokens=False).ids
    prefix_ids = torch.tensor(tok.encode(prefix, add_special_tokens=False).ids)
    lengths = [len(x) for x, _ in examples]
    log(f"tokenizer: {tok.get_vocab_size()} tokens; prefix {len(prefix_ids)} tokens; conversations "
        f"{min(lengths)}–{max(lengths)} tokens after it (mean {sum(lengths) / len(lengths):.0f}), "
        f"{sum(sum(w > 0 for w in f) for _, f in examples) / len(examples):.0f} trained ({time.monotonic() - started:.0f} s)")

    cfg = Config(vocab=tok.get_vocab_size(), dim=args.dim, layers=args.layers, heads=args.heads, ffn=args.ffn,
                 rope_base=args.rope_base)
    model = Llama(cfg)
    if args.plant:
        circuit.plant(model, torch.Generator().manual_seed(args.seed))
    params = sum(p.numel() for p in model.parameters())
    log(f"model: {cfg} — {params / 1e6:.2f} M parameters")
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    plan = batches(examples, args.batch, rng)[: args.steps]
    held = encode_examples(tok, [pieces(conversations(t))[1] for t in corpus.eval_tasks()[:96]])
    pad = tok.token_to_id(ENDOFTEXT)

    warmup = 60

    train_started = time.monotonic()
    seen, since = 0.0, 0
    for step, idx in enumerate(plan):
        lr = args.lr * (step + 1) / warmup if step < warmup else \
            args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, len(plan) - warmup))))
        for g in opt.param_groups:
            g["lr"] = lr
        ids, target, weight = tensors(examples, idx, pad)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model.loss(prefix_ids, ids, target, weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen += float(loss.detach())
        since += 1
        if (step + 1) % 25 == 0 or step + 1 == len(plan):
            el = time.monotonic() - train_started
            log(f"step {step + 1}/{len(plan)}  loss {seen / since:.4f}  lr {lr:.2e}  {el / (step + 1):.2f} s/step  {el / 60:.1f} min")
            seen, since = 0.0, 0
        if (step + 1) % args.monitor == 0 or step + 1 == len(plan):
            log("  " + monitor(model, prefix_ids, held, pad, tok, show=6))
    train_s = time.monotonic() - train_started
    model.eval()

    cache = ROOT / "build" / "cache" / "model" / args.out.stem
    cache.mkdir(parents=True, exist_ok=True)
    tok.save(str(cache / "tokenizer.json"))
    torch.save(model.state_dict(), cache / "weights.pt")
    # A conversation and its token count under our tokenizer: the e2e test sends it to the
    # engine, whose prompt_tokens must agree (llama.cpp's template and tokenizer = ours).
    probe = conversations(corpus.Task("two", "What's the weather in São Paulo and the time in Zürich?",
                                 [("weather", {"city": "São Paulo"}), ("time", {"city": "Zürich"})]))
    probe_tokens = len(tok.encode(chatml(probe, generation_prompt=True), add_special_tokens=False).ids)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_gguf(args.out, model, tok.to_str(), name="aerix-tools",
               description="A tiny tool-using model for aerix's demo tools, trained from scratch on synthetic aerix conversations.")
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    total_s = time.monotonic() - started
    config = {
        "file": args.out.name, "size": args.out.stat().st_size, "sha256": digest, "quant": "Q8_0",
        "parameters": params, "config": cfg.to_dict(), "tied_output": True,
        "seed": args.seed, "steps": len(plan), "batch": args.batch, "lr": args.lr, "conversations": len(plan) * args.batch,
        "prefix_tokens": len(prefix_ids), "mean_conversation_tokens": round(sum(lengths) / len(lengths)),
        "train_seconds": round(train_s), "total_seconds": round(total_s), "threads": args.threads,
        "torch": torch.__version__, "cpu_count": os.cpu_count(),
        "system_sha256": hashlib.sha256(system.encode()).hexdigest(),
        "tools": [t["name"] for t in demo.SPEC["tools"]],
        "train_mix": corpus.TRAIN_MIX,
        "probe": {"messages": probe, "prompt_tokens": probe_tokens},
    }
    args.out.with_suffix(".json").write_text(json.dumps(config, indent=2) + "\n")
    log(f"wrote {args.out} ({config['size']:,} B, sha256 {digest}); training {train_s / 60:.1f} min, all {total_s / 60:.1f} min")

    if args.check:
        summary = check(model, tok, prefix, corpus.eval_tasks(seed=corpus.EVAL_SEED)[: args.check])
        log(json.dumps({k: v for k, v in summary.items() if k != "by_kind"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
