"""The ``triton-s2r`` command line: one entry point, one subcommand per job.

Examples::

    triton-s2r demo                          # render UVL frames of the built-in test scene
    triton-s2r demo --out outputs/demo --frames 8 --resolution 512 --backend embree
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from triton_s2r import __version__


def _demo(args: argparse.Namespace) -> int:
    from triton_s2r.render import make_rasterizer
    from triton_s2r.render.preview import render_to_files
    from triton_s2r.render.primitives import builtin_frames

    scene, state = builtin_frames(args.frames, width=args.resolution, height=args.resolution)
    rasterizer = make_rasterizer(args.backend)
    paths = render_to_files(rasterizer, scene, state, args.out, uvl_format=args.format)
    out = Path(args.out).resolve()
    print(f"rendered {len(paths)} UVL frames of the built-in test scene with the {rasterizer.name} backend")
    print(f"  UVL images (R=u, G=v, B=label value/255): {out / 'uvl'}")
    print(f"  previews (8-bit):                          {out / 'preview'}")
    return 0


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"shard I/N needs 0 <= I < N, got {text!r}")
    return i, n


def _make_dataset(args: argparse.Namespace) -> int:
    from triton_s2r.benchmark.dataset import make_dataset

    root = make_dataset(args.out, preset=args.preset, seed=args.seed, frames=args.frames, resolution=args.resolution,
                        shard=args.shard, backend=args.backend, uvl_format=args.uvl_format, real=not args.no_real)
    print(f"dataset ready: {root.resolve()} (manifest: {root.resolve() / 'dataset.yaml'})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="triton-s2r",
        description="TRITON sim-to-real translation with neural neural textures for robot manipulation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="the main job on the built-in test scene (for now: render UVL frames)",
        description="Render UVL frames of the built-in tabletop test scene from orbiting cameras and write "
        "them as UVL images (reference TRITON format) plus 8-bit previews. Frames already on disk are kept, "
        "so an interrupted run resumes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument("--out", type=Path, default=Path("outputs/demo"), help="output folder")
    demo.add_argument("--frames", type=int, default=8, help="number of frames")
    demo.add_argument("--resolution", type=int, default=256, help="image width and height in pixels")
    demo.add_argument("--backend", choices=["auto", "embree", "nvdiffrast"], default="auto",
                      help="render backend (auto: nvdiffrast on CUDA, else embree)")
    demo.add_argument("--format", choices=["png", "exr"], default="png",
                      help="UVL file format (16-bit PNG or float EXR)")
    demo.set_defaults(func=_demo)

    sub.add_parser(
        "train",
        help="train TRITON (Hydra overrides, e.g. experiment=tiny data.root=DIR; `train --help` lists groups)",
        add_help=False,
    )

    make = sub.add_parser(
        "make-dataset",
        help="build the tabletop robot benchmark (sim UVL frames + paired path-traced 'real' frames)",
        description="Build the tabletop benchmark: a Franka Panda, a table and five objects; unpaired train_sim / "
        "train_real splits, a paired test split and paired video sequences. Deterministic for a seed; resumes "
        "where it stopped; --shard I/N renders every N-th frame so N processes can share the work. Needs the "
        "'scenes' extra (pybullet, yourdfpy, xatlas, mitsuba). Format: data/README.md.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    make.add_argument("--preset", choices=["tiny", "small", "full"], default="tiny", help="dataset size")
    make.add_argument("--out", type=Path, required=True, help="output folder")
    make.add_argument("--seed", type=int, default=0, help="random seed (states, appearance, noise)")
    make.add_argument("--frames", type=int, default=None, help="frames per training split (overrides the preset)")
    make.add_argument("--resolution", type=int, default=None, help="image size in pixels (overrides the preset)")
    make.add_argument("--shard", type=_shard, default=(0, 1), help="render only shard I of N (I/N)")
    make.add_argument("--backend", choices=["auto", "embree", "nvdiffrast"], default="auto",
                      help="render backend for the sim frames")
    make.add_argument("--uvl-format", choices=["png", "exr"], default="png", help="UVL file format")
    make.add_argument("--no-real", action="store_true", help="skip the path-traced real frames (sim only)")
    make.set_defaults(func=_make_dataset)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"]:  # Hydra parses its own overrides
        from triton_s2r.train import cli

        return cli(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, RuntimeError, ImportError) as exc:
        print(f"triton-s2r {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
