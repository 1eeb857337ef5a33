"""The words the builtin generator understands, and the light, scenes and moods they stand for.

Colours are sRGB triples in [0, 1]; the colour words themselves are in `pipelines/media/colours.py`.
Everything here is data; the builtin generator and editor decide how to use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.media.colours import RGB


@dataclass(frozen=True)
class TimeOfDay:
    """The sky, light and land lighting of one time of day."""

    zenith: RGB
    mid: RGB
    horizon: RGB
    light: RGB
    light_kind: str  # "sun", "moon" or "none"
    light_elevation: float  # fraction of the sky's height above the horizon
    haze: RGB
    cloud: RGB
    land_light: RGB  # multiplies a scene's daylight land colours
    clouds: float
    stars: float
    horizon_glow: float


TIMES_OF_DAY: dict[str, TimeOfDay] = {
    "day": TimeOfDay(
        zenith=(0.16, 0.38, 0.76),
        mid=(0.38, 0.6, 0.9),
        horizon=(0.78, 0.87, 0.95),
        light=(1.0, 0.97, 0.88),
        light_kind="sun",
        light_elevation=0.62,
        haze=(0.74, 0.82, 0.9),
        cloud=(1.0, 1.0, 1.0),
        land_light=(1.0, 1.0, 1.0),
        clouds=0.45,
        stars=0.0,
        horizon_glow=0.1,
    ),
    "dawn": TimeOfDay(
        zenith=(0.3, 0.4, 0.68),
        mid=(0.76, 0.66, 0.78),
        horizon=(1.0, 0.8, 0.66),
        light=(1.0, 0.88, 0.7),
        light_kind="sun",
        light_elevation=0.1,
        haze=(0.9, 0.78, 0.8),
        cloud=(1.0, 0.8, 0.78),
        land_light=(0.62, 0.6, 0.72),
        clouds=0.4,
        stars=0.0,
        horizon_glow=0.45,
    ),
    "golden": TimeOfDay(
        zenith=(0.26, 0.4, 0.68),
        mid=(0.62, 0.66, 0.74),
        horizon=(1.0, 0.8, 0.52),
        light=(1.0, 0.86, 0.56),
        light_kind="sun",
        light_elevation=0.22,
        haze=(0.95, 0.8, 0.62),
        cloud=(1.0, 0.9, 0.72),
        land_light=(0.9, 0.74, 0.55),
        clouds=0.4,
        stars=0.0,
        horizon_glow=0.4,
    ),
    "sunset": TimeOfDay(
        zenith=(0.15, 0.13, 0.38),
        mid=(0.72, 0.32, 0.42),
        horizon=(1.0, 0.6, 0.28),
        light=(1.0, 0.82, 0.48),
        light_kind="sun",
        light_elevation=0.08,
        haze=(0.92, 0.52, 0.42),
        cloud=(1.0, 0.55, 0.42),
        land_light=(0.5, 0.3, 0.36),
        clouds=0.5,
        stars=0.05,
        horizon_glow=0.6,
    ),
    "dusk": TimeOfDay(
        zenith=(0.05, 0.07, 0.22),
        mid=(0.28, 0.2, 0.42),
        horizon=(0.85, 0.45, 0.38),
        light=(0.95, 0.92, 0.85),
        light_kind="none",
        light_elevation=0.0,
        haze=(0.5, 0.32, 0.4),
        cloud=(0.62, 0.38, 0.45),
        land_light=(0.26, 0.22, 0.34),
        clouds=0.35,
        stars=0.35,
        horizon_glow=0.35,
    ),
    "night": TimeOfDay(
        zenith=(0.01, 0.02, 0.07),
        mid=(0.03, 0.06, 0.16),
        horizon=(0.1, 0.15, 0.3),
        light=(0.95, 0.95, 0.88),
        light_kind="moon",
        light_elevation=0.55,
        haze=(0.1, 0.14, 0.25),
        cloud=(0.2, 0.24, 0.34),
        land_light=(0.1, 0.13, 0.24),
        clouds=0.15,
        stars=1.0,
        horizon_glow=0.05,
    ),
    "space": TimeOfDay(
        zenith=(0.0, 0.0, 0.02),
        mid=(0.02, 0.01, 0.06),
        horizon=(0.06, 0.03, 0.12),
        light=(1.0, 0.95, 0.88),
        light_kind="sun",
        light_elevation=0.5,
        haze=(0.1, 0.05, 0.18),
        cloud=(0.55, 0.2, 0.7),
        land_light=(1.0, 1.0, 1.0),
        clouds=0.0,
        stars=1.6,
        horizon_glow=0.0,
    ),
}

# Times a prompt with no time word may land on: never night, which would hide the scene.
FALLBACK_TIMES = ("day", "day", "golden", "dawn", "sunset", "dusk")

TIME_WORDS: dict[str, str] = {
    "day": "day",
    "daytime": "day",
    "noon": "day",
    "midday": "day",
    "sunny": "day",
    "morning": "dawn",
    "dawn": "dawn",
    "sunrise": "dawn",
    "daybreak": "dawn",
    "afternoon": "golden",
    "sunset": "sunset",
    "sundown": "sunset",
    "evening": "sunset",
    "dusk": "dusk",
    "twilight": "dusk",
    "night": "night",
    "nighttime": "night",
    "midnight": "night",
    "nocturnal": "night",
    "moonlit": "night",
    "moonlight": "night",
}

TIME_PHRASES: dict[str, str] = {"golden hour": "golden", "blue hour": "dusk"}


@dataclass(frozen=True)
class Scene:
    """Daylight land and water colours of a scene; layouts live in `generate.py`."""

    land_far: RGB
    land_near: RGB
    water: RGB


SCENES: dict[str, Scene] = {
    "hills": Scene((0.45, 0.58, 0.5), (0.1, 0.24, 0.12), (0.08, 0.3, 0.45)),
    "mountains": Scene((0.5, 0.55, 0.66), (0.16, 0.18, 0.24), (0.08, 0.28, 0.42)),
    "forest": Scene((0.3, 0.44, 0.42), (0.04, 0.13, 0.08), (0.06, 0.25, 0.3)),
    "desert": Scene((0.86, 0.66, 0.46), (0.78, 0.52, 0.3), (0.1, 0.35, 0.45)),
    "city": Scene((0.42, 0.46, 0.56), (0.08, 0.09, 0.12), (0.07, 0.2, 0.32)),
    "sea": Scene((0.4, 0.5, 0.55), (0.12, 0.2, 0.22), (0.04, 0.26, 0.42)),
    "sky": Scene((0.42, 0.52, 0.5), (0.12, 0.2, 0.16), (0.08, 0.3, 0.45)),
    "space": Scene((0.5, 0.35, 0.3), (0.2, 0.12, 0.1), (0.05, 0.1, 0.3)),
}

SCENE_WORDS: dict[str, str] = {
    **dict.fromkeys(
        ("hill", "valley", "meadow", "field", "countryside", "landscape", "prairie", "plain"),
        "hills",
    ),
    **dict.fromkeys(("mountain", "peak", "alps", "alpine", "summit", "range"), "mountains"),
    **dict.fromkeys(("forest", "woods", "woodland", "tree", "pine", "jungle", "taiga"), "forest"),
    **dict.fromkeys(("desert", "dune", "sand", "sahara", "canyon"), "desert"),
    **dict.fromkeys(
        ("city", "town", "skyline", "urban", "metropolis", "building", "downtown", "street"),
        "city",
    ),
    **dict.fromkeys(
        ("sea", "ocean", "beach", "coast", "lake", "water", "wave", "bay", "harbor", "shore"),
        "sea",
    ),
    **dict.fromkeys(("sky", "cloudscape", "heaven"), "sky"),
    **dict.fromkeys(
        ("space", "galaxy", "cosmos", "cosmic", "nebula", "universe", "planet"), "space"
    ),
}


@dataclass(frozen=True)
class Mood:
    """How a mood word bends a palette and a layout; neutral values change nothing."""

    saturation: float = 1.0
    value: float = 1.0
    lift: float = 0.0  # mix towards white
    tint: RGB | None = None
    tint_strength: float = 0.0
    haze: float = 0.0
    clouds: float = 1.0
    waves: float = 1.0
    glow: float = 1.0
    roughness: float = 1.0
    vignette: float = 0.0
    snow: float = 0.0
    neon: bool = False


WARM: RGB = (1.0, 0.62, 0.35)
COOL: RGB = (0.35, 0.55, 1.0)

MOODS: dict[str, Mood] = {
    "calm": Mood(clouds=0.6, waves=0.35, roughness=0.7, glow=0.9),
    "moody": Mood(saturation=0.6, value=0.75, haze=0.2, clouds=1.5, vignette=0.15),
    "dark": Mood(value=0.55, vignette=0.2),
    "bright": Mood(lift=0.15, value=1.1, haze=-0.1),
    "dreamy": Mood(
        saturation=0.85, lift=0.08, tint=(1.0, 0.7, 0.9), tint_strength=0.12, haze=0.2, glow=1.3
    ),
    "warm": Mood(tint=WARM, tint_strength=0.28),
    "cool": Mood(tint=COOL, tint_strength=0.28),
    "pastel": Mood(saturation=0.7, lift=0.2),
    "neon": Mood(saturation=1.5, glow=1.5, neon=True),
    "vivid": Mood(saturation=1.35),
    "muted": Mood(saturation=0.55),
    "misty": Mood(haze=0.35, saturation=0.85),
    "stormy": Mood(saturation=0.7, value=0.7, clouds=2.0, waves=2.0, haze=0.1, vignette=0.15),
    "snowy": Mood(tint=COOL, tint_strength=0.1, snow=0.7),
}

MOOD_WORDS: dict[str, str] = {
    **{name: name for name in MOODS},
    **dict.fromkeys(("serene", "peaceful", "tranquil", "quiet", "still", "gentle"), "calm"),
    **dict.fromkeys(("gloomy", "melancholic", "brooding", "dramatic"), "moody"),
    **dict.fromkeys(("darker", "shadowy", "grim"), "dark"),
    **dict.fromkeys(("light", "luminous", "radiant", "cheerful"), "bright"),
    **dict.fromkeys(("ethereal", "magical", "fantasy", "surreal", "soft"), "dreamy"),
    **dict.fromkeys(("cozy", "hot", "summery"), "warm"),
    **dict.fromkeys(("cold", "icy", "frozen", "chilly"), "cool"),
    **dict.fromkeys(("glowing", "fluorescent", "electric"), "neon"),
    **dict.fromkeys(("vibrant", "saturated", "colorful", "colourful"), "vivid"),
    **dict.fromkeys(("faded", "desaturated", "washed", "subdued"), "muted"),
    **dict.fromkeys(("foggy", "hazy", "mist", "fog", "haze"), "misty"),
    **dict.fromkeys(("storm", "thunder", "rain", "rainy", "overcast"), "stormy"),
    **dict.fromkeys(("snow", "winter", "ice"), "snowy"),
}

# Things to draw whatever the time of day.
FEATURE_WORDS: dict[str, str] = {
    "sun": "sun",
    "moon": "moon",
    "star": "stars",
    "starry": "stars",
    "starlit": "stars",
    "cloud": "clouds",
    "cloudy": "clouds",
    "clear": "clear",
    "cloudless": "clear",
    "planet": "planet",
    "milky": "milky_way",
    "galaxy": "milky_way",
}

# Words that stand for a handful of others.
EXPANSIONS: dict[str, tuple[str, ...]] = {
    "cyberpunk": ("night", "city", "neon", "magenta", "cyan"),
    "synthwave": ("sunset", "neon", "magenta", "purple"),
    "vaporwave": ("pastel", "pink", "teal"),
    "autumn": ("warm", "orange", "red"),
    "fall": ("warm", "orange"),
    "spring": ("bright", "green", "pink"),
    "summer": ("bright", "warm"),
    "tropical": ("sea", "bright", "vivid"),
    "arctic": ("snowy", "cool", "white"),
    "noir": ("night", "dark", "muted"),
}

# Words of a prompt that name no subject: articles, prepositions, conjunctions, pronouns, and the
# words people use about the picture itself. Any other word the painter does not know names
# something it cannot draw.
_NON_SUBJECT_TEXT = (
    "a an the this that these those some any each every all both no of on in at by to for"
    " from with without into onto over under above below behind beside between among"
    " against across along around through near far off out up down before after during"
    " and or but nor so yet as like than then there here where when while is are was were"
    " be being been it its his her their our my your me him them us we you they she he"
    " very quite just only more most less much many few one two three several lots"
    " image picture photo photograph photography painting illustration render rendering"
    " artwork art scene view shot style styled detailed highly ultra beautiful stunning"
    " realistic photorealistic hyperrealistic cinematic epic high quality resolution hd"
    " masterpiece lighting background foreground composition wide angle closeup close"
    # Words about how the picture looks or what it follows, never a thing in it.
    " look looks feel vibe aesthetic reference references"
)
NON_SUBJECT_WORDS = frozenset(_NON_SUBJECT_TEXT.split())
