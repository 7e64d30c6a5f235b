package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/steps"
)

// student is one for_each key of a class lab and what of this run is theirs.
type student struct {
	key, slug string
	hosts     []*lab.Host // lab order; jump hosts included (shown, not connected)
	own       map[*lab.Host]bool
	workloads []*workloadNode
}

// studentsOf groups the selected workloads of a class lab by for_each key,
// in file order of their first workload. A lab is a class when its hosts
// are keyed per student (labs/class.hcl: host "server" { for_each =
// local.students }), and a student is a key some workload runs with on a
// host of that key; every workload of that key is theirs, shared hosts
// included. A for_each that only sweeps a workload (labs/lossy.hcl's loss
// points, on unkeyed hosts) makes no students, nor do keyed hosts that a
// workload crosses (labs/ring.hcl: node n0 writes to node n1).
func (r *runner) studentsOf() []*student {
	keys := r.studentKeys()
	if keys == nil {
		return nil
	}
	var out []*student
	byKey := map[string]*student{}
	used := map[*lab.Host]map[string]bool{} // host -> keys using it
	var add func(s *student, h *lab.Host)
	add = func(s *student, h *lab.Host) {
		if h == nil {
			return
		}
		if used[h] == nil {
			used[h] = map[string]bool{}
		}
		used[h][s.key] = true
		if h.JumpHost != nil {
			add(s, h.JumpHost)
		}
	}
	for _, n := range r.workloads {
		_, k, keyed := plan.InstanceKey(n.lab.Name)
		if !keyed || !keys[k] {
			continue
		}
		s := byKey[k]
		if s == nil {
			s = &student{key: k, own: map[*lab.Host]bool{}}
			byKey[k] = s
			out = append(out, s)
		}
		s.workloads = append(s.workloads, n)
		for _, h := range n.lab.Hosts() {
			add(s, h)
		}
	}
	for _, x := range r.plan.Selected.RXEs {
		if _, k, keyed := plan.InstanceKey(x.Name); keyed && byKey[k] != nil {
			add(byKey[k], x.Host)
		}
	}
	for _, c := range r.plan.Selected.Captures {
		if _, k, keyed := plan.InstanceKey(c.Name); keyed && byKey[k] != nil {
			add(byKey[k], c.Host)
		}
	}
	slugs := map[string]bool{}
	for _, s := range out {
		for _, h := range r.lab.Hosts {
			if used[h][s.key] {
				s.hosts = append(s.hosts, h)
				// A host is the student's own when it is keyed with their
				// key or no other student uses it: all its files are theirs.
				_, hk, keyed := plan.InstanceKey(h.Name)
				s.own[h] = (keyed && hk == s.key) || len(used[h]) == 1
			}
		}
		s.slug = studentSlug(s.key)
		for i := 2; slugs[s.slug]; i++ {
			s.slug = fmt.Sprintf("%s-%d", studentSlug(s.key), i)
		}
		slugs[s.slug] = true
	}
	return out
}

