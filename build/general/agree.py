"""Does the PyTorch base compute what llama.cpp computes? And what does Q8_0 cost?

    python -m build.general.agree [--gguf SmolLM2-...-Q4_1.gguf] [--q8 ...-Q8_0.gguf] [--tokens 32]

1. Tokenizer: build/general/base.py's ids for each prompt against llama-server's ``/tokenize``.
2. Greedy decoding: the PyTorch model (the GGUF dequantized to float32) against llama-server's
   greedy ``/completion`` on the same GGUF (``-t 1``, loopback), token by token; the figure is
   how many tokens agree before the first difference.
3. Q8_0: next-token distributions of the float32 weights against the same weights written as
   Q8_0 (build/requant.py's copy, read back and dequantized), at every position of the prompts
   and their greedy continuations: mean KL(f32 || Q8_0) and top-1 agreement (``--no-q8``: skipped).
``--gguf`` another file (an F32 or Q8_0 copy) compares on that one; on F32 weights the two agree
token for token, on quantized ones llama.cpp's 8-bit activations make the difference
(build/general/TRAINING.md has the figures). Minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from build.smollm2 import CACHE, SMOLLM2

__all__ = ["PROMPTS", "serve", "server_tokens", "server_greedy", "torch_greedy", "q8_cost", "main"]

SERVER = Path.home() / ".cache" / "aerix" / "llama-server-11434.0.0" / "llama-server"
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
PROMPTS = [
    f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou call tools by writing JSON.<|im_end|>\n<|im_start|>user\nWhat's 17% of 2,340 and what time "
    "is it in Tokyo?<|im_end|>\n<|im_start|>assistant\n",
    f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nWrite a haiku about rain in 1987.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nList three uses of a paperclip, numbered 1-3.<|im_end|>\n<|im_start|>assistant\n",
]


def _post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())


@contextmanager
def serve(gguf: Path, server: Path = SERVER) -> Iterator[str]:
    """llama-server on `gguf`, one thread, on a free loopback port, for the `with` block; its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(server), "-m", str(gguf), "-t", "1", "-tb", "1", "-c", "2048", "--host", "127.0.0.1",
                             "--port", str(port), "-np", "1", "-ctk", "f32", "-ctv", "f32"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"llama-server exited {proc.returncode} on {gguf}") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def server_tokens(url: str, text: str) -> list[int]:
    return [int(t) for t in _post(f"{url}/tokenize", {"content": text})["tokens"]]


def server_greedy(url: str, prompt: str, n: int) -> tuple[list[int], list[float]]:
    """The server's greedy tokens and the log-probability it gave each."""
    out = _post(f"{url}/completion", {"prompt": prompt, "n_predict": n, "temperature": 0, "top_k": 1, "n_probs": 1,
                                      "cache_prompt": False, "return_tokens": True})
    return [int(t) for t in out["tokens"]], [float(p["logprob"]) for p in out["completion_probabilities"]]


def forced(model: Any, ids: list[int], theirs: list[int], logprobs: list[float]) -> tuple[int, float]:
    """On the server's continuation, teacher-forced: at how many positions the model's top token
    is the server's, and the mean |log p| difference of the server's tokens."""
    import torch

    with torch.no_grad():
        lp = _all_logits(model, ids + theirs)[len(ids) - 1:-1].log_softmax(-1)
    top = sum(int(lp[i].argmax()) == t for i, t in enumerate(theirs))
    diff = sum(abs(float(lp[i, t]) - q) for i, (t, q) in enumerate(zip(theirs, logprobs))) / len(theirs)
    return top, diff


def torch_greedy(model: Any, ids: list[int], n: int, stop: int) -> list[int]:
    """Up to `n` greedy tokens, ending after `stop` (the end of turn), as the server's do."""
    cache: list[Any] = []
    logits = model.extend(ids, cache)
    out: list[int] = []
    while len(out) < n and (not out or out[-1] != stop):
        out.append(int(logits.argmax()))
        logits = model.extend(out[-1:], cache)
    return out


def same_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def q8_cost(f32: Any, q8: Any, sequences: list[list[int]]) -> dict[str, float]:
    """Mean KL(f32 || q8) of next-token distributions and top-1 agreement, over every position."""
    import torch

    kls, agree, n = 0.0, 0, 0
    for ids in sequences:
        with torch.no_grad():
            a, b = (_all_logits(m, ids).log_softmax(-1) for m in (f32, q8))
        kls += float((a.exp() * (a - b)).sum())
        agree += int((a.argmax(-1) == b.argmax(-1)).sum())
        n += len(ids)
    return {"positions": n, "mean_kl": kls / n, "top1": agree / n}


def _all_logits(model: Any, ids: list[int]) -> Any:
    import torch

    from .lora import hidden

    return model.head(hidden(model, torch.tensor([ids]))[0]).float()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, default=CACHE / SMOLLM2.file)
    ap.add_argument("--q8", type=Path, default=CACHE / "SmolLM2-135M-Instruct-Q8_0.gguf")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--no-q8", action="store_true", help="skip the Q8_0 measurement")
    args = ap.parse_args(argv)
    import torch

    from .base import read_base, to_llama, tokenizer

    torch.set_num_threads(2)
    base = read_base(args.gguf)
    model, tok = to_llama(base), tokenizer(base)
    sequences = []
    with serve(args.gguf) as url:
        for prompt in PROMPTS:
            ids = tok.encode(prompt).ids
            theirs_ids = server_tokens(url, prompt)
            end = int(base.value("tokenizer.ggml.eos_token_id"))
            mine, (theirs, logprobs) = torch_greedy(model, ids, args.tokens, end), server_greedy(url, prompt, args.tokens)
            top, diff = forced(model, ids, theirs, logprobs)
            print(f"tokenizer {'same' if ids == theirs_ids else 'DIFFERENT'} ({len(ids)} ids); greedy: first "
                  f"{same_prefix(mine, theirs)}/{len(theirs)} the same; on the server's tokens: top-1 {top}/{len(theirs)}, "
                  f"mean |dlogp| {diff:.3f}; torch {tok.decode(mine)!r}; server {tok.decode(theirs)!r}", flush=True)
            sequences.append(ids + mine)
    if args.q8.is_file() and not args.no_q8:
        print(json.dumps({"q8_0_vs_f32": q8_cost(model, to_llama(read_base(args.q8)), sequences)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
