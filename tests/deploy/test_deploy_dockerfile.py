"""deploy/docker/Dockerfile and its build-context filter.

No Docker engine is available here, so the Dockerfile is parsed (a small parser
for the instruction forms it uses) and checked; its HEALTHCHECK code is run for
real against a gRPC health server.
"""

from __future__ import annotations

import configparser
import contextlib
import importlib
import io
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.deploy.deploy_support import (
    CHART_DIR,
    CONTRACT,
    DEPLOY,
    REPO,
    check_command,
    console_scripts,
    engine_settings,
)

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
DOCKERIGNORE = DEPLOY / "docker" / "Dockerfile.dockerignore"
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|cc|clang|make|build-essential|binutils|libc6-dev|python3?-dev|[a-z0-9.+-]+-dev|git|curl|wget)\b"
)


@dataclass
class Instruction:
    keyword: str
    arguments: str
    line: int

    def exec_form(self) -> list[str] | None:
        """The JSON (exec) form of CMD/ENTRYPOINT/RUN, or None for the shell form."""
        text = self.arguments.strip()
        if not text.startswith("["):
            return None
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(item, str) for item in value)
        return value


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages of a Dockerfile."""
    logical: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue  # comment lines inside a continuation are dropped
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1])
            continue
        buffer.append(stripped)
        logical.append((start, " ".join(part.strip() for part in buffer)))
        buffer = []
    assert not buffer, "the Dockerfile ends inside a line continuation"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, line in logical:
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = arguments.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif not stages:
            assert keyword == "ARG", f"line {number}: only ARG may precede FROM"
            key, _, default = arguments.partition("=")
            global_args[key.strip()] = default.strip()
        else:
            stages[-1].instructions.append(Instruction(keyword, arguments, number))
    return global_args, stages


def healthcheck_command(instruction: Instruction) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    rest = instruction.arguments
    while rest.startswith("--"):
        option, _, rest = rest.partition(" ")
        key, _, value = option[2:].partition("=")
        options[key] = value
        rest = rest.lstrip()
    assert rest.startswith("CMD "), f"HEALTHCHECK must use CMD: {rest[:40]}"
    command = Instruction("CMD", rest[4:], instruction.line).exec_form()
    assert command is not None, "HEALTHCHECK CMD must use the exec (JSON) form"
    return options, command


@pytest.fixture(scope="module")
def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def final_stage(dockerfile: tuple[dict[str, str], list[Stage]]) -> Stage:
    return dockerfile[1][-1]


def test_parser_understands_the_forms_used() -> None:
    global_args, stages = parse_dockerfile(
        'ARG BASE=python:3.11-slim\nFROM ${BASE} AS one\nRUN a \\\n# note\n  && b\nFROM ${BASE}\nUSER 1:1\nCMD ["x", "y"]\n'
    )
    assert global_args == {"BASE": "python:3.11-slim"}
    assert [(s.base, s.name) for s in stages] == [("${BASE}", "one"), ("${BASE}", None)]
    assert stages[0].all("RUN")[0].arguments == "a && b"
    assert stages[1].all("CMD")[0].exec_form() == ["x", "y"]


def test_two_stages_on_slim_python_3_11(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    global_args, stages = dockerfile
    assert [stage.name for stage in stages] == ["build", "runtime"]
    for stage in stages:
        base = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], stage.base)
        assert re.match(r"^python:3\.11(\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?$", base), base


def test_build_stage_installs_the_package_into_a_venv(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    build = dockerfile[1][0]
    runs = " && ".join(run.arguments for run in build.all("RUN"))
    assert "python -m venv /opt/venv" in runs
    assert re.search(r"pip install --no-deps \.(\s|$)", runs), "the build stage must install ."
    assert any(copy.arguments.split()[0] == "." for copy in build.all("COPY")), (
        "the repository root is copied"
    )
    assert any("/opt/venv/bin" in env.arguments for env in build.all("ENV")), (
        "pip must be the venv's pip"
    )


def test_final_stage_copies_only_the_venv(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    final = final_stage(dockerfile)
    copies = [copy.arguments.split() for copy in final.all("COPY") + final.all("ADD")]
    assert copies == [["--from=build", "/opt/venv", "/opt/venv"]]
    assert any(re.search(r"PATH=/opt/venv/bin:", env.arguments) for env in final.all("ENV"))


def test_final_stage_has_no_build_tools(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    final = final_stage(dockerfile)
    for run in final.all("RUN"):
        assert not re.search(r"\b(apt-get|apt|apk|pip)\s+(install|add)\b", run.arguments), (
            run.arguments
        )
        assert not BUILD_TOOLS.search(run.arguments.replace("--no-create-home", "")), run.arguments
    assert not BUILD_TOOLS.search(final.base)


def test_final_stage_runs_as_non_root(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    final = final_stage(dockerfile)
    users = final.all("USER")
    assert users, "the final stage has no USER"
    user = users[-1].arguments.split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "a numeric UID lets Kubernetes verify runAsNonRoot"
    assert users[-1].line > max(run.line for run in final.all("RUN")), "USER must follow every RUN"
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert int(user) == values["podSecurityContext"]["runAsUser"], (
        "the chart must run the image's UID"
    )


def test_defaults_match_the_contract(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    final = final_stage(dockerfile)
    env: dict[str, str] = {}
    for instruction in final.all("ENV"):
        for item in shlex.split(instruction.arguments):
            key, _, value = item.partition("=")
            env[key] = value
    for key in ("ENGINE_GRPC_PORT", "ENGINE_METRICS_PORT", "LOG_LEVEL"):
        assert env[key] == CONTRACT.engine_defaults[key], key
    for key in ("WORKER_METRICS_PORT", "LOG_LEVEL"):
        assert env[key] == CONTRACT.worker_defaults[key], key
    assert env["PYTHONDONTWRITEBYTECODE"] == "1", "the root filesystem is read-only at run time"
    # The server binds loopback by default; the image's engine answers on the pod's network.
    assert CONTRACT.engine_defaults["ENGINE_HOST"] == "127.0.0.1"
    assert env["ENGINE_HOST"] == "0.0.0.0"
    exposed = {port for expose in final.all("EXPOSE") for port in expose.arguments.split()}
    assert {
        env["ENGINE_GRPC_PORT"],
        env["ENGINE_METRICS_PORT"],
        env["WORKER_METRICS_PORT"],
    } <= exposed
    # The container's engine listens on every interface of its own network namespace,
    # whatever the server's default (loopback outside a container): the publishing decides.
    assert env["ENGINE_HOST"] == "0.0.0.0"
    assert engine_settings({"ENGINE_HOST": env["ENGINE_HOST"]}).host == "0.0.0.0"


def test_cmd_entrypoint_and_healthcheck_use_console_scripts(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    final = final_stage(dockerfile)
    assert not final.all("ENTRYPOINT") or final.all("ENTRYPOINT")[-1].exec_form() is not None
    (cmd,) = final.all("CMD")
    argv = cmd.exec_form()
    assert argv == ["ascension-engine", "serve"]
    check_command(argv, "Dockerfile CMD")
    for entrypoint in final.all("ENTRYPOINT"):
        check_command(entrypoint.exec_form() or [], "Dockerfile ENTRYPOINT")
    (healthcheck,) = final.all("HEALTHCHECK")
    options, command = healthcheck_command(healthcheck)
    check_command(command, "Dockerfile HEALTHCHECK")
    assert "grpc_health.v1" in command[2]
    assert {"interval", "timeout", "retries"} <= set(options)


def test_healthcheck_imports_only_declared_dependencies(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    _, command = healthcheck_command(final_stage(dockerfile).all("HEALTHCHECK")[0])
    with (REPO / "pyproject.toml").open("rb") as handle:
        dependencies = " ".join(tomllib.load(handle)["project"]["dependencies"])
    assert "grpcio-health-checking" in dependencies
    assert re.search(r"^grpcio\b|\sgrpcio[>=<~ ]", dependencies)
    modules = set(re.findall(r"^\s*(?:from|import)\s+([\w.]+)", command[2], flags=re.M))
    modules |= {
        m.strip()
        for line in re.findall(r"^\s*import\s+(.+)$", command[2], flags=re.M)
        for m in line.split(",")
    }
    top = {module.split(".")[0] for module in modules}
    assert top <= {"os", "sys", "grpc", "grpc_health"}, top


# ---------------------------------------------------------------------------
# The HEALTHCHECK code, run against a real grpc.health.v1 server
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def health_server() -> Iterator[tuple[int, object]]:
    import grpc  # type: ignore[import-untyped, unused-ignore]
    from grpc_health.v1 import health, health_pb2_grpc

    port = free_port()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        yield port, servicer
    finally:
        server.stop(grace=None)


def run_healthcheck(
    dockerfile: tuple[dict[str, str], list[Stage]], port: int
) -> subprocess.CompletedProcess[str]:
    _, command = healthcheck_command(final_stage(dockerfile).all("HEALTHCHECK")[0])
    env = {**os.environ, "ENGINE_GRPC_PORT": str(port)}
    return subprocess.run(
        [sys.executable, *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_healthcheck_passes_when_serving(
    dockerfile: tuple[dict[str, str], list[Stage]], health_server: tuple[int, object]
) -> None:
    from grpc_health.v1 import health_pb2

    port, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)  # type: ignore[attr-defined]
    result = run_healthcheck(dockerfile, port)
    assert result.returncode == 0, result.stderr


def test_healthcheck_fails_when_not_serving(
    dockerfile: tuple[dict[str, str], list[Stage]], health_server: tuple[int, object]
) -> None:
    from grpc_health.v1 import health_pb2

    port, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)  # type: ignore[attr-defined]
    result = run_healthcheck(dockerfile, port)
    assert result.returncode != 0
    assert "NOT_SERVING" in result.stderr


def test_healthcheck_fails_when_nothing_listens(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    result = run_healthcheck(dockerfile, free_port())
    assert result.returncode != 0
    assert "UNAVAILABLE" in result.stderr


# ---------------------------------------------------------------------------
# Build context filter
# ---------------------------------------------------------------------------


def ignore_patterns() -> list[tuple[bool, str]]:
    patterns = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        patterns.append((negated, line.lstrip("!").rstrip("/")))
    return patterns


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """Docker ignore pattern -> regex: `**` any depth, `*` and `?` within one path element."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def is_ignored(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent directories wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for negated, pattern in ignore_patterns():
        regex = pattern_regex(pattern)
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negated
    return ignored


