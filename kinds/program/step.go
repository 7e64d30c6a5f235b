package program

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// The program op: ship the program's source to each host it runs on,
// once per run and host (steps.Env.Once), into the agent's work dir under
// programs/<source hash>-<build hash>; build it there once (or copy an
// earlier run's build from the host's cache, cache.go); then run each
// trial (size × repeat): the server first, the client once the server is
// ready, or the one command on host. The work dir, and so the source and
// what the build made, goes when the run ends (engine/run removes it after
// the fetch, which keeps the build's output in the run's logs/).

const (
	// chunk is the most one files.write carries.
	chunk = proto.FilesWriteLimit * 3 / 4
	// serverLinger is how long a server may take to exit by itself once
	// its client is done, before it is interrupted; stopGrace is how long
	// SIGINT has before SIGKILL.
	serverLinger = 2 * time.Second
	stopGrace    = 2 * time.Second
	// readyCap bounds the wait for a server to get ready when the trial's
	// own timeout is longer.
	readyCap = 2 * time.Minute
	// errorLines is how many of the compiler's error lines a build
	// failure quotes.
	errorLines = 5
)

// BuildTimeout bounds a program's build on a host: the workload's own
// timeout bounds each trial, not the build before them, and a build that
// never ends (a Makefile that waits, a host whose agent answers its
// heartbeats but never the wait) must not hold the run for good. The
// agent kills the build's process group when it passes. A variable for
// tests.
var BuildTimeout = 10 * time.Minute

type programWorkload struct {
	w     *steps.Workload
	out   steps.Outcome
	procs steps.Procs
}

func newOp(w *steps.Workload) (steps.Op, error) {
	if w.Program == nil {
		return nil, fmt.Errorf("workload %q (program): no program block", w.Name)
	}
	if w.Host != "" {
		if len(w.Command) == 0 {
			return nil, fmt.Errorf("workload %q (program): empty command", w.Name)
		}
		return &programWorkload{w: w}, nil
	}
	if len(w.ServerCommand) == 0 || len(w.ClientCommand) == 0 || w.ServerHost == "" || w.ClientHost == "" {
		return nil, fmt.Errorf("workload %q (program): needs host and command, or server, client and their commands", w.Name)
	}
	return &programWorkload{w: w}, nil
}

func (s *programWorkload) Describe() string {
	w := s.w
	if w.Host != "" {
		return fmt.Sprintf("program %s (%s) on host %s: %s", w.Name, w.Program.Name, w.Host, kinds.ShowSelf(w.Command))
	}
	return fmt.Sprintf("program %s (%s): host %s (server) %s, then host %s (client) %s", w.Name, w.Program.Name,
		w.ServerHost, kinds.ShowSelf(w.ServerCommand), w.ClientHost, kinds.ShowSelf(w.ClientCommand))
}

func (s *programWorkload) Outcome() *steps.Outcome { return &s.out }

func (s *programWorkload) Undo(ctx context.Context, env *steps.Env) error {
	return s.procs.StopAll(ctx, env)
}

func (s *programWorkload) Apply(ctx context.Context, env *steps.Env) error {
	w := s.w
	hosts := []string{w.Host}
	if w.Host == "" {
		hosts = []string{w.ServerHost}
		if w.ClientHost != w.ServerHost {
			hosts = append(hosts, w.ClientHost)
		}
	}
	dirs := map[string]string{}
	var buildErr error
	for _, h := range hosts {
		d, err := env.Once("program\x00"+h+"\x00"+BuildDir(w.Program), func() (string, error) { return s.ship(ctx, env, h) })
		if err != nil {
			buildErr = err
			break
		}
		dirs[h] = d
	}
	return steps.RunPlanned(ctx, env, &s.out, w, func(ctx context.Context, u kinds.Planned) error {
		if buildErr != nil {
			return buildErr
		}
		if w.Host != "" {
			return s.runOne(ctx, env, u, dirs[w.Host])
		}
		return s.runPair(ctx, env, u, dirs[w.ServerHost], dirs[w.ClientHost])
	})
}

// BuildDir is where a program is shipped and built in the agent's work dir:
// one folder per (source hash, build argv); the host is the platform.
func BuildDir(p *kinds.Source) string {
	h := sha256.New()
	for _, a := range p.Build {
		fmt.Fprintf(h, "%q ", a)
	}
	b := hex.EncodeToString(h.Sum(nil))
	return path.Join("programs", p.Name+"-"+p.Hash[:12]+"-"+b[:8])
}

