package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReceivedRunDirConfined: a run directory from someone else cannot
// make rlab report embed a file of the reader's (a symlink in lab/ to a
// private key outside), nor hang it (a FIFO named like a capture, a
// symlink to one): both are named as unreadable, and the page is written.
func TestReceivedRunDirConfined(t *testing.T) {
	const secret = "-----BEGIN OPENSSH PRIVATE KEY----- reader's own"
	outside := filepath.Join(t.TempDir(), "id_ed25519")
	must(t, os.WriteFile(outside, []byte(secret), 0o600))
	fifo := filepath.Join(t.TempDir(), "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))

	dir := copyDir(t, fixture)
	must(t, os.Symlink(outside, filepath.Join(dir, "lab", "zz_key.hcl")))
	must(t, os.Symlink(outside, filepath.Join(dir, "lab", "notes.txt")))
	caps := filepath.Join(dir, "hosts", "evil", "captures")
	must(t, os.MkdirAll(caps, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "hosts", "evil", "facts.json"), []byte("{}"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(caps, "cap.fifo.pcap"), 0o600))
	must(t, os.Symlink(fifo, filepath.Join(caps, "cap.link.pcap")))
	must(t, os.Symlink(outside, filepath.Join(caps, "cap.key.pcap")))

	done := make(chan error, 1)
	go func() { done <- Render(dir) }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(2 * time.Minute): // a guard against a hang, not a timing assertion
		t.Fatal("rlab report hangs on a FIFO in the run directory")
	}
	page, err := os.ReadFile(filepath.Join(dir, FileName))
	must(t, err)
	if strings.Contains(string(page), "OPENSSH PRIVATE KEY") {
		t.Errorf("report.html embeds the target of a symlink out of the run directory")
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	must(t, err)
	var capErrs []string
	for _, c := range d.Captures {
		if c.Host == "evil" {
			capErrs = append(capErrs, c.Error)
		}
	}
	all := strings.Join(capErrs, "\n")
	for _, want := range []string{"not a regular file (a FIFO)", "leaves the run directory"} {
		if !strings.Contains(all, want) {
			t.Errorf("capture errors lack %q:\n%s", want, all)
		}
	}
	if len(capErrs) != 3 {
		t.Errorf("%d captures of host evil, want 3 each with its error: %q", len(capErrs), capErrs)
	}
	if w := strings.Join(d.Warnings, "\n"); !strings.Contains(w, "lab/zz_key.hcl") || !strings.Contains(w, "leaves the run directory") {
		t.Errorf("warnings do not name the symlink out of lab/:\n%s", w)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
