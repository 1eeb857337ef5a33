"""Seeded randomness: every random choice of a picture comes from the job's seed through these."""

from __future__ import annotations

import hashlib
import zlib

import numpy as np


def stable_int(*parts: object) -> int:
    """A 64-bit hash that, unlike `hash()`, is the same in every process."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rng_for(root: int, part: str) -> np.random.Generator:
    # One stream per part of the layout, so detail settings never shift what another part draws.
    return np.random.default_rng([root, zlib.crc32(part.encode())])
