package remote

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// gzLen is what a cold install of b ships: b gzip'd as NewAgents does.
func gzLen(b []byte) int64 {
	gz, err := deflate(b)
	if err != nil {
		panic(err)
	}
	return int64(len(gz))
}

// toolFarm is a folder of links to every program in the usual bin folders
// but those in without: a PATH for a host that lacks them.
func toolFarm(t *testing.T, without ...string) string {
	t.Helper()
	dir := t.TempDir()
	skip := map[string]bool{}
	for _, w := range without {
		skip[w] = true
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if skip[e.Name()] {
				continue
			}
			os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())) // first one wins
		}
	}
	return dir
}

// shellHost is a host like newHost's whose shell has PATH pathDir and
// prints noise before every command (a login script).
func shellHost(t *testing.T, home, pathDir, noise string) *host {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	shell := sshtest.ShellHandlerPath(home, pathDir)
	return newHostWith(t, home, func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		io.WriteString(stdout, noise)
		return shell(cmd, stdin, stdout, stderr)
	})
}

// packedOf is a Packed source that ships gz for an agent b: gz need not
// be b's (a corrupt stream).
func packedOf(b, gz []byte) *Agents {
	return NewPackedAgents(func(goos, goarch string) ([]byte, string, int64, error) {
		if goarch != "amd64" && goarch != "arm64" {
			return nil, "", 0, ErrNotBuilt
		}
		return gz, sum(b), int64(len(b)), nil
	})
}

