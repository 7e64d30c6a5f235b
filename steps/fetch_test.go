package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
)

// listHost answers files.list with a fixed listing and records the list
// options and every Pull.
type listHost struct {
	files   []proto.FileInfo
	hashMax int64
	pulls   map[string][]string // destination folder -> paths
}

func (h *listHost) Name() string { return "h" }

func (h *listHost) Send(_ context.Context, r *rpc.Request) error {
	o, res, ok := rpc.Match(r, rpc.FilesList)
	if !ok {
		return &proto.Error{Code: "bad_request", Message: "unexpected " + r.Method()}
	}
	h.hashMax = o.HashMax
	*res = proto.FilesList{Files: h.files}
	return nil
}

func (h *listHost) Pull(_ context.Context, files []proto.FileInfo, dst string) error {
	for _, f := range files {
		h.pulls[filepath.Base(dst)] = append(h.pulls[filepath.Base(dst)], f.Path)
	}
	return nil
}

type hashingHost struct{ *listHost }

func (h hashingHost) HashesWhilePulling() bool { return true }

// Every file, small or big, goes through Pull (so all of them count against
// the host's byte cap and the small ones come in one bundle), sorted into
// captures/ (the files the capture steps made and their ring, not any
// *.pcap: own.pcap, which a workload wrote, is a log) and logs/; big files are listed unhashed only for a host whose
// pulls check them against the host's own sum.
func TestFetchPullsEverything(t *testing.T) {
	files := []proto.FileInfo{
		{Path: "w.r0.stdout", Size: 10, SHA256: "x"},
		{Path: "agent.log", Size: SmallFile + 1},
		{Path: "cap.w.pcap", Size: 3 << 30},
		{Path: "cap.w.pcap1", Size: 100, SHA256: "y"},
		{Path: "own.pcap", Size: 5, SHA256: "o"},
		{Path: "../escape", Size: 1, SHA256: "z"},
	}
	for _, tc := range []struct {
		name        string
		hashing     bool
		wantHashMax int64
	}{
		{"puller", false, 0},
		{"puller hashing while pulling", true, SmallFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lh := &listHost{files: files, pulls: map[string][]string{}}
			var h Host = lh
			if tc.hashing {
				h = hashingHost{lh}
			}
			env := &Env{Hosts: map[string]Host{"h": h}}
			env.Made("h", "cap.w.pcap", results.ArtifactCapture) // as the capture step records it
			f := &Fetch{Host: "h", Dir: t.TempDir()}
			err := f.Apply(context.Background(), env)
			if err == nil {
				t.Error("a path leaving the work dir was not reported")
			}
			if lh.hashMax != tc.wantHashMax {
				t.Errorf("listed with HashMax %d, want %d", lh.hashMax, tc.wantHashMax)
			}
			if got, want := lh.pulls["captures"], []string{"cap.w.pcap", "cap.w.pcap1"}; !slices.Equal(got, want) {
				t.Errorf("captures pulled %q, want %q", got, want)
			}
			if got, want := lh.pulls["logs"], []string{"w.r0.stdout", "agent.log", "own.pcap"}; !slices.Equal(got, want) {
				t.Errorf("logs pulled %q, want %q", got, want)
			}
			if !slices.Equal(f.Refused, []string{"../escape"}) || len(f.Pulled) != 5 {
				t.Errorf("refused %q, pulled %d", f.Refused, len(f.Pulled))
			}
		})
	}
}

