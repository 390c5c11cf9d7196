// Package widgets holds the small chart widgets the dashboard draws with
// (Fyne has no chart widget): Sparkline, LineChart (linear or log-log, with
// vertical markers), BarHistogram (series side by side), StackedBars and
// Matrix (a coloured text grid). Each embeds widget.BaseWidget and returns a
// small renderer that reuses canvas.Line, canvas.Rectangle and canvas.Text
// objects from pools, so a chart redrawn at 15 Hz allocates little and its
// memory stays flat. Data setters copy their input; call them on the Fyne
// goroutine (inside fyne.Do) like any widget update.
package widgets
