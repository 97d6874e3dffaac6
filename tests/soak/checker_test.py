#!/usr/bin/python3
"""Tests of tests/soak/checker.py on made-up runs: each violation it is
meant to catch is caught, and what the rules allow is not flagged.

    /usr/bin/python3 tests/soak/checker_test.py        (no cluster needed)
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import checker  # noqa: E402

CONF = """Tier=high   QOS=high   Priority=300 Preemptible=no
Tier=normal QOS=normal Priority=200 Preemptible=no
Tier=low    QOS=low    Priority=100 Preemptible=yes
DefaultTier=normal
Pool=pool1 Quota=%d
Pool=pool2 Quota=2
"""
T0 = 1800000000


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(t)))


def gp_line(victim, pool, used, quota, preemptor, ppool, rule):
    return ("gpupool: preempt victim JobId=%s (pool %s, used %d/%d -> %d) for JobId=%s (pool %s) "
            "rule %s: test [requeue, grace 0s]" % (victim, pool, used, quota, used - 1, preemptor, ppool, rule))


def slurm_line(victim, preemptor):
    return "preempted JobId=%s has been requeued to reclaim resources for JobId=%s" % (victim, preemptor)


class Run:
    """A made-up run: jobs, samples, log lines, configurations."""

    def __init__(self, quota1=2):
        self.jobs = {}
        self.samples = []
        self.log = []
        self.confs = [(T0 - 100, CONF % quota1)]

    def job(self, jid, part, qos, gpus=1):
        self.jobs[jid] = (part, qos, gpus)

    def row(self, jid, state, reason="None", start=None, submit=T0 - 50, node="node1", part=None):
        p, qos, gpus = self.jobs[jid]
        return [jid, part or p, qos, state, "gres:gpu:%d" % gpus,
                stamp(start) if start else "N/A", stamp(submit), "1", reason, node if state == "RUNNING" else ""]

    def sample(self, t, *rows, eligible=None):
        d = {"t": t, "jobs": list(rows)}
        if eligible is not None:
            d["eligible"] = eligible
        self.samples.append(d)

    def line(self, t, msg):
        self.log.append("[%s.%03d] %s" % (stamp(t), int(round((t % 1) * 1000)) % 1000, msg))

    def reconfigure(self, t, quota1, logged_at=None):
        self.confs.append((t, CONF % quota1))
        if logged_at is not None:
            self.line(logged_at, "gpupool: configuration reloaded from /etc/gpupool.conf")

    def check(self, *extra):
        d = tempfile.mkdtemp(prefix="checker-test.")
        with open(os.path.join(d, "jobs.tsv"), "w") as f:
            for jid, (p, q, g) in self.jobs.items():
                f.write("%s\t%s\t%s\t%d\n" % (jid, p, q, g))
        with open(os.path.join(d, "samples.jsonl"), "w") as f:
            for s in self.samples:
                f.write(json.dumps(s) + "\n")
        with open(os.path.join(d, "confs.jsonl"), "w") as f:
            for t, c in self.confs:
                f.write(json.dumps({"t": t, "conf": c}) + "\n")
        with open(os.path.join(d, "slurmctld.log"), "w") as f:
            f.write("\n".join(sorted(self.log, key=lambda ln: ln[1:24])) + "\n")
        p = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), "check", "--name", "t",
                            "--samples", os.path.join(d, "samples.jsonl"), "--jobs", os.path.join(d, "jobs.tsv"),
                            "--confs", os.path.join(d, "confs.jsonl"), "--log", os.path.join(d, "slurmctld.log"),
                            "--since", str(T0 - 100)] + list(extra), capture_output=True, text=True)
        self.out = p.stdout
        self.violations = [ln for ln in p.stdout.splitlines() if ln.startswith("VIOLATION ")]
        return p.returncode

    def kinds(self):
        return sorted(v.split()[1].rstrip(":") for v in self.violations)


class NpQuota(unittest.TestCase):
    def test_within_quota_passes_and_prints_the_summary(self):
        r = Run()
        r.job("1", "pool1", "normal"), r.job("2", "pool1", "normal"), r.job("3", "pool1", "low")
        for t in (T0, T0 + 1, T0 + 2):
            r.sample(t, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0), r.row("3", "RUNNING", start=T0))
        self.assertEqual(r.check(), 0, r.out)
        self.assertIn("t: 3 jobs, 0 preemptions (0 reclaims), 3 samples, 0 violations", r.out)

    def test_np_over_quota_is_caught(self):
        r = Run()
        for j in "123":
            r.job(j, "pool1", "high" if j == "3" else "normal")
        r.sample(T0, *(r.row(j, "RUNNING", start=T0) for j in "123"))
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["np-over-quota"])
        self.assertIn("pool pool1 NP GPUs 3 > 2 (jobs 1,2,3)", r.violations[0])

    def test_partition_a_job_runs_in_counts_and_completing_does_not(self):
        r = Run()
        r.job("1", "pool1,pool2", "normal"), r.job("2", "pool2", "normal"), r.job("3", "pool2", "normal")
        r.sample(T0, r.row("1", "RUNNING", part="pool2", start=T0), r.row("2", "RUNNING", start=T0),
                 r.row("3", "COMPLETING", start=T0))
        self.assertEqual(r.check(), 0, r.out)
        r.sample(T0 + 1, r.row("1", "RUNNING", part="pool2", start=T0), r.row("2", "RUNNING", start=T0),
                 r.row("3", "RUNNING", start=T0))
        self.assertEqual(r.check(), 1)
        self.assertIn("pool pool2 NP GPUs 3 > 2", r.violations[0])

    def test_increase_counts_from_the_command(self):
        r = Run(quota1=1)
        r.job("1", "pool1", "normal"), r.job("2", "pool1", "normal")
        r.reconfigure(T0 + 10, 2, logged_at=T0 + 10.4)
        r.sample(T0 + 10.1, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0 + 10))
        self.assertEqual(r.check(), 0, r.out)
        r.sample(T0 + 9, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0 + 9))
        r.samples.sort(key=lambda s: s["t"])
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["np-over-quota"])

    def test_decrease_window_until_usage_first_drops(self):
        r = Run(quota1=3)
        for j in "1234":
            r.job(j, "pool1", "normal")
        r.reconfigure(T0 + 10, 1, logged_at=T0 + 10.5)
        three = [r.row(j, "RUNNING", start=T0) for j in "123"]
        r.sample(T0 + 5, *three)
        r.sample(T0 + 12, *three)                 # over the new quota: allowed
        r.sample(T0 + 13, *three[:1])             # down to it: window ends
        self.assertEqual(r.check(), 0, r.out)
        r.sample(T0 + 14, *three[:2])             # up again: over quota
        self.assertEqual(r.check(), 1)
        self.assertIn("pool pool1 NP GPUs 2 > 1", r.violations[0])

    def test_no_np_start_inside_the_decrease_window(self):
        r = Run(quota1=3)
        for j in "1234":
            r.job(j, "pool1", "normal")
        r.reconfigure(T0 + 10, 1, logged_at=T0 + 10.5)
        r.sample(T0 + 12, *(r.row(j, "RUNNING", start=T0) for j in "123"))
        r.sample(T0 + 13, *(r.row(j, "RUNNING", start=T0) for j in "12"))
        r.sample(T0 + 14, *(r.row(j, "RUNNING", start=T0) for j in "124"))
        self.assertEqual(r.check(), 1)
        self.assertIn("pool pool1 NP GPUs 3 > 2", r.violations[0])

    def test_reconfigure_never_reloaded_is_reported(self):
        r = Run()
        r.reconfigure(T0 + 10, 3)
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["config"])

    def test_node_overcommit_is_a_duplicate_run(self):
        r = Run()
        r.job("1", "pool1", "low", 2), r.job("2", "pool2", "low")
        r.sample(T0, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0))
        self.assertEqual(r.check("--gpus-per-node", "2"), 1)
        self.assertEqual(r.kinds(), ["duplicate-run"])


    def test_a_job_slurm_started_without_its_gres_is_noted_not_counted(self):
        r = Run()
        r.job("1", "pool1", "low"), r.job("2", "pool2", "normal")
        r.sample(T0 + 1, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0))
        r.line(T0 + 0.4, "error: gres/gpu: job 2 node node1 no resources selected")
        # Not after a slurmctld start: a violation as any.
        self.assertEqual(r.check("--gpus-per-node", "1"), 1)
        self.assertEqual(r.kinds(), ["duplicate-run"])
        r.line(T0 - 5, "slurmctld version 23.11.11 started on cluster gpupool")
        self.assertEqual(r.check("--gpus-per-node", "1"), 0, r.out)
        self.assertIn("NOTE slurm-started-without-gres: JobId=2 on node node1", r.out)
        # The same job's later run on that node, with its GPUs, counts.
        r.sample(T0 + 60, r.row("1", "RUNNING", start=T0), r.row("2", "RUNNING", start=T0 + 59))
        self.assertEqual(r.check("--gpus-per-node", "1"), 1)
        self.assertEqual(r.kinds(), ["duplicate-run"])


class Preemptions(unittest.TestCase):
    def borrowed(self, pool1_low_running):
        """pool1: 1 NORMAL + LOW jobs 11.. running; pool2 NORMAL 20 pending."""
        r = Run()
        r.job("1", "pool1", "normal"), r.job("20", "pool2", "normal")
        lows = [str(11 + i) for i in range(pool1_low_running)]
        for j in lows:
            r.job(j, "pool1", "low")
        rows = [r.row("1", "RUNNING", start=T0)] + [r.row(j, "RUNNING", start=T0) for j in lows] + \
            [r.row("20", "PENDING", reason="Resources", submit=T0 + 1)]
        r.sample(T0 + 9, *rows)
        r.sample(T0 + 11, *rows[:-2] + [r.row("20", "RUNNING", start=T0 + 10)])
        return r, lows

    def test_reclaim_of_borrowed_gpus_passes(self):
        r, lows = self.borrowed(2)
        r.line(T0 + 10, gp_line(lows[-1], "pool1", 3, 2, "20", "pool2", "Reclaim"))
        r.line(T0 + 10.001, slurm_line(lows[-1], "20"))
        self.assertEqual(r.check(), 0, r.out)
        self.assertIn("1 preemptions (1 reclaims)", r.out)

    def test_reclaim_at_quota_by_the_plugins_numbers(self):
        r, lows = self.borrowed(2)
        r.line(T0 + 10, gp_line(lows[-1], "pool1", 2, 2, "20", "pool2", "Reclaim"))
        r.line(T0 + 10.001, slurm_line(lows[-1], "20"))
        self.assertEqual(r.check(), 1)
        self.assertIn("plugin logged used 2/2", r.violations[0])

    def test_reclaim_at_quota_by_what_was_observed(self):
        r, lows = self.borrowed(1)   # pool1 holds 2 GPUs = its quota
        r.line(T0 + 10, gp_line(lows[-1], "pool1", 3, 2, "20", "pool2", "Reclaim"))
        r.line(T0 + 10.001, slurm_line(lows[-1], "20"))
        self.assertEqual(r.check(), 1)
        self.assertIn("observed at most 2 GPUs in use, quota 2", r.violations[0])

    def test_preemption_without_verdict(self):
        r, lows = self.borrowed(2)
        r.line(T0 + 10.001, slurm_line(lows[-1], "20"))
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["bad-preemption"])

    def test_np_victim(self):
        r, lows = self.borrowed(2)
        r.line(T0 + 10, gp_line("1", "pool1", 3, 2, "20", "pool2", "Reclaim"))
        r.line(T0 + 10.001, slurm_line("1", "20"))
        self.assertEqual(r.check(), 1)
        self.assertIn("non-preemptible QOS normal preempted", r.violations[0])

    def in_pool(self, a_reason="Resources", a_submit=T0 + 10, a_gpus=1, a_eligible=None):
        """LOW B starts at T0+20 while NORMAL A of the same pool waits;
        A preempts B at T0+25."""
        r = Run()
        r.job("5", "pool1", "low"), r.job("6", "pool1", "normal", a_gpus)
        elig = None if a_eligible is None else {"6": a_eligible}
        for t in (T0 + 17, T0 + 18, T0 + 19, T0 + 20):
            r.sample(t, r.row("5", "PENDING", reason="Priority"), r.row("6", "PENDING", reason=a_reason, submit=a_submit),
                     eligible=elig)
        r.sample(T0 + 21, r.row("5", "RUNNING", start=T0 + 20), r.row("6", "PENDING", reason=a_reason, submit=a_submit))
        r.line(T0 + 25, gp_line("5", "pool1", 2, 2, "6", "pool1", "InPool"))
        r.line(T0 + 25.001, slurm_line("5", "6"))
        return r

    def test_out_of_order_start_preempted_back_out(self):
        r = self.in_pool()
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["out-of-order"])
        self.assertIn("JobId=5 (pool1) started at", r.violations[0])

    def test_out_of_order_when_the_waiting_job_was_eligible(self):
        r = self.in_pool(a_reason="None", a_eligible=T0 + 12)
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["out-of-order"])

    def test_in_order_when_the_waiting_job_could_not_run(self):
        # Reason None but begin time after B's start: just released from
        # gpupool's hold, not yet tested by Slurm (seen after a restart).
        for kw in ({"a_reason": "GpuPoolQuota:pool1 2/2"}, {"a_reason": "BeginTime"},
                   {"a_submit": T0 + 19}, {"a_gpus": 2}, {"a_reason": "None", "a_eligible": T0 + 22}):
            r = self.in_pool(**kw)
            self.assertEqual(r.check(), 0, (kw, r.out))

    def test_in_pool_against_a_higher_tier(self):
        r = Run()
        r.job("5", "pool1", "normal"), r.job("6", "pool1", "low")
        r.sample(T0 + 24, r.row("5", "RUNNING", start=T0), r.row("6", "PENDING"))
        r.line(T0 + 25, gp_line("5", "pool1", 2, 2, "6", "pool1", "InPool"))
        r.line(T0 + 25.001, slurm_line("5", "6"))
        self.assertEqual(r.check(), 1)
        self.assertEqual(r.kinds(), ["bad-preemption", "bad-preemption"])

    def test_too_few_preemptions(self):
        r, lows = self.borrowed(2)
        self.assertEqual(r.check("--min-preemptions", "1"), 1)
        self.assertIn("only 0 preemptions (at least 1 wanted)", r.violations[0])


def rec(state, start=None, end=None, part="pool1"):
    return {"state": state, "start": start, "end": end, "part": part}


class Accounting(unittest.TestCase):
    def test_requeues_are_no_duplicates(self):
        recs = {"7": [rec("PREEMPTED", T0, T0 + 5), rec("REQUEUED", T0 + 6, T0 + 8), rec("COMPLETED", T0 + 20, T0 + 30)]}
        self.assertEqual(checker.judge_runs(recs), [])
        self.assertEqual(checker.judge_lost({"7": None}, recs, set()), [])

    def test_runs_that_overlap(self):
        recs = {"7": [rec("PREEMPTED", T0, T0 + 10), rec("COMPLETED", T0 + 5, T0 + 30)]}
        self.assertEqual(len(checker.judge_runs(recs)), 1)
        self.assertIn("ran twice at once", checker.judge_runs(recs)[0])

    def test_a_job_that_ran_again_after_it_completed(self):
        recs = {"7": [rec("COMPLETED", T0, T0 + 5), rec("COMPLETED", T0 + 6, T0 + 9)]}
        self.assertEqual(len(checker.judge_runs(recs)), 1)
        self.assertIn("has a COMPLETED record before its last one", checker.judge_runs(recs)[0])

    def test_lost_jobs(self):
        recs = {"8": [rec("PENDING")], "9": [rec("COMPLETED", T0, T0 + 1)], "10": [rec("CANCELLED")]}
        bad = checker.judge_lost({"7": 0, "8": 0, "9": 0, "10": 0}, recs, {"9"})
        self.assertEqual(bad, ["lost-job: JobId=7 has no accounting record",
                               "lost-job: JobId=8 last record is PENDING",
                               "lost-job: JobId=9 is still queued"])


class Parsing(unittest.TestCase):
    def test_gres(self):
        self.assertEqual(checker.gres_gpus("gres:gpu:2"), 2)
        self.assertEqual(checker.gres_gpus("gres/gpu:a100:3"), 3)
        self.assertEqual(checker.gres_gpus("gres:gpu"), 1)
        self.assertEqual(checker.gres_gpus("N/A"), 0)

    def test_conf(self):
        c = checker.parse_conf("PreemptiblePriority=150\nTier=a QOS=x,y Priority=200\nTier=b Priority=100\n"
                               "DefaultTier=a\nPool=p Quota=4 # four\n")
        self.assertEqual(c["qos_tier"], {"x": "a", "y": "a", "b": "b"})
        self.assertEqual(c["tiers"], {"a": (200, False), "b": (100, True)})
        self.assertEqual(c["quota"], {"p": 4})


if __name__ == "__main__":
    unittest.main()
