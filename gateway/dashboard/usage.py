"""Usage: balance, plan and its limits, the ledger (a line per job, named by its operation and
prompt, that opens to its movements), and daily spending over 30 days as an SVG drawn on the
server."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query, Response

from core.accounts import service as accounts
from core.credits import service as credits
from core.credits.service import LedgerLine
from gateway.dashboard.gallery import OPERATION_LABELS, prompt_of
from gateway.dashboard.web import PREFIX, DashboardRoute, PageDep

router = APIRouter(route_class=DashboardRoute)
CHART_WIDTH = 960
CHART_HEIGHT = 160
PAGE_SIZE = 50


@dataclass(frozen=True)
class Bar:
    day: date
    spent: int
    x: float
    y: float
    width: float
    height: float


# What a line says of a job by the movement that ended it.
JOB_STATES = {"reserve": "reserved", "settle": "charged", "refund": "refunded"}
MOVEMENT_LABELS = {
    "reserve": "Reserved",
    "settle": "Charged",
    "refund": "Refunded",
    "grant": "Granted",
}


@dataclass(frozen=True)
class LedgerRow:
    line: LedgerLine
    title: str
    detail: str
    job_url: str | None
    state: str


def ledger_row(line: LedgerLine) -> LedgerRow:
    """A job's line is named by its operation and prompt (a deleted job keeps its operation
    only) and links to the job; a grant by its reason."""
    job = line.job
    if job is None:
        return LedgerRow(line, "Credits granted", line.last.reason or "", None, "granted")
    title = OPERATION_LABELS.get(job.operation, job.operation)
    state = JOB_STATES.get(line.last.kind, line.last.kind)
    if job.deleted_at is not None:
        return LedgerRow(line, title, "deleted job", None, state)
    return LedgerRow(line, title, prompt_of(job.inputs), f"{PREFIX}/jobs/{job.id}", state)


def spending_bars(days: list[tuple[date, int]]) -> tuple[list[Bar], int]:
    """One bar a day, scaled to the busiest day; and that day's spending (the scale)."""
    top = max((spent for _, spent in days), default=0)
    slot = CHART_WIDTH / max(len(days), 1)
    bars = []
    for index, (day, spent) in enumerate(days):
        height = (max(spent, 0) / top) * (CHART_HEIGHT - 20) if top > 0 else 0
        bars.append(
            Bar(day, spent, index * slot + 1, CHART_HEIGHT - height, slot - 2, max(height, 0))
        )
    return bars, top


@router.get("/usage")
def usage_page(
    page: PageDep, cursor: Annotated[str | None, Query(max_length=512)] = None
) -> Response:
    db = page.services.db
    account = accounts.find_account(db, page.user.email)
    plan = accounts.plan_of(db, account.plan_id)
    lines, next_cursor = credits.ledger_page(db, account.id, cursor, PAGE_SIZE)
    days = credits.daily_spending(db, account.id)
    bars, top = spending_bars(days)
    return page.render(
        "usage.html",
        nav="usage",
        account=account,
        plan=plan,
        ledger=[ledger_row(line) for line in lines],
        movement_labels=MOVEMENT_LABELS,
        next_cursor=next_cursor,
        bars=bars,
        top=top,
        total=sum(spent for _, spent in days),
        chart_width=CHART_WIDTH,
        chart_height=CHART_HEIGHT,
    )
