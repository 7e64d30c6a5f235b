package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// syncBuffer is a bytes.Buffer for a logger written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On real sshd hosts: the agent goes gzip'd to a host with gzip, lands
// under its hash, verified, 0700, and starts; a host whose PATH has no
// gzip gets it uncompressed over SFTP, and the debug log says so. Both
// warm runs ship nothing.
func TestInstallCompressedNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	ag := realAgent(t)
	if _, _, _, err := dist.Packed("linux", runtime.GOARCH); err == nil {
		ag = NewPackedAgents(dist.Packed) // what rlab ships: gzip'd at build time
	}
	var logBuf syncBuffer
	ag.WithLogger(slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	b := ag.bin(runtime.GOARCH)
	gz, err := b.gzipped()
	if err != nil {
		t.Fatal(err)
	}
	// h1's login shell finds every program but gzip (a folder of links
	// in its home: the bed's own folders are not the login user's to read).
	homes := map[string]string{
		"h0": bed.PrivateHome(t, bed.Host("h0"), nil),
		"h1": bed.PrivateHome(t, bed.Host("h1"), map[string]string{".bashrc": "export PATH=\"$HOME/bin-without-gzip\"\n"}),
	}
	farm := filepath.Join(homes["h1"], "bin-without-gzip")
	if err := os.MkdirAll(farm, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.Name() != "gzip" {
				os.Symlink(filepath.Join(d, e.Name()), filepath.Join(farm, e.Name()))
			}
		}
	}
	specs := []Spec{bedSpec(bed, bed.Host("h0")), bedSpec(bed, bed.Host("h1"))}
	want := map[string]int64{"h0": int64(len(gz)), "h1": b.size}
	for round := 0; round < 2; round++ {
		res, _, err := Gather(context.Background(), specs, bedOptions(bed, ag))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil || r.Facts == nil {
				t.Fatalf("round %d: host %s: %v", round, r.Name, r.Err)
			}
			w := want[r.Name]
			if round == 1 {
				w = 0
			}
			if r.Sent != w {
				t.Errorf("round %d: host %s: shipped %d bytes, want %d", round, r.Name, r.Sent, w)
			}
			dir := filepath.Join(homes[r.Name], CacheDir, b.hash)
			got, err := os.ReadFile(filepath.Join(dir, "rlab-agent"))
			if s := sha256.Sum256(got); err != nil || hex.EncodeToString(s[:]) != b.hash {
				t.Errorf("round %d: host %s: cached agent sha256 %x (%v), want %s", round, r.Name, s, err, b.hash)
			}
			if fi, err := os.Stat(filepath.Join(dir, "rlab-agent")); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("round %d: host %s: cached agent mode %v (%v), want 0700", round, r.Name, fi.Mode(), err)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "rlab-agent.tmp-*")); len(m) != 0 {
				t.Errorf("round %d: host %s: temp files left: %q", round, r.Name, m)
			}
		}
	}
	// One line per cold install, the fallback announced for h1 alone.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		for _, k := range []string{"msg=", "host=", "how="} {
			if i := strings.Index(l, k); i >= 0 {
				f, _, _ := strings.Cut(l[i:], " ")
				if k == "msg=" {
					f, _, _ = strings.Cut(l[i:], " host=")
				}
				lines = append(lines, f)
			}
		}
	}
	got := strings.Join(lines, " ")
	for _, w := range []string{
		`msg="agent install: the host has no gzip; shipping the agent uncompressed over SFTP" host=h1`,
		`msg="agent installed" host=h1 how=sftp`,
		`msg="agent installed" host=h0 how=gzip`,
	} {
		if strings.Count(got, w) != 1 {
			t.Errorf("debug log holds %d of %q, want 1:\n%s", strings.Count(got, w), w, logBuf.String())
		}
	}
	if strings.Contains(got, "no gzip; shipping the agent uncompressed over SFTP\" host=h0") {
		t.Errorf("h0 has gzip, yet the log says it fell back:\n%s", logBuf.String())
	}
}
