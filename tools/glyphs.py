"""`python tools/glyphs.py`: rebuild the builtin painter's glyphs (pipelines/builtin/glyphs/).

Takes the Fluent Emoji Flat set (MIT, Microsoft) as Iconify JSON and emojilib's keywords (MIT) from
the npm registry (`npm pack`, pinned versions), keeps the glyphs a prompt can name as a subject
(no flags, symbols or skin-tone copies: the default tone of each stands for all), measures each
glyph's fill colours by area (what recolouring "a red bicycle" changes), and embeds each glyph's
description with the project's sentence model, so a word without an exact glyph is matched by
meaning at run time without embedding a thousand descriptions per process.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import cairosvg
import numpy as np
from PIL import Image

from pipelines.builtin.glyphs import COMPOSITES, DESCRIPTIONS_VERSION, DRAWN, FOLDER, describe
from pipelines.styles.embeddings import embed_texts

ICONS_PACKAGE = "@iconify-json/fluent-emoji-flat@1.2.6"
KEYWORDS_PACKAGE = "emojilib@4.0.3"
KEPT_CATEGORIES = (
    "Animals & Nature",
    "Food & Drink",
    "Travel & Places",
    "Objects",
    "Activities",
    "People & Body",
    "Smileys & Emotion",
)
SKIN_TONES = ("-medium-light", "-medium-dark", "-light", "-medium", "-dark")
# Body parts, hand signs and words about faces: never the subject of a picture here.
DROPPED = re.compile(
    r"(?:^|-)hands?(?:-|$)|handshake|finger|fist|thumbs|index-pointing|palm|salute|gesture|-face-with-|^face-|-button|"
    r"heart-(?:on|with)|sign-of|writing|selfie|speaking-head|footprints|^(?:ear|nose|tongue|"
    r"mouth|leg|foot|lungs|eye|eyes|tooth|bone|brain)$|-facing-right"
)
MEASURE_SIZE = 64


def _unpack(package: str, into: Path) -> Path:
    into.mkdir()
    subprocess.run(["npm", "pack", package, "--silent"], cwd=into, check=True, capture_output=True)
    (archive,) = into.glob("*.tgz")
    target = into / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    return target / "package"


def _fill_shares(body: str) -> list[list[Any]]:
    """Each flat fill colour of a glyph with the share of its drawn pixels it covers."""
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">{body}</svg>'
    png = cairosvg.svg2png(
        bytestring=svg.encode(), output_width=MEASURE_SIZE, output_height=MEASURE_SIZE
    )
    assert isinstance(png, bytes)
    rgba = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"), dtype=np.int32)
    opaque = rgba[..., 3] > 200
    drawn = max(1, int(opaque.sum()))
    shares = []
    for hex_colour in dict.fromkeys(re.findall(r'fill="(#[0-9a-fA-F]{6})"', body)):
        value = int(hex_colour[1:], 16)
        rgb = np.array([value >> 16, (value >> 8) & 255, value & 255])
        near = opaque & (np.abs(rgba[..., :3] - rgb).sum(axis=-1) <= 12)
        share = int(near.sum()) / drawn
        if share >= 0.005:
            shares.append([hex_colour.lower(), round(share, 3)])
    return sorted(shares, key=lambda pair: -pair[1])


def build() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        icons_dir = _unpack(ICONS_PACKAGE, Path(scratch) / "icons")
        keywords_dir = _unpack(KEYWORDS_PACKAGE, Path(scratch) / "keywords")
        icons = json.loads((icons_dir / "icons.json").read_text())
        categories = json.loads((icons_dir / "metadata.json").read_text())["categories"]
        chars = json.loads((icons_dir / "chars.json").read_text())
        keywords = json.loads((keywords_dir / "dist" / "emoji-en-US.json").read_text())
    char_of: dict[str, str] = {}
    for codepoints, name in chars.items():
        char_of.setdefault(name, "".join(chr(int(c, 16)) for c in codepoints.split("-")))
    glyphs = []
    for category in KEPT_CATEGORIES:
        for name in categories[category]:
            base = next((name[: -len(t)] for t in SKIN_TONES if name.endswith(t)), None)
            if (base and base in icons["icons"]) or DROPPED.search(name):
                continue
            if name not in icons["icons"]:
                continue
            char = char_of.get(name, "")
            words = keywords.get(char) or keywords.get(char.replace("\ufe0f", "")) or []
            kept = [w.replace("_", " ") for w in words[1:] if re.fullmatch(r"[a-z][a-z_ ]*", w)]
            body = icons["icons"][name]["body"]
            glyphs.append(
                {
                    "name": name,
                    "category": category,
                    "keywords": list(dict.fromkeys(kept)),
                    "body": body,
                    "fills": _fill_shares(body),
                }
            )
    FOLDER.mkdir(exist_ok=True)
    data = {
        "source": f"{ICONS_PACKAGE} (MIT, Microsoft) with keywords of {KEYWORDS_PACKAGE} (MIT)",
        "viewBox": 32,
        "glyphs": glyphs,
    }
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    (FOLDER / "fluent_emoji_flat.json.gz").write_bytes(gzip.compress(raw, 9, mtime=0))
    texts = [describe(g["name"], g["keywords"]) for g in glyphs]
    # The drawn glyphs and the composites after the set's, in the order the loader expects.
    texts += [describe(entry.name, entry.keywords) for entry in (*DRAWN, *COMPOSITES)]
    vectors = embed_texts(texts).astype(np.float16)
    np.save(FOLDER / f"embeddings-v{DESCRIPTIONS_VERSION}.npy", vectors, allow_pickle=False)
    print(f"{len(glyphs)} glyphs, {len(raw) / 1e6:.1f} MB of JSON before compression")


if __name__ == "__main__":
    build()
    sys.exit(0)
