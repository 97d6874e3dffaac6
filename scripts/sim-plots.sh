#!/usr/bin/env bash
# Pictures of a `gpupool sim` run, drawn by gnuplot (Debian's gnuplot-nox):
#
#   scripts/sim-plots.sh --pools-csv=POOLS.csv [--gpus=N]
#                        [--jobs-csv=JOBS.csv [--start-log=STARTS.csv]]
#                        --out=DIR [--title=TEXT] [--format=svg|png]
#                        [--gantt-max-jobs=N]
#
# Writes into DIR:
#   utilisation.FMT      GPUs in use over time, one line per policy (in % of
#                        --gpus=N when given)                  [--pools-csv]
#   pools-POLICY.FMT     per pool: non-preemptible and preemptible GPUs in
#                        use, stacked, against the pool's quota [--pools-csv]
#   gantt-POLICY.FMT     per job (rows in submit order, labelled "LABEL
#                        (POOL, N GPUs)"): waiting (grey
#                        line), each run (a bar in its tier's colour), runs
#                        ended by preemption marked x         [--jobs-csv]
#                        Only for scenarios of at most --gantt-max-jobs
#                        jobs (default 60).  Without --start-log a job that
#                        was preempted shows one bar from its first start
#                        to its end, hatched.
#
# Columns are found by their header names (gpupool(1), SIM OUTPUT):
#   pools CSV:  policy,time,pool,quota,used,np_used,p_used,...
#   jobs CSV:   policy,job_id,label,pool,tier,gpus,submit,first_start,
#               last_start,end,wait,preemptions,lost_gpu_seconds,state
#   start log:  policy,order,time,job_id,label,partition,victims
#               (victims: job ids separated by spaces)
# Times on the x axis count from the earliest time in the file, in seconds,
# hours or days depending on the span.
set -euo pipefail

POOLS_CSV= JOBS_CSV= START_LOG= OUT= TITLE= GPUS= FORMAT=svg GANTT_MAX=60
for arg in "$@"; do
  case $arg in
    --pools-csv=*) POOLS_CSV=${arg#*=} ;;
    --jobs-csv=*) JOBS_CSV=${arg#*=} ;;
    --start-log=*) START_LOG=${arg#*=} ;;
    --out=*) OUT=${arg#*=} ;;
    --title=*) TITLE=${arg#*=} ;;
    --gpus=*) GPUS=${arg#*=} ;;
    --format=*) FORMAT=${arg#*=} ;;
    --gantt-max-jobs=*) GANTT_MAX=${arg#*=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sim-plots.sh: unknown argument '$arg' (--help)" >&2; exit 2 ;;
  esac
done
die() { echo "sim-plots.sh: $*" >&2; exit 1; }
[[ -n $OUT ]] || die "--out=DIR is required"
[[ -n $POOLS_CSV || -n $JOBS_CSV ]] || die "nothing to draw: give --pools-csv and/or --jobs-csv"
[[ -z $GPUS || $GPUS =~ ^[1-9][0-9]*$ ]] || die "--gpus: expected a number of GPUs, not '$GPUS'"
[[ $GANTT_MAX =~ ^[0-9]+$ ]] || die "--gantt-max-jobs: expected a number, not '$GANTT_MAX'"
for f in "$POOLS_CSV" "$JOBS_CSV" "$START_LOG"; do
  [[ -z $f || -r $f ]] || die "cannot read '$f'"
done
command -v gnuplot >/dev/null || die "gnuplot not found: apt-get install gnuplot-nox (scripts/install-deps.sh)"
case $FORMAT in
  svg) TERM_LINE="set terminal svg size 960,540 dynamic font 'sans,12' background rgb 'white'" ;;
  # libgd's png, not pngcairo: a palette without antialiased edges keeps a
  # week of samples near 30 KiB instead of 250 KiB (doc/evaluation/).
  png) TERM_LINE="set terminal png size 1280,720 font 'sans,11'" ;;
  *) die "--format: svg or png, not '$FORMAT'" ;;
