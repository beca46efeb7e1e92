"""Packaging: bundled data, extras, the one version source, and the wheel as users install it.

The fast tests check the source tree (the bundled schemas equal the published ones, every
package-data glob names files that exist, no version literal outside pyproject.toml, image tags and
release pins follow the version, the compiler runs with none of the extras importable). The slow
test builds the sdist and the wheel, installs the wheel into a fresh virtual environment outside the
checkout and runs the installed ``migc`` there on copies of every example policy set.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

import compiler
import controller
from compiler import data
from compiler.schemas import all_schema_files, dumps

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
EXAMPLES = sorted(
    p
    for p in (REPO / "examples").iterdir()
    if p.is_dir() and any("kind: Fleet" in f.read_text(encoding="utf-8") for f in p.glob("*.yaml"))
)
EXTRA_ONLY = ("kubernetes", "prometheus_client", "pynvml", "kmock", "kubernetes_validate")


# --- bundled data --------------------------------------------------------------------------------------


def test_bundled_schemas_are_the_published_schemas_byte_for_byte() -> None:
    published = sorted(p.name for p in (REPO / "schema").glob("*.json"))
    assert list(data.schema_names()) == published, (
        "compiler/data/schema/ (what the package reads) and schema/ (the published copy) list "
        "different files; copy the new schema into both"
    )
    for name in published:
        assert data.schema_text(name) == (REPO / "schema" / name).read_text(encoding="utf-8"), (
            f"compiler/data/schema/{name} differs from schema/{name}; they must be the same file"
        )


def test_bundled_policy_schemas_are_generated_from_compiler_schemas() -> None:
    for name, schema in all_schema_files().items():
        assert data.schema_text(name) == dumps(schema), (
            f"regenerate: python -m compiler.schemas --write ({name})"
        )


def test_every_bundled_schema_is_a_valid_json_schema() -> None:
    import jsonschema

    for name in data.schema_names():
        doc = data.schema(name)
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc.get("$id", f"/{name}").endswith(f"/{name}"), name  # a published $id names its own file


def _package_data() -> dict[str, list[str]]:
    table: dict[str, list[str]] = PYPROJECT["tool"]["setuptools"]["package-data"]
    return table


@pytest.mark.parametrize("package", sorted(_package_data()))
def test_every_package_data_glob_names_files_that_exist(package: str) -> None:
    root = REPO / package
    for pattern in _package_data()[package]:
        assert sorted(root.glob(pattern)), (
            f"[tool.setuptools.package-data] {package}: {pattern!r} matches nothing"
        )


def test_every_data_file_in_the_compiler_package_is_package_data() -> None:
    patterns = _package_data()["compiler"]
    root = REPO / "compiler"
    missing = [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.suffix not in {".py", ".pyc"}
        and "__pycache__" not in p.parts
        and not any(fnmatch.fnmatch(str(p.relative_to(root)), pat) for pat in patterns)
    ]
    assert not missing, f"files under compiler/ a wheel would leave out (add a package-data glob): {missing}"


def test_no_code_reads_data_relative_to_the_source_checkout() -> None:
    # The bug this guards: compiler/catalog read the repository's top-level schema/ via
    # Path(__file__).parents[2], which is site-packages/ once installed. Package data is read with
    # importlib.resources; __file__ is left only where a file is meant to be in a source checkout.
    allowed = {
        "compiler/schemas.py",  # `python -m compiler.schemas --write` regenerates the checkout's schema files
    }
    offenders = [
        str(path.relative_to(REPO))
        for pkg in ("compiler", "controller")
        for path in sorted((REPO / pkg).rglob("*.py"))
        if "__file__" in path.read_text(encoding="utf-8") and str(path.relative_to(REPO)) not in allowed
    ]
    assert offenders == [], offenders


def test_no_developer_machine_path_ships_in_the_packages() -> None:
    """Text a user reads (codes' fixes, help, messages) names no path of a developer's machine: the
    MIGC425 fix once pointed at ``/work/shared/data/README.md``, which no installed wheel has."""
    pattern = re.compile(r"/work/|/home/[a-z]|/tmp/migc|\.\./shared|shared/data")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for pkg in ("compiler", "controller")
        for path in sorted((REPO / pkg).rglob("*"))
        if path.is_file() and path.suffix in {".py", ".yaml", ".json", ".md", ".txt", ".csv"}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == [], offenders


# Dockerfiles whose base image is pinned by digest. controller/Dockerfile belongs on this list too
# (issue 25, item 17); its pin is the controller owners' change.
PINNED_DOCKERFILES = (
    "controller/Dockerfile",
    "examples/argocd/cmp/Dockerfile",
    "examples/discover/Dockerfile",
    "examples/recommend/Dockerfile",
)


@pytest.mark.parametrize("path", PINNED_DOCKERFILES)
def test_dockerfile_bases_are_pinned_by_digest(path: str) -> None:
    """A tag moves; a digest does not: every ``FROM`` names ``image:tag@sha256:<64 hex>``."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    froms = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert froms
    for image in froms:
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), (path, image)


