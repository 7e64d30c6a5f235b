// Package vm boots local QEMU VMs as lab hosts, from the image engine/image
// builds: a copy-on-write overlay per VM under the run directory, a
// management NIC (user-mode, restrict=on unless the machine asks for the
// internet: then QEMU's NAT, DNS through slirp's 10.0.2.3) with SSH
// forwarded from a free loopback port, one data NIC per lab network (two
// VMs: joined over a pair of unix datagram sockets; three or more: through
// a learning switch rlab runs for the run, hub.go), and a fresh ed25519
// host key per VM made here and handed to the guest through fw_cfg, so the
// run's known_hosts holds the exact key before the VM boots (no trust on
// first use), and a read-only disk holding the agent binary it is given
// (agentdisk.go), so connecting uploads nothing.
//
// qemu runs as a child with a parent-death signal: a controller that dies
// takes its VMs with it. State records what was started so `rlab down` can
// stop VMs of a run that is gone (StopFromState), checking each pid is still
// that qemu before signalling it.
//
// Beyond putting the binary it is handed on that disk, this package knows
// nothing of agents or workloads; it must not import
// engine/run or steps (internal/archtest checks it).
package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/engine/agentdisk"
	"github.com/rlab-dev/rlab/engine/image"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Machine is one VM to boot (the lab's `host "x" { vm { ... } }`).
type Machine struct {
	Name        string // the host's reference name, for messages
	Slug        string // filesystem-safe unique name; names its folder and hostname
	MemoryBytes int64  // default 1 GiB
	CPUs        int    // default 1
	BootTimeout time.Duration
	Networks    []Network // data NICs eth1, eth2, ... in order
	// Image boots this machine; nil = Options.Image.
	Image *image.Image
	// Internet lifts restrict=on from the management NIC: the guest
	// reaches what this machine reaches through QEMU's user-mode NAT
	// (this machine's own loopback services too, at 10.0.2.2).
	Internet bool
}

// Network is one data NIC. VMs naming the same network are linked.
type Network struct {
	Name    string
	Address string // CIDR, "" = no address
	MTU     int    // 0 = 1500
}

// Options tune Boot.
type Options struct {
	Image            *image.Image // of every Machine that names none
	Accel            string       // "" or "auto", "kvm", "tcg"; RLAB_VM_ACCEL overrides ""
	QEMU             string       // default qemu-system-x86_64
	Logger           *slog.Logger
	PowerdownTimeout time.Duration // ACPI grace at shutdown; default 20s
	// Detach leaves the VMs running when the controller exits (no
	// parent-death signal); they are then stopped by StopFromState.
	Detach bool
	// Boot boots each VM rather than restoring it from a saved guest
	// (snapshot.go, the default); RLAB_VM_RESTORE=0 does so for every Set.
	Boot bool
	// template marks the Boot of a snapshot's own guest, which is never
	// restored, whatever RLAB_VM_RESTORE says (it would wait on itself).
	template bool
	// BootWave, when above 0 and below the number of machines, boots them
	// in waves of that many: each wave's sshd answering before the next
	// wave starts (rlab run --parallel). Under TCG every booting vCPU is a
	// busy thread, so a class booted all at once on two cores can run past
	// its boot timeout; waves trade wall time for that. The VMs of earlier
	// waves stay up; links to a VM not started yet lose their frames until
	// it is.
	BootWave int
	// Agent is the agent binary (linux/amd64) every VM is handed on a
	// read-only disk (engine/agentdisk), so the connection need not upload
	// it; nil attaches an empty disk (the device set stays the one
	// snapshots were saved with) and the agent is uploaded.
	Agent []byte
	// WarmAgent is a request line (agent/proto) that the agent, installed
	// from the agent disk in the template a snapshot is saved from, is
	// given before the save: engine/run's facts request, so every restored
	// VM finds the agent installed and its tool-version cache warm (issue
	// 27: 0.7-1.2 s reading the disk and 0.8-1.6 s of facts per VM). Both
	// sit in the agent's own per-hash folder: a run with another agent
	// never reads them and takes its agent from the disk, as before. Nil,
	// or no Agent: nothing is warmed.
	WarmAgent []byte
	// Progress, when set, is told each VM's state: "starting", then
	// "booting (<accelerator note>)", e.g. "booting (KVM)" or "booting (TCG
	// software emulation (KVM not usable: ...))", then "up in <duration>".
	Progress func(host, state string)
}

// VM is a booted VM and how to reach it over SSH.
type VM struct {
	Machine
	Addr         string        // 127.0.0.1:port forwarded to the guest's sshd
	User         string        // root
	IdentityFile string        // the run's login key (0600)
	KnownHosts   string        // known_hosts with this VM's host key
	HostKey      ssh.PublicKey // the key rlab generated for it
	Console      string        // serial console log
	BootTime     time.Duration // qemu start to sshd accepting our key
	PID          int

	dir  string
	idx  int       // position in the set: its MACs
	snap *snapshot // restored from it; nil when booted
	// consoleSock is qemu's serial port, copied into Console (console.go).
	consoleSock string
	state       VMState
	cmd         *exec.Cmd
	exited      chan struct{}
	waitMu      sync.Mutex
	waitEr      error
}

// Set is the VMs of one run.
type Set struct {
	VMs       []*VM
	Accel     string // kvm or tcg
	AccelNote string // for the user: "KVM" or "TCG software emulation (why)"
	Dir       string // <runDir>/vm
	opts      Options
	sockDir   string // "" or a short temp folder for sockets (long run paths)
	agentDisk string // the agent disk every VM attaches read-only
	hubs      []*Hub // the switches of networks of three or more VMs
	hubNames  []string
	mu        sync.Mutex
	down      bool
}

// State is what `rlab down` needs to stop the VMs of a run with no lab file.
// The run engine stores it in state.json.
type State struct {
	VMs     []VMState `json:"vms"`
	SockDir string    `json:"sock_dir,omitempty"`
}

// VMState names one qemu process for good.
type VMState struct {
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // /proc/<pid>/stat field 22
	PIDFile   string `json:"pid_file"`   // on its command line; checked before signalling
	QMP       string `json:"qmp"`
	Addr      string `json:"ssh_addr"`
}

const (
	defaultMemory  = 1 << 30
	defaultTimeout = 10 * time.Minute
	maxUnixPath    = 100 // sun_path is 108 bytes; keep a margin
)

var hostnameBad = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// Boot starts the machines and waits until sshd in each accepts the run's key
// with the host key rlab gave it. On error every VM started is stopped.
func Boot(ctx context.Context, ms []Machine, runDir string, opts Options) (*Set, error) {
	for _, m := range ms {
		if m.Image == nil && opts.Image == nil {
			return nil, fmt.Errorf("boot vm %q: no image", m.Name)
		}
	}
	if opts.QEMU == "" {
		opts.QEMU = "qemu-system-x86_64"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PowerdownTimeout == 0 {
		opts.PowerdownTimeout = 20 * time.Second
	}
	if opts.Accel == "" {
		opts.Accel = os.Getenv("RLAB_VM_ACCEL")
	}
	if opts.Progress == nil {
		opts.Progress = func(string, string) {}
	}
	links, err := planLinks(ms)
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{opts.QEMU, "qemu-img"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("boot vms: %s not found (apt-get install qemu-system-x86 qemu-utils): %w", tool, err)
		}
	}
	kernel := ""
	if opts.Image != nil {
		kernel = opts.Image.Kernel
	} else if len(ms) > 0 {
		kernel = ms[0].Image.Kernel
	}
	accel, note, err := chooseAccel(ctx, opts.Accel, opts.QEMU, kernel)
	if err != nil {
		return nil, fmt.Errorf("boot vms: %w", err)
	}
	s := &Set{Accel: accel, AccelNote: note, Dir: filepath.Join(runDir, "vm"), opts: opts}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("boot vms: %w", err)
	}
	sockDir := s.Dir
	longest := "zzzzzzzzzzzzzzzz" // a slug's and a network name's length, or the longest network's
	for name := range links {
		if len(name) > len(longest) {
			longest = name
		}
	}
	if len(filepath.Join(s.Dir, "zzzzzzzzzzzzzzzz", "qmp.sock")) > maxUnixPath || len(linkSock(s.Dir, longest, len(ms))) > maxUnixPath {
		if sockDir, err = os.MkdirTemp("", "rlab-vm-"); err != nil {
			return nil, fmt.Errorf("boot vms: %w", err)
		}
		s.sockDir = sockDir
	}
	for _, name := range slices.Sorted(maps.Keys(links)) {
		l := links[name]
		if len(l.members) < 3 {
			continue
		}
		if opts.Detach {
			_ = s.closeHubs()
			return nil, fmt.Errorf("boot vms: network %q joins %d VMs through a switch that runs in rlab: it cannot outlive rlab, so these VMs cannot be detached", name, len(l.members))
		}
		var paths []string
		for _, i := range l.members {
			paths = append(paths, linkSock(sockDir, name, i))
		}
		h, err := StartHub(hubSock(sockDir, name), paths, opts.Logger.With("network", name))
		if err != nil {
			_ = s.closeHubs()
			return nil, fmt.Errorf("boot vms: network %q: %w", name, err)
		}
		s.hubs = append(s.hubs, h)
		s.hubNames = append(s.hubNames, name)
	}
	login, err := newKeyPair("rlab-run")
	if err != nil {
		return nil, fmt.Errorf("boot vms: %w", err)
	}
	idFile := filepath.Join(s.Dir, "id_ed25519")
	if err := login.writeFiles(idFile); err != nil {
		return nil, fmt.Errorf("boot vms: write login key: %w", err)
	}
	if err := s.writeAgentDisk(); err != nil {
		return nil, fmt.Errorf("boot vms: %w", err)
	}
	opts.Logger.Info("booting vms", "count", len(ms), "accel", accel, "note", note)

	ok := false
	defer func() {
		if !ok {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			s.opts.PowerdownTimeout = -1 // failed boot: no ACPI grace
			_ = s.Shutdown(sctx)
		}
	}()
	wave := opts.BootWave
	if wave <= 0 || wave > len(ms) {
		wave = len(ms)
	}
	for lo := 0; lo < len(ms); lo += wave {
		hi := min(lo+wave, len(ms))
		if wave < len(ms) {
			opts.Logger.Info("booting a wave of vms", "wave", lo/wave+1, "of", (len(ms)+wave-1)/wave, "vms", hi-lo)
		}
		if err := s.bootWave(ctx, ms, lo, hi, links, sockDir, login, idFile); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// bootWave starts machines lo..hi-1 and waits until sshd in each accepts
// the run's key.
func (s *Set) bootWave(ctx context.Context, ms []Machine, lo, hi int, links map[string]*link, sockDir string, login *keyPair, idFile string) error {
	for i := lo; i < hi; i++ {
		v, err := s.start(ctx, ms[i], i, links, sockDir, login, idFile, s.restoreWanted())
		if err != nil {
			return err
		}
		s.VMs = append(s.VMs, v)
	}
	if err := s.writeKnownHosts(); err != nil {
		return err
	}
	errs := make([]error, hi-lo)
	var wg sync.WaitGroup
	for i, v := range s.VMs[lo:hi] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v.snap != nil {
				err := s.resume(ctx, v)
				v.snap.release() // its files are open now, or not needed
				if err != nil {
					errs[i] = fmt.Errorf("%w: %w", errRestoreFailed, err)
					return
				}
			}
			// A restored guest is given its identity on the login that
			// found its sshd up (one SSH handshake less under TCG).
			var c *ssh.Client
			c, errs[i] = s.waitSSH(ctx, v, login, v.snap != nil)
			if errs[i] == nil && v.snap != nil {
				if err := s.identify(ctx, v, c, idFile, login); err != nil {
					errs[i] = fmt.Errorf("%w: %w", errRestoreFailed, err)
				}
			}
			if c != nil {
				c.Close()
			}
			if errs[i] != nil && v.snap != nil && ctx.Err() == nil && !errors.Is(errs[i], errRestoreFailed) {
				errs[i] = fmt.Errorf("%w: %w", errRestoreFailed, errs[i])
			}
		}()
	}
	wg.Wait()
	// A guest that died while booting is booted once more: under TCG on a
	// loaded host the kernel can give up on its own (seen in a soak: an
	// ACPI method loop ran past the kernel's 30 s limit, the root disk got
	// no interrupt route, the guest panicked). One at a time, with no other
	// VM still dialing, so known_hosts can be rewritten safely.
	for j, err := range errs {
		i := lo + j
		if !errors.Is(err, errGuestDied) && !errors.Is(err, errRestoreFailed) || ctx.Err() != nil {
			continue
		}
		old := s.VMs[i]
		switch {
		case old.snap != nil && keepSnapshot(err):
			// Slow, not broken: on a busy host (TCG, several VMs on two
			// cores) a restored guest can miss its deadline too. The
			// snapshot stays for the next run; this VM boots.
			s.opts.Logger.Warn("restored vm did not answer in time; booting it, the snapshot is kept", "host", old.Name, "snapshot", old.snap.Dir, "err", err)
			s.opts.Progress(old.Name, "the restored guest did not answer in time (a busy host?); booting it instead, the saved guest is kept")
			_ = old.stopNow()
		case old.snap != nil:
			// A saved guest that does not come up is not kept: the next
			// run builds it anew. This VM boots instead.
			s.opts.Logger.Warn("restored vm did not come up; removing its snapshot and booting it", "host", old.Name, "snapshot", old.snap.Dir, "err", err)
			s.opts.Progress(old.Name, "the restore failed ("+err.Error()+"); booting it instead")
			_ = old.stopNow()
			_ = os.RemoveAll(old.snap.Dir)
		default:
			s.opts.Logger.Warn("vm died while booting; booting it again", "host", old.Name, "err", err)
			s.opts.Progress(old.Name, "died while booting (console of that try: "+old.Console+".1); booting it again")
		}
		_ = os.Rename(old.Console, old.Console+".1")
		v, serr := s.start(ctx, ms[i], i, links, sockDir, login, idFile, false)
		if serr != nil {
			errs[j] = errors.Join(err, serr)
			continue
		}
		s.VMs[i] = v
		if werr := s.writeKnownHosts(); werr != nil {
			return werr
		}
		_, errs[j] = s.waitSSH(ctx, v, login, false)
	}
	return errors.Join(errs...)
}

