// Package sysmem reads memory figures from /proc: how much this machine
// can give a new allocation without swapping (MemAvailable from
// /proc/meminfo), and this process's own resident set (/proc/self/status).
package sysmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MeminfoPath is where Available reads (a variable for tests).
var MeminfoPath = "/proc/meminfo"

// Available returns MemAvailable in bytes, or an error when the kernel
// does not report it (not Linux, or a kernel before 3.14).
func Available() (int64, error) {
	f, err := os.Open(MeminfoPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parse(bufio.NewScanner(f))
}

func parse(sc *bufio.Scanner) (int64, error) {
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: MemAvailable line %q is not \"N kB\"", MeminfoPath, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || n > 1<<53 {
			return 0, fmt.Errorf("%s: MemAvailable %q is not a size", MeminfoPath, f[0])
		}
		return n << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(MeminfoPath + " has no MemAvailable line")
}

// GiB formats a byte count for messages ("12.3 GiB").
func GiB(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
