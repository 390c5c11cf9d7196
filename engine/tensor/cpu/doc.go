// Package cpu holds the pure-Go float32 kernels of the reference engine:
// matrix products that dequantize weights row by row (F32, F16, BF16, Q8_0,
// Q4_0), RMSNorm, RoPE, attention and the SiLU-gated multiply. Activations
// are float32 row-major; weights stay in their file dtype.
package cpu