// slowGuest is a VM whose sshd did not answer before its deadline while
// its qemu still ran.
type slowGuest struct{ error }

func (e slowGuest) Unwrap() error { return e.error }

// keepSnapshot reports whether the snapshot of a restored VM that failed
// with err is kept: when the guest was merely slow (its qemu ran, its sshd
// had not answered by the deadline, or a login timed out: make test-vm at
// load 40 saw the identity's SSH handshake time out and a good snapshot
// rebuilt for minutes). A qemu that exited, a stream it refused, a wrong
// host key or an identity that did not apply mean the saved guest is bad,
// and it is removed.
func keepSnapshot(err error) bool {
	var slow slowGuest
	if errors.As(err, &slow) {
		return true
	}
	if errors.Is(err, errGuestDied) || errors.Is(err, errBadRestore) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// optPath escapes a path for a QEMU option list (-drive file=..., -qmp
// unix:..., -fw_cfg, -netdev): a comma is doubled, as QEMU's option parser
// reads it. A run directory named with a comma otherwise split -qmp's path,
// qemu refused the option, and a restore counted it against the snapshot.
// (-serial file: takes the rest of its argument verbatim: not escaped.)
func optPath(p string) string {
	return strings.ReplaceAll(p, ",", ",,")
}

// errGuestDied marks a VM whose qemu exited (its guest panicked) before
// sshd answered.
var errGuestDied = errors.New("qemu exited")

// errRestoreFailed marks a VM restored from a snapshot that did not come up
// as this run's VM; it is booted instead.
var errRestoreFailed = errors.New("restore failed")

// link is one data network: two VMs send to each other, three or more to
// the network's switch.
type link struct {
	name    string
	members []int // machine indexes
}

func planLinks(ms []Machine) (map[string]*link, error) {
	links := map[string]*link{}
	files := map[string]string{} // a network's name in socket names -> the network
	for i, m := range ms {
		seen := map[string]bool{}
		for _, n := range m.Networks {
			if seen[n.Name] {
				return nil, fmt.Errorf("vm %q: network %q named twice (one NIC per network)", m.Name, n.Name)
			}
			seen[n.Name] = true
			l := links[n.Name]
			if l == nil {
				f := hostnameBad.ReplaceAllString(n.Name, "_")
				if o, ok := files[f]; ok {
					return nil, fmt.Errorf("vm %q: networks %q and %q would share the sockets net-%s-*.sock; name them apart", m.Name, o, n.Name, f)
				}
				files[f] = n.Name
				l = &link{name: n.Name}
				links[n.Name] = l
			}
			l.members = append(l.members, i)
		}
	}
	return links, nil
}

// dataNIC is how one data NIC of a VM is wired: the unix datagram socket
// it binds, the one it sends every frame to (its one peer's, or the
// network's switch's), and the qemu arguments that say so.
type dataNIC struct {
	Network string
	MAC     string
	Local   string // the socket this VM binds
	Remote  string // the socket it sends to: the peer's, or the hub's
	Hub     bool   // Remote is the network's switch
	Args    []string
}

// dataNICs wires machine idx's data NICs (eth1, eth2, ... in order) to
// the links planLinks made. Pure: it names sockets, it makes none.
func dataNICs(m Machine, idx int, links map[string]*link, sockDir string) ([]dataNIC, error) {
	var out []dataNIC
	for j, n := range m.Networks {
		l := links[n.Name]
		if l == nil {
			return nil, fmt.Errorf("network %q: not planned", n.Name)
		}
		// Each end binds its own unix datagram socket and sends to the
		// other's (-netdev dgram): one datagram per frame, no listener to
		// wait for, no stream framing to resume after a short write.
		// -netdev stream stalled for good under load (issue 13): see
		// BENCHMARKS.md "Demo and the VM data link".
		// Three or more: every member sends to the network's switch.
		peer := -1 // a network with one VM: its frames go nowhere
		for _, o := range l.members {
			if o != idx {
				peer = o
			}
		}
		if 0x6+j >= agentDiskSlot {
			return nil, fmt.Errorf("network %q: more than %d data networks on one VM", n.Name, agentDiskSlot-0x6)
		}
		nic := dataNIC{Network: n.Name, MAC: mac(idx, j+1), Local: linkSock(sockDir, n.Name, idx), Remote: linkSock(sockDir, n.Name, peer)}
		if len(l.members) > 2 {
			nic.Remote, nic.Hub = hubSock(sockDir, n.Name), true
		}
		if len(nic.Local) > maxUnixPath || len(nic.Remote) > maxUnixPath {
			return nil, fmt.Errorf("network %q: socket path %s too long", n.Name, nic.Local)
		}
		nic.Args = []string{
			"-netdev", "dgram,id=l" + strconv.Itoa(j) + ",local.type=unix,local.path=" + optPath(nic.Local) + ",remote.type=unix,remote.path=" + optPath(nic.Remote),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=l%d,mac=%s,addr=0x%x", j, nic.MAC, 0x6+j),
		}
		out = append(out, nic)
	}
	return out, nil
}

// mac returns a stable locally administered MAC for NIC nic of machine i.
func mac(i, nic int) string {
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", 0x10+nic, (i>>8)&0xff, i&0xff)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// networkFile is the systemd-networkd file the guest gets for a data NIC.
func networkFile(macAddr string, n Network) string {
	mtu := n.MTU
	if mtu == 0 {
		mtu = 1500
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Match]\nMACAddress=%s\n\n[Link]\nMTUBytes=%d\n\n[Network]\n", macAddr, mtu)
	if n.Address != "" {
		fmt.Fprintf(&b, "Address=%s\n", n.Address)
	}
	b.WriteString("LinkLocalAddressing=no\nIPv6AcceptRA=no\nConfigureWithoutCarrier=yes\n")
	return b.String()
}

func (s *Set) start(ctx context.Context, m Machine, idx int, links map[string]*link, sockDir string, login *keyPair, idFile string, restore bool) (*VM, error) {
	if m.MemoryBytes == 0 {
		m.MemoryBytes = defaultMemory
	}
	if m.CPUs == 0 {
		m.CPUs = 1
	}
	if m.BootTimeout == 0 {
		m.BootTimeout = defaultTimeout
	}
	if m.Slug == "" {
		m.Slug = m.Name
	}
	if m.Image == nil {
		m.Image = s.opts.Image
	}
	fail := func(what string, err error) error { return fmt.Errorf("boot vm %q: %s: %w", m.Name, what, err) }
	var sn *snapshot
	resumeHolds := false // sn's hold passed on to resume
	if restore && m.Image.Packages["iproute2"] == "" {
		// The identity of a restored guest is given with ip(8); an image
		// without iproute2 (the minimal one) is booted.
		s.opts.Logger.Info("vm booted, not restored: the image has no iproute2", "host", m.Name, "image", m.Image.Dir)
		restore = false
	}
	if restore {
		var err error
		if sn, err = s.snapshotFor(ctx, m); err != nil {
			if ctx.Err() != nil {
				return nil, fail("snapshot", err)
			}
			s.opts.Logger.Warn("no vm snapshot to restore; booting", "host", m.Name, "err", err)
			s.opts.Progress(m.Name, "no snapshot to restore ("+err.Error()+"); booting")
			sn = nil
		}
		// Held until qemu has read the saved state (Boot's resume: its
		// files are open, and image.InUse keeps another rlab from
		// removing them) or the start failed (holdSnapshot).
		defer func() {
			if !resumeHolds {
				sn.release()
			}
		}()
	}
	dir := filepath.Join(s.Dir, m.Slug)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fail("make folder", err)
	}
	v := &VM{Machine: m, User: "root", IdentityFile: idFile, KnownHosts: filepath.Join(s.Dir, "known_hosts"),
		Console: filepath.Join(dir, "console.log"), dir: dir, idx: idx, snap: sn, exited: make(chan struct{})}
	s.opts.Progress(m.Name, "starting")

	hk, err := newKeyPair("rlab-vm-" + m.Slug)
	if err != nil {
		return nil, fail("host key", err)
	}
	v.HostKey = hk.public
	if sn != nil {
		// Restored: the snapshot's host key (pinned exactly) and its login
		// key until identify gives the guest the run's.
		// The login key is copied into the VM's folder: a sibling whose
		// restore fails may remove the snapshot while this VM still waits
		// for its sshd.
		b, err := os.ReadFile(sn.Login)
		if err != nil {
			return nil, fail("read the snapshot's login key", err)
		}
		own := filepath.Join(dir, "snapshot-login")
		if err := os.WriteFile(own, b, 0o600); err != nil {
			return nil, fail("copy the snapshot's login key", err)
		}
		v.HostKey, v.IdentityFile = sn.HostKey, own
	}
	hkFile := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := hk.writeFiles(hkFile); err != nil {
		return nil, fail("write host key", err)
	}
	akFile := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(akFile, login.authorizedLine(), 0o600); err != nil {
		return nil, fail("write authorized_keys", err)
	}
	overlay := filepath.Join(dir, "overlay.qcow2")
	_ = os.Remove(overlay)
	backing, backingFmt := m.Image.Root, "raw"
	if sn != nil {
		backing, backingFmt = sn.Disk, "qcow2"
	}
	if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", backingFmt, "-b", backing, overlay).CombinedOutput(); err != nil {
		return nil, fail("create overlay", fmt.Errorf("qemu-img: %w: %s", err, strings.TrimSpace(string(out))))
	}
	sockBase := sockDir
	if sockDir != s.Dir {
		sockBase = filepath.Join(sockDir, m.Slug)
		if err := os.MkdirAll(sockBase, 0o700); err != nil {
			return nil, fail("make socket folder", err)
		}
	} else {
		sockBase = dir
	}
	qmp := filepath.Join(sockBase, "qmp.sock")
	v.consoleSock = filepath.Join(sockBase, "console.sock")
	pidFile := filepath.Join(dir, "qemu.pid")

	hostname := strings.Trim(hostnameBad.ReplaceAllString(m.Slug, "-"), "-")
	args := []string{
		"-name", "rlab-" + m.Slug,
		"-accel", s.Accel, "-machine", "pc", "-smp", strconv.Itoa(m.CPUs), "-m", strconv.FormatInt(m.MemoryBytes>>20, 10),
		"-nodefaults", "-no-user-config", "-display", "none",
		"-qmp", "unix:" + optPath(qmp) + ",server=on,wait=off",
		"-pidfile", pidFile,
		"-kernel", m.Image.Kernel, "-initrd", m.Image.Initrd,
		"-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 systemd.hostname=" + hostname + " mitigations=off tsc=reliable no_timer_check panic=-1",
		// no_timer_check: under TCG on a loaded host the kernel's IO-APIC
		// timer check can fail and panic ("IO-APIC + timer doesn't work").
		// A guest that panics exits qemu (-no-reboot with panic=-1), so the
		// boot wait fails at once with the console tail, not at the timeout.
		"-no-reboot",
		"-drive", "file=" + optPath(overlay) + ",if=none,id=d0,format=qcow2,discard=unmap,cache=unsafe",
		"-device", "virtio-blk-pci,drive=d0,addr=0x4",
		"-device", "virtio-rng-pci,addr=0x5",
		// The agent, read-only (agentdisk.go).
		"-drive", "file=" + optPath(s.agentDisk) + ",if=none,id=agent,format=raw,readonly=on",
		"-device", fmt.Sprintf("virtio-blk-pci,drive=agent,serial=%s,addr=0x%x", agentdisk.Serial, agentDiskSlot),
		// A restored guest learns it was restored (a new generation id)
		// and its kernel reseeds its random pool.
		"-device", "vmgenid,guid=auto",
		"-fw_cfg", "name=" + image.FwCfgPrefix + image.FwHostKey + ",file=" + optPath(hkFile),
		"-fw_cfg", "name=" + image.FwCfgPrefix + image.FwHostKeyPub + ",file=" + optPath(hkFile+".pub"),
		"-fw_cfg", "name=" + image.FwCfgPrefix + image.FwAuthorizedKeys + ",file=" + optPath(akFile),
	}
	args = append(args, consoleArgs(v.consoleSock)...)
	if s.Accel == AccelKVM {
		args = append(args, "-cpu", "host")
	} else {
		args = append(args, "-cpu", "max")
	}
	nics, err := dataNICs(m, idx, links, sockDir)
	if err != nil {
		return nil, fail("link", err)
	}
	for j, nic := range nics {
		_ = os.Remove(nic.Local)
		nf := filepath.Join(dir, fmt.Sprintf("net-%d.network", j+1))
		if err := os.WriteFile(nf, []byte(networkFile(nic.MAC, m.Networks[j])), 0o644); err != nil {
			return nil, fail("write network file", err)
		}
		args = append(args, nic.Args...)
		args = append(args, "-fw_cfg", fmt.Sprintf("name=%s%s%d,file=%s", image.FwCfgPrefix, image.FwNetworkPrefix, j+1, optPath(nf)))
	}

	// restrict=on: the guest reaches nothing beyond the SSH forward.
	// Without it, slirp NATs the guest's connections out through this
	// machine and answers DNS at 10.0.2.3.
	restrict := "restrict=on,"
	if m.Internet {
		restrict = ""
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken before qemu binds it
		port, err := freePort()
		if err != nil {
			return nil, fail("pick ssh port", err)
		}
		v.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		full := append(append([]string(nil), args...),
			"-netdev", fmt.Sprintf("user,id=n0,%shostfwd=tcp:127.0.0.1:%d-:22", restrict, port),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=n0,mac=%s,addr=0x3", mac(idx, 0)))
		var state *os.File
		if sn != nil {
			if state, err = os.Open(sn.State); err != nil {
				return nil, fail("open the saved state", err)
			}
			full = append(full, "-incoming", "fd:3")
		}
		lastErr = s.exec(v, full, pidFile, qmp, state)
		if state != nil {
			state.Close()
		}
		if lastErr == nil {
			break
		}
		if !strings.Contains(lastErr.Error(), "host forwarding") {
			break
		}
	}
	if lastErr != nil {
		if sn != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("restore failed; removing the snapshot and booting", "host", m.Name, "snapshot", sn.Dir, "err", lastErr)
			s.opts.Progress(m.Name, "the restore failed ("+lastErr.Error()+"); booting it instead")
			_ = os.RemoveAll(sn.Dir)
			return s.start(ctx, m, idx, links, sockDir, login, idFile, false)
		}
		return nil, fail("start qemu", lastErr)
	}
	if sn != nil {
		// Resumed by resume, beside the set's other VMs: each reads its
		// saved state (311 MiB) at the same time.
		resumeHolds = true
		return v, nil
	}
	s.opts.Progress(m.Name, "booting ("+s.AccelNote+")")
	s.opts.Logger.Info("vm started", "host", m.Name, "pid", v.PID, "ssh", v.Addr, "accel", s.Accel, "image", m.Image.Dir, "internet", m.Internet)
	return v, nil
}

