"""`python -m conversion.audio8_tts.calibration_report`: the calibrated random weights' statistics
on the gate's own run (the numbers the card quotes), apart from `calibration.py` so that the
weights (which `calibration.py` serves) never import the gate or the port that load them."""

from __future__ import annotations

import argparse
import sys

from .calibration import eos_beta, head_gain, statistics


def main(argv: list[str] | None = None) -> int:
    """Print the statistics of the seeded random snapshot on the gate's utterance and frames."""
    from conversion.core.threads import pin_torch_threads

    from .config import by_name
    from .gate.ladder import GATE_FRAMES, GATE_TEXT, reference_prompt
    from .port import PORT
    from .reference import Audio8LM
    from .weights import load, random_lm_state

    ap = argparse.ArgumentParser(prog="python -m conversion.audio8_tts.calibration_report")
    ap.add_argument("--config", default="reduced", choices=("reduced", "published"))
    ap.add_argument("--weights-seeds", default="0,7", help="comma-separated")
    ap.add_argument("--seeds", default="0,1,2", help="draw seeds, comma-separated")
    ap.add_argument(
        "--uncalibrated",
        action="store_true",
        help="the plain N(0, 0.02) draws instead (fp32, not the snapshot): what calibrate fixes",
    )
    args = ap.parse_args(argv)
    pin_torch_threads()
    config = by_name(args.config)
    frames = GATE_FRAMES[config.name]
    print(
        f"audio8_tts {config.name}: head gain {head_gain(config.dim):.2f}, eos beta "
        f"{eos_beta(config):.3f}; {GATE_TEXT!r}, {frames} frames",
        file=sys.stderr,
    )
    for ws in (int(s) for s in args.weights_seeds.split(",")):
        # the snapshot the gate loads (bf16 as published, read back as fp32) and its prompt
        loaded = load(PORT.resolve_weights("random", config, ws), config)
        prompt, lm = reference_prompt(loaded), loaded.lm
        if args.uncalibrated:
            lm = Audio8LM(config).eval()
            lm.load_state_dict(random_lm_state(config, ws, calibrated=False))
        for seed in (int(s) for s in args.seeds.split(",")):
            stats = statistics(lm, prompt, frames, seed)
            print(f"weights seed {ws}, draw seed {seed}: {stats.line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
