package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestWorkDirSwappedForSymlink is issue 24's attack without root: after the
// hello, the work dir is renamed away and a symlink to another folder (in
// the attack, /etc) put in its place. Nothing the agent does may reach that
// folder: files.read and files.list say the work dir was replaced; a new
// process is refused; a process started before the swap still writes, and
// is read back, in the folder the agent opened; the file operations
// themselves, asked directly, see only that folder.
func TestWorkDirSwappedForSymlink(t *testing.T) {
	base := t.TempDir()
	wd := filepath.Join(base, "w")
	moved := filepath.Join(base, "w.moved")
	other := filepath.Join(base, "etc")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "shadow"), []byte("root:secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A decoy where the late process's output would be, were it followed.
	if err := os.WriteFile(filepath.Join(other, "late.stdout"), []byte("decoy"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, srv := startAgent(t, Options{WorkDir: wd})
	// It writes, to its stdout and to a file in its working directory, only
	// once the swap is done.
	goFile := filepath.Join(base, "go")
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "late",
		Argv: []string{"sh", "-c", "while [ ! -e " + goFile + " ]; do sleep 0.02; done; echo late-output; echo made > made-late"}}, nil)

	if err := os.Rename(wd, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, wd); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	var data proto.FileData
	e := c.call(proto.MethodFilesRead, proto.FilesReadParams{Path: "shadow"}, &data)
	if e == nil || !strings.Contains(e.Message, "replaced") || strings.Contains(string(data.Data), "secret") {
		t.Errorf("files.read shadow after the swap: %v, data %q; want a refusal saying the work dir was replaced", e, data.Data)
	}
	var list proto.FilesList
	e = c.call(proto.MethodFilesList, proto.FilesListOptions{}, &list)
	if e == nil || !strings.Contains(e.Message, "replaced") || len(list.Files) > 0 {
		t.Errorf("files.list after the swap: %v, %d files; want a refusal saying the work dir was replaced", e, len(list.Files))
	}
	e = c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "wl.x", Argv: []string{"true"}}, nil)
	if e == nil || !strings.Contains(e.Message, "replaced") || !strings.Contains(e.Message, "a symlink") {
		t.Errorf("proc.start after the swap: %v; want a refusal saying the work dir is now a symlink", e)
	}

	var res proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "late"}, &res)
	if strings.TrimSpace(res.Stdout) != "late-output" {
		t.Errorf("the late process's stdout read back = %q, want its own output, not the decoy", res.Stdout)
	}

	// The operations themselves, as a check that came too early would let
	// them run: only the folder the agent opened.
	held := srv.workDir()
	f, err := held.create("wl.y.stdout", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := fileInfo(held.root, held.owner, "shadow"); err == nil {
		t.Error("fileInfo found shadow: the held work dir followed the swapped path")
	}
	if got, _ := held.readTail("late.stdout", 100); strings.TrimSpace(got) != "late-output" {
		t.Errorf("readTail late.stdout = %q, want the process's own output", got)
	}

	for _, n := range []string{"wl.y.stdout", "made-late", "late.stdout"} {
		if _, err := os.Lstat(filepath.Join(moved, n)); err != nil {
			t.Errorf("%s is not in the folder the agent opened: %v", n, err)
		}
	}
	ents, _ := os.ReadDir(other)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "late.stdout shadow" {
		t.Errorf("the symlink's target now holds %v, want only its own late.stdout and shadow", names)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "late.stdout")); string(b) != "decoy" {
		t.Errorf("the decoy was written over: %q", b)
	}
}

// TestWorkDirSymlinkRefused: a work dir that is a symlink when the agent
// starts is not followed, even to a folder of the same user's.
func TestWorkDirSymlinkRefused(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "w")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{WorkDir: link, Hash: "x"})
	if err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("New with a symlinked work dir: %v; want a refusal naming the symlink", err)
	}
}

