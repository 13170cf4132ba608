#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# One series per service, Pyroscope (/ingest, format = jfr): two services under one daemon
# (split = process; series_lib.sh) arrive as two applications named by their service.name
# (checkout-svc, cart-svc), not as the one `application` of [upload], each tagged with
# host_name, process_pid, process_executable_name, the user's tags and, for the one in a
# kubelet-shaped cgroup, container_id and k8s_pod_uid; the JFR under each name is a finished
# file of that process (byte for byte). A third, hostile service names itself
# "evil},k=v{x<newline>y" from a cgroup that only looks like a pod's and a container's (a uid
# out of shape, 63 hex digits): its series is the name cleaned (evil__k_v_x_y), no tag
# added, no tag set ended, no container or pod. A second checkout-svc process, started
# after the daemon, publishes its process context a second after its first samples
# (WL_OTEL_PCTX=late, a thread spinning meanwhile): those samples are in its checkout-svc
# series too, not in one named by its executable.
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
. "$(dirname "$0")/series_lib.sh"
trap 'stop_receiver; cleanup' EXIT
series_start jfr
OTEL_SERVICE_NAME=$'evil},k=v{x\ny' spawn -g "kubepods-burstable-pod${POD_UID//-/_}x.slice/docker-${CONTAINER_ID:1}.scope" \
	"$WL/wl_otel_ctx_a" 0 1 >"$TMP/e.out"
E=$SPAWNED
WL_OTEL_PCTX=late spawn "$WL/wl_otel" 0 2 >"$TMP/l.out"
L=$SPAWNED
wait_for 60 "a profile named checkout-svc" has_name checkout-svc
wait_for 60 "a profile named cart-svc" has_name cart-svc
wait_for 60 "a profile named evil__k_v_x_y" has_name evil__k_v_x_y
wait_for 60 "a profile of checkout-svc process $L" eval 'names 2>/dev/null | grep -q "process_pid=$L,"'
stop_daemon
names | tee "$TMP/names"
awk '{ sub(/\{.*/, "", $2); print $2 }' "$TMP/names" | sort -u >"$TMP/apps"
[ "$(cat "$TMP/apps" | tr '\n' ' ')" = "cart-svc checkout-svc evil__k_v_x_y " ] ||
	fail "applications received: $(cat "$TMP/apps" | tr '\n' ' ') (cart-svc, checkout-svc, evil__k_v_x_y only expected)"
want_o="checkout-svc{env=test,host_name=$HOST,process_pid=$O,process_executable_name=wl_otel}"
want_c="cart-svc{env=test,host_name=$HOST,process_pid=$C,process_executable_name=wl_otel_ctx_a,container_id=$CONTAINER_ID,k8s_pod_uid=$POD_UID}"
want_l="checkout-svc{env=test,host_name=$HOST,process_pid=$L,process_executable_name=wl_otel}"
want_e="evil__k_v_x_y{env=test,host_name=$HOST,process_pid=$E,process_executable_name=wl_otel_ctx_a}"
# each finished file hashed once ("HASH  PATH" lines), not once per request received
sha256sum "$OUT"/ctxprof-*.jfr >"$TMP/finished.sha256"
while read -r d name; do
	case "$name" in
	"$want_o") p=$O ;;
	"$want_l") p=$L ;;
	checkout-svc*) fail "$d: $name, expected $want_o or $want_l" ;;
	cart-svc*) [ "$name" = "$want_c" ] || fail "$d: $name, expected $want_c"; p=$C ;;
	evil*) [ "$name" = "$want_e" ] || fail "$d: $name, expected $want_e"; p=$E ;;
	esac
	h=$(sha256sum <"$d/jfr" | cut -d' ' -f1)
	found=$(awk -v h="$h" -v p="-$p-" '$1 == h && index($2, p) { print $2 }' "$TMP/finished.sha256")
	[ -n "$found" ] || fail "$d ($name): its JFR is no finished file of process $p"
done <"$TMP/names"
echo "PASS: two services, two series (checkout-svc, cart-svc), with host, pid, executable, container and pod; a hostile name cleaned"
