"""The one MP4 writer of every video pipeline, and the JPEG poster made from a finished clip.

CONTRACT.md fixes the format: H.264 in yuv420p with `+faststart`, 24 fps, `round(24*duration)`
frames, and an AAC stereo 48 kHz track only when the job asked for audio. Frames are streamed to
the encoder one at a time, so a clip of any length costs the memory of a few frames; the audio is
interleaved with them as they go. Encoding runs on its own thread, fed through a short queue, so
the pipeline renders the next frame while x264 compresses the last.

The clip is written beside its destination and moved into place only once it is complete: a
render that fails or is cancelled leaves nothing at `path`, and no partial file beside it.
"""

from __future__ import annotations

import io
import math
import os
import queue
import threading
from fractions import Fraction
from types import TracebackType
from typing import Any

import av
import numpy as np
from numpy.typing import NDArray
from PIL import Image

FPS = 24
AUDIO_RATE = 48_000
AUDIO_CHANNELS = 2
# libx264's speed/size trade-off: the CPU pipelines spend their time budget on pixels.
X264_PRESET = "superfast"
X264_CRF = 25
# One encoder thread beside the renderer: more threads contend with torch's OpenMP threads,
# whose busy-waiting then slows interpolation several-fold.
X264_THREADS = 1
AAC_BITRATE = 160_000
ENCODE_QUEUE_FRAMES = 4  # enough to overlap rendering with encoding, few enough to stay small
POSTER_POSITION = 1 / 3
POSTER_QUALITY = 88


def frame_count_for(duration_seconds: float) -> int:
    """`round(24*duration)` with halves rounded up (as everywhere in the contract), at least 1."""
    return max(1, math.floor(duration_seconds * FPS + 0.5))


def audio_samples_for(frame_count: int) -> int:
    """Samples per channel of a soundtrack exactly as long as `frame_count` frames."""
    return frame_count * AUDIO_RATE // FPS


