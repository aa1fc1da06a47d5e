"""Static checks of docker-compose.yml, the Dockerfile and .env.example: what `docker compose up` would trip over
(missing mounts, unknown dependencies, floating image tags, unset variables) caught without Docker."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"
CI_WORKERS = 4  # the documented worker count of the ci profile
OUTPUT_DIRS = {"results"}  # written by containers, created by `mkdir -p results`, git-ignored
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:?\-+][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env_example_keys() -> set[str]:
    keys = set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line.split("=", 1)[0].strip())
    return keys


def command_list(service: dict[str, Any]) -> list[str]:
    cmd = service.get("command") or []
    return shlex.split(cmd) if isinstance(cmd, str) else [str(c) for c in cmd]


def option(cmd: list[str], flag: str) -> str | None:
    return cmd[cmd.index(flag) + 1] if flag in cmd else None


def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(host path, container path, mode) of each bind mount; named volumes are skipped."""
    out = []
    for vol in service.get("volumes") or []:
        if isinstance(vol, dict):
            if vol.get("type") == "bind":
                out.append((vol["source"], vol["target"], "ro" if vol.get("read_only") else "rw"))
            continue
        parts = vol.split(":")
        if parts[0].startswith((".", "/")):
            out.append((parts[0], parts[1], parts[2] if len(parts) > 2 else "rw"))
    return out


def test_every_bind_mounted_host_path_exists_or_is_a_declared_output_dir(services: dict[str, Any]) -> None:
    gitignore = (ROOT / ".gitignore").read_text().split()
    for name, svc in services.items():
        for host, _, mode in bind_mounts(svc):
            rel = Path(host).as_posix().removeprefix("./")
            if rel in OUTPUT_DIRS:
                assert mode == "rw", f"{name}: output dir {host} must be writable"
                assert f"{rel}/" in gitignore or rel in gitignore, f"{rel} must be git-ignored"
                continue
            assert not Path(host).is_absolute(), f"{name}: absolute host path {host}"
            assert (ROOT / rel).exists(), f"{name}: mounted {host} does not exist in the repository"
            assert mode == "ro", f"{name}: input mount {host} should be read-only"


def test_named_volumes_are_declared(compose: dict[str, Any], services: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, svc in services.items():
        for vol in svc.get("volumes") or []:
            if isinstance(vol, str) and not vol.startswith((".", "/")):
                assert vol.split(":")[0] in declared, f"{name}: volume {vol} not declared"


def test_every_dependency_is_a_defined_service_with_a_healthcheck_when_required(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        items = deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps)
        for dep, spec in items:
            assert dep in services, f"{name} depends on undefined service {dep}"
            if (spec or {}).get("condition") == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep} to be healthy, which has no check"
            dep_profiles = set(services[dep].get("profiles") or [])
            assert not dep_profiles or dep_profiles <= set(svc.get("profiles") or []), (
                f"{name} depends on {dep}, which only exists in profiles {dep_profiles}"
            )


