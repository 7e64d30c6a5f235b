package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/provision"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/internal/fanout"
)

// provisionHosts installs, on each host the plan provisions (--provision
// or the lab's provision = true, never in a student check), what the lab needs and the host lacks; a
// host whose facts show nothing missing costs nothing more. One host's
// failure fails that host (a class lab: that student) while the others go
// on. Hosts that got something read their facts again, for preflight.
func (r *runner) provisionHosts(ctx context.Context) error {
	var failed atomic.Int32
	var errs []error
	var emu sync.Mutex
	fanout.Each(ctx, r.hosts, r.opts.Parallel, func(ctx context.Context, h *plan.HostPlan) error {
		if len(r.plan.IDs(h.Name, "", plan.Provision)) == 0 || r.isLost(h.Name) {
			return nil
		}
		r.mu.Lock()
		f := r.env.Facts[h.Name]
		cw := r.conns[h.Name]
		r.mu.Unlock()
		if f == nil || cw == nil {
			return nil
		}
		p := provision.PlanHost(h.Need, f) // what the plan says the host needs
		if p.Nothing() {
			// Journaled too, so the report can say the host lacked nothing.
			r.noteProvision(h.Name, func(sp *runstate.Provision) {
				*sp = runstate.Provision{Family: string(p.Family), Packages: []string{}, Present: p.Present, Done: true}
			})
			r.emit(Event{Type: "step.end", Step: "provision", Host: h.Name, Status: "ok", Message: "nothing to install"})
			return nil
		}
		start := time.Now()
		r.emit(Event{Type: "step.start", Step: "provision", Host: h.Name, Message: strings.Join(p.Packages, " ")})
		if p.Err == nil {
			// Journaled before the install: a run killed half-way still
			// tells rlab down what it may have installed.
			r.noteProvision(h.Name, func(sp *runstate.Provision) {
				*sp = runstate.Provision{Family: string(p.Family), Packages: p.Packages, For: p.For, Present: p.Present}
			})
		}
		res := provision.Apply(ctx, cw, p, r.opts.ProvisionOptions)
		if res.Log != "" {
			logDir := filepath.Join(r.hostDir(h.Slug), "logs")
			if err := os.MkdirAll(logDir, 0o700); err == nil {
				rundir.WriteFile(filepath.Join(logDir, "provision.log"), []byte(res.Log))
			}
		}
		if p.Err == nil {
			r.noteProvision(h.Name, func(sp *runstate.Provision) { sp.Installed, sp.Done = res.Installed, true })
		}
		ev := Event{Type: "step.end", Step: "provision", Host: h.Name, Status: "ok", Seconds: time.Since(start).Seconds(),
			Message: "installed " + strings.Join(res.Installed, " ")}
		if res.Err != nil {
			ev.Status, ev.Error, ev.Message = "failed", res.Err.Error(), ""
		}
		r.emit(ev)
		if res.Err != nil {
			if ctx.Err() != nil && !isPMInterrupt(res.Err) {
				return nil
			}
			failed.Add(1)
			if len(r.plan.Students) > 0 {
				r.breakHost(h.Name, res.Err)
			} else {
				emu.Lock()
				errs = append(errs, res.Err)
				emu.Unlock()
			}
			return nil
		}
		if len(p.Packages) > 0 {
			// What is there now: preflight reads these facts. Also when
			// nothing was installed here: the facts said something was
			// missing, and the package database says it is there (another
			// host sharing this filesystem installed it meanwhile).
			nf, err := rpc.Invoke(ctx, cw, rpc.Facts, factsRequest(h))
			if err != nil {
				return nil // the lost agent is reported by conn
			}
			r.mu.Lock()
			r.env.Facts[h.Name] = &nf
			r.mu.Unlock()
			r.writeFacts(filepath.Join(r.hostDir(h.Slug), "facts.json"), &nf)
		}
		return nil
	})
	if ctx.Err() != nil && len(errs) == 0 {
		return ctx.Err()
	}
	if len(errs) > 0 {
		return fmt.Errorf("provision failed on %d host(s):\n  %w", failed.Load(), errors.Join(errs...))
	}
	return nil
}

func isPMInterrupt(err error) bool {
	var pe *provision.Error
	return errors.As(err, &pe) && pe.Code == proto.CodeTimeout
}

// noteProvision changes a host's provisioning record in state.json.
func (r *runner) noteProvision(host string, f func(*runstate.Provision)) {
	err := r.journal.NoteHost(func(st *runstate.State) {
		for i := range st.Hosts {
			if st.Hosts[i].Name == host {
				if st.Hosts[i].Provision == nil {
					st.Hosts[i].Provision = &runstate.Provision{}
				}
				f(st.Hosts[i].Provision)
			}
		}
	})
	if err != nil {
		r.addErr(&infraError{fmt.Errorf("journal provisioning of host %q: %w", host, err)})
	}
}
