"""Experiment configs, one file each: `get_config(arg)` returns the ConfigDict that
`python launch/search.py --config=configs/<file>.py[:arg]` runs (`common.py` is the one module here
that is not a config).

A config builds on another by import, as flax examples' variants import `configs/default.py`:
`from configs import random_nb201`, then `random_nb201.get_config(arg)` with a few fields changed;
`common.py` holds the fields every search config ends with. The folder is a package so that those
imports hold however a file is loaded: launch scripts put the repository root on `sys.path`
(launch/_env.py) before ml_collections loads `--config` by path, and
`nas_jax.wiring.config_files.load_config` imports a file of a package folder as a module of that
package, found beside the file, from any working directory. The bases stay here rather than in
nas_jax/: their choices and strings are an experiment's (STYLE rule 4), not the library's.
"""