// resume waits until a restored VM's qemu has read its saved state, then
// lets the guest run. Its errors say what becomes of the snapshot when the
// VM is booted instead (bootWave, keepSnapshot): a state QEMU refused, or
// a qemu that died reading it, removes it; a monitor that did not answer
// (a busy host) keeps it, as other VMs of the run may be restoring from it.
func (s *Set) resume(ctx context.Context, v *VM) error {
	err := qmpResume(ctx, v.state.QMP, v.exited)
	if err == nil {
		s.opts.Progress(v.Name, "restored from a saved guest ("+s.AccelNote+")")
		s.opts.Logger.Info("vm restored", "host", v.Name, "pid", v.PID, "ssh", v.Addr, "snapshot", v.snap.Dir)
		return nil
	}
	died := v.hasExited()
	if ctx.Err() != nil {
		return fmt.Errorf("boot vm %q: restore: %w", v.Name, err)
	}
	b, _ := os.ReadFile(filepath.Join(v.dir, "qemu.stderr"))
	err = fmt.Errorf("boot vm %q: restore: %w (qemu stderr: %s)", v.Name, err, strings.TrimSpace(string(b)))
	if died || errors.Is(err, errBadRestore) {
		return fmt.Errorf("%w: %w", errBadRestore, err)
	}
	return slowGuest{err}
}

