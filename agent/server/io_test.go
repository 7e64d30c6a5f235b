package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

func TestTCPTransfer(t *testing.T) {
	c, _ := startAgent(t, Options{})
	var serving proto.TCPServing
	c.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx", Addr: "127.0.0.1"}, &serving)
	if serving.Port == 0 {
		t.Fatal("no port")
	}
	const n = 48<<20 + 12345 // not a multiple of the chunk size
	send := c.send(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx", Addr: "127.0.0.1", Port: serving.Port, Bytes: n})
	id := send.ID
	var rx proto.TCPResult
	c.mustCall(proto.MethodTCPWait, proto.TCPWaitParams{Handle: "rx"}, &rx)
	var tx proto.TCPResult
	if e := c.wait(send, &tx); e != nil {
		t.Fatalf("tcp.send: %v", e)
	}
	for _, r := range []proto.TCPResult{rx, tx} {
		if r.Bytes != n || r.Seconds <= 0 || r.MiBps <= 0 || r.Gbps <= 0 {
			t.Errorf("result %+v, want %d bytes with rates", r, n)
		}
		if got := r.Gbps / r.MiBps; got < 0.0083 || got > 0.0085 { // 8*2^20/1e9
			t.Errorf("Gb/s and MiB/s disagree: %+v", r)
		}
	}
	// The sender reads its connection's retransmissions (TCP_INFO): none
	// expected over lo, but read, so never absent; the receiver has none.
	if tx.TotalRetrans == nil || rx.TotalRetrans != nil {
		t.Errorf("tcpi_total_retrans: sender %v, receiver %v; want the sender's read, the receiver's absent", tx.TotalRetrans, rx.TotalRetrans)
	}
	if len(c.eventsFor(id)) == 0 {
		t.Error("no progress events from tcp.send")
	}
	// The listener is gone once the transfer is done.
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(serving.Port))); err == nil {
		conn.Close()
		t.Error("still listening after the transfer")
	}
	// proc.stop on a finished tcp.serve handle: nothing was running.
	var stopped proto.ProcResult
	c.mustCall(proto.MethodProcStop, proto.ProcStopParams{Handle: "rx"}, &stopped)
	if stopped.Stopped || stopped.Handle != "rx" {
		t.Errorf("proc.stop of a finished tcp.serve = %+v", stopped)
	}
	if e := c.call(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx"}, nil); e == nil || e.Code != proto.CodeExists {
		t.Errorf("reused tcp.serve handle: %v", e)
	}
	if e := c.call(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx2", Addr: "127.0.0.1", Port: serving.Port, Bytes: 1}, nil); e == nil || e.Code != proto.CodeCommand {
		t.Errorf("send to a closed port: %v", e)
	}
}

// TestTCPServeStoppedByProcStop: proc.stop closes a listener by its handle.
func TestTCPServeStoppedByProcStop(t *testing.T) {
	c, _ := startAgent(t, Options{})
	var serving proto.TCPServing
	c.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "idle", Addr: "127.0.0.1"}, &serving)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcStop, proto.ProcStopParams{Handle: "idle"}, &r)
	if !r.Stopped || r.Argv[0] != "tcp.serve" {
		t.Errorf("proc.stop of a listening tcp.serve = %+v", r)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(serving.Port))); err == nil {
		conn.Close()
		t.Error("still listening after proc.stop")
	}
}

