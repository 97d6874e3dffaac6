# gdb -p PID -batch -x layout.py : job_list's layout (list nodes, job records)
import gdb, struct, collections
inf = gdb.selected_inferior()
def rd(addr, n): return bytes(inf.read_memory(addr, n))
jl = int(gdb.parse_and_eval("*(unsigned long *)&job_list"))
head = struct.unpack("<Q", rd(jl + 8, 8))[0]
nodes, jobs = [], []
n = head
while n:
    d, nx = struct.unpack("<QQ", rd(n, 16))
    nodes.append(n); jobs.append(d); n = nx
def stats(name, a):
    dif = [a[i+1] - a[i] for i in range(len(a) - 1)]
    c = collections.Counter(dif)
    mode, cnt = c.most_common(1)[0] if c else (0, 0)
    fwd = sum(1 for x in dif if 0 < x <= 4096)
    top = ", ".join("%d:%d" % (k, v) for k, v in c.most_common(4))
    print("%s: n=%d mode_stride=%d (%.1f%%) fwd<=4KiB %.1f%% top %s" % (
        name, len(a), mode, 100.0 * cnt / max(1, len(dif)), 100.0 * fwd / max(1, len(dif)), top))
print("jobs %d" % len(nodes))
stats("list nodes ", nodes)
stats("job records", jobs)
# interleaved walk order: node, its job, next node, ...
seq = []
for a, b in zip(nodes, jobs): seq += [a, b]
stats("node+job   ", seq)
gdb.execute("detach")
