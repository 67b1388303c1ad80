"""Training and evaluation data: reading datasets (benchmark folders with ``dataset.yaml`` and plain user
folders of UVL frames and photos, ``datasets``), the Lightning data module with its seeded epoch and clip
samplers (``datamodule``), and the training augmentation of both domains (``augment``). It knows the dataset
format, not how the built-in benchmark is generated (that is ``triton_s2r.tabletop``)."""
