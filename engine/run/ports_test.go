package run

import (
	"net"
	"strconv"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
)

// TestWorkloadsBesideBusyDefaultPorts: another test binary running tcp
// workloads at the same time holds rlab's default ports (20000, 20010);
// this binary's workloads listen on a free block of their own
// (kindstest.UseFreePorts in TestMain) and run. Before, they collided:
// "address already in use".
func TestWorkloadsBesideBusyDefaultPorts(t *testing.T) {
	for _, p := range []int{kinds.DefaultBasePort, kinds.DefaultBasePort + kinds.PortsPerWorkload} {
		// Held here, or already held by someone else: busy either way.
		if ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p))); err == nil {
			t.Cleanup(func() { ln.Close() })
		}
	}
	res, _ := runLab(t, twoHosts+`
workload "one" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "64KiB"
}
workload "two" {
  tool   = "tcp"
  server = host.b
  client = host.a
  bytes  = "64KiB"
}
`, Options{}, true)
	if res.Code != ExitOK {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
}
