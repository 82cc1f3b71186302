"""One gate case (the oracle's recorded fixture, the voice the bundle gets, voxport's text
chunk) and the oracle's tokens every stage's rungs read: `conversion.s3gen.gate_case`'s, shared
with Turbo's gate (as are the row cosines, `conversion.s3gen.gate_rungs`').
"""

from __future__ import annotations

from conversion.s3gen.gate_case import Case, oracle_tokens, speech_tokens

__all__ = ["Case", "oracle_tokens", "speech_tokens"]
