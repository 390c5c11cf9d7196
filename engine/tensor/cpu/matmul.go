package cpu

import (
	"sync"
	"unsafe"

	"rigscope/engine/tensor"
)

// MatMulJob is one weight of a fused matrix product over a shared input:
// Out (T, W.Rows()) with row t at Out[t*OutStride:] gets x · Wᵀ.
type MatMulJob struct {
	Out       []float32
	OutStride int
	W         *tensor.Tensor
}

// MatMul computes out = x · wᵀ for T rows of x.
//
//	x   (T, cols)   float32
//	w   (rows, cols) any supported dtype, read once for all T rows
//	out (T, rows)   float32; row t starts at t*outStride
//
// outStride lets a vocab-parallel shard write its columns of a wider output.
// For Q8_0 weights x is quantized to int8 blocks of 32 (one float32 scale
// each), for Q4_K, Q5_K and Q6_K weights to Q8_K (blocks of 256, kquant.go),
// and the products are integer, as llama.cpp does; every other dtype is
// computed in float32.
//
// Each output element is bit-identical whatever T and the thread count:
// each token row is quantized on its own, and the kernels that handle
// several rows or tokens at once accumulate and reduce every (row, token)
// pair in the one-row kernel's order (TestMatMulBatchInvariant). A batch
// of k+1 tokens (speculative verification) thus reproduces k+1 decode
// steps exactly.
func (p *Pool) MatMul(out []float32, outStride int, x []float32, T int, w *tensor.Tensor) {
	p.MatMulFused(x, T, MatMulJob{out, outStride, w})
}

// MatMulFused runs up to four matrix products that share the input x
// (T, cols) (Q, K and V; gate and up) as one parallel pass over the rows of
// all of them: x is quantized once and the threads meet once.
func (p *Pool) MatMulFused(x []float32, T int, jobs ...MatMulJob) {
	if len(jobs) == 0 || T == 0 {
		return
	}
	if p == nil {
		p = &Pool{Threads: 1}
	}
	p.mmOnce.Do(func() { p.mm = &matmul{pool: p}; p.mm.fn, p.mm.quantFn = p.mm.chunk, p.mm.quant })
	m := p.mm
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setup(x, T, jobs)
	th := p.threads()
	var grain, items int
	if T < 4 {
		// Decode: row chunks of a multiple of 16 (whole cache lines of out).
		grain = max(16, (m.rows/(4*th)+15)&^15)
		items = m.rows
	} else {
		// Prefill: (16-row chunk, token block) tiles, token blocks outer so
		// the threads share the activations in cache.
		m.rowChunks = (m.rows + tileRows - 1) / tileRows
		items = m.rowChunks * m.tokBlocks
		grain = 1
	}
	m.tiled = T >= 4
	p.Parallel(items, grain, m.fn)
	m.x, m.jobs = nil, m.jobs[:0]
}

const (
	tileRows  = 16        // weight rows per prefill tile (about 9 KB of Q8_0 at 512 cols)
	tileBytes = 512 << 10 // activation bytes per prefill token block
)

// matmul is the state of the product in flight; one per Pool, reused.
type matmul struct {
	pool    *Pool
	mu      sync.Mutex
	fn      func(lo, hi, worker int) // chunk and quant as method values, made once
	quantFn func(lo, hi, worker int)

	x         []float32 // (T, cols)
	T, cols   int
	jobs      []MatMulJob
	starts    []int // first global row of each job, then the total
	rows      int
	q8        bool
	kq        bool      // some weight is a k-quant: x is also quantized to Q8_K
	q8kAll    q8K       // (T, cols) x as Q8_K, when kq
	q8k       []q8K     // (T) views of q8kAll's rows
	qx        []int8    // (T, cols) quantized x, when some weight is Q8_0
	dx        []float32 // (T, cols/32) its scales
	tiled     bool
	tokBlock  int // tokens per prefill block, a multiple of 4
	tokBlocks int
	rowChunks int
	rowBuf    [][]float32 // per worker: tileRows dequantized rows
	grouped   bool        // prefill with AVX2: groups holds the activations
	xc        []int32     // decode with VNNI: (T, cols/4) lane corrections of qx
	groups    q8Groups
}

