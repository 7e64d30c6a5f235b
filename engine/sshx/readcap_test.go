package sshx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// TestFilesReadCapped: the files rlab reads whole from a path a user or a
// lab names (identity_file, known_hosts, the ssh config) are refused with
// a clear error when they are not regular files (/dev/zero, a FIFO: the
// open does not block) or larger than rlab reads, instead of reading
// without end.
func TestFilesReadCapped(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxKnownHostsBytes+1); err != nil { // sparse: over every cap
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kind string // identity, known_hosts, config
		path string
		want string
	}{
		{"identity /dev/zero", "identity", "/dev/zero", "not a regular file"},
		{"identity FIFO", "identity", fifo, "not a regular file"},
		{"identity too big", "identity", big, "over the 1 MiB"},
		{"identity a folder", "identity", dir, "not a regular file"},
		{"known_hosts /dev/zero", "known_hosts", "/dev/zero", "not a regular file"},
		{"known_hosts FIFO", "known_hosts", fifo, "not a regular file"},
		{"known_hosts too big", "known_hosts", big, "over the 64 MiB"},
		{"lab known_hosts /dev/zero", "lab_known_hosts", "/dev/zero", "not a regular file"},
		{"ssh config /dev/zero", "config", "/dev/zero", "not a regular file"},
		{"ssh config too big", "config", big, "over the 16 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o := Options{KnownHosts: []string{filepath.Join(t.TempDir(), "known_hosts")}, SSHConfig: "none", AgentSocket: "none", Retries: -1}
			switch tc.kind {
			case "known_hosts":
				o.KnownHosts = []string{tc.path}
			case "lab_known_hosts":
				o.LabKnownHosts = []string{tc.path}
			case "config":
				o.SSHConfig = tc.path
			}
			var err error
			d, err := NewDialer(o)
			if err == nil {
				defer d.Close()
				s := sshtest.Start(t, nil)
				kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
				d.keys, _ = newHostKeys([]string{kh}, nil, false)
				_, err = d.Dial(ctx, target(s, tc.path))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %v, want one naming %s with %q", err, tc.path, tc.want)
			}
		})
	}
}

// FuzzCALines: whatever a known_hosts file holds, scanning it for
// @cert-authority lines does not panic, and every line it marks is one.
func FuzzCALines(f *testing.F) {
	f.Add([]byte("@cert-authority *.example.org ssh-ed25519 AAAA\nhost ssh-ed25519 AAAA\n"))
	f.Add([]byte("\t@cert-authority\thost key\r\n@revoked * k\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		marks := caLines(data)
		lines := strings.Split(string(data), "\n")
		for n := range marks {
			if n < 1 || n > len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[n-1]), "@cert-authority") {
				t.Fatalf("line %d marked as @cert-authority: %q", n, lines[max(0, min(n-1, len(lines)-1))])
			}
		}
	})
}
