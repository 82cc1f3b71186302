"""The publisher's licence and a README, the two files a bundle of a model built on
chatterbox-tts carries beside its graphs (each model writes its own README: its host steps)."""

from __future__ import annotations

import tempfile
from pathlib import Path

LICENSE_FILE = "LICENSE"
README_FILE = "README.md"
HOST_FILES = (LICENSE_FILE, README_FILE)
LICENSE_SOURCE = Path(__file__).with_name("LICENSE.chatterbox")  # MIT, as 0.1.7 ships it


def add_license_and_readme(bundle, readme: str) -> None:
    """Add LICENSE and README.md to an open ``BundleWriter`` (each hashed in ``meta.files``)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (
            (LICENSE_FILE, LICENSE_SOURCE.read_bytes()),
            (README_FILE, readme.encode()),
        ):
            src = Path(tmp) / name
            src.write_bytes(data)
            bundle.add_file(src, name)
