package run

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestLinkText: the link is named by its hosts and netdev (or the address
// when no netdev holds it), and host text in its error cannot drive the
// terminal.
func TestLinkText(t *testing.T) {
	tests := []struct {
		link dataLink
		want string
	}{
		{dataLink{server: "server", client: "client", netdev: "eth1", addr: "10.99.0.1"}, "data link server ↔ client on eth1"},
		{dataLink{server: "a", client: "b", addr: "192.0.2.1"}, "data link a ↔ b to 192.0.2.1"},
	}
	for _, tt := range tests {
		if got := tt.link.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.link, got, tt.want)
		}
	}
	if a, b := (dataLink{server: "x", client: "y"}).key(), (dataLink{server: "y", client: "x"}).key(); a != b {
		t.Errorf("pair key depends on the order: %q, %q", a, b)
	}
	if got := plainText("refused\x1b[2J\x07ok\u009b"); got != "refused?[2J?ok?" {
		t.Errorf("plainText = %q", got)
	}
}

// TestLinkMiss: only a probe that could not connect is a verdict on the
// link. The messages are the agent's (agent/server tcp.go); the late count
// is what a loaded TCG guest gave in TestE2EExampleLabs/walkthrough (load 19
// on two cores), which had called a working link down.
func TestLinkMiss(t *testing.T) {
	tests := []struct {
		err  error
		miss bool
	}{
		{&proto.Error{Code: proto.CodeCommand, Message: `tcp.send "link.1": connect to 10.99.0.1:20009: dial tcp 10.99.0.1:20009: i/o timeout`}, true},
		{&proto.Error{Code: proto.CodeCommand, Message: `tcp.send "link.1": connect to 10.99.0.1:20009: dial tcp 10.99.0.1:20009: connect: no route to host`}, true},
		{fmt.Errorf("host %q: tcp.send: %w", "client", &proto.Error{Code: proto.CodeCommand, Message: `tcp.send "link.1": connect to 10.99.0.1:20009: connection refused`}), true},
		{&proto.Error{Code: proto.CodeTimeout, Message: `tcp.send "link.5" to 10.99.0.1:20009: read receiver's count: timed out after 4000 ms`}, false},
		{&proto.Error{Code: proto.CodeCommand, Message: `tcp.send "link.5" to 10.99.0.1:20009: read receiver's count: EOF`}, false},
		{&proto.Error{Code: proto.CodeInternal, Message: `tcp.send: connect to nothing`}, false},
		{errors.New("context deadline exceeded"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := linkMiss(tt.err); got != tt.miss {
			t.Errorf("linkMiss(%v) = %v, want %v", tt.err, got, tt.miss)
		}
	}
}