esac
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# A CSV reader for awk (mawk): fields by header name, "quoted, fields" too.
AWK_CSV='
function csv_split(line, f,    n, i, c, q, cur) {
  if (index(line, "\"") == 0) return split(line, f, ",")
  n = 0; cur = ""; q = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (q) {
      if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0 }
      else cur = cur c
    } else if (c == "\"") q = 1
    else if (c == ",") { f[++n] = cur; cur = "" }
    else cur = cur c
  }
  f[++n] = cur
  return n
}
function header(line, col,    f, n, i) {
  n = csv_split(line, f)
  for (i = 1; i <= n; i++) col[f[i]] = i
}
function need(col, name, file) {
  if (!(name in col)) { print "sim-plots.sh: " file ": no column " name > "/dev/stderr"; exit 3 }
  return col[name]
}
'

# Seconds, hours or days for a span of seconds: "divisor label".
time_unit() {
  local span=$1
  if (( span <= 7200 )); then echo "1 seconds"
  elif (( span <= 4 * 86400 )); then echo "3600 hours"
  else echo "86400 days"; fi
}

# gnuplot reads strings in double quotes: keep titles printable and safe.
gp_text() { printf '%s' "$1" | tr -d '"\\`' ; }
PREFIX=$(gp_text "${TITLE:+$TITLE: }")

policies_of() {  # FILE: the policies in order of appearance
  awk "$AWK_CSV"'NR == 1 { header($0, col); p = need(col, "policy", FILENAME); next }
    { csv_split($0, f); if (!(f[p] in seen)) { seen[f[p]] = 1; print f[p] } }' "$1"
}

