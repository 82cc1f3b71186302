"""The model contract: every model passes the registry's check, one naming rule places every
verb's bundle, the reuse key changes with everything that changes the graphs, and assets
carry their model's metadata."""

import json
import os
from pathlib import Path

import pytest

from conversion.cli import registry
from conversion.cli.main import _parse, _validate
from conversion.core import bundle_lock
from conversion.core.bundle import BundleWriter, load_manifest
from conversion.core.errors import UserError
from conversion.core.export.program import AssetInfo
from conversion.core.port import BundleKey, ModelPort, check_port

MODELS = ("kokoro", "chatterbox", "audio8_tts")


@pytest.mark.parametrize("name", MODELS)
def test_every_model_passes_the_contract(name):
    port = registry.port(name)
    assert isinstance(port, ModelPort) and port.name == name
    assert set(port.graph_precisions("fp32")) == set(port.graphs)
    assert {"export", "speak", "gate", "bench"} <= set(registry.offered(name))
    assert "export" not in registry.commands(name).VERBS  # the port's contract gives it


def test_a_port_outside_its_folder_is_refused():
    port = registry.port("kokoro")
    with pytest.raises(TypeError, match="conversion/kokoro/port.py"):
        check_port(port, "conversion.chatterbox.port")
    with pytest.raises(TypeError, match="not a conversion.core.port.ModelPort"):
        check_port(object(), "conversion.kokoro.port")


def _model_folder(root: Path, folder: str, declares: str) -> None:
    (root / folder).mkdir()
    (root / folder / "__init__.py").write_text(declares)
    (root / folder / "port.py").write_text("")


def test_a_model_is_found_by_its_folder_with_no_list_to_edit(tmp_path, monkeypatch):
    """A folder of `conversion/` that says MODEL_NAME is a model (a port beside it, its
    benches as it declares them); one that says nothing is not; two saying one name fail."""
    import sys

    import conversion

    _model_folder(tmp_path, "zz_new", 'MODEL_NAME = "zz"\nDEVICE_BENCHES = ("zz.speak",)\n')
    _model_folder(tmp_path, "zz_tools", '"""Not a model."""\n')
    monkeypatch.setattr(conversion, "__path__", [*conversion.__path__, str(tmp_path)])
    try:
        found = registry._model_folders()
        assert found["zz"] == registry.ModelEntry("zz", "conversion.zz_new", True, ("zz.speak",))
        assert all(e.package != "conversion.zz_tools" for e in found.values())
        assert list(found)[0] == "core" and set(MODELS) < set(found)
        _model_folder(tmp_path, "zz_again", 'MODEL_NAME = "zz"\n')
        with pytest.raises(TypeError, match="MODEL_NAME 'zz' is also"):
            registry._model_folders()
    finally:
        for name in [m for m in sys.modules if m.startswith("conversion.zz_")]:
            del sys.modules[name]


@pytest.mark.parametrize("spelling", ["audio8-tts", "Audio8_TTS", "audio8_tts"])
def test_one_name_for_audio8_however_it_is_typed(spelling):
    assert registry.resolve(spelling).name == "audio8_tts"


@pytest.mark.parametrize(
    ("model", "config", "dtype", "tag", "folder"),
    [
        ("kokoro", "published", "fp32", None, "bundles/kokoro-fp32"),
        ("kokoro", "reduced", "fp32", None, "bundles/kokoro-fp32-reduced"),
        ("chatterbox", "reduced", "int8", "seed0", "bundles/chatterbox-int8-reduced-seed0"),
        ("audio8-tts", "reduced", "fp32", "seed7", "bundles/audio8_tts-fp32-reduced-seed7"),
    ],
)
def test_export_writes_where_speak_and_gate_look(model, config, dtype, tag, folder, monkeypatch):
    from conversion.cli import verbs

    args = _parse(["export", model, "--config", config, "--dtype", dtype])
    _validate(args)
    port = registry.port(args.model)
    snapshot = Path(f"snapshot-{tag}")
    written = []
    monkeypatch.setattr(port, "resolve", lambda *_a: (snapshot, port.config(config)))
    monkeypatch.setattr(port, "weights_tag", lambda f: tag if f == snapshot else "wrong")
    monkeypatch.setattr(port, "export", lambda _f, _c, dest, *_a: written.append(dest))
    assert verbs.export(port, None, args) == 0 and written == [Path(folder)]
    assert port.bundle_path(config, dtype, weights_tag=tag) == Path(folder)  # ensure_bundle's
    assert port.bundle_path(config, dtype, "gate", tag) == Path(f"{folder}-gate")


