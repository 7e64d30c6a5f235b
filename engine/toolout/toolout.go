// Package toolout is the output-parsing library of the tool families: it
// turns what a family's parser read from a tool's output (Rows of metric
// values, and the Info the tool stated about its run) into results.Samples,
// with their metadata and units. The parsers themselves live in their
// family's package (kinds/perftest: text reports and --out_json files;
// kinds/pingpong; kinds/rping), registered with the family (a kinds.Kind
// whose value implements Parser); Parse finds a tool's through the kinds
// registry. The pieces several parsers share are here: SplitLines,
// ErrorHint, FailHint, ParseNumber.
//
// Parsers are pure functions of their input: no I/O, no side effects, and
// garbage gives an error, never a panic. Metric names and units come from
// the families' descriptors (kinds.Metrics); every sample carries its unit.
// Bandwidth is always recorded in Gb/s whatever the tool printed (perftest
// prints MB/sec, meaning MiB/s, unless run with --report_gbits); the unit
// the tool printed is kept in Meta.Extra["reported_unit"].
//
// The tests here read every family's real outputs (testdata/) through
// Parse, with the built-in families registered: the cross-family corpus,
// goldens and fuzz targets.
//
// This package imports only kinds, engine/results and the standard library;
// it must not import a family (they import it).
package toolout

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// Options says what a tool output was measured on; it fills the samples'
// metadata. Only JSON and ReportGbits change how the output is read.
type Options struct {
	Workload    string
	Repeat      int      // 0-based
	Hosts       []string // server first, then client
	Devices     []string // rxe devices, server first; default: the device the tool names
	ToolVersion string

	// JSON says stdout is the content of a perftest --out_json file rather
	// than its text report.
	JSON bool
	// ReportGbits says perftest ran with --report_gbits. Only the JSON
	// format needs it: it does not state its bandwidth unit, while the text
	// table header does.
	ReportGbits bool

	// Stderr of the same process, if kept apart from stdout: read for
	// warnings and error lines (rping reports its failures there).
	Stderr []byte
}

// Info holds the facts a tool states about its own run (the perftest header
// block, the GIDs pingpong prints), for the run record and for checks such as
// "both ends used the same MTU".
type Info struct {
	Tool       string `json:"tool"`
	Source     string `json:"source"`         // "text" or "json"
	Test       string `json:"test,omitempty"` // perftest title, e.g. "RDMA_Write BW Test"
	Device     string `json:"device,omitempty"`
	Transport  string `json:"transport,omitempty"`  // perftest "Transport type": IB
	Connection string `json:"connection,omitempty"` // RC, UC, UD, XRC, DC
	MTU        int    `json:"mtu,omitempty"`        // bytes
	LinkType   string `json:"link_type,omitempty"`  // Ethernet, IB
	GIDIndex   *int   `json:"gid_index,omitempty"`
	QPs        int    `json:"qps,omitempty"`
	RDMACM     bool   `json:"rdma_cm,omitempty"`
	DataExchg  string `json:"data_exchange,omitempty"` // "Ethernet" or "rdma_cm"
	// BWUnit is the bandwidth unit the tool printed ("Gb/sec" or "MB/sec");
	// samples are converted to Gb/s.
	BWUnit string `json:"bw_unit,omitempty"`
	// LocalGID and RemoteGID are the GIDs the tool reports for its QP and
	// its peer's, as printed (pingpong: "::ffff:10.99.0.2"; perftest:
	// "00:00:...:255:255:10:99:00:02").
	LocalGID  string `json:"local_gid,omitempty"`
	RemoteGID string `json:"remote_gid,omitempty"`
	// Bidirectional says perftest ran with -b: every bandwidth and message
	// rate of the table is the sum of both directions (perftest's
	// print_full_bw_report adds the peer's report to its own), and its
	// samples say so in Meta.Extra["bidirectional"].
	Bidirectional bool `json:"bidirectional,omitempty"`
	// PerDirection holds the parts of that sum when perftest also ran with
	// --report-both ("Local results:", "Remote results:"). They are facts,
	// not samples, so that a sum and its parts are never folded into one
	// median.
	PerDirection []DirectionResult `json:"per_direction,omitempty"`
	// HistogramLines counts the per-iteration latencies perftest printed
	// with -H or -U: read as such, not kept (the table's percentiles are
	// the figures).
	HistogramLines int `json:"histogram_lines,omitempty"`
	// Warnings are lines the tool printed that did not stop it, e.g.
	// "Correlation coefficient r^2: 0.894008 < 0.9".
	Warnings []string `json:"warnings,omitempty"`
}

