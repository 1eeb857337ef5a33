"""The builtin instruction edit: change the source picture as the prompt says, not paint a new one.

The instruction is read into steps (`plan_edit`): colour and tone adjustments ("warmer", "brighter",
"black and white", "remove the colour cast"), looks ("vintage", "sunset", "moody"), a learned
painting style ("in the style of van gogh", `painting_styles.py`), the look of a reference
picture ("like this reference"), local effects ("blur the background") and film grain. Words the
table does not know but the generator's vocabulary does (moods, times of day, colours) still map
to the nearest look, and an instruction with nothing recognisable gets a gentle auto-enhance.
The notes say which steps were applied.

Everything works on float32 arrays the size of the source; the style networks run on a smaller
copy (`painting_styles.py`).
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np
from PIL import Image

from pipelines.base import EditInput, ImageOutput, JobControl
from pipelines.builtin import painting_styles
from pipelines.builtin import vocabulary as vocab
from pipelines.builtin.imaging import (
    LUMA,
    Float,
    Stages,
    blurred,
    log_peak_memory,
    luma,
    to_array,
    to_image,
)
from pipelines.media.colours import COLOURS, parse_hex_colour

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One change: an operation, a signed strength (1 is the normal amount) and its argument."""

    operation: str
    strength: float = 1.0
    argument: str = ""


@dataclass
class EditPlan:
    steps: list[Step] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)  # what each recognised phrase became
    skipped: list[str] = field(default_factory=list)  # recognised but not possible here
    fallback: str | None = None  # set when nothing was recognised


S = Step  # the tables below read better with a short name

# Phrases and the steps they stand for, most specific first: a phrase claims its words, so
# "black and white" is not read as the colour black as well.
PHRASES: tuple[tuple[str, tuple[Step, ...]], ...] = (
    (
        r"(?:remove|fix|correct|neutrali[sz]e|get rid of|kill)(?: \w+){0,3}? cast"
        r"|white[- ]balance|colou?r[- ]correct\w*|neutral colou?rs?|auto[- ]colou?r",
        (S("neutralise"),),
    ),
    (
        r"(?:remove|reduce|less|get rid of|clean up|without)(?: \w+){0,2}? (?:grain|noise)"
        r"|de-?noise|noise reduction",
        (S("denoise"),),
    ),
    (
        r"black[- ]and[- ]white|b ?& ?w|monochrome|gr[ae]yscale|no colou?rs?|colou?rless",
        (S("monochrome"),),
    ),
    (r"sepia", (S("sepia"),)),
    (
        r"vintage|retro|old(?:[- ]\w+)? (?:photo|film|picture)\w*|analog(?:ue)? film|polaroid"
        r"|film look|faded film|seventies|70s",
        (S("vintage"),),
    ),
    (
        r"blur\w*(?: \w+){0,2}? (?:background|backdrop)|(?:background|backdrop) blur\w*"
        r"|bokeh|shallow depth of field|depth of field|portrait mode"
        r"|(?:focus|isolate) (?:on )?the (?:subject|foreground)",
        (S("blur_background"),),
    ),
    (
        r"(?:add|more|with|film|heavy|some)(?: \w+){0,2}? (?:grain|noise)|grainy|noisy|grain",
        (S("grain"),),
    ),
    (
        r"like (?:this|the|my) (?:reference|image|picture|photo|one)\w*"
        r"|(?:match|use|copy) (?:the |this |my )?reference\w*"
        r"|reference(?:'s)? (?:style|look|colou?rs?|mood)"
        r"|(?:style|look|colou?rs?) of (?:this|the|my) (?:reference|image|picture|photo)\w*",
        (S("reference"),),
    ),
    (r"vignett\w*|dark(?:en|er) (?:the )?(?:edges|corners)", (S("vignette"),)),
    (r"invert\w*|negative", (S("invert"),)),
    (r"warm(?:er|th)?|hotter|cos(?:y|ier)|coz(?:y|ier)", (S("temperature", 1.0),)),
    (r"cool(?:er)?|cold(?:er)?|icier|chill(?:y|ier)", (S("temperature", -1.0),)),
    (
        r"(?:more|higher|increase|boost|add|stronger|bump up the) contrast"
        r"|contrasty|punch(?:y|ier)",
        (S("contrast", 1.0),),
    ),
    (
        r"(?:less|lower|reduce|decrease|soft(?:er)?) contrast|flat(?:ter)?|matte",
        (S("contrast", -1.0),),
    ),
    (
        r"desaturat\w*|muted|less saturat\w*|washed[- ]out|subdued|less colou?rful",
        (S("saturation", -1.0),),
    ),
    (r"saturat\w*|vivid|vibrant|more colou?rful|colou?rful|pop(?:py)?", (S("saturation", 1.0),)),
    (r"bright(?:er|en)?|lighter|lighten|more light|overexpose\w*", (S("brightness", 1.0),)),
    (r"dark(?:er|en)?|dimmer|dim|underexpose\w*", (S("brightness", -1.0),)),
    (r"sharp(?:en|er)?|crisp(?:er)?|more detail\w*|clearer|in focus", (S("sharpen"),)),
    (r"dream(?:y|ier)|soft(?:er)? focus|glow\w*|bloom|ethereal|halation", (S("glow"),)),
    (r"fog(?:gy)?|mist(?:y)?|ha(?:ze|zy)", (S("haze"),)),
    (r"golden hour|sunset|sundown", (S("temperature", 1.2), S("tint", 0.5, "orange"))),
    (r"hdr", (S("contrast", 0.8), S("saturation", 0.5), S("sharpen", 0.7))),
    (r"cinematic|film still", (S("contrast", 0.5), S("split_tone"), S("vignette", 0.6))),
)

