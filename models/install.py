"""`sfumato models pull|remove|list`: presets downloaded into the models directory and written
into its registry.

A pull lists the repository at the preset's pinned commit, selects the preset's files, checks
the disk has room for what is still missing, downloads with `huggingface_hub.snapshot_download`
into `MODELS_DIR/<preset>` (resumable: an interrupted pull keeps every file it finished, and a
dropped connection resumes inside a file; its progress bars; `HF_TOKEN` for gated repositories;
`HF_ENDPOINT` for a mirror), checks every selected file arrived whole, and only then writes the
preset's entry into `MODELS_DIR/models.toml`. A failure is one `PullError` line and leaves the
registry as it was.

The registry is edited, not rewritten: comments, order and every hand-written entry stay. An
entry `pull` wrote carries `preset = "<name>"`; an operation whose entry has no `preset` was
written by hand and is only replaced with `replace=True`.

Imports the hub client before anything imports diffusers, and never `models.loading` (which
turns the hub offline for the process's workers).
"""

from __future__ import annotations

import errno
import shutil
import socket
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from models.presets import OPERATIONS, Preset, preset_named
from models.registry import RegistryError, load_registry
from models.settings import ModelSettings

REGISTRY_HEADER = (
    "Written by `sfumato models pull` (docs/models.md). Entries with `preset` are the pull's;\n"
    "an entry without it is yours: pull leaves it alone unless told --replace."
)
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
HUB = "https://huggingface.co"
# How long the reachability check waits for the hub to accept a connection.
REACH_SECONDS = 5.0


class PullError(Exception):
    """Why a pull or a removal did not happen, in one line."""


@dataclass(frozen=True)
class Installed:
    """One operation's entry of the registry, as `sfumato models list` shows it."""

    operation: str
    preset: str | None  # None: written by hand
    model: str
    pipeline: str
    dtype: str  # with the variant, e.g. "float16/fp16"
    folder: Path
    size_bytes: int
    memory_gb: float


@dataclass(frozen=True)
class Pulled:
    """What a pull of a preset downloaded and registered (nothing for a builtin one)."""

    preset: Preset
    files: int
    size_bytes: int
    folder: Path | None  # None: builtin, nothing downloaded
    registry: Path | None  # None: nothing registered

    @property
    def line(self) -> str:
        preset = self.preset
        if self.folder is None:
            return (
                f"{preset.name}: builtin, nothing to download; it serves {preset.operation} "
                f"whenever the registry has no {preset.operation} entry"
            )
        return (
            f"{preset.name}: {self.files} files, {gb(self.size_bytes)} in {self.folder}; "
            f"{preset.operation} now runs {preset.repo} (registry {self.registry})"
        )


@dataclass(frozen=True)
class PulledLora:
    """What a pull of a LoRA adapter downloaded and registered."""

    name: str
    repo: str
    revision: str
    base: str  # the installed model (id) it fits
    files: int  # its .safetensors files
    size_bytes: int
    folder: Path
    registry: Path

    @property
    def line(self) -> str:
        return (
            f"{self.name}: LoRA for {self.base} from {self.repo}, in {self.folder} "
            f"(registry {self.registry})"
        )


@dataclass(frozen=True)
class Removed:
    """What a removal dropped: the preset's entry, and its folder unless another entry uses
    it."""

    preset: Preset
    entry_removed: bool  # False: the registry's entry was not the preset's
    folder: Path
    kept_for: tuple[str, ...]  # the operations whose entries use the folder, so it stays
    served_by: str | None  # the model now serving the operation; None: its builtin pipeline

    @property
    def line(self) -> str:
        if self.kept_for:
            return (
                f"{self.preset.name}: entry removed; {self.folder} kept (the registry's "
                f"{', '.join(self.kept_for)} entry uses it)"
            )
        now = self.served_by or "the builtin pipeline"
        return (
            f"{self.preset.name}: removed ({self.folder}); {self.preset.operation} runs {now} now"
        )


