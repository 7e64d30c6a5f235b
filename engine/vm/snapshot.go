package vm

// Boot once, restore per run (issue 27). For each (image, QEMU, accelerator,
// memory, CPUs, number of data NICs) a guest is booted once, left to settle
// (sshd up, rdma_rxe and siw loaded, no pam_motd; the agent installed from
// the agent disk and its tool-version cache warmed, warmScript), paused and
// its RAM and device state
// saved with QEMU's migration to a file; its disk overlay becomes the
// read-only backing file of every restored VM's own overlay. A run's VM then
// starts from that state (`-incoming fd:3`, then `cont`) in seconds instead
// of booting kernel and systemd (measured under TCG on this 2-core machine:
// 63.5 s boot to sshd vs 6.0 s restore to sshd, BENCHMARKS.md).
//
// A restored VM gets its own identity before anything else uses it, over
// one SSH session that logs in with the snapshot's login key and checks the
// snapshot's host key exactly (both made by rlab, kept 0600 in the cache):
// its data NICs' MAC addresses, MTU and addresses, its hostname, the wall
// clock from this machine (measured and set within the exchange's round
// trip, clockScript), fresh randomness mixed into the guest's pool (and
// vmgenid, which makes the guest kernel reseed on restore), and the run's own
// login key as root's only authorized key. Its host key stays the snapshot's:
// every VM restored from one snapshot has the same host key, pinned exactly
// in the run's known_hosts (SECURITY.md says so).
//
// A snapshot that does not fit (another QEMU, image, memory...) has another
// key and is built anew; one that fails to restore is removed and the VM is
// booted instead, which the progress line says.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/rlab-dev/rlab/engine/agentdisk"
	"github.com/rlab-dev/rlab/engine/image"
)

// snapshotFormat changes whenever the QEMU command line of a VM changes in a
// way a saved state depends on (devices, their addresses, the machine type):
// a state saved by another layout is never restored.
// 2: the agent disk (agentdisk.go). 3: the template's agent installed and
// its tool-version cache warmed (warmScript), no pam_motd at login. 4: the
// same, with a warm-up that works in a real guest (3's stopped at the root
// disk's empty serial: its snapshots are cold).
const snapshotFormat = 4

// RestoreEnv, set to "0", boots every VM whatever the options say. By
// default VMs are restored from saved guests (Options.Boot boots one Set's):
// every test of make test-vm runs on restored guests (issue 27).
const RestoreEnv = "RLAB_VM_RESTORE"

// snapshot is a saved guest ready to restore.
type snapshot struct {
	Dir     string // <image>/snapshots/<key>
	Disk    string // the guest's disk at the save, backing every restored overlay
	State   string // QEMU migration stream
	Login   string // private login key (0600); .pub beside it
	HostKey ssh.PublicKey
	Key     snapshotKey
	hold    *os.File // its lock file, held shared until release (holdSnapshot)
}

// snapshotKey is everything a saved state depends on.
type snapshotKey struct {
	Format      int    `json:"format"`
	QEMU        string `json:"qemu"`         // binary path
	QEMUVersion string `json:"qemu_version"` // its --version line
	QEMUBinary  string `json:"qemu_binary"`  // size and mtime of the binary
	Image       string `json:"image"`        // image folder name (its recipe hash)
	Accel       string `json:"accel"`
	MemoryMiB   int64  `json:"memory_mib"`
	CPUs        int    `json:"cpus"`
	NICs        int    `json:"nics"`     // data NICs
	Internet    bool   `json:"internet"` // the management NIC's NAT (restrict=off)
	// Agent is the sha256 of the agent installed and warmed in the
	// template (Options.WarmAgent), "" when none was: what is on the
	// saved disk differs with it.
	Agent string `json:"agent,omitempty"`
}