def _snapshot(root: Path, **manifest) -> Path:
    """A weights folder whose manifest says what `resolve_weights` would have written."""
    from conversion.core.weights_folder import FORMAT, MANIFEST

    root.mkdir(parents=True)
    (root / MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest, "files": {}}))
    return root


def test_random_weights_are_named_by_their_seed(tmp_path):
    chatterbox, kokoro = registry.port("chatterbox"), registry.port("kokoro")
    seeded = _snapshot(tmp_path / "a", model="chatterbox", random=True, seed=7)
    assert chatterbox.weights_tag(seeded) == "seed7"
    assert kokoro.weights_tag(_snapshot(tmp_path / "k", source="random", seed=3)) == "seed3"
    assert kokoro.weights_tag(_snapshot(tmp_path / "real", source="pypi")) is None
    assert kokoro.weights_tag(tmp_path / "no-manifest") is None


def test_a_seed_sweep_exports_each_seed_once_into_its_own_folder(tmp_path, monkeypatch):
    """Two weights seeds never share a folder (neither replaces the other's bundle), and a
    sweep coming back to a seed reuses its export."""
    from conversion.selftest import graphs as sg

    exported = []

    class Fake(type(registry.port("kokoro"))):
        def weights_sha256(self, folder):
            return folder.name * 8

        def export_bundle(self, job):
            exported.append(job.dest)
            spec, _ = sg.mlp_graph(0)
            with BundleWriter(job.dest, "kokoro", overwrite=True, key=job.key.to_json()) as bw:
                bw.add_graph(spec)
            return job.dest

    monkeypatch.chdir(tmp_path)
    port = Fake()
    config = port.config("reduced")
    one = _snapshot(tmp_path / "w1", source="random", seed=1)
    two = _snapshot(tmp_path / "w2", source="random", seed=2)
    got = [port.ensure_bundle(w, config, "reduced", "fp32") for w in (one, two, one, two)]
    first, second = (
        Path("bundles/kokoro-fp32-reduced-seed1"),
        Path("bundles/kokoro-fp32-reduced-seed2"),
    )
    assert got == [first, second, first, second] and exported == [first, second]
    assert load_manifest(first).key["weights_sha256"] == "w1" * 8
    # the process that asked holds both until it exits: no other process replaces them
    for folder in (first, second):
        assert f"pid {os.getpid()} using it" in bundle_lock.holders(bundle_lock.lock_path(folder))


def test_model_flags_belong_to_their_model():
    args = _parse(["speak", "chatterbox", "Hi.", "-o", "x.wav", "--exaggeration", "0.7"])
    assert args.exaggeration == 0.7 and not hasattr(args, "ref_text")  # audio8's flag
    with pytest.raises(SystemExit):
        _parse(["speak", "kokoro", "Hi.", "-o", "x.wav", "--exaggeration", "0.7"])
    args = _parse(["speak", "audio8_tts", "Hi.", "-o", "x.wav", "--stream"])
    assert args.stream and not hasattr(args, "voice")


def test_draw_seed_and_weights_seed_are_apart():
    args = _parse(["gate", "chatterbox", "--seed", "7"])
    _validate(args)
    assert (args.seed, args.weights_seed) == (7, 0)  # a draw sweep reuses one export
    args = _parse(["gate", "chatterbox", "--seed", "7", "--weights-seed", "3"])
    _validate(args)
    assert (args.seed, args.weights_seed) == (7, 3)


