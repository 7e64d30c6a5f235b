package run

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/steps"
)

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
	if r.plan.Check {
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
	outcome := map[*lab.Workload]*steps.Outcome{}
	for i, n := range r.workloads {
		if i < len(res.Outcomes) {
			outcome[n.Workload] = res.Outcomes[i]
		}
	}
	red := newRedactor(r.lab.Sensitive)
	var out []results.Student
	for _, s := range r.plan.Students {
		st := results.Student{Key: s.Key, Status: results.StudentReady, Folder: path.Join(StudentsDir, s.Slug)}
		var reasons []string
		for _, h := range s.Hosts {
			st.Hosts = append(st.Hosts, h.Name)
			if !r.plan.Agent(h) {
				continue // a jump host: its failures show as its hosts' connect errors
			}
			if err := r.hostProblem(h.Name); err != nil {
				reasons = append(reasons, err.Error())
			}
		}
		for _, w := range s.Workloads {
			st.Workloads = append(st.Workloads, w.Name)
			o := outcome[w]
			ok := o != nil && o.Status == steps.StatusOK
			if !ok {
				status, msg := "not run", ""
				if o != nil {
					status, msg = o.Status, o.Error
				}
				if !strings.HasPrefix(msg, "workload ") { // step errors name their workload already
					msg = fmt.Sprintf("workload %q %s: %s", w.Name, strings.ReplaceAll(status, "_", " "), msg)
				}
				reasons = append(reasons, msg)
			}
			for _, e := range byWL[w.Name] {
				if e.Held || e.Skipped {
					continue
				}
				ok = false
				x := results.StudentExpect{Workload: w.Name, Expect: results.Expect{Condition: e.Condition, Message: red.Replace(e.Message), Held: false, Size: e.Size, Error: red.Replace(e.Error)}}
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
	for _, s := range r.plan.Students {
		dst := filepath.Join(root, s.Slug)
		if err := os.RemoveAll(dst); err != nil { // written again after a failed teardown
			return fmt.Errorf("write folder of student %q: %w", s.Key, err)
		}
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return fmt.Errorf("write folder of student %q: %w", s.Key, err)
		}
	}
	if err := results.WriteStudentsFile(r.dir, doc.Students); err != nil {
		return err
	}
	// Each student's folder is its own: they are written studentWorkers at
	// a time (a class of 500 synced two files and a folder each, one after
	// another: seconds of the run), and the first error in class order is
	// returned, as when they were written in turn.
	errs := make([]error, len(r.plan.Students))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(studentWorkers, len(r.plan.Students)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := r.plan.Students[i]
				errs[i] = r.writeStudent(s, doc, doc.Students[i], filepath.Join(root, s.Slug))
			}
		}()
	}
	for i := range r.plan.Students {
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

// writeStudent writes one student's folder: links to its own hosts' files,
// the shared hosts' facts and its workloads' logs, and its own results.
func (r *runner) writeStudent(s *plan.Student, doc *results.Run, st results.Student, dst string) error {
	mine := doc.ForStudent(st)
	var logs []string
	for _, w := range mine.Workloads {
		logs = append(logs, w.Logs...)
	}
	mine.Artifacts = nil // only the ones its folder holds (below)
	for _, h := range s.Hosts {
		if !r.plan.Agent(h) {
			continue
		}
		rel := path.Join("hosts", h.Slug)
		for _, a := range doc.Artifacts {
			if strings.HasPrefix(a.Path, rel+"/") && (s.Own[h] || slices.Contains(logs, a.Path)) {
				mine.Artifacts = append(mine.Artifacts, a)
			}
		}
		var err error
		if s.Own[h] {
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
			return fmt.Errorf("write folder of student %q: files of host %q: %w", s.Key, h.Name, err)
		}
	}
	if err := results.WriteStudentRun(dst, mine); err != nil {
		return fmt.Errorf("write folder of student %q: %w", s.Key, err)
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

// hardLink makes a hard link; a test makes it fail to take copyFile's
// path (a student folder on another file system).
var hardLink = os.Link

// linkFile gives the run directory's file src the name dst too: a hard
// link, or where one cannot be made a copy (copyFile).
func linkFile(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	if err := hardLink(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

// copyFile copies the regular file src to dst (mode 0600, replacing it)
// as a stream, and no more than src's size when opened: a pulled capture
// is as large as the pull cap allows, which a whole-file read held in
// memory, once per student folder being written (16 at a time). src is
// not followed if it is a symlink and not waited on if it is a FIFO. The
// copy is written aside and renamed over dst, so a dst that is already a
// link to src (the link failed as it exists) is replaced, never truncated
// with src.
func copyFile(src, dst string) (err error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("copy %s: not a regular file (%s)", src, fi.Mode().Type())
	}
	out, err := os.CreateTemp(filepath.Dir(dst), ".copy-*") // mode 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	if _, err = io.Copy(out, io.LimitReader(in, fi.Size())); err != nil {
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), dst)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
