package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision"
)

// TestProvisionLogNotKept: a host's package manager output (up to a reply
// line, 8 MiB) goes to its provision.log when its install returns, and the
// result kept until every host is done no longer holds it: 200 hosts kept
// up to 1.6 GB of logs before the first was written.
func TestProvisionLogNotKept(t *testing.T) {
	dir := t.TempDir()
	h := &lab.Host{Name: "h0", Slug: "h0"}
	log := strings.Repeat("Setting up ibverbs-utils ...\n", 1000)
	r := provision.Result{Host: "h0", Log: log}
	if err := writeProvisionLog(dir, h, &r); err != nil {
		t.Fatal(err)
	}
	if r.Log != "" {
		t.Errorf("the result still holds %d bytes of log", len(r.Log))
	}
	b, err := os.ReadFile(filepath.Join(dir, "hosts", "h0", "logs", "provision.log"))
	if err != nil || string(b) != log {
		t.Errorf("provision.log: %v, %d bytes, want the %d of the log", err, len(b), len(log))
	}
}
