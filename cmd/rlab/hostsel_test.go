package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
)

// TestSelectHosts: --host takes host names and block labels (every
// instance), repeated or comma-separated, keeps lab order, and refuses a
// name the lab lacks with a did-you-mean and the lab's hosts.
func TestSelectHosts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "class.hcl")
	src := `lab "class" {}
locals {
  students = { ana = 1, bo = 2 }
}
host "bastion" { address = "192.0.2.1" }
host "server" {
  for_each = local.students
  address  = "10.0.${each.value}.1"
  jump     = host.bastion
}
host "client" {
  for_each = local.students
  address  = "10.0.${each.value}.2"
  jump     = host.bastion
}
`
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	l, diags := lab.LoadOne(p, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tests := []struct {
		values []string
		want   string // host names, lab order
		err    string
	}{
		{nil, `bastion server["ana"] server["bo"] client["ana"] client["bo"]`, ""},
		{[]string{"server"}, `server["ana"] server["bo"]`, ""},
		{[]string{`client["bo"],bastion`}, `bastion client["bo"]`, ""},
		{[]string{`client["bo"]`, "server"}, `server["ana"] server["bo"] client["bo"]`, ""},
		{[]string{"servr"}, "", `--host "servr": lab "class" has no host of that name; did you mean "server"? (hosts: bastion, server, server["ana"], server["bo"], client, client["ana"], client["bo"])`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.values, " "), func(t *testing.T) {
			sub, err := selectHosts(l, tt.values)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("err = %v\nwant %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range sub.Hosts {
				got = append(got, h.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("hosts %q, want %s", got, tt.want)
			}
			if len(l.Hosts) != 5 {
				t.Errorf("the lab itself changed: %d hosts", len(l.Hosts))
			}
		})
	}
}
