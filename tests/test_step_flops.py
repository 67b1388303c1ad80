"""benchmarks.step_flops: the FLOPs of one training step, in all and by network."""

from __future__ import annotations

from benchmarks import step_flops

# 32 px crops of the tiny dataset; the generators at base width 8 and 16 (one residual block each).
SMALL = ["system.resolution_schedule=[[0,32]]", "system.crop_size=32", "model.discriminator_sim.num_scales=1",
         "model.translator.generator_sim.num_res_blocks=1",
         "model.translator.generator_sim.content_channels=8", "loss.content_criterion=l1"]  # an 8 px code: no MS-SSIM


def test_the_step_counts_its_backward_and_narrower_generators_count_less(data_root) -> None:
    width = "model.translator.generator_sim.base_channels="
    narrow = step_flops.count_step(str(data_root), [*SMALL, width + "8"])
    wide = step_flops.count_step(str(data_root), [*SMALL, width + "16"])
    for counts in (narrow, wide):
        forward = sum(counts[network] for network in step_flops.NETWORKS.values())
        assert all(counts[network] > 0 for network in step_flops.NETWORKS.values())
        assert counts["total"] > 2 * forward  # each network's backward costs about twice its forward
    # Twice the width: up to 4x the generators' convolutions (the first and last scale once: 3.0x and 3.6x measured);
    # the texture and the discriminators do not change.
    for network in ("encoders", "decoders"):
        assert 2.5 < wide[network] / narrow[network] < 4.2
    assert wide["texture"] == narrow["texture"] and wide["discriminators"] == narrow["discriminators"]
