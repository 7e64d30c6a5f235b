package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

const (
	defaultSnaplen     = 128
	defaultCaptureMax  = 256 << 20
	captureRingFiles   = 4
	captureStopTimeout = 10 * time.Second
	captureDrainMax    = 5 * time.Second
)

// capture is one running tcpdump.
type capture struct {
	handle string
	file   string // base name in the work dir
	pr     *proc
	// ring, for a root agent working for a user, is the folder tcpdump
	// writes in (captureRingDir), and home the work dir its files are moved
	// to when it stops; nil: tcpdump writes in the work dir, or its files
	// were moved out (set under Server.mu, which cleanup reads it under).
	ring *captureRingDir
	home *workDir

	once sync.Once
	res  proto.CaptureResult
	err  error
	// counterReads is how many times drainCapture read tcpdump's
	// counters as it stopped (tests count them: work, not time).
	counterReads int
}

var tcpdumpReady = regexp.MustCompile(`listening on `)

// ValidNetdev checks a name by the kernel's rules for interface names
// (dev_valid_name): 1-15 bytes, not "." or "..", no '/', ':' or whitespace.
func ValidNetdev(name string) error {
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return fmt.Errorf("netdev name %q: want 1-15 characters, and not \".\" or \"..\" alone", name)
	}
	for _, r := range name {
		if r == '/' || r == ':' || r <= ' ' || r == 0x7f {
			return fmt.Errorf("netdev name %q: no '/', ':', spaces or control characters", name)
		}
	}
	return nil
}

// captureRing splits maxBytes into tcpdump's -C (millions of bytes per file)
// and -W (number of files in the ring), so the ring never holds much more
// than maxBytes (one packet per file over at most).
func captureRing(maxBytes int64) (cMB, files int64) {
	files = min(max(maxBytes/1_000_000, 1), captureRingFiles)
	cMB = max(maxBytes/files/1_000_000, 1)
	return cMB, files
}

func netdevNames() string {
	ifs, _ := net.Interfaces()
	names := make([]string, 0, len(ifs))
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return strings.Join(names, " ")
}

