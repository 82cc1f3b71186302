"""`--weights OWNER/NAME`: a Hugging Face hub id, resolved to a local snapshot folder.

`huggingface_hub.snapshot_download` does the work, so the library's own rules hold: its cache
(`HF_HUB_CACHE` / `HF_HOME`), `HF_HUB_OFFLINE`, and a cached copy used when the network is not
there. Only the files a model's loader reads are fetched (the port's `hub_files`). With no
network and no cached copy the user gets one line naming the repo and the way round it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from conversion.core.errors import WeightsError

# owner/name as the hub spells them: letters, digits, '-', '_', '.'; one slash.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def is_hub_id(value: str | Path | None) -> bool:
    """True for `owner/name` spelled as the hub spells ids when nothing named `owner` is here.

    The rule, one way for every spec: a local path always wins, and so does a local `owner`:
    `w/nonexistent` with a folder `w` here is a mistyped path (named as such by the CLI), never
    a hub lookup; `./owner/name`, `/...`, `~/...` and `owner/name/` never match the hub's
    spelling, so they are always paths."""
    if value is None or isinstance(value, Path) or value == "random":
        return False
    if not _HUB_ID.match(value) or Path(value).expanduser().exists():
        return False
    return local_owner(value) is None


def local_owner(value: str | Path | None) -> str | None:
    """`owner` of a spec spelled `owner/name` (the hub's spelling) when a file or folder of
    that name is here: the spec then names a local path, not a hub id. None otherwise."""
    if not isinstance(value, str) or not _HUB_ID.match(value):
        return None
    owner = value.split("/", 1)[0]
    return owner if Path(owner).exists() else None


def snapshot(repo_id: str, files: Sequence[str]) -> Path:
    """The local snapshot folder of `repo_id` holding `files` (glob patterns), downloaded into
    the hub cache unless a cached copy serves."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError as err:  # pragma: no cover - a dependency of voxport
        raise WeightsError(
            f"--weights {repo_id}: huggingface_hub is not installed; pass --weights DIR"
        ) from err
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE  # the library's own reading of the variable
    fix = (
        f"download it where there is a network (`hf download {repo_id}`) and copy the hub "
        f"cache here (HF_HUB_CACHE), or pass --weights DIR with a local snapshot"
    )
    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(files)))
    except (GatedRepoError, RepositoryNotFoundError) as err:
        raise WeightsError(
            f"--weights {repo_id}: the hub refused the repo ({type(err).__name__}); check the "
            "name and your access (hf auth login), or pass --weights DIR"
        ) from err
    except LocalEntryNotFoundError as err:
        why = "HF_HUB_OFFLINE is set" if offline else "the hub cannot be reached"
        raise WeightsError(
            f"--weights {repo_id}: {why} and the hub cache has no copy of it; {fix}"
        ) from err
    except (HfHubHTTPError, OSError) as err:
        raise WeightsError(
            f"--weights {repo_id}: download failed ({type(err).__name__}: {str(err)[:120]}); {fix}"
        ) from err
