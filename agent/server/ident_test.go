package server

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestProcStartedIdentity: proc.start and the hello carry the process's
// start time and the boot id, as /proc says (read here independently), so
// `rlab down` can tell the process from a later one with its pid.
func TestProcStartedIdentity(t *testing.T) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip("no boot id")
	}
	starttime := func(pid int) uint64 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		f := bytes.Fields(b) // comm has no spaces here: sleep, server.test
		n, _ := strconv.ParseUint(string(f[21]), 10, 64)
		return n
	}
	c, _ := startAgent(t, Options{})
	var st proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "s", Argv: []string{"sleep", "30"}}, &st)
	want := proto.ProcIdentity{StartTicks: starttime(st.PID), BootID: strings.TrimSpace(string(boot))}
	if st.ProcIdentity != want || want.StartTicks == 0 {
		t.Errorf("proc.start identity %+v, want %+v", st.ProcIdentity, want)
	}
	if h := c.hello; h.StartTicks != starttime(os.Getpid()) || h.BootID != want.BootID {
		t.Errorf("hello identity %+v, want start %d boot %s", h.ProcIdentity, starttime(os.Getpid()), want.BootID)
	}
}
