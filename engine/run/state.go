package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/steps"
)

// StateFile is the journal in a run directory: what the run created where,
// written before each side effect, enough for `rlab down` with no lab file.
const StateFile = "state.json"

// State is the content of state.json.
type State struct {
	Version int            `json:"version"`
	Lab     string         `json:"lab"`
	RunID   string         `json:"run_id"`
	Started time.Time      `json:"started"`
	Hosts   []StateHost    `json:"hosts"`
	Effects []steps.Effect `json:"effects"`
	// VMs is the VM engine's own record (vm.StopFromState reads it).
	VMs      json.RawMessage `json:"vms,omitempty"`
	Finished *time.Time      `json:"finished,omitempty"`
	TornDown *time.Time      `json:"torn_down,omitempty"`
}

// StateHost is how to reach a host again, and what the run's agent there was.
type StateHost struct {
	Name         string `json:"name"`
	Slug         string `json:"slug"`
	Address      string `json:"address"`
	Port         int    `json:"port"`
	User         string `json:"user,omitempty"`
	IdentityFile string `json:"identity_file,omitempty"`
	KnownHosts   string `json:"known_hosts,omitempty"`
	Jump         string `json:"jump,omitempty"`
	Become       bool   `json:"become,omitempty"`
	VM           bool   `json:"vm,omitempty"`
	// Connected is set once the agent answered; AgentPID and WorkDir are its.
	Connected bool   `json:"connected,omitempty"`
	AgentPID  int    `json:"agent_pid,omitempty"`
	WorkDir   string `json:"work_dir,omitempty"`
}

// journal is the live state.json of a run: every change is written (to a
// temp file, then renamed) before the call that changes a host returns.
type journal struct {
	mu     sync.Mutex
	path   string
	st     State
	redact *strings.Replacer // sensitive values never reach the file
}

func newJournal(dir string, st State) (*journal, error) {
	j := &journal{path: filepath.Join(dir, StateFile), st: st}
	j.st.Version = 1
	return j, j.saveLocked(true)
}

func openJournal(dir string) (*journal, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, fmt.Errorf("read run state: %w", err)
	}
	j := &journal{path: filepath.Join(dir, StateFile)}
	if err := json.Unmarshal(b, &j.st); err != nil {
		return nil, fmt.Errorf("read run state %s: %w", j.path, err)
	}
	return j, nil
}

// Note implements steps.Journal.
func (j *journal) Note(e steps.Effect) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.redact != nil && len(e.Argv) > 0 {
		argv := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			argv[i] = j.redact.Replace(a)
		}
		e.Argv = argv
	}
	for i := range j.st.Effects {
		o := &j.st.Effects[i]
		if o.Host == e.Host && o.Kind == e.Kind && o.ID == e.ID {
			// Keep what an earlier note knew and the later one does not.
			if e.PID == 0 {
				e.PID = o.PID
			}
			if len(e.Argv) == 0 {
				e.Argv = o.Argv
			}
			if e.Netdev == "" {
				e.Netdev = o.Netdev
			}
			e.Created = e.Created || o.Created
			e.Keep = e.Keep || o.Keep
			*o = e
			return j.saveLocked(durable(e))
		}
	}
	j.st.Effects = append(j.st.Effects, e)
	return j.saveLocked(durable(e))
}

// durable says whether an effect must reach the disk (fsync) before it
// happens: an rxe device outlives everything, while processes and captures
// belong to an agent that stops them when its session ends, so for them the
// file written (surviving a crash of rlab, not of the machine) is enough.
// This keeps one fsync per workload process off the run's critical path.
func durable(e steps.Effect) bool { return e.Kind == "rxe" }

func (j *journal) update(f func(st *State)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(&j.st)
	return j.saveLocked(true)
}

// noteHost records what is known of a host once it answered (agent pid, work
// dir): written, not synced, like a process effect.
func (j *journal) noteHost(f func(st *State)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(&j.st)
	return j.saveLocked(false)
}

func (j *journal) snapshot() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Hosts = append([]StateHost(nil), j.st.Hosts...)
	st.Effects = append([]steps.Effect(nil), j.st.Effects...)
	return st
}

func (j *journal) saveLocked(sync bool) error {
	b, err := json.MarshalIndent(&j.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write run state %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	return nil
}
