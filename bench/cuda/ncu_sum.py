# ncu CSV (--csv --metrics gpu__time_duration.sum[,dram__bytes_read.sum]): per kernel name and grid,
# launches, mean/p50/min duration (us) and, where read, mean DRAM bytes read and GB/s.
import csv, sys, collections
t = collections.defaultdict(list); b = collections.defaultdict(list)
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1, "msecond": 1e3, "ms": 1e3, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    k = (r["Kernel Name"], r["Grid Size"]); v = float(r["Metric Value"].replace(",", "")) * scale.get(r["Metric Unit"], 1)
    if r["Metric Name"] == "gpu__time_duration.sum": t[k].append(v)
    elif r["Metric Name"] == "dram__bytes_read.sum": b[k].append(v)
for k, v in sorted(t.items(), key=lambda kv: -sum(kv[1])):
    v = sorted(v); m = sum(v) / len(v); s = f"{k[0]:28s} {k[1]:14s} n {len(v):4d}  mean {m:8.2f}  p50 {v[len(v)//2]:8.2f}  min {v[0]:8.2f} us"
    if b[k]: mb = sum(b[k]) / len(b[k]) / 1e6; s += f"  {mb:8.2f} MB  {mb / m * 1e3:7.0f} GB/s"
    print(s)