// A cold install on hosts of every kind: what it ships, in how many
// sessions, what the cache holds after, and the error when it fails.
func TestInstallCompressed(t *testing.T) {
	bin := fakeAgent(t)
	gz, err := deflate(bin)
	if err != nil {
		t.Fatal(err)
	}
	other := append([]byte(nil), bin...)
	other[len(other)-2] ^= 1
	otherGz, _ := deflate(other)
	full := toolFarm(t)
	noGzip := toolFarm(t, "gzip")
	noSum := toolFarm(t, "sha256sum", "shasum", "openssl")
	tests := []struct {
		name    string
		ag      *Agents
		path    string
		noise   string
		wantErr []string // nil: installs
		// on success: bytes shipped, exec sessions used, the debug log
		wantSent  int64
		wantExecs int32
		wantLog   string
	}{
		{name: "gzip'd in one session", ag: agentsOf(bin), path: full, wantSent: int64(len(gz)), wantExecs: 1, wantLog: "how=gzip"},
		{name: "login script noise before the probe", ag: agentsOf(bin), path: full, noise: "Welcome!\nRLAB-INSTALL fail not-me\n", wantSent: int64(len(gz)), wantExecs: 1},
		{name: "packed at build time", ag: packedOf(bin, gz), path: full, wantSent: int64(len(gz)), wantExecs: 1},
		{name: "no gzip on the host: SFTP", ag: agentsOf(bin), path: noGzip, wantSent: int64(len(bin)), wantExecs: 2, wantLog: "has no gzip"},
		{name: "no gzip, packed: inflated here, SFTP", ag: packedOf(bin, gz), path: noGzip, wantSent: int64(len(bin)), wantExecs: 2},
		{name: "checked with shasum", ag: agentsOf(bin), path: toolFarm(t, "sha256sum", "openssl"), wantSent: int64(len(gz)), wantExecs: 1},
		{name: "checked with openssl", ag: agentsOf(bin), path: toolFarm(t, "sha256sum", "shasum"), wantSent: int64(len(gz)), wantExecs: 1},
		{name: "no sha256 tool", ag: agentsOf(bin), path: noSum, wantErr: []string{"install agent at", "none of sha256sum, shasum or openssl", "install coreutils"}},
		{name: "stream of another build", ag: packedOf(bin, otherGz), path: full, wantErr: []string{"verify ", ".tmp-", "sha256 on the host is \"" + sum(other) + "\"", "upload corrupted"}},
		{name: "truncated stream", ag: packedOf(bin, gz[:len(gz)/2]), path: full, wantErr: []string{"upload to ", "inflate after", "unexpected end of file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := shellHost(t, "", tc.path, tc.noise)
			var logBuf bytes.Buffer
			tc.ag.WithLogger(slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
			execs := h.srv.Execs.Load()
			inst, err := tc.ag.Install(context.Background(), h.c)
			final := filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent")
			ents, _ := os.ReadDir(filepath.Dir(final))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("installed; want an error with %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				// Nothing under the name that runs, no temp file left.
				if len(names) != 0 {
					t.Errorf("after a failed install the cache holds %q", names)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if inst.Sent != tc.wantSent || inst.Path != final || inst.Hash != sum(bin) || inst.Home != h.home {
				t.Errorf("installed %+v; want %d bytes sent to %s", inst, tc.wantSent, final)
			}
			if n := h.srv.Execs.Load() - execs; n != tc.wantExecs {
				t.Errorf("used %d exec sessions, want %d", n, tc.wantExecs)
			}
			if got, _ := os.ReadFile(final); sum(got) != sum(bin) {
				t.Errorf("cached agent is not the agent")
			}
			if fi, err := os.Stat(final); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("cached agent mode %v (%v), want 0700", fi.Mode(), err)
			}
			for _, d := range []string{".cache/rlab", ".cache/rlab/agent", filepath.Join(".cache/rlab/agent", sum(bin))} {
				if fi, err := os.Stat(filepath.Join(h.home, d)); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: mode %v (%v), want 0700", d, fi.Mode(), err)
				}
			}
			if strings.Join(names, " ") != "rlab-agent" {
				t.Errorf("cache holds %q, want just rlab-agent", names)
			}
			if !strings.Contains(logBuf.String(), tc.wantLog) {
				t.Errorf("debug log %q lacks %q", logBuf.String(), tc.wantLog)
			}
			// Warm: nothing shipped, one session.
			execs = h.srv.Execs.Load()
			inst, err = tc.ag.Install(context.Background(), h.c)
			if err != nil || inst.Sent != 0 {
				t.Errorf("warm install: sent %d, %v", inst.Sent, err)
			}
			if n := h.srv.Execs.Load() - execs; n != 1 {
				t.Errorf("warm install used %d exec sessions, want 1", n)
			}
		})
	}
}

// With the probe a warm-start shell printed (Open's hand-off), the install
// is one session that prints no probe: the stream goes out at once.
func TestInstallProbedPipelined(t *testing.T) {
	bin := fakeAgent(t)
	h := newHost(t, "")
	ag := agentsOf(bin)
	out, err := output(context.Background(), h.c, probeCmd(ag.hashes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseProbe(out)
	if err != nil {
		t.Fatal(err)
	}
	if !p.tools["gzip"] || !p.tools["sha256sum"] {
		t.Fatalf("probe found tools %v on this machine", p.tools)
	}
	execs := h.srv.Execs.Load()
	inst, err := ag.installProbed(context.Background(), h.c, p, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.srv.Execs.Load() - execs; n != 1 || inst.Sent != gzLen(bin) {
		t.Errorf("sent %d bytes in %d sessions, want %d in 1", inst.Sent, n, gzLen(bin))
	}
	// The same probe again (it said: not cached) but force unset: it ships
	// again, as the probe asked; a probe that shows the agent cached ships
	// nothing and opens no session.
	out, _ = output(context.Background(), h.c, probeCmd(ag.hashes()), 0)
	p, _ = parseProbe(out)
	execs = h.srv.Execs.Load()
	inst, err = ag.installProbed(context.Background(), h.c, p, false, 0)
	if err != nil || inst.Sent != 0 || h.srv.Execs.Load() != execs {
		t.Errorf("cached: sent %d in %d sessions (%v), want 0 in 0", inst.Sent, h.srv.Execs.Load()-execs, err)
	}
}

// The script refuses a hash this rlab does not carry before the shell uses
// it, and does nothing on "skip" or an empty stdin.
func TestInstallScriptInput(t *testing.T) {
	bin := fakeAgent(t)
	h := newHost(t, "")
	ag := agentsOf(bin)
	for _, tc := range []struct {
		name, stdin, want string
	}{
		{name: "foreign hash", stdin: "gz " + strings.Repeat("b", 64) + "\n", want: "RLAB-INSTALL fail hash"},
		{name: "a path for a hash", stdin: "gz ../../../../tmp/x\n", want: "RLAB-INSTALL fail hash"},
		{name: "skip", stdin: "skip\n", want: ""},
		{name: "empty", stdin: "", want: ""},
	} {
		s, err := h.c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		s.Stdin = strings.NewReader(tc.stdin)
		out, _ := s.Output(installScript(ag.hashes(), "0123456789abcdef", false))
		s.Close()
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%s: printed %q, want %q", tc.name, got, tc.want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(h.home, CacheDir)); len(ents) != 0 {
		t.Errorf("refused installs left %d entries in the cache", len(ents))
	}
}

func TestStatusLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"RLAB-INSTALL ok\n", "ok"},
		{"motd\nRLAB-INSTALL fail verify abc\n", "fail verify abc"},
		{"RLAB-INSTALL fail gunzip\r\n", "fail gunzip"},
		{"noise\n", ""},
		{"", ""},
		{"xRLAB-INSTALL ok", ""},
	} {
		if got := statusLine([]byte(tc.in)); got != tc.want {
			t.Errorf("statusLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseProbeTools(t *testing.T) {
	for _, tc := range []struct {
		in              string
		inflate, verify bool
	}{
		{"RLAB-TOOLS gzip sha256sum\n", true, true},
		{"RLAB-TOOLS sha256sum\n", false, true},
		{"RLAB-TOOLS gzip openssl\n", true, true},
		{"RLAB-TOOLS gzip\n", true, false},
		{"RLAB-TOOLS\n", false, false},
		{"", true, true}, // an older probe: not known, try
	} {
		p, err := parseProbe([]byte("RLAB-PROBE-BEGIN\nLinux x86_64\n/home/u\n1\n1\n" + tc.in + "RLAB-PROBE-END\n"))
		if err != nil {
			t.Fatal(err)
		}
		if p.canInflate() != tc.inflate || p.canVerify() != tc.verify {
			t.Errorf("%q: inflate %v verify %v, want %v %v", tc.in, p.canInflate(), p.canVerify(), tc.inflate, tc.verify)
		}
	}
}

// FuzzInstallOutput feeds what a host prints to the install session's
// readers: the probe (bounded, up to its end marker) and the status line.
func FuzzInstallOutput(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/probe/*.txt")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, "RLAB-INSTALL ok\n"...))
	}
	f.Add([]byte("motd\nRLAB-INSTALL fail verify 00\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufioReader(string(b))
		if out, err := readProbe(r); err == nil {
			parseProbe(out)
			if !bytes.HasSuffix(bytes.TrimSpace(out), []byte(probeEnd)) {
				t.Errorf("readProbe stopped before the end marker: %q", out)
			}
		}
		rest, _ := io.ReadAll(r)
		statusLine(rest)
	})
}
