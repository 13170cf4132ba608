#!/bin/bash
# SPDX-License-Identifier: MIT
# The Kubernetes sidecar example parsed with a real YAML parser (python3-yaml): one Pod with
# shareProcessNamespace true, an application container and the ctxprof sidecar whose command
# is the daemon with the packaged config, the capabilities the profiler needs (and no
# privileged mode), /sys/kernel/btf and /sys/fs/cgroup read-only from the host, a writable
# volume at the output directory of packaging/ctxprof.conf. Plus the Containerfile: the same
# entrypoint and capability list.
. "$(dirname "$0")/lib.sh"
$PY -c 'import yaml' 2>/dev/null || fail "/usr/bin/python3 cannot import yaml (Debian package python3-yaml)"
$PY - packaging/kubernetes/ctxprof-sidecar.yaml packaging/ctxprof.conf packaging/container/Containerfile <<'PYEOF' || fail "Kubernetes example check failed"
import configparser, json, sys, yaml

def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
    print("ok:", what)

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
check(len(docs) == 1 and docs[0]["kind"] == "Pod" and docs[0]["apiVersion"] == "v1", "one v1 Pod")
spec = docs[0]["spec"]
check(spec.get("shareProcessNamespace") is True, "shareProcessNamespace is the boolean true")
cs = {c["name"]: c for c in spec["containers"]}
check(len(cs) == 2 and "ctxprof" in cs, "an application container and the ctxprof sidecar")
side = cs["ctxprof"]
cmd = side.get("command", []) + side.get("args", [])
check(cmd == ["/usr/bin/ctxprof", "daemon", "--config", "/etc/ctxprof/ctxprof.conf"], "sidecar command " + json.dumps(cmd))
sc = side["securityContext"]
caps = sc["capabilities"]
need = {"BPF", "PERFMON", "SYS_PTRACE", "SYS_RESOURCE", "CHECKPOINT_RESTORE", "DAC_READ_SEARCH",
        "SETUID", "SETGID", "SETPCAP"}  # the last three: the parser helper gives up root
check(need <= set(caps["add"]), "capabilities add %s" % sorted(caps["add"]))
check(not {"SYS_ADMIN", "ALL", "NET_ADMIN", "DAC_OVERRIDE"} & set(caps["add"]), "no broad capability added")
check(caps.get("drop") == ["ALL"], "every other capability dropped")
check(sc.get("privileged") is not True and sc.get("allowPrivilegeEscalation") is False, "not privileged, no escalation")

vols = {v["name"]: v for v in spec["volumes"]}
mounts = {m["mountPath"]: m for m in side["volumeMounts"]}
def host_ro(path):
    m = mounts.get(path)
    check(m is not None and m.get("readOnly") is True, path + " mounted read-only")
    check(vols[m["name"]].get("hostPath", {}).get("path") == path, path + " comes from the host")
host_ro("/sys/kernel/btf")
host_ro("/sys/fs/cgroup")

conf = configparser.ConfigParser(inline_comment_prefixes=(";",))
conf.read(sys.argv[2])
outdir = conf["output"]["directory"]
m = mounts.get(outdir)
check(m is not None and not m.get("readOnly", False), "output directory %s is a writable mount" % outdir)
v = vols[m["name"]]
check("emptyDir" in v or "persistentVolumeClaim" in v, "output volume is an emptyDir or a PVC")
if sc.get("readOnlyRootFilesystem"):
    run = conf["daemon"]["status-file"].rsplit("/", 1)[0]
    check(run in mounts, "status file directory %s writable with a read-only root" % run)

# The Containerfile: Debian 12, same entrypoint, the same capabilities documented.
cf = open(sys.argv[3]).read()
check("FROM debian:12" in cf, "Containerfile builds on Debian 12")
check('ENTRYPOINT ["/usr/bin/ctxprof", "daemon", "--config", "/etc/ctxprof/ctxprof.conf"]' in cf, "Containerfile entrypoint")
for c in caps["add"]:
    check("--cap-add=" + c in cf, "Containerfile documents --cap-add=" + c)
for p in ("/sys/kernel/btf:/sys/kernel/btf:ro", "/sys/fs/cgroup:/sys/fs/cgroup:ro"):
    check(p in cf, "Containerfile documents the mount " + p)
PYEOF
echo PASS
