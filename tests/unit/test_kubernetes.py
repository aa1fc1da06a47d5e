"""Static checks of deploy/kubernetes: each kustomization is rendered by a small pure-Python renderer (no kubectl),
every resource is validated against the Kubernetes API schemas that kubernetes-validate bundles (offline), and the
manifests are held to docker-compose.yml: the same image and worker command, Services that find their pods, a
master reachable on the port the workers dial, a headless Job that waits for exactly the workers it gets."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
KUBE = ROOT / "deploy" / "kubernetes"
KUSTOMIZATIONS = {
    "base": KUBE / "base",
    "workers-4": KUBE / "overlays" / "workers-4",
    "headless-job": KUBE / "overlays" / "headless-job",
}
EXTRA_MANIFESTS = [KUBE / "overlays" / "headless-job" / "results-reader.yaml"]  # applied by hand, not kustomized
K8S_VERSION = "1.33.0"  # a schema set bundled with kubernetes-validate; the oldest minor the manifests target
WORKLOADS = ("Deployment", "Job")
LOCUST_MASTER_PORT = 5557  # Locust's default --master-port, which the workers' command does not override
SECRET_WORDS = ("KEY", "TOKEN", "PASSWORD", "SECRET")
DOCKERFILE = ROOT / "Dockerfile"
TEST_SH = ROOT / "scripts" / "test.sh"
# checkov, the policy checker, lives in its own venv (scripts/test.sh pins and installs it there: its dependencies
# would downgrade packaging and python-dateutil under the project's own pins). $CHECKOV points at another binary.
CHECKOV = Path(os.environ.get("CHECKOV", ROOT / "tools" / "checkov" / ".venv" / "bin" / "checkov"))
# The "restricted" Pod Security Standard (Kubernetes 1.33; baseline's controls included), control by control, and
# the checkov check that holds each pod to it. Where checkov has no check, or a weaker one, pss_gaps() below does.
RESTRICTED_CHECKS = {
    "CKV_K8S_16": "baseline / Privileged Containers: privileged unset or false",
    "CKV_K8S_17": "baseline / Host Namespaces: hostPID unset or false",
    "CKV_K8S_18": "baseline / Host Namespaces: hostIPC unset or false",
    "CKV_K8S_19": "baseline / Host Namespaces: hostNetwork unset or false",
    "CKV_K8S_26": "baseline / Host Ports: no hostPort",
    "CKV_K8S_27": "baseline / HostPath Volumes: not the Docker socket (any hostPath: pss_gaps, Volume Types)",
    "CKV_K8S_25": "baseline / Capabilities: none added (restricted allows NET_BIND_SERVICE only: pss_gaps)",
    "CKV_K8S_28": "baseline / Capabilities: no NET_RAW",
    "CKV_K8S_39": "baseline / Capabilities: no SYS_ADMIN",
    "CKV_K8S_31": "restricted / Seccomp: RuntimeDefault (a container's Unconfined override: pss_gaps)",
    "CKV_K8S_20": "restricted / Privilege Escalation: allowPrivilegeEscalation false",
    "CKV_K8S_23": "restricted / Running as Non-root: a non-root user (checkov takes runAsUser > 0 for it; the "
    "control wants runAsNonRoot true: pss_gaps)",
    "CKV_K8S_37": "restricted / Capabilities: drop ALL",
}
# Asked for beyond the standard (issue 21): nothing writes outside its volumes, no pod holds an API token.
HARDENING_CHECKS = {
    "CKV_K8S_22": "readOnlyRootFilesystem true",
    "CKV_K8S_38": "automountServiceAccountToken false",
}
PSS_VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected"}
PSS_VOLUME_TYPES |= {"secret"}


# --- a tiny kustomize: the subset deploy/kubernetes uses -------------------------------------------------------

SUPPORTED_FIELDS = {"apiVersion", "kind", "resources", "patches", "replicas"}
NAME_KEYED_LISTS = {"containers", "initContainers", "env", "volumes"}  # strategic merge by "name"; others replaced


def resource_id(res: dict[str, Any]) -> tuple[str, str]:
    return res["kind"], res["metadata"]["name"]


def merge(base: Any, patch: Any, key: str = "") -> Any:
    """Strategic merge patch, as far as these manifests need it: maps merge, null deletes, containers / env /
    volumes merge by name, every other list is replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = merge(out[k], v, k) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in NAME_KEYED_LISTS:
        out = [copy.deepcopy(item) for item in base]
        for item in patch:
            names = [i for i, old in enumerate(out) if old.get("name") == item["name"]]
            if names:
                out[names[0]] = merge(out[names[0]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def render(directory: Path) -> list[dict[str, Any]]:
    """What `kubectl kustomize DIRECTORY` outputs, for the fields in SUPPORTED_FIELDS (anything else fails)."""
    kust = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kust) - SUPPORTED_FIELDS
    assert not unsupported, f"{directory}: the test renderer does not support {sorted(unsupported)}"
    resources: list[dict[str, Any]] = []
    for entry in kust.get("resources") or []:
        path = (directory / entry).resolve()
        if path.is_dir():
            resources += render(path)
        else:
            assert path.is_relative_to(directory), f"{entry}: kustomize only loads files below {directory}"
            resources += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    ids = [resource_id(r) for r in resources]
    assert len(ids) == len(set(ids)), f"{directory}: duplicate resources {ids}"
    for patch in kust.get("patches") or []:
        assert set(patch) == {"path"}, f"{directory}: only file patches (target taken from the patch) supported"
        doc = yaml.safe_load((directory / patch["path"]).read_text())
        index = ids.index(resource_id(doc))
        if doc.get("$patch") == "delete":
            del resources[index], ids[index]
        else:
            resources[index] = merge(resources[index], doc)
    for replicas in kust.get("replicas") or []:
        targets = [r for r in resources if r["metadata"]["name"] == replicas["name"] and r["kind"] == "Deployment"]
        assert len(targets) == 1, f"{directory}: replicas for {replicas['name']} match {len(targets)} Deployments"
        targets[0]["spec"]["replicas"] = replicas["count"]
    return resources


# --- helpers ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose_services() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


@pytest.fixture(scope="module", params=list(KUSTOMIZATIONS), ids=list(KUSTOMIZATIONS))
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(KUSTOMIZATIONS[request.param])


def rendered_all() -> list[tuple[str, dict[str, Any]]]:
    out = [
        (f"{name}/{resource_id(r)[0]}/{resource_id(r)[1]}", r) for name, d in KUSTOMIZATIONS.items() for r in render(d)
    ]
    for path in EXTRA_MANIFESTS:
        out += [(f"{path.name}/{doc['kind']}", doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


def one(resources: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [r for r in resources if resource_id(r) == (kind, name)]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    return workload["spec"]["template"]["metadata"]["labels"]


def all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(spec.get("initContainers") or []), *spec["containers"]]


def workloads(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in resources if r["kind"] in WORKLOADS]


def by_component(resources: list[dict[str, Any]], component: str) -> dict[str, Any]:
    found = [w for w in workloads(resources) if pod_labels(w).get("app.kubernetes.io/component") == component]
    assert len(found) == 1, f"expected one {component} workload, found {[resource_id(w) for w in found]}"
    return found[0]


def main_container(workload: dict[str, Any]) -> dict[str, Any]:
    containers = pod_spec(workload)["containers"]
    assert len(containers) == 1, f"{resource_id(workload)}: one container expected"
    return containers[0]


def worker_count(workload: dict[str, Any]) -> int:
    """The workers a workload runs at once: a Deployment's replicas, a Job's parallelism (the headless variant's
    workers are a Job, so that they end with the run)."""
    return workload["spec"]["parallelism" if workload["kind"] == "Job" else "replicas"]


def option(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def compose_command(service: dict[str, Any]) -> list[str]:
    return [str(c) for c in service.get("command") or []]


def cpu_cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


# --- the renderer itself ---------------------------------------------------------------------------------------


def test_the_renderer_merges_like_a_strategic_merge_patch() -> None:
    base = {
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "worker", "image": "i", "args": ["-f", "a.py"], "env": [{"name": "A", "value": "1"}]},
                        {"name": "side", "image": "s"},
                    ]
                }
            },
        }
    }
    patch = {
        "spec": {
            "replicas": 4,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "worker",
                            "args": ["-f", "b.py"],
                            "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}],
                        },
                    ]
                }
            },
        }
    }
    out = merge(base, patch)
    worker, side = out["spec"]["template"]["spec"]["containers"]
    assert out["spec"]["replicas"] == 4 and side == {"name": "side", "image": "s"}
    assert worker == {
        "name": "worker",
        "image": "i",
        "args": ["-f", "b.py"],
        "env": [{"name": "A", "value": "3"}, {"name": "B", "value": "2"}],
    }
    assert base["spec"]["replicas"] == 2, "the base must not be modified"
    assert merge({"a": 1, "b": 2}, {"b": None}) == {"a": 1}


