// Package planner is the what-if planner: before a run, it predicts what
// each TP size, allreduce backend, drafter, draft length k and chain/tree
// shape would give on this machine, from this machine's own measurements:
//
//   - the compute table: the target's forward pass per TP size, allreduce
//     backend and batch size, timed through the engine's own step path
//     (ComputeTable), so each backend's calls cost what they cost among
//     the ranks' compute;
//   - the allreduce table: time per call per backend, group size and
//     message size (AllReduceTable; a message is tokens x hidden x the
//     wire dtype's bytes, and a forward makes AllReducesPerLayer calls per
//     layer), imported from allreduce-bench (a GPU's, a published rig's):
//     where a backend's forward was not timed, a forward timed with
//     another backend stands in with its calls swapped for this one's;
//   - the draft table: a drafter's proposal time per k (DraftTable);
//   - on a device, the step's own auto table (Engine.StepAllReduceTable:
//     what a run with --allreduce auto picks from, calibrated with the
//     step's kernels), which resolves auto per message size and gives
//     each step backend's time per call to the allreduce table;
//   - the acceptance model per drafter and k: tokens per step, how often
//     the drafter proposes and how much, from the steps of earlier runs
//     (run logs), or a stated default when there are none (Acceptance);
//     and from the same runs, the loop's own time per step beyond the
//     draft and the forward (Book.Loop), which every predicted step adds.
//
// Predict combines them into the decode step, the verify step of k+1
// tokens, the draft time, tokens/s, the baseline, the break-even
// acceptance length and the verdict, each with a range (Range). The
// break-even, speedup and verdict arithmetic is engine/stepstats's, the
// same the live verdict uses. Measurements are cached per machine and
// build (Cache), with the allreduce cache's handling of a bad file.
package planner
