package report

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt package chromium; testdata/deps.sh installs it)")
	return ""
}

// runChromium loads file with the page's own resources only: no network,
// no extensions, no sync; it returns stdout (the DOM with --dump-dom) and
// stderr (the log with console messages).
func runChromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// TestChromiumRendersReport opens the fixture's report in headless
// Chromium: the screenshot must not be blank, the DOM must hold every chart
// as an SVG with drawn marks, and the console must stay free of errors.
func TestChromiumRendersReport(t *testing.T) {
	bin := chromium(t)
	dir := copyDir(t, fixture)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, FileName)

	dom, log := runChromium(t, bin, "--dump-dom", page)
	if n := strings.Count(dom, `class="chart-svg"`); n < 6 {
		t.Errorf("DOM has %d chart SVGs, want at least 6 (bandwidth, rate, latency, compare, IO graph...)", n)
	}
	for _, mark := range []string{"<polyline", "<rect class=\"bar\"", "<circle class=\"pt\""} {
		if !strings.Contains(dom, mark) {
			t.Errorf("DOM lacks %s: a chart drew nothing", mark)
		}
	}
	// A polyline with no points or a zero-height bar everywhere would be
	// an empty chart.
	if regexp.MustCompile(`<polyline[^>]*points=""`).MatchString(dom) {
		t.Errorf("DOM has a polyline without points")
	}
	if !regexp.MustCompile(`<rect class="bar"[^>]*height="[1-9]`).MatchString(dom) {
		t.Errorf("no bar has a visible height")
	}
	if _, err := exec.LookPath("dot"); err == nil && !strings.Contains(dom, `<img src="data:image/svg+xml;base64,`) {
		t.Errorf("graphviz is installed but the topology picture is missing")
	}
	checkConsole(t, log)

	png := filepath.Join(t.TempDir(), "report.png")
	_, log = runChromium(t, bin, "--hide-scrollbars", "--window-size=1280,2400", "--screenshot="+png, page)
	checkConsole(t, log)
	checkNotBlank(t, png)
}

// checkConsole fails on any console message: the report has no script,
// so whatever reaches the console (Chromium logs console.error and
// uncaught errors alike as INFO:CONSOLE lines) is an error of the page.
func checkConsole(t *testing.T, log string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console message: %s", line)
		}
	}
}

func TestCheckConsoleCatchesErrors(t *testing.T) {
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, []byte(`<html><body><script>console.error("boom"); undefinedFn();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := runChromium(t, bin, "--dump-dom", "file://"+page)
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			n++
		}
	}
	if n < 2 {
		t.Errorf("chromium logged %d console lines for a page with console.error and an uncaught error, want 2; the console check would miss errors:\n%s", n, log)
	}
}

// TestReportLoadsNothing: every src and href of the page is relative to the
// run directory, an anchor, or inline data; nothing would be fetched.
func TestReportLoadsNothing(t *testing.T) {
	dir := copyDir(t, fixture)
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?i)\s(src|href|xlink:href)="([^"]*)"`).FindAllStringSubmatch(string(b), -1)
	if len(refs) < 10 {
		t.Fatalf("found %d links, want the report's many", len(refs))
	}
	for _, m := range refs {
		u := html.UnescapeString(m[2]) // what the browser reads
		if !(strings.HasPrefix(u, "./") || strings.HasPrefix(u, "#") || (m[1] == "src" && strings.HasPrefix(u, "data:image/svg+xml;base64,"))) {
			t.Errorf("%s=%.80q would leave the page", m[1], u)
		}
	}
	if regexp.MustCompile(`(?i)<(script|link|iframe|object|embed)\b`).Match(b) || strings.Contains(string(b), "url(") || strings.Contains(string(b), "@import") {
		t.Errorf("the page has a script, link, frame or CSS url()")
	}
}

// checkNotBlank wants a decodable PNG with a real mix of colours: text,
// chart strokes and fills, not one flat background.
func checkNotBlank(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", file, err)
	}
	b := img.Bounds()
	colours := map[[3]uint32]int{}
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				nonWhite++
			}
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if len(colours) < 20 || nonWhite < total/200 {
		t.Errorf("screenshot looks blank: %d colours, %d of %d sampled pixels not white", len(colours), nonWhite, total)
	}
	t.Logf("screenshot %dx%d: %d colours, %.1f%% not white", b.Dx(), b.Dy(), len(colours), float64(nonWhite)*100/float64(total))
}
