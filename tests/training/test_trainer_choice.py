"""The trainer choice (`trainer_choice`): which program trains a network by the paddings seen and
the costs of a compile and of the padded arithmetic, which networks train together, the default
costs per platform, and a `TrainerMemory` that records what trainings measured and chooses by it."""

import pickle

import jax
import pytest

from nas_jax.arch import morphism
from nas_jax.models import cnn_padding, padded_mlp, padded_model
from nas_jax.spaces import pools
from nas_jax.training import datasets, train_loop, trainer_choice
from tests.models.test_padded_cnn import _chain
from tests.training.test_population import DIABETES, DIGITS, SHORT, SHORT_CNN, TINY

POOL = list(pools.initial_pool("mlp"))


def test_trainer_choice():
  arch = pools.initial_pool("mlp")[0]
  own = trainer_choice.padding_of(arch, DIABETES)
  assert trainer_choice.choose("padded", arch, DIABETES, SHORT) == ("padded", own)
  autokeras = morphism.initial_architectures()[0]
  assert trainer_choice.choose("auto", autokeras, DIABETES, SHORT) == ("specialised", None)
  with pytest.raises(ValueError, match=r"trainer: 'padded' trains mlp and cnn networks, not autokeras ones"):
    trainer_choice.choose("padded", autokeras, DIABETES, SHORT)
  with pytest.raises(ValueError, match=r"trainer: 'fast' is unknown; choose one of: specialised, padded, auto"):
    trainer_choice.choose("fast", arch, DIABETES, SHORT)
  # auto takes the padded program for a network whose padding an earlier network used, while its
  # extra arithmetic costs less than a compile.
  one = SHORT._replace(epochs=1)
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[own]) == ("padded", own)
  assert trainer_choice.choose("auto", arch, DIABETES, one) == ("specialised", None)
  big = trainer_choice.padding_of(POOL[9], DIABETES)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, SHORT._replace(epochs=500), seen=[big]) == (
    "specialised",
    None,
  )
  # A network also reuses a bigger padding it fits, the cheapest of those seen, while the extra
  # arithmetic costs less than a compile; paddings it does not fit are passed over.
  pair = padded_mlp.padding_for([arch, POOL[1]])
  assert pair != own
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[own, pair]) == ("padded", own)
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[pair]) == ("padded", pair)
  assert trainer_choice.choose("padded", arch, DIABETES, one, seen=[pair]) == ("padded", pair)
  assert trainer_choice.choose("padded", arch, DIABETES, SHORT._replace(epochs=5000), seen=[pair]) == ("padded", own)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, one, seen=[own]) == ("specialised", None)
  memory = trainer_choice.TrainerMemory()
  picks = [trainer_choice.evaluate("auto", arch, DIABETES, one, jax.random.key(0), memory)[1] for _ in range(2)]
  assert picks == ["specialised", "padded"]  # padded once its memory has seen the padding
  assert memory.seen == [own]


def _result(epochs, train_seconds, compile_seconds):
  return train_loop.EvalResult(
    "regression", 1.0, 1.0, 1.0, 1, epochs, train_seconds, 0.0, compile_seconds, (1.0,) * epochs
  )


def test_measured_costs_replace_the_defaults(monkeypatch):
  monkeypatch.setattr(trainer_choice, "macs_per_second", lambda: 1e9)
  default = trainer_choice.Costs(
    trainer_choice.SPECIALISED_COMPILE_SECONDS["mlp"], 1e9 * trainer_choice.TRAINING_EFFICIENCY["mlp"]
  )
  memory = trainer_choice.TrainerMemory()
  assert trainer_choice.default_costs("mlp") == memory.costs("mlp") == default
  examples = (DIABETES.x_train.shape[0] // SHORT.batch_size) * SHORT.batch_size
  # A specialised program gives a compile only; a population of two in a padding of 1000 MACs an
  # example gives its compile (the members' shares) and its rate over the epochs it ran (its last
  # network's); a program compiled before (0 s) gives no compile.
  memory.record("mlp", [_result(3, 9.0, 5.0)], DIABETES, SHORT)
  assert memory.costs("mlp") == trainer_choice.Costs(5.0, default.macs_per_second)
  memory.record("mlp", [_result(3, 1.0, 2.0), _result(2, 1.0, 2.0)], DIABETES, SHORT, padding_macs=1000)
  memory.record("mlp", [_result(4, 2.0, 0.0)], DIABETES, SHORT, padding_macs=1000)
  rates = [3 * 2 * 1000 * examples * 3 / 2.0, 3 * 1000 * examples * 4 / 2.0]
  assert memory.costs("mlp") == pytest.approx(trainer_choice.Costs(4.5, sum(rates) / 2))
  assert memory.costs("cnn").compile_seconds == trainer_choice.SPECIALISED_COMPILE_SECONDS["cnn"]
  # What a memory measured is its own, and a copy sent to another process starts empty.
  assert trainer_choice.TrainerMemory().costs("mlp") == default
  assert pickle.loads(pickle.dumps(memory)).costs("mlp") == default
  # The choice follows the costs: a padding that adds a long training's arithmetic is taken where a
  # compile costs more, and networks that the defaults keep apart train together.
  big, long = trainer_choice.padding_of(POOL[9], DIABETES), SHORT._replace(epochs=500)
  slow_compile = default._replace(compile_seconds=1e6)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, long, seen=[big]) == ("specialised", None)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, long, seen=[big], costs=slow_compile) == ("padded", big)
  assert trainer_choice.groups(POOL[8:], DIABETES, long) == [[0], [1]]
  assert trainer_choice.groups(POOL[8:], DIABETES, long, slow_compile) == [[0, 1]]


