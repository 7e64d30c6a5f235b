package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// Student is how one student of a class lab ended: a student is a for_each
// key a workload runs with on a host of that key (a class's hosts are keyed
// per student; engine/plan's students has the rule); the unkeyed hosts
// they use (a shared server, the bastion they jump through) count for every
// student that uses them.
type Student struct {
	Key string `json:"key"`
	// Folder is the student's hand-back folder, relative to the run
	// directory (students/<slug>); "" when the run made none.
	Folder    string   `json:"folder,omitempty"`
	Hosts     []string `json:"hosts"`
	Workloads []string `json:"workloads"`
	OK        int      `json:"ok"`     // workloads that ran and whose expects held
	Failed    int      `json:"failed"` // the others: failed, timed out, skipped, or an expect did not hold
	Status    string   `json:"status"` // StudentReady or StudentFailed
	// Reason is the first thing that went wrong, naming its host or
	// workload and step.
	Reason string `json:"reason,omitempty"`
	// FailedExpects are the expects that did not hold, with what they read.
	FailedExpects []StudentExpect `json:"failed_expects,omitempty"`
}

// StudentExpect is an expect of a student's workload that did not hold.
type StudentExpect struct {
	Workload string `json:"workload"`
	Expect
}

// Student statuses.
const (
	StudentReady  = "ready"
	StudentFailed = "failed"
)

// StudentsFile is students.json in a run directory of a class lab.
const StudentsFile = "students.json"

// WriteStudentsFile writes students.json into dir.
func WriteStudentsFile(dir string, ss []Student) error {
	b, err := json.MarshalIndent(ss, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", StudentsFile, err)
	}
	return writeAtomic(filepath.Join(dir, StudentsFile), append(b, '\n'))
}

// StatusText is the status column of a student: "ready" or
// "failed: <reason>".
func (s Student) StatusText() string {
	if s.Status == StudentReady {
		return StudentReady
	}
	if s.Reason == "" {
		return StudentFailed
	}
	return StudentFailed + ": " + oneLine(s.Reason)
}

// ExpectText says what an expect that did not hold wanted and got:
// `workload "w": bw_avg_gbps > 1 at 64 KiB: got bw_avg_gbps = 0.07 (below 1 Gb/s)`.
func (e StudentExpect) ExpectText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %q: wanted %s", e.Workload, e.Condition)
	if e.Size > 0 {
		fmt.Fprintf(&b, " at %s", HumanSize(e.Size))
	}
	switch {
	case e.Error != "":
		fmt.Fprintf(&b, ": %s", oneLine(e.Error))
	case e.Value != nil:
		fmt.Fprintf(&b, ": got %s", *e.Value)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(e.Message))
	}
	return b.String()
}

// FoldStudentsAt is the class size from which the ready students are
// folded (one line in a terminal, a <details> in summary.md and the
// report) under the failed ones: at 500 students the first screen names
// every student who needs attention.
const FoldStudentsAt = 10

// FailedFirst is ss with the failed students first, each part in run
// order, and how many are ready.
func FailedFirst(ss []Student) (out []Student, ready int) {
	out = make([]Student, 0, len(ss))
	for _, s := range ss {
		if s.Status != StudentReady {
			out = append(out, s)
		}
	}
	ready = len(ss) - len(out)
	for _, s := range ss {
		if s.Status == StudentReady {
			out = append(out, s)
		}
	}
	return out, ready
}

// foldsReady reports whether a table of ss folds its ready students.
func foldsReady(ss []Student, ready int) bool {
	return len(ss) >= FoldStudentsAt && ready > 0
}

