"""Reading an edit instruction into steps: the phrases it recognises (colour and tone, looks,
local effects, grain), a learned painting style it names, words of the generator's vocabulary
(moods, times of day, colours) as looks, and the words before a phrase that scale or reverse it."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from pipelines.builtin import painting_styles
from pipelines.builtin import vocabulary as vocab
from pipelines.media.colours import COLOURS


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
    additions: list[str] = field(default_factory=list)  # "a red hot air balloon in the sky"


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
# "add a red hot air balloon in the sky", up to the next instruction.
_UNTIL = r"(?=\s*(?:,|;|\.|\band (?:make|add|put|turn|remove)\b|\bthen\b|$))"
ADDITION = re.compile(r"\b(?:add|put|place|draw|insert|include)\b\s+(?P<thing>.+?)" + _UNTIL)
REPLACEMENT = re.compile(
    r"\b(?:replace|swap)\s+(?P<old>.+?)\s+(?:with|for|by)\s+(?P<new>.+?)" + _UNTIL
)
REMOVAL = re.compile(r"\b(?:remove|delete|erase|get rid of|take out)\s+(?P<thing>.+?)" + _UNTIL)
CANNOT_FIND = (
    "the builtin editor cannot find things in a picture; a real model can "
    "(`sfumato models pull`, docs/models.md)"
)
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
    # Things to add, after the effects ("add grain") and before the looks, so that their colour
    # words ("a red balloon") tint nothing.
    for match in list(ADDITION.finditer(text)):
        plan.additions.append(match["thing"].strip())
        text = text[: match.start()] + " " * len(match[0]) + text[match.end() :]
    for match in list(REPLACEMENT.finditer(text)):
        plan.additions.append(match["new"].strip())
        plan.skipped.append(f"{match['old'].strip()!r} not removed: {CANNOT_FIND}")
        text = text[: match.start()] + " " * len(match[0]) + text[match.end() :]
    for match in list(REMOVAL.finditer(text)):
        plan.skipped.append(f"{match['thing'].strip()!r} not removed: {CANNOT_FIND}")
        text = text[: match.start()] + " " * len(match[0]) + text[match.end() :]
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
    if not plan.steps and not plan.additions and not plan.skipped:
        plan.steps.extend(GENTLE_ENHANCE)
        plan.fallback = "a gentle auto-enhance (levels and a little more saturation)"
    return plan
