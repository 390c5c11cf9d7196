package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"rigscope/engine/loader"
	"rigscope/engine/spec"
)

// DeviceTarget builds a target on an accelerator: tp ranks joined by the
// named allreduce backend, with a KV cache of ctxLen positions. The CPU
// target is built in; a -tags cuda build registers "cuda" (gpu/cuda).
type DeviceTarget func(src loader.Source, tp int, allreduce string, ctxLen int) (spec.Target, error)

var (
	devicesMu sync.Mutex
	devices   = map[string]DeviceTarget{}
)

// RegisterDevice makes a device selectable with Options.Device. It is called
// from main (build-tagged files), so the engine never imports gpu/.
func RegisterDevice(name string, f DeviceTarget) {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	devices[name] = f
}

// Devices lists the registered device names plus "cpu".
func Devices() []string {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	names := []string{"cpu"}
	for n := range devices {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

func deviceTarget(name string) (DeviceTarget, error) {
	devicesMu.Lock()
	f, ok := devices[name]
	devicesMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("device %q is not in this build (devices: %s); GPU devices need a -tags cuda build", name, strings.Join(Devices(), ", "))
	}
	return f, nil
}
