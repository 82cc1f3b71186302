"""A bundle is a closed world: no name in its manifest, no link and no stray file takes a
loader, a worker, a lowering or a sideload out of it; a `--bundle` that fails its verification
is refused, never exported over (issue 21, deliverable 2)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conversion.cli import registry
from conversion.core.bundle import BundleWriter, is_plain_name, load_manifest
from conversion.core.errors import BundleIntegrityError, UserError
from conversion.device import sideload
from conversion.selftest import graphs as sg

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """One exported bundle (an mlp graph, a host file): each test breaks its own copy."""
    dest = tmp_path_factory.mktemp("closed") / "b"
    spec, _ = sg.mlp_graph(0)
    host = dest.parent / "table.txt"
    host.write_text("a\tb\n")
    with BundleWriter(dest, "test", weights_sha256="ab" * 32) as bw:
        bw.add_graph(spec)
        bw.add_file(host)
    load_manifest(dest)  # intact as written
    return dest


@pytest.fixture
def bundle(pristine, tmp_path) -> Path:
    import shutil

    copy = tmp_path / "work" / "b"
    shutil.copytree(pristine, copy)
    return copy


def _edit_manifest(bundle: Path, edit) -> None:
    doc = json.loads((bundle / "manifest.json").read_text())
    edit(doc)
    (bundle / "manifest.json").write_text(json.dumps(doc))


def _rename_graph(doc: dict, new: str) -> None:
    doc["graphs"][new] = doc["graphs"].pop("mlp")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../../outside/ESCAPED", "/abs", "a\\b"])
def test_only_plain_names_stay_inside(name):
    assert not is_plain_name(name)


def test_a_plain_name_is_plain():
    assert is_plain_name("mlp.aimodel") and is_plain_name("voices.npz")


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda d: _rename_graph(d, "../../../outside/ESCAPED"), "graph name '../../../outside"),
        (lambda d: _rename_graph(d, "/tmp/ESCAPED"), "graph name '/tmp/ESCAPED'"),
        (lambda d: d["graphs"]["mlp"].update(asset="../b/mlp.aimodel"), "asset of graph 'mlp'"),
        (lambda d: d["graphs"]["mlp"].update(asset="/etc"), "asset of graph 'mlp' '/etc'"),
        (
            lambda d: d["meta"]["files"].update({"../table.txt": d["meta"]["files"]["table.txt"]}),
            "file '../table.txt'",
        ),
    ],
)
def test_a_manifest_naming_a_way_out_is_refused_before_anything_is_read(bundle, edit, said):
    _edit_manifest(bundle, edit)
    for verify in (False, True):
        with pytest.raises(BundleIntegrityError, match="not a plain name inside the bundle") as e:
            load_manifest(bundle, verify=verify)
        assert said in str(e.value) and "\n" not in str(e.value)


def test_serve_of_an_escaping_graph_name_writes_nothing_outside(bundle, tmp_path):
    """The reported repro: a graph named `../../../outside/ESCAPED` made `voxport serve` create
    `ESCAPED.aimodelx/` outside its lowered folder and leave it."""
    _edit_manifest(bundle, lambda d: _rename_graph(d, "../../../outside/ESCAPED"))
    env = {**os.environ, "TMPDIR": str(tmp_path / "t" / "u" / "v")}
    os.makedirs(env["TMPDIR"])
    for no_verify in ([], ["--no-verify"]):
        r = subprocess.run(
            [sys.executable, "-m", "conversion.core.runtime.serve", str(bundle), *no_verify],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        assert "not a plain name inside the bundle" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.rglob("ESCAPED*"))


def test_a_host_file_linked_to_its_own_bytes_elsewhere_is_refused(bundle):
    outside = bundle.parent / "elsewhere.txt"
    (bundle / "table.txt").rename(outside)
    (bundle / "table.txt").symlink_to(outside)  # same bytes: the sha256 alone would pass
    for verify in (False, True):
        with pytest.raises(BundleIntegrityError, match="table.txt is a symbolic link"):
            load_manifest(bundle, verify=verify)


def test_a_linked_asset_folder_or_a_link_inside_one_is_refused(bundle):
    asset = bundle / "mlp.aimodel"
    inner = next(p for p in asset.rglob("*") if p.is_file())
    moved = bundle.parent / "inner.bin"
    inner.rename(moved)
    inner.symlink_to(moved)
    rel = inner.relative_to(bundle).as_posix()
    with pytest.raises(BundleIntegrityError, match=f"{rel} is a symbolic link"):
        load_manifest(bundle)
    inner.unlink()
    moved.rename(inner)
    load_manifest(bundle)  # whole again
    asset.rename(bundle.parent / "mlp.aimodel")
    asset.symlink_to(bundle.parent / "mlp.aimodel")
    with pytest.raises(BundleIntegrityError, match="mlp.aimodel is a symbolic link"):
        load_manifest(bundle)


def test_a_stray_top_level_file_or_fifo_is_refused(bundle):
    (bundle / "leak.txt").symlink_to("/etc/passwd")
    with pytest.raises(BundleIntegrityError, match="leak.txt is not listed in its manifest"):
        load_manifest(bundle, verify=False)
    (bundle / "leak.txt").unlink()
    os.mkfifo(bundle / "mlp.aimodel" / "pipe")
    with pytest.raises(BundleIntegrityError, match="mlp.aimodel/pipe is not a regular file"):
        load_manifest(bundle, verify=False)


def test_sideload_never_plans_a_link_out_of_the_bundle(bundle, tmp_path):
    """The reported repro: `B/leak.txt` linked to the password file was planned for the phone."""
    (bundle / "leak.txt").symlink_to("/etc/passwd")
    with pytest.raises(BundleIntegrityError, match="leak.txt is not listed in its manifest"):
        sideload.verify(bundle, "test")
    (bundle / "leak.txt").unlink()
    manifest = sideload.verify(bundle, "test")
    assert manifest.model == "test"
    planned = {t.rel for t in sideload.plan(bundle, tmp_path / "check")}
    assert "table.txt" in planned and "leak.txt" not in planned


# -- --bundle given: refused when broken, never exported over ------------------------------------


class _Port(type(registry.port("kokoro"))):
    """Kokoro's port with a one-graph export: what ensure_bundle does around the export."""

    exported: list[Path]

    def weights_sha256(self, folder):
        return "00"

    def export_bundle(self, job):
        self.exported.append(job.dest)
        spec, _ = sg.mlp_graph(0)
        with BundleWriter(job.dest, "kokoro", overwrite=True, key=job.key.to_json()) as bw:
            bw.add_graph(spec)
        return job.dest


