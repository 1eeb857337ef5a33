"""Usage: balance, plan and its limits, the ledger, and daily spending over 30 days as an SVG
drawn on the server."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query, Response

from core.accounts import service as accounts
from core.credits import service as credits
from gateway.dashboard.web import DashboardRoute, PageDep

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
    entries, next_cursor = credits.ledger_page(db, account.id, cursor, PAGE_SIZE)
    days = credits.daily_spending(db, account.id)
    bars, top = spending_bars(days)
    return page.render(
        "usage.html",
        nav="usage",
        account=account,
        plan=plan,
        entries=entries,
        next_cursor=next_cursor,
        bars=bars,
        top=top,
        total=sum(spent for _, spent in days),
        chart_width=CHART_WIDTH,
        chart_height=CHART_HEIGHT,
    )
