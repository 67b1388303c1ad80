"""UVL images: G-buffers stored in the reference TRITON file format.

A UVL image is an RGB image with R = u, G = v, B = label value / 255, all in [0, 1]. Files are float
OpenEXR (``.exr``, float32 or half; the reference format, read with the ``OpenEXR`` package) or 16-bit
PNG (``.png``; u and v quantised to 1/65535, label values exact).
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import OpenEXR
import torch
from torch import Tensor

from triton_s2r.render.gbuffer import VOID, GBuffer
from triton_s2r.render.scene import LabelTable
from triton_s2r.utils.files import atomic_write, write_image

UVL_SUFFIXES = (".exr", ".png")


class UVLFileError(ValueError):
    """A UVL file is missing, corrupt or inconsistent with the label table; the message names it."""


def gbuffer_to_uvl(gbuffer: GBuffer, labels: LabelTable) -> Tensor:
    """Encode a G-buffer as UVL images.

    Args:
        gbuffer: B frames with label ids in 0..K.
        labels: the scene's label table (gives each id its file value).

    Returns:
        (B, 3, H, W) float32 in [0, 1]: u, v, value / 255. Void pixels are (0, 0, void_value / 255).
    """
    if labels.void_value is None and bool((gbuffer.label == VOID).any()):
        raise ValueError("the label table has no void value (void_value: null) but the frames have void pixels")
    lut = torch.tensor([labels.void_value or 0, *labels.values], dtype=torch.float32, device=gbuffer.uv.device)
    blue = lut[gbuffer.label] / 255.0
    uv = gbuffer.uv * gbuffer.mask[:, None]
    return torch.cat([uv, blue[:, None]], dim=1)


def uvl_to_gbuffer(uvl: Tensor, labels: LabelTable, *, source: str = "UVL image") -> GBuffer:
    """Decode UVL images into a G-buffer (no depth or triangle ids).

    Label values are recovered as round(255 * B), which is exact for float32, half and 16-bit files.

    Args:
        uvl: (B, 3, H, W) float32 UVL images.
        labels: label table mapping file values to ids.
        source: name used in error messages (the file path).

    Raises:
        UVLFileError: a value is NaN or infinite, or a blue value is not a label value of the table.
    """
    if uvl.ndim != 4 or uvl.shape[1] != 3:
        raise UVLFileError(f"{source}: expected (B, 3, H, W) UVL images, got {tuple(uvl.shape)}")
    check_finite(uvl, source=source)
    value = torch.round(uvl[:, 2] * 255.0).clamp(-1, 256).to(torch.int64)
    lut = torch.full((258,), -1, dtype=torch.int64, device=uvl.device)  # index = value + 1
    for i, v in enumerate(labels.values, start=1):
        lut[v + 1] = i
    if labels.void_value is not None:
        lut[labels.void_value + 1] = VOID
    label = lut[value + 1]
    if bool((label < 0).any()):
        unknown = sorted(set(value[label < 0].unique().tolist()))
        raise UVLFileError(
            f"{source}: label values {unknown[:10]} (blue * 255) are not in the label table "
            f"{dict(zip(labels.names, labels.values, strict=True))} (void = {labels.void_value}); "
            "fix the label table or the file"
        )
    uv = uvl[:, :2] * (label != VOID)[:, None]
    return GBuffer(uv=uv.to(torch.float32), label=label)


def check_finite(uvl: Tensor, *, source: str = "UVL image") -> None:
    """Raise if a UVL image holds NaN or infinity (float EXR files can), naming the channel and pixel count.

    Such values would otherwise decode to a black frame (NaN UVs) or an invalid label index.

    Args:
        uvl: (..., 3, H, W) float UVL images (u, v, label value / 255).
        source: name used in the message (the file path).
    """
    bad = ~torch.isfinite(uvl)
    if not bool(bad.any()):
        return
    per_channel = bad.movedim(-3, 0).reshape(3, -1).sum(1).tolist()
    counts = ", ".join(f"{n} in {name}" for name, n in zip(("u", "v", "label"), per_channel, strict=True) if n)
    raise UVLFileError(f"{source}: NaN or infinite values ({counts}); UVL values must be finite, in [0, 1]: "
                       "re-export the frame (check the exporter's compositing of empty pixels) or delete it")


def write_uvl(path: str | os.PathLike, uvl: Tensor | np.ndarray, *, half: bool = False) -> None:
    """Write one UVL image atomically (a temporary file renamed into place).

    Args:
        path: ``.exr`` (float32, or half with ``half=True``; ZIP compression) or ``.png`` (16-bit).
        uvl: (3, H, W) UVL image in [0, 1].
        half: store EXR channels as 16-bit floats (the reference Blender files are half).
    """
    path = Path(path)
    hwc = np.ascontiguousarray(np.asarray(torch.as_tensor(uvl).detach().cpu(), dtype=np.float32).transpose(1, 2, 0))
    suffix = path.suffix.lower()
    if suffix not in UVL_SUFFIXES:
        raise ValueError(f"{path}: UVL files must end in .exr or .png")
    if suffix == ".png":
        write_image(path, np.round(np.clip(hwc, 0.0, 1.0) * 65535.0).astype(np.uint16))
        return
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with atomic_write(path) as tmp, OpenEXR.File(header, {"RGB": hwc.astype(np.float16) if half else hwc}) as f:
        f.write(str(tmp))


def read_uvl(path: str | os.PathLike) -> Tensor:
    """Read one UVL image.

    Returns:
        (3, H, W) float32 tensor (u, v, label value / 255). An alpha channel, if any, is dropped.

    Raises:
        FileNotFoundError: no such file.
        UVLFileError: the file is corrupt, not RGB, an 8-bit PNG (too coarse for UVs), or holds NaN or
            infinity (float EXR).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"UVL file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".exr":
        try:
            with OpenEXR.File(str(path), separate_channels=True) as f:
                channels = {name: ch.pixels for name, ch in f.channels().items()}
        except Exception as exc:  # OpenEXR raises RuntimeError for unreadable files
            raise UVLFileError(f"{path}: not a readable OpenEXR file ({exc}); re-export or delete it") from exc
        if not {"R", "G", "B"} <= channels.keys():
            raise UVLFileError(f"{path}: EXR needs R, G, B channels, found {sorted(channels)}")
        hwc = np.stack([channels[c] for c in "RGB"], axis=-1).astype(np.float32)
    elif suffix == ".png":
        img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if img is None:
            raise UVLFileError(f"{path}: not a readable PNG file; re-export or delete it")
        if img.dtype != np.uint16 or img.ndim != 3 or img.shape[2] < 3:
            raise UVLFileError(
                f"{path}: UVL PNGs must be 16-bit RGB (got {img.dtype}, shape {img.shape}); "
                "8-bit PNG cannot hold UVs precisely, write EXR or 16-bit PNG"
            )
        hwc = img[..., 2::-1].astype(np.float32) / 65535.0  # BGR(A) -> RGB
    else:
        raise UVLFileError(f"{path}: unknown UVL file type; expected one of {UVL_SUFFIXES}")
    uvl = torch.from_numpy(np.ascontiguousarray(hwc.transpose(2, 0, 1)))
    check_finite(uvl, source=str(path))
    return uvl


def load_uvl_gbuffer(path: str | os.PathLike, labels: LabelTable) -> GBuffer:
    """Read a UVL file and decode it into a one-frame G-buffer (errors name the file)."""
    return uvl_to_gbuffer(read_uvl(path)[None], labels, source=str(path))
