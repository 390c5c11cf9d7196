package cpu

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

// The references below decode one weight at a time from its index, as the
// ggml block layouts are written down (ggml-common.h), not by the loops of
// dequantQ4K/dequantQ6K.

func refQ4K(blk []byte, i int) float32 {
	d := tensor.F16ToF32(binary.LittleEndian.Uint16(blk))
	dmin := tensor.F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	sc6 := blk[4:16]
	j := i / 32 // sub-block: 6-bit scale and min
	var sc, m byte
	if j < 4 {
		sc, m = sc6[j]&63, sc6[j+4]&63
	} else { // low 4 bits in bytes 8..11, top 2 bits in the top of bytes 0..7
		sc = sc6[j+4]&15 | (sc6[j-4]>>6)<<4
		m = sc6[j+4]>>4 | (sc6[j]>>6)<<4
	}
	b := blk[16+(i/64)*32+i%32] // 64 weights per 32 bytes: low nibbles, then high
	q := b & 15
	if i%64 >= 32 {
		q = b >> 4
	}
	return float32(d*float32(sc)*float32(q)) - dmin*float32(m)
}

// refQ5K: Q4_K's scales and nibbles, and bit (i/32) of qh[i%32] as the
// fifth bit.
func refQ5K(blk []byte, i int) float32 {
	d := tensor.F16ToF32(binary.LittleEndian.Uint16(blk))
	dmin := tensor.F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	sc6 := blk[4:16]
	j := i / 32
	var sc, m byte
	if j < 4 {
		sc, m = sc6[j]&63, sc6[j+4]&63
	} else {
		sc = sc6[j+4]&15 | (sc6[j-4]>>6)<<4
		m = sc6[j+4]>>4 | (sc6[j]>>6)<<4
	}
	b := blk[48+(i/64)*32+i%32]
	q := b & 15
	if i%64 >= 32 {
		q = b >> 4
	}
	q |= (blk[16+i%32] >> j & 1) << 4
	return float32(d*float32(sc)*float32(q)) - dmin*float32(m)
}

func refQ6K(blk []byte, i int) float32 {
	d := tensor.F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	half, r := i/128, i%128 // two halves of 128
	quarter, l := r/32, r%32
	lo := blk[half*64+l+(quarter%2)*32] // ql: quarters 0,1 low nibbles of 64 bytes, 2,3 high
	if quarter >= 2 {
		lo >>= 4
	}
	hi := blk[128+half*32+l] >> (2 * quarter) & 3 // qh: 2 bits per quarter
	q := int(lo&15|hi<<4) - 32
	sc := int8(blk[192+half*8+quarter*2+l/16]) // one scale per 16 weights
	return d * float32(sc) * float32(q)
}

func TestDequantKQuants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tc := range []struct {
		dt  tensor.DType
		ref func([]byte, int) float32
	}{{tensor.Q4_K, refQ4K}, {tensor.Q5_K, refQ5K}, {tensor.Q6_K, refQ6K}} {
		for trial := range 50 {
			blk := make([]byte, 2*tc.dt.BlockBytes()) // two blocks in a row
			for i := range blk {
				blk[i] = byte(rng.Uint32())
			}
			for b := range 2 { // sane f16 scales (random bits can be NaN or huge)
				o := b * tc.dt.BlockBytes()
				if tc.dt != tensor.Q6_K {
					binary.LittleEndian.PutUint16(blk[o:], tensor.F32ToF16(rng.Float32()/64))
					binary.LittleEndian.PutUint16(blk[o+2:], tensor.F32ToF16(rng.Float32()/64))
				} else {
					binary.LittleEndian.PutUint16(blk[o+208:], tensor.F32ToF16(rng.Float32()/64))
				}
			}
			got := make([]float32, 512)
			DequantRow(got, &tensor.Tensor{Name: "w", DType: tc.dt, Shape: []int{1, 512}, Data: blk}, 0)
			for i, g := range got {
				b := i / 256
				want := tc.ref(blk[b*tc.dt.BlockBytes():], i%256)
				if g != want {
					t.Fatalf("%v trial %d weight %d: %g, want %g", tc.dt, trial, i, g, want)
				}
			}
		}
	}
}
