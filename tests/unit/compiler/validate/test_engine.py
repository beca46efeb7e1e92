"""compiler/validate/engine.py: ``validate()`` as the pipeline calls it: every error of every document,
sorted; a Policy only when there is none; the envelope (apiVersion, kind) and the one-Fleet rule."""

from __future__ import annotations

from validate_support import fleet, partition, run, tenant, workload

from compiler.catalog import load_catalog
from compiler.load import load_text
from compiler.validate.engine import validate


def test_a_valid_set_gives_a_policy_and_no_diagnostics() -> None:
    policy, diags = run(fleet(), tenant(), workload())
    assert diags == [] and policy is not None and [w.name for w in policy.workloads] == ["w"]
    assert policy.source_files == ("f0.yaml", "f1.yaml", "f2.yaml")


def test_every_error_is_reported_sorted_by_file_and_line() -> None:
    bad_tenant = workload("a", "tenant: nobody\nreplicas: 1\nneed: {profile: 1g.10gb}")
    bad_tier = workload("b", "tenant: t\nreplicas: 1\npriorityClass: urgent\nneed: {profile: 1g.10gb}")
    policy, diags = run(fleet(), tenant(), bad_tier, bad_tenant)
    assert policy is None
    assert [(d.file, d.code) for d in diags] == [("f2.yaml", "MIGC117"), ("f3.yaml", "MIGC104")]


def test_the_envelope_is_checked_before_the_schema() -> None:
    text = fleet().replace("apiVersion: migc.dev/v1alpha1", "apiVersion: migc.dev/v2")
    policy, diags = run(text, tenant(), workload())
    assert policy is None and diags[0].code == "MIGC020" and "migc.dev/v1alpha1" in diags[0].message
    typo = tenant().replace("kind: Tenant", "kind: Tenent")
    _, diags = run(fleet(), typo, workload())
    assert diags[0].code == "MIGC021" and "did you mean 'Tenant'?" in diags[0].message


def test_exactly_one_fleet_and_at_most_one_partition_policy() -> None:
    _, diags = run(tenant(), workload())
    assert [d.code for d in diags] == ["MIGC115"]
    _, diags = run(fleet(), fleet(name="g"), tenant(), workload())
    assert [d.code for d in diags] == ["MIGC115"] and "f0.yaml:" in diags[0].message
    _, diags = run(
        fleet(), tenant(), workload(), partition("mode: static"), partition("mode: static", "other")
    )
    assert [d.code for d in diags] == ["MIGC116"] and "second PartitionPolicy 'other'" in diags[0].message


def test_an_incomplete_set_stays_quiet_about_what_is_missing_and_gives_no_policy() -> None:
    docs = []
    for i, text in enumerate((fleet(), workload())):  # the Tenant's file could not be loaded
        loaded, _ = load_text(text, f"f{i}.yaml")
        docs.extend(loaded)
    policy, diags = validate(docs, load_catalog(), incomplete=True)
    assert policy is None and diags == []  # no MIGC104 for the tenant that may be in the lost file
    policy, diags = validate(docs, load_catalog())
    assert policy is None and [d.code for d in diags] == ["MIGC104"]
