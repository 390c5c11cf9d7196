package tp

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAllReduce times each backend at 1 MiB on 2 and 4 ranks:
// go test -run=^$ -bench=AllReduce ./engine/tp
func BenchmarkAllReduce(b *testing.B) {
	for _, backend := range []string{"ring", "tree", "oneshot", "twoshot", "compressed", "compressed-bf16"} {
		for _, ranks := range []int{2, 4} {
			b.Run(fmt.Sprintf("%s/%d", backend, ranks), func(b *testing.B) {
				g, err := NewGroup(backend, ranks, GroupOptions{})
				if err != nil {
					b.Fatal(err)
				}
				bufs := RandomInputs(ranks, 1<<18, 1)
				b.SetBytes(1 << 20)
				b.ResetTimer()
				if _, err := Measure(context.Background(), g, bufs, b.N); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
