package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"golang.org/x/sys/unix"
)

// The fake package managers below are shell scripts on PATH that keep
// their "installed" packages as files in $FAKE_PKG/installed. Their
// messages are the real ones: apt-get 2.6 (Debian 12) prints
// "E: Unable to locate package NAME" for a package no index has,
// "E: Failed to fetch URL  Temporary failure resolving 'HOST'" when DNS
// fails, and "E: You don't have enough free space in DIR." on a full disk
// (apt-pkg/acquire-item.cc, apt-private/private-install.cc); dnf 4 prints
// "No match for argument: NAME" and "Error: Unable to find a match: NAME".

const fakeDpkgQuery = `#!/bin/sh
# dpkg-query -W -f=FMT -- PKG...
shift; shift; shift
rc=0
for p in "$@"; do
  if [ -e "$FAKE_PKG/installed/$p" ]; then printf '%s\tinstall ok installed\n' "$p"
  else echo "dpkg-query: no packages found matching $p" >&2; rc=1; fi
done
exit $rc
`

const fakeAptGet = `#!/bin/sh
echo "$*" >> "$FAKE_PKG/calls"
env | grep -E '^(DEBIAN_FRONTEND|NEEDRESTART_MODE)=' >> "$FAKE_PKG/env"
if [ -e "$FAKE_PKG/fail_mirror" ] && [ "$(cat "$FAKE_PKG/fail_mirror")" -gt 0 ]; then
  echo $(( $(cat "$FAKE_PKG/fail_mirror") - 1 )) > "$FAKE_PKG/fail_mirror"
  echo "E: Failed to fetch http://deb.debian.org/debian/pool/main/p/perftest/perftest_4.5-1_amd64.deb  Temporary failure resolving 'deb.debian.org'" >&2
  exit 100
fi
if [ -e "$FAKE_PKG/disk_full" ]; then
  echo "E: You don't have enough free space in /var/cache/apt/archives/." >&2; exit 100
fi
mode=""; skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -o) skip=1 ;;
    -*) ;;
    update)
      if [ -e "$FAKE_PKG/update_unreachable" ]; then
        echo "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'" >&2
        echo "W: Some index files failed to download. They have been ignored, or old ones used instead." >&2
        exit 0
      fi
      touch "$FAKE_PKG/updated"; echo "Reading package lists..."; exit 0 ;;
    install|remove) mode=$a ;;
    *)
      if [ "$mode" = install ]; then
        if [ -e "$FAKE_PKG/absent/$a" ] || { [ -e "$FAKE_PKG/stale/$a" ] && [ ! -e "$FAKE_PKG/updated" ]; }; then
          echo "E: Unable to locate package $a" >&2; exit 100
        fi
      fi ;;
  esac
done
mode=""; skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -o) skip=1 ;; -*) ;;
    install|remove) mode=$a ;;
    *) if [ "$mode" = install ]; then echo "Setting up $a ..."; touch "$FAKE_PKG/installed/$a"; fi
       if [ "$mode" = remove ]; then echo "Removing $a ..."; rm -f "$FAKE_PKG/installed/$a"; fi ;;
  esac
done
[ -e "$FAKE_PKG/sleep" ] && sleep "$(cat "$FAKE_PKG/sleep")"
exit 0
`

const fakeModprobe = `#!/bin/sh
echo "modprobe $*" >> "$FAKE_PKG/calls"
exit 0
`

