"""Help in click's classic form: `Usage: sfumato generate [OPTIONS] PROMPT`, `--ratio TEXT`.

Typer's own help writes a required argument as `{prompt}` and every value as `<str>`, `<bool>`
or `<list[str]>` (typer/core.py `make_metavar`, typer/rich_utils.py), which reads like syntax
to type. The root group rewrites each command's parameters as click would show them when click
resolves the command, so every command, nested or not, gets the same help without a metavar
repeated at each parameter. Imports nothing of the service: `sfumato --help` stays fast.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

# Typer's type names -> the words click's help uses.
VALUE_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH"}


class PlainArgument(TyperArgument):
    def make_metavar(self, ctx: Any, *, usage: bool = False) -> str:
        name = (self.metavar or self.name or "").upper()
        if usage and not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


class PlainHelpGroup(TyperGroup):
    """A command group whose commands, and their groups' commands, show plain help."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            plain_help(command)
        return command


def plain_help(command: Any) -> None:
    command.rich_markup_mode = None
    if type(command) is TyperGroup:
        command.__class__ = PlainHelpGroup
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = PlainArgument
        elif isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = VALUE_WORDS.get(param.type.name, param.type.name.upper())
