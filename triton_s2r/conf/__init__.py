"""The Hydra configs of ``triton-s2r train``: ``train.yaml`` and its groups, shipped inside the package.

Importing this package registers the configs' resolvers:

* ``${sim_channels:C,K,ENCODING}``: the channels of x_a (``SimInput.out_channels``), so the sim networks'
  ``in_channels`` follow the texture and the label encoding;
* ``${fast_precision:ACCELERATOR}``: ``bf16-mixed`` where the device that ``ACCELERATOR`` picks runs bf16 natively,
  else ``32-true`` (the default trainer's precision).
"""

from omegaconf import OmegaConf


def sim_channels(texture_channels: int, num_labels: int, label_encoding: str) -> int:
    """Channels of x_a: 3 (hint + texture RGB) + 3 (hint) + the texture's extra channels (+ K with "onehot")."""
    return 6 + texture_channels - 3 + (num_labels if label_encoding == "onehot" else 0)


def cpu_has_bf16() -> bool:
    """Whether this CPU has bf16 instructions (AVX512-BF16 or AMX) that oneDNN's convolutions use."""
    import torch

    # No public API says so; torch.cpu's own probes (present since torch 2.1).
    probes = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(probe is not None and probe() for probe in probes)


def fast_precision(accelerator: str) -> str:
    """``bf16-mixed`` if the Trainer's device runs bf16 natively, else ``32-true``.

    Args:
        accelerator: the Trainer's ``accelerator``: ``auto`` (a CUDA GPU if there is one, else the CPU), ``gpu`` /
            ``cuda``, ``cpu``; any other (such as ``mps``) gets ``32-true``.

    A CUDA GPU with bf16 (Ampere or newer) or a CPU with AVX512-BF16 or AMX trains under bf16 autocast; elsewhere
    bf16 would be emulated, slower than float32 (docs/training.md, "Precision").
    """
    import torch

    if accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available():
        return "bf16-mixed" if torch.cuda.is_bf16_supported(including_emulation=False) else "32-true"
    if accelerator in ("auto", "cpu"):
        return "bf16-mixed" if cpu_has_bf16() else "32-true"
    return "32-true"


OmegaConf.register_new_resolver("sim_channels", sim_channels, replace=True)
OmegaConf.register_new_resolver("fast_precision", fast_precision, replace=True)