class Mp4Writer:
    """Encodes exactly `frame_count` RGB frames, plus `soundtrack` when given, into `path`.

    Use it as a context manager: leaving the block normally finishes the file (and raises if a
    frame is missing); leaving it with an exception deletes what was written.
    `soundtrack` is float32 of shape (2, `audio_samples_for(frame_count)`) in [-1, 1].
    """

    def __init__(
        self,
        path: str,
        width: int,
        height: int,
        frame_count: int,
        soundtrack: NDArray[np.float32] | None = None,
    ) -> None:
        if width < 2 or height < 2 or width % 2 or height % 2:
            raise ValueError(f"yuv420p needs an even width and height, not {width}x{height}")
        if frame_count < 1:
            raise ValueError("a clip needs at least one frame")
        if soundtrack is not None and soundtrack.shape != (
            AUDIO_CHANNELS,
            audio_samples_for(frame_count),
        ):
            raise ValueError(f"the soundtrack has shape {soundtrack.shape}, not the clip's length")
        self.path = path
        self.width = width
        self.height = height
        self.frame_count = frame_count
        self.frames_written = 0
        self._soundtrack = soundtrack
        self._samples_written = 0
        self._partial_path = f"{path}.partial"
        self._container: Any = None
        self._video: Any = None
        self._audio: Any = None
        self._queue: queue.Queue[av.VideoFrame | None] = queue.Queue(ENCODE_QUEUE_FRAMES)
        self._encoder = threading.Thread(target=self._encode_queued, name="mp4-encoder")
        self._encoder_error: BaseException | None = None

    def __enter__(self) -> Mp4Writer:
        container = av.open(
            self._partial_path, "w", format="mp4", options={"movflags": "+faststart"}
        )
        self._container = container
        video = container.add_stream("libx264", rate=FPS)
        video.width = self.width
        video.height = self.height
        video.pix_fmt = "yuv420p"
        video.options = {
            "preset": X264_PRESET,
            "crf": str(X264_CRF),
            "threads": str(X264_THREADS),
        }
        self._video = video
        if self._soundtrack is not None:
            audio = container.add_stream("aac", rate=AUDIO_RATE)
            audio.layout = "stereo"
            audio.bit_rate = AAC_BITRATE
            self._audio = audio
        self._encoder.start()
        return self

    def write(self, frame: NDArray[np.uint8]) -> None:
        """Queue one (height, width, 3) RGB frame; it is copied, so `frame` may be reused."""
        if frame.shape != (self.height, self.width, 3):
            raise ValueError(f"frame of shape {frame.shape}, expected {self.height}x{self.width}")
        if self.frames_written >= self.frame_count:
            raise ValueError(f"the clip already has its {self.frame_count} frames")
        if self._encoder_error is not None:
            raise RuntimeError("the encoder failed") from self._encoder_error
        video_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
        video_frame.pts = self.frames_written
        video_frame.time_base = Fraction(1, FPS)
        self._queue.put(video_frame)
        self.frames_written += 1

    def _encode_queued(self) -> None:
        """Encode each queued frame, then the audio that plays up to its end, until `None`.

        After a failure it keeps taking frames (and drops them), so `write` never blocks on a
        full queue; `write` and `_finish` raise the error.
        """
        encoded = 0
        while (video_frame := self._queue.get()) is not None:
            if self._encoder_error is not None:
                continue
            try:
                self._container.mux(self._video.encode(video_frame))
                encoded += 1
                self._write_audio_until(audio_samples_for(encoded))
            except BaseException as error:
                self._encoder_error = error

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error_type is None:
            try:
                self._finish()
            except BaseException:
                self._abandon()
                raise
            os.replace(self._partial_path, self.path)
        else:
            self._abandon()

    def _write_audio_until(self, end_sample: int) -> None:
        if self._soundtrack is None or end_sample <= self._samples_written:
            return
        chunk = np.ascontiguousarray(self._soundtrack[:, self._samples_written : end_sample])
        audio_frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        audio_frame.sample_rate = AUDIO_RATE
        audio_frame.pts = self._samples_written
        audio_frame.time_base = Fraction(1, AUDIO_RATE)
        self._container.mux(self._audio.encode(audio_frame))
        self._samples_written = end_sample

    def _stop_encoder(self) -> None:
        if self._encoder.is_alive():
            self._queue.put(None)
            self._encoder.join()

    def _finish(self) -> None:
        if self.frames_written != self.frame_count:
            raise ValueError(f"wrote {self.frames_written} of {self.frame_count} frames")
        self._stop_encoder()
        if self._encoder_error is not None:
            raise RuntimeError("the encoder failed") from self._encoder_error
        self._container.mux(self._video.encode(None))
        if self._audio is not None:
            self._container.mux(self._audio.encode(None))
        self._container.close()

    def _abandon(self) -> None:
        try:
            self._stop_encoder()
            if self._container is not None:
                self._container.close()
        finally:
            if os.path.exists(self._partial_path):
                os.remove(self._partial_path)


def poster_jpeg(
    video_path: str, position: float = POSTER_POSITION, quality: int = POSTER_QUALITY
) -> bytes:
    """A JPEG of the frame at `position` (a fraction of the clip's length) of a finished MP4.

    A third of the way in shows the clip's motion under way, unlike its first frame; a clip too
    short to have a frame there gives its last frame.
    """
    with av.open(video_path) as container:
        stream = container.streams.video[0]
        length, unit = stream.duration, stream.time_base
        duration = float(length * unit) if length is not None and unit is not None else 0.0
        target = duration * min(max(position, 0.0), 1.0)
        chosen = None
        for frame in container.decode(stream):
            chosen = frame
            if frame.time is not None and frame.time >= target:
                break
        if chosen is None:
            raise ValueError(f"{video_path} has no video frame")
        image: Image.Image = chosen.to_image()
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue()
