# sourced by f1.sh/f2.sh: unpack the check binary and the sm_90 cubin (no driver JIT of the PTX)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
[ -x /tmp/cc ] || { xz -dc carry/cc.test.xz > /tmp/cc && chmod +x /tmp/cc; }
[ -f /tmp/k90.cubin ] || xz -dc carry/k90.cubin.xz > /tmp/k90.cubin
export RIGSCOPE_CUDA_PTX=/tmp/k90.cubin
run() { n=$1; s=$2; shift 2; t0=$(date +%s); timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1; r=$?; echo "exit status $r" >> "$O/$n.txt"; echo "$n exit $r in $(( $(date +%s) - t0 )) s" | tee -a "$O/summary.txt"; }
