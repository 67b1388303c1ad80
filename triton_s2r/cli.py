"""The ``triton-s2r`` command line: one entry point, one subcommand per job.

Examples::

    triton-s2r demo                                   # the main job: build data, train, translate to mp4
    triton-s2r make-dataset --preset tiny --out outputs/data/tiny
    triton-s2r train experiment=tiny data.root=outputs/data/tiny hydra.run.dir=outputs/runs/tiny
    triton-s2r translate outputs/runs/tiny outputs/data/tiny --out outputs/videos/tiny.mp4 --side-by-side
    triton-s2r export-textures outputs/runs/tiny --out outputs/textures/tiny
    triton-s2r eval outputs/runs/tiny outputs/data/tiny --out outputs/eval/tiny.json
    triton-s2r downstream outputs/data/tiny --train-on real --out outputs/downstream/real.json
    triton-s2r label-colours outputs/data/small --labels block_a,block_b,block_c,ball,can
    triton-s2r render-sim examples/xarm/scene.yaml examples/xarm/trajectory.csv --out outputs/xarm
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from triton_s2r import __version__
from triton_s2r.utils.arguments import HelpFormatter, fps, resolution, shard


def _demo(args: argparse.Namespace) -> int:
    from triton_s2r.demo import run_demo
    from triton_s2r.runs.run_dir import RunDir

    result = run_demo(args.out, preset=args.preset, experiment=args.experiment, backend=args.backend,
                      device=args.device, batch_size=args.batch_size, fps=args.fps, overrides=tuple(args.override))
    video = result.video
    print(f"\ndemo finished in {result.seconds / 60:.1f} min")
    print(f"  dataset:     {result.data_root}")
    status = RunDir(result.run_dir).status()
    batches = f", {status['batches']} batches" if "batches" in status else ""
    print(f"  run:         {result.run_dir} ({'trained now' if result.trained else 'reused, already trained'}{batches}"
          f"{', stopped by its time budget' if status.get('stopped_by') == 'max_time' else ''})")
    print(f"  checkpoint:  {result.checkpoint}")
    print(f"  video:       {video.out} ({video.num_frames} frames, {video.frame_size[1]}x{video.frame_size[0]}, "
          f"panels: {' | '.join(video.panels)})")
    print(f"  evaluation:  {result.evaluation}")
    m = result.metrics
    print(f"  metrics:     PSNR {m['psnr']:.2f} dB, objects and robot {m['psnr_masked']:.2f} dB, HaarPSI "
          f"{m['haarpsi']:.3f} (higher is better)")
    if m["contrast_ratio_masked"] is not None:
        print(f"               objects and robot stand out {m['contrast_ratio_masked']:.2f}x as much as in the real "
              f"frames (contrast ratio; near 0: faded from view)")
    if m["detail_ratio_masked"] is not None:
        print(f"               objects and robot hold {m['detail_ratio_masked']:.2f}x the real frames' detail "
              f"within them (detail ratio; near 0: flat or blurred)")
    if m["surface_consistency"] is not None:
        print(f"               surface consistency {m['surface_consistency']:.4f}, warp error {m['warp_error']:.4f} "
              f"(lower is better; the real frames: {m['surface_consistency_real']:.4f}, {m['warp_error_real']:.4f})")
    textures = result.run_dir.parent.parent / "textures" / result.run_dir.name
    print(f"  next:        triton-s2r export-textures {result.run_dir} --out {textures}")
    return 0


def _translate(args: argparse.Namespace) -> int:
    from triton_s2r.inference.sequences import translate

    result = translate(args.run_dir, args.input, args.out, side_by_side=args.side_by_side,
                       batch_size=args.batch_size, device=args.device, checkpoint=args.checkpoint,
                       sequence=args.sequence, scene=args.scene, resolution=args.resolution,
                       supersample=args.supersample, backend=args.backend, fps=args.fps,
                       texture_resolution=args.texture_resolution or None, compile=args.compile)
    print(f"wrote {result.out.resolve()}: {result.num_frames} frames of {result.frame_size[1]}x"
          f"{result.frame_size[0]} ({' | '.join(result.panels)}) from {result.source} on {result.device}, "
          f"{result.num_frames / max(result.seconds, 1e-9):.1f} frames/s")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from triton_s2r.evaluation.evaluate import evaluate, write_metrics

    result = evaluate(args.source, args.dataset_dir, split=args.split, checkpoint=args.checkpoint,
                      device=args.device, batch_size=args.batch_size, grid_size=args.grid_size,
                      texture_resolution=args.texture_resolution)
    out = write_metrics(result, args.out)
    shown = ("psnr", "psnr_masked", "ssim", "haarpsi", "haarpsi_masked", "colour_error_masked",
             "colour_error_assigned_masked", "contrast_ratio_masked", "detail_ratio_masked", "texture_psnr",
             "texture_psnr_constant",
             "texture_colour_psnr", "texture_colour_psnr_shuffled", "real_label_iou_masked", "surface_consistency",
             "surface_consistency_real", "warp_error", "warp_error_real")
    print("  ".join(f"{k}={result[k]:.4f}" for k in shown if result[k] is not None))
    print(f"wrote {out.resolve()} ({result['n_frames']} paired frames, {result['n_sequences']} sequences, "
          f"from a {result['source']} folder)")
    return 0


def _downstream(args: argparse.Namespace) -> int:
    from triton_s2r.evaluation.downstream import downstream
    from triton_s2r.evaluation.evaluate import write_metrics

    result = downstream(args.dataset_dir, args.train_on, seed=args.seed, train_frames=args.train_frames,
                        steps=args.steps, batch_size=args.batch_size, input_size=args.input_size, device=args.device)
    out = write_metrics(result, args.out)
    print(f"joint_error_deg={result['joint_error_deg']:.2f}  object_position_error_cm="
          f"{result['object_position_error_cm']:.2f}  (always the training mean: "
          f"{result['joint_error_deg_mean_pose']:.2f} deg, {result['object_position_error_cm_mean_pose']:.2f} cm)")
    print(f"wrote {out.resolve()} (trained on {result['n_train']} {args.train_on} images, tested on "
          f"{result['n_test']} real frames, {result['device']})")
    return 0


def _export_textures(args: argparse.Namespace) -> int:
    from triton_s2r.inference.export import export_textures
    from triton_s2r.inference.translator import Translator

    translator = Translator.from_run_dir(args.run_dir, checkpoint=args.checkpoint, device=args.device)
    result = export_textures(translator, args.out, resolution=args.resolution)
    out = Path(args.out).resolve()
    print(f"wrote {len(result.textures)} textures ({args.resolution}x{args.resolution}) to {out / 'textures'}")
    if result.obj:
        print(f"  meshes: {len(result.obj)} OBJ in {out / 'obj'}, {len(result.glb)} GLB in {out / 'glb'}")
    else:
        print("  no meshes: the run keeps no scene (it was trained on plain UVL folders)")
    if result.scene_glb:
        print(f"  whole scene (first test frame's poses): {result.scene_glb.resolve()}")
    return 0


def _label_colours(args: argparse.Namespace) -> int:
    from triton_s2r.data.label_colours import label_colours_override, measure_label_colours

    colours, counts = measure_label_colours(args.dataset_dir, split=args.split, every=args.every, names=args.labels)
    frames = "every frame" if args.every == 1 else f"one frame in {args.every}"
    print(f"mean colours (r, g, b in [0, 1]) over split {args.split!r}, {frames}:")
    for name, colour in colours.items():
        print(f"  {name:<12} {colour[0]:.3f} {colour[1]:.3f} {colour[2]:.3f}  ({counts[name]} pixels)")
    print("training override (docs/method.md §4.11; with loss.loss_weights.label_colours=100):")
    print(f"  '{label_colours_override(colours)}'")
    return 0


def _render_sim(args: argparse.Namespace) -> int:
    from triton_s2r.render.render_sim import render_sim

    result = render_sim(args.scene, args.states, args.out, size=args.resolution, backend=args.backend,
                        batch_size=args.batch_size, uvl_format=args.uvl_format)
    out = result.out.resolve()
    print(f"wrote {result.num_frames} UVL frames of {result.size[1]}x{result.size[0]} ({result.backend}) to "
          f"{out / 'uvl'}, states to {out / 'states.npz'}, labels to {out / 'labels.yaml'}")
    print(f"  labels: {dict(zip(result.labels.names, result.labels.values, strict=True))}")
    print(f"  train:  {result.train_command()}")
    if result.robot_labels:
        print(f"  with the joints your robot logged for each photo (one row per photo, in file-name order; "
              f"data/README.md), add: {result.robot_pairing_overrides(args.scene)}")
    print(f"  translate: triton-s2r translate RUN {out / 'states.npz'} --scene {args.scene} --resolution "
          f"{result.size[0]} --out video.mp4")
    return 0


def _make_dataset(args: argparse.Namespace) -> int:
    from triton_s2r.tabletop.dataset import make_dataset

    root = make_dataset(args.out, preset=args.preset, seed=args.seed, frames=args.frames, resolution=args.resolution,
                        shard=args.shard, backend=args.backend, uvl_format=args.uvl_format, real=not args.no_real,
                        sim_clip_frames=args.sim_clip_frames, camera_azimuth_deg=args.camera_azimuth,
                        rebuild=args.rebuild)
    print(f"dataset ready: {root.resolve()} (manifest: {root.resolve() / 'dataset.yaml'})")
    return 0


BACKEND_CHOICES = ["auto", "embree", "nvdiffrast"]  # triton_s2r.render.BACKENDS, without importing torch for --help


def _add_run_arguments(parser: argparse.ArgumentParser, name: str = "run_dir",
                       help: str = "run directory written by `triton-s2r train`", only: str = "") -> None:
    """Add the positional ``name``, --checkpoint and --device: how a command picks a trained model.

    Used by translate, export-textures and eval; ``only`` is a prefix for the options' help where the positional
    need not be a run.
    """
    parser.add_argument(name, type=Path, help=help)
    parser.add_argument("--checkpoint", default=None,
                        help=f"{only}checkpoint file or name in RUN_DIR/checkpoints (default: last.ckpt)")
    parser.add_argument("--device", default="auto", help=f"{only}auto (CUDA if available), cpu, cuda, cuda:N")


def _add_demo_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand (its arguments and handler) to ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="the main job: build the benchmark, train, translate a test sequence to a side-by-side mp4, evaluate",
        description="Build the benchmark preset at OUT/data/PRESET if missing, train EXPERIMENT into "
        "OUT/runs/EXPERIMENT (a finished run is reused, an interrupted one resumed), translate the first test "
        "sequence to OUT/videos/EXPERIMENT_SEQUENCE.mp4 with the panel UVL | texture | translation | real, "
        "evaluate the run into OUT/eval/EXPERIMENT.json, and print where everything is. Rerun the same command "
        "to finish an interrupted demo.",
        formatter_class=HelpFormatter,
    )
    demo.add_argument("--out", type=Path, default=Path("outputs"), help="output root (data/, runs/, videos/)")
    demo.add_argument("--preset", choices=["tiny", "small", "full"], default="small", help="benchmark size")
    demo.add_argument("--experiment", default="demo", help="training recipe (conf/experiment/NAME.yaml)")
    demo.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                      help="render backend for building the dataset")
    demo.add_argument("--device", default="auto", help="device for translation: auto, cpu, cuda, cuda:N")
    demo.add_argument("--batch-size", type=int, default=16, help="frames per translation batch")
    demo.add_argument("--fps", type=fps, default=10.0, help="video frame rate (frames per second, > 0)")
    demo.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                      help="extra Hydra override for training (repeatable), e.g. trainer.max_time=00:00:05:00 "
                      "(the demo experiment trains for 14 minutes, at most 24 epochs of 50 batches); ignored when "
                      "the run has finished already")
    demo.set_defaults(func=_demo)


def _add_translate_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``translate`` subcommand (its arguments and handler) to ``sub``."""
    trans = sub.add_parser(
        "translate",
        help="translate a simulated sequence (dataset, UVL frames or states) with a trained run",
        description="Translate INPUT with the run in RUN_DIR, batch by batch, and write OUT. INPUT: a dataset "
        "root (its first sequence; --sequence picks another split), a dataset split or sequence folder, a folder "
        "of UVL frames (EXR or 16-bit PNG, reference TRITON format) or a states.npz file (rendered on the fly: "
        "nvdiffrast on a GPU, else embree). OUT: a .mp4 file (H.264) or a folder of PNG frames; it appears only "
        "when complete. Example: triton-s2r translate outputs/runs/demo outputs/data/small --out seq.mp4 "
        "--side-by-side",
        formatter_class=HelpFormatter,
    )
    _add_run_arguments(trans)
    trans.add_argument("input", type=Path, help="dataset root, sequence folder, UVL folder or states.npz")
    trans.add_argument("--out", type=Path, required=True, help="output .mp4 file or PNG folder")
    trans.add_argument("--side-by-side", action="store_true",
                       help="write panels: UVL | texture projection | translation | real (when the input has it)")
    trans.add_argument("--batch-size", type=int, default=16, help="frames per model call")
    trans.add_argument("--sequence", default=None, help="split of a dataset root: seq_001, sequences/seq_001, test")
    trans.add_argument("--scene", type=Path, default=None, help="scene file for rendering a states input "
                       "(default: the enclosing dataset's assets/scene.yaml, else the run's training dataset)")
    trans.add_argument("--resolution", type=int, default=None,
                       help="square frame size for rendered states (default: the dataset's)")
    trans.add_argument("--supersample", type=int, default=1, help="render states at this factor (antialiasing)")
    trans.add_argument("--texture-resolution", type=int, default=1024,
                       help="rasterise the learned texture once at this size per label and sample it bilinearly; "
                            "0 evaluates the texture network at every pixel (exact, slower)")
    trans.add_argument("--compile", action="store_true",
                       help="torch.compile the translation: faster on a GPU for long sequences, after a first batch "
                            "that compiles (up to minutes)")
    trans.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                       help="render backend for states (auto: nvdiffrast when translating on CUDA)")
    trans.add_argument("--fps", type=fps, default=10.0, help="video frame rate (frames per second, > 0)")
    trans.set_defaults(func=_translate)


