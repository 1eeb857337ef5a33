"""Tone of voice: the site's copy compared with a lexicon of descriptors in MiniLM space."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pipelines.styles.embeddings import embed_texts

# Each descriptor is embedded through a short gloss: a bare adjective embeds poorly.
TONE_LEXICON = {
    "friendly": "warm, friendly and approachable, chatting like a helpful neighbour",
    "professional": "professional, trustworthy and businesslike services for companies",
    "playful": "playful, fun and cheeky, full of jokes and games",
    "luxurious": "luxurious, exclusive and elegant, premium craftsmanship and fine materials",
    "minimal": "minimal, calm, simple and understated",
    "bold": "bold, confident and loud, making big claims",
    "technical": "technical and precise, for developers and engineers, APIs and performance",
    "innovative": "innovative, cutting-edge, forward-looking technology",
    "authoritative": "authoritative, expert and serious, research and evidence",
    "caring": "caring, empathetic and supportive, health and wellbeing",
    "adventurous": "adventurous, outdoors, exploring mountains and travel",
    "sustainable": "sustainable, eco-friendly, natural and ethical, good for the planet",
    "artisanal": "artisanal, handcrafted, small-batch and traditional recipes",
    "youthful": "youthful, trendy and vibrant, for young people",
    "inspirational": "inspirational and motivational, empowering people to achieve their dreams",
    "educational": "educational and informative, teaching, learning and explaining",
    "reassuring": "reassuring, secure and reliable, safe and protected",
    "welcoming": "community-driven, inclusive and welcoming, bringing people together",
    "sophisticated": "sophisticated, refined and cultured, art and design",
    "energetic": "energetic, dynamic and fast, sport and action",
}
MIN_TONES = 3
MAX_TONES = 6
# Descriptors this close to the best match describe the copy about as well as it does.
TONE_MARGIN = 0.06
MAX_COPY_CHARS = 4000


@lru_cache(maxsize=1)
def _lexicon() -> tuple[list[str], np.ndarray]:
    return list(TONE_LEXICON), embed_texts(list(TONE_LEXICON.values()))


def detect_tone(copy: list[str]) -> list[str]:
    """3-6 descriptors for the copy (its passages embedded and averaged); none without copy."""
    passages = [text for text in copy if text.strip()]
    kept: list[str] = []
    total = 0
    for passage in passages:
        if total >= MAX_COPY_CHARS:
            break
        kept.append(passage[:500])
        total += len(kept[-1])
    if not kept:
        return []
    centroid = embed_texts(kept).mean(axis=0)
    centroid /= np.linalg.norm(centroid) or 1.0
    names, vectors = _lexicon()
    scores = vectors @ centroid
    order = np.argsort(-scores)
    best = float(scores[order[0]])
    chosen = [names[i] for i in order[:MAX_TONES] if float(scores[i]) >= best - TONE_MARGIN]
    if len(chosen) < MIN_TONES:
        chosen = [names[i] for i in order[:MIN_TONES]]
    return chosen
