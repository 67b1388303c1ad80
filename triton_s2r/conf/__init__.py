"""The Hydra configs of ``triton-s2r train``: ``train.yaml`` and its groups, shipped inside the package.

Importing this package registers the configs' resolver ``${sim_channels:C,K,ENCODING}``: the channels of x_a
(``SimInput.out_channels``), so the sim networks' ``in_channels`` follow the texture and the label encoding.
"""

from omegaconf import OmegaConf


def sim_channels(texture_channels: int, num_labels: int, label_encoding: str) -> int:
    """Channels of x_a: 3 (hint + texture RGB) + 3 (hint) + the texture's extra channels (+ K with "onehot")."""
    return 6 + texture_channels - 3 + (num_labels if label_encoding == "onehot" else 0)


OmegaConf.register_new_resolver("sim_channels", sim_channels, replace=True)
