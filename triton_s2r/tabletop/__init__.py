"""The built-in tabletop robot benchmark generator: the scene (``scene``: a Franka Panda, a table and five
objects, with random states), the robot (``robot``), the hidden "real" appearance and its path-traced
renderer (``appearance``, ``real``, ``hidden``), and ``triton-s2r make-dataset`` (``dataset``), which writes
it in the dataset format that ``triton_s2r.data`` reads. (The top-level ``benchmarks/`` folder is something
else: timing scripts.)"""
