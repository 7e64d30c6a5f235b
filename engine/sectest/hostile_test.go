package sectest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// helloLiar rewrites (or withholds) the agent's hello and passes the rest.
func helloLiar(mode string) func(io.Writer, string, *requests) io.Writer {
	return func(w io.Writer, _ string, _ *requests) io.Writer {
		n := 0
		return &lineWriter{fn: func(line []byte) error {
			n++
			if n > 1 {
				_, err := w.Write(line)
				return err
			}
			var h proto.Hello
			if err := json.Unmarshal(line, &h); err != nil {
				return err
			}
			switch mode {
			case "silent":
				return nil
			case "banner":
				io.WriteString(w, "Welcome to lab host 7!\n{\"not\": \"a hello\"}\n")
			case "flood":
				// A login script that never stops talking before the hello.
				junk := bytes.Repeat([]byte("motd motd motd motd\n"), 1<<12)
				for i := 0; i < 64; i++ {
					if _, err := w.Write(junk); err != nil {
						return err
					}
				}
			case "bad-magic":
				h.Magic = "not-rlab"
			case "wrong-proto":
				h.Proto = 999
			case "wrong-hash":
				h.Hash = strings.Repeat("0", 64)
			case "hash-injection":
				h.Hash = strings.Repeat("\x1b[2J", 1000)
			}
			b, _ := json.Marshal(h)
			_, err := w.Write(append(b, '\n'))
			return err
		}}
	}
}

// TestHostileHello: the controller starts an agent (real SSH, real install,
// sha256 verified on the host) that greets it wrongly; each is refused with
// an error naming the host and what was wrong, or accepted when it is only
// a login banner.
func TestHostileHello(t *testing.T) {
	tests := []struct {
		mode string
		want []string // substrings of the error; nil: the start succeeds
	}{
		{"banner", nil},
		{"flood", []string{"no hello in the first", "login script"}},
		{"bad-magic", []string{"no hello within"}}, // not a hello: skipped like a banner line
		{"wrong-proto", []string{"protocol 999", "speaks 1"}},
		{"wrong-hash", []string{"build hash", strings.Repeat("0", 64), "we installed"}},
		// Past a sha256's 64 bytes: the hello's bound refuses it (proto.Bounds).
		{"hash-injection", []string{"its hello is refused", "hash: 4000 bytes, more than 64"}},
		{"silent", []string{"no hello within"}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			h := startHost(t, "evil", helloLiar(tc.mode))
			ctx, c, inst := installedOn(t, h)
			a, err := remote.Start(ctx, c, inst, remote.StartOptions{Host: "evil", RunID: "sectest", HelloTimeout: 2 * time.Second})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				if err := a.Call(ctx, proto.MethodPing, nil, nil); err != nil {
					t.Errorf("ping after a banner: %v", err)
				}
				a.Close()
				return
			}
			if err == nil {
				a.Close()
				t.Fatalf("start accepted a %s agent", tc.mode)
			}
			if !contains(err.Error(), tc.want...) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\x1b") {
				t.Errorf("error carries the host's terminal escapes: %q", err)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error is %d bytes: a host can flood the user's terminal", len(err.Error()))
			}
		})
	}
}

// responseLiar misbehaves on the responses to requests of one method and
// passes everything else through.
func responseLiar(mode, method, outside string) func(io.Writer, string, *requests) io.Writer {
	return func(w0 io.Writer, wd string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) != nil || env.Event != "" || env.ID == 0 || req.method(env.ID) != method {
				_, err := w.Write(line)
				return err
			}
			switch mode {
			case "malformed":
				line = []byte(`{"id": 1, "result": {"unterminated` + "\n")
			case "huge-line":
				// One line of 1 GiB, streamed: the controller must stop
				// reading at proto.MaxLine.
				if _, err := io.WriteString(w, `{"id":`+jsonNum(env.ID)+`,"result":"`); err != nil {
					return err
				}
				chunk := bytes.Repeat([]byte("A"), 64<<10)
				for i := 0; i < (1<<30)/len(chunk); i++ {
					if _, err := w.Write(chunk); err != nil {
						return err
					}
				}
				line = []byte("\"}\n")
			case "endless":
				// Events for the call, forever, instead of its answer; other
				// calls are still answered.
				ev, _ := json.Marshal(proto.Event{ID: env.ID, Event: proto.EventLog, Data: json.RawMessage(`{"msg":"still going"}`)})
				ev = append(ev, '\n')
				go func() {
					for {
						if _, err := w.Write(ev); err != nil {
							return
						}
					}
				}()
				return nil
			case "mute":
				// Never answers this call; everything else is answered.
				return nil
			case "stuck":
				// Events for the call, forever, and nothing else ever again:
				// the session stays up but no call is answered.
				ev, _ := json.Marshal(proto.Event{ID: env.ID, Event: proto.EventLog, Data: json.RawMessage(`{"msg":"still going"}`)})
				ev = append(ev, '\n')
				for {
					if _, err := w.Write(ev); err != nil {
						return err
					}
				}
			case "traversal":
				line = rewriteFiles(line, func(fs []proto.FileInfo) []proto.FileInfo {
					evil := []string{"../../../../escape-rel", "../../../../../escape-rel2", filepath.Join(outside, "escape-abs"), "sub/../../../../../escape-sub", ""}
					for i := range fs {
						fs[i].Path = evil[i%len(evil)]
					}
					return fs
				})
			case "symlink":
				// A file in the work dir that is a symlink to a file
				// outside it, listed with the right size and sha256.
				target := filepath.Join(outside, "host-secret")
				body, _ := os.ReadFile(target)
				os.Symlink(target, filepath.Join(wd, "evil.stdout"))
				sum := sha256.Sum256(body)
				line = rewriteFiles(line, func(fs []proto.FileInfo) []proto.FileInfo {
					return append(fs, proto.FileInfo{Path: "evil.stdout", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Mode: 0o600})
				})
			case "lying-size":
				// Claims a small file is huge: the pull must stop at the
				// listed size and refuse the file.
				line = rewriteFiles(line, func(fs []proto.FileInfo) []proto.FileInfo {
					for i := range fs {
						fs[i].Size = 1 << 40
					}
					return fs
				})
			}
			_, err := w.Write(line)
			return err
		}}
	}
}

