package run

import "testing"

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
