"""`voxport gate|bench MODEL` are the contract's verbs (`conversion/cli/verbs.py`), not each
model's: the model's flags become its options before anything loads, a `--bundle` made from
other arguments is refused before the model loads, and the port gets one `GateRun`/`BenchRun`
holding what the command line said. A recording port stands in for the model (no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conversion.cli import registry, verbs
from conversion.cli.main import build_parser
from conversion.core.errors import UserError

MODELS = ("kokoro", "chatterbox", "audio8_tts", "chatterbox_turbo")


def _recording(name: str, calls: list):
    """The model's port with every step that loads or computes replaced by a record of it."""

    class Recording(type(registry.port(name))):
        def resolve(self, spec, config_name, seed):
            calls.append(("resolve", spec, config_name, seed))
            return Path("/snapshot"), self.config(config_name)

        def check_bundles(self, source, config, dtype):
            calls.append(("check_bundles", source.path, source.overwrite, dtype))

        def load_model(self, folder, config):
            calls.append(("load_model", folder))
            return "the model"

        def run_gate(self, run):
            calls.append(("run_gate", run))
            return 0

        def run_mutants(self, run):
            calls.append(("run_mutants", run))
            return _Table(passed=False)

        def run_bench(self, run):
            calls.append(("run_bench", run))
            return 0

    return Recording()


class _Table:
    def __init__(self, passed: bool) -> None:
        self.passed, self.killed, self.total, self.outcomes = passed, 1, 2, []


def _args(*argv: str):
    return build_parser(argv[1]).parse_args(list(argv))


@pytest.mark.parametrize("model", MODELS)
def test_gate_hands_the_port_what_the_command_line_said(model, tmp_path, monkeypatch):
    monkeypatch.setattr("gates.mutants.emit_table", lambda *a: None)
    calls: list = []
    port = _recording(model, calls)
    args = _args(
        "gate", model, "--config", "reduced", "--seed", "5", "--weights-seed", "3",
        "--dtype", "fp16", "--stop-on-fail", "--bundle", str(tmp_path / "b"), "--overwrite",
        "--json", str(tmp_path / "g.json"), "--markdown", str(tmp_path / "g.md"),
    )  # fmt: skip
    assert verbs.gate(port, registry.commands(model), args) == 0
    assert [c[0] for c in calls] == ["resolve", "check_bundles", "load_model", "run_gate"]
    assert calls[0][1:] == (None, "reduced", 3)  # --weights-seed, not --seed
    assert calls[1][1:] == (str(tmp_path / "b"), True, "fp16")  # main() makes it a Path
    run = calls[-1][1]
    assert (run.model, run.source.loaded, run.seed, run.dtype) == (
        "the model",
        "the model",
        5,
        "fp16",
    )
    assert run.stop_on_fail and run.mutants is None and run.config_name == "reduced"
    assert (run.json_path, run.markdown) == (str(tmp_path / "g.json"), str(tmp_path / "g.md"))
    assert run.folder == Path("/snapshot")


def test_each_models_own_gate_flags_become_its_options():
    kokoro = _args("gate", "kokoro", "--fallback", "rules")
    opts = registry.commands("kokoro").gate_options(kokoro, None)
    assert opts.fallback == "rules"
    cbx = _args("gate", "chatterbox", "--fp16-steps", "mid")
    assert registry.commands("chatterbox").gate_options(cbx, None).fp16_steps == "mid"
    a8 = _args("gate", "audio8_tts", "--precision-rows", "int8,fp16")
    assert registry.commands("audio8_tts").gate_options(a8, None).precision_rows == (
        "int8",
        "fp16",
    )


@pytest.mark.parametrize(
    "argv, says",
    [
        (("gate", "chatterbox", "--plot", "p.png"), "chatterbox gate draws no plot"),
        (("gate", "audio8_tts", "--precision-rows", "bf16"), "--precision-rows 'bf16'"),
        (("gate", "kokoro", "--mutants", "no_such_fault"), "unknown fault(s) no_such_fault"),
        (("bench", "kokoro", "--sentences", "0"), "sentences"),
        (("bench", "audio8_tts", "--frames", "0"), "--frames must be at least 1"),
    ],
)
def test_bad_flags_are_refused_before_anything_resolves_or_loads(argv, says):
    calls: list = []
    port = _recording(argv[1], calls)
    verb = getattr(verbs, argv[0])
    with pytest.raises(UserError, match=None) as caught:
        verb(port, registry.commands(argv[1]), _args(*argv))
    assert says in str(caught.value) and calls == []


def test_mutants_reach_the_port_chosen_and_a_living_fault_fails(monkeypatch):
    monkeypatch.setattr("gates.mutants.emit_table", lambda *a: None)
    from conversion.kokoro.mutants import CATALOGUE

    calls: list = []
    two = [CATALOGUE[1].name, CATALOGUE[0].name]
    args = _args("gate", "kokoro", "--mutants", ",".join(two))
    assert verbs.gate(_recording("kokoro", calls), registry.commands("kokoro"), args) == 1
    assert [c[0] for c in calls] == ["resolve", "check_bundles", "load_model", "run_mutants"]
    assert [m.name for m in calls[-1][1].mutants] == [CATALOGUE[0].name, CATALOGUE[1].name]


@pytest.mark.parametrize("model", MODELS)
def test_bench_hands_the_port_what_the_command_line_said(model):
    calls: list = []
    args = _args(
        "bench", model, "--config", "reduced", "--repeats", "4", "--profile", "--seed", "2"
    )
    assert verbs.bench(_recording(model, calls), registry.commands(model), args) == 0
    assert [c[0] for c in calls] == ["resolve", "check_bundles", "load_model", "run_bench"]
    run = calls[-1][1]
    assert (run.repeats, run.profile, run.seed, run.dtype) == (4, True, 2, "fp32")


def test_gate_and_bench_are_no_models_own_verbs():
    """One gate and one bench for every port: a model's CLI module lists neither."""
    for model in MODELS:
        own = registry.commands(model).VERBS
        assert "gate" not in own and "bench" not in own
        assert registry.verb(model, "gate").func is verbs.gate
        assert registry.verb(model, "bench").func is verbs.bench
