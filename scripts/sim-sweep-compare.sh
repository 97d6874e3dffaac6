#!/usr/bin/env bash
# Two conditions of scripts/sim-quota-sweep.sh, world by world.  A single
# 64-GPU world moves by tens of pool-hours when only a node choice changes
# (doc/evaluation.md), so "lower in 2 of 3 seeds" says little: this pairs
# the worlds (GPUS MIX SEED TIMING) of two conditions and prints, for the
# time under quota (BELOW_H) and the 8-GPU p95 (W95_8), the sums, in how
# many worlds B is lower, the two-sided sign test's p (ties left out) and
# the mean difference B - A with its standard error.  A world in one
# condition only is left out (and counted).
#
#   scripts/sim-sweep-compare.sh [--per-world] A.txt 'PLACE POLICY' B.txt 'PLACE POLICY'
#
# --per-world: then issue 27's acceptance 3, world by world, for B (say
# gpupool) against A (say borrow): in how many worlds B's BELOW_H is at
# most A's, B's PROMPT% at least 95, and B's UTIL%, USEFUL and UTILA%
# (where the sweep has it) at most a point under A's, each of these four
# with its worst world.
#
# A.txt and B.txt are the sweep's output (one file may hold both); each
# condition is a PLACE and POLICY column pair, e.g. 'bestfit gpupool'.
set -euo pipefail
PER_WORLD=0
if [[ ${1:-} == --per-world ]]; then PER_WORLD=1; shift; fi
if [[ $# -ne 4 ]]; then
  echo "usage: sim-sweep-compare.sh [--per-world] A.txt 'PLACE POLICY' B.txt 'PLACE POLICY'" >&2
  exit 2
fi
for f in "$1" "$3"; do [[ -r $f ]] || { echo "sim-sweep-compare: cannot read $f" >&2; exit 1; }; done
awk -v ca="$2" -v cb="$4" -v per_world="$PER_WORLD" '
  function pick(cond, place, policy,   w) { split(cond, w, " "); return w[1] == place && w[2] == policy }
  # Two-sided sign test: P(X <= min(k, n-k)) * 2 for X ~ Binomial(n, 1/2).
  function sign_p(k, n,   m, i, c, p) {
    if (n == 0) return 1
    m = k < n - k ? k : n - k; c = 1; p = 0
    for (i = 0; i <= m; i++) { p += c; c = c * (n - i) / (i + 1) }
    p = 2 * p / 2 ^ n
    return p > 1 ? 1 : p
  }
  FNR == 1 { file++ }
  $6 != "|" { next }
  # Per world: UTIL% $8, USEFUL $10, PROMPT% $17, UTILA% $20 (newer sweeps).
  file == 1 && pick(ca, $5, $7) { key = $1 " " $2 " " $3 " " $4; a[key] = $11; aw[key] = $18
                                  au[key] = $8; auf[key] = $10; aua[key] = $20 }
  file == 2 && pick(cb, $5, $7) { key = $1 " " $2 " " $3 " " $4; b[key] = $11; bw[key] = $18
                                  bu[key] = $8; buf[key] = $10; bua[key] = $20; bp[key] = $17 }
  END {
    n = 0
    for (k in b) if (k in a) {
      n++
      for (m = 1; m <= 2; m++) {
        x = m == 1 ? a[k] : aw[k]; y = m == 1 ? b[k] : bw[k]
        sa[m] += x; sb[m] += y; d = y - x; sd[m] += d; sd2[m] += d * d
        if (y < x) lower[m]++
        else if (y > x) higher[m]++
      }
    }
    if (n == 0) { print "sim-sweep-compare: no world in both conditions" > "/dev/stderr"; exit 1 }
    only = 0
    for (k in a) if (!(k in b)) only++
    for (k in b) if (!(k in a)) only++
    printf "%d worlds, A = %s, B = %s%s\n", n, ca, cb, only ? " (" only " in one condition only, left out)" : ""
    for (m = 1; m <= 2; m++) {
      mean = sd[m] / n
      se = n > 1 ? sqrt((sd2[m] - n * mean * mean) / (n - 1) / n) : 0
      ratio = sa[m] > 0 ? sb[m] / sa[m] : 0
      printf "%-8s sum A %.1f, B %.1f (%.2fx); B lower in %d, higher in %d; sign test p = %.3f; mean B - A %.1f (se %.1f)\n",
             (m == 1 ? "BELOW_H" : "W95_8"), sa[m], sb[m], ratio,
             lower[m] + 0, higher[m] + 0, sign_p(lower[m] + 0, lower[m] + higher[m]), mean, se
    }
    if (!per_world) exit 0
    # The worst world of each: the least margin (B - A, or PROMPT% itself).
    first = 1; with_a = 1
    for (k in b) if (k in a) {
      if (bua[k] == "" || aua[k] == "") with_a = 0
      below_ok += b[k] <= a[k]
      # PROMPT% is "-" in a world with no within-quota NP job: nothing to miss.
      if (bp[k] == "-") { prompt_ok++; none_within++ }
      else prompt_ok += bp[k] >= 95
      du = bu[k] - au[k]; df = buf[k] - auf[k]; da = bua[k] - aua[k]
      # (The columns have one decimal: 1e-9 keeps a difference of -1.0 in.)
      util_ok += du >= -1 - 1e-9; useful_ok += df >= -1 - 1e-9; arriving_ok += da >= -1 - 1e-9
      # (Ties to the first world in key order: for-in has no order.)
      if (bp[k] != "-" && (wpk == "" || bp[k] < wp || (bp[k] == wp && k < wpk))) { wp = bp[k]; wpk = k }
      if (first || du < wu || (du == wu && k < wuk)) { wu = du; wuk = k }
      if (first || df < wf || (df == wf && k < wfk)) { wf = df; wfk = k }
      if (first || da < wa || (da == wa && k < wak)) { wa = da; wak = k }
      first = 0
    }
    printf "per world, B against A: BELOW_H at most A%ss in %d of %d\n", "\047", below_ok, n
    if (wpk != "") printf "  PROMPT%% at least 95 in %d (least %.1f: %s)%s\n", prompt_ok, wp, wpk,
                          none_within ? " (" none_within " with no within-quota NP job)" : ""
    else printf "  PROMPT%% at least 95 in %d (no within-quota NP job in any)\n", prompt_ok
    printf "  UTIL%% at most a point under A%ss in %d (least %+.1f: %s)\n", "\047", util_ok, wu, wuk
    printf "  USEFUL at most a point under A%ss in %d (least %+.1f: %s)\n", "\047", useful_ok, wf, wfk
    if (with_a) printf "  UTILA%% at most a point under A%ss in %d (least %+.1f: %s)\n", "\047", arriving_ok, wa, wak
    else print "  UTILA%: not in these sweeps"
  }' "$1" "$3"
