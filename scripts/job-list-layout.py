# gdb -p PID -batch -x scripts/job-list-layout.py
#
# Where slurmctld's job_list nodes and job records lie in its heap (Slurm
# 22.05's list.c: a list's head at offset 8, a node is {data, next}; both
# allocated by xmalloc, which puts 16 bytes before what it returns).
# Every scheduling cycle walks job_list (backfill: several times per job it
# tests); a constant stride is what the hardware prefetcher follows.
# Printed:
#   - for the nodes, the records, and both in walk order: the most common
#     step and its share, and the share of steps forward within 4 KiB;
#   - the heap chunks from each of the last 300 job records to the next
#     (glibc chunk headers), most common sequences first: "SIZE:what",
#     what = JOB, NODE, x<len>:<text> (an xmalloc'd block and the text it
#     starts with), ?:<bytes> (another block), F (a free chunk).  What one
#     submit allocates, and what other threads left between.
import collections
import struct

import gdb

inf = gdb.selected_inferior()


def rd(addr, n):
    return bytes(inf.read_memory(addr, n))


def q(addr):
    return struct.unpack("<Q", rd(addr, 8))[0]


jl = q(int(gdb.parse_and_eval("(unsigned long)&job_list")))
nodes, jobs = [], []
n = q(jl + 8)
while n:
    d, nx = struct.unpack("<QQ", rd(n, 16))
    nodes.append(n)
    jobs.append(d)
    n = nx


def stats(name, a):
    dif = [a[i + 1] - a[i] for i in range(len(a) - 1)]
    c = collections.Counter(dif)
    mode, cnt = c.most_common(1)[0] if c else (0, 0)
    fwd = sum(1 for x in dif if 0 < x <= 4096)
    top = ", ".join("%d:%d" % (k, v) for k, v in c.most_common(4))
    print("%s: n=%d mode_stride=%d (%.1f%%) fwd<=4KiB %.1f%% top %s" % (
        name, len(a), mode, 100.0 * cnt / max(1, len(dif)),
        100.0 * fwd / max(1, len(dif)), top))


print("jobs %d" % len(nodes))
stats("list nodes ", nodes)
stats("job records", jobs)
seq = []
for a, b in zip(nodes, jobs):
    seq += [a, b]
stats("node+job   ", seq)


# Which malloc arena each lies in: the main arena is the [heap] mapping;
# every other arena is a 64 MiB-aligned mmap'd heap (glibc HEAP_MAX_SIZE).
# Walks that hop between arenas lose the prefetcher's stride.
def arenas():
    regions = []
    with open("/proc/%d/maps" % inf.pid) as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            regions.append((lo, hi, parts[5] if len(parts) > 5 else ""))
    return regions


regions = arenas()


def arena_of(addr):
    for lo, hi, name in regions:
        if lo <= addr < hi:
            return name if name == "[heap]" else "arena@%x" % (addr & ~(64 * 2**20 - 1))
    return "?"


def arena_stats(name, a):
    where = [arena_of(x) for x in a]
    c = collections.Counter(where)
    hops = sum(1 for i in range(len(where) - 1) if where[i] != where[i + 1])
    print("arenas %s: %d arenas, %d hops between arenas; %s" % (
        name, len(c), hops, ", ".join("%s:%d" % kv for kv in c.most_common(6))))


arena_stats("list nodes ", nodes)
arena_stats("job records", jobs)
print("arenas in process: %d non-main heaps" % len({
    lo & ~(64 * 2**20 - 1) for lo, hi, name in regions
    if name == "" and (lo & (64 * 2**20 - 1)) == 0 and hi - lo <= 64 * 2**20}))

# What a walk of job_list costs in pages: each page it steps onto that is
# not the one it is on may be a TLB miss.
pages = [x >> 12 for x in seq]
print("pages: %d distinct 4 KiB pages, %d page changes in a walk of %d jobs" % (
    len(set(pages)), sum(1 for i in range(len(pages) - 1) if pages[i] != pages[i + 1]),
    len(jobs)))

nodeset, jobset = set(nodes), set(jobs)


def what(p, size):
    if p + 16 in nodeset:
        return "NODE"
    if p + 16 in jobset:
        return "JOB"
    b = rd(p, min(size - 8, 40))
    if len(b) >= 16 and struct.unpack("<Q", b[0:8])[0] == 0x42:
        txt = "".join(chr(c) if 32 <= c < 127 else "." for c in b[16:40])
        return "x%d:%s" % (struct.unpack("<Q", b[8:16])[0], txt.rstrip(".")[:16])
    return "?:" + "".join(chr(c) if 32 <= c < 127 else "." for c in b[0:16])


seqs = collections.Counter()
for i in range(max(0, len(jobs) - 300), len(jobs) - 1):
    a, b = jobs[i], jobs[i + 1]
    if not 0 < b - a < 16384:
        seqs["(next record not within 16 KiB after)"] += 1
        continue
    c, items = a - 32, []
    while c < b - 32:
        size = q(c + 8) & ~7
        if size < 32 or size > 65536:
            items.append("?")
            break
        inuse = q(c + size + 8) & 1
        items.append("%d:%s" % (size, what(c + 16, size) if inuse else "F"))
        c += size
    seqs[" ".join(items)] += 1
for k, v in seqs.most_common(6):
    print("chunks %3d x %s" % (v, k[:2000]))
gdb.execute("detach")
