package plan

import (
	"fmt"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// Impairments in the plan: an impair step before the workloads it covers
// (every workload on its host when it has no `during`) and a remove-impair
// step after them, as a capture's start and stop.

type impInfo struct {
	start  *Step
	covers []*lab.Workload
}

// impairStarts adds each impairment's apply step, after its host's
// preflight and the rxe devices on its netdev.
func (b *builder) impairStarts(ready map[*lab.Host]string, deviceStep map[*lab.Device]string) []*impInfo {
	var out []*impInfo
	for _, im := range b.l.Impairs {
		s := b.add(&Step{ID: StepID(im.Host.Slug, StartImpair, im.Slug), Action: StartImpair, Host: im.Host.Name, Subject: im.Name, HostRef: im.Host, Impair: im, Description: impairText(im)})
		s.after(ready[im.Host])
		for _, r := range b.l.Devices {
			if r.Host == im.Host && r.Netdev == im.Netdev {
				s.after(deviceStep[r])
			}
		}
		ii := &impInfo{start: s, covers: im.During}
		if len(im.During) == 0 {
			for _, w := range b.l.Workloads {
				for _, h := range w.Hosts() {
					if h == im.Host {
						ii.covers = append(ii.covers, w)
						break
					}
				}
			}
		}
		out = append(out, ii)
	}
	return out
}

// impairStops adds each impairment's remove step, after the workloads it
// covers; stopsOn collects them per host for the fetch to wait on.
func (b *builder) impairStops(imps []*impInfo, done map[*lab.Workload][]string, stopsOn map[*lab.Host][]string) {
	for _, ii := range imps {
		im := ii.start.Impair
		s := b.add(&Step{ID: StepID(im.Host.Slug, StopImpair, im.Slug), Action: StopImpair, Host: im.Host.Name, Subject: im.Name, HostRef: im.Host, Impair: im,
			Description: fmt.Sprintf("remove impairment %s from %s (delete the netem root qdisc)", im.Name, im.Netdev)})
		s.after(ii.start.ID)
		for _, w := range ii.covers {
			s.after(done[w]...)
		}
		stopsOn[im.Host] = append(stopsOn[im.Host], s.ID)
	}
}

func impairText(im *lab.Impair) string {
	s := fmt.Sprintf("impair %s on %s: netem %s", im.Name, im.Netdev, im.Netem)
	if len(im.During) > 0 {
		var ws []string
		for _, w := range im.During {
			ws = append(ws, w.Name)
		}
		return s + ", in force during " + strings.Join(ws, ", ")
	}
	return s + ", in force for the whole run"
}
