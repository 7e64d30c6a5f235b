// Command prepare benchmarks preparing N hosts — connect, ship the agent,
// gather facts, preflight — with `rlab check` against an Ansible playbook
// doing the same job, on the network-namespace sshd test bed
// (engine/testbed; MaxStartups raised), for each N of -hosts:
//
//   - rlab cold: the agent cache in the bed's shared home removed first,
//     then `rlab check -json` of a generated lab of N hosts with one rxe each
//     (exit 1 on a kernel without rdma_rxe is expected; a round counts when
//     every host was reached and checked, and, as for every cold case, when
//     it shipped to ≥ 90% of the hosts: they share one home, and a host that
//     connects late may find a sibling's fresh install);
//   - rlab warm: the same right after (agent cached);
//   - rlab warm --persist, when `rlab check --help` offers --persist: a first
//     run starts the connection mux, the timed one reuses it;
//   - Ansible cold and warm: ansible-playbook copying the same agent binary
//     to a per-user cache path (copy module, checksum), running it as root
//     for one facts request and asserting what preflight checks
//     (pipelining on, fact gathering off, forks = N, same key and key
//     exchange), once with ControlMaster=no (every run logs in afresh, as
//     rlab does) and once with Ansible's default ControlPersist=60s;
//   - the floor: N parallel OpenSSH `ssh host true` logins, same key exchange.
//
// Rounds alternate the order of the groups; medians, ratios and raw rounds
// are printed as Markdown and kept with the raw outputs under -out.
// -rlab-ref adds a second rlab (the previous build) cold and warm to the
// same rounds. A cold run's copies are its bytes shipped over what one
// copy costs on the wire for that rlab (a cold check of one host).
//
//	make build
//	flock /tmp/rlab-bench.lock go run ./bench/prepare -rlab bin/rlab -hosts 10,50,200 -rounds 5
//
// Needs root, openssh-server and ansible; no QEMU VM may be running.
package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

