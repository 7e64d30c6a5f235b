package server

// provision: install what a lab needs with the host's own package manager.
// It runs here, in the agent, rather than as proc.start calls from the
// controller: the checks (what is installed, who holds the dpkg lock, what
// the manager's output means) and the bounded retries are one round trip
// instead of one per command, the lock is read from this host's own fcntl
// table, and a cancelled install is let finish here, next to it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"golang.org/x/sys/unix"
)

// Where and how provision looks. Variables so tests can point them at
// fixtures (fake managers on PATH, a lock file of their own).
var (
	// dpkgLocks are the files apt and dpkg take fcntl locks on (apt-pkg's
	// GetLock): the frontend lock first, which apt holds for a whole run.
	dpkgLocks     = []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock", "/var/cache/apt/archives/lock"}
	lockPoll      = time.Second
	retryBackoff  = 2 * time.Second
	provisionEUID = os.Geteuid
)

const (
	defaultLockWait  = 2 * time.Minute
	defaultProvTime  = 10 * time.Minute
	defaultGrace     = 2 * time.Minute
	defaultRetries   = 2
	provisionLogMax  = 256 << 10
	provisionTermFor = 10 * time.Second // after the grace: SIGTERM, then this long before SIGKILL
)

// pkgNameRE is what a package name may be: no option (a leading '-'), no
// space, nothing a manager would read as something else.
var pkgNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]*$`)

// packageFile reports whether a package manager would take name for a file
// rather than a package of the repositories: dnf and yum read any argument
// ending in ".rpm" as a file (relative to their working directory, which
// for a root agent is where the login user ran sudo), and install it without
// a signature (dnf's localpkg_gpgcheck is off by default), its scriptlets as
// root (attack round 12, high); zypper reads such a name as a file too.
// apt-get takes a file only from a path starting with '/' or '.', which
// pkgNameRE refuses; ".deb" is refused all the same.
func packageFile(name string) bool {
	l := strings.ToLower(name)
	return strings.HasSuffix(l, ".rpm") || strings.HasSuffix(l, ".deb")
}

// pkgManager is one distribution family's package manager.
type pkgManager struct {
	name    string
	env     []string
	query   func(ctx context.Context, pkgs []string) (present []string, argv []string, out string, err error)
	install func(pkgs []string, lockWait time.Duration) []string
	update  []string
	remove  func(pkgs []string) []string
	locks   []string // fcntl lock files to wait for before running it
}

func managerFor(family string) (*pkgManager, error) {
	switch family {
	case "debian":
		if _, err := exec.LookPath("apt-get"); err != nil {
			return nil, perr(proto.CodeUnsupported, "provision: the host is of the Debian family but has no apt-get on PATH")
		}
		return &pkgManager{
			name: "apt-get",
			// needrestart (Ubuntu) asks which services to restart unless
			// told to do it automatically; debconf asks unless told not to.
			env:   []string{"DEBIAN_FRONTEND=noninteractive", "NEEDRESTART_MODE=a", "NEEDRESTART_SUSPEND=1"},
			query: dpkgQuery,
			install: func(pkgs []string, lockWait time.Duration) []string {
				// Our own wait came first (it names the holder); apt's own
				// bounded wait covers the race after it.
				return append([]string{"apt-get", "-y", "-q", "--no-install-recommends",
					"-o", "DPkg::Lock::Timeout=" + strconv.Itoa(int(lockWait/time.Second)),
					"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
					"install"}, pkgs...)
			},
			update: []string{"apt-get", "-q", "update"},
			remove: func(pkgs []string) []string {
				return append([]string{"apt-get", "-y", "-q", "remove"}, pkgs...)
			},
			locks: dpkgLocks,
		}, nil
	case "rhel":
		name := "dnf"
		if _, err := exec.LookPath("dnf"); err != nil {
			if _, err := exec.LookPath("yum"); err != nil {
				return nil, perr(proto.CodeUnsupported, "provision: the host is of the RHEL family but has neither dnf nor yum on PATH")
			}
			name = "yum"
		}
		return &pkgManager{
			name:  name,
			query: rpmQuery,
			install: func(pkgs []string, _ time.Duration) []string {
				return append([]string{name, "-y", "install"}, pkgs...)
			},
			update: []string{name, "-y", "makecache"},
			remove: func(pkgs []string) []string { return append([]string{name, "-y", "remove"}, pkgs...) },
		}, nil
	case "suse":
		if _, err := exec.LookPath("zypper"); err != nil {
			return nil, perr(proto.CodeUnsupported, "provision: the host is of the SUSE family but has no zypper on PATH")
		}
		return &pkgManager{
			name:  "zypper",
			query: rpmQuery,
			install: func(pkgs []string, _ time.Duration) []string {
				return append([]string{"zypper", "--non-interactive", "install", "--no-recommends"}, pkgs...)
			},
			update: []string{"zypper", "--non-interactive", "refresh"},
			remove: func(pkgs []string) []string {
				return append([]string{"zypper", "--non-interactive", "remove"}, pkgs...)
			},
		}, nil
	}
	return nil, perr(proto.CodeUnsupported, "provision: unknown distribution family %q (want debian, rhel or suse)", family)
}

// dpkgQuery: dpkg-query prints one line per package it knows; a package
// it does not know is on stderr and makes it exit 1.
func dpkgQuery(ctx context.Context, pkgs []string) ([]string, []string, string, error) {
	argv := append([]string{"dpkg-query", "-W", "-f=${Package}\t${Status}\n", "--"}, pkgs...)
	out, _, err := runCmdSplit(ctx, nil, argv)
	if err != nil && !isExit(err) {
		return nil, argv, out.stderr, fmt.Errorf("dpkg-query: %w", err)
	}
	return dpkgInstalled(out.stdout, pkgs), argv, out.stdout + out.stderr, nil
}

// dpkgInstalled reads dpkg-query's "${Package}\t${Status}" lines: those of
// pkgs whose status (want, error flag, state; dpkg-query(1)) says the
// package is installed, whatever is wanted of it: "hold ok installed" (apt-mark
// hold) and "deinstall ok installed" (marked for removal) are on disk.
func dpkgInstalled(stdout string, pkgs []string) []string {
	var present []string
	for line := range strings.SplitSeq(stdout, "\n") {
		name, status, ok := strings.Cut(line, "\t")
		name, _, _ = strings.Cut(name, ":") // multiarch: perftest:amd64
		words := strings.Fields(status)
		if ok && len(words) == 3 && words[2] == "installed" && slices.Contains(pkgs, name) && !slices.Contains(present, name) {
			present = append(present, name)
		}
	}
	return present
}

// rpmQuery: rpm -q prints the names of the installed ones and "package X
// is not installed" for the others (its exit code counts them).
func rpmQuery(ctx context.Context, pkgs []string) ([]string, []string, string, error) {
	argv := append([]string{"rpm", "-q", "--qf", "%{NAME}\n", "--"}, pkgs...)
	out, _, err := runCmdSplit(ctx, nil, argv)
	if err != nil && !isExit(err) {
		return nil, argv, out.stderr, fmt.Errorf("rpm -q: %w", err)
	}
	return rpmInstalled(out.stdout, pkgs), argv, out.stdout + out.stderr, nil
}

// rpmInstalled reads rpm -q --qf "%{NAME}\n": the names of pkgs it printed
// (the others are "package X is not installed" lines).
func rpmInstalled(stdout string, pkgs []string) []string {
	var present []string
	for line := range strings.SplitSeq(stdout, "\n") {
		if slices.Contains(pkgs, line) && !slices.Contains(present, line) {
			present = append(present, line)
		}
	}
	return present
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// What a manager's output means. Lowercase substrings of apt-get, dnf/yum
// and zypper messages.
var (
	outNotFound = []string{"unable to locate package", "has no installation candidate", "no match for argument",
		"unable to find a match", "no package ", "not found in package names", "no provider of"}
	outTransient = []string{"temporary failure resolving", "could not resolve", "failed to fetch", "connection timed out",
		"could not connect", "connection refused", "hash sum mismatch", "curl error", "cannot download",
		"download (curl) error", "network is unreachable", "503  service unavailable", "503 service unavailable",
		"failed to download", "some index files failed to download", "cannot retrieve repository metadata",
		"problem retrieving files from"}
	outUnreachable = []string{"temporary failure resolving", "could not resolve", "network is unreachable",
		"could not connect", "connection refused", "connection timed out", "cannot retrieve repository metadata",
		"failed to download metadata", "problem retrieving files from"}
	outDiskFull = []string{"no space left on device", "you don't have enough free space", "not enough free space",
		"disk quota exceeded", "insufficient space"}
	outLocked = []string{"could not get lock", "unable to acquire the dpkg frontend lock", "unable to lock the administration directory",
		"system management is locked", "waiting for process with pid", "another app is currently holding the yum lock"}
)

// firstMatchingLine is the first line of out that says one of any.
func firstMatchingLine(out string, any []string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if says(line, any) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func says(out string, any []string) bool {
	low := strings.ToLower(out)
	for _, s := range any {
		if strings.Contains(low, s) {
			return true
		}
	}
	return false
}

// notFoundNames picks the packages a manager said it could not find.
func notFoundNames(out string, pkgs []string) []string {
	var names []string
	for line := range strings.SplitSeq(out, "\n") {
		if !says(line, outNotFound) {
			continue
		}
		for _, p := range pkgs {
			if containsWord(line, p) && !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
	}
	return names
}

// containsWord: p appears in line not as part of a longer package name.
func containsWord(line, p string) bool {
	for i := 0; ; {
		j := strings.Index(line[i:], p)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(p)
		okL := s == 0 || !isPkgChar(line[s-1])
		okR := e == len(line) || !isPkgChar(line[e])
		if okL && okR {
			return true
		}
		i = s + 1
	}
}

func isPkgChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-' || c == '_'
}

// provLog is the bounded record of what provision ran and what it said.
type provLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *provLog) cmd(argv []string, env []string) {
	l.add("$ " + strings.Join(append(slices.Clone(env), argv...), " ") + "\n")
}

func (l *provLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	if l.b.Len() > provisionLogMax {
		// Keep the tail: the end says what went wrong.
		t := l.b.String()
		t = "[... earlier output dropped ...]\n" + t[len(t)-provisionLogMax/2:]
		l.b.Reset()
		l.b.WriteString(t)
	}
}

func (l *provLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (s *Server) provision(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ProvisionParams
	if err := decode(proto.MethodProvision, params, &p); err != nil {
		return nil, err
	}
	for _, n := range append(slices.Clone(p.Packages), p.Modules...) {
		if !pkgNameRE.MatchString(n) || len(n) > 200 {
			return nil, perr(proto.CodeBadRequest, "provision: %q is not a package or module name", n)
		}
		if packageFile(n) {
			return nil, perr(proto.CodeBadRequest, "provision: %q names a package file, not a package of the host's repositories: refusing it", n)
		}
	}
	// Root first: nothing has changed yet.
	if euid := provisionEUID(); euid != 0 {
		return nil, perr(proto.CodePermission, "provision: installing packages needs root and the agent runs as uid %d: set become = true on the host (with passwordless sudo for its user), or log in as root", euid)
	}
	m, err := managerFor(p.Family)
	if err != nil {
		return nil, err
	}
	dur := func(msv int, def time.Duration) time.Duration {
		if msv <= 0 {
			return def
		}
		return time.Duration(msv) * time.Millisecond
	}
	lockWait, timeout, grace := dur(p.LockWaitMs, defaultLockWait), dur(p.TimeoutMs, defaultProvTime), dur(p.GraceMs, defaultGrace)
	retries := p.Retries
	if retries <= 0 {
		retries = defaultRetries
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	res := proto.ProvisionResult{Manager: m.name, Installed: []string{}, Present: []string{}}
	log := &provLog{}
	fail := func(e *proto.Error) (any, error) {
		e.Stderr = log.String()
		return nil, e
	}
	var want []string
	if len(p.Packages) > 0 {
		present, qargv, out, err := m.query(ctx, p.Packages)
		log.cmd(qargv, nil)
		log.add(out)
		if err != nil {
			return fail(perr(proto.CodeCommand, "provision: ask which packages are installed: %v", err))
		}
		for _, pk := range p.Packages {
			has := slices.Contains(present, pk)
			switch {
			case p.Remove && has:
				want = append(want, pk)
			case !p.Remove && !has:
				want = append(want, pk)
			case !p.Remove:
				res.Present = append(res.Present, pk)
			}
		}
	}
	if len(want) > 0 {
		argv := m.install(want, lockWait)
		if p.Remove {
			argv = m.remove(want)
		}
		lockDeadline := time.Now().Add(lockWait)
		attempt := 0
		refreshFailed := "" // the index refresh could not reach a repository: what it said
		for {
			if e := s.waitPkgLock(ctx, m, lockDeadline, &res, log); e != nil {
				return fail(e)
			}
			log.cmd(argv, m.env)
			out, _, interrupted, err := runManager(ctx, argv, m.env, grace, log)
			if interrupted {
				return fail(perr(proto.CodeTimeout, "provision: %s was interrupted (%v); it was let finish its transaction for up to %s: %s",
					m.name, ctx.Err(), grace, interruptedHint(m.name, err)))
			}
			if err == nil {
				break
			}
			if !isExit(err) {
				return fail(&proto.Error{Code: proto.CodeCommand, Message: fmt.Sprintf("provision: run %s: %v", m.name, err), Command: argv})
			}
			cmdErr := func(code, msg string) *proto.Error {
				return &proto.Error{Code: code, Message: msg, Command: argv, ExitCode: exitCode(err)}
			}
			switch {
			case says(out, outDiskFull):
				return fail(cmdErr(proto.CodeNoSpace, fmt.Sprintf("provision: %s ran out of disk space: free some on the host (apt-get clean, old kernels, logs) and provision again", m.name)))
			case says(out, outLocked) && time.Now().Before(lockDeadline):
				// Another manager took the lock between our look and its
				// start (dnf, zypper: no lock file we read): wait and retry.
				if !sleepCtx(ctx, lockPoll) {
					return fail(cmdErr(proto.CodeTimeout, "provision: interrupted while waiting for the package manager's lock"))
				}
				continue
			case says(out, outLocked):
				return fail(cmdErr(proto.CodeTimeout, fmt.Sprintf("provision: the package manager stayed locked by another process for %s (cloud-init or unattended-upgrades on a fresh VM?): wait for it, or raise the lock wait", lockWait)))
			case says(out, outNotFound) && !res.Updated && !p.Remove:
				// A stale or empty index (fresh cloud images ship none):
				// refresh it once, then try again.
				if e := s.updateIndex(ctx, m, lockDeadline, grace, retries, &res, log, &refreshFailed); e != nil {
					return fail(e)
				}
				continue
			case says(out, outNotFound):
				missing := notFoundNames(out, want)
				if len(missing) == 0 {
					missing = want
				}
				if refreshFailed != "" {
					return fail(cmdErr(proto.CodeCommand, fmt.Sprintf("provision: %s found no %s, and refreshing its index could not reach the repositories (%s): the index may be stale or empty; check the host's network, DNS and proxy, then provision again", m.name, strings.Join(missing, ", "), refreshFailed)))
				}
				e := cmdErr(proto.CodeNotFound, fmt.Sprintf("provision: the host's package repositories have no %s (%s said so after refreshing its index): enable the repository that ships it (Ubuntu: universe; RHEL: EPEL or the CodeReady/CRB repository), or install it by hand", strings.Join(missing, ", "), m.name))
				return fail(e)
			case says(out, outTransient) && attempt < retries:
				attempt++
				log.add(fmt.Sprintf("# transient mirror error: attempt %d of %d in %s\n", attempt+1, retries+1, retryBackoff*time.Duration(attempt)))
				if !sleepCtx(ctx, retryBackoff*time.Duration(attempt)) {
					return fail(cmdErr(proto.CodeTimeout, "provision: interrupted while waiting to retry"))
				}
				continue
			case says(out, outUnreachable):
				return fail(cmdErr(proto.CodeCommand, fmt.Sprintf("provision: the host's package repositories are unreachable (%d attempts): check its network, DNS and proxy, or its repository configuration", attempt+1)))
			}
			return fail(cmdErr(proto.CodeCommand, fmt.Sprintf("provision: %s failed", m.name)))
		}
		// What is installed now, from the package database, not from
		// the manager's word.
		present, qargv, out, err := m.query(ctx, want)
		log.cmd(qargv, nil)
		log.add(out)
		if err != nil {
			return fail(perr(proto.CodeCommand, "provision: ask which packages are installed: %v", err))
		}
		for _, pk := range want {
			if has := slices.Contains(present, pk); has != p.Remove {
				res.Installed = append(res.Installed, pk)
			} else {
				return fail(perr(proto.CodeCommand, "provision: %s exited 0 but %s is %s", m.name, pk, map[bool]string{false: "not installed", true: "still installed"}[p.Remove]))
			}
		}
	}
	if !p.Remove {
		for _, mod := range p.Modules {
			argv := []string{"modprobe", mod}
			log.cmd(argv, nil)
			out, code, err := runCmd(ctx, "modprobe", mod)
			log.add(out)
			if err != nil {
				return fail(&proto.Error{Code: proto.CodeNoModule, Message: fmt.Sprintf("provision: modprobe %s: exit %d", mod, code), Command: argv, ExitCode: code})
			}
			res.Modules = append(res.Modules, mod)
		}
	}
	res.Log = log.String()
	return res, nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func interruptedHint(manager string, err error) string {
	if err == nil {
		return "it finished in time"
	}
	if manager == "apt-get" {
		return "it was stopped before it finished: run `dpkg --configure -a` on the host before using apt again"
	}
	return "it was stopped before it finished: check the host's package database (" + manager + ") before using it again"
}

// updateIndex refreshes the package index once, retrying transient errors.
func (s *Server) updateIndex(ctx context.Context, m *pkgManager, lockDeadline time.Time, grace time.Duration, retries int, res *proto.ProvisionResult, log *provLog, unreachable *string) *proto.Error {
	res.Updated = true
	for attempt := 0; ; attempt++ {
		if e := s.waitPkgLock(ctx, m, lockDeadline, res, log); e != nil {
			return e
		}
		log.cmd(m.update, m.env)
		out, _, interrupted, err := runManager(ctx, m.update, m.env, grace, log)
		if interrupted {
			return perr(proto.CodeTimeout, "provision: %s was interrupted while refreshing its index (%v)", m.name, ctx.Err())
		}
		// apt-get update exits 0 with "W: Failed to fetch" for a mirror it
		// could not reach; the install that follows says what is missing,
		// and this note why the index may be stale.
		if err == nil {
			if says(out, outUnreachable) {
				*unreachable = firstMatchingLine(out, outUnreachable)
			}
			return nil
		}
		e := &proto.Error{Command: m.update, ExitCode: exitCode(err)}
		switch {
		case says(out, outDiskFull):
			e.Code, e.Message = proto.CodeNoSpace, fmt.Sprintf("provision: %s ran out of disk space refreshing its index: free some on the host", m.name)
			return e
		case says(out, outLocked) && time.Now().Before(lockDeadline):
			if !sleepCtx(ctx, lockPoll) {
				return perr(proto.CodeTimeout, "provision: interrupted while waiting for the package manager's lock")
			}
			continue
		case says(out, outTransient) && attempt < retries:
			if !sleepCtx(ctx, retryBackoff*time.Duration(attempt+1)) {
				return perr(proto.CodeTimeout, "provision: interrupted while waiting to retry")
			}
			continue
		case says(out, outUnreachable):
			e.Code, e.Message = proto.CodeCommand, fmt.Sprintf("provision: the host's package repositories are unreachable (%d attempts): check its network, DNS and proxy, or its repository configuration", attempt+1)
			return e
		}
		e.Code, e.Message = proto.CodeCommand, fmt.Sprintf("provision: %s failed", strings.Join(m.update, " "))
		return e
	}
}

// waitPkgLock waits, until deadline, while another process holds one of
// the manager's lock files, saying who.
func (s *Server) waitPkgLock(ctx context.Context, m *pkgManager, deadline time.Time, res *proto.ProvisionResult, log *provLog) *proto.Error {
	start := time.Now()
	said := ""
	for {
		holder, file := lockHolder(m.locks)
		if holder == "" {
			if said != "" {
				res.LockWait = fmt.Sprintf("%s held %s; waited %s", said, file, time.Since(start).Round(time.Second))
				log.add("# lock released after " + time.Since(start).Round(time.Second).String() + "\n")
			}
			return nil
		}
		if said == "" {
			said = holder
			log.add(fmt.Sprintf("# %s holds %s: waiting up to %s\n", holder, file, time.Until(deadline).Round(time.Second)))
			s.log.Info("provision: waiting for package lock", "holder", holder, "file", file)
		}
		if !time.Now().Before(deadline) {
			res.LockWait = fmt.Sprintf("%s held %s", holder, file)
			return &proto.Error{Code: proto.CodeTimeout, Message: fmt.Sprintf(
				"provision: %s held %s for the whole lock wait (%s): a fresh VM's cloud-init or unattended-upgrades may still be installing; wait for it (or stop it), or raise the lock wait, and provision again",
				holder, file, time.Since(start).Round(time.Second))}
		}
		if !sleepCtx(ctx, min(lockPoll, time.Until(deadline)+time.Millisecond)) {
			return perr(proto.CodeTimeout, "provision: interrupted while %s held %s", holder, file)
		}
	}
}

// lockHolder returns who holds an fcntl write lock on one of files
// ("unattended-upgr (pid 812)"), and which file; "" when none is held.
func lockHolder(files []string) (string, string) {
	for _, f := range files {
		fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err = unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk)
		unix.Close(fd)
		if err != nil || lk.Type == unix.F_UNLCK {
			continue
		}
		if lk.Pid <= 0 {
			return "another process", f // an OFD lock carries no pid
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", lk.Pid))
		name := strings.TrimSpace(string(comm))
		if name == "" {
			name = "process"
		}
		return fmt.Sprintf("%s (pid %d)", name, lk.Pid), f
	}
	return "", ""
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runManager runs a package manager (argv, no shell) with env added. When
// ctx ends while it runs it is not killed at once — a package manager
// stopped mid-transaction leaves a half-configured system — but given
// grace to finish, then SIGTERM, then SIGKILL; interrupted says so. Its
// output goes to log as it comes and is returned.
func runManager(ctx context.Context, argv, env []string, grace time.Duration, log *provLog) (string, int, bool, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// Not the agent's working directory: a root agent's is where the
	// login user ran sudo, and a manager may read a relative name there.
	cmd.Dir = "/"
	buf := &limitedBuffer{max: provisionLogMax}
	w := &teeLog{buf: buf, log: log}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", -1, false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	interrupted := false
	select {
	case err = <-done:
	case <-ctx.Done():
		interrupted = true
		log.add(fmt.Sprintf("# interrupted: letting %s finish for up to %s\n", argv[0], grace))
		select {
		case err = <-done:
		case <-time.After(grace):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case err = <-done:
			case <-time.After(provisionTermFor):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				err = <-done
			}
			if err == nil {
				err = errors.New("stopped")
			}
		}
	}
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if interrupted && err == nil {
		return buf.String(), code, true, nil
	}
	return buf.String(), code, interrupted, err
}

type teeLog struct {
	buf *limitedBuffer
	log *provLog
}

func (t *teeLog) Write(p []byte) (int, error) {
	t.buf.Write(p)
	t.log.add(string(p))
	return len(p), nil
}

// runCmdSplit runs argv (no shell) with env added and returns stdout and
// stderr apart (bounded).
func runCmdSplit(ctx context.Context, env, argv []string) (struct{ stdout, stderr string }, int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	so, se := &limitedBuffer{max: 64 << 10}, &limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = so, se
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return struct{ stdout, stderr string }{so.String(), se.String()}, code, err
}
