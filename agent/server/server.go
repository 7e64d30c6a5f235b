// Package server is the serve loop of rlab-agent, the program rlab ships to
// every lab host: it speaks the agent/proto protocol on a reader/writer pair
// (the SSH session's stdin/stdout in production, an io.Pipe in tests), answers
// each request in its own goroutine, and owns everything it starts — child
// processes, captures, TCP workload listeners, rxe devices — undoing it all
// when its input closes, or when the controller releases it to serve the
// next command (proto.MethodRelease).
//
// It imports only the standard library, agent/proto, golang.org/x/sys and
// vishvananda/netlink; never anything from engine/, kinds/ or cmd/ (which
// programs to probe comes in the facts request: proto.FactsParams.Probe;
// agent/cmd/rlab-agent's TestAgentImportsNoKinds checks the build).
package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Owner is the user the agent writes files for when it runs as root on that
// user's behalf (become): everything it creates in the work dir is chowned to
// Owner so the user can pull it over SFTP.
type Owner struct {
	UID, GID int
}

// RootPATH is the PATH of a root agent working for a user: the folders
// sudo's usual secure_path names, root's alone.
const RootPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// UserPATH is the PATH of the owner's workloads when the agent was started
// with none (login.defs' ENV_PATH for users).
const UserPATH = "/usr/local/bin:/usr/bin:/bin"

// ownerPATH is the PATH the owner's workloads get from a root agent working
// for a user: the one it was started with, which PinRootPATH replaced for
// what the agent runs as root ("" when it did not: the process's own).
var ownerPATH string

// PinRootPATH sets the process's PATH to RootPATH, HOME to root's home and
// drops the rest of the environment but locale and terminal names, when the
// agent is root working for the user o, and says whether it did. sudo without secure_path
// (Arch Linux's default sudoers) hands the command the user's own PATH, and
// the agent finds by PATH what it runs as root (tcpdump, rdma, modprobe,
// dmesg, the package manager): with ~/bin first in it, the user's own
// `dmesg` ran as root. The PATH it replaces stays the owner's workloads'
// (workloadPATH): they run as the user, who chose it.
func PinRootPATH(o *Owner) bool {
	if o == nil || o.UID == 0 || os.Geteuid() != 0 {
		return false
	}
	ownerPATH = os.Getenv("PATH")
	if ownerPATH == "" {
		ownerPATH = UserPATH
	}
	// What the agent runs as root inherits its environment, and what
	// sudo kept of the user's is the user's to choose: a sudo keeping
	// HOME (Ubuntu's before 19.10, or env_keep += HOME) had dpkg, under
	// provision's apt-get, run the `pre-invoke` hook of the user's
	// ~/.dpkg.cfg as root, and one keeping APT_CONFIG (or MODPROBE_OPTIONS,
	// TC_LIB_DIR, ...) the user's own settings (attack round 12, high).
	// Only locale and terminal names stay (sudo checks those), and the
	// agent's own RLAB_ test switches; HOME is root's. The owner's own
	// processes get the owner's HOME (startProc, runCmdAs) and the PATH
	// the agent was started with (workloadPATH).
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !keepForRoot(k) {
			os.Unsetenv(k)
		}
	}
	os.Setenv("PATH", RootPATH)
	os.Setenv("HOME", rootHome())
	return true
}

// keepForRoot says whether a root agent working for a user keeps the
// variable name of the environment sudo gave it.
func keepForRoot(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM":
		return true
	}
	return strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "RLAB_")
}

// rootHome is root's home folder from the user database, else /root.
func rootHome() string {
	if u, err := user.LookupId("0"); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return "/root"
}

// workloadPATH is the PATH of the owner's workloads (ownerPATH).
func workloadPATH() string {
	if ownerPATH != "" {
		return ownerPATH
	}
	return os.Getenv("PATH")
}

// ParseOwner parses "UID:GID".
func ParseOwner(s string) (*Owner, error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("parse owner %q: want UID:GID", s)
	}
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return nil, fmt.Errorf("parse owner %q: bad uid", s)
	}
	gid, err := strconv.Atoi(g)
	if err != nil || gid < 0 {
		return nil, fmt.Errorf("parse owner %q: bad gid", s)
	}
	return &Owner{UID: uid, GID: gid}, nil
}