# Moods and times of day from the generator's vocabulary, as looks for words no phrase claimed.
LOOKS: dict[str, tuple[Step, ...]] = {
    "calm": (S("contrast", -0.4), S("saturation", -0.3)),
    "moody": (S("brightness", -0.5), S("saturation", -0.5), S("contrast", 0.5), S("vignette")),
    "dark": (S("brightness", -1.0),),
    "bright": (S("brightness", 1.0),),
    "dreamy": (S("glow"), S("contrast", -0.3)),
    "warm": (S("temperature", 1.0),),
    "cool": (S("temperature", -1.0),),
    "pastel": (S("saturation", -0.5), S("brightness", 0.5), S("contrast", -0.5)),
    "neon": (S("saturation", 1.2), S("contrast", 0.5), S("tint", 0.3, "magenta")),
    "vivid": (S("saturation", 1.0),),
    "muted": (S("saturation", -1.0),),
    "misty": (S("haze"),),
    "stormy": (S("brightness", -0.6), S("saturation", -0.6), S("contrast", 0.5)),
    "snowy": (S("temperature", -1.0), S("brightness", 0.4), S("saturation", -0.4)),
    "day": (S("brightness", 0.4), S("saturation", 0.3)),
    "dawn": (S("brightness", 0.3), S("tint", 0.4, "peach"), S("glow", 0.4)),
    "golden": (S("temperature", 1.0), S("tint", 0.3, "amber")),
    "sunset": (S("temperature", 1.2), S("tint", 0.5, "orange")),
    "dusk": (S("brightness", -0.6), S("tint", 0.4, "violet")),
    "night": (
        S("brightness", -1.4),
        S("temperature", -1.0),
        S("saturation", -0.5),
        S("vignette"),
    ),
}

GENTLE_ENHANCE = (S("levels"), S("saturation", 0.3))
# A painting style the editor does not know becomes one of these general painterly ones.
GENERAL_PAINTING_STYLES = (0, 10, 12, 14, 16)
# Operations with a direction: "less" reverses them. The others have nothing to take away.
DIRECTIONAL = {"temperature", "brightness", "contrast", "saturation", "tint"}

WEAKER = {"slightly", "bit", "little", "touch", "subtly", "somewhat", "gently", "tad", "hint"}
STRONGER = {"much", "very", "lot", "really", "far", "way", "strongly", "lots", "extremely", "super"}
STYLE_REQUEST = re.compile(
    r"\b(?:in the style of|in the manner of|painted by) ((?:[\w'-]+ ?){1,3})"
    r"|\b(painting|painted|paint it|artistic|artwork)\b"
)
_WORDS = re.compile(r"[a-z']+")


def _modifier(text: str, start: int) -> float:
    """How the few words before a phrase scale it: "slightly", "much", "less" (reverses)."""
    before = set(_WORDS.findall(text[max(0, start - 24) : start])[-3:])
    factor = 1.0
    if WEAKER & before:
        factor *= 0.5
    if STRONGER & before:
        factor *= 1.6
    if "less" in before:
        factor = -factor
    return factor


