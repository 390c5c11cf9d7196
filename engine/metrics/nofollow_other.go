//go:build !unix

package metrics

// noFollow: O_EXCL alone refuses a planted link here.
const noFollow = 0
