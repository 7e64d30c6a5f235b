// Package remote puts the rlab agent on a host reached over SSH and talks to
// it: install (probe `uname -sm`, upload with SFTP to a per-user cache path
// named by the binary's sha256, verify on the host, rename; nothing sent
// when already there), start (`serve` as one long-lived session, with
// `sudo -n` for become), a protocol client (concurrent calls, events,
// bounded stderr, "agent lost" on a dropped session) and Pull (artifacts:
// small files in one tar stream from `rlab-agent bundle`, big ones over SFTP
// with large reads; each verified by size and sha256, confined to the
// destination folder, within a per-host byte cap, with a progress hook).
//
// It builds on engine/sshx and agent/proto; it knows nothing of labs.
package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/engine/sshx"
	"golang.org/x/crypto/ssh"
)

// Binaries returns the agent binary for a platform (agent/dist.Binary).
type Binaries func(goos, goarch string) ([]byte, error)

// Agents holds the agent binaries of a run and their hashes, computed once.
type Agents struct {
	get  Binaries
	mu   sync.Mutex
	bins map[string]*agentBin
}

type agentBin struct {
	data []byte
	hash string
	err  error
}

// NewAgents wraps a Binaries function.
func NewAgents(get Binaries) *Agents { return &Agents{get: get, bins: map[string]*agentBin{}} }

func (a *Agents) bin(goarch string) *agentBin {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.bins[goarch]; ok {
		return b
	}
	b := &agentBin{}
	b.data, b.err = a.get("linux", goarch)
	if b.err == nil {
		s := sha256.Sum256(b.data)
		b.hash = hex.EncodeToString(s[:])
	}
	a.bins[goarch] = b
	return b
}

// CacheDir is where agents are kept on a host, relative to the home folder.
const CacheDir = ".cache/rlab/agent"

// Installed describes the agent on one host.
type Installed struct {
	Path   string // absolute path of the agent binary on the host
	Hash   string // its sha256
	GOARCH string
	Home   string
	UID    int
	GID    int
	Sent   int64 // agent bytes uploaded (0 when it was already there)
}

var goarchOf = map[string]string{
	"x86_64":  "amd64",
	"amd64":   "amd64",
	"aarch64": "arm64",
	"arm64":   "arm64",
}

const (
	probeBegin = "RLAB-PROBE-BEGIN"
	probeEnd   = "RLAB-PROBE-END"
)

// probeCmd prints, between markers (a login script may print before them),
// the platform, home, uid, gid and the size of each cached agent we might
// use. Only hex hashes are interpolated. The cache is not hashed here: the
// agent hashes itself for its hello, which Start checks, and a stale or
// corrupt copy is replaced then (Open).
func probeCmd(hashes []string) string {
	var paths []string
	for _, h := range hashes {
		paths = append(paths, `"$HOME"/`+CacheDir+"/"+h+"/rlab-agent")
	}
	cmd := "echo " + probeBegin + "; uname -sm; printf '%s\\n' \"$HOME\"; id -u; id -g"
	if len(paths) > 0 {
		cmd += "; stat -c '%s %n' " + strings.Join(paths, " ") + " 2>/dev/null"
	}
	return cmd + "; echo " + probeEnd
}

type probe struct {
	os, machine string
	home        string
	uid, gid    int
	sizes       map[string]int64 // cached agent path -> size
}