def test_ignore_matcher() -> None:
    assert pattern_regex("**/__pycache__").fullmatch("a/b/__pycache__")
    assert pattern_regex("**/__pycache__").fullmatch("__pycache__")
    assert pattern_regex("*").fullmatch("pyproject.toml")
    assert not pattern_regex("*.toml").fullmatch("a/b.toml")


def test_build_context_keeps_what_pip_install_needs() -> None:
    with (REPO / "pyproject.toml").open("rb") as handle:
        pyproject = tomllib.load(handle)
    needed = [
        "pyproject.toml",
        "engine_service/cards/data/base.toml",
        "engine_service/server/cli.py",
    ]
    readme = pyproject["project"].get("readme")
    if isinstance(readme, str):
        needed.append(readme)
    for pattern in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]:
        needed.append(pattern.rstrip("*") + "/__init__.py")
    for path in needed:
        assert not is_ignored(path), f"{path} is left out of the build context"


def test_build_context_leaves_out_the_rest() -> None:
    for path in [
        ".venv/bin/python",
        ".git/HEAD",
        "tests/deploy/conftest.py",
        "deploy/compose.yaml",
        "engine_service/__pycache__/x.pyc",
        "ascension_engine.egg-info/PKG-INFO",
        "benchmarks/run.py",
        "engine_service/rules/engine.cpython-311-x86_64-linux-gnu.so",  # a local build's
        "engine_service/rules/_native.json",
        "ai_workers/bots/_native.json",
        "ascension__mypyc.cpython-311-x86_64-linux-gnu.so",
        "build/lib/engine_service/rules/view.py",
    ]:
        assert is_ignored(path), f"{path} would be sent to the builder"


