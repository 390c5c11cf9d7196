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
runs = []  # [first, last, times each instruction ran, samples]
for i, r in enumerate(data):
    e, s = f(r[ce]), f(r[cs])
    if e == 0 and s == 0: continue
    if runs and runs[-1][1] == i - 1 and e > 0 and abs(runs[-1][2] - e) < 1:
        runs[-1][1] = i; runs[-1][3] += s
    else:
        runs.append([i, i, e, s])
for a0, a1, e, s in runs:
    if s >= 0.01 * tot: print(f"{a0:5d}-{a1:5d} exec/instr {e:7.0f} instrs {a1-a0+1:5d} samples {s:6.0f} ({100*s/tot:4.1f}%)  {data[a0][csrc][:50]}")
