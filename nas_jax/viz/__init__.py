"""Figures on top of the pipeline: architecture drawings, distance plots and search curves (the
HTML report of a search is `nas_jax.experiments.report`)."""