// TestTCPServeStoppedByCleanup: a listener nobody connects to is closed by
// cleanup, and its waiter is answered.
func TestTCPServeStoppedByCleanup(t *testing.T) {
	c, _ := startAgent(t, Options{})
	var serving proto.TCPServing
	c.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "idle", Addr: "127.0.0.1"}, &serving)
	waitCall := c.send(proto.MethodTCPWait, proto.TCPWaitParams{Handle: "idle"})
	var res proto.CleanupResult
	c.mustCall(proto.MethodCleanup, proto.CleanupParams{}, &res)
	if d := cmp.Diff([]string{"idle"}, res.Stopped); d != "" {
		t.Errorf("stopped (-want +got):\n%s", d)
	}
	if e := c.wait(waitCall, nil); e == nil || e.Code != proto.CodeCommand {
		t.Errorf("tcp.wait on a stopped listener: %v", e)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(serving.Port))); err == nil {
		conn.Close()
		t.Error("still listening after cleanup")
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFilesListAndRead(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, srv := startAgent(t, Options{})
	wd := srv.WorkDir()
	writeTree(t, wd, map[string]string{"a.log": "alpha", "sub/b.json": `{"b":1}`})
	for name, target := range map[string]string{
		"escape":      filepath.Join(outside, "secret"),
		"escape-dir":  outside,
		"dotdot":      "../../../../../../../etc/passwd",
		"sub/inside":  "../a.log", // a symlink that stays inside is still not listed
		"dangling":    "/nonexistent/rlab",
		"sub/up-link": "..",
	} {
		if err := os.Symlink(target, filepath.Join(wd, name)); err != nil {
			t.Fatal(err)
		}
	}
	var list proto.FilesList
	c.mustCall(proto.MethodFilesList, proto.FilesListParams{}, &list)
	want := proto.FilesList{Root: wd, Files: []proto.FileInfo{
		{Path: "a.log", Size: 6, SHA256: sha([]byte("alpha\n")), Mode: 0o644},
		{Path: "sub/b.json", Size: 8, SHA256: sha([]byte("{\"b\":1}\n")), Mode: 0o644},
	}}
	if d := cmp.Diff(want, list); d != "" {
		t.Errorf("files.list (-want +got):\n%s", d)
	}
	c.mustCall(proto.MethodFilesList, proto.FilesListParams{Dir: "sub"}, &list)
	if len(list.Files) != 1 || list.Files[0].Path != "sub/b.json" {
		t.Errorf("files.list sub = %+v", list.Files)
	}

	for _, tt := range []struct {
		method string
		params any
		code   string
	}{
		{proto.MethodFilesList, proto.FilesListParams{Dir: ".."}, proto.CodeBadRequest},
		{proto.MethodFilesList, proto.FilesListParams{Dir: "/etc"}, proto.CodeBadRequest},
		{proto.MethodFilesList, proto.FilesListParams{Dir: "escape-dir"}, proto.CodeBadRequest},
		{proto.MethodFilesList, proto.FilesListParams{Dir: "nope"}, proto.CodeNotFound},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "escape"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "escape-dir/secret"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "dotdot"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "../x"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "/etc/passwd"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "sub"}, proto.CodeBadRequest},
		{proto.MethodFilesRead, proto.FilesReadParams{Path: "missing"}, proto.CodeNotFound},
	} {
		e := c.call(tt.method, tt.params, nil)
		if e == nil || e.Code != tt.code {
			t.Errorf("%s %+v: %v, want %s", tt.method, tt.params, e, tt.code)
		}
		if e != nil && strings.Contains(e.Message, "outside\n") {
			t.Errorf("error leaks the outside file: %v", e)
		}
	}

	var data proto.FileData
	c.mustCall(proto.MethodFilesRead, proto.FilesReadParams{Path: "sub/b.json"}, &data)
	if string(data.Data) != "{\"b\":1}\n" || data.Truncated || data.Size != 8 {
		t.Errorf("files.read = %+v", data)
	}
	c.mustCall(proto.MethodFilesRead, proto.FilesReadParams{Path: "sub/inside", MaxBytes: 3}, &data)
	if string(data.Data) != "alp" || !data.Truncated || data.Size != 6 {
		t.Errorf("files.read through an inside symlink, 3 bytes = %+v", data)
	}
}

func TestProcOutputFilesOwnedAndPrivate(t *testing.T) {
	c, srv := startAgent(t, Options{})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "w", Argv: []string{"true"}}, nil)
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "w"}, nil)
	for _, f := range []string{"w.stdout", "w.stderr"} {
		fi, err := os.Stat(filepath.Join(srv.WorkDir(), f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %o, want 600", f, fi.Mode().Perm())
		}
	}
}

