"""`python -m sfumato`: the `sfumato` command."""

from sfumato.cli import main

main()