// DirectionResult is one row of perftest's per-direction tables (-b with
// --report-both): what one side sent, bandwidth in Gb/s.
type DirectionResult struct {
	Direction   string  `json:"direction"` // "local" or "remote"
	Size        int64   `json:"size"`
	BWAvgGbps   float64 `json:"bw_avg_gbps"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`
}

// ErrNoParser is returned for tools whose output rlab does not parse (tcp is
// measured by the agent itself; exec output is kept, not read).
var ErrNoParser = errors.New("no output parser for this tool")

// MaxRows bounds the result rows one run's output may hold: a perftest
// sweep prints one row per size (23 for -a), the other tools one. The
// output is the host's, and a host that printed 8 MiB of rows made
// 215,000 samples of one trial (508 MiB to parse, held for the rest of the
// run: SECURITY 127). A parser stops at the row past it (TooManyRows).
const MaxRows = 1000

// MaxInfoValue bounds each text the tool states about its run (Info's
// device, transport, connection type, link type, title, GIDs): perftest
// prints "RC" and "mlx5_0", a GID is at most 47 characters. The value is
// copied into every sample of the trial (Meta.Transport, Meta.Devices),
// so a header line of a megabyte made each of a trial's up to 3,000
// samples a megabyte in results.json (SECURITY 137). A longer value is
// cut, the cut marked with "…".
const MaxInfoValue = 128

// bound cuts Info's texts to MaxInfoValue bytes each.
func (i *Info) bound() {
	for _, f := range []*string{&i.Source, &i.Test, &i.Device, &i.Transport, &i.Connection, &i.LinkType, &i.DataExchg, &i.BWUnit, &i.LocalGID, &i.RemoteGID} {
		if len(*f) > MaxInfoValue {
			c := MaxInfoValue
			for c > 0 && !utf8.RuneStart((*f)[c]) {
				c--
			}
			*f = (*f)[:c] + "…"
		}
	}
}

// ErrTooManyRows marks an output of more than MaxRows result rows.
var ErrTooManyRows = errors.New("more result rows than any run of the tool prints")

// TooManyRows is the error a parser returns at its row number n > MaxRows.
func TooManyRows(n int) error {
	return fmt.Errorf("%w: %d rows, at most %d are read", ErrTooManyRows, n, MaxRows)
}

// ErrUnusableJSON is returned (wrapped) when a perftest --out_json file cannot
// be read even leniently; the caller should parse the text report instead.
var ErrUnusableJSON = errors.New("perftest JSON output unusable")

// Supported reports whether Parse reads the output of tool.
func Supported(tool string) bool {
	_, ok := parserOf(tool)
	return ok
}

// Parser is what toolout asks of a tool family (a kinds.Kind) whose output
// rlab reads: one run's output into rows and the facts the tool stated.
// Families without one (tcp is measured by the agent, exec output is kept)
// give ErrNoParser.
type Parser interface {
	Parse(stdout []byte, opts Options) ([]Row, Info, error)
}

// StderrReader is a Parser that reads opts.Stderr itself (rping reports
// its failures there), so its lines are not added to the warnings.
type StderrReader interface {
	ReadsStderr() bool
}

// Row is one line of a tool's result table, as a Parser returns it: a
// message size, the iterations, and the values of its metrics in the units
// of the metric vocabulary (kinds.Metrics).
type Row struct {
	Size, Iters int64
	// Interval numbers the rows of one size when the tool printed several
	// (results.Meta.Interval); 0 when it printed one.
	Interval int
	Values   []Value
	// Extra goes into each of the row's samples' Meta.Extra.
	Extra map[string]string
	// Notes are what the row said that is not a Value: a column perftest
	// printed as nan (its stdev of a loaded run can come out -nan).
	Notes []string
}

// Value is one metric's value in a Row.
type Value struct {
	Metric string
	Value  float64
}

func parserOf(tool string) (Parser, bool) {
	k, ok := kinds.KindOf(tool)
	if !ok {
		return nil, false
	}
	p, ok := k.(Parser)
	return p, ok
}

