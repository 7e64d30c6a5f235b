package run

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/vm"
)

// A local VM is stopped at the end of its run and its overlay thrown away,
// so the teardown does not undo what the run made inside it one by one
// (delete its rxe devices, remove its netem qdiscs, stop its processes,
// remove its work dir, let its agent clean up before the session ends):
// that took 8.6 s of a two-VM demo under TCG (issue 27) for changes that go
// with the VM anyway. What the VM holds is pulled first, as for any host
// (captures stopped so their files are whole, logs, counters, results);
// then its session ends without waiting and the VM stops. The undo stays
// for SSH hosts, which outlive the run. The journal records the skipped
// effects as undone once the VM is stopped; when it could not be stopped
// they stay pending, and `rlab down` stops the VM (Down skips a VM host's
// leftovers for the same reason).

// DiscardNote begins the teardown event of a local VM whose changes were
// not undone one by one.
const DiscardNote = "local VM discarded: its changes go with it"

// abandoner is a Host whose session can end without waiting for its agent
// to clean up (sshHost).
type abandoner interface {
	Abandon() error
}

// abandon ends a discarded host's session: at once when the host can, else
// by closing it.
func abandon(c Host, log *slog.Logger, host string) {
	var err error
	inner := c
	if cw, ok := c.(*conn); ok {
		inner = cw.Host
	}
	if a, ok := inner.(abandoner); ok {
		err = a.Abandon()
	} else {
		err = c.Close()
	}
	if err != nil {
		log.Debug("teardown: end the session of a discarded VM", "host", host, "err", err)
	}
}

// allDiscarded reports whether every host of hs is a discarded VM.
func (r *runner) allDiscarded(hs []*lab.Host) bool {
	for _, h := range hs {
		if h != nil && !r.discard[h.Name] {
			return false
		}
	}
	return len(hs) > 0
}

// undoable is ws without the windows on discarded VMs.
func undoable[W window](r *runner, ws []W) []W {
	return slices.DeleteFunc(slices.Clone(ws), func(w W) bool { return r.discard[w.onHost()] })
}

// noteDiscarded says, per discarded VM the run reached, what its teardown
// leaves to the VM's end and why (events.jsonl, the run's log).
func (r *runner) noteDiscarded() {
	if len(r.discard) == 0 {
		return
	}
	st := r.journal.Snapshot()
	for _, h := range r.hosts {
		if !r.discard[h.Name] {
			continue
		}
		r.mu.Lock()
		_, connected := r.conns[h.Name]
		r.mu.Unlock()
		if !connected {
			continue
		}
		left := leftInside(st, h.Name)
		msg := DiscardNote
		if left != "" {
			msg += "; not undone inside it: " + left
		}
		r.log.Info("teardown: "+msg, "host", h.Name)
		r.emit(Event{Type: "step.end", Step: "teardown", Host: h.Name, Status: "ok", Message: msg})
	}
}

// leftInside lists what the run made on host that is still in force:
// "rxe rxe_eth1, netem on eth1, 2 processes".
func leftInside(st runstate.State, host string) string {
	var out []string
	procs := 0
	for _, e := range st.Effects {
		if e.Host != host || e.Undone {
			continue
		}
		switch e.Type {
		case "rxe":
			if e.Created {
				out = append(out, "rxe "+e.ID)
			}
		case "impair":
			if s := "netem on " + e.Netdev; !slices.Contains(out, s) {
				out = append(out, s)
			}
		default: // proc, capture, tcp
			procs++
		}
	}
	switch {
	case procs == 1:
		out = append(out, "1 process")
	case procs > 1:
		out = append(out, fmt.Sprintf("%d processes", procs))
	}
	return strings.Join(out, ", ")
}

// accelSet is a VMSet that says how each VM was booted (vmSet).
type accelSet interface {
	Accel(host string) (accel, note string)
}

// noteEmulated tells the steps which VM hosts were booted under TCG: their
// tools' RC QP timeouts are raised (kinds/qptimeout.go).
func (r *runner) noteEmulated(set VMSet) {
	as, ok := set.(accelSet)
	if !ok {
		return
	}
	for h := range r.discard {
		if accel, note := as.Accel(h); accel == vm.AccelTCG {
			if r.env.Emulation == nil {
				r.env.Emulation = map[string]string{}
			}
			r.env.Emulation[h] = fmt.Sprintf("host %s is a local VM under %s", h, note)
		}
	}
}
