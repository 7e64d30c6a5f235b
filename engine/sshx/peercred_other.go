//go:build !linux

package sshx

import (
	"errors"
	"net"
)

// peerUID: only Linux is supported for the mux (SO_PEERCRED); elsewhere
// every peer is refused, so --persist fails closed.
func peerUID(c *net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are only checked on Linux")
}
