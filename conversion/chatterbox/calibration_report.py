"""`python -m conversion.chatterbox.calibration_report`: the calibrated random weights' statistics
on the gate's own run (the numbers the card quotes), apart from `calibration.py` so that the
weights (which `calibration.py` serves) never import the gate or the port that load them."""

from __future__ import annotations

import argparse

from .calibration import stats


def main(argv: list[str] | None = None) -> int:
    """Print the statistics for the random snapshot at a config / weights seed / draw seed."""
    from conversion.core.threads import pin_torch_threads

    from .config import by_name
    from .gate.ladder import GATE_TEXT, GATE_TOKENS
    from .oracle.utterance import record
    from .port import PORT
    from .weights import load_model

    parser = argparse.ArgumentParser(prog="python -m conversion.chatterbox.calibration_report")
    parser.add_argument("--config", default="reduced")
    parser.add_argument("--weights-seed", type=int, default=0)
    parser.add_argument("--seeds", default="0,1,2", help="draw seeds (comma-separated)")
    args = parser.parse_args(argv)
    pin_torch_threads()
    config = by_name(args.config)
    model = load_model(PORT.resolve_weights("random", config, args.weights_seed), config)
    for seed in [int(s) for s in args.seeds.split(",")]:
        fx = record(model, GATE_TEXT, seed=seed, max_new_tokens=GATE_TOKENS[config.name])
        s = stats(model, fx)
        print(f"weights seed {args.weights_seed}, draw seed {seed}: {s}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
