"""`sfumato models`: what the model registry configures, and whether this machine can load it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from models.registry import ModelRegistry

models_app = typer.Typer(
    help="The diffusion models of SFUMATO_MODELS_FILE (docs/models.md).", no_args_is_help=True
)


def _registry() -> ModelRegistry:
    from models.registry import RegistryError, find_registry
    from models.settings import ModelSettings

    try:
        return find_registry(ModelSettings())
    except RegistryError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=1) from None


@models_app.command("list")
def models_list() -> None:
    """One line per operation: model, pipeline class, folder, dtype, batch limit, memory."""
    registry = _registry()
    for spec in registry.specs():
        typer.echo(
            f"{spec.operation:<10} {spec.model}  {spec.pipeline}  {spec.folder}  "
            f"{spec.dtype}{'/' + spec.variant if spec.variant else ''}  "
            f"batch={spec.batch_limit}  memory={spec.memory_gb:g}GB  offload={spec.offload}"
        )


@models_app.command("check")
def models_check(
    load: Annotated[
        bool, typer.Option("--load", help="Also load every model (slow; proves the weights).")
    ] = False,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: auto).")] = None,
) -> None:
    """Check folders, pipeline classes and memory against the device; exit 1 on any problem."""
    from models.cache import ModelCache
    from models.device import device_memory_gb, resolve_device
    from models.loading import ModelUnavailable, check

    registry = _registry()
    resolved = resolve_device(device or "auto")
    problems: list[str] = []
    weights: dict[tuple[str, str, str], float] = {}
    for spec in registry.specs():
        found = check(spec, resolved)
        problems.extend(found)
        weights[spec.weights_key] = max(weights.get(spec.weights_key, 0.0), spec.memory_gb)
        typer.echo(f"{spec.operation:<10} {'ok' if not found else 'PROBLEM'}  {spec.folder}")
    total = device_memory_gb(resolved)
    needed = sum(weights.values())
    capacity = "host memory" if total is None else f"{total:.1f} GB"
    typer.echo(
        f"device {resolved}: {capacity}; "
        f"all models together need about {needed:g} GB ({len(weights)} sets of weights)"
    )
    if total is not None and needed > total:
        typer.echo("  not all fit at once: the cache will evict least-recently-used models")
    if load and not problems:
        cache = ModelCache(device=resolved, budget_gb=float("inf"))
        for spec in registry.specs():
            try:
                cache.ensure(spec)
                typer.echo(f"{spec.operation:<10} loaded")
            except ModelUnavailable as error:
                problems.append(str(error))
    for problem in problems:
        typer.echo(f"error: {problem}", err=True)
    if problems:
        raise typer.Exit(code=1)