// TestFetchKeepsControllersFiles: a host whose work dir holds its own
// agent.log does not replace the controller's (redacted, bounded) one.
func TestFetchKeepsControllersFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "logs", "agent.log")
	if err := os.WriteFile(own, []byte("the controller's record\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lh := &listHost{files: []proto.FileInfo{{Path: "agent.log", Size: 5, SHA256: "x"}, {Path: "w.r0.stdout", Size: 1, SHA256: "y"}}, pulls: map[string][]string{}}
	f := &Fetch{Host: "h", Dir: dir}
	if err := f.Apply(context.Background(), &Env{Hosts: map[string]Host{"h": lh}}); err != nil {
		t.Fatal(err)
	}
	if got := lh.pulls["logs"]; !slices.Equal(got, []string{"w.r0.stdout"}) {
		t.Errorf("pulled %q, want only the workload's output", got)
	}
	if !slices.Equal(f.Kept, []string{"agent.log"}) {
		t.Errorf("kept %q", f.Kept)
	}
	if b, _ := os.ReadFile(own); string(b) != "the controller's record\n" {
		t.Errorf("the controller's agent.log is now %q", b)
	}
}

// TestCapFiles: over the cap, the workloads' outputs come first, then
// captures, then the rest, each in listing order.
func TestCapFiles(t *testing.T) {
	files := []proto.FileInfo{{Path: "d/1"}, {Path: "cap.c.pcap"}, {Path: "d/2"}, {Path: "wl.w.exec.r0.stdout"}, {Path: "wl.w.exec.r0.stderr"}}
	for _, tt := range []struct {
		max        int
		kept, left []string
	}{
		{5, []string{"d/1", "cap.c.pcap", "d/2", "wl.w.exec.r0.stdout", "wl.w.exec.r0.stderr"}, nil},
		{3, []string{"wl.w.exec.r0.stdout", "wl.w.exec.r0.stderr", "cap.c.pcap"}, []string{"d/1", "d/2"}},
		{1, []string{"wl.w.exec.r0.stdout"}, []string{"wl.w.exec.r0.stderr", "cap.c.pcap", "d/1", "d/2"}},
	} {
		kept, left := capFiles(files, tt.max, func(p string) bool { return OfCapture(p, "cap.c.pcap") })
		paths := func(fs []proto.FileInfo) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f.Path)
			}
			return out
		}
		if !slices.Equal(paths(kept), tt.kept) || !slices.Equal(paths(left), tt.left) {
			t.Errorf("max %d: kept %q left %q, want %q and %q", tt.max, paths(kept), paths(left), tt.kept, tt.left)
		}
	}
}

