"""Saved models: for every trainable family (layer-graph CNN and MLP, an Auto-Keras morph network,
a conditional chain MLP, an NB201 cell) a saved and loaded model predicts what the network
predicts, and so does its exported artefact, run by jax alone in a process where nas_jax cannot
be imported (the manual's snippet); bad input gives one line naming the file."""

import json
import os
import re
import shutil
import site
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nas_jax
from nas_jax.arch import conditional_point as cond_point
from nas_jax.arch import morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.morph_point import MorphPoint, morph_point_to_json
from nas_jax.models import arch_net, chain_mlp, nb201_init, nb201_net
from nas_jax.training import saved_model as sm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS_PAGE = os.path.join(ROOT, "docs", "saved_models.md")


def _chain(kind, body, decision):
  layers = [{"label": "ip"}, *body, {"label": decision}, {"label": "op"}]
  return {"kind": kind, "layers": layers, "edges": [[i, i + 1] for i in range(len(layers) - 1)]}


CNN = _chain(
  "cnn",
  [{"label": "conv3", "units": 8, "stride": 1}, {"label": "max-pool"}, {"label": "fc", "units": 16}],
  "softmax",
)
MLP = _chain("mlp", [{"label": "tanh", "units": 16}], "linear")
MORPH = morph_point_to_json(
  MorphPoint(morphism.initial_architectures(width=8, n_blocks=1)[0], parent="abc-0", parent_trial=2)
)
CONDITIONAL = {
  "kind": "conditional",
  "params": {
    "depth": 2,
    "log10_lr": -2.5,
    "log2_batch": 5,
    **{f"layer{i}.{k}": v for i in (1, 2) for k, v in (("log2_units", 4), ("dropout", 0.1), ("log10_l2", -5.0))},
    "layer1.activation": 1,
    "layer2.activation": 3,
  },
}
NB201 = {
  "kind": "nb201",
  "arch_str": "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|avg_pool_3x3~2|",
}
NB201_SPEC = nb201_net.Nb201Spec(channels=4, cells_per_stage=1, num_classes=3, image_size=8, affine=True)


def _noisy_stats(variables, key):
  """Batch statistics away from their initial 0 and 1, so that inference must read them."""
  if "batch_stats" not in variables:
    return variables
  leaves, tree = jax.tree.flatten(variables["batch_stats"])
  keys = jax.random.split(key, len(leaves))
  noisy = [jnp.exp(jax.random.normal(k, a.shape)) * (1 + a) for k, a in zip(keys, leaves)]  # positive
  return {**variables, "batch_stats": jax.tree.unflatten(tree, noisy)}


def _layer_graph(arch_json, input_shape, task, k):
  body = {key: v for key, v in arch_json.items() if key != "morph"}
  model = arch_net.build_model(Architecture.from_json(body), k)
  variables = arch_net.init_variables(model, jax.random.key(1), jnp.zeros((1, *input_shape)))
  variables = _noisy_stats(variables, jax.random.key(2))
  out = lambda x: model.apply(variables, x, train=False)
  reference = jax.jit((lambda x: jax.nn.softmax(out(x))) if task == "classification" else out)
  return sm.ModelSpec("layer_graph", arch_json, input_shape, task, k, {}), variables, reference


def _conditional():
  spec = cond_point.conditional_spec(3)
  settings = chain_mlp.settings(cond_point.stack_points([cond_point.point_from_json(CONDITIONAL, spec)]), spec, 0, 12)
  s = jax.tree.map(lambda a: a[0], settings)
  params = jax.jit(lambda key: chain_mlp.init_params(s, key, 12, 4))(jax.random.key(3))
  reference = jax.jit(lambda x: jax.nn.softmax(chain_mlp.forward(params, s, x, None)))
  model_spec = sm.ModelSpec("conditional", CONDITIONAL, (12,), "classification", 4, {"max_depth": 3})
  return model_spec, {"params": params}, reference