// fakePkgHost puts fake apt-get, dpkg-query and modprobe first on PATH, a
// lock file of its own in place of dpkg's, and root's uid in place of ours.
func fakePkgHost(t *testing.T) (dir string, srv *Server) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, filepath.Join(dir, "installed"), filepath.Join(dir, "absent"), filepath.Join(dir, "stale")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"apt-get": fakeAptGet, "dpkg-query": fakeDpkgQuery, "modprobe": fakeModprobe} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("FAKE_PKG", dir)
	lock := filepath.Join(dir, "lock-frontend")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	oldLocks, oldPoll, oldBackoff, oldEUID := dpkgLocks, lockPoll, retryBackoff, provisionEUID
	dpkgLocks, lockPoll, retryBackoff, provisionEUID = []string{lock}, 20*time.Millisecond, time.Millisecond, func() int { return 0 }
	t.Cleanup(func() { dpkgLocks, lockPoll, retryBackoff, provisionEUID = oldLocks, oldPoll, oldBackoff, oldEUID })
	srv, err := New(Options{WorkDir: filepath.Join(dir, "work"), Hash: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return dir, srv
}

func touch(t *testing.T, path ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(path...), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func callProvision(t *testing.T, srv *Server, ctx context.Context, p proto.ProvisionParams) (proto.ProvisionResult, *proto.Error) {
	t.Helper()
	raw, _ := json.Marshal(p)
	res, err := srv.provision(ctx, nil, raw)
	if err != nil {
		var pe *proto.Error
		if !errors.As(err, &pe) {
			t.Fatalf("provision: not a proto error: %v", err)
		}
		return proto.ProvisionResult{}, pe
	}
	return res.(proto.ProvisionResult), nil
}

func calls(t *testing.T, dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " |"))
}

