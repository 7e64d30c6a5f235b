package remote

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// sftpStall is the ForceCommand of a host (real OpenSSH) whose SFTP
// subsystem hangs: sshd starts it and it never answers; every other
// command runs as asked.
const sftpStall = `#!/bin/bash
c="$SSH_ORIGINAL_COMMAND"
case "$c" in internal-sftp|sftp|*sftp-server*) exec sleep 100000 ;; esac
exec bash -c "$c"
`

// TestPullSFTPStalledNetns: on a host whose sftp subsystem hangs (real
// sshd), a pull of a big capture and small logs lands every file by the
// agent's bundle once SFTP has not answered for its limit, and a later
// pull from the host still works (issue 24's low: the stalled start
// closed the connection, so the big file and every later pull from the
// host, its small files, were lost).
func TestPullSFTPStalledNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	h := bed.Hosts[0]
	d, err := sshx.NewDialer(bedOptions(bed, nil).SSH)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ag := freshAgent(t)
	open := func(run string) (*Agent, func()) {
		c, err := d.Dial(context.Background(), bedSpec(bed, h).Target)
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := ag.Open(context.Background(), c, StartOptions{Host: h.Name, RunID: run, CallTimeout: 3 * time.Second})
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return a, func() { a.Close(); c.Close() }
	}
	// Installed while SFTP works (the install ships the agent by SFTP).
	_, done := open("sftp-stall-install")
	done()
	bed.ForceCommand(t, h, sftpStall)
	a, done := open("sftp-stall")
	defer done()
	defer os.RemoveAll(filepath.Join(bed.Home, ".cache", "rlab", "runs", "sftp-stall"))
	files := map[string][]byte{"roce.pcap": content(7, 3<<20+5)}
	for i := 0; i < 20; i++ {
		files[filepath.Join("logs", "w"+strconv.Itoa(i)+".stdout")] = content(i, 100+i*13)
	}
	writeAll(t, a.Hello.WorkDir, files)
	u, err := user.Lookup(bed.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for p := range files {
		os.Chown(filepath.Join(a.Hello.WorkDir, p), uid, gid)
	}
	os.Chown(filepath.Join(a.Hello.WorkDir, "logs"), uid, gid)
	var l proto.FilesList
	if err := a.Call(context.Background(), proto.MethodFilesList, proto.FilesListOptions{HashMax: BundleMax}, &l); err != nil {
		t.Fatal(err)
	}
	var bigs, smalls []proto.FileInfo
	for _, f := range l.Files {
		if f.Size > BundleMax {
			bigs = append(bigs, f)
		} else {
			smalls = append(smalls, f)
		}
	}
	start := time.Now()
	dst := t.TempDir()
	if _, err := a.PullWith(context.Background(), bigs, dst, PullOptions{}); err != nil {
		t.Errorf("pull of the capture: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s, want about the 3 s SFTP limit", took.Round(time.Millisecond))
	}
	if _, err := a.PullWith(context.Background(), smalls, dst, PullOptions{}); err != nil {
		t.Errorf("the later pull of the logs: %v", err)
	}
	checkTree(t, dst, files)
	if _, err := a.sftpClient(); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("sftp start: %v, want it given up on", err)
	}
}
