"""Search strategies, one module each (random search and EA in `baselines`); each module exposes
`factory(config, space, task) -> Strategy`, registered by name in `nas_jax.search.strategy`.
"""