def test_trainings_record_what_they_measured():
  one = SHORT._replace(epochs=1)
  memory = trainer_choice.TrainerMemory()
  result, chosen = trainer_choice.evaluate("specialised", POOL[0], DIABETES, one, jax.random.key(0), memory)
  assert chosen == "specialised" and memory.costs("mlp").compile_seconds == result.compile_seconds
  together = trainer_choice.train_group(POOL[:2], DIABETES, one, [jax.random.key(1), jax.random.key(2)], memory)
  padding = padded_mlp.padding_for(POOL[:2])
  examples = (DIABETES.x_train.shape[0] // one.batch_size) * one.batch_size
  macs = padded_model.model_for("mlp").macs(padding, *datasets.input_spec(DIABETES))
  rate = 3 * 2 * macs * examples / sum(r.train_seconds for r in together)
  assert memory.costs("mlp").macs_per_second == pytest.approx(rate)


def test_trainer_choice_for_cnns():
  arch = TINY[0]
  own = trainer_choice.padding_of(arch, DIGITS)
  assert trainer_choice.allowed("cnn") == trainer_choice.TRAINERS
  assert trainer_choice.choose("padded", arch, DIGITS, SHORT_CNN) == ("padded", own)
  assert trainer_choice.choose("auto", arch, DIGITS, SHORT_CNN) == ("specialised", None)
  # In its own padding a pool CNN does 1.3-5x its arithmetic: over 8 epochs more than a compile.
  pool_cnn = pools.initial_pool("cnn")[0]
  seen = [trainer_choice.padding_of(pool_cnn, DIGITS)]
  assert trainer_choice.choose("auto", pool_cnn, DIGITS, SHORT_CNN._replace(epochs=8), seen=seen) == (
    "specialised",
    None,
  )
  # A network reuses the padding of one it is aligned into; not one it does not fit.
  image = DIGITS.x_train.shape[1:]
  pooled = _chain(("conv3", 8), ("max-pool", None), ("conv3", 8), ("fc", 8))
  plain = _chain(("conv3", 8), ("conv3", 8), ("fc", 8))
  both = cnn_padding.padding_for([pooled, plain], image)
  one = SHORT_CNN._replace(epochs=1)
  assert trainer_choice.choose("auto", plain, DIGITS, one, seen=[both]) == ("padded", both)
  assert trainer_choice.choose("padded", plain, DIGITS, one, seen=[both]) == ("padded", both)
  alone = cnn_padding.padding_for([pooled], image)
  assert trainer_choice.choose("auto", plain, DIGITS, one, seen=[alone]) == ("specialised", None)
  assert trainer_choice.choose("padded", plain, DIGITS, one, seen=[alone]) == (
    "padded",
    cnn_padding.padding_for([plain], image),
  )
  # A search trains networks together while the arithmetic their joint padding adds costs less than
  # a compile: the two small chains for one epoch, not C1 with them, nor the chains over 10^5 epochs.
  assert trainer_choice.groups([pooled, plain, pool_cnn], DIGITS, one) == [[0, 1], [2]]
  assert trainer_choice.groups([pooled, plain], DIGITS, one._replace(epochs=10**5)) == [[0], [1]]
  with pytest.raises(ValueError, match=r"groups: networks of kinds \['cnn', 'mlp'\]; a population is of one kind"):
    trainer_choice.groups([plain, pools.initial_pool("mlp")[0]], DIGITS, one)


def test_default_costs_follow_the_platform(monkeypatch):
  monkeypatch.setattr(trainer_choice, "macs_per_second", lambda: 1e11)  # the CPU rule's product, not timed
  cpu = trainer_choice.Costs(
    trainer_choice.SPECIALISED_COMPILE_SECONDS["cnn"], 1e11 * trainer_choice.TRAINING_EFFICIENCY["cnn"]
  )
  assert trainer_choice.default_costs("cnn", "cpu") == cpu
  assert trainer_choice.default_costs("cnn", "tpu") == cpu  # nothing measured on a TPU: the CPU rule
  assert (
    trainer_choice.default_costs("cnn", "gpu") == trainer_choice.GPU_COSTS["cnn"] == trainer_choice.Costs(4.4, 2.2e11)
  )
  assert (
    trainer_choice.default_costs("mlp", "gpu") == trainer_choice.GPU_COSTS["mlp"] == trainer_choice.Costs(4.2, 7.7e10)
  )
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  gpu = trainer_choice.TrainerMemory().costs("cnn")
  assert trainer_choice.default_costs("cnn") == gpu == trainer_choice.GPU_COSTS["cnn"]
  # On a GPU pool CNNs C1-C3 compile faster as one population than as three specialised programs:
  # over 8 epochs a GPU's first round groups them, a CPU's keeps them apart.
  c1_c3, eight = pools.initial_pool("cnn")[:3], SHORT_CNN._replace(epochs=8)
  assert trainer_choice.groups(c1_c3, DIGITS, eight) == [[0, 1, 2]]
  assert trainer_choice.groups(c1_c3, DIGITS, eight, cpu) == [[0], [1], [2]]
