"""Search strategies, one module each: random search and the EA (`baselines`), local search,
regularised evolution, the one BO strategy (`bo`, with its `initial` designs and `objectives`),
its presets (`presets`) and the multi-fidelity schedulers. Config names reach them through
`nas_jax.wiring.parts`.
"""
