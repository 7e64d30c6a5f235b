package report

import (
	"path"

	"github.com/rlab-dev/rlab/engine/results"
)

// Students is a class lab's per-student table, first in the page: the
// failed students on top, then the ready ones. From
// results.FoldStudentsAt students the ready ones, and the workloads and
// hosts that are only theirs, are folded under closed <details>, so the
// first screen of a 500-student report is who needs attention.
type Students struct {
	Total     int          `json:"total"`
	Ready     int          `json:"ready"`
	Folded    bool         `json:"folded,omitempty"`
	Failed    []StudentRow `json:"failed,omitempty"`
	ReadyRows []StudentRow `json:"ready_rows,omitempty"`
	// FoldedWorkloads and FoldedHosts count what is folded.
	FoldedWorkloads int `json:"folded_workloads,omitempty"`
	FoldedHosts     int `json:"folded_hosts,omitempty"`
}

// StudentRow is one student of the table.
type StudentRow struct {
	Key       string   `json:"key"`
	Hosts     []string `json:"hosts"`
	Workloads []WLLink `json:"workloads"`
	OK        int      `json:"ok"`
	FailedN   int      `json:"failed"`
	Status    string   `json:"status"`
	Reason    string   `json:"reason,omitempty"`
	Folder    string   `json:"folder,omitempty"`  // students/<slug>
	Summary   string   `json:"summary,omitempty"` // their summary.md
}

// WLLink names a workload and its anchor in the page.
type WLLink struct {
	Name   string `json:"name"`
	Anchor string `json:"anchor,omitempty"`
}

// students fills Data.Students from results.json's students and folds
// the workloads and hosts of ready students in a large class: a workload
// is folded when every student it belongs to is ready, a host when every
// student using it is (a shared server some failed student uses stays).
func (b *builder) students(doc *results.Run) {
	if len(doc.Students) == 0 {
		return
	}
	ss, ready := results.FailedFirst(doc.Students)
	st := &Students{Total: len(ss), Ready: ready, Folded: len(ss) >= results.FoldStudentsAt && ready > 0}
	anchor := map[string]string{}
	for _, w := range b.d.Workloads {
		anchor[w.Name] = w.Anchor
	}
	wlReady, hostReady := map[string]bool{}, map[string]bool{}
	mark := func(m map[string]bool, k string, ok bool) {
		if v, seen := m[k]; !seen || v {
			m[k] = ok
		}
	}
	for _, s := range ss {
		row := StudentRow{Key: s.Key, Hosts: s.Hosts, OK: s.OK, FailedN: s.Failed, Status: s.Status, Reason: s.Reason, Folder: s.Folder}
		if s.Folder != "" {
			row.Summary = path.Join(s.Folder, results.SummaryFile)
		}
		ok := s.Status == results.StudentReady
		for _, w := range s.Workloads {
			row.Workloads = append(row.Workloads, WLLink{Name: w, Anchor: anchor[w]})
			mark(wlReady, w, ok)
		}
		for _, h := range s.Hosts {
			mark(hostReady, slugOf(h), ok)
		}
		if ok {
			st.ReadyRows = append(st.ReadyRows, row)
		} else {
			st.Failed = append(st.Failed, row)
		}
	}
	if st.Folded {
		for i, w := range b.d.Workloads {
			if wlReady[w.Name] && w.Status != "" && statusClass(w.Status) != "bad" {
				b.d.Workloads[i].Folded = true
				st.FoldedWorkloads++
			}
		}
		for i, h := range b.d.Hosts {
			if hostReady[h.Slug] && len(h.Errors) == 0 {
				b.d.Hosts[i].Folded = true
				st.FoldedHosts++
			}
		}
	}
	b.d.Students = st
}
