"""A stand-in for `spark-submit --master k8s://...`, for the kubernetes target's tests.

It keeps its driver pods in a JSON file (`FAKE_K8S_STATE`), logs every argument list
(`FAKE_ARGS_FILE`) and prints what Spark 4.0's spark-submit prints: for `--status` the
`Application status (driver):` blocks of `KubernetesUtils.formatPodState` (labels as a Scala map's
tuples), "Application not found." / "No applications found.", and for failures the exception of
the main thread. `--status` and `--kill` follow `K8SSparkSubmitOperation`: `namespace:name`, a
trailing `*` lists the driver pods (label spark-role=driver) whose names start with the prefix.

It plays the driver as well: a submitted pod runs at once and marks its run active in the status
file; it ends (phase Succeeded) once its stop marker exists, unless FAKE_K8S_IGNORE_MARKER is
set. FAKE_K8S_SUBMIT_FAILS makes the API server refuse the pod; FAKE_K8S_DRIVER_FAILS makes
the driver container exit 1. FAKE_K8S_STATUS_FORMAT=unreadable answers `--status` in words the
deployer does not know (another Spark's format); `labels-as-json` prints the labels in a form it
cannot read.
"""

from __future__ import annotations

FAKE_SPARK_SUBMIT = r"""#!{python}
import fcntl, json, os, sys, time

args = sys.argv[1:]
state_file = os.environ["FAKE_K8S_STATE"]
# One call at a time, as the API server serialises writes: a deploy submits jobs in parallel.
guard = open(state_file + ".guard", "w")
fcntl.flock(guard, fcntl.LOCK_EX)
with open(os.environ["FAKE_ARGS_FILE"], "a") as log:
    log.write(json.dumps(args) + "\n")
pods = json.load(open(state_file)) if os.path.exists(state_file) else {{}}
master = args[args.index("--master") + 1]
stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def save():
    with open(state_file, "w") as handle:
        json.dump(pods, handle)


def status_file(pod, state, error=None, location=None):
    manifest = json.load(open(pod["manifest"]))
    with open(location or manifest["status-file"], "w") as handle:
        json.dump({{"run-id": manifest["run-id"], "state": state, "error": error}}, handle)


def advance(pod):
    manifest = json.load(open(pod["manifest"]))
    ignore = os.environ.get("FAKE_K8S_IGNORE_MARKER")
    prepare = manifest.get("prepare")
    if pod["phase"] == "Running" and pod.get("waiting"):  # a prepared run: its word
        word = {{}}
        if os.path.exists(prepare["go-file"]):
            word = json.load(open(prepare["go-file"]))
        mine = word.get("run-id") == manifest["run-id"]
        if mine and word.get("go") is True:
            pod["waiting"] = False
            status_file(pod, "active")
        elif mine or os.path.exists(prepare["stop-marker"]):
            pod.update(phase="Succeeded", container="terminated", exit="0", reason="Completed")
            status_file(pod, "aborted", location=prepare["status-file"])
        return
    if pod["phase"] == "Running" and os.path.exists(manifest["stop-marker"]) and not ignore:
        pod.update(phase="Succeeded", container="terminated", exit="0", reason="Completed")
        status_file(pod, "stopped")


def describe(pod):
    labels = ", ".join(f"({{k}},{{v}})" for k, v in pod["labels"].items())
    if os.environ.get("FAKE_K8S_STATUS_FORMAT") == "labels-as-json":
        labels = json.dumps(pod["labels"]).replace(",", ";")
    container = [
        ("container name", "spark-kubernetes-driver"),
        ("container image", "registry.local/spark-py:4.0.1"),
        ("container state", pod["container"]),
    ]
    if pod["container"] == "running":
        container.append(("container started at", pod["created"]))
    else:
        container += [
            ("container started at", pod["created"]),
            ("container finished at", stamp),
            ("exit code", pod["exit"]),
            ("termination reason", pod["reason"]),
        ]
    pairs = [
        ("pod name", pod["name"]),
        ("namespace", pod["namespace"]),
        ("labels", labels),
        ("pod uid", "6c1f0a6e-0000-4000-8000-" + pod["name"][-12:].rjust(12, "0")),
        ("creation time", pod["created"]),
        ("service account name", "spark"),
        ("volumes", "spark-local-dir-1, spark-conf-volume-driver, kube-api-access-x2x9d"),
        ("node name", "node-1"),
        ("start time", pod["created"]),
        ("phase", pod["phase"]),
        ("container status", "".join(f"\n\t\t {{k}}: {{v}}" for k, v in container)),
    ]
    return "".join(f"\n\t {{k}}: {{v or 'N/A'}}" for k, v in pairs)


for option in ("--status", "--kill"):
    if option in args:
        submission = args[args.index(option) + 1]
        namespace, _, name = submission.partition(":")
        verb = "for the status of" if option == "--status" else "to kill"
        print(f"Submitting a request {{verb}} submission {{submission}} in {{master}}.")
        if name.endswith("*"):
            found = [p for p in pods.values() if p["namespace"] == namespace
                     and p["name"].startswith(name[:-1])]
        else:
            found = [p for p in pods.values() if p["namespace"] == namespace and p["name"] == name]
        if not found:
            print("No applications found." if name.endswith("*") else "Application not found.")
        for pod in found:
            if option == "--status":
                advance(pod)
                if os.environ.get("FAKE_K8S_STATUS_FORMAT") == "unreadable":
                    print("Driver pod " + pod["name"] + " is " + pod["phase"].lower())
                else:
                    print("Application status (driver): " + describe(pod))
            else:
                del pods[pod["namespace"] + ":" + pod["name"]]
        save()
        sys.exit(0)

print("WARNING: Using incubator modules: jdk.incubator.vector")
conf = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")
namespace = conf.get("spark.kubernetes.namespace", "default")
if os.environ.get("FAKE_K8S_SUBMIT_FAILS"):
    print(
        'Exception in thread "main" io.fabric8.kubernetes.client.KubernetesClientException: '
        "Failure executing: POST at: https://127.0.0.1:6443/api/v1/namespaces/" + namespace
        + "/pods. Message: pods is forbidden: User \"system:serviceaccount:ci:deployer\" cannot "
        "create resource \"pods\" in API group \"\" in the namespace \"" + namespace + "\". "
        "Received status: Status(apiVersion=v1, code=403, reason=Forbidden)."
    )
    print("\tat io.fabric8.kubernetes.client.KubernetesClientException.copyAsCause(Kube...)")
    sys.exit(1)
prefix = "spark.kubernetes.driver.label."
pod = {{
    "name": conf["spark.kubernetes.driver.pod.name"],
    "namespace": namespace,
    "labels": {{"spark-app-selector": "spark-0123456789abcdef", "spark-role": "driver",
               "spark-version": "4.0.1",
               **{{k[len(prefix):]: v for k, v in conf.items() if k.startswith(prefix)}}}},
    "phase": "Running",
    "container": "running",
    "created": stamp,
    "manifest": args[args.index("--manifest") + 1],
}}
if os.environ.get("FAKE_K8S_DRIVER_FAILS"):
    pod.update(phase="Failed", container="terminated", exit="1", reason="Error")
    status_file(pod, "failed", "[TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` is missing.")
elif json.load(open(pod["manifest"])).get("prepare"):
    pod["waiting"] = True
    prepared = json.load(open(pod["manifest"]))["prepare"]["status-file"]
    status_file(pod, "ready", location=prepared)
else:
    status_file(pod, "active")
pods[namespace + ":" + pod["name"]] = pod
save()
print(f"26/11/23 04:01:50 INFO LoggingPodStatusWatcherImpl: Deployed Spark application "
      f"{{args[args.index('--name') + 1]}} into Kubernetes")
"""
