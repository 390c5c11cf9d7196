package fynelocale

import "testing"

func TestNeedsLanguage(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"LANG": "C.UTF-8"}, true},
		{map[string]string{"LC_ALL": "C.utf8", "LANG": "en_US.UTF-8"}, true},
		{map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "de"}, false},
		{map[string]string{"LANG": "C"}, false}, // go-locale handles plain C
		{map[string]string{"LANG": "en_GB.UTF-8"}, false},
		{map[string]string{"LC_ALL": "fr_FR.UTF-8", "LANG": "C.UTF-8"}, false},
		{map[string]string{}, false},
	} {
		if got := needsLanguage(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.env, got, tc.want)
		}
	}
}
