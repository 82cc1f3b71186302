"""The Kokoro bundle carries what a host needs with no Python packages (vocabulary, every
voice as npz, the publisher's licence, a README, misaki's G2P data and the letter rules in
g2p/), the phoneme-level split a phoneme-fed host uses, and `voxport phonemize kokoro`."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from conversion.cli.main import main
from conversion.core.bundle import BundleWriter, content_hash, load_manifest
from conversion.core.errors import BundleIntegrityError, UserError
from conversion.kokoro import host
from conversion.kokoro.g2p_files import G2P_FOLDER
from conversion.kokoro.host_files import (
    HOST_FILES,
    VOICES_FILE,
    add_host_files,
    read_bundle_voices,
    vocab_bytes,
)
from conversion.kokoro.lexicon.writer import decode_dictionary
from conversion.kokoro.text.chunks import tokens_phonemes
from conversion.kokoro.text.phoneme_split import phoneme_tokens, split_phonemes
from conversion.kokoro.voice import PACK_SHAPE, VOICE_NAMES, available_voices, load_voice


@pytest.fixture(scope="module")
def host_bundle(tmp_path_factory):
    """A bundle holding the host files only (no graph: they do not depend on one), with a
    snapshot-style voices folder carrying one extra .pt pack and one shadowed name."""
    tmp = tmp_path_factory.mktemp("hostfiles")
    voices = tmp / "voices"
    voices.mkdir()
    extra = torch.full(PACK_SHAPE, 0.25)
    torch.save(extra, voices / "xx_extra.pt")
    torch.save(torch.zeros(PACK_SHAPE), voices / "jf_alpha.pt")  # the packaged one wins
    with BundleWriter(tmp / "bundle", "kokoro") as bw:
        add_host_files(bw, [voices])
    return tmp / "bundle", voices


def test_bundle_carries_vocab_voices_licence_readme(host_bundle):
    bundle, voices = host_bundle
    manifest = load_manifest(bundle)  # every host file is hashed and verified
    assert set(HOST_FILES) <= set(manifest.meta["files"])
    assert json.loads((bundle / "vocab.json").read_text("utf-8"))["vocab"] == host.load_vocab()
    assert (bundle / "vocab.json").read_bytes() == vocab_bytes()
    licence = (bundle / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert "vocab.json" in (bundle / "README.md").read_text()
    packs = read_bundle_voices(bundle)
    assert sorted(packs) == sorted([*VOICE_NAMES, "xx_extra"])
    for name in VOICE_NAMES:
        np.testing.assert_array_equal(packs[name], load_voice(name))
        assert packs[name].shape == PACK_SHAPE and packs[name].dtype == np.float32
    assert np.all(packs["xx_extra"] == 0.25)
    # np.savez stores members, as the Swift npz reader expects.
    with np.load(bundle / VOICES_FILE) as z:
        assert sorted(z.files) == sorted(packs)


def test_bundle_voices_are_looked_up_first(host_bundle):
    bundle, _ = host_bundle
    packs = read_bundle_voices(bundle)
    packs["jm_kumo"] = np.ones(PACK_SHAPE, np.float32)
    assert np.all(load_voice("jm_kumo", packs=packs) == 1)
    blend = load_voice("jm_kumo,xx_extra", packs=packs)
    np.testing.assert_array_equal(blend, np.full(PACK_SHAPE, 0.625, np.float32))
    assert available_voices(packs=packs)[:2] == list(packs)[:2]
    with pytest.raises(host.UnknownVoiceError, match="xx_extra"):
        load_voice("nope", packs=packs)
    assert read_bundle_voices(bundle.parent) is None  # an older bundle: no voices.npz


@pytest.mark.parametrize("max_ids", [510, 30, 12, 5, 3])
def test_phoneme_split_fits_and_keeps_every_symbol(max_ids):
    ps = "ðə wˈɛðəɹ ɪz lˈʌvli tədˈA, sˌO lˈɛts ɡˌO fɔɹ ɐ wˈɔk! “jˈɛs,” hi sˈɛd."
    assert tokens_phonemes(phoneme_tokens(ps)) == ps
    chunks = split_phonemes(ps, max_ids)
    assert chunks and all(len(c.ids) <= max_ids for c in chunks)
    speech = [s for s in ps if s not in ".,!“” "]
    assert [s for c in chunks for s in c.phonemes if s not in ".,!“” "] == speech


def test_phoneme_split_keeps_a_python_chunk_whole():
    for chunk in host.text_to_chunks("Hello, world. The weather is lovely today!"):
        [again] = split_phonemes(chunk.phonemes)
        assert again.ids == chunk.ids


def test_unknown_phonemes_warn_and_are_dropped():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [chunk] = split_phonemes("həlˈO ❓ wˈɜɹld")
    assert any("'❓' (U+2753) x1" in str(w.message) for w in caught)
    assert chunk.n_phonemes == 14 and len(chunk.ids) == 15  # dropped, but counted for the row


def test_phonemize_prints_the_pipelines_chunks(capsys):
    text = "Hello, world. The weather is lovely today, so let's go for a walk!"
    assert main(["phonemize", "kokoro", text]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = host.text_to_chunks(text)
    assert [(c["text"], c["phonemes"], c["ids"]) for c in doc["chunks"]] == [
        (c.text, c.phonemes, c.ids) for c in want
    ]
    assert all(c["n_phonemes"] == len(c["phonemes"]) for c in doc["chunks"])
    assert main(["phonemize", "kokoro", text, "--max-ids", "20"]) == 0
    small = json.loads(capsys.readouterr().out)
    assert len(small["chunks"]) > len(want) and all(len(c["ids"]) <= 20 for c in small["chunks"])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["phonemize", "kokoro", "  "], "TEXT is empty"),
        (["phonemize", "kokoro", "... !!"], "nothing to say"),
        (["phonemize", "kokoro", "Hi.", "--max-ids", "2"], "--max-ids"),
        (["phonemize", "chatterbox", "Hi."], "phonemize"),
    ],
)
def test_phonemize_bad_input_is_one_line_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("voxport: error:") and needle in err[0]


def test_export_writes_the_host_files_beside_the_graphs(tmp_path, monkeypatch):
    """export_bundle's wiring, without minutes of graph export: no graph specs, a stand-in
    model holding only the source layer; the port hands the snapshot's voices folder on."""
    from types import SimpleNamespace

    from conversion.core.port import BundleKey, ExportJob
    from conversion.kokoro import export
    from conversion.kokoro.port import PORT

    monkeypatch.setattr(export, "graph_specs", lambda kmodel, tables, graphs: [])
    l_linear = torch.nn.Linear(9, 1)
    kmodel = SimpleNamespace(
        decoder=SimpleNamespace(
            generator=SimpleNamespace(m_source=SimpleNamespace(l_linear=l_linear))
        )
    )
    voices = tmp_path / "snapshot" / "voices"
    voices.mkdir(parents=True)
    torch.save(torch.full(PACK_SHAPE, 0.5), voices / "zz_snapshot.pt")
    seen = {}
    real_export = export.export_bundle

    def fake_export(kmodel_, dest, *args, voice_dirs=(), **kwargs):
        seen["voice_dirs"] = list(voice_dirs)
        return real_export(kmodel_, dest, graphs=(), progress=False, voice_dirs=voice_dirs)

    monkeypatch.setattr(export, "export_bundle", fake_export)
    key = BundleKey("kokoro", "ab" * 32, {}, {})
    job = ExportJob(
        tmp_path / "snapshot", PORT.config("reduced"), tmp_path / "b", key, "fp32", False, kmodel
    )
    dest = PORT.export_bundle(job)
    assert seen["voice_dirs"] == [voices]
    files = load_manifest(dest).meta["files"]
    assert {"host_source.npz", *HOST_FILES, G2P_FOLDER} <= set(files)
    assert "zz_snapshot" in read_bundle_voices(dest)
    _check_g2p_folder(dest, files[G2P_FOLDER])


