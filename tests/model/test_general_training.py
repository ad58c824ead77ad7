"""The weights side of aerix-general (build/general/) in torch: LoRA starts as the base, merging
computes what the adapters do, a stopped run resumes to the same losses, only the assistant's
tokens are trained. Tiny random Llamas, so it runs in seconds; skipped without torch and
tokenizers (build/model/requirements.txt, installed by `make model`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tokenizers")

from build.general import lora  # noqa: E402
from build.general.adapter import merged  # noqa: E402
from build.general.base import read_base, tokenizer  # noqa: E402
from build.general.batches import Example, encode, prefix_batches, prefix_micro_batches, read_examples  # noqa: E402
from build.general.batches import pad_batch  # noqa: E402
from build.general.train import Settings, _parse, train  # noqa: E402
from build.model.torch_llama import Config, Llama  # noqa: E402

from test_general_weights import tiny_base  # noqa: E402  (tests/model is on sys.path: pytest prepends it)

CFG = Config(vocab=96, dim=64, layers=2, heads=4, kv_heads=2, ffn=128)


def tiny_llama() -> Llama:
    torch.manual_seed(0)
    return Llama(CFG).eval()


def logits(model: Llama, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.head(lora.hidden(model, ids))


def test_an_untrained_lora_is_the_base_exactly():
    ids = torch.randint(0, CFG.vocab, (2, 12), generator=torch.Generator().manual_seed(1))
    model = tiny_llama()
    before = logits(model, ids)
    names = lora.attach(model, rank=4, alpha=8, seed=3)
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert len(names) == 2 * 7 and len(trained) == 2 * 14 and all(n.endswith((".a", ".b")) for n in trained)
    assert torch.equal(logits(model, ids), before)
    assert float(model.blocks[0].q.a.detach().abs().sum()) > 0  # A is random: B's gradient is not zero


def test_the_merged_model_computes_what_the_adapters_do():
    ids = torch.randint(0, CFG.vocab, (1, 16), generator=torch.Generator().manual_seed(2))
    model = tiny_llama()
    lora.attach(model, rank=4, alpha=8, targets=("q", "v", "down"), seed=3)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, lora.LoRALinear):
                mod.b.normal_(0, 0.2)
    adapted = logits(model, ids)
    pairs = lora.adapters_of(model)
    w = model.blocks[1].down.base.weight.numpy()
    assert np.allclose(merged(w, *pairs["blocks.1.down"], 2.0), model.blocks[1].down.weight.detach().numpy(), atol=1e-6)
    lora.merge_into(model)
    assert not any(isinstance(m, lora.LoRALinear) for m in model.modules())
    assert torch.allclose(logits(model, ids), adapted, atol=1e-5)
    assert not torch.allclose(adapted, logits(tiny_llama(), ids), atol=1e-3)


def examples(n: int, seed: int) -> list[Example]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(8, 24))
        ids = rng.integers(0, CFG.vocab, length).tolist()
        out.append(Example(ids, [0.0] * (length // 2) + [1.0] * (length - length // 2)))
    return out


def prefixed(n: int, seed: int, prefixes: int = 3) -> list[Example]:
    """`n` examples, each after one of `prefixes` system turns (untrained, of 5 to 12 ids), some with none."""
    rng = np.random.default_rng(seed)
    heads = [rng.integers(0, CFG.vocab, int(rng.integers(5, 13))).tolist() for _ in range(prefixes)] + [[]]
    out = []
    for ex in examples(n, seed):
        head = heads[int(rng.integers(0, len(heads)))]
        out.append(Example(head + ex.ids, [0.0] * len(head) + ex.weights, len(head)))
    return out


def test_the_shared_prefix_loss_is_the_loss_and_gradients_of_the_whole_sequences():
    torch.manual_seed(4)
    model = tiny_llama()
    lora.attach(model, rank=4, alpha=8, seed=3)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, lora.LoRALinear):
                mod.b.normal_(0, 0.2)  # trained adapters: the prefix's path through them counts
    head = [5, 17, 3, 88, 41, 9, 2]
    rest = examples(5, 7)
    group = [Example(head + e.ids, [0.0] * len(head) + e.weights, len(head)) for e in rest]
    lora_params = [p for p in model.parameters() if p.requires_grad]

    def run(loss_fn):  # (loss sum, weight, gradients)
        model.zero_grad(set_to_none=True)
        loss, n = loss_fn()
        loss.backward()
        return float(loss.detach()), float(n), [p.grad.clone() for p in lora_params]

    ids, w = pad_batch(group, 0)
    whole = run(lambda: lora.weighted_loss(model, torch.from_numpy(ids), torch.from_numpy(w)))
    k, prefix, sids, sw = next(prefix_micro_batches(group, 0, seed=0, budget=10_000, max_len=64, pad=0))
    assert prefix.tolist() == head and sids.shape[0] == 5
    shared = run(lambda: lora.prefix_loss(model, torch.from_numpy(prefix), torch.from_numpy(sids), torch.from_numpy(sw)))
    assert shared[1] == whole[1] == sum(sum(e.weights) for e in group)
    assert shared[0] == pytest.approx(whole[0], rel=1e-5)
    assert all(float(g.abs().max()) > 0 for g in whole[2][-4:])  # B's and A's gradients are not zero
    for g_shared, g_whole in zip(shared[2], whole[2]):
        assert torch.allclose(g_shared, g_whole, rtol=1e-4, atol=1e-6)


def test_shared_prefix_batches_hold_one_prefix_each_and_every_example_once_an_epoch():
    data = prefixed(60, 3, prefixes=4)
    for epoch in (0, 1):
        batches = prefix_batches(data, epoch, seed=9, budget=80, max_len=64)
        for group in batches:
            p = group[0].prefix
            assert len({tuple(e.ids[: e.prefix]) for e in group}) == 1  # never two prefixes in one micro-batch
            assert len(group) == 1 or p + len(group) * max(len(e.ids) - p for e in group) <= 80
        assert sorted(e.ids for g in batches for e in g) == sorted(e.ids for e in data)  # each once
    assert len({len(g[0].ids[: g[0].prefix]) for g in batches}) == 5  # the four prefixes and none were all seen
    # micro-batch k is the same however the run got there: 3 on from 0, or started at 3
    batches_from = lambda start: list(zip(prefix_micro_batches(data, start, seed=9, budget=80, max_len=64, pad=0), range(3)))
    assert [[a.tolist() for a in b[1:]] for b, _ in batches_from(0)[1:]] == [[a.tolist() for a in b[1:]] for b, _ in batches_from(1)[:2]]


def test_the_system_turn_is_the_shared_prefix(tmp_path):
    tok = tokenizer(read_base(tiny_base(tmp_path / "base.gguf")))
    system = "<|im_start|>system\nyou help<|im_end|>"
    rows = []
    for q, a in (("hi", "hello"), ("bye", "see you")):
        text = f"{system}\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n"
        start = text.rindex(a)
        rows.append({"split": "train", "text": text, "assistant_spans": [[start, start + len(a)]]})
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    a, b = read_examples(tmp_path / "c.jsonl", tok, "train")
    assert a.prefix == b.prefix > 0 and a.ids[: a.prefix] == b.ids[: b.prefix]
    assert tok.decode(a.ids[: a.prefix], skip_special_tokens=False) == system


@pytest.mark.parametrize("share_prefix", [False, True])
def test_a_run_stopped_and_resumed_gives_what_an_uninterrupted_run_gives(tmp_path, share_prefix):
    torch.set_num_threads(1)
    s = Settings(rank=4, alpha=8, steps=6, warmup=2, lr=1e-2, budget=64, accum=2, max_len=32, save_every=4,
                 eval_every=3, eval_batches=2, seed=5, share_prefix=share_prefix)
    data, val = (examples(12, 1), examples(4, 2)) if not share_prefix else (prefixed(12, 1), prefixed(4, 2))
    assert train(tiny_llama(), data, val, tmp_path / "whole", s, pad=0) == 6

    metrics = tmp_path / "parts" / "metrics.jsonl"  # stopped once step 3 is done, as on SIGTERM: saved at 3, not 4
    stopped = train(tiny_llama(), data, val, tmp_path / "parts", s, pad=0,
                    should_stop=lambda: metrics.is_file() and len(metrics.read_text().splitlines()) >= 3)
    assert stopped == 3
    assert torch.load(tmp_path / "parts" / "checkpoint.pt", weights_only=False)["step"] == 3
    assert train(tiny_llama(), data, val, tmp_path / "parts", s, pad=0) == 6

    whole, parts = ([json.loads(ln) for ln in (tmp_path / d / "metrics.jsonl").read_text().splitlines()] for d in ("whole", "parts"))
    assert [m["step"] for m in parts] == [1, 2, 3, 4, 5, 6]
    assert parts == whole  # losses, learning rates and validation losses, to the last bit
    assert (tmp_path / "whole" / "adapter.lora").read_bytes() == (tmp_path / "parts" / "adapter.lora").read_bytes()
    log = (tmp_path / "parts" / "train.log").read_text()
    assert "stopped at step 3/6" in log and "resumed at step 3/6" in log and "eval step 6 val_loss" in log

    with pytest.raises(SystemExit, match="other settings"):
        train(tiny_llama(), data, val, tmp_path / "parts", Settings(**{**s.__dict__, "rank": 8}), pad=0)
    with pytest.raises(SystemExit, match=f"share_prefix={share_prefix}"):
        train(tiny_llama(), data, val, tmp_path / "parts", Settings(**{**s.__dict__, "share_prefix": not share_prefix}), pad=0)


def _run_a(tmp_path: Path) -> tuple[Settings, list[Example], list[Example], dict[str, torch.Tensor]]:
    """Run A, 3 steps into tmp_path/a: its settings, data and learnt adapter, for --init to start from."""
    torch.set_num_threads(1)
    s = Settings(rank=4, alpha=8, steps=3, warmup=1, lr=1e-2, budget=64, accum=1, max_len=32, save_every=3,
                 eval_every=3, eval_batches=1, seed=5)
    data, val = examples(8, 1), examples(2, 2)
    train(tiny_llama(), data, val, tmp_path / "a", s, pad=0)
    return s, data, val, torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)["adapter"]


def test_init_starts_a_new_run_from_another_runs_adapter_once(tmp_path):
    s, data, val, learnt = _run_a(tmp_path)

    model = tiny_llama()  # stopped before its first step: the adapter is run A's, not a fresh one
    assert train(model, data, val, tmp_path / "b", s, pad=0, init=tmp_path / "a" / "checkpoint.pt", should_stop=lambda: True) == 0
    params = dict(model.named_parameters())
    assert learnt and all(torch.equal(params[k], v) for k, v in learnt.items())
    assert "initialised from" in (tmp_path / "b" / "train.log").read_text()

    fresh = tiny_llama()
    train(fresh, data, val, tmp_path / "c", s, pad=0, should_stop=lambda: True)
    assert not all(torch.equal(dict(fresh.named_parameters())[k], v) for k, v in learnt.items())
    with pytest.raises(SystemExit, match="other adapters"):
        train(tiny_llama(), data, val, tmp_path / "d", Settings(**{**s.__dict__, "rank": 8}), pad=0,
              init=tmp_path / "a" / "checkpoint.pt")
    with pytest.raises(SystemExit, match="no such checkpoint"):
        train(tiny_llama(), data, val, tmp_path / "e", s, pad=0, init=tmp_path / "nowhere.pt")


def test_init_also_takes_an_adapter_file_as_committed(tmp_path):
    """A fresh machine has no checkpoint of the shipped run, only models/general/adapter.lora:
    --init goes on from it (its float16 weights), and refuses one made with other adapters."""
    s, data, val, learnt = _run_a(tmp_path)

    model = tiny_llama()
    assert train(model, data, val, tmp_path / "b", s, pad=0, init=tmp_path / "a" / "adapter.lora", should_stop=lambda: True) == 0
    params = dict(model.named_parameters())
    assert learnt and all(torch.equal(params[k], v.half().float()) for k, v in learnt.items())
    assert any(v.abs().sum() > 0 for k, v in learnt.items() if k.endswith(".b"))  # B moved off zero: a real start
    assert "initialised from" in (tmp_path / "b" / "train.log").read_text() and "(its step 3)" in (tmp_path / "b" / "train.log").read_text()
    with pytest.raises(SystemExit, match="other adapters"):
        train(tiny_llama(), data, val, tmp_path / "d", Settings(**{**s.__dict__, "alpha": 4}), pad=0,
              init=tmp_path / "a" / "adapter.lora")


def test_only_the_assistant_turns_and_their_end_are_trained(tmp_path):
    tok = tokenizer(read_base(tiny_base(tmp_path / "base.gguf")))
    text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello there<|im_end|>\n"
    start = text.index("hello")
    ex = encode(tok, text, [[start, start + len("hello there")]])
    trained = tok.decode([i for i, w in zip(ex.ids, ex.weights) if w], skip_special_tokens=False)
    assert trained == "hello there<|im_end|>"


SMOLLM2 = Path.home() / ".cache" / "aerix" / "smollm2" / "SmolLM2-135M-Instruct-Q4_1.gguf"


@pytest.mark.skipif(not SMOLLM2.is_file(), reason="SmolLM2's GGUF is not cached (make smollm2)")
def test_the_smollm2_tokenizer_gives_llama_servers_ids():
    # the ids llama-server's /tokenize gave for this text on the same GGUF (build/general/agree.py, 2026-12)
    text = '<|im_start|>user\nWhat\'s 17% of 2,340 — and  the time in Tokyo (東京)?\n\t{"x": 12.5e3}<|im_end|>\n<|im_start|>assistant\n'
    server = [1, 4093, 198, 1780, 506, 216, 33, 39, 21, 282, 216, 34, 28, 35, 36, 32, 1841, 284, 216, 260, 655, 281,
              19081, 365, 30679, 126, 16736, 122, 14487, 198, 197, 39428, 104, 1799, 216, 33, 34, 30, 37, 85, 35, 109,
              2, 198, 1, 520, 9531, 198]
    assert tokenizer(read_base(SMOLLM2)).encode(text).ids == server


def test_the_command_line_takes_share_prefix_and_bf16():
    _, s = _parse(["--data", "c.jsonl", "--out", "run", "--share-prefix", "--bf16", "--max-len", "512"])
    assert s.share_prefix and s.bf16 and s.max_len == 512
    assert not _parse(["--data", "c.jsonl", "--out", "run"])[1].share_prefix
