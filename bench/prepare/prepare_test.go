package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/bench/internal/benchutil"
	"github.com/rlab-dev/rlab/engine/lab"
)

var update = flag.Bool("update", false, "rewrite golden files")

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var three = []target{{"h0", "10.1.0.2"}, {"h1", "10.1.0.3"}, {"h2", "10.1.0.4"}}

func TestLabHCLLoads(t *testing.T) {
	src := labHCL(sshConf{User: "rlabbed", KeyFile: "/k/id_ed25519", KnownHosts: "/k/known_hosts"}, three)
	l, diags := lab.LoadSource("prepare.hcl", []byte(src), t.TempDir(), lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("generated lab does not load: %v\n%s", diags, src)
	}
	type hostRXE struct{ Host, Addr, User, Netdev string }
	var got []hostRXE
	for _, r := range l.Devices {
		if !r.Host.Become {
			t.Errorf("host %s: become not set (creating rxe needs root)", r.Host.Name)
		}
		got = append(got, hostRXE{r.Host.Name, r.Host.Address, r.Host.User, r.Netdev})
	}
	want := []hostRXE{{"h0", "10.1.0.2", "rlabbed", "eth0"}, {"h1", "10.1.0.3", "rlabbed", "eth0"}, {"h2", "10.1.0.4", "rlabbed", "eth0"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hosts and rxe (-want +got):\n%s", d)
	}
}

// The playbook, inventory and config are read by ansible-playbook itself.
func TestPlaybookSyntax(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible)")
	}
	d := t.TempDir()
	pb := filepath.Join(d, "playbook.yml")
	inv := filepath.Join(d, "inventory.ini")
	cfg := filepath.Join(d, "ansible.cfg")
	os.WriteFile(pb, []byte(playbook(agentJob{Src: "/tmp/agent/rlab-agent", SHA1: strings.Repeat("a", 40),
		Dir: "/home/u/.cache/rlab-ansible/hosts/{{ inventory_hostname }}/agent/" + strings.Repeat("b", 64), WorkDir: "/home/u/.cache/rlab-ansible/runs", Owner: "1000:1000"})), 0o644)
	os.WriteFile(inv, []byte(inventory(three)), 0o644)
	os.WriteFile(cfg, []byte(ansibleCfg(3, "curve25519-sha256", "/k/known_hosts", true)), 0o644)
	c := exec.Command("ansible-playbook", "--syntax-check", "-i", inv, pb)
	c.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg, "ANSIBLE_NOCOLOR=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("ansible-playbook --syntax-check: %v\n%s", err, out)
	}
}

func TestCheckVerdict(t *testing.T) {
	real := readTestdata(t, "check-cold-3hosts.json")
	for _, tc := range []struct {
		name     string
		stdout   string
		exit     int
		problems int
		why      string // substring; "" = valid
	}{
		{"real run, no rdma_rxe on any host", real, 1, 3, ""},
		{"all ready", `{"problems": [], "unreachable": []}`, 0, 0, ""},
		{"exit 2", real, 2, 0, "exit 2"},
		{"a host unreachable", `{"problems": [{"host":"h0","code":"no_rxe"}], "unreachable": ["host \"h1\": dial: refused"]}`, 1, 0, "1 hosts unreachable"},
		{"exit 1 without problems", `{"problems": [], "unreachable": []}`, 1, 0, "without a problem"},
		{"exit 0 with problems", real, 0, 3, "exit 0 with problems"},
		{"not JSON", "Error: boom", 1, 0, "-json output"},
		{"more hosts than the lab", `{"problems": [{"host":"a"},{"host":"b"},{"host":"c"},{"host":"d"}]}`, 1, 4, "the lab has 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, why := checkVerdict([]byte(tc.stdout), tc.exit, 3)
			if n != tc.problems {
				t.Errorf("problem hosts = %d, want %d", n, tc.problems)
			}
			if (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("why = %q, want %q", why, tc.why)
			}
		})
	}
}

func TestPlayVerdict(t *testing.T) {
	real := readTestdata(t, "playbook-cold-3hosts.out")
	hosts := []string{"h0", "h1", "h2"}
	line := func(h, rest string) string { return h + "                         : " + rest + "\n" }
	okLine := "ok=3    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=1   "
	for _, tc := range []struct {
		name    string
		out     string
		exit    int
		changed int
		why     string
	}{
		{"real cold run", real, 0, 3, ""},
		{"no recap", "PLAY [x]\nERROR! boom\n", 4, 0, "no PLAY RECAP"},
		{"host missing", "PLAY RECAP ***\n" + line("h0", okLine) + line("h1", okLine), 2, 2, "h2: not in the recap"},
		{"host unreachable", "PLAY RECAP ***\n" + line("h0", okLine) + line("h1", okLine) +
			line("h2", "ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0"), 4, 2, "h2: unreachable=1"},
		{"task failed", "PLAY RECAP ***\n" + line("h0", okLine) + line("h1", okLine) +
			line("h2", "ok=1    changed=1    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0"), 2, 3, "failed=1"},
		{"a task missing", "PLAY RECAP ***\n" + line("h0", okLine) + line("h1", okLine) +
			line("h2", "ok=2    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0"), 0, 2, "want the 3 tasks"},
		{"all done but non-zero exit", real, 2, 3, "exit 2 with every host done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, why := playVerdict(tc.out, tc.exit, hosts)
			if changed != tc.changed {
				t.Errorf("changed = %d, want %d", changed, tc.changed)
			}
			if (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("why = %q, want %q", why, tc.why)
			}
		})
	}
}