// TestOwnerGetsEverything: a root agent working for a user (--owner) leaves
// every directory and file it creates owned by that user, tcpdump included
// (it drops to the user with -Z and writes into the user's work dir).
func TestOwnerGetsEverything(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const uid, gid = 65534, 65534 // nobody
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // workloads run as the owner: it must reach its work dir
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home") // the owner's home, as sudo finds it
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(home, ".cache", "rlab", "runs", "r1")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: gid}})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "w", Argv: []string{"true"}}, nil)
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "w"}, nil)
	paths := []string{filepath.Join(base, "home"), wd, filepath.Join(wd, "w.stdout"), filepath.Join(wd, "w.stderr")}
	if _, err := exec.LookPath("tcpdump"); err == nil {
		c.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "cap", Netdev: "lo", MaxBytes: 1 << 20}, nil)
		var res proto.CaptureResult
		c.mustCall(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "cap"}, &res)
		if len(res.Files) == 0 {
			t.Fatalf("no capture file: %s", res.Stderr)
		}
		paths = append(paths, filepath.Join(wd, res.Files[0].Path))
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	if fi, err := os.Stat(base); err == nil && fi.Sys().(*syscall.Stat_t).Uid == uid {
		t.Errorf("chowned %s, which existed before", base)
	}
}

// TestOwnerWorkDirRefused: a root agent working for a user refuses to take
// over what the user does not own: an existing foreign folder, a folder to be
// made under a foreign one (a symlink into /etc), a path with "..".
func TestOwnerWorkDirRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const uid, gid = 65534, 65534
	base := t.TempDir()
	home := filepath.Join(base, "home")
	foreign := filepath.Join(base, "etc")
	for _, d := range []string{home, foreign} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(foreign, filepath.Join(home, ".cache")); err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{
		foreign,                               // an existing folder of root's
		filepath.Join(home, ".cache", "rlab"), // made through a symlink into root's folder
		filepath.Join(home, "..", "etc"),      // ".." in the path
	} {
		if _, err := New(Options{WorkDir: wd, Hash: "h", Owner: &Owner{UID: uid, GID: gid}}); err == nil {
			t.Errorf("New(work dir %s) accepted", wd)
		}
	}
	fi, err := os.Stat(foreign)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s is now uid %d mode %o", foreign, st.Uid, fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(foreign, "rlab")); err == nil {
		t.Errorf("made a folder inside %s", foreign)
	}
}

// TestOwnerWorkDirBehindClosedFolder (attack round 15, host side): a root
// agent working for a user takes only a work dir the user could reach
// themselves. The sudoers rule's `*` matches ".." and the user owns the
// folders a symlink of theirs may lead through, and the agent checked only
// the last folder's owner (its ".." check ran on a path filepath.Abs had
// already cleaned): `--work-dir ~/.cache/rlab/runs/../../../../root/x/inner`,
// or ~/.cache/rlab/runs/lnk/inner with lnk -> /root/x, gave the user
// files.list, files.read and files.write as root in a folder of theirs
// under one they cannot search (cat: Permission denied).
func TestOwnerWorkDirBehindClosedFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const uid, gid = 65534, 65534
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // as a home directory's parents are
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home")
	closed := filepath.Join(base, "closed") // root's, 0700: the user cannot search it
	inner := filepath.Join(closed, "inner") // the user's
	for _, d := range []string{home, closed, inner} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{home, inner} {
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(closed, filepath.Join(home, "lnk")); err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{
		home + "/../closed/inner", // ".." through the rule's *, not cleaned away
		filepath.Join(home, "lnk", "inner"),
		filepath.Join(home, "lnk", "inner", "new"), // to be made there
	} {
		if _, err := New(Options{WorkDir: wd, Hash: "h", Owner: &Owner{UID: uid, GID: gid}}); err == nil {
			t.Errorf("New(work dir %s) accepted: the user cannot search %s", wd, closed)
		}
	}
}

// TestWorkloadsRunAsOwner: a root agent working for a user runs workloads as
// that user; only a process that asks for root (Become) keeps it.
func TestWorkloadsRunAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop privileges")
	}
	const uid, gid = 65534, 65534 // nobody
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // as a home directory's parents are
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(base, uid, gid); err != nil { // the owner's home
		t.Fatal(err)
	}
	wd := filepath.Join(base, "r1")
	c, _ := startAgent(t, Options{WorkDir: wd, Owner: &Owner{UID: uid, GID: gid}})
	for _, tc := range []struct {
		handle string
		become bool
		want   string
	}{
		{"as-user", false, "65534"},
	} {
		c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: tc.handle, Argv: []string{"id", "-u"}, Become: tc.become}, nil)
		var res proto.ProcResult
		c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: tc.handle}, &res)
		if got := strings.TrimSpace(res.Stdout); got != tc.want {
			t.Errorf("%s: id -u = %q (stderr %q), want %s", tc.handle, got, res.Stderr, tc.want)
		}
	}
}