func (k snapshotKey) id() string {
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// restoreWanted reports whether VMs are restored rather than booted.
func (s *Set) restoreWanted() bool {
	if s.opts.template {
		return false
	}
	if os.Getenv(RestoreEnv) == "0" {
		return false
	}
	return !s.opts.Boot
}

func (s *Set) keyFor(m Machine) (snapshotKey, error) {
	k := snapshotKey{Format: snapshotFormat, Image: filepath.Base(m.Image.Dir), Accel: s.Accel,
		MemoryMiB: m.MemoryBytes >> 20, CPUs: m.CPUs, NICs: len(m.Networks), Internet: m.Internet}
	if warmScript("/sys/block", "/dev", s.opts.Agent, s.opts.WarmAgent) != "" {
		sum := sha256.Sum256(s.opts.Agent)
		k.Agent = hex.EncodeToString(sum[:])
	}
	p, err := exec.LookPath(s.opts.QEMU)
	if err != nil {
		return k, err
	}
	if k.QEMU, err = filepath.Abs(p); err != nil {
		return k, err
	}
	fi, err := os.Stat(k.QEMU)
	if err != nil {
		return k, err
	}
	k.QEMUBinary = fmt.Sprintf("%d bytes, modified %s", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
	out, err := exec.Command(k.QEMU, "--version").Output()
	if err != nil {
		return k, fmt.Errorf("%s --version: %w", k.QEMU, err)
	}
	k.QEMUVersion, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	return k, nil
}

// snapshotFor returns the snapshot m restores from, building it (one boot)
// when there is none yet. Builds of one key are serialised across processes.
func (s *Set) snapshotFor(ctx context.Context, m Machine) (*snapshot, error) {
	k, err := s.keyFor(m)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(m.Image.Dir, "snapshots")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, k.id())
	if sn, err := holdSnapshot(dir, k); err == nil {
		return sn, nil
	}
	if err := s.buildUnderLock(ctx, m, k, root, dir); err != nil {
		return nil, err
	}
	return holdSnapshot(dir, k)
}

// holdSnapshot loads the snapshot in dir holding its lock file shared
// until sn.release: from the moment a VM is to restore from it until its
// qemu has its files open (from then on image.InUse sees them), so that
// removeStaleSnapshots in an rlab built with another agent, which takes
// the lock exclusive, leaves it alone. Unheld, that gap (the login key
// read, the overlay made on its disk, qemu started) let another rlab
// remove the snapshot and the VM's start failed ("create overlay",
// "open the saved state"). A snapshot being built or removed (its lock
// held exclusive) is not held and reads as not there; it is loaded only
// once held, as a remover removes the folder before its lock file.
func holdSnapshot(dir string, k snapshotKey) (*snapshot, error) {
	lf, err := lockPath(dir+".lock", syscall.LOCK_SH)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("hold snapshot %s: it is being built or removed: %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("hold snapshot %s: %w", dir, err)
	}
	sn, err := loadSnapshot(dir, k)
	if err != nil {
		lf.Close()
		return nil, err
	}
	// Its last restore, which removeStaleSnapshots keeps the most recent by.
	now := time.Now()
	_ = os.Chtimes(filepath.Join(dir, snapshotMeta), now, now)
	sn.hold = lf
	return sn, nil
}

// release ends holdSnapshot's hold (closing the lock file unlocks it).
func (sn *snapshot) release() {
	if sn != nil && sn.hold != nil {
		_ = sn.hold.Close()
		sn.hold = nil
	}
}

// buildUnderLock builds the snapshot of k in dir under its lock, unless
// another rlab did meanwhile; then removes the image's stale snapshots.
func (s *Set) buildUnderLock(ctx context.Context, m Machine, k snapshotKey, root, dir string) error {
	var lf *os.File
	for {
		var err error
		if lf, err = lockPath(dir+".lock", syscall.LOCK_EX); err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock snapshot %s: %w", dir, err)
		}
		s.opts.Progress(m.Name, "waiting for another rlab building the same VM snapshot")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	defer lf.Close() // unlocks
	if _, err := loadSnapshot(dir, k); err == nil {
		return nil
	}
	_ = os.RemoveAll(dir)
	if _, err := s.buildSnapshot(ctx, m, k, dir); err != nil {
		return err
	}
	if gone := removeStaleSnapshots(root, k, keepOtherBuilds, image.InUse); len(gone) > 0 {
		s.opts.Logger.Info("vm snapshot: removed this image's snapshots of the same kind made for older agent builds (least recently restored) or an older format", "removed", strings.Join(gone, ", "), "kept", filepath.Base(dir))
	}
	return nil
}

// keepOtherBuilds is how many snapshots of one kind made for other agent
// builds outlive the build of a new one: the most recently restored. Two
// rlab builds in turn on one cache (go test's binaries and bin/rlab in
// make test-vm; an installed rlab and a development build) each restore
// their own; with none kept, each switch removed the other's and the next
// run of it rebuilt it (one boot, about a minute under TCG: CI's VM stage
// built 3752d8eaba7542c5 three times in 30 minutes).
const keepOtherBuilds = 2

// removeStaleSnapshots removes, from an image's snapshots folder root, the
// snapshots of k's kind (QEMU, accelerator, memory, CPUs, NICs, internet)
// made for an older snapshot format, which nothing restores again, and
// those made for another agent build past the keep most recently restored
// (snapshot.json's mtime, which holdSnapshot sets at each restore): each
// is about 310 MB (issue 27's leftover; `rlab image prune` removed them
// only with their image). A snapshot is kept when it is in use (a process
// has a file of it open: a restored VM's qemu reads its disk as a backing
// file), when its build lock is held, or when its snapshot.json does not
// read (a folder rlab did not finish or does not know). It returns the
// folder names it removed.
func removeStaleSnapshots(root string, k snapshotKey, keep int, inUse func(dir string) bool) []string {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type other struct {
		dir  string
		used time.Time
	}
	var older, builds []other
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || e.Name() == k.id() || !snapshotIDRe.MatchString(e.Name()) {
			continue
		}
		meta := filepath.Join(dir, snapshotMeta)
		b, err := os.ReadFile(meta)
		var old snapshotKey
		if err != nil || json.Unmarshal(b, &old) != nil || old.Format > k.Format {
			continue
		}
		format := old.Format
		if old.Format, old.Agent = k.Format, k.Agent; old != k {
			continue // another kind of VM: its labs still restore it
		}
		o := other{dir: dir}
		if fi, err := os.Stat(meta); err == nil {
			o.used = fi.ModTime()
		}
		if format < k.Format {
			older = append(older, o)
		} else {
			builds = append(builds, o)
		}
	}
	// Most recently restored first; a tie in name order, so that which
	// ones go does not depend on the directory's order.
	slices.SortFunc(builds, func(a, b other) int {
		if c := b.used.Compare(a.used); c != 0 {
			return c
		}
		return strings.Compare(a.dir, b.dir)
	})
	if keep > len(builds) {
		keep = len(builds)
	}
	var gone []string
	for _, o := range append(older, builds[keep:]...) {
		if removeUnlocked(o.dir, inUse) {
			gone = append(gone, filepath.Base(o.dir))
		}
	}
	return gone
}

