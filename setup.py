"""nas_jax: neural architecture search by Bayesian optimisation, in JAX."""

import os

import setuptools

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
  README = f.read()

setuptools.setup(
  name="nas_jax",
  version="0.1.0",
  description=("JAX-native neural architecture search: NASBOT (OTMANN), BANANAS, Auto-Keras morphism and arc kernels."),
  long_description=README,
  long_description_content_type="text/markdown",
  author="The nas_jax developers",
  license="Apache-2.0",
  license_files=["LICENSE"],
  # Placeholders: the maintainers fill in the addresses where the project is published.
  project_urls={
    "Source": "https://example.invalid/nas_jax",
    "Documentation": "https://example.invalid/nas_jax/docs",
    "Issues": "https://example.invalid/nas_jax/issues",
  },
  classifiers=[
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Science/Research",
    "License :: OSI Approved :: Apache Software License",
    "Operating System :: OS Independent",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
  ],
  packages=setuptools.find_packages(include=["nas_jax", "nas_jax.*"]),
  python_requires=">=3.10",
  install_requires=[
    "jax>=0.4.30",
    "jaxlib>=0.4.30",
    "flax>=0.8.5",
    "optax>=0.2.2",
    "flatbuffers>=24.3.25",  # jax.export serialization: a saved model's predictor.jax_export
    "ott-jax>=0.4.7",
    "chex>=0.1.86",
    "absl-py>=2.0",
    "ml_collections>=0.1.1",
    "numpy>=1.24",
    "POT>=0.9.3",
    "scikit-learn>=1.3",
    "matplotlib>=3.7",
    "tqdm>=4.66",
  ],
  extras_require={
    # CI installs only this extra: it runs the tests on two processes (pytest-xdist), the
    # notebooks (nbclient), where a system Chromium is found the report in a headless browser
    # (selenium), the Ray executor on a local head (ray), and the format/lint check (ruff, pinned:
    # formatting may change between releases), and the NAS-Bench-201 release packages for
    # their fixtures (docs/nb201_data.md).
    "test": [
      "pytest>=7.4",
      "pytest-xdist>=3.5",
      "hypothesis>=6.90",
      "networkx>=3.1",
      "nbclient>=0.10",
      "nbformat>=5.9",
      "ipykernel>=6.25",
      "selenium>=4.10",
      "ruff==0.17.6",
      "ray>=2.9",
      "nats_bench>=1.8",
      "nas-bench-201>=2.1",  # imported with a stand-in torch by the test of NAS-Bench-201's .pth
    ],
    "ray": ["ray>=2.9"],
    # launch/nb201_data.py: the NAS-Bench-201 tables from the NATS-Bench archive (docs/nb201_data.md);
    # the NAS-Bench-201 .pth files need nas-bench-201 and torch besides, installed by hand.
    "nb201": ["nats_bench>=1.8"],
    "colab": ["nbclient>=0.10", "ipykernel>=6.25", "nbformat>=5.9"],
    # The manual (docs/): Sphinx with its strict -W mode, MyST pages and notebooks (myst-nb, no
    # execution), and the furo theme; docs/install.md says why each is there.
    "docs": ["sphinx>=7.2", "myst-nb>=1.1", "furo>=2024.1"],
  },
)