// WriteStudentsTable prints the per-student status table `rlab run` and
// `rlab check --validate` end with, failed students first; verbose adds
// each failing expect under its student. From FoldStudentsAt students the
// ready ones are one line unless all is set (`rlab show --students --all`).
func WriteStudentsTable(w io.Writer, ss []Student, verbose, all bool) error {
	ss, ready := FailedFirst(ss)
	fold := !all && foldsReady(ss, ready)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "students: %d of %d ready\n", ready, len(ss))
	rows := ss
	if fold {
		rows = ss[:len(ss)-ready]
	}
	if len(rows) > 0 {
		tw := termsafe.NewTable(&buf, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  STUDENT\tHOSTS\tWORKLOADS\tSTATUS")
		for _, s := range rows {
			fmt.Fprintf(tw, "  %s\t%d\t%d ok, %d failed\t%s\n", printable(s.Key), len(s.Hosts), s.OK, s.Failed, printable(s.StatusText()))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if fold {
		fmt.Fprintf(&buf, "  %s ready, not listed (rlab show --students --all)\n", plural(ready, "student"))
	}
	if verbose {
		for _, s := range ss {
			for _, e := range s.FailedExpects {
				fmt.Fprintf(&buf, "  %s: %s\n", printable(s.Key), printable(e.ExpectText()))
			}
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// printableLines is printable, keeping line breaks.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// printable keeps a user string (a for_each key) from moving the terminal's
// cursor, breaking the table or reordering what follows it: every
// character termsafe escapes (C0, DEL, C1, bidi controls, line separators,
// invalid UTF-8) becomes '?' (SECURITY 116: a bidi override in a received
// run's student key was printed raw by rlab show --students).
func printable(s string) string {
	if termsafe.Line(s) == s {
		return s
	}
	var b strings.Builder
	for _, r := range s { // invalid UTF-8 decodes to U+FFFD, printed as itself
		if termsafe.Line(string(r)) != string(r) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// studentsSection writes the "Students" section of summary.md: the failed
// students first; from FoldStudentsAt students the ready ones are folded in
// a <details class="students"> (`rlab show --all` unfolds it).
func studentsSection(b *bytes.Buffer, ss []Student) {
	ss, ready := FailedFirst(ss)
	fmt.Fprintf(b, "## Students\n\n%d of %d ready.\n\n", ready, len(ss))
	table := func(rows []Student) {
		b.WriteString("| student | hosts | workloads | status | folder |\n|---|---|---|---|---|\n")
		for _, s := range rows {
			folder := "–"
			if s.Folder != "" {
				folder = "`" + mdCode(s.Folder) + "/`"
			}
			status := "ready"
			if s.Status != StudentReady {
				status = "**" + mdCell(printable(s.StatusText())) + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %d ok, %d failed | %s | %s |\n", mdCell(printable(s.Key)), mdCell(strings.Join(s.Hosts, ", ")), s.OK, s.Failed, status, folder)
		}
	}
	if !foldsReady(ss, ready) {
		table(ss)
	} else {
		if failed := ss[:len(ss)-ready]; len(failed) > 0 {
			table(failed)
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "<details class=\"students\"><summary>%s ready</summary>\n\n", plural(ready, "student"))
		table(ss[len(ss)-ready:])
		b.WriteString("\n</details>\n")
	}
	var fails []string
	for _, s := range ss {
		for _, e := range s.FailedExpects {
			fails = append(fails, fmt.Sprintf("- %s: %s\n", mdCell(printable(s.Key)), mdCell(printable(e.ExpectText()))))
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(b, "\nExpects that did not hold:\n\n%s", strings.Join(fails, ""))
	}
	b.WriteString("\n")
}

// WriteStudentRun writes a student's results.json and summary.md (no
// junit.xml: that is the whole run's CI report) into dir.
func WriteStudentRun(dir string, r *Run) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, ResultsFile), b); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, SummaryFile), Summary(r, ""))
}

// ForStudent is the part of a run that is one student's: their workloads
// and samples, and their own line of the students table.
func (r *Run) ForStudent(s Student) *Run {
	out := *r
	out.Workloads, out.Samples, out.Students = nil, []Sample{}, []Student{s}
	// The other students' files are not the student's: the run, which
	// knows which files its folder holds, lists those (engine/run).
	out.Artifacts = nil
	mine := map[string]bool{}
	for _, w := range s.Workloads {
		mine[w] = true
	}
	for _, w := range r.Workloads {
		if mine[w.Name] {
			out.Workloads = append(out.Workloads, w)
		}
	}
	for _, x := range r.Samples {
		if mine[x.Meta.Workload] {
			out.Samples = append(out.Samples, x)
		}
	}
	// Only the platforms of the student's own hosts, as when each sample
	// carried its hosts' (schema 1).
	out.Platforms = nil
	keep := func(hosts []string) {
		for _, h := range hosts {
			if p, ok := r.Platforms[h]; ok {
				if out.Platforms == nil {
					out.Platforms = map[string]Platform{}
				}
				out.Platforms[h] = p
			}
		}
	}
	keep(s.Hosts)
	for _, x := range out.Samples {
		keep(x.Meta.Hosts)
	}
	out.Status = RunOK
	if s.Status != StudentReady {
		out.Status = RunFailed
	}
	out.Error = s.Reason
	return &out
}
