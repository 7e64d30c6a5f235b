package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// Student is one for_each key of a class lab and what of the plan is
// theirs: the plan decides it once (engine/run hands their results and
// files back by it, and skips only their workloads when their host fails).
type Student struct {
	Key  string `json:"key"`
	Slug string `json:"slug"` // their folder under students/, unique in the run
	// Workloads are theirs of the selected workloads, in file order.
	Workloads []*lab.Workload `json:"-"`
	// Hosts are the hosts these use, with their jump hosts (shown, not
	// connected), in lab order.
	Hosts []*lab.Host `json:"-"`
	// Own are the hosts all of whose files are theirs: keyed with their key,
	// or used by no other student.
	Own map[*lab.Host]bool `json:"-"`
}

// students groups the selected workloads (sel) of class lab l by for_each
// key, in file order of their first workload. A lab is a class when its
// hosts are keyed per student (labs/class.hcl: host "server" { for_each =
// local.students }), and a student is a key some workload runs with on a
// host of that key; every workload of that key is theirs, shared hosts
// included. A for_each that only sweeps a workload (labs/lossy.hcl's loss
// points, on unkeyed hosts) makes no students, nor do keyed hosts that a
// workload crosses (labs/ring.hcl: node n0 writes to node n1). The whole
// lab says whether it is a class, not what --only selected: a run of part
// of a class lab is a class run.
func students(l, sel *lab.Lab) []*Student {
	keys := studentKeys(l)
	if keys == nil {
		return nil
	}
	var out []*Student
	byKey := map[string]*Student{}
	used := map[*lab.Host]map[string]bool{} // host -> keys using it
	var add func(s *Student, h *lab.Host)
	add = func(s *Student, h *lab.Host) {
		if h == nil {
			return
		}
		if used[h] == nil {
			used[h] = map[string]bool{}
		}
		used[h][s.Key] = true
		if h.JumpHost != nil {
			add(s, h.JumpHost)
		}
	}
	for _, w := range sel.Workloads {
		_, k, keyed := InstanceKey(w.Name)
		if !keyed || !keys[k] {
			continue
		}
		s := byKey[k]
		if s == nil {
			s = &Student{Key: k, Own: map[*lab.Host]bool{}}
			byKey[k] = s
			out = append(out, s)
		}
		s.Workloads = append(s.Workloads, w)
		for _, h := range w.Hosts() {
			add(s, h)
		}
	}
	for _, x := range sel.Devices {
		if _, k, keyed := InstanceKey(x.Name); keyed && byKey[k] != nil {
			add(byKey[k], x.Host)
		}
	}
	for _, c := range sel.Captures {
		if _, k, keyed := InstanceKey(c.Name); keyed && byKey[k] != nil {
			add(byKey[k], c.Host)
		}
	}
	slugs := map[string]bool{}
	for _, s := range out {
		for _, h := range l.Hosts {
			if used[h][s.Key] {
				s.Hosts = append(s.Hosts, h)
				_, hk, keyed := InstanceKey(h.Name)
				s.Own[h] = (keyed && hk == s.Key) || len(used[h]) == 1
			}
		}
		s.Slug = studentSlug(s.Key)
		for i := 2; slugs[s.Slug]; i++ {
			s.Slug = fmt.Sprintf("%s-%d", studentSlug(s.Key), i)
		}
		slugs[s.Slug] = true
	}
	return out
}

// studentKeys are the for_each keys of l that are students (students),
// nil when l is no class.
func studentKeys(l *lab.Lab) map[string]bool {
	keys := map[string]bool{}
	for _, w := range l.Workloads {
		_, k, keyed := InstanceKey(w.Name)
		if !keyed {
			continue
		}
		for _, h := range w.Hosts() {
			if _, hk, hkeyed := InstanceKey(h.Name); hkeyed {
				if hk != k {
					return nil // keyed hosts, but not per student
				}
				keys[k] = true
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return keys
}

var studentUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// studentSlug confines a for_each key (a user string) to one folder name:
// no separators, no "..", no control characters, never hidden or empty.
func studentSlug(k string) string {
	s := studentUnsafe.ReplaceAllString(k, "_")
	s = strings.TrimLeft(s, ".")
	if s == "" {
		s = "_"
	}
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}
