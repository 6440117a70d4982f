"""The `covenant-check` hook of .pre-commit-hooks.yaml, run by the real `pre-commit` tool (from
PyPI) in a repository made here: it fails on an incompatible schema change and passes a
compatible one."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}'
V2 = ('{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},'
      '{"name":"note","type":"string","default":""}]}')
# `note` without a default: version 1's data has none to read it with.
NO_DEFAULT = ('{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},'
              '{"name":"note","type":"string"}]}')
WITH_REGION = ('{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},'
               '{"name":"note","type":"string","default":""},'
               '{"name":"region","type":"string","default":"eu"}]}')


def run(args, cwd, env):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)


def git(repo, *args, env):
    done = run(["git", "-c", "user.name=Covenant Test", "-c", "user.email=test@example.com",
                "-c", "commit.gpgsign=false", *args], repo, env)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def hook_repo(tmp_path):
    """A repository with two committed versions of an Avro schema, its pre-commit config
    naming this checkout's hook at its HEAD commit."""
    binary = os.environ.get("COVENANT_BIN")
    if not binary:
        pytest.exit("COVENANT_BIN is not set; run scripts/client-tests.sh", returncode=2)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env["PATH"]
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    head = run(["git", "rev-parse", "HEAD"], ROOT, env).stdout.strip()
    repo = tmp_path / "schemas"
    repo.mkdir()
    git(repo, "init", "-q", env=env)
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {ROOT}\n"
        f"    rev: {head}\n"
        "    hooks:\n"
        "      - id: covenant-check\n"
        "        args: [--level, BACKWARD_TRANSITIVE]\n")
    (repo / "order.avsc").write_text(V1)
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "first", env=env)
    (repo / "order.avsc").write_text(V2)
    git(repo, "commit", "-q", "-am", "second", env=env)
    return repo, env


def pre_commit(repo, env):
    tool = pathlib.Path(sys.executable).parent / "pre-commit"
    return run([str(tool), "run"], repo, env)


def test_the_hook_refuses_an_incompatible_change(hook_repo):
    repo, env = hook_repo
    (repo / "order.avsc").write_text(NO_DEFAULT)
    git(repo, "add", "order.avsc", env=env)
    done = pre_commit(repo, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "covenant check --against-git HEAD" in done.stdout
    assert "Failed" in done.stdout, done.stdout
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in done.stdout, done.stdout


def test_the_hook_passes_a_compatible_change(hook_repo):
    repo, env = hook_repo
    (repo / "order.avsc").write_text(WITH_REGION)
    git(repo, "add", "order.avsc", env=env)
    done = pre_commit(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout, done.stdout