@pytest.mark.skipif(not shutil.which(os.environ.get("KUBECTL", "kubectl")), reason="no kubectl on PATH ($KUBECTL)")
@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_the_renderer_agrees_with_kubectl_kustomize_where_kubectl_exists(name: str) -> None:
    kubectl = shutil.which(os.environ.get("KUBECTL", "kubectl"))
    out = subprocess.run(
        [kubectl, "kustomize", str(KUSTOMIZATIONS[name])], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    theirs = sorted((d for d in yaml.safe_load_all(out) if d), key=resource_id)
    assert theirs == sorted(render(KUSTOMIZATIONS[name]), key=resource_id)


# --- the manifests ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "resource"), rendered_all(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_resource_is_valid_against_the_kubernetes_api_schema(label: str, resource: dict[str, Any]) -> None:
    import kubernetes_validate

    assert K8S_VERSION in kubernetes_validate.utils.all_versions()
    try:
        kubernetes_validate.validate(resource, K8S_VERSION, strict=True)  # strict: unknown fields are errors
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{label}: {'.'.join(map(str, exc.path))}: {exc.message}")


def test_worker_image_and_command_are_compose_s(
    rendered: list[dict[str, Any]], compose_services: dict[str, Any]
) -> None:
    compose_worker = compose_services["worker"]
    worker = main_container(by_component(rendered, "worker"))
    assert worker["image"] == compose_worker["image"]
    assert "command" not in worker, "keep the image's entrypoint (locust), as compose does"
    expected = compose_command(compose_worker)
    master_host = option(worker["args"], "--master-host")
    expected[expected.index("--master-host") + 1] = master_host  # compose's service name -> the Service's
    assert worker["args"] == expected
    one(rendered, "Service", master_host)


def test_every_container_runs_the_compose_image(
    rendered: list[dict[str, Any]], compose_services: dict[str, Any]
) -> None:
    images = {c["image"] for w in workloads(rendered) for c in all_containers(pod_spec(w))}
    assert images == {compose_services["worker"]["image"]}


def test_mock_is_compose_s_and_the_default_target(
    rendered: list[dict[str, Any]], compose_services: dict[str, Any]
) -> None:
    compose_mock = compose_services["mock"]
    mock = main_container(by_component(rendered, "mock"))
    assert mock["image"] == compose_mock["image"]
    assert mock["command"] == compose_mock["entrypoint"] and mock["args"] == compose_command(compose_mock)
    settings = one(rendered, "ConfigMap", "loadlib-settings")["data"]
    base_url = settings["LLM_BASE_URL"]
    assert base_url == compose_services["worker"]["environment"]["LLM_BASE_URL"].replace("//mock:", "//loadlib-mock:")
    service = one(rendered, "Service", "loadlib-mock")
    port = int(base_url.split(":")[2].split("/")[0])
    assert port in [p["port"] for p in service["spec"]["ports"]]
    assert settings["LLM_API_KEY_ENV"] == compose_services["worker"]["environment"]["LLM_API_KEY_ENV"] == "none"
    assert mock["readinessProbe"]["httpGet"]["path"] == "/health"


def test_every_service_selects_exactly_one_workload_whose_ports_it_names(rendered: list[dict[str, Any]]) -> None:
    for workload in workloads(rendered):
        if workload["kind"] == "Deployment":
            selector = workload["spec"]["selector"]["matchLabels"]
            assert selector.items() <= pod_labels(workload).items(), f"{resource_id(workload)}: own selector"
    for service in (r for r in rendered if r["kind"] == "Service"):
        selector = service["spec"]["selector"]
        matched = [w for w in workloads(rendered) if selector.items() <= pod_labels(w).items()]
        assert len(matched) == 1, f"{resource_id(service)} selects {[resource_id(w) for w in matched]}"
        named = {p["name"] for c in pod_spec(matched[0])["containers"] for p in c.get("ports") or []}
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert not isinstance(target, str) or target in named, f"{resource_id(service)}: no port {target}"


def test_the_master_service_exposes_what_the_workers_dial(rendered: list[dict[str, Any]]) -> None:
    worker_args = main_container(by_component(rendered, "worker"))["args"]
    assert "--master-port" not in worker_args
    service = one(rendered, "Service", option(worker_args, "--master-host"))
    master = by_component(rendered, "master")
    assert service["spec"]["selector"].items() <= pod_labels(master).items()
    ports = {p["port"]: p.get("targetPort", p["port"]) for p in service["spec"]["ports"]}
    assert ports.get(LOCUST_MASTER_PORT) == LOCUST_MASTER_PORT, "workers connect to the master on 5557"
    container_ports = {p["containerPort"] for p in main_container(master).get("ports") or []}
    assert LOCUST_MASTER_PORT in container_ports
    assert ports.get(8089) == 8089, "the web UI port (the headless variant's Service keeps it, unused)"


def test_the_web_master_is_one_replica_with_a_readiness_probe_on_its_web_ui() -> None:
    for name in ("base", "workers-4"):
        master = by_component(render(KUSTOMIZATIONS[name]), "master")
        assert master["kind"] == "Deployment" and master["spec"]["replicas"] == 1
        assert master["spec"]["strategy"]["type"] == "Recreate"
        container = main_container(master)
        assert option(container["args"], "-f") == "locustfiles/chat.py" and "--master" in container["args"]
        assert "--headless" not in container["args"]
        probe = container["readinessProbe"]["httpGet"]
        web = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert probe["path"] == "/" and web.get(probe["port"], probe["port"]) == 8089


@pytest.mark.parametrize(("name", "replicas"), [("base", 2), ("workers-4", 4), ("headless-job", 4)])
def test_worker_replicas_and_one_core_each(name: str, replicas: int) -> None:
    worker = by_component(render(KUSTOMIZATIONS[name]), "worker")
    assert worker_count(worker) == replicas
    resources = main_container(worker)["resources"]
    # One Locust worker uses at most one core: a limit below it hides saturation from the CPU check (the worker
    # is throttled at, e.g., 50 % while its latencies inflate); request = limit keeps neighbours from starving it.
    assert cpu_cores(resources["limits"]["cpu"]) == cpu_cores(resources["requests"]["cpu"]) == 1.0
    assert resources["requests"]["memory"] and resources["limits"]["memory"]


def test_the_headless_job_is_the_verdict_and_waits_for_the_overlay_s_workers() -> None:
    resources = render(KUSTOMIZATIONS["headless-job"])
    master = by_component(resources, "master")
    assert master["kind"] == "Job", "the web-UI master Deployment must be gone"
    assert master["spec"]["backoffLimit"] == 0 and pod_spec(master)["restartPolicy"] == "Never"
    args = main_container(master)["args"]
    assert "--master" in args and "--headless" in args
    for flag in ("-u", "-r", "-t", "--expect-workers-max-wait", "--llm-summary", "--llm-junit", "--llm-markdown"):
        assert option(args, flag), f"the Job's master lacks {flag}"
    workers = by_component(resources, "worker")
    assert int(option(args, "--expect-workers") or 0) == worker_count(workers)
    # The reports land on a volume that outlives the pod: the PVC of this overlay.
    mounts = {m["mountPath"]: m["name"] for m in main_container(master)["volumeMounts"]}
    summary = Path(option(args, "--llm-summary") or "")
    assert str(summary.parent) in mounts, f"{summary} is not on a mounted volume"
    volume = next(v for v in pod_spec(master)["volumes"] if v["name"] == mounts[str(summary.parent)])
    one(resources, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    for flag in ("--json-file", "--csv", "--html", "--llm-junit", "--llm-markdown"):
        assert str(Path(option(args, flag) or "").parent) in mounts, f"{flag} is not written to the volume"
    reader = yaml.safe_load(EXTRA_MANIFESTS[0].read_text())
    assert (
        reader["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
        == volume["persistentVolumeClaim"]["claimName"]
    )


def test_the_wait_for_target_script_of_the_job_runs(tmp_path: Path) -> None:
    """The init container's inline script: done once the target accepts connections, a clear failure if never."""
    job = by_component(render(KUSTOMIZATIONS["headless-job"]), "master")
    (init,) = pod_spec(job)["initContainers"]
    assert init["command"][:2] == ["python", "-c"]
    script = init["command"][2]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        env = {**os.environ, "LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "WAIT_FOR_TARGET_S": "10"}
        ok = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and "accepts connections" in ok.stdout, ok.stderr
    env = {**os.environ, "LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "WAIT_FOR_TARGET_S": "0"}
    down = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert down.returncode == 1 and "unreachable" in down.stderr
    env.pop("LLM_BASE_URL")
    assert subprocess.run([sys.executable, "-c", script], env=env, timeout=30).returncode == 0


def test_keys_come_only_from_an_optional_secret(rendered: list[dict[str, Any]]) -> None:
    assert not [r for r in rendered if r["kind"] == "Secret"], "never commit a Secret"
    settings = one(rendered, "ConfigMap", "loadlib-settings")["data"]
    for key in settings:
        assert key.endswith("_ENV") or not any(w in key for w in SECRET_WORDS), f"ConfigMap holds a secret: {key}"
    key_variables: set[str] = set()
    for workload in workloads(rendered):
        for container in all_containers(pod_spec(workload)):
            for env in container.get("env") or []:
                if any(w in env["name"] for w in SECRET_WORDS) and not env["name"].endswith("_ENV"):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    assert ref and ref["optional"] is True and "value" not in env, (
                        f"{resource_id(workload)}: {env['name']} must come from an optional secretKeyRef"
                    )
                    key_variables.add(env["name"])
    load_generators = [by_component(rendered, c) for c in ("master", "worker")]
    for workload in load_generators:
        names = {e["name"] for e in main_container(workload).get("env") or []}
        assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "INFLUX_TOKEN"} <= names, resource_id(workload)
        assert {"configMapRef": {"name": "loadlib-settings"}} in main_container(workload)["envFrom"]
    assert settings["LLM_API_KEY_ENV"] in key_variables | {"none"}


def test_the_settings_are_options_loadlib_and_locust_know() -> None:
    from loadlib.options import OPTIONS

    # Locust's parser in a child process: importing locust monkey-patches this one with gevent.
    listing = (
        "from locust.argument_parser import get_parser\n"
        "print(*(a.env_var for a in get_parser()._actions if getattr(a, 'env_var', None)))"
    )
    out = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, timeout=120, check=True)
    locust_vars = set(out.stdout.split())
    assert "LOCUST_LOGLEVEL" in locust_vars
    loadlib_vars = {o.env_var for o in OPTIONS} | {"LLM_BASE_URL"}  # LLM_BASE_URL: the --host fallback
    for name, directory in KUSTOMIZATIONS.items():
        settings = one(render(directory), "ConfigMap", "loadlib-settings")["data"]
        for key, value in settings.items():
            assert isinstance(value, str), f"{name}: {key} must be a string"
            known = locust_vars if key.startswith("LOCUST_") else loadlib_vars
            assert key in known, f"{name}: {key} is neither a Locust nor a loadlib setting"


# --- the workers of the headless Job end with it ---------------------------------------------------------------


def test_the_headless_workers_are_a_job_that_ends_with_the_run() -> None:
    """A Deployment restarts its workers once the master quits, and they wait for a master that never comes; a Job of
    workers ends when they exit, which they do on the master's quit (exit 0, Locust's own shutdown)."""
    resources = render(KUSTOMIZATIONS["headless-job"])
    master, workers = by_component(resources, "master"), by_component(resources, "worker")
    assert workers["kind"] == "Job" and "completions" not in workers["spec"], "done once one worker succeeded"
    assert pod_spec(workers)["restartPolicy"] == "Never" and workers["spec"]["backoffLimit"] >= 1
    assert workers["spec"]["activeDeadlineSeconds"] == master["spec"]["activeDeadlineSeconds"]
    base_worker = by_component(render(KUSTOMIZATIONS["base"]), "worker")
    assert main_container(workers) == main_container(base_worker), "the workers Job runs the base's worker"
    assert pod_spec(workers)["volumes"] == pod_spec(base_worker)["volumes"]
    (wait,) = pod_spec(workers)["initContainers"]
    (target_wait,) = pod_spec(master)["initContainers"]
    assert wait["command"] == target_wait["command"], "one wait script for both Jobs"
    env = {e["name"]: e["value"] for e in wait["env"]}
    url = env["WAIT_FOR_URL"]
    assert url == f"tcp://{option(main_container(workers)['args'], '--master-host')}:{LOCUST_MASTER_PORT}"
    target_env = {e["name"]: e["value"] for e in target_wait["env"]}
    assert float(env["WAIT_FOR_TARGET_S"]) > float(target_env["WAIT_FOR_TARGET_S"]), "outwait the master's wait"


def test_the_wait_script_waits_for_wait_for_url_first() -> None:
    """The workers' init container: WAIT_FOR_URL (the master's port) wins over LLM_BASE_URL (the target's)."""
    job = by_component(render(KUSTOMIZATIONS["headless-job"]), "worker")
    script = pod_spec(job)["initContainers"][0]["command"][2]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        env = {**os.environ, "WAIT_FOR_URL": f"tcp://127.0.0.1:{port}", "LLM_BASE_URL": "http://127.0.0.1:1/v1"}
        env["WAIT_FOR_TARGET_S"] = "10"
        ok = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and f"127.0.0.1:{port} accepts connections" in ok.stdout, ok.stderr


# --- Pod Security: the restricted profile, checked by checkov --------------------------------------------------


def pod_specs_of(resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod spec of a Pod, a Deployment or a Job; none for anything else."""
    if resource["kind"] == "Pod":
        return [resource["spec"]]
    return [pod_spec(resource)] if resource["kind"] in WORKLOADS else []


def pss_gaps(spec: dict[str, Any]) -> list[str]:
    """The restricted profile's rules that checkov 3.3.30 does not hold (or holds more loosely), as violations."""
    pod = spec.get("securityContext") or {}
    found = []
    for c in all_containers(spec):
        ctx = c.get("securityContext") or {}
        if ctx.get("runAsNonRoot", pod.get("runAsNonRoot")) is not True:
            found.append(f"{c['name']}: Running as Non-root: runAsNonRoot must be true")
        if ctx.get("runAsUser", pod.get("runAsUser")) == 0:
            found.append(f"{c['name']}: Running as Non-root user: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{c['name']}: Seccomp: {seccomp}")
        if set((ctx.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{c['name']}: Capabilities: adds more than NET_BIND_SERVICE")
        if ctx.get("procMount", "Default") != "Default" or (ctx.get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"{c['name']}: /proc Mount Type or HostProcess")
        if (ctx.get("appArmorProfile") or {}).get("type") == "Unconfined":
            found.append(f"{c['name']}: AppArmor: Unconfined")
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= PSS_VOLUME_TYPES:
            found.append(f"volume {volume['name']}: Volume Types: {sorted(kinds - PSS_VOLUME_TYPES)}")
    if pod.get("sysctls") or (pod.get("seLinuxOptions") or {}).get("user"):
        found.append("pod: Sysctls or SELinux options the profile forbids")
    return found


def run_checkov(directory: Path) -> dict[str, Any]:
    """checkov over every manifest in `directory` with the selected checks only: its JSON report."""
    if not CHECKOV.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no checkov at {CHECKOV}: scripts/test.sh installs it")
        pytest.skip("no checkov: scripts/test.sh installs it into tools/checkov/.venv")
    checks = ",".join([*RESTRICTED_CHECKS, *HARDENING_CHECKS])
    cmd = [str(CHECKOV), "-d", str(directory), "--framework", "kubernetes", "--check", checks, "--compact"]
    out = subprocess.run(
        [*cmd, "--skip-download", "-o", "json"], capture_output=True, text=True, timeout=300, cwd=directory
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    return report


def checkov_pin() -> str:
    """The version scripts/test.sh installs (CHECKOV_VERSION=...), the one the test expects to run."""
    (pin,) = re.findall(r"^CHECKOV_VERSION=([\w.]+)$", TEST_SH.read_text(), flags=re.M)
    return pin


def failures(report: dict[str, Any], subdir: str) -> dict[str, set[str]]:
    """The failed check ids of each manifest file under `subdir` of the report (by file name)."""
    out: dict[str, set[str]] = {}
    for check in report["results"].get("failed_checks") or []:
        path = Path(check["file_path"])
        if path.parent.name == subdir:
            out.setdefault(path.name, set()).add(check["check_id"])
    return out


def write_manifests(directory: Path, resources: dict[str, dict[str, Any]]) -> None:
    """One file per pod-owning resource, named after its label, so the report says which one failed."""
    directory.mkdir()
    for label, resource in resources.items():
        (directory / f"{label.replace('/', '--')}.yaml").write_text(yaml.safe_dump(resource, sort_keys=False))


def pod_owners() -> dict[str, dict[str, Any]]:
    return {label: r for label, r in rendered_all() if pod_specs_of(r)}


def set_path(spec: dict[str, Any], path: str, value: Any) -> None:
    """Set (or, with None, remove) spec[a][b]...; a number picks from a list (containers.0)."""
    *parents, last = path.split(".")
    node: Any = spec
    for key in parents:
        node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
    key: Any = int(last) if last.isdigit() else last
    if value is None:
        node.pop(key, None)
    else:
        node[key] = value


# (name, pod spec edits applied to the master's Job, what must catch it: a checkov id or a pss_gaps phrase)
MUTANTS = [
    ("no-run-as-non-root", {"securityContext.runAsNonRoot": None}, "Running as Non-root: runAsNonRoot"),
    ("root", {"securityContext.runAsNonRoot": None, "securityContext.runAsUser": 0}, "CKV_K8S_23"),
    ("privileged-init", {"initContainers.0.securityContext.privileged": True}, "CKV_K8S_16"),
    ("escalation", {"containers.0.securityContext.allowPrivilegeEscalation": True}, "CKV_K8S_20"),
    ("writable-root", {"containers.0.securityContext.readOnlyRootFilesystem": False}, "CKV_K8S_22"),
    ("no-seccomp", {"securityContext.seccompProfile": None}, "CKV_K8S_31"),
    ("unconfined-container", {"containers.0.securityContext.seccompProfile": {"type": "Unconfined"}}, "Seccomp"),
    ("caps-kept", {"containers.0.securityContext.capabilities": None}, "CKV_K8S_37"),
    ("sys-admin", {"containers.0.securityContext.capabilities.add": ["SYS_ADMIN"]}, "CKV_K8S_39"),
    ("token", {"automountServiceAccountToken": True}, "CKV_K8S_38"),
    ("host-network", {"hostNetwork": True}, "CKV_K8S_19"),
    ("host-path", {"volumes.0": {"name": "results", "hostPath": {"path": "/var/results"}}}, "Volume Types"),
]


def mutated_master(edits: dict[str, Any]) -> dict[str, Any]:
    """The headless master's Job with `edits` applied to its pod spec (see set_path)."""
    master = copy.deepcopy(by_component(render(KUSTOMIZATIONS["headless-job"]), "master"))
    for path, value in edits.items():
        set_path(pod_spec(master), path, value)
    return master


@pytest.fixture(scope="module")
def checkov_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """checkov's report on the real manifests (real/) and on the mutants (mutants/): one run, ~5 s."""
    base = tmp_path_factory.mktemp("pss")
    write_manifests(base / "real", pod_owners())
    write_manifests(base / "mutants", {name: mutated_master(edits) for name, edits, _ in MUTANTS})
    return run_checkov(base)


def test_checkov_is_the_pinned_version(checkov_report: dict[str, Any]) -> None:
    assert checkov_report["summary"]["checkov_version"] == checkov_pin()


def test_every_pod_meets_the_restricted_pod_security_standard(
    checkov_report: dict[str, Any],
) -> None:
    """checkov's selected checks pass on every pod (master, workers, mock, the Jobs, the reader), each check run on
    each pod; what checkov does not check, pss_gaps() finds nothing of either."""
    assert not failures(checkov_report, "real"), failures(checkov_report, "real")
    owners = pod_owners()
    assert len(owners) == 10, sorted(owners)
    passed = checkov_report["results"]["passed_checks"]
    ran = {(Path(c["file_path"]).name, c["check_id"]) for c in passed if Path(c["file_path"]).parent.name == "real"}
    for label in owners:
        name = f"{label.replace('/', '--')}.yaml"
        missing = {c for c in [*RESTRICTED_CHECKS, *HARDENING_CHECKS] if (name, c) not in ran}
        assert not missing, f"{label}: checkov did not run {sorted(missing)}"
    for label, resource in owners.items():
        for spec in pod_specs_of(resource):
            assert not pss_gaps(spec), f"{label}: {pss_gaps(spec)}"


@pytest.mark.parametrize(("name", "edits", "caught_by"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_pod_that_breaks_the_profile_fails_the_check(
    name: str, edits: dict[str, Any], caught_by: str, checkov_report: dict[str, Any]
) -> None:
    """The check can fail: the master's Job with one rule broken is caught, by checkov or by pss_gaps()."""
    if caught_by.startswith("CKV_"):
        failed = failures(checkov_report, "mutants")
        assert caught_by in failed.get(f"{name}.yaml", set()), failed
    else:
        gaps = pss_gaps(pod_spec(mutated_master(edits)))
        assert any(caught_by in gap for gap in gaps), gaps


# --- what the processes write, with a read-only root file system -----------------------------------------------


def dockerfile_user_and_env() -> tuple[str, dict[str, str]]:
    """The image's final USER and its ENV (joined continuation lines), from the Dockerfile."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    user = re.findall(r"^USER (\S+)$", text, flags=re.M)[-1]
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", text, flags=re.M):
        env.update(pair.split("=", 1) for pair in line.split())
    return user, env


def test_the_image_runs_as_the_pods_numeric_non_root_user() -> None:
    user, env = dockerfile_user_and_env()
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0, "runAsNonRoot can only be verified against a numeric USER"
    for label, resource in pod_owners().items():
        for spec in pod_specs_of(resource):
            ctx = spec["securityContext"]
            assert (str(ctx["runAsUser"]), str(ctx["runAsGroup"])) == (uid, gid), label
    for variable in ("MPLCONFIGDIR", "XDG_CACHE_HOME"):
        assert env[variable].startswith("/tmp/"), f"{variable} must be under the /tmp emptyDir"
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1"


def test_every_container_writes_only_to_its_volumes() -> None:
    """Read-only root: /tmp is an emptyDir everywhere; every Locust process also gets the working directory's
    results/ (where loadlib writes its default audit trail), which the Dockerfile creates for its user."""
    from loadlib.options import DEFAULT_AUDIT

    workdir = re.findall(r"^WORKDIR (\S+)$", DOCKERFILE.read_text(), flags=re.M)[-1]
    audit_dir = str(Path(workdir) / Path(DEFAULT_AUDIT).parent)
    assert re.search(rf"install -d -o (\d+) -g (\d+) {re.escape(audit_dir)}\b", DOCKERFILE.read_text())
    for label, resource in pod_owners().items():
        for spec in pod_specs_of(resource):
            volumes = {v["name"]: v for v in spec.get("volumes") or []}
            for c in spec["containers"]:
                assert c["securityContext"]["readOnlyRootFilesystem"] is True, f"{label}/{c['name']}"
                mounts = {m["mountPath"]: volumes[m["name"]] for m in c.get("volumeMounts") or []}
                if c.get("command", ["locust"])[0] != "sleep":
                    assert "emptyDir" in mounts.get("/tmp", {}), f"{label}/{c['name']}: /tmp is no emptyDir"
                if "command" not in c:  # the image's entrypoint: Locust
                    assert "emptyDir" in mounts.get(audit_dir, {}), f"{label}/{c['name']}: {audit_dir} not writable"
