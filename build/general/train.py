"""LoRA fine-tuning of the base on the corpus, resumable.

    python -m build.general.train --data corpus.jsonl --out ~/.cache/aerix/general/run-NAME [--steps 2000]

The base (SmolLM2-135M-Instruct's GGUF, dequantized; build/general/base.py) stays frozen; LoRA
adapters (build/general/lora.py) on every block's q, k, v, o, gate, up and down learn, with
AdamW, a linear warm-up then a cosine (or constant) learning rate, micro-batches of at most
``--budget`` tokens (padded) and ``--accum`` of them per step; the loss is the mean
cross-entropy over the assistant's tokens of the whole step (build/general/batches.py).

Everything lives in ``--out``: ``train.log`` (progress: step, loss, learning rate, tokens/s, eta;
validation loss every ``--eval-every`` steps), ``metrics.jsonl`` (one line a step),
``checkpoint.pt`` (adapter, optimizer, step, RNG states, data position; every ``--save-every``
steps, at the end, and on SIGTERM or SIGINT, after the step under way) and ``adapter.lora``
(what build/general/gguf_out.py applies). Run the same command again and it resumes from the
checkpoint: the same data from the same place, the same losses as a run never stopped.

``--init RUN/checkpoint.pt`` starts a new run from another run's adapter (its weights only: a
fresh optimizer, this run's data and schedule from step 0): run B went on from run A this way
with a corpus run A never saw. ``--init`` also takes an adapter file (``models/general/adapter.lora``,
the committed one: float16, so a fresh machine can go on from what ships). Only a run's first start reads it; a resumed run has its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from build.model.torch_llama import Llama

from .adapter import MAGIC, load_adapter, save_adapter
from .batches import Example, epoch_batches, micro_batches, pad_batch, prefix_micro_batches
from .lora import TARGETS, adapters_of, attach, prefix_loss, weighted_loss

__all__ = ["Settings", "train", "lr_at", "main"]

# What must be the same for a checkpoint to go on (steps, save_every, eval_every may change)
_FIXED = ("rank", "alpha", "targets", "lr", "schedule", "warmup", "budget", "accum", "max_len", "seed", "share_prefix")


@dataclass(frozen=True)
class Settings:
    rank: int = 8
    alpha: float = 16.0
    targets: tuple[str, ...] = TARGETS
    lr: float = 2e-4
    schedule: str = "cosine"  # or "constant"
    warmup: int = 20
    steps: int = 1000
    budget: int = 4096  # tokens in one micro-batch, padding included
    accum: int = 4  # micro-batches a step
    max_len: int = 2048
    save_every: int = 50
    eval_every: int = 100
    eval_batches: int = 16
    seed: int = 29
    bf16: bool = False  # matmuls in bfloat16 (torch.autocast): about 1.5x faster here, less exact
    share_prefix: bool = False  # micro-batches of one system turn, run once for them (batches.py)

    def __post_init__(self) -> None:
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule {self.schedule!r}: cosine or constant")


def lr_at(step: int, s: Settings) -> float:
    """The learning rate of step `step` (0-based): linear warm-up, then constant or cosine to 10%."""
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    if s.schedule == "constant":
        return s.lr
    done = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, done))))


class Log:
    def __init__(self, out: Path) -> None:
        self.path = out / "train.log"

    def __call__(self, line: str) -> None:
        stamped = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}"
        print(stamped, flush=True)
        with open(self.path, "a") as f:
            f.write(stamped + "\n")


def _rng_state() -> dict[str, Any]:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])


def save_checkpoint(out: Path, model: Llama, opt: torch.optim.Optimizer, step: int, s: Settings,
                    meta: dict[str, Any]) -> None:
    trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    state = {"step": step, "micro_batch": step * s.accum, "adapter": trainable, "optimizer": opt.state_dict(),
             "rng": _rng_state(), "settings": asdict(s)}
    tmp = out / ".checkpoint.pt.tmp"
    torch.save(state, tmp)
    os.replace(tmp, out / "checkpoint.pt")  # a kill mid-write leaves the last checkpoint whole
    save_adapter(out / "adapter.lora", adapters_of(model),
                 {**meta, "rank": s.rank, "alpha": s.alpha, "targets": list(s.targets), "step": step})


def resume(out: Path, model: Llama, opt: torch.optim.Optimizer, s: Settings) -> int:
    """The step to go on from: the checkpoint's (its state loaded into model and opt), else 0."""
    path = out / "checkpoint.pt"
    if not path.is_file():
        return 0
    state = torch.load(path, weights_only=False)
    was = state["settings"]
    was = {**asdict(Settings()), **was}  # a checkpoint from before an option was added: its default
    changed = [k for k in _FIXED if (tuple(was[k]) if k == "targets" else was[k]) != getattr(s, k)]
    if changed:
        raise SystemExit(f"train: {path} was made with other settings ({', '.join(f'{k}={was[k]}' for k in changed)}): "
                         "run with those, or use another --out")
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state["adapter"].items():
            params[name].copy_(value)
    opt.load_state_dict(state["optimizer"])
    _set_rng_state(state["rng"])
    return int(state["step"])


