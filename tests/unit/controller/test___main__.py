"""controller/__main__.py: duration flags, and every flag into its Settings group."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from controller import __main__ as cli
from controller.settings import Settings


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("2.5", 2.5), ("90s", 90.0), ("30m", 1800.0), ("1h", 3600.0), ("1h30m15s", 5415.0),
     ("250ms", 0.25), ("1m500ms", 60.5)],
)  # fmt: skip
def test_duration(text: str, seconds: float) -> None:
    assert cli.duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "1d", "m", "1h30", "30 m", "-5s", "1h 30m"])
def test_duration_refuses(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
        cli.duration(text)


def test_flags_reach_their_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIGC_CLUSTER", raising=False)
    args = cli.parser().parse_args(
        ["--drain-grace-timeout", "10m", "--reboot-timeout", "1h", "--failure-backoff", "30s",
         "--max-failures", "0", "--namespace", "ops", "--identity", "pod-1", "--cluster", "prod",
         "--device-plugin-configmap", "", "--dry-run", "--lease-duration", "9"]
    )  # fmt: skip
    s = cli.settings_from(args)
    assert s.drain.grace_timeout == 600.0 and s.apply.reboot_timeout == 3600.0
    assert s.failures.backoff == 30.0 and s.failures.max_failures == 0
    assert (s.api.namespace, s.api.cluster, s.api.device_plugin_configmap) == ("ops", "prod", "")
    assert s.leader.identity == "pod-1" and s.leader.lease_duration == 9.0 and s.dry_run
    # Fields without a flag keep their defaults.
    assert s.drain.eviction_backoff == Settings().drain.eviction_backoff
    assert s.loop.watch_timeout == Settings().loop.watch_timeout


def test_no_flags_is_the_default_settings_but_identity_and_cluster_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POD_NAME", "migc-controller-abc")
    monkeypatch.setenv("MIGC_CLUSTER", "west")
    s = cli.settings_from(cli.parser().parse_args([]))
    d = Settings()
    assert s.leader.identity == "migc-controller-abc" and s.api.cluster == "west"
    assert (
        dataclasses.replace(
            s,
            leader=dataclasses.replace(s.leader, identity=d.leader.identity),
            api=dataclasses.replace(s.api, cluster=None),
        )
        == d
    )


def test_bad_flag_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--apply-timeout", "forever"], ["--log-level", "LOUD"], ["--max-failures", "x"]):
        with pytest.raises(SystemExit) as exc:
            cli.parser().parse_args(argv)
        assert exc.value.code == 2
    assert "not a duration: 'forever'" in capsys.readouterr().err
