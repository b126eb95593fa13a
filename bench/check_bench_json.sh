#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of vsock_bench: run it with --quick --json FILE and check that
# the JSON is valid and complete (every case present, every key, each case
# ran). Throughput itself is not judged here: under load a 0.1 s window may
# even see nothing move.
# Usage: check_bench_json.sh <vsock_bench> <json file>
set -eu
bench=$1
out=$2
rm -f "$out"
"$bench" --quick --json "$out"
jq -e '
  .bench == "vsock_bench" and (.quick | type == "boolean") and
  (.duration_s | type == "number") and (.repetitions | type == "number") and
  (.results | length) == 21 and
  ([.results[] | select(.streams == 1 and .dgram == false)] | length) == 12 and
  ([.results[] | select(.dgram == true) | .dir] | sort) == ["g2hD", "g2hD", "g2hD", "h2gD", "h2gD", "h2gD"] and
  ([.results[] | select(.streams == 8) | .rx_threads] | sort) == [1, 2, 4] and
  all(.results[];
      (keys | sort) == ["cpu_ns_per_kib", "dgram", "dir", "gbps", "mrg_rxbuf", "msgs_per_s", "ok",
                        "payload", "ratio", "ratio_max", "ratio_min", "rx_threads",
                        "socketpair_cpu_ns_per_kib", "socketpair_gbps",
                        "socketpair_msgs_per_s", "streams"] and
      .ok == true and (.dir == "g2h" or .dir == "h2g" or .dir == "g2hD" or .dir == "h2gD") and
      (.ratio_min <= .ratio and .ratio <= .ratio_max) and
      ([.gbps, .msgs_per_s, .socketpair_gbps, .socketpair_msgs_per_s, .ratio, .ratio_min,
        .ratio_max, .cpu_ns_per_kib, .socketpair_cpu_ns_per_kib] |
        all(type == "number" and . >= 0)))
' "$out" >/dev/null || { echo "check_bench_json: $out is incomplete or invalid" >&2; exit 1; }
echo "check_bench_json: $out complete"