def warm_start(path: Path, model: Llama, s: Settings) -> int:
    """Copy into `model` the adapter of another run's checkpoint at `path`, or of an adapter file
    (`adapter.lora`, e.g. the committed models/general/adapter.lora: its float16 weights); that
    run's step."""
    if not Path(path).is_file():
        raise SystemExit(f"train: --init {path}: no such checkpoint")
    with open(path, "rb") as f:
        is_adapter = f.read(len(MAGIC)) == MAGIC
    if is_adapter:
        meta, pairs = load_adapter(path)
        was: dict[str, Any] = {**asdict(Settings()), **{k: meta[k] for k in ("rank", "alpha", "targets") if k in meta}}
        weights = {f"{name}.{part}": torch.from_numpy(m) for name, ab in pairs.items() for part, m in zip("ab", ab)}
        step = int(meta.get("step", 0))
    else:
        state = torch.load(path, weights_only=False)
        was, weights, step = {**asdict(Settings()), **state["settings"]}, state["adapter"], int(state["step"])
    changed = [k for k in ("rank", "alpha", "targets") if (tuple(was[k]) if k == "targets" else was[k]) != getattr(s, k)]
    if changed:
        raise SystemExit(f"train: --init {path} has other adapters ({', '.join(f'{k}={was[k]}' for k in changed)})")
    params = dict(model.named_parameters())
    unmatched = sorted(set(weights) ^ {n for n, p in params.items() if p.requires_grad})  # in one and not the other
    if unmatched:
        raise SystemExit(f"train: --init {path} does not fit this model's adapters ({', '.join(unmatched[:3])}, ...)")
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)
    return step


def validate(model: Llama, examples: list[Example], s: Settings, pad: int) -> float:
    total, weight = 0.0, 0.0
    with torch.no_grad():
        for group in epoch_batches(examples, 0, seed=s.seed, budget=s.budget, max_len=s.max_len, shuffle=False)[:s.eval_batches]:
            ids, w = pad_batch(group, pad)
            loss, n = weighted_loss(model, torch.from_numpy(ids), torch.from_numpy(w))
            total, weight = total + float(loss), weight + float(n)
    return total / max(weight, 1e-9)


