"""The paired ``oracle`` baseline: TRITON's sim->real generator trained with supervision (pix2pix-style).

It sees what no unpaired method can, the real photo of each simulated frame (the benchmark's ``train_real``
split with its UVL frames, ``data.paired=true``), so its scores are the ceiling the unpaired methods
approach. x_a is built as in the ``no_texture`` ablation (UVL hint only) and translated by the same
x_ab = G_B(E_A(x_a)); the generator minimises ``paired`` (mean |x_ab - y| against the aligned photo y) plus
the LSGAN ``adversarial`` term of the real-domain discriminator D_B, which learns y against x_ab. The
real->sim half, D_A and the texture stay untouched. Optimisers, schedules, checkpoints, validation and the
callbacks (weight average, non-finite guard, previews) are ``TritonSystem``'s, so the run loads with
``Translator`` as any other.
"""

from __future__ import annotations

from torch import Tensor

from triton_s2r.data.augment import augment_paired
from triton_s2r.losses import generator_adversarial_loss, reconstruction_loss
from triton_s2r.training.step import Forward, StepInputs
from triton_s2r.training.system import TritonSystem


class PairedSystem(TritonSystem):
    """Supervised sim->real translation on aligned frame pairs (weights: ``adversarial``, ``paired``).

    Takes ``TritonSystem``'s arguments; ``losses`` may weight only ``adversarial`` and ``paired``.
    pix2pix weights the L1 term 100 against the GAN term 1.
    """

    loss_terms = ("adversarial", "paired")

    def _inputs(self, batch: dict[str, Tensor]) -> StepInputs:
        """One resize and crop for the UVL frame and its photo, so they stay aligned."""
        uv, label, real = augment_paired(batch["uv"], batch["label"], batch["real"], self._jittered_short_side(),
                                         self.hparams.crop_size)
        return StepInputs(uv, label, 1, real)

    def _forward(self, inputs: StepInputs) -> Forward:
        m = self.model
        sample = m.sample_texture(inputs.uv, inputs.label, inputs.supersample)
        x_a, projection = m.sim_image(sample)
        x_ab = m.translate(x_a, sample)
        return Forward(uv=inputs.uv, label=inputs.label, x_a=x_a, projection=projection, real=inputs.real, x_ab=x_ab,
                       x_ab_fixed_texture=x_ab)

    def _discriminator_loss(self, out: Forward) -> Tensor:
        return self._discriminator_term(self.discriminator_real, out.real, out.x_ab)

    def _generator_terms(self, out: Forward) -> dict[str, Tensor]:
        return {
            "adversarial": generator_adversarial_loss(self._logits(self.discriminator_real, out.x_ab),
                                                      self.losses.gan_type),
            "paired": reconstruction_loss(out.x_ab.float(), out.real.float(), "l1"),
        }