// Options configure a Server.
type Options struct {
	// WorkDir is where everything the agent writes goes; created 0700.
	WorkDir string
	// Owner, when set, receives ownership of what the agent writes.
	Owner *Owner
	// Version is the build version reported in the hello.
	Version string
	// Hash is the agent binary's sha256 (hex); empty means hash /proc/self/exe.
	Hash string
	// Logger receives the agent's own log; nil discards it.
	Logger *slog.Logger
	// StopGrace is how long a child gets between SIGTERM and SIGKILL when the
	// agent shuts down; 0 means 3s.
	StopGrace time.Duration
	// CaptureDrain bounds the wait, as a capture stops, for tcpdump to
	// write every packet the kernel handed it (drainCapture); 0 means 5s.
	CaptureDrain time.Duration

	// hostile, when set (only from this package's tests, or through
	// EnableHostile in binaries built with -tags rlabhostile for the
	// security suite), makes the agent lie on the wire; see hostile.go.
	hostile string
}

// Server is one agent: its work dir and everything it has started.
type Server struct {
	opts Options
	log  *slog.Logger
	// startWorkDir is the work dir the agent started with; a lease moves
	// opts.WorkDir next to it (lease.go).
	startWorkDir string
	// wd is opts.WorkDir opened (workdir.go); under mu, replaced by a lease.
	wd *workDir

	wmu sync.Mutex // serialises writes to out
	out io.Writer

	mu       sync.Mutex
	procs    map[string]*proc
	captures map[string]*capture
	tcps     map[string]*tcpServer
	rxes     map[string]string // rxe devices this agent created: name -> netdev
	imp      impairs           // netem this agent set (impair.go)
	closing  bool              // input ended: start nothing new
}

// errClosing refuses new work once the agent is shutting down.
func errClosing(method string) error {
	return perr(proto.CodeInternal, "%s: agent shutting down", method)
}

// DefaultWorkDir is $HOME/.cache/rlab/runs/<runID>.
func DefaultWorkDir(runID string) (string, error) {
	if err := ValidRunID(runID); err != nil {
		return "", err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory for work dir: %w", err)
	}
	return filepath.Join(home, ".cache", "rlab", "runs", runID), nil
}

// ValidRunID accepts run ids (and handles, and capture file names) that are
// one plain path element: 1-200 of [A-Za-z0-9._-], leaving room in a file
// name for suffixes such as ".tcpdump.stderr".
func ValidRunID(id string) error {
	if id == "" || len(id) > 200 || id == "." || id == ".." {
		return fmt.Errorf("run id %q: want 1-200 of [A-Za-z0-9._-]", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("run id %q: want 1-200 of [A-Za-z0-9._-]", id)
		}
	}
	return nil
}

// New creates the work dir (0700, owned by Owner when set) and a Server.
func New(opts Options) (*Server, error) {
	if opts.WorkDir == "" {
		return nil, errors.New("new agent server: no work dir")
	}
	if opts.Owner != nil && hasDotDot(opts.WorkDir) {
		// Before Abs, which cleans ".." away (mkdirAllOwned's check of it
		// then never saw one).
		return nil, fmt.Errorf("new agent server: work dir %q: refusing a path with \"..\" in it", opts.WorkDir)
	}
	wd, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("new agent server: work dir %q: %w", opts.WorkDir, err)
	}
	opts.WorkDir = wd
	if err := mkdirAllOwned(wd, opts.Owner); err != nil {
		return nil, fmt.Errorf("create work dir %q: %w", wd, err)
	}
	held, err := openWorkDir(wd, opts.Owner)
	if err != nil {
		return nil, err
	}
	if opts.Hash == "" {
		h, err := SelfHashCached()
		if err != nil {
			held.close()
			return nil, err
		}
		opts.Hash = h
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 3 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		opts:         opts,
		log:          log,
		startWorkDir: wd,
		wd:           held,
		procs:        map[string]*proc{},
		captures:     map[string]*capture{},
		tcps:         map[string]*tcpServer{},
		rxes:         map[string]string{},
	}, nil
}

