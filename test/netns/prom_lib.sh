# shellcheck shell=bash
# A real node-exporter (textfile collector) and a real Prometheus for the doctor's metrics
# tests (test/netns/doctor_prom_*real.t), on top of doctor_lib.sh:
#   prom_require                 skip unless Debian's prometheus, node-exporter, promtool, curl
#   prom_check_file FILE WHAT    `promtool check metrics` finds nothing in FILE
#   prom_start NODE=DIR...       a namespace of its own (MON: its loopback, every port free,
#                                nothing listens on the host), one node-exporter per textfile
#                                DIR (ports 9101, 9102, ...; the scrape labelled node=NODE)
#                                and Prometheus on 127.0.0.1:9090 scraping them every second
#   q PROMQL                     the instant query's result as sorted "metric{labels} value"
#                                lines (without instance and job; Prometheus drops empty labels)
#   until_q PROMQL WANT WHAT     wait (up to 60 s) for the query to give exactly WANT
# Private data directories; the EXIT trap stops exactly the processes prom_start started.
# A Prometheus or node-exporter service the packages started on this machine is neither
# used nor touched.
_prom_pids=()
_prom_dir=

prom_require() {
	local t
	for t in prometheus prometheus-node-exporter promtool curl; do
		command -v $t >/dev/null || rn_skip "skip: $t not installed (scripts/install-deps --test)"
	done
}

# shellcheck disable=SC2317 # called by the trap
_prom_stop() {
	local p
	for p in "${_prom_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${_prom_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
}
_rn_atexit+=(_prom_stop)

prom_check_file() {
	local out
	out=$(promtool check metrics <"$1" 2>&1) || { echo "$out"; rn_fail "$2: promtool check metrics failed"; }
	[ -z "$out" ] || { echo "$out"; rn_fail "$2: promtool check metrics has lint problems"; }
}

# _prom_bg CMD...: start CMD in the monitoring namespace, its pid kept for the trap
_prom_bg() {
	ip netns exec "$MON" "$@" &
	_prom_pids+=($!)
}

prom_start() {
	local port=9101 a node dir
	rn_ns MON mon
	rn_tmpdir _prom_dir
	mkdir -p "$_prom_dir/data"
	cat >"$_prom_dir/prometheus.yml" <<'YML'
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: roce
    static_configs:
YML
	for a in "$@"; do
		node=${a%%=*} dir=${a#*=}
		_prom_bg prometheus-node-exporter --web.listen-address=127.0.0.1:$port \
			--collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$dir" >"$_prom_dir/ne-$node.log" 2>&1
		printf "      - targets: ['127.0.0.1:%d']\n        labels: {node: %s}\n" $port "$node" \
			>>"$_prom_dir/prometheus.yml"
		port=$((port + 1))
	done
	promtool check config "$_prom_dir/prometheus.yml" >/dev/null || rn_fail "promtool check config"
	_prom_bg prometheus --config.file="$_prom_dir/prometheus.yml" \
		--storage.tsdb.path="$_prom_dir/data" --web.listen-address=127.0.0.1:9090 \
		--log.level=warn >"$_prom_dir/prometheus.log" 2>&1
}

q() {
	ip netns exec "$MON" curl -sf --max-time 5 http://127.0.0.1:9090/api/v1/query \
		--data-urlencode "query=$1" >"$_prom_dir/q.json" || return 1
	python3 - "$_prom_dir/q.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "success", d
lines = []
for r in d["data"]["result"]:
    m = r["metric"]
    name = m.pop("__name__", "")
    m.pop("instance", None), m.pop("job", None)
    lines.append("%s{%s} %s" % (name, ",".join("%s=%s" % kv for kv in sorted(m.items())),
                                r["value"][1]))
print("\n".join(sorted(lines)))
PY
}

until_q() {
	local got
	for _ in $(seq 120); do
		got=$(q "$1" 2>/dev/null) && [ "$got" = "$2" ] && return 0
		sleep 0.5
	done
	echo "--- query: $1"; echo "--- got:"; echo "$got"; echo "--- want:"; echo "$2"
	tail -n 5 "$_prom_dir"/*.log
	rn_fail "$3"
}
