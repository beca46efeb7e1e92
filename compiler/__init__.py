"""migc: a declarative GitOps policy compiler for GPU sharing on Kubernetes with NVIDIA MIG."""

__version__ = "0.1.0"
API_VERSION = "migc.dev/v1alpha1"