def _add_export_textures_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``export-textures`` subcommand (its arguments and handler) to ``sub``."""
    export = sub.add_parser(
        "export-textures",
        help="bake the learned textures to PNG and write the scene's meshes with them (OBJ, GLB)",
        description="Bake each label's learned texture to OUT/textures/LABEL.png (u right, v up) and, when the "
        "run keeps its training scene (RUN/scene: runs on benchmark data do), write its meshes textured with "
        "them: OUT/obj/*.obj (+ .mtl), "
        "OUT/glb/*.glb, and OUT/scene.glb with all objects posed as in the first test frame.",
        formatter_class=HelpFormatter,
    )
    _add_run_arguments(export)
    export.add_argument("--out", type=Path, required=True, help="output folder")
    export.add_argument("--resolution", type=int, default=1024, help="texture size in pixels")
    export.set_defaults(func=_export_textures)


def _add_label_colours_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``label-colours`` subcommand (its arguments and handler) to ``sub``."""
    colours = sub.add_parser(
        "label-colours",
        help="each label's mean colour in a dataset's paired photos, as the training override of the optional "
        "label-colour term",
        description="Read each label's mean colour over its pixels in the photos of SPLIT, where the photos come "
        "with UVL frames of the same states (the benchmark's train_real and test; or a few of your own photos "
        "with UVL frames rendered from their states), and print them with the Hydra override "
        "loss.label_colours={...} for the label-colour term (docs/method.md §4.11), which tells the objects their "
        "colours when the unpaired terms cannot. Name the labels to give (--labels): the runs measured gave the "
        "moving objects only. Example: triton-s2r label-colours outputs/data/small --labels "
        "block_a,block_b,block_c,ball,can",
        formatter_class=HelpFormatter,
    )
    colours.add_argument("dataset_dir", type=Path, help="dataset folder (dataset.yaml)")
    colours.add_argument("--split", default="train_real", help="a split with photos and UVL frames")
    colours.add_argument("--every", type=int, default=1, help="use every N-th frame of the split")
    colours.add_argument("--labels", type=lambda text: [n for n in text.split(",") if n], default=None,
                         metavar="NAME,NAME", help="labels to measure, comma-separated (default: every label shown)")
    colours.set_defaults(func=_label_colours)


