package runstate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/steps"
)

// File is the journal in a run directory: what the run created where,
// written before each side effect, enough for `rlab down` with no lab file.
const File = "state.json"

// What a state.json may hold to be read (a class run's holds some 200,000
// effects, each a few values).
const (
	MaxValues  = rundir.StateValues
	MaxObjects = rundir.StateObjects
)

// State is the content of state.json.
type State struct {
	Version int            `json:"version"`
	Lab     string         `json:"lab"`
	RunID   string         `json:"run_id"`
	Started time.Time      `json:"started"`
	Hosts   []Host         `json:"hosts"`
	Effects []steps.Effect `json:"effects"`
	// VMs is the VM engine's own record (vm.StopFromState reads it).
	VMs      json.RawMessage `json:"vms,omitempty"`
	Finished *time.Time      `json:"finished,omitempty"`
	TornDown *time.Time      `json:"torn_down,omitempty"`
	// MAC vouches that this user's rlab wrote the whole file as it is
	// (paths.go stateMAC): down acts on a state.json only then, or
	// when the user says it trusts it (engine/down Options.TrustState).
	MAC string `json:"state_mac,omitempty"`
}

// Host is how to reach a host again, and what the run's agent there was.
type Host struct {
	Name         string `json:"name"`
	Slug         string `json:"slug"`
	Address      string `json:"address"`
	Port         int    `json:"port"`
	User         string `json:"user,omitempty"`
	IdentityFile string `json:"identity_file,omitempty"`
	KnownHosts   string `json:"known_hosts,omitempty"`
	// Hops are the bastions of the host's jump string as its plan
	// resolved them (first dialled first; plan.Hop): `rlab down` goes
	// through them as the run did, parsing nothing. They are logged into
	// with this host's user (unless a hop names one) and keys, and checked
	// against this host's known_hosts.
	Hops []plan.Hop `json:"hops,omitempty"`
	// Jump is the jump string of a state.json written before Hops (down
	// parses it then); never written now.
	Jump string `json:"jump,omitempty"`
	// JumpHost is a lab host used as this host's bastion, recorded whole
	// (its own user, key and jump), so `rlab down` logs into it as the run
	// did; Hops are then empty.
	JumpHost *Host `json:"jump_host,omitempty"`
	Become   bool  `json:"become,omitempty"`
	VM       bool  `json:"vm,omitempty"`
	// Connected is set once the agent answered; AgentPID and WorkDir are its.
	Connected bool   `json:"connected,omitempty"`
	AgentPID  int    `json:"agent_pid,omitempty"`
	WorkDir   string `json:"work_dir,omitempty"`
	// WorkDirRemoved: the run (after its pull) or rlab down removed
	// WorkDir from the host.
	WorkDirRemoved bool `json:"work_dir_removed,omitempty"`
	// AgentStart tells AgentPID from a later process reusing it (nil in an
	// older state.json, or from an older agent).
	AgentStart *proto.ProcIdentity `json:"agent_start,omitempty"`
	// Provision is what this run installed there (engine/run/provision.go).
	Provision *Provision `json:"provision,omitempty"`
	// PathsMAC vouches that IdentityFile and KnownHosts (its bastions'
	// included) were written by this user's rlab (paths.go).
	PathsMAC string `json:"paths_mac,omitempty"`
}

// Provision is what a run's provisioning did on one host, journaled
// before the install (Packages) and after it (Installed), so `rlab down
// --remove-provisioned` can remove exactly what this run installed.
type Provision struct {
	Family   string   `json:"family"`
	Packages []string `json:"packages"` // planned: what the host lacked
	// For names, per package, the programs (or module) it was planned for;
	// Present what the lab needs that the host already had (programs, and
	// rdma_rxe). The report shows them (engine/report/provision.go).
	For       map[string][]string `json:"for,omitempty"`
	Present   []string            `json:"present,omitempty"`
	Installed []string            `json:"installed,omitempty"` // installed by this run (confirmed by the package database)
	Done      bool                `json:"done,omitempty"`      // the install call returned
	Removed   bool                `json:"removed,omitempty"`   // rlab down --remove-provisioned removed them
}

// MaxJumpDepth bounds a chain of lab hosts as bastions (the lab loader
// refuses a cycle; this bounds what a state.json from elsewhere holds).
const MaxJumpDepth = 8

// Journal is the live state.json of a run: every change is written (to a
// temp file, then renamed) before the call that changes a host returns.
//
// Writes are group-committed: a change is applied under mu, then the caller
// waits for a write that includes it. Many workloads noting at once share
// one write instead of queueing one each.
type Journal struct {
	mu     sync.Mutex
	path   string
	st     State
	gen    uint64                              // changes applied
	redact interface{ Replace(string) string } // sensitive values never reach the file (lab.Redactor)
	// key signs the hosts' paths and the whole file (a run's journal;
	// in down's only when what it read was signed with it, nil otherwise:
	// down must not vouch for what it read).
	key []byte

	wmu     sync.Mutex // one writer at a time
	written uint64     // changes in the file
	synced  uint64     // changes in the file and fsynced
}

