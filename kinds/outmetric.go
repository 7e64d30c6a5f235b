package kinds

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// OutputMetric is a number a lab reads from what a program printed: a
// `metric "NAME" { pattern, unit, better }` block of a program or exec
// workload. Its samples carry Unit and go wherever a tool's metrics go
// (results.json, expect's result.NAME, compare, the summary and report).
type OutputMetric struct {
	Name string
	// Pattern is an RE2 expression matched against each line of the output.
	// With a named group `value` the metric is that number, read from the
	// last matching line; without one it is the number of matching lines.
	Pattern string
	Unit    string // "" for a count: "lines"
	// Better is "higher", "lower" or "" (neither: compare shows the change
	// without calling it better or worse).
	Better string
	// From is whose output a two-sided program's metric reads: "server",
	// or "" for the client's (and for a one-sided program's or exec's
	// command).
	From string
}

// FromServer is OutputMetric.From for a metric read from the server's output.
const FromServer = "server"

// ValueGroup is the named group of an OutputMetric pattern that holds the
// number.
const ValueGroup = "value"

// CountUnit is the unit of a metric that counts matching lines.
const CountUnit = "lines"

// CompileOutputMetric checks a metric's pattern: valid RE2, and a group
// named value, when it has one, is one named group only once.
func CompileOutputMetric(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, s := range re.SubexpNames() {
		if s == ValueGroup {
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("the group (?P<%s>...) appears %d times; a pattern holds it once", ValueGroup, n)
	}
	return re, nil
}

// ReadOutputMetric reads one metric from a program's output. It returns the
// value (the last matching line's `value` group, or the number of matching
// lines) and how many lines matched. No matching line is an error naming
// the metric and its pattern: a number the lab asked for is missing, so the
// workload fails rather than reporting nothing. A `value` that is no
// number is an error naming the line, quoted up to 512 characters (the
// value 128): the output is the host's, up to a reply line, and the error
// is the trial's, kept for the run (SECURITY 152; a line of a megabyte
// made each failed trial's error two).
func ReadOutputMetric(m OutputMetric, out []byte) (float64, int, error) {
	re, err := CompileOutputMetric(m.Pattern)
	if err != nil {
		return 0, 0, fmt.Errorf("metric %q: pattern %q: %w", m.Name, m.Pattern, err)
	}
	vi := re.SubexpIndex(ValueGroup)
	var value float64
	matched := 0
	var badLine string
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		sm := re.FindSubmatchIndex(line)
		if sm == nil {
			continue
		}
		matched++
		if vi < 0 {
			continue
		}
		if sm[2*vi] < 0 {
			badLine = string(line)
			continue
		}
		s := strings.TrimSpace(string(line[sm[2*vi]:sm[2*vi+1]]))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, matched, fmt.Errorf("metric %q: pattern %q matched %.512q, whose value %.128q is not a number", m.Name, m.Pattern, line, s)
		}
		value, badLine = v, ""
	}
	switch {
	case matched == 0:
		return 0, 0, fmt.Errorf("metric %q: pattern %q matched no line of the output", m.Name, m.Pattern)
	case vi < 0:
		return float64(matched), matched, nil
	case badLine != "":
		return 0, matched, fmt.Errorf("metric %q: pattern %q matched %.512q without its value group", m.Name, m.Pattern, badLine)
	}
	return value, matched, nil
}

// UnitOf is the unit an output metric's samples carry.
func (m OutputMetric) UnitOf() string {
	if m.Unit != "" {
		return m.Unit
	}
	re, err := CompileOutputMetric(m.Pattern)
	if err == nil && re.SubexpIndex(ValueGroup) < 0 {
		return CountUnit
	}
	return ""
}
