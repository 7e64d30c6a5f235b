package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/toolout"
)

// A made-up tool whose program is rping (one the agent looks for and this
// machine lacks): the lab needs it, the in-process agents lack it, and fake
// apt-get/dpkg-query on PATH "install" rdmacm-utils by putting an rping on
// PATH (the agent's real provision method drives them, as root; the real
// package database is never asked or changed). It is the made-up family's
// second tool (fakeKind, madeup_test.go).
const provTool = "fake_ping_pkg"

const provLab = twoHosts + `
workload "fp" {
  tool       = "fake_ping_pkg"
  server     = host.a
  client     = host.b
  sizes      = [64]
  iterations = 10
}
`

const provAptGet = `#!/bin/sh
echo "$*" >> "$FAKE_PKG/calls"
mode=""; skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -o) skip=1 ;; -*) ;;
    install|remove) mode=$a ;;
    *) if [ "$mode" = install ]; then echo "Setting up $a ..."; printf '#!/bin/sh\n' > "$FAKE_PKG/bin/rping.new"; chmod +x "$FAKE_PKG/bin/rping.new"; mv "$FAKE_PKG/bin/rping.new" "$FAKE_PKG/bin/rping"; touch "$FAKE_PKG/installed/$a"; fi
       if [ "$mode" = remove ]; then echo "Removing $a ..."; rm -f "$FAKE_PKG/installed/$a" "$FAKE_PKG/bin/rping"; fi ;;
  esac
done
`

const provDpkgQuery = `#!/bin/sh
shift; shift; shift
rc=0
for p in "$@"; do
  if [ -e "$FAKE_PKG/installed/$p" ]; then printf '%s\tinstall ok installed\n' "$p"
  else echo "dpkg-query: no packages found matching $p" >&2; rc=1; fi
done
exit $rc
`

