package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hostile strings a host, a lab author or a file name could carry.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(2)>`,
	`'><svg onload=alert(3)>`,
	`</pre></textarea><iframe src=javascript:alert(4)>`,
	`javascript:alert(5)`,
}

// TestHostileStringsAreEscaped puts markup into every string a report shows
// (lab description and source, host facts, workload names, expects,
// statuses, file names) and checks that the page has only the elements and
// attributes the template itself writes.
func TestHostileStringsAreEscaped(t *testing.T) {
	dir := copyDir(t, fixture)
	h := strings.Join(hostile, " ")

	// Facts of a hostile host.
	var facts map[string]any
	readJSON(t, filepath.Join(dir, "hosts/server/facts.json"), &facts)
	for _, k := range []string{"hostname", "kernel", "os", "arch", "rxe_module"} {
		facts[k] = h
	}
	facts["errors"] = []string{h}
	facts["tools"] = map[string]any{h: map[string]any{"path": h, "version": h}}
	facts["netdevs"] = []any{map[string]any{"name": h, "mtu": 1500, "state": h, "mac": h, "addrs": []string{h}}}
	facts["rdma_devices"] = []any{map[string]any{"name": h, "kind": h, "parent": h, "node_guid": h,
		"ports": []any{map[string]any{"port": 1, "state": h, "gids": []any{map[string]any{"index": 1, "gid": h, "type": h}}}}}}
	writeJSON(t, filepath.Join(dir, "hosts/server/facts.json"), facts)

	// A hostile results.json.
	var run map[string]any
	readJSON(t, filepath.Join(dir, "results.json"), &run)
	run["description"], run["status"], run["error"], run["started"] = h, h, h, h
	ws := run["workloads"].([]any)
	w0 := ws[0].(map[string]any)
	w0["name"], w0["status"], w0["error"] = h, h, h
	w0["hosts"], w0["devices"] = []string{h}, []string{h}
	w0["logs"] = []string{h, "../../etc/passwd", "hosts/" + h}
	w0["expects"] = []any{map[string]any{"condition": h, "message": h, "held": false, "value": h, "error": h}}
	w0["parse"] = []any{map[string]any{"repeat": 0, "bidirectional": true, "unread": []string{h}, "notes": []string{h}}}
	samples := run["samples"].([]any)
	s0 := samples[0].(map[string]any)
	s0["metric"], s0["unit"] = h, h
	s0["metadata"].(map[string]any)["workload"] = h
	writeJSON(t, filepath.Join(dir, "results.json"), run)

	// A hostile lab file and hostile file names.
	lab := "lab \"x\" {\n  description = \"" + strings.ReplaceAll(h, `"`, `\"`) + "\"\n}\n# " + h + "\n"
	if err := os.WriteFile(filepath.Join(dir, "lab/quickstart.hcl"), []byte(lab), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"javascript:alert(6)", `"><b>x.log`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(h), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := os.ReadFile(filepath.Join(dir, "hosts/server/captures/cap.roce.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts/server/captures", `"><script>x.pcap`), pc, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the hostile strings are not on the page, escaped; the test put them nowhere it shows")
	}

	allowed := map[string]bool{}
	for _, e := range strings.Fields(`html head meta title style body header h1 h2 h3 p span code nav a main
		section ul li table thead tbody tr th td h4 article small pre div figure svg text line rect polyline
		circle details summary footer img`) {
		allowed[e] = true
	}
	for _, m := range regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)`).FindAllStringSubmatch(page, -1) {
		if !allowed[strings.ToLower(m[1])] {
			t.Errorf("page has element <%s> the template never writes", m[1])
		}
	}
	// Every tag's attributes: no event handlers, no javascript: URLs.
	quoted := regexp.MustCompile(`"[^"]*"`)
	for _, tag := range regexp.MustCompile(`<[a-zA-Z](?:[^>"]|"[^"]*")*>`).FindAllString(page, -1) {
		// Attribute values are quoted with " and html/template escapes "
		// inside them, so what is left outside quotes is attribute names.
		if regexp.MustCompile(`(?i)\son[a-z]+\s*=`).MatchString(quoted.ReplaceAllString(tag, `""`)) {
			t.Errorf("tag carries an event handler: %s", tag)
		}
		if regexp.MustCompile(`(?i)(href|src)\s*=\s*"\s*javascript:`).MatchString(tag) {
			t.Errorf("tag links to javascript: %s", tag)
		}
	}
	if strings.Contains(page, "etc/passwd") && regexp.MustCompile(`href="[^"]*etc/passwd`).MatchString(page) {
		t.Errorf("a log path outside the run directory became a link")
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParseNotesOnThePage: a workload whose parser left lines unread and
// whose numbers are a bidirectional sum (results.json workloads[].parse)
// says both on the page: the lines, host text made printable, and the
// bandwidth labelled as the sum of both directions in its table, its chart
// and RDMA vs TCP.
func TestParseNotesOnThePage(t *testing.T) {
	dir := copyDir(t, fixture)
	var run map[string]any
	readJSON(t, filepath.Join(dir, "results.json"), &run)
	w0 := run["workloads"].([]any)[0].(map[string]any)
	w0["parse"] = []any{
		map[string]any{"size": 65536, "repeat": 0, "bidirectional": true,
			"unread": []string{"evil \x1b[2J line <b>x</b>", "a line perftest 26 may print"}, "notes": []string{"a note of the parser"}},
		map[string]any{"size": 65536, "repeat": 1, "bidirectional": true, "unread": []string{"a line perftest 26 may print"}},
	}
	writeJSON(t, filepath.Join(dir, "results.json"), run)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"the parser did not read 2 lines of ib_write_bw&#39;s output and noted 1 thing",
		`<code>evil \x1b[2J line &lt;b&gt;x&lt;/b&gt;</code>`,
		"<code>a line perftest 26 may print</code> <span class=\"muted\">(64 KiB, repeat 1; 64 KiB, repeat 2)</span>",
		"note: a note of the parser",
		"Bandwidth and message rate are the sum of both directions (perftest -b).",
		"Bandwidth vs message size (sum of both directions)",
		"<td>RDMA (sum of both directions)</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`bw_avg \[[^\]]+, sum of both directions\]`).MatchString(page) {
		t.Error("the bw_avg column is not labelled the sum of both directions")
	}
	if strings.Contains(page, "\x1b") {
		t.Error("page carries a raw escape character")
	}
	if n := strings.Count(page, "sum of both directions"); n < 4 {
		t.Errorf("the bidirectional label appears %d times, want table, chart, note and compare", n)
	}
}
