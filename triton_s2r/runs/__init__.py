"""Run directories and configs, the ground that training, inference and evaluation share.

``run_dir`` owns a run directory's layout (config, checkpoints, training data, curves, previews) and reads
checkpoints safely; ``config`` reads a run's ``config.yaml`` as plain data, checks and compares training configs
and builds models from them. It sits below the wings that write and read runs and imports none of them, so no
import runs upwards; old saved configs stay readable through ``config.MOVED_TARGETS``.
"""