func main() {
	builtin.Register() // the tool families whose programs facts probes
	rlab := flag.String("rlab", "bin/rlab", "rlab binary (with the agent embedded)")
	hosts := flag.String("hosts", "10,50,200", "host counts, comma-separated")
	rounds := flag.Int("rounds", 5, "alternating rounds per host count")
	roundsFor := flag.String("rounds-for", "", "fewer or more rounds for some host counts: HOSTS=ROUNDS,...")
	persist := flag.Duration("persist", 2*time.Minute, "--persist DURATION for the rlab --persist case (run when rlab check offers it); 0: skip it")
	out := flag.String("out", "bench/prepare/out", "folder for raw results")
	flag.StringVar(&rlabRef, "rlab-ref", "", "a second rlab (e.g. the previous build) timed cold and warm in the same rounds, next to -rlab")
	flag.Parse()
	ns, err := parseHosts(*hosts)
	if err == nil {
		var rf map[int]int
		if rf, err = parseRoundsFor(*roundsFor); err == nil {
			err = run(*rlab, ns, *rounds, rf, *persist, *out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/prepare:", err)
		os.Exit(1)
	}
}

var rlabRef string

// runRec is one timed run of one case.
type runRec struct {
	Round   int     `json:"round"`
	Seconds float64 `json:"seconds"`
	Exit    int     `json:"exit"`
	// Valid: every host reached and checked (see checkVerdict, playVerdict).
	Valid bool   `json:"valid"`
	Why   string `json:"why,omitempty"`
	// Shipped: agent copies sent (rlab: bytes shipped / one copy on the wire; Ansible:
	// hosts whose copy task changed). The hosts share one home, so a cold
	// run may find the agent a sibling host just installed.
	Shipped int `json:"shipped"`
}

type caseRes struct {
	Key  string   `json:"key"`
	Name string   `json:"name"`
	Runs []runRec `json:"runs"`
}

func (c *caseRes) median() (float64, int) {
	var xs []float64
	for _, r := range c.Runs {
		if r.Valid {
			xs = append(xs, r.Seconds)
		}
	}
	return benchutil.Median(xs), len(xs)
}

type nRes struct {
	Hosts   int        `json:"hosts"`
	Rounds  int        `json:"rounds"`
	Cases   []*caseRes `json:"cases"`
	LoadEnd string     `json:"loadavg_end"`
}

func (n *nRes) get(key string) *caseRes {
	for _, c := range n.Cases {
		if c.Key == key {
			return c
		}
	}
	return nil
}

// bench is the state shared by every host count.
type bench struct {
	rlab, dir, out string
	ref            string // -rlab-ref, absolute; "" without
	bed            *testbed.Bed
	agent          agentJob
	agentSize      int64
	// copies: per rlab binary, what one agent copy costs on the wire (a cold
	// check of one host) and the cache folder of its agent.
	copies    map[string]agentCopy
	persist   time.Duration
	xdg       string // XDG_RUNTIME_DIR for rlab: where its mux lives
	saveRound func(*nRes)
	log       io.Writer
}

func run(rlab string, ns []int, rounds int, roundsFor map[int]int, persist time.Duration, out string) error {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil || os.Geteuid() != 0 {
		return fmt.Errorf("needs root and openssh-server (testdata/deps.sh)")
	}
	if benchutil.QEMURunning() {
		return fmt.Errorf("a QEMU VM is running: benchmarks would measure it; stop it first")
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		return fmt.Errorf("ansible-playbook not found: apt-get install ansible")
	}
	rlabAbs, err := filepath.Abs(rlab)
	if err != nil {
		return err
	}
	help, _ := exec.Command(rlabAbs, "check", "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("--persist")) {
		persist = 0
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(out, "prepare-rounds.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	b := &bench{rlab: rlabAbs, out: out, persist: persist, log: io.MultiWriter(os.Stderr, logf)}
	if rlabRef != "" {
		if b.ref, err = filepath.Abs(rlabRef); err != nil {
			return err
		}
	}
	if b.dir, err = os.MkdirTemp("", "rlab-bench-prepare-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	// rlab's connection mux is one per user: a private folder keeps this
	// run's apart from any other rlab of this user (tests, other benches).
	b.xdg = filepath.Join(b.dir, "x")
	if err := os.Mkdir(b.xdg, 0o700); err != nil {
		return err
	}
	t0 := time.Now()
	b.bed, err = testbed.Up(b.dir, testbed.Options{Hosts: slices.Max(ns)})
	if err != nil {
		return err
	}
	defer b.bed.Down()
	fmt.Fprintf(b.log, "bed of %d hosts up in %v; rlab %s; persist %v\n", len(b.bed.Hosts), time.Since(t0).Round(time.Millisecond), rlabAbs, persist)

	var results []*nRes
	// Written after each round and host count, so a long run stopped
	// midway keeps what it measured.
	save := func(results []*nRes) error {
		raw, _ := json.MarshalIndent(map[string]any{
			"kex": benchutil.Kex, "when": time.Now().UTC(), "rlab": rlabAbs, "rlab_ref": b.ref, "agent_bytes": b.agentSize, "copy_bytes": copyBytesOf(b.copies),
			"persist": persist.String(), "results": results,
		}, "", "  ")
		if err := os.WriteFile(filepath.Join(out, "prepare.json"), raw, 0o644); err != nil {
			return err
		}
		var md strings.Builder
		writeTables(&md, results)
		return os.WriteFile(filepath.Join(out, "prepare-table.md"), []byte(md.String()), 0o644)
	}
	for _, n := range ns {
		r := rounds
		if v, ok := roundsFor[n]; ok {
			r = v
		}
		b.saveRound = func(res *nRes) { save(append(slices.Clone(results), res)) }
		res, err := b.hostCount(n, r)
		if res != nil {
			results = append(results, res)
		}
		if serr := save(results); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
	}
	var md strings.Builder
	writeTables(&md, results)
	fmt.Print(md.String())
	return nil
}

// hostCount measures one N: files for the first n bed hosts, warm-ups, then
// alternating rounds.
func (b *bench) hostCount(n, rounds int) (*nRes, error) {
	bed := b.bed
	var ts []target
	var names []string
	for _, h := range bed.Hosts[:n] {
		ts = append(ts, target{Name: h.Name, Addr: h.Addr})
		names = append(names, h.Name)
	}
	sc := sshConf{User: bed.User, KeyFile: bed.KeyFile, KnownHosts: bed.KnownHosts}
	d := filepath.Join(b.dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	labFile := filepath.Join(d, "prepare.hcl")
	invFile := filepath.Join(d, "inventory.ini")
	cfgNo := filepath.Join(d, "ansible-cm-no.cfg")
	cfgCP := filepath.Join(d, "ansible-persist.cfg")
	for p, s := range map[string]string{
		labFile: labHCL(sc, ts), invFile: inventory(ts),
		cfgNo: ansibleCfg(n, benchutil.Kex, bed.KnownHosts, false), cfgCP: ansibleCfg(n, benchutil.Kex, bed.KnownHosts, true),
	} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			return nil, err
		}
	}
	rlabCache := filepath.Join(bed.Home, remote.CacheDir)
	// Per host, as each would have it in its own home (the bed's hosts
	// share one): a shared path would let one host's copy skip the others'.
	ansCache := filepath.Join(bed.Home, ".cache", "rlab-ansible", "hosts")

	// The first rlab check installs the agent; the playbook ships that very
	// file.
	os.RemoveAll(rlabCache)
	if err := b.rlabWarmup(labFile, n); err != nil {
		return nil, err
	}
	if b.agent.Src == "" {
		if err := b.takeAgent(rlabCache, ansCache); err != nil {
			return nil, err
		}
		lab1 := filepath.Join(b.dir, "prepare1.hcl")
		if err := os.WriteFile(lab1, []byte(labHCL(sc, ts[:1])), 0o644); err != nil {
			return nil, err
		}
		b.copies = map[string]agentCopy{}
		for _, bin := range []string{b.rlab, b.ref} {
			if bin == "" {
				continue
			}
			cp, err := b.copyOf(bin, lab1, rlabCache)
			if err != nil {
				return nil, err
			}
			b.copies[bin] = cp
			fmt.Fprintf(b.log, "%s: one agent copy is %d bytes on the wire; its agent is %s\n", bin, cp.bytes, filepath.Base(cp.dir))
		}
		// Warm again for the cases that expect it.
		os.RemoveAll(rlabCache)
		if err := b.rlabWarmup(labFile, n); err != nil {
			return nil, err
		}
	}
	pbFile := filepath.Join(d, "playbook.yml")
	if err := os.WriteFile(pbFile, []byte(playbook(b.agent)), 0o644); err != nil {
		return nil, err
	}
	fresh := 0
	cpDir := ""
	ansible := func(cfg string, persist bool) func() *exec.Cmd {
		return func() *exec.Cmd {
			c := exec.Command("ansible-playbook", "-i", invFile, "-f", fmt.Sprint(n), "-u", bed.User, "--private-key", bed.KeyFile, pbFile)
			c.Env = append(b.env(), "ANSIBLE_CONFIG="+cfg, "ANSIBLE_NOCOLOR=1")
			if persist {
				c.Env = append(c.Env, "ANSIBLE_SSH_CONTROL_PATH_DIR="+cpDir)
			}
			return c
		}
	}
	checkWith := func(bin string, extra ...string) func() *exec.Cmd {
		return func() *exec.Cmd {
			args := append([]string{"check", "-json", "--parallel", fmt.Sprint(n)}, extra...)
			c := exec.Command(bin, append(args, labFile)...)
			c.Env = b.env()
			return c
		}
	}
	check := func(extra ...string) func() *exec.Cmd { return checkWith(b.rlab, extra...) }
	verdictOf := func(bin string) func(stdout, stderr string, exit int) (int, string) {
		unit := max(b.copies[bin].bytes, 1)
		return func(stdout, stderr string, exit int) (int, string) {
			_, why := checkVerdict([]byte(stdout), exit, n)
			return int((benchutil.ShippedBytes(stderr) + unit/2) / unit), why
		}
	}
	rlabVerdict := verdictOf(b.rlab)
	ansVerdict := func(stdout, stderr string, exit int) (int, string) {
		return playVerdict(stdout, exit, names)
	}
	if err := b.ansibleWarmup(ansible(cfgNo, false)(), names); err != nil {
		return nil, err
	}
	type step struct {
		key, name string
		prep      func()
		cmd       func() *exec.Cmd // nil: the floor
		verdict   func(stdout, stderr string, exit int) (int, string)
	}
	sub := *bed
	sub.Hosts = bed.Hosts[:n]
	groups := [][]step{
		{
			{"rlab-cold", "rlab check, cold (agent shipped)", func() { os.RemoveAll(rlabCache) }, check(), rlabVerdict},
			{"rlab-warm", "rlab check, warm (agent cached)", nil, check(), rlabVerdict},
		},
		{
			{"ansible-cold", "Ansible playbook, cold, ControlMaster=no", func() { os.RemoveAll(ansCache) }, ansible(cfgNo, false), ansVerdict},
			{"ansible-warm", "Ansible playbook, warm, ControlMaster=no", nil, ansible(cfgNo, false), ansVerdict},
		},
		{
			{"ansible-cp-cold", "Ansible playbook, cold, ControlPersist=60s (new masters)", func() {
				os.RemoveAll(ansCache)
				fresh++
				cpDir = filepath.Join(d, fmt.Sprintf("cp%d", fresh))
				os.MkdirAll(cpDir, 0o700)
			}, ansible(cfgCP, true), ansVerdict},
			{"ansible-cp-warm", "Ansible playbook, warm, ControlPersist=60s (masters reused)", nil, ansible(cfgCP, true), ansVerdict},
		},
		{{"floor", "floor: parallel `ssh host true`", nil, nil, nil}},
	}
	if b.ref != "" {
		// Its cold prep removes only its own agent: the other rlab's
		// stays cached for the cases that expect it.
		own := b.copies[b.ref].dir
		groups = slices.Insert(groups, 1, []step{
			{"ref-rlab-cold", "ref rlab check, cold (agent shipped)", func() { os.RemoveAll(own) }, checkWith(b.ref), verdictOf(b.ref)},
			{"ref-rlab-warm", "ref rlab check, warm (agent cached)", nil, checkWith(b.ref), verdictOf(b.ref)},
		})
	}
	if b.persist > 0 {
		p := b.persist.String()
		groups = slices.Insert(groups, 1, []step{
			{"rlab-persist-first", "rlab check --persist, first run (starts the mux; agent cached)", b.muxStop, check("--persist", p), rlabVerdict},
			{"rlab-persist-warm", "rlab check --persist, warm (connections reused)", nil, check("--persist", p), rlabVerdict},
		})
	}
	res := &nRes{Hosts: n, Rounds: rounds}
	for _, g := range groups {
		for _, s := range g {
			res.Cases = append(res.Cases, &caseRes{Key: s.key, Name: s.name})
		}
	}
	rawDir := filepath.Join(b.out, "raw", fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return nil, err
	}
	defer b.muxStop()
	for r := 0; r < rounds; r++ {
		order := slices.Clone(groups)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, g := range order {
			for _, s := range g {
				if benchutil.QEMURunning() {
					return res, fmt.Errorf("a QEMU VM started during round %d: the numbers would measure it; run again when it is done", r)
				}
				if s.prep != nil {
					s.prep()
				}
				rec := runRec{Round: r}
				if s.cmd == nil {
					dur, err := benchutil.SSHFloor(&sub)
					rec.Seconds, rec.Valid = dur.Seconds(), err == nil
					if err != nil {
						rec.Why = benchutil.Tail(err.Error(), 500)
					}
				} else {
					stdout, stderr, exit, dur, err := timed(s.cmd())
					if err != nil {
						return res, fmt.Errorf("round %d, %s: %w", r, s.name, err)
					}
					rec.Seconds, rec.Exit = dur.Seconds(), exit
					rec.Shipped, rec.Why = s.verdict(stdout, stderr, exit)
					if rec.Why == "" {
						rec.Why = coldWhy(s.key, rec.Shipped, n)
					}
					rec.Valid = rec.Why == ""
					if r == 0 || !rec.Valid {
						base := filepath.Join(rawDir, fmt.Sprintf("r%d-%s", r, s.key))
						os.WriteFile(base+".stdout", []byte(stdout), 0o644)
						os.WriteFile(base+".stderr", []byte(stderr), 0o644)
					}
				}
				res.get(s.key).Runs = append(res.get(s.key).Runs, rec)
				mark := ""
				if !rec.Valid {
					mark = "  INVALID: " + rec.Why
				}
				fmt.Fprintf(b.log, "n=%-3d round %d  %-62s %7.3fs exit %d shipped %3d%s\n", n, r, s.name, rec.Seconds, rec.Exit, rec.Shipped, mark)
			}
			if g[0].key == "rlab-persist-first" {
				b.muxStop()
			}
		}
		if b.saveRound != nil {
			b.saveRound(res)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	res.LoadEnd = strings.TrimSpace(string(load))
	return res, nil
}

// coldWhy says why a cold run does not count as cold: the bed's hosts
// share one home, so hosts that connect late can find the agent a sibling
// just installed; a cold run must have shipped to at least 90% of them.
func coldWhy(key string, shipped, hosts int) string {
	if state(key) != "cold" || shipped*10 >= hosts*9 {
		return ""
	}
	return fmt.Sprintf("not cold: shipped to %d of %d hosts (the others found a sibling's install in the shared home)", shipped, hosts)
}

// timed runs c and returns its outputs, exit status and wall time; err only
// when it could not run at all.
func timed(c *exec.Cmd) (stdout, stderr string, exit int, d time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cc := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
	cc.Env = c.Env
	var o, e bytes.Buffer
	cc.Stdout, cc.Stderr = &o, &e
	start := time.Now()
	err = cc.Run()
	d = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		exit, err = ee.ExitCode(), nil
	}
	return o.String(), e.String(), exit, d, err
}

// env is this process's environment without an ssh-agent (every side uses
// the bed's key file) and without RLAB_PERSIST (only the --persist case
// persists), with this run's own XDG_RUNTIME_DIR.
func (b *bench) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SSH_AUTH_SOCK=") || strings.HasPrefix(kv, "RLAB_PERSIST=") || strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_RUNTIME_DIR="+b.xdg)
}

// muxStop ends rlab's connection mux daemon, if any (no-op without --persist).
func (b *bench) muxStop() {
	if b.persist > 0 {
		c := exec.Command(b.rlab, "mux", "stop")
		c.Env = b.env()
		c.Run()
	}
}

func (b *bench) rlabWarmup(labFile string, n int) error {
	c := exec.Command(b.rlab, "check", "-json", "--parallel", fmt.Sprint(n), labFile)
	c.Env = b.env()
	stdout, stderr, exit, _, err := timed(c)
	if err != nil {
		return fmt.Errorf("warm-up rlab check: %w", err)
	}
	if _, why := checkVerdict([]byte(stdout), exit, n); why != "" {
		// Not fatal: the agent is cached either way unless every host
		// failed (takeAgent says so), and the rounds record their own
		// failures.
		fmt.Fprintf(b.log, "n=%-3d warm-up rlab check: %s\n", n, why)
		os.WriteFile(filepath.Join(b.out, fmt.Sprintf("warmup-n%d-rlab.stdout", n)), []byte(stdout), 0o644)
		os.WriteFile(filepath.Join(b.out, fmt.Sprintf("warmup-n%d-rlab.stderr", n)), []byte(stderr), 0o644)
	}
	return nil
}

func (b *bench) ansibleWarmup(c *exec.Cmd, names []string) error {
	stdout, stderr, exit, _, err := timed(c)
	if err != nil {
		return fmt.Errorf("warm-up ansible-playbook: %w", err)
	}
	if _, why := playVerdict(stdout, exit, names); why != "" {
		fmt.Fprintf(b.log, "n=%-3d warm-up ansible-playbook: %s\n", len(names), why)
		os.WriteFile(filepath.Join(b.out, fmt.Sprintf("warmup-n%d-ansible.stdout", len(names))), []byte(stdout), 0o644)
		os.WriteFile(filepath.Join(b.out, fmt.Sprintf("warmup-n%d-ansible.stderr", len(names))), []byte(stderr), 0o644)
	}
	return nil
}

type agentCopy struct {
	bytes int64
	dir   string
}

// copyOf is what one agent copy costs on the wire for an rlab binary (what a
// cold check of one host says it shipped) and the cache folder of its agent.
func (b *bench) copyOf(bin, lab1, cache string) (agentCopy, error) {
	os.RemoveAll(cache)
	c := exec.Command(bin, "check", "-json", lab1)
	c.Env = b.env()
	_, stderr, _, _, err := timed(c)
	if err != nil {
		return agentCopy{}, fmt.Errorf("%s check of one host: %w", bin, err)
	}
	n := benchutil.ShippedBytes(stderr)
	ms, _ := filepath.Glob(filepath.Join(cache, "*", "rlab-agent"))
	if n <= 0 || len(ms) != 1 {
		return agentCopy{}, fmt.Errorf("%s check of one host, cold: shipped %d bytes, %d agents in the cache; want some, and one: %s", bin, n, len(ms), benchutil.Tail(stderr, 2000))
	}
	return agentCopy{bytes: n, dir: filepath.Dir(ms[0])}, nil
}

// takeAgent copies the agent rlab installed (the one build in its cache) for
// the playbook to ship.
func (b *bench) takeAgent(rlabCache, ansCache string) error {
	ms, _ := filepath.Glob(filepath.Join(rlabCache, "*", "rlab-agent"))
	if len(ms) != 1 {
		return fmt.Errorf("want one agent in %s after the warm-up, found %d", rlabCache, len(ms))
	}
	data, err := os.ReadFile(ms[0])
	if err != nil {
		return err
	}
	s256 := sha256.Sum256(data)
	s1 := sha1.Sum(data)
	src := filepath.Join(b.dir, "agent", "rlab-agent")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(src, data, 0o755); err != nil {
		return err
	}
	u, err := user.Lookup(b.bed.User)
	if err != nil {
		return err
	}
	b.agentSize = int64(len(data))
	b.agent = agentJob{
		Src: src, SHA1: hex.EncodeToString(s1[:]),
		Dir:     filepath.Join(ansCache, "{{ inventory_hostname }}", "agent", hex.EncodeToString(s256[:])),
		WorkDir: filepath.Join(filepath.Dir(ansCache), "runs"),
		Owner:   u.Uid + ":" + u.Gid,
	}
	return nil
}

func copyBytesOf(m map[string]agentCopy) map[string]int64 {
	out := map[string]int64{}
	for bin, c := range m {
		out[bin] = c.bytes
	}
	return out
}