def _ensure(
    tmp_path: Path, dest: Path | None, config_name: str = "reduced", overwrite: bool = False
) -> Path:
    port = _Port()
    port.exported = _ensure.exported = []  # what this call exported, read also after a raise
    config = port.config(config_name)
    return port.ensure_bundle(tmp_path, config, config_name, "fp32", path=dest, overwrite=overwrite)


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_a_tampered_bundle_given_with_bundle_is_refused_not_exported_over(tmp_path):
    dest = tmp_path / "mine"
    _ensure(tmp_path, dest)
    assert _ensure.exported == [dest]
    _edit_manifest(dest, lambda d: d["graphs"]["mlp"].update(sha256="0" * 64))
    before = _tree(dest)
    with pytest.raises(UserError, match=r"--bundle .*mine fails its verification") as e:
        _ensure(tmp_path, dest)
    assert "mlp.aimodel" in str(e.value) and "\n" not in str(e.value)
    assert _ensure.exported == [] and _tree(dest) == before


def test_a_users_folder_given_with_bundle_is_refused(tmp_path):
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "precious.txt").write_text("x")
    with pytest.raises(UserError, match="is not a voxport bundle"):
        _ensure(tmp_path, dest)
    assert (dest / "precious.txt").read_text() == "x" and _ensure.exported == []


def test_an_intact_bundle_of_other_arguments_is_re_exported_only_with_overwrite(tmp_path, capsys):
    """Issue 29: the user's named folder was replaced without `--overwrite` (e.g. a manifest
    key edited by hand, hashes intact). Now one line naming what differs; `--overwrite`
    re-exports it."""
    dest = tmp_path / "mine"
    _ensure(tmp_path, dest, "reduced")
    before = _tree(dest)
    with pytest.raises(UserError) as e:
        _ensure(tmp_path, dest, "published")  # other sizes: a stale bundle, not a broken one
    said = str(e.value)
    assert "\n" not in said and f"--bundle {dest} holds a bundle made from other" in said
    assert "config " in said and "there" in said and "--overwrite" in said, said
    assert _ensure.exported == [] and _tree(dest) == before
    _ensure(tmp_path, dest, "published", overwrite=True)
    assert _ensure.exported == [dest]
    assert "re-exporting" in capsys.readouterr().err
    load_manifest(dest)


def test_a_hand_edited_key_with_hashes_intact_is_not_exported_over(tmp_path):
    """The reported repro: the manifest's key edited (its hashes cover the assets, not the
    key), so the bundle verifies and looks made from other weights."""
    dest = tmp_path / "mine"
    _ensure(tmp_path, dest)
    _edit_manifest(dest, lambda d: d["key"].update(weights_sha256="ff" * 32))
    load_manifest(dest)  # intact: the key is no asset
    before = _tree(dest)
    with pytest.raises(UserError, match=r"weights: ffffffffffff… there, 00 here"):
        _ensure(tmp_path, dest)
    assert _ensure.exported == [] and _tree(dest) == before


def test_the_default_folder_is_voxports_own_and_re_exported(tmp_path, monkeypatch, capsys):
    """`bundles/…` (no --bundle, or a --bundle naming that same folder) keeps today's rule:
    a bundle made from other arguments is re-exported there (README, "Bundle folders")."""
    monkeypatch.chdir(tmp_path)
    default = _Port().bundle_path("reduced", "fp32")
    _ensure(tmp_path, None, "reduced")
    assert _ensure.exported == [default]
    _edit_manifest(default, lambda d: d["key"].update(weights_sha256="ff" * 32))
    _ensure(tmp_path, None, "reduced")
    assert _ensure.exported == [default]
    _edit_manifest(default, lambda d: d["key"].update(weights_sha256="ff" * 32))
    _ensure(tmp_path, tmp_path / "bundles" / ".." / str(default), "reduced")  # the same folder
    assert _ensure.exported == [tmp_path / "bundles" / ".." / str(default)]
    assert capsys.readouterr().err.count("re-exporting") == 2
