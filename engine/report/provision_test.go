package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// provState is state.json as engine/run journals a --provision run: the
// server lacked perftest, tcpdump and Ubuntu's rxe module and got all but the
// module (the run was cut short after the install returned no module); the
// client lacked nothing. Field names are engine/runstate's Provision.
const provState = `{
  "version": 1, "lab": "quickstart", "run_id": "x",
  "hosts": [
    {"name": "server", "slug": "server", "address": "10.0.0.1", "port": 22,
     "provision": {"family": "debian", "packages": ["linux-modules-extra-6.8.0-1015-aws", "perftest", "tcpdump"],
       "for": {"perftest": ["ib_write_bw"], "tcpdump": ["tcpdump"], "linux-modules-extra-6.8.0-1015-aws": ["rdma_rxe"]},
       "present": ["rdma", "rping"], "installed": ["perftest", "tcpdump"], "done": true}},
    {"name": "client", "slug": "client", "address": "10.0.0.2", "port": 22,
     "provision": {"family": "debian", "packages": [], "present": ["ib_write_bw", "rdma", "rdma_rxe"], "done": true}},
    {"name": "spare", "slug": "spare", "address": "10.0.0.3", "port": 22}
  ],
  "effects": []
}`

// TestProvisionInReport: what provisioning installed per host (package,
// the version of its tool from the facts read after the install, what it
// was for), what was already present, and a host that lacked nothing; the
// platform facts stay in the host table beside it.
func TestProvisionInReport(t *testing.T) {
	dir := copyDir(t, fixture)
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(provState), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Provision{}
	for _, h := range d.Hosts {
		got[h.Slug] = h.Provision
		if h.Machine == "" || h.RDMACore == "" {
			t.Errorf("host %s lost its platform facts: machine %q rdma-core %q", h.Slug, h.Machine, h.RDMACore)
		}
	}
	want := map[string]*Provision{
		"server": {Family: "debian", Installed: []Package{
			{Name: "perftest", Version: "perftest 4.5+0.17-1", For: "ib_write_bw"},
			{Name: "tcpdump", Version: "4.99.3", For: "tcpdump"},
		}, NotInstalled: "linux-modules-extra-6.8.0-1015-aws", PresentCount: 2, Present: "rdma, rping"},
		"client": {Family: "debian", Installed: []Package{}, PresentCount: 3, Present: "ib_write_bw, rdma, rdma_rxe",
			Note: "nothing was missing: no package manager call"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provision per host (-want +got):\n%s", diff)
	}

	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`<h4>Provisioned by this run <small>(debian packages)</small></h4>`,
		`<tr><td><code>perftest</code></td><td>perftest 4.5&#43;0.17-1</td><td>ib_write_bw</td></tr>`,
		`planned, not installed by this run: linux-modules-extra-6.8.0-1015-aws`,
		`already present: 2 (rdma, rping)`,
		`already present: 3 (ib_write_bw, rdma, rdma_rxe)`,
		`nothing was missing: no package manager call`,
		`<th>rdma-core</th><td>44.0</td>`,
	} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}

	// A run without provisioning shows no such section.
	plain := copyDir(t, fixture)
	if err := Render(plain); err != nil {
		t.Fatal(err)
	}
	if page, _ := os.ReadFile(filepath.Join(plain, FileName)); bytes.Contains(page, []byte("Provisioned by this run")) {
		t.Error("a run that provisioned nothing shows a provision section")
	}
}
