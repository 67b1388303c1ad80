"""Pinhole cameras in the OpenCV convention, batched.

Conventions (both render backends follow them, and the tests pin them down):

* Camera frame: x right, y down, z forward (OpenCV). ``world_from_camera`` maps camera
  coordinates to world coordinates; its last column is the camera centre in the world.
* Pixels: the centre of pixel (row i, column j) has image coordinates (x, y) = (j, i), so the
  image spans [-0.5, W - 0.5] x [-0.5, H - 0.5] (OpenCV). A point X_c in the camera frame projects
  to x = fx * X/Z + cx, y = fy * Y/Z + cy. Row 0 is the top of the image.
* Depth is the camera-frame Z of the visible surface (distance along the optical axis).
* World frame: any right-handed frame; ``look_at`` takes an explicit ``up`` (default +z).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


def _as_batch(x: Tensor | np.ndarray | Sequence, trailing: tuple[int, ...]) -> Tensor:
    """Return ``x`` as a float32 tensor with a leading batch dimension."""
    t = torch.as_tensor(np.asarray(x, dtype=np.float32) if not isinstance(x, Tensor) else x)
    t = t.to(torch.float32)
    if t.shape == trailing:
        t = t[None]
    if t.shape[1:] != trailing:
        raise ValueError(f"expected shape {trailing} or (B, {', '.join(map(str, trailing))}), got {tuple(t.shape)}")
    return t


@dataclass(frozen=True)
class Camera:
    """A batch of pinhole cameras sharing one image size.

    Attributes:
        world_from_camera: (B, 4, 4) float32 rigid transforms, OpenCV camera axes.
        intrinsics: (B, 4) float32 ``[fx, fy, cx, cy]`` in pixels, OpenCV pixel-centre convention.
        width: image width W in pixels.
        height: image height H in pixels.
        near: near clipping distance (camera Z) used by the rasterizer; surfaces nearer are not drawn.
        far: far clipping distance (camera Z).
    """

    world_from_camera: Tensor
    intrinsics: Tensor
    width: int
    height: int
    near: float = 0.01
    far: float = 100.0

    def __post_init__(self) -> None:
        if self.world_from_camera.ndim != 3 or self.world_from_camera.shape[1:] != (4, 4):
            raise ValueError(f"world_from_camera must be (B, 4, 4), got {tuple(self.world_from_camera.shape)}")
        if self.intrinsics.shape != (self.world_from_camera.shape[0], 4):
            raise ValueError(f"intrinsics must be (B, 4), got {tuple(self.intrinsics.shape)}")
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be positive, got {self.width}x{self.height}")
        if not 0 < self.near < self.far:
            raise ValueError(f"need 0 < near < far, got near={self.near}, far={self.far}")

    @property
    def batch_size(self) -> int:
        """B, the number of cameras."""
        return self.world_from_camera.shape[0]

    @property
    def camera_from_world(self) -> Tensor:
        """(B, 4, 4) inverse of ``world_from_camera``."""
        return torch.linalg.inv(self.world_from_camera)

    @classmethod
    def look_at(
        cls,
        eye: Tensor | Sequence,
        target: Tensor | Sequence,
        *,
        width: int,
        height: int,
        fov_y_deg: float,
        up: Sequence[float] = (0.0, 0.0, 1.0),
        near: float = 0.01,
        far: float = 100.0,
    ) -> Camera:
        """Cameras at ``eye`` looking at ``target``, principal point at the image centre.

        Args:
            eye: (3,) or (B, 3) camera centres in world coordinates.
            target: (3,) or (B, 3) points the optical axis passes through.
            width: image width in pixels.
            height: image height in pixels.
            fov_y_deg: vertical field of view in degrees (square pixels).
            up: world direction that appears upwards in the image; must not be parallel to the view.
            near: near clipping distance.
            far: far clipping distance.
        """
        eye_t, target_t = _as_batch(eye, (3,)), _as_batch(target, (3,))
        eye_t, target_t = torch.broadcast_tensors(eye_t, target_t)
        up_t = torch.as_tensor(up, dtype=torch.float32).expand_as(eye_t)
        forward = target_t - eye_t
        forward = forward / forward.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        right = torch.linalg.cross(forward, up_t, dim=-1)
        if (right.norm(dim=-1) < 1e-6).any():
            raise ValueError("look_at: `up` is parallel to the viewing direction; pass another `up`")
        right = right / right.norm(dim=-1, keepdim=True)
        down = torch.linalg.cross(forward, right, dim=-1)
        pose = torch.eye(4).repeat(eye_t.shape[0], 1, 1)
        pose[:, :3, 0], pose[:, :3, 1], pose[:, :3, 2], pose[:, :3, 3] = right, down, forward, eye_t
        f = 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
        k = torch.tensor([f, f, (width - 1) / 2, (height - 1) / 2]).repeat(eye_t.shape[0], 1)
        return cls(pose, k, width, height, near, far)

    @classmethod
    def from_opencv(
        cls,
        K: Tensor | np.ndarray,
        *,
        width: int,
        height: int,
        R: Tensor | np.ndarray | None = None,
        t: Tensor | np.ndarray | None = None,
        near: float = 0.01,
        far: float = 100.0,
    ) -> Camera:
        """Cameras from OpenCV calibration: intrinsic matrix and world-to-camera extrinsics.

        Args:
            K: (3, 3) or (B, 3, 3) intrinsic matrices (skew must be 0).
            width: image width in pixels.
            height: image height in pixels.
            R: (3, 3) or (B, 3, 3) rotation of ``x_cam = R @ x_world + t`` (as from ``cv2.solvePnP``
                after ``cv2.Rodrigues``); identity if omitted.
            t: (3,) or (B, 3) translation of the same transform; zero if omitted.
            near: near clipping distance.
            far: far clipping distance.
        """
        K_t = _as_batch(K, (3, 3))
        if (K_t[:, 0, 1].abs() > 1e-9).any():
            raise ValueError("from_opencv: intrinsic matrices with skew are not supported")
        R_t = _as_batch(np.eye(3) if R is None else R, (3, 3))
        t_t = _as_batch(np.zeros(3) if t is None else t, (3,))
        n = max(K_t.shape[0], R_t.shape[0], t_t.shape[0])
        camera_from_world = torch.eye(4).repeat(n, 1, 1)
        camera_from_world[:, :3, :3], camera_from_world[:, :3, 3] = R_t, t_t
        k = torch.stack([K_t[:, 0, 0], K_t[:, 1, 1], K_t[:, 0, 2], K_t[:, 1, 2]], dim=-1).expand(n, 4)
        return cls(torch.linalg.inv(camera_from_world), k.contiguous(), width, height, near, far)

    def supersampled(self, factor: int) -> Camera:
        """The same cameras at ``factor`` times the resolution (each pixel split into factor^2).

        Average-pooling a ``factor``-times image with kernel ``factor`` gives back this camera's pixels.
        """
        if factor < 1:
            raise ValueError(f"supersampling factor must be >= 1, got {factor}")
        fx, fy, cx, cy = self.intrinsics.unbind(-1)
        # Pixel edges stay put: x_edge = x_centre + 0.5 scales by `factor`.
        k = torch.stack([fx * factor, fy * factor, (cx + 0.5) * factor - 0.5, (cy + 0.5) * factor - 0.5], -1)
        return Camera(self.world_from_camera, k, self.width * factor, self.height * factor, self.near, self.far)

    def resized(self, height: int, width: int) -> Camera:
        """The same cameras rendering a (height, width) image of the same view (edges kept)."""
        fx, fy, cx, cy = self.intrinsics.unbind(-1)
        sx, sy = width / self.width, height / self.height
        k = torch.stack([fx * sx, fy * sy, (cx + 0.5) * sx - 0.5, (cy + 0.5) * sy - 0.5], -1)
        return Camera(self.world_from_camera, k, width, height, self.near, self.far)

    def cropped(self, top: Tensor | int, left: Tensor | int, height: int, width: int) -> Camera:
        """Cameras that render only the window [top, top + height) x [left, left + width) of this image.

        Args:
            top: window's top row per camera, an int or a (B,) tensor.
            left: window's left column per camera, an int or a (B,) tensor.
            height: window height in pixels.
            width: window width in pixels.
        """
        shift = torch.stack(torch.broadcast_tensors(torch.as_tensor(left), torch.as_tensor(top)), -1).float()
        k = self.intrinsics.clone()
        k[:, 2:] -= shift.to(k.device)
        return Camera(self.world_from_camera, k, width, height, self.near, self.far)

    def select(self, index: Tensor | list[int] | slice) -> Camera:
        """The cameras at ``index`` of the batch."""
        pose, k = self.world_from_camera[index], self.intrinsics[index]
        return Camera(pose, k, self.width, self.height, self.near, self.far)

    def to(self, device: torch.device | str) -> Camera:
        """These cameras with their tensors on ``device``."""
        return Camera(
            self.world_from_camera.to(device), self.intrinsics.to(device), self.width, self.height, self.near, self.far
        )

    def ray_directions(self) -> Tensor:
        """(B, H, W, 3) world-space ray directions through pixel centres, scaled so camera-frame Z = 1.

        A hit at parameter t along ``origin + t * direction`` therefore has depth t.
        """
        device = self.intrinsics.device
        rows = torch.arange(self.height, dtype=torch.float32, device=device)
        cols = torch.arange(self.width, dtype=torch.float32, device=device)
        y, x = torch.meshgrid(rows, cols, indexing="ij")
        fx, fy, cx, cy = (v[:, None, None] for v in self.intrinsics.unbind(-1))
        d_cam = torch.stack([(x - cx) / fx, (y - cy) / fy, torch.ones_like(x).expand_as(x - cx)], dim=-1)
        return torch.einsum("bij,bhwj->bhwi", self.world_from_camera[:, :3, :3], d_cam)

    def project(self, points_world: Tensor) -> tuple[Tensor, Tensor]:
        """Project world points to pixel coordinates.

        Args:
            points_world: (B, N, 3) float32.

        Returns:
            ``(xy, depth)``: (B, N, 2) pixel coordinates (x = column, y = row, OpenCV centres) and
            (B, N) camera-frame Z.
        """
        cam = self.camera_from_world
        p = points_world @ cam[:, :3, :3].transpose(1, 2) + cam[:, None, :3, 3]
        z = p[..., 2]
        fx, fy, cx, cy = (v[:, None] for v in self.intrinsics.unbind(-1))
        return torch.stack([fx * p[..., 0] / z + cx, fy * p[..., 1] / z + cy], dim=-1), z