// ship uploads the source to host and builds it there; it returns the
// folder it is built in.
func (s *programWorkload) ship(ctx context.Context, env *steps.Env, host string) (string, error) {
	p := s.w.Program
	h, err := env.Host(host)
	if err != nil {
		return "", err
	}
	dir := BuildDir(p)
	if len(p.Build) > 0 && fromCache(ctx, env, host, p, dir) {
		return dir, nil
	}
	if err := upload(ctx, h, p, dir); err != nil {
		return "", fmt.Errorf("ship program %q to host %q: %w", p.Name, host, err)
	}
	if len(p.Build) == 0 {
		return dir, nil
	}
	var procs steps.Procs
	spec := steps.ProcSpec{Host: host, Handle: "prog." + safe(p.Name) + "." + p.Hash[:12] + ".build", Argv: p.Build, Role: "build", Dir: dir}
	// The build's deadline reaches the agent (the process's timeout) and
	// the wait's own (its rpc deadline follows the wait's timeout).
	bctx, cancel := context.WithTimeout(ctx, BuildTimeout)
	defer cancel()
	if _, err := steps.StartProc(bctx, env, &procs, "program "+p.Name, spec); err != nil {
		return "", fmt.Errorf("build program %q on host %q: %w", p.Name, host, err)
	}
	r, err := steps.WaitProc(bctx, env, &procs, host, spec.Handle, steps.Remaining(bctx))
	if err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		procs.StopAll(uctx, env)
		cancel()
		if ctx.Err() == nil && (bctx.Err() != nil || errors.Is(err, steps.ErrTimedOut)) {
			return "", fmt.Errorf("build program %q on host %q: %s: not done within %s, the most a build may take", p.Name, host, strings.Join(p.Build, " "), BuildTimeout)
		}
		return "", fmt.Errorf("build program %q on host %q: %s: %w", p.Name, host, strings.Join(p.Build, " "), err)
	}
	if r.TimedOut {
		return "", fmt.Errorf("%w (not done within %s, the most a build may take)", BuildError(p.Name, host, r), BuildTimeout)
	}
	if r.ExitCode != 0 || r.Signal != "" {
		return "", BuildError(p.Name, host, r)
	}
	toCache(ctx, env, host, p, dir)
	return dir, nil
}

// BuildError says which build failed where, how, and the compiler's first
// error lines (its output is in the run's logs/ as <handle>.stdout/.stderr).
func BuildError(name, host string, r *proto.ProcResult) error {
	how := fmt.Sprintf("exit %d", r.ExitCode)
	switch {
	case r.TimedOut:
		how = "timed out"
	case r.Signal != "":
		how = "killed by " + r.Signal
	}
	msg := fmt.Sprintf("build program %q on host %q: %s: %s", name, host, strings.Join(r.Argv, " "), how)
	if lines := firstErrors(r.Stderr + "\n" + r.Stdout); lines != "" {
		msg += ":\n" + lines
	}
	return errors.New(msg + fmt.Sprintf("\n(the whole output: logs/%s and logs/%s)", r.StdoutFile, r.StderrFile))
}

// firstErrors are the first lines that say "error" (gcc's "x.c:3:5: error:
// ..."; make's "*** [...] Error 1"), else the output's first lines.
func firstErrors(out string) string {
	var errs, all []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r ")
		if l == "" {
			continue
		}
		l = cutLine(l)
		all = append(all, l)
		if strings.Contains(strings.ToLower(l), "error") && len(errs) < errorLines {
			errs = append(errs, l)
		}
	}
	if len(errs) == 0 && len(all) > errorLines {
		all = all[:errorLines]
	}
	if len(errs) == 0 {
		errs = all
	}
	return "  " + strings.Join(errs, "\n  ")
}

// maxErrorLine bounds each line of a build's output that its error quotes
// (a compiler's error line is a path and a sentence): the output is the
// host's, and the error is kept for the run (results.json, the report, the
// terminal), so five lines of a megabyte each made a build's error 5 MB
// (SECURITY 139). The whole output is in the run's logs.
const maxErrorLine = 512

// cutLine cuts l to maxErrorLine bytes on a rune's start, marking the cut.
func cutLine(l string) string {
	if len(l) <= maxErrorLine {
		return l
	}
	i := maxErrorLine
	for i > 0 && !utf8.RuneStart(l[i]) {
		i--
	}
	return l[:i] + fmt.Sprintf("… (%d bytes)", len(l))
}

