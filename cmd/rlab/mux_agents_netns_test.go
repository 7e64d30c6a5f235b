package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// With --persist the mux daemon keeps the agents `rlab facts` starts: a
// later `rlab facts` gets its answers from the same agent processes (none
// started on any host, the one behind the bastion and the one with become
// included), `rlab mux status` counts them, and `rlab mux stop` ends them
// (the root one too).
func TestFactsKeptAgentsNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
	var lab strings.Builder
	fmt.Fprintf(&lab, "lab \"kept\" {}\n\nssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n}\n\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for i, h := range bed.Hosts {
		fmt.Fprintf(&lab, "host %q {\n  address = %q\n", h.Name, h.Addr)
		if h.Behind {
			fmt.Fprintf(&lab, "  jump    = %q\n", bed.User+"@"+bed.Bastion.Addr+":22")
		}
		if i == 0 {
			lab.WriteString("  become  = true\n")
		}
		lab.WriteString("}\n")
	}
	labFile := filepath.Join(t.TempDir(), "kept.hcl")
	if err := os.WriteFile(labFile, []byte(lab.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := muxEnv(t)

	type hostOut struct {
		Facts *struct {
			Root bool `json:"root"`
		} `json:"facts"`
		Error string `json:"error"`
	}
	facts := func(run int) {
		t.Helper()
		out, stderr, code := runRlabEnv(t, env, "facts", "-json", "--persist", "1m", labFile)
		if code != 0 {
			t.Fatalf("rlab facts --persist, run %d: exit %d\n%s%s", run, code, out, stderr)
		}
		var got map[string]hostOut
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("run %d: facts -json: %v\n%s", run, err, out)
		}
		for i, h := range bed.Hosts {
			f := got[h.Name].Facts
			if f == nil {
				t.Fatalf("run %d: no facts for %s: %+v", run, h.Name, got[h.Name])
			}
			if f.Root != (i == 0) {
				t.Errorf("run %d: %s root = %v, want %v (become)", run, h.Name, f.Root, i == 0)
			}
		}
	}
	// The first run may install the agent (an ordinary session, not kept);
	// the second is a warm start, whose agents the daemon keeps.
	facts(1)
	facts(2)
	var kept map[string][]string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		kept = agentsOfRun(t, bed.Hosts, "kept")
		ok := len(kept) == len(bed.Hosts)
		for _, v := range kept {
			ok = ok && len(v) == 1
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agents kept after two runs: %v, want one per host (%d hosts)", kept, len(bed.Hosts))
		}
	}
	if !strings.HasSuffix(kept[bed.Hosts[0].Name][0], "/root") || !strings.HasSuffix(kept[bed.Hosts[1].Name][0], "/user") {
		t.Errorf("kept agents %v: want root on %s (become) only", kept, bed.Hosts[0].Name)
	}

	out, _, code := runRlabEnv(t, env, "mux", "status", "--json")
	var st struct {
		Conns []struct {
			Name string `json:"name"`
			Kept int    `json:"kept_sessions"`
		} `json:"connections"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("mux status: exit %d\n%s", code, out)
	}
	for _, c := range st.Conns {
		want := 1
		if c.Name == bed.Bastion.Name || strings.Contains(c.Name, "@") {
			want = 0
		}
		if c.Kept != want {
			t.Errorf("mux status: %s keeps %d agents, want %d", c.Name, c.Kept, want)
		}
	}

	// Third run: the same processes answer; none is started (a new one
	// would be kept beside the old: two per host).
	facts(3)
	if now := agentsOfRun(t, bed.Hosts, "kept"); fmt.Sprint(now) != fmt.Sprint(kept) {
		t.Errorf("agents after the third run %v, want the kept %v", now, kept)
	}

	if _, stderr, code := runRlabEnv(t, env, "mux", "stop"); code != 0 {
		t.Fatalf("mux stop: exit %d\n%s", code, stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); len(agentsOfRun(t, bed.Hosts, "kept")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agents still running 30s after mux stop: %v", agentsOfRun(t, bed.Hosts, "kept"))
		}
	}
}