// WorkDir is the absolute work dir.
func (s *Server) WorkDir() string { return s.opts.WorkDir }

// SelfHash is the sha256 (hex) of the running executable.
func SelfHash() (string, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("hash own binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash own binary: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrLineTooLong is returned by Serve when the peer sent a line longer than
// proto.MaxLine; the connection is dropped.
var ErrLineTooLong = errors.New("request line longer than proto.MaxLine")

// Serve writes the hello, then answers requests read from in until in ends
// or ctx is cancelled. Before returning it stops every process and capture it
// started and deletes the rxe devices it created (Cleanup with no keep list).
// It returns nil when in reached EOF. A release request does the same
// undoing without returning (release.go): the next lease is served by the
// same process, without a second hello, and may first move the work dir to
// its own run (lease.go).
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if s.opts.hostile != "" {
		out = &hostileWriter{w: out, mode: s.opts.hostile}
	}
	s.out = out
	hello := proto.Hello{
		Magic:   proto.Magic,
		Proto:   proto.Version,
		Hash:    s.opts.Hash,
		Version: s.opts.Version,
		PID:     os.Getpid(),
		UID:     os.Geteuid(),
		WorkDir: s.opts.WorkDir,

		ProcIdentity: procIdentity(os.Getpid()),
	}
	if err := s.writeJSON(hello); err != nil {
		return fmt.Errorf("write hello: %w", err)
	}
	s.log.Info("serving", "work_dir", s.opts.WorkDir, "pid", hello.PID, "uid", hello.UID)

	// The reader outlives leases: a release ends the requests in flight,
	// not the input.
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	l := newLease(ctx)
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), proto.MaxLine)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			select {
			case lines <- line:
			case <-readCtx.Done():
				readErr <- nil
				return
			}
		}
		readErr <- sc.Err()
	}()

	var result error
	var wd watchdog
	fired, silent := false, time.Duration(0)
loop:
	for {
		select {
		case line := <-lines:
			wd.heard(time.Now())
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if id, ok := releaseRequest(line); ok {
				// In this loop, not a handler goroutine: the lines after
				// the release wait until it has been answered. The next
				// client arms its own watchdog.
				wd.set(0, time.Now())
				l = s.release(ctx, l, id)
				continue
			}
			if req, ok := watchdogRequest(line); ok {
				s.arm(&wd, req)
				continue
			}
			if req, ok := leaseRequest(line); ok {
				// In this loop too: the lines after it see the new work dir.
				s.lease(l, req)
				l.used = true
				continue
			}
			l.used = true
			cur := l
			cur.wg.Add(1)
			go func() {
				defer cur.wg.Done()
				s.handleLine(cur.ctx, line)
			}()
		case err := <-readErr:
			if errors.Is(err, bufio.ErrTooLong) {
				s.writeResponse(proto.Response{Error: &proto.Error{Code: proto.CodeBadRequest,
					Message: fmt.Sprintf("request line longer than %d bytes: closing", proto.MaxLine)}})
				result = ErrLineTooLong
			} else if err != nil {
				result = fmt.Errorf("read requests: %w", err)
			}
			s.log.Info("input closed; cleaning up", "err", err)
			break loop
		case <-wd.C():
			now := time.Now()
			if !wd.expired(now) {
				wd.timer.Reset(wd.limit - now.Sub(wd.last))
				continue
			}
			s.log.Warn("watchdog: nothing from the controller; undoing what this run made and exiting", "silent", now.Sub(wd.last).Round(time.Millisecond), "limit", wd.limit)
			result, fired, silent = ErrWatchdog, true, now.Sub(wd.last)
			break loop
		case <-ctx.Done():
			result = ctx.Err()
			break loop
		}
	}
	stopReading()
	res := s.endLease(l)
	for _, e := range res.Errors {
		s.log.Warn("cleanup", "err", e)
	}
	if fired {
		if err := s.recordWatchdog(silent, wd.limit, res); err != nil {
			s.log.Warn("watchdog", "err", err)
		}
	}
	s.log.Info("stopped", "processes", res.Stopped, "rxe_deleted", res.DevicesDeleted)
	return result
}

