"""deploy/compose.yaml: the Compose specification, and the wiring of the stack. Variables are
interpolated as Compose does (deploy_support.interpolate); the Redis credentials are the ones
deploy/compose-secrets.sh writes, run here as the service `secrets` runs it."""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from engine_service import telemetry
from tests.deploy.deploy_support import (
    CONTRACT,
    DEPLOY,
    DEPLOYED_ENGINE_ENV,
    DEPLOYED_WORKER_ENV,
    DEPLOYMENT_CHOICES,
    REPO,
    MissingVariable,
    check_command,
    engine_settings,
    interpolate,
    option,
    settings_named,
    worker_settings,
)

COMPOSE = DEPLOY / "compose.yaml"
SECRETS_SCRIPT = DEPLOY / "compose-secrets.sh"
REDIS_USERS_RULES = DEPLOY / "helm" / "ascension-engine" / "files" / "redis-users.rules"
SECRET_VOLUMES = ("redis-secrets", "engine-secrets", "worker-secrets", "exporter-secrets")
CHECK_JSONSCHEMA = Path(sys.executable).with_name("check-jsonschema")
APP_SERVICES = {"engine", "worker"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())  # resolves the <<: merge keys
    return document


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = compose["services"]
    return result


def duration_seconds(text: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)", text)
    assert parts and "".join(n + u for n, u in parts) == text, f"bad duration {text!r}"
    return sum(float(n) * units[u] for n, u in parts)


# Variables the stack requires (${VAR:?message}: compose refuses to start without them), as
# an operator would set them on the host.
REQUIRED_ON_HOST = {
    "ENGINE_AI_TOKEN_KEYS": "a-random-key-set-on-the-host-0123456789abcdef",
    "GRAFANA_ADMIN_PASSWORD": "a-password-set-on-the-host",
}


def default_of(value: str) -> str:
    """A value as Compose reads it with only the required variables set on the host."""
    return interpolate(str(value), REQUIRED_ON_HOST)


def environment(
    compose: dict[str, Any], service: str, host: Mapping[str, str] = REQUIRED_ON_HOST
) -> dict[str, str]:
    """A service's environment as its process sees it, with the variables ``host`` sets on
    the host (by default only the required ones)."""
    env = services(compose)[service]["environment"]
    return {key: interpolate(str(value), host) for key, value in env.items()}