// hasExited reports whether this VM's qemu has been reaped.
func (v *VM) hasExited() bool {
	select {
	case <-v.exited:
		return true
	default:
		return false
	}
}

// exec starts qemu and returns once it runs (or failed early).
func (s *Set) exec(v *VM, args []string, pidFile, qmp string, incoming *os.File) error {
	cmd := exec.Command(s.opts.QEMU, args...)
	if incoming != nil {
		cmd.ExtraFiles = []*os.File{incoming} // fd 3: -incoming fd:3
	}
	errf, err := os.Create(filepath.Join(v.dir, "qemu.stderr"))
	if err != nil {
		return err
	}
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = errf, errf
	// Own process group: a Ctrl-C at the terminal reaches the controller,
	// which tears down in order, not qemu directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !s.opts.Detach {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	v.cmd, v.PID = cmd, cmd.Process.Pid
	v.exited = make(chan struct{})
	go func() {
		err := cmd.Wait()
		v.waitMu.Lock()
		v.waitEr = err
		v.waitMu.Unlock()
		close(v.exited)
	}()
	st, _ := procStartTime(v.PID)
	v.state = VMState{Host: v.Name, PID: v.PID, StartTime: st, PIDFile: pidFile, QMP: qmp, Addr: v.Addr}
	// qemu fails fast on bad arguments or a taken port; it creates the QMP
	// socket once it is past that.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-v.exited:
			b, _ := os.ReadFile(filepath.Join(v.dir, "qemu.stderr"))
			return fmt.Errorf("qemu exited: %v: %s", v.waitErr(), strings.TrimSpace(string(b)))
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(qmp); err == nil {
			break
		}
	}
	if v.consoleSock == "" {
		return nil
	}
	_ = os.Remove(v.Console) // a port-taken retry's
	go func(exited <-chan struct{}) {
		if err := copyConsole(v.consoleSock, v.Console, consoleCap, exited); err != nil {
			s.opts.Logger.Warn("vm console not kept", "host", v.Name, "err", err)
		}
	}(v.exited)
	return nil
}

