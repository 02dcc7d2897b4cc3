"""The network-kind descriptors: one per label vocabulary, found from any point, agreeing with the
models, trainers and encodings that read them."""

import dataclasses

import pytest

from nas_jax.arch import cell, kinds, labels
from nas_jax.arch.architecture import Architecture
from nas_jax.features import encodings
from nas_jax.models import arch_net, network_costs, padded_model
from tests.arch.networks import FIG1A


def test_one_kind_per_vocabulary_in_order():
  assert tuple(k.name for k in kinds.ALL) == labels.KINDS
  assert all(kinds.get(k.name) is k for k in kinds.ALL)


def test_of_reads_the_kind_of_points_and_models():
  arch = Architecture.from_json(FIG1A)
  assert kinds.of(arch) is kinds.CNN
  assert kinds.of(arch_net.build_model(arch, 10)) is kinds.CNN
  assert kinds.of(cell.nb201_cell([0, 1, 2, 3, 4, 0])) is kinds.NB201


def test_unknown_kind_is_one_clear_line():
  with pytest.raises(ValueError, match=r"^kind: 'rnn' is unknown; allowed: cnn, mlp, nb201, nb101, autokeras,"):
    kinds.get("rnn")
  with pytest.raises(ValueError, match=r"^kind: 3 is unknown"):
    kinds.get(3)


def test_kinds_are_frozen_values():
  with pytest.raises(dataclasses.FrozenInstanceError):
    kinds.CNN.input_rank = 1
  assert kinds.get("mlp") == kinds.MLP and hash(kinds.MLP) == hash(kinds.get("mlp"))


def test_shape_texts_follow_the_input_rank():
  assert (kinds.MLP.input_rank, kinds.MLP.example_shape, kinds.MLP.batch_shape) == (1, "(D,)", "[B, D]")
  assert (kinds.CNN.input_rank, kinds.CNN.example_shape, kinds.CNN.batch_shape) == (3, "(H, W, C)", "[B, H, W, C]")
  assert kinds.AUTOKERAS.input_rank == 3 and kinds.AUTOKERAS.main_chain
  assert [k.name for k in kinds.ALL if k.main_chain] == ["autokeras"]


def test_flags_agree_with_the_models_that_read_them():
  assert network_costs.KINDS == ("cnn", "mlp", "autokeras")
  assert {k.name for k in kinds.ALL if k.padded} == set(padded_model.KINDS)
  for k in (kinds.NB101, kinds.NB201):  # the truncated path's default is its size
    assert encodings.encoding_size("trunc_path", k.name) == k.path_cutoff
  assert [k.name for k in kinds.ALL if k.path_cutoff] == ["nb201", "nb101"]
