package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
	reporttmpl "github.com/rlab-dev/rlab/templates/report"
)

// FileName is the report's name inside a run directory.
const FileName = "report.html"

// tmpl is parsed on first use, not when rlab starts: parsing takes ~0.7 ms,
// paid by every command (rlab pcap's start is serial time on every core).
var tmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
		"add":         func(a, b float64) float64 { return a + b },
		"sub":         func(a, b float64) float64 { return a - b },
		"half":        func(a float64) float64 { return a / 2 },
		"join":        strings.Join,
		"href":        href,
		"statusClass": statusClass,
		"num":         isNum,
		"hint":        hint,
		"maxExpects":  func() int { return maxExpects },
		"cell":        cell,
		"cell1":       cell1,
	}).ParseFS(reporttmpl.FS, "report.html.tmpl"))
})

// Render writes report.html into runDir from what the directory holds.
// The run engine calls it at the end of every run; `rlab report` calls it
// again on an old run directory.
func Render(runDir string) error { return RenderWith(runDir, Options{}) }

// RenderWith is Render with options (another capture reader).
func RenderWith(runDir string, opts Options) error {
	d, err := Build(runDir, opts)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		return err
	}
	// Write beside, then rename: a reader never sees half a report, and a
	// failed render leaves the previous one in place.
	dst := filepath.Join(runDir, FileName)
	if err := rundir.WriteFile(dst, buf.Bytes()); err != nil {
		return fmt.Errorf("write report %q: %w", dst, err)
	}
	return nil
}

// Write executes the report template for d, and writes the page through
// termsafe's one rule for text from a host, a lab or a received run
// directory, as the terminal and summary.md get it: html/template escapes
// markup but keeps ESC, BEL, C1 and bidi controls as they are, so a page
// saved as text, or its source read with cat or less, wrote a host's
// escapes to the terminal (attack round 14). The template itself holds none
// of them, so only the texts it shows change; CR LF becomes LF first, which
// an HTML parser does anyway (a lab's source written on Windows).
func Write(w io.Writer, d *Data) error {
	var buf strings.Builder
	if err := tmpl().Execute(&buf, d); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	page := buf.String()
	if !termsafe.Safe(page) {
		page = termsafe.Block(strings.ReplaceAll(page, "\r\n", "\n"))
	}
	if _, err := io.WriteString(w, page); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// href turns a run-directory-relative path into a relative URL: every
// segment escaped, and "./" first so no file name can read as a scheme
// (a file called "javascript:..." stays a file).
func href(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "./" + strings.Join(segs, "/")
}

// hint explains a workload family's charts to a reader new to them; the
// words are the tool descriptor's.
func hint(chart string) string { return kinds.ChartHint(chart) }

// isNum is true for a cell that reads as a number ("12", "0.5", "20.0 %"),
// which the table aligns right.
func isNum(s string) bool {
	s = strings.TrimSuffix(s, " %")
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// cell is raw[i][j], or "" where raw has no such cell (a table without
// raw values, or a cell that shows its value as it is).
func cell(raw [][]string, i, j int) string {
	if i < len(raw) {
		return cell1(raw[i], j)
	}
	return ""
}

// cell1 is s[j], or "".
func cell1(s []string, j int) string {
	if j < len(s) {
		return s[j]
	}
	return ""
}

// statusClass maps a status word to a CSS class (ok, bad or neutral).
func statusClass(s string) string {
	switch strings.ToLower(s) {
	case "ok", "passed", "pass", "success", "succeeded", "done":
		return "ok"
	case "failed", "fail", "error", "timeout", "timed_out", "interrupted", "infra":
		return "bad"
	}
	return "neutral"
}