func TestProvisionFake(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, dir string)
		pkgs      []string
		uid       int
		wantCode  string
		wantMsg   []string // substrings of the error message
		installed []string
		present   []string
		updated   bool
		noCalls   bool // the manager never ran
	}{
		{name: "installs what is missing", pkgs: []string{"perftest", "tcpdump"},
			setup:     func(t *testing.T, dir string) { touch(t, dir, "installed", "tcpdump") },
			installed: []string{"perftest"}, present: []string{"tcpdump"}},
		{name: "nothing missing runs no manager", pkgs: []string{"tcpdump"},
			setup:   func(t *testing.T, dir string) { touch(t, dir, "installed", "tcpdump") },
			present: []string{"tcpdump"}, noCalls: true},
		{name: "stale index is refreshed once", pkgs: []string{"perftest"},
			setup:     func(t *testing.T, dir string) { touch(t, dir, "stale", "perftest") },
			installed: []string{"perftest"}, updated: true},
		{name: "missing package is named", pkgs: []string{"perftest", "no-such-tool"},
			setup:    func(t *testing.T, dir string) { touch(t, dir, "absent", "no-such-tool") },
			wantCode: proto.CodeNotFound, wantMsg: []string{"have no no-such-tool", "after refreshing"}},
		{name: "index refresh unreachable says so", pkgs: []string{"perftest"},
			setup: func(t *testing.T, dir string) {
				touch(t, dir, "stale", "perftest")
				touch(t, dir, "update_unreachable")
			},
			wantCode: proto.CodeCommand, wantMsg: []string{"found no perftest", "could not reach the repositories", "Temporary failure resolving"}},
		{name: "mirror error then success", pkgs: []string{"perftest"},
			setup:     func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "fail_mirror"), []byte("1"), 0o644) },
			installed: []string{"perftest"}},
		{name: "mirror unreachable after retries", pkgs: []string{"perftest"},
			setup:    func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "fail_mirror"), []byte("9"), 0o644) },
			wantCode: proto.CodeCommand, wantMsg: []string{"unreachable (3 attempts)"}},
		{name: "disk full", pkgs: []string{"perftest"},
			setup:    func(t *testing.T, dir string) { touch(t, dir, "disk_full") },
			wantCode: proto.CodeNoSpace, wantMsg: []string{"ran out of disk space"}},
		{name: "not root changes nothing", pkgs: []string{"perftest"}, uid: 1000,
			wantCode: proto.CodePermission, wantMsg: []string{"needs root", "uid 1000", "become = true"}, noCalls: true},
		{name: "option as package refused", pkgs: []string{"-oAPT::Get::Something=1"},
			wantCode: proto.CodeBadRequest, noCalls: true},
		// dnf, yum and zypper install an argument ending in .rpm as a
		// file of their working directory, unsigned, its scriptlets as
		// root (attack round 12, high).
		{name: "rpm file as package refused", pkgs: []string{"evil.rpm"},
			wantCode: proto.CodeBadRequest, wantMsg: []string{"package file"}, noCalls: true},
		{name: "RPM file in capitals refused", pkgs: []string{"perftest", "Evil.RPM"},
			wantCode: proto.CodeBadRequest, wantMsg: []string{"package file"}, noCalls: true},
		{name: "deb file as package refused", pkgs: []string{"evil.deb"},
			wantCode: proto.CodeBadRequest, wantMsg: []string{"package file"}, noCalls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, srv := fakePkgHost(t)
			if tc.uid != 0 {
				provisionEUID = func() int { return tc.uid }
			}
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			res, perr := callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: "debian", Packages: tc.pkgs, Modules: []string{"rdma_rxe"}})
			if tc.wantCode != "" {
				if perr == nil {
					t.Fatalf("provision succeeded: %+v; want %s", res, tc.wantCode)
				}
				if perr.Code != tc.wantCode {
					t.Errorf("code %q, want %q: %s", perr.Code, tc.wantCode, perr.Message)
				}
				for _, w := range tc.wantMsg {
					if !strings.Contains(perr.Message, w) {
						t.Errorf("message %q lacks %q", perr.Message, w)
					}
				}
			} else {
				if perr != nil {
					t.Fatalf("provision: %v (log %s)", perr, perr.Stderr)
				}
				if !slices.Equal(res.Installed, nonNil(tc.installed)) || !slices.Equal(res.Present, nonNil(tc.present)) || res.Updated != tc.updated {
					t.Errorf("installed %q present %q updated %v; want %q %q %v", res.Installed, res.Present, res.Updated, tc.installed, tc.present, tc.updated)
				}
				if !slices.Equal(res.Modules, []string{"rdma_rxe"}) {
					t.Errorf("modules loaded %q", res.Modules)
				}
				for _, p := range tc.installed {
					if _, err := os.Stat(filepath.Join(dir, "installed", p)); err != nil {
						t.Errorf("%s not installed", p)
					}
				}
			}
			c := calls(t, dir)
			ranManager := slices.ContainsFunc(c, func(s string) bool { return s == "install" || s == "update" })
			if tc.noCalls && ranManager {
				t.Errorf("the package manager ran: %q", c)
			}
			if len(tc.installed) > 0 {
				env, _ := os.ReadFile(filepath.Join(dir, "env"))
				if !strings.Contains(string(env), "DEBIAN_FRONTEND=noninteractive") || !strings.Contains(string(env), "NEEDRESTART_MODE=a") {
					t.Errorf("apt-get env %q: want DEBIAN_FRONTEND=noninteractive and NEEDRESTART_MODE=a", env)
				}
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// holdLock takes an fcntl write lock on path, as apt does on
// /var/lib/dpkg/lock-frontend, says "locked" and holds it until its stdin
// closes.
func holdLock(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk); err != nil {
		return err
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// StartLockHolder starts this test binary as a real fcntl lock holder of
// path (another process: a process's own locks never conflict with it) and
// returns its pid and a func that releases the lock.
func startLockHolder(t *testing.T, path string) (int, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RLAB_AGENT_TEST_HELPER=holdlock", "RLAB_TEST_LOCKFILE="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("lock holder said %q", line)
	}
	release := func() { stdin.Close(); cmd.Wait() }
	t.Cleanup(release)
	return cmd.Process.Pid, release
}

// TestProvisionLockHeld: a real process holding the dpkg frontend lock is
// named, waited for within the bound, and the wait ends in an error naming
// it; released in time, the install goes on and says whom it waited for.
func TestProvisionLockHeld(t *testing.T) {
	t.Run("times out naming the holder", func(t *testing.T) {
		dir, srv := fakePkgHost(t)
		pid, _ := startLockHolder(t, dpkgLocks[0])
		_, perr := callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: "debian", Packages: []string{"perftest"}, LockWaitMs: 200})
		if perr == nil || perr.Code != proto.CodeTimeout {
			t.Fatalf("want a timeout error, got %v", perr)
		}
		if want := fmt.Sprintf("(pid %d) held %s", pid, dpkgLocks[0]); !strings.Contains(perr.Message, want) {
			t.Errorf("message %q does not name the holder (%q)", perr.Message, want)
		}
		if slices.Contains(calls(t, dir), "install") {
			t.Errorf("apt-get ran while the lock was held: %q", calls(t, dir))
		}
	})
	t.Run("waits and goes on", func(t *testing.T) {
		_, srv := fakePkgHost(t)
		pid, release := startLockHolder(t, dpkgLocks[0])
		go func() { time.Sleep(300 * time.Millisecond); release() }()
		res, perr := callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: "debian", Packages: []string{"perftest"}, LockWaitMs: 60_000})
		if perr != nil {
			t.Fatal(perr)
		}
		if !slices.Equal(res.Installed, []string{"perftest"}) || !strings.Contains(res.LockWait, fmt.Sprintf("(pid %d) held", pid)) {
			t.Errorf("installed %q lock wait %q", res.Installed, res.LockWait)
		}
	})
}