// TestCaptureUserIsOwner: a root agent working for a user drops tcpdump to
// that user only (tcpdump opens its pcap files as the user it drops to, in
// the user's folder).
func TestCaptureUserIsOwner(t *testing.T) {
	s := &Server{opts: Options{Owner: &Owner{UID: 65534, GID: 65534}}}
	if _, err := s.captureUser("root"); err == nil || !strings.Contains(err.Error(), "that uid only") {
		t.Errorf("captureUser(root) for owner 65534: %v; want a refusal", err)
	}
	if u, err := s.captureUser(""); err == nil && u == "root" {
		t.Errorf("captureUser() for owner 65534 = root")
	}
}

// TestCaptureInHeldWorkDir: with become (a root agent for a user), tcpdump
// writes its pcap in the folder the agent opened, as the user, however the
// work dir's path is swapped while it runs; stopping it finds, renames and
// hashes the files there.
func TestCaptureInHeldWorkDir(t *testing.T) {
	const uid = 65534
	base := ownedCaptureBase(t, uid)
	wd, moved, other := filepath.Join(base, "w"), filepath.Join(base, "w.moved"), filepath.Join(base, "etc")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: uid}})
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 1 << 20}, nil)
	if err := os.Rename(wd, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, wd); err != nil {
		t.Fatal(err)
	}
	var res proto.CaptureResult
	c.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "lo"}, &res)
	if len(res.Files) != 1 || res.Files[0].Path != "lo.pcap" || res.Files[0].SHA256 == "" {
		t.Fatalf("capture files %+v; want lo.pcap, hashed", res.Files)
	}
	fi, err := os.Lstat(filepath.Join(moved, "lo.pcap"))
	if err != nil {
		t.Fatalf("lo.pcap is not in the folder the agent opened: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || fi.Mode().Perm() != 0o600 {
		t.Errorf("lo.pcap: uid %d mode %v, want %d and 0600", st.Uid, fi.Mode().Perm(), uid)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("the symlink's target got %d files, first %q", len(ents), ents[0].Name())
	}
}

// TestToolsCacheNotThroughSymlink: the tools cache is written in its folder
// by handle; a folder swapped for a symlink (to /etc, under become) gets
// nothing.
func TestToolsCacheNotThroughSymlink(t *testing.T) {
	base := t.TempDir()
	other := filepath.Join(base, "etc")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "agent")
	if err := os.Symlink(other, dir); err != nil {
		t.Fatal(err)
	}
	if err := saveToolsCache(filepath.Join(dir, "tools.json"), toolsCache{Version: toolsCacheVersion}); err == nil {
		t.Error("saveToolsCache wrote through a symlinked folder")
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("the symlink's target got %q", ents[0].Name())
	}
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := saveToolsCache(filepath.Join(real, "tools.json"), toolsCache{Version: toolsCacheVersion}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(real)
	if len(ents) != 1 || ents[0].Name() != "tools.json" {
		t.Errorf("cache folder holds %v, want tools.json alone", ents)
	}
	if fi, _ := os.Stat(filepath.Join(real, "tools.json")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tools.json: %v, want mode 0600", fi)
	}
}

