package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
)

// sharedHostLab: every student has a desk of their own and says hello on
// one lab server they share (engine/run's TestSharedHostFiles runs it).
const sharedHostLab = `
lab "shared" {}
host "lab_server" { address = "127.0.0.1" }
host "desk" {
  for_each = toset(["ana", "bob"])
  address  = "127.0.0.1"
}
workload "hello" {
  for_each = toset(["ana", "bob"])
  tool     = "exec"
  host     = host.lab_server
  command  = ["echo", each.key]
}
workload "desk" {
  for_each = toset(["ana", "bob"])
  tool     = "exec"
  host     = host.desk[each.key]
  command  = ["true"]
}
`

// TestClassRule: a lab is a class when its hosts are keyed per student, not
// because a workload sweeps (lossy's loss points) or keyed hosts are crossed
// (ring's nodes); a sweep beside a class belongs to no student.
func TestClassRule(t *testing.T) {
	tests := []struct {
		name string
		file string // an example lab, or
		src  string // a lab of its own
		want []string
		n    int // students, when want is not listed
	}{
		// class-terraform-output.json: 30 students, abe to zoe.
		{name: "class", file: "../../labs/class.hcl", n: 30},
		{name: "lossy", file: "../../labs/lossy.hcl"},
		{name: "ring", file: "../../labs/ring.hcl"},
		{name: "shared host", src: sharedHostLab, want: []string{"ana", "bob"}},
		{name: "sweep on an unkeyed host", src: `
lab "sweep" {}
host "a" { address = "127.0.0.1" }
workload "w" {
  for_each = toset(["0", "1"])
  tool     = "exec"
  host     = host.a
  command  = ["true"]
}`},
		{name: "sweep beside a class", src: sharedHostLab + `
workload "sweep" {
  for_each = toset(["0", "1"])
  tool     = "exec"
  host     = host.lab_server
  command  = ["true"]
}`, want: []string{"ana", "bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.file
			if p == "" {
				p = filepath.Join(t.TempDir(), "lab.hcl")
				if err := os.WriteFile(p, []byte(tt.src), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, diags := lab.Load([]string{p}, lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			pl, err := New(l)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range pl.Students {
				got = append(got, s.Key)
				for _, w := range s.Workloads {
					if _, k, _ := InstanceKey(w.Name); k != s.Key {
						t.Errorf("student %q has workload %s", s.Key, w.Name)
					}
				}
			}
			if tt.n > 0 {
				if len(got) != tt.n {
					t.Errorf("%d students %v, want %d", len(got), got, tt.n)
				}
			} else if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("students (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStudentSlug(t *testing.T) {
	for in, want := range map[string]string{
		"ana": "ana", "../etc": "_etc", "a/b": "a_b", "..": "_", ".hidden": "hidden", "": "_",
		"x\x00y\nz": "x_y_z", "ana.b-c_1": "ana.b-c_1", "élève": "_l_ve", strings.Repeat("k", 300): strings.Repeat("k", 100),
	} {
		got := studentSlug(in)
		if got != want || !filepath.IsLocal(got) || strings.ContainsAny(got, "/\\") {
			t.Errorf("studentSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzStudentSlug: whatever a for_each key holds, its folder stays one
// plain folder name under students/.
func FuzzStudentSlug(f *testing.F) {
	for _, s := range []string{"ana", "../etc", "..", ".hidden", "", "x\x00y", "élève", `a/b\c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if s := studentSlug(v); !filepath.IsLocal(s) || strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") || len(s) > 100 {
			t.Errorf("studentSlug(%q) = %q leaves its folder", v, s)
		}
	})
}
