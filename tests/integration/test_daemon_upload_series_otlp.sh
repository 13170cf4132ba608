#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# One series per service, OTLP (format = otlp): two services under one daemon (split =
# process, or $SERIES_SPLIT: test_daemon_upload_series_host.sh runs this with the default
# split = host; series_lib.sh) arrive as resources whose service.name is theirs (checkout-svc,
# cart-svc), not the one `application` of [upload], each with host.name, process.pid,
# process.executable.name, the user's tags and, for the one in a kubelet-shaped cgroup,
# container.id and k8s.pod.uid; decoded against the upstream schema. With split = host the
# samples of all requests are those of all finished files (`ctxprof report`): splitting the
# host file by process loses none.
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
. "$(dirname "$0")/otlp_lib.sh"
. "$(dirname "$0")/series_lib.sh"
trap 'stop_receiver; cleanup' EXIT
series_start otlp
# the resource attributes of every request received: "DIR key=value,..." (sorted, unique);
# each request decoded once, its resources kept beside it (every poll reads them all)
resources() {
	for d in "$RECV"/req-[0-9]*; do
		[ -f "$d/otlp" ] || continue
		[ -f "$d/otlp.txt" ] || otlp_decode "$d/otlp" "$d/otlp.txt"
		if [ ! -f "$d/resources" ]; then
			$CHECK resources "$d/otlp.txt" >"$d/resources.tmp" && mv "$d/resources.tmp" "$d/resources"
		fi
		sed "s|^|$d |" "$d/resources"
	done
}
# printed when a wait_for times out: the resources that did arrive
wait_for_context() { echo "--- received (count, resource):"; resources 2>/dev/null | sed 's/^[^ ]* //' | sort | uniq -c; }
has_service() { resources 2>/dev/null | grep "service.name=$1," >/dev/null; }
wait_for 60 "a resource named checkout-svc" has_service checkout-svc
wait_for 60 "a resource named cart-svc" has_service cart-svc
stop_daemon
resources | tee "$TMP/res"
want_o="service.name=checkout-svc,process.pid=$O,host.name=$HOST,process.executable.name=wl_otel,env=test"
want_c="service.name=cart-svc,process.pid=$C,host.name=$HOST,process.executable.name=wl_otel_ctx_a,container.id=$CONTAINER_ID,k8s.pod.uid=$POD_UID,env=test"
# split = host: samples no process was named for (a thread past the thread table's share)
want_rest="service.name=fleet-default,host.name=$HOST,env=test"
n=0
checked=
while read -r d res; do
	# the dictionary's rules, once per service (python under a loaded host is slow)
	case "$checked" in *" ${res%%,*} "*) ;; *)
		$CHECK check "$d/otlp.txt" || fail "$d breaks the dictionary's rules"
		checked="$checked ${res%%,*} " ;;
	esac
	case "$res" in
	service.name=checkout-svc,*) [ "$res" = "$want_o" ] || fail "$d: $res, expected $want_o" ;;
	service.name=cart-svc,*) [ "$res" = "$want_c" ] || fail "$d: $res, expected $want_c" ;;
	"$want_rest") [ "${SERIES_SPLIT:-process}" = host ] || fail "$d: a resource of neither service: $res" ;;
	*) fail "$d: a resource of neither service: $res" ;;
	esac
	n=$((n + 1))
done <"$TMP/res"
[ "$n" -ge 2 ] || fail "$n resources"
if [ "${SERIES_SPLIT:-process}" = host ]; then
	sent=$(otlp_sent_samples)
	wrote=$(written_samples)
	echo "split = host: $(ls "$OUT"/ctxprof-*.jfr | wc -l) files, $wrote samples; the requests carry $sent"
	[ "$sent" -gt 0 ] && [ "$sent" = "$wrote" ] || fail "the requests carry $sent samples, the files $wrote"
fi
echo "PASS: two services, two OTLP series (checkout-svc, cart-svc), with host, pid, executable, container and pod (split = ${SERIES_SPLIT:-process})"