def build_context(destination: Path) -> int:
    """Copy the files of the working tree that the ignore file lets into the build context."""
    negated_prefixes = [pattern for negated, pattern in ignore_patterns() if negated]
    count = 0
    for root, directories, files in os.walk(REPO):
        relative_root = Path(root).relative_to(REPO)
        kept = []
        for directory in directories:
            path = (relative_root / directory).as_posix()
            reincluded = any(prefix.startswith(path + "/") for prefix in negated_prefixes)
            if not is_ignored(path) or reincluded:
                kept.append(directory)
        directories[:] = kept
        for name in files:
            path = (relative_root / name).as_posix()
            if not is_ignored(path):
                target = destination / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes((REPO / path).read_bytes())
                count += 1
    return count


# The tests that need the wheel wait for its build (the first of them, in each test process)
WHEEL_BUILD = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def image_wheel(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """What `pip install .` does in the build stage, on exactly the files the builder receives:
    the names in the project's wheel."""
    tmp_path = tmp_path_factory.mktemp("image")
    context = tmp_path / "context"
    assert build_context(context) > 0
    assert not (context / ".venv").exists() and not (context / "tests").exists()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=560,  # (the build compiles the rules and the search: 1-2 min of gcc here)
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = (tmp_path / "dist").glob("ascension_engine-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = configparser.ConfigParser()
        scripts.read_string(archive.read(entry_points).decode())
    assert dict(scripts["console_scripts"]) == console_scripts()
    return names


@WHEEL_BUILD
def test_build_context_builds_the_package_with_its_console_scripts_and_card_data(
    image_wheel: set[str],
) -> None:
    assert any(
        name.startswith("engine_service/cards/data/") and name.endswith(".toml")
        for name in image_wheel
    )
    assert any(name.endswith(".dist-info/entry_points.txt") for name in image_wheel)
    assert "engine_service/store/redis/lua/commit.lua" in image_wheel  # (the store's scripts)


@WHEEL_BUILD
def test_the_image_gets_the_compiled_rules_and_search(image_wheel: set[str]) -> None:
    """The build stage has a C compiler, so the wheel it builds holds every rules module and
    the search's compiled, mypyc's shared library and the manifests that let them be used (the
    stage checks both BUILDs too). Built here with this machine's compiler, as the stage does."""
    assert "engine_service/rules/_native.json" in image_wheel
    assert "ai_workers/bots/_native.json" in image_wheel
    sources = [n for n in image_wheel if re.fullmatch(r"engine_service/rules/[^_/][^/]*\.py", n)]
    assert len(sources) >= 10
    sources += [f"ai_workers/bots/{m}.py" for m in ("ismcts", "policy", "evaluation", "sampling")]
    for source in sources:
        stem = source.removesuffix(".py")
        assert any(n.startswith(stem + ".") and n.endswith(".so") for n in image_wheel), source
    assert any(n.startswith("ascension__mypyc.") for n in image_wheel)


@pytest.mark.parametrize("script", sorted(CONTRACT.commands))
def test_deployed_sub_commands_exist(script: str) -> None:
    """Every sub-command a deployment runs is one the console script's parser accepts."""
    module = importlib.import_module(console_scripts()[script].split(":")[0])
    parser = module.build_parser()
    for subcommand in CONTRACT.commands[script]:
        assert parser.parse_args([subcommand]).command == subcommand
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        parser.parse_args(["no-such-command"])


@WHEEL_BUILD
@pytest.mark.parametrize("script", sorted(CONTRACT.commands))
def test_console_script_modules_are_in_the_image(image_wheel: set[str], script: str) -> None:
    target = console_scripts()[script]
    module = target.split(":")[0].replace(".", "/")
    assert f"{module}.py" in image_wheel or f"{module}/__init__.py" in image_wheel, (
        f"`{script}` points at {target}, which the image would not contain"
    )


def test_no_dockerfile_frontend_is_fetched() -> None:
    """A `# syntax=` directive makes BuildKit pull a frontend image before building."""
    for line in DOCKERFILE.read_text().splitlines():
        if not line.startswith("#"):
            break  # parser directives only come first
        assert not re.match(r"#\s*syntax\s*=", line, flags=re.I), line


def test_base_images_are_pinned_by_digest(dockerfile: tuple[dict[str, str], list[Stage]]) -> None:
    global_args, stages = dockerfile
    for stage in stages:
        base = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], stage.base)
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", base), (
            f"stage {stage.name}: {base} is not pinned by digest"
        )
    assert "imagetools inspect" in DOCKERFILE.read_text(), "the update path is documented"