// studentKeys are the for_each keys that are students (studentsOf), nil
// when the lab is no class. The whole lab decides, not what --only
// selected: a run of part of a class lab is a class run.
func (r *runner) studentKeys() map[string]bool {
	keys := map[string]bool{}
	for _, w := range r.lab.Workloads {
		_, k, keyed := plan.InstanceKey(w.Name)
		if !keyed {
			continue
		}
		for _, h := range w.Hosts() {
			if _, hk, hkeyed := plan.InstanceKey(h.Name); hkeyed {
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

// breakHost marks a host of a class lab unusable for its workloads (its rxe
// device or preflight failed) without stopping the other students: its
// workloads are skipped with this reason, its files are still pulled and it
// is torn down as usual. In a check the failure is the student's (exit 1);
// in a run it is the infrastructure's (exit 2).
func (r *runner) breakHost(host string, err error) {
	r.mu.Lock()
	if r.broken == nil {
		r.broken = map[string]error{}
	}
	if _, ok := r.broken[host]; !ok {
		r.broken[host] = err
	}
	r.mu.Unlock()
	if r.opts.Validate {
		r.addErr(err)
	} else {
		r.addErr(&infraError{err})
	}
}

// hostProblem is the error that made a host unusable, if any.
func (r *runner) hostProblem(host string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.lost[host]; err != nil {
		return err
	}
	return r.broken[host]
}

// studentResults is each student's status: ready when every one of their
// workloads ran and every expect held; else failed with the first reason
// (a host that could not be reached or prepared, then a workload that did
// not end ok, then an expect that did not hold).
func (r *runner) studentResults(res *Result) []results.Student {
	byWL := map[string][]ExpectResult{}
	for _, e := range res.Expects {
		byWL[e.Workload] = append(byWL[e.Workload], e)
	}
	outcome := map[*workloadNode]*steps.Outcome{}
	for i, n := range r.workloads {
		if i < len(res.Outcomes) {
			outcome[n] = res.Outcomes[i]
		}
	}
	red := newRedactor(r.lab.Sensitive)
	var out []results.Student
	for _, s := range r.students {
		st := results.Student{Key: s.key, Status: results.StudentReady, Folder: path.Join(StudentsDir, s.slug)}
		var reasons []string
		for _, h := range s.hosts {
			st.Hosts = append(st.Hosts, h.Name)
			if !r.connects(h) {
				continue // a jump host: its failures show as its hosts' connect errors
			}
			if err := r.hostProblem(h.Name); err != nil {
				reasons = append(reasons, err.Error())
			}
		}
		for _, n := range s.workloads {
			st.Workloads = append(st.Workloads, n.lab.Name)
			o := outcome[n]
			ok := o != nil && o.Status == steps.StatusOK
			if !ok {
				status, msg := "not run", ""
				if o != nil {
					status, msg = o.Status, o.Error
				}
				if !strings.HasPrefix(msg, "workload ") { // step errors name their workload already
					msg = fmt.Sprintf("workload %q %s: %s", n.lab.Name, strings.ReplaceAll(status, "_", " "), msg)
				}
				reasons = append(reasons, msg)
			}
			for _, e := range byWL[n.lab.Name] {
				if e.Held || e.Skipped {
					continue
				}
				ok = false
				x := results.StudentExpect{Workload: n.lab.Name, Expect: results.Expect{Condition: e.Condition, Message: red.Replace(e.Message), Held: false, Size: e.Size, Error: red.Replace(e.Error)}}
				if e.Got != "" {
					got := e.Got
					x.Value = &got
				}
				st.FailedExpects = append(st.FailedExpects, x)
				reasons = append(reasons, "expect on "+x.ExpectText())
			}
			if ok {
				st.OK++
			} else {
				st.Failed++
			}
		}
		if len(reasons) > 0 {
			st.Status, st.Reason = results.StudentFailed, red.Replace(reasons[0])
		}
		out = append(out, st)
	}
	return out
}

// connects reports whether the run opens an agent on h (jump hosts are
// only dialled through).
func (r *runner) connects(h *lab.Host) bool {
	for _, x := range r.hosts {
		if x == h {
			return true
		}
	}
	return false
}

// StudentsDir holds the per-student hand-back folders of a class run.
const StudentsDir = "students"

// writeStudents writes students.json and, for every student,
// students/<slug>/ with hard links to their hosts' files (all files of
// hosts that are theirs alone; facts and their own workloads' logs of
// shared hosts), their part of results.json and a summary.md. Hard links
// keep the run directory self-contained and the manifest exact (each path
// is a regular file with its own sha256); where a link cannot be made the
// file is copied.
func (r *runner) writeStudents(doc *results.Run) error {
	if len(doc.Students) == 0 {
		return nil
	}
	root := filepath.Join(r.dir, StudentsDir)
	for _, s := range r.students {
		dst := filepath.Join(root, s.slug)
		if err := os.RemoveAll(dst); err != nil { // written again after a failed teardown
			return fmt.Errorf("write folder of student %q: %w", s.key, err)
		}
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return fmt.Errorf("write folder of student %q: %w", s.key, err)
		}
	}
	if err := results.WriteStudentsFile(r.dir, doc.Students); err != nil {
		return err
	}
	// Each student's folder is its own: they are written studentWorkers at
	// a time (a class of 500 synced two files and a folder each, one after
	// another: seconds of the run), and the first error in class order is
	// returned, as when they were written in turn.
	errs := make([]error, len(r.students))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(studentWorkers, len(r.students)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = r.writeStudent(r.students[i], doc, doc.Students[i], filepath.Join(root, r.students[i].slug))
			}
		}()
	}
	for i := range r.students {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// studentWorkers is how many student folders writeStudents writes at once.
const studentWorkers = 16

// writeStudent fills the folder dst of one student (writeStudents).
func (r *runner) writeStudent(s *student, doc *results.Run, st results.Student, dst string) error {
	mine := doc.ForStudent(st)
	var logs []string
	for _, w := range mine.Workloads {
		logs = append(logs, w.Logs...)
	}
	for _, h := range s.hosts {
		if !r.connects(h) {
			continue
		}
		rel := path.Join("hosts", h.Slug)
		var err error
		if s.own[h] {
			err = linkTree(filepath.Join(r.dir, rel), filepath.Join(dst, rel))
		} else {
			for _, f := range append([]string{path.Join(rel, "facts.json")}, logs...) {
				if strings.HasPrefix(f, rel+"/") {
					if lerr := linkFile(filepath.Join(r.dir, f), filepath.Join(dst, f)); lerr != nil && !errors.Is(lerr, fs.ErrNotExist) {
						err = errors.Join(err, lerr)
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("write folder of student %q: files of host %q: %w", s.key, h.Name, err)
		}
	}
	if err := results.WriteStudentRun(dst, mine); err != nil {
		return fmt.Errorf("write folder of student %q: %w", s.key, err)
	}
	return nil
}

// linkTree links every regular file under src into dst (same layout).
func linkTree(src, dst string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return linkFile(p, filepath.Join(dst, rel))
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the host wrote nothing (never connected)
	}
	return err
}

func linkFile(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
