"""The built-in tabletop robot benchmark: scene, states, photoreal "real" domain, dataset generation."""
