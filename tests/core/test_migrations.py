"""Migrations at start: every process brings the schema to head, and one already there is only
read (Alembic, most of a second to import, is not loaded)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from core.db import MIGRATIONS_DIR, Database, head_revision

MIGRATE_AND_REPORT = """
import sys
from core.db import Database
Database(sys.argv[1]).migrate()
print("alembic" in sys.modules)
"""


def test_the_head_read_from_the_scripts_is_alembics() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def _migrate_in_a_new_process(url: str) -> bool:
    """Whether migrating there loaded Alembic."""
    done = subprocess.run(
        [sys.executable, "-c", MIGRATE_AND_REPORT, url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1] == "True"


def test_a_new_database_is_migrated_and_one_at_head_is_only_read(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sfumato.db'}"
    assert _migrate_in_a_new_process(url), "a new database needs Alembic"
    database = Database(url)
    try:
        assert database.revision() == head_revision()
        assert "jobs" in inspect(database.engine).get_table_names()
    finally:
        database.dispose()
    assert not _migrate_in_a_new_process(url), "a database at head loaded Alembic"