func (m *matmul) setup(x []float32, T int, jobs []MatMulJob) {
	m.cols = jobs[0].W.Cols()
	m.x, m.T = x[:T*m.cols], T
	m.jobs = append(m.jobs[:0], jobs...)
	m.starts = m.starts[:0]
	m.rows, m.q8, m.kq = 0, false, false
	for _, j := range jobs {
		m.starts = append(m.starts, m.rows)
		m.rows += j.W.Rows()
		if j.W.DType == tensor.Q8_0 {
			m.q8 = true
		}
		if _, ok := kquantKindOf(j.W.DType); ok {
			m.kq = true
		}
	}
	m.starts = append(m.starts, m.rows)
	th := m.pool.threads()
	if len(m.rowBuf) < th {
		m.rowBuf = make([][]float32, th)
	}
	m.tokBlock = max(4, min(T, tileBytes/(4*m.cols))&^3)
	m.tokBlocks = (T + m.tokBlock - 1) / m.tokBlock
	if m.q8 {
		nb := m.cols / 32
		if cap(m.qx) < T*m.cols {
			m.qx = make([]int8, T*m.cols)
			m.dx = make([]float32, T*nb)
		}
		m.qx, m.dx = m.qx[:T*m.cols], m.dx[:T*nb]
		cols := m.cols
		m.grouped = hasAVX2 && T >= 4
		if m.grouped {
			m.groups.size(T, nb)
		} else if hasVNNI {
			if cap(m.xc) < T*cols/4 {
				m.xc = make([]int32, T*cols/4)
			}
			m.xc = m.xc[:T*cols/4]
		}
	}
	if m.kq {
		if len(m.q8k) < T {
			m.q8k = append(m.q8k, make([]q8K, T-len(m.q8k))...)
		}
		m.q8kAll.size(T * m.cols)
		for t := range T {
			m.q8k[t] = m.q8kAll.view(t, t+1, m.cols)
		}
	}
	if m.q8 || m.kq {
		if T*m.cols < 1<<14 {
			m.quant(0, T, 0)
		} else {
			m.pool.Parallel(T, max(1, 4096/m.cols), m.quantFn)
		}
	}
}

// quant quantizes tokens [lo, hi) of x into qx and dx (and the layout the
// kernel in use reads).
func (m *matmul) quant(lo, hi, _ int) {
	cols, nb := m.cols, m.cols/32
	for t := lo; t < hi; t++ {
		if m.kq {
			quantizeRowQ8K(&m.q8k[t], m.x[t*cols:(t+1)*cols])
		}
		if !m.q8 {
			continue
		}
		q, d := m.qx[t*cols:(t+1)*cols], m.dx[t*nb:(t+1)*nb]
		quantizeRowQ8(q, d, m.x[t*cols:(t+1)*cols])
		if m.grouped {
			m.groups.put(t, q, d)
		} else if hasVNNI {
			laneCorrections(m.xc[t*cols/4:(t+1)*cols/4], q)
		}
	}
}

// chunk computes items [lo, hi): global rows (decode) or tiles (prefill).
func (m *matmul) chunk(lo, hi, worker int) {
	if !m.tiled {
		m.rowRange(lo, hi, 0, m.T, worker)
		return
	}
	for i := lo; i < hi; i++ {
		tb, rc := i/m.rowChunks, i%m.rowChunks
		t0 := tb * m.tokBlock
		m.rowRange(rc*tileRows, min((rc+1)*tileRows, m.rows), t0, min(t0+m.tokBlock, m.T), worker)
	}
}

// rowRange computes global rows [r0, r1) for tokens [t0, t1), splitting the
// range at job boundaries.
func (m *matmul) rowRange(r0, r1, t0, t1, worker int) {
	for j := range m.jobs {
		lo, hi := max(r0, m.starts[j]), min(r1, m.starts[j+1])
		if lo < hi {
			m.jobRows(&m.jobs[j], lo-m.starts[j], hi-m.starts[j], t0, t1, worker)
		}
	}
}

