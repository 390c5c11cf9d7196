// Package llama2c reads legacy (version 0) llama2.c checkpoints: a header of
// seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len; a negative vocab_size means the classifier is stored separately)
// followed by float32 weights in run.c's order. Q and K rows are in the
// interleaved RoPE layout. Open memory-maps the file; per-layer weights are
// handed out under their canonical (GGUF) names as views of the mapping.
package llama2c
