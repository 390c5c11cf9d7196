// Package gguf reads and writes GGUF model files (versions 2 and 3), the
// format of llama.cpp: a header, typed key/value metadata, a table of tensor
// descriptions, and an aligned data region.
//
// Open memory-maps a file read-only; tensors handed out by File.Tensor alias
// the mapping and stay valid until Close. Parse works over bytes in memory.
// Nothing in the file is trusted: counts, lengths, offsets and shapes are
// checked against the bytes actually present, and every error names the file.
//
// Write produces a GGUF v3 file from metadata and tensors; tests, fuzz seeds
// and the synthetic-model exporter use it.
package gguf
