"""The load of the `chaos` soak, in a process of its own: `python -m benchmarks.chaos.load PLAN`.

PLAN is a JSON file: the gateways' base URLs, the accounts' keys, the minutes to run, the fixture
site's URL, the long-poll bound and where to write the history. Simulated users pick an operation
at random (generates, some with an `Idempotency-Key` and a deliberate retry, edits, uploads,
videos, style extractions, cancels, long-polls, list reads) and send it to a random gateway
among those that are ready; a request whose gateway is gone (a refused or dropped connection) goes
again through the other one when that is safe (a read, or a create with its Idempotency-Key).
Every request and what came of it is one line of the history (JSON), which
`benchmarks/chaos/invariants.py` checks afterwards.

Ready: `/readyz` answered 200 at its last check (every half second), as a load balancer that
routes by readiness sees it. A gateway that has just (re)started is not ready until its sentence
model has loaded, and it is slow until then: the model loads in a thread of the gateway's process
whose imports hold the interpreter lock for long stretches, so on a busy machine the event loop
stalls for seconds (issue 19: the late long-polls of the first runs were held on gateways loading
it). The load does not measure that start-up any more; it is not gone from the service: the
Kubernetes manifests route by `/healthz` (docs/operations.md). When no gateway is ready (a
PostgreSQL cut or a Redis restart makes both say so), any gateway is used, as a load balancer
that fails open would.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from benchmarks.testkit.images import image_bytes

USERS_PER_ACCOUNT = 2
# Operation -> weight.
MIX = {
    "generate": 34,
    "edit": 6,
    "upload": 6,
    "video": 3,
    "extract": 2,
    "cancel": 7,
    "long_poll": 14,
    "list": 8,
    "read": 20,
}
TERMINAL = ("completed", "failed")
READINESS_CHECK_SECONDS = 0.5


@dataclass
class Account:
    key: str
    accepted: list[str] = field(default_factory=list)
    completed_images: list[str] = field(default_factory=list)


class History:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = time.monotonic()

    def record(self, **event: Any) -> None:
        event["t"] = round(time.monotonic() - self.started, 3)
        self.out.write(json.dumps(event) + "\n")


class Load:
    def __init__(self, plan: dict[str, Any], history: History) -> None:
        self.gateways: list[str] = plan["gateways"]
        self.accounts = [Account(key) for key in plan["keys"]]
        self.site: str = plan["site"]
        self.wait_bound: float = plan["wait_seconds"]
        self.history = history
        self.client = httpx.AsyncClient(timeout=self.wait_bound + 30, limits=httpx.Limits())
        self.ready: set[str] = set()

    def _gateways_in_order(self) -> list[str]:
        """The ready gateways in a random order, then the others (tried when none answers)."""
        ready = [base for base in self.gateways if base in self.ready]
        others = [base for base in self.gateways if base not in self.ready]
        return random.sample(ready, len(ready)) + random.sample(others, len(others))

    async def check_readiness(self, until: float) -> None:
        async with httpx.AsyncClient(timeout=READINESS_CHECK_SECONDS * 4) as probe:
            while time.monotonic() < until:
                for base in self.gateways:
                    try:
                        answer = await probe.get(base.removesuffix("/v1") + "/readyz")
                        ready = answer.status_code == 200
                    except httpx.HTTPError:
                        ready = False
                    if ready:
                        self.ready.add(base)
                    else:
                        self.ready.discard(base)
                await asyncio.sleep(READINESS_CHECK_SECONDS)

    async def call(
        self,
        kind: str,
        account: Account,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        retry_safe: bool = True,
    ) -> httpx.Response | None:
        """The answer, from whichever gateway gave one; None when none did. Gateway outages
        (a connection refused or dropped, a 503) are retried through the other gateway a few
        times when that is safe."""
        headers = {"x-api-key": account.key}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        gateways = self._gateways_in_order()
        for attempt in range(6):
            base = gateways[attempt % len(gateways)]
            started = time.monotonic()
            try:
                answer = await self.client.request(method, base + path, json=body, headers=headers)
            except httpx.TimeoutException:
                self.history.record(
                    kind=kind, outcome="client-timeout", took=time.monotonic() - started, path=path
                )
                return None
            except httpx.TransportError as error:
                self.history.record(
                    kind=kind, outcome="connection-error", error=type(error).__name__
                )
                if not retry_safe:
                    return None
                await asyncio.sleep(0.5)
                continue
            took = time.monotonic() - started
            code = _error_code(answer)
            self.history.record(
                kind=kind,
                outcome=f"{answer.status_code}" + (f" {code}" if code else ""),
                took=round(took, 3),
                path=path,
                gateway=base.rsplit(":", 1)[-1],
                idem=idempotency_key,
                account=account.key[-8:],
                **_job_fields(answer),
            )
            if answer.status_code == 503 and retry_safe:
                await asyncio.sleep(1.0)
                continue
            return answer
        return None

    async def create(self, kind: str, account: Account, path: str, body: dict[str, Any]) -> None:
        keyed = random.random() < 0.4
        idempotency_key = f"chaos-{uuid.uuid4()}" if keyed else None
        answer = await self.call(
            kind, account, "POST", path, body, idempotency_key, retry_safe=keyed
        )
        if answer is None or answer.status_code != 202:
            return
        job_id = answer.json()["data"]["id"]
        account.accepted.append(job_id)
        if keyed and random.random() < 0.5:
            # A deliberate retry: it must name the same job.
            await self.call(kind, account, "POST", path, body, idempotency_key)

    async def generate(self, account: Account) -> None:
        roll = random.random()
        if roll < 0.06:
            prompt = "[fail] a job that fails"
        else:
            prompt = f"[sleep {random.uniform(0.2, 2.5):.1f}] chaos {uuid.uuid4().hex[:6]}"
        body: dict[str, Any] = {"prompt": prompt, "quality": "low", "aspectRatio": "1:1"}
        if random.random() < 0.2:
            body["variations"] = 2
        await self.create("generate", account, "/images/generate", body)

    async def edit(self, account: Account) -> None:
        if not account.completed_images:
            return await self.generate(account)
        body = {"imageId": random.choice(account.completed_images), "prompt": "warmer light"}
        await self.create("edit", account, "/images/edit", body)

    async def video(self, account: Account) -> None:
        if not account.completed_images:
            return await self.generate(account)
        body = {
            "image": random.choice(account.completed_images),
            "prompt": "[sleep 0.5] a slow pan",
            "duration": 1,
            "resolution": "480p",
            "audio": False,
        }
        await self.create("video", account, "/videos/image-to-video", body)

    async def extract(self, account: Account) -> None:
        site = random.choice(["utility", "northwind", "inline"])
        await self.create("extract", account, "/styles/extract", {"url": f"{self.site}/{site}/"})

    async def upload(self, account: Account) -> None:
        body = {"filename": "chaos.png", "contentType": "image/png"}
        presigned = await self.call("upload", account, "POST", "/uploads", body)
        if presigned is None or presigned.status_code != 200:
            return
        data = presigned.json()["data"]
        colour = tuple(random.randrange(256) for _ in range(3))
        try:
            put = await self.client.put(
                data["uploadUrl"],
                content=image_bytes(colour),  # type: ignore[arg-type]
                headers={"Content-Type": "image/png"},
            )
            self.history.record(kind="upload-put", outcome=str(put.status_code))
        except httpx.TransportError as error:
            self.history.record(kind="upload-put", outcome="connection-error", error=str(error))
            return
        if put.status_code != 200:
            return
        completed = await self.call(
            "upload-complete", account, "POST", f"/uploads/{data['uploadId']}/complete"
        )
        if completed is not None and completed.status_code == 200 and random.random() < 0.5:
            reference: dict[str, Any] = {
                "prompt": "[echo-reference] from an upload",
                "quality": "low",
                "references": [completed.json()["data"]["id"]],
            }
            await self.create("generate", account, "/images/generate", reference)

    async def cancel(self, account: Account) -> None:
        if account.accepted:
            job_id = random.choice(account.accepted[-10:])
            await self.call("cancel", account, "POST", f"/jobs/{job_id}/cancel")

    async def long_poll(self, account: Account) -> None:
        if not account.accepted:
            return
        job_id = random.choice(account.accepted[-15:])
        answer = await self.call("long_poll", account, "GET", f"/jobs/{job_id}?wait=true")
        self._note_terminal(account, answer)

    async def read(self, account: Account) -> None:
        if account.accepted:
            job_id = random.choice(account.accepted)
            self._note_terminal(account, await self.call("read", account, "GET", f"/jobs/{job_id}"))

    async def list_jobs(self, account: Account) -> None:
        await self.call("list", account, "GET", "/jobs?limit=20")

    def _note_terminal(self, account: Account, answer: httpx.Response | None) -> None:
        if answer is None or answer.status_code != 200:
            return
        job = answer.json()["data"]
        new_image = job["id"] not in account.completed_images
        if job["status"] == "completed" and job["type"] == "image.generate" and new_image:
            account.completed_images.append(job["id"])

    async def user(self, account: Account, until: float) -> None:
        operations = {
            "generate": self.generate,
            "edit": self.edit,
            "upload": self.upload,
            "video": self.video,
            "extract": self.extract,
            "cancel": self.cancel,
            "long_poll": self.long_poll,
            "list": self.list_jobs,
            "read": self.read,
        }
        names, weights = list(MIX), list(MIX.values())
        while time.monotonic() < until:
            name = random.choices(names, weights)[0]
            try:
                await operations[name](account)
            except Exception as error:  # a bug of the load itself: recorded, never silent
                self.history.record(kind=name, outcome="load-error", error=repr(error))
            await asyncio.sleep(random.uniform(0.05, 0.4))

    async def run(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(
            self.check_readiness(until),
            *(
                self.user(account, until)
                for account in self.accounts
                for _ in range(USERS_PER_ACCOUNT)
            ),
        )
        await self.client.aclose()


def _error_code(answer: httpx.Response) -> str | None:
    if answer.status_code < 400:
        return None
    try:
        return str(answer.json()["error"].get("code"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return "not-an-envelope"


def _job_fields(answer: httpx.Response) -> dict[str, Any]:
    """The job a 2xx answer carries: its id and status, and for a terminal one its outcome.
    A create's answer (id, type, status, createdAt: no result, no error) is no view of the
    outcome, even when it replays the create of a job that has since finished."""
    if answer.status_code >= 300:
        return {}
    try:
        data = answer.json()["data"]
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(data, dict) or "status" not in data or "type" not in data:
        return {}
    if "progress" not in data:  # a create's answer
        return {"job": data["id"], "created_as": data["status"]}
    fields: dict[str, Any] = {"job": data["id"], "status": data["status"]}
    if data["status"] in TERMINAL:
        fields["result"] = _fingerprint(data.get("result"))
        fields["error"] = data.get("error")
    return fields


def _fingerprint(result: dict[str, Any] | None) -> Any:
    """A result without its signed URLs (they carry an expiry, different on every read)."""
    if result is None:
        return None
    if "images" in result:
        return sorted(image["id"] for image in result["images"])
    if "video" in result:
        return result["video"]["id"]
    return result.get("style", {}).get("id")


def main(plan_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    with Path(plan["history"]).open("w", buffering=1) as out:
        asyncio.run(Load(plan, History(out)).run(plan["seconds"]))


if __name__ == "__main__":
    main(sys.argv[1])
