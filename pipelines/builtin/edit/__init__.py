"""The builtin instruction edit: change the source picture as the prompt says, not paint a new one.

The instruction is read into steps (`instructions.py`, `plan_edit`): colour and tone adjustments
("warmer", "brighter", "black and white", "remove the colour cast"), looks ("vintage", "sunset",
"moody"), a learned painting style ("in the style of van gogh", `painting_styles.py`), the look
of a reference picture ("like this reference"), local effects ("blur the background") and film
grain. Words the table does not know but the generator's vocabulary does (moods, times of day,
colours) still map to the nearest look, and an instruction with nothing recognisable gets a
gentle auto-enhance. The notes say which steps were applied.

Each step is one adjustment (`adjustments.py`) on float32 arrays the size of the source; the
style networks run on a smaller copy (`painting_styles.py`). `pipeline.py` runs them in order.
"""

from pipelines.builtin.edit.pipeline import BuiltinEdit

__all__ = ["BuiltinEdit"]
