//go:build headless

package panel

import "context"

// Open is nil: a headless build has no panel.
var Open func(ctx context.Context, args []string) error