func (s *Server) captureStart(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.CaptureStartParams
	if err := decode(proto.MethodCaptureStart, params, &p); err != nil {
		return nil, err
	}
	if err := validHandle(proto.MethodCaptureStart, p.Handle); err != nil {
		return nil, err
	}
	if err := ValidNetdev(p.Netdev); err != nil {
		return nil, perr(proto.CodeBadRequest, "capture %q: %v", p.Handle, err)
	}
	if p.Netdev != "any" {
		if _, err := net.InterfaceByName(p.Netdev); err != nil {
			return nil, perr(proto.CodeNotFound, "capture %q: netdev %q not found, have: %s", p.Handle, p.Netdev, netdevNames())
		}
	}
	if strings.ContainsRune(p.Filter, 0) || len(p.Filter) > 64<<10 {
		return nil, perr(proto.CodeBadRequest, "capture %q: filter has a NUL byte or is longer than 64 KiB", p.Handle)
	}
	if p.File == "" {
		p.File = p.Handle + ".pcap"
	}
	if err := ValidRunID(p.File); err != nil {
		return nil, perr(proto.CodeBadRequest, "capture %q: file %q: want a plain file name of [A-Za-z0-9._-]", p.Handle, p.File)
	}
	if p.Snaplen == 0 {
		p.Snaplen = defaultSnaplen
	}
	if p.Snaplen < 0 || p.Snaplen > 262144 {
		return nil, perr(proto.CodeBadRequest, "capture %q: snaplen %d out of range 1..262144", p.Handle, p.Snaplen)
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = defaultCaptureMax
	}
	if p.MaxBytes < 0 {
		return nil, perr(proto.CodeBadRequest, "capture %q: max_bytes %d is negative", p.Handle, p.MaxBytes)
	}
	wd := s.workDir()
	if err := wd.check("capture " + p.Handle); err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := wd.statfs(&st); err != nil {
		return nil, perr(proto.CodeInternal, "capture %q: statfs %q: %v", p.Handle, wd.path, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < 2*uint64(p.MaxBytes) {
		return nil, perr(proto.CodeNoSpace, "capture %q: %d bytes free in %s, need twice max_bytes (%d): free disk space or lower max_size",
			p.Handle, free, wd.path, 2*p.MaxBytes)
	}
	tcpdump, err := lookTool("tcpdump")
	if err != nil {
		return nil, perr(proto.CodeUnsupported, "capture %q: %v: install tcpdump", p.Handle, err)
	}
	s.mu.Lock()
	_, dup := s.captures[p.Handle]
	if !dup {
		s.captures[p.Handle] = &capture{handle: p.Handle} // reserve
	}
	s.mu.Unlock()
	if dup {
		return nil, perr(proto.CodeExists, "capture.start: handle %q already in use", p.Handle)
	}
	unreserve := func() {
		s.mu.Lock()
		delete(s.captures, p.Handle)
		s.mu.Unlock()
	}

	zuser := ""
	if os.Geteuid() == 0 {
		z, err := s.captureUser(p.User)
		if err != nil {
			unreserve()
			return nil, perr(proto.CodeBadRequest, "capture %q: %v", p.Handle, err)
		}
		zuser = z
	}
	argv := tcpdumpArgv(tcpdump, p, zuser)
	var ring *captureRingDir
	if o := s.opts.Owner; o != nil && o.UID != 0 && os.Geteuid() == 0 {
		if ring, err = newCaptureRingDir(wd, p.Handle); err != nil {
			unreserve()
			return nil, perr(proto.CodeInternal, "capture %q: %v", p.Handle, err)
		}
	}
	var at *workDir
	if ring != nil {
		at = ring.wd
	}
	pr, err := s.startProcAt(p.Handle+".tcpdump", argv, nil, 0, false, false, "", at)
	if err != nil {
		ring.remove(wd)
		unreserve()
		return nil, err
	}
	if err := s.waitReady(ctx, pr, &proto.Ready{OutputRegex: tcpdumpReady.String()}, tcpdumpReady); err != nil {
		pr.stop(s.opts.StopGrace)
		ring.remove(wd)
		unreserve()
		if pe, ok := err.(*proto.Error); ok && pe.Code == proto.CodeCommand {
			if strings.Contains(pe.Stderr, "ermission") || strings.Contains(pe.Stderr, "not permitted") {
				pe.Code = proto.CodePermission
				pe.Message += ": capturing needs root (become = true)"
			}
			pe.Message = fmt.Sprintf("capture %q on %s: %s", p.Handle, p.Netdev, pe.Message)
		}
		return nil, err
	}
	cp := &capture{handle: p.Handle, file: p.File, pr: pr, ring: ring, home: wd}
	s.mu.Lock()
	s.captures[p.Handle] = cp
	s.mu.Unlock()
	s.log.Info("capturing", "handle", p.Handle, "netdev", p.Netdev, "argv", argv)
	return proto.CaptureStarted{Handle: p.Handle, PID: pr.cmd.Process.Pid, ProcIdentity: pr.ident}, nil
}

// tcpdumpArgv is the tcpdump command line for a (validated) capture.
// --immediate-mode: packets reach tcpdump as they arrive, so none is left in
// the kernel's ring when SIGINT ends the capture; -B: an 8 MiB kernel buffer
// so a busy host makes tcpdump drop less; -Z: the user it drops to (root
// agents only). The filter is one argument after "--", never an option.
func tcpdumpArgv(tcpdump string, p proto.CaptureStartParams, zuser string) []string {
	cMB, files := captureRing(p.MaxBytes)
	argv := []string{tcpdump, "-i", p.Netdev, "-n", "--immediate-mode", "-B", "8192", "-s", strconv.Itoa(p.Snaplen),
		"-w", p.File, "-C", strconv.FormatInt(cMB, 10), "-W", strconv.FormatInt(files, 10)}
	if zuser != "" {
		argv = append(argv, "-Z", zuser)
	}
	if p.Filter != "" {
		argv = append(argv, "--", p.Filter)
	}
	return argv
}

// captureUser is who tcpdump runs as after opening the interface (-Z): the
// requested user, else the owner the agent works for, else root (only when
// the agent itself logged in as root). A root agent working for a user
// takes no other: tcpdump opens its files as the user it drops to, in a
// folder that user owns, so root (or anyone else) there would write through
// whatever symlink the user put in a pcap's place.
func (s *Server) captureUser(want string) (string, error) {
	if want != "" {
		u, err := user.Lookup(want)
		if err != nil {
			return "", fmt.Errorf("tcpdump user %q: %w", want, err)
		}
		if s.opts.Owner != nil && u.Uid != strconv.Itoa(s.opts.Owner.UID) {
			return "", fmt.Errorf("tcpdump user %q (uid %s): a root agent working for uid %d drops tcpdump to that uid only", want, u.Uid, s.opts.Owner.UID)
		}
		return want, nil
	}
	if s.opts.Owner != nil {
		u, err := user.LookupId(strconv.Itoa(s.opts.Owner.UID))
		if err != nil {
			return "", fmt.Errorf("owner uid %d has no user name for tcpdump -Z: %w", s.opts.Owner.UID, err)
		}
		return u.Username, nil
	}
	return "root", nil
}

func (s *Server) captureStop(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.CaptureStopParams
	if err := decode(proto.MethodCaptureStop, params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	cp, ok := s.captures[p.Handle]
	s.mu.Unlock()
	if !ok || cp.pr == nil {
		return nil, perr(proto.CodeNotFound, "capture.stop: no capture with handle %q", p.Handle)
	}
	return s.stopCapture(cp)
}

// stopCapture ends tcpdump with SIGINT (it flushes and closes the file) and
// waits for it, then reports the ring's files. Safe to call twice.
func (s *Server) stopCapture(cp *capture) (proto.CaptureResult, error) {
	if cp.pr == nil {
		return proto.CaptureResult{}, nil // still starting; its starter cleans up
	}
	cp.once.Do(func() {
		pid := cp.pr.cmd.Process.Pid
		if !cp.pr.finished() { // reaped: its pid may be another's now
			cp.counterReads = s.drainCapture(cp)
			_ = syscall.Kill(pid, syscall.SIGINT)
			select {
			case <-cp.pr.done:
			case <-time.After(captureStopTimeout):
				killGroup(pid, syscall.SIGKILL)
				<-cp.pr.done
			}
		}
		res := cp.pr.result()
		cp.res = proto.CaptureResult{Handle: cp.handle, Files: []proto.FileInfo{}, Stderr: tailString(res.Stderr, 4096)}
		if st, ok := ParseTcpdumpStats(res.Stderr); ok {
			cp.res.Captured, cp.res.Received, cp.res.Dropped = st.Captured, st.Received, st.Dropped
		}
		wd := cp.pr.wd // where tcpdump wrote: its working directory
		names, err := captureFiles(wd.root, cp.file)
		if err == nil {
			names, err = nameRing(wd.root, cp.file, names)
		}
		if err == nil && cp.ring != nil {
			// Out of the folder only root reaches, into the work dir.
			err = cp.ring.moveOut(cp.home, append(names, cp.pr.handle+".stdout", cp.pr.handle+".stderr"))
			cp.ring.remove(cp.home)
			wd = cp.home
			s.mu.Lock() // cleanup reads it: nothing left to move out
			cp.ring = nil
			s.mu.Unlock()
		}
		if err != nil {
			cp.err = perr(proto.CodeInternal, "capture %q: list files: %v", cp.handle, err)
			return
		}
		for _, n := range names {
			// own stays root's (SECURITY 231's exception): it gives the
			// user what root made in its capture folder, and only a file
			// that is the user's already or one root made (agentMade).
			_ = wd.own(n, s.opts.Owner)
			var fi proto.FileInfo
			err := wd.asUser("capture "+cp.handle, func() (err error) { fi, err = fileInfo(wd.root, wd.owner, n); return err })
			if err != nil {
				cp.err = perr(proto.CodeInternal, "capture %q: %v", cp.handle, err)
				return
			}
			cp.res.Files = append(cp.res.Files, fi)
		}
		s.log.Info("capture stopped", "handle", cp.handle, "files", len(names))
	})
	return cp.res, cp.err
}

// drainCapture waits until tcpdump has written every packet the kernel
// handed it: SIGINT makes tcpdump drop what is still queued, and a loaded
// host lets it fall behind. SIGUSR1 makes tcpdump print its counters without
// stopping; it is caught up when captured + dropped reaches received, or
// when no counter moved from one reading to the next: on lo, and on "any"
// for loopback traffic, the kernel counts each packet as received twice
// (as sent and as received) and libpcap drops the sent copy, so 5 packets
// read "5 captured, 10 received" for good, and every capture on lo waited
// the whole drain (5 s). A tcpdump still behind (immediate mode: the
// packets are its to read) writes some between two readings, 50 ms apart
// and more, as it is running: it answered the first. It returns how many
// readings it took.
func (s *Server) drainCapture(cp *capture) (reads int) {
	wd, errPath := cp.pr.wd, cp.pr.handle+".stderr"
	drain := captureDrainMax
	if s.opts.CaptureDrain > 0 {
		drain = s.opts.CaptureDrain
	}
	deadline := time.Now().Add(drain)
	var last *TcpdumpStats
	for time.Now().Before(deadline) && !cp.pr.finished() {
		before := wd.size(errPath)
		if err := syscall.Kill(cp.pr.cmd.Process.Pid, syscall.SIGUSR1); err != nil {
			return reads
		}
		reads++
		// Wait for the whole counters block (its last line names drops).
		var st TcpdumpStats
		ok := false
		for wait := time.Now().Add(time.Second); time.Now().Before(wait) && !cp.pr.finished(); time.Sleep(10 * time.Millisecond) {
			if wd.size(errPath) <= before {
				continue
			}
			b, _ := wd.readTail(errPath, 64<<10)
			if st, ok = ParseTcpdumpStats(b); ok && strings.HasSuffix(strings.TrimRight(b, "\n"), "dropped by kernel") {
				break
			}
			ok = false
		}
		if !ok {
			s.log.Warn("capture: no counters from tcpdump on SIGUSR1; stopping without draining", "handle", cp.handle)
			return reads
		}
		if st.Captured+st.Dropped >= st.Received || last != nil && *last == st {
			return reads
		}
		last = &st
		s.log.Debug("capture draining", "handle", cp.handle, "captured", st.Captured, "received", st.Received)
		time.Sleep(50 * time.Millisecond)
	}
	if !cp.pr.finished() {
		s.log.Warn("capture: tcpdump still behind after draining; stopping", "handle", cp.handle, "waited", drain)
	}
	return reads
}

// TcpdumpStats are the counters tcpdump prints on SIGUSR1 (one line:
// "tcpdump: 5 packets captured, 6 packets received by filter, 0 packets
// dropped by kernel") and at exit (three lines).
type TcpdumpStats struct {
	Captured, Received, Dropped int64
}

var (
	tcpdumpCaptured = regexp.MustCompile(`(\d+) packets? captured`)
	tcpdumpReceived = regexp.MustCompile(`(\d+) packets? received by filter`)
	tcpdumpDropped  = regexp.MustCompile(`(\d+) packets? dropped by kernel`)
)

// ParseTcpdumpStats reads the last counters block in tcpdump's stderr.
func ParseTcpdumpStats(out string) (TcpdumpStats, bool) {
	last := func(re *regexp.Regexp) (int64, bool) {
		m := re.FindAllStringSubmatch(out, -1)
		if len(m) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(m[len(m)-1][1], 10, 64)
		return n, err == nil
	}
	var st TcpdumpStats
	var ok1, ok2, ok3 bool
	st.Captured, ok1 = last(tcpdumpCaptured)
	st.Received, ok2 = last(tcpdumpReceived)
	st.Dropped, ok3 = last(tcpdumpDropped)
	return st, ok1 && ok2 && ok3
}

// nameRing gives the files of a stopped capture names a user can open: one
// file is named exactly as asked (roce.pcap, not roce.pcap0); a ring of
// several becomes roce.000.pcap, roce.001.pcap, ... oldest first.
func nameRing(dir *os.Root, file string, names []string) ([]string, error) {
	if len(names) == 0 {
		return names, nil
	}
	type f struct {
		name string
		mod  time.Time
		seq  int
	}
	fs := make([]f, 0, len(names))
	for _, n := range names {
		fi, err := dir.Lstat(n)
		if err != nil {
			return nil, err
		}
		seq, _ := strconv.Atoi(strings.TrimPrefix(n, file))
		fs = append(fs, f{n, fi.ModTime(), seq})
	}
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].mod.Equal(fs[j].mod) {
			return fs[i].mod.Before(fs[j].mod)
		}
		return fs[i].seq < fs[j].seq
	})
	ext := filepath.Ext(file)
	stem := strings.TrimSuffix(file, ext)
	out := make([]string, len(fs))
	for i, x := range fs {
		out[i] = file
		if len(fs) > 1 {
			out[i] = fmt.Sprintf("%s.%03d%s", stem, i, ext)
		}
		if x.name == out[i] {
			continue
		}
		if err := dir.Rename(x.name, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// captureFiles lists the files tcpdump wrote for base: "base" itself, or
// with -C/-W "base0", "base1", ...
func captureFiles(dir *os.Root, base string) ([]string, error) {
	ents, err := fs.ReadDir(dir.FS(), ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if _, err := strconv.Atoi(rest); rest == "" || err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// captureRingDir is the folder tcpdump writes its ring in for a root agent
// working for a user: <work dir>/.capture-<handle>.<n>/ring, the outer
// folder root's and 0700, ring the user's. tcpdump drops to the user (-Z)
// and then opens its files by name, following a symlink; a tcpdump built
// with libcap-ng (Fedora, RHEL and their rebuilds) opens each file of the
// ring with CAP_DAC_OVERRIDE raised again, so in a folder the user can
// write in, a symlink the user put at the next file's name (.pcap1 ->
// /root/.ssh/authorized_keys) had it truncated and filled with packets the
// user sends. Nobody but root reaches ring by path: its parent lets only
// root search it, and tcpdump, as its working directory, holds it by the
// descriptor (its /proc/<pid>/cwd is closed to the user: it changed uid).
type captureRingDir struct {
	name  string   // the outer folder's name in the work dir
	outer *os.File // the outer folder, root's
	wd    *workDir // ring
}

var captureRingSeq atomic.Uint64

// newCaptureRingDir makes handle's ring folder in wd.
func newCaptureRingDir(wd *workDir, handle string) (*captureRingDir, error) {
	name := fmt.Sprintf(".capture-%s.%d.%d", handle, os.Getpid(), captureRingSeq.Add(1))
	if err := wd.root.Mkdir(name, 0o700); err != nil {
		return nil, fmt.Errorf("make the capture's folder: %w", rootErr(err))
	}
	r := &captureRingDir{name: name}
	outer, err := wd.root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		wd.root.Remove(name)
		return nil, fmt.Errorf("open the capture's folder: %w", rootErr(err))
	}
	r.outer = outer
	var st unix.Stat_t
	if err := unix.Fstat(int(outer.Fd()), &st); err != nil || int(st.Uid) != os.Geteuid() {
		// The user removed it and made one of theirs in its place.
		outer.Close()
		return nil, fmt.Errorf("the capture's folder %q was replaced after it was made: refusing it", name)
	}
	if err := unix.Fchmod(int(outer.Fd()), 0o700); err != nil {
		r.remove(wd)
		return nil, fmt.Errorf("chmod the capture's folder: %w", err)
	}
	// Who made it, by more than the pid in its name, which the user can
	// rename: written before ring, so a folder with a ring always says.
	if err := writeRingMaker(int(outer.Fd())); err != nil {
		r.remove(wd)
		return nil, err
	}
	if err := unix.Mkdirat(int(outer.Fd()), "ring", 0o700); err != nil {
		r.remove(wd)
		return nil, fmt.Errorf("make the capture's ring folder: %w", err)
	}
	fd, err := unix.Openat(int(outer.Fd()), "ring", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		r.remove(wd)
		return nil, fmt.Errorf("open the capture's ring folder: %w", err)
	}
	ring := &workDir{path: filepath.Join(wd.path, name, "ring"), dir: os.NewFile(uintptr(fd), "ring"), owner: wd.owner}
	if err := unix.Fstat(fd, &st); err != nil {
		ring.close()
		r.remove(wd)
		return nil, fmt.Errorf("stat the capture's ring folder: %w", err)
	}
	ring.dev, ring.ino = uint64(st.Dev), st.Ino
	if o := wd.owner; o != nil {
		if err := unix.Fchown(fd, o.UID, o.GID); err != nil {
			ring.close()
			r.remove(wd)
			return nil, fmt.Errorf("chown the capture's ring folder: %w", err)
		}
	}
	if ring.root, err = os.OpenRoot(ring.fdPath()); err != nil {
		ring.close()
		r.remove(wd)
		return nil, fmt.Errorf("open the capture's ring folder: %w", err)
	}
	r.wd = ring
	return r, nil
}

// moveOut renames the files names of the ring folder into the work dir
// home, each under its name (replacing a file of that name there, never
// following one). A name the ring does not hold is skipped.
func (r *captureRingDir) moveOut(home *workDir, names []string) error {
	for _, n := range names {
		err := unix.Renameat(int(r.wd.dir.Fd()), n, int(home.dir.Fd()), n)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("move %q into the work dir: %w", n, err)
		}
	}
	return nil
}

// remove deletes the ring folder and its outer folder (what tcpdump left
// in ring first: its files were moved out, or the capture failed).
func (r *captureRingDir) remove(home *workDir) {
	if r == nil {
		return
	}
	if r.wd != nil {
		if ents, err := fs.ReadDir(r.wd.root.FS(), "."); err == nil {
			for _, e := range ents {
				r.wd.root.Remove(e.Name())
			}
		}
		r.wd.close()
		unix.Unlinkat(int(r.outer.Fd()), "ring", unix.AT_REMOVEDIR)
	}
	// Empty, the folder is the user's to remove even when they renamed it
	// (the name below is then another's, or none).
	unix.Unlinkat(int(r.outer.Fd()), ringMakerFile, 0)
	r.outer.Close()
	home.root.Remove(r.name)
}

// captureRingName is a captureRingDir's name: handle, the making agent's
// pid and a sequence number.
var captureRingName = regexp.MustCompile(`^\.capture-.+\.([0-9]+)\.[0-9]+$`)

// ringMakerFile, in a captureRingDir's outer folder (root's, 0700: the user
// can neither write nor replace it), names the agent that made the folder:
// its pid, start time in clock ticks since boot and boot id, as
// proto.ProcIdentity tells a process from a later one reusing its pid. The
// folder's name has the pid too, but the user owns the work dir and can
// rename the folder: renamed to a dead pid, a live capture's folder was
// removed by down's cleanup (attack round 13).
const ringMakerFile = "agent"

// writeRingMaker writes ringMakerFile into the outer folder outer.
func writeRingMaker(outer int) error {
	id := procIdentity(os.Getpid())
	if id.StartTicks == 0 {
		return fmt.Errorf("make the capture's folder: cannot read this agent's start time in /proc")
	}
	fd, err := unix.Openat(outer, ringMakerFile, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("make the capture's folder: write %s: %w", ringMakerFile, err)
	}
	f := os.NewFile(uintptr(fd), ringMakerFile)
	_, err = fmt.Fprintf(f, "%d %d %s\n", os.Getpid(), id.StartTicks, id.BootID)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("make the capture's folder: write %s: %w", ringMakerFile, err)
	}
	return nil
}

// ringMakerLive reports whether the agent ringMakerFile b names is still
// running: the same pid, started at the same tick, in this boot. A record
// that does not parse names no live agent.
func ringMakerLive(b []byte) bool {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	now := procIdentity(pid)
	return now.StartTicks == start && now.BootID == f[2]
}

// sweepCaptureRingDirs removes the capture folders (captureRingDir) an
// agent of run killed with SIGKILL left in that run's work dir, a sibling
// of this agent's (.../runs/<run>/<host>; rlab down's agent is
// .../runs/<run>-down/<host>). They are root's and 0700, so `rlab down`,
// removing the work dir as the login user, failed on them; only a root
// agent can remove them, and it is the one down already asks to clean up.
// A folder is removed only when it is provably one of them: a folder
// named so, root's and 0700, whose maker is not a live agent, holding at
// most a folder "ring" of the owner's with no folders in it. Everything is
// reached by descriptor from the work dir opened as openWorkDir opens it
// (the owner's, not a symlink), so a path the user swaps leads nowhere else.
func (s *Server) sweepCaptureRingDirs(run string) error {
	o := s.opts.Owner
	if o == nil || o.UID == 0 || os.Geteuid() != 0 {
		return nil // only a root agent working for a user makes them
	}
	base, leaf, ok := runsBase(s.workDir().path)
	if !ok || ValidRunID(run) != nil {
		return nil
	}
	path := filepath.Join(base, run, leaf)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	wd, err := openWorkDir(path, o)
	if err != nil {
		return fmt.Errorf("remove stale capture folders: %w", err)
	}
	defer wd.close()
	names, err := wd.dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("remove stale capture folders: list work dir %q: %w", path, err)
	}
	var errs []error
	for _, n := range names {
		m := captureRingName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		removed, err := removeStaleRing(wd, n, pid)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("remove stale capture folder %q in %q: %w", n, path, err))
		case removed:
			s.log.Info("removed a stale capture folder", "work_dir", path, "folder", n)
		}
	}
	return errors.Join(errs...)
}

