package results

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test reporters):
// one <testsuite> per run, one <testcase> per workload and one per evaluated
// expect. A failed or timed-out workload and an expect that did not hold are
// <failure>s; an infrastructure error of the run is an <error> case; skipped
// workloads are <skipped>.

// JUnitSuites is the root element; exported so tests and tools can read a
// junit.xml back with encoding/xml.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one <testsuite>.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is one <property>.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one <testcase>.
type JUnitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Skipped   *JUnitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a <failure>, <error> or <skipped>.
type JUnitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit renders junit.xml for a run.
func JUnit(r *Run) ([]byte, error) {
	lab := r.Lab
	if lab == "" {
		lab = "lab"
	}
	suite := JUnitSuite{Name: lab, Time: secs(r.Duration)}
	if !r.Started.IsZero() {
		suite.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	if r.ID != "" {
		suite.Properties = append(suite.Properties, JUnitProperty{"run_id", r.ID})
	}
	if r.Dir != "" {
		suite.Properties = append(suite.Properties, JUnitProperty{"run_dir", r.Dir})
	}
	suite.Properties = append(suite.Properties, JUnitProperty{"status", r.Status})
	class := "rlab." + lab
	if r.Status == RunError || r.Status == RunInterrupted || (r.Status == RunFailed && len(r.Workloads) == 0) {
		c := JUnitCase{Classname: class, Name: "run"}
		msg := r.Error
		if msg == "" {
			msg = "run " + r.Status
		}
		c.Error = &JUnitProblem{Message: oneLine(msg), Type: r.Status, Text: msg}
		suite.Cases = append(suite.Cases, c)
	}
	byWL := map[string][]Agg{}
	for _, a := range Aggregate(Measures(r.Samples)) {
		byWL[a.Workload] = append(byWL[a.Workload], a)
	}
	for _, wl := range r.Workloads {
		c := JUnitCase{Classname: class, Name: wl.Name, Time: secs(wl.Duration)}
		switch wl.Status {
		case StatusOK:
		case StatusSkipped:
			c.Skipped = &JUnitProblem{Message: oneLine(wl.Error)}
		case StatusTimedOut:
			c.Failure = &JUnitProblem{Message: "timed out: " + oneLine(wl.Error), Type: wl.Status, Text: wl.Error}
		default:
			msg := wl.Error
			if msg == "" {
				msg = "workload " + wl.Status
			}
			c.Failure = &JUnitProblem{Message: oneLine(msg), Type: wl.Status, Text: msg}
		}
		// Its result first, as the run's table prints it, then every
		// measure (no counter: results.json has them).
		c.SystemOut = "result: " + KeyNumbers(wl, byWL[wl.Name]) + "\n"
		if t := TroubleText(r.Samples, wl.Name); t != "" {
			c.SystemOut += "trouble counters: " + t + "\n"
		}
		c.SystemOut += samplesText(byWL[wl.Name])
		suite.Cases = append(suite.Cases, c)
		for _, e := range wl.Expects {
			name := "expect " + e.Condition
			if e.Size > 0 {
				name += " [size " + HumanSize(e.Size) + "]"
			}
			if e.Repeat != nil {
				name += fmt.Sprintf(" [repeat %d]", *e.Repeat+1)
			}
			ec := JUnitCase{Classname: class + "." + wl.Name, Name: name}
			if e.Skipped {
				ec.Skipped = &JUnitProblem{Message: "not evaluated: workload " + wl.Status}
			} else if !e.Held {
				msg := e.Message
				if msg == "" {
					msg = "expect did not hold: " + e.Condition
				}
				text := msg
				if e.Value != nil {
					text += "\n" + *e.Value
				}
				if e.Error != "" {
					text += "\n" + e.Error
				}
				ec.Failure = &JUnitProblem{Message: oneLine(msg), Type: "expect", Text: text}
			}
			suite.Cases = append(suite.Cases, ec)
		}
	}
	for _, c := range suite.Cases {
		suite.Tests++
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Error != nil:
			suite.Errors++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	root := JUnitSuites{Name: "rlab", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []JUnitSuite{suite}}
	if len(r.Students) > 0 {
		// A class lab's CI question is per student: one case each.
		ss := JUnitSuite{Name: lab + ".students", Timestamp: suite.Timestamp}
		for _, st := range r.Students {
			c := JUnitCase{Classname: class + ".students", Name: printable(st.Key)}
			if st.Status != StudentReady {
				text := st.Reason
				for _, e := range st.FailedExpects {
					text += "\n" + e.ExpectText()
				}
				c.Failure = &JUnitProblem{Message: printable(oneLine(st.StatusText())), Type: "student", Text: printableLines(text)}
				ss.Failures++
			}
			ss.Tests++
			ss.Cases = append(ss.Cases, c)
		}
		root.Tests += ss.Tests
		root.Failures += ss.Failures
		root.Suites = append(root.Suites, ss)
	}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func samplesText(aggs []Agg) string {
	var b strings.Builder
	for _, a := range aggs {
		fmt.Fprintf(&b, "%s", a.Metric)
		if a.Size > 0 {
			fmt.Fprintf(&b, " size=%d", a.Size)
		}
		fmt.Fprintf(&b, " median=%s %s n=%d\n", FormatValue(a.Median), a.Unit, a.N)
	}
	return b.String()
}

func secs(s float64) string {
	if s <= 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", s)
}
