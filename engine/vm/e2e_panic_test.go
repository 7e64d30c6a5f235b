package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// panicLab runs one ib_write_bw for minutes between two local VMs, long
// enough that the test can crash the server's guest in its middle.
const panicLab = `lab "guest-panic" {
  description = "a server VM whose kernel panics under a workload"
}

host "server" {
  vm {
    network "rdma" { address = "10.99.0.1/24" }
  }
}

host "client" {
  vm {
    network "rdma" { address = "10.99.0.2/24" }
  }
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

workload "long" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = [65536]
  duration = "240s"
  timeout  = "8m"
}
`

// TestE2EGuestPanic: while a workload runs, the server VM's kernel panics
// (sysrq c, as the trixie guest's rdma_rxe did on its own in CI's failed
// stop 36; panic=-1 and -no-reboot take qemu with it). rlab must end the
// client's wait at once (the workload fails, it does not run to its
// duration or time out), say that the server's VM stopped because its
// guest's kernel panicked, quoting the panic from its console, and exit 2
// (infrastructure); no qemu is left.
func TestE2EGuestPanic(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	dir := t.TempDir()
	labPath := filepath.Join(dir, "guest-panic.hcl")
	if err := os.WriteFile(labPath, []byte(panicLab), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	keepOnFailure(t, out)
	cmd := rlabCommand(ctx, t, rlabLimit, bin, "run", "--out", out, labPath)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The workload is under way once its step started and the client
	// has run a few seconds.
	started := false
	for !started {
		select {
		case err := <-done:
			t.Fatalf("rlab run ended before the workload started: %v\n%s", err, output.String())
		case <-time.After(time.Second):
		}
		started = workloadStarted(filepath.Join(out, "events.jsonl"), "long")
	}
	time.Sleep(10 * time.Second)
	crashed := time.Now()
	if err := crashGuest(ctx, filepath.Join(out, "state.json"), "server"); err != nil {
		t.Fatalf("crash the server's guest: %v", err)
	}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatalf("rlab run did not end: %s", output.String())
	}
	after := time.Since(crashed)
	t.Logf("rlab run ended %s after the guest's crash:\n%s", after.Round(time.Second), output.String())
	checkNoQEMU(t, out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("rlab run: %v, want exit 2 (infrastructure)", err)
	}
	for _, want := range []string{`host "server": its VM stopped`, "the guest's kernel panicked", "sysrq triggered crash", "vm/server/console.log"} {
		if !strings.Contains(output.String(), want) {
			t.Errorf("rlab's output does not say %q", want)
		}
	}
	b, rerr := os.ReadFile(filepath.Join(out, "results.json"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var res struct {
		Workloads []struct {
			Workload string `json:"name"`
			Status   string `json:"status"`
			Error    string `json:"error"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Workloads {
		if w.Workload != "long" {
			continue
		}
		found = true
		if w.Status != "failed" || !strings.Contains(w.Error, `host "server"`) || !strings.Contains(w.Error, "lost") {
			t.Errorf("workload long: %s: %s; want failed, naming the server's lost agent", w.Status, w.Error)
		}
	}
	if !found {
		t.Errorf("results.json has no workload long: %s", b)
	}
	if after >= 240*time.Second {
		t.Errorf("the run ended %s after the crash: it ran the workload's duration out", after)
	}
}

// workloadStarted says whether a run's events hold the start of workload w.
func workloadStarted(events, w string) bool {
	f, err := os.Open(events)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct{ Type, Workload string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "step.start" && e.Workload == w {
			return true
		}
	}
	return false
}

// crashGuest logs in to a run's VM as its state.json says (the run's key,
// the host key rlab made for it) and has its kernel panic.
func crashGuest(ctx context.Context, state, host string) error {
	b, err := os.ReadFile(state)
	if err != nil {
		return err
	}
	var st struct {
		Hosts []struct {
			Name         string `json:"name"`
			Address      string `json:"address"`
			Port         int    `json:"port"`
			User         string `json:"user"`
			IdentityFile string `json:"identity_file"`
			KnownHosts   string `json:"known_hosts"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	for _, h := range st.Hosts {
		if h.Name != host {
			continue
		}
		key, err := os.ReadFile(h.IdentityFile)
		if err != nil {
			return err
		}
		signer, err := ssh.ParsePrivateKey(key)
		if err != nil {
			return err
		}
		hk, err := knownhosts.New(h.KnownHosts)
		if err != nil {
			return err
		}
		c, err := ssh.Dial("tcp", net.JoinHostPort(h.Address, strconv.Itoa(h.Port)), &ssh.ClientConfig{
			User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk, Timeout: 30 * time.Second,
		})
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		// The session dies with the guest: its end is no answer.
		go s.Run("echo c > /proc/sysrq-trigger")
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return nil
	}
	return errors.New("no host " + host + " in " + state)
}
