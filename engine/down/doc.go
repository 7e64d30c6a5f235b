// Package down is `rlab down`: it undoes what a run left behind from its
// state.json alone (engine/runstate), with no lab file and no plan: rxe
// devices the run created and did not keep, processes and captures still
// running, rlab's netem, the run's work dir on each host, its VMs (through
// Options.StopVMs) and, when asked, the packages it installed. It acts only
// on a state.json this user's rlab signed, or one the user vouches for.
//
// It reaches hosts through the Connector it is given (engine/run's
// DownConnector in rlab: SSH as the run connects) and must not import
// engine/run (which imports it for that adapter), engine/report,
// engine/remote, engine/vm or cmd/... (internal/archtest checks it): it
// executes no plan.
package down