func (v *VM) waitErr() error {
	v.waitMu.Lock()
	defer v.waitMu.Unlock()
	return v.waitEr
}

// hubSock is the socket of network name's switch.
func hubSock(dir, name string) string {
	return filepath.Join(dir, fmt.Sprintf("net-%s-hub.sock", hostnameBad.ReplaceAllString(name, "_")))
}

// closeHubs stops the switches and records what each did in
// vm/net-NAME.switch.json.
func (s *Set) closeHubs() error {
	var errs []error
	for i, h := range s.hubs {
		errs = append(errs, h.Close())
		st := h.Stats(s.hubNames[i])
		s.opts.Logger.Info("network switch", "network", st.Network, "forwarded", st.Forwarded, "flooded", st.Flooded, "dropped", st.Dropped, "jammed", st.Jammed)
		if b, err := json.MarshalIndent(st, "", "  "); err == nil {
			_ = os.WriteFile(filepath.Join(s.Dir, "net-"+hostnameBad.ReplaceAllString(st.Network, "_")+".switch.json"), append(b, '\n'), 0o600)
		}
	}
	s.hubs, s.hubNames = nil, nil
	return errors.Join(errs...)
}

// linkSock is the datagram socket machine idx binds for network name.
func linkSock(dir, name string, idx int) string {
	return filepath.Join(dir, fmt.Sprintf("net-%s-%d.sock", hostnameBad.ReplaceAllString(name, "_"), idx))
}

