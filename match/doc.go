// Package match will hold pure record matching: Match (2-way) and NWay (2-4 legs), with no
// storage and no I/O. It is empty until the reconciliation issue lands; the engine registers
// no matcher step kind meanwhile, so a workflow using one is warned about and fails clearly.
package match
