package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

var (
	freshOnce sync.Once
	freshBin  []byte
	freshErr  error
)

// freshAgent is the agent built from this tree (the embedded one may be
// older than the bundle command under test).
func freshAgent(t *testing.T) *Agents {
	t.Helper()
	freshOnce.Do(func() {
		out := filepath.Join(os.TempDir(), fmt.Sprintf("rlab-agent-pull-test-%d", os.Getpid()))
		defer os.Remove(out)
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "../../agent/cmd/rlab-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			freshErr = fmt.Errorf("build agent: %v: %s", err, msg)
			return
		}
		freshBin, freshErr = os.ReadFile(out)
	})
	if freshErr != nil {
		t.Fatal(freshErr)
	}
	return NewAgents(func(goos, goarch string) ([]byte, error) {
		if goarch != runtime.GOARCH {
			return nil, ErrNotBuilt
		}
		return freshBin, nil
	})
}

// startReal starts the real agent on an in-process SSH host.
func startReal(t *testing.T) (*Agent, *host) {
	t.Helper()
	h := newHost(t, "")
	a, _, err := freshAgent(t).Open(context.Background(), h.c, StartOptions{Host: "server", RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, h
}

// content is n bytes that differ per seed.
func content(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func writeAll(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree says how dst differs from want: missing, different or extra
// files (a .part left behind is extra).
func checkTree(t *testing.T, dst string, want map[string][]byte) {
	t.Helper()
	seen := map[string]bool{}
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		seen[rel] = true
		w, ok := want[rel]
		if !ok {
			t.Errorf("unexpected file %s", rel)
			return nil
		}
		if b, _ := os.ReadFile(p); sum(b) != sum(w) {
			t.Errorf("%s: content differs (%d bytes, want %d)", rel, len(b), len(w))
		}
		return nil
	})
	for p := range want {
		if !seen[p] {
			t.Errorf("missing %s", p)
		}
	}
}

func list(t *testing.T, a *Agent) []proto.FileInfo {
	t.Helper()
	var l proto.FilesList
	if err := a.Call(context.Background(), proto.MethodFilesList, proto.FilesListParams{}, &l); err != nil {
		t.Fatal(err)
	}
	return l.Files
}

// The real agent: small files come in one bundle (one more exec session,
// whatever their number), big ones by SFTP; progress ends at the total.
func TestPullBundleAndSFTP(t *testing.T) {
	a, h := startReal(t)
	files := map[string][]byte{}
	for i := 0; i < 300; i++ {
		files[fmt.Sprintf("logs/d%d/f%03d.log", i%7, i)] = content(i, 1+i*37%9000)
	}
	files["empty.log"] = nil
	files["exactly-bundle-max.bin"] = content(900, int(BundleMax))
	files["captures/roce.pcap"] = content(901, 3<<20+7)
	files["captures/two.pcap"] = content(902, int(BundleMax)+1)
	writeAll(t, a.Hello.WorkDir, files)
	listed := list(t, a)
	if len(listed) != len(files) {
		t.Fatalf("listed %d files, wrote %d", len(listed), len(files))
	}
	var total int64
	for _, f := range listed {
		total += f.Size
	}
	var calls []int64
	var lastTotal int64
	execs := h.srv.Execs.Load()
	dst := t.TempDir()
	n, err := a.PullWith(context.Background(), listed, dst, PullOptions{Progress: func(host string, done, tot int64) {
		if host != "server" {
			t.Errorf("progress for host %q", host)
		}
		calls = append(calls, done)
		lastTotal = tot
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Errorf("pulled %d bytes, listed %d", n, total)
	}
	checkTree(t, dst, files)
	if got := h.srv.Execs.Load() - execs; got != 1 {
		t.Errorf("%d exec sessions for the pull, want 1 (the bundle)", got)
	}
	if len(calls) == 0 || calls[len(calls)-1] != total || lastTotal != total {
		t.Fatalf("progress ended at %v of %d (total said %d)", calls[len(calls)-1:], total, lastTotal)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] < calls[i-1] {
			t.Fatalf("progress went back: %d after %d", calls[i], calls[i-1])
		}
	}
	if a.Pulled() != total {
		t.Errorf("Pulled() = %d, want %d", a.Pulled(), total)
	}
}

// Files that changed after the listing fail, each on its own, by either
// path; the others land.
func TestPullChangedFiles(t *testing.T) {
	a, _ := startReal(t)
	big := content(1, 2<<20)
	files := map[string][]byte{
		"ok.log":         []byte("fine"),
		"grown.log":      []byte("0123456789"),
		"shrunk.log":     []byte("abc"),
		"edited.log":     []byte("same size"),
		"big-ok.pcap":    big,
		"big-grown.pcap": append(append([]byte(nil), big...), 'x'),
		"big-short.pcap": big[:1<<20+5],
	}
	writeAll(t, a.Hello.WorkDir, files)
	os.Symlink("/etc/passwd", filepath.Join(a.Hello.WorkDir, "link.log"))
	listed := []proto.FileInfo{
		{Path: "ok.log", Size: 4, SHA256: sum([]byte("fine"))},
		{Path: "grown.log", Size: 4, SHA256: sum([]byte("0123"))},
		{Path: "shrunk.log", Size: 8, SHA256: sum([]byte("abcdefgh"))},
		{Path: "edited.log", Size: 9, SHA256: sum([]byte("SAME SIZE"))},
		{Path: "gone.log", Size: 3},
		{Path: "link.log", Size: 3},
		{Path: "big-ok.pcap", Size: int64(len(big)), SHA256: sum(big)},
		{Path: "big-grown.pcap", Size: int64(len(big)), SHA256: sum(big)},
		{Path: "big-short.pcap", Size: int64(len(big)), SHA256: sum(big)},
	}
	dst := t.TempDir()
	_, err := a.Pull(context.Background(), listed, dst)
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "(and 6 more files failed)") {
		t.Errorf("error %q does not count the 7 failures", err)
	}
	checkTree(t, dst, map[string][]byte{"ok.log": []byte("fine"), "big-ok.pcap": big})
	// Each failure on its own names its cause.
	for _, tc := range []struct {
		path, want string
	}{
		{"grown.log", "grew to 10 bytes after the listing (4 bytes)"},
		{"shrunk.log", "got 3 bytes"},
		{"edited.log", "sha256"},
		{"gone.log", "the host could not send it"},
		{"link.log", "not a regular file"},
		{"big-grown.pcap", "after the listing"},
		{"big-short.pcap", "the file ended at 1048581 bytes, the agent listed 2097152 bytes"},
	} {
		var f proto.FileInfo
		for _, l := range listed {
			if l.Path == tc.path {
				f = l
			}
		}
		_, err := a.Pull(context.Background(), []proto.FileInfo{f}, dst)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `host "server"`) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: %v, want %q naming the host and the file", tc.path, err, tc.want)
		}
	}
	checkTree(t, dst, map[string][]byte{"ok.log": []byte("fine"), "big-ok.pcap": big})
}

