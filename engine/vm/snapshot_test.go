package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestIdentityScript: what makes a restored guest this run's VM names each
// data NIC's MAC, MTU and address, the hostname, the clock and the run's key;
// a value that could leave its quotes is refused, never run.
func TestIdentityScript(t *testing.T) {
	nets := []Network{{Name: "a", Address: "10.99.0.2/24"}, {Name: "b", MTU: 9000}}
	s, err := identityScript("client", []string{mac(1, 1), mac(1, 2)}, nets, []byte("ssh-ed25519 AAAA rlab-run\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		clockScript,
		"hostname 'client'",
		"ip link set dev eth1 address '52:54:00:11:00:01' mtu 1500 addrgenmode none",
		"ip addr add 10.99.0.2/24 dev eth1",
		"ip link set dev eth2 address '52:54:00:12:00:01' mtu 9000 addrgenmode none",
		"printf '%s\\n' 'ssh-ed25519 AAAA rlab-run' > /root/.ssh/authorized_keys.rlab",
		"> /dev/urandom",
		"mv -f /etc/machine-id.rlab /etc/machine-id",
		"systemctl try-restart systemd-udevd.service",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	// Each restored guest gets its own machine-id (udev derives virtual
	// netdevs' MACs from it).
	idOf := func(script string) string {
		_, rest, _ := strings.Cut(script, "\nn=")
		id, _, _ := strings.Cut(rest, ";")
		return id
	}
	s2, err := identityScript("client", []string{mac(1, 1), mac(1, 2)}, nets, []byte("ssh-ed25519 AAAA rlab-run\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := idOf(s), idOf(s2); len(a) != 32 || a == b {
		t.Errorf("machine-ids %q and %q: want two different 32-hex ids", a, b)
	}
	if strings.Contains(s, "ip addr add") && strings.Count(s, "ip addr add") != 1 {
		t.Errorf("eth2 has no address, yet:\n%s", s)
	}
	for _, bad := range []struct {
		host string
		nets []Network
		ak   string
	}{
		{"a'b", nets, "k"},
		{"a", []Network{{Address: "10.0.0.1/24; reboot"}, {}}, "k"},
		{"a", nets, "k'; reboot; '"},
	} {
		if _, err := identityScript(bad.host, []string{mac(1, 1), mac(1, 2)}, bad.nets, []byte(bad.ak)); err == nil {
			t.Errorf("identityScript(%q, %v, %q) took it", bad.host, bad.nets, bad.ak)
		}
	}
}

// TestMeasureClock runs the guest's side of the clock exchange in real
// shells on this machine (bash, with $EPOCHREALTIME, and dash, which forks
// date): both read the host's own clock, so the offset found must be
// within the exchange's bound of zero; and the line the guest's date(1)
// gets moves a clock by that offset.
func TestMeasureClock(t *testing.T) {
	probe, _, _ := strings.Cut(clockScript, "IFS= read -r d\n")
	for _, sh := range []string{"bash", "dash"} {
		t.Run(sh, func(t *testing.T) {
			p, err := exec.LookPath(sh)
			if err != nil {
				t.Skipf("no %s here", sh)
			}
			cmd := exec.Command(p, "-c", probe)
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			off, err := measureClock(bufio.NewReader(out), in)
			in.Close()
			if werr := cmd.Wait(); err != nil || werr != nil {
				t.Fatalf("measureClock: %v; %s: %v", err, sh, werr)
			}
			// Both clocks are this machine's: the offset is within the
			// bound (plus the microsecond $EPOCHREALTIME rounds to).
			if d := off.Offset.Abs(); off.Within < 0 || d > off.Within+time.Millisecond {
				t.Errorf("offset %s, within %s: want |offset| <= within", off.Offset, off.Within)
			}
			t.Logf("%s: offset %s within %s", sh, off.Offset, off.Within)
		})
	}
	// The guest's date(1) moves its clock by the offset the host sent.
	if _, err := exec.LookPath("date"); err == nil {
		for _, d := range []time.Duration{90 * 24 * time.Hour, -1500 * time.Millisecond} {
			rel := fmt.Sprintf("%+.9f seconds", d.Seconds())
			before := time.Now()
			b, err := exec.Command("date", "-u", "-d", rel, "+%s.%N").Output()
			if err != nil {
				t.Fatalf("date -d %q: %v", rel, err)
			}
			got, err := parseEpoch(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if e := got.Sub(before.Add(d)); e < 0 || e > time.Second {
				t.Errorf("date -d %q: %s, want now%+v", rel, got, d)
			}
		}
	}
}

func TestParseEpoch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1795823706.287172", time.Unix(1795823706, 287172000), true},
		{"1795823706.287172123", time.Unix(1795823706, 287172123), true},
		{"1795823706", time.Unix(1795823706, 0), true},
		{"", time.Time{}, false},
		{"-5.1", time.Time{}, false},
		{"+5.1", time.Time{}, false},
		{"5.+1", time.Time{}, false},
		{"5.1234567890", time.Time{}, false},
		{"1795823706,287172", time.Unix(1795823706, 287172000), true}, // bash in a comma-decimal locale
		{"5,1.2", time.Time{}, false},
		{"5.1,2", time.Time{}, false},
		{"rlab-clock 5.1", time.Time{}, false},
	} {
		got, err := parseEpoch(tc.in)
		if (err == nil) != tc.ok || tc.ok && !got.Equal(tc.want) {
			t.Errorf("parseEpoch(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestSnapshotKey: a saved state is used only by VMs it fits.
func TestSnapshotKey(t *testing.T) {
	base := snapshotKey{Format: snapshotFormat, QEMU: "/usr/bin/qemu", QEMUVersion: "7.2", Image: "img", Accel: "tcg", MemoryMiB: 1024, CPUs: 1, NICs: 1}
	seen := map[string]string{base.id(): "base"}
	for name, k := range map[string]snapshotKey{
		"memory":   func() snapshotKey { k := base; k.MemoryMiB = 2048; return k }(),
		"cpus":     func() snapshotKey { k := base; k.CPUs = 2; return k }(),
		"nics":     func() snapshotKey { k := base; k.NICs = 2; return k }(),
		"qemu":     func() snapshotKey { k := base; k.QEMUVersion = "8.2"; return k }(),
		"image":    func() snapshotKey { k := base; k.Image = "img2"; return k }(),
		"accel":    func() snapshotKey { k := base; k.Accel = "kvm"; return k }(),
		"format":   func() snapshotKey { k := base; k.Format++; return k }(),
		"internet": func() snapshotKey { k := base; k.Internet = true; return k }(),
		"agent":    func() snapshotKey { k := base; k.Agent = "ab12"; return k }(),
		"agent2":   func() snapshotKey { k := base; k.Agent = "cd34"; return k }(),
	} {
		if o, dup := seen[k.id()]; dup {
			t.Errorf("%s: same id as %s", name, o)
		}
		seen[k.id()] = name
	}
	// The warmed agent is in the key only when there is one to warm.
	set := &Set{opts: Options{QEMU: "true", Agent: []byte("agent"), WarmAgent: []byte(`{"id":1,"method":"facts"}`)}}
	if k, err := set.keyFor(Machine{Image: &image.Image{Dir: "/x/img"}}); err != nil || len(k.Agent) != 64 {
		t.Errorf("warmed: agent %q (%v), want its sha256", k.Agent, err)
	}
	set.opts.WarmAgent = nil
	if k, err := set.keyFor(Machine{Image: &image.Image{Dir: "/x/img"}}); err != nil || k.Agent != "" {
		t.Errorf("not warmed: agent %q (%v), want none", k.Agent, err)
	}
	// A snapshot.json made for another key is not loaded.
	dir := t.TempDir()
	other := base
	other.MemoryMiB = 512
	b := []byte(`{"format":1,"memory_mib":512}`)
	if err := os.WriteFile(filepath.Join(dir, snapshotMeta), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSnapshot(dir, base); err == nil {
		t.Error("a snapshot of another key was loaded")
	}
}

// TestE2ERestore boots two VMs from a saved guest (building it first when
// the cache has none), then checks each restored VM is its own: MAC and
// address on eth1, hostname, clock, the run's login key (and not the
// snapshot's), the snapshot's pinned host key, and RDMA traffic between
// them over rxe. A second set restores from the cache; both times logged.
func TestE2ERestore(t *testing.T) {
	if os.Getenv("RLAB_VM_E2E") == "" {
		t.Skip("RLAB_VM_E2E=1 runs VM tests (root, QEMU)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	im, err := image.Ensure(ctx, image.DefaultRecipe(""), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := []Machine{
		{Name: "server", Slug: "server", Networks: []Network{{Name: "rdma", Address: "10.99.0.1/24"}}},
		{Name: "client", Slug: "client", Networks: []Network{{Name: "rdma", Address: "10.99.0.2/24"}}},
	}
	for round := 0; round < 2; round++ {
		t0 := time.Now()
		var progress []string
		set, err := Boot(ctx, ms, t.TempDir(), Options{Image: im, Progress: func(h, s string) { progress = append(progress, h+": "+s) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: both VMs up in %s: %s", round, time.Since(t0).Round(100*time.Millisecond), strings.Join(progress, "; "))
		func() {
			defer set.Shutdown(context.WithoutCancel(ctx))
			var ids, mvs []string
			for i, v := range set.VMs {
				if v.snap == nil {
					t.Fatalf("%s was booted, not restored: %s", v.Name, strings.Join(progress, "; "))
				}
				c, err := v.Dial(ctx)
				if err != nil {
					t.Fatalf("%s: the run's key and the pinned host key: %v", v.Name, err)
				}
				g := &guest{name: v.Name, c: c}
				if out := g.must(t, ctx, "cat", "/sys/class/net/eth1/address"); strings.TrimSpace(out) != mac(i, 1) {
					t.Errorf("%s eth1 MAC %q, want %s", v.Name, out, mac(i, 1))
				}
				if out := g.must(t, ctx, "ip", "-o", "-4", "addr", "show", "dev", "eth1"); !strings.Contains(out, ms[i].Networks[0].Address) {
					t.Errorf("%s eth1: %q, want %s", v.Name, out, ms[i].Networks[0].Address)
				}
				if out := g.must(t, ctx, "hostname"); strings.TrimSpace(out) != v.Slug {
					t.Errorf("%s hostname %q", v.Name, out)
				}
				// The clock: within 100 ms of this machine's, bracketed
				// by the exchange that reads it (the guest read its clock
				// between t1 and t2).
				for try := 0; try < 3; try++ {
					t1 := time.Now()
					out := g.must(t, ctx, "date", "+%s.%N")
					t2 := time.Now()
					gt, err := parseEpoch(strings.TrimSpace(out))
					if err != nil {
						t.Fatalf("%s date: %v", v.Name, err)
					}
					if gt.Before(t1.Add(-100*time.Millisecond)) || gt.After(t2.Add(100*time.Millisecond)) {
						t.Errorf("%s clock read %s, this machine's was %s to %s: more than 100 ms off", v.Name,
							gt.Format(time.StampMicro), t1.Format(time.StampMicro), t2.Format(time.StampMicro))
					}
					t.Logf("%s clock %+.1f ms from the middle of the %.1f ms it was read in", v.Name,
						float64(gt.Sub(t1.Add(t2.Sub(t1)/2)))/1e6, float64(t2.Sub(t1))/1e6)
				}
				runKey, err := os.ReadFile(v.IdentityFile + ".pub")
				if err != nil {
					t.Fatal(err)
				}
				if out := g.must(t, ctx, "cat", "/root/.ssh/authorized_keys"); strings.TrimSpace(out) != strings.TrimSpace(string(runKey)) {
					t.Errorf("%s authorized_keys: %q, want the run's key alone", v.Name, out)
				}
				// Its own machine-id, and so its own MAC for a virtual
				// netdev udev names (a macvlan of the same name on both
				// restored VMs had one MAC, and ARP between them failed).
				ids = append(ids, strings.TrimSpace(g.must(t, ctx, "cat", "/etc/machine-id")))
				g.must(t, ctx, "ip", "link", "add", "link", "eth1", "name", "mvtest", "type", "macvlan", "mode", "bridge")
				time.Sleep(time.Second) // udev sets the MAC just after the add
				mvs = append(mvs, strings.TrimSpace(g.must(t, ctx, "cat", "/sys/class/net/mvtest/address")))
				g.must(t, ctx, "ip", "link", "del", "mvtest")
				g.must(t, ctx, "rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1")
				c.Close()
			}
			if len(ids) == 2 && (ids[0] == ids[1] || mvs[0] == mvs[1]) {
				t.Errorf("restored VMs share machine-id %v or macvlan MAC %v", ids, mvs)
			}
			// The snapshot's login key no longer gets in.
			v := set.VMs[0]
			snapLogin := &VM{User: "root", Addr: v.Addr, KnownHosts: v.KnownHosts, IdentityFile: v.snap.Login}
			if c, err := snapLogin.Dial(ctx); err == nil {
				c.Close()
				t.Errorf("%s: the snapshot's login key still logs in", v.Name)
			}
			c, err := set.VMs[1].Dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g := &guest{name: "client", c: c}
			g.must(t, ctx, "ping", "-c", "2", "-W", "5", "10.99.0.1")
			srv, _ := set.VMs[0].Dial(ctx)
			defer srv.Close()
			sg := &guest{name: "server", c: srv}
			done := make(chan error, 1)
			go func() {
				_, _, err := sg.run(ctx, time.Minute, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "100")
				done <- err
			}()
			// Until the server listens (2 s of sleep was not always
			// enough under TCG on a busy host: "Couldn't connect").
			if err := sg.waitUntil(ctx, time.Minute, ":18515 ", "ss", "-Hltn"); err != nil {
				t.Fatal(err)
			}
			if out, serr, err := g.run(ctx, time.Minute, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "100", "10.99.0.1"); err != nil {
				t.Errorf("ibv_rc_pingpong between restored VMs: %v: %s %s", err, out, serr)
			} else {
				t.Logf("ibv_rc_pingpong between restored VMs: %s", strings.TrimSpace(out))
			}
			if err := <-done; err != nil {
				t.Errorf("ibv_rc_pingpong server: %v", err)
			}
		}()
	}
}

// TestRestoreWanted: VMs are restored unless Options.Boot or
// RLAB_VM_RESTORE=0 asks for a boot.
func TestRestoreWanted(t *testing.T) {
	for _, tc := range []struct {
		env  string
		boot bool
		want bool
	}{
		{"", false, true},
		{"", true, false},
		{"1", false, true},
		{"1", true, false},
		{"0", false, false},
	} {
		t.Setenv(RestoreEnv, tc.env)
		s := &Set{opts: Options{Boot: tc.boot}}
		if got := s.restoreWanted(); got != tc.want {
			t.Errorf("%s=%q Boot=%v: restore %v, want %v", RestoreEnv, tc.env, tc.boot, got, tc.want)
		}
		// A snapshot's own guest boots, whatever the environment says:
		// restoring it would wait on the lock its own build holds.
		tmpl := &Set{opts: Options{Boot: tc.boot, template: true}}
		if tmpl.restoreWanted() {
			t.Errorf("%s=%q: the snapshot's template would be restored", RestoreEnv, tc.env)
		}
	}
}

// TestKeepSnapshot: a restored guest that was only slow (sshd not answering
// by the deadline, its qemu still running) keeps its snapshot, as the
// restore failure is wrapped on its way up; a guest whose qemu exited, or
// whose identity did not apply, loses it.
func TestKeepSnapshot(t *testing.T) {
	slow := slowGuest{errors.New(`boot vm "server": sshd at 127.0.0.1:1 did not answer within 5m0s`)}
	for _, tc := range []struct {
		name string
		err  error
		keep bool
	}{
		{"slow", slow, true},
		{"slow, as bootWave wraps it", fmt.Errorf("%w: %w", errRestoreFailed, slow), true},
		{"qemu exited", fmt.Errorf("%w: %w", errRestoreFailed, errGuestDied), false},
		{"identity failed", fmt.Errorf("%w: %w", errRestoreFailed, errors.New("ip link set eth1 address: exit 1")), false},
		{"login timed out", fmt.Errorf("%w: log in with the run's key after the restore: ssh: handshake failed: %w", errRestoreFailed, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{"login refused", fmt.Errorf("%w: log in with the run's key after the restore: ssh: handshake failed: %w", errRestoreFailed, errors.New("ssh: unable to authenticate")), false},
		{"qemu exited, after a timeout", fmt.Errorf("%w: %w (%w)", errRestoreFailed, errGuestDied, os.ErrDeadlineExceeded), false},
		// resume's errors: a refused state loses the snapshot, a monitor
		// that did not answer keeps it.
		{"state refused", fmt.Errorf("%w: %w: %w", errRestoreFailed, errBadRestore, errors.New(`after the restore the guest is "internal-error"`)), false},
		{"monitor silent", fmt.Errorf("%w: %w", errRestoreFailed, slowGuest{errors.New("qmp: dial unix qmp.sock: i/o timeout")}), true},
	} {
		if got := keepSnapshot(tc.err); got != tc.keep {
			t.Errorf("%s: keep %v, want %v", tc.name, got, tc.keep)
		}
	}
}