// TestProvisionInterrupted: cancelled while apt-get installs, the call lets
// it finish within the grace and says so.
func TestProvisionInterrupted(t *testing.T) {
	dir, srv := fakePkgHost(t)
	os.WriteFile(filepath.Join(dir, "sleep"), []byte("1"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !slices.Contains(calls(t, dir), "install") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, perr := callProvision(t, srv, ctx, proto.ProvisionParams{Family: "debian", Packages: []string{"perftest"}, GraceMs: 30_000})
	if perr == nil || !strings.Contains(perr.Message, "let finish its transaction") || !strings.Contains(perr.Message, "finished in time") {
		t.Fatalf("want the interruption said, got %v", perr)
	}
	if _, err := os.Stat(filepath.Join(dir, "installed", "perftest")); err != nil {
		t.Error("apt-get was not let finish")
	}
}

func TestProvisionUnknownFamily(t *testing.T) {
	_, srv := fakePkgHost(t)
	_, perr := callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: "arch", Packages: []string{"perftest"}})
	if perr == nil || perr.Code != proto.CodeUnsupported {
		t.Fatalf("want unsupported, got %v", perr)
	}
}

// FuzzProvisionOutput: what a package manager printed (host text) never
// makes the output readers panic, and the packages said missing are always
// among those asked for.
func FuzzProvisionOutput(f *testing.F) {
	f.Add("E: Unable to locate package perftest\n", "perftest tcpdump")
	f.Add("No match for argument: librdmacm-utils\nError: Unable to find a match: librdmacm-utils", "librdmacm-utils")
	f.Add("perftest\tinstall ok installed\nperftest:amd64\tdeinstall ok config-files\n", "perftest")
	f.Fuzz(func(t *testing.T, out, pkgList string) {
		pkgs := strings.Fields(pkgList)
		for _, n := range notFoundNames(out, pkgs) {
			if !slices.Contains(pkgs, n) {
				t.Fatalf("%q not asked for", n)
			}
		}
		says(out, outTransient)
		if line := firstMatchingLine(out, outUnreachable); (line != "") != says(out, outUnreachable) || line != "" && !strings.Contains(out, line) {
			t.Fatalf("firstMatchingLine = %q, says = %v", line, says(out, outUnreachable))
		}
	})
}

