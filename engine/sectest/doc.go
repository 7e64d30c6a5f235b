// Package sectest is rlab's security suite: tests only, written from
// outside the packages they judge, each one proving a promise of
// SECURITY.md (host key policy, hostile hosts, hostile lab files, secrets,
// least privilege, current crypto). The controller is driven through its
// real path — engine/run over engine/sshx and engine/remote to in-process
// SSH servers (engine/sshx/sshtest) whose agent is the real agent/server,
// honest or lying on the wire.
//
// It holds no production code and must not be imported (internal/archtest
// checks it).
package sectest
