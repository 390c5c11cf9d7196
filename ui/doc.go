// Package ui is the Fyne desktop panel: the chat pane, the run controls, the
// runs table with export, the model picker, and the slot where the live
// telemetry dashboard plugs in. It drives the engine only through the small
// Engine interface defined here, so it is built and tested against a fake
// (ui/fakeengine) and the real engine is wired in by the main package.
package ui