// snapshotIDRe matches a snapshot folder's name (snapshotKey.id).
var snapshotIDRe = regexp.MustCompile(`^[0-9a-f]{16}$`)

// removeUnlocked removes a snapshot folder unless its build lock is held
// (snapshotFor builds under it) or it is in use, holding the lock meanwhile.
//
// It unlinks the lock file while it holds it, which is safe only because
// every locker goes through lockPath: without its check, a builder that
// had opened the lock file before the unlink locked the unlinked file
// after it, and a third rlab then opened a new file at the path and held
// "the same" lock at once (see lockPath).
func removeUnlocked(dir string, inUse func(dir string) bool) bool {
	lf, err := lockPath(dir+".lock", syscall.LOCK_EX)
	if err != nil {
		return false
	}
	defer lf.Close() // unlocks
	if inUse(dir) || os.RemoveAll(dir) != nil {
		return false
	}
	_ = os.Remove(dir + ".lock")
	return true
}

// lockPath takes a flock (how: LOCK_SH or LOCK_EX; never waits: held
// elsewhere is EWOULDBLOCK) on the file at path, made when missing, and
// returns it open; closing it unlocks. The lock is taken on an open file,
// but what others find is the path, and removeUnlocked unlinks the path
// while it holds the lock. Unchecked, three rlab of two agent builds
// could interleave so: (1) A, building snapshot D, opens D.lock (inode 1);
// (2) B, built with another agent, removes D as stale: locks inode 1,
// removes D, unlinks D.lock, unlocks; (3) A locks inode 1, unlinked, and
// builds D for minutes; (4) C, of A's build, opens D.lock, a new inode 2,
// and locks it at once: C removes A's half-built D and builds its own (or
// a second B removes the D a VM of A's is restoring from). So once locked,
// the file must still be the one at path; if it is not, the lock is
// dropped and taken again on what the path names now.
func lockPath(path string, how int) (*os.File, error) {
	for {
		lf, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, err
		}
		if lockOpened != nil {
			lockOpened(path)
		}
		if err := syscall.Flock(int(lf.Fd()), how|syscall.LOCK_NB); err != nil {
			lf.Close()
			return nil, err
		}
		held, err1 := lf.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return lf, nil
		}
		lf.Close()
		if err1 != nil {
			return nil, err1
		}
		if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
			return nil, err2
		}
	}
}

