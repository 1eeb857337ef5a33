"""Brand style extraction as the extract style operation's pipeline: `pipelines/styles` reads the
site (rendered in the browser it is lent, or as text) through the fetcher it is given and returns
the style and the brand images to keep."""

from __future__ import annotations

from pipelines.base import ExtractStyleInput, JobControl
from pipelines.styles import Extraction, extract_style


class BuiltinExtractStyle:
    """No model: the rendered page (or its HTML and CSS) and the site's images
    (`pipelines/styles/extract.py`)."""

    operation = "extract_style"

    def run(self, inputs: ExtractStyleInput, control: JobControl) -> Extraction:
        control.progress(0.0, "reading the site")
        return extract_style(
            inputs.url, inputs.fetcher, inputs.check, inputs.browser, inputs.budget
        )
