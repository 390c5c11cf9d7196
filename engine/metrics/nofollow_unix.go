//go:build unix

package metrics

import "syscall"

// noFollow makes an open fail on a symlink in the last path element.
const noFollow = syscall.O_NOFOLLOW
