"""`sfumato models`: the preset catalogue, pulling and removing models, what is installed, and
whether this machine can load (and run) it. The logic lives in `models/`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sfumato.cli.common import JsonOption, fail, print_json

if TYPE_CHECKING:
    from models.install import Installed, Pulled, PulledLora, Removed
    from models.registry import ModelRegistry
    from models.settings import ModelSettings

models_app = typer.Typer(
    help="Diffusion models: presets to pull, the registry in the models directory "
    "(docs/models.md).",
    no_args_is_help=True,
)

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir", help="The models directory (default: SFUMATO_MODELS_DIR, else DATA_DIR/models)."
    ),
]


def _settings(directory: Path | None = None) -> ModelSettings:
    from models.settings import ModelSettings

    return ModelSettings(models_dir=directory) if directory else ModelSettings()


def _registry(settings: ModelSettings) -> ModelRegistry:
    from models.registry import RegistryError, find_registry

    try:
        return find_registry(settings)
    except RegistryError as error:
        fail(str(error))


@models_app.command("presets")
def models_presets(directory: DirOption = None, as_json: JsonOption = False) -> None:
    """The catalogue under a header row, one preset a line: name, operation, speed, model, size
    on disk, memory, licence; `*` marks what serves each operation now: a pulled preset, a
    hand-written entry, or the builtin pipeline of an operation without an entry."""
    from models.presets import OPERATIONS, PRESETS

    settings = _settings(directory)
    entries = {entry.operation: entry for entry in _installed(settings)}
    rows = []
    for preset in PRESETS:
        entry = entries.get(preset.operation)
        serving = (
            (entry is None)
            if preset.builtin
            else (entry is not None and entry.preset == preset.name)
        )
        rows.append(
            {
                "serving": serving,
                "name": preset.name,
                "operation": preset.operation,
                "speed": preset.speed,
                "model": preset.repo or "builtin",
                "downloadGb": None if preset.builtin else preset.download_gb,
                "memoryGb": None if preset.builtin else preset.memory_gb,
                "licence": preset.licence,
                "gated": preset.gated,
            }
        )
    # What serves an operation that no row above marks: a hand-written entry, or its builtin
    # pipeline (generate, edit, reframe and animate have no builtin preset).
    for operation in OPERATIONS:
        if any(row["serving"] and row["operation"] == operation for row in rows):
            continue
        entry = entries.get(operation)
        rows.append(
            {
                "serving": True,
                "name": "hand-written" if entry else "builtin",
                "operation": operation,
                "speed": "-",
                "model": entry.model if entry else "builtin pipeline",
                "downloadGb": None,
                "memoryGb": entry.memory_gb if entry else None,
                "licence": "-",
                "gated": False,
            }
        )
    if as_json:
        print_json(rows)
        return
    typer.echo(
        f"  {'PRESET':<16} {'OPERATION':<10} {'SPEED':<8}{'MODEL':<50} {'DOWNLOAD':>8}  "
        f"{'MEMORY':>7}  LICENCE"
    )
    for row in rows:
        size = "-" if row["downloadGb"] is None else f"{row['downloadGb']:g} GB"
        memory = "CPU" if row["memoryGb"] is None else f"{row['memoryGb']:g} GB"
        gated = "  gated" if row["gated"] else ""
        typer.echo(
            f"{'*' if row['serving'] else ' '} {row['name']:<16} {row['operation']:<10} "
            f"{row['speed']:<8}{row['model']:<50} {size:>8}  {memory:>7}  {row['licence']}{gated}"
        )
    typer.echo("(*: serves its operation now)")


def _installed(settings: ModelSettings) -> list[Installed]:
    from models.install import installed
    from models.registry import RegistryError

    try:
        return installed(settings)
    except RegistryError as error:
        fail(str(error))


@models_app.command("pull")
def models_pull(
    presets: Annotated[
        list[str],
        typer.Argument(
            help="Preset names (`sfumato models presets`), or with --lora repositories."
        ),
    ],
    directory: DirOption = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Also replace a hand-written entry of the operation.")
    ] = False,
    lora: Annotated[
        bool,
        typer.Option(
            "--lora", help="The arguments are Hub repositories of LoRA adapters for --base."
        ),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option(help="With --lora: the installed model (id) the adapters fit."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Download presets into the models directory and register them (resumable: run it again
    after an interruption); with --lora, LoRA adapters for an installed model. HF_TOKEN for
    gated models; HF_ENDPOINT for a mirror. The download's progress is on stderr."""
    from huggingface_hub.utils import logging as hub_logging

    from models.install import PullError, pull, pull_lora

    # The hub client's own warnings (each retry of a request) would bury the one line a pull
    # prints; its errors still arrive, as that line.
    hub_logging.set_verbosity_error()

    if lora and base is None:
        fail("--lora needs --base: the installed model the adapters fit")
    settings = _settings(directory)
    results: list[dict[str, Any]] = []
    failed = False
    for name in presets:
        try:
            if lora:
                assert base is not None
                adapter = pull_lora(name, base, settings)
                line, result = adapter.line, _lora_json(adapter)
            else:
                pulled = pull(name, settings, replace=replace)
                line, result = pulled.line, _pulled_json(pulled)
        except PullError as error:
            typer.echo(f"error: {error}", err=True)
            results.append({"model" if lora else "preset": name, "error": str(error)})
            failed = True
            continue
        results.append(result)
        if not as_json:
            typer.echo(line)
    if as_json:
        print_json(results)
    if failed:
        raise typer.Exit(code=1)