# --- one version source --------------------------------------------------------------------------------


def test_the_version_comes_from_the_package_metadata() -> None:
    assert importlib.metadata.version("migc") == VERSION
    assert compiler.__version__ == VERSION
    assert controller.__version__ == VERSION


def test_no_version_literal_in_the_packages() -> None:
    literal = re.compile(r"__version__\s*(:\s*str\s*)?=\s*[\"']\d+\.\d+")
    hits = [
        str(p.relative_to(REPO))
        for pkg in ("compiler", "controller")
        for p in sorted((REPO / pkg).rglob("*.py"))
        if literal.search(p.read_text(encoding="utf-8"))
    ]
    assert hits == [], f"version literals besides pyproject.toml: {hits}"


# Each (file, pattern): the version group must equal pyproject's version.
PINNED = [
    ("controller/deploy/06-deployment.yaml", r"image: ghcr\.io/migc-dev/migc-controller:(\S+)"),
    ("controller/Dockerfile", r"docker build -f controller/Dockerfile -t migc-controller:(\S+) \."),
    ("controller/README.md", r"docker build -f controller/Dockerfile -t migc-controller:(\S+) \."),
    ("examples/discover/daemonset.yaml", r"image: registry\.example\.com/migc:(\S+)"),
    ("examples/discover/job.yaml", r"image: registry\.example\.com/migc:(\S+)"),
    ("examples/discover/Dockerfile", r"-t registry\.example\.com/migc:(\S+) \."),
    ("examples/argocd/cmp/repo-server-patch.yaml", r"image: registry\.example\.com/argocd-cmp-migc:(\S+)"),
    ("examples/argocd/cmp/Dockerfile", r"-t registry\.example\.com/argocd-cmp-migc:(\S+) \."),
    ("examples/github-actions/migc.yml", r"git\+https://github\.com/migc-dev/migc@v([^\"\s]+)"),
    ("examples/recommend/github-actions.yml", r"git\+https://github\.com/migc-dev/migc@v([^\"\s]+)"),
    ("examples/recommend/cronjob.yaml", r"image: registry\.example\.com/migc-recommend:(\S+)"),
    ("examples/recommend/Dockerfile", r"-t registry\.example\.com/migc-recommend:(\S+) \."),
    (".pre-commit-hooks.yaml", r"rev: v(\S+)"),
    ("README.md", r"git\+https://github\.com/migc-dev/migc@v([^\"\s]+)"),
]


