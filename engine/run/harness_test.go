package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/rpc/rpctest"
	"github.com/rlab-dev/rlab/agent/server"
	"github.com/rlab-dev/rlab/engine/lab"
)

// pipeHost is a real agent (agent/server) served in-process over io.Pipe,
// spoken to with the controller's protocol client (agent/rpc, through
// rpctest): the whole engine runs against it without SSH.
type pipeHost struct {
	name  string
	a     *rpctest.Agent
	c     *rpc.Client
	hello proto.Hello
	calls atomic.Int64
	netem *fakeNetem // impair_test.go: answers impair.* instead of the host's kernel
	// rewrite, when set, changes each answer the agent gave before the
	// controller's rpc.Invoke sees it (a host that lies in its replies).
	rewrite func(req *rpc.Request)
	// abandoned: the teardown ended the session without the agent's
	// cleanup (discard_test.go).
	abandoned atomic.Bool
}

func startPipeHost(t testing.TB, name, workDir string) *pipeHost {
	return startLyingHost(t, name, workDir, nil, rpc.Options{})
}

// startLyingHost is a pipe host whose answers pass through lie, with client
// options o (short deadlines for stuck hosts).
func startLyingHost(t testing.TB, name, workDir string, lie rpctest.Lie, o rpc.Options) *pipeHost {
	t.Helper()
	o.Host = name
	// A capture on lo never looks caught up to the drain (tcpdump counts
	// each packet there twice as received, once sent and once received, and
	// captures it once), so each stop waited out the whole drain, 5 s: a
	// capture's stop is still a drain, and the traffic here is small.
	a := rpctest.Start(t, server.Options{WorkDir: workDir, Version: "test", CaptureDrain: 500 * time.Millisecond}, o, lie)
	return &pipeHost{name: name, a: a, c: a.Client, hello: a.Hello}
}

func (h *pipeHost) Name() string       { return h.name }
func (h *pipeHost) Hello() proto.Hello { return h.hello }

func (h *pipeHost) Send(ctx context.Context, req *rpc.Request) error {
	h.calls.Add(1)
	if h.netem != nil {
		if handled, err := h.netem.call(h.name, req); handled {
			return err
		}
	}
	err := h.c.Send(ctx, req)
	if _, f, ok := rpc.Match(req, rpc.Facts); ok && h.netem != nil && err == nil {
		f.NetemModule = "loadable"
	}
	if h.rewrite != nil && err == nil {
		h.rewrite(req)
	}
	return err
}

// Pull copies from the agent's work dir (same machine), verifying size and
// sha256 and refusing non-local paths, as the SFTP pull does.
func (h *pipeHost) Pull(ctx context.Context, files []proto.FileInfo, dst string) error {
	for _, f := range files {
		if !filepath.IsLocal(f.Path) {
			return fmt.Errorf("refuse %q: not a local path", f.Path)
		}
		b, err := os.ReadFile(filepath.Join(h.hello.WorkDir, f.Path))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("pull %s: size or sha256 differs", f.Path)
		}
		p := filepath.Join(dst, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p+".part", b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(p+".part", p); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the agent's stdin: it stops what it started and returns.
func (h *pipeHost) Close() error { return h.a.Close() }

// kill drops the agent as a lost SSH session would: the controller sees
// its output end mid-call; the agent then sees its stdin close.
func (h *pipeHost) kill() { h.a.Kill() }

// pipeBed connects lab hosts to in-process agents with work dirs under one
// temp dir, and remembers them.
type pipeBed struct {
	t    testing.TB
	root string
	mu   sync.Mutex
	all  map[string]*pipeHost
	fail map[string]error // host name -> connect error
	// lie, by host name, makes that host's agent stuck (rpctest.Lie);
	// client, by host name, are the options of its client (short
	// deadlines).
	lie    map[string]rpctest.Lie
	client map[string]rpc.Options
	netem  *fakeNetem // impair_test.go
	// rewrite, by host name: that host's pipeHost.rewrite.
	rewrite map[string]func(req *rpc.Request)
}

func newPipeBed(t testing.TB) *pipeBed {
	return &pipeBed{t: t, root: t.TempDir(), all: map[string]*pipeHost{}, fail: map[string]error{}}
}

func (b *pipeBed) Connect(ctx context.Context, tg Target, runID string) (Host, error) {
	if err := b.fail[tg.Name]; err != nil {
		return nil, err
	}
	h := startLyingHost(b.t, tg.Name, filepath.Join(b.root, tg.Slug, runID), b.lie[tg.Name], b.client[tg.Name])
	h.netem = b.netem
	h.rewrite = b.rewrite[tg.Name]
	b.mu.Lock()
	b.all[tg.Name] = h
	b.mu.Unlock()
	return h, nil
}

func (b *pipeBed) host(name string) *pipeHost {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.all[name]
}

// loadLab writes src as a lab file and loads it.
func loadLab(t testing.TB, src string) *lab.Lab {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.Load([]string{p}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("load lab: %v", diags)
	}
	return l
}
