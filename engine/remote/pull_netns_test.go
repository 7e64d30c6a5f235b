package remote

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// On real OpenSSH with become: the agent runs as root for the login user,
// the bundle runs as that user (so a root-only file in the work dir is
// refused with a clear error instead of being read with root's rights),
// big files come by OpenSSH's sftp-server with 255 KiB reads.
func TestPullBecomeNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	h := bed.Hosts[0]
	d, err := sshx.NewDialer(bedOptions(bed, nil).SSH)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Dial(context.Background(), bedSpec(bed, h).Target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, _, err := freshAgent(t).Open(context.Background(), c, StartOptions{Host: h.Name, RunID: "pull-become", Become: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Hello.UID != 0 {
		t.Fatalf("agent runs as uid %d, want root (become)", a.Hello.UID)
	}
	u, err := user.Lookup(bed.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	files := map[string][]byte{"roce.pcap": content(7, 9<<20+11)}
	for i := 0; i < 200; i++ {
		files[filepath.Join("logs", "w"+strconv.Itoa(i)+".stdout")] = content(i, 100+i*13)
	}
	writeAll(t, a.Hello.WorkDir, files)
	for p := range files {
		os.Chown(filepath.Join(a.Hello.WorkDir, p), uid, gid)
	}
	os.Chown(filepath.Join(a.Hello.WorkDir, "logs"), uid, gid)
	// What a root process left behind without giving it to the user.
	os.WriteFile(filepath.Join(a.Hello.WorkDir, "root-only.log"), []byte("secret"), 0o600)
	defer os.RemoveAll(filepath.Join(bed.Home, ".cache", "rlab", "runs", "pull-become"))

	// The root agent lists everything, big files unhashed: the login
	// user's hash-only bundle sums them while they are copied.
	var l proto.FilesList
	if err := a.Call(context.Background(), proto.MethodFilesList, proto.FilesListOptions{HashMax: BundleMax}, &l); err != nil {
		t.Fatal(err)
	}
	// What a root process left in the user's work dir is not the user's:
	// the root agent leaves it out of the listing (SECURITY 72), so it is
	// never pulled.
	listed := l.Files
	if len(listed) != len(files) {
		t.Fatalf("listed %d files, want %d (root-only.log left out)", len(listed), len(files))
	}
	for _, f := range listed {
		if f.Path == "root-only.log" {
			t.Fatalf("the root agent listed root's own file for the user: %+v", f)
		}
	}
	sc, err := a.sftpClient()
	if err != nil {
		t.Fatal(err)
	}
	if got := readSize(sc); got != sftpBigRead {
		t.Errorf("read size against OpenSSH %d, want %d (limits@openssh.com)", got, sftpBigRead)
	}
	dst := t.TempDir()
	var last int64
	n, err := a.PullWith(context.Background(), listed, dst, PullOptions{Progress: func(_ string, done, _ int64) { last = done }})
	if err != nil {
		t.Fatalf("pull of the user's files: %v", err)
	}
	checkTree(t, dst, files)
	if n != last || n != int64(len(files["roce.pcap"]))+func() (s int64) {
		for p, b := range files {
			if p != "roce.pcap" {
				s += int64(len(b))
			}
		}
		return
	}() {
		t.Errorf("pulled %d bytes, progress said %d", n, last)
	}
}
