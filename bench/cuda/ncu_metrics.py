# ncu CSV (--csv --metrics ...): per kernel name and grid, the mean of every metric over its launches,
# one line per metric (stall ratios: warp cycles a warp spent in that state per issued instruction).
import csv, sys, collections
v = collections.defaultdict(lambda: collections.defaultdict(list))
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    v[(r["Kernel Name"], r["Grid Size"])][r["Metric Name"]].append(float(r["Metric Value"].replace(",", "")))
for k, ms in v.items():
    print(f"{k[0]} {k[1]} ({len(next(iter(ms.values())))} launches)")
    for name, xs in sorted(ms.items()):
        m = sum(xs) / len(xs)
        if "stalled" in name and m < 0.05: continue
        print(f"  {name.replace('smsp__average_warps_issue_stalled_', 'stall ').replace('_per_issue_active.ratio', ''):60s} {m:12.2f}")