// TestRunProvision: rlab run --provision installs what a host lacks before
// preflight (which then passes on the refreshed facts), journals it in
// state.json, logs the manager in hosts/<h>/logs/provision.log; a second
// run installs nothing; rlab down leaves the packages unless asked, then
// removes exactly them.
func TestRunProvision(t *testing.T) {
	if _, err := lookPathOnly("rping"); err == nil {
		t.Skip("rping is installed here: the agents would not lack it")
	}
	if os.Geteuid() != 0 {
		t.Skip("the agent's provision needs root")
	}
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		t.Skip("the in-process agents must see a Debian os-release (the fakes are apt-get's)")
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "installed"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "bin", "apt-get"), []byte(provAptGet), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "dpkg-query"), []byte(provDpkgQuery), 0o755)
	t.Setenv("PATH", filepath.Join(dir, "bin")+":"+os.Getenv("PATH"))
	t.Setenv("FAKE_PKG", dir)

	// Without --provision the lab cannot run here: preflight says so.
	res, _ := runLab(t, provLab, Options{Parse: toolout.ParseOutput})
	if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), "rping not installed") {
		t.Fatalf("without provision: code %d, %v", res.Code, res.Err)
	}

	res, bed := runLabWith(t, provLab, plan.Options{Provision: true}, Options{Parse: toolout.ParseOutput})
	if res.Code != ExitOK {
		ev, _ := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
		var prov []string
		for _, l := range strings.Split(string(ev), "\n") {
			if strings.Contains(l, `"provision"`) {
				prov = append(prov, l)
			}
		}
		t.Fatalf("run --provision: code %d, %v\n%s", res.Code, res.Err, strings.Join(prov, "\n"))
	}
	st := readState(t, res.Dir)
	for _, h := range st.Hosts {
		p := h.Provision
		if p == nil || p.Family != "debian" || !slices.Equal(p.Packages, []string{"rdmacm-utils"}) || !p.Done ||
			!slices.Equal(p.For["rdmacm-utils"], []string{"rping"}) {
			t.Errorf("state.json host %s provision %+v", h.Name, p)
		}
	}
	// Both hosts share this machine: one installed it, the other found it
	// installed (or installed it too, racing): together, once or twice.
	var installedBy []string
	for _, h := range st.Hosts {
		if h.Provision != nil && len(h.Provision.Installed) > 0 {
			installedBy = append(installedBy, h.Name)
		}
	}
	if len(installedBy) == 0 {
		t.Errorf("state.json records no install")
	}
	log, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "provision.log"))
	if err != nil || !strings.Contains(string(log), "dpkg-query") {
		t.Errorf("provision.log: %v\n%s", err, log)
	}
	events, _ := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if !strings.Contains(string(events), `"step":"provision"`) {
		t.Errorf("events.jsonl has no provision step")
	}

	// Idempotent: the second run installs nothing (no manager call).
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	res2, _ := runLabWith(t, provLab, plan.Options{Provision: true}, Options{Parse: toolout.ParseOutput})
	calls2, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if res2.Code != ExitOK || string(calls) != string(calls2) {
		t.Errorf("second run: code %d, manager calls before %q after %q", res2.Code, calls, calls2)
	}
	// It journals that the hosts lacked nothing (for the report), no package.
	for _, h := range readState(t, res2.Dir).Hosts {
		if p := h.Provision; p == nil || len(p.Packages) > 0 || len(p.Installed) > 0 || !slices.Contains(p.Present, "rping") {
			t.Errorf("second run: host %s journaled %+v, want no package and rping present", h.Name, p)
		}
	}

	// rlab down leaves them by default, removes them when asked.
	if _, err := Down(context.Background(), res.Dir, DownOptions{Connector: bed}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "installed", "rdmacm-utils")); err != nil {
		t.Fatal("rlab down removed the provisioned package without --remove-provisioned")
	}
	dres, err := Down(context.Background(), res.Dir, DownOptions{Connector: bed, RemoveProvisioned: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "installed", "rdmacm-utils")); err == nil {
		t.Errorf("--remove-provisioned left the package: %q", dres.Undone)
	}
	if !slices.ContainsFunc(dres.Undone, func(s string) bool { return strings.Contains(s, "packages rdmacm-utils removed") }) {
		t.Errorf("undone %q", dres.Undone)
	}
	for _, h := range readState(t, res.Dir).Hosts {
		if h.Provision != nil && len(h.Provision.Installed) > 0 && !h.Provision.Removed {
			t.Errorf("state.json: %s not marked removed", h.Name)
		}
	}
}

func lookPathOnly(name string) (string, error) { return exec.LookPath(name) }

// provClassLab: student ana's pair has rxe devices, which this machine's
// kernel cannot give (no rdma_rxe, and no package rlab knows ships it for
// Debian); bob's pair runs tcp only and lacks nothing.
const provClassLab = `
lab "class" {}
locals {
  students = toset(["ana", "bob"])
}
host "server" {
  for_each = local.students
  address  = "127.0.0.1"
}
host "client" {
  for_each = local.students
  address  = "127.0.0.1"
}
rxe "s" {
  host   = host.server["ana"]
  netdev = "lo"
}
workload "bulk" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = "1MiB"
}
`

// TestRunProvisionClass: a host that cannot be provisioned fails its
// student only; the other student's workloads run.
func TestRunProvisionClass(t *testing.T) {
	if _, err := os.Stat("/sys/module/rdma_rxe"); err == nil || exec.Command("modinfo", "rdma_rxe").Run() == nil {
		t.Skip("this kernel has rdma_rxe: ana's hosts would lack nothing")
	}
	res, _ := runLabWith(t, provClassLab, plan.Options{Provision: true}, Options{Parse: toolout.ParseOutput})
	if len(res.Students) != 2 {
		t.Fatalf("students %+v (err %v)", res.Students, res.Err)
	}
	ana, bob := res.Students[0], res.Students[1]
	if ana.Status == "ready" || !strings.Contains(ana.Reason, "provision") || !strings.Contains(ana.Reason, "rdma_rxe") {
		t.Errorf("ana: %+v", ana)
	}
	if bob.Status != "ready" || bob.OK != 1 {
		t.Errorf("bob: %+v", bob)
	}
	if res.Code != ExitInfra {
		t.Errorf("code %d", res.Code)
	}
}
