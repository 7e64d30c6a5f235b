package run

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/down"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// DownOptions is down.Options with one of the run's connectors, as rlab
// down wires it (DownConnector): the run's tests undo what they ran.
type DownOptions struct {
	Connector         Connector
	StopVMs           func(ctx context.Context, state []byte) error
	Parallel          int
	Log               *slog.Logger
	Now               func() time.Time
	RemoveProvisioned bool
	KnownHosts        []string
	Identities        []string
	TrustState        bool
}

// Down is down.Run through DownConnector.
func Down(ctx context.Context, dir string, o DownOptions) (*down.Result, error) {
	d := down.Options{StopVMs: o.StopVMs, Parallel: o.Parallel, Log: o.Log, Now: o.Now,
		RemoveProvisioned: o.RemoveProvisioned, KnownHosts: o.KnownHosts, Identities: o.Identities, TrustState: o.TrustState}
	if o.Connector != nil {
		d.Connector = DownConnector(o.Connector)
	}
	return down.Run(ctx, dir, d)
}

var ErrStateUnsigned = down.ErrStateUnsigned

// workDirLeft says whether the run's work dir may still be on the host.
func workDirLeft(h runstate.Host) bool {
	return h.Connected && h.WorkDir != "" && !h.WorkDirRemoved
}

// editState rewrites dir's state.json as a person would, without rlab.
func editState(t *testing.T, dir string, f func(*runstate.State)) {
	t.Helper()
	p := filepath.Join(dir, runstate.File)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var st runstate.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	f(&st)
	if b, err = json.MarshalIndent(&st, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