func parseProbe(out []byte) (*probe, error) {
	s := string(out)
	i := strings.Index(s, probeBegin+"\n")
	j := strings.LastIndex(s, probeEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("unexpected output %q", truncate(s, 200))
	}
	lines := strings.Split(strings.TrimSpace(s[i+len(probeBegin)+1:j]), "\n")
	if len(lines) < 4 {
		return nil, fmt.Errorf("unexpected output %q", truncate(s, 200))
	}
	p := &probe{sizes: map[string]int64{}}
	f := strings.Fields(lines[0])
	if len(f) != 2 {
		return nil, fmt.Errorf("uname -sm printed %q", lines[0])
	}
	p.os, p.machine = f[0], f[1]
	p.home = lines[1]
	if !path.IsAbs(p.home) {
		return nil, fmt.Errorf("home directory %q is not absolute", p.home)
	}
	var err error
	if p.uid, err = strconv.Atoi(lines[2]); err != nil {
		return nil, fmt.Errorf("id -u printed %q", lines[2])
	}
	if p.gid, err = strconv.Atoi(lines[3]); err != nil {
		return nil, fmt.Errorf("id -g printed %q", lines[3])
	}
	for _, l := range lines[4:] {
		size, file, ok := strings.Cut(l, " ")
		if n, err := strconv.ParseInt(size, 10, 64); ok && err == nil && n >= 0 {
			p.sizes[file] = n
		}
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// output runs one command in its own session and returns stdout; stderr is
// folded into the error.
func output(ctx context.Context, c *ssh.Client, cmd string) ([]byte, error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &limitedBuffer{max: 8 << 10, buf: &stderr}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err = s.Run(cmd)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return stdout.Bytes(), fmt.Errorf("%w: %s", err, msg)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}

type limitedBuffer struct {
	max int
	buf *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Install makes sure the agent for the host's platform is in its cache,
// uploading it only when missing (or of the wrong size). Safe when many
// hosts share one home directory (NFS-style) and install at once: each
// uploads to its own temp name, verifies it on the host and renames it over
// the final path atomically; all write identical bytes. Use Open to also
// replace a cached copy whose content turns out wrong when started.
func (a *Agents) Install(ctx context.Context, c *sshx.Client) (*Installed, error) {
	return a.install(ctx, c, false)
}

func (a *Agents) install(ctx context.Context, c *sshx.Client, force bool) (*Installed, error) {
	var hashes []string
	for _, arch := range []string{"amd64", "arm64"} {
		if b := a.bin(arch); b.err == nil {
			hashes = append(hashes, b.hash)
		}
	}
	out, err := output(ctx, c.Client, probeCmd(hashes))
	if err != nil {
		return nil, fmt.Errorf("probe platform: %w", err)
	}
	p, err := parseProbe(out)
	if err != nil {
		return nil, fmt.Errorf("probe platform: %w", err)
	}
	if p.os != "Linux" {
		return nil, fmt.Errorf("probe platform: %s is not supported (the agent runs on Linux)", p.os)
	}
	arch, ok := goarchOf[p.machine]
	if !ok {
		return nil, fmt.Errorf("probe platform: machine %q is not supported (agents exist for x86_64 and aarch64)", p.machine)
	}
	b := a.bin(arch)
	if b.err != nil {
		return nil, fmt.Errorf("agent for linux/%s: %w", arch, b.err)
	}
	dir := path.Join(p.home, CacheDir, b.hash)
	final := path.Join(dir, "rlab-agent")
	inst := &Installed{Path: final, Hash: b.hash, GOARCH: arch, Home: p.home, UID: p.uid, GID: p.gid}
	if size, ok := p.sizes[final]; ok && size == int64(len(b.data)) && !force {
		return inst, nil
	}
	n, err := upload(ctx, c, dir, final, b)
	inst.Sent = n
	if err != nil {
		return inst, fmt.Errorf("install agent at %s: %w", final, err)
	}
	return inst, nil
}

func upload(ctx context.Context, c *sshx.Client, dir, final string, b *agentBin) (int64, error) {
	sc, err := sftp.NewClient(c.Client)
	if err != nil {
		return 0, fmt.Errorf("start sftp: %w", err)
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	if err := sc.MkdirAll(dir); err != nil {
		return 0, fmt.Errorf("create %s: %w", dir, err)
	}
	// The cache holds executables: keep it private to the user.
	for d := dir; d != path.Dir(path.Dir(path.Dir(dir))); d = path.Dir(d) {
		sc.Chmod(d, 0o700)
	}
	removeStaleTemps(sc, dir, path.Base(final)+".tmp-", time.Now())
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := final + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	n, err := f.ReadFromWithConcurrency(bytes.NewReader(b.data), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	fail := func(err error) (int64, error) {
		sc.Remove(tmp)
		if ctx.Err() != nil {
			return n, fmt.Errorf("upload interrupted after %d of %d bytes: %w", n, len(b.data), ctx.Err())
		}
		return n, err
	}
	if err != nil {
		if st, serr := sc.StatVFS(dir); serr == nil && st.FreeSpace() < uint64(len(b.data)) {
			return fail(fmt.Errorf("upload %d bytes to %s: no space left on the host's disk (%d bytes free): %w", len(b.data), tmp, st.FreeSpace(), err))
		}
		return fail(fmt.Errorf("upload to %s after %d of %d bytes: %w", tmp, n, len(b.data), err))
	}
	if err := sc.Chmod(tmp, 0o700); err != nil {
		return fail(fmt.Errorf("chmod %s: %w", tmp, err))
	}
	// Verify what landed on the host's disk, not what we sent.
	out, err := output(ctx, c.Client, "echo "+probeBegin+"; sha256sum "+shellQuote(tmp)+"; echo "+probeEnd)
	if err != nil {
		return fail(fmt.Errorf("verify %s: %w", tmp, err))
	}
	if sum := sumBetweenMarkers(out); sum != b.hash {
		return fail(fmt.Errorf("verify %s: sha256 on the host is %q, want %s (upload corrupted)", tmp, truncate(sum, 64), b.hash))
	}
	if err := sc.PosixRename(tmp, final); err != nil {
		return fail(fmt.Errorf("rename %s to %s: %w", tmp, final, err))
	}
	return n, nil
}

// sumBetweenMarkers returns the first word printed between the probe
// markers (a login script may print before them).
func sumBetweenMarkers(out []byte) string {
	s := string(out)
	i := strings.Index(s, probeBegin+"\n")
	if i < 0 {
		return ""
	}
	s = s[i+len(probeBegin)+1:]
	sum, _, _ := strings.Cut(s, " ")
	return sum
}

// shellQuote quotes s for a POSIX shell. Only paths rlab built itself (home
// + fixed parts + hex) reach it; it is a second line of defence, not a way
// to pass user strings.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ErrNotBuilt is what a Binaries function returns when this rlab carries no
// agent for a platform (a plain `go build` without `make agent`).
var ErrNotBuilt = errors.New("this rlab was built without the agent for that platform; run `make build` (it builds the agent first)")

// staleTempAge is how old a temp file of an upload must be before another
// install removes it. A connection cut mid-upload leaves its temp file
// behind (nothing can remove it then); an hour is far longer than any
// upload, so a temp file that old belongs to no live install even when
// several hosts share this home directory and install at once.
const staleTempAge = time.Hour

// removeStaleTemps removes prefix* regular files in dir last written more
// than staleTempAge before now. Best effort: a failure leaves the file,
// which is harmless (it is never executed: only the verified, renamed
// binary is).
func removeStaleTemps(sc *sftp.Client, dir, prefix string, now time.Time) {
	ents, err := sc.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Mode().IsRegular() || now.Sub(e.ModTime()) < staleTempAge {
			continue
		}
		sc.Remove(path.Join(dir, e.Name()))
	}
}