// upload writes every file of the source under dir on the host, in parts
// of at most chunk bytes; each file is read again and checked against the
// size the lab saw, so a source changed since validate is not shipped half
// old.
func upload(ctx context.Context, h steps.Host, p *kinds.Source, dir string) error {
	root, err := os.OpenRoot(p.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range p.Files {
		fh, err := openSourceFile(root, f)
		if err != nil {
			return err
		}
		// One byte past the size the lab saw tells a grown file.
		r := io.LimitReader(fh, f.Size+1)
		buf := make([]byte, chunk)
		var sent int64
		for first := true; ; first = false {
			n, rerr := io.ReadFull(r, buf)
			if n > 0 || first {
				if _, err := rpc.Invoke(ctx, h, rpc.FilesWrite, proto.FilesWriteParams{Path: path.Join(dir, f.Path), Data: buf[:n], Mode: f.Mode, Append: !first}); err != nil {
					fh.Close()
					return fmt.Errorf("write %s: %w", f.Path, err)
				}
				sent += int64(n)
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				fh.Close()
				return fmt.Errorf("read %s: %w", f.Path, rerr)
			}
		}
		fh.Close()
		if sent != f.Size {
			return fmt.Errorf("%s changed since the lab was loaded (%d bytes then, %d now): run again", f.Path, f.Size, sent)
		}
	}
	return nil
}

// openSourceFile opens a source file for the upload as the lab's load
// read it: inside the source folder, without waiting on a FIFO put in its
// place since (O_NONBLOCK), and only a regular file.
func openSourceFile(root *os.Root, f kinds.SourceFile) (*os.File, error) {
	fh, err := root.OpenFile(filepath.FromSlash(f.Path), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s) since the lab was loaded: run again", f.Path, st.Mode().Type())
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// Argv is program's argv hook (kinds.Argver): the lab's commands with
// their self.* filled for one trial (self values). A program on host
// (command) has no server. A self.* the trial has no value for stays a
// placeholder (the plan shows it as the lab wrote it, ${self.size}), which
// the run refuses to fill (kinds.Fill), naming it.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	vals := self(in)
	if len(in.W.Command) > 0 {
		return nil, kinds.FillSelf(in.W.Command, vals)
	}
	return kinds.FillSelf(in.W.ServerCommand, vals), kinds.FillSelf(in.W.ClientCommand, vals)
}

// self is what self.* holds in one trial: its port, size and iterations;
// between server and client, the server's address (kinds.ArgvIn.Addr),
// the RDMA devices and the server device's GID index.
func self(in kinds.ArgvIn) map[string]string {
	w := in.W
	v := map[string]string{"port": strconv.Itoa(in.Port)}
	if in.Trial.Size > 0 {
		v["size"] = strconv.FormatInt(in.Trial.Size, 10)
	}
	if w.Iterations > 0 {
		v["iterations"] = strconv.FormatInt(w.Iterations, 10)
	}
	if len(w.Command) > 0 { // on host
		return v
	}
	v["server_address"] = string(in.Addr)
	if in.Server.Device != "" {
		v["server_device"], v["gid_index"] = in.Server.Device, string(in.Server.GID)
	}
	if in.Client.Device != "" {
		v["client_device"] = in.Client.Device
	}
	return v
}

// prepare is trial u as the run executes it: its planned argv with the
// placeholders filled (kinds.Fill) from what the device-create steps
// reported (the server device's GID index and address), and the meta of
// its samples.
func (s *programWorkload) prepare(env *steps.Env, u kinds.Planned) (server, client []string, m results.Meta, err error) {
	w := s.w
	vals := kinds.Values{}
	m = results.Meta{Workload: w.Name, Tool: w.Tool, Size: u.Size, Iterations: w.Iterations, Repeat: u.Repeat}
	if w.Host != "" {
		m.Hosts = []string{w.Host}
	} else {
		m.Hosts = []string{w.ServerHost, w.ClientHost}
		if w.ServerDevice != "" {
			srv, err := env.Device(w.ServerDevice)
			if err != nil {
				return nil, nil, m, fmt.Errorf("workload %q server: %w", w.Name, err)
			}
			if srv.IPv4 == "" {
				return nil, nil, m, fmt.Errorf("workload %q: rxe %q on host %q has no IPv4 address on %s for the client to reach", w.Name, srv.Name, w.ServerHost, srv.Netdev)
			}
			vals[kinds.ServerAddr], vals[kinds.ServerGID], vals[kinds.ServerDev] = srv.IPv4, strconv.Itoa(srv.GIDIndex), srv.Name
			m.Devices = append(m.Devices, srv.Name)
			gid := srv.GIDIndex
			m.GIDIndex = &gid
		} else {
			addr, err := steps.DialAddr(env, w)
			if err != nil {
				return nil, nil, m, err
			}
			vals[kinds.ServerAddr] = addr // the plan's placeholder when it dials an rxe
			m.Extra = map[string]string{"server_addr": addr}
		}
		if w.ClientDevice != "" {
			cli, err := env.Device(w.ClientDevice)
			if err != nil {
				return nil, nil, m, fmt.Errorf("workload %q client: %w", w.Name, err)
			}
			vals[kinds.ClientDev] = cli.Name
			m.Devices = append(m.Devices, cli.Name)
		}
	}
	if server, err = kinds.Fill(w.Name, u.Server, vals); err != nil {
		return nil, nil, m, err
	}
	if client, err = kinds.Fill(w.Name, u.Client, vals); err != nil {
		return nil, nil, m, err
	}
	return server, client, m, nil
}

func (s *programWorkload) runOne(ctx context.Context, env *steps.Env, u kinds.Planned, dir string) error {
	w := s.w
	_, argv, meta, err := s.prepare(env, u)
	if err != nil {
		return err
	}
	spec := steps.ProcSpec{Host: w.Host, Handle: steps.Handle(w, "run", u.Size, u.Repeat), Argv: argv, Role: "command", Dir: dir}
	if _, err := steps.StartProc(ctx, env, &s.procs, "program", spec); err != nil {
		return err
	}
	r, err := steps.WaitProc(ctx, env, &s.procs, w.Host, spec.Handle, steps.Remaining(ctx))
	if err != nil {
		return fmt.Errorf("wait for program on host %q: %s: %w", w.Host, strings.Join(argv, " "), err)
	}
	ref := steps.Ref(w.Host, r)
	s.out.Runs = append(s.out.Runs, steps.RunRecord{Size: u.Size, Repeat: u.Repeat, Client: ref})
	ss := steps.CommonSamples(r.ExitCode, ref.Seconds)
	if r.ExitCode != 0 || r.TimedOut || r.Signal != "" {
		steps.FillMeta(ss, meta)
		s.out.Samples = append(s.out.Samples, ss...)
		return steps.ProcError("program", "command", w.Host, r)
	}
	ms, merr := steps.OutputSamples(w.Metrics, r)
	ss = append(ss, ms...)
	steps.FillMeta(ss, meta)
	s.out.Samples = append(s.out.Samples, ss...)
	return merr
}

func (s *programWorkload) runPair(ctx context.Context, env *steps.Env, u kinds.Planned, sdir, cdir string) error {
	w := s.w
	sargv, cargv, meta, err := s.prepare(env, u)
	if err != nil {
		return err
	}
	port := u.Port
	ready := &proto.Ready{TCPListen: port, RDMACMListen: port}
	if w.ServerDevice != "" {
		// An rdma_cm listener on iWARP is ready once siw's TCP socket
		// listens too (proto.Ready.IWARP).
		if d, err := env.Device(w.ServerDevice); err == nil && d.Transport == "iWARP" {
			ready.IWARP = true
		}
	}
	if w.Ready != "" {
		ready = &proto.Ready{OutputRegex: w.Ready}
	}
	// The agent's answer (not ready, with what the server printed) must
	// come before the trial's own deadline cuts the call.
	rt := readyCap
	if r := steps.Remaining(ctx); r > 0 && r-time.Second < rt {
		rt = max(r-time.Second, r/2)
	}
	ready.TimeoutMs = steps.Millis(rt)
	srv := steps.ProcSpec{Host: w.ServerHost, Handle: steps.Handle(w, "server", u.Size, u.Repeat), Argv: sargv, Role: "server", Dir: sdir, Ready: ready}
	cli := steps.ProcSpec{Host: w.ClientHost, Handle: steps.Handle(w, "client", u.Size, u.Repeat), Argv: cargv, Role: "client", Dir: cdir}
	stopAll := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		s.procs.StopAll(uctx, env)
		cancel()
	}
	if _, err := steps.StartProc(ctx, env, &s.procs, "program", srv); err != nil {
		stopAll()
		return fmt.Errorf("%w (ready: %s)%s", err, readyText(w.Ready, port), printed(ctx, env, srv))
	}
	if _, err := steps.StartProc(ctx, env, &s.procs, "program", cli); err != nil {
		stopAll()
		return err
	}
	cr, err := steps.WaitClient(ctx, env, &s.procs, srv.Host, cli.Host, cli.Handle)
	if err != nil {
		stopAll()
		return fmt.Errorf("wait for program client on host %q: %w", cli.Host, err)
	}
	// The server: its own exit if it makes one soon, else interrupted (a
	// tutorial server waits for Enter): that is no failure.
	linger := serverLinger
	if cr.ExitCode != 0 {
		linger = 0
	}
	var sr *proto.ProcResult
	if linger > 0 {
		wctx, cancel := context.WithTimeout(ctx, linger+5*time.Second)
		sr, err = steps.WaitProc(wctx, env, &s.procs, srv.Host, srv.Handle, linger)
		cancel()
	}
	if sr == nil || err != nil || sr.TimedOut {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+10*time.Second)
		sr, err = steps.InterruptProc(uctx, env, &s.procs, srv.Host, srv.Handle, stopGrace)
		cancel()
		if err != nil {
			return err
		}
	}
	rec := steps.RunRecord{Size: u.Size, Repeat: u.Repeat, Client: steps.Ref(cli.Host, cr)}
	if sr != nil && sr.Handle != "" {
		rec.Server = steps.Ref(srv.Host, sr)
	}
	s.out.Runs = append(s.out.Runs, rec)
	ss := steps.CommonSamples(cr.ExitCode, rec.Client.Seconds)
	switch {
	case cr.ExitCode != 0 || cr.TimedOut || cr.Signal != "":
		err = steps.ProcError("program", "client", cli.Host, cr)
	case sr != nil && !sr.Stopped && (sr.ExitCode != 0 || sr.Signal != ""):
		err = steps.ProcError("program", "server", srv.Host, sr)
	default:
		// Each metric reads the output it names: the client's, or with
		// from = "server" the server's.
		var cm, sm []kinds.OutputMetric
		for _, m := range w.Metrics {
			if m.From == kinds.FromServer {
				sm = append(sm, m)
			} else {
				cm = append(cm, m)
			}
		}
		var ms []results.Sample
		ms, err = steps.OutputSamples(cm, cr)
		ss = append(ss, ms...)
		if len(sm) > 0 {
			if sr == nil {
				err = errors.Join(err, fmt.Errorf("workload %q: no server output to read %d metric(s) from", w.Name, len(sm)))
			} else {
				sms, serr := steps.OutputSamples(sm, sr)
				ss = append(ss, sms...)
				err = errors.Join(err, serr)
			}
		}
	}
	steps.FillMeta(ss, meta)
	s.out.Samples = append(s.out.Samples, ss...)
	return err
}

