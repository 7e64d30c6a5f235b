package remote

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A temp file left by a connection cut mid-upload is removed by a later
// install once it is older than any upload could be; a fresh one (another
// host sharing the home may be writing it right now) is kept.
func TestInstallRemovesStaleTemps(t *testing.T) {
	bin := fakeAgent(t)
	h := newHost(t, "")
	ag := agentsOf(bin)
	final := filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent")
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		t.Fatal(err)
	}
	old := final + ".tmp-0000000000000001"
	fresh := final + ".tmp-0000000000000002"
	other := filepath.Join(filepath.Dir(final), "notes.tmp-0000000000000003")
	for _, f := range []string{old, fresh, other} {
		if err := os.WriteFile(f, bin[:5], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * staleTempAge)
	for _, f := range []string{old, other} {
		if err := os.Chtimes(f, past, past); err != nil {
			t.Fatal(err)
		}
	}
	inst, err := ag.Install(context.Background(), h.c)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Sent != gzLen(bin) {
		t.Fatalf("cold install sent %d bytes, want %d (the agent gzip'd)", inst.Sent, gzLen(bin))
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{old, false},  // stale temp of ours: removed
		{fresh, true}, // may belong to a live install elsewhere: kept
		{other, true}, // not ours: never touched
		{final, true}, // the verified agent
	} {
		_, err := os.Stat(tc.path)
		if got := err == nil; got != tc.want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(tc.path), got, tc.want)
		}
	}
}
