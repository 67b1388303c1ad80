"""The built-in tabletop robot benchmark generator, ``triton-s2r make-dataset``.

The scene (``scene``: a Franka Panda, a table and five objects, with random states), the robot (``robot``), the
hidden "real" appearance (``appearance`` picks a material kind per label, ``materials`` draws it with the
primitives of ``procedural``; ``hidden`` stores the albedo for evaluation), its path-traced renderer (``real``,
put together from ``mitsuba_variant``, ``mitsuba_scene``, ``render_mesh``, ``lighting`` and
``camera_effects``), and ``triton-s2r make-dataset`` (``dataset``), which writes it in the dataset format that
``triton_s2r.data`` reads. (The top-level ``benchmarks/`` folder is something else: timing scripts.)
"""