def _add_train_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand (its arguments and handler) to ``sub``."""
    sub.add_parser(
        "train",
        help="train TRITON (Hydra overrides, e.g. experiment=tiny data.root=DIR; `train --help` lists groups)",
        add_help=False,
    )


def _add_eval_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``eval`` subcommand (its arguments and handler) to ``sub``."""
    ev = sub.add_parser(
        "eval",
        help="metrics of a trained run, or of any translator's frames, on a benchmark dataset (PSNR, SSIM, "
        "HaarPSI, surface consistency, warp error, texture recovery)",
        description="Score SOURCE on DATASET_DIR and write metrics as JSON. SOURCE is a run directory (holds "
        "config.yaml: the run translates the paired split and every video sequence) or a frames folder from any "
        "translator, laid out like the dataset's real frames with the same names and size (SOURCE/test/000000.png, "
        "SOURCE/sequences/seq_000/000000.png, ...; without sequences/ the consistency keys are null). Keys: psnr, "
        "ssim, haarpsi (whole frames, higher is better; HaarPSI is a perceptual similarity in (0, 1] that blur "
        "lowers), psnr_masked, ssim_masked, haarpsi_masked (objects and robot only), psnr_by_label (void and each "
        "label), colour_error_by_label and colour_error_masked (each label's mean colour against the real "
        "frame's: wrong colours rather than blur; lower is better), colour_error_assigned_by_label and "
        "colour_error_assigned_masked (the same with labels of one shape, listed under interchangeable_labels, "
        "matched to the real labels of their group that fit best, in colour_assignment: unpaired training cannot "
        "know which copy is which), contrast_ratio_by_label and "
        "contrast_ratio_masked (how much each label stands out from its surroundings, translation over real "
        "frame: near 0 where objects fade from view; near 1 is best), detail_ratio_by_label and "
        "detail_ratio_masked (how much each label's colours vary within it, its patterns and grain, translation "
        "over real frame: near 0 for flat or blurred blobs; near 1 is best), surface_consistency, warp_error and "
        "warp_error_by_label (lower is better; the _real variants give "
        "the real frames' own level), texture_psnr and texture_psnr_by_label (runs only: learned textures against "
        "the benchmark's hidden albedo after a per-label affine colour fit, over the texels the frames show; "
        "texture_psnr_constant, for any source: the score of a texture constant on each label, the level to beat), "
        "texture_colour_psnr (runs only: the same with one affine colour fit for all labels, so each label's own "
        "colour counts; texture_colour_psnr_shuffled: the labels' true colours shuffled among them, the chance level "
        "to beat), "
        "real_label_iou_by_label and real_label_iou_masked (runs only: how the run's real->sim translator labels "
        "the real frames, intersection over union with their true labels; higher is better), n_frames, source, "
        "and the dataset and checkpoint. FID, KID and LPIPS need pretrained weights and are "
        "reported as null; every null key has its reason under 'absent'. Examples: triton-s2r eval "
        "outputs/runs/demo outputs/data/small --out outputs/metrics.json; triton-s2r eval cyclegan_frames "
        "outputs/data/small --out outputs/cyclegan.json",
        formatter_class=HelpFormatter,
    )
    _add_run_arguments(ev, "source", "run directory (config.yaml) or frames folder (test/000000.png, ...)",
                       only="run only: ")
    ev.add_argument("dataset_dir", type=Path, help="benchmark dataset folder (dataset.yaml)")
    ev.add_argument("--out", type=Path, required=True, help="metrics JSON file")
    ev.add_argument("--split", default="test", help="paired split for PSNR, SSIM and HaarPSI")
    ev.add_argument("--batch-size", type=int, default=16, help="frames per model call")
    ev.add_argument("--grid-size", type=int, default=128, help="UV grid texels per side for the consistency metrics")
    ev.add_argument("--texture-resolution", type=int, default=256,
                    help="texels per side at which learned and hidden textures are compared")
    ev.set_defaults(func=_eval)


