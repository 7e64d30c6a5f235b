// Package remote puts the rlab agent on a host reached over SSH and talks to
// it: install (probe `uname -sm`; when the agent is not in the per-user
// cache path named by its sha256, stream it gzip'd on one session's stdin
// to a short sh script that inflates it to a temp name, checks its sha256,
// chmods and renames it — over SFTP, uncompressed, when the host has no
// gzip; nothing sent when already there; a local VM's agent comes instead
// from its read-only agent disk, engine/agentdisk, installed and started
// by the same warm-start session), start (`serve` as one long-lived
// session, with `sudo -n` for become), a protocol client (concurrent calls,
// events, bounded stderr, "agent lost" on a dropped session), a limit on
// every SSH wait that closes the host's connection when passed (wait.go)
// and Pull (artifacts: small files in one tar stream from `rlab-agent
// bundle`, big ones over SFTP with large reads; each verified by size and
// sha256, confined to the destination folder, within a per-host byte cap,
// with a progress hook).
//
// It builds on engine/sshx and agent/proto; it knows nothing of labs.
package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// Binaries returns the agent binary for a platform (agent/dist.Binary).
type Binaries func(goos, goarch string) ([]byte, error)

// Packed returns the agent for a platform as it is shipped
// (agent/dist.Packed): its gzip stream, and the sha256 (hex) and size of
// the binary that stream inflates to.
type Packed func(goos, goarch string) (gz []byte, sum string, size int64, err error)

// Agents holds the agent binaries of a run and their hashes, computed once.
type Agents struct {
	get    Binaries
	packed Packed
	log    *slog.Logger
	mu     sync.Mutex
	bins   map[string]*agentBin
}

// agentBin is one platform's agent. It comes either as the binary (then
// gzip'd once per process, at the fastest level, when a host needs it) or
// as its gzip stream with hash and size (then inflated only for a host
// without gzip).
type agentBin struct {
	hash string
	size int64
	err  error

	rawOnce sync.Once
	raw     []byte
	rawErr  error
	loadRaw func() ([]byte, error)

	gzOnce sync.Once
	gz     []byte
	gzErr  error
	loadGz func() ([]byte, error)
}

// data is the agent binary.
func (b *agentBin) data() ([]byte, error) {
	b.rawOnce.Do(func() { b.raw, b.rawErr = b.loadRaw() })
	return b.raw, b.rawErr
}

// gzipped is the agent's gzip stream, as it goes on the wire.
func (b *agentBin) gzipped() ([]byte, error) {
	b.gzOnce.Do(func() { b.gz, b.gzErr = b.loadGz() })
	return b.gz, b.gzErr
}

// NewAgents wraps a Binaries function; each agent is gzip'd once per
// process, the first time a host needs it.
func NewAgents(get Binaries) *Agents {
	return &Agents{get: get, bins: map[string]*agentBin{}, log: slog.New(slog.DiscardHandler)}
}

// NewPackedAgents wraps a Packed function (agent/dist.Packed): the agents
// come gzip'd at build time, and a warm run never inflates or hashes them.
func NewPackedAgents(get Packed) *Agents {
	return &Agents{packed: get, bins: map[string]*agentBin{}, log: slog.New(slog.DiscardHandler)}
}

// WithLogger sets where installs log how each agent went to its host
// (debug level: compressed or, without gzip on the host, over SFTP; bytes
// shipped) and returns a.
func (a *Agents) WithLogger(l *slog.Logger) *Agents {
	if l != nil {
		a.log = l
	}
	return a
}

func (a *Agents) bin(goarch string) *agentBin {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.bins[goarch]; ok {
		return b
	}
	b := &agentBin{}
	a.bins[goarch] = b
	if a.packed != nil {
		var gz []byte
		gz, b.hash, b.size, b.err = a.packed("linux", goarch)
		if b.err == nil {
			b.loadGz = func() ([]byte, error) { return gz, nil }
			b.loadRaw = func() ([]byte, error) { return inflate(gz, b.hash, b.size) }
		}
		return b
	}
	var raw []byte
	raw, b.err = a.get("linux", goarch)
	if b.err == nil {
		s := sha256.Sum256(raw)
		b.hash = hex.EncodeToString(s[:])
		b.size = int64(len(raw))
		b.loadRaw = func() ([]byte, error) { return raw, nil }
		b.loadGz = func() ([]byte, error) { return deflate(raw) }
	}
	return b
}

// Binary is the agent binary for linux/goarch, checked against its hash
// (a local VM's agent disk holds it: engine/agentdisk).
func (a *Agents) Binary(goarch string) ([]byte, error) {
	b := a.bin(goarch)
	if b.err != nil {
		return nil, b.err
	}
	return b.data()
}