LABELS = {
    "neutralise": "colour cast removed",
    "levels": "levels stretched",
    "monochrome": "black and white",
    "blur_background": "background blurred",
    "grain": "film grain",
    "glow": "soft glow",
    "split_tone": "teal and orange split toning",
}
NAMED_DIRECTIONS = {
    ("temperature", 1): "warmer",
    ("temperature", -1): "cooler",
    ("brightness", 1): "brighter",
    ("brightness", -1): "darker",
    ("contrast", 1): "more contrast",
    ("contrast", -1): "less contrast",
    ("saturation", 1): "more saturated",
    ("saturation", -1): "less saturated",
}


def _describe(step: Step) -> str:
    sign = 1 if step.strength >= 0 else -1
    label = NAMED_DIRECTIONS.get((step.operation, sign)) or LABELS.get(
        step.operation, step.operation
    )
    if step.operation == "tint":
        label = f"tinted {step.argument}" if sign > 0 else f"less {step.argument}"
    elif step.operation == "style":
        label = f"painted as {step.argument!r}"
    elif step.operation == "reference":
        label = "the look of the reference image(s)"
    scale = abs(step.strength)
    return label if abs(scale - 1.0) < 0.05 else f"{label} x{scale:.1f}"


def plan_edit(prompt: str, has_references: bool) -> EditPlan:
    """Read an instruction into steps; every recognised phrase is listed in `applied`."""
    text = " ".join(prompt.lower().split())
    plan = EditPlan()

    def claim(match: re.Match[str], steps: tuple[Step, ...], why: str = "") -> None:
        nonlocal text
        factor = _modifier(text, match.start())
        text = text[: match.start()] + " " * len(match[0]) + text[match.end() :]
        chosen = [
            Step(s.operation, s.strength * factor, s.argument)
            for s in steps
            if factor > 0 or s.operation in DIRECTIONAL
        ]
        phrase = match[0].strip()
        if any(s.operation == "reference" for s in chosen) and not has_references:
            plan.skipped.append(f"{phrase!r}: no reference image was sent")
            return
        if not chosen:
            plan.skipped.append(f"{phrase!r}: nothing to take away")
            return
        plan.steps.extend(chosen)
        plan.applied.append(f"{', '.join(_describe(s) for s in chosen)}{why} (from {phrase!r})")

    learned = painting_styles.find_learned_style(text)
    if learned is not None:
        claim(learned[1], (Step("style", 1.0, learned[0].name),))
    for pattern, steps in PHRASES:
        for match in list(re.finditer(rf"\b(?:{pattern})\b", text)):
            claim(match, steps)
    if learned is None and (request := STYLE_REQUEST.search(text)):
        # A painter or movement the table lacks: a general painterly style stands in.
        name = (request[1] or request[2]).strip()
        index = GENERAL_PAINTING_STYLES[zlib.crc32(name.encode()) % len(GENERAL_PAINTING_STYLES)]
        stand_in = painting_styles.LEARNED_STYLES[index]
        claim(request, (Step("style", 1.0, stand_in.name),), ", standing in for an unknown style")
    for match in list(_WORDS.finditer(text)):
        words = vocab.EXPANSIONS.get(match[0], (match[0],))
        looks = [vocab.MOOD_WORDS.get(w) or vocab.TIME_WORDS.get(w) for w in words]
        steps = tuple(step for look in looks if look for step in LOOKS.get(look, ()))
        steps += tuple(Step("tint", 1.0, w) for w in words if w in COLOURS)
        if steps:
            claim(match, steps)
    if has_references and not any(s.operation == "reference" for s in plan.steps):
        # References sent with an edit lend their look even when the words do not ask.
        plan.steps.append(Step("reference", 0.6))
        plan.applied.append("the look of the reference image(s) x0.6 (sent with the edit)")
    if not plan.steps:
        plan.steps.extend(GENTLE_ENHANCE)
        plan.fallback = "a gentle auto-enhance (levels and a little more saturation)"
    return plan


# --- operations ---------------------------------------------------------------------------------


@dataclass
class Context:
    references: tuple[Image.Image, ...]
    rng: np.random.Generator  # grain: seeded by the job, so an edit is repeatable


