package proto

import (
	"bytes"
	"fmt"
	"strconv"
)

// ParseStatStartTicks returns a process's start time, field 22
// (starttime) of /proc/<pid>/stat, for ProcIdentity. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after
// the last ')'.
func ParseStatStartTicks(stat []byte) (uint64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): field 22 is f[19].
	if len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// Check says whether id is one a host may report: BootID empty or a boot
// id as the kernel writes it (a UUID, 36 characters). What a host reports
// is journaled in state.json with every process it runs and compared by
// `rlab down`, so a boot id of megabytes (a lying host) grew the journal
// that is written whole at every step (SECURITY 131). rpc.Invoke calls it
// on every answer that carries one (ProcStarted, CaptureStarted).
func (id ProcIdentity) Check() error {
	if id.BootID == "" || validBootID(id.BootID) {
		return nil
	}
	s := id.BootID
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Errorf("boot_id %q (%d bytes) is not a boot id (a UUID)", s, len(id.BootID))
}

func validBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Check says whether r is an answer a host may give: the root qdisc's kind
// and handle as tc names them, netem's parameters as tc prints them.
// Journaled with the impairment (steps' Effect.Detail), they were taken
// at any length up to a whole reply line (SECURITY 131).
func (r ImpairResult) Check() error {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"netdev", r.Netdev, 15}, {"qdisc", r.Qdisc, 64}, {"handle", r.Handle, 64}, {"netem", r.Netem, 4096}} {
		if len(f.v) > f.max {
			return fmt.Errorf("%s of %d bytes, more than tc ever says (%d)", f.name, len(f.v), f.max)
		}
	}
	return nil
}

// Check says whether f is an answer a host may give, in what the run
// journals of it: its work dir, a path (PATH_MAX, 4096 bytes), goes into
// state.json, which is written whole at every step (SECURITY 131).
func (f Facts) Check() error {
	if len(f.WorkDir) > 4096 {
		return fmt.Errorf("work_dir of %d bytes, longer than a path can be (4096)", len(f.WorkDir))
	}
	return nil
}