@pytest.mark.parametrize(("path", "pattern"), PINNED, ids=[p for p, _ in PINNED])
def test_image_tags_and_release_pins_follow_the_version(path: str, pattern: str) -> None:
    found = re.findall(pattern, (REPO / path).read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert found, f"{path}: no match for {pattern!r} (update this test if the file changed shape)"
    assert set(found) == {VERSION}, f"{path}: pins {sorted(set(found))}, pyproject.toml says {VERSION}"


def test_changelog_has_an_unreleased_section_and_links() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
    assert re.search(r"^\[Unreleased\]: https://\S+$", text, flags=re.MULTILINE)


DOCKERFILES = [
    ("controller/Dockerfile", "controller"),
    ("examples/discover/Dockerfile", "discover"),
    ("examples/recommend/Dockerfile", "controller"),
]


@pytest.mark.parametrize(("path", "extra"), DOCKERFILES, ids=[p for p, _ in DOCKERFILES])
def test_dockerfiles_build_the_package_with_their_extra(path: str, extra: str) -> None:
    # No Docker daemon in CI: check the build context a `pip install .` needs is what the file copies.
    text = (REPO / path).read_text(encoding="utf-8")
    copied = {
        src.rstrip("/")
        for line in re.findall(r"^COPY (?!--from)(.+)$", text, flags=re.MULTILINE)
        for src in line.split()[:-1]
    }
    project = PYPROJECT["project"]
    needed = {"pyproject.toml", project["readme"], *project["license-files"]}
    needed |= {pat.rstrip("*") for pat in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert needed <= copied, f"{path} copies {sorted(copied)}, a build needs {sorted(needed)}"
    assert re.search(rf"pip install [^\n]*\"\.\[{extra}\]\"", text), f"{path} must install '.[{extra}]'"
    assert extra in project["optional-dependencies"]


# --- extras --------------------------------------------------------------------------------------------

_BLOCK_EXTRAS = textwrap.dedent(
    """
    import importlib.abc, json, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    program, runs = sys.argv[2], json.loads(sys.argv[3])
    if program == "migc":
        from compiler.cli import main
    else:
        from controller.__main__ import main
    for argv in runs:  # one interpreter for the whole sequence: startup is paid once
        sys.argv = [program, *argv]
        rc = main(argv)
        if rc:
            print(f"exit {rc}: {program} {' '.join(argv)}", file=sys.stderr)
            sys.exit(rc)
    """
)


def _run_without_extras(tmp_path: Path, program: str, *runs: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK_EXTRAS, ",".join(EXTRA_ONLY), program, json.dumps(runs)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_compiler_runs_without_any_extra(tmp_path: Path) -> None:
    # What `pip install migc` gives: none of the controller's, discover's or the tests' libraries.
    shutil.copytree(REPO / "examples" / "prod", tmp_path / "prod")
    done = _run_without_extras(
        tmp_path,
        "migc",
        ["version"],
        ["validate", "prod"],
        ["compile", "prod", "--out", "out"],
        ["plan", "prod", "--against", "out"],
        ["explain", "MIGC901"],
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert (tmp_path / "out" / "prod-east" / "kustomization.yaml").is_file()
    assert "MIGC901" in done.stdout  # explain ran last


def test_discover_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    done = _run_without_extras(tmp_path, "migc", ["discover"])
    assert done.returncode == 1, done.stderr
    assert "MIGC901" in done.stderr
    assert "migc[discover]" in done.stderr
    assert "Traceback" not in done.stderr


def test_status_live_without_the_kubernetes_client_is_coded(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "prod", tmp_path / "prod")
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n", encoding="utf-8")
    done = _run_without_extras(tmp_path, "migc", ["status", "prod", "--kubeconfig", "kubeconfig"])
    assert done.returncode == 1, done.stderr
    assert "MIGC403" in done.stderr
    assert "Traceback" not in done.stderr


def test_controller_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    done = _run_without_extras(tmp_path, "migc-controller", ["--help"])
    assert done.returncode == 1, done.stderr
    assert "migc[controller]" in done.stderr
    assert "'kubernetes'" in done.stderr
    assert "Traceback" not in done.stderr


def test_extras_split_the_dependencies_by_who_installs_what() -> None:
    project = PYPROJECT["project"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[ ;@]", r, maxsplit=1)[0].lower() for r in reqs}

    core = names(project["dependencies"])
    extras = {k: names(v) for k, v in project["optional-dependencies"].items()}
    assert not core & {"kubernetes", "prometheus-client", "pynvml", "nvidia-ml-py", "kmock", "jinja2"}
    assert {"kubernetes", "prometheus-client"} <= extras["controller"]
    assert "nvidia-ml-py" in extras["discover"]
    assert any(
        r.startswith("migc[") and "controller" in r and "discover" in r
        for r in project["optional-dependencies"]["test"]
    )
    assert any(r.startswith("migc[test]") for r in project["optional-dependencies"]["dev"])
    assert "pre-commit" in extras["dev"]


# --- the wheel, installed outside the checkout ---------------------------------------------------------


def _venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


@pytest.mark.slow
def test_the_installed_wheel_runs_outside_the_repository(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # sdist first, then the wheel built from the unpacked sdist: what a release builds, and proof
    # that the sdist carries everything the wheel needs.
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("migc-*.whl")
    assert wheel.name.startswith(f"migc-{VERSION}-")
    names = zipfile.ZipFile(wheel).namelist()
    for name in data.schema_names():
        assert f"compiler/data/schema/{name}" in names
    assert f"migc-{VERSION}.dist-info/licenses/LICENSE" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(_venv_bin(venv, "python")), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )

    work = tmp_path / "work"  # nothing of the checkout on the path or in the working directory
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    migc = str(_venv_bin(venv, "migc"))

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [migc, *argv], cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    version = run("version")
    assert version.returncode == 0, version.stderr
    assert f"migc {VERSION}" in version.stdout

    located = subprocess.run(
        [str(_venv_bin(venv, "python")), "-c", "import compiler; print(compiler.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert str(venv) in located.stdout and str(REPO) not in located.stdout

    assert EXAMPLES, "no example policy sets found"
    for example in EXAMPLES:
        shutil.copytree(example, work / example.name)
        for argv in (
            ("validate", example.name),
            ("compile", example.name, "--out", f"out-{example.name}"),
            ("compile", example.name, "--out", f"out-{example.name}", "--check"),
            ("plan", example.name, "--against", f"out-{example.name}"),
            ("plan", example.name, "--against", f"out-{example.name}", "-o", "json"),
        ):
            done = run(*argv)
            assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
            assert "Traceback" not in done.stderr
        assert json.loads(done.stdout)  # the last command's JSON plan is complete

    # The compiled tree equals what the editable install in this checkout renders (the golden trees).
    prod_out = work / "out-prod"
    golden = REPO / "tests" / "golden" / "prod"
    if golden.is_dir():
        produced = sorted(p.relative_to(prod_out) for p in prod_out.rglob("*") if p.is_file())
        expected = sorted(p.relative_to(golden) for p in golden.rglob("*") if p.is_file())
        assert produced == expected

    controller_help = subprocess.run(
        [str(_venv_bin(venv, "migc-controller")), "--help"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert controller_help.returncode == 1  # installed without the [controller] extra
    assert "migc[controller]" in controller_help.stderr