def test_dependencies_are_installed_before_the_sources_are_copied(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    build = dockerfile[1][0]
    order = [i for i in build.instructions if i.keyword in {"COPY", "RUN"}]
    first_source_copy = next(
        n for n, i in enumerate(order) if i.keyword == "COPY" and i.arguments.split()[0] == "."
    )
    before = order[:first_source_copy]
    copied = [i.arguments.split()[0] for i in before if i.keyword == "COPY"]
    assert copied == ["pyproject.toml"], "only pyproject.toml before the dependency layer"
    assert any("pip install -r" in i.arguments for i in before if i.keyword == "RUN")
    after = " ".join(i.arguments for i in order[first_source_copy:] if i.keyword == "RUN")
    assert "--no-deps" in after and "pip check" in after


def test_dependency_layer_lists_the_projects_dependencies(
    dockerfile: tuple[dict[str, str], list[Stage]],
) -> None:
    """The inline script of the dependency layer, run on this pyproject.toml, lists every
    dependency and the tracing extra (the image can trace)."""
    build = dockerfile[1][0]
    (run,) = [i for i in build.all("RUN") if "pip install -r" in i.arguments]
    code = re.search(r'python -c "(.*?)" >', run.arguments)
    assert code, run.arguments
    result = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=60,
    )
    with (REPO / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    expected = project["dependencies"] + project["optional-dependencies"]["tracing"]
    assert result.stdout.split() == expected