// handleLine decodes one request and answers it.
func (s *Server) handleLine(ctx context.Context, line []byte) {
	var req proto.Request
	if err := json.Unmarshal(line, &req); err != nil {
		s.writeResponse(proto.Response{Error: &proto.Error{Code: proto.CodeBadRequest,
			Message: "decode request: " + err.Error()}})
		return
	}
	resp := s.dispatch(ctx, req)
	s.writeResponse(resp)
}

// call is one request in flight; handlers emit events through it.
type call struct {
	s  *Server
	id uint64
}

func (c *call) event(name string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	if err := c.s.writeJSON(proto.Event{ID: c.id, Event: name, Data: raw}); err != nil {
		c.s.log.Warn("write event", "id", c.id, "err", err)
	}
}

type handler func(ctx context.Context, c *call, params json.RawMessage) (any, error)

func (s *Server) handlers() map[string]handler {
	return map[string]handler{
		proto.MethodPing:         s.ping,
		proto.MethodFacts:        s.facts,
		proto.MethodDeviceEnsure: s.deviceEnsure,
		proto.MethodDeviceDelete: s.deviceDelete,
		proto.MethodRDMAUse:      s.rdmaUse,
		proto.MethodProcStart:    s.procStart,
		proto.MethodProcWait:     s.procWait,
		proto.MethodProcStop:     s.procStop,
		proto.MethodProcSignal:   s.procSignal,
		proto.MethodCaptureStart: s.captureStart,
		proto.MethodCaptureStop:  s.captureStop,
		proto.MethodTCPServe:     s.tcpServe,
		proto.MethodTCPSend:      s.tcpSend,
		proto.MethodTCPWait:      s.tcpWait,
		proto.MethodFilesList:    s.filesList,
		proto.MethodFilesRead:    s.filesRead,
		proto.MethodFilesWrite:   s.filesWrite,
		proto.MethodCleanup:      s.cleanupMethod,
		proto.MethodProvision:    s.provision,
		proto.MethodCountersRead: s.countersRead,
		proto.MethodImpairApply:  s.impairApply,
		proto.MethodImpairRemove: s.impairRemove,
	}
}

// dispatch runs one request; it never panics out (a handler panic becomes an
// internal error reply) so one bad request cannot take the agent down.
func (s *Server) dispatch(ctx context.Context, req proto.Request) (resp proto.Response) {
	resp.ID = req.ID
	h, ok := s.handlers()[req.Method]
	if !ok {
		resp.Error = &proto.Error{Code: proto.CodeUnknown, Message: fmt.Sprintf("unknown method %q", req.Method)}
		return resp
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panic", "method", req.Method, "panic", r)
			resp.Result = nil
			resp.Error = &proto.Error{Code: proto.CodeInternal, Message: fmt.Sprintf("%s: internal error: %v", req.Method, r)}
		}
	}()
	start := time.Now()
	res, err := h(ctx, &call{s: s, id: req.ID}, req.Params)
	s.log.Debug("request", "id", req.ID, "method", req.Method, "ms", time.Since(start).Milliseconds(), "err", err)
	if err != nil {
		resp.Error = toProtoError(req.Method, err)
		return resp
	}
	raw, err := json.Marshal(res)
	if err != nil {
		resp.Error = &proto.Error{Code: proto.CodeInternal, Message: fmt.Sprintf("%s: encode result: %v", req.Method, err)}
		return resp
	}
	resp.Result = raw
	return resp
}

func toProtoError(method string, err error) *proto.Error {
	var pe *proto.Error
	if errors.As(err, &pe) {
		return pe
	}
	return &proto.Error{Code: proto.CodeInternal, Message: method + ": " + err.Error()}
}

// perr builds a proto error with a formatted message.
func perr(code, format string, args ...any) *proto.Error {
	return &proto.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// decode unmarshals params into v; empty params leave v as is.
func decode(method string, params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return perr(proto.CodeBadRequest, "%s: decode params: %v", method, err)
	}
	return nil
}

func (s *Server) writeResponse(r proto.Response) {
	if err := s.writeJSON(r); err != nil {
		s.log.Warn("write response", "id", r.ID, "err", err)
	}
}