// lockedWriter serialises writers sharing one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func rewriteFiles(line []byte, f func([]proto.FileInfo) []proto.FileInfo) []byte {
	var env struct {
		ID     uint64          `json:"id"`
		Result proto.FilesList `json:"result"`
	}
	if json.Unmarshal(line, &env) != nil {
		return line
	}
	env.Result.Files = f(env.Result.Files)
	b, _ := json.Marshal(env)
	return append(b, '\n')
}

// peakHeap samples the heap in use until stop is called and returns the
// highest value seen.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// TestHostileHostDuringRun runs a two-host lab through `rlab run`'s engine
// over real SSH; host "evil" lies in one way, host "good" is honest. Every
// lie ends in an error naming the evil host; the run ends; the good host's
// workload succeeds and its results and logs are kept; nothing is written
// outside the run directory; memory stays bounded.
func TestHostileHostDuringRun(t *testing.T) {
	tests := []struct {
		mode, method string
		want         []string // substrings of the run's error
		maxHeap      uint64   // bound on the controller's heap in use (0: not checked)
		gap          string   // a known gap (SECURITY.md): skipped unless RLAB_SECTEST_GAPS=1
		callTimeout  string   // RLAB_AGENT_TIMEOUT for the run ("" the defaults)
		// waitTimeout (RLAB_AGENT_TIMEOUT, for a case named without it) and
		// stopTimeout (run.Options.StopTimeout) shorten the waits of a run
		// against a host that never answers, past the workload's 5 s
		// timeout: the unanswered proc.wait until its call's deadline (80 s
		// by default) and each stop of the workload (40 s). The same waits
		// end the run, in 10 s rather than 100 s (more than half of this
		// package's time in CI).
		waitTimeout string
		stopTimeout time.Duration
	}{
		{mode: "mute", method: proto.MethodFacts, want: []string{`host "evil": agent did not answer facts within 5s`}, callTimeout: "5s"},
		{mode: "endless", method: proto.MethodFacts, want: []string{`host "evil": agent did not answer facts within 5s`}, callTimeout: "5s", maxHeap: 128 << 20},
		{mode: "mute", method: proto.MethodFilesList, want: []string{`host "evil": agent did not answer files.list within 5s`}, callTimeout: "5s"},
		{mode: "endless", method: proto.MethodFilesList, want: []string{`host "evil": agent did not answer files.list within 5s`}, callTimeout: "5s", maxHeap: 128 << 20},
		{mode: "malformed", method: proto.MethodProcWait, want: []string{`agent on host "evil" lost`, "malformed line from agent"}},
		{mode: "huge-line", method: proto.MethodProcWait, want: []string{`agent on host "evil" lost`, "line longer than"}, maxHeap: 128 << 20},
		{mode: "endless", method: proto.MethodProcWait, want: []string{`workload "on_evil"`, "timed out"}, maxHeap: 128 << 20, waitTimeout: "5s", stopTimeout: 5 * time.Second},
		{mode: "stuck", method: proto.MethodProcWait, want: []string{`host "evil" did not answer a request to stop workload "on_evil" within 5s`}, stopTimeout: 5 * time.Second},
		{mode: "traversal", method: proto.MethodFilesList, want: []string{`host "evil" reported files outside its work dir`, "escape-rel"}},
		{mode: "symlink", method: proto.MethodFilesList, want: []string{`host "evil"`, "evil.stdout"}}, // refused by the SFTP pull (not a regular file) or by the agent's os.Root (files.read)
		{mode: "lying-size", method: proto.MethodFilesList, want: []string{`host "evil"`, "the agent listed 1099511627776 bytes"}},
	}
	for _, tc := range tests {
		name := tc.mode
		if tc.callTimeout != "" {
			name += "/" + tc.method
		}
		t.Run(name, func(t *testing.T) {
			if tc.gap != "" {
				knownGap(t, tc.gap)
			}
			if tc.callTimeout != "" {
				t.Setenv("RLAB_AGENT_TIMEOUT", tc.callTimeout)
			}
			if tc.waitTimeout != "" {
				t.Setenv("RLAB_AGENT_TIMEOUT", tc.waitTimeout)
			}
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			os.Mkdir(outside, 0o700)
			os.WriteFile(filepath.Join(outside, "host-secret"), []byte("not for the controller\n"), 0o600)
			evil := startHost(t, "evil", responseLiar(tc.mode, tc.method, outside))
			good := startHost(t, "good", nil)
			l := writeLab(t, `lab "hostile" {}
`+evil.hcl()+good.hcl()+`
workload "on_evil" {
  tool    = "exec"
  host    = host.evil
  command = ["echo", "evil output"]
  timeout = "5s"
}
workload "on_good" {
  tool    = "exec"
  host    = host.good
  command = ["echo", "good output"]
}
`, lab.LoadOptions{})
			runs := filepath.Join(base, "runs")
			before := snapshot(t, base)
			runtime.GC()
			stop := peakHeap()
			p, conn := planOf(t, l), connector(t, sshx.Options{})
			done := make(chan *run.Result, 1)
			go func() {
				done <- run.Run(context.Background(), l, run.Options{Plan: p, Connector: conn, Out: filepath.Join(runs, "r"), TeardownTimeout: 20 * time.Second, StopTimeout: tc.stopTimeout})
			}()
			var res *run.Result
			select {
			case res = <-done:
			case <-time.After(3 * time.Minute): // liveness bound, not a timing assertion
				t.Fatalf("the run did not end by itself against a %s host", tc.mode)
			}
			peak := stop()
			if res.Code == run.ExitOK || res.Err == nil {
				t.Fatalf("a %s host passed: code %d", tc.mode, res.Code)
			}
			if !contains(res.Err.Error(), tc.want...) {
				t.Errorf("error:\n%v\nwant it to contain %q", res.Err, tc.want)
			}
			t.Logf("controller heap in use peaked at %d MiB", peak>>20)
			if tc.maxHeap > 0 && peak > tc.maxHeap {
				t.Errorf("controller heap peaked at %d MiB, bound %d MiB", peak>>20, tc.maxHeap>>20)
			}
			// The good host's results are kept.
			r, err := results.ReadRun(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range r.Workloads {
				if w.Name == "on_good" && w.Status != results.StatusOK {
					t.Errorf("good host's workload: status %q, error %q", w.Status, w.Error)
				}
			}
			if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "good", "logs", "wl.on_good.exec.r0.stdout")); err != nil || string(b) != "good output\n" {
				t.Errorf("good host's output: %q, %v", b, err)
			}
			// Nothing new outside the run directory (the agents' work dirs
			// live in the hosts' homes, elsewhere).
			var stray []string
			for p := range snapshot(t, base) {
				if !before[p] && p != runs && !strings.HasPrefix(p, res.Dir) {
					stray = append(stray, p)
				}
			}
			sort.Strings(stray)
			if len(stray) > 0 {
				t.Errorf("written outside the run directory %s: %q", res.Dir, stray)
			}
			if _, err := os.Stat(filepath.Join(res.Dir, "hosts", "evil", "logs", "evil.stdout")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the symlinked file was pulled: %v", err)
			}
		})
	}
}

// TestHelloTimeoutFromEnv: RLAB_AGENT_TIMEOUT replaces the hello's limit as
// SECURITY 53 says it replaces every wait's: a host whose agent never
// greets is named after it, not after the default minute (rlab down and
// check waited the minute with it set; found in attack round 7).
func TestHelloTimeoutFromEnv(t *testing.T) {
	t.Setenv(remote.AgentTimeoutEnv, "2s")
	h := startHost(t, "evil", helloLiar("silent"))
	ctx, c, inst := installedOn(t, h)
	t0 := time.Now()
	a, err := remote.Start(ctx, c, inst, remote.StartOptions{Host: "evil", RunID: "sectest"})
	if err == nil {
		a.Close()
		t.Fatal("start accepted an agent that never greeted")
	}
	if !strings.Contains(err.Error(), "no hello within 2s") {
		t.Errorf("error %q, want the hello named after RLAB_AGENT_TIMEOUT's 2s (waited %s)", err, time.Since(t0).Round(time.Second))
	}
}