def _add_downstream_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``downstream`` subcommand (its arguments and handler) to ``sub``."""
    down = sub.add_parser(
        "downstream",
        help="the paper's pose experiment: train a small CNN on a source's images, test it on the real frames",
        description="Train a small randomly initialised CNN to regress the arm's 7 joint angles and the objects' "
        "table positions from one image, on TRAIN_ON's images of the train_real states, and test it on the real "
        "frames of the paired test split (and of the sequences). TRAIN_ON: real (train_real's real frames: the "
        "ceiling), sim (the raw UVL visualisation of the same states: the floor), a run directory (its "
        "translations of those states' UVL frames), texture:RUN_DIR (its texture projection), or a frames folder "
        "holding train_real/000000.png, ... (any translator's outputs of train_real's UVL frames). Every source "
        "gets the same states. JSON keys: joint_error_deg (per test frame the root of the summed squared joint "
        "errors in degrees, averaged), object_position_error_cm (mean distance of predicted and true table "
        "positions), the same with _sequences, with _mean_pose (always predicting the training mean) and with "
        "_train_states (the real frames of the training states: only the domain gap, no generalisation), "
        "train_on, n_train, n_test, seed, steps. Seeded and deterministic on one device. Example: triton-s2r "
        "downstream outputs/data/small --train-on outputs/runs/demo --out outputs/downstream/demo.json",
        formatter_class=HelpFormatter,
    )
    down.add_argument("dataset_dir", type=Path, help="benchmark dataset folder (dataset.yaml)")
    down.add_argument("--train-on", required=True, metavar="SOURCE",
                      help="real, sim, a run directory, texture:RUN_DIR or a frames folder")
    down.add_argument("--out", type=Path, required=True, help="result JSON file")
    down.add_argument("--seed", type=int, default=0, help="network initialisation and batch order")
    down.add_argument("--train-frames", type=int, default=None,
                      help="training images (default: as many as train_real has; more adds train_sim states for "
                      "sim and runs)")
    down.add_argument("--steps", type=int, default=1000, help="optimiser steps")
    down.add_argument("--batch-size", type=int, default=32, help="images per step")
    down.add_argument("--input-size", type=int, default=64, help="images are resized to this square size (a multiple "
                      "of 16)")
    down.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda, cuda:N")
    down.set_defaults(func=_downstream)


def _add_make_dataset_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``make-dataset`` subcommand (its arguments and handler) to ``sub``."""
    make = sub.add_parser(
        "make-dataset",
        help="build the tabletop robot benchmark (sim UVL frames + paired path-traced 'real' frames)",
        description="Build the tabletop benchmark: a Franka Panda, a table and five objects; unpaired train_sim / "
        "train_real splits (train_real also has UVL frames, read only by the paired oracle baseline), a paired "
        "test split and paired video sequences. Real frames path traced by Mitsuba's fastest variant that works here "
        "(cuda_ad_rgb, llvm_ad_rgb, scalar_rgb; the TRITON_MITSUBA_VARIANT environment variable picks one). "
        "Deterministic for a seed and variant; resumes where it stopped when rerun with "
        "the same arguments (other arguments: refused, or --rebuild); --shard I/N renders every N-th frame so N "
        "processes can share the work. Needs the "
        "'scenes' extra (pybullet, yourdfpy, xatlas, mitsuba). Format: data/README.md.",
        formatter_class=HelpFormatter,
    )
    make.add_argument("--preset", choices=["tiny", "small", "full"], default="tiny", help="dataset size")
    make.add_argument("--out", type=Path, required=True, help="output folder")
    make.add_argument("--seed", type=int, default=0, help="random seed (states, appearance, noise)")
    make.add_argument("--frames", type=int, default=None, help="frames per training split (overrides the preset)")
    make.add_argument("--resolution", type=int, default=None, help="image size in pixels (overrides the preset)")
    make.add_argument("--shard", type=shard, default=(0, 1),
                      help="render only shard I of N (I/N; default: all frames)")
    make.add_argument("--backend", choices=BACKEND_CHOICES, default="auto",
                      help="render backend for the sim frames")
    make.add_argument("--uvl-format", choices=["png", "exr"], default="png", help="UVL file format")
    make.add_argument("--no-real", action="store_true", help="skip the path-traced real frames (sim only)")
    make.add_argument("--sim-clip-frames", type=int, default=2,
                      help="train_sim in clips of N consecutive trajectory frames, for data.sim_clip_frames=N "
                      "(both default to 2, pairs); 1: independent states")
    make.add_argument("--camera-azimuth", type=float, default=0.0, metavar="DEG",
                      help="orbit the cameras by DEG about the table's vertical axis (default 0: the benchmark's "
                      "view); with another --seed, a second domain seen from elsewhere")
    make.add_argument("--rebuild", action="store_true",
                      help="if OUT holds a dataset built with other arguments (preset, seed, frames, resolution, "
                      "uvl format, real, sim clip frames, camera azimuth), delete it (dataset.yaml, assets/, "
                      "train_sim/, train_real/, test/, sequences/; other files stay) and build from scratch; without "
                      "it such a folder is refused, and a folder built with the same arguments is resumed")
    make.set_defaults(func=_make_dataset)


