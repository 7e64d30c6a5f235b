package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// host is one in-process SSH server running real shell commands with home
// as $HOME (and sftp rooted there), and a connection to it.
type host struct {
	srv  *sshtest.Server
	home string
	c    *sshx.Client
}

func newHost(t *testing.T, home string) *host {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	return newHostWith(t, home, sshtest.ShellHandler(home))
}

// newHostWith is newHost with the server's exec handler.
func newHostWith(t *testing.T, home string, handler sshtest.Handler) *host {
	t.Helper()
	s := sshtest.Start(t, handler)
	s.SFTPDir = home
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, SSHConfig: "none", AgentSocket: "none"})
	if err != nil {
		t.Fatal(err)
	}
	h, p, _ := net.SplitHostPort(s.Addr)
	var port int
	fmt.Sscan(p, &port)
	c, err := d.Dial(context.Background(), sshx.Target{Name: "h", Address: h, Port: port, User: s.User, IdentityFiles: []string{s.KeyFile}, NoJump: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); d.Close() })
	return &host{srv: s, home: home, c: c}
}

func fakeAgent(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/fake-agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func agentsOf(b []byte) *Agents {
	return NewAgents(func(goos, goarch string) ([]byte, error) {
		if goarch != "amd64" && goarch != "arm64" {
			return nil, ErrNotBuilt
		}
		return b, nil
	})
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestInstallWarmAndCorrupt(t *testing.T) {
	if _, err := os.Stat("/usr/bin/sha256sum"); err != nil {
		t.Skip("needs sha256sum")
	}
	bin := fakeAgent(t)
	h := newHost(t, "")
	ag := agentsOf(bin)
	steps := []struct {
		name     string
		before   func(final string)
		wantSent int64
	}{
		{name: "cold: uploads the whole binary", wantSent: gzLen(bin)},
		{name: "warm: nothing sent", wantSent: 0},
		{name: "cached file truncated (interrupted earlier): re-sent", before: func(final string) {
			os.WriteFile(final, bin[:10], 0o700)
		}, wantSent: gzLen(bin)},
		{name: "stale temp file from an interrupted upload: ignored", before: func(final string) {
			os.WriteFile(final+".tmp-deadbeef", bin[:5], 0o600)
		}, wantSent: 0},
		{name: "same size, wrong content: Install trusts the size (Open catches it)", before: func(final string) {
			bad := append([]byte(nil), bin...)
			bad[len(bad)-2] ^= 1
			os.WriteFile(final, bad, 0o700)
		}, wantSent: 0},
	}
	final := filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent")
	for _, st := range steps {
		if st.before != nil {
			st.before(final)
		}
		inst, err := ag.Install(context.Background(), h.c)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if inst.Sent != st.wantSent {
			t.Errorf("%s: sent %d bytes, want %d", st.name, inst.Sent, st.wantSent)
		}
		if inst.Path != final || inst.Hash != sum(bin) || inst.Home != h.home {
			t.Errorf("%s: installed %+v", st.name, inst)
		}
		got, err := os.ReadFile(final)
		if err != nil || (sum(got) != sum(bin) && !strings.HasPrefix(st.name, "same size")) {
			t.Errorf("%s: cached binary wrong (%v)", st.name, err)
		}
		if fi, err := os.Stat(final); err == nil && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", st.name, fi.Mode().Perm())
		}
	}
}

// Hosts sharing one home directory (NFS) installing at once all succeed and
// leave one good binary and no temp files.
func TestInstallSharedHome(t *testing.T) {
	bin := fakeAgent(t)
	home := t.TempDir()
	ag := agentsOf(bin)
	var hosts []*host
	for i := 0; i < 6; i++ {
		hosts = append(hosts, newHost(t, home))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = ag.Install(context.Background(), h.c)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
	dir := filepath.Join(home, CacheDir, sum(bin))
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "rlab-agent" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("cache dir holds %q, want just rlab-agent", names)
	}
}

func TestInstallInterrupted(t *testing.T) {
	bin := make([]byte, 32<<20) // big enough to cancel mid-way
	h := newHost(t, "")
	ag := agentsOf(bin)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the temp file has started to fill.
		for {
			m, _ := filepath.Glob(filepath.Join(h.home, CacheDir, "*", "rlab-agent.tmp-*"))
			if len(m) > 0 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := ag.Install(ctx, h.c)
	if err == nil {
		t.Skip("upload finished before it could be interrupted")
	}
	if !strings.Contains(err.Error(), "install agent") {
		t.Errorf("error %q does not say what was being done", err)
	}
	if _, err := os.Stat(filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent")); err == nil {
		t.Errorf("an interrupted upload left a final binary")
	}
	// The next run installs cleanly.
	inst, err := ag.Install(context.Background(), h.c)
	if err != nil || inst.Sent != gzLen(bin) {
		t.Fatalf("install after interruption: %+v %v", inst, err)
	}
}

func TestParseProbe(t *testing.T) {
	h := strings.Repeat("a", 64)
	tests := []struct {
		name     string
		out      string
		wantErr  bool
		wantSize int64
	}{
		{name: "plain", out: "RLAB-PROBE-BEGIN\nLinux x86_64\n/home/u\n1000\n1000\nRLAB-PROBE-END\n"},
		{name: "login noise before and a cached agent", out: "motd\nRLAB-PROBE-BEGIN\nLinux aarch64\n/home/u\n0\n0\n3965090 /home/u/.cache/rlab/agent/" + h + "/rlab-agent\nRLAB-PROBE-END\n", wantSize: 3965090},
		{name: "no markers", out: "Linux x86_64\n", wantErr: true},
		{name: "relative home", out: "RLAB-PROBE-BEGIN\nLinux x86_64\nhome\n1\n1\nRLAB-PROBE-END\n", wantErr: true},
		{name: "bad uid", out: "RLAB-PROBE-BEGIN\nLinux x86_64\n/h\nx\n1\nRLAB-PROBE-END\n", wantErr: true},
	}
	for _, tc := range tests {
		p, err := parseProbe([]byte(tc.out))
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.wantSize != 0 && p.sizes["/home/u/.cache/rlab/agent/"+h+"/rlab-agent"] != tc.wantSize {
			t.Errorf("%s: sizes %v", tc.name, p.sizes)
		}
	}
}

func FuzzParseProbe(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/probe/*.txt")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("RLAB-PROBE-BEGIN\nLinux x86_64\n/home/u\n1000\n1000\nRLAB-PROBE-END\n"))
	f.Add([]byte("x\nRLAB-PROBE-BEGIN\nLinux aarch64\n/\n0\n0\nzz  /a\nRLAB-PROBE-END"))
	// Properties: a probe or an error, never both; a probe has an
	// absolute home, one-word os and machine, no negative size; and it
	// round-trips: written back in the probe's own format it parses to
	// the same probe.
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseProbe(b)
		if (p == nil) == (err == nil) {
			t.Fatalf("probe %+v with error %v", p, err)
		}
		if err != nil {
			return
		}
		if !path.IsAbs(p.home) || len(strings.Fields(p.os)) != 1 || len(strings.Fields(p.machine)) != 1 {
			t.Fatalf("probe home %q, os %q, machine %q", p.home, p.os, p.machine)
		}
		for file, n := range p.sizes {
			if n < 0 {
				t.Fatalf("size %d of %q", n, file)
			}
		}
		again, err := parseProbe(renderProbe(p))
		if err != nil || !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip: %+v -> %q -> %+v, %v", p, renderProbe(p), again, err)
		}
	})
}

// renderProbe writes p as the probe script prints it, the tools line
// (when the probe had one) and a closing line the parser ignores last, so
// no line the parser reads loses its trailing blanks to the block's trim.
func renderProbe(p *probe) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s %s\n%s\n%d\n%d\n", probeBegin, p.os, p.machine, p.home, p.uid, p.gid)
	for _, file := range slices.Sorted(maps.Keys(p.sizes)) {
		fmt.Fprintf(&b, "%d %s\n", p.sizes[file], file)
	}
	if p.tools != nil {
		b.WriteString(toolsTag)
		for _, t := range slices.Sorted(maps.Keys(p.tools)) {
			b.WriteString(" " + t)
		}
		b.WriteString("\n")
	}
	b.WriteString("done\n" + probeEnd + "\n")
	return []byte(b.String())
}

func startFake(t *testing.T, env string) (*Agent, *host, *[]proto.Event) {
	t.Helper()
	bin := fakeAgent(t)
	if env != "" {
		// The fake reads FAKE_* from its script; bake the setting in.
		bin = []byte(strings.Replace(string(bin), "#!/bin/sh\n", "#!/bin/sh\n"+env+"\n", 1))
	}
	h := newHost(t, "")
	inst, err := agentsOf(bin).Install(context.Background(), h.c)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []proto.Event
	a, err := Start(context.Background(), h.c, inst, StartOptions{Host: "server", RunID: "r1", OnEvent: func(e proto.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	if err != nil {
		return nil, h, nil
	}
	t.Cleanup(func() { a.Close() })
	return a, h, &events
}

func TestAgentCalls(t *testing.T) {
	a, h, events := startFake(t, "")
	if a == nil {
		t.Fatal("start failed")
	}
	if a.Hello.WorkDir != filepath.Join(h.home, ".cache/rlab/runs/r1/server") {
		t.Errorf("hello work dir %q", a.Hello.WorkDir)
	}
	// Concurrent calls each get their own answer.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p proto.Pong
			if err := a.Call(context.Background(), "ping", nil, &p); err != nil || p.Time != 42 {
				t.Errorf("ping: %v %+v", err, p)
			}
		}()
	}
	wg.Wait()
	err := a.Call(context.Background(), "fail", map[string]string{"x": "y"}, nil)
	var ce *CallError
	var pe *proto.Error
	if !errors.As(err, &ce) || !errors.As(err, &pe) || pe.Code != proto.CodeNotFound {
		t.Fatalf("fail: %v", err)
	}
	for _, w := range []string{`host "server"`, "fail", "no such netdev eth9", "boom", "exited 1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if err := a.Call(context.Background(), "event", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(*events) != 1 || (*events)[0].Event != "log" {
		t.Errorf("events %+v", *events)
	}
	// The agent dies mid-call: this call and every later one fail clearly.
	err = a.Call(context.Background(), "die", nil, nil)
	if !errors.Is(err, ErrAgentLost) || !strings.Contains(err.Error(), `agent on host "server" lost`) || !strings.Contains(err.Error(), "dying") {
		t.Errorf("die: %v", err)
	}
	if err := a.Call(context.Background(), "ping", nil, nil); !errors.Is(err, ErrAgentLost) {
		t.Errorf("ping after loss: %v", err)
	}
	if !strings.Contains(a.Stderr(), "fake agent log line") {
		t.Errorf("stderr not kept: %q", a.Stderr())
	}
}

// A cached copy of the right size but the wrong content is caught by its
// hello hash and replaced by Open, which then starts the right build.
func TestOpenReplacesCorruptCache(t *testing.T) {
	bin := fakeAgent(t)
	h := newHost(t, "")
	ag := agentsOf(bin)
	if _, err := ag.Install(context.Background(), h.c); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent")
	bad := []byte(strings.Replace(string(bin), "login script noise", "login script NOISE", 1))
	if len(bad) != len(bin) {
		t.Fatal("corrupt copy must keep the size")
	}
	os.WriteFile(final, bad, 0o700)
	a, inst, err := ag.Open(context.Background(), h.c, StartOptions{Host: "server", RunID: "r1"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer a.Close()
	if inst.Sent != gzLen(bin) {
		t.Errorf("sent %d bytes, want the whole agent again, gzip'd (%d)", inst.Sent, gzLen(bin))
	}
	if got, _ := os.ReadFile(final); sum(got) != sum(bin) {
		t.Errorf("cache still corrupt")
	}
	// Warm again: nothing sent, and one session (probe and start in one).
	execs := h.srv.Execs.Load()
	a2, inst2, err := ag.Open(context.Background(), h.c, StartOptions{Host: "server2", RunID: "r1"})
	if err != nil || inst2.Sent != 0 {
		t.Fatalf("warm open: sent %d, %v", inst2.Sent, err)
	}
	if n := h.srv.Execs.Load() - execs; n != 1 {
		t.Errorf("warm open used %d sessions, want 1", n)
	}
	if inst2.Hash != sum(bin) || inst2.Path != final || inst2.Home != h.home {
		t.Errorf("warm open installed %+v", inst2)
	}
	a2.Close()
}

func TestAgentWrongHash(t *testing.T) {
	bin := fakeAgent(t)
	bin = []byte(strings.Replace(string(bin), "#!/bin/sh\n", "#!/bin/sh\nFAKE_BAD_HASH=1\n", 1))
	h := newHost(t, "")
	inst, err := agentsOf(bin).Install(context.Background(), h.c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), h.c, inst, StartOptions{Host: "server", RunID: "r1"})
	if err == nil || !strings.Contains(err.Error(), "build hash") {
		t.Fatalf("want a hash mismatch, got %v", err)
	}
}

func TestStartRefusesBadRunID(t *testing.T) {
	for _, id := range []string{"", "..", "a b", "$(x)", "a/b", strings.Repeat("a", 129)} {
		if _, err := Start(context.Background(), nil, &Installed{}, StartOptions{RunID: id}); err == nil {
			t.Errorf("run id %q accepted", id)
		}
	}
}

func TestReadHello(t *testing.T) {
	hello := `{"magic":"rlab-agent","proto":1,"hash":"ab"}` + "\n"
	tests := []struct {
		name, in string
		wantErr  string
	}{
		{name: "clean", in: hello},
		{name: "after login noise", in: "Last login: never\n{not json\n" + hello},
		{name: "another program's JSON first", in: `{"magic":"other"}` + "\n" + hello},
		{name: "exit before hello", in: "bash: rlab-agent: not found\n", wantErr: "exited before its hello"},
		{name: "endless noise", in: strings.Repeat("noise noise noise\n", 10000) + hello, wantErr: "no hello in the first"},
	}
	for _, tc := range tests {
		h, _, err := readHello(bufioReader(tc.in))
		if tc.wantErr == "" {
			if err != nil || h.Hash != "ab" {
				t.Errorf("%s: %+v %v", tc.name, h, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func FuzzReadHello(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/hello/*.txt")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A hello is only one with rlab's magic; what came before it is
		// given back as it was, and bounded.
		h, junk, err := readHello(bufioReader(string(b)))
		if err == nil && (h.Magic != proto.Magic || len(junk) > maxJunkBytes) {
			t.Fatalf("hello %+v after %d bytes accepted", h, len(junk))
		}
		if !bytes.HasPrefix(b, junk) {
			t.Fatalf("junk %q is not what the host printed first", junk)
		}
	})
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"server": "server", `server["ana"]`: "server__ana__", "h[0]": "h_0_", "": "host", "..": "host..", "a/b": "a_b"} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfinedPath(t *testing.T) {
	dst := t.TempDir()
	tests := []struct {
		p  string
		ok bool
	}{
		{"a.pcap", true},
		{"logs/agent.log", true},
		{"../x", false},
		{"../../etc/passwd", false},
		{"/etc/passwd", false},
		{"", false},
		{"a/../../x", false},
		{"a/../b", true},
	}
	for _, tc := range tests {
		got, err := ConfinedPath(dst, tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("ConfinedPath(%q) = %q, %v; want ok=%v", tc.p, got, err, tc.ok)
		}
	}
}

func TestPull(t *testing.T) {
	a, h, _ := startFake(t, "")
	if a == nil {
		t.Fatal("start failed")
	}
	wd := a.Hello.WorkDir
	os.MkdirAll(filepath.Join(wd, "logs"), 0o700)
	data := []byte(strings.Repeat("pcap bytes ", 100000))
	os.WriteFile(filepath.Join(wd, "roce.pcap"), data, 0o600)
	os.WriteFile(filepath.Join(wd, "logs", "a.log"), []byte("log"), 0o600)
	os.Symlink("/etc/hostname", filepath.Join(wd, "link"))
	_ = h
	dst := t.TempDir()
	good := []proto.FileInfo{
		{Path: "roce.pcap", Size: int64(len(data)), SHA256: sum(data)},
		{Path: "logs/a.log", Size: 3, SHA256: sum([]byte("log"))},
	}
	n, err := a.Pull(context.Background(), good, dst)
	if err != nil || n != int64(len(data))+3 {
		t.Fatalf("pull: %d %v", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "roce.pcap")); sum(b) != sum(data) {
		t.Errorf("pulled pcap differs")
	}
	bad := []struct {
		f    proto.FileInfo
		want string
	}{
		{proto.FileInfo{Path: "../escape", Size: 1}, "not a local relative path"},
		{proto.FileInfo{Path: "/etc/passwd", Size: 1}, "not a local relative path"},
		{proto.FileInfo{Path: "link", Size: 1}, "not a regular file"},
		{proto.FileInfo{Path: "logs/a.log", Size: 3, SHA256: sum([]byte("xxx"))}, "sha256"},
		{proto.FileInfo{Path: "logs/a.log", Size: 99}, "99 bytes"},
	}
	for _, b := range bad {
		_, err := a.Pull(context.Background(), []proto.FileInfo{b.f}, filepath.Join(dst, "bad"))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("pull %q: %v, want %q", b.f.Path, err, b.want)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dst, "bad"))
	for _, e := range ents {
		if e.Name() != "logs" {
			t.Errorf("a refused pull left %s", e.Name())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dst, "bad", "logs", "*")); len(m) != 0 {
		t.Errorf("a refused pull left %q", m)
	}
}
