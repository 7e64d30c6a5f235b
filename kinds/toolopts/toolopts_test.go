package toolopts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
	"github.com/rlab-dev/rlab/kinds/toolopts"
)

// rateKind is a made-up family known to this test binary only, with an
// option of its own (rate) that no other family and nothing in engine/lab
// knows: its one Option value here is all it takes for a lab to set it,
// with the engine's diagnostics.
type rateKind struct{}

func (rateKind) Desc() kinds.Desc {
	return kinds.Desc{Name: "rate_fake", Tools: []kinds.Tool{{Name: "rate_fake", Flavor: "rate_fake", RDMA: true,
		TransportWhy: "rate_fake has no transports", Sizes: true, Metrics: []string{"duration"}}}}
}

func (rateKind) Options(t kinds.Tool) []toolopts.Option {
	return append(toolopts.Standard(t), rate)
}

// rate is rate_fake's own option: a whole number of messages a second.
var rate = toolopts.Option{Name: "rate",
	Decode: func(in toolopts.In, a *hcl.Attribute) {
		if n, ok := in.Eval.Integer(a, 1, 1000); ok {
			in.W.SetOwn("rate", n)
		}
	},
	Check: func(ev toolopts.Eval, a *hcl.Attribute) { ev.Integer(a, 1, 1000) },
}

func TestMain(m *testing.M) {
	builtin.Register()
	kinds.Register(rateKind{})
	os.Exit(m.Run())
}

const rateLab = `lab "t" {}
variable "r" {
  default = 5
}
host "a" { address = "192.0.2.1" }
host "b" { address = "192.0.2.2" }
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "w" {
  tool   = "%TOOL%"
  server = rxe.a
  client = rxe.b
  sizes  = [64]
  %LINE%
}
`

// TestFamilyOwnOption: an option one family declares (rate_fake's rate) is
// decoded through toolopts.Taker with the engine's evaluation and
// diagnostics at the option's line (line 20 of rateLab), its misspelling
// is corrected from the family's names, an unknown tool still gets its
// value checked, and a tool that does not take it names the one that does.
func TestFamilyOwnOption(t *testing.T) {
	tests := []struct {
		name, tool, line string
		want             int64  // Own["rate"] when no diagnostic
		summary, detail  string // the one diagnostic, at line 20
	}{
		{name: "decoded", tool: "rate_fake", line: "rate = 7", want: 7},
		{name: "from a variable", tool: "rate_fake", line: "rate = var.r * 2", want: 10},
		{name: "null is unset", tool: "rate_fake", line: "rate = null"},
		{name: "out of range", tool: "rate_fake", line: "rate = 0", summary: "Invalid value for rate", detail: "from 1 to 1000"},
		{name: "undeclared variable", tool: "rate_fake", line: "rate = var.rr", summary: "Reference to undeclared input variable", detail: `Did you mean "r"?`},
		{name: "misspelt", tool: "rate_fake", line: "rat = 7", summary: "Unsupported argument", detail: `Did you mean "rate"?`},
		{name: "shared option not taken", tool: "rate_fake", line: "qps = 2", summary: "Argument not valid for rate_fake", detail: "qps is an option of ib_atomic_bw, ib_read_bw, ib_send_bw or ib_write_bw, not of rate_fake. Besides the common ones, rate_fake takes transport, sizes, args, rate."},
		{name: "own option on another tool", tool: "ib_write_bw", line: "rate = 7", summary: "Argument not valid for ib_write_bw", detail: "rate is an option of rate_fake, not of ib_write_bw."},
		{name: "unknown tool still checks it", tool: "rate_fak", line: "rate = 0", summary: "Invalid value for rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer("%TOOL%", tt.tool, "%LINE%", tt.line).Replace(rateLab)
			p := filepath.Join(t.TempDir(), "lab.hcl")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			l, diags := lab.Load([]string{p}, lab.LoadOptions{})
			if tt.tool == "rate_fak" { // the unknown tool's own diagnostic first
				if len(diags) == 0 || diags[0].Summary != "Unsupported tool" {
					t.Fatalf("diagnostics %v, want Unsupported tool first", diags)
				}
				diags = diags[1:]
			}
			if tt.summary == "" {
				if len(diags) > 0 {
					t.Fatalf("want no diagnostics, got %v", diags)
				}
				w := l.WorkloadByName("w")
				got, _ := w.Own["rate"].(int64)
				if got != tt.want {
					t.Errorf("Own[rate] = %v, want %d", w.Own["rate"], tt.want)
				}
				if len(w.Sizes) != 1 || w.Sizes[0] != 64 {
					t.Errorf("sizes = %v, want [64]", w.Sizes)
				}
				return
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic %q, got %v", tt.summary, diags)
			}
			d := diags[0]
			if d.Summary != tt.summary || !strings.Contains(d.Detail, tt.detail) {
				t.Errorf("got %q: %q\nwant %q containing %q", d.Summary, d.Detail, tt.summary, tt.detail)
			}
			if d.Subject == nil || d.Subject.Filename != p || d.Subject.Start.Line != 20 || d.Subject.Start.Column < 3 {
				t.Errorf("subject %v, want %s line 20", d.Subject, p)
			}
		})
	}
}
