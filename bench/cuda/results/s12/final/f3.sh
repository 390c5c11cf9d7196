set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/rigscope-cuda.gz > /tmp/rc && chmod +x /tmp/rc
xz -dc carry/k90.cubin.xz > /tmp/k90.cubin; export RIGSCOPE_CUDA_PTX=/tmp/k90.cubin
IDS=$(seq -s, 3 386)
for r in 1 2; do
  t0=$(date +%s); timeout 80 /tmp/rc cuda-bench --shapes llama-8b --ctx 512 > "$O/bench$r.txt" 2>&1; echo "bench$r $? $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
  t0=$(date +%s); timeout 80 /tmp/rc generate --device cuda --model "synthetic:llama-8b?dtype=bf16" --ctx 1024 --prompt-ids "$IDS" --max-tokens 257 --ignore-eos --json > "$O/generate$r.json" 2> "$O/generate$r.err"; echo "generate$r $? $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
done
t0=$(date +%s); RIGSCOPE_MODELS=carry/m2 timeout 60 /tmp/rc bench --device cuda --drafters model --k 2,4 --tree 0 > "$O/spec.txt" 2>&1; echo "spec $? $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
t0=$(date +%s); RIGSCOPE_MODELS=carry/m2 timeout 50 /tmp/rc bench --device cpu --drafters model --k 2,4 --tree 0 > "$O/spec-cpu.txt" 2>&1; echo "spec-cpu $? $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
cat "$O/summary.txt"
