"""Search strategies, one module each (random search and EA in `baselines`, the model-based
presets of `bo` in `presets`); each exposes `factory(config, space, task) -> Strategy`, registered
by name in `registry`.
"""