// TestPackageQueryOutput: which packages the package database says are on
// disk, from dpkg-query's status words (want, flag, state: dpkg-query(1),
// "the package status triplet") and rpm -q's names.
func TestPackageQueryOutput(t *testing.T) {
	pkgs := []string{"perftest", "tcpdump", "rdma-core"}
	for _, tt := range []struct {
		name, out string
		rpm       bool
		want      []string
	}{
		{"installed", "perftest\tinstall ok installed\ntcpdump\tinstall ok installed\n", false, []string{"perftest", "tcpdump"}},
		{"multiarch", "perftest:amd64\tinstall ok installed\n", false, []string{"perftest"}},
		// apt-mark hold: installed, and apt-get install says "already the
		// newest version"; taking it for missing made provision fail with
		// "apt-get exited 0 but perftest is not installed".
		{"held", "perftest\thold ok installed\n", false, []string{"perftest"}},
		{"marked for removal, still on disk", "perftest\tdeinstall ok installed\n", false, []string{"perftest"}},
		{"removed, config kept", "perftest\tdeinstall ok config-files\n", false, nil},
		{"unpacked, not configured", "perftest\tinstall ok unpacked\n", false, nil},
		{"not installed", "perftest\tunknown ok not-installed\n", false, nil},
		{"two architectures, one name", "perftest:amd64\tinstall ok installed\nperftest:i386\tinstall ok installed\n", false, []string{"perftest"}},
		{"not asked for", "bash\tinstall ok installed\n", false, nil},
		{"rpm", "perftest\npackage tcpdump is not installed\nrdma-core\n", true, []string{"perftest", "rdma-core"}},
		{"rpm twice", "perftest\nperftest\n", true, []string{"perftest"}},
	} {
		read := dpkgInstalled
		if tt.rpm {
			read = rpmInstalled
		}
		if got := read(tt.out, pkgs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q = %q, want %q", tt.name, tt.out, got, tt.want)
		}
	}
}

// FuzzPackageQuery: what dpkg-query and rpm -q printed (host text) gives
// only packages asked for, each once, and dpkg's only with a line of its
// own that says installed.
func FuzzPackageQuery(f *testing.F) {
	f.Add("perftest\tinstall ok installed\nperftest:amd64\tdeinstall ok config-files\n", "perftest tcpdump")
	f.Add("perftest\thold ok installed\nperftest:i386\tinstall ok installed\n", "perftest")
	f.Add("perftest\npackage tcpdump is not installed\n", "perftest tcpdump")
	f.Fuzz(func(t *testing.T, out, pkgList string) {
		pkgs := strings.Fields(pkgList)
		for _, read := range []func(string, []string) []string{dpkgInstalled, rpmInstalled} {
			got := read(out, pkgs)
			for i, n := range got {
				if !slices.Contains(pkgs, n) || slices.Contains(got[:i], n) {
					t.Fatalf("%q: %q not asked for or twice", out, got)
				}
			}
		}
		for _, n := range dpkgInstalled(out, pkgs) {
			said := false
			for line := range strings.SplitSeq(out, "\n") {
				w := strings.Fields(line)
				said = said || (strings.HasPrefix(line, n+"\t") || strings.HasPrefix(line, n+":")) && w[len(w)-1] == "installed"
			}
			if !said {
				t.Fatalf("%q: %s said installed", out, n)
			}
		}
	})
}

// Fake rpm, dnf and zypper: their messages are the real ones (rpm -q:
// "package NAME is not installed"; dnf 4: "No match for argument: NAME" and
// "Error: Unable to find a match: NAME"; zypper: "No provider of 'NAME'
// found." with exit 104).
const fakeRPM = `#!/bin/sh
shift; shift; shift; shift
rc=0
for p in "$@"; do
  if [ -e "$FAKE_PKG/installed/$p" ]; then echo "$p"; else echo "package $p is not installed"; rc=$((rc+1)); fi
done
exit $rc
`

const fakeDNF = `#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_PKG/calls"
case "$2" in
  makecache) echo "Metadata cache created."; exit 0 ;;
  install)
    shift 2
    for p in "$@"; do
      if [ -e "$FAKE_PKG/absent/$p" ]; then echo "No match for argument: $p"; echo "Error: Unable to find a match: $p" >&2; exit 1; fi
    done
    for p in "$@"; do echo "  Installing       : $p"; touch "$FAKE_PKG/installed/$p"; done ;;
  remove) shift 2; for p in "$@"; do rm -f "$FAKE_PKG/installed/$p"; done ;;
esac
`

