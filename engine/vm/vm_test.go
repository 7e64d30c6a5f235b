package vm

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestPlanLinks(t *testing.T) {
	m := func(name string, nets ...string) Machine {
		var ns []Network
		for _, n := range nets {
			ns = append(ns, Network{Name: n})
		}
		return Machine{Name: name, Networks: ns}
	}
	tests := []struct {
		name    string
		ms      []Machine
		want    map[string][]int
		wantErr string
	}{
		{"pair", []Machine{m("a", "rdma"), m("b", "rdma")}, map[string][]int{"rdma": {0, 1}}, ""},
		{"two links", []Machine{m("a", "x", "y"), m("b", "y"), m("c", "x")}, map[string][]int{"x": {0, 2}, "y": {0, 1}}, ""},
		{"lone nic", []Machine{m("a", "x"), m("b")}, map[string][]int{"x": {0}}, ""},
		{"three on one", []Machine{m("a", "x"), m("b", "x"), m("c", "x")}, map[string][]int{"x": {0, 1, 2}}, ""}, // through the network's switch (hub.go)
		{"twice", []Machine{m("a", "x", "x")}, nil, `vm "a": network "x" named twice`},
		{"one socket name", []Machine{m("a", "pair-a.b"), m("b", "pair-a_b")}, nil, `networks "pair-a.b" and "pair-a_b" would share the sockets`},
		{"a pair each", []Machine{m("s1", "pair-ana"), m("c1", "pair-ana"), m("s2", "pair-bo"), m("c2", "pair-bo")}, map[string][]int{"pair-ana": {0, 1}, "pair-bo": {2, 3}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links, err := planLinks(tt.ms)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]int{}
			for n, l := range links {
				got[n] = l.members
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("links (-want +got):\n%s", d)
			}
		})
	}
}

func TestNetworkFileGolden(t *testing.T) {
	var b strings.Builder
	for i, n := range []Network{
		{Name: "rdma", Address: "10.99.0.1/24"},
		{Name: "jumbo", Address: "10.98.0.2/24", MTU: 9000},
		{Name: "bare"},
	} {
		fmt.Fprintf(&b, "# %s\n%s\n", n.Name, networkFile(mac(i, i+1), n))
	}
	golden := filepath.Join("testdata", "network-files.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), b.String()); d != "" {
		t.Errorf("network files (-want +got):\n%s", d)
	}
}

func TestMACsDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		for nic := 0; nic < 4; nic++ {
			m := mac(i, nic)
			if seen[m] {
				t.Fatalf("mac %s repeated (vm %d nic %d)", m, i, nic)
			}
			seen[m] = true
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ib_write_bw", "ib_write_bw"},
		{"", "''"},
		{"sport = :18515", "'sport = :18515'"},
		{"it's", `'it'\''s'`},
		{"$(reboot)", "'$(reboot)'"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A pid that is not our qemu is never signalled, whatever the state file says.
func TestStopFromStateSparesOtherProcesses(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	st, err := procStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tests := []VMState{
		{Host: "right start time, not qemu", PID: cmd.Process.Pid, StartTime: st, PIDFile: "/x/qemu.pid"},
		{Host: "reused pid", PID: cmd.Process.Pid, StartTime: st + 1, PIDFile: "/x/qemu.pid"},
		{Host: "gone", PID: 0},
	}
	for _, vs := range tests {
		if isOurQEMU(vs) {
			t.Errorf("%s: taken for our qemu", vs.Host)
		}
	}
	if err := StopFromState(context.Background(), State{VMs: tests}, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("StopFromState signalled a process that is not its qemu: %v", err)
	}
}

// qmpPowerdown speaks QMP as qemu expects: greeting, capabilities, command,
// skipping events.
func TestQMPPowerdown(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "qmp.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan []string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintln(c, `{"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}}, "capabilities": ["oob"]}}`)
		var cmds []string
		r := bufio.NewScanner(c)
		for r.Scan() {
			cmds = append(cmds, r.Text())
			if len(cmds) == 2 {
				fmt.Fprintln(c, `{"event": "POWERDOWN", "timestamp": {"seconds": 1, "microseconds": 2}}`)
			}
			fmt.Fprintln(c, `{"return": {}}`)
			if len(cmds) == 2 {
				break
			}
		}
		got <- cmds
	}()
	if err := qmpPowerdown(context.Background(), sock); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"execute":"qmp_capabilities"}`, `{"execute":"system_powerdown"}`}
	if d := cmp.Diff(want, <-got); d != "" {
		t.Errorf("qmp commands (-want +got):\n%s", d)
	}
}

