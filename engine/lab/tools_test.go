package lab

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeToolTable: labs/README.md's tool table says what the descriptor
// says, column by column (sides, transports, and which options a tool takes),
// and lists no tool the descriptor lacks.
func TestReadmeToolTable(t *testing.T) {
	b, err := os.ReadFile("../../labs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 8 {
			continue // another table
		}
		rows[strings.Trim(cells[0], "`")] = cells[1:]
	}
	yes := func(c string) bool { return c != "" }
	for _, n := range ToolNames() {
		c, ok := rows[n]
		if !ok {
			t.Errorf("labs/README.md: no row for %s", n)
			continue
		}
		delete(rows, n)
		tool, _ := LookupTool(n)
		side := "host"
		switch {
		case tool.OneHost:
			side = "`host` + `command`"
		case tool.HostOrPair:
			side = "host or rxe, siw, rdma; or `host` + `command`"
		case tool.RDMA:
			side = "rxe"
		}
		if c[0] != side {
			t.Errorf("%s: sides %q, want %q", n, c[0], side)
		}
		if tool.Transports != nil && c[1] != strings.Join(tool.Transports, ", ") {
			t.Errorf("%s: transports %q, want %q", n, c[1], strings.Join(tool.Transports, ", "))
		}
		for i, opt := range []struct {
			name string
			has  bool
		}{{"sizes", tool.Sizes}, {"iterations", tool.Iterations}, {"duration", tool.Duration}, {"qps", tool.QPs}, {"bytes", tool.Bytes}} {
			if yes(c[2+i]) != opt.has {
				t.Errorf("%s: README says %s %q; the descriptor says %v", n, opt.name, c[2+i], opt.has)
			}
		}
		if tool.FixedSize != 0 && !strings.Contains(c[2], "must be") {
			t.Errorf("%s: sizes %q does not say they are fixed", n, c[2])
		}
		if tool.MaxSize != 0 && !strings.Contains(c[2], "at most") {
			t.Errorf("%s: sizes %q does not say the maximum", n, c[2])
		}
	}
	for n := range rows {
		t.Errorf("labs/README.md lists tool %s, which the descriptor lacks", n)
	}
}