// Reads bigger than the server serves (pkg/sftp's server answers 32 KiB
// whatever is asked) come back short: the rest is asked for again, never
// taken for the end of the file or skipped.
func TestPullShortReads(t *testing.T) {
	defer func(n int) { sftpReadSize = n }(sftpReadSize)
	for _, size := range []int{sftpBigRead, 100000} {
		sftpReadSize = size
		a, _, _ := startFake(t, "")
		if a == nil {
			t.Fatal("start failed")
		}
		files := map[string][]byte{"a.pcap": content(1, 1100000), "b.pcap": content(2, 5<<20+3)}
		writeAll(t, a.Hello.WorkDir, files)
		var listed []proto.FileInfo
		for p, b := range files {
			listed = append(listed, proto.FileInfo{Path: p, Size: int64(len(b)), SHA256: sum(b)})
		}
		dst := t.TempDir()
		if _, err := a.Pull(context.Background(), listed, dst); err != nil {
			t.Fatalf("read size %d: %v", size, err)
		}
		checkTree(t, dst, files)
	}
}

// A listing over the cap, or over the controller's free space, is refused
// before anything is copied; the cap counts all Pulls on the host.
func TestPullCap(t *testing.T) {
	a, _ := startReal(t)
	files := map[string][]byte{"a.log": content(1, 1000), "big.pcap": content(2, 3000), "c.log": content(3, 500)}
	writeAll(t, a.Hello.WorkDir, files)
	listed := list(t, a)
	tests := []struct {
		name  string
		max   int64
		free  uint64
		first []string // a first Pull of these files
		want  string
	}{
		{name: "over the cap", max: 4000, want: `host "server": refusing to pull 3 files of 4.4 KiB (4500 bytes) with 0 B already pulled: over the cap of 3.9 KiB (4000 bytes) per host (PullOptions.MaxBytes); the largest is big.pcap: the agent listed 3000 bytes`},
		{name: "over the cap with an earlier pull", max: 5000, first: []string{"a.log", "c.log"}, want: "with 1.5 KiB (1500 bytes) already pulled: over the cap"},
		{name: "controller disk too small", max: -1, free: 4499, want: "its file system has only 4.4 KiB (4499 bytes) free"},
		{name: "fits exactly", max: 4500, free: 4500},
	}
	defer func(f func(string) (uint64, error)) { freeBytes = f }(freeBytes)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := startReal(t)
			writeAll(t, a.Hello.WorkDir, files)
			freeBytes = func(string) (uint64, error) {
				if tc.free > 0 {
					return tc.free, nil
				}
				return 1 << 40, nil
			}
			if tc.first != nil {
				var fl []proto.FileInfo
				for _, f := range listed {
					for _, p := range tc.first {
						if f.Path == p {
							fl = append(fl, f)
						}
					}
				}
				if _, err := a.PullWith(context.Background(), fl, t.TempDir(), PullOptions{MaxBytes: tc.max}); err != nil {
					t.Fatal(err)
				}
			}
			dst := t.TempDir()
			n, err := a.PullWith(context.Background(), listed, dst, PullOptions{MaxBytes: tc.max})
			if tc.want == "" {
				if err != nil || n != 4500 {
					t.Fatalf("pulled %d: %v", n, err)
				}
				checkTree(t, dst, files)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v\nwant %q", err, tc.want)
			}
			checkTree(t, dst, nil)
		})
	}
}

