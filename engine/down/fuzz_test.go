package down

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// FuzzDownState feeds Down any state.json: it must never panic, and must
// contact only hosts that have something of ours to undo.
func FuzzDownState(f *testing.F) {
	seed := runstate.State{Version: 1, Lab: "t", RunID: "t-1", Started: time.Unix(0, 0),
		Hosts: []runstate.Host{{Name: "a", Address: "192.0.2.1", Port: 22}, {Name: "vm", VM: true}},
		Effects: []steps.Effect{
			{Host: "a", Type: "rxe", ID: "rxe0", Created: true},
			{Host: "a", Type: "proc", ID: "p", PID: 1, Argv: []string{"x"}},
			{Host: "vm", Type: "capture", ID: "c"},
		},
		VMs: json.RawMessage(`{"vms":[]}`),
	}
	b, _ := json.Marshal(seed)
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"hosts":[{"name":"a"}],"effects":[{"host":"a","kind":"rxe","id":"x","created":true,"keep":true}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, runstate.File), data, 0o600); err != nil {
			t.Fatal(err)
		}
		var st runstate.State
		valid := json.Unmarshal(data, &st) == nil
		want := map[string]bool{}
		if valid {
			// A name is a VM's when every entry of that name is one: Down
			// contacts each entry that is not (a hand-edited state.json may
			// name one host twice, once as a VM).
			vm := map[string]bool{}
			for _, h := range st.Hosts {
				if was, seen := vm[h.Name]; seen {
					vm[h.Name] = was && h.VM
				} else {
					vm[h.Name] = h.VM
				}
			}
			for _, e := range st.Effects {
				if !e.Undone && !(e.Type == "rxe" && (!e.Created || e.Keep)) && !vm[e.Host] {
					want[e.Host] = true
				}
			}
		}
		contacted := map[string]bool{}
		conn := connectFunc(func(_ context.Context, tg runstate.Host, _ string) (Host, error) {
			contacted[tg.Name] = true
			return nil, errors.New("unreachable")
		})
		_, err := Run(context.Background(), dir, Options{Connector: conn, Parallel: 1, TrustState: true,
			StopVMs: func(context.Context, []byte) error { return nil }})
		if !valid && err == nil {
			t.Error("down accepted a state.json that is not JSON")
		}
		for h := range contacted {
			if !want[h] {
				t.Errorf("down contacted host %q with nothing to undo", h)
			}
		}
	})
}