// lockOpened, when set (tests), runs between lockPath's open and its lock:
// where another process may unlink the file.
var lockOpened func(path string)

const snapshotMeta = "snapshot.json"

func loadSnapshot(dir string, k snapshotKey) (*snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, snapshotMeta))
	if err != nil {
		return nil, err
	}
	var got snapshotKey
	if err := json.Unmarshal(b, &got); err != nil || got != k {
		return nil, fmt.Errorf("snapshot %s was made for %s", dir, b)
	}
	sn := &snapshot{Dir: dir, Disk: filepath.Join(dir, "disk.qcow2"), State: filepath.Join(dir, "state.bin"),
		Login: filepath.Join(dir, "login"), Key: k}
	for _, p := range []string{sn.Disk, sn.State, sn.Login} {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	pb, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		return nil, err
	}
	if sn.HostKey, _, _, _, err = ssh.ParseAuthorizedKey(pb); err != nil {
		return nil, err
	}
	return sn, nil
}

// buildSnapshot boots the template guest (Boot itself, restore off), lets it
// settle, pauses it and saves its state, then keeps its disk, keys and state
// under dir, written last so a half-built snapshot is never used.
func (s *Set) buildSnapshot(ctx context.Context, m Machine, k snapshotKey, dir string) (*snapshot, error) {
	t0 := time.Now()
	s.opts.Progress(m.Name, "building the VM snapshot (one boot, kept for later runs)")
	work, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tm := Machine{Name: "snapshot", Slug: "snapshot", Image: m.Image, MemoryBytes: m.MemoryBytes, CPUs: m.CPUs, BootTimeout: m.BootTimeout, Internet: m.Internet}
	for j := range m.Networks {
		tm.Networks = append(tm.Networks, Network{Name: "snap" + strconv.Itoa(j)})
	}
	opts := s.opts
	opts.Boot, opts.template, opts.Detach, opts.Progress = true, true, false, nil
	opts.Accel = s.Accel
	opts.PowerdownTimeout = -1
	ts, err := Boot(ctx, []Machine{tm}, work, opts)
	if err != nil {
		return nil, fmt.Errorf("boot the template: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	defer ts.Shutdown(sctx)
	v := ts.VMs[0]
	c, err := v.Dial(ctx)
	if err != nil {
		return nil, err
	}
	// Settle: the modules every run loads, then a quiet page cache so the
	// saved state is small. pam_motd runs /etc/update-motd.d at every SSH
	// login (0.1-0.2 s each under TCG, measured) to print a motd that
	// rlab's sessions never show: off in the template.
	out, err := sshRun(ctx, c, "sed -i 's/^session[[:space:]]*optional[[:space:]]*pam_motd\\.so/#&/' /etc/pam.d/sshd; modprobe rdma_rxe; modprobe siw; sync; echo 3 > /proc/sys/vm/drop_caches; systemctl is-system-running --wait >/dev/null 2>&1; sync")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("settle the template: %w: %s", err, out)
	}
	// Then warm what every run's connection would otherwise pay for in
	// each restored VM (warmScript), after the page cache was dropped so
	// the agent's and the tools' pages are saved with the guest; a
	// warm-up that fails only costs that time.
	if ws := warmScript("/sys/block", "/dev", s.opts.Agent, s.opts.WarmAgent); ws != "" {
		tw := time.Now()
		if out, err := sshRun(ctx, c, ws+"sync\n"); err != nil {
			s.opts.Logger.Warn("vm snapshot: the agent could not be warmed in the template; restored VMs will read it from the agent disk", "err", err, "out", truncateOut(out))
		} else {
			s.opts.Logger.Info("vm snapshot: agent installed and its tool-version cache warmed in the template", "took", time.Since(tw).Round(time.Millisecond))
		}
	}
	c.Close()
	stateTmp := filepath.Join(work, "state.bin")
	if err := qmpSave(ctx, v.state.QMP, stateTmp); err != nil {
		return nil, fmt.Errorf("save the template's state: %w", err)
	}
	_ = ts.Shutdown(sctx)
	stage := filepath.Join(work, "snap")
	if err := os.Mkdir(stage, 0o700); err != nil {
		return nil, err
	}
	moves := [][2]string{
		{filepath.Join(v.dir, "overlay.qcow2"), "disk.qcow2"},
		{stateTmp, "state.bin"},
		{v.IdentityFile, "login"},
		{v.IdentityFile + ".pub", "login.pub"},
		{filepath.Join(v.dir, "ssh_host_ed25519_key.pub"), "host_key.pub"},
	}
	for _, mv := range moves {
		if err := os.Rename(mv[0], filepath.Join(stage, mv[1])); err != nil {
			return nil, err
		}
	}
	// The disk is a backing file from now on: nothing may write it.
	if err := os.Chmod(filepath.Join(stage, "disk.qcow2"), 0o400); err != nil {
		return nil, err
	}
	kb, _ := json.MarshalIndent(k, "", "  ")
	if err := os.WriteFile(filepath.Join(stage, snapshotMeta), append(kb, '\n'), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(stage, dir); err != nil {
		return nil, err
	}
	s.opts.Logger.Info("vm snapshot built", "dir", dir, "took", time.Since(t0).Round(time.Millisecond))
	return loadSnapshot(dir, k)
}

// carryToolsCache renames the agents' tool-version caches of machine id $o
// to machine id $n (both 32 hex digits, else nothing is touched), rewriting
// the id the file holds; symlinks are left alone.
const carryToolsCache = `case $o in *[!0-9a-f]*|'') o=;; esac
if [ ${#o} = 32 ]; then for c in "$HOME"/.cache/rlab/agent/*/tools-*-"$o".json; do
	[ -f "$c" ] && [ ! -L "$c" ] || continue
	t="${c%-$o.json}-$n.json"
	(umask 077; sed "s/\"machine_id\":\"$o\"/\"machine_id\":\"$n\"/" "$c" >"$t.rlab") && mv -f "$t.rlab" "$t" && rm -f "$c" || rm -f "$t.rlab"
done; fi
`

// warmRunID is the run id the template's agent serves its one request
// under; its work dir is removed before the save.
const warmRunID = "rlab-snapshot-warm"

// warmScript installs the agent from the agent disk into its per-hash
// folder (the same guest function a run's connection uses,
// engine/agentdisk) and feeds it req, keeping its input open until the
// answer to request 1 came back (at EOF the agent ends what is in flight),
// so that the agent leaves its tool-version cache beside itself. "" when
// there is no agent or no request.
func warmScript(sysBlock, devDir string, agent, req []byte) string {
	if len(agent) == 0 || len(req) == 0 || bytes.ContainsAny(req, "'\n\r\x00") {
		return ""
	}
	sum := sha256.Sum256(agent)
	h := hex.EncodeToString(sum[:])
	var b strings.Builder
	// No set -e: the disk reader's own loop meets reads that fail (a root
	// disk's empty serial) and says itself what went wrong.
	b.WriteString(agentdisk.GuestFunc(sysBlock, devDir) + "\n")
	fmt.Fprintf(&b, "h=%s; a=\"$HOME/.cache/rlab/agent/$h/rlab-agent\"\n", h)
	b.WriteString("rlab_disk || exit 1\n")
	b.WriteString(`f=$(mktemp -d) && mkfifo -m 600 "$f/in" || exit 1` + "\n")
	fmt.Fprintf(&b, "\"$a\" serve --run-id %s <\"$f/in\" >\"$f/out\" 2>\"$f/err\" &\np=$!\nexec 3>\"$f/in\"\n", warmRunID)
	fmt.Fprintf(&b, "printf '%%s\\n' '%s' >&3\n", req)
	b.WriteString(`i=0; until grep -q -e '^{"id":1,"result"' -e '^{"id":1,"error"' "$f/out"; do i=$((i+1)); [ $i -le 1200 ] || { echo "no answer from the agent"; cat "$f/err"; exit 1; }; sleep 0.1; done` + "\n")
	b.WriteString(`exec 3>&-; wait $p || true; grep -q '^{"id":1,"result"' "$f/out" || { head -c 2000 "$f/out"; exit 1; }` + "\n")
	fmt.Fprintf(&b, "rm -rf \"$f\" \"$HOME/.cache/rlab/runs/%s\"; ls \"$(dirname \"$a\")\"\n", warmRunID)
	return b.String()
}

func truncateOut(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// qmpSave pauses the guest and writes its state to path through QEMU's
// migration to a file descriptor handed over the QMP socket (no shell).
func qmpSave(ctx context.Context, sock, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	q, err := dialQMP(ctx, sock, 30*time.Second)
	if err != nil {
		return err
	}
	defer q.Close()
	if _, err := q.do("stop", nil); err != nil {
		return err
	}
	if err := q.sendFD("rlabstate", f); err != nil {
		return err
	}
	if _, err := q.do("migrate", map[string]any{"uri": "fd:rlabstate"}); err != nil {
		return err
	}
	for {
		r, err := q.do("query-migrate", nil)
		if err != nil {
			return err
		}
		var st struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		_ = json.Unmarshal(r, &st)
		switch st.Status {
		case "completed":
			return f.Sync()
		case "failed", "cancelled":
			return fmt.Errorf("migration %s: %s", st.Status, st.ErrorDesc)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// qmpResume waits until an incoming migration has been read, then lets the
// guest run.
// errBadRestore is a saved state QEMU refused: the snapshot is unusable.
var errBadRestore = errors.New("the saved guest was refused")

func qmpResume(ctx context.Context, sock string, exited <-chan struct{}) error {
	q, err := dialQMP(ctx, sock, 30*time.Second)
	if err != nil {
		return err
	}
	defer q.Close()
	for {
		r, err := q.do("query-status", nil)
		if err != nil {
			return err
		}
		var st struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(r, &st)
		switch st.Status {
		case "inmigrate":
		case "running":
			return nil
		case "paused", "postmigrate", "prelaunch", "restore-vm":
			_, err := q.do("cont", nil)
			return err
		default:
			return fmt.Errorf("%w: after the restore the guest is %q", errBadRestore, st.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("%w: qemu exited while reading the saved state", errBadRestore)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sshRun runs one command in a session of c and returns its combined output.
func sshRun(ctx context.Context, c *ssh.Client, cmd string) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	out, err := sess.CombinedOutput(cmd)
	return string(out), err
}

// identityScript is what makes a restored guest this run's VM. Every value
// in it is made by rlab and checked here (MAC from mac(), addresses parsed,
// hostname from the slug with anything else replaced), and is single-quoted.
func identityScript(hostname string, macs []string, nets []Network, authorized []byte) (string, error) {
	q := func(s string) (string, error) {
		if strings.ContainsAny(s, "'\\\n\r\x00") {
			return "", fmt.Errorf("refusing %q in the identity script", s)
		}
		return "'" + s + "'", nil
	}
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString(clockScript)
	seed := make([]byte, 64)
	if _, err := rand.Read(seed); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "printf %%s %s > /dev/urandom\n", hex.EncodeToString(seed))
	// Every guest restored from one snapshot had the template's
	// machine-id, and udev derives a virtual netdev's MAC from it
	// (MACAddressPolicy=persistent): two restored VMs gave a macvlan of the
	// same name the same MAC, and ARP between them failed. Each VM gets its
	// own; udevd, which may hold the old one, is restarted. (That takes
	// 0.75-2.1 s under TCG, measured; not waiting for it saves little, as
	// its start then takes the guest's one vCPU from the SSH logins that
	// follow, and would leave a window where udevd has the old id.)
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", err
	}
	// The agent's tool-version cache, warmed in the template (warmScript),
	// is keyed by the machine id too (agent/server/factscache.go): it is
	// carried over to the new one. Sound here: a restored VM has its
	// template's disk, and each entry still checks its binary's identity.
	fmt.Fprintf(&b, "n=%s; o=$(cat /etc/machine-id 2>/dev/null || true)\n", hex.EncodeToString(id))
	b.WriteString(carryToolsCache)
	b.WriteString("printf '%s\\n' \"$n\" > /etc/machine-id.rlab\nchmod 0444 /etc/machine-id.rlab\nmv -f /etc/machine-id.rlab /etc/machine-id\nsystemctl try-restart systemd-udevd.service\n")
	h, err := q(hostname)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "hostname %s\necho %s > /etc/hostname\n", h, h)
	for j, n := range nets {
		dev := "eth" + strconv.Itoa(j+1)
		mtu := n.MTU
		if mtu == 0 {
			mtu = 1500
		}
		m, err := q(macs[j])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "ip link set dev %s down\nip link set dev %s address %s mtu %d addrgenmode none\nip addr flush dev %s\n", dev, dev, m, mtu, dev)
		if n.Address != "" {
			p, err := netip.ParsePrefix(n.Address)
			if err != nil {
				return "", fmt.Errorf("data address %q: %w", n.Address, err)
			}
			fmt.Fprintf(&b, "ip addr add %s dev %s\n", p.String(), dev)
		}
		fmt.Fprintf(&b, "ip link set dev %s up\n", dev)
	}
	ak, err := q(strings.TrimSpace(string(authorized)))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "umask 077\nprintf '%%s\\n' %s > /root/.ssh/authorized_keys.rlab\nmv -f /root/.ssh/authorized_keys.rlab /root/.ssh/authorized_keys\n", ak)
	return b.String(), nil
}

// The clock of a restored guest is where it was at the save (minutes or
// days ago), and setting it to a time the host read before the SSH
// session started left it behind by that session's setup: 1-2 s under
// TCG on a busy host (the agent's log stamped a step before the host
// began it). So the host measures the guest's offset the way NTP does,
// bracketed: it stamps a line it sends, the guest answers with its own
// clock (bash's $EPOCHREALTIME, no fork), the host stamps the answer; of
// clockPings exchanges the one with the shortest round trip gives the
// offset, within half that round trip. The guest then moves its clock by
// the offset relative to itself (`date -s "+D seconds"` reads the clock
// when it runs), so the time date(1) takes to start adds no error.
const clockPings = 3

// clockScript is the guest's side of the exchange (identityScript begins
// with it).
var clockScript = fmt.Sprintf(`LC_ALL=C; export LC_ALL
for i in %s; do IFS= read -r _; echo "rlab-clock ${EPOCHREALTIME:-$(date +%%s.%%N)}"; done
IFS= read -r d
date -u -s "$d seconds" >/dev/null
`, strings.TrimSpace(strings.Repeat("x ", clockPings)))

// clockOffset is how far a guest's clock was from this machine's.
type clockOffset struct {
	Offset time.Duration // host minus guest
	Within time.Duration // half the round trip of the exchange measured
}

// measureClock runs the host's side of clockScript's pings on the
// guest's stdin (w) and stdout (r).
func measureClock(r *bufio.Reader, w io.Writer) (clockOffset, error) {
	best := clockOffset{Within: -1}
	for i := 0; i < clockPings; i++ {
		t1 := time.Now()
		if _, err := io.WriteString(w, "ping\n"); err != nil {
			return best, err
		}
		line, err := r.ReadString('\n')
		t4 := time.Now()
		if err != nil {
			return best, fmt.Errorf("the guest's clock: %w (read %q)", err, line)
		}
		g, err := parseEpoch(strings.TrimPrefix(strings.TrimSpace(line), "rlab-clock "))
		if err != nil {
			return best, fmt.Errorf("the guest's clock: %w", err)
		}
		half := t4.Sub(t1) / 2
		if best.Within < 0 || half < best.Within {
			best = clockOffset{Offset: t1.Add(half).Sub(g), Within: half}
		}
	}
	return best, nil
}

// parseEpoch reads seconds since the epoch with an optional fraction
// ("1795823706.287172"), as $EPOCHREALTIME and date +%s.%N print it. bash
// writes the fraction after the locale's decimal point, so a comma is
// read too (clockScript sets LC_ALL=C first; a guest whose shell ignored
// that still answers in a form read right).
func parseEpoch(s string) (time.Time, error) {
	sep := "."
	if !strings.Contains(s, ".") {
		sep = ","
	}
	sec, frac, _ := strings.Cut(s, sep)
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || sec == "" || sec[0] == '+' || sec[0] == '-' || len(frac) > 9 {
		return time.Time{}, fmt.Errorf("not a time: %q", s)
	}
	var ns int64
	if frac != "" {
		f, err := strconv.ParseUint(frac, 10, 64)
		if err != nil || frac[0] == '+' {
			return time.Time{}, fmt.Errorf("not a time: %q", s)
		}
		ns = int64(f)
		for i := len(frac); i < 9; i++ {
			ns *= 10
		}
	}
	return time.Unix(n, ns), nil
}

// runIdentity runs identityScript on c: the clock exchange on its stdin and
// stdout, then the rest.
func runIdentity(ctx context.Context, c *ssh.Client, script string) (clockOffset, error) {
	sess, err := c.NewSession()
	if err != nil {
		return clockOffset{}, err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	in, err := sess.StdinPipe()
	if err != nil {
		return clockOffset{}, err
	}
	outp, err := sess.StdoutPipe()
	if err != nil {
		return clockOffset{}, err
	}
	var stderr bytes.Buffer
	sess.Stderr = &stderr
	if err := sess.Start(script); err != nil {
		return clockOffset{}, err
	}
	r := bufio.NewReader(outp)
	off, cerr := measureClock(r, in)
	if cerr == nil {
		_, cerr = fmt.Fprintf(in, "%+.9f\n", off.Offset.Seconds())
	}
	in.Close()
	rest, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	if err := sess.Wait(); err != nil || cerr != nil {
		return off, fmt.Errorf("%w: %s", errors.Join(cerr, err), strings.TrimSpace(string(rest)+stderr.String()))
	}
	return off, nil
}

// identify makes a restored guest this run's VM (identityScript) on c,
// logged in with the snapshot's key, then switches v to the run's login key.
func (s *Set) identify(ctx context.Context, v *VM, c *ssh.Client, idFile string, login *keyPair) error {
	var macs []string
	for j := range v.Networks {
		macs = append(macs, mac(v.idx, j+1))
	}
	hostname := strings.Trim(hostnameBad.ReplaceAllString(v.Slug, "-"), "-")
	script, err := identityScript(hostname, macs, v.Networks, login.authorizedLine())
	if err != nil {
		return err
	}
	off, err := runIdentity(ctx, c, script)
	if err != nil {
		return fmt.Errorf("give the restored guest its identity: %w", err)
	}
	s.opts.Logger.Info("restored vm's clock set", "host", v.Name, "was_off", off.Offset.Round(time.Millisecond), "within", off.Within.Round(time.Millisecond))
	v.IdentityFile = idFile
	// The run's key now logs in, and only it.
	c2, err := v.Dial(ctx)
	if err != nil {
		return fmt.Errorf("log in with the run's key after the restore: %w", err)
	}
	c2.Close()
	return nil
}

// stopNow kills v's qemu (a failed restore: nothing in it to keep) and
// waits until it is reaped.
func (v *VM) stopNow() error {
	if v.cmd == nil || v.cmd.Process == nil {
		return nil
	}
	_ = v.cmd.Process.Kill()
	select {
	case <-v.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("qemu pid %d did not exit after SIGKILL", v.PID)
	}
}