// TestOfCapture: a capture's files are its planned name and the names of
// its ring, before (tcpdump's) and after (the agent's) the stop renamed
// them; nothing else, whatever its extension.
func TestOfCapture(t *testing.T) {
	for _, tt := range []struct {
		p    string
		want bool
	}{
		{"cap.roce.pcap", true},
		{"cap.roce.pcap0", true},
		{"cap.roce.pcap17", true},
		{"cap.roce.000.pcap", true},
		{"cap.roce.012.pcap", true},
		{"cap.roce.pcapx", false},
		{"cap.roce..pcap", false},
		{"cap.roce.a.pcap", false},
		{"cap.roce.wl.pcap", false},
		{"cap.rocex.pcap", false},
		{"own.pcap", false},
		{"wl.w.exec.r0.stdout", false},
		{"cap.roce.pcap.stdout", false},
	} {
		if got := OfCapture(tt.p, "cap.roce.pcap"); got != tt.want {
			t.Errorf("OfCapture(%q, cap.roce.pcap) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

// rawHost is a listHost that can pull files as they are (RawPuller), and
// records which paths went that way.
type rawHost struct {
	*listHost
	raw []string
}

func (h *rawHost) PullRaw(ctx context.Context, files []proto.FileInfo, dst string) error {
	for _, f := range files {
		h.raw = append(h.raw, f.Path)
	}
	return h.Pull(ctx, files, dst)
}

// readHost answers files.list and files.read from a map of files: a host
// that cannot pull (in-process test agents).
type readHost struct{ files map[string]string }

func (h *readHost) Name() string { return "h" }

func (h *readHost) Send(_ context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.FilesList); ok {
		for _, p := range slices.Sorted(maps.Keys(h.files)) {
			sum := sha256.Sum256([]byte(h.files[p]))
			res.Files = append(res.Files, proto.FileInfo{Path: p, Size: int64(len(h.files[p])), SHA256: hex.EncodeToString(sum[:])})
		}
		return nil
	}
	if p, res, ok := rpc.Match(r, rpc.FilesRead); ok {
		res.Data = []byte(h.files[p.Path])
		return nil
	}
	return &proto.Error{Code: "bad_request", Message: "unexpected " + r.Method()}
}

// TestFetchKindFromStep: a file's kind is what the step that made it
// recorded (Env.Made), not its name: a capture named wire.dump lands in
// captures/, is pulled as it is (PullRaw) and keeps its size and sha256; a
// workload's own.pcap, a process output (its result names it), lands in
// logs/ and is masked as every log is; a file no step recorded is a log;
// tcpdump's ring file named after a capture's file is the capture's. The
// same through Pull (ssh hosts) and files.read (in-process hosts).
func TestFetchKindFromStep(t *testing.T) {
	const secret = "s3cr3t"
	files := map[string]string{
		"wire.dump":      "pcap bytes " + secret,
		"wire.dump1":     "ring file",
		"own.pcap":       "own " + secret,
		"wl.x.r0.stdout": "out " + secret,
		"left.txt":       "nobody's",
	}
	want := map[string]string{
		"captures/wire.dump":  results.ArtifactCapture,
		"captures/wire.dump1": results.ArtifactCapture,
		"logs/own.pcap":       results.ArtifactLog,
		"logs/wl.x.r0.stdout": results.ArtifactLog,
		"logs/left.txt":       results.ArtifactLog,
	}
	mask := func(_ string, w io.Writer) io.WriteCloser { return maskWriter{w} }
	newEnv := func(h Host) *Env {
		env := &Env{Hosts: map[string]Host{"h": h}, Mask: mask}
		// What the steps record: the capture step its file, a
		// process's result its outputs (madeLogs).
		env.Made("h", "wire.dump", results.ArtifactCapture)
		madeLogs(env, "h", &proto.ProcResult{StdoutFile: "wl.x.r0.stdout", StderrFile: "own.pcap"})
		return env
	}
	check := func(t *testing.T, f *Fetch) {
		t.Helper()
		got := map[string]string{}
		for _, a := range f.Artifacts {
			got[a.Path] = a.Type
			masked := a.Size == 0 && a.SHA256 == ""
			if masked != (a.Type == results.ArtifactLog) {
				t.Errorf("%s (%s): size %d sha256 %q: a log is masked (no size, sha256), a capture never", a.Path, a.Type, a.Size, a.SHA256)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("artifact kinds (-want +got):\n%s", d)
		}
	}
	t.Run("pull", func(t *testing.T) {
		var listed []proto.FileInfo
		for _, p := range slices.Sorted(maps.Keys(files)) {
			listed = append(listed, proto.FileInfo{Path: p, Size: int64(len(files[p])), SHA256: "x"})
		}
		h := &rawHost{listHost: &listHost{files: listed, pulls: map[string][]string{}}}
		f := &Fetch{Host: "h", Dir: t.TempDir()}
		if err := f.Apply(context.Background(), newEnv(h)); err != nil {
			t.Fatal(err)
		}
		check(t, f)
		if !slices.Equal(h.raw, []string{"wire.dump", "wire.dump1"}) {
			t.Errorf("pulled as they are: %q, want the capture's files only", h.raw)
		}
	})
	t.Run("files.read", func(t *testing.T) {
		dir := t.TempDir()
		f := &Fetch{Host: "h", Dir: dir}
		if err := f.Apply(context.Background(), newEnv(&readHost{files: files})); err != nil {
			t.Fatal(err)
		}
		check(t, f)
		for p := range want {
			if !strings.Contains(files[filepath.Base(p)], secret) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), secret) == (want[p] == results.ArtifactLog) {
				t.Errorf("%s holds %q: a log's secret is masked, a capture's bytes are left as they are", p, b)
			}
		}
	})
}

// maskWriter replaces the secret of TestFetchKindFromStep.
type maskWriter struct{ w io.Writer }

func (m maskWriter) Write(b []byte) (int, error) {
	_, err := m.w.Write([]byte(strings.ReplaceAll(string(b), "s3cr3t", "***")))
	return len(b), err
}
func (m maskWriter) Close() error { return nil }

// TestMadeLogsBounded: the output file names a host's proc.wait answer
// gives are kept only when they are file names (SECURITY 126): a name of
// a megabyte was kept for the run with every process.
func TestMadeLogsBounded(t *testing.T) {
	env := &Env{}
	big := strings.Repeat("x", 1<<20)
	madeLogs(env, "h", &proto.ProcResult{StdoutFile: big + ".stdout", StderrFile: "wl.x.r0.stderr"})
	if d := cmp.Diff(map[string]string{"wl.x.r0.stderr": results.ArtifactLog}, env.MadeOn("h")); d != "" {
		t.Errorf("made (-want +got):\n%s", d)
	}
}

// pagingHost answers files.list with page after page, each of one file
// whose path is pathLen bytes and sorts after the last, and More always.
type pagingHost struct {
	pathLen int
	pages   int
}

func (h *pagingHost) Name() string { return "h" }

func (h *pagingHost) Send(_ context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.FilesList); ok {
		h.pages++
		p := fmt.Sprintf("%08d", h.pages) + strings.Repeat("x", h.pathLen-8)
		*res = proto.FilesList{Files: []proto.FileInfo{{Path: p, Size: 1, SHA256: "x"}}, More: true}
	}
	return nil
}

// TestListAllBounded: a host that pages its work dir's listing forever,
// each page one file of a long name sorting after the last, is listed
// only up to a bound in bytes (SECURITY 130): before, only the count was
// bounded (400,000 files), so 8 MiB names took 3 TB, 4 KiB ones 1.6 GB;
// a page naming a path longer than a path can be is refused.
func TestListAllBounded(t *testing.T) {
	for _, tc := range []struct {
		pathLen int
		ok      bool
	}{{4096, true}, {1 << 20, false}} {
		h := &pagingHost{pathLen: tc.pathLen}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		files, err := listAll(t.Context(), h, 0)
		runtime.ReadMemStats(&m1)
		if (err == nil) != tc.ok {
			t.Errorf("paths of %d bytes: err %v, want ok %v", tc.pathLen, err, tc.ok)
		}
		var n int
		for _, f := range files {
			n += len(f.Path)
		}
		if n > MaxListBytes+tc.pathLen || m1.TotalAlloc-m0.TotalAlloc > 4*MaxListBytes {
			t.Errorf("paths of %d bytes: listed %d files, %d bytes of names, allocated %d MiB: want at most %d bytes", tc.pathLen, len(files), n, (m1.TotalAlloc-m0.TotalAlloc)>>20, MaxListBytes)
		}
	}
}

// dripHost lists its work dir slowly (each files.list page after delay,
// one new file each, More always) or, with pages 1, lists one file of
// size bytes and then pulls it a byte at a time: its Pull only returns
// when its context ends.
type dripHost struct {
	delay time.Duration
	pages int
	size  int64
	n     int
}

func (h *dripHost) Name() string { return "h" }

func (h *dripHost) Send(ctx context.Context, r *rpc.Request) error {
	if _, res, ok := rpc.Match(r, rpc.FilesList); ok {
		select {
		case <-time.After(h.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		h.n++
		*res = proto.FilesList{Files: []proto.FileInfo{{Path: fmt.Sprintf("f%08d", h.n), Size: h.size, SHA256: "x"}}, More: h.pages == 0 || h.n < h.pages}
	}
	return nil
}

func (h *dripHost) Pull(ctx context.Context, _ []proto.FileInfo, _ string) error {
	<-ctx.Done() // a byte now and then: never idle, never done
	return ctx.Err()
}

// TestFetchEnds: a host's fetch as a whole is bounded (SECURITY 140): a
// host that answers each page of its listing just before its deadline
// (here 20 ms), or that sends its files a byte a minute, held the fetch,
// and `rlab run`, for good (400,000 pages, or the 20 GiB cap at a byte a
// minute). The step now fails naming the host past FetchBase (and a
// second a FetchRate bytes for the pull).
func TestFetchEnds(t *testing.T) {
	defer func(b time.Duration, r int64) { FetchBase, FetchRate = b, r }(FetchBase, FetchRate)
	FetchBase, FetchRate = 300*time.Millisecond, 1<<30
	for _, tc := range []struct {
		name string
		h    *dripHost
		want string
	}{
		{"listing page by page", &dripHost{delay: 20 * time.Millisecond}, "not done within"},
		{"pull byte by byte", &dripHost{pages: 1, size: 1 << 20}, "were not pulled within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{Hosts: map[string]Host{"h": tc.h}}
			done := make(chan error, 1)
			go func() { done <- (&Fetch{Host: "h", Dir: t.TempDir()}).Apply(t.Context(), env) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), `host "h"`) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("fetch: %v, want it cut off naming the host (%q)", err, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the fetch of a dripping host did not end within 20s (%d pages)", tc.h.n)
			}
		})
	}
}