// TestCaptureRingOutOfUsersReach: a root agent working for a user has
// tcpdump write its ring in a folder the user cannot reach by path, so the
// user can put no symlink at the name of the ring's next file. tcpdump
// opens that file after dropping to the user, following a symlink, and a
// tcpdump built with libcap-ng (Fedora, RHEL) raises CAP_DAC_OVERRIDE for
// each open of the ring: a symlink at lo.pcap1 to /root/.ssh/authorized_keys
// had root's file truncated and filled with the user's packets (found in
// attack round 10, high, from tcpdump's source). The user, as themselves,
// tries to put that symlink in tcpdump's working directory while it runs.
func TestCaptureRingOutOfUsersReach(t *testing.T) {
	const uid = 65534
	base := ownedCaptureBase(t, uid)
	target := filepath.Join(t.TempDir(), "authorized_keys") // root's
	if err := os.WriteFile(target, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(base, "w")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: uid}})
	var started proto.CaptureStarted
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 4 << 20}, &started)
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", started.PID))
	if err != nil {
		t.Fatal(err)
	}
	ln := exec.Command("ln", "-s", target, filepath.Join(cwd, "lo.pcap1"))
	ln.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := ln.CombinedOutput(); err == nil {
		t.Errorf("the user put a symlink in tcpdump's working directory %s (%s)", cwd, out)
	}
	var res proto.CaptureResult
	c.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "lo"}, &res)
	if len(res.Files) != 1 || res.Files[0].Path != "lo.pcap" {
		t.Fatalf("capture files %+v; want lo.pcap", res.Files)
	}
	fi, err := os.Lstat(filepath.Join(wd, "lo.pcap"))
	if err != nil {
		t.Fatalf("lo.pcap is not in the work dir: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || fi.Mode().Perm() != 0o600 {
		t.Errorf("lo.pcap: uid %d mode %v, want %d and 0600", st.Uid, fi.Mode().Perm(), uid)
	}
	ents, _ := os.ReadDir(wd)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".capture-") {
			t.Errorf("the capture's folder %s is left in the work dir", e.Name())
		}
	}
}

// TestCaptureRingMovedOutWhenTcpdumpEnded: a capture whose tcpdump ended
// on its own (killed, its netdev gone) and that nobody stopped still has
// its files moved out of the root-only ring folder when the agent ends:
// the agent's cleanup stopped only captures still running, so the folder
// (root's, 0700, the ring inside) stayed in the work dir, its files out of
// the user's reach and the run's `rm -rf` of the work dir, as the user,
// failed on it.
func TestCaptureRingMovedOutWhenTcpdumpEnded(t *testing.T) {
	const uid = 65534
	base := ownedCaptureBase(t, uid)
	wd := filepath.Join(base, "w")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: uid}})
	var started proto.CaptureStarted
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 4 << 20}, &started)
	if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The agent reaps it; then it ends (stdin closed) without capture.stop.
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", started.PID)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.close()
	ents, _ := os.ReadDir(wd)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".capture-") {
			t.Errorf("the capture's folder %s is left in the work dir", e.Name())
		}
	}
	rm := exec.Command("rm", "-rf", "--", wd)
	rm.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := rm.CombinedOutput(); err != nil {
		t.Errorf("the user's rm -rf of the work dir: %v: %s", err, out)
	}
}

// TestDownCleanupRemovesKilledAgentsCaptureFolder: a root agent working for
// a user, killed with SIGKILL during a capture, leaves its capture folder
// (root's, 0700) in the run's work dir, and the user's rm -rf of the work
// dir (what rlab down runs) failed on it. rlab down's own agent, root for
// the same user in the sibling .../<run>-down/<host>, removes it when asked
// to clean up the run; a root folder of another shape stays.
func TestDownCleanupRemovesKilledAgentsCaptureFolder(t *testing.T) {
	const uid = 65534
	base := ownedCaptureBase(t, uid)
	wd := filepath.Join(base, "r1", "h0")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	t.Setenv("RLAB_TEST_OWNER", "65534:65534") // the helper's environment
	in, out, done := helperServe(t, cmd, wd)
	c := newClient(t, in, out, done)
	var started proto.CaptureStarted
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 4 << 20}, &started)
	cmd.Process.Kill()
	done <- <-done // reaped; c's cleanup reads it again
	// tcpdump changed uid and lost its parent-death signal: down kills it
	// by its recorded pid.
	syscall.Kill(started.PID, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", started.PID)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	left := func() (n []string) {
		ents, _ := os.ReadDir(wd)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".capture-") {
				n = append(n, e.Name())
			}
		}
		return n
	}
	if len(left()) != 1 {
		t.Fatalf("capture folders in the killed agent's work dir: %q; want its one", left())
	}
	// Root's, but not a capture folder: a ring of root's.
	other := filepath.Join(wd, ".capture-x.1.1")
	if err := os.MkdirAll(filepath.Join(other, "ring"), 0o700); err != nil {
		t.Fatal(err)
	}

	dc, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "r1-down", "h0"), Owner: &Owner{UID: uid, GID: uid}})
	var res proto.CleanupResult
	dc.mustCall(proto.MethodCleanup, proto.CleanupParams{Run: "r1"}, &res)
	if got := left(); len(got) != 1 || got[0] != ".capture-x.1.1" {
		t.Errorf("capture folders after down's cleanup: %q; want only .capture-x.1.1 (its ring is root's)", got)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "ring is uid 0's") {
		t.Errorf("cleanup errors %q; want one saying .capture-x.1.1's ring is root's", res.Errors)
	}
	os.RemoveAll(other)
	rm := exec.Command("rm", "-rf", "--", wd)
	rm.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := rm.CombinedOutput(); err != nil {
		t.Errorf("the user's rm -rf of the work dir after down's cleanup: %v: %s", err, out)
	}
}

