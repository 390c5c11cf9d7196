// Package panel is rigscope's desktop window as a command: the panel's
// flags (what `rigscope` started without a command parses) and its wiring
// to the engine, the allreduce backends, the GPU sampler and the OpenAI API
// server its Server switch runs. The window itself is package ui.
//
// Fyne is only compiled in builds without the headless tag; in a headless
// build Open is nil and the package imports nothing.
package panel
