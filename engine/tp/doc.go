// Package tp joins the ranks of one tensor-parallel group: the Comm
// interface the sharded forward pass calls at each sync point, and the CPU
// allreduce algorithms behind it (ring, tree, oneshot, twoshot, compressed,
// and auto, which picks one per message size from a table measured on this
// machine).
//
// CPU ranks are goroutines sharing memory. Each rank publishes buffers on a
// "wire" (like CUDA IPC buffers a peer may read) and the ranks meet at a
// reusable barrier; every read of a peer's buffer is ordered by a barrier, so
// the algorithms are data-race free. Bytes are counted as an interconnect
// would carry them: a rank "receives" what it reads from a peer and "sends"
// what peers read from it.
//
// Every exact backend returns bitwise-identical results on every rank (each
// output element is reduced by exactly one rank, or in the same order by
// all), as tensor parallelism needs.
package tp
