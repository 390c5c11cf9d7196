// Package safetensors reads Hugging Face safetensors files: an 8-byte
// little-endian header length, a JSON header describing each tensor
// (dtype, shape, data_offsets), then the raw data. Open memory-maps one file;
// OpenDir opens a model directory, single-file or sharded through
// model.safetensors.index.json. Nothing in a file is trusted: the header
// length, offsets and shapes are checked against the bytes present, and
// every error names the file.
package safetensors
