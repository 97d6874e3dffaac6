#!/usr/bin/python3
"""Live-cluster checker for gpupool: samples the queue, then judges the run.

  checker.py sample --out SAMPLES [--interval 1] [--stop-file F] [--parent PID]
      Every INTERVAL seconds one `squeue` snapshot (one RPC, so one
      consistent view of slurmctld's job list) appended to SAMPLES as a JSON
      line {"t": epoch, "jobs": [...], "eligible": {id: epoch}}, the second
      map from a second `squeue` of pending jobs' EligibleTime (their begin
      time; missing: unknown); {"t": epoch, "down": true} while slurmctld
      does not answer (restarts). Stops when F exists or PID died.

  checker.py check --name NAME --samples SAMPLES --jobs JOBS --confs CONFS
                   --log SLURMCTLD_LOG [--log-offset BYTES] [--since EPOCH]
                   [--accounting] [--gpus-per-node N]
      Judges the run and prints one line per violation, then
      "NAME: J jobs, P preemptions (R reclaims), S samples, V violations".
      Exit status 1 when there is any violation.

Inputs written by the driver (tests/soak/soak.sh, test_kill9_restart):
  JOBS   TSV: job id, partition(s) as submitted, QOS, GPUs (one line a job).
  CONFS  JSON lines {"t": epoch, "conf": "<gpupool.conf text>"}: the first is
         the configuration at start; each later one was written just before
         `scontrol reconfigure` at time t.

What counts as a violation (every check is conservative: it fires only on
what the data proves, never on what a 1-second sample cannot see):

  np-over-quota   In a sample, the GPUs of RUNNING jobs of non-preemptible
                  tiers in a pool (the partition a job runs in) exceed the
                  pool's quota in force. Quota in force: a quota increase
                  counts from the moment `scontrol reconfigure` is issued; a
                  decrease from one second after slurmctld logged the reload,
                  but with the window of doc/design.md ("Quota decrease"):
                  gpupool never preempts non-preemptible jobs, so until the
                  pool's NP usage first drops to the new quota the bound is
                  the lowest NP usage seen since the reload (no NP job of the
                  pool may start while it is over the new quota).
  reclaim-of-protected-pool
                  A Reclaim (rule Reclaim in the gpupool log line) whose
                  victim pool was at or under its quota: either by the
                  plugin's own numbers in the line (used <= quota), or by
                  what was observed: the GPUs of every job of the victim's
                  pool that may have been running at that second (sacct
                  start..end covers it, or RUNNING in the sample just before
                  or just after, victim included) are <= its quota.
  out-of-order    Job B is preempted (rule InPool) by job A of the same pool,
                  A ahead of B in R1 order (a higher tier: InPool requires
                  it), A asks no more GPUs than B holds, and A was waiting
                  and could have had B's GPUs when B started: in every
                  sample of the 3 s before B's start (at least one), A is
                  PENDING with reason None, Priority or Resources (not held
                  by quota, begin time, dependency or a user/admin hold),
                  with an eligible time (begin time) before B's start
                  where the sample has one (a reason alone is not enough:
                  a job just released from a hold shows None until Slurm
                  tests its begin time again), and A was submitted (or
                  last requeued) at least 3 s before B started
                  (sched_interval=2: a pass has seen A).
  bad-preemption  A preemption Slurm logged with no gpupool verdict line,
                  a non-preemptible job preempted, or an InPool verdict
                  across pools or against an equal or higher tier.
  lost-job        (--accounting) A submitted job without a sacct record, or
                  whose last record is not terminal, or still queued.
  duplicate-run   (--accounting) Two sacct records of one job whose run
                  times overlap, a record before the last one that is not
                  a requeue (PREEMPTED, REQUEUED, NODE_FAIL), or (samples)
                  more GPUs RUNNING on a node than it has.
  config          A reconfigure that slurmctld never logged as reloaded.

Python 3 standard library only (Debian's /usr/bin/python3).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

SQUEUE_FMT = "%i|%P|%q|%T|%b|%S|%V|%Q|%r|%N"
# Pending jobs' begin time: squeue -o has no letter for it.
ELIGIBLE_FMT = "JobID:24,EligibleTime:24"
RUNNABLE_REASONS = {"None", "Priority", "Resources"}
REQUEUE_STATES = {"PREEMPTED", "REQUEUED", "NODE_FAIL", "REQUEUE_FED", "REQUEUE_HOLD"}
ACTIVE_STATES = {"PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "COMPLETING",
                 "CONFIGURING", "RESIZING", "REQUEUE_FED", "REQUEUE_HOLD",
                 "STAGE_OUT", "SIGNALING", "STOPPED", "RESV_DEL_HOLD"}


def slurm_time(s):
    """'2026-11-22T11:37:32' (local time) -> epoch, or None."""
    if not s or not s[0].isdigit():
        return None
    try:
        return time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def gres_gpus(s):
    """squeue %b 'gres:gpu:2' / 'gres/gpu:a100:2' -> 2 (0 if no GPU)."""
    n = 0
    for part in s.split(","):
        f = part.strip().replace("/", ":").split(":")
        if len(f) >= 2 and f[0] == "gres" and f[1] == "gpu":
            n += int(f[-1]) if len(f) > 2 and f[-1].isdigit() else 1
    return n


# ------------------------------------------------------------------ sample

def cmd_sample(a):
    deadline = time.time() + a.duration if a.duration else None
    with open(a.out, "a", buffering=1) as out:
        next_t = time.time()
        while True:
            if a.stop_file and os.path.exists(a.stop_file):
                break
            if deadline and time.time() > deadline:
                break
            if a.parent:
                try:
                    os.kill(a.parent, 0)
                except OSError:
                    break
            t0 = time.time()
            try:
                p = subprocess.run(["squeue", "-h", "-o", SQUEUE_FMT],
                                   capture_output=True, text=True, timeout=5)
                ok = p.returncode == 0
            except subprocess.TimeoutExpired:
                ok = False
            t1 = time.time()
            if ok:
                jobs = [ln.split("|") for ln in p.stdout.splitlines() if ln.count("|") == 9]
                rec = {"t": round((t0 + t1) / 2, 3), "jobs": jobs, "eligible": eligible_times()}
                out.write(json.dumps(rec) + "\n")
            else:
                out.write(json.dumps({"t": round(t1, 3), "down": True}) + "\n")
            next_t += a.interval
            delay = next_t - time.time()
            if delay < 0:  # fell behind (slow squeue): keep the rhythm
                next_t = time.time()
                delay = 0
            time.sleep(delay)
    return 0


def eligible_times():
    """Pending job id -> eligible (begin) time as epoch; {} on any error."""
    try:
        p = subprocess.run(["squeue", "-h", "-t", "PD", "-O", ELIGIBLE_FMT],
                           capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return {}
    if p.returncode != 0:
        return {}
    elig = {}
    for ln in p.stdout.splitlines():
        f = ln.split()
        if len(f) == 2 and slurm_time(f[1]) is not None:
            elig[f[0]] = slurm_time(f[1])
    return elig


# ------------------------------------------------------------------ config

def parse_conf(text):
    """Tiers and pool quotas of a gpupool.conf (the keys the checks need)."""
    tiers, pools, glob = {}, {}, {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        kv = {}
        for tok in line:
            k, _, v = tok.partition("=")
            kv[k.lower()] = v
        first = line[0].split("=", 1)[0].lower()
        if first == "tier":
            tiers[kv["tier"]] = kv
        elif first == "pool":
            pools[kv["pool"]] = int(kv["quota"])
        else:
            glob.update(kv)
    pp = glob.get("preemptiblepriority")
    qos_tier = {}
    tier_info = {}
    for name, kv in tiers.items():
        prio = int(kv["priority"])
        if pp is not None:
            preemptible = prio <= int(pp)
        else:
            preemptible = kv.get("preemptible", "no").lower() in ("yes", "true", "1")
        tier_info[name] = (prio, preemptible)
        for q in kv.get("qos", name).split(","):
            qos_tier[q] = name
    default = glob.get("defaulttier") or (next(iter(tiers)) if len(tiers) == 1 else None)
    return {"qos_tier": qos_tier, "tiers": tier_info, "default": default, "quota": pools}


class Confs:
    """The sequence of configurations and when each took effect."""

    def __init__(self, events, reloads):
        self.events = []  # (t_cmd, t_eff, conf)
        self.errors = []
        ri = 0
        for i, ev in enumerate(events):
            conf = parse_conf(ev["conf"])
            if i == 0:
                self.events.append((float("-inf"), float("-inf"), conf))
                continue
            while ri < len(reloads) and reloads[ri] < ev["t"] - 0.5:
                ri += 1
            if ri < len(reloads):
                t_eff = reloads[ri]
                ri += 1
            else:
                self.errors.append("config: reconfigure at %.0f was never logged as reloaded" % ev["t"])
                t_eff = ev["t"] + 5
            self.events.append((ev["t"], t_eff, conf))

    def tier_of(self, qos):
        c = self.events[0][2]
        name = c["qos_tier"].get(qos, c["default"])
        return name, c["tiers"].get(name, (0, False))

    def is_np(self, qos):
        return not self.tier_of(qos)[1][1]

    def pools(self):
        names = set()
        for _, _, c in self.events:
            names.update(c["quota"])
        return sorted(names)

    def quotas_possible(self, pool, t, slack=2.0):
        """Every quota of POOL that may have been in force at time t."""
        out = set()
        for i, (t_cmd, t_eff, c) in enumerate(self.events):
            nxt = self.events[i + 1] if i + 1 < len(self.events) else None
            start = t_cmd - slack
            end = (nxt[1] + slack) if nxt else float("inf")
            if start <= t <= end and pool in c["quota"]:
                out.add(c["quota"][pool])
        return out


# ------------------------------------------------------------------ log

LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?\] (.*)$")
RE_SLURM_PRE = re.compile(r"preempted JobId=(\d+) has been (requeued|killed) to reclaim resources for JobId=(\d+)")
RE_SLURM_KILLED = re.compile(r"slurm_job_preempt: preempted JobId=(\d+) had to be killed")
RE_GP = re.compile(r"gpupool: preempt victim JobId=(\d+) \(pool (\S+), used (\d+)/(\d+) -> (\d+)\) "
                   r"for JobId=(\d+) \(pool (\S+)\) rule (\w+): (.*)$")
RE_GP_NOVERDICT = re.compile(r"gpupool: preempt victim JobId=(\d+) \((\w+), grace \d+s\): no verdict on record")
RE_RELOAD = re.compile(r"gpupool: configuration reloaded from")
# Slurm (seen on 23.11.11 right after a slurmctld restart, before the node
# registered again) starting a job on a node without selecting its GPUs
# there: the job runs but holds none of the node's GPUs in Slurm's books.
RE_NO_GRES = re.compile(r"error: gres/gpu: job (\d+) node (\S+) no resources selected")
RE_CTLD_START = re.compile(r"slurmctld version \S+ started on cluster")
RE_RECOVERED = re.compile(r"gpupool: recovered state from")


def read_log(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read().decode("utf-8", "replace")
    out = []
    for line in data.splitlines():
        m = LOG_LINE.match(line)
        if not m:
            continue
        t = slurm_time(m.group(1))
        if t is None:
            continue
        out.append((t + (float(m.group(2)) if m.group(2) else 0.0), m.group(3)))
    return out


# ------------------------------------------------------------------ check

class Sample:
    __slots__ = ("t", "jobs", "eligible")

    def __init__(self, t, rows, eligible=None):
        self.t = t
        self.eligible = eligible or {}
        self.jobs = {}
        for r in rows:
            jid, part, qos, state, gres, start, submit, prio, reason, node = r
            self.jobs[jid] = {"part": part, "qos": qos, "state": state, "gpus": gres_gpus(gres),
                              "start": slurm_time(start), "submit": slurm_time(submit),
                              "reason": reason, "node": node}


def load_samples(path, since):
    samples, down = [], 0
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if d["t"] < since:
                continue
            if d.get("down"):
                down += 1
                continue
            samples.append(Sample(d["t"], d["jobs"], d.get("eligible")))
    return samples, down


def sacct_records(ids, since):
    """{job id: [records]} for IDS, each {state, part, start, end}."""
    recs = {}
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 120))
    ids = sorted(ids, key=int)
    for i in range(0, len(ids), 200):
        chunk = ids[i:i + 200]
        p = subprocess.run(["sacct", "-n", "-X", "-D", "-P", "-S", start, "-E", "now",
                            "-j", ",".join(chunk), "-o", "JobIDRaw,Partition,State,Start,End"],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("sacct failed: " + p.stderr.strip())
        for ln in p.stdout.splitlines():
            f = ln.split("|")
            if len(f) != 5:
                continue
            recs.setdefault(f[0], []).append({"part": f[1], "state": f[2].split()[0] if f[2] else "",
                                              "start": slurm_time(f[3]), "end": slurm_time(f[4])})
    return recs


def squeue_ids():
    p = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, timeout=30)
    return set(p.stdout.split()) if p.returncode == 0 else None


def judge_lost(jobs, recs, queued):
    """lost-job violations: every job has records, the last one terminal."""
    bad = []
    for jid in jobs:
        r = recs.get(jid)
        if not r:
            bad.append("lost-job: JobId=%s has no accounting record" % jid)
        elif r[-1]["state"] in ACTIVE_STATES:
            bad.append("lost-job: JobId=%s last record is %s" % (jid, r[-1]["state"]))
        elif jid in queued:
            bad.append("lost-job: JobId=%s is still queued" % jid)
    return bad


def judge_runs(recs):
    """duplicate-run violations from the records of each job."""
    bad = []
    for jid, r in sorted(recs.items()):
        runs = sorted((x for x in r if x["start"]), key=lambda x: x["start"])
        for x, y in zip(runs, runs[1:]):
            if x["end"] is None or x["end"] > y["start"]:
                bad.append("duplicate-run: JobId=%s ran twice at once (%s..%s and from %s)"
                           % (jid, x["start"], x["end"], y["start"]))
        for x in r[:-1]:
            if x["state"] not in REQUEUE_STATES:
                bad.append("duplicate-run: JobId=%s has a %s record before its last one (%s)"
                           % (jid, x["state"], " ".join(y["state"] for y in r)))
    return bad


def check_accounting(jobs, since, deadline_s):
    """Wait (up to DEADLINE_S) for every job to be terminal in sacct."""
    end = time.time() + deadline_s
    while True:
        recs = sacct_records(list(jobs), since)
        bad = judge_lost(jobs, recs, squeue_ids() or set())
        if not bad or time.time() > end:
            return recs, bad
        time.sleep(1)


def cmd_check(a):
    violations = []
    jobs = {}
    with open(a.jobs) as f:
        for ln in f:
            fld = ln.rstrip("\n").split("\t")
            if len(fld) >= 4 and fld[0].isdigit():
                jobs[fld[0]] = {"parts": fld[1], "qos": fld[2], "gpus": int(fld[3])}
    with open(a.confs) as f:
        conf_events = [json.loads(ln) for ln in f if ln.strip()]
    log = read_log(a.log, a.log_offset)
    since = a.since if a.since else (min(e["t"] for e in conf_events) if conf_events else 0)
    reloads = [t for t, msg in log if RE_RELOAD.search(msg) and t >= since - 1]
    confs = Confs(conf_events, reloads)
    violations += confs.errors
    samples, down = load_samples(a.samples, since)
    # (job, node) -> times Slurm started it there without its GRES
    # only within a minute of a slurmctld start (else a violation as any)
    no_gres = {}
    ctld_start = None
    for t, msg in log:
        if RE_CTLD_START.search(msg):
            ctld_start = t
        m = RE_NO_GRES.search(msg)
        if m and t >= since - 1 and ctld_start is not None and t - ctld_start <= 60:
            no_gres.setdefault((m.group(1), m.group(2)), []).append(t)
    slurm_no_gres = set()  # notes: (job, node, start) Slurm started without its GPUs

    def started_without_gres(jid, r):
        """The run Slurm logged as started on its node without its GRES."""
        return r["start"] is not None and any(
            abs(t - r["start"]) <= 2 for t in no_gres.get((jid, r["node"]), ()))

    def gpus_of(jid, row):
        return jobs[jid]["gpus"] if jid in jobs else row["gpus"]

    def tier_prio(qos):
        return confs.tier_of(qos)[1][0]

    # --- np-over-quota (samples) --------------------------------------
    pools = confs.pools()
    ev_i = 1
    allowed = {p: confs.events[0][2]["quota"].get(p, 0) for p in pools}
    window = {}  # pool -> [t_cmd, t_eff, new quota, lowest NP usage since reload]
    np_series = {p: [] for p in pools}
    node_gpus = a.gpus_per_node
    for s in samples:
        while ev_i < len(confs.events) and confs.events[ev_i][0] <= s.t:
            t_cmd, t_eff, c = confs.events[ev_i]
            for p in pools:
                new = c["quota"].get(p, 0)
                old = allowed[p] if p not in window else max(window[p][2], window[p][3])
                if new < old:
                    window[p] = [t_cmd, t_eff, new, old]
                else:
                    window.pop(p, None)
                allowed[p] = new
            ev_i += 1
        np_used = {p: 0 for p in pools}
        np_jobs = {p: [] for p in pools}
        per_node = {}
        for jid, r in s.jobs.items():
            if r["state"] != "RUNNING":
                continue
            g = gpus_of(jid, r)
            if r["node"] and "," not in r["node"] and "[" not in r["node"]:
                if started_without_gres(jid, r):
                    # Slurm's own double booking, not gpupool's: noted.
                    slurm_no_gres.add((jid, r["node"], r["start"]))
                else:
                    per_node[r["node"]] = per_node.get(r["node"], 0) + g
            if r["part"] in np_used and confs.is_np(r["qos"]):
                np_used[r["part"]] += g
                np_jobs[r["part"]].append(jid)
        if node_gpus:
            for n, g in per_node.items():
                if g > node_gpus:
                    violations.append("duplicate-run: t=%.0f node %s has %d GPUs of RUNNING jobs (has %d)"
                                      % (s.t, n, g, node_gpus))
        for p in pools:
            np_series[p].append((s.t, np_used[p]))
            bound = allowed[p]
            w = window.get(p)
            if w:
                t_cmd, t_eff, new, lowest = w
                if s.t <= t_eff + 1:
                    bound = lowest  # the old quota may still be in force
                else:
                    bound = max(new, lowest)
                    if np_used[p] <= new:
                        window.pop(p)
                    else:
                        w[3] = min(lowest, np_used[p])
            if np_used[p] > bound:
                violations.append("np-over-quota: t=%.0f pool %s NP GPUs %d > %d (jobs %s)"
                                  % (s.t, p, np_used[p], bound, ",".join(sorted(np_jobs[p]))))

    # --- preemptions from the log ---------------------------------------
    verdicts = {}  # victim -> list of (t, verdict)
    preemptions = []
    for t, msg in log:
        if t < since - 1:
            continue
        m = RE_GP.search(msg)
        if m:
            verdicts.setdefault(m.group(1), []).append((t, {
                "pool": m.group(2), "used": int(m.group(3)), "quota": int(m.group(4)),
                "preemptor": m.group(6), "ppool": m.group(7), "rule": m.group(8), "why": m.group(9)}))
            continue
        m = RE_GP_NOVERDICT.search(msg)
        if m:
            verdicts.setdefault(m.group(1), []).append((t, None))
            continue
        m = RE_SLURM_PRE.search(msg)
        if m:
            preemptions.append((t, m.group(1), m.group(3)))
            continue
        m = RE_SLURM_KILLED.search(msg)
        if m:
            preemptions.append((t, m.group(1), None))

    recs = {}
    if a.accounting:
        recs, bad = check_accounting(jobs, since, a.accounting_wait)
        violations += bad + judge_runs(recs)

    def sample_near(t, before):
        lo, hi = 0, len(samples)
        while lo < hi:
            mid = (lo + hi) // 2
            if samples[mid].t < t:
                lo = mid + 1
            else:
                hi = mid
        i = lo - 1 if before else lo
        if 0 <= i < len(samples) and abs(samples[i].t - t) <= 2.5:
            return samples[i]
        return None

    def qos_of(jid, s=None):
        if jid in jobs:
            return jobs[jid]["qos"]
        for smp in (s,) if s else ():
            if smp and jid in smp.jobs:
                return smp.jobs[jid]["qos"]
        return None

    n_reclaim = 0
    for t, victim, preemptor in preemptions:
        cand = [(vt, v) for vt, v in verdicts.get(victim, []) if t - 5 <= vt <= t + 0.5]
        v = cand[-1][1] if cand else None
        if v is None or (preemptor and v["preemptor"] != preemptor):
            violations.append("bad-preemption: t=%.0f JobId=%s preempted for JobId=%s without a gpupool verdict"
                              % (t, victim, preemptor))
            continue
        before = sample_near(t, True)
        vq = qos_of(victim, before)
        if vq is not None and confs.is_np(vq):
            violations.append("bad-preemption: t=%.0f JobId=%s of non-preemptible QOS %s preempted" % (t, victim, vq))
        if v["rule"] == "InPool":
            pq = qos_of(v["preemptor"], before)
            if v["pool"] != v["ppool"] or (vq and pq and tier_prio(pq) <= tier_prio(vq)):
                violations.append("bad-preemption: t=%.0f InPool JobId=%s (%s, %s) for JobId=%s (%s, %s)"
                                  % (t, victim, v["pool"], vq, v["preemptor"], v["ppool"], pq))
            check_order(t, victim, v, jobs, recs, samples, sample_near, gpus_of, violations)
        elif v["rule"] == "Reclaim":
            n_reclaim += 1
            pool = v["pool"]
            quotas = confs.quotas_possible(pool, t)
            if v["used"] <= v["quota"]:
                violations.append("reclaim-of-protected-pool: t=%.0f JobId=%s of %s taken for JobId=%s: "
                                  "plugin logged used %d/%d" % (t, victim, pool, v["preemptor"], v["used"], v["quota"]))
            elif quotas and v["quota"] not in quotas:
                violations.append("reclaim-of-protected-pool: t=%.0f verdict uses quota %d for %s, configured %s"
                                  % (t, v["quota"], pool, sorted(quotas)))
            used_max = max_used(pool, t, victim, recs, sample_near, gpus_of)
            if used_max is not None and quotas and used_max <= max(quotas):
                violations.append("reclaim-of-protected-pool: t=%.0f JobId=%s of %s taken for JobId=%s: "
                                  "observed at most %d GPUs in use, quota %d"
                                  % (t, victim, pool, v["preemptor"], used_max, max(quotas)))
        else:
            violations.append("bad-preemption: t=%.0f unknown rule %s" % (t, v["rule"]))

    if a.min_preemptions and len(preemptions) < a.min_preemptions:
        violations.append("workload: only %d preemptions (at least %d wanted)" % (len(preemptions), a.min_preemptions))
    for ln in violations:
        print("VIOLATION " + ln)
    for jid, node, start in sorted(slurm_no_gres):
        print("NOTE slurm-started-without-gres: JobId=%s on node %s at %.0f: slurmctld logged \"no resources "
              "selected\" for it and started it holding none of the node's GPUs (Slurm's own double booking, "
              "not counted)" % (jid, node, start))
    restarts = sum(1 for t, msg in log if t >= since - 1 and RE_RECOVERED.search(msg))
    print("%s: %d jobs, %d preemptions (%d reclaims), %d samples, %d violations"
          % (a.name, len(jobs), len(preemptions), n_reclaim, len(samples), len(violations)))
    gap = max((y.t - x.t for x, y in zip(samples, samples[1:])), default=0)
    print("%s: details: %d samples failed (slurmctld down), longest gap between samples %.1f s, "
          "%d gpupool state recoveries, %d reconfigures" % (a.name, down, gap, restarts, len(confs.events) - 1))
    return 1 if violations else 0


def max_used(pool, t, victim, recs, sample_near, gpus_of):
    """Most GPUs the jobs of POOL can have held at time t (victim included);
    None when neither sacct nor a sample near t tells."""
    before, after = sample_near(t, True), sample_near(t, False)
    if before is None and after is None and not recs:
        return None
    holders = {victim: None}
    for s in (before, after):
        if s is None:
            continue
        for jid, r in s.jobs.items():
            if r["state"] in ("RUNNING", "COMPLETING") and r["part"] == pool:
                holders[jid] = r
    sec = int(t)
    for jid, r in recs.items():
        for x in r:
            if x["part"] == pool and x["start"] is not None and x["start"] <= sec + 1 and \
                    (x["end"] is None or x["end"] >= sec):
                holders.setdefault(jid, None)
    total = 0
    for jid, r in holders.items():
        if r is None:
            for s in (before, after):
                if s and jid in s.jobs:
                    r = s.jobs[jid]
                    break
        total += gpus_of(jid, r or {"gpus": 1})
    return total


def check_order(t, victim, v, jobs, recs, samples, sample_near, gpus_of, violations):
    """out-of-order: see the module docstring."""
    a_id = v["preemptor"]
    b_start = None
    for x in reversed(recs.get(victim, [])):
        if x["start"] and x["end"] and t - 3 <= x["end"] <= t + 5:
            b_start = x["start"]
            break
    if b_start is None:  # the latest sample before t that shows B running
        for s in reversed(samples):
            if s.t < t and victim in s.jobs and s.jobs[victim]["state"] == "RUNNING":
                b_start = s.jobs[victim]["start"]
                break
            if s.t < t - 600:
                break
    if b_start is None:
        return
    if a_id in jobs and "," in jobs[a_id]["parts"]:
        return
    window = [s for s in samples if b_start - 3 <= s.t <= b_start]
    if not window:
        return
    b_gpus = None
    for s in window + [sample_near(t, True)]:
        if s and victim in s.jobs:
            b_gpus = gpus_of(victim, s.jobs[victim])
    if b_gpus is None and victim in jobs:
        b_gpus = jobs[victim]["gpus"]
    for s in window:
        r = s.jobs.get(a_id)
        if r is None or r["state"] != "PENDING" or r["reason"] not in RUNNABLE_REASONS:
            return
        if s.eligible.get(a_id, 0) > b_start:
            return
        if r["part"] != v["pool"] or r["submit"] is None or r["submit"] > b_start - 3:
            return
        if b_gpus is None or gpus_of(a_id, r) > b_gpus:
            return
    violations.append("out-of-order: JobId=%s (%s) started at %.0f while JobId=%s, ahead of it in R1 order, "
                      "waited runnable for its GPUs; preempted back out for it at %.0f"
                      % (victim, v["pool"], b_start, a_id, t))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--out", required=True)
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--stop-file")
    s.add_argument("--parent", type=int)
    s.add_argument("--duration", type=float)
    c = sub.add_parser("check")
    c.add_argument("--name", default="check")
    c.add_argument("--samples", required=True)
    c.add_argument("--jobs", required=True)
    c.add_argument("--confs", required=True)
    c.add_argument("--log", required=True)
    c.add_argument("--log-offset", type=int, default=0)
    c.add_argument("--since", type=float)
    c.add_argument("--gpus-per-node", type=int)
    c.add_argument("--accounting", action="store_true")
    c.add_argument("--accounting-wait", type=float, default=60)
    c.add_argument("--min-preemptions", type=int, default=0)
    a = ap.parse_args()
    return cmd_sample(a) if a.cmd == "sample" else cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
