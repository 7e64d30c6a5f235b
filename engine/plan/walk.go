package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
)

// What the run walks: each selected workload and each capture and
// impairment with its steps and, read once here off the DAG's edges, the
// workloads it waits for or covers. engine/run wires its workers to these
// and derives no edge itself.

// WorkloadPlan is one selected workload as the run executes it.
type WorkloadPlan struct {
	Workload *lab.Workload
	// Steps are its steps in DAG order: server then client, or its one
	// run step.
	Steps []string
	// After are the other workloads a step of it depends on: it starts
	// once they are done (file order on a shared host, a group's
	// predecessors).
	After []*lab.Workload
	// Dial is, for a client that dials no rxe of its server (tcp), the
	// address it dials (the client step's Dial).
	Dial *lab.Dial
	// Hosts are the hosts its steps run on, in step order (server then
	// client, or its one host), each once: whose loss skips it, whose
	// kernel log a hang keeps.
	Hosts []*lab.Host
	// ProbePort is a port of its block (kinds.PortFor) that none of its
	// trials takes: where the run probes its data link while it runs; 0
	// when its trials take the whole block (the probe then takes any).
	ProbePort int
	// Trials are what its op runs, each trial resolved through its
	// family's argv hook (kinds.PlanTrials): size, repeat, port and both
	// sides' argv, with the placeholders only the run fills
	// (kinds.Fill). Its steps' Trials show the same (sensitive values
	// hidden); nil when the family has no argv hook.
	Trials []kinds.Planned
}

// WindowPlan is one selected capture (Capture set) or impairment (Impair
// set) as the run executes it.
type WindowPlan struct {
	Capture *lab.Capture
	Impair  *lab.Impair
	// Start and Stop are its start and stop steps.
	Start, Stop []string
	// During, for a window scoped with `during`, are the workloads its
	// stop waits for, in the order of its stop's edges (the lab's
	// `during` order): it starts before the first of them and stops after
	// the last. Nil: the whole run.
	During []*lab.Workload
	// Covers are the workloads it is in force during: During, or for a
	// whole-run window every selected workload on its host.
	Covers []*lab.Workload
	// Window names a scoped window after During ("" for the whole run):
	// part of a capture's agent handle and file name.
	Window string
	// File is the file a capture makes in its host's work dir
	// ("cap.<slug>[.<window>].pcap"; a ring's files are named after it):
	// the run's fetch files it as a capture because this step makes it.
	File string
}

// walk fills Plan.Workloads, Captures and Impairs from the ordered steps.
func (p *Plan) walk() error {
	wps := map[*lab.Workload]*WorkloadPlan{}
	for _, w := range p.Selected.Workloads {
		wp := &WorkloadPlan{Workload: w}
		if len(kinds.Trials(&w.Workload, w.Sizes)) < kinds.PortsPerWorkload {
			wp.ProbePort = kinds.PortFor(w.Index, 0, kinds.PortsPerWorkload-1)
		}
		wps[w] = wp
		p.Workloads = append(p.Workloads, wp)
	}
	// The workloads the steps of a window's stop depend on.
	covered := func(s *Step) []*lab.Workload {
		var out []*lab.Workload
		for _, d := range s.DependsOn {
			if w := p.Step(d).Workload; w != nil && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
		return out
	}
	caps := map[*lab.Capture]*WindowPlan{}
	for _, c := range p.Selected.Captures {
		wp := &WindowPlan{Capture: c}
		caps[c] = wp
		p.Captures = append(p.Captures, wp)
	}
	imps := map[*lab.Impair]*WindowPlan{}
	for _, im := range p.Selected.Impairs {
		wp := &WindowPlan{Impair: im}
		imps[im] = wp
		p.Impairs = append(p.Impairs, wp)
	}
	for _, s := range p.Steps {
		switch s.Action {
		case WorkloadServer, WorkloadClient, WorkloadRun:
			wp := wps[s.Workload]
			if wp == nil {
				return fmt.Errorf("plan: step %s is of workload %q, which is not selected", s.ID, s.Subject)
			}
			wp.Steps = append(wp.Steps, s.ID)
			if !slices.Contains(wp.Hosts, s.HostRef) {
				wp.Hosts = append(wp.Hosts, s.HostRef)
			}
			if s.Dial != nil {
				wp.Dial = s.Dial
			}
			if s.planned != nil {
				wp.Trials = s.planned
			}
			for _, d := range s.DependsOn {
				if dw := p.Step(d).Workload; dw != nil && dw != s.Workload && !slices.Contains(wp.After, dw) {
					wp.After = append(wp.After, dw)
				}
			}
		case StartCapture:
			caps[s.Capture].Start = append(caps[s.Capture].Start, s.ID)
		case StopCapture:
			wp := caps[s.Capture]
			wp.Stop = append(wp.Stop, s.ID)
			wp.Covers = covered(s)
			if len(s.Capture.During) > 0 {
				wp.During = wp.Covers
				wp.Window = windowName(wp.During)
			}
			wp.File = CaptureHandle(s.Capture.Slug, wp.Window) + ".pcap"
		case StartImpair:
			imps[s.Impair].Start = append(imps[s.Impair].Start, s.ID)
		case StopImpair:
			wp := imps[s.Impair]
			wp.Stop = append(wp.Stop, s.ID)
			wp.Covers = covered(s)
			if len(s.Impair.During) > 0 {
				wp.During = wp.Covers
			}
		}
	}
	return nil
}

// windowName names a scoped window after its workloads: part of the agent
// handle and the file name, both [A-Za-z0-9._-] only ("write_bw-read_bw",
// not "write_bw+read_bw").
func windowName(during []*lab.Workload) string {
	var names []string
	for _, w := range during {
		names = append(names, w.Slug)
	}
	window := strings.Join(names, "-")
	if len(window) > 64 {
		window = fmt.Sprintf("%s-and-%d-more", during[0].Slug, len(during)-1)
	}
	return window
}

// CaptureHandle is a capture's agent handle, the stem of its file: the
// capture's slug, and its window when scoped.
func CaptureHandle(slug, window string) string {
	h := "cap." + slug
	if window != "" {
		h += "." + window
	}
	return h
}