// liveAgent reports whether pid is a live process of this program's name
// (an agent that may still be capturing in its folder).
func liveAgent(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return false
	}
	self, err := os.ReadFile("/proc/self/comm")
	return err != nil || string(comm) == string(self)
}

// removeStaleRing removes the capture folder name of wd when it is one of
// a dead agent (see sweepCaptureRingDirs) and says whether it did; a live
// agent's is left as it is, anything else too, said in the error. Its maker
// is the one its ringMakerFile names; a folder without one (made by an
// agent before that file) is judged by namePID, the pid in its name, and
// one with neither that file nor ring is the user's to remove (empty, or
// an agent is making it).
func removeStaleRing(wd *workDir, name string, namePID int) (bool, error) {
	fd, err := unix.Openat(int(wd.dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open: %w", err)
	}
	outer := os.NewFile(uintptr(fd), name)
	defer outer.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != 0o700 {
		return false, fmt.Errorf("uid %d mode %o: not a capture folder of a root agent, left alone", st.Uid, st.Mode&0o7777)
	}
	names, err := outer.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("list: %w", err)
	}
	hasMaker, hasRing := false, false
	for _, n := range names {
		switch n {
		case ringMakerFile:
			hasMaker = true
		case "ring":
			hasRing = true
		default:
			return false, fmt.Errorf("holds %q, not only ring and %s: left alone", n, ringMakerFile)
		}
	}
	switch {
	case hasMaker:
		b, err := readRingMaker(fd)
		if err != nil {
			return false, err
		}
		if ringMakerLive(b) {
			return false, nil // its agent may still be capturing
		}
	case !hasRing:
		return false, nil
	case liveAgent(namePID):
		return false, nil
	}
	if hasRing {
		if err := removeStaleRingFiles(fd, wd.owner); err != nil {
			return false, err
		}
	}
	if hasMaker {
		if err := unix.Unlinkat(fd, ringMakerFile, 0); err != nil {
			return false, fmt.Errorf("remove %s: %w", ringMakerFile, err)
		}
	}
	if err := unix.Unlinkat(int(wd.dir.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return false, fmt.Errorf("remove: %w", err)
	}
	return true, nil
}

// readRingMaker reads the ringMakerFile of the capture folder outer, a
// regular file of root's no longer than a record.
func readRingMaker(outer int) ([]byte, error) {
	fd, err := unix.Openat(outer, ringMakerFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ringMakerFile, err)
	}
	f := os.NewFile(uintptr(fd), ringMakerFile)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", ringMakerFile, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s is not a file of root's: left alone", ringMakerFile)
	}
	b := make([]byte, 128)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", ringMakerFile, err)
	}
	return b[:n], nil
}

// removeStaleRingFiles removes the folder ring of the capture folder
// outer: the owner's, holding only what tcpdump writes (no folders).
func removeStaleRingFiles(outer int, owner *Owner) error {
	fd, err := unix.Openat(outer, "ring", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open ring: %w", err)
	}
	ring := os.NewFile(uintptr(fd), "ring")
	defer ring.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat ring: %w", err)
	}
	if int(st.Uid) != owner.UID {
		return fmt.Errorf("ring is uid %d's, not the owner's: left alone", st.Uid)
	}
	names, err := ring.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list ring: %w", err)
	}
	for _, n := range names {
		// Unlinking a name never follows it; a folder is not tcpdump's.
		if err := unix.Unlinkat(fd, n, 0); err != nil {
			return fmt.Errorf("remove ring/%s: %w", n, err)
		}
	}
	if err := unix.Unlinkat(outer, "ring", unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove ring: %w", err)
	}
	return nil
}
