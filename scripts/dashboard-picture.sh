#!/usr/bin/env bash
# A picture of the Grafana dashboard etc/grafana/gpupool.json from a live
# run, without Grafana (Debian has none): the README's demo runs on the
# local cluster while Debian's Prometheus scrapes `gpupool exporter` every
# 2 s; then every panel's own queries (the dashboard's $pool = all pools,
# $resource = gpu, $__rate_interval = 1m) are run against Prometheus over
# the whole run (query_range) and plotted with gnuplot, one plot a panel,
# laid out as the dashboard lays them out.
#   flock /tmp/gpupool-live.lock scripts/dashboard-picture.sh [OUT.png]
# (root; starts and stops the local cluster: hold the live lock).
# Default OUT: doc/dashboard.png.  Prints the number of series plotted per
# panel, and "dashboard-picture: PASS" when every query returned data
# and the picture was written; FAIL (why) else.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$REPO/doc/dashboard.png}
[[ $(id -u) -eq 0 ]] || { echo "dashboard-picture: run as root" >&2; exit 2; }
command -v prometheus >/dev/null && command -v gnuplot >/dev/null ||
  { echo "dashboard-picture: FAIL (needs prometheus and gnuplot: apt-get install prometheus gnuplot-nox)"; exit 1; }
W=$(mktemp -d /var/tmp/gpupool-dashboard.XXXXXX)
log() { printf '[dashboard-picture %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
pids=()
cleanup() {
  local rc=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bash "$REPO/scripts/cluster.sh" down >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start=$(date +%s)
log "scripts/demo.sh (log: $W/demo.log)"
bash "$REPO/scripts/demo.sh" >"$W/demo.log" 2>&1 &
demo=$!
pids+=("$demo")
eval "$(bash "$REPO/scripts/cluster.sh" env)"
until scontrol ping 2>/dev/null | grep -q UP; do
  kill -0 "$demo" 2>/dev/null || { tail -20 "$W/demo.log" >&2; echo "dashboard-picture: FAIL (the demo stopped before its cluster was up)"; exit 1; }
  sleep 1
done
exp_port=$(port) prom_port=$(port)
"$REPO/src/cli/gpupool" exporter --listen "127.0.0.1:$exp_port" --min-interval 1 >"$W/exporter.log" 2>&1 &
pids+=($!)
cat >"$W/prometheus.yml" <<YML
global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: gpupool
    static_configs:
      - targets: ['127.0.0.1:$exp_port']
YML
prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$W/prometheus.log" 2>&1 &
pids+=($!)
log "exporter on :$exp_port, Prometheus on :$prom_port"
wait "$demo" || { tail -20 "$W/demo.log" >&2; echo "dashboard-picture: FAIL (the demo failed, log $W/demo.log)"; exit 1; }
pids=("${pids[@]:1}")
# The last figures scraped; slurmctld's pass statistics (every 10 s) and
# the usage history (StateSaveInterval, 60 s) written at least once.
sleep 75
end=$(date +%s)
log "demo ran $(( end - start )) s; querying"

python3 - "$REPO/etc/grafana/gpupool.json" "http://127.0.0.1:$prom_port" "$start" "$end" "$W" "$OUT" <<'PY'
import json, sys, urllib.parse, urllib.request, os
dash_path, prom, start, end, work, out = sys.argv[1:]
dash = json.load(open(dash_path))
subst = {'$pool': '.*', '$resource': 'gpu', '$__rate_interval': '1m'}
def query(expr):
    for k, v in subst.items():
        expr = expr.replace(k, v)
    url = prom + '/api/v1/query_range?' + urllib.parse.urlencode(
        {'query': expr, 'start': start, 'end': end, 'step': '2'})
    d = json.load(urllib.request.urlopen(url))
    if d['status'] != 'success':
        raise SystemExit('query failed: %s: %s' % (expr, d))
    return d['data']['result']
def legend(fmt, metric):
    s = fmt
    for k, v in metric.items():
        s = s.replace('{{%s}}' % k, v)
    return s.replace('_', '\\_')
panels = [p for p in dash['panels'] if p['type'] != 'row']
rows = max(p['gridPos']['y'] + p['gridPos']['h'] for p in dash['panels'])
W, H = 1600, 44 * rows
g = ['set terminal pngcairo size %d,%d font "DejaVu Sans,9" background rgb "#111217"' % (W, H),
     'set output "%s"' % out,
     'set multiplot',
     'set border lc rgb "#cccccc"', 'set tics textcolor rgb "#cccccc"',
     'set key textcolor rgb "#cccccc" outside bottom left horizontal maxrows 3 samplen 1.5 font ",8"',
     'set title textcolor rgb "#eeeeee" font ",10"',
     'set grid lc rgb "#333333"', 'set xdata time', 'set timefmt "%s"', 'set format x "%H:%M"',
     'set xrange ["%s":"%s"]' % (start, end), 'set xtics %d' % max(10, (int(end) - int(start)) // 6 // 10 * 10),
     'set format x "%H:%M:%S"', 'set offsets 0, 0, graph 0.08, 0', 'set style fill transparent solid 0.25 noborder']
empty = []
for p in panels:
    gp = p['gridPos']
    files = []
    for t in p['targets']:
        for i, r in enumerate(query(t['expr'])):
            f = os.path.join(work, 'p%d_%s_%d.dat' % (p['id'], t['refId'], i))
            with open(f, 'w') as fh:
                for ts, v in r['values']:
                    fh.write('%s %s\n' % (ts, v))
            files.append((f, legend(t['legendFormat'], r['metric'])))
    print('panel %-40s %d series' % ("'" + p['title'] + "'", len(files)))
    if not files:
        empty.append(p['title'])
    x, y, w, h = gp['x'] / 24, 1 - (gp['y'] + gp['h']) / rows, gp['w'] / 24, gp['h'] / rows
    g.append('set origin %.4f,%.4f' % (x, y))
    g.append('set size %.4f,%.4f' % (w, h))
    g.append('set title "%s"' % p['title'].replace('"', "'"))
    unit = p['fieldConfig']['defaults'].get('unit', 'none')
    g.append('set ylabel "%s" textcolor rgb "#cccccc"' % ({'s': 'seconds', 'percentunit': 'ratio'}.get(unit, 'GPUs' if 'GPU' in p['title'] or 'Queue' in p['title'] else '')))
    g.append('set yrange [0:*]')
    if files:
        g.append('plot ' + ', '.join('"%s" using 1:2 with steps lw 1.5 title "%s"' % (f, l) for f, l in files))
    else:
        g.append('set label 1 "no data" at graph 0.45,0.5 textcolor rgb "#cccccc"')
        g.append('set yrange [0:1]')
        g.append('plot -1 notitle')
        g.append('unset label 1')
g.append('unset multiplot')
open(os.path.join(work, 'dashboard.gp'), 'w').write('\n'.join(g) + '\n')
open(os.path.join(work, 'empty'), 'w').write('\n'.join(empty))
PY
gnuplot "$W/dashboard.gp" 2>"$W/gnuplot.log" || { cat "$W/gnuplot.log" >&2; echo "dashboard-picture: FAIL (gnuplot)"; exit 1; }
log "wrote $OUT ($(stat -c %s "$OUT") bytes); work files in $W"
if [[ -s $W/empty ]]; then
  echo "dashboard-picture: FAIL (panels with no data: $(paste -sd, "$W/empty"))"
  exit 1
fi
echo "dashboard-picture: PASS"