def _add_render_sim_command(sub: argparse._SubParsersAction) -> None:
    """Add the ``render-sim`` subcommand (its arguments and handler) to ``sub``."""
    sim = sub.add_parser(
        "render-sim",
        help="render your simulator's trajectory (robot from a URDF, objects, camera) to UVL frames for training",
        description="Render every frame of STATES (a .csv: frame, <joint names>..., <object>.x/.y/.z/.qw/.qx/.qy/.qz; "
        "or a .npz with joint_names, joints, object_names, object_poses and optional camera_* arrays: "
        "data/README.md) of SCENE (a scene YAML with a robot: {urdf: ...} entry and a camera: entry for states "
        "without cameras: docs/rendering.md) to OUT/uvl/NNNNNN.png, and write OUT/states.npz (dataset layout, for "
        "`translate RUN OUT/states.npz --scene SCENE`) and OUT/labels.yaml (for `train data=folders`). Example: "
        "triton-s2r render-sim examples/xarm/scene.yaml examples/xarm/trajectory.csv --out outputs/xarm",
        formatter_class=HelpFormatter,
    )
    sim.add_argument("scene", type=Path, help="scene YAML file")
    sim.add_argument("states", type=Path, help="states file (.csv or .npz)")
    sim.add_argument("--out", type=Path, required=True, help="output folder")
    sim.add_argument("--resolution", type=resolution, default=(256, 256), help="N or HxW in pixels (default: 256)")
    sim.add_argument("--backend", choices=BACKEND_CHOICES, default="auto", help="render backend")
    sim.add_argument("--batch-size", type=int, default=8, help="frames per render call")
    sim.add_argument("--uvl-format", choices=["png", "exr"], default="png", help="UVL file format")
    sim.set_defaults(func=_render_sim)


def build_parser() -> argparse.ArgumentParser:
    """The ``triton-s2r`` argument parser: one subcommand per job, each naming its handler in ``func``."""
    parser = argparse.ArgumentParser(
        prog="triton-s2r",
        description="TRITON sim-to-real translation with neural neural textures for robot manipulation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_demo_command, _add_translate_command, _add_export_textures_command, _add_train_command,
                _add_eval_command, _add_downstream_command, _add_label_colours_command, _add_make_dataset_command,
                _add_render_sim_command):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``triton-s2r`` on ``argv`` (default: the command line) and return the exit status.

    ``train`` goes to Hydra untouched; the other commands print a user error (missing file, bad value) as one
    line and return 2.
    """
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
