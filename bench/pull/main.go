// Command pull benchmarks artifact pulls from network-namespace sshd hosts
// (engine/testbed): rlab's engine/remote Agent.Pull (files up to 1 MiB in
// one `rlab-agent bundle` tar stream, bigger ones by SFTP with 255 KiB
// reads; and, for reference, files.read through the agent, 8 at a time, as
// steps.Fetch did for small files) against OpenSSH scp and sftp on the same
// files:
//
//   - one 1 GiB capture from one host;
//   - 1,000 small files (1–8 KiB) from one host;
//   - 10 MiB from each of 100 hosts at once.
//
// Both sides are connected before the clock starts (rlab's agents are
// running, as at a run's fetch step; OpenSSH has a ControlMaster per host),
// so the figures are transfer, not login. Both use the same key exchange and
// cipher (curve25519-sha256, aes128-gcm@openssh.com). Rounds alternate the
// order; medians are printed as Markdown, raw timings written as JSON.
//
//	make build   # the embedded agent must have the bundle command
//	flock /tmp/rlab-bench.lock go run ./bench/pull -hosts 100 -rounds 5
//
// -cpuprofile FILE profiles the controller during one extra, untimed rlab
// run of each selected case.
//
// Needs root and openssh-server; no QEMU VM may be running.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"runtime/pprof"
)

const (
	kex    = "curve25519-sha256"      // what x/crypto settles on with OpenSSH 9.2
	cipher = "aes128-gcm@openssh.com" // x/crypto's first choice; OpenSSH's default is chacha20
	small  = 256 << 10                // steps.SmallFile
)

func main() {
	builtin.Register() // the tool families whose programs facts probes
	n := flag.Int("hosts", 100, "hosts for the many-hosts case")
	rounds := flag.Int("rounds", 5, "alternating rounds")
	bigMiB := flag.Int("big-mib", 1024, "size of the one big file (MiB)")
	smallN := flag.Int("small", 1000, "number of small files")
	midMiB := flag.Int("mid-mib", 10, "file size per host in the many-hosts case (MiB)")
	out := flag.String("out", "bench/pull/out", "folder for raw results")
	only := flag.String("only", "", "run only these cases: comma-separated of big, small, many")
	flag.StringVar(&dstRoot, "dst", "", "folder the pulled files land in (default: a temp folder on the disk; /dev/shm takes the disk out)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of one extra rlab run of each selected case here")
	flag.Parse()
	groups = map[string]bool{}
	for _, g := range strings.Split(*only, ",") {
		if g != "" {
			groups[g] = true
		}
	}
	if err := run(*n, *rounds, *bigMiB, *smallN, *midMiB, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/pull:", err)
		os.Exit(1)
	}
}

// groups are the cases to run (-only); empty: all.
var groups map[string]bool

var cpuProfile, dstRoot string

// knownHosts is the bed's known_hosts, for OpenSSH.
var knownHosts, keyFile string

type hostConn struct {
	h      *testbed.Host
	agent  *remote.Agent
	client *sshx.Client
	ctl    string // OpenSSH ControlPath
}