def _key(**changes) -> BundleKey:
    base = {
        "model": "m",
        "weights_sha256": "ab" * 32,
        "config": {"buckets": {"g": [{"T": 32}]}, "sizes": (1, 2)},
        "graphs": {"g": "fp32", "h": "fp32"},
    }
    return BundleKey(**{**base, **changes})


def test_the_key_changes_with_everything_that_changes_the_graphs():
    digests = {
        _key().digest,
        _key(weights_sha256="cd" * 32).digest,
        _key(config={"buckets": {"g": [{"T": 64}]}, "sizes": (1, 2)}).digest,
        _key(graphs={"g": "int8", "h": "fp32"}).digest,
        _key(graphs={"g": "fp32"}).digest,
        _key(model="n").digest,
        _key(layout=2).digest,
    }
    assert len(digests) == 7
    # a tuple read back from a manifest is a list: the stored form compares equal
    assert _key().to_json()["config"]["sizes"] == [1, 2]


def test_assets_carry_the_models_metadata(tmp_path):
    from coreai.authoring.asset import AIModelAsset

    from conversion.selftest import graphs as sg

    spec, _ = sg.mlp_graph(0)
    info = AssetInfo(author="Someone", license="MIT", description="a test model")
    with BundleWriter(tmp_path / "b", "core", key={"model": "core"}, info=info) as bw:
        bw.add_graph(spec)
    meta = AIModelAsset.load(tmp_path / "b" / "mlp.aimodel").metadata
    assert (meta.author, meta.license) == ("Someone", "MIT")
    assert "a test model" in meta.model_description and "'mlp'" in meta.model_description
    assert load_manifest(tmp_path / "b").key == {"model": "core"}


def test_unknown_dtype_and_graph_are_refused(tmp_path):
    port = registry.port("kokoro")

    class Fixed(type(port)):
        def weights_sha256(self, folder):
            return "00"

    fixed = Fixed()
    config = fixed.config("reduced")
    with pytest.raises(UserError, match="unknown dtype"):
        fixed.bundle_key(tmp_path, config, "bf16")
    with pytest.raises(UserError, match="has no graph"):
        fixed.bundle_key(tmp_path, config, "fp32", graphs=("decoder",))
    key = fixed.bundle_key(tmp_path, config, "fp32", graphs=("vocoder",))
    assert key.graphs == {"vocoder": "fp32"} and not fixed.is_current(tmp_path / "none", key)


def test_two_processes_asking_for_one_bundle_export_it_once(tmp_path, capsys):
    """`ensure_bundle` from two callers at once (two `speak`s on a fresh machine, two test
    workers): one exports, the other waits on the bundle's lock and reuses it."""
    import threading

    from conversion.selftest import graphs as sg

    exported = []

    class Slow(type(registry.port("kokoro"))):
        def weights_sha256(self, folder):
            return "00"

        def export_bundle(self, job):
            exported.append(threading.current_thread().name)
            spec, _ = sg.mlp_graph(0)
            with BundleWriter(job.dest, "kokoro", overwrite=True, key=job.key.to_json()) as bw:
                bw.add_graph(spec)
            return job.dest

    port, dest = Slow(), tmp_path / "bundles" / "b"
    config = port.config("reduced")
    got = []

    def ask():
        got.append(port.ensure_bundle(tmp_path, config, "reduced", "fp32", path=dest))

    callers = [threading.Thread(target=ask, name=f"caller-{i}") for i in range(2)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert len(exported) == 1 and got == [dest, dest]
    assert port.is_current(dest, port.bundle_key(tmp_path, config, "fp32"))
    err = capsys.readouterr().err
    # the second waited to write it, or (when the first was already writing) to load it
    assert f"{dest}: another thread of this process is writing it" in err, err