// A listing that leaves big files unhashed (so the host does not read a
// capture through before its pull starts) still ends verified: the host
// hashes it while it is copied.
func TestPullHostSums(t *testing.T) {
	a, _ := startReal(t)
	big := content(3, 3<<20+1)
	files := map[string][]byte{"small.log": []byte("small"), "roce.pcap": big}
	writeAll(t, a.Hello.WorkDir, files)
	var l proto.FilesList
	if err := a.Call(context.Background(), proto.MethodFilesList, proto.FilesListOptions{HashMax: BundleMax}, &l); err != nil {
		t.Fatal(err)
	}
	for _, f := range l.Files {
		if (f.SHA256 == "") != (f.Path == "roce.pcap") {
			t.Fatalf("listing %+v: want only the big file unhashed", l.Files)
		}
	}
	dst := t.TempDir()
	if _, err := a.Pull(context.Background(), l.Files, dst); err != nil {
		t.Fatal(err)
	}
	checkTree(t, dst, files)
	// Changed on the host after the copy began: the host's sum is of what
	// it holds now, which the copy must match; a file the host no longer
	// has cannot be verified.
	os.Remove(filepath.Join(a.Hello.WorkDir, "roce.pcap"))
	_, err := a.Pull(context.Background(), []proto.FileInfo{{Path: "roce.pcap", Size: int64(len(big))}}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "roce.pcap") {
		t.Errorf("pull of a vanished unhashed file: %v", err)
	}
}