def _grey(picture: Float) -> Float:
    return luma(picture)[..., None]


def temperature(picture: Float, amount: float, _: Context) -> Float:
    # Along the blackbody direction: red and blue move apart, green follows red a little.
    gains = np.array([1.0 + 0.12 * amount, 1.0 + 0.03 * amount, 1.0 - 0.14 * amount], np.float32)
    return picture * gains


def brightness(picture: Float, amount: float, _: Context) -> Float:
    # A gamma curve: mid-tones move most, black and white stay put.
    gamma = float(np.exp(-0.35 * amount))
    return np.power(np.clip(picture, 0.0, 1.0), gamma)


def contrast(picture: Float, amount: float, _: Context) -> Float:
    pivot = float(luma(picture).mean())
    return pivot + (picture - pivot) * np.float32(1.0 + 0.3 * amount)


def saturation(picture: Float, amount: float, _: Context) -> Float:
    grey = _grey(picture)
    return grey + (picture - grey) * np.float32(max(0.0, 1.0 + 0.45 * amount))


def monochrome(picture: Float, amount: float, _: Context) -> Float:
    grey = np.repeat(_grey(picture), 3, axis=2)
    if amount >= 1.0:
        return grey  # exactly equal channels, as black and white should be
    return picture + (grey - picture) * np.float32(max(0.0, amount))


def sepia(picture: Float, amount: float, _: Context) -> Float:
    grey = _grey(picture)
    toned = np.clip(grey * np.array([1.07, 0.86, 0.62], np.float32) + 0.03, 0.0, 1.0)
    return picture + (toned - picture) * np.float32(min(1.0, 0.9 * abs(amount)))


def tint(picture: Float, amount: float, colour_name: str) -> Float:
    """Towards a named colour (away from it when negative), keeping each pixel's brightness."""
    colour = np.array(COLOURS[colour_name], np.float32)
    target = colour * (_grey(picture) / max(float(luma(colour)), 0.05))
    return picture + (target - picture) * np.float32(np.clip(0.3 * amount, -0.6, 0.6))


