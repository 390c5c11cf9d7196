#include "textflag.h"

// func spinPause()
//
// One PAUSE: the spin-wait hint that yields the core's execution resources
// to its other hardware thread (and, in a virtual machine, to a sibling
// vCPU) while a pool thread polls for work.
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	RET
