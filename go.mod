module rigscope

go 1.26.8

require (
	fyne.io/fyne/v2 v2.7.1 // indirect
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/dlclark/regexp2 v1.11.5 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/sys v0.38.0 // indirect
	gorgonia.org/cu v0.9.6 // indirect
)
