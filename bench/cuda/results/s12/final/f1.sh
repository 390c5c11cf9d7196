. carry/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$O/gpu.txt" 2>&1
run eagle 100 -models carry/m -checks eagle
run tp 100 -models carry/m -checks tp,allreduce
run kernels 120 -models carry/m -checks kernels,kv,kvbench,sample
