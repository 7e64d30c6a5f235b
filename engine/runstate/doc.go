// Package runstate is a run's state journal: state.json in a run
// directory, what the run created where (hosts, effects, provisioning,
// VMs), written before each side effect and signed with a key only this
// user's rlab holds, so that `rlab down` can undo the run from it alone and
// act only on what this user's rlab wrote. It reads state.json within
// bounds (a received run directory may hold anything) and confines the
// files a state.json names (known_hosts, identity_file).
//
// engine/run writes the journal; engine/down (rlab down) reads it and journals
// what it undid; engine/report and cmd/rlab read it.
//
// It is the file format, its signing and its bounds: it must not import
// engine/run, engine/down, engine/report, engine/remote or cmd/... (its
// imports beyond the standard library: agent/proto, engine/plan,
// engine/rundir, engine/sshx for ~ in paths, steps for the effects;
// internal/archtest checks it).
package runstate
