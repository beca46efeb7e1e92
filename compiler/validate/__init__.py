"""Loaded documents → a frozen :class:`compiler.model.Policy`, or every diagnostic explaining why not.

Three passes, each collecting *all* its findings (:mod:`compiler.validate.engine`):

1. envelope: every document is a mapping with ``apiVersion: migc.dev/v1alpha1`` and a known ``kind``;
2. JSON Schema of the kind, errors translated to the line/col of the offending node with a
   specific code (:mod:`compiler.validate.schema_errors`: unknown field → MIGC031 with a
   did-you-mean, bad name → MIGC109, ...);
3. semantic rules (MIGC1xx), one module per family under :mod:`compiler.validate.rules`, each rule
   registered with the codes it reports (:mod:`compiler.validate.registry`).

Semantic rules only look at documents that passed their schema, so they can trust types; the
names of documents that failed are still remembered so a reference to them is not reported as
"unknown" a second time. A :class:`Policy` is built (:mod:`compiler.validate.build`) only when
there is no error.
"""

# unique_sorted is kept here for importers; reports go through compiler.diagnostics.Collector
from compiler.validate.common import parse_duration, unique_sorted
from compiler.validate.engine import validate

__all__ = ["parse_duration", "unique_sorted", "validate"]
