"""`dashboard`: the server-side render time of the jobs gallery with 50 completed jobs on the
page, through the whole gateway application (session lookup, the page of jobs, the thumbnails'
lookup, URL signing, the template)."""

from __future__ import annotations

import io
import statistics
import time
from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from PIL import Image

from benchmarks.harness import Options
from benchmarks.report import Section, Table, ms, verdict
from core.accounts import service as accounts
from core.ids import new_id
from core.services import Services
from core.sessions import service as sessions
from core.settings import Settings
from core.tables import JobRow, Media
from core.thumbnails import service as thumbnails
from gateway.app import create_app
from sfumato.processes import build_gateway

JOBS = 50
IMAGES_PER_JOB = 2
GOAL_SECONDS = 0.050
METHOD = f"""
`GET /dashboard/jobs?limit={JOBS}` for a signed-in account with {JOBS} completed image jobs of
{IMAGES_PER_JOB} images each (their thumbnails already made, as after a first view), answered by
the gateway application in this process (embedded mode, SQLite) through Starlette's test client,
one request at a time after a warm-up, alternating with the account page (the same session,
layout and application, no list) as the yardstick of the machine's speed. The time is the
request's wall time as the client sees it, so it includes the session lookup, the page query,
the thumbnails' lookup, URL signing and the template. Goal: the median under
{GOAL_SECONDS * 1000:.0f} ms.
"""


def _png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (1024, 1024), (shade, 90, 160)).save(buffer, "PNG")
    return buffer.getvalue()


def _seed(services: Services, account_id: str) -> None:
    pixels = _png(120)
    for index in range(JOBS):
        job_id = new_id()
        images = []
        media_rows = []
        for _ in range(IMAGES_PER_JOB):
            media_id = new_id()
            key = f"images/{job_id}/{media_id}.png"
            services.storage.put_bytes(key, pixels, "image/png")
            images.append({"id": media_id, "key": key, "width": 1024, "height": 1024})
            media_rows.append(
                Media(
                    id=media_id,
                    account_id=account_id,
                    job_id=job_id,
                    kind="image",
                    storage_key=key,
                    content_type="image/png",
                    width=1024,
                    height=1024,
                    size_bytes=len(pixels),
                )
            )
        with services.db.write() as session:
            session.add(
                JobRow(
                    id=job_id,
                    account_id=account_id,
                    type="image.generate",
                    operation="generate",
                    queue="image",
                    status="completed",
                    inputs={"prompt": f"benchmark image number {index}, a calm sea"},
                    result={"images": images},
                    credits_reserved=4,
                    progress=1.0,
                )
            )
            session.flush()
            session.add_all(media_rows)
        for image in images:
            thumbnails.thumbnail_of(services, account_id, str(image["id"]))


def run(options: Options) -> Section:
    data_dir: Path = options.work_dir / "dashboard"
    data_dir.mkdir()
    settings = Settings(data_dir=data_dir)
    services = Services.from_settings(settings)
    services.prepare()
    gateway = build_gateway(services, run_workers=False)
    account = accounts.create_account(services.db, "bench@sfumato.local", "pro", 0)
    _seed(services, account.id)
    started = sessions.start(
        services.db, account.id, timedelta(hours=settings.session_absolute_hours)
    )
    requests = options.scaled(200, 30)
    section = Section("dashboard", METHOD)
    table = Table(["page", "requests", "p50", "p95", "max", "goal (p50)"])
    with TestClient(create_app(gateway)) as client:
        client.cookies.set("sfumato_session", started.token)
        gallery = f"/dashboard/jobs?limit={JOBS}"
        # The yardstick: the account page, the same session, layout and app, but no list.
        yardstick = "/dashboard/account"
        for _ in range(10):
            assert client.get(gallery).status_code == client.get(yardstick).status_code == 200
        times: dict[str, list[float]] = {gallery: [], yardstick: []}
        size = 0
        for _ in range(requests):
            for path, measured in times.items():
                begun = time.perf_counter()
                response = client.get(path)
                measured.append(time.perf_counter() - begun)
                assert response.status_code == 200
                if path == gallery:
                    assert response.text.count('class="job-card') == JOBS
                    # Every thumbnail signed directly; no grid cell asks for its original.
                    assert "/dashboard/media/" not in response.text
                    size = len(response.content)
    medians = {path: statistics.median(measured) for path, measured in times.items()}
    for path, label in ((gallery, f"jobs gallery, {JOBS} jobs"), (yardstick, "account page")):
        measured = sorted(times[path])
        table.add(
            label,
            requests,
            ms(medians[path]),
            ms(measured[int(len(measured) * 0.95) - 1]),
            ms(measured[-1]),
            verdict(medians[path] < GOAL_SECONDS) if path == gallery else "(yardstick)",
        )
    section.tables.append(table)
    section.findings.append(
        f"Gallery median {ms(medians[gallery])} against the {GOAL_SECONDS * 1000:.0f} ms goal, "
        f"{medians[gallery] / medians[yardstick]:.1f}x the account page in the same run; the "
        f"page is {size // 1024} KiB of HTML."
    )
    services.db.dispose()
    return section
