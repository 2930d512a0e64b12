"""deploy/compose.yaml: the Compose specification, and the wiring of the stack."""

from __future__ import annotations

import re
import subprocess
import sys
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
    check_command,
    engine_settings,
    option,
    settings_named,
    worker_settings,
)

COMPOSE = DEPLOY / "compose.yaml"
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


def default_of(value: str) -> str:
    """The value Compose uses when the variable is unset: ${VAR:-default} -> default."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value))


# Variables the stack requires (${VAR:?message}: compose refuses to start without them), as
# an operator would set them on the host.
REQUIRED_ON_HOST = {
    "ENGINE_AI_TOKEN_KEYS": "a-random-key-set-on-the-host-0123456789abcdef",
    "GRAFANA_ADMIN_PASSWORD": "a-password-set-on-the-host",
}


def required_of(value: str) -> str:
    """${VAR:?message} -> the value the operator set (REQUIRED_ON_HOST)."""
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: REQUIRED_ON_HOST[m.group(1)], str(value))


def environment(compose: dict[str, Any], service: str) -> dict[str, str]:
    """A service's environment as its process sees it with only the required variables set
    on the host."""
    env = services(compose)[service]["environment"]
    return {key: required_of(default_of(value)) for key, value in env.items()}


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


def test_redis_persists_with_aof_and_never_evicts(compose: dict[str, Any]) -> None:
    redis = services(compose)["redis"]
    command = redis["command"]
    assert command[0] == "redis-server"
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert options["--appendonly"] == "yes"
    assert options["--maxmemory-policy"] == "noeviction"
    volume, target = redis["volumes"][0].split(":")[:2]
    assert target == "/data" and volume in compose["volumes"], "the AOF must live on a named volume"
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_two_engine_replicas_a_worker_and_no_sweeper_service(compose: dict[str, Any]) -> None:
    stack = services(compose)
    assert stack["engine"]["deploy"]["replicas"] == 2
    assert stack["engine"]["command"] == ["ascension-engine", "serve"]
    assert stack["worker"]["command"] == ["ascension-worker", "run"]
    # The sweeper runs inside every engine replica (ENGINE_AI_SWEEP_SECONDS).
    assert set(stack) == {"redis", "redis-exporter", "engine", "worker", "prometheus", "grafana"}
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


def test_environment_follows_the_contract(compose: dict[str, Any]) -> None:
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
    assert engine["REDIS_URL"].startswith("redis://redis:6379/"), (
        "the engine must use the shared Redis"
    )
    # Everything else is the server's own default, so the docs' defaults hold in compose.
    for key, value in engine.items():
        if key not in DEPLOYMENT_CHOICES | telemetry.ENVIRONMENT:
            opt = option(key)
            assert opt.kind(value) == opt.default, f"{key}={value}, the server says {opt.default}"


def test_engine_accepts_its_environment_and_dispatches_to_the_workers(
    compose: dict[str, Any],
) -> None:
    settings = engine_settings(environment(compose, "engine"))  # raises like the server would
    worker = worker_settings(environment(compose, "worker"))
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
    published = services(compose)["engine"]["ports"][0]
    host_range, container_port = published.rsplit(":", 1)
    first, last = (int(p) for p in host_range.split("-"))
    assert container_port == engine_port
    assert last - first + 1 >= services(compose)["engine"]["deploy"]["replicas"], (
        "one host port per replica"
    )


def test_engine_stops_gracefully(compose: dict[str, Any]) -> None:
    settings = engine_settings(environment(compose, "engine"))
    needed = settings.shutdown_drain_seconds + settings.shutdown_grace_seconds
    assert duration_seconds(services(compose)["engine"]["stop_grace_period"]) > needed


def test_worker_stops_after_its_longest_task(compose: dict[str, Any]) -> None:
    worker = worker_settings(environment(compose, "worker"))
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
    published = {
        name for name, service in services(compose).items() if service.get("ports")
    }
    assert published == {"engine", "prometheus", "grafana"}


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
