package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linkCut is part of TestE2ERealRXE (it shares that test's two VMs rather
// than boot a pair of its own): rlab runs a long RDMA WRITE between the VMs
// over SSH, the client's data NIC is set down inside its guest a few
// seconds in, and the run must end with exit 2 naming the link
// (`data link server ↔ client on eth1 down`) and skip the next workload of
// the pair, the link named within 30 s of the cut. eth1 is set up again
// afterwards.
func linkCut(t *testing.T, ctx context.Context, bin string, set *Set, cli *guest) {
	var b strings.Builder
	b.WriteString("lab \"link-cut\" {\n  description = \"the data link dies mid-workload\"\n}\n")
	for _, v := range set.VMs {
		_, port, _ := strings.Cut(v.Addr, ":")
		fmt.Fprintf(&b, "host %q {\n  address = \"127.0.0.1\"\n  port = %s\n  user = \"root\"\n  identity_file = %q\n  known_hosts = %q\n}\n",
			v.Name, port, v.IdentityFile, v.KnownHosts)
		fmt.Fprintf(&b, "rxe %q {\n  host = host.%s\n  netdev = \"eth1\"\n}\n", v.Name, v.Name)
	}
	b.WriteString(`workload "cut" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = [65536]
  duration = "120s"
}
workload "next" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [64]
  iterations = 100
}
`)
	dir := t.TempDir()
	labFile := filepath.Join(dir, "link-cut.hcl")
	if err := os.WriteFile(labFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	defer cli.run(context.WithoutCancel(ctx), time.Minute, "ip", "link", "set", "eth1", "up")
	cmd := rlabCommand(ctx, t, 5*time.Minute, bin, "run", "--out", out, labFile)
	var outBuf strings.Builder
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Cut once the client side of "cut" runs.
	var cut time.Time
	for cut.IsZero() {
		select {
		case err := <-done:
			t.Fatalf("rlab run ended before the cut (%v):\n%s", err, outBuf.String())
		case <-time.After(time.Second):
		}
		if eventSeen(out, func(e runEvent) bool { return e.Type == "step.start" && e.Workload == "cut" }) {
			time.Sleep(5 * time.Second) // the transfer is under way
			if _, stderr, err := cli.run(ctx, time.Minute, "ip", "link", "set", "eth1", "down"); err != nil {
				t.Fatalf("ip link set eth1 down in the client: %v: %s", err, stderr)
			}
			cut = time.Now()
		}
	}
	err := <-done
	ended := time.Since(cut)
	t.Logf("rlab run (eth1 of the client set down %s before it ended):\n%s", ended.Round(100*time.Millisecond), outBuf.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("rlab run: %v, want exit 2", err)
	}
	const name = "data link server ↔ client on eth1 down"
	if !strings.Contains(outBuf.String(), name) {
		t.Errorf("output does not name %q", name)
	}
	var named time.Time
	eventSeen(out, func(e runEvent) bool {
		if e.Type == "notice" && strings.Contains(e.Message, name) {
			named = e.Time
			return true
		}
		return false
	})
	if named.IsZero() {
		t.Errorf("no notice event naming %q in events.jsonl", name)
	} else if d := named.Sub(cut); d > 30*time.Second {
		t.Errorf("the link was named %s after the cut, want within 30 s", d.Round(100*time.Millisecond))
	} else {
		t.Logf("link named %s after the cut; run ended %s after it", d.Round(100*time.Millisecond), ended.Round(100*time.Millisecond))
	}
	if !eventSeen(out, func(e runEvent) bool {
		return e.Type == "step.end" && e.Workload == "next" && e.Status == "skipped" && strings.Contains(e.Error, name)
	}) {
		t.Errorf("workload next was not skipped naming %q", name)
	}
}

type runEvent struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	Workload string    `json:"workload"`
	Status   string    `json:"status"`
	Error    string    `json:"error"`
	Message  string    `json:"message"`
}

// eventSeen reports whether events.jsonl of run dir holds an event match
// accepts.
func eventSeen(dir string, match func(runEvent) bool) bool {
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var e runEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && match(e) {
			return true
		}
	}
	return false
}
