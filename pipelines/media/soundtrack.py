"""Soundtracks synthesised for a video prompt: pads, pulses, noise textures and a transition rise.

The prompt's words pick a mood (tempo, major or minor, how much rhythm, how bright) and textures
(rain, waves, wind, fire, city hum). Everything is additive synthesis and noise shaped in the
frequency domain, so a 15 s stereo track takes a fraction of a second with NumPy alone. The mix
goes through a short synthetic reverb, is normalised to -16 LUFS (ITU-R BS.1770 integrated
loudness, K-weighted and gated), softly limited, and faded at both ends so it starts and stops
without a click.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipelines.media.mp4 import AUDIO_RATE

Float = NDArray[np.floating[Any]]

TARGET_LUFS = -16.0
PEAK_LIMIT = 0.89  # about -1 dBFS: room for the AAC encoder's overshoot
FADE_IN_SECONDS = 0.25
FADE_OUT_SECONDS = 1.0

CALM_WORDS = {
    "calm", "peaceful", "serene", "gentle", "gently", "slow", "slowly", "dreamy", "soft",
    "quiet", "tranquil", "relaxing", "misty", "foggy", "drift", "drifting", "float",
    "floating", "lake", "meadow", "still", "sleepy", "lullaby",
}  # fmt: skip
ENERGETIC_WORDS = {
    "fast", "energetic", "action", "epic", "intense", "chase", "race", "racing", "speed",
    "rapid", "dynamic", "exciting", "powerful", "thunder", "explosion", "neon", "cyberpunk",
    "dance", "party", "battle", "storm", "stormy", "dramatic",
}  # fmt: skip
DARK_WORDS = {
    "dark", "night", "mysterious", "eerie", "ominous", "moody", "noir", "haunted", "shadow",
    "shadows", "gloomy", "sad", "melancholy", "melancholic", "lonely", "rain", "cold",
    "winter", "storm", "stormy", "midnight", "dusk", "fog", "foggy",
}  # fmt: skip
BRIGHT_WORDS = {
    "happy", "bright", "sunny", "joyful", "cheerful", "summer", "warm", "golden", "sunrise",
    "morning", "spring", "playful", "hopeful", "blossom", "blossoms", "sakura", "dawn",
    "sunlight", "sunshine", "festive",
}  # fmt: skip
TEXTURE_WORDS: dict[str, set[str]] = {
    "rain": {"rain", "rainy", "raining", "drizzle", "downpour", "storm", "stormy"},
    "waves": {"ocean", "sea", "waves", "beach", "shore", "surf", "coast", "coastal", "tide"},
    "wind": {"wind", "windy", "snow", "snowy", "blizzard", "mountain", "mountains", "desert",
             "dunes", "winter", "clouds", "sky", "canyon", "cliff"},
    "fire": {"fire", "campfire", "fireplace", "embers", "candle", "candles", "bonfire"},
    "stream": {"river", "stream", "waterfall", "creek", "brook", "fountain"},
    "hum": {"city", "traffic", "street", "urban", "neon", "cyberpunk", "station", "subway"},
}  # fmt: skip
MAX_TEXTURES = 2

# Chord roots (semitones above the key) and qualities of a four-chord loop.
MAJOR_LOOP = ((0, "major"), (7, "major"), (9, "minor"), (5, "major"))  # I V vi IV
MINOR_LOOP = ((0, "minor"), (8, "major"), (3, "major"), (10, "major"))  # i VI III VII
CHORD_SHAPES = {"major": (0, 4, 7, 12), "minor": (0, 3, 7, 12)}
KEYS_HZ = (98.0, 110.0, 116.54, 123.47, 130.81, 146.83)  # G2 to D3: warm pad registers


@dataclass(frozen=True)
class Mood:
    tempo: float  # beats per minute
    minor: bool
    pulse: float  # 0 pads only, 1 a driving beat
    brightness: float  # 0 dark and soft, 1 bright
    key_hz: float
    textures: tuple[str, ...]

    def describe(self) -> str:
        textures = ", ".join(self.textures) or "no texture"
        feel = "minor" if self.minor else "major"
        return (
            f"soundtrack: {feel} pads at {self.tempo:.0f} bpm, pulse {self.pulse:.1f}, {textures}"
        )


def read_mood(prompt: str, seed: int) -> Mood:
    words = re.findall(r"[a-z]+", prompt.lower())
    vocabulary = set(words)
    calm = len(vocabulary & CALM_WORDS)
    energetic = len(vocabulary & ENERGETIC_WORDS)
    dark = len(vocabulary & DARK_WORDS)
    bright = len(vocabulary & BRIGHT_WORDS)
    rng = np.random.default_rng([seed, 17])
    if energetic > calm:
        tempo, pulse = 112.0 + 12.0 * rng.random(), 0.85
    elif calm > energetic:
        tempo, pulse = 60.0 + 10.0 * rng.random(), 0.15
    else:
        tempo, pulse = 78.0 + 12.0 * rng.random(), 0.4
    minor = dark > bright
    found = [name for name, triggers in TEXTURE_WORDS.items() if vocabulary & triggers]
    return Mood(
        tempo=tempo,
        minor=minor,
        pulse=pulse,
        brightness=0.3 if minor else 0.6 if bright else 0.45,
        key_hz=KEYS_HZ[int(rng.integers(len(KEYS_HZ)))],
        textures=tuple(found[:MAX_TEXTURES]),
    )


def _raised_cosine(length: int) -> Float:
    return 0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, length, dtype=np.float64))


def _pads(mood: Mood, times: Float, rng: np.random.Generator) -> Float:
    """The chord loop, two bars a chord, each note a few soft harmonics detuned left and right."""
    count = times.size
    chord_seconds = 8 * 60.0 / mood.tempo
    crossfade = min(1.2, chord_seconds / 3)
    loop = MINOR_LOOP if mood.minor else MAJOR_LOOP
    out = np.zeros((2, count))
    # The upper harmonics swell and fade slowly, like a filter opening and closing.
    sweep = 0.5 + 0.5 * np.sin(2 * math.pi * times / (chord_seconds * 2.0) + rng.uniform(0, 6))
    rolloff = 2.4 - 1.0 * mood.brightness - 0.5 * sweep
    for chord_index in range(math.ceil(times[-1] / chord_seconds) + 1):
        start = chord_index * chord_seconds - crossfade
        end = (chord_index + 1) * chord_seconds + crossfade
        first, last = max(0, int(start * AUDIO_RATE)), min(count, int(end * AUDIO_RATE) + 1)
        if first >= last:
            continue
        t = times[first:last]
        envelope = np.clip(np.minimum(t - start, end - t) / crossfade, 0.0, 1.0)
        envelope = 0.5 - 0.5 * np.cos(math.pi * envelope)
        offset, quality = loop[chord_index % len(loop)]
        root = mood.key_hz * 2 ** (offset / 12)
        if offset > 6:  # keep the chords in one register
            root /= 2
        for interval in CHORD_SHAPES[quality]:
            frequency = root * 2 ** (interval / 12)
            for harmonic in range(1, 7):
                amplitude = harmonic ** -rolloff[first:last] / 4.0
                for channel, cents in enumerate((-5.0, 5.0)):
                    detuned = frequency * harmonic * 2 ** (cents / 1200)
                    phase = rng.uniform(0, 2 * math.pi)
                    wave = np.sin(2 * math.pi * detuned * t + phase)
                    out[channel, first:last] += wave * amplitude * envelope
    return out


def _pulses(mood: Mood, times: Float, rng: np.random.Generator) -> Float:
    """An arpeggio of plucked chord tones on the beat; a soft kick and ticks when driving."""
    count = times.size
    out = np.zeros((2, count))
    beat = 60.0 / mood.tempo
    step = beat / 2 if mood.pulse > 0.6 else beat
    loop = MINOR_LOOP if mood.minor else MAJOR_LOOP
    chord_seconds = 8 * beat
    pluck_length = int(min(1.2, 4 * step) * AUDIO_RATE)
    local = np.arange(pluck_length) / AUDIO_RATE
    for index in range(int(times[-1] / step) + 1):
        start = int(index * step * AUDIO_RATE)
        stop = min(count, start + pluck_length)
        if start >= count:
            break
        span = local[: stop - start]
        offset, quality = loop[int(index * step / chord_seconds) % len(loop)]
        shape = CHORD_SHAPES[quality]
        root = mood.key_hz * 2 ** (offset / 12) * (2.0 if offset <= 6 else 1.0)
        frequency = root * 2 ** (shape[index % len(shape)] / 12)
        pluck = np.sin(2 * math.pi * frequency * span) * np.exp(-span / 0.22)
        pluck *= 1.0 - np.exp(-span / 0.004)  # a 4 ms attack: no click
        pan = 0.5 + 0.35 * math.sin(index * 0.9)
        out[0, start:stop] += pluck * (1.0 - pan) * 0.5
        out[1, start:stop] += pluck * pan * 0.5
        if mood.pulse > 0.6 and index % 2 == 0:
            kick_phase = 2 * math.pi * (50.0 * span + 70.0 * 0.04 * (1 - np.exp(-span / 0.04)))
            kick = np.sin(kick_phase) * np.exp(-span / 0.18) * (1.0 - np.exp(-span / 0.002))
            out[:, start:stop] += kick * 0.7
        if mood.pulse > 0.6 and index % 2 == 1:
            tick = np.diff(rng.normal(0, 1, stop - start + 1)) * np.exp(-span / 0.025) * 0.12
            out[:, start:stop] += tick
    return out


def shaped_noise(
    count: int, rng: np.random.Generator, low_hz: float, high_hz: float, tilt: float = 0.0
) -> Float:
    """Stereo noise (decorrelated channels) band-limited with soft edges, normalised to RMS 1."""
    frequencies = np.fft.rfftfreq(count, 1.0 / AUDIO_RATE)
    safe = np.maximum(frequencies, 1.0)
    band = 1.0 / (1.0 + (low_hz / safe) ** 4) / (1.0 + (safe / high_hz) ** 4)
    gain = band * safe ** (-tilt / 2)
    out = np.empty((2, count))
    for channel in range(2):
        spectrum = np.fft.rfft(rng.normal(0.0, 1.0, count)) * gain
        shaped = np.fft.irfft(spectrum, count)
        out[channel] = shaped / (np.sqrt(np.mean(shaped**2)) + 1e-12)
    return out


def _slow_random(times: Float, rng: np.random.Generator, period: float) -> Float:
    """A smooth random curve in [0, 1] that changes over about `period` seconds."""
    knots = np.arange(0.0, times[-1] + 2 * period, period)
    values = rng.random(knots.size)
    curve = np.interp(times, knots, values)
    return 0.5 - 0.5 * np.cos(math.pi * curve)


def _texture(name: str, times: Float, rng: np.random.Generator) -> Float:
    count = times.size
    match name:
        case "rain":
            hiss = shaped_noise(count, rng, 1500.0, 9000.0, tilt=0.5)
            return hiss * (0.8 + 0.2 * _slow_random(times, rng, 3.0))
        case "waves":
            surf = shaped_noise(count, rng, 120.0, 2500.0, tilt=1.0)
            period = 6.0 + 2.0 * rng.random()
            swell = (0.5 + 0.5 * np.sin(2 * math.pi * times / period + rng.uniform(0, 6))) ** 2
            return surf * (0.15 + 0.85 * swell)
        case "wind":
            low = shaped_noise(count, rng, 150.0, 700.0, tilt=1.0)
            high = shaped_noise(count, rng, 500.0, 2200.0, tilt=1.0)
            gust = _slow_random(times, rng, 2.5)
            return (low * (1.0 - gust) + high * gust) * (0.5 + 0.5 * _slow_random(times, rng, 4.0))
        case "fire":
            rumble = shaped_noise(count, rng, 60.0, 400.0, tilt=1.0) * 0.5
            crackles = np.zeros((2, count))
            pops = rng.random(count) < 14.0 / AUDIO_RATE
            crackles[:, pops] = rng.normal(0, 4.0, (2, int(pops.sum())))
            frequencies = np.fft.rfftfreq(count, 1.0 / AUDIO_RATE)
            high = 1.0 / (1.0 + (900.0 / np.maximum(frequencies, 1.0)) ** 2)
            crackles = np.fft.irfft(np.fft.rfft(crackles, axis=1) * high, count, axis=1)
            return rumble + crackles
        case "stream":
            babble = shaped_noise(count, rng, 300.0, 5000.0, tilt=0.8)
            return babble * (0.7 + 0.3 * _slow_random(times, rng, 0.15))
        case "hum":
            hum = shaped_noise(count, rng, 40.0, 220.0, tilt=1.0)
            return hum + 0.3 * shaped_noise(count, rng, 300.0, 3000.0, tilt=1.0)
    raise ValueError(f"unknown texture {name!r}")


def _rise(mood: Mood, times: Float, at_seconds: float, rng: np.random.Generator) -> Float:
    """A swell of noise and a rising tone that peak at `at_seconds`, then a soft low hit."""
    length = min(2.5, max(0.5, at_seconds))
    before = np.clip((times - (at_seconds - length)) / length, 0.0, 1.0)
    after = np.exp(-np.maximum(times - at_seconds, 0.0) / 0.35)
    envelope = np.where(times < at_seconds, before**3, after)
    noise = shaped_noise(times.size, rng, 600.0, 9000.0, tilt=0.5) * envelope * 0.5
    glide = mood.key_hz * 2.0 * 2 ** (2.0 * before)  # up two octaves into the peak
    phase = 2 * math.pi * np.cumsum(glide) / AUDIO_RATE
    tone = np.sin(phase) * envelope * 0.35
    since = np.maximum(times - at_seconds, 0.0)
    hit = np.sin(2 * math.pi * 55.0 * since) * np.exp(-since / 0.8) * (times >= at_seconds)
    hit *= 1.0 - np.exp(-since / 0.005)
    return noise + tone + hit * 0.8


def _reverb(
    signal: Float, rng: np.random.Generator, seconds: float = 1.4, wet: float = 0.3
) -> Float:
    """Convolution with decaying noise, decorrelated per channel: a sense of space."""
    length = int(seconds * AUDIO_RATE)
    decay = np.exp(-np.arange(length) / (0.35 * AUDIO_RATE))
    count = signal.shape[1]
    size = 1 << math.ceil(math.log2(count + length))
    out = np.empty_like(signal)
    for channel in range(2):
        response = rng.normal(0.0, 1.0, length) * decay
        response /= np.sqrt(np.sum(response**2))
        tail = np.fft.irfft(np.fft.rfft(signal[channel], size) * np.fft.rfft(response, size), size)
        out[channel] = signal[channel] * (1.0 - wet) + tail[:count] * wet * 2.0
    return out


# ITU-R BS.1770 K-weighting at 48 kHz: a high shelf, then a high pass (numerator, denominator).
K_WEIGHTING = (
    (
        (1.53512485958697, -2.69169618940638, 1.19839281085285),
        (1.0, -1.69065929318241, 0.73248077421585),
    ),
    ((1.0, -2.0, 1.0), (1.0, -1.99004745483398, 0.99007225036621)),
)


def integrated_loudness(signal: Float) -> float:
    """BS.1770 integrated loudness in LUFS of a (channels, samples) signal at 48 kHz.

    The K-weighting filter is applied through its frequency response, which for loudness (an
    energy measure) equals running the biquads; then 400 ms blocks with 75% overlap are gated
    at -70 LUFS and again at 10 LU below the mean of those.
    """
    count = signal.shape[1]
    size = 1 << math.ceil(math.log2(max(count, 2)))
    z = np.exp(-1j * 2 * math.pi * np.fft.rfftfreq(size))
    response = np.ones_like(z)
    for numerator, denominator in K_WEIGHTING:
        response *= np.polyval(numerator[::-1], z) / np.polyval(denominator[::-1], z)
    weighted = np.fft.irfft(np.fft.rfft(signal, size, axis=1) * response, size, axis=1)[:, :count]
    block = min(count, int(0.4 * AUDIO_RATE))
    hop = max(1, block // 4)
    energies = np.cumsum(np.pad(weighted**2, ((0, 0), (1, 0))), axis=1)
    starts = np.arange(0, count - block + 1, hop)
    block_power = ((energies[:, starts + block] - energies[:, starts]) / block).sum(axis=0)
    loudness = -0.691 + 10 * np.log10(np.maximum(block_power, 1e-20))
    gated = block_power[loudness > -70.0]
    if gated.size == 0:
        return -70.0
    relative_gate = -0.691 + 10 * math.log10(gated.mean()) - 10.0
    kept = gated[-0.691 + 10 * np.log10(gated) > relative_gate]
    return float(-0.691 + 10 * math.log10(kept.mean()))


def _faded(signal: Float) -> Float:
    count = signal.shape[1]
    fade_in = min(int(FADE_IN_SECONDS * AUDIO_RATE), count // 4)
    fade_out = min(int(FADE_OUT_SECONDS * AUDIO_RATE), count // 4)
    if fade_in:
        signal[:, :fade_in] *= _raised_cosine(fade_in)
    if fade_out:
        signal[:, count - fade_out :] *= _raised_cosine(fade_out)[::-1]
    return signal


def compose_soundtrack(
    prompt: str, sample_count: int, seed: int, rise_at_seconds: float | None = None
) -> NDArray[np.float32]:
    """A (2, `sample_count`) float32 track at 48 kHz for the prompt, at -16 LUFS."""
    mood = read_mood(prompt, seed)
    rng = np.random.default_rng([seed, 29])
    times = np.arange(sample_count) / AUDIO_RATE
    mix = _pads(mood, times, rng) * 0.5
    if mood.pulse > 0.0:
        mix += _pulses(mood, times, rng) * mood.pulse * 0.6
    for name in mood.textures:
        mix += _texture(name, times, rng) * 0.12
    if rise_at_seconds is not None:
        mix += _rise(mood, times, rise_at_seconds, rng) * 0.5
    mix = _reverb(mix, rng)
    mix -= mix.mean(axis=1, keepdims=True)
    mix = _faded(mix)
    mix *= 10 ** ((TARGET_LUFS - integrated_loudness(mix)) / 20)
    # Soft-limit the rare peaks instead of lowering the whole track below the target.
    over = np.abs(mix) > PEAK_LIMIT
    headroom = 1.0 - PEAK_LIMIT
    mix[over] = np.sign(mix[over]) * (
        PEAK_LIMIT + headroom * np.tanh((np.abs(mix[over]) - PEAK_LIMIT) / headroom)
    )
    return _faded(mix).astype(np.float32)
