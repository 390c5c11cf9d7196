package tp

import "fmt"

// ValidateTP checks a tensor-parallel size against the model and the
// machine before anything is loaded: heads and KV heads must split evenly,
// and a CPU run gets at most one rank per core (cores <= 0 skips that check).
func ValidateTP(tp, heads, kvHeads, cores int) error {
	switch {
	case tp < 1:
		return fmt.Errorf("tp: tensor-parallel size %d: must be at least 1", tp)
	case tp > MaxRanks:
		return fmt.Errorf("tp: tensor-parallel size %d: at most %d ranks", tp, MaxRanks)
	case heads > 0 && heads%tp != 0:
		return fmt.Errorf("tp: tensor-parallel size %d does not divide the model's %d attention heads", tp, heads)
	case kvHeads > 0 && kvHeads%tp != 0:
		return fmt.Errorf("tp: tensor-parallel size %d does not divide the model's %d KV heads", tp, kvHeads)
	case cores > 0 && tp > cores:
		return fmt.Errorf("tp: tensor-parallel size %d is more than the %d CPU cores (one rank per core)", tp, cores)
	}
	return nil
}
