// Package assets holds files embedded into the binary.
package assets

import _ "embed"

// Icon is the application icon (PNG, 256x256).
//
//go:embed icon.png
var Icon []byte
