"""SQL for accounts, plans and API keys."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Row, bindparam, delete, select, update
from sqlalchemy.orm import Session

from core.pagination import newest_first
from core.service_config import PlanConfig
from core.tables import Account, ApiKey, Invitation, Plan


def upsert_plan(session: Session, plan_id: str, config: PlanConfig) -> None:
    plan = session.get(Plan, plan_id) or Plan(id=plan_id)
    plan.tier = config.tier
    plan.allows_video = config.video
    plan.max_inflight_images = config.max_inflight_images
    plan.max_inflight_videos = config.max_inflight_videos
    plan.daily_generation_cap = config.daily_generation_cap or None
    session.add(plan)


def plan_ids(session: Session) -> list[str]:
    return list(session.scalars(select(Plan.id).order_by(Plan.id)))


def get_plan(session: Session, plan_id: str) -> Plan | None:
    return session.get(Plan, plan_id)


def add_account(session: Session, email: str, plan_id: str) -> Account:
    account = Account(email=email, plan_id=plan_id, credit_balance=0)
    session.add(account)
    session.flush()
    return account


def account_by_email(session: Session, email: str) -> Account | None:
    return session.scalars(select(Account).where(Account.email == email)).first()


def get_account(session: Session, account_id: str) -> Account | None:
    return session.get(Account, account_id)


LOCK_ACCOUNT = select(Account).where(Account.id == bindparam("account_id")).with_for_update()
# Built once: every create takes this lock, its plan read in the same statement (the plan row
# itself is not locked: plans change only as a deployment writes its configuration).
LOCK_ACCOUNT_WITH_PLAN = (
    select(Account, Plan)
    .outerjoin(Plan, Plan.id == Account.plan_id)
    .where(Account.id == bindparam("account_id"))
    .with_for_update(of=Account)
)


def lock_account(session: Session, account_id: str) -> Account:
    """The account row, locked until the transaction ends: what changes the account's jobs
    or credits serialises here, so it is decided against settled numbers."""
    return session.scalars(LOCK_ACCOUNT, {"account_id": account_id}).one()


def lock_account_with_plan(session: Session, account_id: str) -> tuple[Account, Plan | None]:
    """`lock_account`, and the account's plan (None when its plan does not exist): a create's
    first statement."""
    account, plan = session.execute(LOCK_ACCOUNT_WITH_PLAN, {"account_id": account_id}).one()
    return account, plan


def list_accounts(session: Session) -> Sequence[Account]:
    return session.scalars(select(Account).order_by(Account.created_at, Account.id)).all()


def accounts_page(
    session: Session, after: tuple[datetime, str] | None, limit: int
) -> Sequence[Account]:
    """Every account, newest first, keyset on (created_at, id)."""
    return newest_first(session, select(Account), Account, after, limit)


def add_key(
    session: Session,
    account_id: str,
    name: str,
    prefix: str,
    key_hash: str,
    expires_at: datetime | None,
) -> ApiKey:
    key = ApiKey(
        account_id=account_id, name=name, prefix=prefix, key_hash=key_hash, expires_at=expires_at
    )
    session.add(key)
    session.flush()
    return key


def keys_of(session: Session, account_id: str) -> Sequence[ApiKey]:
    """The keys the account holds (never the dashboard's own key)."""
    return session.scalars(
        select(ApiKey)
        .where(ApiKey.account_id == account_id, ApiKey.purpose == "api")
        .order_by(ApiKey.created_at)
    ).all()


def keys_page(
    session: Session, account_id: str, after: tuple[datetime, str] | None, limit: int
) -> Sequence[ApiKey]:
    """The account's keys (never the dashboard's own), newest first, keyset on (created_at, id)."""
    query = select(ApiKey).where(ApiKey.account_id == account_id, ApiKey.purpose == "api")
    return newest_first(session, query, ApiKey, after, limit)


def dashboard_key(session: Session, account_id: str) -> ApiKey | None:
    return session.scalars(
        select(ApiKey).where(ApiKey.account_id == account_id, ApiKey.purpose == "dashboard")
    ).first()


def add_dashboard_key(session: Session, account_id: str, key_hash: str) -> ApiKey:
    key = ApiKey(
        account_id=account_id,
        name="dashboard",
        prefix="",
        key_hash=key_hash,
        expires_at=None,
        purpose="dashboard",
    )
    session.add(key)
    session.flush()
    return key


def get_key(session: Session, key_id: str) -> ApiKey | None:
    return session.get(ApiKey, key_id)


# Built once: the per-request key lookup reuses the compiled statement and its result metadata.
CALLER_BY_KEY_HASH = (
    select(
        ApiKey.id.label("key_id"),
        ApiKey.state,
        ApiKey.expires_at,
        ApiKey.last_used_at,
        Account.id.label("account_id"),
        Account.email,
        Account.plan_id,
    )
    .join(Account, Account.id == ApiKey.account_id)
    .where(ApiKey.key_hash == bindparam("key_hash"), ApiKey.purpose == "api")
)


CallerRow = Row[str, str, datetime | None, datetime | None, str, str, str]


def caller_by_key_hash(connection: Connection, key_hash: str) -> CallerRow | None:
    """The key's state and its account, in one indexed read."""
    return connection.execute(CALLER_BY_KEY_HASH, {"key_hash": key_hash}).first()


def touch_key(session: Session, key_id: str, moment: datetime) -> None:
    session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=moment))


def add_invitation(session: Session, invitation: Invitation) -> Invitation:
    session.add(invitation)
    session.flush()
    return invitation


def live_invitation(
    session: Session, token_hash: str, moment: datetime, *, for_update: bool = False
) -> tuple[Invitation, Account] | None:
    query = (
        select(Invitation, Account)
        .join(Account, Account.id == Invitation.account_id)
        .where(Invitation.token_hash == token_hash, Invitation.expires_at > moment)
    )
    found = session.execute(query.with_for_update() if for_update else query).first()
    return None if found is None else (found[0], found[1])


def remove_invitations_of(session: Session, account_id: str) -> None:
    session.execute(delete(Invitation).where(Invitation.account_id == account_id))