func run(n, rounds, bigMiB, smallN, midMiB int, out string) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if benchutil.QEMURunning() {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rlab-bench-pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bed, err := testbed.Up(dir, testbed.Options{Hosts: n})
	if err != nil {
		return err
	}
	defer bed.Down()
	ctx := context.Background()
	knownHosts, keyFile = bed.KnownHosts, bed.KeyFile

	conns, closeAll, err := connect(ctx, bed, dir)
	defer closeAll()
	if err != nil {
		return err
	}
	// The bed's hosts share this machine's file system: lay the files out in
	// each agent's work dir directly.
	uid, gid := owner(bed.User)
	h0 := conns[0]
	if err := writeFile(filepath.Join(h0.agent.Hello.WorkDir, "big", "capture.pcap"), int64(bigMiB)<<20, 1, uid, gid); err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < smallN; i++ {
		size := int64(1024 + rnd.IntN(7*1024))
		if err := writeFile(filepath.Join(h0.agent.Hello.WorkDir, "small", fmt.Sprintf("f%04d.log", i)), size, uint64(i+2), uid, gid); err != nil {
			return err
		}
	}
	for i, c := range conns {
		if err := writeFile(filepath.Join(c.agent.Hello.WorkDir, "mid", "capture.pcap"), int64(midMiB)<<20, uint64(100000+i), uid, gid); err != nil {
			return err
		}
	}
	dst := filepath.Join(dir, "dst")
	if dstRoot != "" {
		d, err := os.MkdirTemp(dstRoot, "rlab-bench-pull-dst-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dst = filepath.Join(d, "dst")
	}
	fresh := func() string {
		os.RemoveAll(dst)
		os.MkdirAll(dst, 0o755)
		return dst
	}
	bigMB := float64(bigMiB) * (1 << 20) / 1e6
	// The listing (the agent hashes every file) taken once, to time Pull alone.
	var bigList proto.FilesList
	if err := h0.agent.Call(ctx, proto.MethodFilesList, proto.FilesListParams{Dir: "big"}, &bigList); err != nil {
		return fmt.Errorf("list big on %s: %w", h0.h.Name, err)
	}
	type cse struct {
		name  string
		group string
		fn    func() error
	}
	cases := []cse{
		{"rlab: list (big files unhashed) + Pull", "big", func() error { return rlabPull(ctx, h0, "big", fresh()) }},
		{"rlab: Pull only (listed and hashed beforehand)", "big", func() error { return c0Pull(ctx, h0, bigList, fresh()) }},
		{"scp", "big", func() error {
			return ossh("scp", h0, "-q", bed.User+"@"+h0.h.Addr+":"+filepath.Join(h0.agent.Hello.WorkDir, "big", "capture.pcap"), fresh())
		}},
		{"sftp get", "big", func() error {
			return sftpBatch(h0, bed.User, dir, "get "+filepath.Join(h0.agent.Hello.WorkDir, "big", "capture.pcap")+" "+fresh()+"/\n")
		}},
		{"rlab: list + Pull (one bundle)", "small", func() error { return rlabPull(ctx, h0, "small", fresh()) }},
		{"rlab: list + files.read, 8 at a time (steps.Fetch before the bundle)", "small", func() error { return rlabSmall(ctx, h0, "small", fresh()) }},
		{"sftp, one get per file (one session)", "small", func() error {
			d := fresh()
			var b strings.Builder
			for i := 0; i < smallN; i++ {
				fmt.Fprintf(&b, "get %s %s/\n", filepath.Join(h0.agent.Hello.WorkDir, "small", fmt.Sprintf("f%04d.log", i)), d)
			}
			return sftpBatch(h0, bed.User, dir, b.String())
		}},
		{"scp -r of the folder", "small", func() error {
			return ossh("scp", h0, "-q", "-r", bed.User+"@"+h0.h.Addr+":"+filepath.Join(h0.agent.Hello.WorkDir, "small"), fresh())
		}},
		{fmt.Sprintf("rlab: list + Pull on %d hosts at once", len(conns)), "many", func() error {
			d := fresh()
			return each(conns, func(c *hostConn) error { return rlabPull(ctx, c, "mid", filepath.Join(d, c.h.Name)) })
		}},
		{fmt.Sprintf("%d parallel scp", len(conns)), "many", func() error {
			d := fresh()
			return each(conns, func(c *hostConn) error {
				return ossh("scp", c, "-q", bed.User+"@"+c.h.Addr+":"+filepath.Join(c.agent.Hello.WorkDir, "mid", "capture.pcap"), filepath.Join(d, c.h.Name+".pcap"))
			})
		}},
	}
	if len(groups) > 0 {
		var keep []cse
		for _, c := range cases {
			if groups[c.group] {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		for _, c := range cases {
			if strings.HasPrefix(c.name, "rlab: list") {
				if err := c.fn(); err != nil {
					return fmt.Errorf("profiled run of %s: %w", c.name, err)
				}
			}
		}
		pprof.StopCPUProfile()
		f.Close()
	}
	times := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		order := make([]int, len(cases))
		for i := range order {
			order[i] = i
			if r%2 == 1 {
				order[i] = len(cases) - 1 - i
			}
		}
		for _, i := range order {
			c := cases[i]
			start := time.Now()
			if err := c.fn(); err != nil {
				return fmt.Errorf("round %d, %s / %s: %w", r, c.group, c.name, err)
			}
			d := time.Since(start).Seconds()
			times[c.group+": "+c.name] = append(times[c.group+": "+c.name], d)
			fmt.Fprintf(os.Stderr, "round %d  %-6s %-52s %.3fs\n", r, c.group, c.name, d)
			if benchutil.QEMURunning() {
				return fmt.Errorf("a QEMU VM started during round %d: the numbers would measure it; run again when it is done", r)
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	raw, _ := json.MarshalIndent(map[string]any{"hosts": len(conns), "rounds": rounds, "big_mib": bigMiB, "small_files": smallN, "mid_mib": midMiB,
		"kex": kex, "cipher": cipher, "dst": dst, "seconds": times, "when": time.Now().UTC(), "loadavg": strings.TrimSpace(string(load))}, "", "  ")
	os.WriteFile(filepath.Join(out, "pull.json"), raw, 0o644)
	refs := map[string]string{"big": "scp", "small": "sftp, one get per file (one session)", "many": fmt.Sprintf("%d parallel scp", len(conns))}
	fmt.Printf("| case | side | seconds (median of %d) | throughput | reference / this |\n|---|---|---|---|---|\n", rounds)
	for _, c := range cases {
		m := benchutil.Median(times[c.group+": "+c.name])
		ref := benchutil.Median(times[c.group+": "+refs[c.group]])
		var tp string
		switch c.group {
		case "big":
			tp = fmt.Sprintf("%.0f MB/s", bigMB/m)
		case "small":
			tp = fmt.Sprintf("%.0f files/s", float64(smallN)/m)
		case "many":
			tp = fmt.Sprintf("%.0f MB/s", float64(len(conns)*midMiB)*(1<<20)/1e6/m)
		}
		fmt.Printf("| %s | %s | %.3f | %s | %.2fx |\n", c.group, c.name, m, tp, ref/m)
	}
	fmt.Printf("\nload average at the end: %s\n", strings.TrimSpace(string(load)))
	return nil
}

// connect starts an agent on every host (as `rlab run` does before its
// fetch step) and an OpenSSH ControlMaster to it.
func connect(ctx context.Context, bed *testbed.Bed, dir string) ([]*hostConn, func(), error) {
	d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{bed.KnownHosts}, SSHConfig: "none", AgentSocket: "none", HandshakeTimeout: 30 * time.Second})
	if err != nil {
		return nil, func() {}, err
	}
	bin, err := dist.Binary("linux", runtime.GOARCH)
	if err != nil {
		return nil, func() {}, err
	}
	if !bytes.Contains(bin, []byte(proto.BundleCommand+" --work-dir")) {
		return nil, func() {}, fmt.Errorf("the embedded agent has no %q command: make build first", proto.BundleCommand)
	}
	ag := remote.NewAgents(func(goos, goarch string) ([]byte, error) {
		if goarch != runtime.GOARCH {
			return nil, remote.ErrNotBuilt
		}
		return bin, nil
	})
	conns := make([]*hostConn, len(bed.Hosts))
	var closers []func()
	var mu sync.Mutex
	closeAll := func() {
		for _, c := range closers {
			c()
		}
		d.Close()
	}
	errs := make([]error, len(bed.Hosts))
	sshx.ForEach(ctx, len(bed.Hosts), 32, func(ctx context.Context, i int) {
		h := bed.Hosts[i]
		c, err := d.Dial(ctx, sshx.Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true})
		if err != nil {
			errs[i] = err
			return
		}
		a, _, err := ag.Open(ctx, c, remote.StartOptions{Host: h.Name, RunID: "bench-pull"})
		if err != nil {
			c.Close()
			errs[i] = err
			return
		}
		hc := &hostConn{h: h, agent: a, client: c, ctl: filepath.Join(dir, "cm-"+h.Name)}
		m := exec.Command("ssh", append(sshOpts(hc), "-o", "ControlMaster=yes", "-o", "ControlPersist=yes", "-fN", bed.User+"@"+h.Addr)...)
		if out, err := m.CombinedOutput(); err != nil {
			errs[i] = fmt.Errorf("ssh ControlMaster to %s: %v: %s", h.Addr, err, out)
		}
		mu.Lock()
		closers = append(closers, func() {
			a.Close()
			c.Close()
			exec.Command("ssh", append(sshOpts(hc), "-O", "exit", bed.User+"@"+h.Addr)...).Run()
		})
		mu.Unlock()
		conns[i] = hc
	})
	for _, e := range errs {
		if e != nil {
			return conns, closeAll, e
		}
	}
	return conns, closeAll, nil
}

func sshOpts(c *hostConn) []string {
	return []string{"-F", "none", "-o", "BatchMode=yes", "-o", "KexAlgorithms=" + kex, "-o", "Ciphers=" + cipher,
		"-i", keyFile, "-o", "IdentitiesOnly=yes", "-o", "ControlPath=" + c.ctl, "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + knownHosts, "-o", "GlobalKnownHostsFile=/dev/null"}
}

// ossh runs scp/sftp over the host's ControlMaster (argv, no shell).
func ossh(tool string, c *hostConn, args ...string) error {
	out, err := exec.Command(tool, append(sshOpts(c), args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s from %s: %v: %s", tool, c.h.Addr, err, benchutil.Tail(string(out), 2000))
	}
	return nil
}

func sftpBatch(c *hostConn, user, dir, batch string) error {
	f := filepath.Join(dir, "sftp-batch")
	if err := os.WriteFile(f, []byte(batch), 0o600); err != nil {
		return err
	}
	return ossh("sftp", c, "-q", "-b", f, user+"@"+c.h.Addr)
}

func rlabPull(ctx context.Context, c *hostConn, sub, dst string) error {
	// Big files listed unhashed: the host hashes them while they are
	// copied (as steps.Fetch should list).
	var list proto.FilesList
	if err := c.agent.Call(ctx, proto.MethodFilesList, proto.FilesListOptions{FilesListParams: proto.FilesListParams{Dir: sub}, HashMax: remote.BundleMax}, &list); err != nil {
		return fmt.Errorf("list %s on %s: %w", sub, c.h.Name, err)
	}
	if len(list.Files) == 0 {
		return fmt.Errorf("list %s on %s: no files", sub, c.h.Name)
	}
	_, err := c.agent.Pull(ctx, list.Files, dst)
	return err
}

func c0Pull(ctx context.Context, c *hostConn, list proto.FilesList, dst string) error {
	_, err := c.agent.Pull(ctx, list.Files, dst)
	return err
}

// rlabSmall is steps.Fetch's small-file path: files.read, 8 at a time,
// sha256-checked, .part then rename.
func rlabSmall(ctx context.Context, c *hostConn, sub, dst string) error {
	var list proto.FilesList
	if err := c.agent.Call(ctx, proto.MethodFilesList, proto.FilesListParams{Dir: sub}, &list); err != nil {
		return fmt.Errorf("list %s on %s: %w", sub, c.h.Name, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 8)
	)
	for _, f := range list.Files {
		if f.Size > small {
			return fmt.Errorf("%s is %d bytes: not a small file", f.Path, f.Size)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := readSmall(ctx, c.agent, f, dst)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func readSmall(ctx context.Context, a *remote.Agent, f proto.FileInfo, dst string) error {
	p, err := remote.ConfinedPath(dst, f.Path)
	if err != nil {
		return err
	}
	var fd proto.FileData
	if err := a.Call(ctx, proto.MethodFilesRead, proto.FilesReadParams{Path: f.Path, MaxBytes: small}, &fd); err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	sum := sha256.Sum256(fd.Data)
	if int64(len(fd.Data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
		return fmt.Errorf("read %s: %d bytes, sha256 mismatch", f.Path, len(fd.Data))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p+".part", fd.Data, 0o644); err != nil {
		return err
	}
	return os.Rename(p+".part", p)
}

// each runs fn for every host at once and returns the first error.
func each(conns []*hostConn, fn func(*hostConn) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(c) }()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeFile writes size pseudo-random bytes (incompressible, like a pcap of
// random payloads) owned by the login user.
func writeFile(p string, size int64, seed uint64, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	os.Chown(filepath.Dir(p), uid, gid)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		for i := 0; i+8 <= len(buf); i += 8 {
			v := r.Uint64()
			for k := 0; k < 8; k++ {
				buf[i+k] = byte(v >> (8 * k))
			}
		}
		k := int64(len(buf))
		if left < k {
			k = left
		}
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		left -= k
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chown(p, uid, gid)
}

func owner(name string) (int, int) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}