def gb(size: float) -> str:
    """A size for people: GB, or MB below one."""
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"


def folder_size(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


# --- the registry file ----------------------------------------------------------------------


def _read_document(path: Path) -> tomlkit.TOMLDocument:
    if not path.exists():
        document = tomlkit.document()
        for line in REGISTRY_HEADER.splitlines():
            document.add(tomlkit.comment(line))
        return document
    try:
        return tomlkit.parse(path.read_text())
    except Exception as error:  # tomlkit's parse errors share no base class worth naming
        raise PullError(f"cannot read the model registry {path}: {error}") from None


def _write_document(path: Path, document: tomlkit.TOMLDocument) -> None:
    """Validate the new registry as a worker would read it, then replace the file atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=".models-", suffix=".toml", delete=False
    ) as handle:
        handle.write(tomlkit.dumps(document))
        staged = Path(handle.name)
    try:
        if document.get("operations"):
            load_registry(staged)
        staged.replace(path)
    except RegistryError as error:
        staged.unlink(missing_ok=True)
        raise PullError(f"the registry would not be valid, left unchanged: {error}") from None
    except OSError as error:
        staged.unlink(missing_ok=True)
        raise PullError(f"cannot write the model registry {path}: {error}") from None


def _entries(document: tomlkit.TOMLDocument) -> dict[str, Any]:
    operations = document.get("operations")
    return dict(operations) if operations is not None else {}


def _hand_written_conflict(document: tomlkit.TOMLDocument, preset: Preset) -> str | None:
    entry = _entries(document).get(preset.operation)
    if entry is None or entry.get("preset"):
        return None
    return (
        f"{preset.operation} is served by a hand-written entry ({entry.get('model', '?')}) in "
        "the registry: pass --replace to serve it with "
        f"{preset.name} instead"
    )


def register(path: Path, preset: Preset, replace: bool = False, folder: Path | None = None) -> None:
    """Write the preset's entry into the registry file at `path` (made if missing). `folder` is
    where its files are (default: beside the registry); relative when it is beside it."""
    document = _read_document(path)
    if not replace and (conflict := _hand_written_conflict(document, preset)):
        raise PullError(conflict)
    if "operations" not in document:
        document.add(tomlkit.nl())
        document["operations"] = tomlkit.table(is_super_table=True)
    operations: Any = document["operations"]
    entry = preset.registry_entry()
    if folder is not None and folder.resolve().parent != path.resolve().parent:
        entry["folder"] = str(folder.resolve())  # SFUMATO_MODELS_FILE elsewhere
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = value
    operations[preset.operation] = table
    _write_document(path, document)


# --- pull -----------------------------------------------------------------------------------


def pull(name: str, settings: ModelSettings, replace: bool = False) -> Pulled:
    """Download and register one preset. Raises `PullError`."""
    preset = _preset(name)
    if preset.builtin:
        return Pulled(preset, files=0, size_bytes=0, folder=None, registry=None)
    assert preset.repo is not None
    registry = settings.registry_file
    if not replace and (conflict := _hand_written_conflict(_read_document(registry), preset)):
        raise PullError(conflict)
    target = settings.directory / preset.folder
    _check_reachable(preset, settings.hf_endpoint)
    files = _select(preset, _listing(preset, settings))
    missing = sum(size for path, size in files.items() if not _complete(target / path, size))
    _ensure_room(preset, settings.directory, missing)
    _download(preset, settings, target)
    broken = [path for path, size in files.items() if not _complete(target / path, size)]
    if broken:
        raise PullError(
            f"{preset.name}: the download ended without {', '.join(broken[:3])}; "
            "run the pull again to resume it"
        )
    register(registry, preset, replace, folder=target)
    return Pulled(preset, len(files), folder_size(target), target, registry)


def pull_lora(
    repo: str, base: str, settings: ModelSettings, name: str | None = None, revision: str = "main"
) -> PulledLora:
    """Download a LoRA adapter (the `.safetensors` of a Hub repository) for the installed
    model `base` (a registry entry's id) and register it as `[loras.<name>]` (default name: the
    repository's). Raises `PullError`."""
    registry = settings.registry_file
    ids = {spec.id for spec in load_registry(registry).specs()} if registry.exists() else set()
    if base not in ids:
        installed_ids = ", ".join(sorted(ids)) or "none"
        raise PullError(
            f"{repo}: no model {base!r} is installed to take it (installed: {installed_ids})"
        )
    adapter_name = name or repo.rsplit("/", 1)[-1]
    # The hub calls and their errors are the presets'; a LoRA is a preset of one folder.
    source = Preset(
        name=adapter_name,
        operation="generate",
        speed="fast",
        summary="",
        licence="",
        repo=repo,
        revision=revision,
        patterns=("*.safetensors",),
    )
    weights = [path for path in _listing(source, settings) if path.endswith(".safetensors")]
    if not weights:
        raise PullError(f"{repo}: no .safetensors file at {revision} (not a LoRA repository)")
    target = settings.directory / "loras" / adapter_name
    _download(source, settings, target)
    document = _read_document(registry)
    if "loras" not in document:
        document.add(tomlkit.nl())
        document["loras"] = tomlkit.table(is_super_table=True)
    table = tomlkit.table()
    table["model"] = repo
    table["folder"] = str(target.resolve())
    if len(weights) == 1:
        table["weight_name"] = weights[0]
    table["bases"] = [base]
    loras: Any = document["loras"]
    loras[adapter_name] = table
    _write_document(registry, document)
    return PulledLora(
        adapter_name, repo, revision, base, len(weights), folder_size(target), target, registry
    )


def _preset(name: str) -> Preset:
    try:
        return preset_named(name)
    except LookupError as error:
        raise PullError(str(error)) from None


def _hub_error(preset: Preset, error: Exception, endpoint: str | None) -> PullError:
    """One line for what the hub client raised."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo = preset.repo
    if isinstance(error, GatedRepoError):
        return PullError(
            f"{preset.name}: {repo} is gated: accept its licence on its Hugging Face page, then "
            "set HF_TOKEN to a token of that account"
        )
    if isinstance(error, RevisionNotFoundError):
        return PullError(f"{preset.name}: {repo} has no revision {preset.revision}")
    if isinstance(error, RepositoryNotFoundError):
        return PullError(f"{preset.name}: no repository {repo} (or it is private: set HF_TOKEN)")
    if isinstance(error, OfflineModeIsEnabled):
        return PullError(f"{preset.name}: HF_HUB_OFFLINE is set: unset it to download")
    if isinstance(error, OSError) and error.errno in DISK_FULL:
        return PullError(
            f"{preset.name}: cannot write the download: {error.strerror}; free room and run "
            "the pull again to resume it"
        )
    where = endpoint or HUB
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, HfHubHTTPError | LocalEntryNotFoundError):
        return PullError(f"{preset.name}: the hub at {where} failed: {first}")
    return PullError(f"{preset.name}: cannot reach the hub at {where}: {first}")


def _check_reachable(preset: Preset, endpoint: str | None) -> None:
    """Fail at once, in one line, when the hub cannot be reached at all (offline, a name that
    does not resolve, nothing listening): the hub client would retry each request with back-off
    for about 25 s, logging every try. Behind a proxy the check is the proxy's to make."""
    import urllib.request
    from urllib.parse import urlsplit

    where = endpoint or HUB
    parts = urlsplit(where)
    host = parts.hostname or ""
    proxies = urllib.request.getproxies()
    if parts.scheme in proxies and not urllib.request.proxy_bypass(host):
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=REACH_SECONDS):
            pass
    except socket.gaierror:
        raise PullError(
            f"{preset.name}: cannot reach the hub at {where}: the name {host} does not resolve "
            "(offline?)"
        ) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise PullError(f"{preset.name}: cannot reach the hub at {where}: {reason}") from None


def _listing(preset: Preset, settings: ModelSettings) -> dict[str, int]:
    """Every file of the repository at the preset's revision, with its size."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=settings.hf_endpoint, token=settings.hf_token)
    try:
        return {
            entry.path: entry.size
            for entry in api.list_repo_tree(
                str(preset.repo), revision=preset.revision, recursive=True
            )
            if isinstance(entry, RepoFile)
        }
    except Exception as error:  # the hub client's and its HTTP library's errors: one line
        raise _hub_error(preset, error, settings.hf_endpoint) from None


def _select(preset: Preset, listing: dict[str, int]) -> dict[str, int]:
    from huggingface_hub.utils import filter_repo_objects

    selected = set(filter_repo_objects(listing, allow_patterns=list(preset.patterns)))
    if "model_index.json" not in selected:
        raise PullError(
            f"{preset.name}: {preset.repo} at {preset.revision} has no model_index.json "
            "(not a diffusers repository at that revision)"
        )
    return {path: listing[path] for path in sorted(selected)}


def _complete(path: Path, size: int) -> bool:
    return path.is_file() and path.stat().st_size == size


def _ensure_room(preset: Preset, directory: Path, needed: int) -> None:
    existing = directory
    while not existing.exists():
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    # A little headroom: the registry, the hub client's metadata, temporary files.
    if needed + 64 * 2**20 > free:
        raise PullError(
            f"{preset.name}: needs {gb(needed)} more, {directory} has {gb(free)} free; "
            "free room or choose another --dir"
        )


def _download(preset: Preset, settings: ModelSettings, target: Path) -> None:
    from huggingface_hub import snapshot_download

    target.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(
            str(preset.repo),
            revision=preset.revision,
            local_dir=target,
            allow_patterns=list(preset.patterns),
            endpoint=settings.hf_endpoint,
            token=settings.hf_token,
            max_workers=4,
        )
    except Exception as error:  # as in _listing
        raise _hub_error(preset, error, settings.hf_endpoint) from None


# --- list and remove ------------------------------------------------------------------------


def installed(settings: ModelSettings) -> list[Installed]:
    """The registry's entries (none without a registry), by operation."""
    path = settings.registry_file
    if not path.exists():
        return []
    registry = load_registry(path)
    return [
        Installed(
            operation=spec.operation,
            preset=spec.preset,
            model=spec.model,
            pipeline=spec.pipeline,
            dtype=spec.dtype + (f"/{spec.variant}" if spec.variant else ""),
            folder=spec.folder,
            size_bytes=folder_size(spec.folder),
            memory_gb=spec.memory_gb,
        )
        for spec in registry.specs()
    ]


def builtin_operations(entries: Iterable[Installed]) -> list[str]:
    """The operations no entry names: the builtin pipelines serve them."""
    named = {entry.operation for entry in entries}
    return [operation for operation in OPERATIONS if operation not in named]


def remove(name: str, settings: ModelSettings) -> Removed:
    """Drop the preset's registry entry and its folder (kept if a hand-written entry uses it)."""
    preset = _preset(name)
    if preset.builtin:
        raise PullError(f"{preset.name} is builtin: there is nothing to remove")
    path = settings.registry_file
    document = _read_document(path)
    entries = _entries(document)
    entry = entries.get(preset.operation)
    target = settings.directory / preset.folder
    if (entry is None or entry.get("preset") != preset.name) and not target.exists():
        raise PullError(f"{preset.name} is not installed in {settings.directory}")
    entry_removed = entry is not None and entry.get("preset") == preset.name
    if entry_removed:
        del document["operations"][preset.operation]
        _write_document(path, document)
    users = tuple(
        operation
        for operation, other in _entries(document).items()
        if (path.parent / str(other.get("folder", ""))).resolve() == target.resolve()
    )
    if not users:
        shutil.rmtree(target, ignore_errors=True)
    serving = _entries(document).get(preset.operation)
    served_by = None if serving is None else str(serving.get("model", "its entry"))
    return Removed(preset, entry_removed, target, users, served_by)
