"""migc: a declarative GitOps policy compiler for GPU sharing on Kubernetes with NVIDIA MIG."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

try:
    # One version source: pyproject.toml's [project] version, as the installed metadata carries it.
    __version__ = _distribution_version("migc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
API_VERSION = "migc.dev/v1alpha1"
