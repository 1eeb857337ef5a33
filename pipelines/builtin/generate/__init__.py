"""The builtin text-to-image pipeline: a procedural landscape painter on NumPy and Pillow.

It reads colours, moods, times of day and scenes from the prompt (`vocabulary.py`), turns them into
a palette and a layout, and paints: a gradient sky with clouds, stars and a sun or moon, layered
silhouettes of mountains, hills, forest, dunes or city blocks fading into haze, water with a light
path, grain and a vignette.

Layouts are planned in units of the image's shorter side, so a seed gives the same picture at any
size; painting goes in horizontal strips, so memory stays at the output image plus a few
strip-sized float32 planes however large the image.

Read it in the order a picture is made:

- `prompt.py`: the prompt's words picked out, and the layout they call for (land, sea, sky, space);
- `palette.py`: the colours and weather, from the words, the references and a brand style;
- `layout.py`: the plan, everything random about one picture (`seeds.py`): horizon, sun or moon,
  stars, clouds, planet, and the ground layers, whose skylines are `ridges.py` (shaped by
  `noise.py`);
- `painter.py`: the plan painted strip by strip on float32 canvases (`canvas.py`): `sky.py`,
  `terrain.py`, `water.py`, then `finishing.py` (vignette, grain, 8 bits);
- `pipeline.py`: `BuiltinGenerate`, which does all that for each variation and then paints the
  picture over in a learned style and the look of the references (`painting_styles.py`).
"""

from pipelines.builtin.generate.pipeline import BuiltinGenerate

__all__ = ["BuiltinGenerate"]