def _pulled_json(pulled: Pulled) -> dict[str, Any]:
    """A preset's pull as `--json` prints it; a builtin one downloads and registers nothing."""
    preset = pulled.preset
    return {
        "preset": preset.name,
        "operation": preset.operation,
        "model": preset.repo or "builtin",
        "revision": preset.revision or None,
        "files": pulled.files,
        "sizeBytes": pulled.size_bytes,
        "folder": str(pulled.folder) if pulled.folder else None,
        "registry": str(pulled.registry) if pulled.registry else None,
    }


def _lora_json(adapter: PulledLora) -> dict[str, Any]:
    return {
        "lora": adapter.name,
        "model": adapter.repo,
        "revision": adapter.revision,
        "base": adapter.base,
        "files": adapter.files,
        "sizeBytes": adapter.size_bytes,
        "folder": str(adapter.folder),
        "registry": str(adapter.registry),
    }


@models_app.command("remove")
def models_remove(
    presets: Annotated[list[str], typer.Argument(help="Installed preset names.")],
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove presets: their registry entries and their files; stops at the first that cannot
    be removed (with --json, the document ends with its error)."""
    from models.install import PullError, remove

    settings = _settings(directory)
    results: list[dict[str, Any]] = []
    for name in presets:
        try:
            removed = remove(name, settings)
        except PullError as error:
            if as_json:
                print_json([*results, {"preset": name, "error": str(error)}])
            fail(str(error))
        if as_json:
            results.append(_removed_json(removed))
        else:
            typer.echo(removed.line)
    if as_json:
        print_json(results)


def _removed_json(removed: Removed) -> dict[str, Any]:
    return {
        "preset": removed.preset.name,
        "operation": removed.preset.operation,
        "entryRemoved": removed.entry_removed,
        "folder": str(removed.folder),
        "folderRemoved": not removed.kept_for,
        "folderKeptFor": list(removed.kept_for),
        "servedBy": removed.served_by or "builtin pipeline",
    }


@models_app.command("list")
def models_list(directory: DirOption = None, as_json: JsonOption = False) -> None:
    """What serves each operation: the registry's entries (preset or hand-written, model,
    pipeline class, dtype, size on disk, memory, folder) and the builtin pipeline for the
    others."""
    from models.install import builtin_operations, gb

    settings = _settings(directory)
    entries = _installed(settings)
    if as_json:
        rows: list[dict[str, object]] = [
            {
                "operation": entry.operation,
                "preset": entry.preset,
                "model": entry.model,
                "pipeline": entry.pipeline,
                "dtype": entry.dtype,
                "sizeBytes": entry.size_bytes,
                "memoryGb": entry.memory_gb,
                "folder": str(entry.folder),
            }
            for entry in entries
        ]
        rows += [
            {"operation": operation, "preset": None, "model": "builtin pipeline"}
            for operation in builtin_operations(entries)
        ]
        print_json(rows)
        return
    for entry in entries:
        origin = entry.preset or "hand-written"
        typer.echo(
            f"{entry.operation:<10} {origin:<16} {entry.model}  {entry.pipeline}  "
            f"{entry.dtype}  {gb(entry.size_bytes)} on disk, {entry.memory_gb:g} GB memory  "
            f"{entry.folder}"
        )
    for operation in builtin_operations(entries):
        typer.echo(f"{operation:<10} {'builtin':<16} (no model entry)")


@models_app.command("check")
def models_check(
    load: Annotated[
        bool, typer.Option("--load", help="Also load every model (slow; proves the weights).")
    ] = False,
    smoke: Annotated[
        bool,
        typer.Option("--smoke", help="Load every model and run one tiny call of its operation."),
    ] = False,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: auto).")] = None,
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check folders, pipeline classes and memory against the device; exit 1 on any problem.
    With --json, the lines it prints as it goes are on stderr and the document comes at the
    end."""
    from models.cache import ModelCache
    from models.device import device_memory_gb, resolve_device
    from models.loading import ModelUnavailable, check

    def say(line: str) -> None:
        typer.echo(line, err=as_json)

    settings = _settings(directory)
    registry = _registry(settings)
    resolved = resolve_device(device or settings.model_device)
    specs = registry.specs()
    # Each entry's result for --json, by operation: its problems, and whether it loaded or
    # what its smoke call made (None: not tried).
    results: dict[str, dict[str, Any]] = {}
    weights: dict[tuple[str, str, str], float] = {}
    for spec in specs:
        found = check(spec, resolved)
        results[spec.operation] = {
            "operation": spec.operation,
            "model": spec.id,
            "folder": str(spec.folder),
            "problems": found,
            "loaded": None,
            "smoke": None,
        }
        weights[spec.weights_key] = max(weights.get(spec.weights_key, 0.0), spec.memory_gb)
        say(f"{spec.operation:<10} {'ok' if not found else 'PROBLEM'}  {spec.folder}")
    total = device_memory_gb(resolved)
    needed = sum(weights.values())
    capacity = "host memory" if total is None else f"{total:.1f} GB"
    say(
        f"device {resolved}: {capacity}; "
        f"all models together need about {needed:g} GB ({len(weights)} sets of weights)"
    )
    all_fit = total is None or needed <= total
    if not all_fit:
        say("  not all fit at once: the cache will evict least-recently-used models")
    if (load or smoke) and not any(result["problems"] for result in results.values()):
        cache = ModelCache(device=resolved, budget_gb=float("inf"))
        if smoke:
            from pipelines.smoke import smoke_test

            for spec in specs:
                result = results[spec.operation]
                try:
                    result["smoke"] = smoke_test(spec, cache)
                    say(f"{spec.operation:<10} {result['smoke']}")
                except Exception as error:  # whatever the model raised: reported, exit 1
                    result["problems"].append(f"{spec.operation}: the smoke call failed: {error}")
        else:
            for spec in specs:
                result = results[spec.operation]
                try:
                    cache.ensure(spec)
                    result["loaded"] = True
                    say(f"{spec.operation:<10} loaded")
                except ModelUnavailable as error:
                    result["loaded"] = False
                    result["problems"].append(str(error))
    problems = [problem for result in results.values() for problem in result["problems"]]
    for problem in problems:
        typer.echo(f"error: {problem}", err=True)
    if as_json:
        print_json(
            {
                "ok": not problems,
                "device": resolved,
                "memoryGb": total,
                "neededGb": needed,
                "weightSets": len(weights),
                "allFit": all_fit,
                "models": list(results.values()),
            }
        )
    if problems:
        raise typer.Exit(code=1)


def models_greeting(data_dir: Path) -> str:
    """What serves generate, for `sfumato demo`: the pulled model, or how to get a real one on
    this machine."""
    from models.install import installed
    from models.presets import BY_NAME, CPU_PRESET, licence_terms
    from models.registry import RegistryError
    from models.settings import ModelSettings

    settings = ModelSettings(data_dir=data_dir)
    try:
        entries = {entry.operation: entry for entry in installed(settings)}
    except RegistryError as error:
        return f"The model registry is invalid, so workers will not start: {error}"
    if "generate" in entries:
        served = ", ".join(f"{op} by {entry.model}" for op, entry in sorted(entries.items()))
        return f"Models: {served} (the builtin pipelines serve the rest; sfumato models list)."
    preset = BY_NAME[CPU_PRESET]
    return (
        "generate runs the builtin procedural painter. For real text-to-image on this CPU "
        f"(a few seconds a picture), pull {preset.repo} once ({preset.download_gb:g} GB; its "
        f"licence, {preset.licence}, {licence_terms(preset.licence)}) and restart:\n\n"
        f"  .venv/bin/sfumato models pull {CPU_PRESET} --dir {settings.directory}"
    )
