// Package leaderlabel marks the pod that holds the manager's leader lease with a label, so that
// a Service can send DNS traffic to the one replica whose embedded zone store is current (only
// the leader writes it; docs/architecture.md, "Deployment").
//
// What it owns: setting the label when this replica becomes leader, removing it when the
// manager stops, and clearing a label left on this pod by an earlier container (a restarted
// container keeps its Pod object and labels).
//
// What it must not do: touch any other pod, cache pods (it patches one pod by name with a direct
// client), or hold package-level mutable state.
package leaderlabel