const fakeZypper = `#!/bin/sh
echo "zypper $*" >> "$FAKE_PKG/calls"
case "$2" in
  refresh) echo "All repositories have been refreshed."; exit 0 ;;
  install)
    shift 3
    for p in "$@"; do
      if [ -e "$FAKE_PKG/absent/$p" ]; then echo "No provider of '$p' found." >&2; exit 104; fi
    done
    for p in "$@"; do echo "(1/1) Installing: $p"; touch "$FAKE_PKG/installed/$p"; done ;;
  remove) shift 2; for p in "$@"; do rm -f "$FAKE_PKG/installed/$p"; done ;;
esac
`

// TestProvisionRPMFamilies: the RHEL family's dnf (yum where dnf is
// missing) and SUSE's zypper get the argv below, are asked with rpm -q
// first, refresh once on a missing package, and name it.
func TestProvisionRPMFamilies(t *testing.T) {
	for _, tc := range []struct {
		family, manager string
		install, update string // the argv each runs, as its calls log shows
	}{
		{"rhel", "dnf", "dnf -y install perftest", "dnf -y makecache"},
		{"rhel", "yum", "yum -y install perftest", "yum -y makecache"},
		{"suse", "zypper", "zypper --non-interactive install --no-recommends perftest", "zypper --non-interactive refresh"},
	} {
		t.Run(tc.manager, func(t *testing.T) {
			dir, srv := fakePkgHost(t)
			bin := filepath.Join(dir, "bin")
			os.Remove(filepath.Join(bin, "apt-get"))
			body := fakeDNF
			if tc.manager == "zypper" {
				body = fakeZypper
			}
			os.WriteFile(filepath.Join(bin, "rpm"), []byte(fakeRPM), 0o755)
			os.WriteFile(filepath.Join(bin, tc.manager), []byte(body), 0o755)
			// Only the fakes: no real dnf or zypper of this machine.
			t.Setenv("PATH", bin+":/usr/bin:/bin")
			if _, err := exec.LookPath("dnf"); tc.manager == "yum" && err == nil {
				t.Skip("this machine has a dnf in /usr/bin")
			}
			res, perr := callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: tc.family, Packages: []string{"perftest"}})
			if perr != nil {
				t.Fatalf("%v\n%s", perr, perr.Stderr)
			}
			if res.Manager != tc.manager || !slices.Equal(res.Installed, []string{"perftest"}) {
				t.Errorf("%+v", res)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "calls"))
			if got := strings.TrimSpace(string(b)); got != tc.install {
				t.Errorf("argv %q, want %q", got, tc.install)
			}
			if !strings.Contains(res.Log, "rpm -q --qf %{NAME}\n -- perftest") {
				t.Errorf("log lacks the rpm query:\n%s", res.Log)
			}
			// A package the repositories lack: refreshed once, then named.
			os.Remove(filepath.Join(dir, "calls"))
			touch(t, dir, "absent", "librdmacm-utils")
			_, perr = callProvision(t, srv, context.Background(), proto.ProvisionParams{Family: tc.family, Packages: []string{"librdmacm-utils"}})
			if perr == nil || perr.Code != proto.CodeNotFound || !strings.Contains(perr.Message, "have no librdmacm-utils") {
				t.Fatalf("missing package: %v", perr)
			}
			b, _ = os.ReadFile(filepath.Join(dir, "calls"))
			if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 || lines[1] != tc.update {
				t.Errorf("calls %q: want install, %q, install", lines, tc.update)
			}
		})
	}
}

// TestProvisionManagerCwd: the package manager runs in /, not in the agent's
// working directory, which for a root agent is where the login user ran
// sudo: dnf, yum and zypper read an argument ending in .rpm as a file
// there (attack round 12, high).
func TestProvisionManagerCwd(t *testing.T) {
	t.Chdir(t.TempDir()) // as sudo leaves the agent in the user's folder
	out, _, _, err := runManager(context.Background(), []string{"/bin/pwd"}, nil, time.Second, &provLog{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "/" {
		t.Errorf("the package manager ran in %q; want /", got)
	}
}