// TestOwnerWorkloadsKeepOwnersPATH: a root agent working for a user pins
// root's PATH for what it runs as root (PinRootPATH, SECURITY 161), and the
// owner's workloads, which run as the owner, keep the PATH the agent was
// started with: they got root's, so a program in the user's own folder was
// not found and every workload saw root's folders. What keeps root (dmesg)
// is still root's.
func TestOwnerWorkloadsKeepOwnersPATH(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop privileges")
	}
	const uid, gid = 65534, 65534
	bin := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(t.TempDir(), "users-dmesg-ran")
	for name, script := range map[string]string{
		"mytool": "#!/bin/sh\necho \"$PATH\"\n",
		"dmesg":  "#!/bin/sh\nid -u > " + marker + "\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A folder of root's the owner cannot search (root's group can): root
	// does not look in it for the owner. An agent sudo starts has root's
	// group 0 among its groups (initgroups); this test may have none.
	groups, err := syscall.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgroups([]int{0}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setgroups(groups) })
	private := t.TempDir()
	if err := os.Chmod(private, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(private, "roots-own"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	userPATH := bin + ":" + private + ":/usr/bin:/bin"
	keepEnv(t)                 // PinRootPATH clears the environment: later tests get it back
	t.Setenv("PATH", userPATH) // what sudo without secure_path hands on
	owner := &Owner{UID: uid, GID: gid}
	if !PinRootPATH(owner) {
		t.Fatal("PinRootPATH did not pin as root for uid 65534")
	}
	base := t.TempDir()
	if err := os.Chown(base, uid, gid); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "r1"), Owner: owner})
	for _, tc := range []struct {
		name   string
		argv   []string
		become bool
		stdout string // "": not checked
		code   string // the error proc.start answers
	}{
		{"owners-program-by-name", []string{"mytool"}, false, userPATH, ""},
		{"owners-PATH", []string{"sh", "-c", "echo $PATH"}, false, userPATH, ""},
		{"roots-dmesg", []string{"dmesg"}, true, "", ""},
		{"in-a-folder-the-owner-cannot-search", []string{"roots-own"}, false, "", proto.CodeNotFound},
		// The owner's login names, as ssh and sudo -u give them (the
		// agent's environment keeps none of sudo's): nobody's.
		{"owners-login-env", []string{"sh", "-c", "echo $USER $LOGNAME $HOME ${SHELL:+shell}"}, false, ownerWords(t, uid), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.name
			e := c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: h, Argv: tc.argv, Become: tc.become}, nil)
			if tc.code != "" {
				if e == nil || e.Code != tc.code {
					t.Errorf("proc.start %q: %v, want %s", tc.argv, e, tc.code)
				}
				return
			}
			if e != nil {
				t.Fatalf("proc.start %q: %v", tc.argv, e)
			}
			var res proto.ProcResult
			c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: h}, &res)
			if got := strings.TrimSpace(res.Stdout); tc.stdout != "" && got != tc.stdout {
				t.Errorf("%q printed PATH %q (stderr %q), want %q", tc.argv, got, res.Stderr, tc.stdout)
			}
		})
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the dmesg in the owner's PATH ran (as uid %s), not root's", strings.TrimSpace(string(b)))
	}
	if got := os.Getenv("PATH"); got != RootPATH {
		t.Errorf("the agent's own PATH is %q, want root's %q", got, RootPATH)
	}
}

