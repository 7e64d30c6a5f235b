package remote

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// TestOpenStalledHost: a host that completes login and then never answers
// a channel open, or never answers the exec request, is given up on after
// the limit (StartOptions.CallTimeout here; 30s by default) with an error
// naming the step, and its connection is closed. Keepalives are answered
// all along (issue 24, high 3: Open waited for good).
func TestOpenStalledHost(t *testing.T) {
	cases := []struct {
		name  string
		stage func(*sshtest.Server)
		want  string
	}{
		{"channel open", func(s *sshtest.Server) { s.StallOpens.Store(true) }, "start agent: open session: no answer within 1s"},
		{"exec request", func(s *sshtest.Server) { s.StallExec.Store(true) }, "start agent: start command: no answer within 1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, "")
			tc.stage(h.srv)
			ag := agentsOf(fakeAgent(t))
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, _, err := ag.Open(context.Background(), h.c, StartOptions{Host: "h", RunID: "r1", CallTimeout: time.Second})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, sshx.ErrStalled) {
					t.Errorf("err %v, want %q (ErrStalled)", err, tc.want)
				}
				if el := time.Since(start); el > 10*time.Second {
					t.Errorf("took %s", el)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Open still waits after 30s")
			}
			select {
			case <-h.c.Gone():
			case <-time.After(5 * time.Second):
				t.Error("the connection was left open")
			}
		})
	}
}

// TestCloseSFTPBounded: closing an SFTP client waits for its reader, and
// against OpenSSH a reader the host never answers does not end when the
// session's input closes (issue 24: teardown after Ctrl-C blocked in
// sftp.Client.Close for good). closeSFTP closes the connection after
// sftpCloseWait, which ends the reader.
func TestCloseSFTPBounded(t *testing.T) {
	srvR, cliW := io.Pipe() // what the client sends
	cliR, srvW := io.Pipe() // what the server answers
	go func() {
		// Answer the init with version 3, then read everything and
		// answer nothing, never closing.
		var hdr [4]byte
		io.ReadFull(srvR, hdr[:])
		io.CopyN(io.Discard, srvR, int64(binary.BigEndian.Uint32(hdr[:])))
		srvW.Write([]byte{0, 0, 0, 5, 2, 0, 0, 0, 3})
		io.Copy(io.Discard, srvR)
	}()
	sc, err := sftp.NewClientPipe(cliR, cliW)
	if err != nil {
		t.Fatal(err)
	}
	aborted := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		closeSFTP(sc, func() { close(aborted); srvW.Close() })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(sftpCloseWait + 10*time.Second):
		t.Fatal("closeSFTP still waits")
	}
	select {
	case <-aborted:
	default:
		t.Error("returned without closing the connection")
	}
	if el := time.Since(start); el < sftpCloseWait {
		t.Errorf("returned after %s, before the reader could end by itself", el)
	}
}

// TestInstallDripEnds: a host whose install session prints a byte now and
// then, each inside the limit on silence, is cut off once the install has
// taken installWhole limits in all (SECURITY 141): each byte renewed the
// limit, and 256 KiB of output allowed at a byte a second kept Open for
// three days (a byte a minute: half a year). Its end closes the session
// (this server then ends it; with OpenSSH the connection is closed
// CancelGrace later, as at Ctrl-C: TestInterruptStalledHostNetns).
func TestInstallDripEnds(t *testing.T) {
	home := t.TempDir()
	shell := sshtest.ShellHandler(home)
	drip := func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		if !strings.Contains(cmd, "read -r op h") { // not the install's session
			return shell(cmd, stdin, stdout, stderr)
		}
		for {
			if _, err := stdout.Write([]byte(" ")); err != nil {
				return 1
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	h := newHostWith(t, home, drip)
	ag := agentsOf(fakeAgent(t))
	done := make(chan error, 1)
	go func() {
		_, _, err := ag.Open(context.Background(), h.c, StartOptions{Host: "h", RunID: "r1", CallTimeout: time.Second})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "took more than 10s in all") {
			t.Errorf("err %v, want the install cut off after 10s in all", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("Open still waits after 40s on a host that drips its output")
	}
}
