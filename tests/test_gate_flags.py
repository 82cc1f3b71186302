"""A gate flag a model's gate does not implement is refused in one line, before any work,
never silently ignored."""

import pytest

from conversion.cli.main import main


@pytest.mark.parametrize("model", ["chatterbox", "audio8_tts"])
def test_plot_is_refused_where_no_plot_is_drawn(model, tmp_path, capsys):
    argv = ["gate", model, "--weights", "random", "--config", "reduced"]
    assert main([*argv, "--plot", str(tmp_path / "g.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"voxport: error: --plot: the {model} gate draws no plot yet (kokoro's does); drop --plot"
    ]
    assert not (tmp_path / "g.png").exists()