// TestRootOnlyForFixedCommands: a root agent working for a user keeps root
// only for the fixed commands the engine needs (dmesg), never for what a lab
// names, and never with environment a user chose (LD_PRELOAD).
func TestRootOnlyForFixedCommands(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// The owner can reach its folder, as a user reaches its home (work
	// folders are made as the owner).
	os.Chmod(filepath.Dir(base), 0o711)
	c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "w"), Owner: &Owner{UID: 65534, GID: 65534}})
	for _, tc := range []struct {
		name string
		argv []string
		env  []string
		ok   bool
	}{
		{"dmesg", []string{"dmesg"}, nil, true},
		{"id", []string{"id", "-u"}, nil, false},
		{"dmesg reading a file", []string{"dmesg", "-F", "/etc/shadow"}, nil, false},
		{"dmesg by path", []string{"/tmp/dmesg"}, nil, false},
		{"dmesg with LD_PRELOAD", []string{"dmesg"}, []string{"LD_PRELOAD=/tmp/x.so"}, false},
	} {
		pe := c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: strings.ReplaceAll(tc.name, " ", "-"), Argv: tc.argv, Env: tc.env, Become: true}, nil)
		if tc.ok && pe != nil {
			t.Errorf("%s: %v", tc.name, pe)
		}
		if !tc.ok && (pe == nil || pe.Code != proto.CodePermission) {
			t.Errorf("%s: err %v, want a permission error", tc.name, pe)
		}
	}
}

// TestWorkDirsMadeAsOwner: a root agent for a user and an agent of that
// user sharing the home make their work dirs under one new run folder at
// the same moment (two hosts, one home, NFS-style). The run folder is the
// user's from its first instant, so the user's side never finds a folder of
// root's it cannot write in.
func TestWorkDirsMadeAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 65534
	owner := &Owner{UID: uid, GID: uid}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, uid, uid); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		run := filepath.Join(base, fmt.Sprintf("run%d", i))
		user := exec.Command("mkdir", "-p", filepath.Join(run, "user-host"))
		user.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		var out bytes.Buffer
		user.Stderr = &out
		if err := user.Start(); err != nil {
			t.Fatal(err)
		}
		rootErr := mkdirAllOwned(filepath.Join(run, "root-host"), owner)
		if err := user.Wait(); err != nil {
			t.Fatalf("round %d: the user's mkdir beside the root agent's: %v: %s", i, err, out.String())
		}
		if rootErr != nil {
			t.Fatalf("round %d: root agent: %v", i, rootErr)
		}
		for _, d := range []string{run, filepath.Join(run, "root-host")} {
			fi, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != uid {
				t.Fatalf("%s owned by %d:%d, want %d:%d", d, st.Uid, st.Gid, uid, uid)
			}
		}
	}
}

// TestTCPServeOnlyWhereOwnerCould: a root agent working for a user listens
// only on ports that user could (found in attack round 10: the login user,
// speaking to the agent through the sudoers rule, had root listen on a
// privileged port, holding it against the host's own service); port 0 and
// unprivileged ports are served as before.
func TestTCPServeOnlyWhereOwnerCould(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	start := unprivilegedPortStart()
	if start <= 1 {
		t.Skipf("every port is unprivileged here (ip_unprivileged_port_start %d)", start)
	}
	// A privileged port free now (the test binds it as root first).
	port := 0
	for p := start - 1; p > start-200 && p > 0; p-- {
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			ln.Close()
			port = p
			break
		}
	}
	if port == 0 {
		t.Skip("no free privileged port")
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "w"), Owner: &Owner{UID: 65534, GID: 65534}})
	var res proto.TCPServing
	pe := c.call(proto.MethodTCPServe, proto.TCPServeParams{Handle: "low", Addr: "127.0.0.1", Port: port}, &res)
	if pe == nil || pe.Code != proto.CodePermission {
		t.Errorf("tcp.serve on privileged port %d for uid 65534: %v (serving %d), want a permission error", port, pe, res.Port)
	}
	if pe := c.call(proto.MethodTCPServe, proto.TCPServeParams{Handle: "any", Addr: "127.0.0.1"}, &res); pe != nil || res.Port < start {
		t.Errorf("tcp.serve on any port: %v (port %d)", pe, res.Port)
	}
}

// ownerWords is what `echo $USER $LOGNAME $HOME ${SHELL:+shell}` prints for
// uid from the user database.
func ownerWords(t *testing.T, uid int) string {
	t.Helper()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		t.Skipf("uid %d: %v", uid, err)
	}
	return u.Username + " " + u.Username + " " + u.HomeDir + " shell"
}

