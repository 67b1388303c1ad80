"""UVL files (EXR / 16-bit PNG) round trips and the errors for bad files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from triton_s2r.render import (
    GBuffer,
    LabelTable,
    UVLFileError,
    gbuffer_to_uvl,
    load_uvl_gbuffer,
    read_uvl,
    uvl_to_gbuffer,
    write_uvl,
)

LABELS = LabelTable(("table", "block", "ball"), (255, 50, 100), void_value=0)


def random_gbuffer(seed: int = 0, size: int = 24) -> GBuffer:
    g = torch.Generator().manual_seed(seed)
    label = torch.randint(0, LABELS.num_labels + 1, (2, size, size), generator=g)
    uv = torch.rand(2, 2, size, size, generator=g) * (label != 0)[:, None]
    return GBuffer(uv=uv, label=label)


def test_gbuffer_uvl_round_trip_in_memory() -> None:
    g = random_gbuffer()
    uvl = gbuffer_to_uvl(g, LABELS)
    assert uvl.shape == (2, 3, 24, 24) and uvl.min() >= 0 and uvl.max() <= 1
    # Blue is the reference format's value / 255.
    assert torch.allclose(uvl[:, 2][g.label == 2], torch.tensor(50 / 255))
    back = uvl_to_gbuffer(uvl, LABELS)
    assert torch.equal(back.label, g.label)
    assert torch.equal(back.uv, g.uv)


@pytest.mark.parametrize(
    ("suffix", "half", "tol"), [(".exr", False, 0.0), (".exr", True, 2**-11), (".png", False, 0.5 / 65535)]
)
def test_file_round_trip_is_exact_to_format_precision(tmp_path, suffix: str, half: bool, tol: float) -> None:
    g = random_gbuffer(seed=1)
    uvl = gbuffer_to_uvl(g, LABELS)[0]
    path = tmp_path / f"frame{suffix}"
    write_uvl(path, uvl, half=half)
    back = read_uvl(path)
    assert back.dtype == torch.float32 and back.shape == uvl.shape
    err = (back[:2] - uvl[:2]).abs().max().item()
    assert err <= tol + 1e-9
    if tol == 0.0:
        assert torch.equal(back, uvl)
    decoded = load_uvl_gbuffer(path, LABELS)
    assert torch.equal(decoded.label[0], g.label[0])  # labels are always exact
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_reads_reference_style_half_rgba_exr(tmp_path) -> None:
    """The reference Blender files are half-float R, G, B, A; alpha is dropped."""
    import OpenEXR

    h = np.random.default_rng(0).random((8, 9, 4)).astype(np.float16)
    h[..., 2] = np.float16(255 / 255)
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    with OpenEXR.File(header, {c: np.ascontiguousarray(h[..., i]) for i, c in enumerate("RGBA")}) as f:
        f.write(str(tmp_path / "ref.exr"))
    uvl = read_uvl(tmp_path / "ref.exr")
    assert uvl.shape == (3, 8, 9)
    assert torch.equal(uvl, torch.from_numpy(h[..., :3].astype(np.float32)).permute(2, 0, 1))
    assert (load_uvl_gbuffer(tmp_path / "ref.exr", LABELS).label == 1).all()


def test_unknown_label_value_names_the_file(tmp_path) -> None:
    uvl = torch.zeros(3, 4, 4)
    uvl[2, 0, 0] = 77 / 255
    write_uvl(tmp_path / "bad.exr", uvl)
    with pytest.raises(UVLFileError, match=r"bad\.exr.*\[77\].*not in the label table"):
        load_uvl_gbuffer(tmp_path / "bad.exr", LABELS)


@pytest.mark.parametrize("name", ["corrupt.exr", "corrupt.png"])
def test_corrupt_file_names_the_file(tmp_path, name: str) -> None:
    (tmp_path / name).write_bytes(b"this is not an image")
    with pytest.raises(UVLFileError, match=name.replace(".", r"\.")):
        read_uvl(tmp_path / name)


def test_missing_and_8bit_files_are_clear_errors(tmp_path) -> None:
    import cv2

    with pytest.raises(FileNotFoundError, match="missing.exr"):
        read_uvl(tmp_path / "missing.exr")
    cv2.imwrite(str(tmp_path / "eight.png"), np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(UVLFileError, match="eight.png.*16-bit"):
        read_uvl(tmp_path / "eight.png")


def test_void_needs_a_void_value() -> None:
    no_void = LabelTable(("table",), (255,), void_value=None)
    g = GBuffer(uv=torch.zeros(1, 2, 2, 2), label=torch.tensor([[[0, 1], [1, 1]]]))
    with pytest.raises(ValueError, match="no void value"):
        gbuffer_to_uvl(g, no_void)


def test_label_table_validation() -> None:
    with pytest.raises(ValueError, match="distinct"):
        LabelTable(("a", "b"), (10, 10))
    with pytest.raises(ValueError, match="distinct"):
        LabelTable(("a",), (0,), void_value=0)
    table = LabelTable.evenly_spaced(["a", "b", "c", "d", "e"])
    assert table.values[-1] == 255 and table.void_value == 0 and len(set(table.values)) == 5