// deflate gzips an agent at the fastest level: done on every cold run of
// an rlab whose agents are not gzip'd at build time, so time counts more
// than the last few percent of size.
func deflate(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("gzip the agent: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip the agent: %w", err)
	}
	return buf.Bytes(), nil
}

// inflate returns the binary a packed agent's gzip stream holds, checked
// against its hash and size.
func inflate(gz []byte, hash string, size int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("inflate the agent: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, size+1))
	if err != nil {
		return nil, fmt.Errorf("inflate the agent: %w", err)
	}
	if s := sha256.Sum256(raw); int64(len(raw)) != size || hex.EncodeToString(s[:]) != hash {
		return nil, fmt.Errorf("inflate the agent: got %d bytes with sha256 %x, want %d bytes with sha256 %s", len(raw), s, size, hash)
	}
	return raw, nil
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
	// Disk is how the agent disk went (StartOptions.AgentDisk): DiskOK when
	// the agent came from it, else why it did not ("missing", "hash
	// <what the disk holds>", ...: the agent was then uploaded); "" when
	// it was not tried (not a VM, or the agent was already cached).
	Disk string
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
// the platform, home, uid, gid, the size of each cached agent we might use
// and which of the tools an install uses the host has (shell builtins
// only: no fork). Only hex hashes are interpolated. The cache is not hashed
// here: the agent hashes itself for its hello, which Start checks, and a
// stale or corrupt copy is replaced then (Open).
func probeCmd(hashes []string) string {
	var paths []string
	for _, h := range hashes {
		paths = append(paths, `"$HOME"/`+CacheDir+"/"+h+"/rlab-agent")
	}
	cmd := "echo " + probeBegin + "; uname -sm; printf '%s\\n' \"$HOME\"; id -u; id -g"
	if len(paths) > 0 {
		cmd += "; stat -c '%s %n' " + strings.Join(paths, " ") + " 2>/dev/null"
	}
	cmd += "; printf " + toolsTag + "; for t in " + strings.Join(probedTools, " ") + "; do command -v $t >/dev/null 2>&1 && printf ' %s' $t; done; echo"
	return cmd + "; echo " + probeEnd
}

// toolsTag begins the probe's line naming the probedTools the host has.
const toolsTag = "RLAB-TOOLS"

// probedTools: gzip to inflate the agent, and one of the others to check
// its sha256 (sha256sum: coreutils and busybox; shasum: perl; openssl).
var probedTools = []string{"gzip", "sha256sum", "shasum", "openssl"}

type probe struct {
	os, machine string
	home        string
	uid, gid    int
	sizes       map[string]int64 // cached agent path -> size
	// tools the host has, of probedTools; nil when the probe did not say
	// (then the compressed install is tried and fails clearly).
	tools map[string]bool
	// disk is why the agent disk did not give the agent, when the warm
	// start tried it (agentdisk.Status).
	disk string
}

// canInflate reports whether the host can take the agent gzip'd.
func (p *probe) canInflate() bool { return p.tools == nil || p.tools["gzip"] }

// canVerify reports whether the host has a tool to check the agent's sha256.
func (p *probe) canVerify() bool {
	return p.tools == nil || p.tools["sha256sum"] || p.tools["shasum"] || p.tools["openssl"]
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
		if rest, ok := strings.CutPrefix(l, toolsTag); ok {
			p.tools = map[string]bool{}
			for _, t := range strings.Fields(rest) {
				p.tools[t] = true
			}
			continue
		}
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

// output runs one command in its own session and returns stdout (at most
// outputMax bytes: a host that prints more is cut off); stderr is folded
// into the error. The whole command has limit (sshIdle when 0) or until
// ctx ends: then the connection is closed (sshx.Watch).
func output(ctx context.Context, c *sshx.Client, cmd string, limit time.Duration) ([]byte, error) {
	limit = limitOr(limit, sshIdle)
	s, err := c.OpenSession(ctx, limit)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	w := c.WatchWith(ctx, "command output", limit, sshx.WatchOptions{Session: s})
	defer w.Stop()
	var stderr bytes.Buffer
	stdout := &boundedBuffer{max: outputMax, w: w}
	s.Stdout, s.Stderr = stdout, &limitedBuffer{max: 8 << 10, buf: &stderr}
	if err := c.Start(ctx, s, cmd, limit); err != nil {
		return nil, err
	}
	err = s.Wait()
	if werr := w.Stop(); werr != nil {
		return nil, werr
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return stdout.buf, fmt.Errorf("%w: %s", err, msg)
		}
		return stdout.buf, err
	}
	return stdout.buf, nil
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
// writes to its own temp name, verifies it on the host and renames it over
// the final path atomically; all write identical bytes. Use Open to also
// replace a cached copy whose content turns out wrong when started.
//
// The probe and the upload share one session (installGzip); a host
// without gzip gets the agent uncompressed over SFTP instead (uploadSFTP).
func (a *Agents) Install(ctx context.Context, c *sshx.Client) (*Installed, error) {
	return a.install(ctx, c, false, 0)
}

func (a *Agents) install(ctx context.Context, c *sshx.Client, force bool, limit time.Duration) (*Installed, error) {
	return a.installProbed(ctx, c, nil, force, limit)
}

// installProbed installs the agent. p is the probe a warm-start shell
// already printed (Open's fastStart), or nil: then the install's own
// session probes first. force uploads even when a copy of the right size
// is cached. Every wait on the host has limit (sshIdle, or
// $RLAB_AGENT_TIMEOUT, when 0): a host that stalls is cut off (its
// connection closed) and the error says at which step.
func (a *Agents) installProbed(ctx context.Context, c *sshx.Client, p *probe, force bool, limit time.Duration) (*Installed, error) {
	limit = limitOr(limit, sshIdle)
	// The install as a whole has installWhole limits: each wait ends
	// after a silence, and a host that prints a byte or takes a piece of
	// the upload just inside each one kept the connect for good
	// (SECURITY 141). Its end closes the connection (sshx.Watch).
	whole := installWhole * limit
	ctx, cancel := context.WithTimeoutCause(ctx, whole, fmt.Errorf("the agent's install took more than %s in all, the most it may (%d times the limit on each wait)", sshx.FormatLimit(whole), installWhole))
	defer cancel()
	if p != nil {
		inst, b, err := a.plan(p, force)
		if err != nil || b == nil {
			return inst, err
		}
		if !p.canInflate() || !p.canVerify() {
			return a.installSFTP(ctx, c, p, inst, b, limit)
		}
		return a.installGzip(ctx, c, p, force, limit)
	}
	return a.installGzip(ctx, c, nil, force, limit)
}

// plan picks the agent for a probed host and where it goes. b is nil when
// nothing needs to be sent.
func (a *Agents) plan(p *probe, force bool) (*Installed, *agentBin, error) {
	if p.os != "Linux" {
		return nil, nil, fmt.Errorf("probe platform: %s is not supported (the agent runs on Linux)", p.os)
	}
	arch, ok := goarchOf[p.machine]
	if !ok {
		return nil, nil, fmt.Errorf("probe platform: machine %q is not supported (agents exist for x86_64 and aarch64)", p.machine)
	}
	b := a.bin(arch)
	if b.err != nil {
		return nil, nil, fmt.Errorf("agent for linux/%s: %w", arch, b.err)
	}
	final := path.Join(p.home, CacheDir, b.hash, "rlab-agent")
	inst := &Installed{Path: final, Hash: b.hash, GOARCH: arch, Home: p.home, UID: p.uid, GID: p.gid}
	if size, ok := p.sizes[final]; ok && size == b.size && !force {
		return inst, nil, nil
	}
	return inst, b, nil
}

// hashes are the hashes of every agent this rlab carries.
func (a *Agents) hashes() []string {
	var hs []string
	for _, arch := range []string{"amd64", "arm64"} {
		if b := a.bin(arch); b.err == nil {
			hs = append(hs, b.hash)
		}
	}
	return hs
}

// installSFTP is the install for a host without gzip (or without a tool
// to check a sha256, which then fails saying so): the binary uncompressed
// over SFTP to a temp name, verified, renamed.
func (a *Agents) installSFTP(ctx context.Context, c *sshx.Client, p *probe, inst *Installed, b *agentBin, limit time.Duration) (*Installed, error) {
	if !p.canVerify() {
		return inst, fmt.Errorf("install agent at %s: the host has none of sha256sum, shasum or openssl to verify the upload with: install coreutils", inst.Path)
	}
	a.log.Debug("agent install: the host has no gzip; shipping the agent uncompressed over SFTP", "host", c.Name, "bytes", b.size)
	raw, err := b.data()
	if err != nil {
		return inst, fmt.Errorf("install agent at %s: %w", inst.Path, err)
	}
	n, err := uploadSFTP(ctx, c, path.Dir(inst.Path), inst.Path, raw, b.hash, limit)
	inst.Sent = n
	if err != nil {
		return inst, fmt.Errorf("install agent at %s: %w", inst.Path, err)
	}
	a.log.Debug("agent installed", "host", c.Name, "path", inst.Path, "how", "sftp", "bytes_shipped", n)
	return inst, nil
}

func uploadSFTP(ctx context.Context, c *sshx.Client, dir, final string, data []byte, hash string, limit time.Duration) (int64, error) {
	// One watch for the SFTP part: silence for limit (each byte taken
	// renews it) closes the connection, which ends whatever waits.
	w0 := c.Watch(ctx, "start sftp", limit)
	sc, err := sftp.NewClient(c.Client)
	if werr := w0.Stop(); werr != nil {
		if sc != nil {
			go sc.Close()
		}
		return 0, werr
	}
	if err != nil {
		return 0, fmt.Errorf("start sftp: %w", err)
	}
	defer closeSFTP(sc, c.Abort)
	w := c.WatchWith(ctx, "sftp upload", limit, sshx.WatchOptions{Idle: true, Session: closer(func() { go sc.Close() })})
	defer w.Stop()
	if err := sc.MkdirAll(dir); err != nil {
		return 0, fmt.Errorf("create %s: %w", dir, err)
	}
	// The cache holds executables: keep it private to the user.
	for d := dir; d != path.Dir(path.Dir(path.Dir(dir))); d = path.Dir(d) {
		sc.Chmod(d, 0o700)
	}
	removeStaleTemps(sc, dir, path.Base(final)+".tmp-", time.Now())
	tmp := final + ".tmp-" + randHex()
	f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	n, err := f.ReadFromWithConcurrency(&watchedReader{r: bytes.NewReader(data), w: w}, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	fail := func(err error) (int64, error) {
		if werr := w.Err(); werr != nil {
			// The connection is closed: nothing to remove the temp
			// file with (a later install removes it when stale).
			return n, fmt.Errorf("after %d of %d bytes: %w", n, len(data), werr)
		}
		sc.Remove(tmp)
		if ctx.Err() != nil {
			return n, fmt.Errorf("upload interrupted after %d of %d bytes: %w", n, len(data), context.Cause(ctx))
		}
		return n, err
	}
	if err != nil {
		if st, serr := sc.StatVFS(dir); serr == nil && st.FreeSpace() < uint64(len(data)) {
			return fail(fmt.Errorf("upload %d bytes to %s: no space left on the host's disk (%d bytes free): %w", len(data), tmp, st.FreeSpace(), err))
		}
		return fail(fmt.Errorf("upload to %s after %d of %d bytes: %w", tmp, n, len(data), err))
	}
	if err := sc.Chmod(tmp, 0o700); err != nil {
		return fail(fmt.Errorf("chmod %s: %w", tmp, err))
	}
	// Verify what landed on the host's disk, not what we sent. The
	// check has its own watch; this one must not fire meanwhile.
	w.Stop()
	out, err := output(ctx, c, "echo "+probeBegin+"; t="+shellQuote(tmp)+"; "+sumSh+"; echo \"$s\"; echo "+probeEnd, limit)
	if err != nil {
		return fail(fmt.Errorf("verify %s: %w", tmp, err))
	}
	if sum := sumBetweenMarkers(out); sum != hash {
		return fail(fmt.Errorf("verify %s: sha256 on the host is %q, want %s (upload corrupted)", tmp, truncate(sum, 64), hash))
	}
	w2 := c.WatchWith(ctx, "sftp rename", limit, sshx.WatchOptions{Session: closer(func() { go sc.Close() })})
	defer w2.Stop()
	if err := sc.PosixRename(tmp, final); err != nil {
		return fail(fmt.Errorf("rename %s to %s: %w", tmp, final, w2.Fired(err)))
	}
	return n, nil
}

// sumSh sets s to the sha256 of the file "$t" followed by a space and
// more, with the first of sha256sum, shasum, openssl the host has (all
// print the hex digest first); s is empty when it has none.
const sumSh = `if command -v sha256sum >/dev/null 2>&1; then s=$(sha256sum <"$t"); ` +
	`elif command -v shasum >/dev/null 2>&1; then s=$(shasum -a 256 <"$t"); ` +
	`elif command -v openssl >/dev/null 2>&1; then s=$(openssl dgst -sha256 -r <"$t"); else s=; fi`

// randHex is 8 random bytes in hex: a temp name no other install picks.
func randHex() string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// sumBetweenMarkers returns the first word printed between the probe
// markers (a login script may print before them).
func sumBetweenMarkers(out []byte) string {
	s := string(out)
	i := strings.Index(s, probeBegin+"\n")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(s[i+len(probeBegin)+1:], "\n")
	sum, _, _ := strings.Cut(line, " ")
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
