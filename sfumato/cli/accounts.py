"""`sfumato accounts`: accounts, their plans and their credits."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sfumato.cli.common import JsonOption, fail, json_time, open_services, print_json

if TYPE_CHECKING:
    from core.tables import Account

accounts_app = typer.Typer(help="Accounts and credits.", no_args_is_help=True)


def account_json(account: Account) -> dict[str, Any]:
    """An account as `--json` prints it, named as the API names things."""
    return {
        "id": account.id,
        "email": account.email,
        "plan": account.plan_id,
        "creditBalance": account.credit_balance,
        "admin": account.is_admin,
        "createdAt": json_time(account.created_at),
    }


def print_account(account: Account, as_json: bool, line: str) -> None:
    if as_json:
        print_json(account_json(account))
    else:
        typer.echo(line)


@accounts_app.command("create")
def accounts_create(
    email: str,
    plan: Annotated[str, typer.Option(help="free, pro, enterprise or another")] = "free",
    credits: Annotated[int, typer.Option(min=0)] = 0,
    as_json: JsonOption = False,
) -> None:
    """Create an account."""
    from core.accounts import service as accounts

    try:
        account = accounts.create_account(open_services().db, email, plan, credits)
    except accounts.AccountError as error:
        fail(str(error))
    line = f"{account.id}  {account.email}  plan={account.plan_id}  credits={credits}"
    print_account(account, as_json, line)


@accounts_app.command("list")
def accounts_list(as_json: JsonOption = False) -> None:
    """List accounts."""
    from core.accounts import service as accounts

    listed = accounts.list_accounts(open_services().db)
    if as_json:
        print_json([account_json(account) for account in listed])
        return
    for account in listed:
        typer.echo(
            f"{account.id}  {account.email}  plan={account.plan_id}  "
            f"credits={account.credit_balance}"
        )


@accounts_app.command("show")
def accounts_show(email: str, as_json: JsonOption = False) -> None:
    """The account, its balance and every ledger movement (the audit trail)."""
    from core.accounts import service as accounts

    try:
        statement = accounts.statement(open_services().db, email)
    except accounts.AccountError as error:
        fail(str(error))
    account = statement.account
    if as_json:
        entries = [
            {
                "createdAt": json_time(entry.created_at),
                "kind": entry.kind,
                "amount": entry.amount,
                "balanceAfter": entry.balance_after,
                "jobId": entry.job_id,
                "reason": entry.reason,
            }
            for entry in statement.entries
        ]
        print_json(
            {
                **account_json(account),
                "ledgerTotal": statement.ledger_total,
                "consistent": statement.consistent,
                "ledger": entries,
            }
        )
        if not statement.consistent:
            raise typer.Exit(1)
        return
    typer.echo(f"{account.id}  {account.email}  plan={account.plan_id}")
    typer.echo(f"balance {account.credit_balance}  (ledger total {statement.ledger_total})")
    for entry in statement.entries:
        job = f"job={entry.job_id}" if entry.job_id else ""
        reason = entry.reason or ""
        typer.echo(
            f"  {entry.created_at.isoformat()}  {entry.kind:<7} {entry.amount:>+7}  "
            f"-> {entry.balance_after:<7} {job} {reason}".rstrip()
        )
    if not statement.consistent:
        fail("the balance does not match the ledger")


@accounts_app.command("credit")
def accounts_credit(
    email: str,
    amount: Annotated[int, typer.Argument(min=1)],
    reason: Annotated[str, typer.Option(help="Why, for the ledger")],
    as_json: JsonOption = False,
) -> None:
    """Grant credits (a ledger row with the reason)."""
    from core.accounts import service as accounts

    try:
        account = accounts.grant_credits(open_services().db, email, amount, reason)
    except accounts.AccountError as error:
        fail(str(error))
    print_account(account, as_json, f"{account.email}  credits={account.credit_balance}")


@accounts_app.command("set-plan")
def accounts_set_plan(email: str, plan: str, as_json: JsonOption = False) -> None:
    """Move an account to another plan."""
    from core.accounts import service as accounts

    try:
        services = open_services()
        account = accounts.set_plan(services.db, services.events, email, plan)
    except accounts.AccountError as error:
        fail(str(error))
    print_account(account, as_json, f"{account.email}  plan={account.plan_id}")


def read_new_password() -> str:
    """The new password from standard input: asked twice on a terminal, one line when piped."""
    if sys.stdin.isatty():
        first = typer.prompt("New password", hide_input=True)
        if first != typer.prompt("Repeat it", hide_input=True):
            fail("the two passwords differ")
        return str(first)
    return sys.stdin.readline().rstrip("\r\n")


@accounts_app.command("set-password")
def accounts_set_password(email: str, as_json: JsonOption = False) -> None:
    """Set the account's dashboard password (read from standard input; at least 10
    characters); every dashboard session of the account ends."""
    from core.accounts import passwords
    from core.accounts import service as accounts

    password = read_new_password()
    try:
        account = passwords.set_password(open_services().db, email, password)
    except accounts.AccountError as error:
        fail(str(error))
    print_account(account, as_json, f"{account.email}  password set")


@accounts_app.command("set-admin")
def accounts_set_admin(
    email: str,
    revoke: Annotated[bool, typer.Option("--revoke", help="Take the admin pages away")] = False,
    as_json: JsonOption = False,
) -> None:
    """Let the account use the dashboard's admin pages (accounts, plans, credits)."""
    from core.accounts import service as accounts

    try:
        account = accounts.set_admin(open_services().db, email, not revoke)
    except accounts.AccountError as error:
        fail(str(error))
    line = f"{account.email}  admin={'yes' if account.is_admin else 'no'}"
    print_account(account, as_json, line)
