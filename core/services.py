"""The shared services one process builds once from its settings."""

from __future__ import annotations

from dataclasses import dataclass

from core.accounts.service import sync_plans
from core.db import Database
from core.events import JobEvents, job_events_for
from core.images import DECODE_BUDGET
from core.service_config import ServiceConfig
from core.settings import Settings
from core.storage import Storage, storage_from_settings


@dataclass
class Services:
    settings: Settings
    db: Database
    storage: Storage
    events: JobEvents
    config: ServiceConfig

    def prepare(self) -> None:
        """Migrate the schema and write the configured plans: every process does it at start."""
        self.db.migrate()
        sync_plans(self.db, self.config)

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        settings.ensure_data_dir()
        DECODE_BUDGET.set_capacity(settings.decode_memory_mb * 1024 * 1024)
        db = Database(settings.resolved_database_url, settings.sqlite_synchronous)
        return cls(
            settings=settings,
            db=db,
            storage=storage_from_settings(settings),
            events=job_events_for(
                settings.broker_url, settings.namespace, db.sibling("-credentials")
            ),
            config=settings.service_config(),
        )