// TestDownCleanupKeepsLiveCaptureRenamed: down's agent tells a live
// agent's capture folder from a killed one's by what the folder holds, not
// by the pid in its name, which the login user can rename (the work dir is
// theirs): renamed to a dead pid (.capture-lo.0.1), a live agent's capture
// folder was removed by the cleanup, what tcpdump wrote in it with it, and
// the capture's stop failed (attack round 13). Now the folder stays, the
// stop moves out the capture's file, and leaves nothing the user cannot
// remove.
func TestDownCleanupKeepsLiveCaptureRenamed(t *testing.T) {
	const uid = 65534
	base := ownedCaptureBase(t, uid)
	wd := filepath.Join(base, "r1", "h0")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: uid}})
	var started proto.CaptureStarted
	c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "lo", Netdev: "lo", Filter: "udp port 9", MaxBytes: 4 << 20}, &started)
	ents, _ := os.ReadDir(wd)
	var live string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".capture-") {
			live = e.Name()
		}
	}
	if live == "" {
		t.Fatalf("no capture folder in %s", wd)
	}
	// The user renames it to a pid no agent has.
	renamed := filepath.Join(wd, ".capture-lo.0.1")
	mv := exec.Command("mv", "-T", "--", filepath.Join(wd, live), renamed)
	mv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := mv.CombinedOutput(); err != nil {
		t.Fatalf("the user's mv of the capture folder: %v: %s", err, out)
	}
	dc, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "r1-down", "h0"), Owner: &Owner{UID: uid, GID: uid}})
	var res proto.CleanupResult
	dc.mustCall(proto.MethodCleanup, proto.CleanupParams{Run: "r1"}, &res)
	if _, err := os.Lstat(renamed); err != nil {
		t.Errorf("down's cleanup removed a live capture's folder renamed to a dead pid: %v", err)
	}
	if len(res.Errors) != 0 {
		t.Errorf("cleanup errors %q; want none (a live capture is not an error)", res.Errors)
	}
	// Its stop moves out what tcpdump wrote (down's cleanup also ended the
	// run's processes, tcpdump among them).
	var stopped proto.CaptureResult
	c.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "lo"}, &stopped)
	if len(stopped.Files) != 1 || stopped.Files[0].Path != "lo.pcap" {
		t.Errorf("the capture's stop after down's cleanup: %+v, want its file lo.pcap", stopped)
	}
	if _, err := os.Lstat(filepath.Join(wd, "lo.pcap")); err != nil {
		t.Errorf("the capture's file is not in the work dir: %v", err)
	}
	rm := exec.Command("rm", "-rf", "--", wd)
	rm.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := rm.CombinedOutput(); err != nil {
		t.Errorf("the user's rm -rf of the work dir after the stop: %v: %s", err, out)
	}
}

// ownedCaptureBase skips a test without root or tcpdump, and makes a folder
// uid owns (its parent searchable) for a capture by a root agent working
// for uid.
func ownedCaptureBase(t *testing.T, uid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for tcpdump")
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("needs tcpdump")
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, uid, uid); err != nil {
		t.Fatal(err)
	}
	return base
}