def train(model: Llama, train_set: list[Example], val_set: list[Example], out: Path, s: Settings, *, pad: int,
          meta: dict[str, Any] | None = None, should_stop: Callable[[], bool] = lambda: False,
          init: Path | None = None) -> int:
    """Train LoRA adapters on `model` (attached here) until step `s.steps` or `should_stop()`;
    the step reached. Resumes from `out`'s checkpoint when there is one."""
    out.mkdir(parents=True, exist_ok=True)
    log, meta = Log(out), meta or {}
    attach(model, rank=s.rank, alpha=s.alpha, targets=s.targets, seed=s.seed)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.0)
    step = resume(out, model, opt, s)
    _keep_metrics(out, step)
    if init is not None and step == 0:
        log(f"initialised from {init} (its step {warm_start(init, model, s)})")
    log(f"{'resumed at' if step else 'starting'} step {step}/{s.steps}: {len(train_set)} training examples, "
        f"{len(val_set)} validation; LoRA rank {s.rank} on {','.join(s.targets)}: {sum(p.numel() for p in params):,} "
        f"parameters; {torch.get_num_threads()} threads")
    batches = _batches(train_set, step * s.accum, s, pad)
    began, tokens_seen, trained_seen, steps_done = time.monotonic(), 0, 0.0, 0
    while step < s.steps and not should_stop():
        for group in opt.param_groups:
            group["lr"] = lr_at(step, s)
        opt.zero_grad(set_to_none=True)
        loss_sum, weight, tokens = 0.0, 0.0, 0
        for _ in range(s.accum):
            prefix, ids, w = next(batches)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=s.bf16):
                loss, n = prefix_loss(model, torch.from_numpy(prefix), torch.from_numpy(ids), torch.from_numpy(w))
            loss.backward()
            loss_sum, weight = loss_sum + float(loss.detach()), weight + float(n)
            tokens += len(prefix) + w.shape[0] * w.shape[1]
        for p in params:
            if p.grad is not None:
                p.grad /= weight
        opt.step()
        step, steps_done, tokens_seen, trained_seen = step + 1, steps_done + 1, tokens_seen + tokens, trained_seen + weight
        elapsed = time.monotonic() - began
        eta = elapsed / steps_done * (s.steps - step)
        record: dict[str, Any] = {"step": step, "loss": loss_sum / weight, "lr": lr_at(step - 1, s)}
        log(f"step {step}/{s.steps} loss {record['loss']:.4f} lr {record['lr']:.2e} tok/s {tokens_seen / elapsed:.0f} "
            f"trained tok/s {trained_seen / elapsed:.1f} eta {time.strftime('%H:%M:%S', time.gmtime(eta))}")
        if val_set and (step % s.eval_every == 0 or step == s.steps):
            record["val_loss"] = validate(model, val_set, s, pad)
            log(f"eval step {step} val_loss {record['val_loss']:.4f}")
        with open(out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        if step % s.save_every == 0 or step == s.steps or should_stop():
            save_checkpoint(out, model, opt, step, s, meta)
    if step < s.steps:
        log(f"stopped at step {step}/{s.steps}; checkpoint saved, run again to resume")
    return step


def _batches(examples: list[Example], start: int, s: Settings, pad: int) -> Iterator[tuple[np.ndarray, ...]]:
    """(prefix, ids, weights) for micro-batch `start` on; the prefix is empty unless s.share_prefix."""
    kw: dict[str, Any] = {"seed": s.seed, "budget": s.budget, "max_len": s.max_len, "pad": pad}
    if s.share_prefix:
        for _, prefix, ids, w in prefix_micro_batches(examples, start, **kw):
            yield prefix, ids, w
    else:
        for _, ids, w in micro_batches(examples, start, **kw):
            yield np.zeros(0, dtype=np.int64), ids, w


def _keep_metrics(out: Path, step: int) -> None:
    """metrics.jsonl keeps the steps up to the checkpoint: one run's curve, however often resumed."""
    path = out / "metrics.jsonl"
    if path.is_file():
        kept = [ln for ln in path.read_text().splitlines() if ln and json.loads(ln)["step"] <= step]
        path.write_text("".join(f"{ln}\n" for ln in kept))


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    from build.smollm2 import CACHE, SMOLLM2

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the corpus: JSONL (build/general/batches.py)")
    ap.add_argument("--out", type=Path, required=True, help="the run's folder (resumed when it has a checkpoint)")
    ap.add_argument("--base", type=Path, default=CACHE / SMOLLM2.file)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init", type=Path, default=None, help="start from this run's checkpoint.pt, or an adapter.lora (its adapter only)")
    ap.add_argument("--train-split", default="train")
    ap.add_argument("--val-split", default="val,val_family,val_phrasing", help="comma-separated split names")
    for f in fields(Settings):
        if f.name == "targets":
            ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated, of " + ",".join(TARGETS))
        elif f.type in (bool, "bool"):
            ap.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, action="store_true")
        else:
            ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    args = ap.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(Settings)}
    values["targets"] = tuple(t for t in args.targets.split(",") if t)
    return args, Settings(**values)


def main(argv: list[str] | None = None) -> int:
    args, s = _parse(argv)
    from build.dist import sha256

    from .base import read_base, to_llama, tokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(s.seed)
    if not args.base.is_file():
        raise SystemExit(f"train: no base model at {args.base} (make smollm2 fetches it)")
    base = read_base(args.base)
    tok = tokenizer(base)
    from .batches import read_examples

    train_set = read_examples(args.data, tok, args.train_split)
    val_set = read_examples(args.data, tok, args.val_split)
    stop: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda n, _f: stop.append(n))
    meta = {"base": args.base.name, "base_sha256": sha256(args.base), "data_sha256": sha256(args.data)}
    if args.init is not None:
        meta["init"] = str(args.init)
    pad = int(base.value("tokenizer.ggml.padding_token_id") or 0)
    step = train(to_llama(base), train_set, val_set, args.out, s, pad=pad, meta=meta, should_stop=lambda: bool(stop),
                 init=args.init)
    return 128 + stop[0] if stop and step < s.steps else 0


if __name__ == "__main__":
    sys.exit(main())
