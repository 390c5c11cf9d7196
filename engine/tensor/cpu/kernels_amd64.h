// Shared by the assembly files of package cpu.

// HSUM8 reduces the eight lanes a of Y0 to X0[0] =
// ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)), the order in which the
// four-row kernels (VHADDPS of four accumulators, then low + high half)
// reduce each of theirs: a result never depends on which kernel computed it.
// Clobbers X1.
#define HSUM8 \
	VHADDPS Y0, Y0, Y0; \
	VHADDPS Y0, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDSS X1, X0, X0
