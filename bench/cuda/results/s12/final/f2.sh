. carry/common.sh
run arch 150 -arch carry/arch -checks arch,moe,presets -presets tiny-mla,deepseek-v3,qwen3-8b,qwen3-30b-a3b,mixtral-8x7b
RIGSCOPE_CUDA_RANKDEVS=each run arch-each 60 -arch carry/arch -checks arch
run quant 150 -checks quant,fp8 -parts kernels,mma,bandwidth
