"""The weights side of aerix-general (build/general/): the base read from its GGUF, LoRA, the
resumable training loop and the GGUF written with an adapter merged. Tiny random models, so the
whole file runs in seconds; the tests that need torch and tokenizers (build/model/requirements.txt,
installed by `make model`) are skipped without them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader
from gguf.quants import dequantize as gguf_dequantize
from gguf.quants import quantize

from build.general.base import dequantize_q4_1, dequantize_q8_0, read_base
from build.general.batches import Example, encode, epoch_batches, micro_batches
from build.general.gguf_out import apply
from build.general.adapter import load_adapter, merged, save_adapter
from build.models import SPECS, build_vocab, make_tensors, write_llama


def test_q4_1_block_dequantizes_as_the_format_says():
    # d = 0.5, m = -1.0; byte j holds q_j = j (low nibble) and q_{j+16} = 15 - j (high nibble)
    block = np.concatenate([np.array([0.5, -1.0], "<f2").view(np.uint8),
                            np.array([j | ((15 - j) << 4) for j in range(16)], np.uint8)])
    got = dequantize_q4_1(block[None, :])
    want = [0.5 * j - 1.0 for j in range(16)] + [0.5 * (15 - j) - 1.0 for j in range(16)]
    assert got.shape == (1, 32) and got[0].tolist() == want
    rows = np.random.default_rng(1).integers(0, 256, (3, 40), dtype=np.uint8)  # 3 rows of 2 blocks
    rows[:, 0:2] = rows[:, 20:22] = np.array([0.25], "<f2").view(np.uint8)  # finite scales
    assert np.array_equal(dequantize_q4_1(rows), gguf_dequantize(rows, Q.Q4_1))


def test_q8_0_block_dequantizes_as_the_format_says():
    block = np.concatenate([np.array([0.125], "<f2").view(np.uint8), np.arange(-16, 16, dtype=np.int8).view(np.uint8)])
    assert dequantize_q8_0(block[None, :])[0].tolist() == [0.125 * q for q in range(-16, 16)]


# -- a tiny llama GGUF, as SmolLM2's is laid out (tied output, Q8_0 weights) -------------------

def tiny_base(path: Path) -> Path:
    spec = SPECS[0]  # tiny: 64 wide, 2 blocks, 4 heads, 128 FFN, byte-level BPE with ChatML
    vocab = build_vocab(spec)
    tensors = make_tensors(spec, vocab)
    del tensors["output.weight"]
    write_llama(path, name="tiny base", description="test", context=512, dim=64, layers=2, ffn=128, heads=4,
                rope_base=10000.0, eps=1e-5, tokens=vocab.tokens, types=vocab.types, merges=vocab.merges,
                quant=Q.Q8_0, tensors=tensors)
    return path


def random_adapter(path: Path, rank: int = 4, zero: bool = False) -> Path:
    rng = np.random.default_rng(7)
    shapes = {"q": (64, 64), "k": (64, 64), "v": (64, 64), "o": (64, 64), "gate": (128, 64), "up": (128, 64),
              "down": (64, 128)}
    pairs = {f"blocks.{i}.{t}": (rng.normal(0, 0.1, (rank, cols)).astype(np.float32),
                                 np.zeros((rows, rank), np.float32) if zero else rng.normal(0, 0.1, (rows, rank)).astype(np.float32))
             for i in range(2) for t, (rows, cols) in shapes.items()}
    save_adapter(path, pairs, {"rank": rank, "alpha": 8.0, "targets": list(shapes), "base": "tiny", "step": 3})
    return path


def test_the_merged_gguf_reads_back_with_its_shapes_types_and_metadata(tmp_path):
    base = tiny_base(tmp_path / "base.gguf")
    adapter = random_adapter(tmp_path / "a.lora")
    out = tmp_path / "general.gguf"
    counts = apply(base, adapter, out)
    assert counts == {"merged": 14, "quantized": 0, "kept": 1 + 5}  # token_embd; 4 block norms and output_norm
    first = hashlib.sha256(out.read_bytes()).hexdigest()
    apply(base, adapter, out)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == first  # the same bytes every time

    src, got = GGUFReader(base), GGUFReader(out)
    assert "general" in got.fields["general.name"].contents()
    for key in ("general.architecture", "llama.block_count", "llama.embedding_length", "llama.attention.head_count_kv",
                "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.chat_template", "tokenizer.ggml.eos_token_id"):
        assert got.fields[key].contents() == src.fields[key].contents(), key
    assert got.fields["general.file_type"].contents() == 7  # MOSTLY_Q8_0
    theirs = {t.name: t for t in src.tensors}
    for t in got.tensors:
        assert list(t.shape) == list(theirs[t.name].shape)
        assert t.tensor_type == (Q.Q8_0 if len(t.shape) == 2 else Q.F32), t.name
    _, pairs = load_adapter(adapter)
    a, b = pairs["blocks.1.up"]
    want = merged(read_base(base).tensors["blk.1.ffn_up.weight"], a, b, 8.0 / 4)
    stored = next(t for t in got.tensors if t.name == "blk.1.ffn_up.weight")
    assert np.array_equal(stored.data, quantize(want, Q.Q8_0))


def test_a_zero_adapter_writes_the_base_weights_unchanged(tmp_path):
    base = tiny_base(tmp_path / "base.gguf")
    apply(base, random_adapter(tmp_path / "zero.lora", zero=True), tmp_path / "out.gguf")
    theirs = {t.name: t for t in GGUFReader(base).tensors}
    for t in GGUFReader(tmp_path / "out.gguf").tensors:
        assert np.array_equal(t.data, theirs[t.name].data), t.name


def test_an_adapter_file_is_small_and_round_trips_in_float16(tmp_path):
    path = random_adapter(tmp_path / "a.lora")
    meta, pairs = load_adapter(path)
    assert meta["rank"] == 4 and len(pairs) == 14 and path.stat().st_size < 60_000
    a, _ = pairs["blocks.0.q"]
    want = np.random.default_rng(7).normal(0, 0.1, (4, 64)).astype(np.float16).astype(np.float32)
    assert np.array_equal(a, want)
    with pytest.raises(ValueError, match="not an aerix LoRA adapter"):
        load_adapter(tiny_base(tmp_path / "base.gguf"))


def test_micro_batches_keep_to_the_token_budget_and_drop_what_max_len_cuts_off():
    exs = [Example([1] * n, [0.0] * (n - 2) + [1.0, 1.0]) for n in (3, 5, 4, 6, 2)] + [Example([9] * 10, [0.0] * 8 + [1.0] * 2)]
    batches = epoch_batches(exs, 0, seed=0, budget=10, max_len=6, shuffle=False)
    assert [[len(e.ids) for e in g] for g in batches] == [[3, 5], [4], [6], [2]]  # the 10-token one: its turn is cut
    assert all(len(g) * max(len(e.ids) for e in g) <= 10 for g in batches)
    # 4 micro-batches an epoch, endlessly: 7 is the second epoch's last, 8 and 9 the third's first
    assert [k for (k, _, _), _ in zip(micro_batches(exs, 7, seed=0, budget=10, max_len=6, pad=0), range(3))] == [7, 8, 9]
    with pytest.raises(ValueError, match="within its first 6 tokens"):
        next(micro_batches(exs[-1:], 0, seed=0, budget=10, max_len=6, pad=0))


# -- torch: LoRA, merging, resuming --------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("tokenizers")

from build.general import lora  # noqa: E402
from build.general.train import Settings, train  # noqa: E402
from build.model.torch_llama import Config, Llama  # noqa: E402

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


def test_a_run_stopped_and_resumed_gives_what_an_uninterrupted_run_gives(tmp_path):
    torch.set_num_threads(1)
    s = Settings(rank=4, alpha=8, steps=6, warmup=2, lr=1e-2, budget=64, accum=2, max_len=32, save_every=4,
                 eval_every=3, eval_batches=2, seed=5)
    data, val = examples(12, 1), examples(4, 2)
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


def test_only_the_assistant_turns_and_their_end_are_trained(tmp_path):
    from build.general.base import tokenizer

    tok = tokenizer(read_base(tiny_base(tmp_path / "base.gguf")))
    text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello there<|im_end|>\n"
    start = text.index("hello")
    ex = encode(tok, text, [[start, start + len("hello there")]])
    trained = tok.decode([i for i, w in zip(ex.ids, ex.weights) if w], skip_special_tokens=False)
    assert trained == "hello there<|im_end|>"