// Parse reads the output of one run of tool and returns its samples (one per
// metric and message size) and the facts the tool stated about the run.
// stdout is the process's standard output, or with opts.JSON the content of
// perftest's --out_json file. Errors name the tool and workload; for
// perftest JSON that cannot be read they wrap ErrUnusableJSON.
func Parse(tool string, stdout []byte, opts Options) ([]results.Sample, Info, error) {
	p, ok := parserOf(tool)
	if !ok {
		return nil, Info{Tool: tool}, fmt.Errorf("parse output of %s: %w", what(tool, opts), ErrNoParser)
	}
	rows, info, err := p.Parse(stdout, opts)
	err = boundError(err)
	info.Tool = tool
	info.bound()
	if n := len(rows) + len(info.PerDirection); n > MaxRows {
		rows, info.PerDirection, err = nil, nil, TooManyRows(n) // a parser that did not stop
	}
	if sr, ok := p.(StderrReader); len(opts.Stderr) > 0 && !(ok && sr.ReadsStderr()) {
		info.Warnings = append(info.Warnings, warningLines(opts.Stderr)...)
	}
	var partial *PartialError
	if errors.As(err, &partial) && len(rows) > 0 {
		// The tool measured some rows, then failed: the rows are kept as
		// what it measured, each marked partial, and the failure is
		// returned with them so the workload fails and says why.
		ss := toSamples(tool, rows, info, opts)
		for i := range ss {
			ss[i].Meta.Extra["partial"] = "true"
		}
		return ss, info, fmt.Errorf("parse output of %s: %w", what(tool, opts), err)
	}
	if err != nil {
		return nil, info, fmt.Errorf("parse output of %s: %w", what(tool, opts), err)
	}
	return toSamples(tool, rows, info, opts), info, nil
}

// MaxErrorText bounds the text of a parser's error: a parser that fails
// quotes the lines of the output that say why (three error lines, the
// first lines it did not read, every warning of a table it could not keep),
// and the output is the host's, up to a reply line (8 MiB). The error is
// the trial's and kept for the run (its event, results.json, junit.xml,
// summary.md, report.html, the terminal's line), so lines of a megabyte
// made each failed trial's error megabytes (SECURITY 151), as an agent's
// error did before rpc bounded it (136). The tool's whole output stays in
// the run's logs.
const MaxErrorText = 4096

// boundError returns err with its text cut to MaxErrorText bytes, still
// matching the errors Parse's callers test for (errors.Is ErrTooManyRows,
// ErrUnusableJSON, ErrNoParser; errors.As *PartialError, its reason cut
// too). The long text is dropped, not kept behind the cut one.
func boundError(err error) error {
	if err == nil {
		return nil
	}
	var kept []error
	var partial *PartialError
	if errors.As(err, &partial) {
		partial.Reason = cutText(partial.Reason, MaxErrorText)
		kept = append(kept, partial)
	}
	msg := err.Error()
	if len(msg) <= MaxErrorText {
		return err
	}
	for _, e := range []error{ErrTooManyRows, ErrUnusableJSON, ErrNoParser} {
		if errors.Is(err, e) {
			kept = append(kept, e)
		}
	}
	return &cutError{msg: cutText(msg, MaxErrorText), errs: kept}
}

// cutError is a parser's error whose text was cut (boundError).
type cutError struct {
	msg  string
	errs []error
}

func (e *cutError) Error() string   { return e.msg }
func (e *cutError) Unwrap() []error { return e.errs }

// cutText cuts s to its first n bytes on a rune's start and says how long
// it was.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d bytes in all; the tool's output is in the run's logs)", len(s))
}

// PartialError is a parser's word that a tool printed rows of results and
// then failed (perftest: "Completion with error" after a sweep's first
// sizes): its rows are returned beside it. Parse keeps them as samples
// marked partial (Meta.Extra["partial"]) and returns them with the error.
type PartialError struct {
	Rows   int    // rows measured before the failure
	Reason string // the tool's failure lines
}

// PartialRows says how many rows the tool measured before it failed.
func (e *PartialError) PartialRows() int { return e.Rows }

func (e *PartialError) Error() string {
	return fmt.Sprintf("the tool failed after %d result rows (kept as partial samples): %s", e.Rows, e.Reason)
}

// runFailure matches the lines perftest prints when a run fails part-way
// (perftest's perftest_resources.c and *_bw/_lat mains).
var runFailure = regexp.MustCompile(`(?i)^(Completion with error|Failed status \d+|Failed to complete run_iter|Problems with warm up|Couldn't post send|Error in )`)

// RunFailure returns the lines of out that say a tool's run failed
// part-way, joined; "" when none does.
func RunFailure(lines []string) string {
	var hits []string
	for _, l := range lines {
		if t := strings.TrimSpace(l); runFailure.MatchString(t) {
			hits = append(hits, t)
			if len(hits) == 3 {
				break
			}
		}
	}
	return strings.Join(hits, "; ")
}

func what(tool string, opts Options) string {
	if opts.Workload != "" {
		return fmt.Sprintf("%s (workload %q)", tool, opts.Workload)
	}
	return tool
}