func (m *matmul) jobRows(j *MatMulJob, r0, r1, t0, t1, worker int) {
	w, out, os, cols := j.W, j.Out, j.OutStride, m.cols
	switch w.DType {
	case tensor.Q8_0:
		nb := cols / 32
		ws := w.Stride
		if ws == 0 {
			ws = w.RowBytes()
		}
		if t1-t0 < 4 {
			for t := t0; t < t1; t++ {
				if hasAVX2 && !m.grouped {
					var xc []int32 // lane corrections, with VNNI
					if hasVNNI {
						xc = m.xc[t*cols/4 : (t+1)*cols/4]
					}
					dotQ8Q8RowsC(out[t*os+r0:t*os+r1], w.Data[r0*ws:], ws, m.qx[t*cols:(t+1)*cols], xc, m.dx[t*nb:(t+1)*nb])
					continue
				}
				dotQ8Q8Rows(out[t*os+r0:t*os+r1], w.Data[r0*ws:], ws, m.qx[t*cols:(t+1)*cols], m.dx[t*nb:(t+1)*nb])
			}
			return
		}
		t := t0
		for ; m.grouped && t+4 <= t1; t += 4 {
			xq, xc, dx := m.groups.group(t/4, nb)
			dotQ8Q8x4RowsG(out[t*os+r0:], os, r1-r0, w.Data[r0*ws:], ws, xq, xc, dx)
		}
		for ; t+4 <= t1; t += 4 {
			dotQ8Q8x4Rows(out[t*os+r0:], os, r1-r0, w.Data[r0*ws:], ws, m.qx[t*cols:], cols, m.dx[t*nb:(t+4)*nb])
		}
		for ; t < t1; t++ {
			for r := r0; r < r1; r++ {
				out[t*os+r] = dotQ8Q8(w.Row(r), m.qx[t*cols:(t+1)*cols], m.dx[t*nb:(t+1)*nb])
			}
		}
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		kind, _ := kquantKindOf(w.DType)
		ws := w.Stride
		if ws == 0 {
			ws = w.RowBytes()
		}
		t := t0
		for ; t+4 <= t1; t += 4 {
			x := m.q8kAll.view(t, t+4, cols)
			if !dotKQuantRowsX4(out[t*os+r0:], os, r1-r0, w.Data[r0*ws:], ws, kind, &x, cols) {
				break
			}
		}
		for ; t < t1; t++ {
			dotKQuantRows(out[t*os+r0:t*os+r1], w.Data[r0*ws:], ws, kind, &m.q8k[t])
		}
	case tensor.F32:
		for r := r0; r < r1; r++ {
			wr := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w.Row(r)))), cols)
			for t := t0; t < t1; t++ {
				out[t*os+r] = dot(m.x[t*cols:(t+1)*cols], wr)
			}
		}
	case tensor.F16:
		if t1-t0 == 1 {
			x := m.x[t0*cols : (t0+1)*cols]
			for r := r0; r < r1; r++ {
				out[t0*os+r] = dotF16(w.Row(r), x)
			}
			return
		}
		fallthrough
	default:
		// Dequantize up to tileRows rows once, then reuse them for every token.
		buf := m.rowBuf[worker]
		if len(buf) < tileRows*cols {
			buf = make([]float32, tileRows*cols)
			m.rowBuf[worker] = buf
		}
		for rb := r0; rb < r1; rb += tileRows {
			re := min(rb+tileRows, r1)
			for r := rb; r < re; r++ {
				DequantRow(buf[(r-rb)*cols:(r-rb+1)*cols], w, r)
			}
			t := t0
			for ; t+2 <= t1; t += 2 {
				dotF32x2Rows(out[t*os+rb:], os, re-rb, buf[:(re-rb)*cols], m.x[t*cols:(t+2)*cols], cols)
			}
			for ; t < t1; t++ {
				x := m.x[t*cols : (t+1)*cols]
				for r := rb; r < re; r++ {
					out[t*os+r] = dot(x, buf[(r-rb)*cols:(r-rb+1)*cols])
				}
			}
		}
	}
}