// Decode decodes the text of a state.json, only within bounds: a
// list of empty objects costs a hundred times its text (3,000,000 "{}"
// hosts, 9 MB: rlab down took 2.4 GB), and a member of a host's
// provision.for map ("pkg":null), which CheckObjects does not count, some
// 20 times (engine/report's reader of state.json checks the same).
func Decode(b []byte) (*State, error) {
	if err := proto.CheckObjects(b, MaxValues, MaxObjects); err != nil {
		return nil, err
	}
	var sk struct {
		Hosts []struct{ Provision struct{ For proto.Members } }
	}
	_ = json.Unmarshal(b, &sk) // what a type error leaves is counted
	n := 0
	for _, h := range sk.Hosts {
		n += int(h.Provision.For)
	}
	if n > MaxObjects {
		return nil, fmt.Errorf("provision records: more than %d package names: refusing to decode them", MaxObjects)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Create starts the journal of a run in dir, signed with this user's
// state key (made when missing), and writes it.
func Create(dir string, st State) (*Journal, error) {
	j := &Journal{path: filepath.Join(dir, File), st: st, key: readStateKey(true)}
	j.st.Version = 1
	return j, j.change(func(*State) {}, true)
}

// Open reads the journal of a run in dir (rlab down); it stays signed as
// changed only when it was signed, as read, with this user's key.
func Open(dir string) (*Journal, error) {
	// A received run directory's state.json may be a FIFO or a symlink to
	// /dev/zero: read it confined, regular and bounded.
	b, err := rundir.ReadFile(dir, File)
	if err != nil {
		return nil, fmt.Errorf("read run state: %w", err)
	}
	j := &Journal{path: filepath.Join(dir, File)}
	st, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("read run state %s: %w", j.path, err)
	}
	j.st = *st
	// Signed as read, it stays signed as changed; otherwise nothing read
	// here is vouched for.
	if key := readStateKey(false); stateSigned(key, j.st) {
		j.key = key
	}
	return j, nil
}

// Note implements steps.Journal.
func (j *Journal) Note(e steps.Effect) error {
	j.mu.Lock()
	if j.redact != nil && len(e.Argv) > 0 {
		argv := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			argv[i] = j.redact.Replace(a)
		}
		e.Argv = argv
	}
	found := false
	for i := range j.st.Effects {
		o := &j.st.Effects[i]
		if o.Host == e.Host && o.Type == e.Type && o.ID == e.ID {
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
			if e.GSOOwn == 0 {
				e.GSOOwn = o.GSOOwn
			}
			e.Created = e.Created || o.Created
			e.Keep = e.Keep || o.Keep
			*o = e
			found = true
			break
		}
	}
	if !found {
		j.st.Effects = append(j.st.Effects, e)
	}
	j.gen++
	gen := j.gen
	j.mu.Unlock()
	return j.flush(gen, durable(e))
}

// durable says whether an effect must reach the disk (fsync) before it
// happens: an rxe device outlives everything, while processes and captures
// belong to an agent that stops them when its session ends, so for them the
// file written (surviving a crash of rlab, not of the machine) is enough.
// This keeps one fsync per workload process off the run's critical path.
func durable(e steps.Effect) bool { return e.Type == "rxe" }

// SetRedactor makes every later Note replace sensitive values in argv.
func (j *Journal) SetRedactor(r interface{ Replace(string) string }) {
	j.mu.Lock()
	j.redact = r
	j.mu.Unlock()
}

// Signed says whether the journal is signed: a run's always (when the user
// has a key), down's only when what it read was signed with this user's key.
func (j *Journal) Signed() bool { return j.key != nil }

// Update applies f to the state and returns once it is written and synced.
func (j *Journal) Update(f func(st *State)) error {
	return j.change(f, true)
}

// NoteHost records what is known of a host once it answered (agent pid,
// work dir): written, not synced, like a process effect.
func (j *Journal) NoteHost(f func(st *State)) error {
	return j.change(f, false)
}

func (j *Journal) change(f func(st *State), sync bool) error {
	j.mu.Lock()
	f(&j.st)
	j.gen++
	gen := j.gen
	j.mu.Unlock()
	return j.flush(gen, sync)
}

// flush returns once the file holds change gen (synced when sync is set),
// writing it unless a write that started after the change already did.
func (j *Journal) flush(gen uint64, sync bool) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if j.written >= gen && (!sync || j.synced >= gen) {
		return nil
	}
	j.mu.Lock()
	// Signed as written, not at every change: each signing MACs every
	// host, and a class's thousand connects each change one (O(n²)); the
	// changes that wait for this write share it. The paths first, then
	// the whole file (state_mac) over them.
	var err error
	if j.key != nil {
		signPaths(j.key, &j.st)
		j.st.MAC, err = stateMAC(j.key, j.st)
	}
	var b []byte
	if err == nil {
		b, err = json.MarshalIndent(&j.st, "", "  ")
	}
	cur := j.gen
	j.mu.Unlock()
	if err != nil {
		return err
	}
	if err := j.write(b, sync); err != nil {
		return err
	}
	j.written = cur
	if sync {
		j.synced = cur
	}
	return nil
}

// Snapshot is a copy of the state (its hosts and effects lists copied).
func (j *Journal) Snapshot() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Hosts = append([]Host(nil), j.st.Hosts...)
	st.Effects = append([]steps.Effect(nil), j.st.Effects...)
	return st
}

// write replaces the file with b (temp file, then rename). The temp file
// is made anew (O_EXCL, a random name): the run directory may be a received
// one, and a fixed name opened with O_TRUNC followed a planted symlink to
// a file of the reader's and overwrote it.
func (j *Journal) write(b []byte, sync bool) error {
	if err := rundir.WriteUnmasked(j.path, append(b, '\n'), sync); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	return nil
}