def _nb201():
  cell = (3, 2, 4, 1, 0, 4)
  net = nb201_net.Nb201Net(NB201_SPEC, cell, batch_norm="running")
  x = jnp.zeros((1, 8, 8, 3))
  stats = jax.eval_shape(net.init, jax.random.key(0), x)["batch_stats"]
  params = jax.jit(lambda key: nb201_net.specialise_params(nb201_init.init_params(key, NB201_SPEC), cell))(
    jax.random.key(4)
  )
  variables = _noisy_stats({"params": params, "batch_stats": jax.tree.map(jnp.zeros_like, stats)}, jax.random.key(5))
  reference = jax.jit(lambda x: jax.nn.softmax(net.apply(variables, x)))
  return sm.ModelSpec("nb201", NB201, (8, 8, 3), "classification", 3, dict(NB201_SPEC._asdict())), variables, reference


CASES = {
  "cnn": lambda: _layer_graph(CNN, (8, 8, 1), "classification", 10),
  "mlp_regression": lambda: _layer_graph(MLP, (10,), "regression", 1),
  "morph": lambda: _layer_graph(MORPH, (8, 8, 1), "classification", 5),
  "conditional": _conditional,
  "nb201": _nb201,
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """saved(name) -> (directory, spec, inputs x, the network's own predictions of x) of a case,
  made once per module, when a test first asks for it."""
  made = {}

  def case(name):
    if name not in made:
      spec, variables, reference = CASES[name]()
      x = np.asarray(jax.random.normal(jax.random.key(6), (7, *spec.input_shape)), np.float32)
      directory = sm.save_model(str(tmp_path_factory.mktemp(name) / "model"), spec, variables)
      made[name] = (directory, spec, x, np.asarray(reference(x)))
    return made[name]

  return case


@pytest.mark.parametrize("name", list(CASES))
def test_a_loaded_model_and_its_export_predict_what_the_network_predicts(saved, name):
  directory, spec, x, expected = saved(name)
  assert sorted(os.listdir(directory)) == sorted([sm.MODEL_FILE, sm.VARIABLES_FILE, sm.EXPORT_FILE])
  model = nas_jax.load_model(directory)
  assert model.spec == spec
  got = model.predict(x)
  n_out = (len(x), spec.num_outputs) if spec.task == "classification" else (len(x),)
  assert got.shape == expected.shape == n_out and got.dtype == np.float32
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
  if spec.task == "classification":
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)
  with open(os.path.join(directory, sm.EXPORT_FILE), "rb") as f:
    exported = jax.export.deserialize(bytearray(f.read()))
  assert set(sm.EXPORT_PLATFORMS) <= set(exported.platforms)
  # 3 examples here, 7 in the snippet's test: the batch dimension is symbolic
  np.testing.assert_allclose(np.asarray(exported.call(x[:3])), expected[:3], rtol=1e-5, atol=1e-6)


def _jax_only_snippet() -> str:
  """The manual's snippet that runs a saved model's export with jax alone."""
  with open(DOCS_PAGE) as f:
    blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
  snippets = [b for b in blocks if "jax.export.deserialize" in b]
  assert len(snippets) == 1, "docs/saved_models.md has one jax-only snippet"
  return snippets[0]


def test_the_manuals_snippet_runs_every_export_without_nas_jax(saved, tmp_path):
  # -I -S: no PYTHONPATH, no current folder, no site processing; the site-packages folders are
  # added back without their .pth files, so jax is there and an editable nas_jax is not.
  prelude = (
    "import importlib.util, os, sys\n"
    "sys.path += sys.argv[1].split(os.pathsep)\n"
    "if importlib.util.find_spec('nas_jax') is not None:\n"
    "  sys.exit('nas_jax is importable')\n"
    "import numpy as np\n"
    "for directory in sys.argv[2:]:\n"
    "  p = os.path.join(directory, 'predictor.jax_export')\n"
    "  x = np.load(os.path.join(directory, 'x.npy'))\n"
  )
  snippet = "".join("  " + line + "\n" for line in _jax_only_snippet().splitlines())
  script = tmp_path / "run_export.py"
  script.write_text(prelude + snippet + "  np.save(os.path.join(directory, 'y.npy'), np.asarray(predictions))\n")
  dirs = []
  for name in CASES:
    directory, _, x, _ = saved(name)
    copy = tmp_path / name
    copy.mkdir()
    shutil.copy(os.path.join(directory, sm.EXPORT_FILE), copy / "predictor.jax_export")
    np.save(copy / "x.npy", x)
    dirs.append(str(copy))
  paths = os.pathsep.join(site.getsitepackages())
  run = subprocess.run(
    [sys.executable, "-I", "-S", str(script), paths, *dirs], cwd=tmp_path, capture_output=True, text=True, timeout=300
  )
  assert run.returncode == 0, run.stderr[-2000:]
  for name, copy in zip(CASES, dirs):
    np.testing.assert_allclose(np.load(os.path.join(copy, "y.npy")), saved(name)[3], rtol=1e-5, atol=1e-6)