// Dial accepts exactly the host key rlab generated for the VM: a server with
// another key is refused (no trust on first use).
func TestDialVerifiesGeneratedHostKey(t *testing.T) {
	dir := t.TempDir()
	login, err := newKeyPair("login")
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(dir, "id_ed25519")
	if err := login.writeFiles(idFile); err != nil {
		t.Fatal(err)
	}
	given, err := newKeyPair("given")
	if err != nil {
		t.Fatal(err)
	}
	other, err := newKeyPair("other")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		served  *keyPair
		wantErr bool
	}{
		{"same key", given, false},
		{"other key", other, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveSSH(t, tt.served, login.public)
			s := &Set{VMs: []*VM{{Machine: Machine{Name: "a"}, Addr: addr, User: "root", IdentityFile: idFile,
				KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), HostKey: given.public}}}
			if err := s.writeKnownHosts(); err != nil {
				t.Fatal(err)
			}
			c, err := s.VMs[0].Dial(context.Background())
			if tt.wantErr {
				var ke *knownhosts.KeyError
				if !errors.As(err, &ke) {
					t.Fatalf("want a host key mismatch, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		})
	}
}

// serveSSH runs an in-process SSH server with hostKey that accepts authKey.
func serveSSH(t *testing.T, hostKey *keyPair, authKey ssh.PublicKey) string {
	t.Helper()
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(authKey.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostKey.signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				for ch := range chans {
					_ = ch.Reject(ssh.Prohibited, "no sessions")
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestDialQMPWaitsForListen: a monitor socket that is bound but not yet
// listening (QEMU between bind and listen on a busy host: the connect is
// refused) or not there yet is waited for within the timeout; a socket that
// never listens fails at the timeout.
func TestDialQMPWaitsForListen(t *testing.T) {
	for _, tt := range []struct {
		name   string
		bound  bool // bound at once, listening later
		listen bool // listens at all
	}{
		{"bound then listening", true, true},
		{"absent then listening", false, true},
		{"never listening", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "qmp.sock")
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := os.NewFile(uintptr(fd), "qmp")
			defer f.Close()
			bind := func() {
				if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
					t.Error(err)
				}
			}
			if tt.bound {
				bind()
			}
			go func() {
				time.Sleep(300 * time.Millisecond)
				if !tt.bound {
					bind()
				}
				if !tt.listen {
					return
				}
				if err := syscall.Listen(fd, 1); err != nil {
					t.Error(err)
					return
				}
				l, err := net.FileListener(f)
				if err != nil {
					t.Error(err)
					return
				}
				defer l.Close()
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				fmt.Fprintln(c, `{"QMP": {"version": {}, "capabilities": []}}`)
				r := bufio.NewScanner(c)
				for r.Scan() {
					fmt.Fprintln(c, `{"return": {}}`)
				}
			}()
			q, err := dialQMP(context.Background(), sock, 2*time.Second)
			if tt.listen {
				if err != nil {
					t.Fatalf("dialQMP: %v, want it to wait for the listen", err)
				}
				q.Close()
				return
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dialQMP on a socket that never listens: %v, want connection refused at the timeout", err)
			}
		})
	}
}