// TestLoginShell reads a user's shell from a passwd file, /bin/sh when it
// names none.
func TestLoginShell(t *testing.T) {
	f := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(f, []byte("root:x:0:0:root:/root:/bin/bash\nana:x:1000:1000:Ana,,,:/home/ana:/usr/bin/zsh\nbo:x:1001:1001::/home/bo:\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nodd:x:1\n"), 0o644)
	for name, want := range map[string]string{"ana": "/usr/bin/zsh", "root": "/bin/bash", "bo": "/bin/sh", "nobody": "/usr/sbin/nologin", "odd": "/bin/sh", "zed": "/bin/sh"} {
		if got := loginShell(f, name); got != want {
			t.Errorf("loginShell(%q) = %q, want %q", name, got, want)
		}
	}
	if got := loginShell(filepath.Join(t.TempDir(), "none"), "ana"); got != "/bin/sh" {
		t.Errorf("no passwd file: %q, want /bin/sh", got)
	}
}

// TestTCPSocketsAreTheOwners: a root agent working for a user makes the
// sockets of tcp.send and tcp.serve with the user's filesystem ids, so the
// kernel counts them as the user's (/proc/net/tcp's uid, what iptables'
// owner match reads): a firewall rule that filters by user holds for the
// user's transfers. tcp.send connected as uid 0 before (attack round 15).
func TestTCPSocketsAreTheOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 65534
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, uid, uid); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "w"), Owner: &Owner{UID: uid, GID: uid}})
	var serving proto.TCPServing
	c.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx", Addr: "127.0.0.1"}, &serving)
	if got := procNetTCPUID(serving.Port, "0A"); got != uid {
		t.Errorf("tcp.serve's listener on port %d is uid %d's, want %d's", serving.Port, got, uid)
	}
	// The receiver's side of tcp.send: a listener of the test's, which
	// reads the sender's socket owner while the connection is up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sender := make(chan int, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			sender <- -1
			return
		}
		defer conn.Close()
		sender <- procNetTCPUID(conn.RemoteAddr().(*net.TCPAddr).Port, "")
		io.Copy(io.Discard, conn)
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], 1)
		conn.Write(n[:])
	}()
	c.mustCall(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx", Addr: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Bytes: 1, TimeoutMs: 10000}, nil)
	if got := <-sender; got != uid {
		t.Errorf("tcp.send's socket is uid %d's, want %d's", got, uid)
	}
}

// procNetTCPUID is the uid /proc/net/tcp gives the socket whose local port
// is port, in state st (0A listening), or in any state but listening when
// st is "" (a sender that has sent its bytes may be past established:
// FIN_WAIT); -1 when none, -2 when the file cannot be read.
//
// It reads this thread's view (/proc/thread-self/net, the thread locked),
// not the process's: /proc/net is the netns of the main thread, which an
// earlier test of this package may have left in a namespace of its own
// with RLAB_NETNS=1 (enterNetns; TestNetnsTCPListening says the same), and
// the agent's sockets are in the netns of the threads that made them.
func procNetTCPUID(port int, st string) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := os.ReadFile("/proc/thread-self/net/tcp")
	if err != nil {
		return -2
	}
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 7 && strings.HasSuffix(f[1], want) && (f[3] == st || st == "" && f[3] != "0A") {
			if n, err := strconv.Atoi(f[7]); err == nil {
				return n
			}
		}
	}
	return -1
}

// TestMkdirAsOwnerWithoutRootsGroups: the folders a root agent makes for a
// user are made with the user's groups, not root's group 0: a folder of the
// user's behind one only group root may enter gets no new folder (round
// 16's low: it was made, the user's, though the user's own mkdir there was
// refused).
func TestMkdirAsOwnerWithoutRootsGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 65534
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	closed := filepath.Join(base, "closed")
	if err := os.Mkdir(closed, 0o750); err != nil { // root:root, group may enter
		t.Fatal(err)
	}
	inner := filepath.Join(closed, "inner")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(inner, uid, uid); err != nil {
		t.Fatal(err)
	}
	// Root's groups as sudo gives them (initgroups: 0 among them), which a
	// process started otherwise may lack.
	was, err := syscall.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgroups([]int{0}); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setgroups(was)
	if err := mkdirAs(filepath.Join(inner, "sub"), &Owner{UID: uid, GID: uid}); err == nil {
		t.Error("made a folder for uid 65534 behind a folder only group root may enter")
	}
	if _, err := os.Stat(filepath.Join(inner, "sub")); err == nil {
		t.Error("the folder is there")
	}
}