func toSamples(tool string, rows []Row, info Info, opts Options) []results.Sample {
	devices := opts.Devices
	if len(devices) == 0 && info.Device != "" {
		devices = []string{info.Device}
	}
	var out []results.Sample
	for _, r := range rows {
		for _, mv := range r.Values {
			m, ok := results.MetricByName(mv.Metric)
			if !ok {
				continue // every metric a parser emits is in the table; a test checks it
			}
			meta := results.Meta{
				Workload:    opts.Workload,
				Tool:        tool,
				Size:        r.Size,
				Iterations:  r.Iters,
				Repeat:      opts.Repeat,
				Hosts:       cloneStrings(opts.Hosts),
				Devices:     cloneStrings(devices),
				MTU:         info.MTU,
				Transport:   info.Connection,
				QPs:         info.QPs,
				ToolVersion: opts.ToolVersion,
				Interval:    r.Interval,
				Extra:       map[string]string{"source": info.Source},
			}
			if info.GIDIndex != nil {
				g := *info.GIDIndex
				meta.GIDIndex = &g
			}
			if info.RDMACM {
				meta.Extra["rdma_cm"] = "on"
			}
			for k, v := range r.Extra {
				meta.Extra[k] = v
			}
			out = append(out, results.Sample{Metric: m.Name, Value: mv.Value, Unit: m.Unit, Meta: meta})
		}
	}
	return out
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// SplitLines splits on \n and drops \r (outputs captured through a pty end
// lines with \r\n).
func SplitLines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r", "")
	return strings.Split(s, "\n")
}

// warningLines returns the non-empty lines of a tool's stderr.
func warningLines(b []byte) []string {
	var out []string
	for _, l := range SplitLines(b) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ErrorHint picks lines of an output that look like the reason a tool
// failed, to put in an error message.
func ErrorHint(lines []string) string {
	var hits []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		lt := strings.ToLower(t)
		if strings.Contains(lt, "error") || strings.Contains(lt, "fail") || strings.Contains(lt, "couldn't") ||
			strings.Contains(lt, "unable") || strings.Contains(lt, "no such") || strings.Contains(lt, "cannot") ||
			strings.Contains(lt, "not found") {
			hits = append(hits, t)
			if len(hits) == 3 {
				break
			}
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return ": " + strings.Join(hits, "; ")
}

// FailHint is ErrorHint, or when no line looks like an error, the first
// lines the parser did not read: a tool that stopped early says why in its
// own words ("Requested size larger than port MTU (4096)"), which no list of
// keywords foresees.
func FailHint(lines, unread []string) string {
	if h := ErrorHint(lines); h != "" {
		return h
	}
	if len(unread) > 3 {
		unread = unread[:3]
	}
	if len(unread) == 0 {
		return ""
	}
	return ": " + strings.Join(unread, "; ")
}

// ParseOutput is Parse in the shape of steps.ParseFunc, for the run engine:
// tool output in, samples and what the parser said besides them out
// (results.ParseNote: the lines it did not read, its notes, a
// bidirectional sum), metadata filled in by the caller. perftest bandwidth
// runs are taken to use --report_gbits, as rlab always passes it; a JSON
// file that cannot be read gives an error wrapping ErrUnusableJSON, and the
// caller then parses the text report.
//
// On a *PartialError the samples the tool measured before it failed come
// back with the error.
func ParseOutput(tool string, out, stderr []byte, json bool) ([]results.Sample, results.ParseNote, error) {
	ss, info, err := Parse(tool, out, Options{JSON: json, ReportGbits: true, Stderr: stderr})
	unread, notes := splitWarnings(info.Warnings, out, stderr)
	return ss, results.NewParseNote(unread, notes, info.Bidirectional), err
}

// splitWarnings tells the warnings that are lines the tool printed (found,
// trimmed, among the lines of out or stderr) from the parser's own notes.
func splitWarnings(warnings []string, out, stderr []byte) (unread, notes []string) {
	if len(warnings) == 0 {
		return nil, nil
	}
	printed := map[string]bool{}
	for _, b := range [][]byte{out, stderr} {
		for _, l := range SplitLines(b) {
			if t := strings.TrimSpace(l); t != "" {
				printed[t] = true
			}
		}
	}
	for _, w := range warnings {
		if printed[strings.TrimSpace(w)] {
			unread = append(unread, w)
		} else {
			notes = append(notes, w)
		}
	}
	return unread, notes
}

// ParseNumber accepts the finite, non-negative decimals perftest prints.
func ParseNumber(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if x != x || x < 0 || x > 1e300 {
		return 0, fmt.Errorf("value out of range: %q", s)
	}
	return x, nil
}
