package sectest

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestWorkDirSwapNetns is issue 24's high 1 as it was found: a login user
// that is not root, with passwordless sudo for the agent (become), logs in
// over real OpenSSH; the shipped agent runs as root for that user
// (--owner). After the hello the user renames the work dir away and puts a
// symlink to a root-only folder in its place. files.read, files.list and a
// workload's output file must not reach that folder: each says the work
// dir was replaced, and nothing is read from or created there.
func TestWorkDirSwapNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	u, err := user.Lookup(bed.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The attack aims at /etc; a root-only folder with a shadow file
	// stands in for it, so a failure here writes nothing into /etc.
	target := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "shadow"), []byte("root:$y$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	asUser := func(argv ...string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("as %s: %v: %v: %s", bed.User, argv, err, out)
		}
	}
	h := bed.Hosts[0]
	ran := false
	_, _, err = remote.Gather(context.Background(), []remote.Spec{{Become: true,
		Target: sshx.Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}}},
		remote.GatherOptions{
			SSH:    sshx.Options{KnownHosts: []string{bed.KnownHosts}, SSHConfig: "none", AgentSocket: "none", HandshakeTimeout: 10 * time.Second},
			Agents: remote.NewPackedAgents(dist.Packed),
			RunID:  "swap-netns",
			Then: func(ctx context.Context, host string, a *remote.Agent, f *proto.Facts) {
				ran = true
				if a.Hello.UID != 0 {
					t.Errorf("the agent runs as uid %d, want root (become)", a.Hello.UID)
				}
				wd := a.Hello.WorkDir
				moved := wd + ".moved"
				asUser("mv", wd, moved)
				asUser("ln", "-s", target, wd)
				defer func() { // the home is shared by every later test
					os.Remove(wd)
					os.Rename(moved, wd)
				}()
				c := a.RPC()
				d, err := rpc.Call(ctx, c, rpc.FilesRead, proto.FilesReadParams{Path: "shadow"})
				if err == nil || !strings.Contains(err.Error(), "replaced") || strings.Contains(string(d.Data), "secret") {
					t.Errorf("files.read shadow: %q, %v; want a refusal saying the work dir was replaced", d.Data, err)
				}
				l, err := rpc.Call(ctx, c, rpc.FilesList, proto.FilesListOptions{})
				if err == nil || !strings.Contains(err.Error(), "replaced") || len(l.Files) > 0 {
					t.Errorf("files.list: %d files, %v; want a refusal saying the work dir was replaced", len(l.Files), err)
				}
				if _, err := rpc.Call(ctx, c, rpc.FilesWrite, proto.FilesWriteParams{Path: "programs/p/evil", Data: []byte("x")}); err == nil || !strings.Contains(err.Error(), "replaced") {
					t.Errorf("files.write: %v; want a refusal saying the work dir was replaced", err)
				}
				_, err = rpc.Call(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: "wl.swap.exec.r0", Argv: []string{"echo", "x"}})
				if err == nil || !strings.Contains(err.Error(), "replaced") {
					t.Errorf("proc.start: %v; want a refusal saying the work dir was replaced", err)
				}
			},
		})
	if err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the host's agent never started")
	}
	ents, _ := os.ReadDir(target)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the root-only folder now holds %v, want only shadow", names)
	}
}
