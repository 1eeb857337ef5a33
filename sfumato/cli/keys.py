"""`sfumato keys`: an account's API keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from sfumato.cli.common import JsonOption, fail, json_time, open_services, print_json

if TYPE_CHECKING:
    from core.tables import ApiKey

keys_app = typer.Typer(help="API keys.", no_args_is_help=True)


def key_json(key: ApiKey) -> dict[str, Any]:
    """A key as `--json` prints it (never its secret), named as the API names things."""
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "state": key.state,
        "createdAt": json_time(key.created_at),
        "expiresAt": json_time(key.expires_at),
        "lastUsedAt": json_time(key.last_used_at),
    }


@keys_app.command("create")
def keys_create(
    email: str,
    name: Annotated[str, typer.Option(help="What the key is for")],
    expires_in: Annotated[
        int | None, typer.Option("--expires-in", help="Days until the key expires")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a key; its plaintext is the last line printed (`key` with --json), and is never
    shown again."""
    from core.accounts import api_keys
    from core.accounts import service as accounts

    try:
        new = api_keys.create_key(open_services().db, email, name, expires_in)
    except accounts.AccountError as error:
        fail(str(error))
    if as_json:
        print_json({**key_json(new.key), "key": new.plaintext})
        return
    expiry = new.key.expires_at.isoformat() if new.key.expires_at else "never"
    typer.echo(f"key id {new.key.id} ({new.key.name}), expires {expiry}")
    typer.echo(new.plaintext)


@keys_app.command("list")
def keys_list(email: str, as_json: JsonOption = False) -> None:
    """List an account's keys (never their secrets)."""
    from core.accounts import api_keys
    from core.accounts import service as accounts

    try:
        keys = api_keys.list_keys(open_services().db, email)
    except accounts.AccountError as error:
        fail(str(error))
    if as_json:
        print_json([key_json(key) for key in keys])
        return
    for key in keys:
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        used = key.last_used_at.isoformat() if key.last_used_at else "never"
        typer.echo(
            f"{key.id}  {key.prefix}...  {key.name}  {key.state}  expires={expiry}  used={used}"
        )


@keys_app.command("rename")
def keys_rename(key_id: str, name: str, as_json: JsonOption = False) -> None:
    """Give a key another name."""
    from core.accounts import api_keys
    from core.accounts import service as accounts

    try:
        key = api_keys.rename_key(open_services().db, key_id, name)
    except accounts.AccountError as error:
        fail(str(error))
    if as_json:
        print_json(key_json(key))
        return
    typer.echo(f"{key.id}  {key.name}")


def _set_state(key_id: str, state: str, as_json: bool) -> None:
    from core.accounts import api_keys
    from core.accounts import service as accounts

    try:
        services = open_services()
        key = api_keys.set_key_state(services.db, services.events, key_id, state)
    except accounts.AccountError as error:
        fail(str(error))
    if as_json:
        print_json(key_json(key))
        return
    typer.echo(f"{key.id}  {key.state}")


@keys_app.command("deactivate")
def keys_deactivate(key_id: str, as_json: JsonOption = False) -> None:
    """Refuse the key from the next request on (it can be activated again)."""
    _set_state(key_id, "deactivated", as_json)


@keys_app.command("activate")
def keys_activate(key_id: str, as_json: JsonOption = False) -> None:
    """Accept a deactivated key again."""
    _set_state(key_id, "active", as_json)


@keys_app.command("revoke")
def keys_revoke(key_id: str, as_json: JsonOption = False) -> None:
    """Refuse the key for good."""
    _set_state(key_id, "revoked", as_json)