func (s *Set) writeKnownHosts() error {
	var b strings.Builder
	for _, v := range s.VMs {
		b.WriteString(knownhosts.Line([]string{knownhosts.Normalize(v.Addr)}, v.HostKey))
		b.WriteByte('\n')
	}
	for _, v := range s.VMs {
		if err := os.WriteFile(v.KnownHosts, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("boot vms: write known_hosts: %w", err)
		}
	}
	return nil
}

// ClientConfig is an SSH client config for v: the run's key, and only v's
// host key accepted.
func (v *VM) ClientConfig() (*ssh.ClientConfig, error) {
	cb, err := knownhosts.New(v.KnownHosts)
	if err != nil {
		return nil, err
	}
	login, err := loadKeyPair(v.IdentityFile)
	if err != nil {
		return nil, err
	}
	return &ssh.ClientConfig{
		User:              v.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(login.signer)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
		Timeout:           30 * time.Second,
	}, nil
}

// Dial opens an SSH connection to v, verifying its host key.
func (v *VM) Dial(ctx context.Context) (*ssh.Client, error) {
	cfg, err := v.ClientConfig()
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cfg.Timeout}
	c, err := d.DialContext(ctx, "tcp", v.Addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(cfg.Timeout))
	conn, chans, reqs, err := ssh.NewClientConn(c, v.Addr, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return ssh.NewClient(conn, chans, reqs), nil
}

