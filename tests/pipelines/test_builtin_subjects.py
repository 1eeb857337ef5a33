"""The builtin painter draws what was asked (issue 37): subjects from the vendored glyphs,
recoloured, placed by their relations in the place named, colours kept through styles, a brand's
colours visible, things added by an edit, and notes a user reads."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from pipelines.base import EditInput, GenerateInput, StyleHints
from pipelines.builtin import vocabulary as vocab
from pipelines.builtin.edit import BuiltinEdit
from pipelines.builtin.generate import BuiltinGenerate
from pipelines.builtin.generate.everyday import EVERYDAY_PROMPTS
from pipelines.builtin.glyphs import COMPOSITES, DRAWN, describe, glyph_set, render
from pipelines.styles.embeddings import embed_texts
from pipelines.styles.palette import oklab_many
from tests.support.control import RecordingControl

BASE = GenerateInput(prompt="", width=256, height=192, seed=7)


def run(prompt: str, **changes: object) -> tuple[np.ndarray, list[str]]:
    output = BuiltinGenerate().run(replace(BASE, prompt=prompt, **changes), RecordingControl())
    return np.asarray(output.images[0]), output.notes


def drew(notes: list[str]) -> list[str]:
    found = [note for note in notes if note.startswith("drew: ")]
    return found[0].removeprefix("drew: ").split(", ") if found else []


def share_near(pixels: np.ndarray, colour: tuple[float, float, float], within: float) -> float:
    """The share of pixels within `within` of `colour` in OKLab."""
    lab = oklab_many(pixels.reshape(-1, 3))
    target = oklab_many(np.array([colour]) * 255.0)[0]
    return float((np.linalg.norm(lab - target, axis=1) < within).mean())


def test_the_main_subject_of_at_least_34_of_the_40_everyday_prompts_is_drawn() -> None:
    drawn = []
    for prompt, subject in EVERYDAY_PROMPTS:
        _, notes = run(prompt, width=96, height=72)
        if any(item.split(" (")[0] == subject for item in drew(notes)):
            drawn.append(prompt)
    assert len(drawn) >= 34, sorted({p for p, _ in EVERYDAY_PROMPTS} - set(drawn))


def test_notes_name_what_was_drawn_in_words_a_user_reads() -> None:
    _, notes = run("a red bicycle leaning against a brick wall")
    assert "drew: bicycle (red), brick wall" in notes
    for prompt, _ in EVERYDAY_PROMPTS[:12]:
        _, notes = run(prompt, width=64, height=48)
        items = drew(notes)
        assert len(items) == len(set(items)), notes
        assert not any(item in vocab.NON_SUBJECT_WORDS for item in items), notes
        assert not any(char.isdigit() for note in notes for char in note), notes


def test_words_about_the_look_are_never_drawn_nor_missed() -> None:
    _, notes = run("quiet hills at noon, in the look of the reference")
    told = " ".join(notes)
    assert "look" not in drew(notes) and "not drawn: reference" not in told, notes


def test_a_word_without_its_own_glyph_is_drawn_by_meaning_and_says_so() -> None:
    _, notes = run("a cat sleeping on a sofa in a living room")
    assert drew(notes) == ["cat", "sofa (as couch and lamp)", "living room"], notes
    _, far = run("a quarterly report on freedom")
    assert any(note.startswith("not drawn: report") for note in far) or any(
        "(report" in note for note in far
    ), far


def test_a_colour_word_recolours_its_subject_not_the_sky() -> None:
    red, _ = run("a red bicycle leaning against a brick wall")
    blue, _ = run("a blue bicycle leaning against a brick wall")
    assert share_near(blue, (0.12, 0.3, 0.9), 0.12) > 0.01
    assert share_near(red, (0.12, 0.3, 0.9), 0.12) < 0.002
    # Only the bicycle changed: the wall's top rows are the same picture.
    assert np.abs(red[:40].astype(int) - blue[:40].astype(int)).mean() < 1.0


def test_glyphs_are_drawn_from_vectors_at_the_output_size() -> None:
    body = glyph_set().by_name["bicycle"].body
    large = render(body, 512)[..., 3]
    enlarged = (
        np.asarray(
            Image.fromarray((render(body, 64)[..., 3] * 255).astype(np.uint8)).resize(
                (512, 512), Image.Resampling.BICUBIC
            ),
            np.float32,
        )
        / 255.0
    )

    # Edges a pixel wide, where an enlarged bitmap's are eight pixels of ramp.
    def soft(alpha: np.ndarray) -> int:
        return int(((alpha > 0.05) & (alpha < 0.95)).sum())

    assert soft(large) * 3 < soft(enlarged)


def test_the_relation_places_one_thing_on_another() -> None:
    pixels, notes = run("a cat on a chair", width=320, height=320)
    assert drew(notes)[:2] == ["cat", "chair"]
    scene = glyph_set()
    assert scene.exact("chair") is not None
    # The cat's orange is above the chair's brown-red, not beside it on the floor.
    orange = np.all(np.abs(pixels.astype(int) - (246, 184, 96)) < 40, axis=2)
    rows = np.flatnonzero(orange.any(axis=1))
    assert len(rows) and rows.mean() < 0.75 * 320


def test_the_seed_reproduces_a_picture_with_subjects_byte_for_byte() -> None:
    first, _ = run("two cats and a dog in a park", seed=11)
    again, _ = run("two cats and a dog in a park", seed=11)
    other, _ = run("two cats and a dog in a park", seed=12)
    assert first.tobytes() == again.tobytes()
    assert first.tobytes() != other.tobytes()


@pytest.mark.parametrize(("colour", "channel"), [("red", 0), ("green", 1), ("blue", 2)])
def test_colour_words_survive_the_watercolour_style(colour: str, channel: int) -> None:
    pixels, notes = run(f"{colour} mountains, watercolour")
    assert any("watercolour" in note and "keeping the prompt's colours" in note for note in notes)
    mean = pixels.reshape(-1, 3).astype(float).mean(axis=0)
    assert mean[channel] == max(mean), (colour, mean)


def test_a_brand_styles_primary_and_accent_are_visible_and_light_is_bright() -> None:
    teal, coral = "#0F766E", "#FF7F50"
    brand = StyleHints(
        palette=("#FAFAF9", "#1C1917", teal, coral),
        tone=("friendly",),
        aesthetic="A light, warm palette led by deep teal on off-white; the voice is friendly.",
    )
    pixels, notes = run("rolling hills", style=brand, width=256, height=256)
    assert any("moods bright" in note for note in notes), notes
    primary = share_near(pixels, (0x0F / 255, 0x76 / 255, 0x6E / 255), 0.1)
    accent = share_near(pixels, (1.0, 0x7F / 255, 0x50 / 255), 0.1)
    assert primary >= 0.1, primary
    assert accent >= 0.03, accent
    room, _ = run("a cat in a living room", style=brand, width=256, height=256)
    assert share_near(room, (0x0F / 255, 0x76 / 255, 0x6E / 255), 0.1) >= 0.1
    assert share_near(room, (1.0, 0x7F / 255, 0x50 / 255), 0.1) >= 0.03


def test_an_edit_adds_a_balloon_in_the_sky_and_leaves_the_rest_untouched() -> None:
    source_array, _ = run("rolling hills at noon", width=320, height=240)
    source = Image.fromarray(source_array)
    output = BuiltinEdit().run(
        EditInput(prompt="add a red hot air balloon in the sky", source=source, seed=3),
        RecordingControl(),
    )
    after = np.asarray(output.images[0]).astype(int)
    changed = np.any(after != source_array.astype(int), axis=2)
    rows = np.flatnonzero(changed.any(axis=1))
    assert 0.002 < changed.mean() < 0.2
    assert rows.max() < 0.6 * 240  # in the sky, not on the ground
    assert share_near(after[changed].reshape(-1, 1, 3), (0.86, 0.12, 0.12), 0.15) > 0.2
    assert output.notes == [
        "added: hot air balloon (red), in the sky (the rest of the picture untouched)"
    ]


def test_an_edit_says_what_it_could_not_remove() -> None:
    source = Image.fromarray(run("hills", width=96, height=64)[0])
    output = BuiltinEdit().run(
        EditInput(prompt="replace the dog with a horse", source=source), RecordingControl()
    )
    assert output.notes[0] == "added: horse (the rest of the picture untouched)"
    assert "'the dog' not removed" in output.notes[1]
    removed = BuiltinEdit().run(
        EditInput(prompt="remove the car", source=source), RecordingControl()
    )
    assert np.asarray(removed.images[0]).tobytes() == np.asarray(source).tobytes()
    assert "'the car' not removed" in removed.notes[0]


def test_the_vendored_embeddings_are_the_models_for_the_descriptions() -> None:
    glyphs = glyph_set()
    drawn_and_composites = [*DRAWN, *COMPOSITES]
    stored = glyphs.vectors[-len(drawn_and_composites) :]
    fresh = embed_texts([describe(e.name, e.keywords) for e in drawn_and_composites])
    assert np.abs(stored - fresh).max() < 2e-3
    first = glyphs.glyphs[0]
    assert float(glyphs.vectors[0] @ embed_texts([describe(first.name, first.keywords)])[0]) > 0.999
