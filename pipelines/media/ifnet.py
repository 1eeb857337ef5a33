# RIFE's IFNet (the five-block RIFE 4.x flow network), vendored from the `saibyo` 0.14.0 wheel
# (saibyo/modules/interpolation/ifnet.py), itself from Practical-RIFE (train_log/IFNet_HDv3.py).
# Changed here: docstrings shortened, the warp grid made on the flow's own device (no `device`
# argument), the ensemble warnings and the final blend (unused: the caller blends full-size
# frames itself) left out. The parameter names are the checkpoint's, unchanged.
#
# MIT License
#
# Copyright (c) 2021 hzwer
# Copyright (c) 2025 Álvaro Rodríguez Sánchez
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
"""RIFE's intermediate flow network: from two frames and an instant between them, the backward
flows from that instant to each frame and the mask that blends the two warped frames."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_grids: dict[tuple[str, tuple[int, ...]], torch.Tensor] = {}


def warp(image: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """`image` (n, c, h, w) sampled along the backward `flow` (n, 2, h, w) in pixels."""
    key = (str(flow.device), tuple(flow.shape))
    if key not in _grids:
        n, _, height, width = flow.shape
        horizontal = (
            torch.linspace(-1.0, 1.0, width, device=flow.device)
            .view(1, 1, 1, width)
            .expand(n, -1, height, -1)
        )
        vertical = (
            torch.linspace(-1.0, 1.0, height, device=flow.device)
            .view(1, 1, height, 1)
            .expand(n, -1, -1, width)
        )
        _grids[key] = torch.cat([horizontal, vertical], dim=1)
    normalised = torch.cat(
        [
            flow[:, 0:1] / ((image.shape[3] - 1.0) / 2.0),
            flow[:, 1:2] / ((image.shape[2] - 1.0) / 2.0),
        ],
        dim=1,
    )
    grid = (_grids[key] + normalised).permute(0, 2, 3, 1)
    return F.grid_sample(
        input=image, grid=grid, mode="bilinear", padding_mode="border", align_corners=True
    )


def conv(in_channels: int, out_channels: int, kernel: int = 3, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, padding=1, bias=True),
        nn.LeakyReLU(0.2, inplace=True),
    )


class Head(nn.Module):
    """The features each frame is encoded into (4 channels at full size)."""

    def __init__(self) -> None:
        super().__init__()
        self.cnn0 = nn.Conv2d(3, 16, 3, 2, 1)
        self.cnn1 = nn.Conv2d(16, 16, 3, 1, 1)
        self.cnn2 = nn.Conv2d(16, 16, 3, 1, 1)
        self.cnn3 = nn.ConvTranspose2d(16, 4, 4, 2, 1)
        self.relu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.cnn0(x))
        x = self.relu(self.cnn1(x))
        x = self.relu(self.cnn2(x))
        return self.cnn3(x)


class ResConv(nn.Module):
    def __init__(self, channels: int, dilation: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, 1, dilation, dilation=dilation, groups=1)
        self.beta = nn.Parameter(torch.ones((1, channels, 1, 1)), requires_grad=True)
        self.relu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv(x) * self.beta + x)


class IFBlock(nn.Module):
    """One refinement at one scale: flow (4 channels), mask (1) and features (8)."""

    def __init__(self, in_channels: int, c: int = 64) -> None:
        super().__init__()
        self.conv0 = nn.Sequential(conv(in_channels, c // 2, 3, 2), conv(c // 2, c, 3, 2))
        self.convblock = nn.Sequential(*(ResConv(c) for _ in range(8)))
        self.lastconv = nn.Sequential(nn.ConvTranspose2d(c, 4 * 13, 4, 2, 1), nn.PixelShuffle(2))

    def forward(
        self, x: torch.Tensor, flow: torch.Tensor | None = None, scale: float = 1
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = F.interpolate(x, scale_factor=1.0 / scale, mode="bilinear", align_corners=False)
        if flow is not None:
            flow = (
                F.interpolate(flow, scale_factor=1.0 / scale, mode="bilinear", align_corners=False)
                / scale
            )
            x = torch.cat((x, flow), 1)
        feat = self.convblock(self.conv0(x))
        out = F.interpolate(
            self.lastconv(feat), scale_factor=scale, mode="bilinear", align_corners=False
        )
        return out[:, :4] * scale, out[:, 4:5], out[:, 5:]


class IFNet(nn.Module):
    """Five blocks, coarse to fine (`scales`, e.g. 16, 8, 4, 2, 1), each refining the flows."""

    def __init__(self) -> None:
        super().__init__()
        self.block0 = IFBlock(7 + 8, c=192)
        self.block1 = IFBlock(8 + 4 + 8 + 8, c=128)
        self.block2 = IFBlock(8 + 4 + 8 + 8, c=96)
        self.block3 = IFBlock(8 + 4 + 8 + 8, c=64)
        self.block4 = IFBlock(8 + 4 + 8 + 8, c=32)
        self.encode = Head()

    def forward(
        self, pair: torch.Tensor, timestep: torch.Tensor, scales: list[float]
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """`pair`: the two frames side by side in channels (n, 6, h, w), in [0, 1]; `timestep`:
        the instants (n, 1, 1, 1) in (0, 1). Returns the flows after each block (n, 4, h, w:
        to the first frame, then to the second) and the last block's mask logits (n, 1, h, w),
        the first frame's share of the blend before a sigmoid."""
        img0, img1 = pair[:, :3], pair[:, 3:6]
        timestep = timestep.repeat(1, 1, img0.shape[2], img0.shape[3])
        f0, f1 = self.encode(img0), self.encode(img1)
        blocks = [self.block0, self.block1, self.block2, self.block3, self.block4]
        flow, mask, feat = blocks[0](torch.cat((img0, img1, f0, f1, timestep), 1), None, scales[0])
        flows = [flow]
        for block, scale in zip(blocks[1:], scales[1:], strict=True):
            warped0, warped1 = warp(img0, flow[:, :2]), warp(img1, flow[:, 2:4])
            wf0, wf1 = warp(f0, flow[:, :2]), warp(f1, flow[:, 2:4])
            inputs = torch.cat((warped0, warped1, wf0, wf1, timestep, mask, feat), 1)
            delta, mask, feat = block(inputs, flow, scale)
            flow = flow + delta
            flows.append(flow)
        return flows, mask