def test_predict_names_the_expected_input_shape(saved):
  model = sm.load_model(saved("cnn")[0])
  with pytest.raises(ValueError, match=r"predict: x has shape \(3, 64\); expected \[n, 8, 8, 1\]"):
    model.predict(np.zeros((3, 64)))


def _one_line(e):
  assert "\n" not in str(e.value)
  return str(e.value)


def test_a_missing_directory_or_file_is_named(saved, tmp_path):
  with pytest.raises(FileNotFoundError) as e:
    sm.load_model(str(tmp_path / "nowhere"))
  assert str(tmp_path / "nowhere") in _one_line(e)
  directory = tmp_path / "no_variables"
  directory.mkdir()
  shutil.copy(os.path.join(saved("mlp_regression")[0], sm.MODEL_FILE), directory)
  with pytest.raises(FileNotFoundError) as e:
    sm.load_model(str(directory))
  assert str(directory / sm.VARIABLES_FILE) in _one_line(e)
  (directory / sm.VARIABLES_FILE).write_bytes(b"\x81\xa6params")  # cut short
  with pytest.raises(ValueError) as e:
    sm.load_model(str(directory))
  assert str(directory / sm.VARIABLES_FILE) in _one_line(e) and "truncated or corrupt" in str(e.value)


@pytest.mark.parametrize(
  "text, says",
  [
    ('{"family": "layer_graph", "point"', "is not valid JSON"),
    ("[1, 2]", "expected an object with keys family, point"),
    ("{}", "expected an object with keys family, point"),
  ],
)
def test_a_corrupt_model_json_is_named(tmp_path, text, says):
  directory = tmp_path / "model"
  directory.mkdir()
  (directory / sm.MODEL_FILE).write_text(text)
  with pytest.raises(ValueError) as e:
    sm.load_model(str(directory))
  assert str(directory / sm.MODEL_FILE) in _one_line(e) and says in str(e.value)


def test_a_spec_that_does_not_fit_its_variables_is_named(saved, tmp_path):
  source = saved("mlp_regression")[0]
  directory = tmp_path / "model"
  directory.mkdir()
  with open(os.path.join(source, sm.MODEL_FILE)) as f:
    obj = json.load(f)
  obj["point"]["layers"][1]["units"] = 32  # another network than the stored weights'
  (directory / sm.MODEL_FILE).write_text(json.dumps(obj))
  shutil.copy(os.path.join(source, sm.VARIABLES_FILE), directory)
  with pytest.raises(ValueError) as e:
    sm.load_model(str(directory))
  assert str(directory / sm.VARIABLES_FILE) in _one_line(e) and "has shape" in str(e.value)
  obj["point"]["layers"][1]["label"] = "bogus"
  (directory / sm.MODEL_FILE).write_text(json.dumps(obj))
  with pytest.raises(ValueError) as e:
    sm.load_model(str(directory))
  assert str(directory / sm.MODEL_FILE) in _one_line(e) and "network does not build" in str(e.value)
  obj["family"] = "resnet"
  (directory / sm.MODEL_FILE).write_text(json.dumps(obj))
  with pytest.raises(ValueError, match="family: 'resnet'; allowed: layer_graph, conditional, nb201"):
    sm.load_model(str(directory))


def test_save_model_refuses_variables_of_another_network(tmp_path):
  spec, variables, _ = _layer_graph(CNN, (8, 8, 1), "classification", 10)
  with pytest.raises(ValueError, match="save_model: the variables do not fit the network"):
    sm.save_model(str(tmp_path / "m"), spec._replace(num_outputs=3), variables)
  assert not os.path.exists(tmp_path / "m")