# --- utilisation over time and per-pool use --------------------------------
if [[ -n $POOLS_CSV ]]; then
  # One file per policy: time, GPUs in use (summed over pools); and per pool
  # and policy: time, np_used, np_used + p_used, quota.
  awk "$AWK_CSV"'NR == 1 {
      header($0, col)
      cp = need(col, "policy", FILENAME); ct = need(col, "time", FILENAME); cpool = need(col, "pool", FILENAME)
      cq = need(col, "quota", FILENAME); cu = need(col, "used", FILENAME)
      cnp = need(col, "np_used", FILENAME); cpp = need(col, "p_used", FILENAME)
      next
    }
    {
      csv_split($0, f)
      key = f[cp] SUBSEP f[ct]
      if (!(key in used)) { order[++n] = key }
      used[key] += f[cu]
      if (!(f[cp] in pools)) { porder[++npol] = f[cp]; pools[f[cp]] = "" }
      if (!((f[cp], f[cpool]) in pool_seen)) { pool_seen[f[cp], f[cpool]] = 1; pools[f[cp]] = pools[f[cp]] " " f[cpool] }
      print f[ct], f[cnp], f[cnp] + f[cpp], f[cq] > (work "/pool." f[cp] "." f[cpool] ".dat")
      if (t0 == "" || f[ct] + 0 < t0) t0 = f[ct] + 0
      if (t1 == "" || f[ct] + 0 > t1) t1 = f[ct] + 0
    }
    END {
      # Time-weighted mean use per policy (each sample holds until the next).
      for (i = 1; i <= n; i++) {
        split(order[i], k, SUBSEP); print k[2], used[order[i]] > (work "/util." k[1] ".dat")
        if (k[1] == lastp) { area[k[1]] += lastu * (k[2] - lastt); span[k[1]] += k[2] - lastt }
        lastp = k[1]; lastt = k[2]; lastu = used[order[i]]
      }
      for (i = 1; i <= npol; i++) {
        p = porder[i]
        print p ":" pools[p] > (work "/pools.list")
        print p, (span[p] > 0 ? area[p] / span[p] : 0) > (work "/mean.list")
      }
      print t0, t1 > (work "/span")
    }' work="$WORK" "$POOLS_CSV"
  read -r T0 T1 <"$WORK/span"
  [[ -n $T0 ]] || die "$POOLS_CSV: no samples"
  read -r DIV UNIT < <(time_unit $(( ${T1%.*} - ${T0%.*} )))
  mapfile -t POLICIES < <(policies_of "$POOLS_CSV")

  if [[ -n $GPUS ]]; then YEXPR="(100.0*\$2/$GPUS)"; YLABEL="GPUs in use (% of $GPUS)"; YRANGE="set yrange [0:105]"
  else YEXPR="(\$2)"; YLABEL="GPUs in use"; YRANGE="set yrange [0:*]"; fi
  # One panel per policy, same axes: overlaid step lines of a busy
  # cluster hide each other.
  rows=${#POLICIES[@]}
  XRANGE="set xrange [0:$(awk -v a="$T0" -v b="$T1" -v d="$DIV" 'BEGIN { print (b - a) / d }')]"
  {
    if [[ $FORMAT == svg ]]; then echo "set terminal svg size 960,$(( 100 + 150 * rows )) dynamic font 'sans,11' background rgb 'white'"
    else echo "set terminal png size 1280,$(( 130 + 200 * rows )) font 'sans,11'"; fi
    echo "set output '$OUT/utilisation.$FORMAT'"
    echo "set multiplot layout $rows,1 title \"${PREFIX}GPU utilisation per policy\""
    echo "set ylabel \"$YLABEL\"; $YRANGE; $XRANGE; set grid; unset key"
    for i in "${!POLICIES[@]}"; do
      p=${POLICIES[$i]}
      mean=$(awk -v p="$p" '$1 == p { print $2 }' "$WORK/mean.list")
      if [[ -n $GPUS ]]; then shown=$(awk -v m="$mean" -v g="$GPUS" 'BEGIN { printf "%.1f%%", 100 * m / g }')
      else shown=$(awk -v m="$mean" 'BEGIN { printf "%.1f GPUs", m }'); fi
      [[ $i -eq $(( rows - 1 )) ]] && echo "set xlabel 'time ($UNIT)'" || echo "unset xlabel"
      echo "set title \"$(gp_text "$p"): mean $shown\""
      echo "plot '$WORK/util.$p.dat' using ((\$1-$T0)/$DIV):$YEXPR with fillsteps fc rgb '#4477aa' fs solid 0.5 notitle, \\"
      echo "     '$WORK/util.$p.dat' using ((\$1-$T0)/$DIV):$YEXPR with steps lc rgb '#224466' notitle"
    done
    echo "unset multiplot"
  } >"$WORK/util.gp"
  gnuplot "$WORK/util.gp"
  echo "$OUT/utilisation.$FORMAT"

  while IFS=: read -r policy pools; do
    read -ra P <<<"$pools"
    rows=${#P[@]}
    {
      echo "$TERM_LINE"
      if [[ $FORMAT == svg ]]; then echo "set terminal svg size 960,$(( 120 + 170 * rows )) dynamic font 'sans,11' background rgb 'white'"
      else echo "set terminal png size 1280,$(( 150 + 220 * rows )) font 'sans,11'"; fi
      echo "set output '$OUT/pools-$policy.$FORMAT'"
      echo "set multiplot layout $rows,1 title \"${PREFIX}GPUs in use per pool: $(gp_text "$policy")\""
      # Fixed margins: the key beside the first panel must not narrow it.
      echo "set grid; set yrange [0:*]; $XRANGE; set ylabel 'GPUs'; set lmargin 10; set rmargin at screen 0.80"
      for i in "${!P[@]}"; do
        pool=${P[$i]}
        f="$WORK/pool.$policy.$pool.dat"
        [[ $i -eq $(( rows - 1 )) ]] && echo "set xlabel 'time ($UNIT)'" || echo "unset xlabel"
        echo "set title \"$(gp_text "$pool")\""
        [[ $i -eq 0 ]] && echo "set key outside right top" || echo "unset key"
        echo "plot '$f' using ((\$1-$T0)/$DIV):(0):2 with filledcurves fc rgb '#4477aa' fs solid 0.7 title 'non-preemptible', \\"
        echo "     '$f' using ((\$1-$T0)/$DIV):2:3 with filledcurves fc rgb '#ccbb44' fs solid 0.7 title 'preemptible', \\"
        echo "     '$f' using ((\$1-$T0)/$DIV):4 with steps lw 2 dt 2 lc rgb '#aa3377' title 'quota'"
      done
      echo "unset multiplot"
    } >"$WORK/pools.gp"
    gnuplot "$WORK/pools.gp"
    echo "$OUT/pools-$policy.$FORMAT"
  done <"$WORK/pools.list"
fi

# --- Gantt charts -------------------------------------------------------------
if [[ -n $JOBS_CSV ]]; then
  mapfile -t POLICIES < <(policies_of "$JOBS_CSV")
  for policy in "${POLICIES[@]}"; do
    # Runs: from the start log when there is one (each start begins a run;
    # the start that names the job as a victim ends it), else one run from
    # first_start to end.  Output: row, label, tier, submit, first_start,
    # and one line per run: "R row start end tier preempted".
    awk "$AWK_CSV"'
      FNR == 1 { file++; header($0, col); hdr[file] = 1
        if (file == 1 && !jobs_done) {
          cp = need(col, "policy", FILENAME); cid = need(col, "job_id", FILENAME); cl = need(col, "label", FILENAME)
          ctier = need(col, "tier", FILENAME); csub = need(col, "submit", FILENAME)
          cfs = need(col, "first_start", FILENAME); cend = need(col, "end", FILENAME)
          cpre = need(col, "preemptions", FILENAME); cpool = need(col, "pool", FILENAME); cg = need(col, "gpus", FILENAME)
        } else {
          sp = need(col, "policy", FILENAME); st = need(col, "time", FILENAME)
          sid = need(col, "job_id", FILENAME); sv = need(col, "victims", FILENAME)
        }
        next
      }
      file == 1 {
        csv_split($0, f)
        if (f[cp] != policy) next
        n++; id[n] = f[cid]; row[f[cid]] = n; tier[n] = f[ctier]
        label[n] = f[cl] " (" f[cpool] ", " f[cg] " GPU" (f[cg] == 1 ? "" : "s") ")"
        sub_t[n] = f[csub]; fs[n] = f[cfs]; en[n] = f[cend]; pre[n] = f[cpre]
        next
      }
      {
        csv_split($0, f)
        if (f[sp] != policy) next
        j = row[f[sid]]
        if (j == "") next
        starts[j] = starts[j] " " f[st]
        m = split(f[sv], v, " ")
        for (k = 1; k <= m; k++) if (v[k] in row) stops[row[v[k]]] = stops[row[v[k]]] " " f[st]
      }
      END {
        if (n > max) { print "too many" > (work "/gantt.skip"); exit }
        for (j = 1; j <= n; j++) {
          print "J", j, sub_t[j], (fs[j] == "" ? "-" : fs[j]), tier[j], label[j]
          if (fs[j] == "") continue
          if (starts[j] == "") {  # no start log: one bar
            print "R", j, fs[j], (en[j] == "" ? "-" : en[j]), tier[j], (pre[j] > 0 ? 2 : 0)
            continue
          }
          a = split(starts[j], s, " "); b = split(stops[j], e, " ")
          for (k = 1; k <= a; k++) {
            if (k <= b) print "R", j, s[k], e[k], tier[j], 1
            else print "R", j, s[k], (en[j] == "" ? "-" : en[j]), tier[j], 0
          }
        }
      }' policy="$policy" max="$GANTT_MAX" work="$WORK" "$JOBS_CSV" ${START_LOG:+"$START_LOG"} >"$WORK/gantt.txt"
    if [[ -f $WORK/gantt.skip ]]; then
      rm -f "$WORK/gantt.skip"
      echo "sim-plots.sh: $policy: more than $GANTT_MAX jobs: no Gantt chart (--gantt-max-jobs)" >&2
      continue
    fi
    njobs=$(grep -c '^J' "$WORK/gantt.txt" || true)
    (( njobs > 0 )) || continue
    # Open runs (still running when the replay ended) end at the latest time.
    read -r T0 T1 < <(awk '$1 == "J" { if (t0 == "" || $3 < t0) t0 = $3 }
      $1 == "R" { if ($4 != "-" && (t1 == "" || $4 > t1)) t1 = $4; if (t1 == "" || $3 > t1) t1 = $3 }
      END { print t0, t1 }' "$WORK/gantt.txt")
    read -r DIV UNIT < <(time_unit $(( T1 - T0 )))
    # Tier colours: in order of first appearance; the usual names fixed.
    awk -v t0="$T0" -v t1="$T1" -v work="$WORK" '
      function colour(t,    c) {
        if (t in tc) return tc[t]
        lt = tolower(t)
        if (lt == "high") c = 14492229; else if (lt == "normal") c = 4487082; else if (lt == "low") c = 13417284
        else { c = palette[(np++ % 4) + 1] }
        tc[t] = c; order[++nt] = t
        return c
      }
      BEGIN { split("6732650 10027161 11184810 3381708", palette, " ") }
      $1 == "J" { print $2, $3, ($4 == "-" ? t1 : $4) > (work "/wait.dat")
                  lab[$2] = $6; for (i = 7; i <= NF; i++) lab[$2] = lab[$2] " " $i; colour($5) }
      $1 == "R" { e = ($4 == "-" ? t1 : $4); print $2, $3, e, colour($5), $6 > (work "/runs.dat")
                  if ($6 == 1) print $2, e > (work "/preempted.dat") }
      END {
        for (i = 1; i <= nt; i++) print order[i] "\t" tc[order[i]] > (work "/tiers.list")
        for (j in lab) print j "\t" lab[j] > (work "/labels.list")
      }' "$WORK/gantt.txt"
    touch "$WORK/preempted.dat" "$WORK/runs.dat"
    height=$(( 140 + 18 * njobs )); (( height < 360 )) && height=360
    {
      if [[ $FORMAT == svg ]]; then echo "set terminal svg size 960,$height dynamic font 'sans,11' background rgb 'white'"
      else echo "set terminal png size 1280,$(( height * 4 / 3 )) font 'sans,11'"; fi
      echo "set output '$OUT/gantt-$policy.$FORMAT'"
      echo "set title \"${PREFIX}jobs over time: $(gp_text "$policy")\""
      echo "set xlabel 'time ($UNIT)'; set yrange [$njobs + 0.8:0.2]; set grid x; set key outside right top"
      echo "set style fill solid 0.85 border lc rgb '#333333'"
      if (( njobs <= 40 )); then
        echo -n "set ytics ("
        sort -n "$WORK/labels.list" | awk -F'\t' '{ gsub(/["\\`]/, "", $2); printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $2, $1 }'
        echo ") font ',9'"
      else
        echo "set ylabel 'jobs in submit order'"
      fi
      plot="plot '$WORK/wait.dat' using (\$2-$T0)/$DIV:1:(\$2-$T0)/$DIV:(\$3-$T0)/$DIV:1:1 with xyerrorbars pt 0 lc rgb '#aaaaaa' title 'waiting', \\
     '$WORK/runs.dat' using ((\$2+\$3)/2-$T0)/$DIV:1:(\$2-$T0)/$DIV:(\$3-$T0)/$DIV:(\$1-0.35):(\$1+0.35):4 with boxxyerror lc rgb variable notitle"
      if grep -q ' 2$' "$WORK/runs.dat"; then
        plot+=", \\
     '$WORK/runs.dat' using ((\$2+\$3)/2-$T0)/$DIV:(\$5 == 2 ? \$1 : NaN):(\$2-$T0)/$DIV:(\$3-$T0)/$DIV:(\$1-0.35):(\$1+0.35) with boxxyerror fs pattern 4 transparent lc rgb '#000000' title 'preempted at least once'"
      fi
      if [[ -s $WORK/preempted.dat ]]; then
        plot+=", \\
     '$WORK/preempted.dat' using (\$2-$T0)/$DIV:1 with points pt 2 ps 1.2 lw 2 lc rgb '#000000' title 'preempted'"
      fi
      while IFS=$'\t' read -r tier rgb; do
        plot+=", \\
     NaN with boxes fs solid 0.85 lc rgb $rgb title \"$(gp_text "$tier")\""
      done <"$WORK/tiers.list"
      echo "$plot"
    } >"$WORK/gantt.gp"
    gnuplot "$WORK/gantt.gp"
    rm -f "$WORK/wait.dat" "$WORK/runs.dat" "$WORK/preempted.dat" "$WORK/tiers.list" "$WORK/labels.list"
    echo "$OUT/gantt-$policy.$FORMAT"
  done
fi