def _check_g2p_folder(dest, digest: str) -> None:
    """The exported g2p/: MisakiEnglish(folder:)'s three subfolders, the letter rules and the
    licences, hashed as one entry; its lexicon is misaki's packaged JSON, entry for entry, and its
    rules file the committed one, byte for byte."""
    import misaki

    import conversion.kokoro.fallback as fallback_package

    g2p = dest / G2P_FOLDER
    assert sorted(p.name for p in g2p.iterdir()) == [
        "fallback",
        "lexicon",
        "licenses",
        "tagger",
        "tokenizer",
    ]
    committed = Path(fallback_package.__file__).with_name("letter_rules.tsv").read_bytes()
    assert [p.name for p in (g2p / "fallback").iterdir()] == ["letter_rules.tsv"]
    assert (g2p / "fallback" / "letter_rules.tsv").read_bytes() == committed
    assert digest == content_hash(g2p)
    data = Path(misaki.__file__).parent / "data"
    for name in ("us_gold", "us_silver"):
        want = json.loads((data / f"{name}.json").read_bytes())
        assert decode_dictionary((g2p / "lexicon" / f"{name}.tsv").read_bytes()) == want
    assert (g2p / "tokenizer" / "tokenizer.json").is_file()
    assert (g2p / "tagger" / "tagger.json").is_file()
    licences = {p.name: p.read_text("utf-8") for p in (g2p / "licenses").iterdir()}
    assert "Apache License" in licences["misaki.LICENSE"]
    assert "MIT License" in licences["spacy.LICENSE"]
    assert "Permission is hereby granted" in licences["en_core_web_sm.LICENSE"]
    assert not any("GNU GENERAL PUBLIC" in t.upper() for t in licences.values())
    # One changed byte deep in g2p/ fails the bundle's verification, naming the folder.
    deep = g2p / "lexicon" / "us_silver.tsv"
    raw = bytearray(deep.read_bytes())
    raw[len(raw) // 2] ^= 1
    deep.write_bytes(bytes(raw))
    with pytest.raises(BundleIntegrityError, match="file g2p is missing or modified"):
        load_manifest(dest)


def test_a_bundle_from_before_g2p_is_not_reused(tmp_path, monkeypatch, capsys):
    """A cached bundle exported before g2p/ (layout 3 in its key, as bundles/kokoro-fp32-reduced
    was) is not reused: the default folder is re-exported, saying why, and a --bundle one is
    refused in one line naming --overwrite."""
    from conversion.kokoro.port import PORT

    class Fixed(type(PORT)):
        exported: list = []

        def weights_sha256(self, folder):
            return "ab" * 32

        def export_bundle(self, job):  # the key's stand-in bundle: no minutes of export
            self.exported.append(job.dest)
            with BundleWriter(job.dest, "kokoro", overwrite=True, key=job.key.to_json()):
                pass
            return job.dest

    monkeypatch.chdir(tmp_path)
    fixed = Fixed()
    config = fixed.config("reduced")
    key = fixed.bundle_key(tmp_path, config, "fp32")
    old = {**key.to_json(), "layout": 3}
    default = fixed.bundle_path("reduced", "fp32")
    for folder in (default, tmp_path / "mine"):
        with BundleWriter(folder, "kokoro", key=old):
            pass
    assert not fixed.is_current(default, key)
    assert fixed.ensure_bundle(tmp_path, config, "reduced", "fp32") == default
    assert fixed.exported == [default] and fixed.is_current(default, key)
    assert f"layout: 3 there, {PORT.layout} here): re-exporting" in capsys.readouterr().err
    with pytest.raises(UserError, match=rf"layout: 3 there, {PORT.layout} here.*--overwrite"):
        fixed.check_reuse(tmp_path, config, "reduced", "fp32", tmp_path / "mine", overwrite=False)
