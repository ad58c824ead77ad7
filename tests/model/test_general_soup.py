"""build/general/soup.py: adapters averaged in weight space, cut back to a small rank."""

from __future__ import annotations

import numpy as np
import pytest

from build.general.adapter import load_adapter, save_adapter
from build.general.soup import SoupError, main, shrink, soup

META = {"rank": 4, "alpha": 8.0, "targets": ["q", "v"], "base_sha256": "b" * 64, "step": 10}


def _adapter(seed: int, rank: int = 4, layers: tuple[str, ...] = ("blocks.0.q", "blocks.0.v")):
    rng = np.random.default_rng(seed)
    return {n: (rng.standard_normal((rank, 12)).astype(np.float32), rng.standard_normal((10, rank)).astype(np.float32))
            for n in layers}


def _delta(meta, pairs, name):
    a, b = pairs[name]
    return float(meta["alpha"]) / int(meta["rank"]) * (b.astype(np.float64) @ a.astype(np.float64))


def test_a_soup_updates_each_layer_by_the_weighted_sum_of_the_adapters_updates():
    one, two = _adapter(1), _adapter(2)
    meta, pairs = soup([(0.25, META, one), (0.75, META, two)])
    assert meta["rank"] == 8 and meta["alpha"] == 16.0 and "step" not in meta
    for name in one:
        want = 0.25 * _delta(META, one, name) + 0.75 * _delta(META, two, name)
        np.testing.assert_allclose(_delta(meta, pairs, name), want, rtol=1e-5, atol=1e-5)


def test_shrinking_keeps_the_best_approximation_of_that_rank():
    meta, pairs = soup([(0.5, META, _adapter(3)), (0.5, META, _adapter(4))])
    small, cut, lost = shrink(meta, pairs, 3)
    assert small["rank"] == 3 and cut["blocks.0.q"][0].shape == (3, 12) and cut["blocks.0.q"][1].shape == (10, 3)
    for i, name in enumerate(pairs):
        full = _delta(meta, pairs, name)
        u, s, vt = np.linalg.svd(full)
        best = (u[:, :3] * s[:3]) @ vt[:3]
        np.testing.assert_allclose(_delta(small, cut, name), best, rtol=1e-6, atol=1e-8)
        assert lost[i] == pytest.approx(np.sqrt((s[3:] ** 2).sum() / (s**2).sum()))


def test_a_soup_of_one_lineage_cuts_back_to_its_rank_without_loss():
    base = _adapter(5)
    nudged = {n: (a, b + 0.1 * np.float32(1)) for n, (a, b) in base.items()}  # the same A: the same row space
    meta, pairs = soup([(0.5, META, base), (0.5, META, nudged)])
    small, cut, lost = shrink(meta, pairs, 4)
    assert max(lost) < 1e-6
    for name in base:
        np.testing.assert_allclose(_delta(small, cut, name), _delta(meta, pairs, name), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("other, words", [
    ({**META, "alpha": 16.0}, "alpha / rank"),
    ({**META, "targets": ["q"]}, "targets"),
    ({**META, "base_sha256": "c" * 64}, "base_sha256"),
])
def test_adapters_that_cannot_be_averaged_are_refused_by_name(other, words):
    with pytest.raises(SoupError, match=words):
        soup([(0.5, META, _adapter(1)), (0.5, other, _adapter(2))])


def test_adapters_of_different_layers_are_refused():
    with pytest.raises(SoupError, match="different layers"):
        soup([(0.5, META, _adapter(1)), (0.5, META, _adapter(2, layers=("blocks.0.q",)))])


def test_the_command_writes_the_same_bytes_twice_and_names_a_bad_argument(tmp_path, capsys):
    for i in (1, 2):
        save_adapter(tmp_path / f"{i}.lora", _adapter(i), META)
    args = ["0.5:" + str(tmp_path / "1.lora"), "0.5:" + str(tmp_path / "2.lora"), "--rank", "4"]
    assert main([str(tmp_path / "a.lora"), *args]) == 0
    assert main([str(tmp_path / "b.lora"), *args]) == 0
    assert (tmp_path / "a.lora").read_bytes() == (tmp_path / "b.lora").read_bytes()
    meta, pairs = load_adapter(tmp_path / "a.lora")
    assert meta["rank"] == 4 and meta["soup"] == [f"0.5:{tmp_path.name}/1.lora", f"0.5:{tmp_path.name}/2.lora"]
    assert main([str(tmp_path / "c.lora"), *args[:2], "--rank", "9"]) == 2
    assert "between 1 and the soup's rank 8" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "d.lora"), str(tmp_path / "1.lora")])
    assert "expected WEIGHT:ADAPTER" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path / "d.lora"), "1/0:" + str(tmp_path / "1.lora")])
    assert "'1/0:" in capsys.readouterr().err


def test_weights_may_be_written_as_fractions_and_are_recorded_as_written(tmp_path):
    for i in (1, 2, 3):  # three runs' folders, each with its adapter.lora
        (tmp_path / f"run-{i}").mkdir()
        save_adapter(tmp_path / f"run-{i}" / "adapter.lora", _adapter(i), META)
    parts = ("1/3:" + str(tmp_path / f"run-{i}" / "adapter.lora") for i in (1, 2, 3))
    assert main([str(tmp_path / "s.lora"), *parts]) == 0
    meta, pairs = load_adapter(tmp_path / "s.lora")
    assert meta["soup"] == ["1/3:run-1/adapter.lora", "1/3:run-2/adapter.lora", "1/3:run-3/adapter.lora"]
    mean = sum(_delta(META, _adapter(i), "blocks.0.q") for i in (1, 2, 3)) / 3
    np.testing.assert_allclose(_delta(meta, pairs, "blocks.0.q"), mean, rtol=2e-3, atol=2e-3)