func (s *Server) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > proto.MaxLine-1 {
		// Never send a line the peer must drop; results are bounded by
		// design, so this is a bug: say so instead.
		if r, ok := v.(proto.Response); ok {
			r.Result = nil
			r.Error = &proto.Error{Code: proto.CodeInternal, Message: fmt.Sprintf("result of %d bytes exceeds the line limit", len(b))}
			b, _ = json.Marshal(r)
		} else {
			return fmt.Errorf("line of %d bytes exceeds the limit", len(b))
		}
	}
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.out.Write(b)
	return err
}

func (s *Server) ping(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	return proto.Pong{Time: time.Now().UnixNano()}, nil
}

func (s *Server) cleanupMethod(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.CleanupParams
	if err := decode(proto.MethodCleanup, params, &p); err != nil {
		return nil, err
	}
	res := s.cleanup(ctx, p.Keep)
	if p.Run != "" {
		if err := s.killRun(p.Run); err != nil { // cgroup.go
			res.Errors = append(res.Errors, err.Error())
		}
		if err := s.sweepCaptureRingDirs(p.Run); err != nil { // capture.go
			res.Errors = append(res.Errors, err.Error())
		}
	}
	return res, nil
}

// cleanup stops every process, capture and TCP listener this agent started
// and deletes the rxe devices it created, except those named in keep, which
// it forgets (they outlive the agent).
func (s *Server) cleanup(ctx context.Context, keep []string) proto.CleanupResult {
	res := proto.CleanupResult{Stopped: []string{}, DevicesDeleted: []string{}}
	s.mu.Lock()
	procs := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		if p.cmd != nil { // nil: still starting; the final pass catches it
			procs = append(procs, p)
		}
	}
	caps := make([]*capture, 0, len(s.captures))
	// ended: captures whose tcpdump ended on its own, nobody stopping
	// them, with their files still in a ring folder (captureRingDir), root's
	// and 0700: stopCapture moves them out, or the user could neither read
	// them nor remove the work dir. They were not running: not Stopped.
	var ended []*capture
	for _, c := range s.captures {
		switch {
		case c.pr == nil:
		case !c.pr.finished():
			caps = append(caps, c)
		case c.ring != nil:
			ended = append(ended, c)
		}
	}
	tcps := make([]*tcpServer, 0, len(s.tcps))
	for _, t := range s.tcps {
		tcps = append(tcps, t)
	}
	rxes := map[string]string{}
	for n, d := range s.rxes {
		rxes[n] = d
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	var rmu sync.Mutex
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.stop(s.opts.StopGrace) {
				rmu.Lock()
				res.Stopped = append(res.Stopped, p.handle)
				rmu.Unlock()
			}
		}()
	}
	for i, c := range append(caps, ended...) {
		running := i < len(caps) // an ended one is not listed as Stopped
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.stopCapture(c)
			rmu.Lock()
			defer rmu.Unlock()
			switch {
			case err != nil:
				res.Errors = append(res.Errors, err.Error())
			case running:
				res.Stopped = append(res.Stopped, c.handle)
			}
		}()
	}
	for _, t := range tcps {
		if t.close() {
			rmu.Lock() // the goroutines above append too
			res.Stopped = append(res.Stopped, t.handle)
			rmu.Unlock()
		}
	}
	wg.Wait()

	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	for name := range rxes {
		if kept[name] {
			// Kept devices are no longer ours to undo: forget them, so the
			// cleanup when the session ends leaves them in place too.
			s.mu.Lock()
			delete(s.rxes, name)
			s.mu.Unlock()
			continue
		}
		if _, err := s.deleteDevice(ctx, name); err != nil {
			res.Errors = append(res.Errors, err.Error())
			continue
		}
		res.DevicesDeleted = append(res.DevicesDeleted, name)
	}
	removed, errs := s.removeImpairs() // impair.go: netem never outlives its lease
	res.ImpairsRemoved = append(res.ImpairsRemoved, removed...)
	res.Errors = append(res.Errors, errs...)
	endAdopted() // reaper.go: what workloads detached, without cgroups
	return res
}
