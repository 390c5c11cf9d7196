// Package cudabench is `rigscope cuda-bench` (cuda builds only): decode
// tokens/s of synthetic Llama shapes on the GPU against the memory
// bandwidth bound, the cost of a verify step, and time per kernel kind.
package cudabench
