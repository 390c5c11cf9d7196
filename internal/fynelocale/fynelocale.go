// Package fynelocale keeps Fyne from logging "Error parsing user locale C"
// at start-up on systems whose locale is C.UTF-8 (the default of Debian
// images and containers): Fyne's lang package reads the locale while it
// initializes and cannot parse the "C" that go-locale makes of C.UTF-8.
// Importing this package (for its init) sets LANGUAGE=en in that case,
// which go-locale then reports instead; glibc ignores LANGUAGE under a C
// locale, so child processes see no change.
//
// It works by initialization order: Go initializes packages in import-path
// order as soon as their imports are done, and Fyne's lang package imports
// text/template, which sorts after this package's path.
package fynelocale

import (
	"os"
	"strings"
)

func init() {
	if needsLanguage(os.Getenv) {
		os.Setenv("LANGUAGE", "en")
	}
}

// needsLanguage: LANGUAGE is unset and the locale that go-locale reads
// (the first of LC_ALL, LC_MESSAGES, LANG that is set) is C.something.
func needsLanguage(getenv func(string) string) bool {
	if getenv("LANGUAGE") != "" {
		return false
	}
	for _, env := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(env); v != "" {
			return strings.HasPrefix(v, "C.")
		}
	}
	return false
}
