package report

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// Provision is what the run's provisioning did on one host (rlab run
// --provision, or provision = true in the lab), from state.json: each
// package it installed, with the version of the tool it was for as the
// host's facts read it afterwards, and what the host already had.
type Provision struct {
	Family    string    `json:"family,omitempty"` // debian, rhel, suse
	Installed []Package `json:"installed"`
	// NotInstalled were planned (the host lacked them) and are not
	// confirmed installed by this run: the install failed or was cut
	// short, or another host sharing the filesystem installed them first.
	NotInstalled string `json:"not_installed,omitempty"`
	// Present is what the lab needs that the host already had (programs,
	// and rdma_rxe): PresentCount of them, named in Present.
	PresentCount int    `json:"present_count"`
	Present      string `json:"present,omitempty"`
	Note         string `json:"note,omitempty"`
}

// Package is one package provisioning installed.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"` // of the tool it was for; "" when the facts know none
	For     string `json:"for,omitempty"`     // the programs (or module) it was installed for
}

// stateDoc is the part of state.json the report reads, decoded here:
// tolerant of older and newer rlabs, and no import of the run engine.
type stateDoc struct {
	Hosts []struct {
		Slug      string `json:"slug"`
		Provision *struct {
			Family    string              `json:"family"`
			Packages  []string            `json:"packages"`
			For       map[string][]string `json:"for"`
			Present   []string            `json:"present"`
			Installed []string            `json:"installed"`
			Done      bool                `json:"done"`
			Removed   bool                `json:"removed"`
		} `json:"provision"`
	} `json:"hosts"`
}

// provisions reads state.json's provisioning records by host slug; nil
// when the run provisioned nothing (or kept no state.json).
func (b *builder) provisions() map[string]*Provision {
	data, ok := b.read("state.json")
	if !ok {
		return nil
	}
	// A received state.json (up to 256 MiB) is decoded within the bounds
	// rlab down reads it with (the for maps' members, which CheckObjects
	// does not count, within rundir.StateObjects too): a list of empty
	// objects or a map of "k":null costs 20 to 100 times its text.
	if err := proto.CheckObjects(data, rundir.StateValues, rundir.StateObjects); err != nil {
		b.warn("read state.json: %v", err)
		return nil
	}
	var sk struct {
		Hosts []struct{ Provision struct{ For proto.Members } }
	}
	_ = json.Unmarshal(data, &sk)
	n := 0
	for _, h := range sk.Hosts {
		n += int(h.Provision.For)
	}
	if n > rundir.StateObjects {
		b.warn("read state.json: provision records: more than %d package names: refusing to decode them", rundir.StateObjects)
		return nil
	}
	var st stateDoc
	if err := json.Unmarshal(data, &st); err != nil {
		b.warn("read state.json: %v", err)
		return nil
	}
	out := map[string]*Provision{}
	for _, h := range st.Hosts {
		sp := h.Provision
		if sp == nil || h.Slug == "" {
			continue
		}
		p := &Provision{Family: sp.Family, Installed: []Package{}, PresentCount: len(sp.Present), Present: strings.Join(sp.Present, ", ")}
		var missing []string
		for _, pkg := range sp.Packages {
			if !slices.Contains(sp.Installed, pkg) {
				missing = append(missing, pkg)
			}
		}
		for _, pkg := range sp.Installed {
			p.Installed = append(p.Installed, Package{Name: pkg, For: strings.Join(sp.For[pkg], ", ")})
		}
		p.NotInstalled = strings.Join(missing, ", ")
		switch {
		case !sp.Done && len(sp.Packages) > 0:
			p.Note = "the install did not return (the run was interrupted or the host lost): see the host's logs/provision.log"
		case len(sp.Packages) == 0:
			p.Note = "nothing was missing: no package manager call"
		}
		if sp.Removed {
			p.Note = strings.TrimPrefix(p.Note+"; ", "; ") + "rlab down --remove-provisioned has removed the installed packages since"
		}
		out[h.Slug] = p
	}
	return out
}

// versionsFrom fills each installed package's version from the tool
// versions the host's facts (read again after the install) show.
func (p *Provision) versionsFrom(tools []KV) {
	ver := map[string]string{}
	for _, t := range tools {
		if t.Value != "present" {
			ver[t.Key] = t.Value
		}
	}
	for i := range p.Installed {
		for _, prog := range strings.Split(p.Installed[i].For, ", ") {
			if v := ver[prog]; v != "" {
				p.Installed[i].Version = v
				break
			}
		}
	}
}