// Cancelled once bytes start landing: the pull ends with the context's
// error and leaves neither files nor .part files.
func TestPullCancelled(t *testing.T) {
	a, _ := startReal(t)
	files := map[string][]byte{"big.pcap": content(5, 24<<20)}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("logs/%d.log", i)] = content(i, 200000)
	}
	writeAll(t, a.Hello.WorkDir, files)
	listed := list(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := t.TempDir()
	_, err := a.PullWith(ctx, listed, dst, PullOptions{Progress: func(_ string, done, total int64) {
		if done > 0 {
			cancel()
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err %v, want context canceled", err)
	}
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".part") {
			t.Errorf("left %s", p)
		}
		return nil
	})
	// The agent still pulls afterwards (teardown's pull, with a fresh ctx).
	if _, err := a.Pull(context.Background(), listed, t.TempDir()); err != nil {
		t.Errorf("pull after a cancelled one: %v", err)
	}
}

// TestPullBundleStalled: a host whose bundle stream goes silent is given up
// on once nothing arrives for the agent's call timeout: the pull fails
// naming the host, instead of hanging the run's fetch.
func TestPullBundleStalled(t *testing.T) {
	a, h := startReal(t)
	writeAll(t, a.Hello.WorkDir, map[string][]byte{"a.log": content(1, 1000), "b.log": content(2, 1000)})
	listed := list(t, a)
	// The bundle command of this "agent" never writes a byte. (It ends by
	// itself: the test's SSH server does not kill a command whose session
	// was closed, and an orphan sleep 1000 outlived the test, holding the
	// inherited fds of whoever ran it, e.g. a flock'd lock.)
	stall := filepath.Join(h.home, "stalled-agent")
	if err := os.WriteFile(stall, []byte("#!/bin/sh\nexec sleep 20\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.Installed.Path = stall
	a.opts.CallTimeout = 300 * time.Millisecond
	_, err := a.Pull(context.Background(), listed, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `host "server": bundle of 2 files: the host sent nothing for 300ms`) || !errors.Is(err, ErrAgentLost) {
		t.Fatalf("pull from a stalled bundle: %v", err)
	}
}

// TestDiskBookedAllHostsTogether: hosts pulling at once into one file system
// each fit its free space alone; together they would fill it (ENOSPC
// mid-copy). The third is refused before it copies a byte, with the numbers
// and the hosts still writing; bytes written count once (in the free space,
// no longer as booked); a finished pull gives back what it did not write.
func TestDiskBookedAllHostsTogether(t *testing.T) {
	defer func(f func(string) (uint64, error)) { freeBytes = f }(freeBytes)
	free := uint64(5000)
	freeBytes = func(string) (uint64, error) { return free, nil }
	dst := filepath.Join(t.TempDir(), "hosts", "h", "logs") // not made yet: its file system is the parent's
	h1, err := reserveDisk(dst, 2000, 2, "h1")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := reserveDisk(dst, 2000, 1, "h2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = reserveDisk(dst, 2000, 3, "h3")
	want := `host "h3": refusing to pull 3 files of 2.0 KiB (2000 bytes) into ` + dst + `: its file system has only 4.9 KiB (5000 bytes) free, and 3.9 KiB (4000 bytes) of that is still to come from hosts "h1", "h2" pulling at the same time (all together 5.9 KiB (6000 bytes))`
	if err == nil || err.Error() != want {
		t.Fatalf("third host: %v\nwant %s", err, want)
	}
	// h1 writes 1500 bytes: the disk shows them, h1 owes 500 more.
	h1.land(1500)
	free -= 1500
	if _, err := reserveDisk(dst, 1001, 1, "h3"); err == nil {
		t.Fatal("1001 bytes booked where 3500 are free and 2500 still to come")
	}
	h3, err := reserveDisk(dst, 1000, 1, "h3")
	if err != nil {
		t.Fatalf("1000 bytes where 3500 are free and 2500 still to come: %v", err)
	}
	// h1 ends having written less than it booked (a failed file): the
	// rest is free again.
	h1.release()
	h2.release()
	h3.release()
	diskBooks.Lock()
	defer diskBooks.Unlock()
	for dev, b := range diskBooks.m {
		if b.owed != 0 || len(b.hosts) != 0 {
			t.Errorf("file system %d: %d bytes still booked by %v after every pull ended", dev, b.owed, b.hosts)
		}
	}
}