def test_images_are_pinned(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        image = svc.get("image")
        assert image or svc.get("build"), f"{name}: neither image nor build"
        if image and not svc.get("build"):
            repo, _, tag = image.rpartition(":")
            assert repo and "/" not in tag, f"{name}: image {image} has no tag"
            assert tag not in ("latest", "", "stable"), f"{name}: image {image} is not pinned"
    from_lines = [ln.split()[1] for ln in DOCKERFILE.read_text().splitlines() if ln.upper().startswith("FROM ")]
    assert from_lines, "Dockerfile has no FROM"
    for ref in from_lines:
        assert ":" in ref and not ref.endswith(":latest"), f"Dockerfile base {ref} is not pinned"


def test_influxdb_is_2x_and_initialised_from_env(services: dict[str, Any]) -> None:
    influx = services["influxdb"]
    assert influx["image"].startswith("influxdb:2.")  # influxdb:latest is now InfluxDB 3
    env = influx["environment"]
    assert env["DOCKER_INFLUXDB_INIT_MODE"] == "setup"
    assert env["DOCKER_INFLUXDB_INIT_BUCKET"] == "locust"
    assert env["DOCKER_INFLUXDB_INIT_ADMIN_TOKEN"].startswith("${INFLUX_TOKEN")


def test_referenced_variables_are_documented_in_env_example() -> None:
    referenced = {a or b for a, b in VAR_RE.findall(COMPOSE.read_text())}
    assert referenced, "expected ${VAR} references"
    missing = referenced - env_example_keys()
    assert not missing, f"variables used in docker-compose.yml but missing from .env.example: {sorted(missing)}"


def test_no_secret_is_hard_coded(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        env = svc.get("environment") or {}
        items = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env)
        for key, value in items:
            if re.search(r"TOKEN|PASSWORD|SECRET|API_KEY$", key):
                assert str(value).startswith("${"), f"{name}: {key} must come from .env, not a literal"
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_ci_profile_expects_the_documented_number_of_workers(services: dict[str, Any]) -> None:
    ci = {n: s for n, s in services.items() if "ci" in (s.get("profiles") or [])}
    masters = [s for s in ci.values() if "--master" in command_list(s)]
    workers = [s for s in ci.values() if "--worker" in command_list(s)]
    assert len(masters) == 1 and len(workers) == 1
    cmd = command_list(masters[0])
    assert "--headless" in cmd
    for flag in ("-u", "-r", "-t", "--expect-workers-max-wait", "--json-file"):
        assert option(cmd, flag), f"ci master lacks {flag}"
    assert int(option(cmd, "--expect-workers") or 0) == CI_WORKERS
    assert workers[0]["deploy"]["replicas"] == CI_WORKERS
    worker_master = option(command_list(workers[0]), "--master-host")
    assert worker_master in ci and "--master" in command_list(ci[worker_master])
    assert f"--scale worker={CI_WORKERS}" in COMPOSE.read_text()  # the documented interactive command


def test_load_generators_target_the_mock_and_write_to_influxdb(services: dict[str, Any]) -> None:
    master = services["master"]
    cmd = command_list(master)
    assert "--master" in cmd and option(cmd, "-f") == "locustfiles/chat.py"
    assert (ROOT / "locustfiles" / "chat.py").exists()
    assert option(cmd, "--influx-url") == "http://influxdb:8086"
    assert master["environment"]["LLM_BASE_URL"] == "http://mock:8000/v1"
    mock_cmd = [*services["mock"].get("entrypoint", []), *command_list(services["mock"])]
    assert mock_cmd[:3] == ["python", "-m", "loadlib.mock"] and option(mock_cmd, "--port") == "8000"
    assert option(mock_cmd, "--host") == "0.0.0.0"
    worker_cmd = command_list(services["worker"])
    assert "--worker" in worker_cmd and option(worker_cmd, "--master-host") == "master"
    for name in ("master", "worker", "master-headless", "worker-ci"):
        assert services[name]["environment"]["INFLUX_TOKEN"].startswith("${INFLUX_TOKEN")


def test_grafana_is_provisioned_read_only_and_never_anonymous_admin(services: dict[str, Any]) -> None:
    grafana = services["grafana"]
    env = grafana["environment"]
    assert env.get("GF_AUTH_ANONYMOUS_ORG_ROLE", "Viewer") == "Viewer"
    mounts = {container: host for host, container, _ in bind_mounts(grafana)}
    assert mounts["/etc/grafana/provisioning"] == "./grafana/provisioning"
    provider = yaml.safe_load((ROOT / "grafana/provisioning/dashboards/dashboards.yml").read_text())["providers"][0]
    assert provider["allowUiUpdates"] is False
    dash_dir = provider["options"]["path"]
    assert dash_dir in mounts, "the dashboard provider path is not mounted"
    assert list((ROOT / mounts[dash_dir].removeprefix("./")).glob("*.json")), "no dashboard JSON to provision"
    home = env.get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        rel = Path(home).relative_to(dash_dir)
        assert (ROOT / mounts[dash_dir].removeprefix("./") / rel).exists()
    ds = yaml.safe_load((ROOT / "grafana/provisioning/datasources/influxdb.yml").read_text())["datasources"][0]
    assert ds["uid"] == "influxdb" and ds["type"] == "influxdb"
    assert ds["url"] == "http://influxdb:8086"
    assert ds["jsonData"]["dbName"] == "locust" and ds["jsonData"]["httpHeaderName1"] == "Authorization"
    assert ds["secureJsonData"]["httpHeaderValue1"] == "Token ${INFLUX_TOKEN}"
    assert env["INFLUX_TOKEN"].startswith("${INFLUX_TOKEN")


def test_dockerfile_installs_the_project_without_copying_secrets() -> None:
    lines = [ln.strip() for ln in DOCKERFILE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "FROM locustio/locust:2.47.0"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"locust==2.47.0"' in pyproject, "the base image must match the locust pin of pyproject.toml"
    copies = [ln.split()[1:-1] for ln in lines if ln.upper().startswith("COPY ")]
    sources = [src for srcs in copies for src in srcs if not src.startswith("--")]
    assert "pyproject.toml" in sources and "loadlib" in sources
    for src in sources:
        assert src not in (".", "./", ".env"), "copy only what the package needs (never .env)"
        assert (ROOT / src).exists(), f"Dockerfile copies {src}, which does not exist"
    assert any(re.search(r"pip install .*(\s|^)\.(\s|$)", ln) for ln in lines if ln.upper().startswith("RUN ")), (
        "the Dockerfile must pip install the project"
    )
