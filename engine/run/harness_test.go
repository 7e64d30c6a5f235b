package run

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/server"
	"github.com/rlab-dev/rlab/engine/lab"
)

// pipeHost is a real agent (agent/server) served in-process over io.Pipe,
// spoken to with the wire protocol: the whole engine runs against it without
// SSH.
type pipeHost struct {
	name    string
	w       *io.PipeWriter
	hello   proto.Hello
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan proto.Envelope
	dead    error
	served  chan error
	calls   atomic.Int64
	cancel  context.CancelFunc
	out     *io.PipeReader
}

func startPipeHost(t testing.TB, name, workDir string) *pipeHost {
	t.Helper()
	srv, err := server.New(server.Options{WorkDir: workDir, Hash: "test", Version: "test"})
	if err != nil {
		t.Fatalf("start in-process agent for %s: %v", name, err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &pipeHost{name: name, w: inW, pending: map[uint64]chan proto.Envelope{}, served: make(chan error, 1), cancel: cancel, out: outR}
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.CloseWithError(io.EOF)
		h.served <- err
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 64<<10), proto.MaxLine)
	if !sc.Scan() {
		t.Fatalf("agent %s: no hello", name)
	}
	if err := json.Unmarshal(sc.Bytes(), &h.hello); err != nil || h.hello.Magic != proto.Magic {
		t.Fatalf("agent %s: bad hello %q: %v", name, sc.Bytes(), err)
	}
	go h.read(sc)
	return h
}

func (h *pipeHost) read(sc *bufio.Scanner) {
	for sc.Scan() {
		var env proto.Envelope
		if err := json.Unmarshal(sc.Bytes(), &env); err != nil || env.Event != "" {
			continue
		}
		h.mu.Lock()
		ch := h.pending[env.ID]
		delete(h.pending, env.ID)
		h.mu.Unlock()
		if ch != nil {
			ch <- env
		}
	}
	h.mu.Lock()
	h.dead = fmt.Errorf("agent on host %q lost", h.name)
	for id, ch := range h.pending {
		close(ch)
		delete(h.pending, id)
	}
	h.mu.Unlock()
}

func (h *pipeHost) Name() string       { return h.name }
func (h *pipeHost) Hello() proto.Hello { return h.hello }

func (h *pipeHost) Call(ctx context.Context, method string, params, result any) error {
	h.calls.Add(1)
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw = b
	}
	ch := make(chan proto.Envelope, 1)
	h.mu.Lock()
	if h.dead != nil {
		h.mu.Unlock()
		return h.dead
	}
	h.next++
	id := h.next
	h.pending[id] = ch
	h.mu.Unlock()
	b, _ := json.Marshal(proto.Request{ID: id, Method: method, Params: raw})
	if _, err := h.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("agent on host %q lost: %w", h.name, err)
	}
	select {
	case env, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s on host %q: agent lost", method, h.name)
		}
		if env.Error != nil {
			return fmt.Errorf("%s on host %q: %w", method, h.name, env.Error)
		}
		if result != nil && len(env.Result) > 0 {
			return json.Unmarshal(env.Result, result)
		}
		return nil
	case <-ctx.Done():
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
		return ctx.Err()
	}
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
func (h *pipeHost) Close() error {
	h.w.Close()
	err := <-h.served
	h.served <- err
	return err
}

// kill drops the agent as a lost SSH session would: the controller sees
// its output end mid-call; the agent then sees its stdin close.
func (h *pipeHost) kill() {
	h.out.CloseWithError(errors.New("connection lost"))
	h.w.CloseWithError(errors.New("killed"))
}

// pipeBed connects lab hosts to in-process agents with work dirs under one
// temp dir, and remembers them.
type pipeBed struct {
	t    testing.TB
	root string
	mu   sync.Mutex
	all  map[string]*pipeHost
	fail map[string]error // host name -> connect error
}

func newPipeBed(t testing.TB) *pipeBed {
	return &pipeBed{t: t, root: t.TempDir(), all: map[string]*pipeHost{}, fail: map[string]error{}}
}

func (b *pipeBed) Connect(ctx context.Context, tg Target, runID string) (Host, error) {
	if err := b.fail[tg.Name]; err != nil {
		return nil, err
	}
	h := startPipeHost(b.t, tg.Name, filepath.Join(b.root, tg.Slug, runID))
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