// waitSSH waits until v's sshd lets the login in. With keep it returns
// that login, which the caller closes.
func (s *Set) waitSSH(ctx context.Context, v *VM, login *keyPair, keep bool) (*ssh.Client, error) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(ctx, v.BootTimeout)
	defer cancel()
	var last error
	for {
		select {
		case <-v.exited:
			return nil, fmt.Errorf("boot vm %q: %w (%v) before sshd answered%s", v.Name, errGuestDied, v.waitErr(), consoleTail(v.Console, 25))
		default:
		}
		c, err := v.Dial(ctx)
		if err == nil {
			if !keep {
				c.Close()
				c = nil
			}
			v.BootTime = time.Since(t0)
			s.opts.Progress(v.Name, "up in "+v.BootTime.Round(100*time.Millisecond).String())
			s.opts.Logger.Info("vm up", "host", v.Name, "ssh", v.Addr, "boot_time", v.BootTime.Round(time.Millisecond), "accel", s.Accel)
			return c, nil
		}
		var kerr *knownhosts.KeyError
		if errors.As(err, &kerr) {
			// The guest presented a key other than the one we gave it: never accept.
			return nil, fmt.Errorf("boot vm %q: sshd at %s presented an unexpected host key: %w%s", v.Name, v.Addr, err, consoleTail(v.Console, 25))
		}
		last = err
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, slowGuest{fmt.Errorf("boot vm %q: sshd at %s did not answer within %s (last: %v); console log %s ends:%s", v.Name, v.Addr, v.BootTimeout, last, v.Console, consoleTail(v.Console, 25))}
			}
			return nil, fmt.Errorf("boot vm %q: %w", v.Name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// consoleTail returns the last n lines of the console log, indented.
func consoleTail(path string, n int) string {
	lines := consoleLines(path, n)
	if len(lines) == 0 {
		return ""
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

// consoleLines returns the last n lines of a console log (read from its
// last 64 KiB), without their carriage returns.
func consoleLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, 0)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines
}

// State returns the record StopFromState needs.
func (s *Set) State() State {
	st := State{SockDir: s.sockDir}
	for _, v := range s.VMs {
		st.VMs = append(st.VMs, v.state)
	}
	return st
}

// Shutdown stops every VM (ACPI powerdown, then SIGTERM/SIGKILL) in
// parallel. It is idempotent.
func (s *Set) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil
	}
	errs := make([]error, len(s.VMs))
	var wg sync.WaitGroup
	for i, v := range s.VMs {
		if v.cmd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			grace := s.opts.PowerdownTimeout
			if grace < 0 {
				grace = 0
			}
			errs[i] = stopVM(ctx, v.state, grace, v.exited)
			// Return only once qemu is reaped: stopped from the state
			// record (rlab down) it may have exited a moment ago.
			select {
			case <-v.exited:
			case <-time.After(10 * time.Second):
				if errs[i] == nil {
					errs[i] = fmt.Errorf("stop vm %q: qemu pid %d not reaped", v.Name, v.PID)
				}
			}
		}()
	}
	wg.Wait()
	// The switches last until every VM has stopped: a guest powering down
	// may still send.
	if err := s.closeHubs(); err != nil {
		errs = append(errs, err)
	}
	if s.sockDir != "" {
		_ = os.RemoveAll(s.sockDir)
	}
	s.down = true
	return errors.Join(errs...)
}

// ownSockDir says whether dir is a socket folder rlab makes (MkdirTemp
// "rlab-vm-*" in the temp folder, 0700, the user's, not a symlink): the
// state may come from a received run directory, whose sock_dir must not
// make down remove another folder of that name.
func ownSockDir(dir string) bool {
	if dir == "" || !strings.HasPrefix(filepath.Base(dir), "rlab-vm-") || filepath.Dir(filepath.Clean(dir)) != filepath.Clean(os.TempDir()) {
		return false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// StopFromState stops the VMs a State names, if they still run. Each pid is
// signalled only while it is still that qemu.
func StopFromState(ctx context.Context, st State, grace time.Duration) error {
	errs := make([]error, len(st.VMs))
	var wg sync.WaitGroup
	for i, v := range st.VMs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stopVM(ctx, v, grace, nil)
		}()
	}
	wg.Wait()
	if ownSockDir(st.SockDir) {
		_ = os.RemoveAll(st.SockDir)
	}
	return errors.Join(errs...)
}
