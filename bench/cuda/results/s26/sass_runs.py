# Stall samples of one kernel launch per SASS instruction (`ncu --section SourceCounters`, then
# `ncu -i REP --page source --csv --print-source sass`, gzipped or not): contiguous runs of
# instructions executed the same number of times (by the same warps) are grouped, and every run
# holding at least 1% of the samples is printed with its share: where the warps' time goes.
# Usage: python3 sass_runs.py sass.csv[.gz]
import csv, gzip, sys
op = gzip.open if sys.argv[1].endswith(".gz") else open
rows = list(csv.reader(op(sys.argv[1], "rt")))
hi = next(i for i, r in enumerate(rows) if any("Sampl" in c for c in r)); hdr = rows[hi]; data = rows[hi + 1:]
ix = lambda n: next(i for i, h in enumerate(hdr) if h.startswith(n))
cs, ce, csrc = ix("Warp Stall Sampling (All"), ix("Instructions Executed"), ix("Source")
f = lambda x: float(x.replace(",", "") or 0)
tot = sum(f(r[cs]) for r in data)
print("samples", tot, "instructions", len(data))
runs = []  # (start, end, warps-class, samples, execsum)
for i, r in enumerate(data):
    e = f(r[ce]); s = f(r[cs])
    if e == 0 and s == 0: continue
    if runs and runs[-1][1] == i - 1 and e > 0 and abs(runs[-1][5] - e) < 1: 
        a = runs[-1]; runs[-1] = (a[0], i, a[2], a[3] + s, a[4] + e, a[5])
    else:
        runs.append((i, i, e, s, e, e))
for a in runs:
    if a[3] >= 0.01 * tot: print(f"{a[0]:5d}-{a[1]:5d} exec/instr {a[5]:7.0f} instrs {a[1]-a[0]+1:5d} samples {a[3]:6.0f} ({100*a[3]/tot:4.1f}%)  {data[a[0]][csrc][:50]}")