// printed is the end of what a process printed, for a server that never
// got ready: "" when it printed nothing (or it cannot be read).
func printed(ctx context.Context, env *steps.Env, p steps.ProcSpec) string {
	h, err := env.Host(p.Host)
	if err != nil {
		return ""
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var out []string
	for _, f := range []string{p.Handle + ".stdout", p.Handle + ".stderr"} {
		// Read whole and masked before it is cut (as a process's result
		// is, steps.WaitProc): the first 4,096 bytes were read raw and
		// their last 600 quoted, and a sensitive value either cut fell
		// inside kept its other part in the error, which the run's
		// redactor, given the cut text, did not match (attack round 13).
		// An output longer than a read is not quoted: any cut of it
		// could fall inside a value.
		d, err := rpc.Invoke(rctx, h, rpc.FilesRead, proto.FilesReadParams{Path: f, MaxBytes: proto.OutputLimit})
		if err != nil {
			continue
		}
		if d.Truncated || int64(len(d.Data)) < d.Size {
			out = append(out, fmt.Sprintf("(%d bytes; the run's logs have them)", d.Size))
			continue
		}
		if t := strings.TrimSpace(steps.MaskText(env, string(d.Data))); t != "" {
			if len(t) > 600 {
				t = "…" + t[len(t)-600:]
			}
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "; it printed nothing"
	}
	return "; it printed:\n" + strings.Join(out, "\n")
}

func readyText(re string, port int) string {
	if re != "" {
		return fmt.Sprintf("its output matching %q", re)
	}
	return fmt.Sprintf("port %d listening, as TCP or RDMA-CM", port)
}
