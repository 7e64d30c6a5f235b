package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// layoutProbe measures the page as Chromium lays it out and writes what
// collides into <pre id="layout">: value labels of one chart that overlap
// (or overlap a neighbour bar's label), and numeric table cells ("4 KiB",
// "0.07552") broken over two lines.
const layoutProbe = `<script>
addEventListener("load", () => {
  const out = [];
  for (const svg of document.querySelectorAll("svg.chart-svg")) {
    const boxes = [...svg.querySelectorAll("text.val")].map(t => [t.textContent, t.getBBox()]);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, p] = boxes[i], [b, q] = boxes[j];
        if (p.x < q.x + q.width && q.x < p.x + p.width && p.y < q.y + q.height && q.y < p.y + p.height)
          out.push("overlap in " + (svg.closest("figure, div, section") || svg).id + ": " + a + " / " + b);
      }
  }
  for (const td of document.querySelectorAll("table.data td.n")) {
    const r = document.createRange(); r.selectNodeContents(td);
    const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
    if (lines.size > 1) out.push("wraps: " + td.textContent);
  }
  const pre = document.createElement("pre"); pre.id = "layout";
  pre.textContent = "LAYOUT[" + out.join("\n") + "]END";
  document.body.append(pre);
});
</script>`

// TestChromiumLayout (issue 25 item 7): in the fixture's report, opened in
// headless Chromium at a laptop's width, no two value labels of a chart
// overlap (the latency bars' did) and no numeric cell wraps ("4 KiB" did).
func TestChromiumLayout(t *testing.T) {
	bin := chromium(t)
	dir := copyDir(t, fixture)
	// The demo's latency workload at two sizes, as make demo runs it
	// (64 B and 4 KiB): seven bars a size, labelled where they fit.
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Samples {
		if s.Meta.Workload == "write_lat" {
			s.Meta.Size, s.Value = 4096, s.Value*1.7
			r.Samples = append(r.Samples, s)
		}
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(page, []byte(strings.Replace(string(b), "</body>", layoutProbe+"</body>", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	dom, _ := runChromium(t, bin, "--window-size=1280,900", "--dump-dom", "file://"+page)
	m := regexp.MustCompile(`(?s)<pre id="layout">LAYOUT\[(.*?)\]END</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the layout probe did not run")
	}
	if got := strings.TrimSpace(m[1]); got != "" {
		t.Errorf("the report's layout collides:\n%s", got)
	}
}