func TestParseRecap(t *testing.T) {
	got, err := parseRecap(readTestdata(t, "playbook-cold-3hosts.out"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]recap{
		"h0": {OK: 3, Changed: 1, Ignored: 1}, "h1": {OK: 3, Changed: 1, Ignored: 1}, "h2": {OK: 3, Changed: 1, Ignored: 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recap (-want +got):\n%s", d)
	}
}

func TestShippedBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{readTestdata(t, "check-cold-3hosts.stderr"), 12104166},
		{"Error: 3 problems: the lab cannot run on these hosts as they are\n", 0},
		{"noise agent: 12 bytes shipped to 3 hosts\n", 0}, // not at a line start
	} {
		if got := benchutil.ShippedBytes(tc.in); got != tc.want {
			t.Errorf("benchutil.ShippedBytes(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestColdWhy(t *testing.T) {
	for _, tc := range []struct {
		key            string
		shipped, hosts int
		bad            bool
	}{
		{"rlab-cold", 200, 200, false},
		{"rlab-cold", 180, 200, false},
		{"rlab-cold", 17, 200, true},
		{"ansible-cp-cold", 0, 10, true},
		{"rlab-warm", 0, 200, false},
		{"floor", 0, 200, false},
	} {
		if got := coldWhy(tc.key, tc.shipped, tc.hosts); (got != "") != tc.bad {
			t.Errorf("coldWhy(%s, %d of %d) = %q, want invalid %v", tc.key, tc.shipped, tc.hosts, got, tc.bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"10,50,200", []int{10, 50, 200}, false},
		{" 3 ", []int{3}, false},
		{"10,,50", nil, true},
		{"0", nil, true},
		{"ten", nil, true},
	} {
		got, err := parseHosts(tc.in)
		if (err != nil) != tc.err || !cmp.Equal(got, tc.want) {
			t.Errorf("parseHosts(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		in   string
		want map[int]int
		err  bool
	}{
		{"", map[int]int{}, false},
		{"200=3", map[int]int{200: 3}, false},
		{"50=4, 200=2", map[int]int{50: 4, 200: 2}, false},
		{"200", nil, true},
		{"200=0", nil, true},
		{"x=1", nil, true},
	} {
		got, err := parseRoundsFor(tc.in)
		if (err != nil) != tc.err || (!tc.err && !cmp.Equal(got, tc.want)) {
			t.Errorf("parseRoundsFor(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// Medians are over valid rounds only; the table names invalid ones (✗).
func TestTables(t *testing.T) {
	res := []*nRes{{Hosts: 10, Rounds: 3, LoadEnd: "1.00 1.00 1.00 1/100 1", Cases: []*caseRes{
		{Key: "rlab-cold", Name: "rlab check, cold", Runs: []runRec{{Seconds: 0.9, Valid: true}, {Seconds: 0.5, Valid: true}, {Seconds: 9, Why: "exit 2"}}},
		{Key: "rlab-warm", Name: "rlab check, warm", Runs: []runRec{{Seconds: 0.3, Valid: true}, {Seconds: 0.2, Valid: true}, {Seconds: 0.4, Valid: true}}},
		{Key: "ansible-cold", Name: "Ansible, cold", Runs: []runRec{{Seconds: 7, Valid: true}, {Seconds: 7, Valid: true}, {Seconds: 8, Valid: true}}},
		{Key: "ansible-warm", Name: "Ansible, warm", Runs: []runRec{{Seconds: 6, Valid: true}, {Seconds: 6, Valid: true}, {Seconds: 6, Valid: true}}},
		{Key: "ansible-cp-warm", Name: "Ansible CP, warm", Runs: []runRec{{Seconds: 3, Valid: true}}},
		{Key: "floor", Name: "floor", Runs: []runRec{{Seconds: 0.25, Valid: true}}},
	}}}
	if m, n := res[0].Cases[0].median(); m != 0.7 || n != 2 {
		t.Errorf("median of valid rounds = %v over %d, want 0.7 over 2", m, n)
	}
	var b strings.Builder
	writeTables(&b, res)
	golden := filepath.Join("testdata", "tables.golden.md")
	if *update {
		os.WriteFile(golden, []byte(b.String()), 0o644)
	}
	if d := cmp.Diff(readTestdata(t, "tables.golden.md"), b.String()); d != "" {
		t.Errorf("tables (-golden +got; go test -update to accept):\n%s", d)
	}
}

func FuzzParseRecap(f *testing.F) {
	f.Add(readTestdata(f, "playbook-cold-3hosts.out"))
	f.Add("PLAY RECAP\nh0 : ok=99999999999999999999\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseRecap(s)
		if err == nil && len(m) == 0 {
			t.Fatal("no error and no host")
		}
		playVerdict(s, 0, []string{"h0", "h1"})
	})
}

func FuzzCheckVerdict(f *testing.F) {
	f.Add(readTestdata(f, "check-cold-3hosts.json"), 1)
	f.Add(`{"problems": null, "unreachable": ["x"]}`, 2)
	f.Fuzz(func(t *testing.T, s string, exit int) {
		n, why := checkVerdict([]byte(s), exit, 3)
		if why == "" && (n > 3 || exit < 0 || exit > 1) {
			t.Fatalf("valid verdict with %d problem hosts, exit %d", n, exit)
		}
	})
}
