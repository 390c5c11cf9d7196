//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"
)

// rows is MF8_ROWS in fp8_mv.cu: a row group's rows at T tokens.
func (k f8mvKnob) rows(T int) int {
	switch b := bucket(T); {
	case b == 1 && k.suf == "r2":
		return 2
	case b == 1:
		return 4
	case b <= 8:
		return 2
	}
	return 1
}

// mf8Kernel is the kernel (prefix mf8, mf8n or mf8g), grid and block of
// an FP8 product of rows rows at T tokens, and its split. The persistent
// kernels' grid is the blocks that fit the SMs at once by registers
// (KernelInfo's count, at most 16 blocks of 128 threads an SM), at most
// one a row block. s and sw at T = 2..8 (fp8_mvs.cu): mf8*_Ts or _Tsw,
// bw warps a block (8 unless w4 or w16) in groups of ks, R rows a group (s 2,
// sw 4; GLU half).
func (t *launcher) mf8Kernel(prefix string, rows, T int) (string, [3]int, [3]int, int, error) {
	k := t.tune.F8MV
	ks := k.ks
	if ks == 0 {
		ks = mf8Split(rows, t.dev.SMs)
	}
	block := [3]int{mvThreads, 1, 1}
	if k.st != "" && T >= 2 && T <= 8 {
		bw, R := k.bw, 2
		if bw == 0 {
			bw = 8
		}
		if k.st == "sw" {
			R = 4
		}
		if prefix == "mf8g" {
			R /= 2
		}
		per := R * (bw / ks)
		return fmt.Sprintf("%s_%d%s", prefix, T, k.st), [3]int{(rows + per - 1) / per, 1, 1}, [3]int{32 * bw, 1, 1}, ks, nil
	}
	name := fmt.Sprintf("%s_%d", prefix, bucket(T))
	grid := mqGrid(rows, k.rows(T), ks)
	if bucket(T) > 1 {
		name += k.mt
	}
	if bucket(T) == 1 {
		name += k.suf
		if k.p {
			name += "p"
			d := t.dev
			if t.ld != nil {
				d = t.ld
			}
			fn, err := d.fn(name)
			if err != nil {
				return "", grid, block, 0, err
			}
			regs, err := fn.Attribute(cu.NumRegs)
			if err != nil {
				return "", grid, block, 0, err
			}
			per := min(16, 65536/((regs*32+255)/256*256*mvThreads/32))
			if t.mf8g > 0 {
				per = t.mf8g
			} else {
				per *= t.dev.SMs
			}
			grid[0] = min(grid[0], max(1, per))
		}
	}
	return name, grid, block, ks, nil
}

// mf8matvec is matvec's FP8 product on mf8*.
func (t *launcher) mf8matvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	if norm != 0 {
		name, grid, block, ks, err := t.mf8Kernel("mf8n", w.rows, T)
		if err != nil {
			return err
		}
		return t.kernel(cat, w.bytes(), name, grid, block,
			ptr(out), i32(ldo), ptr(x), ptr(w.w), ptr(w.s), i32(w.rows), i32(w.cols), i32(T), ptr(norm), f32(t.eps), i32(ks))
	}
	name, grid, block, ks, err := t.mf8Kernel("mf8", w.rows, T)
	if err != nil {
		return err
	}
	return t.kernel(cat, w.bytes(), name, grid, block,
		ptr(out), i32(ldo), ptr(x), ptr(w.w), ptr(w.s), i32(w.rows), i32(w.cols), i32(T), i32(mode), i32(ks))
}

// mf8glu is glu's FP8 product on mf8g*.
func (t *launcher) mf8glu(out, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr, act int) error {
	name, grid, block, ks, err := t.mf8Kernel("mf8g", g.rows, T)
	if err != nil {
		return err
	}
	return t.kernel("gate_up", g.bytes()+u.bytes(), name, grid, block,
		ptr(out), i32(g.rows), ptr(x), ptr(g.w), ptr(g.s), ptr(u.w), ptr(u.s), i32(g.rows), i32(g.cols), i32(T), ptr(norm), f32(t.eps), i32(act), i32(ks))
}
