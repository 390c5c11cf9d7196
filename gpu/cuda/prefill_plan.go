package cuda

// The cuBLAS prefill path's memory plan (prefill_cublas.go), computed on
// the host so that it is tested without a GPU.

// cbReserve is the device memory the row-major weight copy must leave free
// (for drafters, the runtime and cuBLAS itself): 4 GiB or a tenth of the
// device, whichever is more.
func cbReserve(total int64) int64 { return max(4<<30, total/10) }

// cbResident says whether a row-major copy of copyBytes of layer weights
// stays on the device (one untile per load) rather than being untiled into
// a scratch matrix before every product (per chunk): when free, after the
// target's own buffers, still leaves cbReserve(total).
func cbResident(copyBytes, free, total int64) bool {
	return copyBytes > 0 && copyBytes <= free-cbReserve(total)
}
