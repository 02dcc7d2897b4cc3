"""`PROXIES` and `NB201_DATASETS`: what `launch/proxies.py`'s `--proxies` and `--dataset` build."""

from __future__ import annotations

from types import MappingProxyType
from typing import Sequence

from nas_jax.models.nb201_net import Nb201Spec, nb201_flops, nb201_params
from nas_jax.proxies import data_free, measures
from nas_jax.proxies.proxy import Proxy, Reads

__all__ = ["PROXIES", "NB201_DATASETS", "proxies_of", "nb201_spec_of"]

# name -> the proxy; `Proxy.needs_data` says whether it reads a batch.
PROXIES = MappingProxyType(
  {
    "synflow": Proxy(data_free.synflow, Reads.NET),
    "synflow_signed": Proxy(data_free.synflow_signed, Reads.NET),
    "grad_norm": Proxy(measures.grad_norm, Reads.BATCH),
    "snip": Proxy(measures.snip, Reads.BATCH),
    "grasp": Proxy(measures.grasp, Reads.BATCH),
    "fisher": Proxy(measures.fisher, Reads.BATCH),
    "jacob_cov": Proxy(measures.jacob_cov, Reads.BATCH),
    "naswot": Proxy(measures.naswot, Reads.BATCH),
    "params": Proxy(nb201_params, Reads.CELL),
    "flops": Proxy(nb201_flops, Reads.CELL),
  }
)

# dataset -> (classes, input height and width) of the NB201 network trained on it.
NB201_DATASETS = MappingProxyType({"cifar10": (10, 32), "cifar100": (100, 32), "imagenet16": (120, 16)})


def proxies_of(names: Sequence[str]) -> dict[str, Proxy]:
  """name -> Proxy for `names` in order; ValueError naming an unknown or repeated one."""
  unknown = [n for n in names if n not in PROXIES]
  if unknown or not names:
    raise ValueError(f"proxies: {list(names)} has unknown {unknown}; choose from: {', '.join(PROXIES)}")
  if len(set(names)) != len(names):
    raise ValueError(f"proxies: {list(names)} names a proxy twice")
  return {n: PROXIES[n] for n in names}


def nb201_spec_of(dataset: str, channels: int = 16, cells_per_stage: int = 5) -> Nb201Spec:
  """The NB201 network for `dataset`; ValueError listing the datasets for an unknown one."""
  if dataset not in NB201_DATASETS:
    raise ValueError(f"dataset: {dataset!r} is unknown; choose one of: {', '.join(NB201_DATASETS)}")
  classes, size = NB201_DATASETS[dataset]
  return Nb201Spec(channels=channels, cells_per_stage=cells_per_stage, num_classes=classes, image_size=size)
