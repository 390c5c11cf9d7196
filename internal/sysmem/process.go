package sysmem

import (
	"os"
	"strconv"
	"strings"
)

// StatusPath is where ReadProcess reads (a variable for tests).
var StatusPath = "/proc/self/status"

// Process is this process's memory as /proc/self/status reports it, in
// KiB: resident set, its peak (high-water mark), and the resident set's
// anonymous, file-backed and shared parts.
type Process struct{ RSS, HWM, Anon, File, Shmem int64 }

// ReadProcess reads VmRSS, VmHWM, RssAnon, RssFile and RssShmem; fields the
// kernel does not report stay 0.
func ReadProcess() (Process, error) {
	b, err := os.ReadFile(StatusPath)
	if err != nil {
		return Process{}, err
	}
	return ParseStatus(b), nil
}

// ParseStatus reads the memory fields of a /proc/PID/status text; fields it
// lacks, or that are not numbers, stay 0.
func ParseStatus(b []byte) Process {
	var m Process
	fields := map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM, "RssAnon:": &m.Anon, "RssFile:": &m.File, "RssShmem:": &m.Shmem}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			if p, ok := fields[f[0]]; ok {
				*p, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return m
}