def run_secrets_script(directory: Path) -> dict[str, Path]:
    """deploy/compose-secrets.sh with its three volumes as directories under ``directory``
    (what the service secrets does on a first run); returns volume name -> directory."""
    volumes = {name: directory / name for name in SECRET_VOLUMES}
    for path in volumes.values():
        path.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "REDIS_SECRETS_DIR": str(volumes["redis-secrets"]),
        "ENGINE_SECRETS_DIR": str(volumes["engine-secrets"]),
        "WORKER_SECRETS_DIR": str(volumes["worker-secrets"]),
        "EXPORTER_SECRETS_DIR": str(volumes["exporter-secrets"]),
        "REDIS_USERS_RULES": str(REDIS_USERS_RULES),
    }
    shell = shutil.which("sh")
    assert shell
    result = subprocess.run(
        [shell, str(SECRETS_SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return volumes


@pytest.fixture(scope="module")
def secret_volumes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return run_secrets_script(tmp_path_factory.mktemp("compose-secrets"))


@functools.cache
def _shared_volumes() -> dict[str, Path]:
    directory = Path(tempfile.mkdtemp(prefix="compose-secrets-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return run_secrets_script(directory)


def settings_env(
    compose: dict[str, Any], service: str, host: Mapping[str, str] = REQUIRED_ON_HOST
) -> dict[str, str]:
    """What the service's process reads: its environment with ``host``'s variables, files
    named by NAME_FILE found in volumes the secrets script filled."""
    return in_volumes(compose, service, environment(compose, service, host), _shared_volumes())


def in_volumes(
    compose: dict[str, Any], service: str, env: dict[str, str], volumes: Mapping[str, Path]
) -> dict[str, str]:
    """``env`` with each NAME_FILE that names a file in one of the service's named volumes
    pointed at that file in ``volumes`` (as the container sees it)."""
    mounts = {}
    for volume in services(compose)[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        if source in volumes:
            mounts[PurePosixPath(target)] = volumes[source]
    resolved = dict(env)
    for key, value in env.items():
        if not key.endswith("_FILE"):
            continue
        for target, local in mounts.items():
            if PurePosixPath(value).is_relative_to(target):
                resolved[key] = str(local / PurePosixPath(value).relative_to(target))
    return resolved


def run_check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    assert CHECK_JSONSCHEMA.exists(), (
        f"{CHECK_JSONSCHEMA} is missing (dev dependency check-jsonschema)"
    )
    return subprocess.run(
        [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_file_follows_the_compose_specification() -> None:
    result = run_check_jsonschema(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_validation_is_not_vacuous(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text(
        COMPOSE.read_text().replace(
            '    command: ["ascension-worker", "run"]', '    comand: ["ascension-worker", "run"]'
        )
    )
    assert "comand:" in broken.read_text()
    result = run_check_jsonschema(broken)
    assert result.returncode != 0
    assert "comand" in result.stdout + result.stderr


def test_redis_persists_every_write_with_aof_and_never_evicts(compose: dict[str, Any]) -> None:
    redis = services(compose)["redis"]
    command = redis["command"]
    assert command[0] == "redis-server"
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options["--appendonly"] == "yes"
    # A move is on disk before the engine acknowledges it (docs/reliability.md).
    assert options["--appendfsync"] == "always"
    assert options["--maxmemory-policy"] == "noeviction"
    volume, target = redis["volumes"][0].split(":")[:2]
    assert target == "/data" and volume in compose["volumes"], "the AOF must live on a named volume"


def test_two_engine_replicas_a_worker_and_no_sweeper_service(compose: dict[str, Any]) -> None:
    stack = services(compose)
    assert stack["engine"]["deploy"]["replicas"] == 2
    assert stack["engine"]["command"] == ["ascension-engine", "serve"]
    assert stack["worker"]["command"] == ["ascension-worker", "run"]
    # The sweeper runs inside every engine replica (ENGINE_AI_SWEEP_SECONDS).
    assert set(stack) == {
        "secrets", "redis", "redis-exporter", "engine", "worker", "prometheus", "grafana"
    }  # fmt: skip
    for name, service in stack.items():
        assert "sweeper" not in service.get("command", []), f"{name} runs a separate sweeper"


def test_app_services_use_console_scripts(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        service = services(compose)[name]
        check_command(service["command"], f"compose {name}")
        test = service.get("healthcheck", {}).get("test")
        if test:
            assert test[0] == "CMD", f"{name}: use the exec form of healthcheck.test"
            check_command(test[1:], f"compose {name} healthcheck")
    assert services(compose)["worker"]["healthcheck"]["test"] == [
        "CMD",
        "ascension-worker",
        "check",
        "--local",
    ], "the worker's health is its own heartbeat, not the broker's"
    assert "healthcheck" not in services(compose)["engine"], (
        "the engine keeps the image's gRPC HEALTHCHECK"
    )


def test_app_services_build_the_image_from_the_repository_root(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        service = services(compose)[name]
        context = (COMPOSE.parent / service["build"]["context"]).resolve()
        assert context == REPO
        assert (context / service["build"]["dockerfile"]).is_file()
        assert service["image"] == services(compose)["engine"]["image"], (
            "one image for every command"
        )


def test_app_services_are_locked_down(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        service = services(compose)[name]
        assert service["read_only"] is True, name
        assert "/tmp" in service["tmpfs"], name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        assert "user" not in service or service["user"] not in {"root", "0"}, name


def test_environment_follows_the_contract(
    compose: dict[str, Any], secret_volumes: dict[str, Path]
) -> None:
    allowed = {
        "engine": CONTRACT.engine_env | telemetry.ENVIRONMENT,
        "worker": CONTRACT.worker_env | telemetry.ENVIRONMENT,
    }
    required = {"engine": DEPLOYED_ENGINE_ENV, "worker": DEPLOYED_WORKER_ENV}
    for name in APP_SERVICES:
        env = services(compose)[name]["environment"]
        assert isinstance(env, dict), f"{name}: use the mapping form of environment"
        named = settings_named(env, allowed[name])
        assert named <= allowed[name], (
            f"{name}: {sorted(named - allowed[name])} are not settings of the {name}"
        )
        assert required[name] <= named, f"{name} lacks {sorted(required[name] - named)}"
        for key, value in env.items():
            assert isinstance(value, str), f"{name}: {key} must be a string (quote numbers)"
    engine = environment(compose, "engine")
    settings = engine_settings(in_volumes(compose, "engine", engine, secret_volumes))
    assert settings.redis_url.startswith("redis://engine:"), "the store, as the engine's user"
    assert settings.redis_url.endswith("@redis:6379/0")
    assert settings.broker_url.startswith("redis://broker:"), "Celery's queue, as its user"
    # Everything else is the server's own default, so the docs' defaults hold in compose.
    for key, value in engine.items():
        name = key.removesuffix("_FILE") if key not in allowed["engine"] else key
        if name not in DEPLOYMENT_CHOICES | telemetry.ENVIRONMENT:
            opt = option(name)
            assert opt.kind(value) == opt.default, f"{key}={value}, the server says {opt.default}"


def test_engine_accepts_its_environment_and_dispatches_to_the_workers(
    compose: dict[str, Any], secret_volumes: dict[str, Path]
) -> None:
    # Read like the server and the worker would (the URL from the secrets' volume).
    settings = engine_settings(
        in_volumes(compose, "engine", environment(compose, "engine"), secret_volumes)
    )
    worker = worker_settings(
        in_volumes(compose, "worker", environment(compose, "worker"), secret_volumes)
    )
    assert settings.ai_dispatch == "celery", "a missing broker must stop the engine"
    assert settings.dispatch_mode == "celery"
    assert settings.broker_url == worker.broker_url, "engine and workers share one queue"
    # The worker connects to the address carried by each move, before its ENGINE_ADDRESS.
    assert settings.advertise_address == worker.engine_address
    assert settings.ai_sweep_seconds > 0, "stalled AI moves would never be sent again"
    assert settings.ai_stall_seconds > 0


def test_worker_reaches_the_engine_grpc_port(compose: dict[str, Any]) -> None:
    engine_port = services(compose)["engine"]["environment"]["ENGINE_GRPC_PORT"]
    engine = services(compose)["engine"]["environment"]
    for address in (
        services(compose)["worker"]["environment"]["ENGINE_ADDRESS"],
        engine["ENGINE_ADVERTISE_ADDRESS"],
    ):
        host, port = address.rsplit(":", 1)
        assert host == "engine" and port == engine_port, address
    published = default_of(services(compose)["engine"]["ports"][0])
    _host_ip, host_range, container_port = published.split(":")
    first, last = (int(p) for p in host_range.split("-"))
    assert container_port == engine_port
    assert last - first + 1 >= services(compose)["engine"]["deploy"]["replicas"], (
        "one host port per replica"
    )


def test_engine_stops_gracefully(compose: dict[str, Any]) -> None:
    settings = engine_settings(settings_env(compose, "engine"))
    needed = settings.shutdown_drain_seconds + settings.shutdown_grace_seconds
    assert duration_seconds(services(compose)["engine"]["stop_grace_period"]) > needed


def test_worker_stops_after_its_longest_task(compose: dict[str, Any]) -> None:
    worker = worker_settings(settings_env(compose, "worker"))
    grace = duration_seconds(services(compose)["worker"]["stop_grace_period"])
    assert grace >= worker.time_limit, "a stopping worker must be able to finish its move"


def test_health_dependencies_have_health_checks(compose: dict[str, Any]) -> None:
    image_has_healthcheck = "HEALTHCHECK" in (DEPLOY / "docker" / "Dockerfile").read_text()
    for name, service in services(compose).items():
        depends = service.get("depends_on", {})
        if isinstance(depends, list):
            depends = {dep: {"condition": "service_started"} for dep in depends}
        for dependency, spec in depends.items():
            assert dependency in services(compose), f"{name} depends on unknown {dependency}"
            if spec["condition"] == "service_healthy":
                target = services(compose)[dependency]
                own = target.get("healthcheck")
                assert (own and not own.get("disable")) or (
                    own is None and dependency in APP_SERVICES and image_has_healthcheck
                ), f"{name} waits for {dependency} to be healthy but it has no health check"


def host_path(volume: str) -> tuple[Path, str] | None:
    source, target = volume.split(":")[:2]
    if not source.startswith("."):
        return None
    return (COMPOSE.parent / source).resolve(), target


def container_to_host(service: dict[str, Any], container_path: str) -> Path:
    """Map a path inside a container to the repository file bind-mounted there."""
    for volume in service["volumes"]:
        mapping = host_path(volume)
        if mapping and PurePosixPath(container_path).is_relative_to(mapping[1]):
            return mapping[0] / PurePosixPath(container_path).relative_to(mapping[1])
    raise AssertionError(f"{container_path} is not bind-mounted")


def test_bind_mounts_exist(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        for volume in service.get("volumes", []):
            mapping = host_path(volume)
            if mapping is None:
                assert volume.split(":")[0] in compose["volumes"], (
                    f"{name}: undeclared volume {volume}"
                )
            else:
                assert mapping[0].exists(), f"{name}: {mapping[0]} does not exist"
                assert mapping[0].is_relative_to(DEPLOY), f"{name}: mounts outside deploy/"


def test_prometheus_finds_its_config_rules_and_targets(compose: dict[str, Any]) -> None:
    prometheus = services(compose)["prometheus"]
    config_path = next(
        arg.split("=", 1)[1] for arg in prometheus["command"] if arg.startswith("--config.file=")
    )
    config_file = container_to_host(prometheus, config_path)
    assert config_file.is_file()
    config = yaml.safe_load(config_file.read_text())
    for rule_file in config["rule_files"]:
        assert (
            container_to_host(prometheus, rule_file)
            == (DEPLOY / "prometheus" / "alerts.yaml").resolve()
        )
    scraped = {}
    for job in config["scrape_configs"]:
        for sd in job.get("dns_sd_configs", []):
            for dns_name in sd["names"]:
                scraped[dns_name] = sd["port"]
    engine_env = services(compose)["engine"]["environment"]
    worker_env = services(compose)["worker"]["environment"]
    assert scraped["engine"] == int(engine_env["ENGINE_METRICS_PORT"])
    assert scraped["worker"] == int(worker_env["WORKER_METRICS_PORT"])
    assert str(scraped["engine"]) in services(compose)["engine"]["expose"]
    assert str(scraped["worker"]) in services(compose)["worker"]["expose"]
    for dns_name in scraped:
        assert dns_name in services(compose), f"Prometheus scrapes unknown service {dns_name}"


def test_grafana_is_provisioned(compose: dict[str, Any]) -> None:
    grafana = services(compose)["grafana"]
    datasources = container_to_host(
        grafana, "/etc/grafana/provisioning/datasources/prometheus.yaml"
    )
    (datasource,) = yaml.safe_load(datasources.read_text())["datasources"]
    host, port = re.fullmatch(r"http://([\w-]+):(\d+)", datasource["url"]).groups()  # type: ignore[union-attr]
    assert host in services(compose)
    assert f"127.0.0.1:{port}:{port}" in services(compose)[host]["ports"]
    providers = container_to_host(grafana, "/etc/grafana/provisioning/dashboards/ascension.yaml")
    (provider,) = yaml.safe_load(providers.read_text())["providers"]
    dashboards = container_to_host(grafana, provider["options"]["path"])
    assert sorted(p.name for p in dashboards.glob("*.json")) == ["ascension-engine.json"]
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert container_to_host(grafana, home).is_file()


def memory_bytes(text: str) -> int:
    """A Compose or Redis memory size (512m, 1g, 768mb, 1gb) in bytes."""
    number, unit = re.fullmatch(r"(\d+)([kmg]?)b?", str(text).lower()).groups()  # type: ignore[union-attr]
    return int(number) * int(1024 ** " kmg".index(unit or " "))


def test_every_service_has_memory_and_cpu_limits(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert memory_bytes(limits.get("memory", "0")) > 0, f"{name}: no memory limit"
        assert float(default_of(limits.get("cpus", "0"))) > 0, f"{name}: no CPU limit"


def test_redis_maxmemory_fits_its_memory_limit(compose: dict[str, Any]) -> None:
    """Without maxmemory, noeviction never applies and Redis grows until it is killed."""
    redis = services(compose)["redis"]
    options = dict(zip(redis["command"][1::2], redis["command"][2::2], strict=True))
    maxmemory = memory_bytes(default_of(options["--maxmemory"]))
    limit = memory_bytes(redis["deploy"]["resources"]["limits"]["memory"])
    # Room for the AOF rewrite's fork and the allocator's overhead.
    assert 0 < maxmemory <= 0.8 * limit


def test_worker_cpu_limit_matches_its_concurrency(compose: dict[str, Any]) -> None:
    worker = services(compose)["worker"]
    cpus = default_of(worker["deploy"]["resources"]["limits"]["cpus"])
    assert cpus == environment(compose, "worker")["WORKER_CONCURRENCY"]


def test_monitoring_ports_listen_on_this_host_only(compose: dict[str, Any]) -> None:
    for name in ("prometheus", "grafana"):
        for port in services(compose)[name]["ports"]:
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} to every interface"
    published = {name for name, service in services(compose).items() if service.get("ports")}
    assert published == {"engine", "prometheus", "grafana"}


def test_prometheus_cannot_be_stopped_or_reloaded_over_http(compose: dict[str, Any]) -> None:
    """Prometheus has no login: with its lifecycle API on, any page a browser on this host
    opens could POST /-/quit. It is off (no flag, and none set by other means)."""
    prometheus = services(compose)["prometheus"]
    flags = [default_of(str(a)) for a in prometheus["command"]]
    assert not any("enable-lifecycle" in flag for flag in flags), flags
    assert not any("lifecycle" in str(v).lower() for v in prometheus.get("environment", {}) or {})
    assert "entrypoint" not in prometheus, "the flags are the command's"


def test_a_real_prometheus_with_composes_flags_refuses_to_quit(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """Debian's prometheus (the package that brings promtool) run with compose's command:
    POST /-/quit and /-/reload are refused and it keeps running."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("no prometheus binary (apt-get install prometheus brings it with promtool)")
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["rule_files"] = [str(DEPLOY / "prometheus" / "alerts.yaml")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    argv = [binary]
    for flag in (default_of(str(a)) for a in services(compose)["prometheus"]["command"]):
        flag = flag.replace("/etc/prometheus/prometheus.yml", str(tmp_path / "prometheus.yml"))
        argv.append(flag.replace("=/prometheus", f"={tmp_path / 'data'}"))
    argv.append(f"--web.listen-address=127.0.0.1:{port}")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _http(f"{base}/-/ready")[0] == 200, 60)
        for path in ("/-/quit", "/-/reload"):
            status, body = _http(base + path, method="POST")
            assert status == 403 and "Lifecycle API is not enabled" in body, (path, status, body)
        assert proc.poll() is None
        assert _http(f"{base}/-/healthy")[0] == 200
    finally:
        proc.terminate()
        proc.wait(30)


def _free_port() -> int:
    from tests.service import support

    return support.free_port()


def _http(url: str, method: str = "GET") -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


def test_grafana_needs_a_password_and_has_no_anonymous_access(compose: dict[str, Any]) -> None:
    env = services(compose)["grafana"]["environment"]
    # ${VAR:?message}: compose refuses to start while the variable is unset.
    assert re.fullmatch(r"\$\{GRAFANA_ADMIN_PASSWORD:\?[^}]+\}", env["GF_SECURITY_ADMIN_PASSWORD"])
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false"


def test_prometheus_scrapes_the_redis_exporter(compose: dict[str, Any]) -> None:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "ascension-redis"]
    (target,) = job["static_configs"][0]["targets"]
    host, port = target.split(":")
    exporter = services(compose)[host]
    assert port in exporter["expose"]
    assert exporter["environment"]["REDIS_ADDR"] == "redis://redis:6379"


def test_tracing_is_off_and_logs_are_text_by_default(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        env = environment(compose, name)
        assert telemetry.tracing_mode(env) == "off", name
        assert telemetry.log_format(env) == "text", name


# ---------------------------------------------------------------------------
# Exposure: the engines on this host only, unless opened with operator keys
# ---------------------------------------------------------------------------

OPERATOR_KEY = "an-operator-key-of-the-host-0123"


def test_engine_ports_are_published_on_loopback_by_default(compose: dict[str, Any]) -> None:
    (published,) = services(compose)["engine"]["ports"]
    host_ip, _host_range, container_port = default_of(published).split(":")
    assert host_ip == "127.0.0.1", "the engines must not listen on every interface by default"
    assert container_port == services(compose)["engine"]["environment"]["ENGINE_GRPC_PORT"]
    # In the container the engine binds every interface; the host publishes it on loopback.
    assert environment(compose, "engine")["ENGINE_HOST"] == "0.0.0.0"
    # No operator key is needed on this host: an engine for its own user.
    settings = engine_settings(settings_env(compose, "engine"))
    assert not settings.operator_keys


def test_opening_the_ports_requires_operator_keys(compose: dict[str, Any]) -> None:
    (published,) = services(compose)["engine"]["ports"]
    opened = {**REQUIRED_ON_HOST, "ENGINE_PUBLISH_ADDRESS": "0.0.0.0"}
    assert interpolate(published, opened).startswith("0.0.0.0:")
    # `docker compose up` stops with the message, naming the variable to set.
    with pytest.raises(MissingVariable, match="ENGINE_OPERATOR_KEYS") as refused:
        environment(compose, "engine", opened)
    assert "ENGINE_PUBLISH_ADDRESS" in str(refused.value)
    env = settings_env(compose, "engine", {**opened, "ENGINE_OPERATOR_KEYS": OPERATOR_KEY})
    settings = engine_settings(env)
    assert settings.operator_keys == OPERATOR_KEY
    assert not settings.public_create, "CreateGame, ListGames, DeleteGame need the key"


def test_the_engines_rate_limit_each_peer(compose: dict[str, Any]) -> None:
    settings = engine_settings(settings_env(compose, "engine"))
    assert settings.limit_create_per_minute > 0
    assert settings.limit_submit_per_second > 0


# ---------------------------------------------------------------------------
# Redis: ACL users whose passwords the first run draws
# ---------------------------------------------------------------------------


def test_secrets_run_first_and_keep_what_they_drew(compose: dict[str, Any], tmp_path: Path) -> None:
    stack = services(compose)
    secrets = stack["secrets"]
    assert secrets["entrypoint"] == ["sh", "/compose-secrets.sh"]
    assert secrets["cap_drop"] == ["ALL"] and secrets["read_only"] is True
    assert secrets["network_mode"] == "none"
    for name in ("redis", "engine", "worker", "redis-exporter"):
        waits = set(stack[name].get("depends_on", {}))
        assert "secrets" in waits or "redis" in waits, f"{name} may start before the secrets"
    assert stack["redis"]["depends_on"]["secrets"]["condition"] == "service_completed_successfully"
    # Each consumer mounts only its own volume.
    mounted = {
        name: {v.split(":")[0] for v in service.get("volumes", []) if "secrets" in v.split(":")[0]}
        for name, service in stack.items()
    }
    assert mounted["redis"] == {"redis-secrets"}
    assert mounted["engine"] == {"engine-secrets"}
    assert mounted["worker"] == {"worker-secrets"}, "the workers (bot code) never see the store's"
    assert mounted["redis-exporter"] == {"exporter-secrets"}
    assert not (mounted["prometheus"] | mounted["grafana"])
    assert f"./{REDIS_USERS_RULES.relative_to(DEPLOY)}:/redis-users.rules:ro" in secrets["volumes"]
    first = run_secrets_script(tmp_path)
    drawn = {p: p.read_text() for d in first.values() for p in d.iterdir()}
    assert run_secrets_script(tmp_path) == first
    assert {p: p.read_text() for d in first.values() for p in d.iterdir()} == drawn, "kept"
    assert all(p.stat().st_mode & 0o777 == 0o444 for p in drawn)
    url = (first["engine-secrets"] / "redis-url").read_text().strip()
    password = re.fullmatch(r"redis://engine:([0-9a-f]{48})@redis:6379/0", url)
    assert password, url
    broker = (first["worker-secrets"] / "broker-url").read_text().strip()
    assert re.fullmatch(r"redis://broker:[0-9a-f]{48}@redis:6379/0", broker), broker
    assert (first["engine-secrets"] / "broker-url").read_text().strip() == broker
    assert not (first["worker-secrets"] / "redis-url").exists()
    acl = (first["redis-secrets"] / "users.acl").read_text()
    assert password.group(1) not in acl, "Redis holds digests, not passwords"
    assert acl.startswith("user default off")
    # Another stack draws other passwords.
    (tmp_path / "other").mkdir()
    other = run_secrets_script(tmp_path / "other")
    assert (other["engine-secrets"] / "redis-url").read_text().strip() != url


def test_a_new_version_of_the_rules_reaches_a_stack_that_has_its_passwords(
    tmp_path: Path,
) -> None:
    """The ACL file is written from the rules on every run, the passwords kept: a stack made
    before a change of the rules gets the new rules with its next `up`."""
    first = run_secrets_script(tmp_path)
    url = (first["engine-secrets"] / "redis-url").read_text()
    acl = first["redis-secrets"] / "users.acl"
    acl.chmod(0o644)
    acl.write_text("user default off\nuser engine on nopass ~* +@all\n")
    again = run_secrets_script(tmp_path)
    assert (again["engine-secrets"] / "redis-url").read_text() == url
    rewritten = acl.read_text()
    assert "nopass" not in rewritten and "~asc:*" in rewritten


def redis_command(compose: dict[str, Any], volumes: Mapping[str, Path], port: int) -> list[str]:
    """Compose's redis command for a local redis-server: its files from ``volumes``, on
    ``port``, persistence in the test's own directory."""
    redis = services(compose)["redis"]
    secrets_dir = next(
        v.split(":")[1] for v in redis["volumes"] if v.split(":")[0] == "redis-secrets"
    )
    argv = [
        default_of(a).replace(secrets_dir, str(volumes["redis-secrets"])) for a in redis["command"]
    ]
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    return [binary, *argv[1:], "--port", str(port), "--bind", "127.0.0.1", "--save", ""]


def test_redis_admits_only_its_acl_users_each_to_its_own_commands(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """A real redis-server with compose's command and the ACL file the secrets script writes; a
    real engine reading its URLs from its volume dispatches an AI move through it, and the
    exporter's user reads the queue's length. The default user is off; the engine's and the
    broker's users cannot wipe, reconfigure or watch the server (tests/deploy/test_redis_acl.py
    tries every such command, and plays whole games through them); the exporter's and the
    health check's users can only read."""
    import redis as redis_py

    from tests.deploy import test_redis_acl
    from tests.service import support

    port = support.free_port()
    volumes = run_secrets_script(tmp_path)
    local: dict[str, Path] = {}
    for volume, name in (("engine-secrets", "redis-url"), ("engine-secrets", "broker-url")):
        url = (volumes[volume] / name).read_text().replace("@redis:6379/", f"@127.0.0.1:{port}/")
        local[name] = tmp_path / name
        local[name].write_text(url)
    proc = subprocess.Popen(
        redis_command(compose, volumes, port), cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    engine = None
    try:
        store = redis_py.Redis.from_url(local["redis-url"].read_text().strip())
        broker = redis_py.Redis.from_url(local["broker-url"].read_text().strip())
        wait_until(lambda: _pings(store), 10)
        exporter_password = re.search(
            r'": "([0-9a-f]+)"', (volumes["exporter-secrets"] / "redis-password.json").read_text()
        )
        assert exporter_password
        exporter = redis_py.Redis(
            port=port, username="exporter", password=exporter_password.group(1)
        )
        anonymous = redis_py.Redis(port=port)
        with pytest.raises(redis_py.AuthenticationError):
            anonymous.get("x")
        for client in (store, broker):
            test_redis_acl.assert_refused(client, ("FLUSHALL",), ("SWAPDB", "0", "1"))
            test_redis_acl.assert_refused(client, ("CONFIG", "SET", "appendfsync", "no"))
        # The engine, configured as compose configures it (its URLs from its volume).
        env = in_volumes(compose, "engine", environment(compose, "engine"), volumes)
        engine = support.start_engine(
            REDIS_URL_FILE=str(local["redis-url"]),
            CELERY_BROKER_URL_FILE=str(local["broker-url"]),
            ENGINE_AI_DISPATCH=env["ENGINE_AI_DISPATCH"],
            ENGINE_AI_TOKEN_KEYS=env["ENGINE_AI_TOKEN_KEYS"],
        )
        from engine_service.api.ascension.v1 import engine_pb2 as epb
        from engine_service.api.ascension.v1 import game_pb2 as pb

        seats = [
            epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"bot-{i}", bot=epb.BotSettings(name="random"))
            for i in range(2)
        ]
        engine.stub().CreateGame(epb.CreateGameRequest(sets="ss", seats=seats), timeout=10)
        wait_until(lambda: exporter.llen("ascension.moves") >= 1, 10)
        assert "redis_version" in exporter.info()
        with pytest.raises(redis_py.exceptions.NoPermissionError):
            exporter.set("x", "1")
        with pytest.raises(redis_py.exceptions.NoPermissionError):
            exporter.lpop("ascension.moves")
        # The container's health check, pointed at this server.
        test = services(compose)["redis"]["healthcheck"]["test"]
        assert test[0] == "CMD-SHELL"
        secrets_dir = next(
            v.split(":")[1]
            for v in services(compose)["redis"]["volumes"]
            if v.split(":")[0] == "redis-secrets"
        )
        shell = test[1].replace("$$", "$").replace(secrets_dir, str(volumes["redis-secrets"]))
        shell = shell.replace("redis-cli", f"redis-cli -p {port}")
        assert subprocess.run(["sh", "-c", shell], timeout=10, check=False).returncode == 0
        broken = shell.replace("healthcheck-password", "users.acl")
        assert subprocess.run(["sh", "-c", broken], timeout=10, check=False).returncode != 0
    finally:
        if engine is not None:
            engine.stop()
        proc.terminate()
        proc.wait(10)


def wait_until(predicate: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.05)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


# ---------------------------------------------------------------------------
# Images pinned by digest
# ---------------------------------------------------------------------------

DIGEST_PINNED = re.compile(r"^[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$")


def test_every_pulled_image_is_pinned_by_digest(compose: dict[str, Any]) -> None:
    """name:tag@sha256:...: the digest decides what is pulled, the tag is for readers. The
    app image is the one built from this repository."""
    for name, service in services(compose).items():
        image = default_of(service["image"])
        if name in APP_SERVICES:
            assert "build" in service, name
            continue
        assert DIGEST_PINNED.match(image), f"{name}: {image} is not pinned by digest"


def test_the_chart_pins_the_same_redis_images() -> None:
    chart = yaml.safe_load((DEPLOY / "helm" / "ascension-engine" / "values.yaml").read_text())
    stack = services(yaml.safe_load(COMPOSE.read_text()))
    for image, service in (
        (chart["redis"]["image"], "redis"),
        (chart["redis"]["metrics"]["image"], "redis-exporter"),
    ):
        pinned = f"{image['repository']}:{image['tag']}@{image['digest']}"
        assert stack[service]["image"] == pinned, service
