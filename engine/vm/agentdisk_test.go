package vm

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/agentdisk"
)

// TestWriteAgentDisk: the set's agent disk holds Options.Agent, 0600 in the
// set's folder; no agent, one too big for the disk, or RLAB_VM_AGENT_DISK=0
// leave it empty but still there (every VM attaches it: the device set a
// snapshot was saved with).
func TestWriteAgentDisk(t *testing.T) {
	agent := []byte("#!/bin/sh\necho agent\n")
	for _, tt := range []struct {
		name  string
		agent []byte
		env   string
		want  []byte
	}{
		{"the agent", agent, "", agent},
		{"no agent", nil, "", nil},
		{"turned off", agent, "0", nil},
		{"too big", make([]byte, agentdisk.MaxBinary+1), "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(AgentDiskEnv, tt.env)
			s := &Set{Dir: t.TempDir(), opts: Options{Agent: tt.agent, Logger: slog.New(slog.DiscardHandler)}}
			// A file left there (a run directory used again) is replaced.
			if err := os.WriteFile(filepath.Join(s.Dir, "agent.disk"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.writeAgentDisk(); err != nil {
				t.Fatal(err)
			}
			if s.agentDisk != filepath.Join(s.Dir, "agent.disk") {
				t.Errorf("disk at %s", s.agentDisk)
			}
			f, err := os.Open(s.agentDisk)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, _, err := agentdisk.Read(f)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("disk holds %d bytes (%v), want %d", len(got), err, len(tt.want))
			}
			if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
				t.Errorf("disk mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}
