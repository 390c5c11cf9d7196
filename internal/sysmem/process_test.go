package sysmem

import "testing"

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Process
	}{
		{"linux", "Name:\trs\nVmHWM:\t   52016 kB\nVmRSS:\t   51000 kB\nRssAnon:\t   13900 kB\nRssFile:\t   37100 kB\nRssShmem:\t       0 kB\nThreads:\t4\n",
			Process{RSS: 51000, HWM: 52016, Anon: 13900, File: 37100}},
		{"no rss breakdown", "VmHWM:\t10 kB\nVmRSS:\t9 kB\n", Process{RSS: 9, HWM: 10}},
		{"empty", "", Process{}},
		{"garbage", "VmRSS:\tlots kB\nRssAnon:", Process{}},
	} {
		if got := ParseStatus([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: ParseStatus = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestReadProcess(t *testing.T) {
	m, err := ReadProcess()
	if err != nil {
		t.Skipf("no %s here: %v", StatusPath, err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("ReadProcess() = %+v: want a resident set and a peak at least as large", m)
	}
}