def neutralise(picture: Float, amount: float, _: Context) -> Float:
    """White balance by "shades of grey" (Finlayson): the illuminant is each channel's p-norm."""
    sample = picture[:: max(1, picture.shape[0] // 256), :: max(1, picture.shape[1] // 256)]
    illuminant = np.power(np.mean(np.power(sample.reshape(-1, 3), 6.0), axis=0), 1.0 / 6.0)
    gains = illuminant.mean() / np.maximum(illuminant, 1e-3)
    gains = 1.0 + (gains - 1.0) * min(1.0, abs(amount))
    return picture * gains.astype(np.float32)


def levels(picture: Float, amount: float, _: Context) -> Float:
    """Stretch the brightness so the darkest and brightest half-percent reach black and white."""
    sample = luma(picture[:: max(1, picture.shape[0] // 256), :: max(1, picture.shape[1] // 256)])
    low, high = np.percentile(sample, [0.5, 99.5])
    if high - low < 0.05:
        return picture
    stretched = (picture - low) / (high - low)
    return picture + (stretched - picture) * np.float32(min(1.0, amount))


def vintage(picture: Float, amount: float, context: Context) -> Float:
    strength = float(np.clip(amount, 0.0, 1.6))
    faded = saturation(picture, -0.7 * strength, context)
    # Lifted, warm blacks: old prints never reach pure black.
    lift = np.array([0.1, 0.07, 0.03], np.float32) * np.float32(strength)
    faded = faded * np.float32(1.0 - 0.12 * strength) + lift
    faded = tint(faded, 0.5 * strength, "amber")
    faded = vignette(faded, 0.6 * strength, context)
    return grain(faded, 0.7 * strength, context)


def invert(picture: Float, amount: float, _: Context) -> Float:
    return 1.0 - np.clip(picture, 0.0, 1.0)


def _radius(picture: Float, share: float) -> float:
    """A blur radius in pixels as a share of the image's diagonal, the same look at any size."""
    height, width = picture.shape[:2]
    return share * float(np.hypot(height, width))


def sharpen(picture: Float, amount: float, _: Context) -> Float:
    soft = blurred(picture, max(1.0, _radius(picture, 0.0012)))
    return picture + (picture - soft) * np.float32(0.9 * amount)


def glow(picture: Float, amount: float, _: Context) -> Float:
    highlights = np.clip(picture - 0.45, 0.0, 1.0) * np.float32(1.8)
    bloom = blurred(highlights, _radius(picture, 0.02)) * np.float32(0.6 * amount)
    return 1.0 - (1.0 - picture) * (1.0 - bloom)  # screen blend


def haze(picture: Float, amount: float, _: Context) -> Float:
    # Thicker towards the top, where the distance usually is.
    height = picture.shape[0]
    depth = np.linspace(1.0, 0.45, height, dtype=np.float32)[:, None, None]
    veil = np.float32(0.72) + np.float32(0.25) * blurred(picture, _radius(picture, 0.01))
    return picture + (veil - picture) * (depth * np.float32(0.45 * min(1.5, amount)))


def vignette(picture: Float, amount: float, _: Context) -> Float:
    height, width = picture.shape[:2]
    y = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    falloff = 1.0 - np.float32(0.4 * amount) * np.clip((x * x + y * y) * 0.6, 0.0, 1.0) ** 1.5
    return picture * falloff[..., None]


def grain(picture: Float, amount: float, context: Context) -> Float:
    """Monochrome film grain, strongest in the mid-tones, a little soft like silver grains."""
    height, width = picture.shape[:2]
    noise = context.rng.standard_normal((height, width), dtype=np.float32)
    noise = np.asarray(cv2.GaussianBlur(noise, (0, 0), 0.7), np.float32)
    grey = luma(picture)
    weight = np.float32(0.09 * abs(amount)) * (0.35 + 2.6 * grey * (1.0 - grey))
    return picture + (noise * weight)[..., None]


def denoise(picture: Float, amount: float, _: Context) -> Float:
    smooth = cv2.bilateralFilter(np.clip(picture, 0.0, 1.0), 7, 0.08, 5.0)
    return picture + (np.asarray(smooth, np.float32) - picture) * np.float32(min(1.0, amount))


def blur_background(picture: Float, amount: float, _: Context) -> Float:
    """Keep the likely subject and the foreground sharp; blur the rest, more with distance.

    With no segmentation or depth model both are guessed: the subject is where the detail is
    (local contrast) near the centre of the frame, and distance grows upwards from the row
    where the detail peaks, as it does in most landscapes (lower in the frame is nearer).
    """
    height, width = picture.shape[:2]
    grey = luma(picture)
    detail = np.abs(np.asarray(cv2.Laplacian(grey, cv2.CV_32F, ksize=3), np.float32))
    detail = blurred(detail, _radius(picture, 0.01))
    detail /= max(float(detail.max()), 1e-6)
    y = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    centre = np.exp(-(x * x) / 0.25 - ((y - 0.1) ** 2) / 0.35)
    subject = np.clip((detail * centre - 0.08) * 4.0, 0.0, 1.0)
    # The focus row: where detail peaks in the lower two thirds; below it is foreground.
    rows = detail.mean(axis=1)
    lower = height // 3
    focus = (lower + int(np.argmax(rows[lower:]))) / max(1, height - 1) * 2.0 - 1.0
    distance = np.clip((focus - y) / 0.5, 0.0, 1.0)
    sharp = np.maximum(subject, 1.0 - distance)
    # Feathered, so that the subject's edges do not halo.
    sharp = np.clip(blurred(sharp, _radius(picture, 0.01)), 0.0, 1.0)
    background = blurred(picture, _radius(picture, 0.008 * max(0.5, min(2.0, amount))))
    return background + (picture - background) * sharp[..., None]


def split_tone(picture: Float, amount: float, _: Context) -> Float:
    """The film look: shadows towards teal, highlights towards orange."""
    grey = _grey(picture)
    shadows = np.array([-0.05, 0.015, 0.05], np.float32) * (1.0 - grey)
    highlights = np.array([0.05, 0.012, -0.05], np.float32) * grey
    return picture + (shadows + highlights) * np.float32(amount)


def _style(picture: Float, amount: float, name: str) -> Float:
    style = next(s for s in painting_styles.LEARNED_STYLES if s.name == name)
    return painting_styles.shared_engine().learned(picture, style, min(1.0, 0.85 * amount))


def _reference(picture: Float, amount: float, context: Context) -> Float:
    board = painting_styles.reference_board(context.references)
    strength = float(np.clip(0.85 * amount, 0.0, 1.0))
    return painting_styles.shared_engine().from_reference(picture, board, strength)


Operation = Callable[[Float, float, Context], Float]
OPERATIONS: dict[str, Operation] = {
    "neutralise": neutralise,
    "levels": levels,
    "denoise": denoise,
    "reference": _reference,
    "temperature": temperature,
    "brightness": brightness,
    "contrast": contrast,
    "saturation": saturation,
    "haze": haze,
    "vintage": vintage,
    "sepia": sepia,
    "monochrome": monochrome,
    "invert": invert,
    "sharpen": sharpen,
    "glow": glow,
    "split_tone": split_tone,
    "blur_background": blur_background,
    "vignette": vignette,
    "grain": grain,
}
# Correct first, then restyle, then colour and tone, then local effects; grain goes on last.
ORDER = (
    "neutralise",
    "levels",
    "denoise",
    "style",
    "reference",
    "temperature",
    "tint",
    "brightness",
    "contrast",
    "saturation",
    "haze",
    "vintage",
    "sepia",
    "monochrome",
    "invert",
    "sharpen",
    "glow",
    "split_tone",
    "blur_background",
    "vignette",
    "grain",
)
# Relative cost, for progress.
WEIGHTS = {"style": 6.0, "reference": 6.0, "blur_background": 3.0, "denoise": 3.0, "grain": 2.0}


def _apply(picture: Float, step: Step, context: Context) -> Float:
    if step.operation == "style":
        return _style(picture, step.strength, step.argument)
    if step.operation == "tint":
        return tint(picture, step.strength, step.argument)
    return OPERATIONS[step.operation](picture, step.strength, context)


# How strongly a brand style's palette (styleId) recolours an edit.
BRAND_GRADE = 0.35


def brand_grade(picture: Float, palette: tuple[str, ...], amount: float = BRAND_GRADE) -> Float:
    """A gradient map through the brand's colours, ordered dark to light, blended in at
    `amount`: the picture keeps its shapes and light, and takes the brand's colours."""
    colours = sorted(
        (c for c in map(parse_hex_colour, palette) if c), key=lambda c: float(np.dot(c, LUMA))
    )
    if not colours:
        return picture
    if len(colours) == 1:
        colours = [(0.0, 0.0, 0.0), colours[0], (1.0, 1.0, 1.0)]
    stops = np.array(colours, np.float32)
    positions = np.linspace(0.0, 1.0, len(stops))
    light = luma(picture)
    mapped = np.stack([np.interp(light, positions, stops[:, c]) for c in range(3)], axis=-1)
    return picture * (1.0 - amount) + mapped.astype(np.float32) * amount


class BuiltinEdit:
    """Instruction edits on the CPU: colour, tone, looks, painting styles, reference looks."""

    operation = "edit"

    def run(self, inputs: EditInput, control: JobControl) -> ImageOutput:
        plan = plan_edit(inputs.prompt, bool(inputs.references))
        steps = sorted(plan.steps, key=lambda s: ORDER.index(s.operation))
        stages = Stages(
            control,
            {"reading": 1.0}
            | {f"{i}:{s.operation}": WEIGHTS.get(s.operation, 1.0) for i, s in enumerate(steps)},
        )
        stages.begin("reading")
        source = inputs.source.convert("RGB")
        picture = to_array(source)
        context = Context(
            references=inputs.references,
            rng=np.random.default_rng([inputs.seed, zlib.crc32(inputs.prompt.encode())]),
        )
        for index, step in enumerate(steps):
            stages.begin(f"{index}:{step.operation}")
            picture = _apply(picture, step, context)
        if plan.fallback:
            notes = [
                f"no edit the builtin editor knows was found in {inputs.prompt!r}; applied the "
                f"closest plausible change: {plan.fallback}"
            ]
        else:
            notes = ["builtin editor applied: " + "; ".join(plan.applied)]
        notes += [f"not applied: {reason}" for reason in plan.skipped]
        if inputs.style is not None and inputs.style.palette:
            picture = brand_grade(picture, inputs.style.palette)
            notes.append("recoloured towards the brand style's palette")
        image = to_image(picture)
        log_peak_memory(log, "edit", image.width, image.height)
        return ImageOutput(images=[image], notes=notes)
