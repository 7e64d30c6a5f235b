// Package sshx dials the hosts of a lab over SSH (golang.org/x/crypto/ssh):
// one *ssh.Client per host for the whole run, host keys always verified
// against known_hosts (trust on first use only when asked, and recorded),
// authentication from ssh-agent then identity files (never agent
// forwarding), the user's ~/.ssh/config honoured, ProxyJump chains with each
// bastion authenticated once and shared, a per-destination cap on concurrent
// handshakes with retry and jitter, dial/handshake timeouts and keepalives.
// Every later wait on a host is bounded too (wait.go: OpenSession, Start,
// Watch): past its limit, or when its context ends, the host's connection
// is closed, since closing a session ends no read with OpenSSH.
//
// With Options.Persist it also keeps logins alive between rlab runs, as
// OpenSSH's ControlPersist does: a per-user mux daemon (ServeMux, run as
// `rlab mux serve`) holds the upstream connections and callers reach it
// over SSH on a private unix socket (mux.go, muxserve.go).
//
// It knows nothing of labs or agents: it must not import engine/lab or
// engine/remote.
package sshx
