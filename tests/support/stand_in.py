"""What stand-ins for spark-submit share (small Python programs the CLI tests start in place of
Spark, behaving like the runner on the local target)."""

#: Python source that defines `await_go(doc)` for a stand-in, `doc` being its runtime manifest:
#: a prepared run (runner/prepare.py, a warm handover) says `ready` on its own status file and
#: waits for the deployer's word; `await_go` returns on its go, and the stand-in goes on as a run
#: started at once; it exits on an abort, its own stop marker, or its timeout. A run that is not
#: prepared returns at once. The stand-in imports json, os, sys and time.
AWAIT_GO = """
def await_go(doc):
    section = doc.get("prepare")
    if not section:
        return
    status_file = section["status-file"]
    with open(status_file + ".tmp", "w") as handle:
        json.dump({"run-id": doc["run-id"], "state": "ready"}, handle)
    os.replace(status_file + ".tmp", status_file)
    deadline = time.monotonic() + float(section.get("timeout-seconds", 300))
    while time.monotonic() < deadline:
        try:
            with open(section["go-file"]) as handle:
                word = json.load(handle)
        except (OSError, ValueError):
            word = {}
        if word.get("run-id") == doc["run-id"]:
            if word.get("go") is True:
                return
            if "abort" in word:
                sys.exit(0)
        if section.get("stop-marker") and os.path.exists(section["stop-marker"]):
            sys.exit(0)
        time.sleep(0.05)
    sys.exit(1)
"""
